"""Contractions: matmul (``@``), dot, inner, outer, tensordot, einsum, linalg.norm.

All lower to one ``stablehlo.dot_general`` (plus reshapes/broadcasts around it).
Result dtypes follow NumPy promotion of the two operands (NEP 50 aware).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import DTypeError, ShapedArray, ShapeError
from ..lower.hlo import FuncBuilder, HloValue, real_dtype
from . import batch_rules, lapack
from .common import broadcast_shapes, fmt_shape, is_float_dtype, normalize_axes, normalize_axis
from .elementwise import result_dtype
from .registry import LowerCtx, defjvp, deflinear, defprim, defvjp


def _contract_dtype(a: ShapedArray, b: ShapedArray, what: str) -> np.dtype:
    """NumPy's result dtype of a contraction: the promoted operand dtype (bool stays bool)."""
    return result_dtype(a, b)


def _dot_general(b: FuncBuilder, x: HloValue, y: HloValue, dtype: np.dtype,
                 batch: tuple[Sequence[int], Sequence[int]],
                 contract: tuple[Sequence[int], Sequence[int]]) -> HloValue:
    """One dot_general in ``dtype``. Booleans, as in NumPy, give ``any(x and y)``: counted
    in int32, then compared with 0."""
    work = np.dtype(np.int32) if dtype == np.bool_ else dtype
    x = b.convert(x, work)
    y = b.convert(y, work)
    shape = [x.shape[i] for i in batch[0]]
    shape += [d for i, d in enumerate(x.shape) if i not in batch[0] and i not in contract[0]]
    shape += [d for i, d in enumerate(y.shape) if i not in batch[1] and i not in contract[1]]
    r = b.dot_general(x, y, batch, contract, ShapedArray(tuple(shape), work))
    return b.convert(r, dtype)


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
    # (an operand repeated along its stack axes: FuncBuilder.dot_general reads the unrepeated one)
    batch, _ = _matmul_shapes(x.shape, y.shape)
    if x.ndim == 1 and y.ndim == 1:
        return _dot_general(b, x, y, out.dtype, ([], []), ([0], [0]))
    if y.ndim == 1:  # (..., m, k) @ (k,) : contract the last axis, no batching needed
        return b.reshape(_dot_general(b, x, y, out.dtype, ([], []), ([x.ndim - 1], [0])), out.shape)
    if y.ndim == 2 and x.ndim > 2:  # a stack of matrices times one matrix: no copy of it per stack entry
        return _dot_general(b, x, y, out.dtype, ([], []), ([x.ndim - 1], [0]))
    if x.ndim <= 2 and y.ndim > 2:  # one matrix (or vector) times a stack: contract, then put the stack first
        r = _dot_general(b, x, y, out.dtype, ([], []), ([x.ndim - 1], [y.ndim - 2]))
        if x.ndim == 1:
            return r  # (stack..., n)
        nb = y.ndim - 2  # r is (m, stack..., n)
        return b.transpose(r, list(range(1, nb + 1)) + [0, nb + 1])
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
        return bl.binary("multiply" if out.dtype != np.bool_ else "and", x, y)
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
    return ShapedArray((a.size, b.size), result_dtype(a, b))


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


# -- einsum -------------------------------------------------------------------------------
def _einsum_stub(subscripts, /, *operands):  # type: ignore[no-untyped-def]
    ...


def _parse_einsum(spec: Any, shapes: list[tuple[int, ...]]) -> tuple[list[str], str, dict[str, int]]:
    """(one index string per operand, output indices, size of each index).

    ``...`` becomes letters the subscripts do not use, aligned from the right as NumPy
    broadcasts. An implicit output (no ``->``) is the ellipsis, then the indices that appear
    once, in alphabetical order, as in NumPy.
    """
    if not isinstance(spec, str):
        raise DTypeError("einsum: the subscripts must be a static string like 'ij,jk->ik'")
    s = spec.replace(" ", "")
    ins, arrow, out = s.partition("->")
    terms = ins.split(",")
    if len(terms) != len(shapes) or not shapes:
        raise ShapeError(f"einsum: {spec!r} names {len(terms)} operands, but {len(shapes)} were given")
    for t in terms + [out]:
        if not t.replace("...", "", 1).isalpha() and t.replace("...", "", 1):
            raise ShapeError(f"einsum: invalid subscripts {t!r} in {spec!r} (letters, and at most one '...')")
    n_ell = max((len(sh) - len(t) + 3 for t, sh in zip(terms, shapes) if "..." in t), default=0)
    ell = "".join(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in s)[:max(n_ell, 0)]
    letters = []
    for t, sh in zip(terms, shapes):
        if "..." in t:
            k = len(sh) - len(t) + 3
            if k < 0:
                raise ShapeError(f"einsum: operand with subscripts {t!r} has shape {fmt_shape(sh)}",
                                 hint="give each operand one subscript letter per dimension ('...' for the others)")
            t = t.replace("...", ell[len(ell) - k:])
        if len(t) != len(sh):
            raise ShapeError(f"einsum: operand with subscripts {t!r} has shape {fmt_shape(sh)}",
                             hint="give each operand one subscript letter per dimension ('...' for the others)")
        letters.append(t)
    sizes: dict[str, int] = {}
    for t, sh in zip(letters, shapes):
        for c, d in zip(t, sh):
            if sizes.setdefault(c, d) != d:
                raise ShapeError(f"einsum: an index of {spec!r} has sizes {sizes[c]} and {d}",
                                 hint="broadcasting size-1 dimensions in einsum is not supported")
    if not arrow:
        seen = "".join(letters)
        out = ell + "".join(sorted(c for c in set(seen) if seen.count(c) == 1 and c not in ell))
    elif "..." in out:
        out = out.replace("...", ell)
    elif ell:
        raise ShapeError(f"einsum: the output of {spec!r} needs '...' for the broadcast dimensions")
    if len(set(out)) != len(out):
        raise ShapeError(f"einsum: an output index is repeated in {spec!r}")
    for c in out:
        if c not in sizes:
            raise ShapeError(f"einsum: output index {c!r} does not appear in the inputs of {spec!r}")
    return letters, out, sizes


def _einsum_dtype(operands: Sequence[ShapedArray]) -> np.dtype:
    return np.result_type(*(o.dtype for o in operands))


def _einsum_abstract(subscripts: Any, *operands: ShapedArray) -> ShapedArray:
    terms, out, sizes = _parse_einsum(subscripts, [o.shape for o in operands])
    return ShapedArray(tuple(sizes[c] for c in out), _einsum_dtype(operands))


def _sum_over(b: FuncBuilder, x: HloValue, dims: Sequence[int]) -> HloValue:
    return b.reduce(x, "add" if x.dtype != np.bool_ else "or", 0, dims)


def _diagonal(b: FuncBuilder, x: HloValue, t: str) -> tuple[HloValue, str]:
    """Take the diagonal of every index repeated in ``t`` (``ii`` -> ``i``)."""
    while len(set(t)) != len(t):
        c = next(c for c in t if t.count(c) > 1)
        p = t.index(c)
        q = t.index(c, p + 1)
        iota = ShapedArray(x.shape, np.dtype(np.int64))
        on = b.compare("EQ", b.iota(iota, p), b.iota(iota, q))
        x = _sum_over(b, b.select(on, x, b.full(0, x.shape, x.dtype)), [q])
        t = t[:q] + t[q + 1:]
    return x, t


def _einsum_lower(ctx: LowerCtx, subscripts: Any, *operands: HloValue) -> HloValue:
    """Contract left to right, one dot_general per operand after the first.

    Each operand first loses its diagonals and the indices no one else needs (summed); each
    pairwise step batches the shared indices still needed later and contracts the others.
    """
    b = ctx.b
    dtype = ctx.avals_out[0].dtype
    terms, out, _ = _parse_einsum(subscripts, [o.shape for o in operands])
    ops, ts = [], []
    for k, (o, t) in enumerate(zip(operands, terms)):
        x, t = _diagonal(b, b.convert(o, dtype), t)
        others = "".join(terms[:k] + terms[k + 1:]) + out
        drop = [i for i, c in enumerate(t) if c not in others]
        ops.append(_sum_over(b, x, drop))
        ts.append("".join(c for c in t if c in others))
    x, t = ops[0], ts[0]
    for k in range(1, len(ops)):
        y, u = ops[k], ts[k]
        later = "".join(ts[k + 1:]) + out
        shared = [c for c in t if c in u]
        batch = [c for c in shared if c in later]
        contract = [c for c in shared if c not in later]
        x = _dot_general(b, x, y, dtype, ([t.index(c) for c in batch], [u.index(c) for c in batch]),
                         ([t.index(c) for c in contract], [u.index(c) for c in contract]))
        t = "".join(batch) + "".join(c for c in t if c not in u) + "".join(c for c in u if c not in t)
        # an index of both operands needed later is batched, so none is left to sum here
    return b.transpose(x, [t.index(c) for c in out])


defprim("einsum", np.einsum, _einsum_stub, abstract_eval=_einsum_abstract, lower=_einsum_lower,
        arrays=(), array_seqs=("operands",), positional=0)


# -- linalg.norm -------------------------------------------------------------------------
def _norm_stub(x, ord=None, axis=None, keepdims=False):  # type: ignore[no-untyped-def]
    ...


def _norm_plan(x: ShapedArray, ord: Any, axis: Any) -> tuple[str, tuple[int, ...]]:
    """("vector" | "matrix" | "flat", axes); refuses what is not supported."""
    if axis is None:
        if ord is None:
            return "flat", tuple(range(x.ndim))
        if x.ndim not in (1, 2):
            raise ShapeError(f"np.linalg.norm: ord={ord!r} needs a 1-D or 2-D array (or axis=...), got shape "
                             f"{fmt_shape(x.shape)}")
        axes = tuple(range(x.ndim))
    else:
        axes = tuple(normalize_axis(a, x.ndim) for a in (axis if isinstance(axis, tuple) else (axis,)))
        if len(axes) not in (1, 2) or len(set(axes)) != len(axes):
            raise ShapeError(f"np.linalg.norm: axis must be an int or a pair of distinct axes, got {axis!r}")
    if len(axes) == 1:
        if isinstance(ord, str) or not (ord is None or isinstance(ord, (int, float, np.integer, np.floating))):
            raise DTypeError(f"np.linalg.norm: invalid norm order {ord!r} for vectors")
        return "vector", axes
    if isinstance(ord, str) and ord == "nuc" or not isinstance(ord, str) and ord in (2, -2):
        if not is_float_dtype(x.dtype) and x.dtype.kind not in "biuc" or x.dtype.name in ("float16", "bfloat16"):
            raise DTypeError(f"np.linalg.norm: ord={ord!r} needs float32 or float64 (singular values), got "
                             f"{x.dtype.name}")
        return "spectral", axes
    if ord not in (None, "fro", 1, -1, np.inf, -np.inf):
        raise DTypeError(f"np.linalg.norm: invalid norm order {ord!r} for matrices")
    return "matrix", axes


def _norm_abstract(x: ShapedArray, ord: Any = None, axis: Any = None, keepdims: bool = False) -> ShapedArray:
    _, axes = _norm_plan(x, ord, axis)
    d = x.dtype if is_float_dtype(x.dtype) else real_dtype(x.dtype) if x.dtype.kind == "c" else np.dtype(np.float64)
    shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape)) if keepdims else \
        tuple(s for i, s in enumerate(x.shape) if i not in axes)
    return ShapedArray(shape, d)


def _norm_lower(ctx: LowerCtx, x: HloValue, ord: Any = None, axis: Any = None,
                keepdims: bool = False) -> HloValue:
    """NumPy's formulas: sums of squares, of absolute values, their max/min, and p-norms (of the
    moduli of a complex ``x``)."""
    b = ctx.b
    out = ctx.avals_out[0]
    kind, axes = _norm_plan(x.aval, ord, axis)
    d = out.dtype
    v = x if x.dtype.kind == "c" else b.convert(x, d)

    def mag(v: HloValue) -> HloValue:
        return b.unary("abs", v, ShapedArray(v.shape, d))

    def full(value: Any, like: HloValue) -> HloValue:
        return b.full(value, like.shape, d)

    if kind == "spectral":  # singular values (LAPACK gesdd), the norm axes moved last
        rest = [i for i in range(x.ndim) if i not in axes]
        m = b.transpose(v, rest + list(axes))
        r = lapack.singular_values(b, m)
        last = [r.ndim - 1]
        r = b.reduce(r, "add", 0, last) if ord == "nuc" else \
            b.reduce(r, "maximum", -np.inf, last) if ord == 2 else b.reduce(r, "minimum", np.inf, last)
    elif kind == "flat" or ord in (None, "fro") or (kind == "vector" and ord == 2):
        r = b.unary("sqrt", b.reduce(b.abs2(v), "add", 0, axes))
    elif kind == "matrix":
        row, col = axes
        a = mag(v)
        inner, outer = (row, col) if ord in (1, -1) else (col, row)  # 1: max column sum; inf: max row sum
        s = b.reduce(a, "add", 0, [inner])
        outer -= outer > inner
        r = b.reduce(s, "maximum", -np.inf, [outer]) if ord > 0 else b.reduce(s, "minimum", np.inf, [outer])
    elif ord == np.inf:
        r = b.reduce(mag(v), "maximum", -np.inf, axes)
    elif ord == -np.inf:
        r = b.reduce(mag(v), "minimum", np.inf, axes)
    elif ord == 0:
        r = b.reduce(b.convert(b.compare("NE", v, b.full(0, v.shape, v.dtype)), d), "add", 0, axes)
    elif ord == 1:
        r = b.reduce(mag(v), "add", 0, axes)
    else:
        p = b.binary("power", mag(v), full(ord, v))
        s = b.reduce(p, "add", 0, axes)
        r = b.binary("power", s, full(np.reciprocal(np.asarray(ord, dtype=d)), s))
    return b.reshape(r, out.shape)


defprim("norm", np.linalg.norm, _norm_stub, abstract_eval=_norm_abstract, lower=_norm_lower,
        arrays=("x",), path="np.linalg.norm")


# -- linear algebra ----------------------------------------------------------------------
deflinear("matmul", {"x1": "x1_dot @ x2", "x2": "x1 @ x2_dot"},
          {"x1": "matmul_lhs_bar(out_bar, x1, x2)", "x2": "matmul_rhs_bar(out_bar, x1, x2)"})
# Every order srcjax supports (vector p-norms; 1, -1, inf, -inf, fro matrix norms), as JAX defines them.
# One deliberate difference from JAX: the gradient of the 2-norm at x == 0 is 0 (a subgradient), not nan.
defjvp("norm", x="np.real(np.sum(x_dot * norm_bar(ones_like(out), x, out, axis, keepdims, ord), "
                 "axis=norm_axes(np.ndim(x), axis), keepdims=keepdims))")  # (np.real: a complex x)
defvjp("norm", x="norm_bar(out_bar, x, out, axis, keepdims, ord)")

# -- contractions: bilinear ------------------------------------------------------------------------
deflinear("dot", {"a": "np.dot(a_dot, b)", "b": "np.dot(a, b_dot)"},
          {"a": "dot_lhs_bar(out_bar, a, b)", "b": "dot_rhs_bar(out_bar, a, b)"})
deflinear("inner", {"a": "np.inner(a_dot, b)", "b": "np.inner(a, b_dot)"},
          {"a": "inner_lhs_bar(out_bar, a, b)", "b": "inner_rhs_bar(out_bar, a, b)"})
deflinear("outer", {"a": "np.outer(a_dot, b)", "b": "np.outer(a, b_dot)"},
          {"a": "unbroadcast(np.reshape(out_bar @ np.ravel(b), np.shape(a)), a)",
           "b": "unbroadcast(np.reshape(np.ravel(a) @ out_bar, np.shape(b)), b)"})
deflinear("tensordot", {"a": "np.tensordot(a_dot, b, axes)", "b": "np.tensordot(a, b_dot, axes)"},
          {"a": "tensordot_lhs_bar(out_bar, a, b, axes)", "b": "tensordot_rhs_bar(out_bar, a, b, axes)"})
# operands is a sequence: the JVP sees all tangents at once, the VJP gives a list of cotangents
deflinear("einsum", {"operands": "einsum_jvp(subscripts, operands, operands_dot)"},
          {"operands": "einsum_bars(out_bar, subscripts, operands)"})


__all__ = ["matmul_hlo", "normalize_axes"]


# -- batching (vmap): contractions never repeat an unbatched operand along the batch ------------------
from .registry import set_fields  # noqa: E402

set_fields("matmul", batch=batch_rules.helper("batch_matmul", "x1", "x2"))
set_fields("dot", batch=batch_rules.helper("batch_dot", "a", "b"))
set_fields("inner", batch=batch_rules.helper("batch_inner", "a", "b"))
set_fields("outer", batch=batch_rules.helper("batch_outer", "a", "b"))
set_fields("tensordot", batch=batch_rules.helper("batch_tensordot", "a", "b", "axes"))
set_fields("einsum", batch=batch_rules.einsum)
set_fields("norm", batch=batch_rules.helper_batched_only("batch_norm", "x", "ord", "axis", "keepdims"))
