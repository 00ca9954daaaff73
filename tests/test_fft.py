"""``np.fft``: every transform against NumPy (XLA and the generated source run by NumPy) over ``n``/``s``,
``axis``/``axes``, ``norm`` and dtypes (NumPy 2's result dtypes); derivatives against jax (``jax.vjp`` with
complex cotangents, ``jax.jvp``, ``jax.grad`` of realistic programs); batching; sample frequencies and
shifts; errors."""

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


def define(body: str, params: str = "x", np_module: Any = np) -> Any:
    return written.define(body, params, np_module, tag="test_fft")


def data(shape: Any, dtype: Any) -> np.ndarray:
    d = np.dtype(dtype)
    x = rng.uniform(-1, 1, shape)
    if d.kind == "c":
        x = x + 1j * rng.uniform(-1, 1, shape)
    return x.astype(d)


def close(got: Any, want: Any, rtol: float) -> None:
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
    scale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
    np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale)


def both(body: str, x: np.ndarray) -> None:
    f = define(body)
    want = f(x)
    tol = 1e-5 if x.dtype in (np.float32, np.complex64, np.float16) else 1e-12
    close(srcjax.compile(f)(x), want, tol)
    close(srcjax.compile(f, device="numpy")(x), want, 1e-12)


CALLS_1D = [
    "np.fft.fft(x)", "np.fft.fft(x, n=5)", "np.fft.fft(x, n=11, axis=0)", "np.fft.fft(x, norm='ortho')",
    "np.fft.fft(x, axis=-2, norm='forward')", "np.fft.ifft(x)", "np.fft.ifft(x, n=3, norm='ortho')",
    "np.fft.ifft(x, axis=0, norm='forward')", "np.fft.rfft(np.real(x))", "np.fft.rfft(np.real(x), n=7, axis=0)",
    "np.fft.rfft(np.real(x), norm='ortho')", "np.fft.irfft(x)", "np.fft.irfft(x, n=9)",
    "np.fft.irfft(x, axis=0, norm='forward')", "np.fft.irfft(x, n=2, norm='ortho')",
    "np.fft.hfft(x)", "np.fft.hfft(x, n=7, norm='ortho')", "np.fft.ihfft(np.real(x))",
    "np.fft.ihfft(np.real(x), n=5, axis=0, norm='forward')",
]
CALLS_ND = [
    "np.fft.fft2(x)", "np.fft.ifft2(x, s=(3, 5))", "np.fft.rfft2(np.real(x))", "np.fft.irfft2(x)",
    "np.fft.fftn(x)", "np.fft.fftn(x, axes=(0, 2))", "np.fft.fftn(x, s=(2, 7), axes=(2, 0), norm='ortho')",
    "np.fft.ifftn(x, norm='forward')", "np.fft.rfftn(np.real(x))", "np.fft.rfftn(np.real(x), s=(3, 4), axes=(0, 1))",
    "np.fft.irfftn(x)", "np.fft.irfftn(x, s=(2, 3, 6))", "np.fft.irfftn(x, axes=(1,), norm='ortho')",
    "np.fft.fftn(x[None, None], axes=(0, 1, 2, 3, 4))", "np.fft.irfftn(x[None], axes=(0, 1, 2, 3))",
]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32, np.complex64])
@pytest.mark.parametrize("body", CALLS_1D)
def test_fft_1d_against_numpy(body: str, dtype: Any) -> None:
    both(body, data((6, 8), dtype))


@pytest.mark.parametrize("dtype", [np.complex128, np.float32])
@pytest.mark.parametrize("body", CALLS_ND)
def test_fft_nd_against_numpy(body: str, dtype: Any) -> None:
    both(body, data((4, 3, 6), dtype))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float16, np.bool_])
def test_result_dtypes_as_numpy(dtype: Any) -> None:
    """NumPy 2: float16 computes in single precision (complex64), integers in double."""
    both("np.fft.fft(x)", (rng.uniform(0, 3, 8)).astype(dtype))
    both("np.fft.rfft(x)", (rng.uniform(0, 3, 8)).astype(dtype))


def test_frequencies_and_shifts() -> None:
    body = ("np.fft.fftfreq(8), np.fft.fftfreq(7, d=0.5), np.fft.rfftfreq(8, 0.1), np.fft.rfftfreq(5), "
            "np.fft.fftshift(x), np.fft.ifftshift(x), np.fft.fftshift(x, axes=1), np.fft.ifftshift(x, axes=(0,)), "
            "np.fft.fftfreq(x.shape[0]) * np.sum(x)")
    f = define(body)
    x = rng.normal(size=(5, 4))
    for got, want in zip(srcjax.compile(f)(x), f(x)):
        close(got, want, 1e-12)
    fs = srcjax.grad(define("np.sum(np.fft.fftshift(x) * np.arange(20.0).reshape(5, 4))"))(x)
    fj = JAX.grad(define("np.sum(np.fft.fftshift(x) * np.arange(20.0).reshape(5, 4))", "x", jnp))(x)
    close(fs, fj, 1e-12)


# -- derivatives: the VJP (complex cotangents) and JVP of every transform, against jax ------------------
DERIVS = [
    ("np.fft.fft(x)", np.complex128), ("np.fft.fft(x, n=5, norm='ortho')", np.float64),
    ("np.fft.fft(x, n=11, axis=0)", np.complex128), ("np.fft.ifft(x, n=6, norm='forward')", np.complex128),
    ("np.fft.ifft(x, axis=0)", np.float64), ("np.fft.rfft(x)", np.float64), ("np.fft.rfft(x, n=5, axis=0)", np.float64),
    ("np.fft.rfft(x, n=12, norm='ortho')", np.float64), ("np.fft.irfft(x)", np.complex128),
    ("np.fft.irfft(x, n=7)", np.complex128), ("np.fft.irfft(x, n=4, axis=0, norm='ortho')", np.complex128),
    ("np.fft.irfft(x, norm='forward')", np.float64), ("np.fft.fft2(x)", np.complex128),
    ("np.fft.ifft2(x, s=(3, 9))", np.complex128), ("np.fft.rfft2(x)", np.float64), ("np.fft.irfft2(x)", np.complex128),
    ("np.fft.rfftn(x, s=(5, 6))", np.float64), ("np.fft.irfftn(x, s=(4, 5), norm='ortho')", np.complex128),
    ("np.fft.fftn(x, axes=(0,))", np.complex128), ("np.fft.ifftn(x, norm='ortho')", np.float64),
    ("np.fft.hfft(x, n=7)", np.complex128), ("np.fft.hfft(x, axis=0, norm='forward')", np.float64),
    ("np.fft.ihfft(x, n=5)", np.float64), ("np.fft.ihfft(x, axis=0, norm='ortho')", np.float64),
]


@pytest.mark.parametrize("body, dtype", DERIVS)
def test_vjp_and_jvp_against_jax(body: str, dtype: Any) -> None:
    x = data((4, 6), dtype)
    f, fj = define(body), define(body, "x", jnp)
    out, back = srcjax.vjp(f, x)
    jout, jback = jax.vjp(fj, x)
    close(out, jout, 1e-12)
    u = data(np.shape(jout), np.asarray(jout).dtype)
    close(back(u)[0], jback(u)[0], 1e-10)
    t = data(x.shape, dtype)
    _, tan = srcjax.jvp(f, (x,), (t,))
    _, jtan = JAX.jvp(fj, (x,), (t,))
    close(tan, jtan, 1e-10)


# -- realistic programs -----------------------------------------------------------------------------------
LOWPASS = "np.sum((np.real(np.fft.ifft(np.fft.fft(x) * mask)) - y) ** 2)"
ENERGY = "np.sum(np.abs(np.fft.rfft(x)) ** 2)"


def test_spectral_lowpass_filter_and_its_gradient() -> None:
    n = 64
    x, y = rng.normal(size=n), rng.normal(size=n)
    mask = (np.abs(np.fft.fftfreq(n)) < 0.1).astype(np.float64)
    f, fj = define(LOWPASS, "x, mask, y"), define(LOWPASS, "x, mask, y", jnp)
    close(srcjax.compile(f)(x, mask, y), f(x, mask, y), 1e-12)
    close(srcjax.grad(f)(x, mask, y), JAX.grad(fj)(x, mask, y), 1e-10)
    close(srcjax.grad(f, argnums=1)(x, mask, y), JAX.grad(fj, argnums=1)(x, mask, y), 1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_signal_energy_gradient(dtype: Any) -> None:
    """Parseval: the gradient of the rfft energy of a real signal, against jax."""
    x = rng.normal(size=(3, 33)).astype(dtype)
    f, fj = define(ENERGY), define(ENERGY, "x", jnp)
    g = srcjax.grad(f)(x)
    assert g.dtype == dtype
    close(g, JAX.grad(fj)(x), 1e-4 if dtype == np.float32 else 1e-10)
    close(srcjax.compile(srcjax.grad(f), device="numpy")(x), JAX.grad(fj)(x), 1e-4 if dtype == np.float32 else 1e-10)


def test_second_derivative_through_fft() -> None:
    body = "np.sum(np.abs(np.fft.fft(np.sin(x))) ** 3)"
    x = rng.normal(size=5)
    h = srcjax.hessian(define(body))(x)
    close(h, JAX.hessian(define(body, "x", jnp))(x), 1e-8)


def test_vmap_of_fft_programs() -> None:
    f = define("np.fft.irfft(np.fft.rfft(x) * np.exp(-np.abs(np.fft.rfftfreq(x.shape[0]))), n=x.shape[0])")
    x = rng.normal(size=(5, 10))
    close(srcjax.vmap(f)(x), np.stack([f(r) for r in x]), 1e-12)
    g = define(ENERGY)
    close(srcjax.vmap(srcjax.grad(g))(x), JAX.vmap(jax.grad(define(ENERGY, "x", jnp)))(x), 1e-10)
    z = data((3, 4, 5), np.complex128)
    close(srcjax.vmap(define("np.fft.fft2(x, norm='ortho')"), in_axes=1)(z),
          np.asarray(JAX.vmap(lambda v: jnp.fft.fft2(v, norm="ortho"), in_axes=1)(z)), 1e-12)


# -- errors -----------------------------------------------------------------------------------------------
ERRORS = [
    ("np.fft.fft(x, norm='sideways')", srcjax.DTypeError, "norm"),
    ("np.fft.rfft(x + 1j)", srcjax.DTypeError, "real input"),
    ("np.fft.fft(x, n=0)", srcjax.ShapeError, "at least 1"),
    ("np.fft.fft(x, axis=2)", srcjax.ShapeError, "out of bounds"),
    ("np.fft.fftn(x, s=(2, 3, 4), axes=(0, 1))", srcjax.ShapeError, "different lengths"),
    ("np.fft.fftn(x, axes=(0, 0))", srcjax.ShapeError, "repeated"),
    ("np.fft.irfft(x[:, :1])", srcjax.ShapeError, "invalid number of data points"),
]


@pytest.mark.parametrize("body, kind, message", ERRORS)
def test_errors_are_located(body: str, kind: Any, message: str) -> None:
    with pytest.raises(kind, match=message) as e:
        srcjax.compile(define(body))(rng.normal(size=(3, 4)))
    assert e.value.span is not None and e.value.span.line == 2


# -- hypothesis: shapes, lengths, axes, norms, dtypes ------------------------------------------------------
@settings(max_examples=8 * _SCALE, deadline=None, derandomize=True, database=None)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3), data_=st.data(),
       dtype=st.sampled_from([np.float32, np.float64, np.complex64, np.complex128]),
       norm=st.sampled_from([None, "backward", "ortho", "forward"]), kind=st.sampled_from(["fft", "ifft", "rfft"]))
def test_hypothesis_transforms(shape: list[int], data_: Any, dtype: Any, norm: Any, kind: str) -> None:
    axis = data_.draw(st.integers(-len(shape), len(shape) - 1))
    n = data_.draw(st.one_of(st.none(), st.integers(1, 9)))
    x = data(tuple(shape), dtype)
    arg = "np.real(x)" if kind == "rfft" else "x"
    both(f"np.fft.{kind}({arg}, n={n}, axis={axis}, norm={norm!r})", x)
    m = (n or shape[axis]) // 2 + 1
    inv = f"np.fft.irfft(x, n={n}, axis={axis}, norm={norm!r})" if shape[axis] > 1 or n else "x"
    if m and dtype in (np.complex64, np.complex128):
        both(inv, x)


def test_vmap_fftn_with_s_and_no_axes() -> None:
    """``s`` without ``axes`` transforms the last ``len(s)`` axes of each example."""
    f = define("np.fft.fftn(x, s=(3, 5)), np.fft.irfftn(x, s=(4,)), np.fft.fftn(x), np.fft.ifft2(x)")
    z = data((3, 2, 4, 6), np.complex128)
    got = srcjax.vmap(f)(z)
    for k, g in enumerate(got):
        close(g, np.stack([f(e)[k] for e in z]), 1e-12)


def test_vmap_hermitian_transforms() -> None:
    """np.fft.hfft/ihfft (composites over irfft/rfft) batch through their rules."""
    f = define("np.fft.hfft(x, n=7), np.fft.ihfft(np.real(x), axis=0, norm='ortho')")
    z = data((3, 4, 5), np.complex128)
    got = srcjax.vmap(f)(z)
    for k, g in enumerate(got):
        close(g, np.stack([f(e)[k] for e in z]), 1e-12)
