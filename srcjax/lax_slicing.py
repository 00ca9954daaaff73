"""JAX's ``lax`` slicing with start indices that may be data: ``dynamic_slice``, ``dynamic_update_slice``
and their ``_in_dim``/``index_in_dim`` forms.

JAX's semantics, exactly: a negative start counts from the end of its axis (``allow_negative_indices``,
the default), then every start is clamped so that the window fits inside the operand:
``dynamic_slice(x, (7,), (4,))`` of an ``x`` of length 8 starts at 4, not at 7 (plain slicing would give a
shorter result: a silent wrong answer). Sizes are static (shapes are); a start index may be data.

``dynamic_slice`` and ``dynamic_update_slice`` are primitives (``primitives/dynamic_slicing.py``: XLA's
``dynamic_slice``/``dynamic_update_slice``); the functions here are their NumPy references. The rest of
this module is transpiled like the user's own helpers (``frontend/resolve.LIBRARY_MODULES``): the ``_in_dim``
forms, written over the two primitives (``srcjax.source`` shows them imported from ``srcjax.lax``), and the
batched forms ``vmap`` writes (``batch_dynamic_slice``, ``batch_dynamic_update_slice``: with batched start
indices, one gather or scatter of every example's window; imported from ``srcjax.batched``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["batch_dynamic_slice", "batch_dynamic_update_slice", "dynamic_index_in_dim", "dynamic_slice",
           "dynamic_slice_in_dim", "dynamic_update_index_in_dim", "dynamic_update_slice",
           "dynamic_update_slice_in_dim", "window_gather", "window_scatter_add"]

def clamped_start(start: Any, dim: int, size: int, allow_negative: Any) -> Any:
    """Where a window of ``size`` along an axis of length ``dim`` begins, as JAX's: a negative ``start``
    from the end (when ``allow_negative``), then clamped into ``[0, dim - size]``."""
    if allow_negative:
        start = np.where(start < 0, start + dim, start)
    return np.clip(start, 0, dim - size)


def allowed(allow_negative_indices: Any, axis: int) -> Any:
    """``allow_negative_indices`` for ``axis``: one bool for every axis, or a sequence of one per axis."""
    if isinstance(allow_negative_indices, (bool, np.bool_)):
        return allow_negative_indices
    return allow_negative_indices[axis]


def _window(shape: tuple[int, ...], start_indices: Any, sizes: Any, allow_negative_indices: Any) -> tuple[slice, ...]:
    if len(start_indices) != len(shape) or len(sizes) != len(shape):
        raise ValueError(f"dynamic slicing of a rank-{len(shape)} array needs {len(shape)} start indices and sizes, "
                         f"got {len(start_indices)} and {len(sizes)}")
    starts = [int(clamped_start(int(np.asarray(start_indices[k])), shape[k], sizes[k],
                                allowed(allow_negative_indices, k))) for k in range(len(shape))]
    return tuple(slice(s, s + n) for s, n in zip(starts, sizes))


def dynamic_slice(operand: Any, start_indices: Any, slice_sizes: Any, *, allow_negative_indices: Any = True) -> Any:
    """JAX's ``lax.dynamic_slice``: the window of shape ``slice_sizes`` (static) of ``operand`` beginning at
    ``start_indices`` (one integer scalar per axis, or a 1-D integer array; data allowed), each start
    clamped so that the window fits (a negative one first counted from the end of its axis)."""
    x = np.asarray(operand)
    return x[_window(x.shape, start_indices, tuple(slice_sizes), allow_negative_indices)].copy()


def dynamic_update_slice(operand: Any, update: Any, start_indices: Any, *, allow_negative_indices: Any = True) -> Any:
    """JAX's ``lax.dynamic_update_slice``: a copy of ``operand`` whose window of ``update``'s shape beginning
    at ``start_indices`` (clamped as ``dynamic_slice``'s) holds ``update``."""
    out = np.array(operand, copy=True)
    u = np.asarray(update)
    out[_window(out.shape, start_indices, u.shape, allow_negative_indices)] = u
    return out


def window_gather(operand: Any, starts: Any, slice_sizes: Any, allow_negative_indices: Any = True) -> Any:
    """Every example's ``dynamic_slice`` of one shared ``operand``: ``starts`` is a (B, rank) integer array,
    one row of start indices per example; the result is (B, *slice_sizes). A primitive (one XLA gather of
    the windows), which ``vmap`` of ``dynamic_slice`` over start indices writes; its transpose is
    :func:`window_scatter_add`."""
    rows = np.asarray(starts)
    out = np.zeros((rows.shape[0],) + tuple(slice_sizes), dtype=np.asarray(operand).dtype)
    for k in range(rows.shape[0]):
        out[k] = dynamic_slice(operand, tuple(rows[k]), slice_sizes, allow_negative_indices=allow_negative_indices)
    return out


def window_scatter_add(g: Any, starts: Any, shape: Any, allow_negative_indices: Any = True) -> Any:
    """An array of ``shape`` holding the sum of the windows ``g[k]`` (each of ``g``'s shape after its first
    axis) placed at ``starts[k]`` (clamped as ``dynamic_slice``'s): :func:`window_gather`'s transpose."""
    rows, windows = np.asarray(starts), np.asarray(g)
    out = np.zeros(tuple(shape), dtype=windows.dtype)
    for k in range(rows.shape[0]):
        out[_window(out.shape, tuple(rows[k]), windows.shape[1:], allow_negative_indices)] += windows[k]
    return out


# -- JAX's forms along one axis: over the two primitives (transpiled) --------------------------------

def dynamic_slice_in_dim(operand: Any, start_index: Any, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True) -> Any:
    """JAX's ``lax.dynamic_slice_in_dim``: ``dynamic_slice`` along ``axis`` only."""
    along = axis % np.ndim(operand)
    starts = np.where(np.arange(np.ndim(operand)) == along, start_index, 0)  # (one array: data, under vmap too)
    sizes = np.shape(operand)[:along] + (slice_size,) + np.shape(operand)[along + 1:]
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand: Any, index: Any, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True) -> Any:
    """JAX's ``lax.dynamic_index_in_dim``: the slice of size 1 at ``index`` along ``axis`` (the axis dropped
    unless ``keepdims``)."""
    along = axis % np.ndim(operand)
    out = dynamic_slice_in_dim(operand, index, 1, along, allow_negative_indices=allow_negative_indices)
    if keepdims:
        return out
    return np.squeeze(out, axis=along)


def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    """JAX's ``lax.dynamic_update_slice_in_dim``: ``dynamic_update_slice`` at ``start_index`` along ``axis``
    (0 along the others)."""
    along = axis % np.ndim(operand)
    starts = np.where(np.arange(np.ndim(operand)) == along, start_index, 0)
    return dynamic_update_slice(operand, update, starts, allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand: Any, update: Any, index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    """JAX's ``lax.dynamic_update_index_in_dim``: ``update`` (with or without the size-1 ``axis``) written
    at ``index`` along ``axis``."""
    along = axis % np.ndim(operand)
    if np.ndim(update) != np.ndim(operand):
        update = np.expand_dims(update, along)
    return dynamic_update_slice_in_dim(operand, update, index, along, allow_negative_indices=allow_negative_indices)


# -- vmap: the batched forms (transpiled; the batch axis is axis 0 of each batched value) -----------------

def _starts(start_indices: Any, n: int) -> Any:
    """The start indices as a tuple of ``n`` entries: those of a tuple, or the columns of a (batched) array."""
    if isinstance(start_indices, (tuple, list)):
        return tuple(start_indices)
    starts: tuple[Any, ...] = ()
    for k in range(n):
        starts = starts + (start_indices[..., k],)
    return starts


def _with_batch(allow_negative_indices: Any) -> Any:
    """``allow_negative_indices`` for the operand with the batch axis in front."""
    if isinstance(allow_negative_indices, (bool, np.bool_)):
        return allow_negative_indices
    return (True,) + tuple(allow_negative_indices)


def _windows(shape: Any, starts: Any, sizes: Any, allow_negative_indices: Any, size: int, batched: bool) -> Any:
    """The index of every example's window in an operand of ``shape`` (``batched``: its batch axis first,
    indexed by the example's position; else shared by every example): per axis its clamped start (a
    scalar or one per example) plus the offsets; the result has the batch axis first, then the window's."""
    n = len(sizes)
    index: tuple[Any, ...] = (np.reshape(np.arange(size), (size,) + (1,) * n),) if batched else ()
    lead = 1 if batched else 0
    for axis in range(n):
        start = clamped_start(starts[axis], shape[axis + lead], sizes[axis], allowed(allow_negative_indices, axis))
        offsets = np.reshape(np.arange(sizes[axis]), tuple(sizes[axis] if k == axis else 1 for k in range(n)))
        index = index + (np.reshape(start, (-1,) + (1,) * n) + offsets,)
    return index


def batch_dynamic_slice(operand: Any, start_indices: Any, slice_sizes: Any, allow_negative_indices: Any,
                        size: int, operand_batched: bool, starts_batched: bool) -> Any:
    """``dynamic_slice`` of every example: one ``dynamic_slice`` of the batched operand where the start
    indices are the same for every example; otherwise one gather of every example's window."""
    n = len(slice_sizes)
    starts = _starts(start_indices, n)
    if not starts_batched:  # (then the operand is batched)
        return dynamic_slice(operand, (0,) + starts, (size,) + tuple(slice_sizes),
                             allow_negative_indices=_with_batch(allow_negative_indices))
    if not operand_batched:  # (one gather of every example's window, as jax's)
        rows = []
        for s in starts:
            rows.append(np.broadcast_to(s, (size,)))
        return window_gather(operand, np.stack(rows, axis=1), slice_sizes, allow_negative_indices)
    window = _windows(np.shape(operand), starts, tuple(slice_sizes), allow_negative_indices, size, True)
    return operand[window]


def batch_dynamic_update_slice(operand: Any, update: Any, start_indices: Any, allow_negative_indices: Any,
                               size: int, operand_batched: bool, update_batched: bool, starts_batched: bool) -> Any:
    """``dynamic_update_slice`` of every example: one ``dynamic_update_slice`` of the batched operand where
    the start indices are the same for every example; otherwise one scatter into every example's window."""
    if not operand_batched:
        operand = np.broadcast_to(operand, (size,) + np.shape(operand))
    if not update_batched:
        update = np.broadcast_to(update, (size,) + np.shape(update))
    sizes = np.shape(update)[1:]
    starts = _starts(start_indices, len(sizes))
    if not starts_batched:
        return dynamic_update_slice(operand, update, (0,) + starts,
                                    allow_negative_indices=_with_batch(allow_negative_indices))
    out = np.copy(operand)
    out[_windows(np.shape(operand), starts, sizes, allow_negative_indices, size, True)] = update
    return out
