"""NumPy functions srcjax writes in NumPy terms (``srcjax/composites.py``): against NumPy (compiled by
XLA and as generated source run by NumPy), their derivatives against jax and finite differences,
and their batched programs against a loop over examples."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import sliding_window_view

import srcjax
from tests.twins import JAX

jax.config.update("jax_enable_x64", True)
rng = np.random.default_rng(0)


def agree(got: Any, want: Any, rtol: float = 1e-10, atol: float = 1e-12) -> None:
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            agree(g, w, rtol, atol)
        return
    g = np.asarray(got)
    assert g.shape == np.shape(want), (g.shape, np.shape(want))
    np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, equal_nan=True)


def both(fn: Any, *args: Any, rtol: float = 1e-10) -> None:
    """Compiled (XLA) and the generated source run by NumPy, against NumPy running ``fn``."""
    want = fn(*args)
    agree(srcjax.compile(fn)(*args), want, rtol)
    agree(srcjax.compile(fn, device="numpy")(*args), want, rtol)


# -- the functions, as a user writes them -----------------------------------------------------------

def closeness(x, y):
    return np.isclose(x, y), np.isclose(x, y, rtol=0.1, atol=0.0, equal_nan=True), np.allclose(x, x + 1e-12)


def nans(x):
    return (np.nan_to_num(x), np.nan_to_num(x, nan=-1.0, posinf=9.0), np.nansum(x), np.nansum(x, axis=0),
            np.nanmean(x, axis=1, keepdims=True), np.nanmax(x, axis=0), np.nanmin(x), np.nanprod(x, axis=1),
            np.nanvar(x, axis=0), np.nanstd(x, ddof=1), np.nanargmax(x, axis=1), np.nanargmin(x))


def statistics(x, y):
    return np.cov(x), np.cov(x, rowvar=False, bias=True), np.cov(x[0], y), np.corrcoef(x), np.corrcoef(x[0], y)


def tables(x, xp, fp):
    return np.interp(x, xp, fp), np.interp(x, xp, fp, left=-7.0, right=7.0)


def polynomials(p, x):
    return np.polyval(p, x)


def integrals(y, x):
    return np.trapezoid(y), np.trapezoid(y, dx=0.5, axis=0), np.trapezoid(y[0], x)


def differences(f):
    return np.gradient(f[0]), np.gradient(f[0], 0.5), np.gradient(f), np.gradient(f, 0.5, 2.0), np.gradient(f, axis=1)


def convolutions(a, v):
    return (np.convolve(a, v), np.convolve(a, v, mode="same"), np.convolve(a, v, mode="valid"),
            np.convolve(v, a, mode="same"), np.correlate(a, v), np.correlate(a, v, mode="full"),
            np.correlate(v, a, mode="same"))


def choices(x):
    return np.select([x > 0.5, x < -0.5], [x * 2.0, -x], default=0.25)


def histograms(x, edges):
    return np.histogram(x, bins=4), np.histogram(x, bins=3, range=(-1.0, 1.0)), np.histogram(x, bins=edges)


def scans(x):
    return np.maximum.accumulate(x), np.minimum.accumulate(x, axis=1), np.add.accumulate(x), np.multiply.accumulate(x[0])


def test_closeness():
    x = rng.normal(size=(3, 4))
    y = x + rng.normal(size=(3, 4)) * 1e-6
    y[0, 0], x[1, 1], y[1, 1], x[2, 2], y[2, 2] = 5.0, np.nan, np.nan, np.inf, np.inf
    both(closeness, x, y)


def test_nan_functions():
    x = rng.normal(size=(3, 4))
    x[0, 1] = np.nan
    x[2, 3] = np.inf
    x[1, 0] = -np.inf
    both(nans, x)


def test_statistics():
    both(statistics, rng.normal(size=(3, 5)), rng.normal(size=5))


@settings(max_examples=15, deadline=None, derandomize=True)
@given(n=st.integers(1, 6), m=st.integers(1, 6), seed=st.integers(0, 2 ** 16))
def test_convolution_modes_and_lengths(n, m, seed):
    r = np.random.default_rng(seed)
    both(convolutions, r.normal(size=n), r.normal(size=m))


def test_interpolation_polynomials_integrals_differences():
    xp = np.array([-1.0, 0.0, 0.5, 2.0])
    both(tables, np.array([-3.0, -1.0, -0.2, 0.0, 0.7, 2.0, 5.0]), xp, rng.normal(size=4))
    both(polynomials, rng.normal(size=4), rng.normal(size=5))
    both(integrals, rng.normal(size=(3, 5)), np.cumsum(rng.uniform(0.1, 1.0, size=5)))
    both(differences, rng.normal(size=(4, 5)))


def test_select_histogram_scans():
    both(choices, rng.normal(size=(3, 4)))
    both(histograms, rng.normal(size=20), np.array([-2.0, 0.0, 0.5, 2.0]))
    both(scans, rng.normal(size=(5, 6)))


# -- derivatives against jax ---------------------------------------------------------------------

XP = np.array([-1.0, 0.0, 0.5, 2.0])


def loss_interp(fp, x):
    return np.sum(np.interp(x, XP, fp) ** 2)


def j_loss_interp(fp, x):
    return jnp.sum(jnp.interp(x, jnp.array([-1.0, 0.0, 0.5, 2.0]), fp) ** 2)


def loss_signal(a, v):
    return np.sum(np.tanh(np.convolve(a, v, mode="same"))) + np.sum(np.correlate(a, v) ** 2) + \
        np.sum(np.gradient(a) ** 2)


def j_loss_signal(a, v):
    return jnp.sum(jnp.tanh(jnp.convolve(a, v, mode="same"))) + jnp.sum(jnp.correlate(a, v) ** 2) + \
        jnp.sum(jnp.gradient(a) ** 2)


def loss_stats(x):
    return np.sum(np.corrcoef(x) ** 2) + np.sum(np.cov(x)) + np.trapezoid(np.polyval(x[0], x[1])) + \
        np.sum(np.maximum.accumulate(x[2])) + np.nanmean(x)


def j_loss_stats(x):
    return jnp.sum(jnp.corrcoef(x) ** 2) + jnp.sum(jnp.cov(x)) + jnp.trapezoid(jnp.polyval(x[0], x[1])) + \
        jnp.sum(jax.lax.cummax(x[2])) + jnp.nanmean(x)


@pytest.mark.parametrize("f, jf, args", [
    (loss_interp, j_loss_interp, (rng.normal(size=4), np.array([-3.0, -0.7, 0.2, 1.1, 4.0]))),
    (loss_signal, j_loss_signal, (rng.normal(size=6), rng.normal(size=3))),
    (loss_stats, j_loss_stats, (rng.normal(size=(3, 5)),)),
])
def test_gradients_against_jax(f, jf, args):
    nums = tuple(range(len(args)))
    agree(srcjax.grad(f, argnums=nums)(*args), tuple(np.asarray(g) for g in jax.grad(jf, argnums=nums)(*args)),
          rtol=1e-8, atol=1e-10)
    tangents = tuple(rng.normal(size=np.shape(a)) for a in args)
    _, t = srcjax.jvp(f, args, tangents)
    _, jt = JAX.jvp(jf, args, tangents)
    agree(t, np.asarray(jt), rtol=1e-8, atol=1e-10)


# -- batched ---------------------------------------------------------------------------------------

def per_row(x, v):
    return np.convolve(x, v, mode="same") + np.interp(x, XP[:3], v) + \
        np.maximum.accumulate(x) + np.nan_to_num(np.log(x))


def test_vmap_matches_a_loop_over_examples():
    xs, v = rng.normal(size=(4, 3)), rng.normal(size=3)
    with np.errstate(invalid="ignore", divide="ignore"):
        want = np.stack([per_row(x, v) for x in xs])
        got = srcjax.vmap(per_row, in_axes=(0, None))(xs, v)
    agree(got, want)


def test_the_source_shows_the_implementation_imported():
    text = srcjax.source(srcjax.compile(choices))
    assert "from srcjax.composites import select" in text and "select(" in text


# -- float() / int() of a one-element array, as data -------------------------------------------------

def numbers_as_data(x, w):
    s = float(np.sum(w))
    k = int(np.max(x) * 3)  # truncated toward zero, as Python's int()
    return x * s + k, int(-2.7 * np.sum(w) / np.sum(w)) * x


def test_float_and_int_of_arrays_are_data():
    x, w = np.arange(3.0, dtype=np.float32), np.array([0.5, 1.25])
    both(numbers_as_data, x, w)
    out = srcjax.compile(numbers_as_data)(x, w)
    assert np.asarray(out[0]).dtype == np.float32  # a Python float is weak: x keeps its dtype
    # float(x) passes the derivative through; int(x) has none
    agree(srcjax.grad(lambda w: float(np.sum(w * w)) * 2.0)(w), 4.0 * w)
    xs = np.stack([x, x + 1.0, x - 2.0])
    agree(srcjax.vmap(numbers_as_data, in_axes=(0, None))(xs, w),
          tuple(np.stack(r) for r in zip(*[numbers_as_data(v, w) for v in xs])))


def size_from_data(w):
    return np.zeros(int(np.sum(w)))


def test_int_of_data_where_a_static_value_is_needed_is_refused():
    with pytest.raises(srcjax.StaticValueError, match="must be known at transpile time"):
        srcjax.compile(size_from_data)(np.array([1.0, 2.0]))


# -- np.add.at, sliding windows --------------------------------------------------------------------

def scatter_add(x, i, v):
    a = np.zeros(5)
    np.add.at(a, i, v)  # repeated indices accumulate
    b = x.copy()
    np.add.at(b, (i, 0), 2.0)
    return a, b


def test_add_at_accumulates_repeated_indices():
    x, i, v = rng.normal(size=(5, 2)), np.array([0, 2, 2, 4, 0]), rng.normal(size=5)
    want = scatter_add(x.copy(), i, v)
    agree(srcjax.compile(scatter_add)(x, i, v), want)
    agree(srcjax.compile(scatter_add, device="numpy")(x, i, v), want)
    assert "index_add(a, i, v)" in srcjax.source(srcjax.compile(scatter_add))
    jloss = lambda v: jnp.sum(jnp.zeros(5).at[i].add(v) ** 2)  # noqa: E731
    agree(srcjax.grad(lambda v: np.sum(scatter_add(x, i, v)[0] ** 2))(v), np.asarray(JAX.grad(jloss)(v)))
    vs = rng.normal(size=(3, 5))
    agree(srcjax.vmap(scatter_add, in_axes=(None, None, 0))(x, i, vs),
          tuple(np.stack(r) for r in zip(*[scatter_add(x.copy(), i, u) for u in vs])))


def add_at_then_read_alias(x, i, v):
    y = x
    np.add.at(x, i, v)
    return y


def test_add_at_through_an_alias_is_refused():
    with pytest.raises(srcjax.UnsupportedSyntaxError, match="in place"):
        srcjax.compile(add_at_then_read_alias)(np.ones(5), np.array([0, 1]), np.ones(2))


def windows(x):
    return (sliding_window_view(x[0], 3), np.lib.stride_tricks.sliding_window_view(x, (2, 2)),
            sliding_window_view(x, 2, axis=1), sliding_window_view(x, (2, 3), axis=(1, 0)))


def max_pool(img):
    w = np.lib.stride_tricks.sliding_window_view(img, (2, 2))[::2, ::2]
    return np.max(w, axis=(-1, -2))


def j_max_pool(img):
    return jax.lax.reduce_window(img, -jnp.inf, jax.lax.max, (2, 2), (2, 2), "VALID")


def test_sliding_window_view_and_pooling():
    x = rng.normal(size=(4, 6))
    both(windows, x)
    both(max_pool, x)
    agree(srcjax.grad(lambda a: np.sum(max_pool(a) ** 2))(x),
          np.asarray(JAX.grad(lambda a: jnp.sum(j_max_pool(a) ** 2))(x)))


# -- where= on reductions ----------------------------------------------------------------------------

def masked_reductions(x, m):
    return (np.sum(x, where=m), np.sum(x, axis=0, where=m, keepdims=True), np.mean(x, axis=1, where=m),
            np.max(x, where=m, initial=-np.inf), np.min(x, axis=0, where=m, initial=10.0), np.prod(x, where=m),
            np.any(x > 0, where=m), np.all(x > -5, axis=1, where=m), x.sum(where=m))


def max_where_without_initial(x, m):
    return np.max(x, where=m)


def test_where_on_reductions():
    x = rng.normal(size=(3, 4))
    m = x > -0.3
    both(masked_reductions, x, m)
    agree(srcjax.grad(lambda x: np.mean(x ** 2, where=m))(x),
          np.asarray(JAX.grad(lambda x: jnp.mean(x ** 2, where=m))(x)))
    with pytest.raises(srcjax.ArgumentError, match="initial="):
        srcjax.compile(max_where_without_initial)(x, m)


def counts_by_value(x):
    return np.bincount(x)


def test_data_sized_functions_are_refused_at_the_line_with_an_alternative():
    with pytest.raises(srcjax.UnknownFunctionError) as e:
        srcjax.compile(counts_by_value)(np.array([1, 2, 2]))
    msg = str(e.value)
    assert "test_composites.py:" in msg.splitlines()[0] and "size depends on the data" in msg
    assert "length=" in msg  # the hint names what to write instead


def weighted_counts(x, w):
    return np.bincount(x, weights=w, length=5), np.bincount(x, length=3)


def test_bincount_with_a_static_length_as_jax():
    x, w = np.array([0, 1, 1, 3, 7, 4]), rng.normal(size=6)
    got = srcjax.compile(weighted_counts)(x, w)
    want = (jnp.bincount(x, w, length=5), jnp.bincount(x, length=3))
    for g, v in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(v), rtol=1e-12)
    assert np.asarray(got[1]).dtype.kind == "i"
    agree(srcjax.grad(lambda w: np.sum(np.bincount(x, weights=w, length=5) ** 2))(w),
          np.asarray(JAX.grad(lambda w: jnp.sum(jnp.bincount(x, w, length=5) ** 2))(w)))


# -- piecewise, polyfit, block, isin, empty_like ------------------------------------------------------

def pieces(x):
    return (np.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2]),
            np.piecewise(x, [x < -0.5, x > 0.5], [lambda v: v * 3.0, 2.0, lambda v: np.sin(v)]),
            np.piecewise(x, x > 0, [1.5, 0.0]))


def fits(x, y, w):
    return np.polyfit(x, y, 2), np.polyfit(x, y, 1, w=w), np.polyfit(x, np.stack([y, 2 * y], axis=1), 3)


def blocks(a, b, v):
    return (np.block([[a, b], [b.T, a]]), np.block([v, v]), np.block([[v], [v]]), np.block([a, a]),
            np.block([[[a]], [[a]]]))


def membership(i):
    return np.isin(i, [1, 3, 7]), np.isin(i, np.array([2, 3]), invert=True)


def scratch(x):
    out = np.empty_like(x)
    out[0] = x[0]
    for t in range(1, x.shape[0]):
        out[t] = 0.5 * x[t] + 0.5 * out[t - 1]
    return out, np.empty_like(x, dtype=np.int32).dtype == np.int32


def test_piecewise_polyfit_block_isin_empty_like():
    x = rng.normal(size=7)
    both(pieces, x)
    xs = np.linspace(-1.0, 1.0, 9)
    both(fits, xs, rng.normal(size=9), rng.uniform(0.5, 1.5, size=9), rtol=1e-8)
    a, b = rng.normal(size=(2, 2)), rng.normal(size=(2, 2))
    both(blocks, a, b, rng.normal(size=3))
    both(membership, np.array([[0, 1, 2], [3, 7, 8]]))
    out, ok = srcjax.compile(scratch)(x)
    agree(out, scratch(x)[0])
    assert bool(ok)


def loss_pieces(x, y):
    return np.sum(np.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2])) + \
        np.sum(np.piecewise(x, [x < -0.5, x > 0.5], [np.sin, lambda t: t * 3.0, 2.0])) + \
        np.sum(np.polyfit(x, y, 2) ** 2) + np.sum(np.block([[x[:2], y[:2]]]) ** 3)


def j_loss_pieces(x, y):
    return jnp.sum(jnp.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2])) + \
        jnp.sum(jnp.piecewise(x, [x < -0.5, x > 0.5], [jnp.sin, lambda t: t * 3.0, 2.0])) + \
        jnp.sum(jnp.polyfit(x, y, 2) ** 2) + jnp.sum(jnp.block([[x[:2], y[:2]]]) ** 3)


def test_piecewise_polyfit_block_gradients_against_jax():
    x, y = rng.normal(size=6), rng.normal(size=6)
    agree(srcjax.grad(loss_pieces, argnums=(0, 1))(x, y),
          tuple(np.asarray(g) for g in jax.grad(j_loss_pieces, argnums=(0, 1))(x, y)), rtol=1e-7, atol=1e-9)


# -- reductions of boolean selections: x[x > 0].sum() -----------------------------------------------

def selections(x, y, X):
    keep = y > 0
    return (x[x > 0].sum(), np.mean(x[keep]), x[np.isfinite(x) & (x < 1)].max(), np.sum(x[~keep]),
            x[y > 0.5].any(), np.prod(x[keep]), x[keep].min(), np.all(x[x > -5] < 9), X[keep].sum(),
            np.mean((x[keep] - 1.0) ** 2), np.sum(np.log(np.abs(x[x != 0])) * 2.0), X[X > 0].mean())


def test_selection_reductions_match_numpy():
    x = np.array([1.0, -2.0, 0.5, 3.0, 0.0])
    y = np.array([0.1, -1.0, 2.0, 0.7, -0.3])
    both(selections, x, y, rng.normal(size=(5, 3)))
    text = srcjax.source(srcjax.compile(selections))
    assert "selection_sum(x, gt)" in text and "[" not in text.split("def selections")[1].split("return")[0].replace(
        "keep]", "").replace("ravel", "")  # no data-sized selection is made


def log_selected(x):
    return np.sum(np.log(x[x > 0])) + np.mean(x[x > 0] ** 3)


def test_selection_reduction_gradients_are_finite_and_right():
    x = np.array([0.0, 2.0, -1.0, 3.0, 0.5])
    g = np.asarray(srcjax.grad(log_selected)(x))
    sel = x > 0
    want = np.where(sel, 1.0 / np.where(sel, x, 1.0) + 3.0 * x ** 2 / sel.sum(), 0.0)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    xs = rng.uniform(-1.0, 2.0, size=(4, 5))
    agree(srcjax.vmap(log_selected)(xs), np.array([log_selected(r) for r in xs]))


def averages(x, w, W):
    return (np.average(x), np.average(x, weights=w), np.average(W, axis=0, weights=w), np.average(W, axis=1),
            np.average(W, weights=np.abs(W)), np.average(x, weights=w, returned=True))


def counts(pred, true, k):
    return np.array([[np.sum((pred == i) & (true == j)) for j in range(k)] for i in range(k)])


def test_average_and_array_of_comprehensions():
    both(averages, rng.normal(size=4), np.abs(rng.normal(size=4)), rng.normal(size=(4, 3)))
    both(counts, np.array([0, 1, 2, 1, 2]), np.array([0, 2, 2, 1, 1]), 3)
