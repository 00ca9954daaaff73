"""``taken``: a value read by a branch of an ``if`` (or the step of a ``while``) on batched data,
marked with the examples that take it; ``adjoint`` exports it with its own helpers
(``BRANCH_HELPERS``: their ``__module__`` is ``srcjax.adjoint``).

Under ``vmap`` a test on batched data runs both branches for every example and selects per
example (``batch_select``); the branch an example does not take may compute a value whose
derivative is infinite there (``np.sqrt`` of a negative, ``1 / 0``). Reverse mode sends it a zero
cotangent, and ``0 * inf`` is NaN, which would reach the inputs' cotangents. The batcher
(``transforms/batch_lax.py``) rebinds each batched name a branch reads to ``x = taken(x, pred)``
(``taken(x, pred, False)`` in the other branch): its value is ``x``, its tangent ``x``'s, and its
cotangent ``taken_bar(g, pred)``: ``g`` where ``pred`` holds, else 0 (a select, not a product), so
the examples that do not take the branch get exactly zero, as a loop over the examples would give. Both are
primitives (records in ``primitives/ad_prims.py``). A container (a dict, list, tuple or record of batched leaves whose
structure the batcher's state does not show: a cotangent, a helper's or ``tree_map``'s result) is marked, and its
cotangent selected, leaf by leaf (``tree_taken``, ``tree_taken_bar``: the records' ``tree`` rules, chosen while
compiling, so no helper of arrays has a container branch that reverse mode and vmap would read).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .pytree import from_leaves, is_tree, leaves_like

BRANCH_HELPERS = ["taken", "taken_bar", "tree_taken", "tree_taken_bar"]


def taken(x: Any, pred: Any, keep: bool = True) -> Any:
    """``x`` itself (where ``pred`` is ``keep`` the branch that reads it is taken)."""
    return x


def taken_bar(g: Any, pred: Any, keep: bool = True) -> Any:
    """:func:`taken`'s cotangent: ``g`` where ``pred`` is ``keep``, exactly zero elsewhere (``pred``'s
    axes lead ``g``'s); ``None`` (an integer or boolean leaf of a container) stays ``None``; a container leaf by leaf
    (compiled code: :func:`tree_taken_bar`, the record's ``tree`` rule)."""
    if g is None:
        return g
    if is_tree(g):
        return tree_taken_bar(g, pred, keep)
    k = np.ndim(g) - np.ndim(pred)
    mask = np.reshape(pred, np.shape(pred) + (1,) * k) if k > 0 else pred
    if keep:
        return np.where(mask, g, 0.0)
    return np.where(np.logical_not(mask), g, 0.0)


def tree_taken(x: Any, pred: Any, keep: bool = True) -> Any:
    """:func:`taken` of a container: of each leaf (the primitive's ``tree`` rule)."""
    return from_leaves(x, [taken(leaf, pred, keep) for leaf in leaves_like(x, x)])


def tree_taken_bar(g: Any, pred: Any, keep: bool = True) -> Any:
    """:func:`taken_bar` of a container's cotangent: of each leaf (None stays None: the primitive's ``through``)."""
    return from_leaves(g, [taken_bar(leaf, pred, keep) for leaf in leaves_like(g, g)])


for _name in BRANCH_HELPERS:  # (transpiled as srcjax.adjoint's, as loop_adjoint's)
    globals()[_name].__module__ = "srcjax.adjoint"
