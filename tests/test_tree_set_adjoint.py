"""Reverse mode through a record's field replaced in batched code (``tree_set``).

A hypergradient through a sweep over learning rates, ``grad`` of ``vmap(run)(lrs)`` where ``run`` carries an
optax-style ``AdamState`` NamedTuple around a loop (vmap16's adam_fit_many_lrs): vmap broadcasts the carry item
by item (``state = tree_set(state, 'mu', ...)``), and reverse mode refused it ("cannot differentiate through
`tree_set(...)`"). ``tree_set`` is now the ``index_update`` of the container (``transforms/anf.py``), whose
derivative reads and clears the item by its key.
"""

from __future__ import annotations

import types
from typing import Any, NamedTuple

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import srcjax  # noqa: E402

from .twins import jax_twin, jitted  # noqa: E402

jax.config.update("jax_enable_x64", True)


class AdamState(NamedTuple):
    mu: dict
    nu: dict


def adam_step(params: Any, state: Any, grads: Any, lr: Any) -> Any:
    b1, b2, eps = 0.9, 0.999, 1e-8
    mu = srcjax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, grads)
    nu = srcjax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g ** 2, state.nu, grads)
    new = srcjax.tree_util.tree_map(lambda p, m, v: p - lr * m / (np.sqrt(v) + eps), params, mu, nu)
    return new, AdamState(mu, nu)


def linreg(p: Any, x: Any, y: Any) -> Any:
    return np.mean((x @ p["w"] + p["b"] - y) ** 2)


def swept_loss(params: Any, x: Any, y: Any, lrs: Any) -> Any:
    def run(lr: Any) -> Any:
        p = params
        state = AdamState(srcjax.tree_util.tree_map(np.zeros_like, p), srcjax.tree_util.tree_map(np.zeros_like, p))
        for _ in range(2):
            g = srcjax.grad(linreg)(p, x, y)
            p, state = adam_step(p, state, g, lr)
        return linreg(p, x, y)

    return np.sum(srcjax.vmap(run)(lrs))


R = np.random.default_rng(0)
PARAMS = {"w": R.normal(size=3), "b": 0.1}
X, Y, LRS = R.normal(size=(5, 3)), R.normal(size=5), np.array([0.01, 0.1])


def test_hypergradient_through_a_vmapped_adam_sweep_matches_jax() -> None:
    as_jax = types.SimpleNamespace(tree_util=jax.tree_util, grad=jax.grad, vmap=jax.vmap)
    twin = jax_twin(swept_loss, helpers=(linreg, adam_step), srcjax=as_jax, AdamState=AdamState)
    want = jitted(jax.grad(twin, argnums=3))(PARAMS, X, Y, LRS)
    got = srcjax.grad(swept_loss, argnums=3)(PARAMS, X, Y, LRS)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9, atol=1e-12)
