"""Builtin ``round(x)`` of an array in generated source run by NumPy (``srcjax.numpy_function``).

NumPy's arrays have no ``__round__`` (jax's do): the generated source, run by NumPy, raised a TypeError where
the compiled function and jax give ``np.round``. Oracles: jax (jitted), the compiled function.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

from .twins import jax_twin, jitted

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def rounded(x):
    return np.sum(round(x * 10) / 10 * x) + round(np.sum(x), 2) + round(3.14159, 2)


def test_round_of_an_array_run_by_numpy():
    x = np.array([0.44, 1.66, -2.51])
    twin = jax_twin(rounded)
    want, grad_want = jitted(twin)(x), jitted(jax.grad(twin))(x)
    np.testing.assert_allclose(srcjax.numpy_function(rounded)(x), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.jit(rounded)(x)), want, rtol=1e-12)
    np.testing.assert_allclose(srcjax.numpy_function(srcjax.grad(rounded))(x), grad_want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.grad(rounded)(x)), grad_want, rtol=1e-12)
