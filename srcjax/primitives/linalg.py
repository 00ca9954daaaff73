"""Contractions: matmul (``@``), dot, inner, outer, tensordot, einsum, linalg.norm.

All lower to one ``stablehlo.dot_general`` (plus reshapes/broadcasts around it).
Result dtypes follow NumPy promotion of the two operands (NEP 50 aware).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import DTypeError, ShapedArray, ShapeError
from ..lower.hlo import FuncBuilder, HloValue
from .common import broadcast_shapes, fmt_shape, normalize_axes
from .elementwise import _result_dtype
from .registry import LowerCtx, defprim


def _contract_dtype(a: ShapedArray, b: ShapedArray, what: str) -> np.dtype:
    d = _result_dtype(a, b)
    if d == np.bool_:
        raise DTypeError(f"{what}: boolean operands are not supported", hint="use x.astype(np.int32) first")
    return d


def _dot_general(b: FuncBuilder, x: HloValue, y: HloValue, dtype: np.dtype,
                 batch: tuple[Sequence[int], Sequence[int]],
                 contract: tuple[Sequence[int], Sequence[int]]) -> HloValue:
    x = b.convert(x, dtype)
    y = b.convert(y, dtype)
    shape = [x.shape[i] for i in batch[0]]
    shape += [d for i, d in enumerate(x.shape) if i not in batch[0] and i not in contract[0]]
    shape += [d for i, d in enumerate(y.shape) if i not in batch[1] and i not in contract[1]]
    return b.dot_general(x, y, batch, contract, ShapedArray(tuple(shape), dtype))


# -- matmul ------------------------------------------------------------------------
def _matmul_stub(x1, x2, /):  # type: ignore[no-untyped-def]
    ...


def _matmul_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(batch shape, output shape) of ``a @ b``; raises ShapeError."""
    if len(a) == 0 or len(b) == 0:
        raise ShapeError("matmul: operands must be at least 1-D (use * to multiply by a scalar), got "
                         f"shapes {fmt_shape(a)} and {fmt_shape(b)}")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ShapeError(
            f"matmul: inner dimensions do not match: left operand has shape {fmt_shape(a)}, "
            f"right operand has shape {fmt_shape(b)} ({a2[-1]} != {b2[-2]})",
            hint="the last axis of the left operand must equal the "
                 f"{'first' if len(b) <= 2 else 'second-to-last'} axis of the right operand")
    batch = broadcast_shapes(a2[:-2], b2[:-2], what="matmul batch dimensions")
    out = batch + ((a2[-2],) if len(a) > 1 else ()) + ((b2[-1],) if len(b) > 1 else ())
    return batch, out


def _matmul_abstract(x1: ShapedArray, x2: ShapedArray) -> ShapedArray:
    _, out = _matmul_shapes(x1.shape, x2.shape)
    return ShapedArray(out, _contract_dtype(x1, x2, "matmul"))


def matmul_hlo(b: FuncBuilder, x: HloValue, y: HloValue, out: ShapedArray) -> HloValue:
    batch, _ = _matmul_shapes(x.shape, y.shape)
    if x.ndim == 1 and y.ndim == 1:
        return _dot_general(b, x, y, out.dtype, ([], []), ([0], [0]))
    if y.ndim == 1:  # (..., m, k) @ (k,) : contract the last axis, no batching needed
        return b.reshape(_dot_general(b, x, y, out.dtype, ([], []), ([x.ndim - 1], [0])), out.shape)
    x2 = b.reshape(x, (1,) + x.shape) if x.ndim == 1 else x
    nb = len(batch)
    x2 = b.broadcast_to(x2, batch + x2.shape[-2:])
    y2 = b.broadcast_to(y, batch + y.shape[-2:])
    bd = list(range(nb))
    r = _dot_general(b, x2, y2, out.dtype, (bd, bd), ([nb + 1], [nb]))
    return b.reshape(r, out.shape)


defprim("matmul", np.matmul, _matmul_stub, abstract_eval=_matmul_abstract,
        lower=lambda ctx, x1, x2: matmul_hlo(ctx.b, x1, x2, ctx.avals_out[0]), arrays=("x1", "x2"))


# -- dot / inner / outer / tensordot -------------------------------------------------
def _ab_stub(a, b, /):  # type: ignore[no-untyped-def]
    ...


def _dot_plan(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[str, list[int], list[int]]:
    if len(a) == 0 or len(b) == 0:
        return "mul", [], []
    if len(a) <= 2 and len(b) <= 2:
        return "matmul", [], []
    ca, cb = len(a) - 1, max(len(b) - 2, 0)
    if a[ca] != b[cb]:
        raise ShapeError(f"dot: shapes {fmt_shape(a)} and {fmt_shape(b)} not aligned: "
                         f"{a[ca]} (dim {ca}) != {b[cb]} (dim {cb})")
    return "tensordot", [ca], [cb]


def _dot_abstract(a: ShapedArray, b: ShapedArray) -> ShapedArray:
    d = _contract_dtype(a, b, "dot")
    kind, ca, cb = _dot_plan(a.shape, b.shape)
    if kind == "mul":
        return ShapedArray(a.shape or b.shape, d)
    if kind == "matmul":
        return ShapedArray(_matmul_shapes(a.shape, b.shape)[1], d)
    shape = tuple(s for i, s in enumerate(a.shape) if i not in ca) + \
        tuple(s for i, s in enumerate(b.shape) if i not in cb)
    return ShapedArray(shape, d)


def _dot_lower(ctx: LowerCtx, a: HloValue, b: HloValue) -> HloValue:
    out = ctx.avals_out[0]
    kind, ca, cb = _dot_plan(a.shape, b.shape)
    bl = ctx.b
    if kind == "mul":
        x = bl.broadcast_to(bl.convert(a, out.dtype), out.shape)
        y = bl.broadcast_to(bl.convert(b, out.dtype), out.shape)
        return bl.binary("multiply", x, y)
    if kind == "matmul":
        return matmul_hlo(bl, a, b, out)
    return _dot_general(bl, a, b, out.dtype, ([], []), (ca, cb))


defprim("dot", np.dot, _ab_stub, abstract_eval=_dot_abstract, lower=_dot_lower, arrays=("a", "b"))


def _inner_abstract(a: ShapedArray, b: ShapedArray) -> ShapedArray:
    d = _contract_dtype(a, b, "inner")
    if a.ndim == 0 or b.ndim == 0:
        return ShapedArray(a.shape or b.shape, d)
    if a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"inner: last dimensions differ: shapes {fmt_shape(a.shape)} and {fmt_shape(b.shape)}")
    return ShapedArray(a.shape[:-1] + b.shape[:-1], d)


def _inner_lower(ctx: LowerCtx, a: HloValue, b: HloValue) -> HloValue:
    out = ctx.avals_out[0]
    if a.ndim == 0 or b.ndim == 0:
        return _dot_lower(ctx, a, b)
    return _dot_general(ctx.b, a, b, out.dtype, ([], []), ([a.ndim - 1], [b.ndim - 1]))


defprim("inner", np.inner, _ab_stub, abstract_eval=_inner_abstract, lower=_inner_lower, arrays=("a", "b"))


def _outer_abstract(a: ShapedArray, b: ShapedArray) -> ShapedArray:
    return ShapedArray((a.size, b.size), _result_dtype(a, b))


def _outer_lower(ctx: LowerCtx, a: HloValue, b: HloValue) -> HloValue:
    out = ctx.avals_out[0]
    bl = ctx.b
    x = bl.broadcast_in_dim(bl.reshape(bl.convert(a, out.dtype), (a.aval.size,)), out.shape, [0])
    y = bl.broadcast_in_dim(bl.reshape(bl.convert(b, out.dtype), (b.aval.size,)), out.shape, [1])
    return bl.binary("multiply", x, y) if out.dtype != np.bool_ else bl.binary("and", x, y)


defprim("outer", np.outer, _ab_stub, abstract_eval=_outer_abstract, lower=_outer_lower, arrays=("a", "b"))


def _tensordot_stub(a, b, /, axes=2):  # type: ignore[no-untyped-def]
    ...


def _tensordot_axes(a: tuple[int, ...], b: tuple[int, ...], axes: Any) -> tuple[list[int], list[int]]:
    if isinstance(axes, int):
        if axes < 0 or axes > min(len(a), len(b)):
            raise ShapeError(f"tensordot: axes={axes} is invalid for shapes {fmt_shape(a)} and {fmt_shape(b)}")
        ca, cb = list(range(len(a) - axes, len(a))), list(range(axes))
    else:
        try:
            xa, xb = axes
        except (TypeError, ValueError):
            raise DTypeError(f"tensordot: axes must be an int or a pair of sequences, got {axes!r}") from None
        xa = [xa] if isinstance(xa, int) else list(xa)
        xb = [xb] if isinstance(xb, int) else list(xb)
        ca = [i % len(a) for i in xa]
        cb = [i % len(b) for i in xb]
    if [a[i] for i in ca] != [b[i] for i in cb]:
        raise ShapeError(f"tensordot: shape mismatch for sum: {fmt_shape(a)} axes {ca} vs "
                         f"{fmt_shape(b)} axes {cb}")
    return ca, cb


def _tensordot_abstract(a: ShapedArray, b: ShapedArray, axes: Any = 2) -> ShapedArray:
    ca, cb = _tensordot_axes(a.shape, b.shape, axes)
    shape = tuple(s for i, s in enumerate(a.shape) if i not in ca) + \
        tuple(s for i, s in enumerate(b.shape) if i not in cb)
    return ShapedArray(shape, _contract_dtype(a, b, "tensordot"))


def _tensordot_lower(ctx: LowerCtx, a: HloValue, b: HloValue, axes: Any = 2) -> HloValue:
    ca, cb = _tensordot_axes(a.shape, b.shape, axes)
    return _dot_general(ctx.b, a, b, ctx.avals_out[0].dtype, ([], []), (ca, cb))


defprim("tensordot", np.tensordot, _tensordot_stub, abstract_eval=_tensordot_abstract,
        lower=_tensordot_lower, arrays=("a", "b"))


# -- einsum (one or two operands, explicit output) ------------------------------------
def _einsum_stub(subscripts, /, *operands):  # type: ignore[no-untyped-def]
    ...


def _parse_einsum(spec: Any, shapes: list[tuple[int, ...]]) -> tuple[list[str], str, dict[str, int]]:
    if not isinstance(spec, str):
        raise DTypeError("einsum: the subscripts must be a static string like 'ij,jk->ik'")
    s = spec.replace(" ", "")
    if "->" not in s:
        raise ShapeError(f"einsum: {spec!r} has no explicit output; write it with '->'",
                         hint="e.g. 'ij,jk->ik'")
    ins, out = s.split("->")
    terms = ins.split(",")
    if len(terms) != len(shapes) or len(shapes) not in (1, 2):
        raise ShapeError(f"einsum: {spec!r} needs {len(terms)} operands, got {len(shapes)} "
                         "(one or two operands are supported)")
    sizes: dict[str, int] = {}
    for t, sh in zip(terms, shapes):
        if "." in t:
            raise ShapeError("einsum: ellipsis '...' is not supported yet")
        if len(t) != len(sh):
            raise ShapeError(f"einsum: operand with subscripts {t!r} has shape {fmt_shape(sh)}")
        if len(set(t)) != len(t):
            raise ShapeError(f"einsum: repeated index in {t!r} (traces/diagonals) is not supported")
        for c, d in zip(t, sh):
            if sizes.setdefault(c, d) != d:
                raise ShapeError(f"einsum: index {c!r} has size {sizes[c]} and {d} in {spec!r}")
    for c in out:
        if c not in sizes:
            raise ShapeError(f"einsum: output index {c!r} does not appear in the inputs of {spec!r}")
    return terms, out, sizes


def _einsum_abstract(subscripts: Any, *operands: ShapedArray) -> ShapedArray:
    terms, out, sizes = _parse_einsum(subscripts, [o.shape for o in operands])
    d = _result_dtype(*operands) if len(operands) == 2 else operands[0].dtype
    return ShapedArray(tuple(sizes[c] for c in out), d)


def _einsum_lower(ctx: LowerCtx, subscripts: Any, *operands: HloValue) -> HloValue:
    b = ctx.b
    out_aval = ctx.avals_out[0]
    terms, out, sizes = _parse_einsum(subscripts, [o.shape for o in operands])
    ops = [b.convert(o, out_aval.dtype) for o in operands]
    # Sum away indices that appear in only one operand and not in the output.
    for k, t in enumerate(terms):
        others = "".join(terms[:k] + terms[k + 1:]) + out
        drop = [i for i, c in enumerate(t) if c not in others]
        if drop:
            ops[k] = b.reduce(ops[k], "add" if out_aval.dtype != np.bool_ else "or", 0, drop)
            terms[k] = "".join(c for c in t if c not in others)
    if len(ops) == 1:
        t = terms[0]
        return b.transpose(ops[0], [t.index(c) for c in out])
    ta, tb = terms
    batch = [c for c in ta if c in tb and c in out]
    contract = [c for c in ta if c in tb and c not in out]
    r = b.dot_general(ops[0], ops[1], ([ta.index(c) for c in batch], [tb.index(c) for c in batch]),
                      ([ta.index(c) for c in contract], [tb.index(c) for c in contract]),
                      ShapedArray(tuple(sizes[c] for c in batch + [c for c in ta if c not in tb]
                                        + [c for c in tb if c not in ta]), out_aval.dtype)) \
        if ops[0].dtype != np.bool_ else None
    if r is None:
        raise DTypeError("einsum: boolean operands are not supported")
    order = batch + [c for c in ta if c not in tb] + [c for c in tb if c not in ta]
    return b.transpose(r, [order.index(c) for c in out])


defprim("einsum", np.einsum, _einsum_stub, abstract_eval=_einsum_abstract, lower=_einsum_lower,
        arrays=(), array_seqs=("operands",), positional=0)


# -- linalg.norm (vector 2-norm / Frobenius) -------------------------------------------
def _norm_stub(x, ord=None, axis=None, keepdims=False):  # type: ignore[no-untyped-def]
    ...


def _norm_check(x: ShapedArray, ord: Any, axis: Any) -> tuple[int, ...]:
    if ord not in (None, 2, "fro") or (ord == 2 and (axis is None and x.ndim != 1)):
        raise DTypeError(f"np.linalg.norm: ord={ord!r} is not supported (only the 2-norm / Frobenius norm)")
    if ord == "fro" and x.ndim != 2 and axis is None:
        raise ShapeError("np.linalg.norm: ord='fro' needs a 2-D array")
    if isinstance(axis, tuple) and len(axis) > 2:
        raise ShapeError("np.linalg.norm: axis must be an int or a pair")
    return normalize_axes(axis, x.ndim)


def _norm_abstract(x: ShapedArray, ord: Any = None, axis: Any = None, keepdims: bool = False) -> ShapedArray:
    axes = _norm_check(x, ord, axis)
    d = x.dtype if x.dtype.kind == "f" or x.dtype.name == "bfloat16" else np.dtype(np.float64)
    shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape)) if keepdims else \
        tuple(s for i, s in enumerate(x.shape) if i not in axes)
    return ShapedArray(shape, d)


def _norm_lower(ctx: LowerCtx, x: HloValue, ord: Any = None, axis: Any = None,
                keepdims: bool = False) -> HloValue:
    b = ctx.b
    out = ctx.avals_out[0]
    axes = _norm_check(x.aval, ord, axis)
    v = b.convert(x, out.dtype)
    s = b.reduce(b.binary("multiply", v, v), "add", 0, axes)
    return b.reshape(b.unary("sqrt", s), out.shape)


defprim("norm", np.linalg.norm, _norm_stub, abstract_eval=_norm_abstract, lower=_norm_lower,
        arrays=("x",), path="np.linalg.norm")

__all__ = ["matmul_hlo", "normalize_axes"]
