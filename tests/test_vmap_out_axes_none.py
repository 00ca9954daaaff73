"""``vmap(f, out_axes=...)`` with ``None`` for leaves of a container output, against jax: an unmapped leaf
comes back once; a leaf that depends on the mapped axis is an error naming that leaf (as jax's
``out_axes[0]['y']``), at the user's ``return``."""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def parts(x, w):
    return {"y": x * w, "w2": w * 2.0}, np.sum(w)


def passed_through(x, p):
    return {"y": x * p["w"], "p": p}


def test_unmapped_leaves_come_back_once():
    xs, w = np.arange(6.0).reshape(2, 3), np.array([1.0, 2.0, 3.0])
    for spec in (({"y": 0, "w2": None}, None), ({"y": 1, "w2": None}, None)):
        got = srcjax.vmap(parts, in_axes=(0, None), out_axes=spec)(xs, w)
        want = jax.vmap(parts, in_axes=(0, None), out_axes=spec)(xs, w)
        for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b))
    p = {"w": w, "b": xs}
    got = srcjax.vmap(passed_through, in_axes=(0, {"w": None, "b": 0}),
                      out_axes={"y": 0, "p": {"w": None, "b": 0}})(xs, p)
    np.testing.assert_allclose(np.asarray(got["p"]["w"]), w)


def test_a_mapped_leaf_is_named():
    xs, w = np.arange(6.0).reshape(2, 3), np.array([1.0, 2.0, 3.0])
    with pytest.raises(srcjax.TranspileError, match=r"out_axes=None for an output srcjax maps: output\[0\]\['y'\] "
                                                    r"\(it depends on a mapped argument, or") as e:
        srcjax.vmap(parts, in_axes=(0, None), out_axes=({"y": None, "w2": None}, None))(xs, w)
    assert f"{__file__}:" in str(e.value).replace(".pyc", ".py")
    with pytest.raises(ValueError, match=r"out_axes\[0\]\['y'\]"):
        jax.vmap(parts, in_axes=(0, None), out_axes=({"y": None, "w2": None}, None))(xs, w)
    p = {"w": w, "b": xs}
    with pytest.raises(srcjax.TranspileError, match=r"output\['p'\]\['b'\]"):
        srcjax.vmap(passed_through, in_axes=(0, {"w": None, "b": 0}),
                    out_axes={"y": 0, "p": {"w": None, "b": None}})(xs, p)


def squared_leaves(x, w):
    return srcjax.tree_util.tree_map(lambda a, b: a * b, {"y": x, "w": w}, {"y": w, "w": w})


def test_an_unmapped_leaf_of_a_tree_map_says_why_it_is_refused():
    """jax runs out_axes=None for the unmapped leaf of a tree_map's output; srcjax maps the container as a whole
    (its tree_map is one comprehension over the leaves). It was refused as "an output that depends on a mapped
    argument", which ``output['w']`` (``w * w``) does not: the refusal says what srcjax does, and out_axes=0 runs."""
    xs, w = np.arange(6.0).reshape(2, 3), np.array([1.0, 2.0, 3.0])
    with pytest.raises(srcjax.TranspileError, match=r"output\['w'\] \(it depends on a mapped argument, or it is a "
                                                    r"leaf of a container that srcjax maps as a whole: tree_map"):
        srcjax.vmap(squared_leaves, in_axes=(0, None), out_axes={"y": 0, "w": None})(xs, w)
    got = srcjax.vmap(squared_leaves, in_axes=(0, None), out_axes={"y": 0, "w": 0})(xs, w)
    np.testing.assert_allclose(np.asarray(got["w"]), np.stack([w * w, w * w]))
    np.testing.assert_allclose(np.asarray(got["y"]), xs * w)
