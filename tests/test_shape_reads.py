"""Values computed from an array's shape carry no derivative, however they are used.

Regression: ``d = q.shape[-1]`` made ``d`` active (an indexing primitive's array argument was read
for its names, ``q`` among them), so ``math.sqrt(d)`` (a function srcjax has no derivative for) was
refused in every derivative: attention's ``q @ k.T / math.sqrt(d)`` could not be differentiated.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)


def scaled(q):
    d = q.shape[-1]
    return np.sum(np.tanh(q / math.sqrt(d)) ** 2)


def scaled_inline(q):
    return np.sum(np.tanh(q * (1.0 / math.sqrt(q.shape[-1] * q.ndim))) ** 2)


def by_size(q):
    n = q.size
    return np.sum(np.sin(q)) / math.log(n + 1.0)


def _jax_twin(f):
    return {"scaled": lambda q: jnp.sum(jnp.tanh(q / math.sqrt(q.shape[-1])) ** 2),
            "scaled_inline": lambda q: jnp.sum(jnp.tanh(q * (1.0 / math.sqrt(q.shape[-1] * q.ndim))) ** 2),
            "by_size": lambda q: jnp.sum(jnp.sin(q)) / math.log(q.size + 1.0)}[f.__name__]


@pytest.mark.parametrize("f", [scaled, scaled_inline, by_size], ids=lambda f: f.__name__)
def test_derivatives_of_functions_of_shapes(f) -> None:
    q = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    jf = _jax_twin(f)
    np.testing.assert_allclose(srcjax.grad(f)(q), jax.grad(jf)(q), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(srcjax.jvp(f, (q,), (q,))[1], jax.jvp(jf, (q,), (q,))[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(srcjax.vmap(srcjax.grad(f))(np.stack([q, 2 * q])),
                               jax.vmap(jax.grad(jf))(np.stack([q, 2 * q])), rtol=1e-10, atol=1e-12)
    v = q[0]
    np.testing.assert_allclose(srcjax.hessian(f)(v), jax.hessian(jf)(v), rtol=1e-9, atol=1e-12)
