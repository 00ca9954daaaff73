"""np.linalg's kernels: LAPACK on CPU, cuSOLVER on a GPU, and the factorizations built on them.

On CPU each kernel is one ``stablehlo.custom_call @lapack_<s|d|c|z><fn>_ffi``: operands and results
are column-major per matrix (layout ``[n-2, n-1, n-3, ..., 0]``), vectors and the ``info`` status
row-major, leading dimensions a batch the kernel loops over, attributes (LAPACK's one-letter
flags as ``ui8`` character codes) in ``backend_config``. runtime/xla.py registers the kernels the
first time a program calls one (shared/RUNTIME_FACTS.md, "LAPACK").

On a GPU (``hlo.TARGET`` is "gpu") each kernel function below writes what jax writes for
``platform="cuda"`` (jax/_src/lax/linalg.py): the CUDA plugin's ``@cusolver_<fn>_ffi`` custom calls
(one name for every dtype; the same layouts; attributes as booleans in ``mhlo.backend_config``;
``mhlo.frontend_attributes = {num_batch_dims}``), ``@cu_lu_pivots_to_permutation`` for LU's row order,
``stablehlo.triangular_solve`` for ``trsm`` (XLA calls cuBLAS), and for the SVD jax's choice of
``gesvdj`` (Jacobi, both sides at most 1024) or ``gesvd``. runtime/xla.py registers the plugin's
kernels the first time a program calls one. ``geev`` (``eig``/``eigvals``) has no GPU kernel here:
refused, at the user's line.

``info`` is never ignored: where a kernel reports failure for a matrix (a singular ``getrf``
for a solve or an inverse, a ``potrf`` of a matrix that is not positive definite, an ``syevd``
or ``gesdd`` that does not converge), that matrix's results are NaN, as in JAX (NumPy raises
``LinAlgError``). ``det``/``slogdet`` read a singular LU as it is: determinant 0, as NumPy.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ..core import ShapedArray, TranspileError
from ..lower.hlo import TARGET, FuncBuilder, HloValue, aval_type, real_dtype
from .gather import lower_gather

I32 = np.dtype(np.int32)
L, U, N, V, A, S = (ord(c) for c in "LUNVAS")  # LAPACK's flags, as the kernels read them
JACOBI_MAX = 1024  # jax's GPU SVD: Jacobi (gesvdj) when both sides are at most this, else QR (gesvd)
JACOBI_BATCHED_MAX = 32  # gesvdj has no reduced mode up to this size (jax: its batched kernel is used)


GPU_OPT_IN = "SRCJAX_GPU_LINALG"


def on_gpu() -> bool:
    """Whether the module being lowered is for a GPU (cuSOLVER's kernels, not LAPACK's). Those kernels
    are written as jax writes them for cuda but have not yet run on a device in srcjax's checks
    (``benchmarks/gpu_linalg_check.py``): until they have, a program calling one is refused at the
    user's line unless ``SRCJAX_GPU_LINALG=1`` asks for them."""
    if TARGET.get() != "gpu":
        return False
    if os.environ.get(GPU_OPT_IN) != "1":
        raise TranspileError("np.linalg on a GPU (cuSOLVER) is not yet verified on a device in srcjax",
                             hint=f"compile this function with device='cpu', or set {GPU_OPT_IN}=1 to use "
                                  "the cuSOLVER kernels (experimental)")
    return True


def _layout(ndim: int, matrix: bool) -> str:
    """Minor-to-major layout: column-major matrices in a row-major batch, or all row-major."""
    dims = [ndim - 2, ndim - 1] + list(range(ndim - 3, -1, -1)) if matrix and ndim >= 2 else \
        list(range(ndim - 1, -1, -1))
    return f"dense<{dims}> : tensor<{ndim}xindex>" if dims else "dense<> : tensor<0xindex>"


def _emit_call(b: FuncBuilder, target: str, operands: Sequence[HloValue], results: Sequence[ShapedArray],
               attrs: str, alias: tuple[int, int] | None) -> list[HloValue]:
    """One ``stablehlo.custom_call @target`` with the attribute text ``attrs`` (before the aliases)."""
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
        f"{b.indent}{lhs} = stablehlo.custom_call @{target}({', '.join(o.name for o in operands)}) "
        f"{{{attrs.format(aliases=aliases)}}} : ({in_types}) -> "
        f"{'(' + out_types + ')' if len(results) > 1 else out_types}{loc}")
    if len(results) == 1:
        return [HloValue(name, results[0])]
    return [HloValue(f"{name}#{i}", r) for i, r in enumerate(results)]


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
    text = (f"backend_config = {{{{{config}}}}}, api_version = 4 : i32, operand_layouts = [{ops_l}], "
            f"result_layouts = [{res_l}]{{aliases}}")
    return _emit_call(b, f"lapack_{letter}{fn}_ffi", operands, results, text, alias)


def gpu_call(b: FuncBuilder, fn: str, operands: Sequence[HloValue], results: Sequence[ShapedArray],
             attrs: dict[str, str] | None = None, alias: tuple[int, int] | None = None,
             column_major: bool = True, matrix_dims: int = 2) -> list[HloValue]:
    """One cuSOLVER kernel of the CUDA plugin as jax lowers it (``_linalg_ffi_lowering``): ``fn`` the
    target's name (``"cusolver_potrf_ffi"``); the operands and results of the operands' largest rank
    column-major (unless ``column_major`` is False), the others row-major; ``attrs`` the FFI attributes,
    their values as MLIR writes them (``"true"``, ``"0 : ui8"``); ``matrix_dims`` the trailing dims that
    are not a batch."""
    nd = max(o.ndim for o in operands)
    ops_l = ", ".join(_layout(o.ndim, column_major and o.ndim == nd) for o in operands)
    res_l = ", ".join(_layout(len(r.shape), column_major and len(r.shape) == nd) for r in results)
    config = ", ".join(f"{k} = {v}" for k, v in sorted((attrs or {}).items()))
    text = (f'backend_config = "", mhlo.backend_config = {{{{{config}}}}}, mhlo.frontend_attributes = '
            f'{{{{num_batch_dims = "{nd - matrix_dims}"}}}}, operand_layouts = [{ops_l}]{{aliases}}, '
            f"result_layouts = [{res_l}]")
    return _emit_call(b, fn, operands, results, text, alias)


def _bool(v: bool) -> str:
    return "true" if v else "false"


def no_gpu_kernel(what: str) -> TranspileError:
    """The refusal of a kernel srcjax has no GPU lowering for (the specializer places it at the call)."""
    return TranspileError(f"{what} has no GPU kernel in srcjax yet (jax calls a hybrid CPU/GPU kernel)",
                          hint="compile this function with device='cpu'")


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
    results = [a.aval, ShapedArray(batch + (n,), I32), ShapedArray(batch, I32)]
    if on_gpu():
        lu, ipiv, info = gpu_call(b, "cusolver_getrf_ffi", [a], results, alias=(0, 0))
    else:
        lu, ipiv, info = custom_call(b, "getrf", [a], results, [True, True, False, False], alias=(0, 0))
    return lu, ipiv, info


def pivot_parity(b: FuncBuilder, ipiv: HloValue) -> HloValue:
    """Whether each LU's row permutation is odd (bool, shape: the batch)."""
    rows = b.binary("add", b.iota(ipiv.aval, ipiv.ndim - 1), b.full(1, ipiv.shape, I32))
    swaps = b.reduce(b.convert(b.compare("NE", ipiv, rows), I32), "add", 0, [ipiv.ndim - 1])
    two = b.full(2, swaps.shape, I32)
    return b.compare("NE", b.binary("remainder", swaps, two), b.full(0, swaps.shape, I32))


def pivots_to_permutation(b: FuncBuilder, ipiv: HloValue) -> HloValue:
    """The row order ``perm`` (0-based, ``(P a)[i] = a[perm[i]]``) of LAPACK's sequential swaps:
    a ``stablehlo.while`` over the pivots, each swap a select on the whole batch; on a GPU the plugin's
    kernel, which reads 0-based pivots."""
    nd, n = ipiv.ndim, ipiv.shape[-1]
    if on_gpu():
        zero_based = b.binary("subtract", ipiv, b.full(1, ipiv.shape, I32))
        return gpu_call(b, "cu_lu_pivots_to_permutation", [zero_based], [ipiv.aval], column_major=False,
                        matrix_dims=1)[0]
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
    """``op(t)^-1 x`` (``left``) or ``x op(t)^-1`` for triangular ``t``; batch dims shared. On a GPU
    ``stablehlo.triangular_solve``, as jax (XLA calls cuBLAS's trsm)."""
    if on_gpu():
        return b.emit(f'"stablehlo.triangular_solve"({t.name}, {x.name}) <{{left_side = {_bool(left)}, '
                      f"lower = {_bool(lower)}, transpose_a = #stablehlo<transpose "
                      f"{'TRANSPOSE' if transpose else 'NO_TRANSPOSE'}>, unit_diagonal = {_bool(unit)}}}> : "
                      f"({aval_type(t.aval)}, {aval_type(x.aval)}) -> {aval_type(x.aval)}", x.aval)
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
    if on_gpu():
        return _gesvd_gpu(b, a, mode)
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


def _gesvd_gpu(b: FuncBuilder, a: HloValue, mode: int) -> tuple[HloValue, HloValue, HloValue]:
    """:func:`gesdd` on a GPU, as jax: ``gesvdj`` (Jacobi; it returns ``v``, not ``vh``, and has no
    reduced mode up to 32 x 32, where the full factors are sliced) or, past 1024, ``gesvd`` (which
    factors the transpose of a wide matrix: row-major layouts, the factors swapped)."""
    (m, n), k = a.shape[-2:], min(a.shape[-2:])
    batch, nb = a.shape[:-2], a.ndim - 2
    full, uv = mode != S, mode != N  # (singular values only: jax's full_matrices=True)
    s_aval, info_aval = ShapedArray(batch + (k,), real_dtype(a.dtype)), ShapedArray(batch, I32)
    if m <= JACOBI_MAX and n <= JACOBI_MAX:
        econ = not full and m > JACOBI_BATCHED_MAX and n > JACOBI_BATCHED_MAX
        u_aval = ShapedArray(batch + (m, k if econ else m), a.dtype)
        v_aval = ShapedArray(batch + (n, k if econ else n), a.dtype)
        _, s, u, v, info = gpu_call(b, "cusolver_gesvdj_ffi", [a], [a.aval, s_aval, u_aval, v_aval, info_aval],
                                    {"compute_uv": _bool(uv), "full_matrices": _bool(not econ)}, alias=(0, 0))
        vt = conj(b, b.transpose(v, list(range(nb)) + [nb + 1, nb])) if uv else v
        if uv and not full and not econ:
            u = b.slice(u, [0] * a.ndim, batch + (m, k))
            vt = b.slice(vt, [0] * a.ndim, batch + (k, n))
    else:
        transposed = m < n
        u_aval = ShapedArray(batch + (m, m if full else k) if uv else (), a.dtype)
        vt_aval = ShapedArray(batch + (n if full else k, n) if uv else (), a.dtype)
        outs = [a.aval, s_aval] + ([vt_aval, u_aval] if transposed else [u_aval, vt_aval]) + [info_aval]
        _, s, x, y, info = gpu_call(b, "cusolver_gesvd_ffi", [a], outs, {"compute_uv": _bool(uv), "full_matrices":
                                    _bool(full), "transposed": _bool(transposed)}, alias=(0, 0),
                                    column_major=not transposed)
        u, vt = (y, x) if transposed else (x, y)
    if not uv:  # (u and vt unset)
        return u, failed_to_nan(b, s, info), vt
    return failed_to_nan(b, u, info), failed_to_nan(b, s, info), failed_to_nan(b, vt, info)


def potrf(b: FuncBuilder, a: HloValue) -> tuple[HloValue, HloValue]:
    """The lower Cholesky factor of each matrix (above the diagonal: whatever the kernel left), info."""
    results = [a.aval, ShapedArray(a.shape[:-2], I32)]
    if on_gpu():
        f, info = gpu_call(b, "cusolver_potrf_ffi", [a], results, {"lower": "true"}, alias=(0, 0))
    else:
        f, info = custom_call(b, "potrf", [a], results, [True, True, False], {"uplo": L}, alias=(0, 0))
    return f, info


def syevd(b: FuncBuilder, a: HloValue, uplo: int, vectors: bool) -> tuple[HloValue, HloValue, HloValue]:
    """(eigenvectors in columns, eigenvalues ascending, info) of each Hermitian matrix, reading its
    ``uplo`` (``L``/``U``) triangle; a complex ``a``: heevd. On a GPU the vectors are always computed."""
    results = [a.aval, ShapedArray(a.shape[:-1], real_dtype(a.dtype)), ShapedArray(a.shape[:-2], I32)]
    if on_gpu():
        v, w, info = gpu_call(b, "cusolver_syevd_ffi", [a], results,
                              {"algorithm": "0 : ui8", "lower": _bool(uplo == L)}, alias=(0, 0))
    else:
        v, w, info = custom_call(b, "heevd" if a.dtype.kind == "c" else "syevd", [a], results,
                                 [True, True, False, False], {"mode": V if vectors else N, "uplo": uplo}, alias=(0, 0))
    return v, w, info


def geqrf(b: FuncBuilder, a: HloValue) -> tuple[HloValue, HloValue]:
    """QR in Householder form: (R above the diagonal, the reflectors below; their scales ``tau``)."""
    results = [a.aval, ShapedArray(a.shape[:-2] + (min(a.shape[-2:]),), a.dtype)]
    if on_gpu():
        f, taus = gpu_call(b, "cusolver_geqrf_ffi", [a], results, alias=(0, 0))
    else:
        f, taus = custom_call(b, "geqrf", [a], results, [True, True, False], alias=(0, 0))
    return f, taus


def orgqr(b: FuncBuilder, reflectors: HloValue, taus: HloValue) -> HloValue:
    """Q (the reflectors' shape) from :func:`geqrf`'s reflectors; a complex one: ungqr."""
    if on_gpu():
        return gpu_call(b, "cusolver_orgqr_ffi", [reflectors, taus], [reflectors.aval], alias=(0, 0))[0]
    fn = "ungqr" if reflectors.dtype.kind == "c" else "orgqr"
    return custom_call(b, fn, [reflectors, taus], [reflectors.aval], [True, False, True], alias=(0, 0))[0]
