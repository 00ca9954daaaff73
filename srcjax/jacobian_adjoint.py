"""``jacobian_rows``: a reverse-mode Jacobian from its batched VJP (``jacobian_source.jacobian_source`` writes
it); ``leaf_bases``, ``jacfwd_blocks`` and ``jacrev_blocks``: a Jacobian by a container argument or of a
container output, one batched JVP (VJP) per leaf; ``argnums_blocks``: by a tuple of argnums, of a
container output. ``adjoint`` exports them with its own helpers
(``JACOBIAN_HELPERS``: their ``__module__`` is ``srcjax.adjoint``).

The bases are constants and the others reshape their first argument only (:func:`srcjax.core.linear_params`):
a derivative of a Jacobian calls them again on tangents, never differentiates their bodies, and the container
branch of a Jacobian's source (``for basis_1 in leaf_bases(x)``) takes the derivative of the batched JVP that
the array branch takes (the same active arguments: one helper, not a copy per branch)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .core import index_params, linear_params
from .pytree import from_leaves, is_tree, leaves_like
from .tree_util import tree_leaves

JACOBIAN_HELPERS = ["jacobian_rows", "leaf_bases", "jacfwd_blocks", "jacrev_blocks", "argnums_blocks", "reshape_like",
                    "jacfwd_blocks_bar", "jacrev_blocks_bar"]


@linear_params("bars", shape=("out",))
@index_params("lead", "lead_out")
def jacobian_rows(bars: Any, out: Any, lead: int = 0, lead_out: int = 0) -> Any:
    """The Jacobian of ``out`` by an argument from the argument's cotangents ``bars`` for a basis of
    ``out``'s cotangents (the basis axis first): each leaf as ``out.shape + its own shape`` (JAX's
    layout for an argument that is a container: its structure, a block per leaf). ``lead``: batch axes in front
    of the basis axis, ``lead_out``: in front of ``out``'s axes (a vmap of the helper: transforms/batch_leading.py)."""
    if is_tree(bars):
        rows = []
        for b in tree_leaves(bars):
            rows.append(np.reshape(b, np.shape(b)[:lead] + np.shape(out)[lead_out:] + np.shape(b)[lead + 1:]))
        return from_leaves(bars, rows)
    return np.reshape(bars, np.shape(bars)[:lead] + np.shape(out)[lead_out:] + np.shape(bars)[lead + 1:])


@index_params("x")  # (constants: x read for its structure, shapes and dtypes only)
def leaf_bases(x: Any) -> list[Any]:
    """One basis of ``x``'s (co)tangents per leaf of ``x``: that leaf's elements one by one along a
    leading axis (``eye`` reshaped), the other leaves zero there (of that length). (Loops over the
    leaves by ``enumerate``, never ``len``: vmap batches this source again.)"""
    leaves = tree_leaves(x)
    bases = []
    for j, v in enumerate(leaves):
        n = np.size(v)
        parts = []
        for i, w in enumerate(leaves):
            if i == j:
                parts.append(np.reshape(np.eye(n, dtype=np.result_type(w)), (n,) + np.shape(w)))
            else:
                parts.append(np.zeros((n,) + np.shape(w), dtype=np.result_type(w)))
        bases.append(from_leaves(x, parts))
    return bases


@linear_params("ts", shape=("out", "x"))
@index_params("lead")
def jacfwd_blocks(ts: Any, out: Any, x: Any, lead: int = 0) -> Any:
    """jacfwd by ``x`` from the output tangents ``ts`` of the batched JVPs for ``leaf_bases(x)`` (one per
    leaf of ``x``, of ``out``'s structure, the basis axis first, after ``lead`` batch axes): JAX's layout,
    ``out``'s structure outside, ``x``'s inside, each block ``out_leaf.shape + x_leaf.shape``."""
    per_leaf = []  # per leaf of x: the leaves of its output tangents
    for t in ts:
        per_leaf.append(tree_leaves(t))
    rows = []
    for k, o in enumerate(tree_leaves(out)):
        blocks = []
        for j, v in enumerate(tree_leaves(x)):
            t = per_leaf[j][k]
            blocks.append(np.reshape(np.moveaxis(t, lead, -1), np.shape(t)[:lead] + np.shape(o) + np.shape(v)))
        rows.append(from_leaves(x, blocks))
    return from_leaves(out, rows)


@linear_params("bars", shape=("out",))
@index_params("lead", "lead_out")
def jacrev_blocks(bars: Any, out: Any, lead: int = 0, lead_out: int = 0) -> Any:
    """jacrev from the argument's cotangents ``bars`` of the batched VJPs for ``leaf_bases(out)`` (one per
    leaf of ``out``): JAX's layout, ``out``'s structure outside, the argument's inside (``lead``, ``lead_out``: as
    :func:`jacobian_rows`)."""
    rows = []
    for k, o in enumerate(tree_leaves(out)):
        rows.append(jacobian_rows(bars[k], o, lead, lead_out))
    return from_leaves(out, rows)


@linear_params("c", shape=("ref",))
def reshape_like(c: Any, ref: Any) -> Any:
    """Each leaf of ``c`` reshaped to the shape of ``ref``'s leaf in its place, in ``ref``'s structure: the
    cotangent of ``bars`` in ``jacobian_rows(bars, out)`` from the Jacobian's (``ref`` is ``bars``; reverse mode's
    rule: transforms/linear_calls.py). Its own transpose is ``reshape_like(g, c)``."""
    if is_tree(ref):
        rows = []
        for r, leaf in zip(tree_leaves(ref), leaves_like(c, ref)):
            rows.append(np.reshape(leaf, np.shape(r)))
        return from_leaves(ref, rows)
    return np.reshape(c, np.shape(ref))


@linear_params("c", shape=("bars", "out"))
def jacrev_blocks_bar(c: Any, bars: Any, out: Any) -> Any:
    """The cotangent of ``bars`` in ``jacrev_blocks(bars, out)`` from the Jacobian's, ``c`` (``out``'s structure
    outside): per leaf of ``out``, its block reshaped back (transforms/linear_calls.py). Its transpose is
    ``jacrev_blocks`` again."""
    rows = []
    for k, g in enumerate(leaves_like(c, out)):
        rows.append(reshape_like(g, bars[k]))
    return rows


@linear_params("c", shape=("ts", "out", "x"))
@index_params("lead")
def jacfwd_blocks_bar(c: Any, ts: Any, out: Any, x: Any, lead: int = 0) -> Any:
    """The cotangent of ``ts`` in ``jacfwd_blocks(ts, out, x)`` from the Jacobian's, ``c``: per leaf of ``x`` the
    output tangents' cotangents, each block's last axes (``x``'s leaf) flattened and moved first again
    (transforms/linear_calls.py). Its transpose is ``jacfwd_blocks`` again."""
    per_out = []  # per leaf of out: its blocks, one per leaf of x
    for g in leaves_like(c, out):
        per_out.append(leaves_like(g, x))
    bars = []
    for j, t in enumerate(ts):
        leaves = []
        for k, b in enumerate(tree_leaves(t)):
            moved = np.shape(b)[:lead] + np.shape(b)[lead + 1:] + np.shape(b)[lead:lead + 1]
            leaves.append(np.moveaxis(np.reshape(per_out[k][j], moved), -1, lead))
        bars.append(from_leaves(t, leaves))
    return bars


def argnums_blocks(jacobians: Any, out: Any) -> Any:
    """A Jacobian by a tuple of argnums from one Jacobian per argument (``jacobians``, each ``out``'s
    structure outside): JAX's layout, ``out``'s structure outside, the tuple inside."""
    per = []  # per argument: its Jacobian's blocks at the leaves of out
    for jac in jacobians:
        per.append(leaves_like(jac, out))
    rows = []
    for k, _ in enumerate(tree_leaves(out)):
        row = []
        for blocks in per:
            row.append(blocks[k])
        rows.append(tuple(row))
    return from_leaves(out, rows)


for _name in JACOBIAN_HELPERS:  # (transpiled as srcjax.adjoint's, as linalg_adjoint's)
    globals()[_name].__module__ = "srcjax.adjoint"
