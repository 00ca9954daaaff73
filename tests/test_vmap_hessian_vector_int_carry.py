"""``vmap(hessian(f))`` of a ``fori_loop`` whose carry holds a Python-int counter, ``f`` returning a vector (issue #15).

A vector output takes the hessian's general form, ``vmap(jacfwd(jacrev(f)))``. The carry's cotangent was packed
(``pack_like(carry, items)``) from a tangent of zeros that no example changes; vmap took the packed container for
batched without broadcasting those zeros, and a batched helper read the forward basis axis as the batch axis
("unbroadcast: a value of shape (3, 3, 3) is not a broadcast of shape (2, 3, 3, 3)"). ``pack_like``'s items in state
False are now broadcast like a tuple's unbatched items. Checked against jax.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax
from srcjax import lax
from srcjax.batched import batch_size_of

from .twins import jax_twin

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def counter_first(y):
    def body(i, c):
        k, y = c
        return (k + 1, y * np.sin(y) + 0.1 * k)
    k, y = lax.fori_loop(0, 3, body, (0, y))
    return y


def counter_last(y):
    def body(i, c):
        y, k = c
        return (y * np.cos(y) - 0.2 * k, k + 1)
    y, k = lax.fori_loop(0, 3, body, (y, 0))
    return y


@pytest.mark.parametrize("fn", [counter_first, counter_last])
def test_vmap_of_hessian_of_a_vector_fori_loop_with_an_int_counter(fn) -> None:
    xb = np.random.default_rng(1).normal(size=(2, 3))
    got = srcjax.vmap(srcjax.hessian(fn))(xb)
    want = jax.vmap(jax.hessian(jax_twin(fn, lax=jax.lax)))(xb)
    assert np.shape(got) == (2, 3, 3, 3)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)


def test_vmap_of_jacfwd_of_jacrev_runs_its_generated_source_by_numpy() -> None:
    xb = np.random.default_rng(2).normal(size=(2, 3))
    f = srcjax.vmap(srcjax.jacfwd(srcjax.jacrev(counter_first)))
    want = jax.vmap(jax.jacfwd(jax.jacrev(jax_twin(counter_first, lax=jax.lax))))(xb)
    np.testing.assert_allclose(srcjax.numpy_function(f)(xb), np.asarray(want), rtol=1e-10, atol=1e-12)


def test_batch_size_of_a_value_without_a_leaf_is_none() -> None:
    """An empty tape or a container of integer leaves' cotangents tells no batch size (a batched helper reads
    it first, then never uses it)."""
    assert batch_size_of([]) is None
    assert batch_size_of((None, None)) is None
    assert batch_size_of((None, np.zeros((4, 2)))) == 4
