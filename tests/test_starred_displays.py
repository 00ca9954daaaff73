"""Starred elements in list and tuple displays (issue #15): ``[*ws]``, ``[*ws, x]``, ``(*x.shape, 1)``.

They were refused ("starred elements (*x) in a tuple or list is not supported"), where Python and jax run them. A
display with starred elements is now read as a join of comprehensions over the starred operands
(``frontend/starred_displays.py``): jit, vmap and grad of a copy ``[*ws]``, a display ``np.stack([*ws, x])``, a
static shape ``(*x.shape, 1)``, checked against the user's function run by NumPy and against jax.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

from .twins import JAX, jax_twin

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def copied(ws):
    vs = [*ws]
    return np.sum(vs[0] * vs[1])


def stacked_with(ws, x):
    return np.sum(np.stack([*ws, x]) ** 2 * np.arange(3.0))


def reshaped(x):
    return np.sum(np.reshape(x, (*x.shape, 1)) * np.ones((1, 2)) * x[:, None])


WS = [np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 0.25])]
X = np.array([0.5, 1.5, -1.0])


def test_starred_display_values() -> None:
    for f, args in ((copied, (WS,)), (stacked_with, (WS, X)), (reshaped, (X,))):
        np.testing.assert_allclose(float(srcjax.jit(f)(*args)), f(*args), rtol=1e-12)
        np.testing.assert_allclose(float(srcjax.numpy_function(srcjax.jit(f))(*args)), f(*args), rtol=1e-12)


def test_starred_display_grad_and_vmap() -> None:
    for f, args in ((copied, (WS,)), (reshaped, (X,))):
        got = srcjax.grad(f)(*args)
        want = JAX.grad(jax_twin(f))(*args)
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)
    wb = [np.stack([w, 2.0 * w]) for w in WS]
    got = srcjax.vmap(stacked_with, in_axes=(0, None))(wb, X)
    want = [stacked_with([w[k] for w in wb], X) for k in range(2)]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
