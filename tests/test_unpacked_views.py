"""A dict's values unpacked (``a, b = d.values()``) and its items unpacked into pairs (``(k1, a), (k2, b) =
d.items()``) under grad, vmap, vmap(grad), jacrev, hessian.

Derivatives refused them ("cannot differentiate through `d.values()` kept as a value yet") where jax runs them;
values are read as ``list(d.values())``, items in pairs as ``k1, k2 = list(d.keys()); a, b = list(d.values())``
(``frontend/view_unpacking.py``). Oracle: jax (jitted twins).
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

from .twins import jax_twin, jitted

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def unpacked_values(d, x):
    a, b = d.values()
    return np.sum(a * np.sin(b) * x)


def _close(got, want):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn", [unpacked_values])
def test_unpacked_view_under_grad(fn):
    rng = np.random.default_rng(0)
    d, x = {"p": rng.normal(size=3), "q": rng.normal(size=3)}, rng.normal(size=3)
    twin = jax_twin(fn)
    _close(srcjax.grad(fn, argnums=(0, 1))(d, x), jitted(jax.grad(twin, argnums=(0, 1)))(d, x))
    db = {"p": rng.normal(size=(4, 3)), "q": rng.normal(size=(4, 3))}
    _close(srcjax.vmap(fn, in_axes=(0, None))(db, x), jitted(jax.vmap(twin, in_axes=(0, None)))(db, x))


def test_unpacked_values_under_vmap_of_grad():
    rng = np.random.default_rng(1)
    db, x = {"p": rng.normal(size=(4, 3)), "q": rng.normal(size=(4, 3))}, rng.normal(size=3)
    twin = jax_twin(unpacked_values)
    _close(srcjax.vmap(srcjax.grad(unpacked_values), in_axes=(0, None))(db, x),
           jitted(jax.vmap(jax.grad(twin), in_axes=(0, None)))(db, x))


def unpacked_items(d, x):
    (k1, a), (k2, b) = d.items()
    out = {k1: a * x, k2: np.sin(b) + x}
    return np.sum(out["p"] * out["q"])


def unpacked_items_list(d, x):
    [(ka, a), [kb, b]] = d.items()
    return np.sum(a * np.cos(b) * x) + np.sum(d[ka] * d[kb])


@pytest.mark.parametrize("fn", [unpacked_items, unpacked_items_list])
def test_unpacked_items_in_pairs(fn):
    rng = np.random.default_rng(2)
    d, x = {"p": rng.normal(size=3), "q": rng.normal(size=3)}, rng.normal(size=3)
    twin = jax_twin(fn)
    _close(srcjax.grad(fn, argnums=(0, 1))(d, x), jitted(jax.grad(twin, argnums=(0, 1)))(d, x))
    _close(srcjax.hessian(fn)(d, x), jitted(jax.hessian(twin))(d, x))
    db = {"p": rng.normal(size=(4, 3)), "q": rng.normal(size=(4, 3))}
    _close(srcjax.vmap(srcjax.grad(fn), in_axes=(0, None))(db, x),
           jitted(jax.vmap(jax.grad(twin), in_axes=(0, None)))(db, x))


def test_unpacked_items_source_reads_keys_then_values():
    src = srcjax.source(srcjax.grad(unpacked_items))
    assert "k1, k2 = list(keys)" in src and "a, b = list(items)" in src, src
