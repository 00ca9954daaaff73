"""Products of batched source, per example (``np.matmul``, ``np.dot``, ``np.inner``, ``np.outer``,
``np.tensordot``, ``np.linalg.multi_dot``, ``np.linalg.solve``, ``np.linalg.lstsq``): each takes flags saying which
operands carry the batch axis (an unbatched operand is never repeated along the batch). Generated batched code imports
them from :mod:`srcjax.batched`, which re-exports them (split from it by concern)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["batch_dot", "batch_inner", "batch_lstsq", "batch_matmul", "batch_multi_dot", "batch_outer", "batch_solve",
           "batch_tensordot"]


def _lifted(x: Any, r: int) -> Any:
    """The batched ``x`` with at least ``r`` per-example axes: new length-1 axes after the batch axis."""
    k = r - (np.ndim(x) - 1)
    if k > 0:
        shape = np.shape(x)
        return np.reshape(x, shape[:1] + (1,) * k + shape[1:])
    return x


def _dot_rank(x: Any, bx: bool) -> int:
    """The per-example rank of an operand batched (``bx``) or not."""
    return np.ndim(x) - 1 if bx else np.ndim(x)


_LETTERS = "abcdefghijklmnopqrstuvwxy"


def _contract(a: Any, b: Any, ba: bool, bb: bool, sa: str, sb: str, out: str) -> Any:
    """``np.einsum(sa,sb->out)`` per example: the batch axis gets its own letter on batched operands."""
    return np.einsum(("z" if ba else "") + sa + "," + ("z" if bb else "") + sb + "->z" + out, a, b)


def batch_matmul(x1: Any, x2: Any, b1: bool, b2: bool) -> Any:
    """``np.matmul`` per example; ``b1``/``b2`` say which operands are batched (an unbatched
    operand is never repeated along the batch)."""
    r1, r2 = _dot_rank(x1, b1), _dot_rank(x2, b2)
    if r1 == 1 and r2 == 1:
        return np.sum(x1 * x2, axis=-1)
    # one shared matrix and a batch: the batch is the left operand of one plain product
    if b1 and not b2 and r1 == 1 and r2 == 2:  # v @ m per example: (B, n) @ (n, k)
        return np.matmul(x1, x2)
    if b2 and not b1 and r1 == 2 and r2 == 1:  # m @ v per example: (B, n) @ m.T
        return np.matmul(x2, np.swapaxes(x1, -1, -2))
    if b2 and not b1 and r1 == 2 and r2 == 2:  # m @ s per example: (s.T @ m.T).T
        return np.swapaxes(np.matmul(np.swapaxes(x2, -1, -2), np.swapaxes(x1, -1, -2)), -1, -2)
    if r2 == 1:  # m @ v contracts v with m's last axis
        v = x2[..., None]
        return np.matmul(x1, _lifted(v, r1) if b2 else v)[..., 0]
    if r1 == 1:  # v @ m contracts v with m's second to last axis
        u = x1[..., None, :]
        return np.matmul(_lifted(u, r2) if b1 else u, x2)[..., 0, :]
    r = max(r1, r2)
    return np.matmul(_lifted(x1, r) if b1 else x1, _lifted(x2, r) if b2 else x2)


def batch_solve(a: Any, b: Any, ba: bool, bb: bool) -> Any:
    """``np.linalg.solve`` per example: a per-example 1-D ``b`` is one vector (a column), and the
    per-example batch dimensions of ``a`` and ``b`` broadcast as NumPy broadcasts them."""
    if np.ndim(b) - bb == 1:
        return batch_solve(a, b[..., None], ba, bb)[..., 0]
    r = max(np.ndim(a) - ba, np.ndim(b) - bb)
    return np.linalg.solve(_lifted(a, r) if ba else a, _lifted(b, r) if bb else b)


def batch_lstsq(a: Any, b: Any, rcond: Any, ba: bool, bb: bool) -> Any:
    """``np.linalg.lstsq`` per example (NumPy's takes one matrix): the batched reduced SVD, as the
    lowering computes it; every result has the batch axis (``[x, residuals, rank, s]``)."""
    m, n = np.shape(a)[-2], np.shape(a)[-1]
    size = np.shape(a)[0] if ba else np.shape(b)[0]
    vec = np.ndim(b) - bb == 1
    b2 = b[..., None] if vec else b
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    cut = np.finfo(np.result_type(a, b)).eps * max(m, n) if rcond is None else rcond
    large = s > cut * np.max(s, axis=-1, keepdims=True)
    s_inv = np.where(large, 1 / np.where(large, s, 1), 0)
    x = np.swapaxes(vh, -1, -2) @ (s_inv[..., :, None] * (np.swapaxes(u, -1, -2) @ b2))
    if m > n:
        res = np.sum((b2 - a @ x) ** 2, axis=-2)
    else:
        res = np.zeros((size, 0), dtype=np.result_type(x))
    rank = np.sum(large, axis=-1).astype(np.int32)
    return [x[..., 0] if vec else x, np.broadcast_to(res, (size,) + np.shape(res)[-1:]),
            np.broadcast_to(rank, (size,)), np.broadcast_to(s, (size,) + np.shape(s)[-1:])]


def batch_multi_dot(arrays: Any, batched: Any) -> Any:
    """``np.linalg.multi_dot`` per example: ``batch_matmul`` from left to right."""
    x, bx = arrays[0], batched[0]
    for k in range(1, len(arrays)):
        x = batch_matmul(x, arrays[k], bx, batched[k])
        bx = bx or batched[k]
    return x


def batch_dot(a: Any, b: Any, ba: bool, bb: bool) -> Any:
    """``np.dot`` per example."""
    ra, rb = _dot_rank(a, ba), _dot_rank(b, bb)
    if ra == 0 or rb == 0:
        return (_lifted(a, rb) if ba else a) * (_lifted(b, ra) if bb else b)
    if ra <= 2 and rb <= 2:
        return batch_matmul(a, b, ba, bb)
    sa = _LETTERS[:ra]
    sb = _LETTERS[ra:ra + rb]
    k = rb - 2 if rb >= 2 else 0
    sb = sb[:k] + sa[-1] + sb[k + 1:]
    return _contract(a, b, ba, bb, sa, sb, sa[:-1] + sb[:k] + sb[k + 1:])


def batch_inner(a: Any, b: Any, ba: bool, bb: bool) -> Any:
    """``np.inner`` per example: contracts the last axes."""
    ra, rb = _dot_rank(a, ba), _dot_rank(b, bb)
    if ra == 0 or rb == 0:
        return batch_dot(a, b, ba, bb)
    sa = _LETTERS[:ra]
    sb = _LETTERS[ra:ra + rb - 1] + sa[-1]
    return _contract(a, b, ba, bb, sa, sb, sa[:-1] + sb[:-1])


def batch_outer(a: Any, b: Any, ba: bool, bb: bool) -> Any:
    """``np.outer`` per example."""
    a = np.reshape(a, (np.shape(a)[0], -1)) if ba else np.ravel(a)
    b = np.reshape(b, (np.shape(b)[0], -1)) if bb else np.ravel(b)
    return _contract(a, b, ba, bb, "i", "j", "ij")


def batch_tensordot(a: Any, b: Any, axes: Any, ba: bool, bb: bool) -> Any:
    """``np.tensordot`` per example."""
    na, nb = _dot_rank(a, ba), _dot_rank(b, bb)
    if isinstance(axes, int):
        la = list(range(na - axes, na))
        lb = list(range(axes))
    else:
        la = [axes[0]] if isinstance(axes[0], int) else list(axes[0])
        lb = [axes[1]] if isinstance(axes[1], int) else list(axes[1])
    la = [i % na for i in la]
    lb = [i % nb for i in lb]
    sa = _LETTERS[:na]
    sb = "".join([sa[la[lb.index(j)]] if j in lb else _LETTERS[na + j] for j in range(nb)])
    out = "".join([sa[k] for k in range(na) if k not in la] + [sb[k] for k in range(nb) if k not in lb])
    return _contract(a, b, ba, bb, sa, sb, out)
