"""More NumPy functions written in NumPy terms, like :mod:`srcjax.composites` (which merges
:data:`EXTRA_IMPLEMENTS` into its table): ``column_stack`` and ``dstack``, rotations and flips, ``ptp``,
``count_nonzero``, ``digitize``, ``logspace``, ``np.diff``'s ``prepend``/``append`` (:func:`diff_operand`), the
NaN-ignoring quantiles (``nanquantile``, ``nanpercentile``, ``nanmedian``) and the ufunc methods
``reduce`` and ``outer``, ``np.linalg.matrix_rank``. Transpiled like the user's own helpers:
differentiated and batched through the primitives they use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["EXTRA_IMPLEMENTS", "column_stack", "count_nonzero", "diff_operand", "digitize", "dstack", "fill_diagonal",
           "fliplr", "flipud", "logspace",
           "matrix_rank", "nanmedian", "nanpercentile", "nanquantile", "outer_add", "outer_divide", "outer_maximum",
           "outer_minimum",
           "outer_multiply", "outer_power", "outer_subtract", "ptp", "reduce_add", "reduce_all", "reduce_any",
           "reduce_maximum", "reduce_minimum", "reduce_multiply", "rot90"]

EXTRA_IMPLEMENTS: dict[Any, Callable[..., Any]] = {}


def _implements(*targets: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for t in targets:
            EXTRA_IMPLEMENTS[t] = fn
        return fn
    return register


# -- stacking ----------------------------------------------------------------------------------------

@_implements(np.column_stack)
def column_stack(tup: Any) -> Any:
    """1-D arrays as the columns of a 2-D array (2-D arrays as they are), joined along axis 1."""
    cols = []
    for a in tup:
        cols.append(np.reshape(a, (-1, 1)) if np.ndim(a) < 2 else a)
    return np.concatenate(cols, axis=1)


@_implements(np.dstack)
def dstack(tup: Any) -> Any:
    """Arrays joined along a third axis (``np.atleast_3d``: ``(n,)`` as ``(1, n, 1)``, ``(m, n)`` as
    ``(m, n, 1)``)."""
    parts = []
    for a in tup:
        if np.ndim(a) < 2:
            a = np.reshape(a, (1, -1, 1))
        elif np.ndim(a) == 2:
            a = np.expand_dims(a, -1)
        parts.append(a)
    return np.concatenate(parts, axis=2)


@_implements(np.fill_diagonal)
def fill_diagonal(a: Any, val: Any, wrap: bool = False) -> Any:
    """``a`` with its main diagonal set to ``val`` (a number, or one value per diagonal element), returned: the
    front end writes ``np.fill_diagonal(a, v)`` as ``a[...] = fill_diagonal(a, v)``. 2-D arrays (``wrap`` False)."""
    assert np.ndim(a) == 2 and not wrap, "np.fill_diagonal: srcjax supports 2-D arrays, wrap=False"
    m, n = np.shape(a)
    rows = np.arange(m)
    on = np.expand_dims(rows, 1) == np.arange(n)
    if np.ndim(val) == 0:
        return np.where(on, val, a)
    k = min(m, n)
    assert np.shape(val)[0] >= k, "np.fill_diagonal: give a value per diagonal element (or a number)"
    return np.where(on, np.expand_dims(val[np.minimum(rows, k - 1)], 1), a)


# -- rotations and flips ---------------------------------------------------------------------------

@_implements(np.rot90)
def rot90(m: Any, k: int = 1, axes: Any = (0, 1)) -> Any:
    """``m`` rotated by 90 degrees ``k`` times in the plane of ``axes`` (NumPy's flips and transposes)."""
    k = k % 4
    a0, a1 = axes[0] % np.ndim(m), axes[1] % np.ndim(m)
    if k == 0:
        return m
    if k == 2:
        return np.flip(np.flip(m, a0), a1)
    perm: tuple[Any, ...] = ()
    for d in range(np.ndim(m)):
        perm = perm + ((a1 if d == a0 else a0 if d == a1 else d),)
    if k == 1:
        return np.transpose(np.flip(m, a1), perm)
    return np.flip(np.transpose(m, perm), a1)


@_implements(np.flipud)
def flipud(m: Any) -> Any:
    return np.flip(m, 0)


@_implements(np.fliplr)
def fliplr(m: Any) -> Any:
    return np.flip(m, 1)


# -- statistics ---------------------------------------------------------------------------------------

@_implements(np.ptp)
def ptp(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    """The range (maximum minus minimum) along ``axis``."""
    return np.max(a, axis=axis, keepdims=keepdims) - np.min(a, axis=axis, keepdims=keepdims)


@_implements(np.count_nonzero)
def count_nonzero(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return np.sum(a != 0, axis=axis, keepdims=keepdims)


@_implements(np.digitize)
def digitize(x: Any, bins: Any, right: bool = False) -> Any:
    """The index of the bin each ``x`` falls in (``np.searchsorted``; decreasing ``bins`` too, chosen
    at run time as NumPy chooses)."""
    side: Any = "left" if right else "right"
    up = np.searchsorted(bins, x, side=side)
    down = np.shape(bins)[0] - np.searchsorted(bins[::-1], x, side=side)
    return np.where(bins[-1] >= bins[0], up, down)


def diff_operand(a: Any, prepend: Any, append: Any, axis: int, n: int) -> Any:
    """What ``np.diff(a, n, axis, prepend=, append=)`` differences: ``a`` with ``prepend`` and ``append``
    joined along ``axis`` (a scalar broadcast to one slice; None: nothing), as NumPy joins them (not
    for ``n == 0``: NumPy returns ``a`` itself then)."""
    if n == 0:
        return a
    ax = axis % np.ndim(a)
    # (tuples written out, not a list of appends: vmap batches its derivative's helpers item by item)
    if prepend is None:
        return np.concatenate((a, _diff_end(append, a, ax)), axis=ax) if append is not None else a
    if append is None:
        return np.concatenate((_diff_end(prepend, a, ax), a), axis=ax)
    return np.concatenate((_diff_end(prepend, a, ax), a, _diff_end(append, a, ax)), axis=ax)


def _diff_end(v: Any, a: Any, ax: int) -> Any:
    if np.ndim(v) != 0:
        return v
    shape: tuple[Any, ...] = ()
    for d in range(np.ndim(a)):
        shape = shape + ((1,) if d == ax else (np.shape(a)[d],))
    return np.broadcast_to(np.asarray(v), shape)


@_implements(np.logspace)
def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: Any = 10.0, dtype: Any = None,
             axis: int = 0) -> Any:
    """``base ** np.linspace(start, stop, num, endpoint)`` (scalar ``start`` and ``stop``)."""
    assert axis == 0, "np.logspace(axis=...) is not supported: scalar start and stop only"
    y = np.power(base, np.linspace(start, stop, num, endpoint=endpoint))
    return y if dtype is None else y.astype(dtype)


def _one_nanquantile(s: Any, n: Any, q: Any) -> Any:
    """The linear-interpolation quantile ``q`` of each row of ``s`` (sorted, NaNs last), whose first
    ``n`` (an integer column) elements are numbers; NaN where ``n`` is 0."""
    pos = q * (np.maximum(n, 1) - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, np.maximum(n, 1) - 1)
    t = pos - lo
    below = np.take_along_axis(s, lo, axis=-1)
    above = np.take_along_axis(s, hi, axis=-1)
    r = below + (above - below) * t
    return np.where(n == 0, np.nan, r)[..., 0]


@_implements(np.nanquantile)
def nanquantile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False) -> Any:
    """``np.quantile`` of the elements that are not NaN (method ``linear``; a static scalar or 1-D
    ``q``; ``axis`` None or an int): sorted with NaNs last, the positions from the count of numbers."""
    assert method == "linear", "np.nanquantile: only method='linear' is supported (use np.quantile otherwise)"
    x = np.reshape(a, (-1,)) if axis is None else np.moveaxis(a, axis, -1)
    s = np.sort(x * 1.0, axis=-1)
    n = np.sum(np.logical_not(np.isnan(x)), axis=-1, keepdims=True)
    if np.ndim(q) == 0:
        r = _one_nanquantile(s, n, q)
    else:
        rows = []
        for qk in q:
            rows.append(_one_nanquantile(s, n, qk))
        r = np.stack(rows)
    if keepdims:
        lead = np.shape(r)[:np.ndim(q)]
        shape: tuple[Any, ...] = ()
        for d in range(np.ndim(a)):
            shape = shape + ((1,) if axis is None or d == axis % np.ndim(a) else (np.shape(a)[d],))
        r = np.reshape(r, tuple(lead) + shape)
    return r


@_implements(np.nanpercentile)
def nanpercentile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                  method: str = "linear", keepdims: bool = False) -> Any:
    qs = [v / 100 for v in q] if isinstance(q, (list, tuple)) else q / 100
    return nanquantile(a, qs, axis=axis, method=method, keepdims=keepdims)


@_implements(np.nanmedian)
def nanmedian(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False, keepdims: bool = False) -> Any:
    return nanquantile(a, 0.5, axis=axis, keepdims=keepdims)


# -- ufunc methods -----------------------------------------------------------------------------------

@_implements(np.add.reduce)
def reduce_add(array: Any, axis: Any = 0, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    return np.sum(array, axis=axis, dtype=dtype, keepdims=keepdims)


@_implements(np.multiply.reduce)
def reduce_multiply(array: Any, axis: Any = 0, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    return np.prod(array, axis=axis, dtype=dtype, keepdims=keepdims)


@_implements(np.maximum.reduce, np.fmax.reduce)
def reduce_maximum(array: Any, axis: Any = 0, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    return np.max(array, axis=axis, keepdims=keepdims)


@_implements(np.minimum.reduce, np.fmin.reduce)
def reduce_minimum(array: Any, axis: Any = 0, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    return np.min(array, axis=axis, keepdims=keepdims)


@_implements(np.logical_and.reduce)
def reduce_all(array: Any, axis: Any = 0, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    return np.all(array, axis=axis, keepdims=keepdims)


@_implements(np.logical_or.reduce)
def reduce_any(array: Any, axis: Any = 0, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    return np.any(array, axis=axis, keepdims=keepdims)


def _outer_left(a: Any, b: Any) -> Any:
    """``a`` with one trailing axis of length 1 per axis of ``b`` (``ufunc.outer``'s broadcast)."""
    return np.reshape(a, np.shape(a) + (1,) * np.ndim(b))


@_implements(np.add.outer)
def outer_add(A: Any, B: Any) -> Any:
    return _outer_left(A, B) + B


@_implements(np.subtract.outer)
def outer_subtract(A: Any, B: Any) -> Any:
    return _outer_left(A, B) - B


@_implements(np.multiply.outer)
def outer_multiply(A: Any, B: Any) -> Any:
    return _outer_left(A, B) * B


@_implements(np.divide.outer)
def outer_divide(A: Any, B: Any) -> Any:
    return _outer_left(A, B) / B


@_implements(np.power.outer)
def outer_power(A: Any, B: Any) -> Any:
    return _outer_left(A, B) ** B


@_implements(np.maximum.outer)
def outer_maximum(A: Any, B: Any) -> Any:
    return np.maximum(_outer_left(A, B), B)


@_implements(np.minimum.outer)
def outer_minimum(A: Any, B: Any) -> Any:
    return np.minimum(_outer_left(A, B), B)


# -- np.linalg -----------------------------------------------------------------------------------------

@_implements(np.linalg.matrix_rank)
def matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:  # noqa: N803
    """The number of singular values of ``A`` (a stack of matrices) above ``tol``; ``tol`` defaults to
    the largest singular value times ``rtol``, itself ``max(M, N) * eps`` by default (NumPy 2's
    ``matrix_rank``, which jax follows). A vector or scalar has rank 1 unless it is all zeros."""
    if np.ndim(A) < 2:
        return np.any(A != 0).astype(np.intp)
    # (a Hermitian matrix's singular values are its eigenvalues' magnitudes: NumPy's svd(hermitian=True))
    s = np.abs(np.linalg.eigvalsh(A)) if hermitian else np.linalg.svd(A, compute_uv=False)
    if tol is None:
        if rtol is None:
            rtol = max(np.shape(A)[-2:]) * np.finfo(s.dtype).eps
        else:
            rtol = np.asarray(rtol)[..., np.newaxis]
        tol = np.max(s, axis=-1, keepdims=True) * rtol
    else:
        tol = np.asarray(tol)[..., np.newaxis]
    return np.count_nonzero(s > tol, axis=-1)
