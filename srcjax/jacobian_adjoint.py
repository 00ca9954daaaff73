"""``jacobian_rows``: a reverse-mode Jacobian from its batched VJP (``autodiff._jacobian_source`` writes
it); ``adjoint`` exports it with its own helpers (``JACOBIAN_HELPERS``: its ``__module__`` is
``srcjax.adjoint``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .pytree import from_leaves, is_tree
from .tree_util import tree_leaves

JACOBIAN_HELPERS = ["jacobian_rows"]


def jacobian_rows(bars: Any, out: Any) -> Any:
    """The Jacobian of ``out`` by an argument from the argument's cotangents ``bars`` for a basis of
    ``out``'s cotangents (the basis axis first): each leaf as ``out.shape + its own shape`` (JAX's
    layout for an argument that is a container: its structure, a block per leaf)."""
    if is_tree(bars):
        rows = []
        for b in tree_leaves(bars):
            rows.append(np.reshape(b, np.shape(out) + np.shape(b)[1:]))
        return from_leaves(bars, rows)
    return np.reshape(bars, np.shape(out) + np.shape(bars)[1:])


for _name in JACOBIAN_HELPERS:  # (transpiled as srcjax.adjoint's, as linalg_adjoint's)
    globals()[_name].__module__ = "srcjax.adjoint"
