"""Reverse mode of a helper whose outputs the caller uses in part (session 42: an attempt at symbolic zero
cotangents wrote every backward half of a helper called twice, once for each of its dict's items, as `return ()`:
a zero gradient, silently; reverted). jax is the oracle."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import srcjax

jax.config.update("jax_enable_x64", True)


def _parts(p, x):
    return {"y": x @ p["w"] + p["b"], "n": np.sum(p["w"] ** 2)}


def _parts_jax(p, x):
    return {"y": x @ p["w"] + p["b"], "n": jnp.sum(p["w"] ** 2)}


def test_a_helper_called_twice_for_each_of_its_items_has_its_whole_gradient():
    p = {"w": np.linspace(0.1, 0.6, 6).reshape(3, 2), "b": np.array([0.3, -0.2])}
    x = np.array([1.0, -2.0, 0.5])
    got = srcjax.grad(lambda p, x: np.sum(_parts(p, x)["y"]) + _parts(p, x)["n"])(p, x)
    want = jax.grad(lambda p, x: jnp.sum(_parts_jax(p, x)["y"]) + _parts_jax(p, x)["n"])(p, x)
    for k in ("w", "b"):
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-12)


def _display(x, y):
    s = np.sum(np.sqrt(y))
    a, b = (x, s)  # noqa: F841 (b unused: its zero cotangent must not meet sqrt's infinite derivative at 0)
    return np.sum(a * a)


def test_an_unused_element_of_a_tuple_display_gives_no_nan():
    x, y = np.array([1.0, 2.0]), np.array([0.0, 4.0])
    got = srcjax.grad(_display, argnums=1)(x, y)
    np.testing.assert_array_equal(np.asarray(got), [0.0, 0.0])


def _root_and_double(x):
    return np.sqrt(x), 2.0 * x


def _uses_the_second(x):
    d, y = _root_and_double(x)  # noqa: F841
    return np.sum(y)


def test_an_unused_output_of_a_helper_gives_no_nan():
    x = np.array([0.0, 1.0, 4.0])
    np.testing.assert_array_equal(np.asarray(srcjax.grad(_uses_the_second)(x)), [2.0, 2.0, 2.0])
