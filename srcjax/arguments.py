"""The arguments of a compiled call, leaf by leaf: which values are array leaves, their abstract values,
their cache-key pieces, and :class:`Static` (a static value inside a container argument).

Moved out of ``api.py`` (a pure move, issue #15's split of that module): ``api`` re-exports these names,
which the transformations import from it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import pytree
from .core import PYTHON_SCALAR_DTYPES, ArgumentError, ShapedArray, ShapeDtypeStruct, canonical_dtype


def _is_leaf(x: Any) -> bool:
    return isinstance(x, (np.ndarray, np.generic, ShapeDtypeStruct, ShapedArray)) or \
        isinstance(getattr(x, "aval", None), ShapedArray)


def _uploadable(leaf: Any) -> tuple[Any, ShapedArray]:
    """``leaf`` as a value ``device_put`` uploads (a NumPy array where it is not one already) and its
    abstract value; an ``ArgumentError`` for anything else."""
    aval = _leaf_aval(leaf)
    if aval is None:
        leaf = np.asarray(leaf)
        aval = _leaf_aval(leaf) if leaf.dtype != object else None
    if aval is None:
        raise ArgumentError(f"device_put: cannot upload a value of type {type(leaf).__name__}",
                            hint="pass arrays, numbers, or containers of them")
    return leaf, aval


def _leaf_aval(x: Any) -> ShapedArray | None:
    """Abstract value of a dynamic leaf, or None when the leaf cannot be an array."""
    t = type(x)
    if t is np.ndarray or isinstance(x, np.generic):
        return ShapedArray(x.shape, canonical_dtype(x.dtype))
    if t is float or t is int or t is bool or t is complex:
        return ShapedArray((), PYTHON_SCALAR_DTYPES[t], weak_type=True)
    if isinstance(x, ShapeDtypeStruct):
        return ShapedArray(x.shape, canonical_dtype(x.dtype))
    if isinstance(x, ShapedArray):
        return x
    aval = getattr(x, "aval", None)
    if isinstance(aval, ShapedArray):
        return aval
    if hasattr(x, "__array__") and hasattr(x, "shape") and hasattr(x, "dtype"):
        return ShapedArray(tuple(x.shape), canonical_dtype(x.dtype))
    return None


def _hashable(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


def _leaf_key(x: Any) -> Any:
    """Cache-key piece of one dynamic leaf: (shape, dtype, weak)."""
    t = type(x)
    if t is np.ndarray:
        return (x.shape, x.dtype, False)
    if t is float or t is int or t is bool or t is complex:
        return t
    aval = getattr(x, "aval", None)
    if aval is None or not isinstance(aval, ShapedArray):
        aval = _leaf_aval(x)
        if aval is None:
            return None
    if t.__name__ == "ShardedArray":  # a layout over devices: part of the program
        return (aval.shape, aval.dtype, aval.weak_type, x.sharding)
    return (aval.shape, aval.dtype, aval.weak_type)


_PY_AVALS = {t: ShapedArray((), d, weak_type=True) for t, d in PYTHON_SCALAR_DTYPES.items()}


def _dynamic_leaves(v: Any) -> int:
    """How many dynamic leaves (arrays, numbers) an argument that is not static has (as ``Compiled._key``)."""
    if _is_leaf(v) or type(v) in (float, int, bool):
        return 1
    return sum(_leaf_key(leaf) is not None for leaf in pytree.flatten(v, is_leaf=_is_leaf, nodes=True)[0])


def _key_aval(k: Any) -> ShapedArray:
    if isinstance(k, type):
        return _PY_AVALS[k]
    return ShapedArray(k[0], k[1], weak_type=k[2])


class Static:
    """A static value inside a container argument (a Python int a split VJP saved): part of the
    cache key, seen by the program as the value itself, as a string inside a container is."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return type(other) is Static and type(other.value) is type(self.value) and other.value == self.value

    def __hash__(self) -> int:
        v = self.value
        return hash((type(v), (v.start, v.stop, v.step) if type(v) is slice else v))

    def __repr__(self) -> str:
        return f"Static({self.value!r})"
