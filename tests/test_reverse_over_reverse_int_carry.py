"""Reverse over reverse of a ``fori_loop`` whose carry holds a Python-int counter (found by bugs15; not fixed yet).

``jacrev(grad(f))`` and ``grad(lambda x: np.sum(grad(f)(x)))`` stop with srcjax's internal error ("AttributeError:
'NoneType' object has no attribute 'shape'"): the second reverse pass accumulates the cotangent of the counter's
cotangent (None: an integer has no derivative) with ``+``. ``hessian`` (forward over reverse) and ``jacfwd(jacrev)``
run. A strict xfail, so that the fix shows; the oracle is jax.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax
from srcjax import lax

from .twins import jax_twin

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def counted(y):
    def body(i, c):
        k, y = c
        return (k + 1, y * np.sin(y) + 0.1 * k)
    k, y = lax.fori_loop(0, 3, body, (0, y))
    return np.sum(y)


def test_forward_over_reverse_runs():
    x = np.array([0.3, -0.5, 0.8])
    want = jax.hessian(jax_twin(counted, lax=jax.lax))(x)
    np.testing.assert_allclose(np.asarray(srcjax.hessian(counted)(x)), np.asarray(want), rtol=1e-10, atol=1e-12)


@pytest.mark.xfail(strict=True, reason="reverse over reverse of an int counter carried by a loop: internal error")
def test_reverse_over_reverse():
    x = np.array([0.3, -0.5, 0.8])
    want = jax.jacrev(jax.grad(jax_twin(counted, lax=jax.lax)))(x)
    np.testing.assert_allclose(np.asarray(srcjax.jacrev(srcjax.grad(counted))(x)), np.asarray(want), rtol=1e-10)
