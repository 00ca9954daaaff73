"""A batched helper summing over the batch axis leaf by leaf (:func:`batch_summed_items`): the cotangent of a value
repeated along the batch (``batch_broadcast_items``), which reverse mode writes from a rule
(transforms/linear_calls.py). Generated batched code imports it from :mod:`srcjax.batched`, which re-exports it."""

from __future__ import annotations

from typing import Any

from .adjoint import UNSET, unbroadcast
from .core import index_params
from .lax import index_update
from .pytree import is_tree, item_keys, tree_get


@index_params("bx")
def batch_summed_items(g: Any, x: Any, bx: bool) -> Any:
    """The cotangent of ``x`` from that of its repeat along the batch (the transpose of :func:`batch_broadcast_items`,
    reverse mode's rule for it: transforms/linear_calls.py): each leaf of ``g`` summed over the batch axis, in ``x``'s
    dtype; ``g`` itself where ``x`` was batched (``bx``). None and ``UNSET`` stay as they are, and a cotangent of a
    value not computed on this path (``x`` UNSET: a branch on data not taken, lowered too) is ``UNSET``."""
    if x is UNSET:
        return UNSET
    if bx or g is None or g is UNSET:
        return g
    if is_tree(g):
        out = g
        for k in item_keys(g):
            out = index_update(out, k, batch_summed_items(tree_get(g, k), tree_get(x, k), False))
        return out
    return unbroadcast(g, x)

