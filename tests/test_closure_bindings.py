"""A helper called with a function the caller defines reading the caller's locals (srcjax/frontend/
closure_bindings.py): scipy-style ``newton(f, fprime, x0)`` with lambdas over ``e`` and ``M`` (hunt14's
kepler_eccentric_anomaly) and ML-From-Scratch's ``nag_update(w, v, grad_func)`` with a nested ``def`` over ``A``
and ``b`` (nesterov_quadratic) were refused under grad ("srcjax does not know its derivative") and vmap ("vmap:
cannot batch 'f(x)'"). Checked under jit, grad and vmap(grad) against jax, the implicit derivative and the
user's function run by NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def newton(f, fprime, x0, steps=8):
    x = x0
    for _ in range(steps):
        x = x - f(x) / fprime(x)
    return x


def kepler(M, e):
    f = lambda E: E - e * np.sin(E) - M  # noqa: E731
    fprime = lambda E: 1 - e * np.cos(E)  # noqa: E731
    return newton(f, fprime, M)


def step(w, grad_func, lr=0.1):
    return w - lr * grad_func(w)


def descend(w, A, b):
    def grad_func(v):
        return A @ v - b
    for _ in range(3):
        w = step(w, grad_func)
    return 0.5 * w @ (A @ w) - b @ w


def _descend_twin(w, A, b):
    for _ in range(3):
        w = w - 0.1 * (A @ w - b)
    return 0.5 * w @ (A @ w) - b @ w


def _close(got: Any, want: Any, what: str) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9, atol=1e-12, err_msg=what)


def test_lambdas_over_locals_passed_to_a_helper() -> None:
    M, e = np.float64(0.8), np.float64(0.3)
    E = kepler(M, e)
    _close(srcjax.jit(kepler)(M, e), E, "jit vs NumPy")
    _close(srcjax.grad(kepler)(M, e), 1 / (1 - e * np.cos(E)), "dE/dM vs the implicit derivative")
    _close(srcjax.grad(kepler, argnums=1)(M, e), np.sin(E) / (1 - e * np.cos(E)), "dE/de vs the implicit derivative")
    Ms = np.array([0.2, 0.8, 2.0])
    want = [1 / (1 - e * np.cos(kepler(m, e))) for m in Ms]
    _close(srcjax.vmap(srcjax.grad(kepler), in_axes=(0, None))(Ms, e), want, "vmap(grad) vs the implicit derivative")


def test_a_nested_def_over_locals_passed_to_a_helper() -> None:
    rng = np.random.default_rng(5)
    q = rng.standard_normal((3, 3))
    A, b, w = q @ q.T + 3 * np.eye(3), rng.standard_normal(3), rng.standard_normal(3)
    _close(srcjax.jit(descend)(w, A, b), descend(w, A, b), "jit vs NumPy")
    for k in (0, 1, 2):
        _close(srcjax.grad(descend, argnums=k)(w, A, b), jax.grad(_descend_twin, argnums=k)(w, A, b),
               f"grad(argnums={k}) vs jax")
    ws = rng.standard_normal((4, 3))
    _close(srcjax.vmap(srcjax.grad(descend), in_axes=(0, None, None))(ws, A, b),
           jax.vmap(jax.grad(_descend_twin), in_axes=(0, None, None))(ws, A, b), "vmap(grad) vs jax")
    text = srcjax.source(srcjax.jit(descend))
    assert "grad_func_A" in text and "grad_func_b" in text, text
