"""Helpers generated derivative source calls, in their own file (``adjoint.py`` is at its size limit);
``adjoint`` exports them with its own (``EXTRA_HELPERS``: their ``__module__`` is ``srcjax.adjoint``).

``trip_bound``: the trip count of a counted loop in reverse-mode source (``transforms/bounded.py``
writes it). Reverse mode writes ``while i < n:`` (``i`` counting from a literal ``i0`` by ``c``) as
``for _ in range(i0, n, c):`` with every iteration guarded by the loop's test. With ``max_iters``
given and ``n`` not a literal, the bound is ``trip_bound(n, i0 + c * max_iters)``: ``n`` itself, so
the loop runs exactly as written, except under vmap, where ``n`` differs per example and the batched
loop runs ``max_iters`` times for all of them (an example past its own count does nothing: its test
failed; vmap's rule is in ``transforms/batch_containers.py``).

``jacobian_rows``: a reverse-mode Jacobian from its batched VJP (``autodiff._jacobian_source``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .pytree import from_leaves, is_tree
from .tree_util import tree_leaves

EXTRA_HELPERS = ["trip_bound", "jacobian_rows"]


def trip_bound(n: int, most: int) -> int:
    """The bound ``n`` (``most``, from the ``max_iters`` given, only where ``n`` is per example)."""
    return n


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


for _name in EXTRA_HELPERS:  # (transpiled as srcjax.adjoint's, as linalg_adjoint's)
    globals()[_name].__module__ = "srcjax.adjoint"
