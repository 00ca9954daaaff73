"""np.linalg on complex matrices beyond solve/inv/det (tests/test_complex.py): cholesky, qr, eigh, eigvalsh,
svd, slogdet, norm, cond, pinv, lstsq, matrix_power, and var/std of complex arrays; eig/eigvals of general
(real or complex) matrices.

Values against NumPy (the compiled program and its generated source run by NumPy); eigenvectors, singular
vectors and Q are compared through what does not depend on LAPACK's choice of phases (moduli,
reconstructions, ``V^H V = I``). Derivatives against jax (``jax.grad`` of real-valued losses, ``jax.jvp``,
``jax.vjp`` with complex cotangents) and central differences; batching (leading axes, ``vmap``); random
shapes with hypothesis (``SRCJAX_HYPOTHESIS=thorough``: more).

Inputs of cholesky/eigh/eigvalsh are Hermitian: NumPy reads one triangle, jax symmetrizes first, so the
two agree there only (the derivatives are JAX's, taken of the symmetrized operand).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcjax
from tests import written
from tests.fd import central_fd
from tests.twins import JAX

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

_SCALE = 10 if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" else 1
rng = np.random.default_rng(7)


def define(body: str, params: str, np_module: Any = np) -> Any:
    return written.define(body, params, np_module, tag="test_complex_linalg")


def carr(shape: Any, dtype: Any = np.complex128) -> np.ndarray:
    return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)


def hermitian(shape: Any, dtype: Any = np.complex128) -> np.ndarray:
    a = carr(shape)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def close(got: Any, want: Any, tol: float) -> None:
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            close(g, w, tol)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


# -- values: NumPy's results and dtypes (XLA, and the generated source run by NumPy) --------------------
VALUES = [
    "np.linalg.cholesky(h), np.linalg.eigvalsh(h), np.linalg.eigh(h)[0], np.abs(np.linalg.eigh(h)[1]), "
    "np.linalg.slogdet(h)[0], np.linalg.slogdet(w[..., :3, :])[1], np.linalg.slogdet(w[..., :3, :])[0]",
    "np.abs(np.linalg.qr(w)[0]), np.abs(np.linalg.qr(w)[1]), np.linalg.svd(w, compute_uv=False), "
    "np.linalg.svd(w, full_matrices=False)[1], np.abs(np.linalg.svd(w, full_matrices=False)[0]), "
    "np.abs(np.linalg.svd(w)[2]), np.linalg.cond(w), np.linalg.pinv(w)",
    "np.linalg.norm(w), np.linalg.norm(w[0], 2), np.linalg.norm(w[0], 'nuc'), np.linalg.norm(w[0], -2), "
    "np.linalg.norm(w[0], 1), np.linalg.norm(w[0], np.inf), np.linalg.norm(w[0], 'fro'), np.linalg.norm(w[0, 0], 3), "
    "np.linalg.norm(w[0, 0], 0), np.linalg.norm(w, axis=-1), np.linalg.norm(w[0, 0], -np.inf)",
    "np.linalg.matrix_power(h, 3), np.linalg.matrix_power(h, -2), np.linalg.matrix_power(h, 0), np.var(w), "
    "np.std(w, axis=1, ddof=1), np.var(w, axis=(0, 2), keepdims=True), np.std(w[0] * 1j)",
]


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("body", VALUES)
def test_values_against_numpy(body: str, dtype: Any) -> None:
    h, w = hermitian((2, 3, 3), dtype), carr((2, 4, 3), dtype)
    f = define(body, "h, w")
    want = f(h, w)
    tol = 2e-4 if dtype == np.complex64 else 1e-10
    close(srcjax.compile(f)(h, w), want, tol)
    close(srcjax.compile(f, device="numpy")(h, w), want, tol)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_lstsq_against_numpy(dtype: Any) -> None:
    a, b = carr((5, 3), dtype), carr((5, 2), dtype)
    f = define("np.linalg.lstsq(a, b, rcond=None), np.linalg.lstsq(a, b[:, 0], rcond=None), "
               "np.linalg.lstsq(a.T, b[:3], rcond=None)", "a, b")
    want = [tuple(r) for r in f(a, b)]
    got = [tuple(r) for r in srcjax.compile(f)(a, b)]
    close(got, want, 2e-4 if dtype == np.complex64 else 1e-10)


def test_reconstructions() -> None:
    """Factors of a stack of complex matrices multiply back, and their vectors are orthonormal."""
    h, w = hermitian((2, 4, 4)), carr((2, 5, 3))
    f = define("np.linalg.eigh(h), np.linalg.svd(w, full_matrices=False), np.linalg.qr(w), np.linalg.svd(w)", "h, w")
    (ev, v), (u, s, vh), (q, r), (uf, sf, vhf) = [[np.asarray(x) for x in t] for t in srcjax.compile(f)(h, w)]
    mh = lambda x: np.conj(np.swapaxes(x, -1, -2))  # noqa: E731
    np.testing.assert_allclose((v * ev[..., None, :]) @ mh(v), h, atol=1e-10)
    np.testing.assert_allclose(mh(v) @ v, np.broadcast_to(np.eye(4), v.shape), atol=1e-10)
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, w, atol=1e-10)
    np.testing.assert_allclose(q @ r, w, atol=1e-10)
    np.testing.assert_allclose(mh(q) @ q, np.broadcast_to(np.eye(3), (2, 3, 3)), atol=1e-10)
    np.testing.assert_allclose(mh(uf) @ uf, np.broadcast_to(np.eye(5), uf.shape), atol=1e-10)
    np.testing.assert_allclose(np.tril(np.asarray(r), -1), 0)
    assert ev.dtype == s.dtype == np.float64 and v.dtype == u.dtype == np.complex128


# -- derivatives against jax: real-valued losses of complex inputs -------------------------------------
LOSSES = [
    "np.sum(np.abs(np.linalg.cholesky(h)) ** 2) + np.real(np.sum(np.linalg.cholesky(h) * c))",
    "np.sum(np.linalg.eigh(h)[0] * np.array([1.0, 2.0, 3.0])) + np.sum(np.abs(np.linalg.eigh(h)[1][0]) ** 2 * "
    "np.array([1.0, -2.0, 0.5])) + np.sum(np.linalg.eigvalsh(h) ** 2)",
    "np.sum(np.linalg.svd(w, full_matrices=False)[1] ** 2) + np.sum(np.abs(np.linalg.svd(w, full_matrices=False)[0]"
    "[:2]) ** 3) + np.sum(np.abs(np.linalg.svd(ws, full_matrices=False)[2][:, 1:]) ** 3)",
    "np.sum(np.abs(np.linalg.svd(c)[0][1]) ** 3) + np.sum(np.abs(np.linalg.svd(c)[2]) ** 3) + "
    "np.sum(np.linalg.svd(w, compute_uv=False) * np.array([1.0, 2.0, 3.0]))",
    "np.sum(np.abs(np.linalg.qr(w)[0]) ** 3) + np.real(np.sum(np.linalg.qr(w)[1] * c)) + "
    "np.sum(np.abs(np.linalg.qr(ws)[0]) ** 3) + np.imag(np.sum(np.linalg.qr(ws)[1] * w.T))",
    "np.linalg.slogdet(h)[1] + np.real(np.linalg.slogdet(c)[0] * (1 + 2j)) + np.linalg.slogdet(c)[1]",
    "np.sum(np.abs(np.linalg.pinv(w)) ** 2) + np.real(np.sum(np.linalg.pinv(ws) * (1 - 1j))) + np.linalg.cond(w) "
    "+ np.linalg.cond(c)",
    "np.linalg.norm(w) + np.linalg.norm(w, 2) + np.linalg.norm(w, 'nuc') + np.linalg.norm(w, 1) + "
    "np.linalg.norm(w[0], 3) + np.linalg.norm(w, -2) + np.linalg.norm(w, np.inf) + np.linalg.norm(w[1], 1)",
    "np.sum(np.abs(np.linalg.matrix_power(c, 3)) ** 2) + np.real(np.sum(np.linalg.matrix_power(h, -2))) + "
    "np.var(w) + np.sum(np.std(ws, axis=0, ddof=1))",
    "np.sum(np.abs(np.linalg.lstsq(w, ws.T[:, :2], rcond=None)[0]) ** 2) + "
    "np.sum(np.linalg.lstsq(w, ws.T[:, :2], rcond=None)[1])",
]
ARGS = "h, w, ws, c"


def _args(dtype: Any = np.complex128) -> tuple[np.ndarray, ...]:
    return hermitian((3, 3), dtype), carr((4, 3), dtype), carr((3, 4), dtype), carr((3, 3), dtype)


@pytest.mark.parametrize("body", LOSSES)
def test_grad_and_jvp_against_jax(body: str) -> None:
    args = _args()
    f, fj = define(body, ARGS), define(body, ARGS, jnp)
    every = tuple(range(4))
    want = JAX.grad(fj, argnums=every)(*args)
    close(tuple(srcjax.grad(f, argnums=every)(*args)), tuple(want), 1e-9)
    close(tuple(srcjax.compile(srcjax.grad(f, argnums=every), device="numpy")(*args)), tuple(want), 1e-9)
    tangents = _args()
    out, t = srcjax.jvp(f, args, tangents)
    jout, jt = JAX.jvp(fj, args, tangents)
    close(out, jout, 1e-10)
    close(t, jt, 1e-9)


def test_grad_complex64_against_jax() -> None:
    body = LOSSES[0] + " + np.sum(np.linalg.svd(w, compute_uv=False)) + np.sum(np.abs(np.linalg.qr(w)[0]) ** 3)"
    args = _args(np.complex64)
    every = tuple(range(4))
    got = srcjax.grad(define(body, ARGS), argnums=every)(*args)
    assert all(np.asarray(g).dtype == np.complex64 for g in got)
    close(tuple(got), tuple(JAX.grad(define(body, ARGS, jnp), argnums=every)(*args)), 2e-3)


@pytest.mark.parametrize("body", [LOSSES[0], LOSSES[2], LOSSES[5]])
def test_grad_against_finite_differences(body: str) -> None:
    """JAX's complex gradient ``df/dRe - 1j df/dIm`` of the real loss, by central differences (one
    Hermitian-preserving direction for ``h``: the loss sees ``h`` only through one triangle)."""
    h, w, ws, c = _args()
    f = define(body, ARGS)
    g = srcjax.grad(f, argnums=(1, 3))(h, w, ws, c)
    for i, x in ((1, w), (3, c)):
        def part(t: np.ndarray, imag: bool, i: int = i, x: np.ndarray = x) -> float:
            args = [h, w, ws, c]
            args[i] = x + (1j * t if imag else t)
            return float(f(*args))
        fd = central_fd(lambda t: part(t, False), [np.zeros(x.shape)], 0) - \
            1j * central_fd(lambda t: part(t, True), [np.zeros(x.shape)], 0)
        np.testing.assert_allclose(np.asarray(g[0 if i == 1 else 1]), fd, rtol=1e-5, atol=1e-6)
    d = carr((3, 3))
    d = d + np.conj(d.T)  # a Hermitian direction: the derivative along it is Re(sum(grad * d))
    eps = 1e-6
    fd_h = (f(h + eps * d, w, ws, c) - f(h - eps * d, w, ws, c)) / (2 * eps)
    g_h = srcjax.grad(f)(h, w, ws, c)
    np.testing.assert_allclose(np.real(np.sum(np.asarray(g_h) * d)), fd_h, rtol=1e-5, atol=1e-6)


VJPS = [
    "np.linalg.cholesky(h), np.linalg.qr(w)[0], np.linalg.qr(w)[1], np.linalg.pinv(ws)",
    "np.linalg.matrix_power(c, 2), np.linalg.slogdet(c)[0], np.linalg.lstsq(w, ws.T[:, 0], rcond=None)[0]",
    # (LAPACK's phases are the same for both: cotangents that depend on them agree too)
    "np.linalg.eigh(h)[1], np.linalg.svd(w, full_matrices=False)[0], np.linalg.svd(c)[2]",
]


@pytest.mark.parametrize("body", VJPS)
def test_vjp_complex_cotangents_against_jax(body: str) -> None:
    args = _args()
    out, back = srcjax.vjp(define(body, ARGS), *args)
    jout, jback = jax.vjp(define(body, ARGS, jnp), *args)
    close(tuple(out), tuple(jout), 1e-10)
    cot = tuple(carr(np.shape(o)) for o in jout)
    close(tuple(back(cot)), tuple(jback(cot)), 1e-9)


# -- batching: leading axes and vmap ------------------------------------------------------------------
BATCHED = ("np.sum(np.abs(np.linalg.cholesky(h)) ** 2) + np.sum(np.linalg.eigvalsh(h) * np.array([1.0, 2.0, 3.0])) "
           "+ np.sum(np.linalg.svd(w, compute_uv=False) ** 3) + np.sum(np.abs(np.linalg.qr(w)[0]) ** 3) "
           "+ np.linalg.slogdet(h)[1] + np.linalg.norm(w, 'nuc') + np.var(w)")


def test_vmap_and_leading_axes() -> None:
    h, w = hermitian((4, 3, 3)), carr((4, 4, 3))
    f = define(BATCHED, "h, w")
    per_example = np.stack([f(h[i], w[i]) for i in range(4)])
    close(srcjax.vmap(f)(h, w), per_example, 1e-10)
    want = JAX.vmap(jax.grad(define(BATCHED, "h, w", jnp), argnums=(0, 1)))(h, w)
    close(tuple(srcjax.vmap(srcjax.grad(f, argnums=(0, 1)))(h, w)), tuple(want), 1e-9)
    stacked = define("np.linalg.cholesky(h), np.linalg.eigvalsh(h), np.linalg.svd(w, compute_uv=False), "
                     "np.abs(np.linalg.qr(w)[1]), np.linalg.slogdet(h)[1]", "h, w")
    close(tuple(srcjax.compile(stacked)(h, w)), tuple(stacked(h, w)), 1e-10)


# -- hypothesis: random stacks, tall, wide and square ----------------------------------------------------
@settings(max_examples=3 * _SCALE, deadline=None, derandomize=True, database=None)
@given(batch=st.lists(st.integers(1, 3), max_size=2), m=st.integers(1, 4), n=st.integers(1, 4),
       single=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_hypothesis_shapes(batch: list[int], m: int, n: int, single: bool, seed: int) -> None:
    r = np.random.default_rng(seed)
    dt = np.complex64 if single else np.complex128
    a = (r.normal(size=(*batch, m, n)) + 1j * r.normal(size=(*batch, m, n))).astype(dt)
    b = a[..., :1, :] if m > 1 else a
    h = (np.conj(np.swapaxes(a, -1, -2)) @ a + n * np.eye(n)).astype(dt)
    f = define("np.linalg.svd(a, compute_uv=False), np.abs(np.linalg.qr(a)[1]), np.linalg.eigvalsh(h), "
               "np.linalg.cholesky(h), np.linalg.slogdet(h), np.linalg.norm(a, axis=(-2, -1)), np.var(b, axis=-1), "
               "np.linalg.pinv(a)", "a, h, b")
    tol = 5e-4 if single else 1e-9
    got, want = srcjax.compile(f)(a, h, b), f(a, h, b)
    close(tuple(got[:4]) + tuple(got[4]) + tuple(got[5:]), tuple(want[:4]) + tuple(want[4]) + tuple(want[5:]), tol)
    loss = "np.sum(np.linalg.svd(a, compute_uv=False)) + np.sum(np.abs(np.linalg.cholesky(h)) ** 2)"
    g = srcjax.grad(define(loss, "a, h, b"), argnums=(0, 1))(a, h, b)
    j = JAX.grad(define(loss, "a, h, b", jnp), argnums=(0, 1))(a, h, b)
    close(tuple(g), tuple(j), 5e-3 if single else 1e-8)


# -- eig / eigvals: general matrices (LAPACK geev), complex results -------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.complex64])
def test_eig_values_and_reconstruction(dtype: Any) -> None:
    r = np.random.default_rng(248)  # (its own draws: the module's rng state depends on which tests ran before)
    a = (r.normal(size=(2, 4, 4)) + (1j * r.normal(size=(2, 4, 4)) if dtype != np.float64 else 0)).astype(dtype)
    w, v = (np.asarray(x) for x in srcjax.compile(define("np.linalg.eig(a)", "a"))(a))
    wv = np.asarray(srcjax.compile(define("np.linalg.eigvals(a)", "a"))(a))
    cd = np.complex64 if dtype == np.complex64 else np.complex128
    assert w.dtype == v.dtype == wv.dtype == cd  # (always complex, as JAX)
    tol = 1e-4 if dtype == np.complex64 else 1e-10
    if dtype == np.complex64:  # (single precision: geev's order of close eigenvalues may differ from NumPy's)
        np.testing.assert_allclose(np.sort_complex(w), np.sort_complex(np.linalg.eigvals(a)), atol=tol)
    else:
        np.testing.assert_allclose(w, np.linalg.eigvals(a), atol=tol)  # LAPACK's order, as NumPy's
    np.testing.assert_allclose(wv, w, atol=tol)
    np.testing.assert_allclose(a @ v, v * w[..., None, :], atol=tol * 10)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, atol=tol)


EIGVALS = "np.sum(np.real(np.linalg.eigvals(a) * np.array([1.0 + 2j, -0.5, 3j, 1.0])))"


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eigvals_derivatives_against_jax(dtype: Any) -> None:
    a = (rng.normal(size=(4, 4)) + (1j * rng.normal(size=(4, 4)) if dtype == np.complex128 else 0)).astype(dtype)
    f, fj = define(EIGVALS, "a"), define(EIGVALS, "a", jnp)
    close(srcjax.grad(f)(a), JAX.grad(fj)(a), 1e-9)
    t = rng.normal(size=(4, 4)).astype(dtype)
    close(srcjax.jvp(f, (a,), (t,))[1], JAX.jvp(fj, (a,), (t,))[1], 1e-9)
    batched = np.stack([a, a.T])
    close(srcjax.vmap(srcjax.grad(f))(batched), JAX.vmap(jax.grad(fj))(batched), 1e-9)


def test_eig_derivatives_refused_as_jax() -> None:
    f = define("np.sum(np.abs(np.linalg.eig(a)[0]))", "a")
    with pytest.raises(srcjax.TranspileError, match="use np.linalg.eigvals"):
        srcjax.grad(f)(carr((3, 3)))
