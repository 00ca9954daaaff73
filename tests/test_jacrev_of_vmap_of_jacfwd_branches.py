"""``jacrev(vmap(jacfwd(f), in_axes=(0, None)))`` compiled whole, of a ``for`` with an ``if`` on data (seed 1548's
class of tests/test_transform_compose_random.py, reproduced small): was refused "operands could not be broadcast
together with shapes (6, 2, 3) and (6,)" in the code srcjax wrote. Against jax and the generated source run by
NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def _loop_with_branches(x: Any, y: Any) -> Any:
    s = y * 0.5
    for i in range(3):
        if x[i] > 0.0:
            s = s * 0.5 + np.sin(x[i])
        else:
            s = np.tanh(s) - 0.1 * x[i]
    return np.sum(s * s)


def _twin(x: Any, y: Any) -> Any:
    s = y * 0.5
    for i in range(3):
        s = jnp.where(x[i] > 0.0, s * 0.5 + jnp.sin(x[i]), jnp.tanh(s) - 0.1 * x[i])
    return jnp.sum(s * s)


def _chain(x: Any, y: Any) -> Any:
    return srcjax.jacrev(srcjax.vmap(srcjax.jacfwd(_loop_with_branches), in_axes=(0, None)))(x, y)


def test_jacrev_of_vmap_of_jacfwd_of_a_loop_with_a_branch_on_data_compiled_whole() -> None:
    rng = np.random.default_rng(1548)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    want = jax.jacrev(jax.vmap(jax.jacfwd(_twin), in_axes=(0, None)))(x, y)
    np.testing.assert_allclose(srcjax.jit(_chain)(x, y), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(srcjax.numpy_function(_chain)(x, y), want, rtol=1e-10, atol=1e-12)
