"""NumPy-level helpers that batched source (``srcjax.vmap``) calls.

In batched source every batched value has its batch axis first; a value that does
not depend on a mapped input keeps its per-example shape. These helpers bridge the
two where a per-example operation needs to know a per-example rank, which the
source does not spell out (it is shape-generic): ``batch_align(x, w)`` gives the
batched ``x`` as many per-example axes as ``w`` has, so ``x * w`` broadcasts per
example as NumPy broadcasts the unbatched operands.

Like :mod:`srcjax.adjoint`, they are plain NumPy with static control flow on shapes
only: they run as they are under NumPy, and srcjax transpiles them like any user
helper (so derivatives of batched source go through them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .adjoint import UNSET, broadcast_like, expand_reduced, index_add, unbroadcast
from .lax import index_update
from .pytree import is_tree, tree_set

__all__ = [  # what generated batched source imports (transforms/batch.py)
    "batch_align", "batch_align_b", "batch_broadcast", "batch_broadcast_items", "batch_axis", "batch_axes",
    "batch_select",
    "batch_choose", "batch_reshape", "batch_transpose", "batch_moveaxis", "batch_size_of", "batch_rows",
    "batch_matmul", "batch_dot", "batch_inner", "batch_outer", "batch_tensordot", "batch_take",
    "batch_take_along_axis", "batch_getitem", "batch_index_update", "batch_index_add", "batch_squeeze",
    "batch_broadcast_to", "batch_atleast", "batch_flat_axis", "batch_where_any", "batch_unbroadcast",
    "batch_broadcast_like", "batch_expand_reduced", "batch_einsum", "batch_full", "batch_tile",
    "batch_linspace", "batch_out", "batch_triangle", "batch_diag", "batch_norm", "batch_hstack",
    "batch_full_like",
]


def _lifted(x: Any, r: int) -> Any:
    k = r - (np.ndim(x) - 1)
    if k > 0:
        shape = np.shape(x)
        return np.reshape(x, shape[:1] + (1,) * k + shape[1:])
    return x


def batch_align(x: Any, y: Any) -> Any:
    """The batched ``x`` with at least as many per-example axes as the unbatched ``y`` has axes
    (new axes of length 1 after the batch axis), so that it broadcasts against ``y`` per example."""
    k = np.ndim(y) - (np.ndim(x) - 1)  # (written out, not through _lifted: one call level for AD)
    return np.reshape(x, np.shape(x)[:1] + (1,) * k + np.shape(x)[1:]) if k > 0 else x


def batch_align_b(x: Any, y: Any) -> Any:
    """The batched ``x`` with at least as many per-example axes as the batched ``y``."""
    k = np.ndim(y) - np.ndim(x)
    return np.reshape(x, np.shape(x)[:1] + (1,) * k + np.shape(x)[1:]) if k > 0 else x


def batch_broadcast(x: Any, n: int) -> Any:
    """An unbatched array (or number) repeated along a new batch axis (``UNSET`` stays ``UNSET``)."""
    if x is UNSET:
        return x
    return np.broadcast_to(x, (n,) + np.shape(x))


def batch_broadcast_items(x: Any, n: int) -> Any:
    """A list or tuple (of arrays, or of such lists and tuples: a derivative tape, a cotangent of a
    nested tuple) with every array repeated along a new batch axis; an array itself otherwise
    (``UNSET`` and ``None`` stay as they are)."""
    if x is UNSET or x is None:
        return x
    if isinstance(x, dict):
        out = x
        for k in x:
            out = tree_set(out, k, batch_broadcast_items(x[k], n))
        return out
    if isinstance(x, (tuple, list)):
        items = []
        for v in x:
            items.append(batch_broadcast_items(v, n))
        if isinstance(x, tuple):
            return tuple(items)
        return items
    return np.broadcast_to(x, (n,) + np.shape(x))


def batch_size_of(x: Any) -> int:
    """The batch size of a batched value: its first leaf's leading axis."""
    while is_tree(x):
        x = x[0] if isinstance(x, (tuple, list)) else list(x.values())[0] if isinstance(x, dict) else x
    return np.shape(x)[0]


def batch_moveaxis(x: Any, source: int, destination: int) -> Any:
    """``np.moveaxis`` of a batched array: where its batch axis is."""
    return np.moveaxis(x, source, destination)


def batch_out(x: Any, axis: int, n: int, batched: bool) -> Any:
    """An output (or every leaf of it) with its batch axis at ``axis`` (unbatched: broadcast first)."""
    if not batched:
        x = batch_broadcast(x, n)
    if axis == 0:
        return x
    return batch_moveaxis(x, 0, axis)


def batch_axis(axis: Any, x: Any) -> Any:
    """A per-example call's ``axis`` argument for the batched ``x`` (``None``: every per-example axis)."""
    if axis is None:
        return tuple(range(1, np.ndim(x)))
    if isinstance(axis, (tuple, list)):
        return tuple(a + 1 if a >= 0 else a for a in axis)
    return axis + 1 if axis >= 0 else axis


def batch_axes(x: Any) -> tuple[int, ...]:
    """Every per-example axis of the batched ``x``."""
    return tuple(range(1, np.ndim(x)))


def batch_flat_axis(x: Any) -> Any:
    """The batched ``x`` with its per-example axes flattened into one (``axis=None`` calls that
    flatten: ``argmax``, ``take``, ``repeat``, ``roll``)."""
    return np.reshape(x, (np.shape(x)[0], -1))


def batch_select(c: Any, a: Any, b: Any) -> Any:
    """Per example, ``a`` where the batched condition ``c`` holds, else ``b``."""
    k = max(np.ndim(a), np.ndim(b)) - np.ndim(c)
    return np.where(np.reshape(c, np.shape(c)[:1] + (1,) * k + np.shape(c)[1:]) if k > 0 else c, a, b)


def batch_where_any(c: Any) -> Any:
    """Whether any example still runs a batched ``while`` (``c`` is per example)."""
    return np.any(c)


def batch_choose(index: Any, results: Any) -> Any:
    """Per example, ``results[index]`` (``lax.switch`` on a batched index; index clamped as in JAX)."""
    k = np.clip(index, 0, len(results) - 1)
    out = results[len(results) - 1]
    for i in range(len(results) - 2, -1, -1):
        out = batch_select(k == i, results[i], out)
    return out


def batch_reshape(a: Any, shape: Any) -> Any:
    """``np.reshape`` of every example to ``shape``."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return np.reshape(a, (np.shape(a)[0],) + shape)


def batch_transpose(a: Any, axes: Any) -> Any:
    """``np.transpose`` of every example (``axes=None``: reversed)."""
    n = np.ndim(a) - 1
    if axes is None:
        perm = tuple(range(n, 0, -1))
    else:
        perm = tuple((p % n) + 1 for p in axes)
    return np.transpose(a, (0,) + perm)


def batch_rows(a: Any) -> Any:
    """The batched ``a`` with its first per-example axis first: what ``for row in a`` iterates over
    (a container of batched values: itself)."""
    if is_tree(a):
        return a
    return np.moveaxis(a, 1, 0)


def batch_squeeze(a: Any, axis: Any) -> Any:
    """``np.squeeze`` of every example (``axis=None``: the per-example axes of length 1)."""
    if axis is None:
        shape = np.shape(a)
        axis = tuple(i for i in range(1, len(shape)) if shape[i] == 1)
        return np.squeeze(a, axis=axis)
    return np.squeeze(a, axis=batch_axis(axis, a))


def batch_broadcast_to(a: Any, shape: Any, batched: bool) -> Any:
    """``np.broadcast_to`` of every example to ``shape``."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if not batched:
        return np.broadcast_to(a, shape)
    return np.broadcast_to(_lifted(a, len(shape)), np.shape(a)[:1] + shape)


def batch_atleast(a: Any, k: int) -> Any:
    """``np.atleast_{k}d`` of every example (the same new axes as NumPy's)."""
    shape = np.shape(a)
    n, rest = shape[0], shape[1:]
    if len(rest) >= k:
        return a
    if k == 1 or len(rest) == 0:
        new = (1,) * (k - len(rest)) + rest
    elif k == 2:
        new = (1,) + rest
    elif len(rest) == 1:
        new = (1,) + rest + (1,)
    else:
        new = rest + (1,)
    return np.reshape(a, (n,) + new)


def _dot_rank(x: Any, bx: bool) -> int:
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
    if r2 == 1:  # m @ v contracts v with m's last axis
        v = x2[..., None]
        return np.matmul(x1, _lifted(v, r1) if b2 else v)[..., 0]
    if r1 == 1:  # v @ m contracts v with m's second to last axis
        u = x1[..., None, :]
        return np.matmul(_lifted(u, r2) if b1 else u, x2)[..., 0, :]
    r = max(r1, r2)
    return np.matmul(_lifted(x1, r) if b1 else x1, _lifted(x2, r) if b2 else x2)


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
    sa = list(_LETTERS[:na])
    sb = list(_LETTERS[na:na + nb])
    for i, j in zip(la, lb):
        sb[j] = sa[i]
    out = [s for k, s in enumerate(sa) if k not in la] + [s for k, s in enumerate(sb) if k not in lb]
    return _contract(a, b, ba, bb, "".join(sa), "".join(sb), "".join(out))


def batch_einsum(subscripts: str, operands: Any, batched: Any) -> Any:
    """``np.einsum`` per example: a new index letter for the batch axis of each batched operand."""
    spec = subscripts.replace(" ", "")
    if "->" in spec:
        ins, out = spec.split("->")
    else:
        ins = spec
        letters = ins.replace(",", "").replace(".", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
        if "..." in ins:
            out = "..." + out
    used = set(spec)
    z = next(c for c in "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in used)
    terms = ins.split(",")
    new = [z + t if b else t for t, b in zip(terms, batched)]
    return np.einsum(",".join(new) + "->" + z + out, *operands)


def batch_take(a: Any, indices: Any, axis: Any, ba: bool, bi: bool) -> Any:
    """``np.take`` per example."""
    if axis is None:
        a = batch_flat_axis(a) if ba else np.ravel(a)
        axis = 0
    if not bi:
        return np.take(a, indices, axis=(axis + 1 if axis >= 0 else axis) if ba else axis)
    if not ba:
        return np.take(a, indices, axis=axis) if axis == 0 else \
            np.moveaxis(np.take(a, indices, axis=axis), axis % np.ndim(a), 0)
    n = np.shape(a)[0]
    out = []
    for i in range(n):
        out.append(np.take(a[i], indices[i], axis=axis))
    return np.stack(out)


def batch_take_along_axis(arr: Any, indices: Any, axis: Any, ba: bool, bi: bool) -> Any:
    """``np.take_along_axis`` per example."""
    if not ba:
        arr = batch_broadcast(arr, np.shape(indices)[0])
    if not bi:
        indices = batch_broadcast(indices, np.shape(arr)[0])
    if axis is None:
        return np.take_along_axis(batch_flat_axis(arr), batch_flat_axis(indices), axis=1)
    return np.take_along_axis(arr, indices, axis=axis + 1 if axis >= 0 else axis)


def _batched_key(key: Any) -> Any:
    """A static per-example index for the batched array: the batch axis kept whole in front."""
    if isinstance(key, tuple):
        return (slice(None),) + key
    return (slice(None), key)


def batch_getitem(x: Any, key: Any) -> Any:
    """``x[key]`` per example for a batched ``x`` and a static key (ints, slices, None, Ellipsis); an
    element of a container of batched values."""
    if is_tree(x):
        return x[key]
    return x[_batched_key(key)]


def batch_index_update(x: Any, key: Any, value: Any, bx: bool, bv: bool) -> Any:
    """``x[key] = value`` per example (a static key); ``x`` may be a container."""
    if is_tree(x):
        n = batch_size_of(value) if bv else batch_size_of(x)
        return index_update(x if bx else batch_broadcast_items(x, n), key, value if bv else batch_broadcast(value, n))
    if not bx:
        x = batch_broadcast(x, np.shape(value)[0])
    if bv:
        target = np.shape(x[_batched_key(key)])
        value = np.reshape(value, np.shape(value)[:1] + (1,) * (len(target) - np.ndim(value)) + np.shape(value)[1:]) \
            if len(target) > np.ndim(value) else value
    return index_update(x, _batched_key(key), value)


def batch_index_add(z: Any, key: Any, g: Any, bz: bool, bg: bool) -> Any:
    """``index_add(z, key, g)`` per example (a static key); ``z`` may be a container (a cotangent of
    a tuple), made batched element by element."""
    if is_tree(z):
        n = batch_size_of(g) if bg else batch_size_of(z)
        return index_add(z if bz else batch_broadcast_items(z, n), key, g if bg else batch_broadcast(g, n))
    if not bz:
        z = batch_broadcast(z, np.shape(g)[0])
    if bg:
        target = np.shape(z[_batched_key(key)])
        if len(target) > np.ndim(g):
            g = np.reshape(g, np.shape(g)[:1] + (1,) * (len(target) - np.ndim(g)) + np.shape(g)[1:])
    return index_add(z, _batched_key(key), g)


def batch_unbroadcast(g: Any, x: Any, bg: bool, bx: bool) -> Any:
    """``unbroadcast(g, x)`` per example: each example's ``g`` summed to the per-example shape of ``x``
    (its extra leading axes, then the axes where ``x`` has length 1), in ``x``'s dtype. A container's
    cotangent is already shaped like it (as ``unbroadcast``)."""
    if is_tree(g):
        return g if bg else batch_broadcast_items(g, batch_size_of(x))
    if not bg:  # the same for every example
        return batch_broadcast(unbroadcast(g, x[0]), np.shape(x)[0])
    n = np.shape(g)[0]
    xs = np.shape(x)[1:] if bx else np.shape(x)
    lead = tuple(range(1, np.ndim(g) - len(xs)))  # (no rebinding of g: each step its own name)
    g1 = np.sum(g, axis=lead) if lead else g
    gs = np.shape(g1)
    axes = tuple(1 + i for i in range(len(xs)) if xs[i] == 1 and gs[1 + i] != 1)
    g2 = np.sum(g1, axis=axes, keepdims=True) if axes else g1
    return unbroadcast(g2, x if bx else batch_broadcast(x, n))  # (same shapes: x's dtype)


def batch_broadcast_like(t: Any, y: Any, bt: bool, by: bool) -> Any:
    """``broadcast_like(t, y)`` per example (a container's tangent as it is, as ``broadcast_like``)."""
    if is_tree(t):
        return t if bt else batch_broadcast_items(t, batch_size_of(y))
    if not by:
        y = batch_broadcast(y, np.shape(t)[0])
    if not bt:
        t = batch_broadcast(t, np.shape(y)[0])
    return broadcast_like(_lifted(t, np.ndim(y) - 1), y)


def batch_expand_reduced(g: Any, a: Any, axis: Any, keepdims: Any, bg: bool, ba: bool) -> Any:
    """``expand_reduced(g, a, axis, keepdims)`` per example."""
    if not ba:
        a = batch_broadcast(a, np.shape(g)[0])
    if not bg:
        g = batch_broadcast(g, np.shape(a)[0])
    if axis is None and not keepdims:
        return expand_reduced(g, a, batch_axes(a), False)
    return expand_reduced(g, a, batch_axis(axis, a), keepdims)


def batch_full(shape: Any, fill_value: Any, dtype: Any) -> Any:
    """``np.full`` per example for a batched ``fill_value`` (one number per example)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    v = np.asarray(fill_value, dtype=dtype) if dtype is not None else fill_value
    return np.broadcast_to(_lifted(v, len(shape)), np.shape(v)[:1] + shape) + np.zeros(shape, dtype=np.result_type(v))


def batch_tile(a: Any, reps: Any) -> Any:
    """``np.tile`` per example."""
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    r = max(len(reps), np.ndim(a) - 1)
    a = _lifted(a, r)
    return np.tile(a, (1,) + (1,) * (r - len(reps)) + reps)


def batch_linspace(start: Any, stop: Any, num: int, endpoint: bool, dtype: Any) -> Any:
    """``np.linspace`` per example for batched bounds (the new axis after the batch axis)."""
    div = (num - 1) if endpoint else num
    steps = np.arange(num) / max(div, 1)
    start = np.asarray(start)
    stop = np.asarray(stop)
    out = _lifted(start, 1 + np.ndim(stop) - 1)[:, None] + steps.reshape((1, num) + (1,) * (np.ndim(start) - 1)) * \
        (stop - start)[:, None]
    if endpoint and num > 1:
        out = out  # the last point is stop up to rounding, as NumPy
    return out.astype(dtype) if dtype is not None else out


def batch_triangle(m: Any, k: int, lower: bool) -> Any:
    """``np.tril``/``np.triu`` per example (a per-example vector is a row, as NumPy)."""
    if np.ndim(m) == 2:
        m = np.broadcast_to(m[:, None, :], (np.shape(m)[0], np.shape(m)[1], np.shape(m)[1]))
    return np.tril(m, k) if lower else np.triu(m, k)


def batch_diag(v: Any, k: int) -> Any:
    """``np.diag`` per example: a diagonal matrix of each vector, or each matrix's diagonal."""
    if np.ndim(v) == 3:
        return np.diagonal(v, offset=k, axis1=1, axis2=2)
    n = np.shape(v)[1] + abs(k)
    eye = np.eye(n, k=k, dtype=bool)
    idx = np.arange(np.shape(v)[1])
    rows = idx + max(-k, 0)
    cols = idx + max(k, 0)
    out = np.zeros((np.shape(v)[0], n, n), dtype=np.result_type(v))
    out[:, rows, cols] = v
    _ = eye
    return out


def batch_norm(x: Any, ord: Any, axis: Any, keepdims: bool) -> Any:
    """``np.linalg.norm`` per example."""
    if axis is None:
        if ord is None:
            return np.sqrt(np.sum(x * x, axis=batch_axes(x), keepdims=keepdims))
        if np.ndim(x) == 2:
            return np.linalg.norm(x, ord=ord, axis=1, keepdims=keepdims)
        return np.linalg.norm(x, ord=ord, axis=(1, 2), keepdims=keepdims)
    return np.linalg.norm(x, ord=ord, axis=batch_axis(axis, x), keepdims=keepdims)


def batch_hstack(arrays: Any) -> Any:
    """``np.hstack`` per example (batched elements, at least 1-D per example)."""
    return np.concatenate(arrays, axis=1 if np.ndim(arrays[0]) == 2 else 2)


def batch_full_like(a: Any, fill_value: Any, dtype: Any, ba: bool, bf: bool) -> Any:
    """``np.full_like`` per example for a batched ``fill_value``."""
    dt = np.result_type(a) if dtype is None else dtype
    shape = np.shape(a)[1:] if ba else np.shape(a)
    v = np.asarray(fill_value)
    return np.astype(np.broadcast_to(_lifted(v, len(shape)), np.shape(v)[:1] + shape), dt)
