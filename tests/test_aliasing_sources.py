"""In-place changes through aliases that ``b = a`` does not spell (srcjax/frontend/aliasing.py,
srcjax/frontend/returned_alias.py): each ran silently differently from NumPy, now refused at the changing line.

- ``ys = [x] * 2`` (or ``[np.zeros(3)] * 2``): every item is one array, so ``ys[0] += 1`` or ``ys[0][1] = 5.0``
  changes ``ys[1]`` (and ``x``) in NumPy;
- ``t = s if c else s * 2`` then ``t += 1``: NumPy's ``t`` is ``s`` itself where ``c`` holds (``c`` static or on
  data);
- ``t = ident(s)`` of a def or lambda returning its argument as it is;
- ``t = get_table()`` of a def returning a module-level array (or ``t = TABLE``): NumPy's change outlives the
  call, every later call sees it.
Without a later read (or with a copy, the hint's spelling) each compiles and agrees with NumPy under jit, grad,
vmap and the generated source run by NumPy.
"""

import inspect

import numpy as np
import pytest

import srcjax

TABLE = np.array([1.0, 2.0, 3.0])


def ident(v):
    return v


def get_table():
    return TABLE


def scaled(v):
    v = v * 2.0
    return v


def repeated_name_then_add(x):
    ys = [x] * 2
    ys[0] += 1.0
    return ys[1] * x


def repeated_zeros_then_set(x):
    ys = [np.zeros(3)] * 2
    ys[0][1] = 5.0
    return ys[1] + x


def repeated_product_then_set(x):
    ys = [x * 1.0] * 2
    ys[0][1] = 5.0
    return ys[1] * x


def branch_static_then_add(x):
    s = x * 1.0
    t = s if x.shape[0] > 2 else s * 2.0
    t += 1.0
    return s * t


def branch_on_data_then_add(x):
    s = x * 1.0
    t = s if x[0] > 0 else s * 2.0
    t += 1.0
    return s + t


def branch_on_data_then_set(x):
    s = x * 1.0
    t = s * 2.0 if x[0] > 0 else s
    t[0] = 9.0
    return s * x


def returned_argument_then_add(x):
    s = x * 1.0
    t = ident(s)
    t += 1.0
    return s * x


def lambda_argument_then_add(x):
    s = x * 1.0
    t = (lambda v: v)(s)
    t += 1.0
    return s * x


def returned_global_then_add(x):
    t = get_table()
    t += x
    return t * x


def global_then_add(x):
    t = TABLE
    t *= x
    return t


def dict_item_then_add(x):  # (found by tests/test_alias_random.py)
    v = x * 1.0
    d = {"a": v}
    d["a"] += 2.0
    return v * x


def list_item_then_add(x):
    v = x * 1.0
    ys = [x, v]
    ys[1] += 2.0
    return v * ys[0]


def held_name_then_add(x):
    v = x * 1.0
    d = {"a": v}
    v += 2.0
    return d["a"] * x


def repeated_element_then_add(x):  # (found by tests/test_alias_random.py, seed 126)
    v = x * 1.0
    ys = [v] * 2
    v[1] += 2.0
    return ys[0] * x


def bound_again_on_one_path_then_set(x):  # (found by tests/test_alias_random.py, seed 116: vmap's other example)
    v = (x if x[0] > 0 else x)
    if x[0] > 0:
        v = v * 3.0
    v[1] = 0.5
    return x + v


def unpacked_then_add(x):
    y = x * 2.0
    a, b = x, y
    a += 1.0
    return x * b


def loop_over_a_display_then_add(x):
    y = x * 2.0
    for v in [x, y]:
        v += 1.0
    return x + y


def dict_call_item_then_add(x):
    d = dict(a=x)
    d["a"] += 1.0
    return x * 2.0


def display_item_then_add(x):
    s = x * 1.0
    t = {"a": s}["a"]
    t += 1.0
    return s * 2.0


def unpacked_list_then_add(x):
    s = x * 1.0
    ys = [s, x]
    a, b = ys
    a += 1.0
    return s * b


def item_name_then_add(x):
    s = x * 1.0
    d = {"a": s}
    w = d["a"]
    w += 1.0
    return s * 2.0


def appended_then_add(x):
    s = x * 1.0
    ys = [s]
    ys.append(x)
    ys[1] += 1.0
    return x * 2.0


def clipped_through_loop_variable(x):  # (min-char-rnn's gradient clipping: tests/hunt14_programs.py)
    a = x * 10.0
    b = x * 20.0
    for g in [a, b]:
        np.clip(g, -5, 5, out=g)
    return a + b


REFUSED = [unpacked_then_add, loop_over_a_display_then_add, dict_call_item_then_add, display_item_then_add,
           unpacked_list_then_add, item_name_then_add, appended_then_add, clipped_through_loop_variable, dict_item_then_add, list_item_then_add, held_name_then_add, repeated_element_then_add,
           bound_again_on_one_path_then_set, repeated_name_then_add, repeated_zeros_then_set, repeated_product_then_set, branch_static_then_add,
           branch_on_data_then_add, branch_on_data_then_set, returned_argument_then_add, lambda_argument_then_add,
           returned_global_then_add, global_then_add]


@pytest.mark.parametrize("fn", REFUSED)
@pytest.mark.parametrize("transform", ["jit", "grad", "vmap"])
def test_an_in_place_change_through_an_unspelled_alias_is_refused_at_its_line(fn, transform):
    table = TABLE.copy()
    wrapped = {"jit": srcjax.jit, "vmap": srcjax.vmap, "grad": lambda f: srcjax.grad(lambda x: np.sum(f(x)))}
    x = np.array([1.0, -2.0, 3.0])
    with pytest.raises(srcjax.TranspileError) as info:
        wrapped[transform](fn)(np.stack([x, x]) if transform == "vmap" else x)
    np.testing.assert_array_equal(TABLE, table)  # (srcjax never changed it)
    src, first = inspect.getsourcelines(fn)
    line = first + next(k for k, ln in enumerate(src) if "out=" in ln or "=" in ln and (
        ln.split("=")[0].rstrip()[-1] in "+-*" or "[" in ln.split("=")[0]))
    msg = str(info.value)
    assert f"test_aliasing_sources.py:{line}:" in msg.splitlines()[0], msg
    assert "hint:" in msg and "copy" in msg, msg


def repeated_numbers_then_add(x):
    ys = [0.0] * 3  # (numbers: `+=` binds the slot again, in NumPy too)
    ys[0] += 1.0
    return x * (ys[0] + ys[1])


def repeated_rebound_item(x):
    ys = [x] * 2
    ys[0] = ys[0] + 1.0  # (a new array into the slot: ys[1] keeps x)
    return ys[1] * ys[0]


def repeated_not_read_after(x):
    ys = [x * 1.0] * 2
    ys[0] += 1.0
    return x * 2.0


def branch_copied_then_add(x):
    s = x * 1.0
    t = np.copy(s) if x[0] > 0 else s * 2.0
    t += 1.0
    return s * t


def returned_new_array_then_add(x):
    s = x * 1.0
    t = scaled(s)  # (bound again in the callee: a new array)
    t += 1.0
    return s * t


def returned_global_copied_then_add(x):
    t = np.copy(get_table())
    t += x
    return t * x


def dict_item_rebound(x):
    v = x * 1.0
    d = {"a": v}
    d["a"] = d["a"] + 2.0  # (a new array into the slot: v keeps its values, in NumPy too)
    return v * d["a"]


def bound_again_on_every_path_then_add(x):
    v = x
    v = v * 3.0
    v += 1.0
    return x + v


def unpacked_numbers_and_arrays(x):
    s, it = x * 1.0, 0
    for _ in range(2):
        s = 0.5 * (s + x)
        it += 1
    return s * it


def element_copies_unpacked(x):
    y = x.copy()
    a, b = y[0], y[1]  # (elements of a 1-D array: copies)
    y[0] = b
    y[1] = a
    return y * x


ACCEPTED = [unpacked_numbers_and_arrays, element_copies_unpacked, dict_item_rebound, bound_again_on_every_path_then_add, repeated_numbers_then_add, repeated_rebound_item, repeated_not_read_after, branch_copied_then_add,
            returned_new_array_then_add, returned_global_copied_then_add]


# (`[x] * 2` under grad: "cannot differentiate through `[x] * 2` yet", located; under vmap it was "list indices must
# be integers or slices, not tuple": the repeated list batched as an array, `ys[:, 1]`)
NO_GRAD = {repeated_rebound_item, repeated_not_read_after}


@pytest.mark.parametrize("fn", ACCEPTED)
def test_without_a_shared_array_read_later_it_runs_as_numpy(fn):
    x = np.array([1.0, -2.0, 3.0])
    xs = np.array([[1.0, -2.0, 3.0], [-0.5, 2.0, 1.5]])
    want = fn(x.copy())
    np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(x.copy())), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(srcjax.jit(fn))(x.copy())), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(fn)(xs.copy())), np.stack([fn(r.copy()) for r in xs]),
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(srcjax.vmap(fn))(xs.copy())),
                               np.stack([fn(r.copy()) for r in xs]), rtol=1e-12)
    if fn in NO_GRAD:
        return
    g = np.asarray(srcjax.grad(lambda v: np.sum(fn(v)))(x.copy()))
    eps = 1e-6
    fd = [(np.sum(fn(x + eps * e)) - np.sum(fn(x - eps * e))) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def _repeated_pair(x, w):
    ys = [x, w * 2.0] * 2
    zs = 2 * (x,)
    return ys[0] * ys[3] + ys[2] - zs[1] * len(ys)


def test_a_repeated_list_of_mapped_and_unmapped_values_under_vmap():
    """`[x, w] * 2` under vmap: the elements keep their own states, repeated (was batched as one array: "list
    indices must be integers or slices, not tuple"). Against NumPy, and the generated source run by NumPy."""
    xs, w = np.array([[1.0, -2.0, 3.0], [-0.5, 2.0, 1.5]]), np.array([0.5, 1.0, -1.0])
    want = np.stack([_repeated_pair(r, w) for r in xs])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(_repeated_pair, in_axes=(0, None))(xs, w)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(srcjax.vmap(_repeated_pair, in_axes=(0, None)))(
        xs, w)), want, rtol=1e-12)
