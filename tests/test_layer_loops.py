"""Reverse mode through a ``for`` over layers whose values change shape (autograd's neural net example,
hunt17's neural_net_log_posterior): a name the loop body binds first and the code after the loop reads gets its
cotangent reset to zeros at the end of every reversed iteration; the zeros were shaped like that iteration's
value, the next (earlier) layer's is another shape ("operands could not be broadcast together with shapes (4, 3)
and (4, 4)", an internal error). The zeros now take the shape of each iteration's own value."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def _net(np: Any) -> Any:
    def net(W1: Any, b1: Any, W2: Any, b2: Any, X: Any) -> Any:
        params = [(W1, b1), (W2, b2)]
        inputs = X
        for W, b in params:
            outputs = np.dot(inputs, W) + b
            inputs = np.tanh(outputs)
        return np.sum(outputs ** 2) + np.sum(inputs * outputs)
    return net


net, twin = _net(np), _net(jnp)
_r = np.random.default_rng(0)
ARGS = (_r.standard_normal((2, 4)), _r.standard_normal(4), _r.standard_normal((4, 3)), _r.standard_normal(3),
        _r.standard_normal((5, 2)))


def _agree(got: Any, want: Any) -> None:
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-12)


def test_grad_through_layers_of_changing_shapes_agrees_with_jax() -> None:
    argnums = (0, 1, 2, 3)
    want = jax.grad(twin, argnums=argnums)(*ARGS)
    _agree(srcjax.grad(net, argnums=argnums)(*ARGS), want)
    _agree(srcjax.numpy_function(srcjax.grad(net, argnums=argnums))(*ARGS), want)


def test_vmap_of_grad_through_layers_of_changing_shapes_agrees_with_jax() -> None:
    Xs = _r.standard_normal((3, 5, 2))
    axes = (None, None, None, None, 0)
    want = jax.vmap(jax.grad(twin, argnums=(0, 2)), in_axes=axes)(*ARGS[:4], Xs)
    _agree(srcjax.vmap(srcjax.grad(net, argnums=(0, 2)), in_axes=axes)(*ARGS[:4], Xs), want)
