"""Programs a user writes that srcjax must refuse (unsupported Python, data-dependent shapes, decisions on
array data, shape and dtype mistakes), each with the transformations it is refused under and where the
error must point: tests/test_errs16.py checks the class, the user's file, line and column, the quoted line,
the hint and a short traceback. Helpers in another module of the user's: tests/errs16_helpers.py."""

from __future__ import annotations

import math

import numpy as np

from tests import errs16_helpers as helpers

# -- unsupported Python ---------------------------------------------------------------------------------------


def try_except(x):
    try:
        y = np.log(x)
    except FloatingPointError:
        y = x
    return np.sum(y)


def with_errstate(x):
    # (numpy's errstate without `as` runs since session 43, read as its body: tests/test_warning_contexts.py;
    # one that binds `as` stays refused)
    with np.errstate(divide="ignore") as state:
        y = np.log(x) + 0.0 * len(str(state))
    return np.sum(y)


def yield_from(x):
    yield from x


def global_total(x):
    global TOTAL
    TOTAL = np.sum(x)
    return TOTAL


def del_name(x):
    y = x * 2
    del y
    return np.sum(x)


def walrus_in_if(x):
    if (s := np.sum(x)) > 0:
        return s
    return -s


def walrus_in_comprehension(x):
    ys = [(t := v * 2) for v in x]
    return np.sum(np.stack(ys)) + t


def fstring_returned(x):
    label = f"loss={np.sum(x)}"
    return np.sum(x), label


def percent_format(x):
    s = "%.2f" % np.sum(x)  # noqa: UP031
    return np.sum(x), s


def str_of_traced(x):
    return np.sum(x), str(np.sum(x))


def assert_on_data(x):
    assert np.all(x > 0), "x must be positive"
    return np.sum(np.log(x))


def recursion_on_data(x):
    return _halve_until_small(x, np.sum(x))


def _halve_until_small(x, n):
    if n <= 0:
        return x
    return _halve_until_small(x * 0.5, n - 1)


def in_on_array(x):
    if 0.0 in x:
        return np.sum(x)
    return np.sum(np.log(np.abs(x)))


def list_sort(x):
    xs = list(x)
    xs.sort()
    return xs[0] * 2


def sorted_of_traced(x):
    xs = sorted(x)
    return xs[-1] - xs[0]


def set_of_arrays(x):
    s = set([x[0], x[1]])
    return np.sum(x) + len(s)


# -- data-dependent shapes -------------------------------------------------------------------------------------


def nonzero_indices(x):
    idx = np.nonzero(x > 0)[0]
    return np.sum(x[idx])


def where_one_argument(x):
    (idx,) = np.where(x > 0)
    return np.sum(x[idx])


def mask_returned(x):
    return x[x > 0] * 2


def unique_values(x):
    return np.sum(np.unique(x))


def reshape_by_count(x):
    n = np.sum(x > 0)
    return np.sum(x.reshape(n, -1))


def slice_to_argmax(x):
    n = np.argmax(x)
    return np.sum(x[:n])


def zeros_of_data_size(x):
    return np.sum(np.zeros(int(np.sum(x))) + 1.0)


# -- decisions on arrays ------------------------------------------------------------------------------------


def if_on_vector(x):
    if x > 0:
        return np.sum(x)
    return -np.sum(x)


def while_on_vector(x):
    while x < 10.0:
        x = x * 2
    return np.sum(x)


def bool_of_traced(x):
    flag = bool(np.sum(x) > 0)
    return x if flag else -x


def item_of_traced(x):
    return x * np.sum(x).item()


def math_sqrt_of_traced(x):
    return np.sum(x / math.sqrt(np.sum(x * x)))


def math_exp_of_traced(x):
    return np.sum(math.exp(x[0]) * x)


def math_isnan_of_traced(x):
    if math.isnan(np.sum(x)):
        return np.sum(x)
    return np.sum(x * 2)


def and_of_arrays(x):
    both = (x[0] > 0) and (x[1] > 0)
    return np.sum(np.where(both, x, -x))


# -- shapes and dtypes --------------------------------------------------------------------------------------


def matmul_mismatch(x):
    w = np.ones((4, 2))
    h = np.tanh(x)
    return np.sum(h @ w)


def broadcast_mismatch(x):
    y = np.ones(4)
    return np.sum(x * y)


def concatenate_mismatch(x):
    y = np.ones((2, 2))
    return np.sum(np.concatenate([x, y]))


def reshape_mismatch(x):
    return np.sum(x.reshape(2, 2))


def stack_mismatch(x):
    return np.sum(np.stack([x, x[:2]]))


def where_mismatch(x):
    return np.sum(np.where(x > 0, x, np.zeros(4)))


def float_xor(x):
    return np.sum(x ^ 1)


def float_left_shift(x):
    return np.sum(np.left_shift(x, 2))


def astype_str(x):
    return np.sum(x.astype(str))


def misspelled_dtype(x):
    return np.sum(x + np.zeros(3, dtype="float33"))


def complex_floor_divide(x):
    z = x.astype(np.complex128)
    return np.sum(np.abs(z // 2))


def error_in_nested_def(x):
    def project(v):
        return v @ np.ones(4)
    return np.sum(project(x))


def error_in_lambda(x):
    project = lambda v: v @ np.ones(4)  # noqa: E731
    return np.sum(project(x))


def error_in_loop(x):
    acc = 0.0
    for i in range(2):
        acc = acc + x[i:] @ np.ones(3)
    return acc


def bad_lambda_entry(x):
    return BAD_LAMBDA(x)


BAD_LAMBDA = lambda x: np.sum(x @ np.ones(4))  # noqa: E731


# -- helpers in another module of the user's --------------------------------------------------------------------


def calls_helper_with_mismatch(x):
    return np.sum(helpers.project(x, np.ones((4, 2))))


def calls_helper_with_math(x):
    return np.sum(helpers.scale_by_norm(x))


def calls_helper_branching_on_vector(x):
    return np.sum(helpers.branch_on_vector(x))


def calls_helper_with_mask(x):
    return np.sum(helpers.first_positive(x) * 2)


def dict_grows_while_walked(x):
    d = {"a": x}
    for k in d:
        d[k + "_sq"] = d[k] ** 2
    return np.sum(d["a_sq"])


def dict_keyed_by_value(x):
    d = {}
    d[x[0]] = 1.0
    return np.sum(x) + len(d)


def list_item_at_argmax(x):
    xs = [1.0, 2.0, 3.0]
    xs[np.argmax(x)] = 5.0
    return np.sum(x) + xs[0]


def index_out_of_bounds(x):
    return x[5] * 2


def too_many_indices(x):
    return np.sum(x[0, 1])


def axis_out_of_bounds(x):
    return np.sum(np.cumsum(x, axis=2))


def einsum_of_a_vector_as_matrix(x):
    return np.sum(np.einsum("ij,jk->ik", x, x))
