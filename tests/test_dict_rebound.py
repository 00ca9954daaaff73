"""A dict argument merged into a new dict, then its name rebound to an array (issue #15).

``{**d, **a}`` is read as a loop over each dict's keys. A name rebound later to an array (``a = s * 2.0``) was
taken for an array there too, and the loop over ``a`` walked it by position (``a[0]``): ``KeyError: 0`` under jit,
``IndexError`` under vmap. The loop now walks ``a.keys()``, which is never rows of an array. Checked against the
user's function run by NumPy (and a loop over the examples for vmap) and against jax for grad.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

from .twins import JAX, jax_twin

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def total(d):
    return sum(np.sum(v) for v in d.values())


def merged_then_rebound(d, a):
    s = total({**d, **a})
    a = s * 2.0
    return a * np.sum(d["x"] ** 2)


def _args():  # type: ignore[no-untyped-def]
    return {"x": np.array([0.5, -1.0, 2.0])}, {"y": np.array([1.5, 0.25, -0.5])}


def test_jit_and_grad_of_a_merged_dict_whose_name_is_rebound() -> None:
    d, a = _args()
    want = merged_then_rebound(d, a)
    np.testing.assert_allclose(float(srcjax.jit(merged_then_rebound)(d, a)), want, rtol=1e-12)
    np.testing.assert_allclose(float(srcjax.numpy_function(srcjax.jit(merged_then_rebound))(d, a)), want, rtol=1e-12)
    got = srcjax.grad(merged_then_rebound, argnums=(0, 1))(d, a)
    ref = JAX.grad(jax_twin(merged_then_rebound, helpers=[total]), argnums=(0, 1))(d, a)
    for g, r in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(ref)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-12)


def test_vmap_of_a_merged_dict_whose_name_is_rebound() -> None:
    d, a = _args()
    ds = {"x": np.stack([d["x"], d["x"] * 2.0])}
    got = srcjax.vmap(merged_then_rebound, in_axes=(0, None))(ds, a)
    want = [merged_then_rebound({"x": ds["x"][k]}, a) for k in range(2)]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
