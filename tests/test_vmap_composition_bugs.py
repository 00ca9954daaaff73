"""Regression tests for ``vmap`` composed with derivatives (issue #15), each a bug that was found:

- ``vmap(jacfwd(f, argnums=1), in_axes=(0, None))`` where the unmapped argument's values are carried by
  a ``while`` on the mapped one: the carry (a tuple of unbatched values) was broadcast as one array
  ("cannot use a value of type ndarray (object) as an array"); an unbatched tuple now keeps its
  structure in the batcher, and is batched leaf by leaf;
- derivatives of a gather by a batched index (``batch_index``) whose index is carried with
  differentiated values (a loop counter in a batched ``while``): the index plan was differentiated
  (a ComprehensionError); index parameters of ``srcjax.batched``'s helpers carry no derivative
  (``srcjax.core.index_params``);
- ``grad`` of a function calling ``srcjax.vmap`` on a function with ``break`` on data.

Each is checked against jax's derivative of each example (eager: Python control flow on data runs).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax

jax.config.update("jax_enable_x64", True)


def carried_unmapped(x, y):
    v = np.sin(y)
    it = 0
    while it < 2 and x.mean() < 0.5:
        v = v + v * 0.5
        it = it + 1
    return np.sum(x) + np.sum(v * v)


def _jax_carried_unmapped(x, y):
    v = jnp.sin(y)
    it = 0
    while it < 2 and float(x.mean()) < 0.5:
        v = v + v * 0.5
        it = it + 1
    return jnp.sum(x) + jnp.sum(v * v)


@pytest.mark.parametrize("how", ["jacfwd", "jacrev", "grad", "hessian"])
def test_vmap_of_a_derivative_in_an_unmapped_argument_carried_by_a_while(how: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)) * 0.4
    x[1] += 2.0  # this example runs no iteration, the others two
    y = np.array([0.3, -0.7])
    kw: dict[str, Any] = {"max_iters": 4} if how == "grad" else {}
    got = srcjax.vmap(getattr(srcjax, how)(carried_unmapped, argnums=1, **kw), in_axes=(0, None))(x, y)
    jd = jax.hessian if how == "hessian" else jax.jacfwd
    want = np.stack([np.asarray(jd(_jax_carried_unmapped, argnums=1)(xi, y)) for xi in x])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)
