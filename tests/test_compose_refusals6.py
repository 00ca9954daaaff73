"""Refusals and internal errors under composed transformations (issue #15, session 25): each agrees with jax
and with a Python loop over examples now.

A second ``vmap`` of batched source met srcjax's own per-example helpers (``batch_take``, and the JVP of
``batch_getitem``/``batch_index`` written from their bodies) and tried to batch the Python logic of their
index plans: "cannot batch 'not any(_is_array_index(e) for e in key) and not batched'", located inside
srcjax. Such a helper under an outer vmap now merges the two batch axes and runs once
(``transforms/batch_nested``), and forward mode keeps a helper that is linear in its array
(``core.linear_params``) as the helper, called on the tangent.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402

import srcjax  # noqa: E402

from .twins import jax_twin  # noqa: E402
from .unseen_oracle import agree  # noqa: E402

jax.config.update("jax_enable_x64", True)
RNG = np.random.default_rng(2506)


def take(x, y):
    return np.take(x, y)


def take_axis(x, y):
    return np.take(x, y, axis=1) * 2.0


def take_along(x, y):
    return np.take_along_axis(x, y, axis=0)


def _loop2(f, x, y, axes):
    """The oracle of ``vmap(vmap(f, axes), axes)``: a Python loop over both levels."""
    def pick(v, ax, k):
        return v if ax is None else v[k]
    return np.array([[f(pick(pick(x, axes[0], i), axes[0], j), pick(pick(y, axes[1], i), axes[1], j))
                      for j in range(3)] for i in range(2)])


def _jtake(a, i):
    return jnp.take(a, i)


def _jtake_axis(a, i):
    return jnp.take(a, i, axis=1) * 2.0


def _jtake_along(a, i):
    return jnp.take_along_axis(a, i, axis=0)


@pytest.mark.parametrize("f,twin,xe,ye,imax", [(take, _jtake, (4,), (), 4), (take_axis, _jtake_axis, (2, 3), (2,), 3),
                                                (take_along, _jtake_along, (2, 3), (1, 3), 2)])
def test_vmap_of_vmap_of_a_gather_with_batched_indices(f, twin, xe, ye, imax) -> None:
    """``vmap(vmap(lambda x, y: np.take(x, y)))``, x f64[2,3,4], y int[2,3] (was a BatchingError located in
    srcjax/batched.py); the operand and the indices mapped by both levels or unmapped, against jax and a
    Python loop."""
    for axes in [(0, 0), (None, 0), (0, None)]:
        x = RNG.standard_normal(xe if axes[0] is None else (2, 3) + xe)
        y = RNG.integers(0, imax, ye if axes[1] is None else (2, 3) + ye)
        ours = srcjax.vmap(srcjax.vmap(f, in_axes=axes), in_axes=axes)(x, y)
        agree(ours, _loop2(f, x, y, axes), rtol=1e-12, what=f"loop: vmap(vmap({f.__name__}), in_axes={axes})")
        theirs = jax.vmap(jax.vmap(twin, in_axes=axes), in_axes=axes)(x, y)
        agree(ours, theirs, rtol=1e-12, what=f"jax: vmap(vmap({f.__name__}), in_axes={axes})")


def sort_loss(x, w):
    return np.sum(np.sort(np.sin(x) + x, axis=1) * w) + np.sum(np.sort(x, axis=0)[0] ** 2)


def test_vmap_of_vmap_of_grad_of_a_sort() -> None:
    """``np.sort`` under two vmaps of its derivative (the gather of the sorting permutation's inverse, batched
    twice: was "cannot batch 'not any(_is_array_index(e) for e in key) and not batched'"); tests/test_tape_compose3
    checks the other compositions (all 8 cells with SRCJAX_HYPOTHESIS=thorough)."""
    x = RNG.standard_normal((2, 3, 3, 4))
    w = RNG.uniform(0.5, 1.5, (2, 4))
    ours = srcjax.vmap(srcjax.vmap(srcjax.grad(sort_loss), in_axes=(0, None)))(x, w)
    loop = np.array([[srcjax.grad(sort_loss)(x[i, j], w[i]) for j in range(3)] for i in range(2)])
    agree(ours, loop, rtol=1e-12, what="loop")
    jl = jax_twin(sort_loss)
    agree(ours, jax.vmap(jax.vmap(jax.grad(jl), in_axes=(0, None)))(x, w), rtol=1e-12, what="jax")
