"""Primitives that generated derivative code needs: ``index_add`` (the transpose of indexing)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import adjoint
from ..core import ShapedArray, ShapeError
from ..lower.hlo import HloValue, aval_type
from .common import broadcast_shapes, fmt_shape
from .elementwise import _result_dtype
from .registry import LowerCtx, defprim
from .shape import _getitem_abstract, _plan


def _index_add_stub(z, key, g, /):  # type: ignore[no-untyped-def]
    ...


def _index_add_abstract(z: ShapedArray, key: Any, g: ShapedArray) -> ShapedArray:
    sub = _getitem_abstract(z, key)
    if broadcast_shapes(sub.shape, g.shape) != sub.shape:
        raise ShapeError(f"index_add: cannot add a value of shape {fmt_shape(g.shape)} into a selection of "
                         f"shape {fmt_shape(sub.shape)}")
    return ShapedArray(z.shape, _result_dtype(z, g))


def _index_add_lower(ctx: LowerCtx, z: HloValue, key: Any, g: HloValue) -> HloValue:
    b = ctx.b
    out = ctx.avals_out[0]
    if not isinstance(key, tuple):
        key = (key,)
    plan = _plan(z.shape, key)
    sub = _getitem_abstract(z.aval, key)
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
    return b.binary("add", zc, padded)


defprim("index_add", adjoint.index_add, _index_add_stub, abstract_eval=_index_add_abstract,
        lower=_index_add_lower, arrays=("z", "g"), path="index_add", static_eval=False, mixed=("key",))
