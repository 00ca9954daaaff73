"""vmap of a derivative whose backward half tests both a saved Python flag and a saved data flag (session 44).

scipy's ``logsumexp`` has ``if a_max.ndim > 0: ... else: if not np.isfinite(a_max): ...`` (a data test in the
scalar branch) and ``if not keepdims:`` around a squeeze (a Python flag): its gradient's backward half pops both from
the tape. Under vmap the data test made the batcher functionalize the backward half again with EVERY batched
parameter as data, the tape among them: the popped ``not keepdims`` became a branch on data around a tape pop, and
vmap(grad) was refused ("reverse mode through a loop inside an `if` on array data"). The tape is not data; what is
popped from it has its own binding time. Oracles: jax, a Python loop over examples of srcjax.grad.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def logsumexp(a, axis=1, keepdims=False):
    a_max = np.amax(a, axis=axis, keepdims=True)
    if a_max.ndim > 0:
        a_max[~np.isfinite(a_max)] = 0
    elif not np.isfinite(a_max):
        a_max = 0
    tmp = np.exp(a - a_max)
    s = np.sum(tmp, axis=axis, keepdims=keepdims)
    out = np.log(s)
    if not keepdims:
        a_max = np.squeeze(a_max, axis=axis)
    out += a_max
    return out


def loss(a):
    return np.sum(logsumexp(a) * np.arange(1.0, 5.0))


def loss_keep(a):
    return np.sum(np.sin(logsumexp(a, axis=0, keepdims=True)))


def _jax_loss(a):
    return jnp.sum(jax.scipy.special.logsumexp(a, axis=1) * jnp.arange(1.0, 5.0))


def _jax_loss_keep(a):
    return jnp.sum(jnp.sin(jax.scipy.special.logsumexp(a, axis=0, keepdims=True)))


@pytest.mark.parametrize("fn, twin", [(loss, _jax_loss), (loss_keep, _jax_loss_keep)], ids=["squeezed", "kept"])
def test_vmap_of_grad_of_logsumexp(fn, twin):
    a = np.random.default_rng(0).normal(size=(3, 4, 5))
    got = np.asarray(srcjax.vmap(srcjax.grad(fn))(a))
    np.testing.assert_allclose(got, np.asarray(jax.vmap(jax.grad(twin))(a)), rtol=1e-12, atol=1e-14)
    loop = np.stack([np.asarray(srcjax.grad(fn)(x)) for x in a])
    np.testing.assert_allclose(got, loop, rtol=1e-12, atol=1e-14)
