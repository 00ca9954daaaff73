"""Sorting and order statistics (issue #16): np.sort, argsort, partition, argpartition, lexsort,
searchsorted, median, quantile, percentile.

The registry-driven files check each primitive once (tests/test_primitives.py, test_ad_rules.py,
test_vmap_primitives.py); here: random shapes, axes, ties and NaNs against NumPy (compiled, and
``device="numpy"``), the partition contract, gradients at ties against jax, the refusals, and what
the generated derivative and batched source look like.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import srcjax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

HYPOTHESIS = settings(max_examples=20, deadline=None, derandomize=True, database=None)


def _data(draw: Any, min_dims: int = 1) -> np.ndarray:
    """Small floats with ties (rounded), NaNs and signed zeros sometimes; or integers."""
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=3, min_side=1, max_side=4))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    kind = draw(st.sampled_from(["float", "ties", "nan", "int", "f32"]))
    x = rng.normal(size=shape)
    if kind == "int":
        return np.round(x * 2).astype(np.int32)
    if kind == "f32":
        return x.astype(np.float32)
    if kind in ("ties", "nan"):
        x = np.round(x)  # (ties, and -0.0 next to 0.0)
    if kind == "nan":
        x.flat[rng.integers(0, x.size)] = np.nan
    return x


def _same(actual: Any, expected: Any, tol: float = 1e-12) -> None:
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape and a.dtype == e.dtype, (a.shape, a.dtype, e.shape, e.dtype)
    if e.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e)
    else:
        t = 2e-6 if e.dtype == np.float32 else tol
        np.testing.assert_allclose(a, e, rtol=t, atol=t, equal_nan=True)


def _oracles(f: Any, *args: Any) -> None:
    """Compiled (XLA) and ``device="numpy"`` against NumPy running ``f``."""
    with np.errstate(all="ignore"):
        expected = f(*args)
    for device in (None, "numpy"):
        out = srcjax.compile(f, device=device)(*args)
        for o, e in zip(out, expected):
            _same(o, e)


# -- sort / argsort over random shapes and axes ---------------------------------------------------------
@HYPOTHESIS
@given(st.data())
def test_sort_argsort_random(data: Any) -> None:
    x = _data(data.draw)
    axis = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))

    def f(x):
        return np.sort(x, axis=axis), np.argsort(x, axis=axis, kind="stable")

    _oracles(f, x)


def test_argsort_is_stable_whatever_kind() -> None:
    """srcjax's sort is stable (as JAX's): equal keys keep their order for every kind=."""
    x = np.tile(np.array([2.0, 1.0, 2.0, 1.0]), 50)

    def f(x):
        return np.argsort(x), np.argsort(x, kind="quicksort"), np.argsort(x, kind="heapsort")

    for out in srcjax.compile(f)(x):
        np.testing.assert_array_equal(out, np.argsort(x, kind="stable"))


def test_nan_sorts_last_and_zeros_are_equal() -> None:
    x = np.array([np.nan, 1.0, -0.0, -np.inf, 0.0, np.nan, -1.0, np.inf])

    def f(x):
        return np.sort(x), np.argsort(x, kind="stable")

    s, i = srcjax.compile(f)(x)
    np.testing.assert_array_equal(np.asarray(i), np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(np.signbit(np.asarray(s)), np.signbit(x[np.argsort(x, kind="stable")]))


# -- partition: srcjax returns a full sort, one of the arrangements NumPy allows --------------------------
@HYPOTHESIS
@given(st.data())
def test_partition_contract(data: Any) -> None:
    x = _data(data.draw)
    x = np.where(np.isnan(x), 0.5, x) if x.dtype.kind == "f" else x
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = x.shape[axis]
    kth = data.draw(st.integers(-n, n - 1))

    def f(x):
        return np.partition(x, kth, axis=axis), np.argpartition(x, kth, axis=axis)

    p, i = (np.asarray(o) for o in srcjax.compile(f)(x))
    ref = np.partition(x, kth, axis=axis)
    k = kth % n
    np.testing.assert_array_equal(np.take(p, k, axis=axis), np.take(ref, k, axis=axis))  # the k-th element
    np.testing.assert_array_equal(p, np.sort(x, axis=axis))  # (documented: a full sort)
    np.testing.assert_array_equal(np.take_along_axis(x, i, axis=axis), p)


# -- quantiles over random shapes, axes, q and methods ----------------------------------------------------
@HYPOTHESIS
@given(st.data())
def test_quantile_random(data: Any) -> None:
    x = _data(data.draw)
    nd = x.ndim
    axes = data.draw(st.lists(st.integers(0, nd - 1), unique=True, min_size=1, max_size=nd))
    axis = data.draw(st.sampled_from([None, axes[0] - nd, tuple(axes)]))
    keepdims = data.draw(st.booleans())
    q = data.draw(st.sampled_from([0.5, 0.0, 1.0, 0.37, [0.1, 0.5, 0.93], (0.25,)]))
    method = data.draw(st.sampled_from(["linear", "lower", "higher", "midpoint", "nearest"]))
    pq = [v * 100 for v in q] if isinstance(q, (list, tuple)) else q * 100

    def f(x):
        return (np.quantile(x, q, axis=axis, method=method, keepdims=keepdims),
                np.percentile(x, pq, axis=axis, keepdims=keepdims), np.median(x, axis=axis, keepdims=keepdims))

    _oracles(f, x)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_median_of_nan_slices_and_empty_axis() -> None:
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])

    def f(x):
        return np.median(x, axis=1), np.quantile(x, 0.2, axis=1), np.median(x[:, :0], axis=1)

    _oracles(f, x)


# -- searchsorted: NumPy's order, NaNs last ----------------------------------------------------------------
@pytest.mark.parametrize("a", [np.array([-1.0, 0.0, 0.0, 2.5, np.inf, np.nan, np.nan]), np.arange(6) // 2,
                               np.array([], dtype=np.float64)])
def test_searchsorted_edges(a: np.ndarray) -> None:
    v = np.array([np.nan, -np.inf, -1.0, 0.0, -0.0, 1, 2.5, np.inf, 7.0])

    def f(a, v):
        return np.searchsorted(a, v), np.searchsorted(a, v, side="right"), np.searchsorted(a, 2)

    _oracles(f, a, v)


def test_lexsort_orders_by_the_last_key_first() -> None:
    surnames = np.array([3, 1, 2, 1, 3, 2])
    first = np.array([0.5, 0.25, np.nan, 0.25, -1.0, 0.0])

    def f(a, b):
        return np.lexsort([a, b]), np.lexsort((b, a)), np.lexsort([a, b], axis=0)

    _oracles(f, first, surnames)


# -- derivatives at ties, against jax ------------------------------------------------------------------
def test_gradients_at_ties_follow_jax() -> None:
    """Tied values: the sorted tangent follows the stable order, a median of tied middles reads the stable
    ones, as jax does."""
    x = np.array([[1.0, 3.0, 1.0, 2.0, 3.0], [0.5, 0.5, 0.5, -1.0, 2.0]])
    w = np.arange(1.0, 6.0)

    def f(x):
        return (np.sum(np.sort(x) * w) + np.sum(np.median(x, axis=1) ** 2) + np.quantile(x, 0.3) ** 2
                + np.sum(np.sort(x, axis=0)[1] * w))

    def fj(x):
        return (jnp.sum(jnp.sort(x) * w) + jnp.sum(jnp.median(x, axis=1) ** 2) + jnp.quantile(x, 0.3) ** 2
                + jnp.sum(jnp.sort(x, axis=0)[1] * w))

    g = srcjax.grad(f)
    np.testing.assert_allclose(g(x), jax.grad(fj)(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(srcjax.numpy_function(g)(x), jax.grad(fj)(x), rtol=1e-12, atol=1e-12)


def test_jvp_and_vmap_of_grad() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 6))

    def f(x):
        return np.percentile(x, 30.0) * np.median(x) + np.sum(np.sort(x)[..., :2])

    def fj(x):
        return jnp.percentile(x, 30.0) * jnp.median(x) + jnp.sum(jnp.sort(x)[..., :2])

    t = rng.normal(size=x.shape)
    out, tan = srcjax.jvp(f, (x,), (t,))
    ref = jax.jvp(fj, (x,), (t,))
    np.testing.assert_allclose([out, tan], ref, rtol=1e-12)
    per_row = srcjax.vmap(srcjax.grad(f))(x)
    np.testing.assert_allclose(per_row, jax.vmap(jax.grad(fj))(x), rtol=1e-12, atol=1e-12)


def test_integer_results_have_no_derivative() -> None:
    x = np.array([0.3, -1.0, 2.0])

    def f(x):
        return np.sum(x * np.argsort(x)) + np.sum(x * np.searchsorted(np.sort(x), x))

    np.testing.assert_allclose(srcjax.grad(f)(x), np.argsort(x) + np.searchsorted(np.sort(x), x))


# -- refusals --------------------------------------------------------------------------------------------
def test_in_place_sort_is_refused_with_a_hint() -> None:
    def f(x):
        x.sort()
        return x

    with pytest.raises(srcjax.TranspileError, match="in place") as e:
        srcjax.compile(f)(np.ones(3))
    assert "np.sort" in str(e.value) and "x.sort()" in str(e.value)


@pytest.mark.parametrize("call, match", [
    ("np.searchsorted(x, x)", "1-D"), ("np.quantile(x, 1.5)", r"range \[0, 1\]"),
    ("np.percentile(x, [50, 101])", r"range \[0, 100\]"), ("np.quantile(x, x[0, 0])", "static"),
    ("np.partition(x, 7)", "out of bounds"), ("np.quantile(x, 0.5, method='weibull')", "not supported"),
    ("np.sort(x, kind='fast')", "kind"), ("np.quantile(x > 0, 0.5)", "bool"),
])
def test_bad_calls_are_located_errors(call: str, match: str) -> None:
    ns: dict[str, Any] = {"np": np}
    src = f"def f(x):\n    return {call}\n"
    import linecache

    filename = f"<test_sorting {call}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), ns)
    with pytest.raises(srcjax.TranspileError, match=match) as e:
        srcjax.compile(ns["f"])(np.ones((2, 3)))
    assert ":2:" in str(e.value)  # at the user's line


# -- generated source -----------------------------------------------------------------------------------
def test_generated_source_reads_well() -> None:
    def f(x):
        return np.sum(np.sort(x) * 2.0) + np.median(x) + np.quantile(x, 0.25, axis=0)[0]

    grad_text = srcjax.source(srcjax.grad(f))
    assert "sort_bar(" in grad_text and "order_stat_bar(" in grad_text
    assert "from srcjax.adjoint import" in grad_text
    vmap_text = srcjax.source(srcjax.vmap(f))
    assert "np.sort(x, axis=-1)" in vmap_text and "np.quantile(x, 0.25, axis=1)" in vmap_text


def test_hessian_through_sort_quantiles_and_pad() -> None:
    """Second derivatives go through the derivative helpers (transpiled like user code)."""
    w = np.arange(1.0, 6.0)

    def f(x):
        return (np.sum(np.sort(x) ** 3 * w) + np.median(x) ** 3 + np.quantile(x, 0.3) ** 3
                + np.sum(np.pad(x, 2, mode="reflect") ** 3))

    def fj(x):
        return (jnp.sum(jnp.sort(x) ** 3 * w) + jnp.median(x) ** 3 + jnp.quantile(x, 0.3) ** 3
                + jnp.sum(jnp.pad(x, 2, mode="reflect") ** 3))

    x = np.array([0.3, -1.2, 2.0, 0.7, -0.1])
    np.testing.assert_allclose(srcjax.hessian(f)(x), jax.hessian(fj)(x), rtol=1e-12, atol=1e-12)
