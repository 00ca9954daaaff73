"""Reverse mode: whether a loop's items may be a dict's keys, which carry no derivative.

``for k in d`` of a dict iterates its keys; reverse mode adds an item's cotangent into its sequence's at the item's
position (``d_bar = index_add(d_bar, i, k_bar)``), which for a dict is no key of it (``tree_get(): KeyError: 0``)
or, where the keys are 0, 1, ..., another key's value: a silently wrong gradient (fix50). Generated code is generic
in its arguments' structure, so where a loop's sequence may be a dict and its items may be keys, the addition is
written under ``if not isinstance(d, dict):`` (static: the lowering keeps one branch). A loop whose items index
something (``d[k]``) has no item derivatives at all (``anf.loop_sources``); this module is for the others: an item
only compared by ``max``/``min`` (``best = max(best, k)``), or never read as an array.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import libcst as cst

from ..frontend.names import code, walk
from .anf import INDEX, LoopSource, call_name

_SEQUENCES = frozenset({cst.List, cst.Tuple, cst.ListComp})
_SEQUENCE_CALLS = frozenset({"list", "tuple", "sorted", "reversed", "range", "zip", "enumerate"})


def may_be_keys(src: LoopSource, arrays: set[str], bound: Mapping[str, Sequence[cst.BaseExpression]],
                body: Sequence[Any]) -> bool:
    """Whether ``src``'s items (a name bound from a name) may be the keys of a dict: the sequence may be one
    (:func:`may_be_dict`), and the item is not read as an array, or is compared by the builtin ``max``/``min``."""
    if src.key != INDEX or type(src.target) is not cst.Name or not may_be_dict(src.seq, arrays, bound):
        return False
    item = src.target.value
    return item not in arrays or _compared(body, item)


def may_be_dict(seq: cst.BaseExpression, arrays: set[str], bound: Mapping[str, Sequence[cst.BaseExpression]]) -> bool:
    """Whether ``seq``, a loop's iterable, may be a dict: a name neither an array nor bound here only to lists,
    tuples and their slices (a parameter may be anything)."""
    if type(seq) is not cst.Name or seq.value in arrays:
        return False
    values = bound.get(seq.value, [])
    return not values or not all(type(v) in _SEQUENCES or call_name(v) in _SEQUENCE_CALLS or _sliced(v) or
                                 type(v) is cst.Call and code(v.func).endswith("tree_leaves")  # type: ignore[attr-defined]
                                 for v in values)


def _sliced(v: cst.BaseExpression) -> bool:
    """``xs[1:]``: a slice of a sequence (a dict refuses one)."""
    return type(v) is cst.Subscript and any(type(e.slice) is cst.Slice for e in v.slice)  # type: ignore[attr-defined]


def _compared(body: Sequence[Any], name: str) -> bool:
    """Whether ``body`` passes ``name`` to the builtin ``max`` or ``min`` (a single value: a number or a key)."""
    return any(type(n) is cst.Call and call_name(n) in ("max", "min") and  # type: ignore[arg-type]
               any(type(a.value) is cst.Name and a.value.value == name for a in n.args)  # type: ignore[attr-defined]
               for st in body for n in walk(st))
