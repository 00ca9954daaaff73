"""NumPy functions srcjax writes in NumPy terms, over its primitives (as ``jax.numpy`` writes many
of its functions over ``lax``).

A call of ``np.isclose`` in a compiled function is a call of :func:`isclose` here: transpiled like
the user's own helpers (``srcjax.source`` shows it imported from ``srcjax.composites``), so it
lowers, differentiates and batches through the primitives it uses, with no rules of its own.
Sizes these functions loop over (taps of a kernel, coefficients of a polynomial, points of a
table) are static, as shapes are. :data:`IMPLEMENTS` maps each NumPy function (or ufunc method,
``np.maximum.accumulate``) to its implementation; the resolver reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["IMPLEMENTS", "accumulate_add", "accumulate_max", "accumulate_min", "accumulate_multiply", "allclose",
           "convolve", "corrcoef", "correlate", "cov", "fftfreq", "fftshift", "gradient", "ifftshift", "histogram",
           "interp", "isclose", "nan_to_num",
           "nanargmax", "nanargmin", "nanmax", "nanmean", "nanmin", "nanprod", "nanstd", "nansum", "nanvar",
           "polyval", "rfftfreq", "select", "sliding_window_view", "trapezoid", "vdot"]

IMPLEMENTS: dict[Any, Callable[..., Any]] = {}


def _implements(*targets: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for t in targets:
            IMPLEMENTS[t] = fn
        return fn
    return register


def _float_of(x: Any) -> Any:
    """``x`` as a floating array (integers as float64, as NumPy's true division gives)."""
    return x * 1.0


# -- comparisons -------------------------------------------------------------------------------

@_implements(np.isclose)
def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False) -> Any:
    """NumPy's ``isclose``: ``|a - b| <= atol + rtol * |b|``; infinities are close to equal ones."""
    close = np.abs(a - b) <= atol + rtol * np.abs(b)
    either_inf = np.logical_or(np.isinf(a), np.isinf(b))
    out = np.where(either_inf, a == b, close)
    if equal_nan:
        out = np.logical_or(out, np.logical_and(np.isnan(a), np.isnan(b)))
    return out


@_implements(np.allclose)
def allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False) -> Any:
    return np.all(isclose(a, b, rtol, atol, equal_nan))


# -- NaN handling ------------------------------------------------------------------------------

@_implements(np.nan_to_num)
def nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None, neginf: Any = None) -> Any:
    """NaN to ``nan``, +inf to ``posinf`` (default the dtype's largest finite value), -inf to ``neginf``."""
    big = np.finfo(np.result_type(x, 1.0)).max
    hi = big if posinf is None else posinf
    lo = -big if neginf is None else neginf
    out = np.where(np.isnan(x), nan, x)
    out = np.where(np.logical_and(np.isinf(out), out > 0), hi, out)
    return np.where(np.logical_and(np.isinf(out), out < 0), lo, out)


@_implements(np.nansum)
def nansum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    return np.sum(np.where(np.isnan(a), 0, a), axis=axis, keepdims=keepdims)


@_implements(np.nanprod)
def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    return np.prod(np.where(np.isnan(a), 1, a), axis=axis, keepdims=keepdims)


def _count(a: Any, axis: Any, keepdims: bool) -> Any:
    return np.sum(np.logical_not(np.isnan(a)), axis=axis, keepdims=keepdims)


@_implements(np.nanmean)
def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    """The mean of the non-NaN values (NaN where there are none, as NumPy, without its warning)."""
    return nansum(a, axis=axis, keepdims=keepdims) / _count(a, axis, keepdims)


@_implements(np.nanvar)
def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
           keepdims: bool = False) -> Any:
    m = nanmean(a, axis=axis, keepdims=True)
    d = np.where(np.isnan(a), 0, a - m)
    return np.sum(d * d, axis=axis, keepdims=keepdims) / (_count(a, axis, keepdims) - ddof)


@_implements(np.nanstd)
def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
           keepdims: bool = False) -> Any:
    return np.sqrt(nanvar(a, axis=axis, ddof=ddof, keepdims=keepdims))


@_implements(np.nanmax)
def nanmax(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    """The largest non-NaN value (NaN for an all-NaN slice, as NumPy, without its warning)."""
    m = np.max(np.where(np.isnan(a), -np.inf, a), axis=axis, keepdims=keepdims)
    return np.where(_count(a, axis, keepdims) == 0, np.nan, m)


@_implements(np.nanmin)
def nanmin(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    m = np.min(np.where(np.isnan(a), np.inf, a), axis=axis, keepdims=keepdims)
    return np.where(_count(a, axis, keepdims) == 0, np.nan, m)


@_implements(np.nanargmax)
def nanargmax(a: Any, axis: Any = None) -> Any:
    return np.argmax(np.where(np.isnan(a), -np.inf, a), axis=axis)


@_implements(np.nanargmin)
def nanargmin(a: Any, axis: Any = None) -> Any:
    return np.argmin(np.where(np.isnan(a), np.inf, a), axis=axis)


# -- statistics --------------------------------------------------------------------------------

@_implements(np.cov)
def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: Any = None) -> Any:
    """NumPy's ``cov`` (no weights): variables in rows (``rowvar``) or columns."""
    x = np.atleast_2d(_float_of(m))
    if not rowvar and np.shape(x)[0] != 1:
        x = np.transpose(x)
    if y is not None:
        yy = np.atleast_2d(_float_of(y))
        if not rowvar and np.shape(yy)[0] != 1:
            yy = np.transpose(yy)
        x = np.concatenate([x, yy], axis=0)
    n = np.shape(x)[1]
    d = (0 if bias else 1) if ddof is None else ddof
    xc = x - np.mean(x, axis=1, keepdims=True)
    c = xc @ np.transpose(xc) / (n - d)
    if np.shape(c)[0] == 1:
        return np.reshape(c, ())
    return c


@_implements(np.corrcoef)
def corrcoef(x: Any, y: Any = None, rowvar: bool = True) -> Any:
    """Pearson correlation coefficients (NumPy clips them to [-1, 1])."""
    c = cov(x, y, rowvar)
    if np.ndim(c) == 0:
        return c / c
    k = np.shape(c)[0]
    d = np.sqrt(c[np.arange(k), np.arange(k)])
    r = c / d[:, None] / d[None, :]
    return np.clip(r, -1.0, 1.0)


# -- interpolation, polynomials, integration, differences --------------------------------------

@_implements(np.interp)
def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Any:
    """Piecewise-linear interpolation of ``(xp, fp)`` at ``x`` (``xp`` increasing, as NumPy requires);
    outside, ``left``/``right`` (default the end values). One comparison per table point: the
    table's length is static."""
    n = np.shape(xp)[0]
    xf = _float_of(x)
    if n == 1:
        return np.zeros_like(xf) + fp[0]
    below = np.sum(np.expand_dims(xf, -1) >= xp, axis=-1)  # how many table points are <= x
    i = np.clip(below - 1, 0, n - 2)
    x0 = np.take(xp, i)
    x1 = np.take(xp, i + 1)
    f0 = np.take(fp, i)
    f1 = np.take(fp, i + 1)
    t = (xf - x0) / (x1 - x0)
    out = f0 + t * (f1 - f0)
    out = np.where(xf < xp[0], fp[0] if left is None else left, out)
    return np.where(xf > xp[n - 1], fp[n - 1] if right is None else right, out)


@_implements(np.polyval)
def polyval(p: Any, x: Any) -> Any:
    """Horner's rule over the (static number of) coefficients, highest power first."""
    y = np.zeros_like(_float_of(x)) + p[0] * np.ones_like(x)
    for k in range(1, np.shape(p)[0]):
        y = y * x + p[k]
    return y


@_implements(*[f for f in (getattr(np, "trapezoid", None), getattr(np, "trapz", None)) if f is not None])
def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: Any = -1) -> Any:
    """The trapezoidal rule along ``axis`` (sample points ``x``, or a spacing ``dx``)."""
    yy = np.moveaxis(_float_of(y), axis, -1)
    mid = (yy[..., 1:] + yy[..., :-1]) * 0.5
    if x is None:
        return np.sum(mid, axis=-1) * dx
    xx = np.moveaxis(x, axis, -1) if np.ndim(x) > 1 else x
    return np.sum(mid * (xx[..., 1:] - xx[..., :-1]), axis=-1)


def _gradient_1d(f: Any, h: Any) -> Any:
    """Central differences inside, one-sided at the ends (edge_order=1), along the last axis."""
    inner = (f[..., 2:] - f[..., :-2]) / (2.0 * h)
    first = (f[..., 1:2] - f[..., 0:1]) / h
    last = (f[..., -1:] - f[..., -2:-1]) / h
    return np.concatenate([first, inner, last], axis=-1)


@_implements(np.gradient)
def gradient(f: Any, h0: Any = None, h1: Any = None, h2: Any = None, h3: Any = None, axis: Any = None,
             edge_order: int = 1) -> Any:
    """NumPy's ``gradient`` with scalar spacings (one, or one per axis; up to four) and ``edge_order=1``."""
    assert edge_order == 1, "np.gradient: srcjax supports edge_order=1"
    nd = np.ndim(f)
    axes = tuple(range(nd)) if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
    varargs = [h for h in (h0, h1, h2, h3) if h is not None]
    spacing = [1.0] * len(axes) if not varargs else varargs * len(axes) if len(varargs) == 1 else varargs
    outs = []
    for ax, h in zip(axes, spacing):
        assert np.ndim(h) == 0, "np.gradient: srcjax supports scalar spacings (not coordinate arrays)"
        g = _gradient_1d(np.moveaxis(_float_of(f), ax, -1), h)
        outs.append(np.moveaxis(g, -1, ax))
    if len(outs) == 1:
        return outs[0]
    return outs


# -- convolution -------------------------------------------------------------------------------

def _full_convolution(a: Any, v: Any) -> Any:
    """``c[k] = sum_j v[j] a[k - j]``: one shifted copy of ``a`` per tap of ``v`` (a static count)."""
    n = np.shape(a)[0]
    m = np.shape(v)[0]
    c = np.zeros(n + m - 1, dtype=np.result_type(a, v))
    for j in range(m):
        c = c + v[j] * np.concatenate([np.zeros(j, dtype=np.result_type(a)), a,
                                       np.zeros(m - 1 - j, dtype=np.result_type(a))])
    return c


def _mode_slice(c: Any, n: int, m: int, mode: str) -> Any:
    if mode == "full":
        return c
    if mode == "same":
        start = (min(n, m) - 1) // 2
        return c[start:start + max(n, m)]
    assert mode == "valid", "np.convolve: mode must be 'full', 'same' or 'valid'"
    return c[min(n, m) - 1:max(n, m)]


@_implements(np.convolve)
def convolve(a: Any, v: Any, mode: str = "full") -> Any:
    """Discrete 1-D convolution (NumPy's modes full / same / valid)."""
    n = np.shape(a)[0]
    m = np.shape(v)[0]
    return _mode_slice(_full_convolution(a, v), n, m, mode)


@_implements(np.correlate)
def correlate(a: Any, v: Any, mode: str = "valid") -> Any:
    """Cross-correlation, ``c[k] = sum_n a[n + k] v[n]`` (NumPy's modes)."""
    n = np.shape(a)[0]
    m = np.shape(v)[0]
    if m > n:  # NumPy computes it with the operands swapped, then reverses
        return _mode_slice(_full_convolution(v, a[::-1]), n, m, mode)[::-1]
    return _mode_slice(_full_convolution(a, v[::-1]), n, m, mode)


# -- choosing, counting, scans -----------------------------------------------------------------

@_implements(np.select)
def select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """The first choice whose condition holds, element by element (``default`` where none does)."""
    out = default
    for k in range(len(condlist) - 1, -1, -1):
        out = np.where(condlist[k], choicelist[k], out)
    return out


@_implements(np.histogram)
def histogram(a: Any, bins: Any = 10, range: Any = None, density: bool = False,  # noqa: A002 (NumPy's name)
              weights: Any = None) -> Any:
    """Counts in ``bins`` equal bins over ``range`` (default the data's min and max; a static
    number of bins, or a 1-D array of edges), the last bin closed; ``(hist, bin_edges)``."""
    x = np.ravel(_float_of(a))
    if np.ndim(bins) == 0:
        lo = np.min(x) if range is None else range[0]
        hi = np.max(x) if range is None else range[1]
        hi = np.where(hi == lo, hi + 0.5, hi)
        lo = np.where(hi == lo + 0.5, lo - 0.5, lo)
        inner = lo + (hi - lo) * (np.arange(bins) / bins)
        edges = np.concatenate([inner, np.reshape(hi, (1,)) * np.ones(1, dtype=np.result_type(inner))])
    else:
        edges = _float_of(bins)
    k = np.shape(edges)[0] - 1
    inside = np.logical_and(x >= edges[0], x <= edges[k])
    which = np.sum(np.expand_dims(x, -1) >= edges[1:k], axis=-1)  # the bin of each value
    onehot = np.logical_and(np.expand_dims(which, -1) == np.arange(k), np.expand_dims(inside, -1))
    if weights is None:
        hist = np.sum(onehot, axis=0)
    else:
        hist = np.sum(onehot * np.expand_dims(np.ravel(weights), -1), axis=0)
    if density:
        hist = hist / np.sum(hist) / (edges[1:] - edges[:-1])
    return hist, edges


def _accumulate(a: Any, axis: int, take_max: bool) -> Any:
    """A running max (min) along ``axis`` in log2(n) steps of whole-array maxima (Hillis-Steele)."""
    x = np.moveaxis(a, axis, -1)
    n = np.shape(x)[-1]
    k = 1
    while k < n:
        shifted = np.maximum(x[..., k:], x[..., :-k]) if take_max else np.minimum(x[..., k:], x[..., :-k])
        x = np.concatenate([x[..., :k], shifted], axis=-1)
        k = k * 2
    return np.moveaxis(x, -1, axis)


@_implements(np.maximum.accumulate, np.fmax.accumulate)
def accumulate_max(array: Any, axis: int = 0, dtype: Any = None, out: Any = None) -> Any:
    """``np.maximum.accumulate``: the running maximum along ``axis``."""
    return _accumulate(array, axis, True)


@_implements(np.minimum.accumulate, np.fmin.accumulate)
def accumulate_min(array: Any, axis: int = 0, dtype: Any = None, out: Any = None) -> Any:
    """``np.minimum.accumulate``: the running minimum along ``axis``."""
    return _accumulate(array, axis, False)


@_implements(np.add.accumulate)
def accumulate_add(array: Any, axis: int = 0, dtype: Any = None, out: Any = None) -> Any:
    return np.cumsum(array, axis=axis)


@_implements(np.multiply.accumulate)
def accumulate_multiply(array: Any, axis: int = 0, dtype: Any = None, out: Any = None) -> Any:
    return np.cumprod(array, axis=axis)


# -- windows ---------------------------------------------------------------------------------------

@_implements(np.lib.stride_tricks.sliding_window_view)
def sliding_window_view(x: Any, window_shape: Any, axis: Any = None, subok: bool = False,
                        writeable: bool = False) -> Any:
    """Every window of ``window_shape`` (NumPy's layout: the window axes last), as a copy: one slice
    per offset in the window (a static count), stacked. ``writeable`` views are not supported."""
    assert not writeable, "sliding_window_view: srcjax arrays are immutable (writeable=True is not supported)"
    ws = (window_shape,) if isinstance(window_shape, int) else tuple(window_shape)
    if axis is None:
        axes = tuple(range(np.ndim(x)))
    else:
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = x
    for ax, w in zip(axes, ws):
        front = np.moveaxis(out, ax, 0)
        count = np.shape(front)[0] - w + 1
        rows = []
        for i in range(w):  # (a loop, not a comprehension: derivatives follow appends)
            rows.append(np.moveaxis(front[i:i + count], 0, ax))
        out = np.stack(rows, axis=-1)
    return out


# -- np.fft's sample frequencies and shifts ------------------------------------------------------

@_implements(np.fft.fftfreq)
def fftfreq(n: int, d: Any = 1.0, device: Any = None) -> Any:
    """NumPy's ``fftfreq``: ``[0, 1, ..., n//2 - 1 (or (n-1)//2), -(n//2), ..., -1] / (n * d)``."""
    k = np.arange(n)
    return np.where(k < (n - 1) // 2 + 1, k, k - n) * (1.0 / (n * d))


@_implements(np.fft.rfftfreq)
def rfftfreq(n: int, d: Any = 1.0, device: Any = None) -> Any:
    """NumPy's ``rfftfreq``: ``[0, 1, ..., n//2] / (n * d)``."""
    return np.arange(n // 2 + 1) * (1.0 / (n * d))


def _shift_axes(x: Any, axes: Any) -> Any:
    if axes is None:
        return tuple(range(np.ndim(x)))
    return (axes,) if isinstance(axes, int) else tuple(axes)


@_implements(np.fft.fftshift)
def fftshift(x: Any, axes: Any = None) -> Any:
    """The zero frequency moved to the middle: a roll by ``n // 2`` along each axis."""
    out = x
    for ax in _shift_axes(x, axes):
        out = np.roll(out, np.shape(x)[ax] // 2, ax)
    return out


@_implements(np.fft.ifftshift)
def ifftshift(x: Any, axes: Any = None) -> Any:
    """The inverse of :func:`fftshift`: a roll by ``-(n // 2)`` along each axis."""
    out = x
    for ax in _shift_axes(x, axes):
        out = np.roll(out, -(np.shape(x)[ax] // 2), ax)
    return out


@_implements(np.vdot)
def vdot(a: Any, b: Any) -> Any:
    """NumPy's ``vdot``: the dot product of the flattened arrays, the first conjugated."""
    return np.dot(np.conj(np.ravel(a)), np.ravel(b))
