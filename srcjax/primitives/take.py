"""``np.take`` and ``np.take_along_axis``: integer-array indexing spelled as functions.

Both lower to the one ``stablehlo.gather`` of ``gather.py``, through the indexing key
NumPy's own definition builds (``take``: ``a[:, ..., indices]`` along ``axis``;
``take_along_axis``: ``arr[i0, ..., indices, ...]`` with an ``arange`` on every other
axis). Their gradients are a scatter-add of that key (``index_add``), so repeated
indices accumulate. Indices out of bounds are clamped, as for ``x[idx]`` (JAX).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import DTypeError, ShapedArray, ShapeError
from ..lower.hlo import HloValue
from . import batch_rules, gather
from .common import broadcast_shapes, fmt_shape, normalize_axis
from .registry import LowerCtx, deflinear, defprim

_I64 = np.dtype(np.int64)


def _check_indices(indices: ShapedArray, name: str) -> None:
    if indices.dtype.kind not in "iu":
        raise DTypeError(f"np.{name}: indices must be integers, not {indices.dtype}",
                         hint="convert them: idx.astype(np.int64)")


# -- take ------------------------------------------------------------------------------
def _take_stub(a, indices, axis=None):  # type: ignore[no-untyped-def]
    ...


def _take_key(nd: int, indices: Any, axis: Any) -> tuple[Any, ...]:
    return (slice(None),) * normalize_axis(axis, nd) + (indices,)


def _take_abstract(a: ShapedArray, indices: ShapedArray, axis: Any = None) -> ShapedArray:
    _check_indices(indices, "take")
    if axis is None:
        return ShapedArray(indices.shape, a.dtype)
    if a.ndim == 0:
        raise ShapeError("np.take: axis must be None for a 0-d array", hint="drop axis=")
    ax = normalize_axis(axis, a.ndim)
    return ShapedArray(a.shape[:ax] + indices.shape + a.shape[ax + 1:], a.dtype)


def _take_lower(ctx: LowerCtx, a: HloValue, indices: HloValue, axis: Any = None) -> HloValue:
    b = ctx.b
    if axis is None:
        a = b.reshape(a, (a.aval.size,))
        axis = 0
    return gather.lower_gather(b, a, _take_key(a.ndim, indices, axis), ctx.avals_out[0])


defprim("take", np.take, _take_stub, abstract_eval=_take_abstract, lower=_take_lower, arrays=("a", "indices"),
        static_eval=False, nondiff_args=("indices",))  # (integers)


# -- take_along_axis ------------------------------------------------------------------------
def _along_stub(arr, indices, axis=-1):  # type: ignore[no-untyped-def]
    ...


def _along_plan(arr: ShapedArray, indices: ShapedArray, axis: Any) -> tuple[int, tuple[int, ...]]:
    """(axis, result shape): ``indices`` along ``axis``, the other axes broadcast with ``arr``'s."""
    _check_indices(indices, "take_along_axis")
    if axis is None:
        if indices.ndim != 1:
            raise ShapeError(f"np.take_along_axis: with axis=None, indices must be 1-D, got shape "
                             f"{fmt_shape(indices.shape)}", hint="pass the axis to take along")
        return 0, indices.shape
    if indices.ndim != arr.ndim:
        raise ShapeError(f"np.take_along_axis: indices and arr must have the same number of dimensions, got "
                         f"shapes {fmt_shape(indices.shape)} and {fmt_shape(arr.shape)}",
                         hint="add size-1 axes to the indices (np.expand_dims), or use np.argmax(..., keepdims=True)")
    ax = normalize_axis(axis, arr.ndim)
    other = tuple(1 if k == ax else d for k, d in enumerate(arr.shape))
    return ax, broadcast_shapes(other, indices.shape, what="np.take_along_axis: arr and indices")


def _along_abstract(arr: ShapedArray, indices: ShapedArray, axis: Any = -1) -> ShapedArray:
    return ShapedArray(_along_plan(arr, indices, axis)[1], arr.dtype)


def _along_lower(ctx: LowerCtx, arr: HloValue, indices: HloValue, axis: Any = -1) -> HloValue:
    b = ctx.b
    out = ctx.avals_out[0]
    if axis is None:
        return gather.lower_gather(b, b.reshape(arr, (arr.aval.size,)), (indices,), out)
    ax, _ = _along_plan(arr.aval, indices.aval, axis)
    key = tuple(indices if k == ax else b.iota(ShapedArray(tuple(d if q == k else 1 for q in range(arr.ndim)),
                                                           _I64), k)
                for k, d in enumerate(arr.shape))
    return gather.lower_gather(b, arr, key, out)


defprim("take_along_axis", np.take_along_axis, _along_stub, abstract_eval=_along_abstract, lower=_along_lower,
        arrays=("arr", "indices"), static_eval=False, nondiff_args=("indices",))


# -- derivatives: the VJP scatters with np.add.at semantics (repeated indices accumulate) --------------
deflinear("take", {"a": "np.take(a_dot, indices, axis)"}, {"a": "take_bar(out_bar, a, indices, axis)"})
deflinear("take_along_axis", {"arr": "np.take_along_axis(arr_dot, indices, axis)"},
          {"arr": "take_along_axis_bar(out_bar, arr, indices, axis)"})


# -- batching (vmap) ------------------------------------------------------------------------------
from .registry import set_fields  # noqa: E402

set_fields("take", batch=batch_rules.helper("batch_take", "a", "indices", "axis"))
set_fields("take_along_axis", batch=batch_rules.helper("batch_take_along_axis", "arr", "indices", "axis"))
