"""``vmap(hessian(f))`` of a ``fori_loop`` whose carry holds a Python-int counter before a float leaf (issue #15).

The cotangent of the carry ``(k, y)`` is ``(None, y_bar)`` (an integer leaf has none); a batched helper took the
batch size from the carry's first leaf, ``None``, and failed ("IndexError: tuple index out of range" at the
user's loop). ``batch_size_of`` skips leaves without a derivative. Checked against jax.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax
from srcjax import lax

from .twins import jax_twin

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def counter_first(y):
    def body(i, c):
        k, y = c
        return (k + 1, y * np.sin(y) + 0.1 * k)
    k, y = lax.fori_loop(0, 3, body, (0, y))
    return np.sum(y)


def test_vmap_of_hessian_of_a_fori_loop_with_an_int_counter_first() -> None:
    xb = np.random.default_rng(0).normal(size=(2, 3))
    got = srcjax.vmap(srcjax.hessian(counter_first))(xb)
    want = jax.vmap(jax.hessian(jax_twin(counter_first, lax=jax.lax)))(xb)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)
