"""What the function shows of an operand of ``|`` (a dict's merge or an array's bitwise or) is read where it holds.

A name used as an array inside a lambda or a comprehension that binds it again (``tree_map(lambda a: a * 2.0, a)``,
``sum(np.sum(a) for a in leaves(a))``), or a name bound twice, was taken as an array throughout the function: the
merge ``defaults | a`` stayed a bitwise or, and ``grad`` gave zero gradients silently. An item of a dict
(``p["base"] | a``) stayed a bitwise or too. These are decided by the values now (``isinstance``, settled while
specializing); ``|`` of masks computed in the function (``m = x > 0``) is still a bitwise or, under ``grad`` too
(srcjax's own output is not read for merges again: the else branch of the test became a merge, an error).
Oracles: jax (jitted twins) and the user's function run by NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

from .twins import jax_twin, jitted

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
tu = srcjax.tree_util


def total(d):
    return np.sum(d["x"] * np.sin(d["y"]))


def shadowed_by_generator(defaults, a):
    return total(defaults | a) + sum(np.sum(a) for a in tu.tree_leaves(a))


def shadowed_by_lambda(defaults, a):
    b = tu.tree_map(lambda a: a * 2.0, a)
    c = tu.tree_map(lambda b: b + 1.0, a)
    return total(defaults | b) + sum(np.sum(v * v) for v in tu.tree_leaves(c))


def merged_then_shadowed(defaults, a):
    m = defaults | a
    return total(m) + sum(np.sum(a) for a in tu.tree_leaves(a))


def item_merged(p, a):
    return total(p["base"] | a)


def masks_of_locals(x, y):
    m = x > 0
    n = y > 0
    r = m | n
    return np.sum(np.where(r, x, 0.0) * y)


@pytest.mark.parametrize("fn", [shadowed_by_generator, shadowed_by_lambda, merged_then_shadowed])
def test_merge_of_a_name_used_as_an_array_elsewhere(fn):
    rng = np.random.default_rng(0)
    d, a = {"x": rng.normal(size=3), "y": rng.normal(size=3)}, {"y": rng.normal(size=3)}
    twin = jax_twin(fn, helpers=[total], tu=jax.tree_util)
    for argnum in (0, 1):
        got = srcjax.grad(fn, argnums=argnum)(d, a)
        want = jitted(jax.grad(twin, argnums=argnum))(d, a)
        assert got.keys() == want.keys()
        for k in want:
            np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(d, a)), fn(d, a), rtol=1e-12)


def test_merge_of_a_dict_item():
    rng = np.random.default_rng(1)
    p, a = {"base": {"x": rng.normal(size=3), "y": rng.normal(size=3)}}, {"y": rng.normal(size=3)}
    got = srcjax.grad(item_merged, argnums=(0, 1))(p, a)
    want = jitted(jax.grad(jax_twin(item_merged, helpers=[total]), argnums=(0, 1)))(p, a)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-12)


def test_or_of_masks_computed_in_the_function():
    x, y = np.array([1.0, -1.0, 2.0, -0.5]), np.array([-1.0, 2.0, -3.0, -2.0])
    np.testing.assert_allclose(np.asarray(srcjax.jit(masks_of_locals)(x, y)), masks_of_locals(x, y))
    want = jitted(jax.grad(jax_twin(masks_of_locals)))(x, y)
    np.testing.assert_allclose(np.asarray(srcjax.grad(masks_of_locals)(x, y)), np.asarray(want))
    assert "{**" not in srcjax.source(srcjax.grad(masks_of_locals)) and "isinstance" not in \
        srcjax.source(srcjax.grad(masks_of_locals))
