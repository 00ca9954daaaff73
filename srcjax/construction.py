"""NumPy-level helpers of the construction primitives (``primitives/construction.py``): derivative
helpers (re-exported by :mod:`srcjax.adjoint`) and batching helpers (re-exported by
:mod:`srcjax.batched`). Plain NumPy with static control flow on shapes only, like those modules:
they run as they are under NumPy, and srcjax transpiles them like user code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .move_plan import move_back, move_index


def diagonal_bar(g: Any, a: Any, offset: Any, axis1: Any, axis2: Any) -> Any:
    """The cotangent of ``a`` in ``np.diagonal(a, offset, axis1, axis2)``: ``g`` on that diagonal, zeros
    elsewhere."""
    nd = np.ndim(a)
    i, j = axis1 % nd, axis2 % nd
    rest = [d for d in range(nd) if d != i and d != j]
    shape = np.shape(a)
    n, m = shape[i], shape[j]
    length = np.shape(g)[-1]
    size = n if offset >= 0 else m  # g along the rows (offset >= 0) or the columns, padded to their length
    pad = np.zeros(np.shape(g)[:-1] + (size - length,), dtype=np.result_type(g))
    full = np.concatenate([g, pad], axis=-1)
    spread = full[..., :, None] if offset >= 0 else full[..., None, :]
    on = np.arange(m)[None, :] - np.arange(n)[:, None] == offset
    z = np.where(on, spread, 0.0)
    order = rest + [i, j]
    return np.transpose(z, [order.index(d) for d in range(nd)])


def batch_array(x: Any, dtype: Any, ndmin: int) -> Any:
    """``np.array(x, dtype, ndmin=ndmin)`` per example: the new axes after the batch axis."""
    k = ndmin - (np.ndim(x) - 1)
    y = np.reshape(x, np.shape(x)[:1] + (1,) * k + np.shape(x)[1:]) if k > 0 else x
    return np.array(y, dtype=dtype)


def _move_shapes(x: Any, y: Any) -> tuple[tuple[int, ...], ...]:
    return (np.shape(x),) if y is None else (np.shape(x), np.shape(y))


def move_bar(g: Any, x: Any, y: Any, k: int, kind: str, params: Any) -> Any:
    """The cotangent of operand ``k`` (``x`` or ``y``) of ``np.<kind>`` (insert, delete, append, pad,
    resize): for each of its elements, the sum of the result cotangents that read it (static gathers)."""
    back = move_back(kind, _move_shapes(x, y), params, k)
    flat = np.concatenate([np.ravel(g), np.zeros(1, dtype=np.result_type(g))])
    return np.reshape(np.sum(np.take(flat, back), axis=-1), np.shape(x if k == 0 else y))


def batch_move(x: Any, y: Any, kind: str, params: Any, fill: Any, x_batched: bool, y_batched: bool) -> Any:
    """``np.<kind>`` per example: every example's elements (flattened, joined, a fill value last) gathered
    by the one static plan of an example."""
    n = np.shape(x)[0] if x_batched else np.shape(y)[0]
    ex = np.shape(x)[1:] if x_batched else np.shape(x)
    shapes = (ex,) if y is None else (ex, np.shape(y)[1:] if y_batched else np.shape(y))
    index = move_index(kind, shapes, params)
    dtype = np.result_type(x, y) if kind == "append" else np.result_type(x)
    parts = [np.reshape(x, (n, -1)) if x_batched else np.broadcast_to(np.ravel(x), (n, np.size(x)))]
    if y is not None:
        parts.append(np.reshape(y, (n, -1)) if y_batched else np.broadcast_to(np.ravel(y), (n, np.size(y))))
    if kind == "pad":
        parts.append(np.full((n, 1), fill, dtype=dtype))
    flat = np.concatenate([p.astype(dtype) for p in parts], axis=1)
    return np.reshape(np.take(flat, np.ravel(index), axis=1), (n,) + np.shape(index))


__all__ = ["diagonal_bar", "batch_array", "move_bar", "batch_move"]
