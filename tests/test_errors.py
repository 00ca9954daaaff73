"""Every TranspileError subclass: right class, file, line, column, message, hint.

The programs below are deliberately wrong. Each table row names the program,
its arguments, the error class, and a snippet of the program's source: the
error must point at the first occurrence of that snippet (line and column in
this file), and its message must contain the given fragments. Positions are
found by searching the source, so editing this file does not break the tests.
"""

from __future__ import annotations

import functools
import inspect
import math
import random
import statistics
import time
from operator import add as op_add

import numpy as np
import pytest

import srcjax
from tests import opaque_helpers
from tests.corpus_helpers import dense, normalize_rows

F32 = np.float32


def arr(*shape, dtype=F32):
    return np.ones(shape, dtype)


def locate(fn, snippet, occurrence: int = 0) -> tuple[int, int]:
    """(1-based line, 0-based column) of ``snippet`` in ``fn``'s source file.

    ``snippet`` may be ``(other_function, text)`` when the error is inside a helper."""
    if isinstance(snippet, tuple):
        fn, snippet = snippet
    lines, start = inspect.getsourcelines(fn)
    seen = 0
    for i, line in enumerate(lines):
        col = line.find(snippet)
        if col >= 0:
            if seen == occurrence:
                return start + i, col
            seen += 1
    raise AssertionError(f"{snippet!r} not in the source of {fn.__name__}")


# ======================================================================================
# Deliberately wrong programs
# ======================================================================================
# -- shapes ------------------------------------------------------------------------------
def add_mismatch(x, y):
    z = x * 2
    return z + y


def matmul_mismatch(x, w):
    h = np.tanh(x)
    return h @ w


def reshape_bad_size(x):
    return x.reshape(5, -1)


def concatenate_mismatch(a, b):
    return np.concatenate([a, b], axis=0)


def sum_bad_axis(x):
    return x.sum(axis=3)


def mean_repeated_axis(x):
    return np.mean(x, axis=(0, 0))


def argmax_bad_axis(x):
    return np.argmax(x, axis=-3)


def index_out_of_bounds(x):
    return x[10]


def too_many_indices(x):
    return x[0, 0, 0]


def where_mismatch(c, a, b):
    return np.where(c, a, b)


def error_in_second_statement(x, y):
    ok = x + 1.0
    bad = ok - y
    return bad


def error_in_comprehension(x, w):
    ys = [r @ w for r in x]
    return ys


def error_in_third_loop_iteration(x, w):
    acc = x
    for i in range(3):
        acc = acc @ w  # fine for i = 0, 1; at i = 2, acc is (2, 2)
        acc = acc[:, : 3 - i]
    return acc


def stack_mismatch(a, b):
    return np.stack([a, b])


# -- dtypes ---------------------------------------------------------------------------------
def bitand_float(x):
    return x & x


def order_complex(x):
    return x.astype(np.complex64) < x


def add_string(x):
    return x + "a"


def invert_float(x):
    return ~x


# -- unsupported syntax -------------------------------------------------------------------------
def uses_try(x):
    try:
        y = x + 1
    except ValueError:
        y = x
    return y


def uses_try_star(x):
    try:
        y = x + 1
    except* ValueError:
        y = x
    return y


def uses_with(x):
    with open("data.txt") as fh:
        fh.read()
    return x


def uses_class(x):
    class Box:
        pass
    return x


COUNTER = 0


def uses_global(x):
    global COUNTER
    return x


CALLS: list[int] = []


def appends_to_a_global(x):
    CALLS.append(1)
    return x * 2


def make_nonlocal():
    n = 0

    def uses_nonlocal(x):
        nonlocal n
        return x

    return uses_nonlocal


def uses_yield(x):
    yield x * 2


def uses_yield_value(x):
    y = yield x
    return y


async def uses_async(x):
    return x


def uses_lambda_with_default(x):  # (stored in a list: a lambda bound to a name and called runs, refuse46)
    fs = [lambda y, k=2: y * k]
    return fs[0](x)


def uses_walrus(x):
    if (n := x.shape[0]) > 2:
        return x * n
    return x


def uses_kwargs(x, **options):
    return x


def uses_setitem_on_viewed_array(x):
    y = x[1:]
    x[0] = 1.0
    return y


def uses_setitem_through_view(x):
    z = x.copy()
    v = z.T
    v[1:] += 1.0
    return z


def uses_nested_def_with_default(x):
    def inner(y, k=2):
        return y * k
    args = (x, 3)
    return inner(*args)  # (called by *args: refused; by position or keyword it is taken)


def uses_del(x):
    y = x
    del y
    return x


def uses_import(x):
    import math as m
    return x * m.pi


def uses_set(x):
    s = {1, 2}  # noqa: F841
    return x


def uses_set_comprehension(x):
    d = {i * 2 for i in range(2)}
    return x * len(d)


def uses_star_call(x):
    pair = [x, x]  # (`*[x, x]`, a literal, is spelled as its elements: jax and srcjax run it)
    return np.maximum(*pair)


def uses_star_target(x):
    (a, *rest), b = ((x, x), x)  # noqa: F841
    return a


def uses_attribute_assignment(x):
    x.flags = 1
    return x


def uses_match(x):
    match x.ndim:
        case 2:
            return x
    return x


# -- unknown names and functions ---------------------------------------------------------------
def uses_undefined_name(x):
    return x + undefined_thing  # noqa: F821


def uses_histogramdd(x):
    return np.histogramdd(x)


def uses_nonexistent_numpy(x):
    return np.frobnicate(x)


def uses_input_builtin(x):
    input(x)
    return x


def uses_builtin_without_source(x):
    return op_add(x, x)


def uses_unsupported_method(x):
    return x.nonzero()


def uses_unknown_in_comprehension(x):
    return [x * nope for i in range(3)]  # noqa: F821


def uses_unknown_in_untaken_branch(x):
    if x.ndim == 7:
        raise ValueError(f"bad {nowhere}")  # noqa: F821
    return x


# -- arguments ---------------------------------------------------------------------------------
def two_args(a, b):
    return a + b


def calls_helper_with_too_few(x):
    return two_args(x)


def calls_helper_with_unknown_keyword(x):
    return two_args(x, c=x)


def numpy_unknown_keyword(x):
    return np.sum(x, bogus=1)


# -- data-dependent control flow ----------------------------------------------------------------
def if_on_data(x):
    if x.sum() > 0:
        return x
    return -x


def while_on_data(x):
    while x.max() > 1:
        x = x / 2
    return x


def ifexp_on_data(x):
    return x if x[0] > 0 else -x


def and_on_data(x):
    return x.sum() > 0 and x


def assert_on_data(x):
    assert x.sum() > 0
    return x


def chained_comparison_on_data(x):
    return 0 < x < 1


def not_on_data(x):
    return not x


def not_on_data_in_helper(x):
    return _negate(x)


def _negate(x):
    return not x


def vector_if(x):
    if x > 0:
        x = x * 2
    return x


def if_on_data_in_helper(x):
    return _sign_branch(x)


def _sign_branch(x):
    if x.mean() < 0:
        return -x
    return x


# -- values needed at transpile time ------------------------------------------------------------
def shape_from_data(x):
    return x.reshape(x.shape[0], x.argmax())


def range_from_data(x):
    acc = x
    for i in range(x.max()):
        acc = acc + i
    return acc


def count_from_data(x):
    return np.ones(int(x.sum()))  # int() of data is data; a shape is not


def slice_from_data(x):
    return x[: x.argmax()]


def reshape_by_argument(x, n):
    return x.reshape(n, -1)


def builtin_max_on_data(x):
    return max(x, 0)


def recursion_on_data(x):
    return recursion_on_data(x * 2)


# -- static checks the program makes itself --------------------------------------------------------
def static_raise(x):
    if x.ndim != 2:
        raise ValueError(f"need a matrix, got {x.ndim} dims")
    return x


def static_raise_formatted(x):
    if x.shape[0] < 4:
        raise ValueError(f"need {4:>3} rows, got {x.shape!r} ({x.ndim:02d}-d, {x.dtype})")
    return x


def static_assert(x):
    assert x.shape[0] == 3, "need exactly 3 rows"
    return x


# -- NumPy functions added with their derivative rules ------------------------------------------
def logaddexp_mismatch(x, y):
    return np.logaddexp(x, y)


def logaddexp2_mismatch(x, y):
    return np.logaddexp2(x, y)


def hypot_mismatch(x, y):
    return np.hypot(x, y)


def heaviside_mismatch(x, y):
    return np.heaviside(x, y)


def float_power_mismatch(x, y):
    return np.float_power(x, y)


def fmax_mismatch(x, y):
    return np.fmax(x, y)


def fmin_mismatch(x, y):
    return np.fmin(x, y)


def sinc_extra_argument(x):
    return np.sinc(x, 2)


def deg2rad_extra_argument(x):
    return np.deg2rad(x, x, x)


def rad2deg_extra_argument(x):
    return np.rad2deg(x, x, x)


def diff_of_scalar(x):
    return np.diff(x.sum())


def trace_of_vector(x):
    return np.trace(x)


def diag_of_3d(x):
    return np.diag(x)


def triu_of_scalar(x):
    return np.triu(x.sum())


def tril_of_scalar(x):
    return np.tril(x.sum())


def roll_lengths(x):
    return np.roll(x, (1, 2, 3), axis=(0, 1))


def cumprod_bad_axis(x):
    return x.cumprod(axis=2)


def take_float_indices(x):
    return np.take(x, x)


def take_along_axis_rank(x, i):
    return np.take_along_axis(x, i, axis=1)


# -- helpers and positions ---------------------------------------------------------------------
def calls_imported_helper(x):
    return normalize_rows(x) + x.T


def calls_imported_dense(x, w, b):
    return dense(x, w, b, activation="relu")


def identity_decorator(fn):
    return fn


@identity_decorator
def decorated_mismatch(x, y):
    return x - y


class Namespace:
    @staticmethod
    def indented_mismatch(x, y):
        return x @ y


# -- calls srcjax cannot read: run once while compiling, they would become constants -------------
def draws_from_generator(w, rng):
    return w + rng.normal(size=w.shape)


def draws_from_random_state(w, rs):
    return w * rs.rand(3)


STDLIB_RNG = random.Random(0)


def draws_from_stdlib_random(w):
    return w + STDLIB_RNG.random()


def draws_with_random_gauss(w):
    return w + random.gauss(0.0, 1.0)


def calls_stdlib_function(x):
    return statistics.fmean(x) + x


clock = time.perf_counter  # a C function under another name


def reads_a_clock(x):
    return x * clock()


ADD_ONE = functools.partial(np.add, 1.0)


def calls_a_partial_object(x):
    return ADD_ONE(x)


def calls_stdlib_through_own_helper(x):
    return opaque_helpers.fmean_of(x) * 2.0


E_OPAQUE = srcjax.OpaqueCallError
OPAQUE_ROWS = [
    (draws_from_generator, (arr(3), np.random.default_rng(0)), E_OPAQUE,
     "rng.normal(size=w.shape)", ["Generator.normal", "constant"]),
    (draws_from_random_state, (arr(3), np.random.RandomState(0)), E_OPAQUE, "rs.rand(3)", ["RandomState.rand"]),
    (draws_from_stdlib_random, (arr(3),), E_OPAQUE, "STDLIB_RNG.random()", ["Random.random"]),
    (draws_with_random_gauss, (arr(3),), E_OPAQUE, "random.gauss(0.0, 1.0)", ["gauss", "standard library"]),
    (calls_stdlib_function, (arr(3),), E_OPAQUE, "statistics.fmean(x)", ["statistics.fmean", "standard library"]),
    (reads_a_clock, (arr(3),), E_OPAQUE, "clock()", ["time.perf_counter", "no Python source"]),
    (calls_a_partial_object, (arr(3),), E_OPAQUE, "ADD_ONE(x)", ["partial"]),
    (calls_stdlib_through_own_helper, (arr(3),), E_OPAQUE, (opaque_helpers.fmean_of, "statistics.fmean(x)"),
     ["statistics.fmean"]),
]


# ======================================================================================
# The table
# ======================================================================================
E = srcjax

CASES = [
    # (program, args, error class, snippet the error points at, message fragments)
    (add_mismatch, (arr(4, 3), arr(4, 2)), E.ShapeError, "z + y", ["(4, 3)", "(4, 2)", "broadcast"]),
    (matmul_mismatch, (arr(4, 3), arr(5, 3)), E.ShapeError, "h @ w", ["(4, 3)", "(5, 3)"]),
    (reshape_bad_size, (arr(4, 3),), E.ShapeError, "x.reshape(5, -1)", ["(4, 3)", "reshape"]),
    (concatenate_mismatch, (arr(4, 3), arr(4, 2)), E.ShapeError, "np.concatenate", ["(4, 3)", "(4, 2)"]),
    (sum_bad_axis, (arr(4, 3),), E.ShapeError, "x.sum(axis=3)", ["axis 3", "dimension 2"]),
    (mean_repeated_axis, (arr(4, 3),), E.ShapeError, "np.mean", ["repeated axis"]),
    (argmax_bad_axis, (arr(4, 3),), E.ShapeError, "np.argmax", ["-3"]),
    (index_out_of_bounds, (arr(4, 3),), E.ShapeError, "x[10]", ["index 10", "size 4"]),
    (too_many_indices, (arr(4, 3),), E.ShapeError, "x[0, 0, 0]", ["too many indices"]),
    (where_mismatch, (arr(4, 3, dtype=bool), arr(4, 3), arr(5, 3)), E.ShapeError, "np.where", ["(5, 3)"]),
    (error_in_second_statement, (arr(3), arr(4)), E.ShapeError, "ok - y", ["(3,)", "(4,)"]),
    (stack_mismatch, (arr(3), arr(4)), E.ShapeError, "np.stack", ["(3,)", "(4,)"]),
    (error_in_comprehension, (arr(2, 3), arr(4, 2)), E.ShapeError, "[r @ w for r in x]", ["(3,)", "(4, 2)"]),
    (error_in_third_loop_iteration, (arr(2, 3), arr(3, 3)), E.ShapeError, "acc @ w", ["(2, 2)", "(3, 3)"]),
    (logaddexp_mismatch, (arr(4, 3), arr(4, 2)), E.ShapeError, "np.logaddexp(x, y)", ["(4, 3)", "(4, 2)"]),
    (logaddexp2_mismatch, (arr(4, 3), arr(2)), E.ShapeError, "np.logaddexp2(x, y)", ["(4, 3)", "(2,)"]),
    (hypot_mismatch, (arr(3), arr(4)), E.ShapeError, "np.hypot(x, y)", ["(3,)", "(4,)"]),
    (heaviside_mismatch, (arr(3), arr(4)), E.ShapeError, "np.heaviside(x, y)", ["(3,)", "(4,)"]),
    (float_power_mismatch, (arr(3), arr(4)), E.ShapeError, "np.float_power(x, y)", ["(3,)", "(4,)"]),
    (fmax_mismatch, (arr(3), arr(4)), E.ShapeError, "np.fmax(x, y)", ["(3,)", "(4,)"]),
    (fmin_mismatch, (arr(3), arr(4)), E.ShapeError, "np.fmin(x, y)", ["(3,)", "(4,)"]),
    (sinc_extra_argument, (arr(3),), E.ArgumentError, "np.sinc(x, 2)", ["np.sinc"]),
    (deg2rad_extra_argument, (arr(3),), E.ArgumentError, "np.deg2rad(x, x, x)", ["np.deg2rad"]),
    (rad2deg_extra_argument, (arr(3),), E.ArgumentError, "np.rad2deg(x, x, x)", ["np.rad2deg"]),
    (diff_of_scalar, (arr(3),), E.ShapeError, "np.diff(x.sum())", ["at least one dimensional"]),
    (trace_of_vector, (arr(3),), E.ShapeError, "np.trace(x)", ["two dimensions", "(3,)"]),
    (diag_of_3d, (arr(2, 3, 4),), E.ShapeError, "np.diag(x)", ["1- or 2-d", "(2, 3, 4)"]),
    (triu_of_scalar, (arr(3),), E.DTypeError, "np.triu(x.sum())", ["at least one dimension"]),
    (tril_of_scalar, (arr(3),), E.DTypeError, "np.tril(x.sum())", ["at least one dimension"]),
    (roll_lengths, (arr(2, 3),), E.ShapeError, "np.roll(x, (1, 2, 3), axis=(0, 1))", ["different lengths"]),
    (take_float_indices, (arr(3),), E.DTypeError, "np.take(x, x)", ["integers", "float32"]),
    (take_along_axis_rank, (arr(2, 3), np.array([0, 1])), E.ShapeError, "np.take_along_axis(x, i, axis=1)",
     ["same number of dimensions", "(2,)", "(2, 3)"]),
    (cumprod_bad_axis, (arr(2, 3),), E.ShapeError, "x.cumprod(axis=2)", ["axis 2", "dimension 2"]),
    (bitand_float, (arr(2, 2),), E.DTypeError, "x & x", ["float32"]),
    (order_complex, (arr(2, 2),), E.DTypeError, "x.astype(np.complex64) < x", ["complex", "np.less"]),
    (add_string, (arr(2, 2),), E.DTypeError, 'x + "a"', ["str"]),
    (invert_float, (arr(2, 2),), E.DTypeError, "~x", ["float32"]),
    (uses_try, (arr(2),), E.UnsupportedSyntaxError, "try:", ["try"]),
    (uses_try_star, (arr(2),), E.UnsupportedSyntaxError, "try:", ["try/except*"]),
    (uses_with, (arr(2),), E.UnsupportedSyntaxError, "with open", ["with"]),
    (uses_class, (arr(2),), E.UnsupportedSyntaxError, "class Box", ["class"]),
    (uses_global, (arr(2),), E.UnsupportedSyntaxError, "global COUNTER", ["global"]),
    (make_nonlocal(), (arr(2),), E.UnsupportedSyntaxError, "nonlocal n", ["nonlocal"]),
    (appends_to_a_global, (arr(2),), E.UnsupportedSyntaxError, "CALLS.append(1)", ["global `CALLS`", "pure"]),
    (uses_yield, (arr(2),), E.UnsupportedSyntaxError, "yield x * 2", ["yield"]),
    (uses_yield_value, (arr(2),), E.UnsupportedSyntaxError, "yield x\n", ["yield"]),
    (uses_async, (arr(2),), E.UnsupportedSyntaxError, "async def", ["async"]),
    (uses_lambda_with_default, (arr(2),), E.UnsupportedSyntaxError, "y, k=2: y", ["defaults"]),
    (uses_walrus, (arr(2),), E.UnsupportedSyntaxError, "n := x.shape[0]", ["walrus"]),
    (uses_kwargs, (arr(2),), E.UnsupportedSyntaxError, "**options", ["**kwargs"]),
    (uses_setitem_on_viewed_array, (arr(2),), E.UnsupportedSyntaxError, "x[0] = 1.0", ["view", "copy"]),
    (uses_setitem_through_view, (arr(2),), E.UnsupportedSyntaxError, "v[1:] += 1.0", ["view", "copy"]),
    (uses_nested_def_with_default, (arr(2),), E.UnsupportedSyntaxError, "y, k=2", ["nested functions with defaults"]),
    (uses_del, (arr(2),), E.UnsupportedSyntaxError, "del y", ["del"]),
    (uses_import, (arr(2),), E.UnsupportedSyntaxError, "import math as m", ["import"]),
    (uses_set, (arr(2),), E.UnsupportedSyntaxError, "{1, 2}", ["set"]),
    (uses_set_comprehension, (arr(2),), E.UnsupportedSyntaxError, "{i * 2 for", ["set comprehension"]),
    (uses_attribute_assignment, (arr(2),), E.UnsupportedSyntaxError, "x.flags = 1", ["Attribute"]),
    (uses_match, (arr(2),), E.UnsupportedSyntaxError, "match x.ndim", ["Match"]),
    (uses_undefined_name, (arr(2),), E.UnknownFunctionError, "undefined_thing", ["undefined_thing"]),
    (uses_histogramdd, (arr(2, 2),), E.UnknownFunctionError, "np.histogramdd(x)",
     ["np.histogramdd"]),
    (uses_nonexistent_numpy, (arr(2),), E.UnknownFunctionError, "np.frobnicate", ["np.frobnicate"]),
    (uses_input_builtin, (arr(2),), E.UnknownFunctionError, "input(x)", ["input"]),
    (uses_builtin_without_source, (arr(2),), E.UnknownFunctionError, "op_add(x, x)", ["no Python source"]),
    (uses_unsupported_method, (arr(2),), E.UnknownFunctionError, "x.nonzero", ["nonzero"]),
    (uses_unknown_in_comprehension, (arr(2),), E.UnknownFunctionError, "nope", ["nope"]),
    (uses_unknown_in_untaken_branch, (arr(2),), E.UnknownFunctionError, "nowhere", ["nowhere"]),
    (calls_helper_with_too_few, (arr(2),), E.ArgumentError, "two_args(x)", ["two_args", "'b'"]),
    (calls_helper_with_unknown_keyword, (arr(2),), E.ArgumentError, "two_args(x, c=x)", ["two_args"]),
    (numpy_unknown_keyword, (arr(2),), E.ArgumentError, "np.sum(x, bogus=1)", ["bogus"]),
    (and_on_data, (arr(2),), E.DynamicControlFlowError, "x.sum() > 0 and x", ["and"]),
    (not_on_data, (arr(2),), E.DynamicControlFlowError, "not x", ["not"]),
    (not_on_data_in_helper, (arr(2),), E.DynamicControlFlowError, (_negate, "not x"), ["not"]),
    (vector_if, (arr(2),), E.ShapeError, "x > 0", ["scalar"]),
    (assert_on_data, (arr(2),), E.StaticValueError, "x.sum() > 0", ["assert"]),
    (chained_comparison_on_data, (arr(2),), E.UnsupportedSyntaxError, "0 < x < 1", ["chained"]),
    (calls_imported_dense, (arr(4, 3), arr(5, 2), arr(2)), E.ShapeError, (dense, "x @ w"), ["(4, 3)", "(5, 2)"]),
    (shape_from_data, (arr(4, 3),), E.StaticValueError, "x.reshape(x.shape[0], x.argmax())", ["shape", "array data"]),
    (count_from_data, (arr(3),), E.StaticValueError, "np.ones(int(x.sum()))", ["shape", "array data"]),
    (slice_from_data, (arr(3),), E.StaticValueError, "x[: x.argmax()]", ["slice"]),
    (reshape_by_argument, (arr(4, 3), np.int64(2)), E.StaticValueError, "x.reshape(n, -1)", ["shape"]),
    (builtin_max_on_data, (arr(3),), E.StaticValueError, "max(x, 0)", ["max"]),
    (static_raise, (arr(3),), E.TranspileError, "raise ValueError", ["ValueError", "need a matrix, got 1 dims"]),
    (static_raise_formatted, (arr(3, 2),), E.TranspileError, "raise ValueError",
     ["need   4 rows, got (3, 2) (02-d, float32)"]),
    (static_assert, (arr(4, 3),), E.TranspileError, "x.shape[0] == 3", ["need exactly 3 rows"]),
    (calls_imported_helper, (arr(4, 3),), E.ShapeError, "normalize_rows(x) + x.T", ["(4, 3)", "(3, 4)"]),
    (decorated_mismatch, (arr(3), arr(4)), E.ShapeError, "x - y", ["(3,)", "(4,)"]),
    (Namespace.indented_mismatch, (arr(4, 3), arr(4, 3)), E.ShapeError, "x @ y", ["(4, 3)"]),
    *OPAQUE_ROWS,
]


def _id(row) -> str:
    return row[0].__name__


def _raise(row, how: str = "call") -> srcjax.TranspileError:
    fn, args, cls, _, _ = row
    with pytest.raises(cls) as ei:
        if how == "call":
            srcjax.compile(fn)(*args)
        elif how == "eval_shape":
            srcjax.eval_shape(fn, *args)
        elif how == "lower":
            srcjax.lower(fn, *args)
        else:
            raise AssertionError(how)
    return ei.value


@pytest.mark.parametrize("row", CASES, ids=_id)
def test_error_class_and_position(row) -> None:
    fn, args, cls, snippet, fragments = row
    e = _raise(row)
    assert isinstance(e, srcjax.TranspileError)
    if cls is srcjax.TranspileError:  # a static raise/assert: not mistaken for a more specific kind
        assert type(e) is srcjax.TranspileError or not isinstance(e, (srcjax.ShapeError, srcjax.DTypeError))
    assert e.span is not None, f"no position for: {e}"
    line, col = locate(fn, snippet)
    where = snippet[0] if isinstance(snippet, tuple) else fn
    assert e.span.filename == inspect.getsourcefile(where)
    assert (e.span.line, e.span.col) == (line, col), f"points at {e.span}, expected {line}:{col + 1}\n{e}"
    assert e.span.end_line >= e.span.line
    if e.span.end_line == e.span.line:
        assert e.span.end_col > e.span.col
    for frag in fragments:
        assert frag in e.message, f"{frag!r} not in the message: {e.message!r}"


@pytest.mark.parametrize("row", CASES, ids=_id)
def test_rendering_has_location_source_line_and_caret(row) -> None:
    fn, _, _, snippet, _ = row
    e = _raise(row)
    text = str(e)
    lines = text.splitlines()
    line, col = locate(fn, snippet)
    assert lines[0] == f"{e.span.filename}:{line}:{col + 1}: error: {e.message}"
    where = snippet[0] if isinstance(snippet, tuple) else fn
    src_lines, start = inspect.getsourcelines(where)
    src_line = src_lines[line - start].rstrip("\n")
    assert lines[1] == "    " + src_line
    caret = lines[2]
    assert caret.strip() and set(caret.strip()) == {"^"}
    assert caret.index("^") == 4 + col
    if e.hint:
        assert f"hint: {e.hint}" in text


@pytest.mark.parametrize("row", [r for r in CASES if r[2] not in (srcjax.UnsupportedSyntaxError,
                                                                   srcjax.UnknownFunctionError)
                                 and r[0] is not uses_unsupported_method], ids=_id)
def test_same_error_without_running_anything(row, monkeypatch) -> None:
    """Errors come from reading and abstract evaluation: eval_shape and lower raise the same
    error, and the XLA compiler is never reached."""
    import srcjax.runtime

    def no_compile(*a, **k):
        raise AssertionError("XLA compile reached for a program with an error")

    monkeypatch.setattr(srcjax.runtime, "compile_text", no_compile)
    first = _raise(row, "call")
    for how in ("eval_shape", "lower"):
        again = _raise(row, how)
        assert type(again) is type(first)
        assert again.span == first.span and again.message == first.message


SYNTAX_AND_NAME_ROWS = [r for r in CASES if r[2] in (srcjax.UnsupportedSyntaxError, srcjax.UnknownFunctionError)
                        and r[0] not in (uses_unsupported_method, chained_comparison_on_data)]


@pytest.mark.parametrize("row", SYNTAX_AND_NAME_ROWS, ids=_id)
def test_syntax_and_name_errors_need_no_shapes(row) -> None:
    """Reading and normalizing find these: srcjax.source already raises them (no arguments needed)."""
    fn, _, cls, snippet, _ = row
    with pytest.raises(cls) as ei:
        srcjax.source(fn)
    assert (ei.value.span.line, ei.value.span.col) == locate(fn, snippet)


NEW_NUMPY_ROWS = [r for r in CASES if r[0].__name__ in {
    "logaddexp_mismatch", "logaddexp2_mismatch", "hypot_mismatch", "heaviside_mismatch", "float_power_mismatch",
    "fmax_mismatch", "fmin_mismatch", "sinc_extra_argument", "deg2rad_extra_argument", "rad2deg_extra_argument",
    "diff_of_scalar", "trace_of_vector", "diag_of_3d", "triu_of_scalar", "tril_of_scalar", "roll_lengths",
    "take_float_indices", "take_along_axis_rank"}]


@pytest.mark.parametrize("row", NEW_NUMPY_ROWS, ids=_id)
def test_numpy_function_errors_have_a_hint(row) -> None:
    """The errors of the NumPy functions added with their derivative rules say what to write instead."""
    e = _raise(row)
    assert e.hint, f"no hint for: {e}"


@pytest.mark.parametrize("row", OPAQUE_ROWS, ids=_id)
def test_opaque_calls_say_what_to_write_instead(row) -> None:
    """A call srcjax cannot read is refused at the user's call, and says to pass the value in; random
    draws name srcjax.random, library functions say where they are defined."""
    e = _raise(row)
    assert e.hint and "pass" in e.hint and "argument" in e.hint
    assert ("srcjax.random" in e.hint) == (row[0] in (draws_from_generator, draws_from_random_state,
                                               draws_from_stdlib_random, draws_with_random_gauss))
    if "standard library" in e.message:
        assert e.note is not None and ".py:" in e.note


def test_binary_shape_errors_name_both_operands() -> None:
    with pytest.raises(srcjax.ShapeError) as ei:
        srcjax.compile(add_mismatch)(arr(7, 3), arr(2, 3))
    e = ei.value
    assert "(7, 3)" in e.message and "(2, 3)" in e.message
    assert e.note is not None and "z: f32[7,3]" in e.note and "y: f32[2,3]" in e.note
    assert e.hint


def test_dynamic_control_flow_has_hint() -> None:
    with pytest.raises(srcjax.DynamicControlFlowError) as ei:
        srcjax.compile(and_on_data)(arr(3))
    assert isinstance(ei.value, srcjax.StaticValueError)  # a subclass: data needed at transpile time
    assert ei.value.hint and "np.where" in ei.value.hint


def test_helper_error_inside_call_chain() -> None:
    with pytest.raises(srcjax.DynamicControlFlowError) as ei:
        srcjax.compile(not_on_data_in_helper)(arr(3))
    assert ei.value.span.line == locate(_negate, "not x")[0]


@pytest.mark.parametrize("fn", [if_on_data, while_on_data, ifexp_on_data, if_on_data_in_helper])
def test_former_control_flow_errors_now_compile(fn) -> None:
    """Control flow on data was an error before issue #4; it now compiles and matches NumPy."""
    for x in (np.array([0.5, 3.0], np.float32), np.array([-4.0, 1.0], np.float32)):
        np.testing.assert_allclose(np.asarray(srcjax.compile(fn)(x)), fn(x.copy()), rtol=1e-6)


def test_range_over_data_is_a_loop_with_a_dynamic_trip_count() -> None:
    for x in (np.array([3, 1, 2], np.int32), np.array([0, -2, 0], np.int32)):
        np.testing.assert_array_equal(np.asarray(srcjax.compile(range_from_data)(x)), range_from_data(x))


# -- ArgumentError at the call boundary ------------------------------------------------------------
@pytest.mark.parametrize("args,kwargs,fragment", [
    ((arr(2),), {}, "missing a required argument: 'b'"),
    ((arr(2), arr(2), arr(2)), {}, "too many positional arguments"),
    ((arr(2), arr(2)), {"c": arr(2)}, "unexpected keyword argument 'c'"),
])
def test_wrong_number_of_arguments(args, kwargs, fragment) -> None:
    for call in (lambda: srcjax.compile(two_args)(*args, **kwargs),
                 lambda: srcjax.eval_shape(two_args, *args, **kwargs)):
        with pytest.raises(srcjax.ArgumentError) as ei:
            call()
        assert fragment in ei.value.message
        assert ei.value.span is not None and ei.value.span.line == locate(two_args, "def two_args")[0]
        assert "two_args(a, b)" in (ei.value.hint or "")


def test_argument_of_unsupported_type() -> None:
    with pytest.raises(srcjax.ArgumentError) as ei:
        srcjax.compile(two_args)(arr(2), {1, 2})  # a set: neither an array nor hashable
    assert "'b'" in ei.value.message and "static_argnames" in (ei.value.hint or "")


def mode_switch(x, mode):
    if mode is None:
        return x * 0
    return x


def test_string_argument_is_static_everywhere() -> None:
    """Non-array hashable arguments (strings, None) are static, as with static_argnames."""
    out = srcjax.compile(mode_switch)(arr(3), "keep")
    np.testing.assert_array_equal(np.asarray(out), arr(3))
    assert srcjax.eval_shape(mode_switch, arr(3), "keep").shape == (3,)
    assert "stablehlo.multiply" not in srcjax.lower(mode_switch, arr(3), "keep").as_text()
    assert "stablehlo.multiply" in srcjax.lower(mode_switch, arr(3), None).as_text()


def test_builtin_without_source_as_entry() -> None:
    with pytest.raises(srcjax.UnknownFunctionError) as ei:
        srcjax.compile(len)(arr(2))
    assert "no Python source" in ei.value.message


def test_builtin_without_signature_as_entry() -> None:
    with pytest.raises(srcjax.UnknownFunctionError):
        srcjax.source(math.hypot)


def test_lambda_as_entry_points_into_the_lambda() -> None:
    f = lambda x: x @ np.ones(3)  # noqa: E731
    with pytest.raises(srcjax.ShapeError) as ei:
        srcjax.compile(f)(arr(2))
    assert (ei.value.span.line, ei.value.span.col) == locate(test_lambda_as_entry_points_into_the_lambda, "x @ np")


def test_user_facing_errors_hide_internal_frames() -> None:
    """What the user sees is the error, not a chain of srcjax-internal exceptions."""
    with pytest.raises(srcjax.ShapeError) as ei:
        srcjax.compile(matmul_mismatch)(arr(4, 3), arr(5, 3))
    assert ei.value.__cause__ is None and ei.value.__suppress_context__


def test_errors_are_catchable_as_builtin_kinds() -> None:
    """ShapeError is a ValueError, DTypeError/ArgumentError TypeErrors, UnknownFunctionError a NameError."""
    with pytest.raises(ValueError):
        srcjax.compile(add_mismatch)(arr(2), arr(3))
    with pytest.raises(TypeError):
        srcjax.compile(bitand_float)(arr(2))
    with pytest.raises(NameError):
        srcjax.compile(uses_undefined_name)(arr(2))
    with pytest.raises(TypeError):
        srcjax.compile(two_args)(arr(2))


def test_no_error_after_fixing_the_arguments() -> None:
    """A failed specialization leaves nothing behind: the same compiled function works afterwards."""
    f = srcjax.compile(add_mismatch)
    with pytest.raises(srcjax.ShapeError):
        f(arr(4, 3), arr(4, 2))
    out = f(arr(4, 3), arr(4, 3))
    np.testing.assert_array_equal(np.asarray(out), np.full((4, 3), 3.0, F32))


def test_a_refused_global_mutation_did_not_run() -> None:
    with pytest.raises(srcjax.TranspileError):
        srcjax.compile(appends_to_a_global)(arr(2))
    assert CALLS == []


def _sum_sin_squared(x):
    return np.sum(np.sin(x) ** 2)


@pytest.mark.parametrize("t", ["jit", "grad", "jacrev", "hessian"])
def test_a_list_argument_where_an_array_goes_is_a_located_error(t: str) -> None:
    """Regression: ``np.sin(x)`` of a list argument ran NumPy on traced values ("loop of ufunc does not
    support argument 0 of type HloValue"); jax refuses it too."""
    with pytest.raises(srcjax.DTypeError) as e:
        getattr(srcjax, t)(_sum_sin_squared)([1.5, 2.0])
    text = str(e.value)
    assert "np.sin(): a list of traced values where an array goes" in text and "np.asarray" in text
    assert f"{__file__}:" in text.splitlines()[0] and "HloValue" not in text


def _returns_mixed_keys(x):
    return {1: x, "a": x * 2}


def _returns_a_function(x):
    return {"a": x, "b": print}


def _reads_mixed_keys(d):
    return d[1] * 2 + d["a"]


@pytest.mark.parametrize("fn, words", [(_returns_mixed_keys, "do not sort (keys of types int, str)"),
                                       (_returns_a_function, "value of type builtin_function_or_method")])
def test_a_result_with_no_leaf_order_or_no_array_is_located_at_the_return(fn, words: str) -> None:
    """Regression: a returned dict with keys of mixed types raised a raw TypeError from srcjax's pytree
    (jax refuses it too); a returned function had no location."""
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.jit(fn)(arr(3))
    text = str(e.value)
    assert words in text and f"{__file__}:" in text.splitlines()[0] and "return {" in text


def test_an_argument_dict_with_keys_of_mixed_types_is_an_argument_error() -> None:
    with pytest.raises(srcjax.ArgumentError, match="argument 'd' is a dict that has no leaf order"):
        srcjax.jit(_reads_mixed_keys)(d={1: arr(3), "a": arr(3)})


def _reshape_bool(x):
    return np.reshape(x, (True, -1))


def _zeros_bool(x):
    return np.zeros((2, True)) + x.sum()


def _method_reshape_bool(x):
    return x.reshape(2, np.bool_(True))


@pytest.mark.parametrize("fn, line", [(_reshape_bool, "np.reshape(x, (True, -1))"),
                                      (_zeros_bool, "np.zeros((2, True))"),
                                      (_method_reshape_bool, "x.reshape(2, np.bool_(True))")])
def test_a_bool_in_a_shape_is_refused_as_numpy_refuses_it(fn, line: str) -> None:
    """Regression: ``np.reshape(x, (True, -1))`` compiled as ``(1, -1)`` (a bool is a Python int); NumPy
    raises "an integer is required"."""
    with pytest.raises(TypeError):
        fn(np.arange(4.0))
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.jit(fn)(np.arange(4.0))
    text = str(e.value)
    assert "shape must be a static int or tuple of ints" in text and f"{__file__}:" in text.splitlines()[0]
    assert line in text
