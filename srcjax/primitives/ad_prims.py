"""Functional index updates: ``index_add`` (the transpose of indexing, for derivative code) and
``index_update`` (``x[key] = value``, written by srcjax for assignments to array elements)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import adjoint, branch_guard, index_writes, lax, pytree
from ..core import DTypeError, ShapedArray, ShapeError
from ..lower.hlo import HloValue, aval_type, is_inexact
from . import batch_rules, gather
from .common import broadcast_shapes, fmt_shape, normalize_axes
from .elementwise import result_dtype
from .registry import LowerCtx, deflinear, defprim, nondiff, set_fields
from .shape import array_keys, getitem_abstract, index_plan


def _index_add_stub(z, key, g, /, mode="drop"):  # type: ignore[no-untyped-def]
    ...


MODES = ("drop", "clip")  # an index out of range adds nothing (a write's) or at the clamped place (a read's transpose)


def _index_add_abstract(z: ShapedArray, key: Any, g: ShapedArray, mode: str = "drop") -> ShapedArray:
    if mode not in MODES:
        raise ValueError(f"index_add: mode must be one of {MODES}, not {mode!r}")
    sub = getitem_abstract(z, key)
    if broadcast_shapes(sub.shape, g.shape) != sub.shape:
        raise ShapeError(f"index_add: cannot add a value of shape {fmt_shape(g.shape)} into a selection of "
                         f"shape {fmt_shape(sub.shape)}")
    return ShapedArray(z.shape, result_dtype(z, g))


def _index_add_lower(ctx: LowerCtx, z: HloValue, key: Any, g: HloValue, mode: str = "drop") -> HloValue:
    """One scatter-add (index arrays) or a padding of ``g`` placed by ``dynamic_update_slice`` (run-time integers),
    added to ``z``. An index out of range: dropped (``mode="drop"``: the scatter skips it, a ``select`` on
    :func:`_lands` for integers) or clamped (``"clip"``: the index arrays clamped first; ``dynamic_update_slice``
    clamps its start itself)."""
    b = ctx.b
    out = ctx.avals_out[0]
    key = array_keys(key)
    if gather.is_advanced(key):  # a scatter that adds (repeated indices accumulate) into the sliced view
        basic, whole = gather.basic_part(key, z.shape)
        if whole:
            return gather.lower_scatter(b, b.convert(z, out.dtype), key, g, add=True, clip=mode == "clip")
        view = getitem_abstract(ShapedArray(z.shape, out.dtype), basic)
        sub_key = tuple(e[1] if e[0] == "index" else slice(None) for e in gather.plan(z.shape, key).entries)
        placed = gather.lower_scatter(b, b.full(0, view.shape, out.dtype), sub_key, g, add=True, clip=mode == "clip")
        return _index_add_lower(ctx, z, basic, placed)
    plan = index_plan(z.shape, key)
    sub = getitem_abstract(z.aval, key)
    gv = b.broadcast_to(b.convert(g, out.dtype), sub.shape)
    # g's shape with one entry per indexed axis (ints -> 1, new axes dropped)
    per_axis = [1 if kind in ("int", "dyn") else len(range(*v)) for kind, v in plan if kind != "new"]
    gv = b.reshape(gv, tuple(per_axis))
    low, high, interior, rev = [], [], [], []
    axis = 0
    for kind, v in plan:
        if kind == "new":
            continue
        d = z.shape[axis]
        if kind == "int":
            low.append(v)
            high.append(d - v - 1)
            interior.append(0)
        elif kind == "dyn":
            low.append(0)
            high.append(0)
            interior.append(0)
        else:
            start, stop, step = v
            n = len(range(start, stop, step))
            if n == 0:
                return b.convert(z, out.dtype)
            first = start if step > 0 else start + (n - 1) * step
            if step < 0:
                rev.append(axis)
            st = abs(step)
            low.append(first)
            high.append(d - (first + (n - 1) * st + 1))
            interior.append(st - 1)
        axis += 1
    gv = b.reverse(gv, rev)
    zero = b.full(0, (), out.dtype)
    padded = b.pad(gv, zero, low, high, interior) if (any(low) or any(high) or any(interior)) else gv
    zc = b.convert(z, out.dtype)
    dyn = [k for k in key if isinstance(k, HloValue)]
    if dyn:
        it = iter(dyn)
        starts = []
        axis = 0
        i64 = np.dtype(np.int64)
        for kind, _ in plan:
            if kind == "new":
                continue
            if kind == "dyn":
                k = b.convert(next(it), i64)
                neg = b.compare("LT", k, b.full(0, (), i64))
                k = b.select(neg, b.binary("add", k, b.full(z.shape[axis], (), i64)), k)
                starts.append(k)
            else:
                starts.append(b.full(0, (), i64))
            axis += 1
        zeros = b.full(0, z.shape, out.dtype)
        idx = ", ".join(s.name for s in starts)
        types = ", ".join(aval_type(s.aval) for s in starts)
        padded = b.emit(f"stablehlo.dynamic_update_slice {zeros.name}, {padded.name}, {idx} : "
                        f"({aval_type(zeros.aval)}, {aval_type(padded.aval)}, {types}) -> {aval_type(out)}", out)
        ok = _lands(b, z.shape, key) if mode == "drop" else None  # (a run-time integer out of range: nothing
        added = b.binary("add", zc, padded)  # added, as the scatter's skipped update; "clip": the clamped place)
        return added if ok is None else b.select(ok, added, zc)
    return b.binary("add", zc, padded)


def _index_update_stub(x, key, value, /):  # type: ignore[no-untyped-def]
    ...


def _index_update_abstract(x: ShapedArray, key: Any, value: ShapedArray) -> ShapedArray:
    sub = getitem_abstract(x, key)
    if broadcast_shapes(sub.shape, value.shape) != sub.shape:
        raise ShapeError(f"cannot assign a value of shape {fmt_shape(value.shape)} to a selection of shape "
                         f"{fmt_shape(sub.shape)}")
    if value.dtype.kind == "f" and x.dtype.kind in "biu" or value.dtype.kind in "iu" and x.dtype.kind == "b" or \
            value.dtype.kind == "c" and x.dtype.kind != "c":
        if not value.weak_type:  # NumPy casts silently; refuse the lossy direction for arrays
            raise DTypeError(f"assigning {value.dtype} values into a {x.dtype} array would truncate them",
                             hint=f"convert explicitly: value.astype(np.{x.dtype})")
    # (a buffer of a Python number's rows, as lax.scan stacks a weak carry: weak while every write is)
    return ShapedArray(x.shape, x.dtype, weak_type=x.weak_type and value.weak_type)


def _lands(b: Any, shape: tuple[int, ...], key: tuple[Any, ...]) -> HloValue | None:
    """Whether every run-time integer of the basic ``key`` is in range of its axis (``[-d, d)``), a boolean scalar;
    None where it has none. A write where one is not is dropped (srcjax/index_writes.py: JAX's rule; was clamped by
    ``dynamic_update_slice``, while an index array's scatter dropped it)."""
    i64 = np.dtype(np.int64)
    dyn = iter(k for k in key if isinstance(k, HloValue))
    ok = None
    axis = 0
    for kind, _ in index_plan(shape, key):
        if kind == "new":
            continue
        if kind == "dyn":
            k = b.convert(next(dyn), i64)
            inside = b.binary("and", b.compare("GE", k, b.full(-shape[axis], (), i64)),
                              b.compare("LT", k, b.full(shape[axis], (), i64)))
            ok = inside if ok is None else b.binary("and", ok, inside)
        axis += 1
    return ok


def _index_update_lower(ctx: LowerCtx, x: HloValue, key: Any, value: HloValue) -> HloValue:
    """A contiguous selection (ints, step-1 slices): one ``dynamic_update_slice``; otherwise a mask
    built like ``index_add``'s padding and a ``select``; ``x`` itself where a run-time integer index is out of
    range (:func:`_lands`)."""
    key = array_keys(key)
    written = _index_update_written(ctx, x, key, value)
    ok = None if gather.is_advanced(key) or written is x else _lands(ctx.b, x.shape, key)
    return written if ok is None else ctx.b.select(ok, written, x)


def _index_update_written(ctx: LowerCtx, x: HloValue, key: Any, value: HloValue) -> HloValue:
    b = ctx.b
    out = ctx.avals_out[0]
    key = array_keys(key)
    if gather.is_advanced(key):
        basic, whole = gather.basic_part(key, x.shape)
        if not whole:
            raise ShapeError("assigning through integer-array indices mixed with slices is not supported",
                             hint="assign through the arrays alone (x[rows, cols] = v), or build the array with "
                                  "np.where")
        return gather.lower_scatter(b, x, key, value, add=False)
    plan = index_plan(x.shape, key)
    sub = getitem_abstract(x.aval, key)
    v = b.broadcast_to(b.convert(value, out.dtype), sub.shape)
    contiguous = all(kind != "slice" or val[2] == 1 for kind, val in plan)
    if contiguous:
        sizes, starts = [], []
        i64 = np.dtype(np.int64)
        dyn = iter(k for k in key if isinstance(k, HloValue))
        axis = 0
        for kind, val in plan:
            if kind == "new":
                continue
            d = x.shape[axis]
            if kind == "int":
                sizes.append(1)
                starts.append(b.full(val, (), i64))
            elif kind == "dyn":
                k = b.convert(next(dyn), i64)
                neg = b.compare("LT", k, b.full(0, (), i64))
                sizes.append(1)
                starts.append(b.select(neg, b.binary("add", k, b.full(d, (), i64)), k))
            else:
                start, stop, _ = val
                n = len(range(start, stop))
                if n == 0:
                    return x
                sizes.append(n)
                starts.append(b.full(start, (), i64))
            axis += 1
        v = b.reshape(v, tuple(sizes))
        idx = ", ".join(s.name for s in starts)
        types = ", ".join(aval_type(s.aval) for s in starts)
        return b.emit(f"stablehlo.dynamic_update_slice {x.name}, {v.name}, {idx} : "
                      f"({aval_type(x.aval)}, {aval_type(v.aval)}, {types}) -> {aval_type(out)}", out)
    ones = b.full(1, sub.shape, out.dtype)
    zeros = b.full(0, x.shape, out.dtype)
    sub_ctx = LowerCtx(b, [out])
    placed = _index_add_lower(sub_ctx, HloValue(zeros.name, zeros.aval), key, v)
    mask_f = _index_add_lower(sub_ctx, HloValue(zeros.name, zeros.aval), key, ones)
    mask = b.compare("NE", mask_f, zeros)
    return b.select(mask, placed, x)


defprim("index_add", adjoint.index_add, _index_add_stub, abstract_eval=_index_add_abstract,
        lower=_index_add_lower, arrays=("z", "g"), path="index_add", static_eval=False, mixed=("key",),
        tree=adjoint.tree_index_add,  # a container z: its cotangent (``p["w"]``, ``params[-1]``)
        jvp_joint="index_add(z_dot, key, g_dot, mode)")  # linear in (z, g) together (a container z: no `+`)
defprim("index_update", lax.index_update, _index_update_stub, abstract_eval=_index_update_abstract,
        lower=_index_update_lower, arrays=("x", "value"), path="srcjax.lax.index_update", static_eval=False,
        mixed=("key",), tree=pytree.tree_set,  # a dict or list x (`out["w"] = v`): the item replaced
        jvp_joint="index_update(x_dot, key, value_dot)")  # linear in (x, value) together



def _index_cleared_stub(g, x, key, /):  # type: ignore[no-untyped-def]
    ...


def _index_cleared_abstract(g: ShapedArray, x: ShapedArray, key: Any) -> ShapedArray:
    getitem_abstract(g, key)
    return ShapedArray(g.shape, g.dtype)


def _index_cleared_lower(ctx: LowerCtx, g: HloValue, x: HloValue, key: Any) -> HloValue:
    return _index_update_lower(ctx, g, key, ctx.b.full(0, (), ctx.avals_out[0].dtype))


defprim("index_cleared", adjoint.index_cleared, _index_cleared_stub, abstract_eval=_index_cleared_abstract,
        lower=_index_cleared_lower, arrays=("g", "x"), nondiff_args=("x",), path="index_cleared",
        static_eval=False, mixed=("key",), tree=adjoint.tree_cleared)  # index_update's cotangent for x


def _winning_writes_stub(x, key, /):  # type: ignore[no-untyped-def]
    ...


def _winning_writes_abstract(x: ShapedArray, key: Any) -> ShapedArray:
    return ShapedArray(getitem_abstract(x, key).shape, np.dtype(np.bool_))


def _winning_writes_lower(ctx: LowerCtx, x: HloValue, key: Any) -> HloValue:
    """Each write's id compared with the id of the write that lands where it writes (the order-free
    :func:`gather.landed_ids`, the scatter ``index_update`` itself uses); all true for keys that cannot repeat."""
    b = ctx.b
    out = ctx.avals_out[0]
    if not isinstance(key, tuple):
        key = (key,)
    if not gather.can_repeat(key):  # (each lands, but where a run-time integer is out of range: none)
        ok = None if gather.is_advanced(key) else _lands(b, x.shape, array_keys(key))
        return b.full(True, out.shape, out.dtype) if ok is None else b.broadcast_to(ok, out.shape)
    if not gather.basic_part(key, x.shape)[1]:
        raise ShapeError("assigning through integer-array indices mixed with slices is not supported",
                         hint="assign through the arrays alone (x[rows, cols] = v), or build the array with np.where")
    i32 = np.dtype(np.int32)
    ids = b.reshape(b.iota(ShapedArray((int(np.prod(out.shape)),), i32), 0), out.shape)
    return b.compare("EQ", gather.landed_ids(b, x.shape, key), ids)


defprim("winning_writes", adjoint.winning_writes, _winning_writes_stub, abstract_eval=_winning_writes_abstract,
        lower=_winning_writes_lower, arrays=("x",), path="winning_writes", static_eval=False, mixed=("key",),
        tree=index_writes.written_once)  # (which writes of `x[key] = v` land: index_update's cotangent of v)
nondiff("winning_writes")


def _index_lands_stub(x, key, /):  # type: ignore[no-untyped-def]
    ...


def _index_lands_lower(ctx: LowerCtx, x: HloValue, key: Any) -> HloValue:
    """Whether each write of ``index_add(x, key, g)`` lands: run-time integers' :func:`_lands` broadcast, or
    index arrays' entries in range (:func:`gather.lower_in_range`); all true for a key of constants."""
    b = ctx.b
    out = ctx.avals_out[0]
    key = array_keys(key if isinstance(key, tuple) else (key,))
    if gather.is_advanced(key):
        return gather.lower_in_range(b, x.shape, key, out)
    ok = _lands(b, x.shape, key)
    return b.full(True, out.shape, out.dtype) if ok is None else b.broadcast_to(ok, out.shape)


defprim("index_lands", index_writes.index_lands, _index_lands_stub, abstract_eval=_winning_writes_abstract,
        lower=_index_lands_lower, arrays=("x",), path="index_lands", static_eval=False, mixed=("key",),
        tree=index_writes.written_once)  # (which writes of `index_add(x, key, g)` land: its cotangent of g)
nondiff("index_lands")


# -- the shape moves of derivative code: linear maps with their own rules ----------------------------
# ``unbroadcast`` (sum a cotangent over broadcast axes), ``broadcast_like`` (broadcast a tangent) and
# ``expand_reduced`` (undo a reduction's shape) are primitives rather than helpers whose source srcjax
# differentiates: a derivative of derivative code applies their rules (each is the other's transpose;
# ``expand_reduced``'s is a sum) instead of saving their internals on a tape. The second operand
# gives only a shape.

def _unbroadcast_stub(g, x, /):  # type: ignore[no-untyped-def]
    ...


def _unbroadcast_axes(gshape: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    lead = len(gshape) - len(shape)
    if lead < 0 or any(d not in (1, e) for d, e in zip(shape, gshape[lead:])):
        raise ShapeError(f"unbroadcast: a value of shape {fmt_shape(gshape)} is not a broadcast of shape "
                         f"{fmt_shape(shape)}")
    return tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and gshape[lead + i] != 1)


def _typed_like(shape: tuple[int, ...], g: ShapedArray, x: ShapedArray) -> ShapedArray:
    """``g`` of ``shape``, in ``x``'s dtype when both are floating point (``adjoint.typed_like``), weakly
    typed where ``x`` is (a Python number's cotangent: a float32 cotangent on another path wins the join, as
    for ``acc = 0.0`` then ``acc = acc + x32[i]`` differentiated through a branch on data)."""
    if g.dtype != x.dtype and is_inexact(g.dtype) and is_inexact(x.dtype):
        return ShapedArray(shape, x.dtype, weak_type=x.weak_type)
    return ShapedArray(shape, g.dtype, weak_type=g.weak_type)


def _unbroadcast_abstract(g: ShapedArray, x: ShapedArray) -> ShapedArray:
    _unbroadcast_axes(g.shape, x.shape)
    return _typed_like(x.shape, g, x)


def _unbroadcast_lower(ctx: LowerCtx, g: HloValue, x: HloValue) -> HloValue:
    out = ctx.avals_out[0]
    g = ctx.b.convert(g, out.dtype)  # (a float32 operand's cotangent of a float64 result: a downcast first)
    if g.shape == out.shape:
        return g
    summed = ctx.b.reduce(g, "add", 0, _unbroadcast_axes(g.shape, out.shape))
    return ctx.b.reshape(summed, out.shape)


def _broadcast_like_stub(t, y, /):  # type: ignore[no-untyped-def]
    ...


def _broadcast_like_abstract(t: ShapedArray, y: ShapedArray) -> ShapedArray:
    out = _typed_like(y.shape, t, y)
    if t.shape == y.shape:
        return t if out.dtype == t.dtype else out
    _unbroadcast_axes(y.shape, t.shape)
    return out


def _broadcast_like_lower(ctx: LowerCtx, t: HloValue, y: HloValue) -> HloValue:
    out = ctx.avals_out[0]
    return ctx.b.broadcast_to(ctx.b.convert(t, out.dtype), out.shape)


def _expand_reduced_stub(g, a, axis, keepdims, /):  # type: ignore[no-untyped-def]
    ...


def _kept_shape(a: ShapedArray, axis: Any) -> tuple[int, ...]:
    axes = normalize_axes(axis, a.ndim) if a.ndim or axis is None else ()
    return tuple(1 if i in axes else d for i, d in enumerate(a.shape))


def _expand_reduced_abstract(g: ShapedArray, a: ShapedArray, axis: Any, keepdims: Any) -> ShapedArray:
    kept = _kept_shape(a, axis)
    if g.size != int(np.prod(kept)) if not keepdims else broadcast_shapes(g.shape, kept) != kept:
        raise ShapeError(f"expand_reduced: a value of shape {fmt_shape(g.shape)} is not the reduction of shape "
                         f"{fmt_shape(a.shape)} over axis {axis!r}")
    return _typed_like(a.shape, g, a)


def _expand_reduced_lower(ctx: LowerCtx, g: HloValue, a: HloValue, axis: Any, keepdims: Any) -> HloValue:
    kept = _kept_shape(a.aval, axis)
    g = ctx.b.convert(g, ctx.avals_out[0].dtype)
    if g.shape != kept and not keepdims:
        g = ctx.b.reshape(g, kept)
    return ctx.b.broadcast_to(g, ctx.avals_out[0].shape)


defprim("unbroadcast", adjoint.unbroadcast, _unbroadcast_stub, abstract_eval=_unbroadcast_abstract,
        lower=_unbroadcast_lower, arrays=("g", "x"), path="unbroadcast", tree=adjoint.first_of,
        nondiff_args=("x",))  # (x gives the shape)
# (None, no derivative, stays None, as a container's cotangent stays as it is: an integer counter's in a loop on data)
set_fields("unbroadcast", through=(None,))
defprim("broadcast_like", adjoint.broadcast_like, _broadcast_like_stub, abstract_eval=_broadcast_like_abstract,
        lower=_broadcast_like_lower, arrays=("t", "y"), path="broadcast_like", tree=adjoint.first_of,
        nondiff_args=("y",))


def _static_flag(values: list[Any]) -> Any:
    """A static flag repeated along a batch axis (``batch_broadcast_items(h.shape == z.shape, n)`` on a tape vmap
    batches) stays static, so ``if batch_static(flag)`` stays a Python ``if``; None for anything else."""
    from ..lower.values import is_dynamic
    if len(values) != 2:
        return None
    t, y = values
    if isinstance(t, (bool, np.bool_)) or isinstance(t, np.ndarray) and t.dtype == np.bool_:  # (y: only the shape)
        try:
            return np.broadcast_to(t, y.aval.shape if is_dynamic(y) else np.shape(y))
        except ValueError:  # (not broadcastable: the abstract evaluation's error, located)
            return None
    return None


set_fields("broadcast_like", through=(None,), fold=_static_flag)
defprim("expand_reduced", adjoint.expand_reduced, _expand_reduced_stub, abstract_eval=_expand_reduced_abstract,
        lower=_expand_reduced_lower, arrays=("g", "a"), path="expand_reduced", positional=4,
        nondiff_args=("a",))


# -- derivatives: linear --------------------------------------------------------------------------------
deflinear("index_add", {"z": "broadcast_like(z_dot, out)", "g": "index_add(zeros_like(z), key, g_dot, mode)"},
          {"z": "unbroadcast(out_bar, z)", "g": "unbroadcast(np.where(index_lands(z, key), out_bar[key], 0.0), g)"})


def clips(args: Mapping[str, Any]) -> bool:
    """Whether a call's (source-text) arguments name ``mode="clip"`` (index_add's, batch_index_add's)."""
    return str(args.get("mode", "")).strip("'\"") == "clip"


# (a clamped add's transpose is the read that clamps, every place landing: no index_lands mask)
set_fields("index_add", vjp_when=lambda args: {"g": "unbroadcast(out_bar[key], g)"} if clips(args) else {})
deflinear("index_update", {"x": "index_update(x_dot, key, 0.0)",
                           "value": "index_update(zeros_like(x), key, value_dot)"},
          {"x": "index_cleared(out_bar, x, key)",
           "value": "unbroadcast(np.where(winning_writes(x, key), tree_get(out_bar, key), 0.0), value)"})
# (templates.py writes them `index_update(out_bar, key, 0.0)` and `out_bar[key]` unless the key is a string: a
# container's item, which a record reads by name and an assignment may add)
deflinear("index_cleared", {"g": "index_cleared(g_dot, x, key)"},  # (its transpose: g's structure, g[key] zero)
          {"g": "index_cleared(out_bar, g, key)"})

# -- derivative code's shape moves (srcjax.adjoint): linear, each the transpose of the other ---------------
deflinear("unbroadcast", {"g": "unbroadcast(g_dot, x)"}, {"g": "broadcast_like(out_bar, g)"})
deflinear("broadcast_like", {"t": "broadcast_like(t_dot, y)"}, {"t": "unbroadcast(out_bar, t)"})
deflinear("expand_reduced", {"g": "expand_reduced(g_dot, a, axis, keepdims)"},
          {"g": "unbroadcast(np.sum(out_bar, axis=axis, keepdims=keepdims), g)"})


# -- batching (vmap) ------------------------------------------------------------------------------
set_fields("index_add", batch=batch_rules.keyed("batch_index_add", "z", "key", "g", mode=True))
set_fields("index_update", batch=batch_rules.keyed("batch_index_update", "x", "key", "value"))
set_fields("index_cleared", batch=batch_rules.keyed("batch_index_cleared", "g", "key", "x"))
set_fields("winning_writes", batch=batch_rules.keyed("batch_winning_writes", "x", "key", None))
set_fields("index_lands", batch=batch_rules.keyed("batch_index_lands", "x", "key", None))
set_fields("unbroadcast", batch=batch_rules.helper("batch_unbroadcast", "g", "x"))
set_fields("broadcast_like", batch=batch_rules.helper("batch_broadcast_like", "t", "y"))
set_fields("expand_reduced", batch=batch_rules.helper("batch_expand_reduced", "g", "a", "axis", "keepdims"))


# -- taken: a value a branch on batched data reads (srcjax/branch_guard.py) ----------------------------
# Its value and tangent are ``x``'s; its cotangent is ``out_bar`` where the examples take the branch and
# exactly zero elsewhere (a select: an untaken branch's NaN or infinite cotangent does not reach ``x``).

def _taken_stub(x, pred, keep=True, /):  # type: ignore[no-untyped-def]
    ...


def _taken_abstract(x: ShapedArray, pred: ShapedArray, keep: bool = True) -> ShapedArray:
    if pred.shape != x.shape[:len(pred.shape)]:
        raise ShapeError(f"taken: a test of shape {fmt_shape(pred.shape)} does not lead a value of shape "
                         f"{fmt_shape(x.shape)}")
    return x


def _taken_vjp(args: Mapping[str, Any]) -> dict[str, str]:
    """The other branch's (``keep`` not the default ``True``): ``taken_bar(out_bar, pred, False)``."""
    keep = str(args.get("keep", True))
    return {} if keep == "True" else {"x": f"taken_bar(out_bar, pred, {keep})"}


def _taken_batch(c: batch_rules.BatchCall) -> str:
    """Both operands batched (the test's axes lead the value's, as before)."""
    return c.call(**{p: f"batch_broadcast({c.args[p]}, {c.size})" for p in ("x", "pred") if not c.batched(p)})


defprim("taken", branch_guard.taken, _taken_stub, abstract_eval=_taken_abstract, lower=lambda ctx, x, pred, keep: x,
        arrays=("x", "pred"), nondiff_args=("pred",), path="taken", static_eval=False, positional=2,
        tree=branch_guard.tree_taken,  # (a container whose structure the batcher's state does not show: leaf by leaf)
        jvp={"x": "x_dot"}, vjp={"x": "taken_bar(out_bar, pred)"})
set_fields("taken", batch=_taken_batch, vjp_when=_taken_vjp, through=(adjoint.UNSET,))  # (a value saved for the adjoint
# that the path of these examples leaves UNSET: vmap's broadcast of it for a batched branch is UNSET too)


def _taken_bar_stub(g, pred, keep=True, /):  # type: ignore[no-untyped-def]
    ...


def _taken_bar_abstract(g: ShapedArray, pred: ShapedArray, keep: bool = True) -> ShapedArray:
    """``np.where(mask, g, 0.0)`` with ``pred`` leading ``g`` (``mask``: its axes, then ones)."""
    mask = pred.shape + (1,) * (g.ndim - pred.ndim)
    return ShapedArray(broadcast_shapes(mask, g.shape), result_dtype(g, ShapedArray((), np.dtype(float), True)))


def _taken_bar_lower(ctx: LowerCtx, g: HloValue, pred: HloValue, keep: bool = True) -> HloValue:
    b, out = ctx.b, ctx.avals_out[0]
    mask = b.reshape(b.convert(pred, np.dtype(bool)), pred.aval.shape + (1,) * (g.aval.ndim - pred.aval.ndim))
    kept = b.broadcast_to(b.convert(g, out.dtype), out.shape)
    zeros = b.full(0.0, out.shape, out.dtype)
    mask = b.broadcast_to(mask, out.shape)
    return b.select(mask, kept, zeros) if keep else b.select(mask, zeros, kept)


def _taken_bar_batch(c: batch_rules.BatchCall) -> str:
    """Both operands batched (a cotangent of a container: each leaf repeated)."""
    return c.call(**{p: f"{'batch_broadcast_items' if p == 'g' else 'batch_broadcast'}({c.args[p]}, {c.size})"
                     for p in ("g", "pred") if not c.batched(p)})


# taken's cotangent (a select: linear in g, its own transpose); a container's leaf by leaf (the tree rule: no container
# branch in a helper of arrays, which reverse mode writes out in branches on data and vmap batches)
defprim("taken_bar", branch_guard.taken_bar, _taken_bar_stub, abstract_eval=_taken_bar_abstract,
        lower=_taken_bar_lower, arrays=("g", "pred"), nondiff_args=("pred",), path="taken_bar", static_eval=False,
        positional=2, tree=branch_guard.tree_taken_bar,
        jvp={"g": "taken_bar(g_dot, pred, keep)"}, vjp={"g": "taken_bar(out_bar, pred, keep)"})
set_fields("taken_bar", batch=_taken_bar_batch, through=(None, adjoint.UNSET))
