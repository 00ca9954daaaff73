"""Shape primitives beyond ``shape.py``: reorder, insert/remove axes, join, split, repeat.

ravel, expand_dims, squeeze, broadcast_to, atleast_1d/2d/3d, swapaxes, moveaxis,
flip, tile, repeat; concatenate, stack, hstack, vstack (a sequence of arrays in);
split, array_split (a list of arrays out).

Every shape argument (axes, sections, repeats, target shapes) is static. Most
rules lower to one reshape/transpose/reverse/slice/concatenate/broadcast. The
joining functions convert their operands with NumPy's ``asanyarray`` first, so
Python scalars among them count with their default dtype (int64, float64):
NEP 50 weak typing does not apply there.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import DTypeError, ShapedArray, ShapeError
from ..lower.hlo import FuncBuilder, HloValue
from . import batch_rules
from .common import as_dtype, fmt_shape, normalize_axis
from .registry import LowerCtx, deflinear, defprim


def _static_int(v: Any, what: str) -> int:
    try:
        if isinstance(v, (bool, np.bool_)):
            raise TypeError
        return operator.index(v)
    except TypeError:
        raise DTypeError(f"{what} must be a static int, got {v!r}") from None


def _int_tuple(v: Any, what: str) -> tuple[int, ...]:
    """An int or a sequence of ints, as a tuple."""
    if isinstance(v, (tuple, list)):
        return tuple(_static_int(x, what) for x in v)
    return (_static_int(v, what),)


def _axis_list(axis: Any, ndim: int, what: str = "axis") -> list[int]:
    """An int or a tuple of axes, normalized, in the order given; repeats refused."""
    axes = [normalize_axis(a, ndim, what) for a in _int_tuple(axis, what)]
    if len(set(axes)) != len(axes):
        raise ShapeError(f"repeated {what} in {axis!r}")
    return axes


def _reshape_lower(ctx: LowerCtx, a: HloValue, *static: Any) -> HloValue:
    """The lowering of every rule whose output is a reshape of its input."""
    return ctx.b.reshape(a, ctx.avals_out[0].shape)


# -- ravel -------------------------------------------------------------------------
def _ravel_stub(a, order="C"):  # type: ignore[no-untyped-def]
    ...


def _ravel_abstract(a: ShapedArray, order: Any = "C") -> ShapedArray:
    if order not in ("C", "F"):
        raise DTypeError(f"np.ravel: order={order!r} is not supported (only 'C' and 'F')")
    return ShapedArray((a.size,), a.dtype)


def _ravel_lower(ctx: LowerCtx, a: HloValue, order: Any = "C") -> HloValue:
    if order == "F":
        a = ctx.b.transpose(a, list(range(a.ndim))[::-1])
    return ctx.b.reshape(a, ctx.avals_out[0].shape)


defprim("ravel", np.ravel, _ravel_stub, abstract_eval=_ravel_abstract, lower=_ravel_lower, arrays=("a",))


# -- expand_dims / squeeze ---------------------------------------------------------
def _expand_dims_stub(a, axis):  # type: ignore[no-untyped-def]
    ...


def _expand_dims_abstract(a: ShapedArray, axis: Any) -> ShapedArray:
    n = a.ndim + len(_int_tuple(axis, "np.expand_dims: axis"))
    new = set(_axis_list(axis, n))
    it = iter(a.shape)
    return ShapedArray(tuple(1 if i in new else next(it) for i in range(n)), a.dtype)


defprim("expand_dims", np.expand_dims, _expand_dims_stub, abstract_eval=_expand_dims_abstract,
        lower=_reshape_lower, arrays=("a",))


def _squeeze_stub(a, axis=None):  # type: ignore[no-untyped-def]
    ...


def _squeeze_abstract(a: ShapedArray, axis: Any = None) -> ShapedArray:
    if axis is None:
        axes = {i for i, d in enumerate(a.shape) if d == 1}
    else:
        axes = set(_axis_list(axis, a.ndim))
        bad = [i for i in sorted(axes) if a.shape[i] != 1]
        if bad:
            raise ShapeError(f"np.squeeze: cannot squeeze axis {bad[0]} of an array of shape {fmt_shape(a.shape)}: "
                             f"its size is {a.shape[bad[0]]}, not 1")
    return ShapedArray(tuple(d for i, d in enumerate(a.shape) if i not in axes), a.dtype)


defprim("squeeze", np.squeeze, _squeeze_stub, abstract_eval=_squeeze_abstract, lower=_reshape_lower,
        arrays=("a",))


# -- atleast_1d / 2d / 3d ----------------------------------------------------------
def _atleast_shape(shape: tuple[int, ...], n: int) -> tuple[int, ...]:
    """NumPy's placement of the new axes: 1-D (N,) -> (1, N) -> (1, N, 1)."""
    if len(shape) >= n:
        return shape
    if n == 1 or len(shape) == 0:
        return (1,) * (n - len(shape)) + shape
    if n == 2:
        return (1,) + shape
    return (1,) + shape + (1,) if len(shape) == 1 else shape + (1,)


def _atleast_stub(*arys):  # type: ignore[no-untyped-def]
    ...


def _atleast(n: int) -> None:
    def abstract(*arys: ShapedArray) -> Any:
        if not arys:
            raise ShapeError(f"np.atleast_{n}d needs at least one array")
        outs = [ShapedArray(_atleast_shape(a.shape, n), a.dtype) for a in arys]
        return outs[0] if len(outs) == 1 else outs

    def lower(ctx: LowerCtx, *arys: HloValue) -> Any:
        outs = [ctx.b.reshape(a, o.shape) for a, o in zip(arys, ctx.avals_out)]
        return outs[0] if len(outs) == 1 else outs

    fn = getattr(np, f"atleast_{n}d")
    defprim(f"atleast_{n}d", fn, _atleast_stub, abstract_eval=abstract, lower=lower, arrays=(),
            array_seqs=("arys",), results="per_operand")


for _n in (1, 2, 3):
    _atleast(_n)


# -- broadcast_to -----------------------------------------------------------------
def _broadcast_to_stub(array, shape):  # type: ignore[no-untyped-def]
    ...


def _broadcast_to_abstract(array: ShapedArray, shape: Any) -> ShapedArray:
    target = _int_tuple(shape, "np.broadcast_to: shape")
    if any(d < 0 for d in target):
        raise ShapeError(f"np.broadcast_to: negative dimensions in shape {fmt_shape(target)}")
    lead = len(target) - array.ndim
    if lead < 0 or any(d not in (1, t) for d, t in zip(array.shape, target[lead:])):
        raise ShapeError(f"np.broadcast_to: cannot broadcast an array of shape {fmt_shape(array.shape)} to "
                         f"shape {fmt_shape(target)}",
                         hint="each dimension must equal the target's trailing dimension, or be 1")
    return ShapedArray(target, array.dtype, weak_type=array.weak_type and array.ndim > 0)  # (reshape's rule)


def _broadcast_to_lower(ctx: LowerCtx, array: HloValue, shape: Any) -> HloValue:
    return ctx.b.broadcast_to(array, ctx.avals_out[0].shape)


defprim("broadcast_to", np.broadcast_to, _broadcast_to_stub, abstract_eval=_broadcast_to_abstract,
        lower=_broadcast_to_lower, arrays=("array",), positional=2)


# -- swapaxes / moveaxis / flip ------------------------------------------------------
def _swapaxes_stub(a, axis1, axis2):  # type: ignore[no-untyped-def]
    ...


def _swap_perm(ndim: int, axis1: Any, axis2: Any) -> list[int]:
    i, j = normalize_axis(axis1, ndim, "axis1"), normalize_axis(axis2, ndim, "axis2")
    perm = list(range(ndim))
    perm[i], perm[j] = j, i
    return perm


defprim("swapaxes", np.swapaxes, _swapaxes_stub,
        abstract_eval=lambda a, axis1, axis2: ShapedArray(
            tuple(a.shape[p] for p in _swap_perm(a.ndim, axis1, axis2)), a.dtype, weak_type=a.weak_type),
        lower=lambda ctx, a, axis1, axis2: ctx.b.transpose(a, _swap_perm(a.ndim, axis1, axis2)),
        arrays=("a",), positional=3)


def _moveaxis_stub(a, source, destination):  # type: ignore[no-untyped-def]
    ...


def _move_perm(ndim: int, source: Any, destination: Any) -> list[int]:
    src = _axis_list(source, ndim, "source")
    dst = _axis_list(destination, ndim, "destination")
    if len(src) != len(dst):
        raise ShapeError(f"np.moveaxis: source {source!r} and destination {destination!r} must have the same "
                         "number of elements")
    order = [i for i in range(ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return order


defprim("moveaxis", np.moveaxis, _moveaxis_stub,
        abstract_eval=lambda a, source, destination: ShapedArray(
            tuple(a.shape[p] for p in _move_perm(a.ndim, source, destination)), a.dtype, weak_type=a.weak_type),
        lower=lambda ctx, a, source, destination: ctx.b.transpose(a, _move_perm(a.ndim, source, destination)),
        arrays=("a",), positional=3)


def _flip_stub(m, axis=None):  # type: ignore[no-untyped-def]
    ...


def _flip_axes(ndim: int, axis: Any) -> tuple[int, ...]:
    return tuple(range(ndim)) if axis is None else tuple(sorted(_axis_list(axis, ndim)))


def _flip_abstract(m: ShapedArray, axis: Any = None) -> ShapedArray:
    _flip_axes(m.ndim, axis)  # validates
    return ShapedArray(m.shape, m.dtype)


defprim("flip", np.flip, _flip_stub, abstract_eval=_flip_abstract,
        lower=lambda ctx, m, axis=None: ctx.b.reverse(m, _flip_axes(m.ndim, axis)), arrays=("m",))


# -- tile / repeat -----------------------------------------------------------------
def _tile_stub(A, reps):  # type: ignore[no-untyped-def]
    ...


def _tile_plan(shape: tuple[int, ...], reps: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(input shape padded with leading 1s, reps padded with leading 1s)."""
    tup = _int_tuple(reps, "np.tile: reps")
    if any(r < 0 for r in tup):
        raise ShapeError(f"np.tile: negative repetitions in reps={reps!r}", hint="repeat 0 or more times")
    n = max(len(tup), len(shape))
    return (1,) * (n - len(shape)) + shape, (1,) * (n - len(tup)) + tup


def _tile_abstract(A: ShapedArray, reps: Any) -> ShapedArray:
    shape, tup = _tile_plan(A.shape, reps)
    return ShapedArray(tuple(s * t for s, t in zip(shape, tup)), A.dtype)


def _tile_lower(ctx: LowerCtx, A: HloValue, reps: Any) -> HloValue:
    b = ctx.b
    shape, tup = _tile_plan(A.shape, reps)
    x = b.reshape(A, shape)
    # (s0, s1, ...) -> (t0, s0, t1, s1, ...) -> (t0*s0, t1*s1, ...)
    inter = tuple(d for st in zip(tup, shape) for d in st)
    x = b.broadcast_in_dim(x, inter, [2 * i + 1 for i in range(len(shape))])
    return b.reshape(x, ctx.avals_out[0].shape)


defprim("tile", np.tile, _tile_stub, abstract_eval=_tile_abstract, lower=_tile_lower, arrays=("A",), positional=2)


def _repeat_stub(a, repeats, axis=None):  # type: ignore[no-untyped-def]
    ...


def _repeat_counts(repeats: Any, n: int) -> tuple[int, ...] | int:
    """One static count, or a static count for each of the ``n`` slices (NumPy's list of repeats)."""
    if isinstance(repeats, (tuple, list)) and len(repeats) == 1:
        repeats = repeats[0]
    if isinstance(repeats, (tuple, list)):
        counts = tuple(_static_int(r, "np.repeat: repeats") for r in repeats)
        if len(counts) != n:
            raise ShapeError(f"np.repeat: {len(counts)} repeats for {n} elements along the axis",
                             hint="give one count, or one for each element along the axis")
        if any(r < 0 for r in counts):
            raise ShapeError(f"np.repeat: repeats must be non-negative, got {list(counts)}")
        return counts
    r = _static_int(repeats, "np.repeat: repeats")
    if r < 0:
        raise ShapeError(f"np.repeat: repeats must be non-negative, got {r}")
    return r


def _repeat_abstract(a: ShapedArray, repeats: Any, axis: Any = None) -> ShapedArray:
    n = a.size if axis is None else a.shape[normalize_axis(axis, a.ndim)]
    r = _repeat_counts(repeats, n)
    total = sum(r) if isinstance(r, tuple) else n * r
    if axis is None:
        return ShapedArray((total,), a.dtype)
    ax = normalize_axis(axis, a.ndim)
    return ShapedArray(tuple(total if i == ax else d for i, d in enumerate(a.shape)), a.dtype)


def _repeat_lower(ctx: LowerCtx, a: HloValue, repeats: Any, axis: Any = None) -> HloValue:
    b = ctx.b
    if axis is None:
        a = b.reshape(a, (a.aval.size,))
        ax = 0
    else:
        ax = normalize_axis(axis, a.ndim)
    r = _repeat_counts(repeats, a.shape[ax])
    if isinstance(r, tuple):  # a count per slice: each slice broadcast to its count, joined (static sizes)
        pieces = []
        for i, k in enumerate(r):
            if k:
                one = b.slice(a, [i if d == ax else 0 for d in range(a.ndim)],
                              [i + 1 if d == ax else n for d, n in enumerate(a.shape)])
                pieces.append(b.broadcast_in_dim(one, a.shape[:ax] + (k,) + a.shape[ax + 1:], list(range(a.ndim))))
        if not pieces:
            return b.slice(a, [0] * a.ndim, [0 if d == ax else n for d, n in enumerate(a.shape)])
        return pieces[0] if len(pieces) == 1 else b.concatenate(pieces, ax)
    # (..., n, ...) -> (..., n, r, ...) -> (..., n*r, ...)
    inter = a.shape[: ax + 1] + (r,) + a.shape[ax + 1:]
    x = b.broadcast_in_dim(a, inter, [i if i <= ax else i + 1 for i in range(a.ndim)])
    return b.reshape(x, ctx.avals_out[0].shape)


defprim("repeat", np.repeat, _repeat_stub, abstract_eval=_repeat_abstract, lower=_repeat_lower, arrays=("a",),
        positional=2)


# -- concatenate / stack / hstack / vstack -------------------------------------------
def _join_dtype(avals: Sequence[ShapedArray], dtype: Any, what: str) -> np.dtype:
    """NumPy's result dtype for joining arrays; ``dtype`` must be a same_kind cast of each."""
    if not avals:
        raise ShapeError(f"{what}: need at least one array to join")
    common = np.result_type(*(a.dtype for a in avals))
    d = as_dtype(dtype)
    if d is None:
        return common
    for a in avals:
        if not np.can_cast(a.dtype, d, "same_kind"):
            raise DTypeError(f"{what}: cannot cast {a.dtype.name} to dtype={d.name} (casting='same_kind')")
    return d


def _concat_shape(shapes: Sequence[tuple[int, ...]], axis: int, what: str) -> tuple[int, ...]:
    nd = len(shapes[0])
    for k, s in enumerate(shapes):
        if len(s) != nd:
            raise ShapeError(f"{what}: all the input arrays must have the same number of dimensions, but "
                             f"shapes {' and '.join(fmt_shape(x) for x in (shapes[0], s))} (array 0 and "
                             f"array {k}) differ", hint="give the arrays the same number of dimensions (x[None], "
                                                        "x.reshape(...), np.atleast_2d) before joining them")
        for i in range(nd):
            if i != axis and s[i] != shapes[0][i]:
                raise ShapeError(f"{what}: all the input array dimensions except for the concatenation axis "
                                 f"({axis}) must match, but array 0 has shape {fmt_shape(shapes[0])} and array "
                                 f"{k} has shape {fmt_shape(s)}", hint="the arrays may differ only along the "
                                                                       "axis they are joined on")
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    return tuple(out)


def _join(b: FuncBuilder, xs: Sequence[HloValue], shapes: Sequence[tuple[int, ...]], axis: int,
          out: ShapedArray) -> HloValue:
    """Reshape each operand to ``shapes[k]``, convert to the output dtype, concatenate."""
    return b.concatenate([b.reshape(b.convert(x, out.dtype), s) for x, s in zip(xs, shapes)], axis)


def _concatenate_stub(arrays, axis=0, dtype=None):  # type: ignore[no-untyped-def]
    ...


def _concat_plan(arrays: Sequence[ShapedArray], axis: Any) -> tuple[list[tuple[int, ...]], int, tuple[int, ...]]:
    what = "np.concatenate"
    if not arrays:
        raise ShapeError(f"{what}: need at least one array to concatenate")
    shapes: list[tuple[int, ...]]
    if axis is None:
        shapes = [(a.size,) for a in arrays]
        ax = 0
    else:
        if any(a.ndim == 0 for a in arrays):
            raise ShapeError(f"{what}: zero-dimensional arrays cannot be concatenated",
                             hint="use np.stack, or give them an axis with x[None]")
        shapes = [a.shape for a in arrays]
        ax = normalize_axis(axis, arrays[0].ndim)
    return shapes, ax, _concat_shape(shapes, ax, what)


def _concatenate_abstract(arrays: list[ShapedArray], axis: Any = 0, dtype: Any = None) -> ShapedArray:
    _, _, shape = _concat_plan(arrays, axis)
    return ShapedArray(shape, _join_dtype(arrays, dtype, "np.concatenate"))


def _concatenate_lower(ctx: LowerCtx, arrays: list[HloValue], axis: Any = 0, dtype: Any = None) -> HloValue:
    shapes, ax, _ = _concat_plan([a.aval for a in arrays], axis)
    return _join(ctx.b, arrays, shapes, ax, ctx.avals_out[0])


defprim("concatenate", np.concatenate, _concatenate_stub, abstract_eval=_concatenate_abstract,
        lower=_concatenate_lower, arrays=(), array_seqs=("arrays",))


def _stack_stub(arrays, axis=0, *, dtype=None):  # type: ignore[no-untyped-def]
    ...


def _stack_plan(arrays: Sequence[ShapedArray], axis: Any) -> tuple[list[tuple[int, ...]], int, tuple[int, ...]]:
    if not arrays:
        raise ShapeError("np.stack: need at least one array to stack")
    first = arrays[0].shape
    for k, a in enumerate(arrays):
        if a.shape != first:
            raise ShapeError(f"np.stack: all input arrays must have the same shape, but array 0 has shape "
                             f"{fmt_shape(first)} and array {k} has shape {fmt_shape(a.shape)}",
                             hint="np.stack joins arrays of one shape along a new axis (np.concatenate joins "
                                  "along an existing one, where sizes may differ)")
    ax = normalize_axis(axis, len(first) + 1)
    each = first[:ax] + (1,) + first[ax:]
    return [each] * len(arrays), ax, first[:ax] + (len(arrays),) + first[ax:]


def _stack_abstract(arrays: list[ShapedArray], axis: Any = 0, dtype: Any = None) -> ShapedArray:
    _, _, shape = _stack_plan(arrays, axis)
    return ShapedArray(shape, _join_dtype(arrays, dtype, "np.stack"))


def _stack_lower(ctx: LowerCtx, arrays: list[HloValue], axis: Any = 0, dtype: Any = None) -> HloValue:
    shapes, ax, _ = _stack_plan([a.aval for a in arrays], axis)
    return _join(ctx.b, arrays, shapes, ax, ctx.avals_out[0])


defprim("stack", np.stack, _stack_stub, abstract_eval=_stack_abstract, lower=_stack_lower,
        arrays=(), array_seqs=("arrays",))


def _tup_stub(tup, *, dtype=None):  # type: ignore[no-untyped-def]
    ...


def _hstack_plan(tup: Sequence[ShapedArray]) -> tuple[list[tuple[int, ...]], int, tuple[int, ...]]:
    if not tup:
        raise ShapeError("np.hstack: need at least one array to concatenate")
    shapes = [_atleast_shape(a.shape, 1) for a in tup]
    ax = 0 if len(shapes[0]) == 1 else 1
    return shapes, ax, _concat_shape(shapes, ax, "np.hstack")


def _vstack_plan(tup: Sequence[ShapedArray]) -> tuple[list[tuple[int, ...]], int, tuple[int, ...]]:
    if not tup:
        raise ShapeError("np.vstack: need at least one array to concatenate")
    shapes = [_atleast_shape(a.shape, 2) for a in tup]
    return shapes, 0, _concat_shape(shapes, 0, "np.vstack")


def _tup_join(name: str, plan: Any) -> None:
    def abstract(tup: list[ShapedArray], dtype: Any = None) -> ShapedArray:
        _, _, shape = plan(tup)
        return ShapedArray(shape, _join_dtype(tup, dtype, f"np.{name}"))

    def lower(ctx: LowerCtx, tup: list[HloValue], dtype: Any = None) -> HloValue:
        shapes, ax, _ = plan([a.aval for a in tup])
        return _join(ctx.b, tup, shapes, ax, ctx.avals_out[0])

    defprim(name, getattr(np, name), _tup_stub, abstract_eval=abstract, lower=lower, arrays=(),
            array_seqs=("tup",))


_tup_join("hstack", _hstack_plan)
_tup_join("vstack", _vstack_plan)


# -- split / array_split -------------------------------------------------------------
def _split_stub(ary, indices_or_sections, axis=0):  # type: ignore[no-untyped-def]
    ...


def _split_bounds(shape: tuple[int, ...], ios: Any, axis: Any, even: bool) -> tuple[int, list[tuple[int, int]]]:
    """(axis, [(start, stop) per piece]) with NumPy's slicing semantics for index lists."""
    name = "np.split" if even else "np.array_split"
    if len(shape) == 0:
        raise ShapeError(f"{name}: cannot split a 0-d array")
    ax = normalize_axis(axis, len(shape))
    n = shape[ax]
    if isinstance(ios, (tuple, list)):
        cuts = [0] + [_static_int(i, f"{name}: an index") for i in ios] + [n]
        bounds = []
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            start, stop, _ = slice(lo, hi).indices(n)
            bounds.append((start, max(start, stop)))
        return ax, bounds
    k = _static_int(ios, f"{name}: indices_or_sections")
    if k <= 0:
        raise ShapeError(f"{name}: number of sections must be larger than 0, got {k}")
    if even and n % k:
        raise ShapeError(f"np.split: an axis of size {n} cannot be split into {k} equal sections "
                         f"(array of shape {fmt_shape(shape)}, axis {ax})",
                         hint="use np.array_split for unequal sections, or a list of split indices")
    size, extra = divmod(n, k)
    sizes = [size + 1] * extra + [size] * (k - extra)
    starts = np.cumsum([0] + sizes[:-1]).tolist()
    return ax, [(int(s), int(s) + z) for s, z in zip(starts, sizes)]


def _split(name: str, even: bool) -> None:
    def abstract(ary: ShapedArray, indices_or_sections: Any, axis: Any = 0) -> list[ShapedArray]:
        ax, bounds = _split_bounds(ary.shape, indices_or_sections, axis, even)
        return [ShapedArray(tuple(hi - lo if i == ax else d for i, d in enumerate(ary.shape)), ary.dtype)
                for lo, hi in bounds]

    def lower(ctx: LowerCtx, ary: HloValue, indices_or_sections: Any, axis: Any = 0) -> list[HloValue]:
        ax, bounds = _split_bounds(ary.shape, indices_or_sections, axis, even)
        outs = []
        for lo, hi in bounds:
            starts = [lo if i == ax else 0 for i in range(ary.ndim)]
            limits = [hi if i == ax else d for i, d in enumerate(ary.shape)]
            outs.append(ctx.b.slice(ary, starts, limits))
        return outs

    defprim(name, getattr(np, name), _split_stub, abstract_eval=abstract, lower=lower, arrays=("ary",),
            positional=2, results="list")


_split("split", even=True)
_split("array_split", even=False)


# -- diag / triu / tril ----------------------------------------------------------------
def _diag_stub(v, k=0):  # type: ignore[no-untyped-def]
    ...


def _mask(b: FuncBuilder, shape: tuple[int, ...], k: int, cmp: str) -> HloValue:
    """``col - row <cmp> k`` over the last two axes of ``shape`` (EQ: a diagonal; GE: upper triangle)."""
    i64 = np.dtype(np.int64)
    n = len(shape)
    rows = b.iota(ShapedArray(shape, i64), n - 2)
    cols = b.iota(ShapedArray(shape, i64), n - 1)
    return b.compare(cmp, b.binary("subtract", cols, rows), b.full(k, shape, i64))


def _diag_plan(v: ShapedArray, k: Any) -> tuple[int, tuple[int, ...]]:
    """(k, output shape)."""
    k = _static_int(k, "np.diag: k")
    if v.ndim == 1:
        n = v.shape[0] + abs(k)
        return k, (n, n)
    if v.ndim == 2:
        r, c = v.shape
        length = min(r, c - k) if k >= 0 else min(r + k, c)
        return k, (max(length, 0),)
    raise ShapeError(f"np.diag: input must be 1- or 2-d, got shape {fmt_shape(v.shape)}",
                     hint="np.diag builds a matrix from a vector or takes a matrix's diagonal")


def _diag_abstract(v: ShapedArray, k: Any = 0) -> ShapedArray:
    return ShapedArray(_diag_plan(v, k)[1], v.dtype)


def _diag_lower(ctx: LowerCtx, v: HloValue, k: Any = 0) -> HloValue:
    """1-D: ``v`` padded, broadcast along the rows (k >= 0) or columns, kept on the diagonal.
    2-D: everything off the diagonal zeroed, then a sum along the rows (or columns) and a slice."""
    b = ctx.b
    k, shape = _diag_plan(v.aval, k)
    zero = b.full(False if v.dtype == np.bool_ else 0, (), v.dtype)
    if v.ndim == 1:
        vp = b.pad(v, zero, [0], [abs(k)], [0])
        x = b.broadcast_in_dim(vp, shape, [0] if k >= 0 else [1])
        return b.select(_mask(b, shape, k, "EQ"), x, b.broadcast_to(zero, shape))
    x = b.select(_mask(b, v.shape, k, "EQ"), v, b.broadcast_to(zero, v.shape))
    ax = 1 if k >= 0 else 0
    s = b.reduce(x, "or" if v.dtype == np.bool_ else "add", False if v.dtype == np.bool_ else 0, (ax,))
    return b.slice(s, [0], [shape[0]])  # row r holds (r, r + k); column c holds (c - k, c)


defprim("diag", np.diag, _diag_stub, abstract_eval=_diag_abstract, lower=_diag_lower, arrays=("v",))


def _tri_stub(m, k=0):  # type: ignore[no-untyped-def]
    ...


def _tri_shape(m: ShapedArray, k: Any, name: str) -> tuple[int, ...]:
    _static_int(k, f"np.{name}: k")
    if m.ndim == 0:
        raise DTypeError(f"np.{name} needs an array of at least one dimension, got a 0-d array",
                         hint="np.triu/np.tril take a matrix (or a stack of them)")
    return m.shape if m.ndim >= 2 else (m.shape[0], m.shape[0])


def _tri(name: str, cmp: str) -> None:
    """``triu`` keeps ``col - row >= k``; ``tril`` keeps ``col - row <= k`` (a 1-D ``m`` is a row,
    broadcast to a square, as NumPy)."""

    def abstract(m: ShapedArray, k: Any = 0) -> ShapedArray:
        return ShapedArray(_tri_shape(m, k, name), m.dtype)

    def lower(ctx: LowerCtx, m: HloValue, k: Any = 0) -> HloValue:
        b = ctx.b
        shape = _tri_shape(m.aval, k, name)
        zero = b.full(False if m.dtype == np.bool_ else 0, shape, m.dtype)
        return b.select(_mask(b, shape, int(k), cmp), b.broadcast_to(m, shape), zero)

    defprim(name, getattr(np, name), _tri_stub, abstract_eval=abstract, lower=lower, arrays=("m",))


_tri("triu", "GE")
_tri("tril", "LE")


# -- roll ------------------------------------------------------------------------------
def _roll_stub(a, shift, axis=None):  # type: ignore[no-untyped-def]
    ...


def _roll_plan(a: ShapedArray, shift: Any, axis: Any) -> list[tuple[int, int]]:
    """[(axis, shift modulo its size)]: shifts along one axis add up (axis None: the flat array's)."""
    shifts = _int_tuple(shift, "np.roll: shift")
    if axis is None:
        if len(shifts) != 1:
            raise ShapeError(f"np.roll: with axis=None, shift must be a single int, got {shift!r}")
        n = a.size
        return [(0, shifts[0] % n if n else 0)]
    axes = [normalize_axis(x, a.ndim) for x in _int_tuple(axis, "np.roll: axis")]
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    elif len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ShapeError(f"np.roll: shift {shift!r} and axis {axis!r} have different lengths",
                         hint="give one shift per axis")
    total: dict[int, int] = {}
    for ax, s in zip(axes, shifts):
        total[ax] = total.get(ax, 0) + s
    return [(ax, s % a.shape[ax] if a.shape[ax] else 0) for ax, s in sorted(total.items())]


def _roll_lower(ctx: LowerCtx, a: HloValue, shift: Any, axis: Any = None) -> HloValue:
    """Per axis: the last ``s`` elements, then the others (one concatenate)."""
    b = ctx.b
    x = b.reshape(a, (a.aval.size,)) if axis is None else a
    for ax, s in _roll_plan(a.aval, shift, axis):
        if s == 0:
            continue
        n = x.shape[ax]
        tail = b.slice(x, [n - s if i == ax else 0 for i in range(x.ndim)], list(x.shape))
        head = b.slice(x, [0] * x.ndim, [n - s if i == ax else d for i, d in enumerate(x.shape)])
        x = b.concatenate([tail, head], ax)
    return b.reshape(x, a.shape)


def _roll_abstract(a: ShapedArray, shift: Any, axis: Any = None) -> ShapedArray:
    _roll_plan(a, shift, axis)
    return ShapedArray(a.shape, a.dtype)


defprim("roll", np.roll, _roll_stub, abstract_eval=_roll_abstract, lower=_roll_lower, arrays=("a",), positional=2)


# -- derivatives: linear; the VJP undoes the data movement ------------------------------------------------
deflinear("ravel", {"a": "np.ravel(a_dot, order)"}, {"a": "ravel_bar(out_bar, a, order)"})
deflinear("squeeze", {"a": "np.squeeze(a_dot, axis)"}, {"a": "np.reshape(out_bar, np.shape(a))"})
deflinear("expand_dims", {"a": "np.expand_dims(a_dot, axis)"}, {"a": "np.reshape(out_bar, np.shape(a))"})
deflinear("broadcast_to", {"array": "np.broadcast_to(array_dot, shape)"}, {"array": "unbroadcast(out_bar, array)"})
deflinear("swapaxes", {"a": "np.swapaxes(a_dot, axis1, axis2)"}, {"a": "np.swapaxes(out_bar, axis1, axis2)"})
deflinear("moveaxis", {"a": "np.moveaxis(a_dot, source, destination)"},
          {"a": "np.moveaxis(out_bar, destination, source)"})
deflinear("diag", {"v": "np.diag(v_dot, k)"}, {"v": "diag_bar(out_bar, v, k)"})
deflinear("triu", {"m": "np.triu(m_dot, k)"}, {"m": "unbroadcast(np.triu(out_bar, k), m)"})
deflinear("tril", {"m": "np.tril(m_dot, k)"}, {"m": "unbroadcast(np.tril(out_bar, k), m)"})
deflinear("roll", {"a": "np.roll(a_dot, shift, axis)"}, {"a": "np.roll(out_bar, negated(shift), axis)"})
deflinear("flip", {"m": "np.flip(m_dot, axis)"}, {"m": "np.flip(out_bar, axis)"})
deflinear("tile", {"A": "np.tile(A_dot, reps)"}, {"A": "tile_bar(out_bar, A, reps)"})
deflinear("repeat", {"a": "np.repeat(a_dot, repeats, axis)"}, {"a": "repeat_bar(out_bar, a, repeats, axis)"})
for _n in (1, 2, 3):
    deflinear(f"atleast_{_n}d", {"arys": f"atleast_dots(arys_dot, {_n})"}, {"arys": "atleast_bars(out_bar, arys)"})
deflinear("concatenate", {"arrays": "np.concatenate(arrays_dot, axis=axis, dtype=dtype)"},
          {"arrays": "join_bars(out_bar, arrays, axis, 'concatenate')"})
deflinear("stack", {"arrays": "np.stack(arrays_dot, axis=axis, dtype=dtype)"},
          {"arrays": "join_bars(out_bar, arrays, axis, 'stack')"})
deflinear("hstack", {"tup": "np.hstack(tup_dot, dtype=dtype)"}, {"tup": "join_bars(out_bar, tup, None, 'hstack')"})
deflinear("vstack", {"tup": "np.vstack(tup_dot, dtype=dtype)"}, {"tup": "join_bars(out_bar, tup, None, 'vstack')"})
# multiple outputs: the tangent is the list of the pieces' tangents; out_bar is a tuple of cotangents
deflinear("split", {"ary": "np.split(ary_dot, indices_or_sections, axis)"},
          {"ary": "split_bar(out_bar, ary, indices_or_sections, axis)"})
deflinear("array_split", {"ary": "np.array_split(ary_dot, indices_or_sections, axis)"},
          {"ary": "split_bar(out_bar, ary, indices_or_sections, axis)"})


# -- batching (vmap) ------------------------------------------------------------------------------
from .registry import set_fields  # noqa: E402

set_fields("ravel", batch=batch_rules.ravel)
set_fields("expand_dims", batch=batch_rules.axes("axis"))
set_fields("squeeze", batch=batch_rules.helper_batched_only("batch_squeeze", "a", "axis"))
for _k in (1, 2, 3):
    set_fields(f"atleast_{_k}d", batch=batch_rules.atleast(_k))
set_fields("broadcast_to", batch=batch_rules.broadcast_to)
set_fields("swapaxes", batch=batch_rules.axes("axis1", "axis2"))
set_fields("moveaxis", batch=batch_rules.axes("source", "destination", operand="a"))
set_fields("flip", batch=batch_rules.axes("axis", operand="m"))
set_fields("tile", batch=batch_rules.helper_batched_only("batch_tile", "A", "reps"))
set_fields("repeat", batch=batch_rules.flattening("batch_repeat", "a", "repeats", "axis"))
set_fields("concatenate", batch=batch_rules.join("arrays"))
set_fields("stack", batch=batch_rules.join("arrays", none_flattens=False))
set_fields("hstack", batch=batch_rules.hvstack(1))
set_fields("vstack", batch=batch_rules.hvstack(2))
set_fields("split", batch=batch_rules.axes("axis", operand="ary"))
set_fields("array_split", batch=batch_rules.axes("axis", operand="ary"))
set_fields("diag", batch=batch_rules.helper_batched_only("batch_diag", "v", "k"))
set_fields("triu", batch=batch_rules.triangle(lower=False))
set_fields("tril", batch=batch_rules.triangle(lower=True))
set_fields("roll", batch=batch_rules.flattening("batch_roll", "a", "shift", "axis"))
