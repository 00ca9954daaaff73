"""A helper's parameter spread in its body (``f(y, t, *args)``) and passed a tuple written at the call, scipy's
``rk4(f, y0, t, args=(alpha, beta))`` (hunt14's rk4_lotka_volterra; srcjax/frontend/tuple_params.py): was refused
("*-arguments in a call of a value whose length is not written in this function"). Under jit, grad, jacrev and
vmap against the user's function run by NumPy, jax and finite differences; the default ``args=()`` too. A
parameter the helper assigns again stays refused at its line."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax
from srcjax import TranspileError

from .fd import central_fd

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def decay(y, t, rate, shift):
    return -rate * y + shift * np.sin(t)


def still(y, t):
    return -0.5 * y


def euler(f, y0, ts, args=()):
    y = y0
    for i in range(len(ts) - 1):
        y = y + (ts[i + 1] - ts[i]) * f(y, ts[i], *args)
    return y


def integrate(y0, rate, shift):
    ts = np.linspace(0.0, 1.0, 5)
    return np.sum(euler(decay, y0, ts, args=(rate, shift)) ** 2) + np.sum(euler(still, y0, ts))


def integrate_list(y0, rate, shift):
    return np.sum(euler(decay, y0, np.linspace(0.0, 1.0, 4), [rate, shift]))


def grown(f, y, extra):
    extra = extra + (1.0,)
    return f(y, *extra)


def uses_grown(y, rate):
    return np.sum(grown(decay, y, (rate,)))


def _twin(y0, rate, shift):
    ts = jnp.linspace(0.0, 1.0, 5)
    y, z = y0, y0
    for i in range(4):
        h = ts[i + 1] - ts[i]
        y = y + h * (-rate * y + shift * jnp.sin(ts[i]))
        z = z + h * (-0.5 * z)
    return jnp.sum(y ** 2) + jnp.sum(z)


Y0, RATE, SHIFT = np.array([1.0, -0.5, 2.0]), np.float64(0.7), np.float64(0.3)


def _close(got: Any, want: Any, what: str, rtol: float = 1e-9) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=1e-12, err_msg=what)


def test_a_tuple_passed_for_a_spread_parameter() -> None:
    _close(srcjax.jit(integrate)(Y0, RATE, SHIFT), integrate(Y0, RATE, SHIFT), "jit vs NumPy")
    _close(srcjax.jit(integrate_list)(Y0, RATE, SHIFT), integrate_list(Y0, RATE, SHIFT), "a list display")
    for k in (0, 1, 2):
        g = srcjax.grad(integrate, argnums=k)(Y0, RATE, SHIFT)
        _close(g, jax.grad(_twin, argnums=k)(Y0, RATE, SHIFT), f"grad(argnums={k}) vs jax")
        _close(g, central_fd(integrate, (Y0, RATE, SHIFT), k), f"grad(argnums={k}) vs finite differences", 1e-6)
    rates = np.array([0.7, 0.1, 1.5])
    _close(srcjax.vmap(srcjax.grad(integrate, argnums=1), in_axes=(None, 0, None))(Y0, rates, SHIFT),
           jax.vmap(jax.grad(_twin, argnums=1), in_axes=(None, 0, None))(Y0, rates, SHIFT), "vmap(grad) vs jax")
    assert "args = (args_0, args_1)" in srcjax.source(srcjax.jit(integrate))


def test_a_spread_parameter_assigned_again_is_still_refused() -> None:
    with pytest.raises(TranspileError, match="length is not written in this function") as e:
        srcjax.jit(uses_grown)(Y0, RATE)
    assert "f(y, *extra)" in str(e.value)


def _spreads_in_nested_def(f, y, args):  # (the spread is in a nested function: its own code object)
    def step(v):
        return f(v, *args)

    return step(y)


def _spreads_nothing(f, y, args):
    return f(y, args[0])


def test_which_functions_spread_is_read_from_bytecode_first() -> None:
    # The cheap pre-check (no parse of a function with no `g(*...)` call: reading srcjax's own helpers on every
    # first call cost a hessian ~40 ms) must never miss a spread, nested or not.
    from srcjax.frontend.tuple_params import _calls_with_star, spreads

    assert _calls_with_star(_spreads_in_nested_def.__code__) and spreads(_spreads_in_nested_def)
    assert not _calls_with_star(_spreads_nothing.__code__) and not spreads(_spreads_nothing)
    assert _calls_with_star(euler.__code__) and spreads(euler) and _calls_with_star(grown.__code__)
