"""Complex numbers (complex64/complex128): the three oracles (NumPy running the user's function, NumPy
running the generated source, XLA) on complex programs; NumPy 2's promotion; derivatives against jax
(``jax.grad`` of real-valued functions of complex inputs, ``jax.jvp``, ``jax.vjp`` with complex
cotangents) and finite differences; batching; and the operations srcjax refuses on complex operands.

JAX's convention (its autodiff cookbook): ``grad`` of a real ``f`` at ``z = x + iy`` is
``df/dx - 1j * df/dy``, and a VJP is the transpose (not the adjoint) of the JVP.
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

jax = pytest.importorskip("jax")

from tests.twins import JAX  # noqa: E402

jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

_SCALE = 10 if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" else 1
rng = np.random.default_rng(0)


def define(body: str, params: str = "z", np_module: Any = np) -> Any:
    return written.define(body, params, np_module, tag="test_complex")


def carr(shape: Any, dtype: Any = np.complex128, scale: float = 1.0) -> np.ndarray:
    return ((rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)) * scale).astype(dtype)


def close(got: Any, want: Any, rtol: float, exact_dtype: bool = True) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            close(g, w, rtol, exact_dtype)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    if exact_dtype:
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True)


def three_oracles(body: str, params: str, *args: Any) -> None:
    f = define(body, params)
    want = f(*args)
    single = any(np.asarray(a).dtype in (np.complex64, np.float32) for a in args)
    rtol = 2e-5 if single else 1e-12
    compiled = srcjax.compile(f)
    close(compiled(*args), want, rtol)
    close(srcjax.compile(f, device="numpy")(*args), want, rtol)
    shapes = srcjax.eval_shape(compiled, *args)
    leaves = shapes if isinstance(shapes, tuple) else (shapes,)
    wants = want if isinstance(want, tuple) else (want,)
    assert [(s.shape, s.dtype) for s in leaves] == [(np.shape(w), np.asarray(w).dtype) for w in wants]


# -- values: the three oracles ------------------------------------------------------------------------
PROGRAMS = [
    "z + w, z - w, z * w, z / w, -z, +z, z ** 2, z ** w, 2.0 ** z, z ** 0.5, z == w, z != w",
    "np.exp(z), np.log(z), np.sqrt(z), np.sin(z), np.cos(z), np.tan(z), np.tanh(z), np.sinh(z), np.cosh(z)",
    "np.arcsin(z), np.arccos(z), np.arctan(z), np.arcsinh(z), np.arccosh(z), np.arctanh(z), np.expm1(z), "
    "np.log1p(z), np.log2(z), np.log10(z), np.exp2(z), np.square(z), np.reciprocal(z)",
    "np.real(z), np.imag(z), np.conj(z), np.conjugate(w), np.abs(z), np.angle(z), np.angle(w, deg=True), "
    "z.real, z.imag, z.conj(), z.conjugate(), np.sign(z)",
    "np.isfinite(z), np.isnan(z * np.inf), np.isinf(z), np.sum(z), np.mean(z, axis=0), np.prod(z, axis=1), "
    "np.cumsum(z, axis=0), np.cumprod(w), np.trace(z)",
    "z @ z, z @ w, np.dot(w, w), np.einsum('ij,j->i', z, w), np.tensordot(z, z, 1), np.inner(w, w), "
    "np.outer(w, w), np.kron(w, w), np.vdot(w, w), np.vdot(z, z), np.vdot(np.real(w), np.imag(w))",
    "np.where(np.abs(w) > 0.5, w, 0), np.concatenate([w, w]), np.stack([w, w]), z.T, z[1:, ::2], z.reshape(9), "
    "np.flip(z, 0), np.roll(w, 1), np.diag(w), np.zeros_like(z), np.ones_like(w), np.full(3, 1j) * w",
    "z.astype(np.complex64), z.astype(complex), np.abs(w) ** 2, w.conj() * w, np.sum(np.abs(z) ** 2), "
    "np.isclose(w, w), np.real(z).astype(np.complex64), np.round(z * 10), np.round(w, 2), np.around(z * 100, -1)",
]


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("body", PROGRAMS)
def test_complex_programs(body: str, dtype: Any) -> None:
    three_oracles(body, "z, w", carr((3, 3), dtype, 0.8), carr(3, dtype, 0.8))


def test_literals_and_mixed_real() -> None:
    """``1j``, ``2 + 3j``, ``np.exp(1j * t)``, a Python complex argument, np.complex128(...)."""
    t = np.linspace(0, 1, 5)
    three_oracles("x * np.exp(1j * t) + (2 + 3j), 1j * t, t + 0j, np.complex128(t), np.asarray(t, dtype=complex), "
                  "np.zeros(3, dtype=complex) + 1, np.array([1j, 2.0]), t.astype(np.complex64) * c", "x, t, c",
                  np.arange(5.0), t, 2 - 1j)


PROMOTIONS = [  # (left, right): the dtype NumPy 2 gives, srcjax must give the same
    (np.float64, np.complex64), (np.float32, np.complex64), (np.float32, np.complex128), (np.int32, np.complex64),
    (np.int64, np.complex64), (np.bool_, np.complex64), (np.float16, np.complex64), (np.complex64, np.complex128),
    (np.uint8, np.complex64),
]


@pytest.mark.parametrize("a, b", PROMOTIONS)
def test_promotion_as_numpy(a: Any, b: Any) -> None:
    x = np.ones(3, a)
    y = carr(3, b)
    three_oracles("x + y, x * y, y / x", "x, y", x, y)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.float16])
def test_python_complex_scalar_is_weak(dtype: Any) -> None:
    """NEP 50: a Python complex meets a float32 array as complex64, a float64 array as complex128."""
    three_oracles("x * 1j, x + (2 + 0.5j), 1j * np.exp(1j * x)", "x", np.linspace(0, 1, 4).astype(dtype))


def test_complex_results_and_arguments_round_trip() -> None:
    f = define("z", "z")
    for d in (np.complex64, np.complex128):
        z = carr((2, 3), d)
        out = srcjax.compile(f)(z)
        assert out.dtype == d
        np.testing.assert_array_equal(np.asarray(out), z)
    three_oracles("z * 2", "z", carr((), np.complex64))
    three_oracles("z * 2", "z", 1 + 2j)


def test_complex_constants_in_stablehlo() -> None:
    """Complex constants are ``dense<(re, im)>`` in StableHLO, exact in both precisions."""
    f = define("z * (1.5 - 2.25j) + np.array([1j, 2.0, -3.5 + 0.125j])", "z")
    z = carr(3, np.complex64)
    text = srcjax.lower(f, z).as_text()
    assert "complex<f32>" in text and "(1.5, -2.25)" in text
    close(srcjax.compile(f)(z), f(z), 1e-6)


# -- refusals: located errors, never a silent answer ---------------------------------------------------
REFUSED = [
    ("z < w", "does not order complex"), ("np.maximum(z, w)", "does not order complex"),
    ("np.sort(z)", "does not order complex"), ("np.max(z)", "does not order complex"),
    ("np.argmax(z)", "does not order complex"), ("np.clip(z, 0, 1)", "does not order complex"),
    ("np.median(z)", "does not order complex"), ("np.floor(z)", "does not support"),
    ("np.arctan2(z, w)", "does not support"),
]


@pytest.mark.parametrize("body, message", REFUSED)
def test_refused_on_complex(body: str, message: str) -> None:
    f = define(body, "z, w, m")
    with pytest.raises(srcjax.DTypeError, match=message) as e:
        srcjax.compile(f)(carr(3), carr(3), carr((3, 3)) + 4 * np.eye(3))
    assert e.value.span is not None and e.value.span.line == 2


def test_grad_of_a_complex_output_is_refused_like_jax() -> None:
    f = define("np.sum(z * z)", "z")
    with pytest.raises(srcjax.DTypeError, match="real-valued") as e:
        srcjax.grad(f)(carr(3))
    assert "np.real" in str(e.value)
    with pytest.raises(TypeError):
        jax.grad(define("np.sum(z * z)", "z", jnp))(carr(3))


# -- derivatives against jax ---------------------------------------------------------------------------
GRADS = [  # real-valued functions of a complex z (and a real x)
    "np.sum(np.real(z * z * np.exp(z)))", "np.sum(np.abs(z))", "np.sum(np.abs(z) ** 2)", "np.sum(np.angle(z))",
    "np.sum(np.imag(np.log(z) * np.conj(z)))", "np.real(np.sum(z @ z.conj().T)) + np.imag(np.prod(z))",
    "np.sum(np.real(np.sqrt(z) / (z + 2)))", "np.sum(np.abs(np.sin(z) + np.cos(z) * 1j))",
    "np.real(np.einsum('ij,kj->', z, z)) + np.sum(z.real * z.imag)", "np.sum(np.abs(z * x) ** 2 + np.real(z) * x)",
    "np.mean(np.real(np.tanh(z) * (1 - 2j))) + np.sum(np.abs(np.mean(z, axis=0)))",
    "np.sum(np.real(np.exp(1j * x) * z) ** 2)", "np.sum(np.abs(z.astype(np.complex64)))",
    "np.sum(np.real(np.where(np.abs(z) > 0.5, z, 1j * z)) ** 3)", "np.sum(np.real(z ** 3 / (z.conj() + 3)))",
]


def _fd_grad(f: Any, z: np.ndarray, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """JAX's complex gradient by central differences: ``df/dRe - 1j * df/dIm``."""
    g = np.zeros_like(z)
    for i in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[i] = h
        d_re = (f(z + e, x) - f(z - e, x)) / (2 * h)
        d_im = (f(z + 1j * e, x) - f(z - 1j * e, x)) / (2 * h)
        g[i] = d_re - 1j * d_im
    return g


@pytest.mark.parametrize("body", GRADS)
def test_grad_vjp_jvp_against_jax(body: str) -> None:
    z, x = carr((2, 3), scale=0.8) + 0.3, rng.uniform(0.5, 1.5, 3)
    f, fj = define(body, "z, x"), define(body, "z, x", jnp)
    tol = 1e-5 if "complex64" in body else 1e-10
    gz, gx = srcjax.grad(f, argnums=(0, 1))(z, x)
    jz, jx = JAX.grad(fj, argnums=(0, 1))(z, x)
    close(gz, jz, tol)
    close(gx, jx, tol)
    if "complex64" not in body:
        np.testing.assert_allclose(np.asarray(gz), _fd_grad(f, z, x), rtol=1e-5, atol=1e-6)
    # the generated gradient run by NumPy
    close(srcjax.compile(srcjax.grad(f), device="numpy")(z, x), jz, tol)
    # jvp with complex and real tangents
    tz, tx = carr((2, 3)), rng.normal(size=3)
    out, t = srcjax.jvp(f, (z, x), (tz, tx))
    jout, jt = JAX.jvp(fj, (z, x), (tz, tx))
    close(out, jout, tol)
    close(t, jt, tol)


# every primitive that takes complex operands, through |.|**2 and a real part (grouped: fewer compilations)
SWEEP = [
    "np.prod(z, axis=0)", "np.cumprod(z, axis=1)", "np.mean(z)", "np.tensordot(z, z, 1)", "np.outer(z[0], x)",
    "np.kron(z[0], x)", "np.take(z, np.array([0, 2, 2]), axis=1)", "z[np.array([1, 1]), :2]",
    "np.concatenate([z, z * x])", "np.stack([z[0], x])", "np.where(x > 0.5, z, x)", "np.trace(z)", "np.diag(z)",
    "np.roll(z, 1, axis=0)", "np.flip(z)", "np.transpose(z).reshape(9)", "np.expm1(z)", "np.log1p(z)", "np.arcsin(z)",
    "np.arctanh(z)", "z ** (1 + 1j)", "x ** z", "np.reciprocal(z)", "np.square(z)", "z / x",
    "x.astype(complex) * (1 + 1j)", "np.real(z).astype(np.complex128) * z", "np.sum(z, axis=1, keepdims=True) * z",
    "np.dot(z, x)", "np.inner(z, x)", "np.einsum('ij,ij->i', z, z)", "np.matmul(z, z.T)", "np.cos(z) * np.sinh(z)",
    "np.exp2(z) + np.log10(z) + np.log2(z)", "np.diff(z, axis=0)", "np.tile(z, 2)", "np.repeat(z, 2, axis=1)",
    "np.broadcast_to(z[0], (2, 3))", "np.pad(z, 1)", "np.fft.fftshift(z)", "z.conj().T @ z", "np.cumsum(z)",
    "np.vdot(z, z * x)",
]


@pytest.mark.parametrize("k", range(0, len(SWEEP), 7))
def test_grad_sweep_against_jax(k: int) -> None:
    body = " + ".join(f"np.sum(np.abs({e}) ** 2) + np.sum(np.real({e} * (1 - 2j)))" for e in SWEEP[k:k + 7])
    z, x = carr((3, 3), scale=0.6) + 0.2, rng.uniform(0.3, 1, 3)
    g = srcjax.grad(define(body, "z, x"), argnums=(0, 1))(z, x)
    j = JAX.grad(define(body, "z, x", jnp), argnums=(0, 1))(z, x)
    close(tuple(g), tuple(j), 1e-10)


VJPS = [  # complex-valued functions: vjp with a complex cotangent
    "z * w", "np.exp(z) * np.conj(w)", "np.abs(z) + 0j", "np.real(z) * w", "np.imag(z) * w", "1j * z ** 2 / w",
    "z @ w", "np.sum(z * np.angle(w))", "np.sqrt(z).T", "np.cumsum(z * w, axis=1)",
]


@pytest.mark.parametrize("body", VJPS)
def test_vjp_complex_cotangent_against_jax(body: str) -> None:
    z, w = carr((3, 3)) + 0.2, carr(3) + 0.3
    f, fj = define(body, "z, w"), define(body, "z, w", jnp)
    out, back = srcjax.vjp(f, z, w)
    jout, jback = jax.vjp(fj, z, w)
    close(out, jout, 1e-12)
    u = carr(np.shape(jout))
    close(tuple(back(u)), tuple(jback(u)), 1e-10)


def test_grad_of_complex64_stays_complex64() -> None:
    f = define("np.sum(np.abs(z) ** 2) + np.sum(np.real(z * x))", "z, x")
    z, x = carr(4, np.complex64), np.ones(4, np.float32)
    gz, gx = srcjax.grad(f, argnums=(0, 1))(z, x)
    assert gz.dtype == np.complex64 and gx.dtype == np.float32
    jz, jx = JAX.grad(define("np.sum(np.abs(z) ** 2) + np.sum(np.real(z * x))", "z, x", jnp), argnums=(0, 1))(z, x)
    close(gz, jz, 1e-5)
    close(gx, jx, 1e-5)


def test_abs_at_zero_follows_jax() -> None:
    """JAX: the derivative of ``abs`` of a complex 0 is 0 (``|z|`` read as 1 there)."""
    body = "np.sum(np.abs(z))"
    z = np.array([0j, 1 + 1j])
    close(srcjax.grad(define(body))(z), JAX.grad(define(body, "z", jnp))(z), 1e-12)


# -- np.linalg on complex matrices: solve, inv, det (LAPACK's c/z kernels) -----------------------------
LINALG = ("np.sum(np.abs(np.linalg.solve(a, b)) ** 2) + np.sum(np.real(np.linalg.det(a))) "
          "+ np.sum(np.imag(np.linalg.inv(a)) ** 2)")


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_solve_inv_det(dtype: Any) -> None:
    a = (carr((2, 3, 3)) + 3 * np.eye(3)).astype(dtype)
    b = carr((2, 3, 2), dtype)
    three_oracles("np.linalg.solve(a, b), np.linalg.inv(a), np.linalg.det(a), np.linalg.solve(a[0], b[0, :, 0])",
                  "a, b", a, b)
    gs = srcjax.grad(define(LINALG, "a, b"), argnums=(0, 1))(a, b)
    gj = JAX.grad(define(LINALG, "a, b", jnp), argnums=(0, 1))(a, b)
    close(tuple(gs), tuple(gj), 1e-4 if dtype == np.complex64 else 1e-10)


# -- batching --------------------------------------------------------------------------------------------
def test_vmap_complex_program() -> None:
    f = define("np.sum(np.abs(z @ w) ** 2) + np.real(np.conj(z[0, 0]) * w[1]) + np.angle(w[0])", "z, w")
    z, w = carr((4, 3, 3)), carr((4, 3))
    got = srcjax.vmap(f)(z, w)
    close(got, np.stack([f(z[i], w[i]) for i in range(4)]), 1e-12)
    close(srcjax.vmap(srcjax.grad(f))(z, w), JAX.vmap(jax.grad(define(
        "np.sum(np.abs(z @ w) ** 2) + np.real(np.conj(z[0, 0]) * w[1]) + np.angle(w[0])", "z, w", jnp)))(z, w), 1e-10)


# -- a realistic program: a complex matmul layer trained by gradient -----------------------------------
def test_complex_linear_layer_gradient() -> None:
    body = "np.mean(np.abs(np.tanh(x @ w + b) - y) ** 2)"
    x, w, b, y = carr((8, 4)), carr((4, 3)) * 0.5, carr(3) * 0.1, carr((8, 3))
    f, fj = define(body, "w, b, x, y"), define(body, "w, b, x, y", jnp)
    got = srcjax.value_and_grad(f, argnums=(0, 1))(w, b, x, y)
    want = JAX.value_and_grad(fj, argnums=(0, 1))(w, b, x, y)
    close(got[0], want[0], 1e-12)
    close(tuple(got[1]), tuple(want[1]), 1e-10)


# -- hypothesis: shapes, dtypes, broadcasting -------------------------------------------------------------
@settings(max_examples=6 * _SCALE, deadline=None, derandomize=True, database=None)
@given(shape=st.lists(st.integers(1, 4), min_size=0, max_size=3), dtype=st.sampled_from([np.complex64, np.complex128]),
       real=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2 ** 16))
def test_hypothesis_elementwise(shape: list[int], dtype: Any, real: Any, seed: int) -> None:
    r = np.random.default_rng(seed)
    z = (r.uniform(-1, 1, shape) + 1j * r.uniform(-1, 1, shape)).astype(dtype)
    x = r.uniform(0.5, 1.5, shape[-1:]).astype(real)
    body = "np.exp(z) * x + np.conj(z) / (x + 1j), np.abs(z * x), np.real(np.sum(z)) + np.imag(z)"
    three_oracles(body, "z, x", z, x)
    g = srcjax.grad(define("np.sum(np.abs(np.exp(z) * x) ** 2)", "z, x"), argnums=(0, 1))(z, x)
    j = JAX.grad(define("np.sum(np.abs(np.exp(z) * x) ** 2)", "z, x", jnp), argnums=(0, 1))(z, x)
    single = dtype == np.complex64 or real == np.float32
    close(tuple(g), tuple(j), 1e-4 if single else 1e-10)


# -- the command-line tool: complex annotations -------------------------------------------------------------
def test_cli_complex_annotation(tmp_path: Any, capsys: Any) -> None:
    from srcjax.cli import main

    model = tmp_path / "model.py"
    model.write_text('import numpy as np\n\n\ndef power(z: "c64[4]"):\n    return np.sum(np.abs(z) ** 2)\n')
    assert main([f"{model}::power", "--grad", "--emit", "hlo"]) == 0
    assert "complex<f32>" in capsys.readouterr().out
