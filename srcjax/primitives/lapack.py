"""LAPACK on CPU: the StableHLO of jaxlib's LAPACK FFI kernels, and the factorizations built on them.

Each kernel is one ``stablehlo.custom_call @lapack_<s|d|c|z><fn>_ffi``: operands and results are
column-major per matrix (layout ``[n-2, n-1, n-3, ..., 0]``), vectors and the ``info`` status
row-major, leading dimensions a batch the kernel loops over, attributes (LAPACK's one-letter
flags as ``ui8`` character codes) in ``backend_config``. runtime/xla.py registers the kernels the
first time a program calls one (shared/RUNTIME_FACTS.md, "LAPACK").

``info`` is never ignored: where a kernel reports failure for a matrix (a singular ``getrf``
for a solve or an inverse, a ``potrf`` of a matrix that is not positive definite, an ``syevd``
or ``gesdd`` that does not converge), that matrix's results are NaN, as in JAX (NumPy raises
``LinAlgError``). ``det``/``slogdet`` read a singular LU as it is: determinant 0, as NumPy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core import ShapedArray
from ..lower.hlo import FuncBuilder, HloValue, aval_type, real_dtype
from .gather import lower_gather

I32 = np.dtype(np.int32)
L, U, N, V, A, S = (ord(c) for c in "LUNVAS")  # LAPACK's flags, as the kernels read them


def _layout(ndim: int, matrix: bool) -> str:
    """Minor-to-major layout: column-major matrices in a row-major batch, or all row-major."""
    dims = [ndim - 2, ndim - 1] + list(range(ndim - 3, -1, -1)) if matrix and ndim >= 2 else \
        list(range(ndim - 1, -1, -1))
    return f"dense<{dims}> : tensor<{ndim}xindex>" if dims else "dense<> : tensor<0xindex>"


def custom_call(b: FuncBuilder, fn: str, operands: Sequence[HloValue], results: Sequence[ShapedArray],
                matrices: Sequence[bool], attrs: dict[str, int] | None = None,
                alias: tuple[int, int] | None = None) -> list[HloValue]:
    """One LAPACK kernel call: ``fn`` without its type letter (``"potrf"``), the dtype taken from the
    first operand; ``matrices`` says which operands, then which results, are (stacks of) matrices;
    ``alias`` is (result, operand) when the kernel works in place."""
    letter = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}[operands[0].dtype.name]
    config = ", ".join(f"{k} = {v} : ui8" for k, v in sorted((attrs or {}).items()))
    n_in = len(operands)
    ops_l = ", ".join(_layout(o.ndim, m) for o, m in zip(operands, matrices))
    res_l = ", ".join(_layout(len(r.shape), m) for r, m in zip(results, matrices[n_in:]))
    aliases = ""
    if alias is not None:
        out_idx = f"[{alias[0]}]" if len(results) > 1 else "[]"
        aliases = (", output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = "
                   f"{out_idx}, operand_index = {alias[1]}, operand_tuple_indices = []>]")
    in_types = ", ".join(aval_type(o.aval) for o in operands)
    out_types = ", ".join(aval_type(r) for r in results)
    name = b.fresh()
    lhs = f"{name}:{len(results)}" if len(results) > 1 else name
    loc = f" loc({b.loc})" if b.loc else ""
    b.lines.append(
        f"{b.indent}{lhs} = stablehlo.custom_call @lapack_{letter}{fn}_ffi({', '.join(o.name for o in operands)}) "
        f"{{backend_config = {{{config}}}, api_version = 4 : i32, operand_layouts = [{ops_l}], "
        f"result_layouts = [{res_l}]{aliases}}} : ({in_types}) -> "
        f"{'(' + out_types + ')' if len(results) > 1 else out_types}{loc}")
    if len(results) == 1:
        return [HloValue(name, results[0])]
    return [HloValue(f"{name}#{i}", r) for i, r in enumerate(results)]


def conj(b: FuncBuilder, x: HloValue) -> HloValue:
    """The complex conjugate (a real ``x`` unchanged)."""
    if x.dtype.kind != "c":
        return x
    return b.complex(b.part("real", x), b.unary("negate", b.part("imag", x)))


def failed_to_nan(b: FuncBuilder, x: HloValue, info: HloValue) -> HloValue:
    """``x`` with NaN in every matrix whose ``info`` (shape: ``x``'s leading dims) is not 0."""
    ok = b.compare("EQ", info, b.full(0, info.shape, I32))
    ok = b.broadcast_in_dim(ok, x.shape, list(range(info.ndim)))
    return b.select(ok, x, b.full(np.nan, x.shape, x.dtype))


def eye_mask(b: FuncBuilder, shape: tuple[int, ...], cmp: str = "EQ", k: int = 0) -> HloValue:
    """``col - row <cmp> k`` over the last two axes (EQ 0: the diagonal; LE 0: the lower triangle)."""
    i64 = np.dtype(np.int64)
    n = len(shape)
    rows = b.iota(ShapedArray(shape, i64), n - 2)
    cols = b.iota(ShapedArray(shape, i64), n - 1)
    return b.compare(cmp, b.binary("subtract", cols, rows), b.full(k, shape, i64))


def triangle(b: FuncBuilder, x: HloValue, lower: bool) -> HloValue:
    """The lower (``col <= row``) or upper triangle of each matrix, zeros elsewhere."""
    keep = eye_mask(b, x.shape, "LE" if lower else "GE")
    return b.select(keep, x, b.full(0, x.shape, x.dtype))


def diagonal(b: FuncBuilder, x: HloValue) -> HloValue:
    """The diagonal of each (square) matrix: shape ``x.shape[:-1]``."""
    on = eye_mask(b, x.shape)
    return b.reduce(b.select(on, x, b.full(0, x.shape, x.dtype)), "add", 0, [x.ndim - 1])


def getrf(b: FuncBuilder, a: HloValue) -> tuple[HloValue, HloValue, HloValue]:
    """LU with partial pivoting of square matrices: (packed L\\U, 1-based pivots, info)."""
    batch, n = a.shape[:-2], a.shape[-1]
    lu, ipiv, info = custom_call(b, "getrf", [a], [a.aval, ShapedArray(batch + (n,), I32), ShapedArray(batch, I32)],
                                 [True, True, False, False], alias=(0, 0))
    return lu, ipiv, info


def pivot_parity(b: FuncBuilder, ipiv: HloValue) -> HloValue:
    """Whether each LU's row permutation is odd (bool, shape: the batch)."""
    rows = b.binary("add", b.iota(ipiv.aval, ipiv.ndim - 1), b.full(1, ipiv.shape, I32))
    swaps = b.reduce(b.convert(b.compare("NE", ipiv, rows), I32), "add", 0, [ipiv.ndim - 1])
    two = b.full(2, swaps.shape, I32)
    return b.compare("NE", b.binary("remainder", swaps, two), b.full(0, swaps.shape, I32))


def pivots_to_permutation(b: FuncBuilder, ipiv: HloValue) -> HloValue:
    """The row order ``perm`` (0-based, ``(P a)[i] = a[perm[i]]``) of LAPACK's sequential swaps:
    a ``stablehlo.while`` over the pivots, each swap a select on the whole batch."""
    nd, n = ipiv.ndim, ipiv.shape[-1]
    scalar = ShapedArray((), I32)
    iota = b.iota(ipiv.aval, nd - 1)
    cond_args = b.block_args([scalar, ipiv.aval])
    body_args = b.block_args([scalar, ipiv.aval])
    with b.region() as cond_lines:
        b.region_return([b.compare("LT", cond_args[0], b.full(n, (), I32))])
    with b.region() as body_lines:
        i, perm = body_args
        zero = b.full(0, (), I32)
        col = list(range(nd - 1))
        j = b.dynamic_slice(ipiv, [zero] * (nd - 1) + [i], ipiv.shape[:-1] + (1,))
        j = b.broadcast_in_dim(b.reshape(b.binary("subtract", j, b.full(1, j.shape, I32)), j.shape[:-1]),
                               ipiv.shape, col)
        at_i = b.compare("EQ", iota, b.broadcast_in_dim(i, ipiv.shape, []))
        at_j = b.compare("EQ", iota, j)
        none = b.full(0, ipiv.shape, I32)
        pi = b.broadcast_in_dim(b.reduce(b.select(at_i, perm, none), "add", 0, [nd - 1]), ipiv.shape, col)
        pj = b.broadcast_in_dim(b.reduce(b.select(at_j, perm, none), "add", 0, [nd - 1]), ipiv.shape, col)
        perm = b.select(at_i, pj, b.select(at_j, pi, perm))
        b.region_return([b.binary("add", i, b.full(1, (), I32)), perm])
    out = b.while_([b.full(0, (), I32), iota], (cond_args, cond_lines), (body_args, body_lines))
    return out[1]


def permute_rows(b: FuncBuilder, x: HloValue, perm: HloValue) -> HloValue:
    """``x[..., perm, :]`` for a batch of row orders (batch dims shared): one gather, as
    ``np.take_along_axis(x, perm[..., None], axis=-2)``."""
    i64 = np.dtype(np.int64)
    rows = b.reshape(b.convert(perm, i64), perm.shape + (1,))
    key = tuple(rows if k == x.ndim - 2 else
                b.iota(ShapedArray(tuple(d if q == k else 1 for q in range(x.ndim)), i64), k)
                for k, d in enumerate(x.shape))
    return lower_gather(b, x, key, x.aval)


def trsm(b: FuncBuilder, t: HloValue, x: HloValue, lower: bool, unit: bool = False,
         transpose: bool = False, left: bool = True) -> HloValue:
    """``op(t)^-1 x`` (``left``) or ``x op(t)^-1`` for triangular ``t``; batch dims shared."""
    attrs = {"side": L if left else ord("R"), "uplo": L if lower else U, "trans_x": ord("T") if transpose else N,
             "diag": U if unit else N}
    return custom_call(b, "trsm", [t, x], [x.aval], [True, True, True], attrs, alias=(0, 1))[0]


def lu_solve(b: FuncBuilder, a: HloValue, rhs: HloValue) -> HloValue:
    """``a^-1 rhs`` for square ``a`` and ``rhs`` (..., n, k) with the same batch dims; NaN where
    ``a`` is singular."""
    lu, ipiv, info = getrf(b, a)
    x = permute_rows(b, rhs, pivots_to_permutation(b, ipiv))
    x = trsm(b, lu, x, lower=True, unit=True)
    x = trsm(b, lu, x, lower=False)
    return failed_to_nan(b, x, info)


def gesdd(b: FuncBuilder, a: HloValue, mode: int) -> tuple[HloValue, HloValue, HloValue]:
    """``(u, s, vh)`` of each matrix (``mode``: A full, S reduced, N singular values only: ``u`` and
    ``vh`` then unset); the singular values real and descending; NaN where gesdd did not converge."""
    (m, n), k = a.shape[-2:], min(a.shape[-2:])
    batch = a.shape[:-2]
    full = mode == A
    u = ShapedArray(batch + (m, m if full else k), a.dtype)
    vt = ShapedArray(batch + (n if full else k, n), a.dtype)
    _, s, u_, vt_, info = custom_call(
        b, "gesdd", [a], [a.aval, ShapedArray(batch + (k,), real_dtype(a.dtype)), u, vt, ShapedArray(batch, I32)],
        [True, True, False, True, True, False], {"mode": mode}, alias=(0, 0))
    return failed_to_nan(b, u_, info), failed_to_nan(b, s, info), failed_to_nan(b, vt_, info)


def singular_values(b: FuncBuilder, a: HloValue) -> HloValue:
    """The singular values of each matrix (real, descending), NaN where gesdd did not converge."""
    return gesdd(b, a, N)[1]


def svd(b: FuncBuilder, a: HloValue) -> tuple[HloValue, HloValue, HloValue]:
    """The reduced SVD ``(u, s, vh)`` of each matrix, NaN where gesdd did not converge."""
    return gesdd(b, a, S)
