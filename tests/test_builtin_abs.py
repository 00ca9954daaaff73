"""Python's builtin ``abs`` of arrays and numbers: differentiated as ``np.abs`` (was refused: "cannot
differentiate through `abs(...)`"), and weakly typed for a Python number as Python and jax keep it (was a
strong float64: ``x32 * abs(s)`` became float64 compiled, float32 under NumPy and jax)."""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)


def loss(x, s):
    return np.sum(abs(x) * 2.0) + abs(np.sum(x)) * abs(-3) + abs(s) * abs(2.5)


def loss_jax(x, s):
    return jnp.sum(abs(x) * 2.0) + abs(jnp.sum(x)) * abs(-3) + abs(s) * abs(2.5)


def cubes(x):
    return np.sum(abs(x) ** 3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grad_of_builtin_abs_is_jaxs(dtype):
    x = np.array([1.0, -2.0, 3.0], dtype)
    want = jax.grad(loss_jax, argnums=(0, 1))(x, -1.5)
    got = srcjax.grad(loss, argnums=(0, 1))(x, -1.5)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(srcjax.hessian(cubes)(x)),
                               np.asarray(jax.hessian(lambda v: jnp.sum(abs(v) ** 3))(x)), rtol=1e-6)
    xs = np.stack([x, -x * 0.5])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(cubes))(xs)),
                               np.asarray(jax.vmap(jax.grad(lambda v: jnp.sum(abs(v) ** 3)))(xs)), rtol=1e-6)
    y, t = srcjax.jvp(lambda v: abs(v) * 2, (x,), (np.ones(3, dtype),))
    np.testing.assert_allclose(np.asarray(t), np.sign(x) * 2)


def test_builtin_abs_of_a_python_number_stays_weak():
    x32 = np.ones(3, np.float32)
    for f in (loss, lambda x, s: np.sum(abs(x) * 2.0) + abs(s)):
        assert srcjax.jit(f)(x32, -1.5).dtype == f(x32, -1.5).dtype == np.float32


def test_a_users_own_abs_is_called():
    def abs(v):  # noqa: A001  (the user's own abs shadows the builtin)
        return v * v

    def f(x):
        return np.sum(abs(x))

    x = np.array([1.0, -2.0])
    np.testing.assert_allclose(np.asarray(srcjax.grad(f)(x)), 2 * x)
