"""Array construction and shape utilities: array, asarray, diagonal, and (below) the rest of issue #16's list.

``np.array`` / ``np.asarray`` of an array cast it (``dtype=``) and prepend axes (``ndmin=``); of a
(nested) list or tuple literal holding traced values, the normalizer writes the literal as
``np.stack`` of its elements first (the record's ``nested`` field), so ``np.array([x, y])`` is
``np.array(np.stack([x, y]))``: NumPy's common dtype of the elements, differentiable and batched
like ``np.stack``. A list of static numbers is evaluated while compiling (a constant).

``np.diagonal`` reads the strided slice of the two axes flattened (no gather): exact, -0.0 kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core import DTypeError, ShapedArray, ShapeError
from ..lower.hlo import HloValue
from . import batch_rules
from .common import as_dtype, fmt_shape, normalize_axis
from .registry import LowerCtx, defprim, set_fields


def _to_integers(args: Mapping[str, Any]) -> bool:
    """``np.array(x, dtype=int)`` (the call's arguments as source text): no derivative."""
    return any(t in args.get("dtype", "") for t in ("int", "bool", "uint"))


# -- array / asarray --------------------------------------------------------------------------------
def _array_stub(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):  # type: ignore[no-untyped-def]
    ...


def _asarray_stub(a, dtype=None, order=None, *, device=None, copy=None, like=None):  # type: ignore[no-untyped-def]
    ...


def _array_aval(x: ShapedArray, dtype: Any, ndmin: Any, order: Any, like: Any, name: str) -> ShapedArray:
    if like is not None:
        raise DTypeError(f"np.{name}: like= is not supported", hint="drop it: srcjax makes its own arrays")
    if order not in (None, "K", "A", "C", "F"):
        raise ShapeError(f"np.{name}: order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    if isinstance(ndmin, bool) or not isinstance(ndmin, (int, np.integer)):
        raise DTypeError(f"np.{name}: ndmin must be a static int, got {ndmin!r}")
    shape = (1,) * max(0, int(ndmin) - x.ndim) + x.shape
    return ShapedArray(shape, as_dtype(dtype) or x.dtype)


def _array_lower(ctx: LowerCtx, x: HloValue, *args: Any, **kwargs: Any) -> HloValue:
    out = ctx.avals_out[0]
    return ctx.b.reshape(ctx.b.convert(x, out.dtype), out.shape)


defprim("array", np.array, _array_stub, nested=("object",), arrays=("object",), static_eval=True,
        abstract_eval=lambda object, dtype=None, copy=True, order="K", subok=False, ndmin=0, like=None:
        _array_aval(object, dtype, ndmin, order, like, "array"),
        lower=_array_lower, nondiff_when=_to_integers,
        jvp={"object": "broadcast_like(object_dot, out)"}, vjp={"object": "unbroadcast(out_bar, object)"})
defprim("asarray", np.asarray, _asarray_stub, nested=("a",), arrays=("a",), static_eval=True,
        abstract_eval=lambda a, dtype=None, order=None, device=None, copy=None, like=None:
        _array_aval(a, dtype, 0, order, like, "asarray"),
        lower=_array_lower, nondiff_when=_to_integers,
        jvp={"a": "broadcast_like(a_dot, out)"}, vjp={"a": "unbroadcast(out_bar, a)"})


def _array_batch(c: batch_rules.BatchCall) -> str:
    """``np.array(x, ndmin=k)``: new axes go after the batch axis (``batch_array``); else as it is."""
    ndmin = c.args.get("ndmin", "0")
    if ndmin == "0":
        return c.call()
    return f"batch_array({c.args['object']}, {c.args.get('dtype', 'None')}, {ndmin})"


set_fields("array", batch=_array_batch)
set_fields("asarray", batch=batch_rules.unary)


# -- diagonal -----------------------------------------------------------------------------------------
def _diagonal_stub(a, offset=0, axis1=0, axis2=1):  # type: ignore[no-untyped-def]
    ...


def _diagonal_plan(a: ShapedArray, offset: Any, axis1: Any, axis2: Any) -> tuple[int, int, int, int]:
    """(offset, axis1, axis2, length of the diagonal)."""
    if a.ndim < 2:
        raise ShapeError(f"np.diagonal: diag requires an array of at least two dimensions, got shape "
                         f"{fmt_shape(a.shape)}", hint="np.diag builds a matrix from a vector")
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise DTypeError(f"np.diagonal: offset must be a static int, got {offset!r}")
    i, j = normalize_axis(axis1, a.ndim, "axis1"), normalize_axis(axis2, a.ndim, "axis2")
    if i == j:
        raise ShapeError("np.diagonal: axis1 and axis2 cannot be the same", hint="pass two different axes")
    k = int(offset)
    n, m = a.shape[i], a.shape[j]
    length = min(n, m - k) if k >= 0 else min(n + k, m)
    return k, i, j, max(length, 0)


def _diagonal_abstract(a: ShapedArray, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> ShapedArray:
    _, i, j, length = _diagonal_plan(a, offset, axis1, axis2)
    return ShapedArray(tuple(d for k, d in enumerate(a.shape) if k not in (i, j)) + (length,), a.dtype)


def _diagonal_lower(ctx: LowerCtx, a: HloValue, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> HloValue:
    """The two axes moved last and flattened: the diagonal is a slice with stride ``m + 1``."""
    b = ctx.b
    k, i, j, length = _diagonal_plan(a.aval, offset, axis1, axis2)
    rest = [d for d in range(a.ndim) if d not in (i, j)]
    n, m = a.shape[i], a.shape[j]
    lead = tuple(a.shape[d] for d in rest)
    x = b.reshape(b.transpose(a, rest + [i, j]), lead + (n * m,))
    start = k if k >= 0 else -k * m
    if length == 0:
        start, limit, stride = 0, 0, 1
    else:
        limit, stride = start + (length - 1) * (m + 1) + 1, m + 1
    return b.slice(x, [0] * len(lead) + [start], list(lead) + [limit], [1] * len(lead) + [stride])


defprim("diagonal", np.diagonal, _diagonal_stub, abstract_eval=_diagonal_abstract, lower=_diagonal_lower,
        arrays=("a",), jvp={"a": "np.diagonal(a_dot, offset, axis1, axis2)"},
        vjp={"a": "diagonal_bar(out_bar, a, offset, axis1, axis2)"})
set_fields("diagonal", batch=batch_rules.axes("axis1", "axis2"))
