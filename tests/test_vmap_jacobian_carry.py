"""``vmap(jacrev(f))`` / ``vmap(hessian(f))`` of a loop whose tuple carry holds a value no example changes.

``fori_loop(0, 3, body, (x, np.ones(3)))``: under the basis vmap of ``jacrev`` the carry's cotangent is packed
with the second item not batched (zeros of ``np.ones(3)``'s shape), and the outer vmap read the packed carry as
every item batched: "unbroadcast: a value of shape (1, 3) is not a broadcast of shape (1, 3, 3)". The packing
now broadcasts the items its state says are unbatched. Oracle: jax.vmap(jax.jacrev / jax.hessian) (jitted).
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

from .twins import jax_twin, jitted

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def carry_with_a_constant(x):
    def body(i, c):
        a, z = c
        return (np.sin(a) + z, z * 0.5)
    a, z = srcjax.lax.fori_loop(0, 3, body, (x, np.ones(3)))
    return np.sum(a * a)


@pytest.mark.parametrize("kind", ["jacrev", "hessian"])
def test_vmap_of_a_jacobian_of_a_loop_with_an_unbatched_carry_item(kind):
    xb = np.random.default_rng(0).normal(size=(4, 3))
    got = srcjax.vmap(getattr(srcjax, kind)(carry_with_a_constant))(xb)
    want = jitted(jax.vmap(getattr(jax, kind)(jax_twin(carry_with_a_constant))))(xb)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)
