"""Derivatives of ``np.asarray(ws)`` / ``np.array(ws)`` of a list or tuple argument (issue #15).

NumPy stacks the list; its derivative rule was ``unbroadcast(out_bar, ws)``, which refused the list, naming
srcjax's helper: "unbroadcast(): a list of traced values where an array goes". The cotangent of a list is now the
rows of the result's, packed like the list (``adjoint.array_bar``: ``np.stack``'s rule), and the tangent the
elements' tangents stacked (``adjoint.array_dot``). Checked against jax under grad, jvp, hessian and vmap(grad).
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

from .twins import JAX, jax_twin

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def weighted_squares(ws):
    w = np.asarray(ws)
    return np.sum(w ** 2 * np.arange(3.0))


def sines(ws):
    return np.sum(np.sin(np.array(ws)) * np.asarray(ws)[0])


def _close(got, want) -> None:  # type: ignore[no-untyped-def]
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f", [weighted_squares, sines])
def test_grad_and_hessian_of_asarray_of_a_list(f) -> None:  # type: ignore[no-untyped-def]
    ws = [np.array([0.3, -1.2, 0.7]), np.array([1.1, 0.4, -0.5])]
    got = srcjax.grad(f)(ws)
    assert isinstance(got, list)
    _close(got, JAX.grad(jax_twin(f))(ws))
    _close(srcjax.hessian(f)(ws), jax.hessian(jax_twin(f))(ws))
    t = [np.ones(3), np.array([0.5, 0.0, -1.0])]
    _close(srcjax.jvp(f, (ws,), (t,)), jax.jvp(jax_twin(f), (ws,), (t,)))


def test_vmapped_grad_of_asarray_of_a_float32_tuple() -> None:
    ws = (np.ones((2, 3), np.float32), np.arange(6, dtype=np.float32).reshape(2, 3))
    got = srcjax.vmap(srcjax.grad(sines))(ws)
    _close(got, jax.vmap(jax.grad(jax_twin(sines)))(ws))
