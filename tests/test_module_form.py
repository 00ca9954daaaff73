"""The form of the StableHLO srcjax hands XLA, where it changes XLA's compile time (issue #15, round xla50).

A constant whose elements all agree (``x ** 2``'s exponent, ``0.5 * x``'s factor, a batched program's
``1e-12 * a``) is written as its scalar broadcast, as jax writes it: XLA imports a splat constant as a
literal of every element (6 MB for the nested-vmap distance's f64[512,512,3] exponent), and its passes
copy that literal; the broadcast fuses and compiles faster. The results do not change."""

from __future__ import annotations

import re

import numpy as np
import pytest

import srcjax

# a `stablehlo.constant` of a non-scalar type: `dense<...> : tensor<3x4xf64>`
_ARRAY_CONSTANT = re.compile(r"stablehlo\.constant dense<([^>]*)> : tensor<\d")


def _array_constants(text: str) -> list[str]:
    return _ARRAY_CONSTANT.findall(text)


def dist(x, y):
    return np.sqrt(np.sum((x - y) ** 2))


def test_nested_vmap_splat_is_a_broadcast_scalar():
    p, q = np.random.default_rng(0).standard_normal((2, 64, 3))
    f = srcjax.vmap(srcjax.vmap(dist, in_axes=(None, 0)), in_axes=(0, None))
    text = srcjax.lower(f, p, q).as_text()
    assert _array_constants(text) == [], text
    assert "stablehlo.broadcast_in_dim" in text
    want = np.sqrt(((p[:, None] - q[None]) ** 2).sum(-1))
    np.testing.assert_allclose(np.asarray(f(p, q)), want, rtol=1e-13, atol=1e-13)


def newton_sqrt(a):
    x = a
    while np.abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


def test_batched_while_constants_reuse_their_scalar():
    """The scalar of each splat is the one the program already had (no unused scalar constant left before it)."""
    a = np.random.default_rng(1).uniform(0.5, 1e4, 32)
    f = srcjax.vmap(newton_sqrt)
    text = srcjax.lower(f, a).as_text()
    assert _array_constants(text) == [], text
    defined = re.findall(r"(%\d+) = stablehlo\.constant", text)
    for name in defined:  # every scalar constant is read
        assert len(re.findall(re.escape(name) + r"\b", text)) >= 2, (name, text)
    np.testing.assert_allclose(np.asarray(f(a)), np.sqrt(a), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.complex64, np.uint8])
def test_full_arrays_of_each_dtype(dtype):
    def f(x):
        return np.full((4, 5), dtype(1) if dtype is not np.bool_ else True) == x

    def g(x):
        return x + np.ones((4, 5), dtype)

    x = np.zeros((4, 5), dtype)
    for fn, want in ((f, f(x)), (g, g(x))):
        text = srcjax.lower(srcjax.jit(fn), x).as_text()
        assert _array_constants(text) == [], text
        got = np.asarray(srcjax.jit(fn)(x))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_non_splat_array_constant_stays_a_constant():
    table = np.arange(12.0).reshape(3, 4)

    def f(x):
        return x * table

    x = np.ones((3, 4))
    text = srcjax.lower(srcjax.jit(f), x).as_text()
    assert len(_array_constants(text)) == 1, text
    np.testing.assert_array_equal(np.asarray(srcjax.jit(f)(x)), table)
