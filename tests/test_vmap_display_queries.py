"""``np.shape`` / ``np.ndim`` / ``np.size`` of a list or tuple display holding mapped arrays under ``vmap``
(``np.size([x, y])``): one example's list, as NumPy computes it on one example. They were written as they were,
so NumPy's query counted the batch axis (twice the size, one more dimension, the batch size as a length): a wrong
answer without an error. Checked against the user's function run by NumPy on each example, the generated source run
by NumPy, and jax (``jnp.shape`` etc. of the same list)."""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def queries(x, y):
    s = np.size([x, y]) + np.ndim((x, y)) + np.shape([x, y])[0] * 10 + np.shape([[x, y], [y, x]])[2] * 100
    return x * s + np.size([[x, x]]) + np.ndim([[x, x]]) * 1000


_XS = np.arange(6.0).reshape(2, 3)
_Y = np.array([1.0, 2.0, 3.0])
_CASES = {(0, 0): (_XS, _XS + 1.0), (0, None): (_XS, _Y), (None, 0): (_Y, _XS)}


def _jax_queries(x, y):  # (the same queries in jax: of the stacked lists)
    jnp = jax.numpy
    s = jnp.size(jnp.stack([x, y])) + 2 + 2 * 10 + jnp.shape(jnp.stack([jnp.stack([x, y])] * 2))[2] * 100
    return x * s + jnp.size(jnp.stack([jnp.stack([x, x])])) + 3 * 1000


@pytest.mark.parametrize("in_axes", list(_CASES))
def test_queries_of_a_display_are_per_example(in_axes):
    args = _CASES[in_axes]
    n = 2
    want = np.stack([queries(*(a[i] if ax == 0 else a for a, ax in zip(args, in_axes))) for i in range(n)])
    v = srcjax.vmap(queries, in_axes=in_axes)
    np.testing.assert_allclose(np.asarray(v(*args)), want)
    np.testing.assert_allclose(v.fn(*args), want)  # the generated source, run by NumPy
    np.testing.assert_allclose(np.asarray(jax.vmap(_jax_queries, in_axes=in_axes)(*args)), want)


def sizes_along(x):
    return x * np.size(x, 0) + np.size(x, axis=-1) * 10 + np.size(x, (0, 1)) * 100 + np.size([x, x], 1) * 1000


def test_size_along_an_axis_is_per_example():
    """``np.size(x, axis)`` of a mapped ``x`` is one example's length along ``axis`` (the axis was dropped:
    ``np.size(x) // batch``, the whole example's size, without an error)."""
    xs = np.arange(24.0).reshape(2, 3, 4)
    want = np.stack([sizes_along(x) for x in xs])
    v = srcjax.vmap(sizes_along)
    np.testing.assert_allclose(np.asarray(v(xs)), want)
    np.testing.assert_allclose(v.fn(xs), want)
    jnp = jax.numpy
    jq = jax.vmap(lambda x: x * jnp.size(x, 0) + jnp.shape(x)[-1] * 10 + 12 * 100 + jnp.shape(x)[0] * 1000)
    np.testing.assert_allclose(np.asarray(jq(xs)), want)


def whole_sizes(x):
    return x * np.size(x, None) + np.size(x, axis=None) * 10


def test_size_along_no_axis_is_the_whole_example():
    xs = np.arange(24.0).reshape(2, 3, 4)
    want = np.stack([whole_sizes(x) for x in xs])
    v = srcjax.vmap(whole_sizes)
    np.testing.assert_allclose(np.asarray(v(xs)), want)
    np.testing.assert_allclose(v.fn(xs), want)
