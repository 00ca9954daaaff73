"""srcjax.lax (cond, switch, while_loop, fori_loop, scan, index_update): three oracles agree.

Every program below is plain NumPy-style Python that calls ``srcjax.lax``. It is
run three ways and the results must agree:

- directly: the ``srcjax.lax`` functions are the NumPy reference implementation;
- compiled: ``srcjax.compile`` lowers the calls to stablehlo.if/case/while
  (and ``srcjax.numpy_function``, the generated source run by NumPy);
- its jax twin: the same source with ``np`` bound to ``jax.numpy`` and ``lax``
  to ``jax.lax``, under ``jax.jit`` (a Python int argument is traced, exactly
  as srcjax makes it a dynamic value).

Hypothesis draws data that takes every branch and many trip counts; each
distinct argument signature compiles once, so the example counts stay small.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import srcjax
from srcjax import lax
from srcjax.lower.values import roll_above
from tests import twins

ROLL = roll_above(srcjax.devices()[0].platform)  # Python fors / fori_loops this short are unrolled

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def _floats(*args, **kw):  # type: ignore[no-untyped-def]
    """``st.floats`` without subnormals: XLA on CPU flushes them to zero (as under jax)."""
    return st.floats(*args, allow_subnormal=False, **kw)
jax.config.update("jax_enable_x64", True)

_SCALE = 10 if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" else 1


def examples(n: int) -> settings:
    return settings(max_examples=n * _SCALE, deadline=None, derandomize=_SCALE == 1,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ======================================================================================
# Oracles
# ======================================================================================
@functools.cache
def compiled(fn, static_argnames: tuple[str, ...] = ()):
    return srcjax.compile(fn, static_argnames=static_argnames) if static_argnames else srcjax.compile(fn)


@functools.cache
def jax_twin(fn, static_argnames: tuple[str, ...] = ()):
    """The same source, with `np` bound to jax.numpy and `lax` to jax.lax, under jax.jit."""
    return jax.jit(twins.jax_twin(fn, lax=jax.lax), static_argnames=static_argnames)


def leaves(tree: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(tree, tuple | list):
        return [leaf for i, t in enumerate(tree) for leaf in leaves(t, f"{path}[{i}]")]
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in leaves(tree[k], f"{path}[{k!r}]")]
    return [] if tree is None else [(path, tree)]


def structure(tree: Any) -> Any:
    if isinstance(tree, tuple | list):
        return tuple(structure(t) for t in tree)
    if isinstance(tree, dict):
        return {k: structure(v) for k, v in tree.items()}
    return None if tree is None else "*"


def tol(dtype: np.dtype) -> dict[str, float]:
    return dict(rtol=2e-5, atol=1e-5) if np.dtype(dtype) == np.float32 else dict(rtol=1e-10, atol=1e-10)


def check_agree(actual: Any, expected: Any, who: str, check_dtype: bool = True) -> None:
    assert structure(actual) == structure(expected), f"{who}: structure {structure(actual)} != {structure(expected)}"
    for (path, a), (_, e) in zip(leaves(actual), leaves(expected)):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape, f"{who}{path}: shape {a.shape} != {e.shape}"
        if check_dtype:
            assert a.dtype == e.dtype, f"{who}{path}: dtype {a.dtype} != {e.dtype}"
        if e.dtype.kind in "biu" and a.dtype.kind in "biu":
            np.testing.assert_array_equal(a, e, err_msg=f"{who}{path}")
        else:
            np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), **tol(e.dtype),
                                       err_msg=f"{who}{path}")


def three_way(fn, *args: Any, static_argnames: tuple[str, ...] = (), jax_too: bool = True) -> Any:
    """The srcjax.lax NumPy reference, the compiled program, its generated source, and jax.lax agree.
    ``static_argnames`` are static for both compilers."""
    expected = fn(*args)
    check_agree(compiled(fn, static_argnames)(*args), expected, "compiled")
    check_agree(srcjax.numpy_function(fn)(*args), expected, "generated source run by NumPy")
    if jax_too:
        # jax's promotion differs from NumPy's for a few mixes (and its Python ints are int64 arrays): values only
        check_agree(jax_twin(fn, static_argnames)(*args), expected, "jax.lax", check_dtype=False)
    return expected


def hlo(fn, *args: Any, **kw: Any) -> str:
    return srcjax.lower(fn, *args, **kw).as_text()


def vectors(n: int = 4, dtype=np.float64, lo: float = -4.0, hi: float = 4.0):
    return hnp.arrays(dtype, n, elements=_floats(lo, hi, width=np.dtype(dtype).itemsize * 8))


# ======================================================================================
# cond
# ======================================================================================
def cond_basic(x, t):
    def on_true(x):
        return x * 2.0 + 1.0

    def on_false(x):
        return np.sin(x) - 1.0

    return lax.cond(np.sum(x) > t, on_true, on_false, x)


def cond_tuple(x, y):
    def on_true(x, y):
        return x * y, np.sum(x)

    def on_false(x, y):
        return x - y, 0.0  # a Python float joins the other branch's float64

    return lax.cond(np.max(x) > np.max(y), on_true, on_false, x, y)


def cond_closure_and_nested(x, k):
    scale = np.float32(3.0)

    def inner_true(v):
        return v * scale

    def inner_false(v):
        return v / scale

    def on_true(v):
        return lax.cond(np.min(v) > 0.0, inner_true, inner_false, v)

    def on_false(v):
        return v - scale

    return lax.cond(k > 0, on_true, on_false, x)


def cond_int_pred(n, x):
    def on_true(x):
        return x + 1.0

    def on_false(x):
        return -x

    return lax.cond(n % 3, on_true, on_false, x)  # an integer predicate: nonzero is true


def cond_static_pred(x):
    def on_true(x):
        return x + 1.0

    def on_false(x):
        return x.reshape(2, 2)  # never traced: the predicate is a Python bool

    return lax.cond(x.shape[0] == 4, on_true, on_false, x)


@examples(25)
@given(x=vectors(), take=st.booleans(), gap=_floats(0.25, 3.0))
def test_cond_takes_either_branch(x, take, gap):
    t = float(np.sum(x)) + (-gap if take else gap)
    three_way(cond_basic, x, t)


@examples(20)
@given(x=vectors(), y=vectors())
def test_cond_tuple_operands_and_weak_output(x, y):
    three_way(cond_tuple, x, y)


@examples(20)
@given(x=vectors(dtype=np.float32, lo=-2, hi=2), k=st.sampled_from([-1, 0, 1, 2]))
def test_cond_nested_with_closure(x, k):
    three_way(cond_closure_and_nested, x, np.int32(k))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, -1])
def test_cond_integer_predicate(n):
    three_way(cond_int_pred, n, np.arange(3.0))


def test_cond_static_predicate_only_traces_the_taken_branch():
    x = np.arange(4.0)
    three_way(cond_static_pred, x, jax_too=False)  # jax traces both branches; srcjax decides in Python
    assert "stablehlo.if" not in hlo(cond_static_pred, x)


def test_cond_lowers_to_stablehlo_if():
    text = hlo(cond_basic, np.ones(4), 0.5)
    assert "stablehlo.if" in text or '"stablehlo.if"' in text


def test_cond_non_scalar_predicate_is_a_shape_error():
    def vec_pred(x):
        def tb(x):
            return x

        def fb(x):
            return -x

        return lax.cond(x > 0, tb, fb, x)

    with pytest.raises(srcjax.ShapeError, match="scalar"):
        srcjax.compile(vec_pred)(np.ones(3))
    with pytest.raises(TypeError, match="np.any or np.all"):
        vec_pred(np.ones(3))


# ======================================================================================
# switch
# ======================================================================================
def switch_basic(i, x):
    def b0(x):
        return x + 1.0

    def b1(x):
        return x * x

    def b2(x):
        return np.cos(x)

    return lax.switch(i, (b0, b1, b2), x)


def switch_tuple_out(i, x, y):
    def b0(x, y):
        return x + y, np.sum(x)

    def b1(x, y):
        return x * y, np.sum(y)

    return lax.switch(i, [b0, b1], x, y)


def switch_one_branch(i, x):
    def only(x):
        return x * 3.0

    return lax.switch(i, [only], x)


@examples(30)
@given(x=vectors(), i=st.integers(-6, 8), as_type=st.sampled_from([int, np.int32, np.int64]))
def test_switch_clamps_out_of_range_indices(x, i, as_type):
    three_way(switch_basic, as_type(i), x)


@examples(15)
@given(x=vectors(3), y=vectors(3), i=st.integers(-3, 4))
def test_switch_tuple_outputs(x, y, i):
    three_way(switch_tuple_out, np.int32(i), x, y)


@pytest.mark.parametrize("i", [-5, 0, 7])
def test_switch_single_branch(i):
    three_way(switch_one_branch, np.int32(i), np.arange(3.0))


def test_switch_lowers_to_stablehlo_case():
    assert "stablehlo.case" in hlo(switch_basic, np.int32(1), np.ones(3))


def test_switch_float_index_is_a_dtype_error():
    with pytest.raises(srcjax.DTypeError, match="integer"):
        srcjax.compile(switch_basic)(np.float64(1.0), np.ones(3))


def test_switch_clamps_large_int64_index():
    i, x = np.int64(2**32), np.arange(3.0)
    check_agree(compiled(switch_basic)(i, x), switch_basic(i, x), "compiled")


# ======================================================================================
# while_loop
# ======================================================================================
def while_tuple_counter(x, limit):
    def cond_fun(c):
        i, v, total = c
        return np.logical_and(i < 20, total < limit)

    def body_fun(c):
        i, v, total = c
        v = v * 1.5 + 0.25
        return i + 1, v, total + np.sum(np.abs(v))

    return lax.while_loop(cond_fun, body_fun, (0, x, np.float64(0.0)))


def while_newton(a):
    def cond_fun(c):
        x, n = c
        return np.logical_and(np.max(np.abs(x * x - a)) > 1e-10, n < 100)

    def body_fun(c):
        x, n = c
        return 0.5 * (x + a / x), n + 1

    return lax.while_loop(cond_fun, body_fun, (a + 1.0, 0))


def while_int_only(n):
    def cond_fun(c):
        k, steps = c
        return k != 1

    def body_fun(c):
        k, steps = c
        k = np.where(k % 2 == 0, k // 2, 3 * k + 1)
        return k, steps + 1

    return lax.while_loop(cond_fun, body_fun, (n, 0))


@examples(25)
@given(x=vectors(3, lo=0.0, hi=2.0), limit=_floats(-1.0, 200.0))
def test_while_loop_tuple_carry_with_python_int_counter(x, limit):
    three_way(while_tuple_counter, x, limit)  # limit <= 0: zero trips


@examples(20)
@given(a=vectors(3, lo=0.01, hi=100.0))
def test_while_loop_newton_sqrt(a):
    x, n = three_way(while_newton, a)
    np.testing.assert_allclose(x, np.sqrt(a), rtol=1e-9)


@examples(20)
@given(n=st.integers(1, 200))
def test_while_loop_integer_carry(n):
    three_way(while_int_only, np.int64(n))


def test_while_loop_is_one_stablehlo_while():
    text = hlo(while_tuple_counter, np.ones(3), 10.0)
    assert text.count("stablehlo.while") == 1


def while_float_grows(x, n):
    def cond_fun(c):
        k, acc = c
        return k > 0

    def body_fun(c):
        k, acc = c
        return k - 1, acc + x  # acc: a Python float -> float32 vector

    return lax.while_loop(cond_fun, body_fun, (n, 0.0))


def test_while_loop_carry_cannot_grow_from_a_python_float_to_a_vector():
    with pytest.raises(srcjax.ShapeError, match="shape"):
        srcjax.compile(while_float_grows)(np.ones(4, np.float32), np.int32(3))


# ======================================================================================
# fori_loop
# ======================================================================================
def fori_dynamic(x, n):
    def body(i, acc):
        return acc * 0.5 + x * i

    return lax.fori_loop(0, n, body, np.zeros_like(x))


def fori_dynamic_both(x, lo, hi):
    def body(i, acc):
        return acc + x[i % x.shape[0]] * i  # the counter indexes an array: a dynamic index

    return lax.fori_loop(lo, hi, body, np.zeros_like(x))


def fori_static(x, n):
    def body(i, acc):
        return np.tanh(acc + x * i)

    return lax.fori_loop(1, n + 1, body, x)


def fori_tuple_carry(x, n):
    def body(i, c):
        a, b = c
        return b, a + b * x

    return lax.fori_loop(0, n, body, (np.ones_like(x), x))


def fori_1000(x):
    def body(i, acc):
        return acc + x * i

    return lax.fori_loop(0, 1000, body, np.zeros_like(x))


def fori_steps(x, n):
    def body(i, acc):
        return np.sin(acc) + x * i

    return lax.fori_loop(0, n, body, x)


@examples(25)
@given(x=vectors(), n=st.integers(-3, 12))
def test_fori_loop_dynamic_bound(x, n):
    three_way(fori_dynamic, x, n)  # a Python int argument is dynamic: one compilation for every n


def test_fori_loop_python_int_bound_is_dynamic():
    text = hlo(fori_dynamic, np.ones(4), 5)
    assert "stablehlo.while" in text and "%arg1: tensor<i64>" in text


@examples(25)
@given(x=vectors(5), lo=st.integers(-4, 6), hi=st.integers(-4, 9))
def test_fori_loop_dynamic_lower_and_upper(x, lo, hi):
    three_way(fori_dynamic_both, x, lo, hi)  # hi <= lo: zero trips


@pytest.mark.parametrize("n", [-2, -1, 0, 1, 2, 3, 7])
def test_fori_loop_static_bounds_tiny_trip_counts(n):
    x = np.linspace(-1.0, 1.0, 4)
    three_way(fori_static, x, n, static_argnames=("n",))
    text = hlo(compiled(fori_static, ("n",)), x, n)
    assert ("stablehlo.while" in text) == (n > ROLL)  # trip count <= 2 is unrolled (on a GPU <= 16)


@examples(15)
@given(x=vectors(3, lo=-1.0, hi=1.0), n=st.integers(-1, 9))
def test_fori_loop_tuple_carry(x, n):
    three_way(fori_tuple_carry, x, n)


def test_fori_loop_1000_steps_is_rolled():
    x = np.arange(3.0)
    three_way(fori_1000, x)
    text = hlo(fori_1000, x)
    assert text.count("stablehlo.while") == 1
    assert len(text) < 3000


def test_fori_loop_text_size_does_not_grow_with_trip_count():
    x = np.arange(3.0)
    f = compiled(fori_steps, ("n",))
    k = 10 if ROLL < 10 else 100  # (a rolled loop on this platform)
    small, big = hlo(f, x, k), hlo(f, x, 10_000)
    assert "stablehlo.while" in small and "stablehlo.while" in big
    assert re.sub(rf"\b({k}|10000)\b", "N", small) == re.sub(rf"\b({k}|10000)\b", "N", big)
    assert len(big) - len(small) <= 3 * small.count(f"dense<{k}>")


def fori_list_of_matrices(a, b, c, x):
    ms = [a, b, c]

    def body(i, v):
        return np.tanh(ms[i] @ v)  # ms[i] needs i static: the loop is unrolled

    return lax.fori_loop(0, 3, body, x)


def fori_list_dynamic(a, b, c, x, n):
    ms = [a, b, c]

    def body(i, v):
        return ms[i] @ v

    return lax.fori_loop(0, n, body, x)


def test_fori_loop_unrolls_when_the_counter_indexes_a_python_list():
    r = np.random.default_rng(0)
    a, b, c, x = r.normal(size=(5, 4)), r.normal(size=(3, 5)), r.normal(size=(2, 3)), r.normal(size=4)
    got = three_way(fori_list_of_matrices, a, b, c, x, jax_too=False)  # jax cannot index a list with a tracer
    np.testing.assert_allclose(got, np.tanh(c @ np.tanh(b @ np.tanh(a @ x))), rtol=1e-12)
    assert "stablehlo.while" not in hlo(fori_list_of_matrices, a, b, c, x)


def test_fori_loop_bound_by_a_python_int_argument_indexing_a_python_list_is_specialized_on_it():
    # (was refused: the counter indexes a Python list; a Python int argument bounding a loop whose body needs it
    # static is made static (one program per value), as range(steps) of one is)
    r = np.random.default_rng(1)
    a, b, c = (r.normal(size=(3, 3)) for _ in range(3))
    f = srcjax.compile(fori_list_dynamic)
    for n in (2, 3):
        np.testing.assert_allclose(np.asarray(f(a, b, c, np.ones(3), n)), fori_list_dynamic(a, b, c, np.ones(3), n))


def fori_peel(x, n):
    def body(i, acc):
        return acc + x * i  # acc: Python float 0.0 -> float32 vector in the first iteration

    return lax.fori_loop(0, n, body, 0.0)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 10])
def test_fori_loop_static_bounds_peel_first_iteration(n):
    x = np.arange(4, dtype=np.float32)
    expected = fori_peel(x, n)
    check_agree(compiled(fori_peel, ("n",))(x, n), expected, "compiled")  # jax refuses the changing carry
    if n > ROLL:
        assert "stablehlo.while" in hlo(compiled(fori_peel, ("n",)), x, n)


@pytest.mark.parametrize("n", [0, 3])
def test_fori_loop_bound_by_a_python_int_argument_grows_a_python_float(n):
    # (was refused: the carry changes from a Python float to a float32 vector in the first iteration; the bound,
    # a Python int argument, is made static and the first iteration peeled)
    x = np.arange(4, dtype=np.float32)
    check_agree(srcjax.compile(fori_peel)(x, n), fori_peel(x, n), "compiled")


def fori_strong_lower(lo, x):
    def body(i, acc):
        return acc + x * i

    return lax.fori_loop(lo, 5, body, np.zeros_like(x))


def test_fori_loop_int32_array_lower_bound():
    x = np.arange(4, dtype=np.float32)
    three_way(fori_strong_lower, np.int32(1), x)


# ======================================================================================
# scan
# ======================================================================================
def scan_cumsum(x):
    def step(c, xi):
        c = c + xi
        return c, c * 2.0

    return lax.scan(step, np.zeros(x.shape[1:]), x)


def scan_tuple_xs_reverse(a, b, reverse):
    def step(c, xs):
        x, y = xs
        c = c * 0.5 + x - y
        return c, (c, np.sum(x))

    return lax.scan(step, np.zeros(a.shape[1:]), (a, b), reverse=reverse)


def scan_dict_xs(a, b):
    def step(c, xs):
        s, p = c
        s = s + xs["a"] * xs["b"]
        p = p * xs["b"]
        return (s, p), {"s": s, "pair": (p, xs["a"])}

    return lax.scan(step, (np.zeros(a.shape[1:]), np.float64(1.0)), {"a": a, "b": b})


def scan_length_only(x, reverse):
    def step(c, _):
        c = np.cos(c) * 0.9 + x
        return c, c[0]

    return lax.scan(step, x, None, length=6, reverse=reverse)


def scan_counter_ys(x):
    def step(c, xi):
        i, acc = c
        return (i + 1, acc + xi * i), (acc, i)  # the counter is a Python int

    return lax.scan(step, (0, np.zeros(x.shape[1:])), x)


@examples(12)
@given(n=st.sampled_from([1, 2, 5]), m=st.sampled_from([1, 3]), data=st.data())
def test_scan_array_xs(n, m, data):
    x = data.draw(hnp.arrays(np.float64, (n, m), elements=_floats(-3, 3)))
    three_way(scan_cumsum, x)


@examples(12)
@given(n=st.sampled_from([1, 2, 4]), reverse=st.booleans(), data=st.data())
def test_scan_tuple_xs_tuple_ys_reverse(n, reverse, data):
    a = data.draw(hnp.arrays(np.float64, (n, 3), elements=_floats(-3, 3)))
    b = data.draw(hnp.arrays(np.float64, (n, 3), elements=_floats(-3, 3)))
    three_way(scan_tuple_xs_reverse, a, b, reverse, static_argnames=("reverse",))


def test_scan_reverse_stores_each_y_at_its_slice():
    a, b = np.arange(12.0).reshape(4, 3), np.zeros((4, 3))
    carry, (ys, sums) = three_way(scan_tuple_xs_reverse, a, b, True, static_argnames=("reverse",))
    np.testing.assert_allclose(sums, a.sum(axis=1))  # not reversed
    np.testing.assert_allclose(ys[-1], a[-1])  # the first step is the last slice


@examples(8)
@given(n=st.sampled_from([1, 3]), data=st.data())
def test_scan_dict_xs_tuple_carry(n, data):
    a = data.draw(hnp.arrays(np.float64, (n, 2), elements=_floats(-2, 2)))
    b = data.draw(hnp.arrays(np.float64, (n,), elements=_floats(-2, 2)))
    three_way(scan_dict_xs, a, b)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_length_only(reverse):
    three_way(scan_length_only, np.linspace(-1, 1, 3), reverse, static_argnames=("reverse",))


def test_scan_reverse_from_a_python_bool_argument():
    x = np.linspace(-1, 1, 3)
    check_agree(compiled(scan_length_only)(x, False), scan_length_only(x, False), "compiled")


def test_scan_python_int_in_carry_and_ys():
    three_way(scan_counter_ys, np.arange(10.0).reshape(5, 2))


def test_scan_is_one_stablehlo_while():
    assert hlo(scan_cumsum, np.ones((50, 3))).count("stablehlo.while") == 1


def scan_mismatched(a, b):
    def step(c, xs):
        return c, xs[0] + xs[1]

    return lax.scan(step, 0.0, (a, b))


def test_scan_mismatched_leading_dimensions():
    with pytest.raises(srcjax.ShapeError, match="leading"):
        srcjax.compile(scan_mismatched)(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="leading"):
        scan_mismatched(np.ones((3, 2)), np.ones((4, 2)))


def scan_int_init(x):
    def step(c, xi):
        return c + xi, c

    return lax.scan(step, 0, x)


def test_scan_python_int_init_carry_becomes_float():
    x = np.array([0.5, 0.25, 0.125], np.float32)
    check_agree(compiled(scan_int_init)(x), scan_int_init(x), "compiled", check_dtype=False)


def scan_list_xs_no_ys(a, b):
    def step(c, xs):
        return c + xs[0] * xs[1], None

    return lax.scan(step, np.zeros(a.shape[1:]), [a, b])


def scan_int_bool_ys(x):
    def step(c, xi):
        c = c + xi
        return c, c > 3

    return lax.scan(step, np.int64(0), x)


def test_scan_list_xs_and_no_ys():
    a = np.arange(6.0).reshape(3, 2)
    carry, ys = three_way(scan_list_xs_no_ys, a, a + 1.0)
    assert ys is None and compiled(scan_list_xs_no_ys)(a, a + 1.0)[1] is None


def test_scan_integer_carry_and_bool_ys():
    three_way(scan_int_bool_ys, np.arange(6))


def scan_empty(x):
    def step(c, xi):
        return c + xi, c

    return lax.scan(step, np.zeros(x.shape[1:]), x)


def test_scan_over_zero_elements_is_refused_clearly():
    with pytest.raises(srcjax.ShapeError, match="zero"):
        srcjax.compile(scan_empty)(np.ones((0, 2)))


# ======================================================================================
# Nesting
# ======================================================================================
def scan_in_fori(x):
    def step(c, xi):
        return c * 0.5 + xi, c

    def body(i, c):
        c2, ys = lax.scan(step, c, x)
        return c2 + np.sum(ys) * 0.01

    return lax.fori_loop(0, 4, body, np.float64(0.0))


def cond_in_scan(x):
    def pos(c, xi):
        return c + xi

    def neg(c, xi):
        return c - xi * 2.0

    def step(c, xi):
        c = lax.cond(xi > 0, pos, neg, c, xi)
        return c, c

    return lax.scan(step, 0.0, x)


def switch_in_while(x):
    def b0(v):
        return v + 1.0

    def b1(v):
        return v * 2.0

    def b2(v):
        return v + 3.0

    def cond_fun(c):
        i, v = c
        return v < 100.0

    def body_fun(c):
        i, v = c
        return i + 1, lax.switch(i % 3, [b0, b1, b2], v)  # a Python int counter picks the branch

    return lax.while_loop(cond_fun, body_fun, (0, x))


def cond_on_fori_counter(x, n):
    def even(v):
        return v + 1.0

    def odd(v):
        return v * 1.5

    def body(i, v):
        return lax.cond(i % 2 == 0, even, odd, v)

    return lax.fori_loop(0, n, body, x)


def fori_count(n):
    def body(i, c):
        return c + 1

    return lax.fori_loop(0, n, body, 0)


@examples(15)
@given(x=vectors(3, lo=-2.0, hi=2.0))
def test_scan_inside_fori(x):
    three_way(scan_in_fori, x)


@examples(15)
@given(x=vectors(5))
def test_cond_inside_scan(x):
    three_way(cond_in_scan, x)


@examples(15)
@given(x=_floats(-4.5, 120.0))  # v -> 2v + 5 per three steps: from -5 (a fixed point) or below it never ends
def test_switch_inside_while_on_python_int_counter(x):
    three_way(switch_in_while, np.float64(x))


@examples(15)
@given(x=_floats(-3.0, 3.0), n=st.integers(-1, 9))
def test_cond_on_fori_counter(x, n):
    three_way(cond_on_fori_counter, np.float64(x), n)


@pytest.mark.parametrize("n", [-2, 0, 5])
def test_fori_loop_python_int_carry_with_dynamic_bound(n):
    three_way(fori_count, n)


# ======================================================================================
# index_update
# ======================================================================================
def index_update_prog(x, i, v):
    return lax.index_update(x, i, v) * 2.0


def index_update_slice(x, v):
    return lax.index_update(x, (slice(1, None), 0), v)


@examples(15)
@given(x=vectors(5), i=st.integers(-5, 4), v=_floats(-3, 3))
def test_index_update(x, i, v):
    expected = index_update_prog(x, i, v)
    check_agree(compiled(index_update_prog)(x, i, v), expected, "compiled")
    check_agree(jnp.asarray(x).at[i].set(v) * 2.0, expected, "jax", check_dtype=False)


def test_index_update_slice_broadcasts_and_copies():
    x = np.arange(12.0).reshape(4, 3)
    expected = index_update_slice(x, np.array([7.0, 8.0, 9.0]))
    assert x[1, 0] == 3.0  # the input is not modified
    check_agree(compiled(index_update_slice)(x, np.array([7.0, 8.0, 9.0])), expected, "compiled")


def select_sum(x, y):
    return np.sum(lax.select(x > y, x * y, np.sin(x)))


def test_select_is_jaxs_under_jit_grad_and_vmap():
    """``srcjax.lax.select`` (JAX's ``lax.select``, read as ``np.where``): values, gradients, a batch."""
    jx = jax.lax

    def j_select_sum(x, y):
        return jnp.sum(jx.select(x > y, x * y, jnp.sin(x)))

    x, y = np.linspace(-1.0, 1.0, 6), np.full(6, 0.2)
    np.testing.assert_allclose(float(srcjax.jit(select_sum)(x, y)), float(j_select_sum(x, y)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(srcjax.grad(select_sum, argnums=(0, 1))(x, y)),
                               np.asarray(jax.grad(j_select_sum, argnums=(0, 1))(x, y)), rtol=1e-6)
    xs, ys = np.stack([x, -x]), np.stack([y, y])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(select_sum))(xs, ys)),
                               np.asarray(jax.vmap(jax.grad(j_select_sum))(xs, ys)), rtol=1e-6)
