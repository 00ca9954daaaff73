"""Reverse mode over a derivative whose helpers hand saved values through the tape (MAML-style
``w - srcjax.grad(inner)(w, x)`` where ``inner`` calls a helper): was refused ("hands values saved for
the adjoint through the tape"); the helper halves are written out in the derivative code first
(srcjax/reverse_over.py ``inline_tape_calls``), so the pushes and pops are its own."""

from __future__ import annotations

import numpy as np
import pytest

import srcjax
from tests.fd import central_fd
from tests.twins import jax_twin, jitted

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def softplus(z):
    return np.logaddexp(z, 0.0)


def gated(z):
    return np.tanh(z) * softplus(z)


def once(w, x):
    return np.mean(softplus(x @ w))


def twice(w, x):
    return np.mean(softplus(x @ w) + softplus(x @ (w * w)))


def in_a_loop(w, x):
    s = 0.0
    v = w
    for _ in range(3):
        v = gated(v) + w
        s = s + np.sum(softplus(x @ v))
    return s


def step_once(w, x):
    return w - srcjax.grad(once)(w, x)


def step_twice(w, x):
    return w - srcjax.grad(twice)(w, x)


def step_in_a_loop(w, x):
    return w - 0.1 * srcjax.grad(in_a_loop)(w, x)


HELPERS = [softplus, gated, once, twice, in_a_loop]
W = np.array([-0.7, 0.2, 0.9])
X = np.linspace(-2.0, 2.0, 12).reshape(4, 3) / 3


@pytest.mark.parametrize("step", [step_once, step_twice, step_in_a_loop], ids=lambda f: f.__name__)
def test_reverse_mode_over_a_grad_whose_function_calls_helpers(step):
    twin = jax_twin(step, helpers=HELPERS)
    np.testing.assert_allclose(srcjax.jacrev(step)(W, X), jitted(jax.jacrev(twin))(W, X), rtol=1e-10, atol=1e-12)

    def outer(w, x):
        return np.sum(step(w, x) ** 2)

    def outer_twin(w, x):
        return jnp.sum(twin(w, x) ** 2)

    got = srcjax.grad(outer, argnums=(0, 1))(W, X)
    want = jitted(jax.grad(outer_twin, argnums=(0, 1)))(W, X)
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[0], central_fd(outer, (W, X), 0), rtol=1e-6, atol=1e-8)


def test_jacrev_of_grad_and_the_written_out_helpers():
    twin = jax_twin(in_a_loop, helpers=HELPERS)
    np.testing.assert_allclose(srcjax.jacrev(srcjax.grad(in_a_loop))(W, X), jitted(jax.hessian(twin))(W, X),
                               rtol=1e-10, atol=1e-12)
    text = srcjax.source(srcjax.jacrev(step_once), W, X)
    fwd = text.split("def once_grad_fwd")[1].split("\n\n\ndef ")[0]  # once_grad's forward half
    assert "softplus_fwd(" not in fwd and "_tape.append(" in fwd  # softplus written out: its push is its own
