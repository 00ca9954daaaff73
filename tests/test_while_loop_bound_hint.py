"""Reverse mode through ``srcjax.lax.while_loop`` with no bound: the error says what to write.

jax refuses reverse mode through ``lax.while_loop`` whatever its test (a counter in the carry too); srcjax needs a
bound. A loop whose trip count is known (``c[0] < 3``, ``c[0]`` counting from 0) is a ``fori_loop``: the hint
says so, beside ``max_iters``; with ``max_iters`` the derivative matches jax's ``fori_loop``.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

from .twins import jitted

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def counted_while(x):
    def body(c):
        k, a = c
        return (k + 1, a * np.cos(a))
    k, a = srcjax.lax.while_loop(lambda c: c[0] < 3, body, (0, x))
    return np.sum(a)


def counted_fori(x):
    a = jax.lax.fori_loop(0, 3, lambda i, a: a * jax.numpy.cos(a), x)
    return jax.numpy.sum(a)


def test_reverse_mode_of_a_counted_while_loop_says_fori_loop():
    x = np.array([0.3, -0.2, 0.5])
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.grad(counted_while)(x)
    assert e.value.span is not None and e.value.span.filename == __file__
    assert e.value.span.line == counted_while.__code__.co_firstlineno + 4
    assert "srcjax.lax.fori_loop(lower, upper, body, init)" in e.value.hint and "max_iters" in e.value.hint
    got = srcjax.grad(counted_while, max_iters=5)(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(jitted(jax.grad(counted_fori))(x)), rtol=1e-12)
