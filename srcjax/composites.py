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

from .conv_adjoint import conv_specs
from .lax import conv as lax_conv
from .lax import conv_general_dilated
from .lax import conv_transpose as lax_conv_transpose
from .lax import index_update as srcjax_index_update
from .linalg_names import LINALG_IMPLEMENTS
from .numpy_bits import BITS_IMPLEMENTS
from .numpy_extras import EXTRA_IMPLEMENTS
from .polynomials import POLY_IMPLEMENTS
from .scatter_combine import AT_COMBINE, at_add, at_divide, at_max, at_min, at_multiply, at_power

__all__ = ["AT_COMBINE", "IMPLEMENTS", "SELECTION_REDUCTIONS", "accumulate_add", "accumulate_max", "accumulate_min",
           "accumulate_multiply", "allclose", "at_add", "at_divide", "at_max", "at_min", "at_multiply", "at_power",
           "average", "block", "conv", "conv_transpose", "convolve", "corrcoef", "correlate", "cov", "empty",
           "empty_like", "fftfreq", "fftshift", "gradient", "hfft", "histogram", "ifftshift", "ihfft", "interp",
           "isclose", "isin", "masked_write", "nan_to_num", "nanargmax", "nanargmin", "nanmax", "nanmean", "nanmin",
           "nanprod", "nanstd", "nansum", "nanvar", "piecewise", "polyfit", "polyval", "rfftfreq", "select",
           "selection_all", "selection_any", "selection_fill", "selection_max", "selection_mean", "selection_min",
           "selection_prod", "selection_sum", "sliding_window_view", "trapezoid", "unique", "vdot"]

IMPLEMENTS: dict[Any, Callable[..., Any]] = {**POLY_IMPLEMENTS, **EXTRA_IMPLEMENTS,
                                             **BITS_IMPLEMENTS, **LINALG_IMPLEMENTS}  # (np.vander, np.rot90, ...)


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


# -- np.fft.hfft / ihfft: the Hermitian transforms, as NumPy writes them ---------------------------

def _swapped_norm(norm: Any) -> Any:
    """The ``norm`` of the opposite direction ("backward" <-> "forward"; anything else unchanged, so the
    transform refuses a bad one)."""
    if norm is None or norm == "backward":
        return "forward"
    if norm == "forward":
        return "backward"
    return norm


@_implements(np.fft.hfft)
def hfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
    """The FFT of a signal with Hermitian symmetry (given by its first half): a real spectrum of length
    ``n`` (default ``2 * (m - 1)``); NumPy's ``irfft(conj(a), n, axis)`` with the opposite ``norm``."""
    return np.fft.irfft(np.conjugate(a), n, axis, _swapped_norm(norm), out)


@_implements(np.fft.ihfft)
def ihfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
    """The inverse of :func:`hfft` for a real signal: ``conj(rfft(a, n, axis))`` with the opposite ``norm``."""
    return np.conjugate(np.fft.rfft(a, n, axis, _swapped_norm(norm), out))


# -- srcjax.lax's convenience wrappers of conv_general_dilated -----------------------------------

@_implements(lax_conv)
def conv(lhs: Any, rhs: Any, window_strides: Any, padding: Any, precision: Any = None,
         preferred_element_type: Any = None) -> Any:
    """JAX's ``lax.conv``: ``conv_general_dilated`` with ``NCHW``/``OIHW`` layouts and no dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, None, None, None, 1, 1, precision,
                                preferred_element_type)


_TRANSPOSE_LAYOUTS = (None, None, ("NC", "IO", "NC"), ("NHC", "HIO", "NHC"), ("NHWC", "HWIO", "NHWC"),
                      ("NHWDC", "HWDIO", "NHWDC"))


def _transpose_padding(k: int, s: int, padding: str) -> tuple[int, int]:
    """The (low, high) padding of the dilated input that gives a forward 'SAME'/'VALID' conv's transpose."""
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
        return lo, total - lo
    return k - 1, s - 1 + max(k - s, 0)


@_implements(lax_conv_transpose)
def conv_transpose(lhs: Any, rhs: Any, strides: Any, padding: Any, rhs_dilation: Any = None,
                   dimension_numbers: Any = None, transpose_kernel: bool = False, precision: Any = None,
                   preferred_element_type: Any = None) -> Any:
    """JAX's ``lax.conv_transpose``: the input dilated by ``strides`` (a fractionally strided convolution)."""
    nd = np.ndim(lhs)
    specs = conv_specs(nd, _TRANSPOSE_LAYOUTS[nd] if dimension_numbers is None else dimension_numbers)
    rspec = specs[1]
    dil = (1,) * (nd - 2) if rhs_dilation is None else tuple(rhs_dilation)
    pads = padding
    if isinstance(padding, str):
        pads = [_transpose_padding(1 + r * (np.shape(rhs)[i] - 1), s, padding)
                for i, r, s in zip(rspec[2:], dil, strides)]
    w = rhs
    if transpose_kernel:
        w = np.swapaxes(np.flip(w, tuple(rspec[2:])), rspec[0], rspec[1])
    return conv_general_dilated(lhs, w, (1,) * (nd - 2), pads, tuple(strides), dil, specs, 1, 1, precision,
                                preferred_element_type)


# -- choosing, counting, scans -----------------------------------------------------------------

@_implements(np.select)
def select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """The first choice whose condition holds, element by element (``default`` where none does)."""
    out = default
    for k in range(len(condlist) - 1, -1, -1):
        out = np.where(condlist[k], choicelist[k], out)
    return out


@_implements(np.bincount)
def bincount(x: Any, weights: Any = None, minlength: Any = 0, *, length: Any = None) -> Any:
    """JAX's ``jnp.bincount(x, weights, length=n)``: how often each of ``0 .. n - 1`` occurs in the
    non-negative integer array ``x`` (the sum of the matching ``weights`` when given); values outside
    are dropped, as JAX drops them. ``length`` is static (NumPy's size, ``max(x) + 1``, depends on the
    data: ``minlength`` is accepted and ignored, as under ``jax.jit``)."""
    hits = np.reshape(x, (-1, 1)) == np.arange(length)
    if weights is None:
        return np.sum(hits, axis=0)
    return np.sum(np.where(hits, np.reshape(weights, (-1, 1)), 0), axis=0)


@_implements(np.unique)
def unique(ar: Any, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: Any = None, *, equal_nan: bool = True, size: Any = None, fill_value: Any = None,
           sorted: bool = True) -> Any:  # noqa: A002 (NumPy's name)
    """JAX's ``jnp.unique(ar, size=...)``: the first ``size`` sorted unique values of the flattened ``ar``,
    padded with ``fill_value`` (default: the smallest value); the index of each one's first occurrence and
    its count (0 past the unique values), the inverse (``ar``'s shape). Built from a stable sort: a value
    starts a group where it differs from the one before (NaNs equal with ``equal_nan``), and group ``j``
    starts at ``np.searchsorted(group, j)``. (srcjax's normalizer refuses it without ``size=``.)"""
    x = np.ravel(ar)
    order = np.argsort(x, kind="stable")
    s = x[order]
    differ = s[1:] != s[:-1]
    if equal_nan and np.result_type(s).kind in "fc":
        differ = np.logical_and(differ, np.logical_not(np.logical_and(np.isnan(s[1:]), np.isnan(s[:-1]))))
    group = np.cumsum(np.concatenate([np.ones(1, dtype=bool), differ])) - 1  # each sorted value's group
    j = np.arange(size)
    found = j <= group[-1]
    start = np.where(found, np.searchsorted(group, j), 0)  # (past the unique values: the smallest, as JAX)
    values = s[start]
    if fill_value is not None:
        values = np.where(found, values, np.asarray(fill_value).astype(np.result_type(s)))
    if not (return_index or return_inverse or return_counts):
        return values
    out = [values]
    if return_index:
        out.append(order[start])
    if return_inverse:
        out.append(np.reshape(group[np.argsort(order)], np.shape(ar)))
    if return_counts:
        out.append(np.where(found, np.searchsorted(group, j, side="right") - start, 0))
    return tuple(out)


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


# -- more of NumPy in NumPy terms --------------------------------------------------------------

@_implements(np.empty)
def empty(shape: Any, dtype: Any = None, order: Any = "C", device: Any = None, like: Any = None) -> Any:
    """NumPy leaves the values unset; here they are zeros (one of the values NumPy may give)."""
    return np.zeros(shape, dtype=dtype)


@_implements(np.ndarray)
def ndarray(shape: Any, dtype: Any = None, buffer: Any = None, offset: Any = 0, strides: Any = None,
            order: Any = None) -> Any:
    """``np.ndarray(shape, dtype)``, the low-level spelling of ``np.empty`` (npbench's nbody and vadv): zeros, as
    :func:`empty`; over a ``buffer`` it is a view of another object's memory, refused."""
    assert buffer is None, "np.ndarray(shape, dtype, buffer=...) views another array's memory: use np.reshape"
    return np.zeros(shape, dtype=np.float64 if dtype is None else dtype)


@_implements(np.empty_like)
def empty_like(prototype: Any, dtype: Any = None, order: Any = "K", subok: bool = True, shape: Any = None,
               device: Any = None) -> Any:
    """NumPy leaves the values unset; here they are zeros (one of the values NumPy may give)."""
    if shape is None:
        return np.zeros_like(prototype, dtype=dtype)
    return np.zeros(shape, dtype=np.result_type(prototype) if dtype is None else dtype)


@_implements(np.piecewise)
def piecewise(x: Any, condlist: Any, funclist: Any) -> Any:
    """``funclist[k]`` where ``condlist[k]`` holds (the last function or value where none does, when
    there is one more): every function is evaluated on all of ``x`` and the results are selected,
    so a function that is NaN where its condition is false gives NaN gradients there (as in JAX).
    (NumPy's extra arguments for the functions are not supported: use lambdas.)"""
    if np.ndim(condlist) == np.ndim(x) and not isinstance(condlist, (list, tuple)):
        condlist = [condlist]
    n = len(condlist)
    out = np.zeros_like(x)
    if len(funclist) == n + 1:
        last = funclist[n]
        out = out + (last if isinstance(last, (int, float, bool)) else last(x))
    for k in range(n - 1, -1, -1):  # the first condition that holds wins, as NumPy's assignments in order
        f = funclist[k]
        out = np.where(condlist[k], f if isinstance(f, (int, float, bool)) else f(x), out)
    return out


@_implements(np.isin)
def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False,
         kind: Any = None) -> Any:
    """Whether each element equals one of ``test_elements`` (compared all against all)."""
    found = np.any(np.expand_dims(element, -1) == np.ravel(np.asarray(test_elements)), axis=-1)
    return np.logical_not(found) if invert else found


@_implements(np.polyfit)
def polyfit(x: Any, y: Any, deg: int, rcond: Any = None, full: bool = False, w: Any = None,
            cov: bool = False) -> Any:
    """Least-squares polynomial coefficients, highest power first (``np.linalg.lstsq`` of the
    Vandermonde matrix); ``full=`` and ``cov=`` are not supported."""
    assert not full and not cov, "np.polyfit(full=True) / (cov=True) is not supported: use the coefficients"
    xf = _float_of(x)
    vander = np.expand_dims(xf, -1) ** np.arange(deg, -1, -1)
    rhs = _float_of(y)
    if w is not None:
        vander = vander * np.expand_dims(w, -1)
        rhs = rhs * (w if np.ndim(rhs) == 1 else np.expand_dims(w, -1))
    return np.linalg.lstsq(vander, rhs, rcond=rcond)[0]


def _block_shape(arrays: Any) -> tuple[int, int]:
    """(nesting depth, the most dimensions of an array in it) of ``np.block``'s argument (static)."""
    nested = [isinstance(arrays, list), isinstance(arrays, list) and isinstance(arrays[0], list),
              isinstance(arrays, list) and isinstance(arrays[0], list) and isinstance(arrays[0][0], list)]
    depth = nested.count(True)
    shapes = np.shape(arrays) if depth == 0 else [np.shape(a) for a in arrays] if depth == 1 else \
        [np.shape(b) for a in arrays for b in a] if depth == 2 else [np.shape(c) for a in arrays for b in a for c in b]
    most = max([len(s) for s in ([shapes] if depth == 0 else shapes)])
    return depth, max(most, depth)


def _leading_ones(a: Any, ndim: int) -> Any:
    return np.reshape(a, (1,) * (ndim - np.ndim(a)) + np.shape(a))


def _joined(items: Any, ndim: int, axis: int) -> Any:
    parts = []
    for a in items:
        parts.append(_leading_ones(a, ndim))
    return np.concatenate(parts, axis=axis)


@_implements(np.block)
def block(arrays: Any) -> Any:
    """Nested lists (up to three deep) of arrays joined NumPy's way: the innermost lists along the last
    axis, the next along the one before, ...; arrays of fewer dimensions get leading ones."""
    depth, ndim = _block_shape(arrays)
    assert depth <= 3, "np.block of lists nested more than three deep is not supported"
    if depth == 0:
        return np.asarray(arrays)
    if depth == 1:
        return _joined(arrays, ndim, ndim - 1)
    rows = []
    for row in arrays:
        if depth == 2:
            rows.append(_joined(row, ndim, ndim - 1))
        else:
            planes = []
            for r in row:
                planes.append(_joined(r, ndim, ndim - 1))
            rows.append(np.concatenate(planes, axis=ndim - 2))
    return np.concatenate(rows, axis=ndim - depth)


# -- reductions of a boolean selection (x[x > 0].sum(): the normalizer writes these) ---------------

def _aligned(mask: Any, x: Any) -> Any:
    """A boolean index of ``x``'s leading axes, as a mask broadcasting against ``x``."""
    return np.reshape(mask, np.shape(mask) + (1,) * (np.ndim(x) - np.ndim(mask)))


def selection_fill(x: Any, mask: Any) -> Any:
    """``x`` with every element ``mask`` leaves out replaced by the first one it selects: arithmetic on
    ``x[mask]`` written on the whole ``x`` stays in the domain of the selected values, so no NaN or
    infinity from an unselected element (``np.log(x[x > 0])`` at ``x = 0``) reaches a derivative."""
    m = np.reshape(mask, (-1,)) if np.ndim(mask) > 0 else np.reshape(mask, (1,))
    rows = np.reshape(x, (np.shape(m)[0],) + np.shape(x)[np.ndim(mask):])
    first = rows[np.argmax(m)]
    return np.where(_aligned(mask, x), x, first)


def masked_write(x: Any, mask: Any, new: Any, value: Any) -> Any:
    """``x[mask] = value`` (``new`` is ``value``) or ``x[mask] op= value`` (``new`` is ``x op value``) for a
    boolean ``mask`` over ``x``'s leading axes (frontend/subscript_writes.py): ``new`` where the mask holds,
    ``x`` elsewhere, in ``x``'s dtype as NumPy's assignment casts. ``value`` is a number or one row of the
    selection ``x[mask]``: a value per selected element has a size that depends on the data."""
    if isinstance(x, (list, dict)):  # (a container's item keyed by a Python bool: `xs[n > 0] = v`)
        return srcjax_index_update(x, mask, value)
    assert np.ndim(value) <= np.ndim(x) - np.ndim(mask), \
        "x[mask] = v: v must be a number or one row of x[mask] (for a value per element, write np.where(mask, v, x))"
    return np.where(_aligned(mask, x), new, x).astype(x.dtype)


def masked_write_selection(x: Any, mask: Any, new: Any, operands: Any) -> Any:
    """``x[mask] = f(a[mask], ...)`` (``new`` is ``f(a, ...)`` on the whole arrays, their gaps filled) or
    ``x[mask] op= f(...)`` (``new`` is ``x op f(...)``): elementwise arithmetic on selections of ``x``'s own
    mask (frontend/subscript_writes.py), ``new`` where the mask holds, ``x`` elsewhere, in ``x``'s dtype.
    ``operands``, the other values in ``f``, are numbers or rows of the selection, as NumPy broadcasts them."""
    for v in operands:
        assert np.ndim(v) <= np.ndim(x) - np.ndim(mask), \
            "x[mask] = f(a[mask], v): v must be a number or one row of the selection (or write np.where(mask, ..., x))"
    return np.where(_aligned(mask, x), new, x).astype(x.dtype)
def item_write(c: Any, key: Any, inner: Any, value: Any) -> Any:
    """``c[key][inner] = value`` where ``c`` is a local list or dict (frontend/nested_writes.py): ``c`` with its
    item ``c[key]`` (an array, list or dict) updated at ``inner``, as Python and NumPy change that item in place
    (``xs[t][inputs[t]] = 1``, ``state["mu"][k] = v``)."""
    if not isinstance(c, (list, dict, tuple)):  # an array: `L[i][j] = v` writes through the view L[i] (i a number)
        assert isinstance(key, slice) or np.ndim(key) == 0 and np.result_type(key).kind in "iu", \
            "a[i][j] = v into an array: write a[i, j] = v (a[i][j] writes into a copy where i is an array of indices)"
        return srcjax_index_update(c, key, srcjax_index_update(c[key], inner, value))
    item = c[key]
    if isinstance(item, dict):  # (new dicts with the key's value replaced: derivatives read them as containers)
        new = {**item, inner: value}
    else:
        new = srcjax_index_update(item, inner, value)
    if isinstance(c, dict):
        return {**c, key: new}
    return srcjax_index_update(c, key, new)


def selection_sum(x: Any, mask: Any) -> Any:
    """``np.sum(x[mask])`` for a boolean ``mask``, without the data-sized selection."""
    return np.sum(np.where(_aligned(mask, x), x, 0))


def selection_prod(x: Any, mask: Any) -> Any:
    return np.prod(np.where(_aligned(mask, x), x, 1))


def selection_mean(x: Any, mask: Any) -> Any:
    m = np.logical_and(_aligned(mask, x), np.ones_like(x, dtype=bool))
    return np.sum(np.where(m, x, 0)) / np.sum(m)


def selection_any(x: Any, mask: Any) -> Any:
    return np.any(np.logical_and(_aligned(mask, x), x))


def selection_all(x: Any, mask: Any) -> Any:
    return np.all(np.logical_or(np.logical_not(_aligned(mask, x)), x))


def selection_max(x: Any, mask: Any) -> Any:
    """(An empty selection gives the dtype's lowest value, where NumPy raises.)"""
    lowest = -np.inf if np.issubdtype(np.result_type(x), np.floating) else np.iinfo(np.result_type(x)).min
    return np.max(np.where(_aligned(mask, x), x, lowest))


def selection_min(x: Any, mask: Any) -> Any:
    highest = np.inf if np.issubdtype(np.result_type(x), np.floating) else np.iinfo(np.result_type(x)).max
    return np.min(np.where(_aligned(mask, x), x, highest))


SELECTION_REDUCTIONS = {"sum": selection_sum, "prod": selection_prod, "mean": selection_mean, "any": selection_any,
                        "all": selection_all, "max": selection_max, "min": selection_min}


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


@_implements(np.average)
def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, keepdims: bool = False) -> Any:
    """NumPy's weighted mean (``weights`` of ``a``'s shape, or 1-D along one ``axis``)."""
    if weights is None:
        avg = np.mean(a, axis=axis, keepdims=keepdims)
        count = np.sum(np.ones_like(_float_of(a)), axis=axis, keepdims=keepdims)
    else:
        w = weights
        if np.ndim(w) == 1 and np.ndim(a) > 1:
            w = np.reshape(w, (np.shape(w)[0],) + (1,) * (np.ndim(a) - 1 - axis % np.ndim(a)))
        w = w * np.ones_like(_float_of(a))
        count = np.sum(w, axis=axis, keepdims=keepdims)
        avg = np.sum(a * w, axis=axis, keepdims=keepdims) / count
    if returned:
        return avg, count * np.ones_like(avg)
    return avg
