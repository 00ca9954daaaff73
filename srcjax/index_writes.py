"""Which writes of an assignment through repeated indices land: :func:`winning_writes`.

``y[idx] = v`` with an index repeated in ``idx`` writes one element several times, and one write
wins (NumPy: the last; XLA's scatter: the one the scatter keeps). The cotangent of ``v`` reads
``y``'s cotangent at every write that landed and zero at the overwritten ones, as JAX's scatter
JVP does: each write gets an id, the ids are scattered with the same assignment, read back at
``idx`` and compared with the ids. Derivative code calls it only where a key is not a literal (a
slice, an integer); keys that cannot repeat (integers, slices, boolean masks) take a fast path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .pytree import is_tree

__all__ = ["can_repeat", "winning_writes", "written_once"]


def can_repeat(key: Any) -> bool:
    """Whether an index ``key`` may name one element twice: it holds an integer array (or a list),
    not only integers, slices, None, ``...`` and boolean masks."""
    for k in key if isinstance(key, tuple) else (key,):
        if isinstance(k, list) or isinstance(k, np.ndarray) and k.ndim > 0 and k.dtype.kind in "iu":
            return True
    return False


def winning_writes(x: Any, key: Any) -> Any:
    """For ``x[key] = v`` (``v`` broadcast to the selection ``x[key]``): a boolean array shaped like the
    selection, False at the writes a later write to the same element of ``x`` overwrote (a repeated
    index), True at those that landed. True for a container ``x`` (an item is written once)."""
    if is_tree(x) or type(x) is dict or type(x) is list:
        return True
    selection = np.shape(np.empty(np.shape(x), dtype=np.int8)[key])
    if not can_repeat(key):
        return np.ones(selection, dtype=bool)
    ids = np.reshape(np.arange(int(np.prod(selection)), dtype=np.int64), selection)
    landed = np.full(np.shape(x), -1, dtype=np.int64)
    landed[key] = ids  # the same assignment: the same write wins
    return landed[key] == ids


def written_once(x: Any, key: Any) -> bool:
    """:func:`winning_writes` of a container ``x`` (a dict's or list's item is written once): True.
    Transpiled like the user's code (``frontend.resolve.LIBRARY_MODULES``)."""
    return True
