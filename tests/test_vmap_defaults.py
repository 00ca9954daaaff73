"""vmap with one in_axes maps the arguments a call passes (JAX's meaning): a parameter left to its
default is the same for every example, also where the function uses it as a shape and under a
second vmap (both failed: the program was written with every parameter mapped)."""

from __future__ import annotations

import numpy as np
import pytest

import srcjax


def tiled(x, n=3):
    return np.tile(x, n) * 2.0


def normalized(x, eps=1e-5):
    return x / np.sqrt(np.sum(x * x) + eps)


def test_a_default_used_as_a_shape_is_not_mapped() -> None:
    xs = np.arange(8.0).reshape(4, 2)
    np.testing.assert_array_equal(srcjax.vmap(tiled)(xs), np.stack([tiled(x) for x in xs]))
    assert "n=3" in srcjax.source(srcjax.vmap(tiled))


def test_passing_the_defaulted_argument_maps_it() -> None:
    xs = np.arange(8.0).reshape(4, 2)
    eps = np.array([1e-3, 1e-2, 1e-1, 1.0])
    want = np.stack([normalized(x, e) for x, e in zip(xs, eps)])
    np.testing.assert_allclose(srcjax.vmap(normalized)(xs, eps), want, rtol=1e-12)
    with pytest.raises(srcjax.TranspileError):
        srcjax.vmap(tiled)(xs, 2)  # a mapped int: as in jax, an error (pass in_axes=(0, None))
    np.testing.assert_array_equal(srcjax.vmap(tiled, in_axes=(0, None))(xs, 2),
                                  np.stack([tiled(x, 2) for x in xs]))


def test_nested_vmap_and_grad_with_defaults() -> None:
    xs = np.linspace(0.5, 2.0, 16).reshape(2, 4, 2)
    want = np.stack([np.stack([normalized(x) for x in row]) for row in xs])
    np.testing.assert_allclose(srcjax.vmap(srcjax.vmap(normalized))(xs), want, rtol=1e-12)
    g = srcjax.vmap(srcjax.grad(lambda x: np.sum(normalized(x) ** 3)))(xs[0])
    h = 1e-6
    fd = np.array([[(np.sum(normalized(x + h * e) ** 3) - np.sum(normalized(x - h * e) ** 3)) / (2 * h)
                    for e in np.eye(2)] for x in xs[0]])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_ways_of_passing_alternate_and_each_maps_what_it_passes() -> None:
    # (Vmapped._call keeps the vmap for each way of passing: by positional count and keyword names)
    xs = np.arange(8.0).reshape(4, 2) + 1.0
    eps = np.array([1e-3, 1e-2, 1e-1, 1.0])
    f = srcjax.vmap(normalized)
    left = np.stack([normalized(x) for x in xs])
    passed = np.stack([normalized(x, e) for x, e in zip(xs, eps)])
    for _ in range(3):
        np.testing.assert_allclose(f(xs), left, rtol=1e-12)
        np.testing.assert_allclose(f(xs, eps), passed, rtol=1e-12)
        np.testing.assert_allclose(f(xs, eps=eps), passed, rtol=1e-12)
        np.testing.assert_allclose(f(x=xs, eps=eps), passed, rtol=1e-12)
        np.testing.assert_allclose(f(x=xs), left, rtol=1e-12)
    assert len(f._by_passed) == 5 and len(f._omitting) == 1
