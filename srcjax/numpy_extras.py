"""More NumPy functions written in NumPy terms, like :mod:`srcjax.composites` (which merges
:data:`EXTRA_IMPLEMENTS` into its table): rotations and flips, ``ptp``, ``np.fill_diagonal``,
``count_nonzero``, ``digitize``, ``logspace``, ``np.diff``'s ``prepend``/``append`` (:func:`diff_operand`), the
NaN-ignoring quantiles (``nanquantile``, ``nanpercentile``, ``nanmedian``) and the ufunc methods
``reduce`` and ``outer``, ``np.linalg.matrix_rank``; joining and splitting (``column_stack``, ``dstack``,
``hsplit``/``vsplit``/``dsplit``, ``broadcast_arrays``, ``diagflat``, ``ediff1d``, ``matrix_transpose``,
``cumulative_sum``/``cumulative_prod``, ``array_equal``/``array_equiv``, ``rollaxis``, ``tri``); elementwise
functions and products (``signbit``, ``copysign``, ``fabs``, ``isposinf``/``isneginf``, ``iscomplex``/``isreal``,
``modf``, ``divmod``, ``ldexp``, ``frexp``, ``nancumsum``/``nancumprod``, ``geomspace``, ``unwrap``, ``choose``,
``poly``, ``vecdot``/``matvec``/``vecmat``).
Transpiled like the user's own helpers:
differentiated and batched through the primitives they use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .core import ArgumentError, ShapeError
from .lax import bitcast_convert_type

__all__ = ["EXTRA_IMPLEMENTS", "array_equal", "array_equiv", "broadcast_arrays", "choose", "column_stack",
           "copysign", "count_nonzero", "cumulative_prod", "cumulative_sum", "diagflat", "diff_operand", "digitize",
           "divmod_", "dsplit", "dstack", "ediff1d", "fabs", "fill_diagonal", "fliplr", "flipud", "geomspace",
           "hsplit", "i0", "iscomplex", "isneginf", "isposinf", "isreal", "ldexp", "logspace", "matrix_rank",
           "matrix_transpose", "matvec", "modf", "nancumprod", "nancumsum", "nanmedian", "nanpercentile",
           "nanquantile", "outer_add", "outer_divide", "outer_maximum", "outer_minimum", "outer_multiply",
           "outer_power", "outer_subtract", "poly", "ptp", "put_along_axis", "reduce_add", "reduce_all",
           "reduce_any",
           "reduce_maximum", "reduce_minimum", "reduce_multiply", "rollaxis", "rot90", "row_stack", "signbit",
           "sort_complex", "take_indices", "tri", "unstack", "unwrap", "vecdot", "vecmat", "vsplit"]

EXTRA_IMPLEMENTS: dict[Any, Callable[..., Any]] = {}


def _implements(*targets: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for t in targets:
            EXTRA_IMPLEMENTS[t] = fn
        return fn
    return register


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


def take_indices(a: Any, indices: Any, axis: Any, mode: str) -> Any:
    """The indices ``np.take(a, indices, axis, mode=mode)`` reads: ``"clip"`` clamps them into ``0..n-1`` (NumPy:
    a negative index is clipped to 0, not counted from the end), ``"wrap"`` takes them modulo ``n``, ``"raise"``
    leaves them (srcjax clamps an out-of-bounds index, as JAX does, where NumPy raises)."""
    n = np.size(a) if axis is None else np.shape(a)[axis]
    if mode == "clip":
        return np.clip(indices, 0, n - 1)
    if mode == "wrap":
        return indices % n
    return indices


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


# -- joining and splitting -------------------------------------------------------------------------------

@_implements(np.column_stack)
def column_stack(tup: Any) -> Any:
    """1-D (and 0-D) arrays as columns, 2-D ones as they are, joined along axis 1."""
    cols = []
    for a in tup:
        cols.append(np.reshape(a, (-1, 1)) if np.ndim(a) < 2 else a)
    return np.concatenate(cols, axis=1)


@_implements(*[f for f in (getattr(np, "row_stack", None),) if f is not None])  # (gone in a later NumPy)
def row_stack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """NumPy's deprecated name of ``np.vstack`` (jax has none)."""
    return np.vstack(tup) if dtype is None else np.vstack(tup).astype(dtype)


@_implements(np.dstack)
def dstack(tup: Any) -> Any:
    """The arrays made at least 3-D (``np.atleast_3d``: ``(N,)`` as ``(1, N, 1)``) and joined along axis 2."""
    parts = []
    for a in tup:
        parts.append(np.atleast_3d(a))
    return np.concatenate(parts, axis=2)


@_implements(np.hsplit)
def hsplit(ary: Any, indices_or_sections: Any) -> Any:
    if np.ndim(ary) == 0:
        raise ShapeError("np.hsplit only works on arrays of 1 or more dimensions",
                         hint="give an array with at least one axis")
    return np.split(ary, indices_or_sections, axis=1 if np.ndim(ary) > 1 else 0)


@_implements(np.vsplit)
def vsplit(ary: Any, indices_or_sections: Any) -> Any:
    if np.ndim(ary) < 2:
        raise ShapeError("np.vsplit only works on arrays of 2 or more dimensions",
                         hint="np.split(ary, indices_or_sections) splits a 1-D array")
    return np.split(ary, indices_or_sections, axis=0)


@_implements(np.dsplit)
def dsplit(ary: Any, indices_or_sections: Any) -> Any:
    if np.ndim(ary) < 3:
        raise ShapeError("np.dsplit only works on arrays of 3 or more dimensions",
                         hint="np.split(ary, indices_or_sections, axis=...) splits along another axis")
    return np.split(ary, indices_or_sections, axis=2)


@_implements(np.broadcast_arrays)
def broadcast_arrays(a0: Any, a1: Any = None, a2: Any = None, a3: Any = None, a4: Any = None, a5: Any = None,
                     a6: Any = None, a7: Any = None, *, subok: bool = False) -> Any:
    """Each array (up to eight) broadcast to the arrays' common shape (a tuple, as NumPy 2 returns)."""
    shape: tuple[Any, ...] = ()
    for a in (a0, a1, a2, a3, a4, a5, a6, a7):
        if a is None:
            continue
        s = np.shape(a)
        n = max(len(shape), len(s))
        full = (1,) * (n - len(shape)) + tuple(shape)
        mine = (1,) * (n - len(s)) + tuple(s)
        joined: tuple[Any, ...] = ()
        for d in range(n):
            if full[d] != mine[d] and full[d] != 1 and mine[d] != 1:
                raise ShapeError(f"np.broadcast_arrays: shapes {tuple(shape)} and {tuple(s)} do not broadcast",
                                 hint="give arrays whose axes are equal or 1, aligned at the right")
            joined = joined + ((mine[d] if full[d] == 1 else full[d]),)
        shape = joined
    # (the tuple written out, not joined item by item: a joined tuple of arrays is not differentiated)
    b0, b1, b2, b3 = np.broadcast_to(a0, shape), _broadcast_or_none(a1, shape), _broadcast_or_none(a2, shape), \
        _broadcast_or_none(a3, shape)
    b4, b5, b6, b7 = _broadcast_or_none(a4, shape), _broadcast_or_none(a5, shape), _broadcast_or_none(a6, shape), \
        _broadcast_or_none(a7, shape)
    if a1 is None:
        return (b0,)
    if a2 is None:
        return (b0, b1)
    if a3 is None:
        return (b0, b1, b2)
    if a4 is None:
        return (b0, b1, b2, b3)
    if a5 is None:
        return (b0, b1, b2, b3, b4)
    if a6 is None:
        return (b0, b1, b2, b3, b4, b5)
    if a7 is None:
        return (b0, b1, b2, b3, b4, b5, b6)
    return (b0, b1, b2, b3, b4, b5, b6, b7)


def _broadcast_or_none(a: Any, shape: Any) -> Any:
    return None if a is None else np.broadcast_to(a, shape)


@_implements(np.diagflat)
def diagflat(v: Any, k: int = 0) -> Any:
    """A 2-D array with the flattened ``v`` on its ``k``-th diagonal."""
    return np.diag(np.ravel(v), k)


@_implements(np.ediff1d)
def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """The differences of the flattened ``ary``, with ``to_begin`` and ``to_end`` (flattened, in ``ary``'s
    dtype, as NumPy casts them) joined at the ends."""
    flat = np.ravel(ary)
    d = flat[1:] - flat[:-1]
    if to_begin is not None:
        d = np.concatenate((np.ravel(np.asarray(to_begin)).astype(d.dtype), d))
    if to_end is not None:
        d = np.concatenate((d, np.ravel(np.asarray(to_end)).astype(d.dtype)))
    return d


@_implements(np.matrix_transpose)
def matrix_transpose(x: Any, /) -> Any:
    if np.ndim(x) < 2:
        raise ShapeError(f"np.matrix_transpose needs an array of at least 2 dimensions, got {np.ndim(x)}",
                         hint="a 1-D array is its own transpose; np.reshape(x, (-1, 1)) makes a column")
    return np.swapaxes(x, -1, -2)


def _cumulative_axis(name: str, x: Any, axis: Any) -> Any:
    if axis is None:
        if np.ndim(x) > 1:
            raise ArgumentError(f"np.{name}: axis must be given for an array of more than one dimension",
                                hint=f"write np.{name}(x, axis=...), or np.{name}(np.ravel(x))")
        return 0
    return axis


def _cumulative_initial(x: Any, out: Any, axis: int, value: float) -> Any:
    ax = axis % np.ndim(x)
    shape: tuple[Any, ...] = ()
    for d in range(np.ndim(out)):
        shape = shape + ((1,) if d == ax else (np.shape(out)[d],))
    return np.concatenate((np.full(shape, value, dtype=out.dtype), out), axis=ax)


@_implements(np.cumulative_sum)
def cumulative_sum(x: Any, /, *, axis: Any = None, dtype: Any = None, out: Any = None,
                   include_initial: bool = False) -> Any:
    """``np.cumsum`` along ``axis`` (required beyond 1-D), with a leading 0 when ``include_initial``."""
    ax = _cumulative_axis("cumulative_sum", x, axis)
    r = np.cumsum(x, axis=ax, dtype=dtype)
    return _cumulative_initial(x, r, ax, 0) if include_initial else r


@_implements(np.cumulative_prod)
def cumulative_prod(x: Any, /, *, axis: Any = None, dtype: Any = None, out: Any = None,
                    include_initial: bool = False) -> Any:
    """``np.cumprod`` along ``axis`` (required beyond 1-D), with a leading 1 when ``include_initial``."""
    ax = _cumulative_axis("cumulative_prod", x, axis)
    r = np.cumprod(x, axis=ax, dtype=dtype)
    return _cumulative_initial(x, r, ax, 1) if include_initial else r


@_implements(np.array_equal)
def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    """Whether the shapes are equal (known while specializing) and so is every element (NaNs equal
    when ``equal_nan``): a boolean array, as ``jnp.array_equal`` gives."""
    if np.shape(a1) != np.shape(a2):
        return np.asarray(False)
    same = a1 == a2
    if equal_nan:
        same = np.logical_or(same, np.logical_and(a1 != a1, a2 != a2))
    return np.all(same)


@_implements(np.array_equiv)
def array_equiv(a1: Any, a2: Any) -> Any:
    """Whether the shapes broadcast together and every element is equal."""
    s1, s2 = np.shape(a1), np.shape(a2)
    n = min(len(s1), len(s2))
    for d in range(1, n + 1):
        if s1[-d] != s2[-d] and s1[-d] != 1 and s2[-d] != 1:
            return np.asarray(False)
    return np.all(a1 == a2)


@_implements(np.rollaxis)
def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """``np.moveaxis`` with NumPy's ``rollaxis`` positions (``start`` counts the axes before the move)."""
    n = np.ndim(a)
    ax = axis % n if -n <= axis < n else axis
    st = start + n if start < 0 else start
    if not (0 <= ax < n and 0 <= st <= n):
        raise ShapeError(f"np.rollaxis: axis {axis} or start {start} is out of bounds for an array of {n} dimensions",
                         hint=f"give axis in [-{n}, {n}) and start in [-{n}, {n}]")
    return np.moveaxis(a, ax, st - 1 if st > ax else st)


@_implements(np.tri)
def tri(N: int, M: Any = None, k: int = 0, dtype: Any = None, *, like: Any = None) -> Any:  # noqa: N803
    """Ones at and below the ``k``-th diagonal of an ``N`` x ``M`` array, zeros above (float64 by default)."""
    cols = N if M is None else M
    below = np.arange(N)[:, np.newaxis] + k >= np.arange(cols)[np.newaxis, :]
    return below.astype(np.float64 if dtype is None else dtype)



# -- elementwise ---------------------------------------------------------------------------------------------

@_implements(np.signbit)
def signbit(x: Any, /) -> Any:
    """Whether the sign bit is set (-0.0 and NaNs with the bit included): the bits read as a signed integer."""
    if np.issubdtype(np.result_type(x), np.floating):
        width = np.dtype(np.result_type(x)).itemsize
        bits = np.int64 if width == 8 else np.int32 if width == 4 else np.int16
        return bitcast_convert_type(x, bits) < 0
    return np.asarray(x) < 0


@_implements(np.copysign)
def copysign(x1: Any, x2: Any, /) -> Any:
    """``|x1|`` with the sign (bit) of ``x2``, in the two operands' float dtype (integers as float64)."""
    dt = np.result_type(x1, x2, 1.0)
    a = np.abs(np.asarray(x1).astype(dt))
    return np.where(signbit(np.asarray(x2).astype(dt)), -a, a)


@_implements(np.fabs)
def fabs(x: Any, /) -> Any:
    """``|x|`` as a float (integers as float64)."""
    return np.abs(np.asarray(x).astype(np.result_type(x, 1.0)))


@_implements(np.isposinf)
def isposinf(x: Any, out: Any = None) -> Any:
    return np.logical_and(np.isinf(x), x > 0)


@_implements(np.isneginf)
def isneginf(x: Any, out: Any = None) -> Any:
    return np.logical_and(np.isinf(x), x < 0)


@_implements(np.iscomplex)
def iscomplex(x: Any) -> Any:
    """Whether each element has a nonzero imaginary part (False for a real array)."""
    return np.imag(x) != 0


@_implements(np.isreal)
def isreal(x: Any) -> Any:
    return np.imag(x) == 0


@_implements(np.modf)
def modf(x: Any, /) -> Any:
    """(fractional part, integral part), both with ``x``'s sign; an infinity's fractional part is 0."""
    whole = np.trunc(x)
    return np.where(np.isinf(x), copysign(0.0, x), copysign(x - whole, x)), whole


@_implements(np.divmod)
def divmod_(x1: Any, x2: Any, /) -> Any:
    return np.floor_divide(x1, x2), np.remainder(x1, x2)


@_implements(np.nancumsum)
def nancumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """``np.cumsum`` with NaNs counted as 0 (flattened when ``axis`` is None)."""
    return np.cumsum(np.where(np.isnan(a), 0, a), axis=axis, dtype=dtype)


@_implements(np.nancumprod)
def nancumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """``np.cumprod`` with NaNs counted as 1 (flattened when ``axis`` is None)."""
    return np.cumprod(np.where(np.isnan(a), 1, a), axis=axis, dtype=dtype)


@_implements(np.geomspace)
def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None, axis: int = 0) -> Any:
    """``num`` numbers from ``start`` to ``stop`` spaced evenly on a log scale (``start``'s sign; arrays of
    endpoints give one sequence per element along ``axis``, as NumPy), the ends exactly ``start`` and
    ``stop``."""
    lo = np.asarray(start) * 1.0
    hi = np.asarray(stop) * 1.0
    shape = np.shape(lo + hi)
    t = np.reshape(np.linspace(0.0, 1.0, num, endpoint=endpoint), (num,) + (1,) * len(shape))
    a, b = np.log(np.abs(lo)), np.log(np.abs(hi))
    y = np.sign(lo) * np.exp(a + t * (b - a))
    y = np.concatenate((np.broadcast_to(lo, (1,) + shape), y[1:]), axis=0) if num > 0 else y
    if endpoint and num > 1:
        y = np.concatenate((y[:-1], np.broadcast_to(hi, (1,) + shape)), axis=0)
    y = np.moveaxis(y, 0, axis) if axis != 0 else y
    return y if dtype is None else y.astype(dtype)


@_implements(np.unwrap)
def unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: Any = 2 * np.pi) -> Any:
    """NumPy's ``unwrap``: jumps between neighbours along ``axis`` of more than ``max(discont, period / 2)``
    are taken back by multiples of ``period`` (floats)."""
    ax = axis % np.ndim(p)
    n = np.shape(p)[ax]
    dd = np.diff(p, axis=ax)
    half = period / 2
    cut = half if discont is None else max(discont, half)
    ddmod = np.mod(dd + half, period) - half
    ddmod = np.where(np.logical_and(ddmod == -half, dd > 0), half, ddmod)
    correct = np.where(np.abs(dd) < cut, 0.0, ddmod - dd)
    fixed = np.cumsum(correct, axis=ax)
    head = np.take(p, np.arange(1), axis=ax)
    return np.concatenate((head, np.take(p, np.arange(1, n), axis=ax) + fixed), axis=ax)


# -- products of the array API ------------------------------------------------------------------------------

@_implements(np.vecdot)
def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, out: Any = None, dtype: Any = None) -> Any:
    """The dot product of vectors along ``axis`` (``x1`` conjugated), the other axes broadcast."""
    return np.sum(np.conjugate(x1) * x2, axis=axis)


@_implements(np.matvec)
def matvec(x1: Any, x2: Any, /, *, out: Any = None, dtype: Any = None) -> Any:
    """Matrices (the last two axes of ``x1``) times vectors (the last axis of ``x2``), broadcast."""
    return np.matmul(x1, np.asarray(x2)[..., np.newaxis])[..., 0]


@_implements(np.vecmat)
def vecmat(x1: Any, x2: Any, /, *, out: Any = None, dtype: Any = None) -> Any:
    """Vectors (``x1`` conjugated) times matrices, broadcast."""
    return np.matmul(np.conjugate(x1)[..., np.newaxis, :], x2)[..., 0, :]



@_implements(np.ldexp)
def ldexp(x1: Any, x2: Any, /) -> Any:
    """``x1 * 2 ** x2`` for integer ``x2``, exactly: the power of two built from its bits (float64, the
    exponent split in two halves so that ``|x2|`` up to 2044 scales without overflow), then rounded once
    to ``x1``'s float dtype (integers as float64), as NumPy rounds."""
    if not np.issubdtype(np.result_type(x2), np.integer):
        raise ArgumentError("np.ldexp: the exponents must be integers",
                            hint="cast them first: np.ldexp(x1, x2.astype(np.int64))")
    n = np.clip(np.asarray(x2).astype(np.int64), -2044, 2044)
    h = n // 2
    p1 = bitcast_convert_type(np.left_shift(h + 1023, 52), np.float64)
    p2 = bitcast_convert_type(np.left_shift(n - h + 1023, 52), np.float64)
    dt = np.result_type(x1, 1.0) if np.issubdtype(np.result_type(x1), np.floating) else np.float64
    return (np.asarray(x1).astype(np.float64) * p1 * p2).astype(dt)


@_implements(np.choose)
def choose(a: Any, choices: Any, out: Any = None, mode: str = "raise") -> Any:
    """The element of ``choices[a]`` at each place (``a`` and the choices broadcast). An index out of range
    (which NumPy's default ``mode='raise'`` refuses at run time) is clipped, as ``mode='clip'``
    and jax do; ``mode='wrap'`` wraps it."""
    if mode not in ("raise", "clip", "wrap"):
        raise ArgumentError(f"np.choose: mode must be 'raise', 'clip' or 'wrap', not {mode!r}")
    n = len(choices)
    idx = np.mod(a, n) if mode == "wrap" else np.clip(a, 0, n - 1)
    dt = np.result_type(choices[0])
    for c in choices:
        dt = np.result_type(dt, c)
    out_ = np.zeros_like(idx, dtype=dt)
    k = 0
    for c in choices:
        out_ = np.where(idx == k, c, out_)
        k += 1
    return out_


@_implements(np.poly)
def poly(seq_of_zeros: Any) -> Any:
    """The coefficients (highest power first, leading 1) of the monic polynomial with the given roots (a
    1-D array; a 0-D one is the empty product, 1.0)."""
    if np.ndim(seq_of_zeros) > 1:
        raise ShapeError("np.poly of a matrix (its characteristic polynomial) is not supported",
                         hint="give the roots: np.poly(np.linalg.eigvals(A)) for a matrix A with real eigenvalues")
    if np.ndim(seq_of_zeros) == 0:
        return np.asarray(1.0)
    r = np.asarray(seq_of_zeros) * 1.0
    zero = np.zeros(1, dtype=r.dtype)
    c = np.ones(1, dtype=r.dtype)
    for k in range(np.shape(r)[0]):
        c = np.concatenate((c, zero)) - r[k] * np.concatenate((zero, c))
    return c


@_implements(np.frexp)
def frexp(x: Any, /) -> Any:
    """(mantissa in [0.5, 1) with ``x``'s sign, int32 exponent) with ``x == mantissa * 2 ** exponent``: the
    exponent read from the bits (float64 or float32); 0, infinities and NaNs give (``x``, 0).
    Subnormal numbers are flushed to zero by XLA first."""
    dt = np.result_type(x, 1.0) if np.issubdtype(np.result_type(x), np.floating) else np.float64
    v = np.asarray(x).astype(dt)
    if np.dtype(dt).itemsize == 8:
        biased = np.right_shift(bitcast_convert_type(v, np.int64), 52) & 0x7FF
    elif np.dtype(dt).itemsize == 4:
        biased = np.right_shift(bitcast_convert_type(v, np.int32), 23) & 0xFF
    else:
        raise ArgumentError("np.frexp: float64 and float32 operands only", hint="cast with x.astype(np.float32)")
    plain = np.logical_or(v == 0, np.logical_not(np.isfinite(v)))
    bias = 1022 if np.dtype(dt).itemsize == 8 else 126
    e = np.where(plain, 0, biased.astype(np.int32) - bias).astype(np.int32)
    return ldexp(v, -e), e


# -- the modified Bessel function of order 0 --------------------------------------------------------------------

# (Cephes' Chebyshev coefficients, as NumPy's np.i0 uses them: exp(-x) * I0(x) on [0, 8], and exp(-x) * sqrt(x) *
# I0(x) of 32 / x - 2 beyond)
_I0A = (-4.4153416464793395e-18, 3.3307945188222384e-17, -2.431279846547955e-16, 1.715391285555133e-15,
    -1.1685332877993451e-14, 7.676185498604936e-14, -4.856446783111929e-13, 2.95505266312964e-12,
    -1.726826291441556e-11, 9.675809035373237e-11, -5.189795601635263e-10, 2.6598237246823866e-09,
    -1.300025009986248e-08, 6.046995022541919e-08, -2.670793853940612e-07, 1.1173875391201037e-06,
    -4.4167383584587505e-06, 1.6448448070728896e-05, -5.754195010082104e-05, 0.00018850288509584165,
    -0.0005763755745385824, 0.0016394756169413357, -0.004324309995050576, 0.010546460394594998, -0.02373741480589947,
    0.04930528423967071, -0.09490109704804764, 0.17162090152220877, -0.3046826723431984, 0.6767952744094761)
_I0B = (-7.233180487874754e-18, -4.830504485944182e-18, 4.46562142029676e-17, 3.461222867697461e-17,
    -2.8276239805165836e-16, -3.425485619677219e-16, 1.7725601330565263e-15, 3.8116806693526224e-15,
    -9.554846698828307e-15, -4.150569347287222e-14, 1.54008621752141e-14, 3.8527783827421426e-13,
    7.180124451383666e-13, -1.7941785315068062e-12, -1.3215811840447713e-11, -3.1499165279632416e-11,
    1.1889147107846439e-11, 4.94060238822497e-10, 3.3962320257083865e-09, 2.266668990498178e-08,
    2.0489185894690638e-07, 2.8913705208347567e-06, 6.889758346916825e-05, 0.0033691164782556943, 0.8044904110141088)


def _chbevl(x: Any, vals: Any) -> Any:
    b0, b1, b2 = vals[0] + 0.0 * x, 0.0 * x, 0.0 * x
    for c in vals[1:]:
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


@_implements(np.i0)
def i0(x: Any) -> Any:
    """The modified Bessel function of the first kind of order 0, NumPy's way (Cephes' Chebyshev series on
    ``|x| <= 8`` and beyond, each side given an ``x`` in its own range: no infinity in the other's derivative);
    integers as float64."""
    if np.issubdtype(np.result_type(x), np.complexfloating):
        raise ArgumentError("np.i0 is not supported for complex values", hint="NumPy refuses them too")
    v = np.asarray(x)
    v = v if np.issubdtype(v.dtype, np.floating) else v.astype(np.float64)
    a = np.abs(v)
    small = a <= 8.0
    s = np.where(small, a, 0.0)
    b = np.where(small, 9.0, a)
    near = np.exp(s) * _chbevl(s / 2.0 - 2, _I0A)
    far = np.exp(b) * _chbevl(32.0 / b - 2.0, _I0B) / np.sqrt(b)
    return np.where(small, near, far)


# -- more of NumPy's array functions -------------------------------------------------------------------------------

@_implements(np.unstack)
def unstack(x: Any, /, *, axis: int = 0) -> Any:
    """The slices of ``x`` along ``axis``, as a tuple."""
    if np.ndim(x) == 0:
        raise ShapeError("np.unstack needs an array of at least one dimension",
                         hint="a number is one element already; np.atleast_1d(x) makes it an array")
    v = np.moveaxis(x, axis, 0)
    parts = []
    for k in range(np.shape(v)[0]):
        parts.append(v[k])
    return tuple(parts)


@_implements(np.sort_complex)
def sort_complex(a: Any) -> Any:
    """``a`` sorted along its last axis by real part, then imaginary part, as complex numbers (real input:
    complex64 from 1- and 2-byte integers, complex128 otherwise, as NumPy)."""
    dt = np.result_type(a)
    if not np.issubdtype(dt, np.complexfloating):
        small = np.issubdtype(dt, np.integer) and np.dtype(dt).itemsize <= 2
        return np.sort(a, axis=-1).astype(np.complex64 if small else np.complex128)
    order = np.lexsort((np.imag(a), np.real(a)), axis=-1)
    return np.take_along_axis(a, order, axis=-1)


@_implements(np.put_along_axis)
def put_along_axis(arr: Any, indices: Any, values: Any, axis: Any) -> Any:
    """``arr`` with ``values`` written at ``indices`` along ``axis`` (``np.take_along_axis``'s places; ``axis``
    None: of the flattened ``arr``), returned: the front end writes ``np.put_along_axis(a, i, v, axis)`` as
    ``a[...] = put_along_axis(a, i, v, axis)``. Where an index repeats, the last value lands on CPU, as in
    NumPy (unspecified on GPU, as any repeated write)."""
    if not np.issubdtype(np.result_type(indices), np.integer):
        raise ArgumentError("np.put_along_axis: the indices must be integers",
                            hint="cast them: indices.astype(np.int64)")
    if axis is None:
        if np.ndim(indices) != 1:
            raise ShapeError(f"np.put_along_axis: with axis=None, indices must be 1-D, got {np.ndim(indices)}-D",
                             hint="give axis=..., or np.ravel(indices)")
        return np.reshape(put_along_axis(np.ravel(arr), indices, values, 0), np.shape(arr))
    nd = np.ndim(arr)
    if np.ndim(indices) != nd:
        raise ShapeError(f"np.put_along_axis: indices and arr must have the same number of dimensions, got "
                         f"{np.ndim(indices)} and {nd}", hint="add axes of length 1: np.expand_dims(indices, ...)")
    ax = axis % nd
    n = np.shape(arr)[ax]
    where: tuple[Any, ...] = ()
    for d in range(nd):
        if d == ax:
            where = where + (np.where(indices < 0, indices + n, indices),)
        else:
            shape: tuple[Any, ...] = ()
            for e in range(nd):
                shape = shape + ((np.shape(arr)[d] if e == d else 1),)
            where = where + (np.reshape(np.arange(np.shape(arr)[d]), shape),)
    out = arr + np.zeros_like(arr)
    out[where] = values
    return out
