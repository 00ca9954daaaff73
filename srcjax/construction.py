"""NumPy-level helpers of the construction primitives (``primitives/construction.py``): derivative
helpers (re-exported by :mod:`srcjax.adjoint`) and batching helpers (re-exported by
:mod:`srcjax.batched`). Plain NumPy with static control flow on shapes only, like those modules:
they run as they are under NumPy, and srcjax transpiles them like user code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .move_plan import move_back, move_index


def batch_stacked(x: Any) -> Any:
    """A batched value read as one array per example (``np.asarray(xs)``): a (nested) list or tuple of batched
    arrays stacked after the batch axis, level by level, as NumPy stacks one example's list; an array as it is."""
    if not isinstance(x, (list, tuple)):
        return x
    rows = []  # (a loop of appends, which derivatives follow: a jacobian of the vmap differentiates this)
    for r in x:
        rows.append(batch_stacked(r) if isinstance(r, (list, tuple)) else r)
    return np.stack(rows, axis=1)


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
    dtype = np.result_type(x, np.asarray(y)) if kind == "append" else np.result_type(x)  # (y: maybe [1.0, 2.0])
    # (each part cast as it is made: a comprehension over the parts would not be differentiated)
    parts = [(np.reshape(x, (n, -1)) if x_batched else np.broadcast_to(np.ravel(x), (n, np.size(x)))).astype(dtype)]
    if y is not None:
        parts.append((np.reshape(y, (n, -1)) if y_batched else
                      np.broadcast_to(np.ravel(y), (n, np.size(y)))).astype(dtype))
    if kind == "pad":
        parts.append(np.full((n, 1), fill, dtype=dtype))
    flat = np.concatenate(parts, axis=1)
    return np.reshape(np.take(flat, np.ravel(index), axis=1), (n,) + np.shape(index))


def _kron_layout(ea: Any, eb: Any) -> tuple[list[int], list[int], list[int]]:
    """For per-example shapes ``ea`` and ``eb``: a's and b's shapes on interleaved axes (a0, b0, a1, b1, ...),
    and the result's shape."""
    nd = max(len(ea), len(eb))
    sa = (1,) * (nd - len(ea)) + tuple(ea)
    sb = (1,) * (nd - len(eb)) + tuple(eb)
    ia: list[int] = []
    ib: list[int] = []
    out: list[int] = []
    for x, y in zip(sa, sb):
        ia = ia + [x, 1]
        ib = ib + [1, y]
        out = out + [x * y]
    return ia, ib, out


def kron_bar(g: Any, a: Any, b: Any, k: int) -> Any:
    """The cotangent of ``a`` (``k`` 0) or ``b`` in ``np.kron(a, b)``: ``g`` on interleaved axes times the
    other operand, summed over the other operand's axes."""
    ia, ib, _ = _kron_layout(np.shape(a), np.shape(b))
    inter = [x * y for x, y in zip(ia, ib)]
    gi = np.reshape(g, tuple(inter))
    if k == 0:
        r = np.sum(gi * np.reshape(b, tuple(ib)), axis=tuple(range(1, len(inter), 2)))
        return np.reshape(r, np.shape(a))
    r = np.sum(gi * np.reshape(a, tuple(ia)), axis=tuple(range(0, len(inter), 2)))
    return np.reshape(r, np.shape(b))


def batch_kron(a: Any, b: Any, a_batched: bool, b_batched: bool) -> Any:
    """``np.kron`` per example (an unbatched operand broadcasts along the batch)."""
    ea = np.shape(a)[1:] if a_batched else np.shape(a)
    eb = np.shape(b)[1:] if b_batched else np.shape(b)
    ia, ib, out = _kron_layout(ea, eb)
    n = np.shape(a)[0] if a_batched else np.shape(b)[0]
    xa = np.reshape(a, ((n,) if a_batched else (1,)) + tuple(ia))
    xb = np.reshape(b, ((n,) if b_batched else (1,)) + tuple(ib))
    return np.reshape(xa * xb, (n,) + tuple(out))


def _three(v: Any) -> Any:
    """Vectors (last axis) of 2 or 3 components as 3 (a zero third component)."""
    if np.shape(v)[-1] == 3:
        return v
    return np.concatenate([v, np.zeros_like(v[..., :1])], axis=-1)


def cross_bar(g: Any, a: Any, b: Any, k: int, axisa: Any, axisb: Any, axisc: Any, axis: Any) -> Any:
    """The cotangent of ``a`` (``k`` 0: ``b x g``) or ``b`` (``g x a``) in ``np.cross``, on 3-vectors, cut
    to the operand's components and put back on its axis (broadcast axes summed by the caller)."""
    if axis is not None:
        axisa, axisb, axisc = axis, axis, axis
    am = np.moveaxis(a, axisa, -1)
    bm = np.moveaxis(b, axisb, -1)
    if np.shape(am)[-1] == 2 and np.shape(bm)[-1] == 2:
        g3 = np.stack([np.zeros_like(g), np.zeros_like(g), g], axis=-1)
    else:
        g3 = np.moveaxis(g, axisc, -1)
    x = a if k == 0 else b
    n = np.shape(am if k == 0 else bm)[-1]
    r = np.cross(_three(bm), g3) if k == 0 else np.cross(g3, _three(am))
    ax = (axisa if k == 0 else axisb) % np.ndim(x)
    return np.moveaxis(r[..., :n], -1, ax - np.ndim(x))


def batch_cross(a: Any, b: Any, a_batched: bool, b_batched: bool, axisa: Any, axisb: Any, axisc: Any,
                axis: Any) -> Any:
    """``np.cross`` per example: the vector axes moved last, the batched operands' leading axes aligned."""
    if axis is not None:
        axisa, axisb, axisc = axis, axis, axis
    na = np.ndim(a) - (1 if a_batched else 0)
    nb = np.ndim(b) - (1 if b_batched else 0)
    am = np.moveaxis(a, axisa % na + (1 if a_batched else 0), -1)
    bm = np.moveaxis(b, axisb % nb + (1 if b_batched else 0), -1)
    lead = max(na, nb) - 1
    if a_batched:
        am = np.reshape(am, np.shape(am)[:1] + (1,) * (lead - na + 1) + np.shape(am)[1:])
    if b_batched:
        bm = np.reshape(bm, np.shape(bm)[:1] + (1,) * (lead - nb + 1) + np.shape(bm)[1:])
    r = np.cross(am, bm)
    if np.shape(am)[-1] == 2 and np.shape(bm)[-1] == 2:
        return r
    return np.moveaxis(r, -1, axisc % (lead + 1) + 1)


def mesh_piece(x: Any, sizes: Any, k: int, sparse: Any, indexing: Any, batch: Any) -> Any:
    """Result ``k`` of ``np.meshgrid`` of operands of ``sizes`` for its operand ``x`` (``batch``: the batch
    size of a batched ``x``, whose first axis it is; else None)."""
    n = len(sizes)
    dims = list(range(n))
    if indexing == "xy" and n >= 2:
        dims = [1, 0] + dims[2:]
    full = tuple([sizes[dims[j]] for j in range(n)])
    own = tuple([sizes[k] if j == dims[k] else 1 for j in range(n)])
    lead = () if batch is None else (batch,)
    v = np.reshape(x, lead + own)
    return v if sparse else np.broadcast_to(v, lead + full)


def meshgrid_dots(tangents: Any, sparse: Any, indexing: Any) -> Any:
    """The tangents of ``np.meshgrid(*xi)``: each tangent placed as its operand is."""
    sizes = [np.size(t) for t in tangents]
    pieces = []
    for k in range(len(tangents)):
        pieces.append(mesh_piece(tangents[k], sizes, k, sparse, indexing, None))
    return tuple(pieces)


def meshgrid_bars(g: Any, xi: Any, indexing: Any) -> Any:
    """The cotangents of ``np.meshgrid(*xi)``'s operands: each result's cotangent summed over every axis but
    the one its operand runs along."""
    n = len(xi)
    dims = list(range(n))
    if indexing == "xy" and n >= 2:
        dims = [1, 0] + dims[2:]
    pieces = []
    for k in range(n):
        axes = tuple([j for j in range(n) if j != dims[k]])
        pieces.append(np.reshape(np.sum(g[k], axis=axes), np.shape(xi[k])))
    return tuple(pieces)


def batch_meshgrid(xi: Any, batched: Any, sparse: Any, indexing: Any, size: int) -> Any:
    """``np.meshgrid`` per example: every result batched (an unbatched operand's repeated)."""
    sizes = [np.size(x) // size if b else np.size(x) for x, b in zip(xi, batched)]
    pieces = []
    for k in range(len(xi)):
        x = xi[k] if batched[k] else np.broadcast_to(xi[k], (size,) + np.shape(xi[k]))
        pieces.append(mesh_piece(x, sizes, k, sparse, indexing, size))
    return tuple(pieces)


def linspace_bar(g: Any, num: int, endpoint: bool, axis: int, to_start: bool) -> Any:
    """Cotangent of ``start`` (``to_start``) or ``stop`` in ``np.linspace(start, stop, num, endpoint, axis=axis)``:
    ``g`` summed along the samples' axis, weighted by the derivative of each sample, ``linspace(1, 0)`` for
    ``start``, ``linspace(0, 1)`` for ``stop`` (the result is linear in the two together), in ``g``'s dtype."""
    w = np.linspace(1.0 if to_start else 0.0, 0.0 if to_start else 1.0, num, endpoint, dtype=np.result_type(g))
    ax = axis % np.ndim(g)
    return np.sum(g * np.reshape(w, (num,) + (1,) * (np.ndim(g) - ax - 1)), axis=ax)


__all__ = ["mesh_piece", "meshgrid_dots", "meshgrid_bars", "batch_meshgrid", "diagonal_bar", "batch_array", "move_bar",
           "batch_move", "kron_bar", "batch_kron", "cross_bar", "batch_cross", "linspace_bar"]
