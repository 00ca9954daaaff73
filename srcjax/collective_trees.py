"""Helpers of the collectives (``srcjax.lax.psum``, ...) and of ``srcjax.lax.stop_gradient``, transpiled like user code
(``frontend/resolve.LIBRARY_MODULES``): a collective of a container is the collective of each leaf
(JAX's collectives take pytrees: ``pmean(grads, "i")``; the records' ``tree`` rule calls these), and
``ppermute``'s transpose permutes by the pairs turned round (``inverse_pairs``, which generated
derivative source imports from ``srcjax.adjoint``); ``batch_ppermute``, vmap's ``ppermute`` over the batch axis
(generated batched source imports it from ``srcjax.batched``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import lax
from .pytree import from_leaves, leaves_like

__all__ = ["batch_ppermute", "inverse_pairs", "tree_all_gather", "tree_pmax", "tree_pmean", "tree_pmin",
           "tree_ppermute", "tree_psum", "tree_psum_scatter", "tree_stop_gradient"]


def tree_psum(x: Any, axis_name: Any, axis_index_groups: Any = None) -> Any:
    """``srcjax.lax.psum`` of a container: of each leaf (JAX's collectives take pytrees, ``psum(grads, "i")``;
    ``tree_pmean`` ... ``tree_ppermute`` likewise)."""
    return from_leaves(x, [lax.psum(leaf, axis_name, axis_index_groups=axis_index_groups)
                           for leaf in leaves_like(x, x)])


def tree_pmean(x: Any, axis_name: Any, axis_index_groups: Any = None) -> Any:
    return from_leaves(x, [lax.pmean(leaf, axis_name, axis_index_groups=axis_index_groups)
                           for leaf in leaves_like(x, x)])


def tree_pmax(x: Any, axis_name: Any, axis_index_groups: Any = None) -> Any:
    return from_leaves(x, [lax.pmax(leaf, axis_name, axis_index_groups=axis_index_groups)
                           for leaf in leaves_like(x, x)])


def tree_pmin(x: Any, axis_name: Any, axis_index_groups: Any = None) -> Any:
    return from_leaves(x, [lax.pmin(leaf, axis_name, axis_index_groups=axis_index_groups)
                           for leaf in leaves_like(x, x)])


def tree_all_gather(x: Any, axis_name: Any, axis_index_groups: Any = None, axis: int = 0,
                    tiled: bool = False) -> Any:
    return from_leaves(x, [lax.all_gather(leaf, axis_name, axis_index_groups=axis_index_groups, axis=axis,
                                          tiled=tiled) for leaf in leaves_like(x, x)])


def tree_psum_scatter(x: Any, axis_name: Any, scatter_dimension: int = 0, axis_index_groups: Any = None,
                      tiled: bool = False) -> Any:
    return from_leaves(x, [lax.psum_scatter(leaf, axis_name, scatter_dimension=scatter_dimension,
                                            axis_index_groups=axis_index_groups, tiled=tiled)
                           for leaf in leaves_like(x, x)])


def tree_ppermute(x: Any, axis_name: Any, perm: Any) -> Any:
    return from_leaves(x, [lax.ppermute(leaf, axis_name, perm) for leaf in leaves_like(x, x)])


def tree_stop_gradient(x: Any) -> Any:
    """``srcjax.lax.stop_gradient`` of a container: of each leaf (JAX's takes pytrees: a target network's
    parameters)."""
    return from_leaves(x, [lax.stop_gradient(leaf) for leaf in leaves_like(x, x)])


def inverse_pairs(perm: Any) -> Any:
    """``ppermute``'s pairs turned round (destination, source): its transpose (JAX's rule)."""
    return tuple((d, s) for s, d in perm)


def batch_ppermute(x: Any, perm: Any) -> Any:
    """``srcjax.lax.ppermute`` over the batch axis: example ``d`` gets example ``s``'s ``x`` for each
    pair ``(s, d)`` of ``perm`` (a static gather), an example no pair sends to gets zeros."""
    n = np.shape(x)[0]
    src = list(range(n))
    sent = [False] * n
    for s, d in perm:
        src[d] = s
        sent[d] = True
    moved = np.take(x, np.array(src), axis=0)
    if all(sent):
        return moved
    mask = np.reshape(np.array(sent), (n,) + (1,) * (np.ndim(x) - 1))
    return np.where(mask, moved, np.zeros_like(moved))
