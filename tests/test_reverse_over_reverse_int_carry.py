"""Reverse over reverse of a ``fori_loop`` whose carry holds a Python-int counter (found by bugs15).

``jacrev(grad(f))`` and ``grad(lambda x: np.sum(grad(f)(x)))`` stopped with srcjax's internal error
("AttributeError: 'NoneType' object has no attribute 'shape'"): in the first derivative the counter is also bound by
``c, k, ... = _tape.pop()``, which hid that it is an integer from the second reverse pass (it summed the counter's
cotangent, None, with ``+``). A pop of derivative code's tape gives a name back a value it had
(``transforms/integer_leaves._restored``). The oracle is jax.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax
from srcjax import lax

from .twins import jax_twin

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def counted(y):
    def body(i, c):
        k, y = c
        return (k + 1, y * np.sin(y) + 0.1 * k)
    k, y = lax.fori_loop(0, 3, body, (0, y))
    return np.sum(y)


def test_forward_over_reverse_runs():
    x = np.array([0.3, -0.5, 0.8])
    want = jax.hessian(jax_twin(counted, lax=jax.lax))(x)
    np.testing.assert_allclose(np.asarray(srcjax.hessian(counted)(x)), np.asarray(want), rtol=1e-10, atol=1e-12)


def counted_vector(y):
    def body(i, c):
        k, y = c
        return (k + 1, y * np.sin(y) + 0.1 * k)
    k, y = lax.fori_loop(0, 3, body, (0, y))
    return y * k


def test_reverse_over_reverse():
    x = np.array([0.3, -0.5, 0.8])
    want = jax.jacrev(jax.grad(jax_twin(counted, lax=jax.lax)))(x)
    np.testing.assert_allclose(np.asarray(srcjax.jacrev(srcjax.grad(counted))(x)), np.asarray(want), rtol=1e-10)


def test_grad_of_a_sum_of_gradients():
    x = np.array([0.3, -0.5, 0.8])
    jf = jax_twin(counted, lax=jax.lax)
    want = jax.grad(lambda v: jax.numpy.sum(jax.grad(jf)(v)))(x)
    got = srcjax.grad(lambda v: np.sum(srcjax.grad(counted)(v)))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10)


def test_vmap_of_reverse_over_reverse_of_a_vector_output():
    xs = np.array([[0.3, -0.5, 0.8], [0.1, 0.2, -0.4]])
    want = jax.vmap(jax.jacrev(jax.jacrev(jax_twin(counted_vector, lax=jax.lax))))(xs)
    got = srcjax.vmap(srcjax.jacrev(srcjax.jacrev(counted_vector)))(xs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)
