"""The derivative helpers of np.linalg (JAX's rules; records in primitives/decomp.py).

They are :mod:`srcjax.adjoint` helpers in every respect (generated derivative source imports them
from there, srcjax transpiles them like user code): only the file is separate, to keep each module
within the line budget. So their ``__module__`` is ``srcjax.adjoint`` (set at the bottom), which is
how the frontend recognizes library helpers (``frontend/resolve.LIBRARY_MODULES``). They import
nothing from srcjax (srcjax.adjoint imports this module); templates call ``unbroadcast`` themselves.

Plain NumPy with static control flow on shapes and dtypes only. ``mT(x)`` transposes each matrix of
a stack, ``mH(x)`` conjugates it too (the same for real ``x``).

Complex operands: the JVPs are JAX's (conjugate transposes where JAX's rules have them). A rule that
is not holomorphic (cholesky, eigh, svd, qr, slogdet, pinv, ...) has its cotangent under JAX's
convention (srcjax/complex_adjoint.py: the transpose under ``Re(a * b)``): if ``L*`` is the adjoint
of the JVP under the real inner product ``Re(sum(conj(a) * b))`` (the textbook rules, written with
``mH``), JAX's cotangent is ``conj(L*(conj(g)))``; so those helpers conjugate the cotangents coming
in (:func:`cj`), apply the textbook rule and conjugate the result. For real operands every ``cj`` is
the identity and ``mH`` is ``mT``: the real rules unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def mT(x: Any) -> Any:  # each matrix of a stack transposed
    return np.swapaxes(x, -1, -2)


def is_complex(x: Any) -> bool:  # static: the dtype
    return np.result_type(x).kind == "c"


def cj(x: Any) -> Any:  # the complex conjugate; a real x unchanged
    return np.conj(x) if is_complex(x) else x


def mH(x: Any) -> Any:  # each matrix of a stack conjugate-transposed (mT for a real x)
    return cj(np.swapaxes(x, -1, -2))


def re_part(x: Any) -> Any:  # the real part; a real x unchanged (the tangent of a real result)
    return np.real(x) if is_complex(x) else x


def herm(x: Any) -> Any:  # the Hermitian (real: symmetric) part, as JAX symmetrizes operands
    return 0.5 * (x + mH(x))


def as_cols(x: Any, b: Any) -> Any:
    """``x`` laid out as ``np.linalg.solve``'s matrix right-hand side (a 1-D ``b`` is one column)."""
    return x[..., None] if np.ndim(b) == 1 else x


def solve_cols(a: Any, y: Any, b: Any) -> Any:
    """``np.linalg.solve(a, y)`` of columns ``y``, laid out as ``solve(a, b)``'s result."""
    x = np.linalg.solve(a, y)
    return x[..., 0] if np.ndim(b) == 1 else x


def cholesky_dot(a_dot: Any, l: Any) -> Any:  # noqa: E741
    """``L @ phi(L^-1 herm(a_dot) L^-H)``, phi: the lower triangle with half the diagonal."""
    li = np.linalg.inv(l)
    t = li @ herm(a_dot) @ mH(li)
    return l @ (0.5 * (np.tril(t) + np.tril(t, -1)))


def cholesky_bar(g: Any, l: Any) -> Any:  # noqa: E741
    li = np.linalg.inv(l)
    p = mH(l) @ cj(g)
    return cj(herm(mH(li) @ (0.5 * (np.tril(p) + np.tril(p, -1))) @ li))


def eigh_gaps(w: Any) -> Any:  # F[..., i, j] = 1 / (w[j] - w[i]), 0 on the diagonal
    d = w[..., None, :] - w[..., :, None]
    eye = np.eye(np.shape(w)[-1], dtype=bool)
    return np.where(eye, 0, 1 / np.where(eye, 1, d))


def slogdet_dots(a: Any, a_dot: Any, out: Any) -> Any:
    """JAX's: ``t = tr(a^-1 a_dot)``; the log-determinant's tangent ``Re(t)``, the sign's ``1j Im(t) sign``
    for a complex ``a`` (0 for a real one)."""
    t = np.trace(np.linalg.solve(a, a_dot), axis1=-2, axis2=-1)
    if is_complex(a):
        return [(t - np.real(t)) * out[0], np.real(t)]
    return [np.zeros_like(out[0]), t]


def slogdet_bar(g: Any, a: Any, out: Any) -> Any:
    gt = g[1] + 1j * np.imag(g[0] * out[0]) if is_complex(a) else g[1]
    return gt[..., None, None] * mT(np.linalg.inv(a))


def eigh_dots(a_dot: Any, out: Any) -> Any:
    """JAX's: ``dw = Re diag(v^H herm(a_dot) v)``, ``dv = v (F * (v^H herm(a_dot) v))``."""
    w, v = out
    sv = herm(a_dot) @ v
    return [re_part(np.sum(cj(v) * sv, axis=-2)), v @ (eigh_gaps(w) * (mH(v) @ sv))]


def eigh_bar(g: Any, out: Any) -> Any:
    w, v = out
    s = (v * g[0][..., None, :]) @ mH(v) + v @ (eigh_gaps(w) * (mH(v) @ cj(g[1]))) @ mH(v)
    return cj(herm(s))


def eigvalsh_dot(a: Any, a_dot: Any, UPLO: Any) -> Any:
    w, v = np.linalg.eigh(a, UPLO)
    return re_part(np.sum(cj(v) * (herm(a_dot) @ v), axis=-2))


def eigvalsh_bar(g: Any, a: Any, UPLO: Any) -> Any:
    w, v = np.linalg.eigh(a, UPLO)
    return cj((v * g[..., None, :]) @ mH(v))


def eigvals_dot(a: Any, a_dot: Any) -> Any:
    """JAX's: ``dw_i = (v^-1 a_dot v)_ii`` (holomorphic; a real ``a_dot`` taken as complex)."""
    w, v = np.linalg.eig(a)
    return np.sum(np.linalg.solve(v, a_dot) * mT(v), axis=-1)


def eigvals_bar(g: Any, a: Any) -> Any:
    """The transpose of :func:`eigvals_dot`: ``v^-T diag(g) v^T`` (its real part for a real ``a``)."""
    w, v = np.linalg.eig(a)
    return re_part_like(np.linalg.solve(mT(v), g[..., :, None] * mT(v)), a)


def re_part_like(x: Any, a: Any) -> Any:  # x's real part where a is real (a real operand's cotangent)
    return x if is_complex(a) else np.real(x)


def eig_refused(a: Any) -> Any:
    raise ValueError("np.linalg.eig: derivatives through eigenvectors of a general matrix are not supported (JAX "
                     "refuses them too unless asked); use np.linalg.eigvals for eigenvalue derivatives")


def svd_dots(a: Any, a_dot: Any, out: Any, full_matrices: Any, compute_uv: Any) -> Any:
    """The tangents of ``np.linalg.svd``'s results (JAX's rule): ``[u, s, vh]``, or ``s``. A complex
    ``a``: JAX's extra term on ``du``'s diagonal (``(dS - dS^H) / 2s``, the phases)."""
    u, s, vh = out if compute_uv else np.linalg.svd(a, full_matrices=False)
    k = np.shape(s)[-1]
    u1, v1 = u[..., :, :k], mH(vh[..., :k, :])
    av = a_dot @ v1
    ds = re_part(np.sum(cj(u1) * av, axis=-2))
    if not compute_uv:
        return ds
    if full_matrices and np.shape(a)[-2] != np.shape(a)[-1]:  # (a statement, not a helper: vmap batches it)
        raise ValueError("np.linalg.svd: the derivative of full_matrices=True needs square matrices (as in JAX); "
                         "use full_matrices=False")
    f = svd_gaps(s)
    dsm = mH(u1) @ av
    ua = mH(a_dot) @ u1
    inner = f * (dsm * s[..., None, :] + mH(dsm) * s[..., :, None])
    if is_complex(a):
        inner = inner + np.where(np.eye(k, dtype=bool), 0.5 * (dsm - mH(dsm)), 0) / s[..., None, :]
    du = u1 @ inner + (av - u1 @ (mH(u1) @ av)) / s[..., None, :]
    dv = v1 @ (f * (s[..., :, None] * dsm + mH(dsm) * s[..., None, :])) + (ua - v1 @ (mH(v1) @ ua)) / s[..., None, :]
    return [du, ds, mH(dv)]


def svd_gaps(s: Any) -> Any:  # F[..., i, j] = 1 / (s[j]^2 - s[i]^2), 0 on the diagonal
    d = s[..., None, :] ** 2 - s[..., :, None] ** 2
    eye = np.eye(np.shape(s)[-1], dtype=bool)
    return np.where(eye, 0, 1 / np.where(eye, 1, d))


def svd_bar(g: Any, a: Any, out: Any, full_matrices: Any, compute_uv: Any) -> Any:
    """The cotangent of ``a`` (the transpose of :func:`svd_dots`)."""
    if not compute_uv:
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        return cj((u * g[..., None, :]) @ vh)
    if full_matrices and np.shape(a)[-2] != np.shape(a)[-1]:  # (a statement, not a helper: vmap batches it)
        raise ValueError("np.linalg.svd: the derivative of full_matrices=True needs square matrices (as in JAX); "
                         "use full_matrices=False")
    u, s, vh = out
    gu, gs, gvh = cj(g[0]), g[1], cj(g[2])
    v, gv = mH(vh), mH(gvh)
    uh_gu = mH(u) @ gu
    j = svd_gaps(s) * uh_gu
    kk = svd_gaps(s) * (mH(v) @ gv)
    eye = np.eye(np.shape(s)[-1], dtype=bool)
    inner = (j + mH(j)) * s[..., None, :] + s[..., :, None] * (kk + mH(kk)) + np.where(eye, gs[..., :, None], 0)
    if is_complex(a):
        jd = np.where(eye, uh_gu, 0) / s[..., None, :]
        inner = inner + 0.5 * (jd - mH(jd))
    gu_s = gu / s[..., None, :]
    gv_s = gv / s[..., None, :]
    return cj(u @ inner @ vh + (gu_s - u @ (mH(u) @ gu_s)) @ vh + u @ mH(gv_s - v @ (mH(v) @ gv_s)))


def qr_thin_dots(q: Any, r: Any, dx: Any) -> Any:
    """``(dq, dr)`` of a reduced QR with m >= n (JAX's ``_thin_qr_jvp``)."""
    b = mH(np.linalg.solve(mH(r), mH(dx)))  # dx r^-1
    c = mH(q) @ b
    low = np.tril(c, -1)
    omega = low - mH(low)
    if is_complex(c):  # JAX's correction for complex operands: Q^H dQ's imaginary diagonal
        omega = omega + np.where(np.eye(np.shape(c)[-1], dtype=bool), c - np.real(c), 0)
    return [q @ (omega - c) + b, (c - omega) @ r]


def qr_thin_bar(q: Any, r: Any, gq: Any, gr: Any) -> Any:
    """The adjoint of :func:`qr_thin_dots` under ``Re(sum(conj(a) * b))`` (:func:`qr_bar` conjugates)."""
    m = gr @ mH(r) - mH(q) @ gq
    n = m - np.tril(m - mH(m), -1)
    if is_complex(m):
        n = n - np.where(np.eye(np.shape(m)[-1], dtype=bool), m - np.real(m), 0)
    return mH(np.linalg.solve(r, mH(gq + q @ n)))  # (gq + q n) r^-H


def qr_dots(a: Any, a_dot: Any, out: Any) -> Any:
    """The tangents of ``np.linalg.qr(a)``'s ``(q, r)`` (reduced; a wide ``a`` = [a1 a2]: JAX's rule)."""
    q, r = out
    m, n = np.shape(a)[-2], np.shape(a)[-1]
    if m >= n:
        return qr_thin_dots(q, r, a_dot)
    dq, dr1 = qr_thin_dots(q, r[..., :, :m], a_dot[..., :, :m])
    return [dq, np.concatenate([dr1, mH(dq) @ a[..., :, m:] + mH(q) @ a_dot[..., :, m:]], axis=-1)]


def qr_bar(g: Any, a: Any, out: Any) -> Any:
    q, r = out
    gq, gr = cj(g[0]), cj(g[1])
    m, n = np.shape(a)[-2], np.shape(a)[-1]
    if m >= n:
        return cj(qr_thin_bar(q, r, gq, gr))
    gr2 = gr[..., :, m:]
    a1_bar = qr_thin_bar(q, r[..., :, :m], gq + a[..., :, m:] @ mH(gr2), gr[..., :, :m])
    return cj(np.concatenate([a1_bar, q @ gr2], axis=-1))


def spectral_norm_bar(gk: Any, x: Any, axes: Any, ord: Any) -> Any:
    """Cotangent of ``x`` in ``np.linalg.norm(x, ord, axes)`` for ord 2, -2 (the largest, smallest
    singular value: u_i v_i^T) and 'nuc' (their sum: U V^T); ``gk`` has ``x``'s rank."""
    u, s, vh = np.linalg.svd(np.moveaxis(x, axes, (-2, -1)), full_matrices=False)
    if isinstance(ord, str):
        d = cj(u @ vh)
    else:
        i = 0 if ord == 2 else np.shape(s)[-1] - 1
        d = cj(u[..., :, i:i + 1] @ vh[..., i:i + 1, :])
    return np.moveaxis(np.moveaxis(gk, axes, (-2, -1)) * d, (-2, -1), axes)


def cond_number_bar(g: Any, x: Any, p: Any) -> Any:
    """Cotangent of ``x`` in ``np.linalg.cond(x, p)`` = s_hi / s_lo (p = -2: s_min / s_max)."""
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    k = np.shape(s)[-1]
    hi, lo = (k - 1, 0) if p == -2 else (0, k - 1)
    s_hi, s_lo = s[..., hi], s[..., lo]
    d_hi = cj(u[..., :, hi:hi + 1] @ vh[..., hi:hi + 1, :])
    d_lo = cj(u[..., :, lo:lo + 1] @ vh[..., lo:lo + 1, :])
    return (g / s_lo)[..., None, None] * d_hi - (g * s_hi / s_lo ** 2)[..., None, None] * d_lo


def pinv_dot(a: Any, a_dot: Any, p: Any) -> Any:
    """JAX's: ``-p da p + p p^H da^H (I - a p) + (I - p a) da^H p^H p``."""
    x = p @ (mH(p) @ mH(a_dot))
    y = mH(a_dot) @ (mH(p) @ p)
    return -(p @ a_dot @ p) + (x - (x @ a) @ p) + (y - p @ (a @ y))


def pinv_bar(g: Any, a: Any, p: Any) -> Any:
    g = cj(g)
    x = mH(g) @ (p @ mH(p))
    y = (mH(p) @ p) @ mH(g)
    return cj(-(mH(p) @ g @ mH(p)) + (x - a @ (p @ x)) + (y - (y @ p) @ a))


def matrix_power_dot(a: Any, a_dot: Any, n: Any) -> Any:
    """``sum_j b^j db b^(k-1-j)`` for ``b^k`` (``b = inv(a)``, ``k = -n`` when ``n < 0``)."""
    b, db, k = (a, a_dot, n) if n > 0 else (np.linalg.inv(a), -(np.linalg.inv(a) @ a_dot @ np.linalg.inv(a)), -n)
    t, p = db, b
    for _ in range(1, k):
        t = t @ b + p @ db
        p = p @ b
    return t


def matrix_power_bar(g: Any, a: Any, n: Any) -> Any:
    b = a if n > 0 else np.linalg.inv(a)
    c = mT(b)
    t, p = g, c
    for _ in range(1, abs(n)):
        t = t @ c + p @ g
        p = p @ c
    return t if n > 0 else -(c @ t @ c)


def lstsq_cut(a: Any, rcond: Any) -> Any:  # np.linalg.lstsq's relative cutoff (static)
    return np.finfo(np.result_type(a)).eps * max(np.shape(a)) if rcond is None else rcond


def lstsq_dots(a: Any, b: Any, a_dot: Any, b_dot: Any, out: Any, rcond: Any) -> Any:
    """The tangents of ``np.linalg.lstsq``'s ``[x, residuals, rank, s]`` (x = pinv(a) b)."""
    x, res, rank, s = out
    p = np.linalg.pinv(a, lstsq_cut(a, rcond))
    dx = pinv_dot(a, a_dot, p) @ b + p @ b_dot
    dres = np.zeros_like(res)
    if np.shape(a)[0] > np.shape(a)[1]:
        r = b - a @ x
        dres = np.reshape(2 * np.sum(re_part(cj(r) * (b_dot - a_dot @ x - a @ dx)), axis=0), np.shape(res))
    return [dx, dres, np.zeros_like(s[0]), svd_dots(a, a_dot, None, False, False)]


def lstsq_bars(g: Any, a: Any, b: Any, out: Any, rcond: Any) -> Any:
    """The cotangents ``(a_bar, b_bar)`` (the transpose of :func:`lstsq_dots`)."""
    x, res, rank, s = out
    gx, gres, grank, gs = g
    p = np.linalg.pinv(a, lstsq_cut(a, rcond))
    a_bar = svd_bar(gs, a, None, False, False)
    b_bar = np.zeros_like(b)
    if np.shape(a)[0] > np.shape(a)[1]:
        gr = 2 * cj(b - a @ x) * np.reshape(gres, np.shape(res)[:np.ndim(b) - 1])
        a_bar = a_bar - cols_outer(gr, x)
        gx = gx - mT(a) @ gr
        b_bar = gr
    return a_bar + pinv_bar(cols_outer(gx, b), a, p), b_bar + mT(p) @ gx


def cols_outer(u: Any, v: Any) -> Any:  # u v^T for columns (1-D: an outer product)
    return u[:, None] * v[None, :] if np.ndim(u) == 1 else u @ mT(v)


LINALG_HELPERS = ("mT", "is_complex", "cj", "mH", "re_part", "herm", "as_cols", "solve_cols", "slogdet_dots",
                  "slogdet_bar", "cholesky_dot", "cholesky_bar", "eigh_gaps", "eigh_dots", "eigh_bar",
                  "eigvalsh_dot", "eigvalsh_bar", "eigvals_dot", "eigvals_bar", "re_part_like", "eig_refused",
                  "svd_dots", "svd_gaps", "svd_bar", "qr_thin_dots", "qr_thin_bar", "qr_dots", "qr_bar",
                  "spectral_norm_bar", "cond_number_bar", "pinv_dot", "pinv_bar", "matrix_power_dot",
                  "matrix_power_bar", "lstsq_cut", "lstsq_dots", "lstsq_bars", "cols_outer")
for _name in LINALG_HELPERS:
    globals()[_name].__module__ = "srcjax.adjoint"
