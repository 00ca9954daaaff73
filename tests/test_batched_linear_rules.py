"""Reverse mode's rules for srcjax.batched's linear helpers inside an ``if`` on data (transforms/linear_calls.py).

Reverse mode writes a helper called in a branch on data out in place; ``batch_broadcast_items`` (recursive on a
container's structure) and ``batch_index_add`` (Python logic on its key) could not be, and a derivative through a
batched program that calls them in such a branch was refused ("reverse mode through a call of
`batch_broadcast_items` inside an `if` on array data of the batched program srcjax wrote", seeds 1100, 1275, 1276,
1362, 1411 of tests/test_transform_compose_random.py). Their cotangents are now written from rules, as a
primitive's: checked here on programs calling the helpers in both branches of an ``if`` on data (arrays and a dict,
batched and unbatched operands), against central differences, and for a ``vjp`` of a ``hessian`` through a batched
``while`` (seed 1362's class) against jax.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax
from srcjax.batched import (  # (with their rules' helpers, which batched source has by `import *`)
    batch_broadcast_items,
    batch_index_add,
    batch_index_add_bar,  # noqa: F401
    batch_summed_items,  # noqa: F401
)

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

_W = np.arange(1.0, 5.0)[:, None]


def _arrays(x: Any) -> Any:  # a batched z, an unbatched g
    z = x * 0.0
    if np.sum(x) > 0.0:
        b = batch_broadcast_items(np.sin(x), 4)
        z = batch_index_add(b, 1, np.sum(x * x), 4, True, False, None)
    else:
        z = batch_broadcast_items(np.cos(x), 4)
    return np.sum(z * _W)


def _a_dict(x: Any) -> Any:  # a container's repeat, an item added to
    d = {"a": x * 2.0, "b": np.tanh(x)}
    if np.sum(x) > 0.0:
        e = batch_broadcast_items(d, 4)
        e = batch_index_add(e, "a", np.sin(x), 4, True, False, None)
    else:
        e = batch_broadcast_items({"a": x * x, "b": x}, 4)
    return np.sum(e["a"] * _W) + np.sum(e["b"] ** 2)


def _unbatched_z(x: Any) -> Any:  # an unbatched z, a batched g
    z = x * 0.0
    if np.sum(x) > 0.0:
        z = batch_index_add(np.sin(x), 0, np.arange(1.0, 5.0) * np.sum(x * x), 4, False, True, None)
    else:
        z = batch_broadcast_items(x * x, 4)
    return np.sum(z * _W)


def _central(f: Any, x: np.ndarray, eps: float) -> np.ndarray:
    return np.array([(np.asarray(f(x + eps * e)) - np.asarray(f(x - eps * e))) / (2 * eps) for e in np.eye(x.size)])


@pytest.mark.parametrize("f", [_arrays, _a_dict, _unbatched_z])
@pytest.mark.parametrize("x", [np.array([0.3, -0.2, 0.5]), np.array([-0.3, -0.2, 0.1])], ids=["true", "false"])
def test_reverse_mode_through_batched_linear_helpers_inside_an_if_on_data(f: Any, x: np.ndarray) -> None:
    g = srcjax.grad(f)
    want = _central(f, x, 1e-6)
    np.testing.assert_allclose(np.asarray(g(x)), want, rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(g)(x)), want, rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(np.asarray(srcjax.hessian(f)(x)), _central(g, x, 1e-5), rtol=1e-6, atol=1e-6)
    assert "batch_summed_items(" in srcjax.source(g)


def _settled(x: Any, y: Any) -> Any:
    v = -np.tanh(x) * 0.3
    s = (np.tanh(y) * v + np.sum(y * y)) * 0.5 + 0.1
    it = 0
    while it < 3 and np.sum(s * s) < 1.0:
        s = s * 1.3 + 0.1
        it = it + 1
    return np.sum(v * v * y) + 0.3 * np.mean(y)


@pytest.mark.parametrize("argnum", [0, 1])
def test_vjp_of_a_hessian_through_a_batched_while(argnum: int) -> None:
    """Seed 1362's class: ``vjp(hessian(f))`` where ``f`` has a ``while`` on data (batched by the Hessian's
    ``vmap``: an ``if`` on data in each step, a value's tangent repeated along the batch there) was refused."""
    x, y = np.array([0.3, -0.2, 0.5]), np.array([0.7, 0.1, -0.4])

    def pulled(a: Any, b: Any) -> Any:
        out, back = srcjax.vjp(srcjax.hessian(_settled, max_iters=8), a, b, max_iters=8)
        return back(np.ones_like(out))[argnum]

    def twin(a: Any, b: Any) -> Any:  # (the while changes nothing the output reads)
        v = -jnp.tanh(a) * 0.3
        return jnp.sum(v * v * b) + 0.3 * jnp.mean(b)

    out, back = jax.vjp(jax.hessian(twin), x, y)
    want = back(jnp.ones_like(out))[argnum]
    np.testing.assert_allclose(np.asarray(srcjax.jit(pulled)(x, y)), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(pulled)(x, y)), want, rtol=1e-10, atol=1e-12)
