"""Reverse mode over a ``hessian`` of a function with an ``if`` on data (seed 1611's class of
tests/test_transform_compose_random.py, reproduced small).

The hessian's batched JVP of its VJP binds ``x_bar_dot`` in both branches: batched on one path, and on the other
the zeros it broadcasts along the batch. Reverse mode over it restores, in the branch that broadcast them, the
unbatched zeros and sums their cotangent to them: after the ``if`` the name is ``f64[3,3]`` on one path and
``f64[3]`` on the other, and read on neither. The lowering refused the join at the ``if`` ("`x_bar_dot` has shape
f64[3,3] on one path and f64[3] on another"); in derivative code srcjax wrote, it is now an error only where such a
name is read after the ``if`` (the user's names keep the error at the ``if``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def _scaled_if_positive(x: Any) -> Any:
    y = x * 1.0
    if x[0] > 0:
        y = y * x
    return np.sum(y * y)


def _hessian_applied(x: Any) -> Any:
    return np.sum(srcjax.hessian(_scaled_if_positive)(x) @ x)


def _twin(x: Any) -> Any:
    y = jax.lax.cond(x[0] > 0, lambda y: y * x, lambda y: y, x * 1.0)
    return jnp.sum(y * y)


@pytest.mark.parametrize("first", [0.3, -0.3])
def test_grad_of_a_function_of_a_hessian_through_an_if_on_data(first: float) -> None:
    x = np.array([first, -0.2, 0.5])
    want = jax.grad(lambda x: jnp.sum(jax.hessian(_twin)(x) @ x))(x)
    np.testing.assert_allclose(srcjax.grad(_hessian_applied)(x), want, rtol=1e-10)
    np.testing.assert_allclose(srcjax.numpy_function(srcjax.grad(_hessian_applied))(x), want, rtol=1e-10)


def _two_shapes(x: Any) -> Any:
    if x[0] > 0:
        y = np.ones((3, 3)) * x
    else:
        y = x * 2.0
    return np.sum(y)


def test_the_users_name_of_two_shapes_is_refused_at_the_if() -> None:
    with pytest.raises(srcjax.TranspileError, match="has shape f64\\[3,3\\] on one path and f64\\[3\\]") as e:
        srcjax.jit(_two_shapes)(np.array([0.3, -0.2, 0.5]))
    assert "if x[0] > 0" in str(e.value)
