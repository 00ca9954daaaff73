"""A list of arrays read as one array (``np.shape``, ``np.ndim``, ``np.size``, ``np.asarray``, ``np.array``), under
``jit`` and under ``vmap`` of a mapped list argument, its copy (``u = ws``) or its rebuild (``list(ws)``,
``tuple(ws)``, ``ws + []``).

Each was a silent wrong answer: ``np.ndim([a, b])`` / ``np.size`` / ``np.shape`` of a list of traced arrays read
the list as objects (``np.shape([a, b])`` was ``(2,)``, also under ``jit``); ``np.asarray(ws)`` under vmap stacked
the examples' rows (the batch axis went second); ``np.shape(u)`` of a copy or a rebuild dropped the list's
length (``np.shape(u)[1:]``), where only ``len(u)`` was fixed before. Oracles: the user's function run by NumPy on
each example (a loop), the gradient by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def ndim_of_list(ws, x):
    return x * np.ndim(ws) + np.size(ws)


def shape_of_list(ws, x):
    return np.zeros(np.shape(ws)) + np.sum(x)


def asarray_of_list(ws, x):
    return np.asarray(ws) * x


def array_of_list(ws, x):
    return np.array(ws).sum(0) * x + np.size(ws)


def shape_of_copy(ws, x):
    u = ws
    return np.ones(np.shape(u)) * np.sum(x)


def shape_of_rebuilt(ws, x):
    u = list(ws)
    return u, np.shape(u)[0] * x


def loop_over_copy(ws, x):
    u = ws
    s = np.zeros(np.shape(u))
    for i in range(len(u)):
        s = s + u[i] * 0 + i
    return s * x


def flat_copy(ws, x):
    u = tuple(ws)
    v = u
    return np.reshape(np.asarray(v), (-1,)) * np.ndim(v), len(v)


def summed_copy(ws, x):
    u = ws + []
    return np.sum(np.asarray(u) ** 2 * x) + np.mean(np.array(u) * x)


def stacked_copy(ws, x):
    u = ws
    v = u
    return np.sum(np.stack(v) ** 2 * x) * np.shape(u)[0] + np.sum(np.zeros(np.shape(v)[1:]) + np.ndim(v))


PROGRAMS = [ndim_of_list, shape_of_list, asarray_of_list, array_of_list, shape_of_copy, shape_of_rebuilt,
            loop_over_copy, flat_copy, summed_copy, stacked_copy]


def _close(got, want):
    g, w = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(g) == len(w)
    for u, v in zip(g, w, strict=True):
        assert np.shape(u) == np.shape(v)
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn", PROGRAMS)
def test_list_read_as_an_array(fn):
    rng = np.random.default_rng(0)
    ws, x = [rng.normal(size=3), rng.normal(size=3)], rng.normal(size=3)
    _close(srcjax.jit(fn)(ws, x), fn(ws, x))
    wsb = [rng.normal(size=(4, 3)), rng.normal(size=(4, 3))]
    loop = [fn([w[i] for w in wsb], x) for i in range(4)]
    _close(srcjax.vmap(fn, in_axes=(0, None))(wsb, x), jax.tree_util.tree_map(lambda *v: np.stack(v), *loop))


def test_vmap_grad_of_a_copied_list():
    rng = np.random.default_rng(1)
    wsb, x = [rng.normal(size=(4, 3)), rng.normal(size=(4, 3))], rng.normal(size=3)
    want = [2 * 2 * w * x for w in wsb]  # (jax's np.shape cannot read a list of tracers: the gradient by hand)
    _close(srcjax.vmap(srcjax.grad(stacked_copy), in_axes=(0, None))(wsb, x), want)
