"""Reverse mode's rules for srcjax.batched's indexing helpers, and an outer vmap of them (transforms/linear_calls.py,
transforms/batch_nested.py).

A gather or an index update at a key known per example (``w[:, k] = ...`` with ``k`` computed from mapped data)
is a call of ``batch_index``/``batch_index_update`` in batched source. Reverse mode wrote their cotangents from
their bodies, whose Python logic on the key (``_index_plan``, ``item_key``) an outer vmap cannot batch once it
maps the key, and an outer vmap that left the key alone batched the body, which a third one then met with the key
batched: "vmap: cannot batch 'item_key(key, flags)'" (seed 1658 of tests/test_transform_compose_random.py,
``vmap(jacfwd(jacrev(f)))``). The cotangents are now written from rules, and the outer vmap merges the batch
axes of every indexing helper and of their transposes. Checked against jax and the generated source run by NumPy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def _write(x: Any, y: Any) -> Any:
    k = np.argmax(y) % 3
    w = x.copy()
    w[:, k] = w[:, k] * 0.5 + np.sin(y[0])
    return np.sum(np.tanh(w) * w) + np.sum(w[:, k] * y[1])


def _write_jax(x: Any, y: Any) -> Any:
    k = jnp.argmax(y) % 3
    w = x.at[:, k].set(x[:, k] * 0.5 + jnp.sin(y[0]))
    return jnp.sum(jnp.tanh(w) * w) + jnp.sum(w[:, k] * y[1])


def _agree(got: Any, want: Any) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9, atol=1e-12)


def test_vjp_of_vmap_of_an_index_update_at_a_mapped_key() -> None:
    """``grad(sum(vmap(f)))``: per example ``w[:, k] = ...`` and ``w[:, k]`` at a ``k`` of its own (the key batched:
    batch_index_update's and batch_index's rules, ``value``'s cotangent and ``x``'s with the written slots
    cleared), against jax per example."""
    x, y = np.random.default_rng(0).standard_normal((2, 2, 3)), np.random.default_rng(1).standard_normal((2, 3))

    def g(x: Any, y: Any) -> Any:
        return np.sum(srcjax.vmap(_write)(x, y))

    twin = jax.grad(_write_jax, argnums=(0, 1))
    want = [np.stack(w) for w in zip(*[twin(x[i], y[i]) for i in range(2)])]
    for got in (srcjax.grad(g, argnums=(0, 1))(x, y), srcjax.numpy_function(srcjax.grad(g, argnums=(0, 1)))(x, y)):
        _agree(got[0], want[0])
        _agree(got[1], want[1])


def test_vmap_of_jacfwd_of_jacrev_of_an_index_update_at_a_data_key() -> None:
    """Seed 1658's class: the index update of ``jacrev``'s batched VJP, batched again by ``jacfwd`` (which leaves the
    key alone: merged, not its body batched) and by an outer vmap that maps the key (the merged call again)."""
    x, y = np.random.default_rng(2).standard_normal((2, 2, 3)), np.random.default_rng(3).standard_normal((2, 3))
    fn = srcjax.vmap(srcjax.jacfwd(srcjax.jacrev(_write, argnums=1), argnums=0))
    twin = jax.jacfwd(jax.jacrev(_write_jax, argnums=1), argnums=0)
    want = np.stack([twin(x[i], y[i]) for i in range(2)])
    _agree(fn(x, y), want)
    _agree(srcjax.numpy_function(fn)(x, y), want)


def _dense_sum(params: Any, x: Any) -> Any:
    h = np.tanh(x @ params[0]["w"] + params[0]["b"])
    return np.sum(h ** 2)


def test_hessian_of_a_list_of_dicts_through_merged_index_writes() -> None:
    """``hessian`` of a function of a list of dicts: the cotangent of ``params[0]["b"]`` is written into a dict by
    ``batch_index_add``; where jacfwd's vmap merges such a call (its key left alone), it splits it again item by item
    (``batch_split`` of the dict: was "tuple index out of range" in the generated source run by NumPy)."""
    rng = np.random.default_rng(4)
    params, x = [{"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}], rng.standard_normal((4, 3))

    def twin(p: Any) -> Any:
        return jnp.sum(jnp.tanh(x @ p[0]["w"] + p[0]["b"]) ** 2)

    want = jax.tree_util.tree_leaves(jax.hessian(twin)(params))
    for got in (srcjax.hessian(_dense_sum)(params, x), srcjax.numpy_function(srcjax.hessian(_dense_sum))(params, x)):
        leaves = jax.tree_util.tree_leaves(got)
        assert len(leaves) == len(want)
        for a, b in zip(leaves, want):
            _agree(a, b)


def _over_a_list(x: Any, y: Any) -> Any:
    v1 = np.sum(x * x) + np.sum(y * x)
    ls = [v1, v1 * 2.0]
    v3 = 0.0
    for e in ls:
        v3 = v3 + e * e
    return v3 * np.sum(y)


def _over_a_list_jax(x: Any, y: Any) -> Any:
    v1 = jnp.sum(x * x) + jnp.sum(y * x)
    v3 = 0.0
    for e in [v1, v1 * 2.0]:
        v3 = v3 + e * e
    return v3 * jnp.sum(y)


def test_vmap_of_jacrev_of_jacfwd_reading_a_lists_cotangent() -> None:
    """Seed 1824's class: the cotangent of a list read at a key jacrev's vmap leaves alone, merged there: its inner
    batch size is its first leaf's (``batch_size_of(ls_bar, 1)``; ``np.shape`` of the list stacked its items:
    "cannot reshape array of shape (2, 3, 3) into shape (4, 3)"; on main, "cannot batch 'item_key(key, flags)'")."""
    x, y = np.random.default_rng(5).standard_normal((2, 3)), np.random.default_rng(6).standard_normal((2, 3))
    fn = srcjax.vmap(srcjax.jacrev(srcjax.jacfwd(_over_a_list)))
    want = jax.vmap(jax.jacrev(jax.jacfwd(_over_a_list_jax)))(x, y)
    _agree(fn(x, y), want)
    _agree(srcjax.numpy_function(fn)(x, y), want)
