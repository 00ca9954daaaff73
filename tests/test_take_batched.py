"""np.take along an axis under vmap(grad), jacrev and grad, with indices batched or not (against jax).

Regression: ``vmap(grad(f))`` of ``np.take(x, k, axis=1)`` with ``k`` mapped was "cannot use a value of type
slice": take_bar's key was a tuple of slices and the indices, which vmap batched as one container."""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)


def take_axis1(x, k):
    return np.sum(np.sin(np.take(x, k, axis=1)) * 3.0)


def take_axis1_jax(x, k):
    return jnp.sum(jnp.sin(jnp.take(x, k, axis=1)) * 3.0)


def take_last(x, k):
    t = np.take(x, k, axis=-1)
    return np.sum(t * t)


def take_last_jax(x, k):
    t = jnp.take(x, k, axis=-1)
    return jnp.sum(t * t)


def take_axis0(x, k):
    return np.sum(np.take(x, k, axis=0) ** 3)


def take_axis0_jax(x, k):
    return jnp.sum(jnp.take(x, k, axis=0) ** 3)


CASES = [(take_axis1, take_axis1_jax), (take_last, take_last_jax), (take_axis0, take_axis0_jax)]
RNG = np.random.default_rng(5)
X = RNG.standard_normal((4, 3, 5))


@pytest.mark.parametrize("fn,jfn", CASES, ids=lambda c: getattr(c, "__name__", ""))
@pytest.mark.parametrize("k", [np.array([[0, 2], [1, 1], [2, 0], [0, 0]]), np.array([0, 2, 1, 1]),
                               np.array([[[0, 1], [2, 2]], [[1, 0], [0, 0]], [[2, 1], [1, 2]], [[0, 0], [2, 1]]])],
                         ids=["k2", "k0", "k22"])
def test_vmap_of_grad_with_batched_indices(fn, jfn, k):
    got = srcjax.vmap(srcjax.grad(fn))(X, k)
    want = jax.vmap(jax.grad(jfn))(X, k)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn,jfn", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_vmap_of_grad_with_shared_indices(fn, jfn):
    k = np.array([2, 0])
    got = srcjax.vmap(srcjax.grad(fn), in_axes=(0, None))(X, k)
    want = jax.vmap(jax.grad(jfn), in_axes=(0, None))(X, k)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn,jfn", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_grad_and_jacrev_of_take_along_an_axis(fn, jfn):
    x, k = X[1], np.array([[1, 0, 2], [2, 2, 0]])
    np.testing.assert_allclose(np.asarray(srcjax.grad(fn)(x, k)), np.asarray(jax.grad(jfn)(x, k)), rtol=1e-12)
    jr = srcjax.jacrev(srcjax.grad(fn))(x, k)
    np.testing.assert_allclose(np.asarray(jr), np.asarray(jax.jacrev(jax.grad(jfn))(x, k)), rtol=1e-10, atol=1e-12)
