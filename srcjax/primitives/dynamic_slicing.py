"""``srcjax.lax.dynamic_slice`` and ``srcjax.lax.dynamic_update_slice`` (JAX's): a window of static
sizes at start indices that may be data, each start clamped so that the window fits (a negative one first
counted from the end of its axis, ``allow_negative_indices``); their NumPy references are in
``srcjax.lax_slicing``.

Lowered to XLA's ``dynamic_slice``/``dynamic_update_slice`` (which clamp the same way). Derivatives are
JAX's: each is the other's transpose, the start indices carry none. Batched (vmap): one call on the
batched operand where the start indices are the same for every example, else one gather or scatter of
every example's window (``batch_dynamic_slice``/``batch_dynamic_update_slice``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import lax_slicing
from ..core import DTypeError, ShapedArray, ShapeError
from ..lower.hlo import HloValue, aval_type, elem_type
from .common import fmt_shape
from .registry import LowerCtx, defprim, set_fields

_STATIC_HINT = "give the sizes as Python ints (shapes are static): x.shape[0] - 2, not a value computed from data"


def _starts_of(what: str, shape: tuple[int, ...], start_indices: Any) -> list[Any]:
    """The start indices as one entry per axis (a Python int or a scalar value), checked."""
    if isinstance(start_indices, HloValue | ShapedArray | np.ndarray):  # one 1-D integer array
        if len(start_indices.shape) != 1 or start_indices.dtype.kind not in "iu":
            raise DTypeError(f"srcjax.lax.{what}: the start indices must be one integer per axis or a 1-D integer "
                             f"array, not a {start_indices.dtype}{list(start_indices.shape)} array")
        items: list[Any] = [0] * start_indices.shape[0]  # (only their count is read)
    else:
        items = list(start_indices)
    if len(items) != len(shape):
        raise ShapeError(f"srcjax.lax.{what}: an operand of shape {fmt_shape(shape)} needs {len(shape)} start "
                         f"indices, got {len(items)}", hint="give one start index per axis of the operand")
    for s in items:
        array = isinstance(s, HloValue | ShapedArray | np.ndarray | np.generic)
        kind = s.dtype.kind if array else "b" if isinstance(s, bool) else "i" if isinstance(s, int) else "?"
        if kind not in "iu" or array and s.shape != ():
            raise DTypeError(f"srcjax.lax.{what}: each start index must be an integer scalar, got "
                             f"{s.aval.str_short() if isinstance(s, HloValue) else repr(s)}",
                             hint="convert it: i.astype(np.int32)")
    return items


def _check_negative(what: str, start_indices: Any, allow_negative_indices: Any) -> None:
    """JAX's error for a static negative start where ``allow_negative_indices`` is off."""
    if isinstance(start_indices, HloValue | ShapedArray | np.ndarray):
        return
    for k, s in enumerate(start_indices):
        if isinstance(s, int | np.integer) and s < 0 and not lax_slicing.allowed(allow_negative_indices, k):
            raise ShapeError(f"srcjax.lax.{what}: the start index {s} of axis {k} is negative with "
                             "allow_negative_indices=False")


def _ds_stub(operand, start_indices, slice_sizes, *, allow_negative_indices=True):  # type: ignore[no-untyped-def]
    ...


def _ds_abstract(operand: ShapedArray, start_indices: Any, slice_sizes: Any,
                 allow_negative_indices: Any = True) -> ShapedArray:
    _starts_of("dynamic_slice", operand.shape, start_indices)
    _check_negative("dynamic_slice", start_indices, allow_negative_indices)
    sizes = tuple(slice_sizes)
    if len(sizes) != len(operand.shape) or not all(isinstance(n, int | np.integer) for n in sizes):
        raise ShapeError(f"srcjax.lax.dynamic_slice: slice_sizes must be {len(operand.shape)} ints, got "
                         f"{slice_sizes!r}", hint=_STATIC_HINT)
    if any(n < 0 or n > d for n, d in zip(sizes, operand.shape)):
        raise ShapeError(f"srcjax.lax.dynamic_slice: slice_sizes {fmt_shape(sizes)} do not fit in an operand of "
                         f"shape {fmt_shape(operand.shape)}", hint="each size must be between 0 and its axis' length")
    return ShapedArray(tuple(int(n) for n in sizes), operand.dtype)


def lower_starts(ctx: LowerCtx, shape: tuple[int, ...], sizes: tuple[int, ...], start_indices: Any,
                 allow_negative_indices: Any) -> list[HloValue]:
    """The start indices as int64 scalars, negative ones counted from the end where allowed (XLA clamps
    them into the operand itself); static ones clamped here."""
    b = ctx.b
    i64 = np.dtype(np.int64)
    if isinstance(start_indices, np.ndarray):
        start_indices = [int(s) for s in start_indices]
    if isinstance(start_indices, HloValue):
        vec = b.convert(start_indices, i64)
        items: list[Any] = [b.reshape(b.slice(vec, [k], [k + 1]), ()) for k in range(len(shape))]
    else:
        items = list(start_indices)
    out = []
    for k, (s, d, n) in enumerate(zip(items, shape, sizes)):
        allow = lax_slicing.allowed(allow_negative_indices, k)
        if not isinstance(s, HloValue):
            out.append(b.full(int(lax_slicing.clamped_start(int(s), d, n, allow)), (), i64))
            continue
        if s.literal is not None:
            out.append(b.full(int(lax_slicing.clamped_start(int(s.literal), d, n, allow)), (), i64))
            continue
        unsigned = s.dtype.kind == "u"
        s = b.convert(s, i64)
        if allow and not unsigned:
            neg = b.compare("LT", s, b.full(0, (), i64))
            s = b.select(neg, b.binary("add", s, b.full(d, (), i64)), s)
        out.append(s)
    return out


def _ds_lower(ctx: LowerCtx, operand: HloValue, start_indices: Any, slice_sizes: Any,
              allow_negative_indices: Any = True) -> HloValue:
    b = ctx.b
    out = ctx.avals_out[0]
    x = b.full(operand.literal, operand.shape, operand.dtype) if operand.literal is not None else operand
    if out.shape == x.shape:
        return x
    starts = lower_starts(ctx, x.shape, out.shape, start_indices, allow_negative_indices)
    return b.dynamic_slice(x, starts, out.shape)


def _dus_stub(operand, update, start_indices, *, allow_negative_indices=True):  # type: ignore[no-untyped-def]
    ...


def _dus_abstract(operand: ShapedArray, update: ShapedArray, start_indices: Any,
                  allow_negative_indices: Any = True) -> ShapedArray:
    _starts_of("dynamic_update_slice", operand.shape, start_indices)
    _check_negative("dynamic_update_slice", start_indices, allow_negative_indices)
    if len(update.shape) != len(operand.shape) or any(n > d for n, d in zip(update.shape, operand.shape)):
        raise ShapeError(f"srcjax.lax.dynamic_update_slice: an update of shape {fmt_shape(update.shape)} does not fit "
                         f"in an operand of shape {fmt_shape(operand.shape)}",
                         hint="the update has the operand's rank and no longer axes")
    if update.dtype != operand.dtype and not update.weak_type:
        raise DTypeError(f"srcjax.lax.dynamic_update_slice: the update is {update.dtype} and the operand "
                         f"{operand.dtype} (JAX requires the same dtype)",
                         hint=f"convert it: update.astype(np.{operand.dtype})")
    return ShapedArray(operand.shape, operand.dtype)


def _dus_lower(ctx: LowerCtx, operand: HloValue, update: HloValue, start_indices: Any,
               allow_negative_indices: Any = True) -> HloValue:
    b = ctx.b
    out = ctx.avals_out[0]
    x = b.full(operand.literal, operand.shape, operand.dtype) if operand.literal is not None else operand
    u = b.broadcast_to(b.convert(update, out.dtype), update.shape)
    if u.literal is not None:
        u = b.full(u.literal, u.shape, out.dtype)
    if u.shape == x.shape:
        return u
    starts = lower_starts(ctx, x.shape, u.shape, start_indices, allow_negative_indices)
    idx = ", ".join(s.name for s in starts)
    types = ", ".join(aval_type(s.aval) for s in starts)
    return b.emit(f"stablehlo.dynamic_update_slice {x.name}, {u.name}, {idx} : "
                  f"({aval_type(x.aval)}, {aval_type(u.aval)}, {types}) -> {aval_type(out)}", out)


def _wg_stub(operand, starts, slice_sizes, allow_negative_indices=True):  # type: ignore[no-untyped-def]
    ...


def _check_windows(what: str, shape: tuple[int, ...], starts: ShapedArray, sizes: tuple[int, ...]) -> None:
    if len(starts.shape) != 2 or starts.shape[1] != len(shape) or starts.dtype.kind not in "iu" or \
            len(sizes) != len(shape) or any(n < 0 or n > d for n, d in zip(sizes, shape)):
        raise ShapeError(f"{what}: starts {starts.str_short()} and windows {fmt_shape(sizes)} do not fit an "
                         f"array of shape {fmt_shape(shape)}")


def _wg_abstract(operand: ShapedArray, starts: ShapedArray, slice_sizes: Any,
                 allow_negative_indices: Any = True) -> ShapedArray:
    sizes = tuple(int(n) for n in slice_sizes)
    _check_windows("window_gather", operand.shape, starts, sizes)
    return ShapedArray((starts.shape[0], *sizes), operand.dtype)


def _window_starts(ctx: LowerCtx, starts: HloValue, shape: tuple[int, ...], sizes: tuple[int, ...],
                   allow_negative_indices: Any) -> HloValue:
    """The (B, rank) start rows as int64, negative ones counted from the end where allowed, clamped so
    that each window fits (a scatter does not clamp them itself, a gather does)."""
    b = ctx.b
    i64 = np.dtype(np.int64)
    s = b.convert(starts, i64)
    wrap = np.array([d if lax_slicing.allowed(allow_negative_indices, k) else 0 for k, d in enumerate(shape)], i64)
    if wrap.any():
        neg = b.compare("LT", s, b.full(0, s.shape, i64))
        s = b.select(neg, b.binary("add", s, b.constant(np.broadcast_to(wrap, s.shape).copy(), s.aval)), s)
    hi = np.array([d - n for d, n in zip(shape, sizes)], i64)
    return b.clamp(b.full(0, s.shape, i64), s, b.constant(np.broadcast_to(hi, s.shape).copy(), s.aval))


def _wg_lower(ctx: LowerCtx, operand: HloValue, starts: HloValue, slice_sizes: Any,
              allow_negative_indices: Any = True) -> HloValue:
    """One ``stablehlo.gather`` of a window per row of ``starts``."""
    b = ctx.b
    out = ctx.avals_out[0]
    x = b.full(operand.literal, operand.shape, operand.dtype) if operand.literal is not None else operand
    n = len(x.shape)
    s = _window_starts(ctx, starts, x.shape, out.shape[1:], allow_negative_indices)
    return b.emit(
        f'"stablehlo.gather"({x.name}, {s.name}) {{dimension_numbers = #stablehlo.gather<'
        f"offset_dims = {list(range(1, n + 1))}, collapsed_slice_dims = [], start_index_map = {list(range(n))}, "
        f"index_vector_dim = 1>, indices_are_sorted = false, "
        f"slice_sizes = array<i64: {', '.join(str(d) for d in out.shape[1:])}>}} : "
        f"({aval_type(x.aval)}, {aval_type(s.aval)}) -> {aval_type(out)}", out)


def _wsa_stub(g, starts, shape, allow_negative_indices=True):  # type: ignore[no-untyped-def]
    ...


def _wsa_abstract(g: ShapedArray, starts: ShapedArray, shape: Any, allow_negative_indices: Any = True) -> ShapedArray:
    full = tuple(int(d) for d in shape)
    _check_windows("window_scatter_add", full, starts, g.shape[1:])
    return ShapedArray(full, g.dtype)


def _wsa_lower(ctx: LowerCtx, g: HloValue, starts: HloValue, shape: Any,
               allow_negative_indices: Any = True) -> HloValue:
    """One ``stablehlo.scatter`` adding each window of ``g`` into zeros at its (clamped) start row."""
    b = ctx.b
    out = ctx.avals_out[0]
    u = b.broadcast_to(b.convert(g, out.dtype), g.shape)
    if u.literal is not None:
        u = b.full(u.literal, u.shape, out.dtype)
    n = len(out.shape)
    s = _window_starts(ctx, starts, out.shape, u.shape[1:], allow_negative_indices)
    z = b.full(0, out.shape, out.dtype)
    scalar = f"tensor<{elem_type(out.dtype)}>"
    old, new, res, name = b.fresh(), b.fresh(), b.fresh(), b.fresh()
    op = "or" if out.dtype == np.bool_ else "add"
    b.lines += [f'{b.indent}{name} = "stablehlo.scatter"({z.name}, {s.name}, {u.name}) ({{',
                f"{b.indent}  ^bb0({old}: {scalar}, {new}: {scalar}):",
                f"{b.indent}    {res} = stablehlo.{op} {old}, {new} : {scalar}",
                f"{b.indent}    stablehlo.return {res} : {scalar}",
                f"{b.indent}}}) {{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<"
                f"update_window_dims = {list(range(1, n + 1))}, inserted_window_dims = [], "
                f"scatter_dims_to_operand_dims = {list(range(n))}, index_vector_dim = 1>, "
                f"unique_indices = false}} : ({aval_type(z.aval)}, {aval_type(s.aval)}, {aval_type(u.aval)}) "
                f"-> {aval_type(out)}"]
    return HloValue(name, out)


_NEG = "allow_negative_indices=allow_negative_indices"
defprim("dynamic_slice", lax_slicing.dynamic_slice, _ds_stub, abstract_eval=_ds_abstract, lower=_ds_lower,
        arrays=("operand",), path="srcjax.lax.dynamic_slice", positional=3, static_eval=False,
        mixed=("start_indices",),
        jvp={"operand": f"srcjax.lax.dynamic_slice(operand_dot, start_indices, slice_sizes, {_NEG})"},
        vjp={"operand": f"srcjax.lax.dynamic_update_slice(zeros_like(operand), out_bar, start_indices, {_NEG})"})
defprim("dynamic_update_slice", lax_slicing.dynamic_update_slice, _dus_stub, abstract_eval=_dus_abstract,
        lower=_dus_lower, arrays=("operand", "update"), path="srcjax.lax.dynamic_update_slice", positional=3,
        static_eval=False, mixed=("start_indices",),
        jvp={"operand": f"srcjax.lax.dynamic_update_slice(operand_dot, zeros_like(update), start_indices, {_NEG})",
             "update": f"srcjax.lax.dynamic_update_slice(zeros_like(operand), update_dot, start_indices, {_NEG})"},
        jvp_joint=f"srcjax.lax.dynamic_update_slice(operand_dot, update_dot, start_indices, {_NEG})",
        vjp={"operand": f"srcjax.lax.dynamic_update_slice(out_bar, zeros_like(update), start_indices, {_NEG})",
             "update": f"srcjax.lax.dynamic_slice(out_bar, start_indices, np.shape(update), {_NEG})"})
set_fields("dynamic_slice", static_hint=_STATIC_HINT)
# vmap of dynamic_slice over start indices, of a shared operand: every window in one gather, and its transpose
_WG, _WSA = "srcjax.lax_slicing.window_gather", "srcjax.lax_slicing.window_scatter_add"
defprim("window_gather", lax_slicing.window_gather, _wg_stub, abstract_eval=_wg_abstract, lower=_wg_lower,
        arrays=("operand", "starts"), path=_WG, positional=4, static_eval=False, nondiff_args=("starts",),
        jvp={"operand": f"{_WG}(operand_dot, starts, slice_sizes, allow_negative_indices)"},
        vjp={"operand": f"{_WSA}(out_bar, starts, np.shape(operand), allow_negative_indices)"})
defprim("window_scatter_add", lax_slicing.window_scatter_add, _wsa_stub, abstract_eval=_wsa_abstract,
        lower=_wsa_lower, arrays=("g", "starts"), path=_WSA, positional=4, static_eval=False,
        nondiff_args=("starts",), jvp={"g": f"{_WSA}(g_dot, starts, shape, allow_negative_indices)"},
        vjp={"g": f"{_WG}(out_bar, starts, np.shape(g)[1:], allow_negative_indices)"})
set_fields("window_gather", batch=lambda c: c.per_example())  # (vmap of vmap: per example)
set_fields("window_scatter_add", batch=lambda c: c.per_example())


# -- batching (vmap): the helpers take the batch size and which operands are batched ---------------------

def _batch_slice(c: Any) -> str:
    a = c.args
    return (f"batch_dynamic_slice({a['operand']}, {a['start_indices']}, {a['slice_sizes']}, "
            f"allow_negative_indices={a.get('allow_negative_indices', 'True')}, size={c.size}, "
            f"operand_batched={c.batched('operand')}, starts_batched={c.batched('start_indices')})")


def _batch_update(c: Any) -> str:
    a = c.args
    return (f"batch_dynamic_update_slice({a['operand']}, {a['update']}, {a['start_indices']}, "
            f"allow_negative_indices={a.get('allow_negative_indices', 'True')}, size={c.size}, "
            f"operand_batched={c.batched('operand')}, update_batched={c.batched('update')}, "
            f"starts_batched={c.batched('start_indices')})")


set_fields("dynamic_slice", batch=_batch_slice)
set_fields("dynamic_update_slice", batch=_batch_update)
