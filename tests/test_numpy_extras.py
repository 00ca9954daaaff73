"""NumPy functions written in NumPy terms in ``srcjax/polynomials.py`` and ``srcjax/numpy_extras.py``
(np.vander, np.poly*, np.rot90, np.flipud/fliplr, np.ptp, np.count_nonzero, np.digitize, np.logspace,
np.nanquantile/nanpercentile/nanmedian, ufunc.reduce/outer, np.diff's prepend/append): against NumPy (compiled by XLA and as
generated source run by NumPy), their derivatives against central finite differences, and batched
against a loop over examples. Shapes, axes and parameters vary by hypothesis."""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import srcjax
from tests.fd import central_fd

_SCALE = 10 if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" else 1


def agree(got: Any, want: Any, rtol: float = 1e-10, atol: float = 1e-12) -> None:
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            agree(g, w, rtol, atol)
        return
    g = np.asarray(got)
    assert g.shape == np.shape(want), (g.shape, np.shape(want))
    assert g.dtype == np.asarray(want).dtype or g.dtype.kind == np.asarray(want).dtype.kind == "i", \
        (g.dtype, np.asarray(want).dtype)
    np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, equal_nan=True)


def both(fn: Any, *args: Any, **static: Any) -> None:
    """Compiled (XLA) and the generated source run by NumPy, against NumPy running ``fn``."""
    want = fn(*args, **static)
    names = tuple(static)
    agree(srcjax.compile(fn, static_argnames=names)(*args, **static), want)
    agree(srcjax.compile(fn, static_argnames=names, device="numpy")(*args, **static), want)


def grad_agrees(fn: Any, *args: Any) -> None:
    """The VJP of ``fn`` in its first argument (the others: static Python values, or arrays), with a
    random cotangent, against finite differences."""
    out = np.asarray(fn(*args))
    ct = np.random.default_rng(7).normal(size=out.shape)
    _, pullback = srcjax.vjp(fn, *args)
    want = central_fd(lambda *a: np.sum(ct * fn(*a)), args, 0)
    np.testing.assert_allclose(pullback(ct)[0], want, rtol=1e-5, atol=1e-7)


# -- the functions, as a user writes them -----------------------------------------------------------

def vander(x, n, increasing):
    return np.vander(x, n, increasing=increasing)


def polys(a, b, m):
    return np.polyder(a, m), np.polyint(a, m), np.polymul(a, b), np.polyadd(a, b), np.polysub(b, a)


def poly_loss(a, b, m):
    d, i, p, s, t = polys(a, b, m)
    return np.sum(d) + 2 * np.sum(i) + 3 * np.sum(p) + 4 * np.sum(s) + 5 * np.sum(t)


def ptp_only(x, axis, keepdims):
    return np.ptp(x, axis=axis, keepdims=keepdims)


def outer_loss(x, y):
    return np.sum(np.multiply.outer(x, y) + np.maximum.outer(x, y))


def rotated(x, k, axes):
    return np.rot90(x, k, axes)


def flips(x):
    return np.flipud(x) - 2 * np.fliplr(x)


def ranges(x, axis, keepdims):
    return np.ptp(x, axis=axis, keepdims=keepdims), np.count_nonzero(x > 0, axis=axis, keepdims=keepdims)


def bins_of(x, bins, right):
    return np.digitize(x, bins, right=right)


def log_grid(x):
    return x * np.logspace(-1, 2, 4) + np.logspace(0, 3, 4, base=2.0, endpoint=False)


def nan_quantiles(x, q, axis, keepdims):
    return np.nanquantile(x, q, axis=axis, keepdims=keepdims)


def nan_medians(x, axis):
    return np.nanmedian(x, axis=axis), np.nanpercentile(x, [10, 50, 90], axis=axis)


def ufunc_methods(x, y, axis, keepdims):
    return (np.add.reduce(x, axis=axis, keepdims=keepdims), np.multiply.reduce(x, axis=axis),
            np.maximum.reduce(x, axis=axis), np.minimum.reduce(x, axis=axis, keepdims=keepdims),
            np.logical_and.reduce(x > 0, axis=axis), np.logical_or.reduce(x > 0, axis=axis))


def diff_ends(x, axis, n, scalar_ends):
    if scalar_ends:
        return np.diff(x, n, axis, prepend=0.5, append=-1)
    first = np.take(x, [0], axis=axis) * 2
    return np.diff(x, n=n, axis=axis, prepend=first, append=first + 1)


def outers(x, y):
    return (np.add.outer(x, y), np.subtract.outer(x, y), np.multiply.outer(x, y), np.divide.outer(x, y),
            np.maximum.outer(x, y), np.minimum.outer(x, y), np.power.outer(np.abs(x) + 0.5, y))


# -- tests --------------------------------------------------------------------------------------------

@settings(max_examples=12 * _SCALE, deadline=None, derandomize=True)
@given(n=st.integers(1, 6), cols=st.one_of(st.none(), st.integers(0, 6)), increasing=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_vander(n, cols, increasing, seed):
    x = np.random.default_rng(seed).normal(size=n)
    x[0] = 0.0  # (the derivative of x ** 0 at 0 is 0, not nan)
    both(vander, x, n=cols, increasing=increasing)
    if cols != 0:
        grad_agrees(vander, x, cols, increasing)


@settings(max_examples=12 * _SCALE, deadline=None, derandomize=True)
@given(la=st.integers(1, 5), lb=st.integers(1, 5), m=st.integers(1, 3), seed=st.integers(0, 2 ** 16))
def test_polynomials(la, lb, m, seed):
    r = np.random.default_rng(seed)
    a, b = r.normal(size=la), r.normal(size=lb)
    both(polys, a, b, m=m)
    grad_agrees(poly_loss, a, b, m)
    both(polys, np.arange(la) + 1, np.arange(lb) - 2, m=m)  # integers stay integers where NumPy's do
    # (no leading zero coefficient: NumPy's polymul trims those, a size that depends on the data)


@settings(max_examples=15 * _SCALE, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(1, 4), min_size=2, max_size=4), k=st.integers(-5, 5),
       pair=st.tuples(st.integers(0, 3), st.integers(0, 3)), seed=st.integers(0, 2 ** 16))
def test_rot90(shape, k, pair, seed):
    nd = len(shape)
    a0, a1 = pair[0] % nd, pair[1] % nd
    if a0 == a1:
        a1 = (a0 + 1) % nd
    x = np.random.default_rng(seed).normal(size=shape)
    both(rotated, x, k=k, axes=(a0, a1 - nd))
    grad_agrees(rotated, x, k, (a0, a1))
    both(flips, x[..., :1, :1] + x[..., :1])


@settings(max_examples=15 * _SCALE, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data(), keepdims=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_ptp_count_nonzero_reduce(shape, data, keepdims, seed):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    x = np.random.default_rng(seed).normal(size=shape)
    both(ranges, x, axis=axis, keepdims=keepdims)
    grad_agrees(ptp_only, x, axis, keepdims)
    both(ufunc_methods, x, x, axis=axis, keepdims=keepdims)


@settings(max_examples=15 * _SCALE, deadline=None, derandomize=True)
@given(n=st.integers(1, 12), nb=st.integers(1, 5), decreasing=st.booleans(), right=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_digitize(n, nb, decreasing, right, seed):
    r = np.random.default_rng(seed)
    bins = np.sort(r.normal(size=nb))
    if decreasing:
        bins = bins[::-1].copy()
    x = np.concatenate([r.normal(size=n), bins[:1]])  # an edge itself: `right` decides
    both(bins_of, x, bins, right=right)


def test_logspace():
    both(log_grid, np.random.default_rng(3).normal(size=4))


@settings(max_examples=15 * _SCALE, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data(), keepdims=st.booleans(),
       nan_fraction=st.sampled_from([0.0, 0.3, 1.0]), seed=st.integers(0, 2 ** 16))
def test_nan_quantiles(shape, data, keepdims, nan_fraction, seed):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    q = data.draw(st.one_of(st.floats(0, 1), st.lists(st.floats(0, 1), min_size=1, max_size=3).map(tuple)))
    r = np.random.default_rng(seed)
    x = r.normal(size=shape)
    x[r.random(shape) < nan_fraction] = np.nan
    with warnings.catch_warnings():  # NumPy warns about all-NaN slices: not what is tested here
        warnings.simplefilter("ignore", RuntimeWarning)
        both(nan_quantiles, x, q=q, axis=axis, keepdims=keepdims)
        both(nan_medians, x, axis=axis)
    if nan_fraction == 0.0:
        grad_agrees(nan_quantiles, x, q, axis, keepdims)


@settings(max_examples=10 * _SCALE, deadline=None, derandomize=True)
@given(sx=st.lists(st.integers(1, 3), max_size=2), sy=st.lists(st.integers(1, 3), max_size=2),
       seed=st.integers(0, 2 ** 16))
def test_ufunc_outer(sx, sy, seed):
    r = np.random.default_rng(seed)
    x, y = r.normal(size=sx), r.normal(size=sy) + 3.0
    both(outers, x, y)
    grad_agrees(outer_loss, x, y)


@settings(max_examples=12 * _SCALE, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data(), n=st.integers(0, 3),
       scalar_ends=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_diff_prepend_append(shape, data, n, scalar_ends, seed):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.random.default_rng(seed).normal(size=shape)
    both(diff_ends, x, axis=axis, n=n, scalar_ends=scalar_ends)
    grad_agrees(diff_ends, x, axis, n, scalar_ends)
    both(diff_ends, np.arange(int(np.prod(shape))).reshape(shape), axis=axis, n=n, scalar_ends=scalar_ends)


def test_batched_like_a_loop():
    r = np.random.default_rng(4)
    xs = r.normal(size=(3, 5, 4))
    xs[0, 1, 2] = np.nan

    def per_example(x):
        return np.nanmedian(x, axis=0) + np.ptp(np.rot90(x), axis=1)[:4] + np.polyval(np.polyder(x[0]), 0.5)

    got = srcjax.vmap(per_example)(xs)
    agree(got, np.stack([per_example(x) for x in xs]))
