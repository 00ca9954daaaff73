"""Names that hold known functions (srcjax/frontend/function_names.py): a loop over a tuple of NumPy functions
(hunt22's nerf_posenc_mlp: ``[f(2.0 ** k * x) for k in range(L) for f in (np.sin, np.cos)]``), ``fn = np.sin``,
and a parameter's function default under vmap (``act=np.tanh``). jit ran them; grad refused "`f_1(...)`: srcjax
does not know its derivative", vmap "vmap: cannot batch 'f_1(mul)'". Checked against jax running the same text,
central finite differences and the user's function run by NumPy (a loop over the examples for vmap)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

from .fd import central_fd
from .twins import JAX, jax_twin

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def posenc(x):
    feats = [x] + [f(2.0 ** k * x) for k in range(2) for f in (np.sin, np.cos)]
    return np.sum(np.concatenate(feats, axis=-1) * x[..., :1])


def assigned(x):
    fn = np.sin
    y = fn(x) * 2.0
    return np.sum(y * fn(x + 1.0))


def looped(x):
    s = 0.0
    for fn in (np.sin, np.cos, np.tanh):
        s = s + np.sum(fn(x) * x)
    for fn in [np.exp, np.log1p]:
        s = s + np.sum(fn(0.1 * x))
    return s


def summed(x):
    return sum(np.sum(g(x) ** 2) for g in (np.tanh, np.sin)) + np.sum(x)


def act_default(x, act=np.tanh):
    return np.sum(act(x) * x)


def rebound(x):
    fn = np.sin
    y = fn(x)
    fn = np.cos
    return np.sum(y * fn(x))


def _close(got: Any, want: Any, what: str) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("fn", [posenc, assigned, looped, summed, act_default])
def test_functions_held_by_names_differentiate_and_batch(fn: Any) -> None:
    x = np.random.default_rng(3).uniform(0.1, 0.9, (3, 2))
    twin = jax_twin(fn)
    _close(srcjax.jit(fn)(x), fn(x), "jit vs NumPy")
    g = srcjax.grad(fn)(x)
    _close(g, JAX.grad(twin)(x), "grad vs jax")
    np.testing.assert_allclose(np.asarray(g), central_fd(fn, (x,), 0), rtol=1e-6, atol=1e-8, err_msg="grad vs finite differences")
    _close(srcjax.vmap(fn)(x), [fn(r) for r in x], "vmap vs a loop over the examples")
    _close(srcjax.vmap(srcjax.grad(fn))(x), JAX.vmap(JAX.grad(twin))(x), "vmap(grad) vs jax")
    t = np.ones_like(x)
    _close(srcjax.jvp(fn, (x,), (t,))[1], jax.jvp(twin, (x,), (t,))[1], "jvp vs jax")


def test_the_functions_are_written_in_the_source() -> None:
    text = srcjax.source(srcjax.grad(posenc))
    assert "np.sin(" in text and "np.cos(" in text and "f_1" not in text, text
    text = srcjax.source(srcjax.vmap(looped))
    assert "for fn" not in text and "np.tanh(" in text and "np.log1p(" in text, text
    assert "fn" not in srcjax.source(srcjax.jit(assigned))


def test_a_name_bound_twice_keeps_its_calls() -> None:
    x = np.linspace(0.2, 0.8, 4)
    _close(srcjax.jit(rebound)(x), rebound(x), "jit vs NumPy")
    assert "fn(x)" in srcjax.source(srcjax.jit(rebound))  # (not resolved: two bindings)


def test_vmap_refuses_another_function_for_a_function_default() -> None:
    x = np.linspace(0.2, 0.8, 6).reshape(2, 3)
    with pytest.raises(srcjax.TranspileError, match="`act` is called as a function"):
        srcjax.vmap(act_default, in_axes=(0, None))(x, np.sin)  # (was: tanh's values, silently, once resolved)
    _close(srcjax.vmap(act_default, in_axes=(0, None))(x, np.tanh), [act_default(r) for r in x], "the default")
