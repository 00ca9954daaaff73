"""np.linalg decompositions and solvers: solve, inv, det, slogdet, cholesky, eigh, eigvalsh, eig, eigvals, svd, qr,
cond, pinv, lstsq, matrix_power, multi_dot.

NumPy's semantics: the last two axes are the matrix, any leading axes a batch (so a batching rule
only adds one more); results float32 for float32 operands, float64 otherwise (a float32/float64 mix
promotes; integers and booleans compute in float64); complex64/complex128 operands give complex
results where NumPy's are complex and real ones where NumPy's are real (eigenvalues of a Hermitian
matrix, singular values, ``slogdet``'s log-determinant, ``cond``, ``lstsq``'s residuals). float16
operands are refused (``DTypeError``), as NumPy refuses them.
Lowered to jaxlib's LAPACK kernels (:mod:`.lapack`; the c/z kernels for complex operands, ``heevd``
and ``ungqr`` where the real ones are ``syevd`` and ``orgqr``); where NumPy raises ``LinAlgError`` (a singular
matrix to solve or invert, a Cholesky factor of a matrix that is not positive definite) compiled code
gives NaNs for that matrix, as JAX does.

Derivatives are JAX's. ``cholesky``, ``eigh`` and ``eigvalsh`` read one triangle of their operand, as
NumPy does, and their derivatives are those of JAX, which symmetrizes the operand first: the
cotangent of ``a`` is a symmetric (complex: Hermitian, under JAX's convention its conjugate) matrix.
``slogdet``'s sign has no derivative for a real operand (JAX: for a complex one, its phase's).
Complex derivatives follow JAX's rules (conjugate transposes where JAX has them) and its convention
(srcjax/complex_adjoint.py); the helpers are in srcjax/linalg_adjoint.py.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core import DTypeError, ShapedArray, ShapeError
from ..lower.hlo import HloValue, real_dtype
from . import batch_rules, lapack
from .common import broadcast_shapes, fmt_shape
from .elementwise import result_dtype
from .linalg import _matmul_shapes, matmul_hlo  # _matmul_shapes: the shape rule of `@`, shared with multi_dot
from .registry import LowerCtx, defprim


def _float_dtype(name: str, *avals: ShapedArray) -> np.dtype:
    """NumPy's: float32 stays float32; integers and booleans compute in float64; complex64/complex128
    stay complex (LAPACK's c/z kernels)."""
    for a in avals:
        if a.dtype.kind not in "biuc" and a.dtype.name not in ("float32", "float64"):
            raise DTypeError(f"np.linalg.{name}: array type {a.dtype.name} is unsupported in linalg",
                             hint="convert first, e.g. a.astype(np.float64)")
    return np.result_type(*(a.dtype if a.dtype.kind in "fc" else np.float64 for a in avals))


def _square(name: str, a: ShapedArray) -> int:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"np.linalg.{name}: the last two axes must be a square matrix, got shape "
                         f"{fmt_shape(a.shape)}",
                         hint="a stack of n x n matrices has shape (..., n, n)")
    if a.shape[-1] == 0:
        raise ShapeError(f"np.linalg.{name}: empty (0 x 0) matrices are not supported")
    return a.shape[-1]


def _matrix(name: str, a: ShapedArray) -> None:
    if a.ndim < 2:
        raise ShapeError(f"np.linalg.{name}: needs at least a 2-D array (..., m, n), got shape {fmt_shape(a.shape)}")
    if 0 in a.shape[-2:]:
        raise ShapeError(f"np.linalg.{name}: empty matrices are not supported, got shape {fmt_shape(a.shape)}")


def _a_stub(a):  # type: ignore[no-untyped-def]
    ...


# -- solve -------------------------------------------------------------------------------
def _ab_stub(a, b):  # type: ignore[no-untyped-def]
    ...


def _solve_plan(a: ShapedArray, b: ShapedArray) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(broadcast batch shape, result shape). As NumPy 2: ``b`` is one vector only when 1-D."""
    n = _square("solve", a)
    if b.ndim == 1:
        if b.shape[0] != n:
            raise ShapeError(f"np.linalg.solve: a has shape {fmt_shape(a.shape)} but b has shape {fmt_shape(b.shape)}"
                             f" ({n} != {b.shape[0]})")
        return a.shape[:-2], a.shape[:-1]
    if b.ndim < 1 or b.shape[-2] != n:
        raise ShapeError(f"np.linalg.solve: a has shape {fmt_shape(a.shape)} but b has shape {fmt_shape(b.shape)}",
                         hint="b is one vector (n,) or a stack of (n, k) matrices; a stack of vectors "
                              "is b[..., None] (then [..., 0] on the result)")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], what="np.linalg.solve batch dimensions")
    return batch, batch + b.shape[-2:]


def _solve_abstract(a: ShapedArray, b: ShapedArray) -> ShapedArray:
    d = _float_dtype("solve", a, b)
    return ShapedArray(_solve_plan(a, b)[1], d)


def _solve_lower(ctx: LowerCtx, a: HloValue, b: HloValue) -> HloValue:
    bl, out = ctx.b, ctx.avals_out[0]
    batch, _ = _solve_plan(a.aval, b.aval)
    src = bl.repeated.get(a.name)
    if src is not None and src.ndim == 2:  # one matrix repeated along a stack (vmap's shared matrix read in
        # a branch on batched data): one factorization, the right sides of the stack its columns
        rhs = bl.convert(b, out.dtype)
        rhs = bl.reshape(rhs, (b.shape[0], 1)) if b.ndim == 1 else rhs
        nb, (n, k) = rhs.ndim - 2, rhs.shape[-2:]
        cols = bl.reshape(bl.transpose(rhs, [nb] + list(range(nb)) + [nb + 1]), (n, math.prod(rhs.shape[:nb]) * k))
        x = lapack.lu_solve(bl, bl.convert(src, out.dtype), cols)
        x = bl.transpose(bl.reshape(x, (n,) + rhs.shape[:nb] + (k,)), list(range(1, nb + 1)) + [0, nb + 1])
        return bl.broadcast_to(bl.reshape(x, (n,)) if b.ndim == 1 else x, out.shape)
    a = bl.broadcast_to(bl.convert(a, out.dtype), batch + a.shape[-2:])
    rhs = bl.convert(b, out.dtype)
    rhs = bl.reshape(rhs, (b.shape[0], 1)) if b.ndim == 1 else rhs
    rhs = bl.broadcast_to(rhs, batch + rhs.shape[-2:])
    x = lapack.lu_solve(bl, a, rhs)
    return bl.reshape(x, out.shape)


defprim("solve", np.linalg.solve, _ab_stub, abstract_eval=_solve_abstract, lower=_solve_lower,
        arrays=("a", "b"), path="np.linalg.solve")


# -- inv -----------------------------------------------------------------------------------
def _inv_abstract(a: ShapedArray) -> ShapedArray:
    _square("inv", a)
    return ShapedArray(a.shape, _float_dtype("inv", a))


def _inv_lower(ctx: LowerCtx, a: HloValue) -> HloValue:
    a = ctx.b.convert(a, ctx.avals_out[0].dtype)
    eye = lapack.eye_mask(ctx.b, a.shape)
    eye = ctx.b.convert(eye, a.dtype)
    return lapack.lu_solve(ctx.b, a, eye)


defprim("inv", np.linalg.inv, _a_stub, abstract_eval=_inv_abstract, lower=_inv_lower, path="np.linalg.inv",
        arrays=("a",))


# -- det / slogdet -----------------------------------------------------------------------------
def _det_abstract(a: ShapedArray) -> ShapedArray:
    _square("det", a)
    return ShapedArray(a.shape[:-2], _float_dtype("det", a))


def _lu_diagonal(ctx: LowerCtx, a: HloValue) -> tuple[HloValue, HloValue]:
    """(diagonal of U, whether the row permutation is odd) of ``a``'s LU."""
    a = ctx.b.convert(a, ctx.avals_out[0].dtype)
    lu, ipiv, _ = lapack.getrf(ctx.b, a)  # info > 0: an exact zero on U's diagonal, which we read
    return lapack.diagonal(ctx.b, lu), lapack.pivot_parity(ctx.b, ipiv)


def _det_lower(ctx: LowerCtx, a: HloValue) -> HloValue:
    b = ctx.b
    diag, odd = _lu_diagonal(ctx, a)
    d = b.reduce(diag, "multiply", 1, [diag.ndim - 1])
    return b.select(odd, b.unary("negate", d), d)


defprim("det", np.linalg.det, _a_stub, abstract_eval=_det_abstract, lower=_det_lower, path="np.linalg.det",
        arrays=("a",))


def _slogdet_abstract(a: ShapedArray) -> list[ShapedArray]:
    _square("slogdet", a)
    d = _float_dtype("slogdet", a)
    return [ShapedArray(a.shape[:-2], d), ShapedArray(a.shape[:-2], real_dtype(d))]


def _slogdet_lower(ctx: LowerCtx, a: HloValue) -> list[HloValue]:
    b = ctx.b
    diag, odd = _lu_diagonal(ctx, a)
    last = [diag.ndim - 1]
    sign = b.reduce(b.unary("sign", diag), "multiply", 1, last)  # complex: the product of the phases
    sign = b.select(odd, b.unary("negate", sign), sign)
    mag = b.unary("abs", diag, ShapedArray(diag.shape, real_dtype(diag.dtype)))
    return [sign, b.reduce(b.unary("log", mag), "add", 0, last)]


defprim("slogdet", np.linalg.slogdet, _a_stub, abstract_eval=_slogdet_abstract, lower=_slogdet_lower,
        path="np.linalg.slogdet", arrays=("a",), results="list")


# -- cholesky ------------------------------------------------------------------------------------
def _cholesky_stub(a, /, *, upper=False):  # type: ignore[no-untyped-def]
    ...


def _cholesky_abstract(a: ShapedArray, upper: Any = False) -> ShapedArray:
    _square("cholesky", a)
    if upper is not False:
        raise DTypeError("np.linalg.cholesky: upper=True is not supported",
                         hint="take the lower factor's transpose: np.swapaxes(np.linalg.cholesky(a), -1, -2)")
    return ShapedArray(a.shape, _float_dtype("cholesky", a))


def _cholesky_lower(ctx: LowerCtx, a: HloValue, upper: Any = False) -> HloValue:
    b = ctx.b
    a = b.convert(a, ctx.avals_out[0].dtype)
    f, info = lapack.potrf(b, a)
    return lapack.failed_to_nan(b, lapack.triangle(b, f, lower=True), info)


defprim("cholesky", np.linalg.cholesky, _cholesky_stub, abstract_eval=_cholesky_abstract, lower=_cholesky_lower,
        path="np.linalg.cholesky", arrays=("a",))


# -- eigh / eigvalsh -----------------------------------------------------------------------------
def _eigh_stub(a, UPLO="L"):  # type: ignore[no-untyped-def]
    ...


def _uplo(name: str, UPLO: Any) -> int:
    if UPLO not in ("L", "U"):
        raise DTypeError(f"np.linalg.{name}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return ord(UPLO)


def _eigh_abstract(a: ShapedArray, UPLO: Any = "L") -> list[ShapedArray]:
    _square("eigh", a)
    _uplo("eigh", UPLO)
    d = _float_dtype("eigh", a)
    return [ShapedArray(a.shape[:-1], real_dtype(d)), ShapedArray(a.shape, d)]


def _syevd(ctx: LowerCtx, a: HloValue, UPLO: Any, vectors: bool) -> tuple[HloValue, HloValue]:
    """(eigenvalues ascending, eigenvectors in columns), NaN where LAPACK failed; a complex (Hermitian)
    ``a``: heevd, the eigenvalues real."""
    b, d = ctx.b, _float_dtype("eigh", a.aval)
    a = b.convert(a, d)
    v, w, info = lapack.syevd(b, a, _uplo("eigh", UPLO), vectors)
    return lapack.failed_to_nan(b, w, info), lapack.failed_to_nan(b, v, info)


def _eigh_lower(ctx: LowerCtx, a: HloValue, UPLO: Any = "L") -> list[HloValue]:
    return list(_syevd(ctx, a, UPLO, True))


defprim("eigh", np.linalg.eigh, _eigh_stub, abstract_eval=_eigh_abstract, lower=_eigh_lower,
        path="np.linalg.eigh", arrays=("a",), results="list")


def _eigvalsh_abstract(a: ShapedArray, UPLO: Any = "L") -> ShapedArray:
    return _eigh_abstract(a, UPLO)[0]


defprim("eigvalsh", np.linalg.eigvalsh, _eigh_stub, abstract_eval=_eigvalsh_abstract,
        lower=lambda ctx, a, UPLO="L": _syevd(ctx, a, UPLO, False)[0], path="np.linalg.eigvalsh", arrays=("a",))


# -- eig / eigvals (general matrices: LAPACK geev) ---------------------------------------------------------
def _complex_of(d: np.dtype) -> np.dtype:
    return d if d.kind == "c" else np.dtype(np.complex64 if d == np.float32 else np.complex128)


def _eig_abstract(a: ShapedArray) -> list[ShapedArray]:
    """Complex eigenvalues and eigenvectors, always (as JAX: NumPy's dtype is real for a real matrix
    whose eigenvalues all are, which a static dtype cannot follow)."""
    _square("eig", a)
    d = _complex_of(_float_dtype("eig", a))
    return [ShapedArray(a.shape[:-1], d), ShapedArray(a.shape, d)]


def _geev(ctx: LowerCtx, a: HloValue, vectors: bool) -> tuple[HloValue, HloValue]:
    """(eigenvalues, right eigenvectors in columns: unit 2-norm, largest component real), NaN where
    geev failed. A real ``a``: geev's real and imaginary parts of the eigenvalues, complex vectors."""
    b = ctx.b
    if lapack.on_gpu():
        raise lapack.no_gpu_kernel("np.linalg.eig/eigvals (LAPACK geev)")
    a = b.convert(a, _float_dtype("eig", a.aval))
    batch, n, cd = a.shape[:-2], a.shape[-1], _complex_of(a.dtype)
    vec = ShapedArray(a.shape, cd)
    vals = [ShapedArray(batch + (n,), a.dtype)] * (1 if a.dtype.kind == "c" else 2)
    *w, _, vr, info = lapack.custom_call(
        b, "geev", [a], [*vals, vec, vec, ShapedArray(batch, lapack.I32)],
        [True] + [False] * len(vals) + [True, True, False],
        {"compute_left": lapack.N, "compute_right": lapack.V if vectors else lapack.N})
    ww = w[0] if len(w) == 1 else b.complex(w[0], w[1])
    return lapack.failed_to_nan(b, ww, info), lapack.failed_to_nan(b, vr, info)


defprim("eig", np.linalg.eig, _a_stub, abstract_eval=_eig_abstract, lower=lambda ctx, a: list(_geev(ctx, a, True)),
        path="np.linalg.eig", arrays=("a",), results="list")
defprim("eigvals", np.linalg.eigvals, _a_stub, abstract_eval=lambda a: _eig_abstract(a)[0],
        lower=lambda ctx, a: _geev(ctx, a, False)[0], path="np.linalg.eigvals", arrays=("a",))


# -- svd -------------------------------------------------------------------------------------------
def _svd_stub(a, full_matrices=True, compute_uv=True, hermitian=False):  # type: ignore[no-untyped-def]
    ...


def _static_bool(name: str, what: str, v: Any) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise DTypeError(f"np.linalg.{name}: {what} must be a literal True or False, got {v!r}")
    return bool(v)


def _svd_abstract(a: ShapedArray, full_matrices: Any = True, compute_uv: Any = True,
                  hermitian: Any = False) -> Any:
    _matrix("svd", a)
    d = _float_dtype("svd", a)
    full = _static_bool("svd", "full_matrices", full_matrices)
    if _static_bool("svd", "hermitian", hermitian):
        raise DTypeError("np.linalg.svd: hermitian=True is not supported", hint="use np.linalg.eigh")
    (m, n), k = a.shape[-2:], min(a.shape[-2:])
    s = ShapedArray(a.shape[:-2] + (k,), real_dtype(d))
    if not _static_bool("svd", "compute_uv", compute_uv):
        return s
    b = a.shape[:-2]
    return [ShapedArray(b + (m, m if full else k), d), s, ShapedArray(b + (n if full else k, n), d)]


def _svd_lower(ctx: LowerCtx, a: HloValue, full_matrices: Any = True, compute_uv: Any = True,
               hermitian: Any = False) -> Any:
    b = ctx.b
    a = b.convert(a, _float_dtype("svd", a.aval))
    mode = (lapack.A if full_matrices else lapack.S) if compute_uv else lapack.N
    u, s, vt = lapack.gesdd(b, a, mode)
    return [u, s, vt] if compute_uv else s


defprim("svd", np.linalg.svd, _svd_stub, abstract_eval=_svd_abstract, lower=_svd_lower, path="np.linalg.svd",
        arrays=("a",), results=lambda args: "array" if args.get("compute_uv") in ("False", "0") else "list")


# -- qr ------------------------------------------------------------------------------------------------
def _qr_stub(a, mode="reduced"):  # type: ignore[no-untyped-def]
    ...


def _qr_abstract(a: ShapedArray, mode: Any = "reduced") -> list[ShapedArray]:
    _matrix("qr", a)
    d = _float_dtype("qr", a)
    if mode != "reduced":
        raise DTypeError(f"np.linalg.qr: mode={mode!r} is not supported", hint="mode='reduced' (the default)")
    (m, n), k = a.shape[-2:], min(a.shape[-2:])
    return [ShapedArray(a.shape[:-2] + (m, k), d), ShapedArray(a.shape[:-2] + (k, n), d)]


def _qr_lower(ctx: LowerCtx, a: HloValue, mode: Any = "reduced") -> list[HloValue]:
    """geqrf (R above the diagonal, Householder reflectors below), then orgqr (Q from them)."""
    b = ctx.b
    a = b.convert(a, ctx.avals_out[0].dtype)
    nd, (m, n), k = a.ndim, a.shape[-2:], min(a.shape[-2:])
    f, taus = lapack.geqrf(b, a)
    r = lapack.triangle(b, b.slice(f, [0] * nd, a.shape[:-2] + (k, n)), lower=False)
    reflectors = b.slice(f, [0] * nd, a.shape[:-2] + (m, k))
    q = lapack.orgqr(b, reflectors, taus)
    return [q, r]


defprim("qr", np.linalg.qr, _qr_stub, abstract_eval=_qr_abstract, lower=_qr_lower, path="np.linalg.qr",
        arrays=("a",), results="list")


# -- cond (through singular values) --------------------------------------------------------------------
def _cond_stub(x, p=None):  # type: ignore[no-untyped-def]
    ...


def _cond_abstract(x: ShapedArray, p: Any = None) -> ShapedArray:
    _matrix("cond", x)
    if isinstance(p, str) or p not in (None, 2, -2):
        raise DTypeError(f"np.linalg.cond: p={p!r} is not supported", hint="p=None, 2 or -2 (singular values)")
    return ShapedArray(x.shape[:-2], real_dtype(_float_dtype("cond", x)))


def _cond_lower(ctx: LowerCtx, x: HloValue, p: Any = None) -> HloValue:
    b = ctx.b
    s = lapack.singular_values(b, b.convert(x, _float_dtype("cond", x.aval)))
    last = [s.ndim - 1]
    hi, lo = b.reduce(s, "maximum", -np.inf, last), b.reduce(s, "minimum", np.inf, last)
    return b.binary("divide", lo, hi) if p == -2 else b.binary("divide", hi, lo)


defprim("cond", np.linalg.cond, _cond_stub, abstract_eval=_cond_abstract, lower=_cond_lower, path="np.linalg.cond",
        arrays=("x",))


# -- pinv ----------------------------------------------------------------------------------------------
def _pinv_stub(a, rcond=None, hermitian=False, *, rtol=None):  # type: ignore[no-untyped-def]
    ...  # (NumPy's rtol defaults to a private marker; rtol=None here is that default, see below)


def _pinv_rcond(a: ShapedArray, rcond: Any, hermitian: Any, rtol: Any) -> float:
    """NumPy's relative cutoff of small singular values (a static number): ``rcond``, else ``rtol``,
    else 1e-15. One difference: NumPy reads an explicit ``rtol=None`` as ``max(m, n) * eps``; srcjax
    cannot tell it from no ``rtol`` and uses 1e-15 (write ``rtol=max(m, n) * np.finfo(dtype).eps``)."""
    if hermitian is not False:
        raise DTypeError("np.linalg.pinv: hermitian=True is not supported")
    if rcond is not None and rtol is not None:
        raise ShapeError("np.linalg.pinv: `rtol` and `rcond` can't be both set.")
    rcond = rcond if rcond is not None else rtol if rtol is not None else 1e-15
    if not isinstance(rcond, (int, float, np.integer, np.floating)) or isinstance(rcond, bool):
        raise DTypeError(f"np.linalg.pinv: rcond/rtol must be a static number, got {rcond!r}")
    return float(rcond)


def _pinv_abstract(a: ShapedArray, rcond: Any = None, hermitian: Any = False, rtol: Any = None) -> ShapedArray:
    _matrix("pinv", a)
    _pinv_rcond(a, rcond, hermitian, rtol)
    return ShapedArray(a.shape[:-2] + (a.shape[-1], a.shape[-2]), _float_dtype("pinv", a))


def _pinv_lower(ctx: LowerCtx, a: HloValue, rcond: Any = None, hermitian: Any = False,
                rtol: Any = None) -> HloValue:
    """``vh^H diag(1/s) u^H`` over the singular values above ``rcond * max(s)`` (as NumPy)."""
    b, out = ctx.b, ctx.avals_out[0]
    cut = _pinv_rcond(a.aval, rcond, hermitian, rtol)
    a = b.convert(a, out.dtype)
    u, s, vt = lapack.svd(b, a)
    u, vt = lapack.conj(b, u), lapack.conj(b, vt)
    nb = len(a.shape[:-2])
    smax = b.broadcast_in_dim(b.reduce(s, "maximum", -np.inf, [nb]), s.shape, list(range(nb)))
    large = b.compare("GT", s, b.binary("multiply", smax, b.full(cut, s.shape, s.dtype)))
    s_inv = b.select(large, b.binary("divide", b.full(1, s.shape, s.dtype), s), b.full(0, s.shape, s.dtype))
    w = b.binary("multiply", u, b.convert(b.broadcast_in_dim(s_inv, u.shape, list(range(nb)) + [nb + 1]), u.dtype))
    bd = list(range(nb))
    return b.dot_general(vt, w, (bd, bd), ([nb], [nb + 1]), out)


defprim("pinv", np.linalg.pinv, _pinv_stub, abstract_eval=_pinv_abstract, lower=_pinv_lower, path="np.linalg.pinv",
        arrays=("a",))


# -- lstsq ---------------------------------------------------------------------------------------------
def _lstsq_stub(a, b, rcond=None):  # type: ignore[no-untyped-def]
    ...


def _lstsq_plan(a: ShapedArray, b: ShapedArray, rcond: Any) -> tuple[float, bool]:
    """(the relative cutoff of small singular values, whether residuals are computed: m > n)."""
    if a.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise ShapeError(f"np.linalg.lstsq: a must be (m, n) and b (m,) or (m, k), got {fmt_shape(a.shape)} and "
                         f"{fmt_shape(b.shape)}", hint="np.linalg.lstsq takes one matrix, not a stack")
    if 0 in a.shape:
        raise ShapeError(f"np.linalg.lstsq: empty matrices are not supported, got shape {fmt_shape(a.shape)}")
    d = _float_dtype("lstsq", a, b)
    if rcond is None:
        rcond = float(np.finfo(d).eps) * max(a.shape)
    if not isinstance(rcond, (int, float, np.integer, np.floating)) or isinstance(rcond, bool):
        raise DTypeError(f"np.linalg.lstsq: rcond must be a static number or None, got {rcond!r}")
    return float(rcond), a.shape[0] > a.shape[1]


def _lstsq_abstract(a: ShapedArray, b: ShapedArray, rcond: Any = None) -> list[ShapedArray]:
    _, resid = _lstsq_plan(a, b, rcond)
    d = _float_dtype("lstsq", a, b)
    k = b.shape[1] if b.ndim == 2 else 1
    return [ShapedArray((a.shape[1],) + b.shape[1:], d), ShapedArray((k if resid else 0,), real_dtype(d)),
            ShapedArray((), np.dtype(np.int32)), ShapedArray((min(a.shape),), real_dtype(d))]


def _lstsq_lower(ctx: LowerCtx, a: HloValue, b: HloValue, rcond: Any = None) -> list[HloValue]:
    """``x = vh^T diag(1/s) u^T b`` over the singular values above ``rcond * max(s)`` (NumPy's gelsd
    cut); residuals ``sum((b - a x)^2, axis=0)`` when m > n, whatever the rank (as JAX: NumPy gives
    an empty array for a rank-deficient ``a``); the rank counts the singular values kept."""
    bl = ctx.b
    x_aval, r_aval, rank_aval, _ = ctx.avals_out
    cut, resid = _lstsq_plan(a.aval, b.aval, rcond)
    d = x_aval.dtype
    a, b = bl.convert(a, d), bl.convert(b, d)
    b2 = bl.reshape(b, (b.shape[0], 1)) if b.ndim == 1 else b
    u, s, vt = lapack.svd(bl, a)
    u, vt = lapack.conj(bl, u), lapack.conj(bl, vt)
    rd = s.dtype
    smax = bl.broadcast_in_dim(bl.reduce(s, "maximum", -np.inf, [0]), s.shape, [])
    large = bl.compare("GT", s, bl.binary("multiply", smax, bl.full(cut, s.shape, rd)))
    s_inv = bl.convert(bl.select(large, bl.binary("divide", bl.full(1, s.shape, rd), s), bl.full(0, s.shape, rd)), d)
    k = b2.shape[1]
    utb = bl.dot_general(u, b2, ([], []), ([0], [0]), ShapedArray((s.shape[0], k), d))
    utb = bl.binary("multiply", utb, bl.broadcast_in_dim(s_inv, utb.shape, [0]))
    x2 = bl.dot_general(vt, utb, ([], []), ([0], [0]), ShapedArray((a.shape[1], k), d))
    if resid:
        r = bl.binary("subtract", b2, bl.dot_general(a, x2, ([], []), ([1], [0]), b2.aval))
        res = bl.reduce(bl.abs2(r), "add", 0, [0])
    else:
        res = bl.full(0, r_aval.shape, r_aval.dtype)
    rank = bl.reduce(bl.convert(large, rank_aval.dtype), "add", 0, [0])
    return [bl.reshape(x2, x_aval.shape), bl.reshape(res, r_aval.shape), rank, s]


defprim("lstsq", np.linalg.lstsq, _lstsq_stub, abstract_eval=_lstsq_abstract, lower=_lstsq_lower,
        path="np.linalg.lstsq", arrays=("a", "b"), results="list")


# -- matrix_power / multi_dot: products of matmuls ------------------------------------------------------
def _matrix_power_stub(a, n):  # type: ignore[no-untyped-def]
    ...


def _power(n: Any) -> int:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise DTypeError(f"np.linalg.matrix_power: the exponent must be a static integer, got {n!r}")
    return int(n)


def _matrix_power_abstract(a: ShapedArray, n: Any) -> ShapedArray:
    _square("matrix_power", a)
    if _power(n) < 0:
        return ShapedArray(a.shape, _float_dtype("matrix_power", a))
    return ShapedArray(a.shape, a.dtype)


def _matrix_power_lower(ctx: LowerCtx, a: HloValue, n: Any) -> HloValue:
    """Binary powering (``inv(a)`` first for a negative ``n``), as NumPy."""
    b, out = ctx.b, ctx.avals_out[0]
    k = _power(n)
    if k == 0:
        return b.convert(lapack.eye_mask(b, a.shape), out.dtype)
    if k < 0:
        a = b.convert(a, out.dtype)
        a, k = lapack.lu_solve(b, a, b.convert(lapack.eye_mask(b, a.shape), out.dtype)), -k
    result = None
    while k:
        if k & 1:
            result = a if result is None else matmul_hlo(b, result, a, out)
        k >>= 1
        if k:
            a = matmul_hlo(b, a, a, out)
    assert result is not None
    return result


defprim("matrix_power", np.linalg.matrix_power, _matrix_power_stub, abstract_eval=_matrix_power_abstract,
        lower=_matrix_power_lower, path="np.linalg.matrix_power", arrays=("a",),
        nondiff_when=lambda args: args.get("n") in ("0", "-0"))


def _multi_dot_stub(arrays, *, out=None):  # type: ignore[no-untyped-def]
    ...


def _multi_dot_abstract(arrays: Any, out: Any = None) -> ShapedArray:
    """``arrays[0] @ arrays[1] @ ...``: 2-D arrays, the first and last may be 1-D (a row, a column)."""
    if out is not None:
        raise DTypeError("np.linalg.multi_dot: out= is not supported", hint="assign the result instead")
    if len(arrays) < 2:
        raise ShapeError("np.linalg.multi_dot: expecting at least two arrays")
    for k, a in enumerate(arrays):
        if a.ndim != 2 and not (a.ndim == 1 and k in (0, len(arrays) - 1)):
            raise ShapeError(f"np.linalg.multi_dot: array {k} has shape {fmt_shape(a.shape)}: "
                             "only the first and last may be 1-D, the others must be 2-D")
    r = arrays[0]
    for a in arrays[1:]:
        r = ShapedArray(_matmul_shapes(r.shape, a.shape)[1], result_dtype(r, a))
    return r


def _multi_dot_lower(ctx: LowerCtx, arrays: Any, out: Any = None) -> HloValue:
    """Left to right (NumPy picks the cheapest order for three or more: results differ by rounding)."""
    b = ctx.b
    dtype = ctx.avals_out[0].dtype
    r = b.convert(arrays[0], dtype)
    for a in arrays[1:]:
        r = matmul_hlo(b, r, b.convert(a, dtype), ShapedArray(_matmul_shapes(r.shape, a.shape)[1], dtype))
    return r


defprim("multi_dot", np.linalg.multi_dot, _multi_dot_stub, abstract_eval=_multi_dot_abstract,
        lower=_multi_dot_lower, path="np.linalg.multi_dot", arrays=(), array_seqs=("arrays",))


# -- derivatives: JAX's rules (helpers in srcjax/adjoint.py) ------------------------------------------
from .registry import deflinear, set_fields  # noqa: E402

set_fields("solve", jvp={"a": "-solve_cols(a, a_dot @ as_cols(out, b), b)", "b": "np.linalg.solve(a, b_dot)"},
           vjp={"a": "unbroadcast(-(np.linalg.solve(mT(a), as_cols(out_bar, b)) @ mT(as_cols(out, b))), a)",
                "b": "unbroadcast(solve_cols(mT(a), as_cols(out_bar, b), b), b)"})
deflinear("inv", {"a": "-(out @ a_dot @ out)"}, {"a": "-(mT(out) @ out_bar @ mT(out))"})
set_fields("det", jvp={"a": "out * np.trace(np.linalg.solve(a, a_dot), axis1=-2, axis2=-1)"},
           vjp={"a": "(out_bar * out)[..., None, None] * mT(np.linalg.inv(a))"})
set_fields("slogdet", jvp={"a": "slogdet_dots(a, a_dot, out)"}, vjp={"a": "slogdet_bar(out_bar, a, out)"})
set_fields("cholesky", jvp={"a": "cholesky_dot(a_dot, out)"}, vjp={"a": "cholesky_bar(out_bar, out)"})
set_fields("eigh", jvp={"a": "eigh_dots(a_dot, out)"}, vjp={"a": "eigh_bar(out_bar, out)"})
set_fields("svd", jvp={"a": "svd_dots(a, a_dot, out, full_matrices, compute_uv)"},
           vjp={"a": "svd_bar(out_bar, a, out, full_matrices, compute_uv)"})
set_fields("qr", jvp={"a": "qr_dots(a, a_dot, out)"}, vjp={"a": "qr_bar(out_bar, a, out)"})
set_fields("cond", jvp={"x": "np.real(np.sum(x_dot * cond_number_bar(ones_like(out), x, p), axis=(-2, -1)))"},
           vjp={"x": "cond_number_bar(out_bar, x, p)"})
set_fields("pinv", jvp={"a": "pinv_dot(a, a_dot, out)"}, vjp={"a": "pinv_bar(out_bar, a, out)"})
set_fields("matrix_power", jvp={"a": "matrix_power_dot(a, a_dot, n)"}, vjp={"a": "matrix_power_bar(out_bar, a, n)"})
deflinear("multi_dot", {"arrays": "multi_dot_jvp(arrays, arrays_dot)"}, {"arrays": "multi_dot_bars(out_bar, arrays)"})
set_fields("lstsq", jvp={"a": "lstsq_dots(a, b, a_dot, zeros_like(b), out, rcond)",
                          "b": "lstsq_dots(a, b, zeros_like(a), b_dot, out, rcond)"},
           vjp={"a": "lstsq_bars(out_bar, a, b, out, rcond)[0]", "b": "lstsq_bars(out_bar, a, b, out, rcond)[1]"})
set_fields("eigvalsh", jvp={"a": "eigvalsh_dot(a, a_dot, UPLO)"}, vjp={"a": "eigvalsh_bar(out_bar, a, UPLO)"})
set_fields("eigvals", jvp={"a": "eigvals_dot(a, a_dot)"}, vjp={"a": "eigvals_bar(out_bar, a)"})
set_fields("eig", jvp={"a": "eig_refused(a)"}, vjp={"a": "eig_refused(a)"})  # (as JAX by default)

# -- batching: the batch axis is one more leading (batch) axis --------------------------------------
for _name in ("inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh", "eig", "eigvals", "svd", "qr", "cond", "pinv",
              "matrix_power"):  # (per matrix of a stack: a repeated matrix's lowered once, lower/apply.py)
    set_fields(_name, batch=batch_rules.unary, stacked=2)
set_fields("solve", batch=batch_rules.helper("batch_solve", "a", "b"))
set_fields("multi_dot", batch=batch_rules.multi_dot)
set_fields("lstsq", batch=batch_rules.helper("batch_lstsq", "a", "b", "rcond"))
