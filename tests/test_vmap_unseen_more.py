"""vmap composed with derivatives where srcjax refused and jax (or a loop over examples) works (issue #15:
"it composes with everything, in any order"), and more programs with control flow on batched data.

Oracles: jax's transformation of the program's jax twin (the same source with ``np`` as jax.numpy), or a
loop over examples (eager jax where the control flow is Python on data). Values, shapes, dtype kinds
and pytree structure must agree.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import srcjax  # noqa: E402

from . import vmap_more_programs as V  # noqa: E402
from .twins import jax_twin  # noqa: E402
from .unseen_oracle import agree, loop  # noqa: E402

RNG = np.random.default_rng(15)


def r(*s: int) -> np.ndarray:
    return RNG.standard_normal(s)


# -- 1. vmap(grad) of a counted while whose bound is mapped: max_iters bounds the batched loop -------------------

@pytest.mark.parametrize("fn,n", [(V.counted_le, np.array([0, 3, 1, 5])), (V.count_up, np.array([7, 2, 4, 0]))])
def test_vmap_grad_of_a_while_counting_to_a_mapped_bound(fn, n) -> None:
    """``while i < n`` with ``n`` per example: reverse mode's loop runs ``max_iters`` times for all
    examples, each doing nothing past its own count (was: cannot batch 'range(0, n, 1)')."""
    x = r(4, 8) * 0.3
    got = srcjax.vmap(srcjax.grad(fn, max_iters=8))(x, n)
    agree(got, loop(jax.grad(jax_twin(fn)), (x, n), 0, 4))
    # n unmapped: the loop runs n times, exactly
    agree(srcjax.vmap(srcjax.grad(fn, max_iters=2), in_axes=(0, None))(x, 5), loop(jax.grad(jax_twin(fn)), (x, 5), (0, None), 4))


def test_vmap_grad_of_a_while_counting_to_a_mapped_bound_needs_max_iters() -> None:
    with pytest.raises(srcjax.TranspileError, match="different number of times per example") as e:
        srcjax.vmap(srcjax.grad(V.count_up))(r(3, 8), np.array([1, 2, 3]))
    assert "vmap_more_programs.py:" in str(e.value) and "max_iters" in e.value.hint
