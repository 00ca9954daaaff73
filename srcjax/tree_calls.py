"""jaxlib's C++ pytree flattening on the call path (issue #18): one C++ call flattens a call's
container arguments into leaves and a hashable structure, and rebuilds results (no jax import)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import pytree

__all__ = ["cpp_tree", "tree_key"]


class _TreeCalls:
    """jaxlib's C++ pytree flattening (no jax import), for the cache-hit path of calls whose arguments
    are containers: one C++ call flattens them and gives a hashable structure; set up on first use."""

    flatten: Callable[[Any], tuple[list[Any], Any]] | None = None
    array: type | None = None
    sharded: type | None = None

    @classmethod
    def setup(cls) -> None:
        from jaxlib import _jax  # type: ignore[attr-defined]

        from .runtime.spmd import ShardedArray
        from .runtime.xla import Array

        cls.flatten = _jax.pytree.default_registry().flatten
        cls.array = Array
        cls.sharded = ShardedArray


def cpp_tree(tree: pytree.TreeDef) -> Any:
    """jaxlib's C++ structure equal to ``tree`` (tuples, lists, dicts, NamedTuples, None), whose
    ``unflatten`` builds the same containers; None when ``tree`` has other nodes (dataclasses)."""
    if _TreeCalls.flatten is None:
        _TreeCalls.setup()
    assert _TreeCalls.flatten is not None
    n = tree.num_leaves
    slots = [_Slot() for _ in range(n)]
    leaves, cpp = _TreeCalls.flatten(pytree.unflatten(tree, list(slots)))
    if len(leaves) != n or any(a is not b for a, b in zip(leaves, slots)):
        return None
    return cpp


class _Slot:
    """A placeholder leaf (see :func:`cpp_tree`)."""

    __slots__ = ()


def tree_key(args: tuple[Any, ...]) -> tuple[Any, list[Any]] | None:
    """(cache key, leaves) of arguments that are containers (tuples, lists, dicts, NamedTuples, None)
    of arrays and Python numbers, flattened in C++; None when a leaf is anything else (a string, a
    dataclass, a function: the full path handles those)."""
    flatten = _TreeCalls.flatten
    if flatten is None:
        _TreeCalls.setup()
        flatten = _TreeCalls.flatten
        assert flatten is not None
    leaves, treedef = flatten(args)
    array = _TreeCalls.array
    sig: list[Any] = []
    for a in leaves:
        t = type(a)
        if t is array:
            v = a.aval
            sig.append((v.shape, v.dtype, v.weak_type))
        elif t is np.ndarray:
            sig.append((a.shape, a.dtype))
        elif t is float or t is int or t is bool:
            sig.append(t)
        elif t is _TreeCalls.sharded:
            v = a.aval
            sig.append((v.shape, v.dtype, v.weak_type, a._sharding))
        else:
            return None
    return (treedef, tuple(sig)), leaves
