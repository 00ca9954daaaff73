"""Python builtins and idioms JAX users write, under jit, grad, vmap, vmap(grad) and jacfwd (issue #15: "composes
with everything"); each against jax (the same text run with jax.numpy) and NumPy running the user's function.

Also the silent wrong answer found on the way: reverse mode of a loop nested in another loop, the inner one over a
sequence made before the outer one (`for j in ...: for r in pairs:`), dropped the sequence's cotangent (zeros)."""

from __future__ import annotations

import functools  # noqa: F401 - (read by the programs, and by their jax twins)
import operator  # noqa: F401

import numpy as np
import pytest

import srcjax

from .twins import jax_twin

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(0)
X, Y = RNG.normal(size=3), RNG.normal(size=3)
XB, YB = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3))


def _close(a, b):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for u, v in zip(la, lb):
        assert np.shape(u) == np.shape(v)
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-10, atol=1e-12)


def check(fn, args=(X, Y), batched=(XB, YB), in_axes=0, *, helpers=(), jacfwd=True, numpy=True):
    """jit against NumPy running ``fn`` (``numpy``: NumPy runs it) and jax; grad, vmap, vmap(grad) (and jacfwd)
    against jax."""
    twin = jax_twin(fn, helpers=helpers, functools=functools, operator=operator, lax=jax.lax)
    if numpy:
        _close(srcjax.jit(fn)(*args), fn(*args))
    _close(srcjax.jit(fn)(*args), jax.jit(twin)(*args))
    _close(srcjax.grad(fn)(*args), jax.grad(twin)(*args))
    _close(srcjax.vmap(fn, in_axes=in_axes)(*batched), jax.vmap(twin, in_axes=in_axes)(*batched))
    _close(srcjax.vmap(srcjax.grad(fn), in_axes=in_axes)(*batched),
           jax.vmap(jax.grad(twin), in_axes=in_axes)(*batched))
    if jacfwd:
        _close(srcjax.jacfwd(fn)(*args), jax.jacfwd(twin)(*args))


# -- a loop nested in a loop, over a sequence made before both (reverse mode dropped its cotangent) -----------

def nested_over_outer_list(x, y):
    pairs = [x, y * 2]
    s = 0.0
    for j in range(2):
        for r in pairs:
            s = s + r * j
    return np.sum(s)


def nested_over_outer_pairs(x, y):
    pairs = [(x, y), (y, x)]
    s = 0.0
    for j in range(2):
        for r in pairs:
            s = s + r[j] * r[j]
    return np.sum(s)


def nested_comprehension_over_outer_list(x, y):
    pairs = [x, y * 2]
    t = [[r * j for r in pairs] for j in range(2)]
    return np.sum(t[1][0] * t[1][1])


@pytest.mark.parametrize("fn", [nested_over_outer_list, nested_over_outer_pairs, nested_comprehension_over_outer_list])
def test_inner_loop_over_a_sequence_made_outside_the_outer_loop(fn):
    check(fn)

