"""NumPy-level helpers of the construction primitives (``primitives/construction.py``): derivative
helpers (re-exported by :mod:`srcjax.adjoint`) and batching helpers (re-exported by
:mod:`srcjax.batched`). Plain NumPy with static control flow on shapes only, like those modules:
they run as they are under NumPy, and srcjax transpiles them like user code.
"""

from __future__ import annotations

from typing import Any

import numpy as np


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


__all__ = ["diagonal_bar", "batch_array"]
