"""Static plans of the primitives that only move elements: np.insert, np.delete, np.append, np.pad,
np.resize.

NumPy itself decides where each element of the result comes from: the plan runs the NumPy
function on *tags* (the flat positions of every operand's elements, in the order of the operands,
and one more position for a constant fill) and reads the result. So every corner of NumPy's
semantics (insert's broadcasting of ``values``, slices and negative indices in ``obj``, pad's
reflect / symmetric / wrap with widths past the axis) is NumPy's own. The result is one gather of
the operands' elements at static positions; the transpose (the cotangent of each operand) is a sum
of gathers of the result's cotangent, one per use of an element (no scatter).

Called while compiling (a static module, never transpiled): by the lowering and abstract
evaluation in ``primitives/construction.py`` and by the helpers of :mod:`srcjax.construction`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class MovePlan:
    index: np.ndarray  # result shape: the flat position (into the operands' elements, then the fill) of each
    sizes: tuple[int, ...]  # the operands' sizes (the fill is at sum(sizes))

    def back(self, k: int) -> np.ndarray:
        """For operand ``k``: an (its size, r) array of the flat result positions that read each of its
        elements, padded with ``index.size`` (a zero appended to the flattened cotangent)."""
        start = sum(self.sizes[:k])
        flat = self.index.ravel()
        mine = (flat >= start) & (flat < start + self.sizes[k])
        counts = np.bincount(flat[mine] - start, minlength=self.sizes[k])
        r = max(1, int(counts.max(initial=0)))
        out = np.full((self.sizes[k], r), flat.size, dtype=np.int64)
        fill = np.zeros(self.sizes[k], dtype=np.int64)
        for pos in np.nonzero(mine)[0]:
            src = flat[pos] - start
            out[src, fill[src]] = pos
            fill[src] += 1
        return out


_CACHE: dict[str, MovePlan] = {}


def _tags(shape: tuple[int, ...], start: int) -> np.ndarray:
    return np.arange(start, start + int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)


def move_plan(kind: str, shapes: tuple[tuple[int, ...], ...], params: tuple[Any, ...]) -> MovePlan:
    """The plan of ``np.<kind>`` on operands of ``shapes`` with the static ``params`` (NumPy's errors
    propagate: the caller turns them into located ones)."""
    key = repr((kind, shapes, params))
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    sizes = tuple(int(np.prod(s, dtype=np.int64)) for s in shapes)
    tags = []
    start = 0
    for s, n in zip(shapes, sizes):
        tags.append(_tags(s, start))
        start += n
    if kind == "insert":
        obj, axis = params
        index = np.insert(tags[0], obj, tags[1], axis=axis)
    elif kind == "delete":
        obj, axis = params
        index = np.delete(tags[0], obj, axis=axis)
    elif kind == "append":
        (axis,) = params
        index = np.append(tags[0], tags[1], axis=axis)
    elif kind == "pad":
        pad_width, mode = params
        index = np.pad(tags[0], pad_width, mode=mode, **({"constant_values": start} if mode == "constant" else {}))
    elif kind == "resize":
        (new_shape,) = params
        index = np.resize(tags[0], new_shape)
    else:
        raise ValueError(f"no move plan for {kind!r}")
    plan = MovePlan(np.asarray(index, dtype=np.int64), sizes)
    _CACHE[key] = plan
    return plan


def move_back(kind: str, shapes: tuple[tuple[int, ...], ...], params: tuple[Any, ...], k: int) -> np.ndarray:
    """:meth:`MovePlan.back` of operand ``k``."""
    return move_plan(kind, shapes, params).back(k)


def move_index(kind: str, shapes: tuple[tuple[int, ...], ...], params: tuple[Any, ...]) -> np.ndarray:
    """:attr:`MovePlan.index`."""
    return move_plan(kind, shapes, params).index
