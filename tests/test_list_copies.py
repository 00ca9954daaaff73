"""``list(ws)`` / ``tuple(ws)`` of a list argument under grad, vmap and vmap(grad), against jax.

Derivatives refused them ("cannot differentiate through `list(ws)` yet"); they are read as the comprehensions they
are (``frontend/list_copies.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

from .twins import jax_twin, jitted

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def listed(ws, x):
    u = list(ws)
    return np.sum(np.stack(u) ** 2 * x)


def tupled(ws, x):
    u = tuple(ws)
    return np.sum(u[0] ** 2 * x) + np.sum(np.sin(u[1]))


def _close(got, want):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn", [listed, tupled])
def test_copy_of_a_list_argument(fn):
    rng = np.random.default_rng(0)
    ws, x = [rng.normal(size=3), rng.normal(size=3)], rng.normal(size=3)
    twin = jax_twin(fn)
    _close(srcjax.grad(fn, argnums=(0, 1))(ws, x), jitted(jax.grad(twin, argnums=(0, 1)))(ws, x))
    wsb = [rng.normal(size=(4, 3)), rng.normal(size=(4, 3))]
    _close(srcjax.vmap(srcjax.grad(fn), in_axes=(0, None))(wsb, x),
           jitted(jax.vmap(jax.grad(twin), in_axes=(0, None)))(wsb, x))
