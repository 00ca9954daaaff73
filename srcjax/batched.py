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

from .adjoint import (
    UNSET,
    broadcast_like,
    expand_reduced,
    first_of,
    has_derivative,
    index_add,
    index_cleared,
    index_lands,
    pack_like,
    unbroadcast,
    zeros_like,
)
from .batch_keys import batch_keys  # noqa: F401  (generated batched code imports it)

# (_lifted private, one definition: the products and the aligns lift alike; generated code imports the rest from here)
from .batch_products import (  # noqa: F401
    _lifted,
    batch_dot,
    batch_inner,
    batch_lstsq,
    batch_matmul,
    batch_multi_dot,
    batch_outer,
    batch_solve,
    batch_tensordot,
)
from .batch_sums import (  # noqa: F401  (generated batched code imports them from here)
    batch_broadcast,
    batch_broadcast_items,
    batch_broadcast_like_bar,
    batch_broadcast_parts,
    batch_broadcast_parts_bar,
    batch_expand_reduced_bar,
    batch_merge,
    batch_merge_bar,
    batch_split,
    batch_summed_items,
    batch_unbroadcast_bar,
)
from .collective_trees import batch_ppermute  # noqa: F401  (generated batched code imports it)
from .construction import batch_array, batch_cross, batch_kron, batch_meshgrid, batch_move, batch_stacked  # noqa: F401
from .conv_adjoint import batch_conv, batch_reduce_window  # noqa: F401  (generated batched code imports them)
from .core import index_params, linear_params
from .lax import index_update
from .lax_slicing import batch_dynamic_slice, batch_dynamic_update_slice  # noqa: F401  (batched code imports them)
from .lax_stop import stop_gradient as _stop_gradient  # (private: a generated temporary may be named stop_gradient)
from .order_stats import (  # noqa: F401  (generated batched code imports them from here)
    batch_argpartition,
    batch_argsort,
    batch_builtin_max,
    batch_partition,
    batch_percentile,
    batch_quantile,
    batch_searchsorted,
    batch_sort,
)
from .pytree import is_tree, item_key, item_keys, tree_get, tree_set

__all__ = [  # what generated batched source imports (transforms/batch.py)
    "batch_align", "batch_align_b", "batch_align_at", "batch_axes_at", "batch_axis_at", "batch_squeeze_at",
    "batch_broadcast", "batch_broadcast_items", "batch_tree_add",
    "batch_moveaxis_items", "batch_axis", "batch_axes", "batch_select", "batch_select_items", "batch_choose",
    "batch_reshape", "batch_transpose", "batch_moveaxis", "batch_size_of", "batch_rows", "batch_size_of_any",
    "batch_matmul", "batch_dot", "batch_inner", "batch_outer", "batch_tensordot", "batch_take", "batch_take_along_axis",
    "batch_getitem", "batch_index_update", "batch_index_cleared", "batch_index_add", "batch_winning_writes",
    "batch_index_lands",
    "batch_squeeze", "batch_dynamic_slice", "batch_dynamic_update_slice", "batch_broadcast_to", "batch_atleast",
    "batch_flat_axis", "batch_where_any", "batch_unbroadcast", "batch_broadcast_like", "batch_expand_reduced",
    "batch_full", "batch_tile", "batch_out", "batch_triangle", "batch_diag", "batch_norm", "batch_hstack",
    "batch_vstack", "batch_full_like", "batch_like", "batch_ravel", "batch_concatenate_flat", "batch_index",
    "batch_argmax", "batch_argmin", "batch_cumsum", "batch_cumprod", "batch_repeat", "batch_roll", "batch_len",
    "batch_shape", "batch_stacked", "batch_items", "batch_solve", "batch_multi_dot", "batch_lstsq", "tree_set",
    "batch_sort", "batch_argsort", "batch_partition", "batch_argpartition", "batch_quantile", "batch_percentile",
    "batch_searchsorted", "batch_array", "batch_move", "batch_kron", "batch_cross", "batch_meshgrid", "batch_conv",
    "batch_reduce_window", "batch_ppermute", "batch_pack_like", "batch_broadcast_parts", "batch_unpacked",
    "batch_merge", "batch_split", "batch_static", "batch_keys", "batch_summed_items", "batch_index_add_bar",
    "batch_unbroadcast_bar", "batch_broadcast_like_bar", "batch_expand_reduced_bar", "batch_merge_bar",
    "batch_broadcast_parts_bar", "batch_index_bar", "batch_index_update_bar", "batch_builtin_max",
]


@linear_params("x", shape=("y",))
def batch_align(x: Any, y: Any) -> Any:
    """The batched ``x`` with at least as many per-example axes as the unbatched ``y`` has axes
    (new axes of length 1 after the batch axis), so that it broadcasts against ``y`` per example."""
    k = np.ndim(y) - (np.ndim(x) - 1)  # (written out, not through _lifted: one call level for AD)
    return np.reshape(x, np.shape(x)[:1] + (1,) * k + np.shape(x)[1:]) if k > 0 else x


@linear_params("x", shape=("y",))
def batch_align_b(x: Any, y: Any) -> Any:
    """The batched ``x`` with at least as many per-example axes as the batched ``y``."""
    k = np.ndim(y) - np.ndim(x)
    return np.reshape(x, np.shape(x)[:1] + (1,) * k + np.shape(x)[1:]) if k > 0 else x


@linear_params("x", shape=("y",))
def batch_align_at(x: Any, y: Any, lead_x: int, lead_y: int) -> Any:
    """:func:`batch_align` (``lead_x``, ``lead_y``: 0, 0) and :func:`batch_align_b` (0, 1) where outer vmaps put
    ``lead_x`` batch axes in front of ``x``'s own and ``lead_y`` in front of ``y``'s per-example axes: a vmap of
    batched source calls it again with one more (transforms/batch_leading.py). (A helper of its own, not defaults
    of theirs: the lowering binds a default again at every call of theirs.)"""
    k = (np.ndim(y) - lead_y) - (np.ndim(x) - lead_x - 1)
    return np.reshape(x, np.shape(x)[:lead_x + 1] + (1,) * k + np.shape(x)[lead_x + 1:]) if k > 0 else x


def batch_tree_add(a: Any, b: Any) -> Any:
    """``tree_add`` of two batched cotangents (batch axis first) whose leaves may have different numbers of
    per-example axes (one broadcast against the other per example, as ``a + b`` of one example does)."""
    if a is None or b is None:
        return b if a is None else a
    if is_tree(a):
        out = a
        for k in item_keys(a):
            out = index_update(out, k, batch_tree_add(tree_get(a, k), tree_get(b, k)))
        return out
    return batch_align_b(a, b) + batch_align_b(b, a)


def batch_pack_like(x: Any, items: Any, bx: bool, n: int) -> Any:
    """``pack_like(x, items)`` per example (``a, b = x`` differentiated under ``vmap``): a container's items as they
    are; an array's rows stacked after the batch axis (a row's cotangent not batched repeated along it; ``bx``)."""
    if is_tree(x):
        return pack_like(x, items)
    return _batch_rows_stacked(items, np.ndim(x) - (2 if bx else 1), n)


def _batch_rows_stacked(items: Any, row_ndim: int, n: int) -> Any:
    """The batched array whose rows (``row_ndim`` axes each per example) are ``items`` (nested for rows of rows),
    each batched or not (told by its number of axes)."""
    rows = []
    for i in range(len(items)):
        item = items[i]
        if isinstance(item, (tuple, list)):
            rows.append(_batch_rows_stacked(item, row_ndim - 1, n))
        elif np.ndim(item) == row_ndim:
            rows.append(np.broadcast_to(item, (n,) + np.shape(item)))
        else:
            rows.append(item)
    return np.stack(rows, axis=1)


def batch_items(xs: Any) -> Any:
    """The elements of a list of batched values, each one array with the batch axis first: a list or tuple element
    (``items.append((v, 3 * v))``) stacked after the batch axis (``batch_stacked``), as NumPy makes each element
    of one example's list an array before joining them."""
    rows = []
    for r in xs:
        rows.append(batch_stacked(r))
    return rows


def batch_moveaxis_items(x: Any, source: int, destination: int) -> Any:
    """``np.moveaxis`` of every array in a list or tuple (``np.split``'s result)."""
    if isinstance(x, (tuple, list)):
        items = []
        for v in x:
            items.append(batch_moveaxis_items(v, source, destination))
        return tuple(items) if isinstance(x, tuple) else items
    return np.moveaxis(x, source, destination)


def batch_len(x: Any) -> int:
    """``len`` of one example of ``x``: a list or tuple of batched values keeps its length; a batched array's first
    per-example axis."""
    if is_tree(x):
        return len(x)
    return np.shape(x)[1]


def batch_shape(x: Any) -> Any:
    """``np.shape`` of one example of ``x`` (a list of batched arrays: its length, then an element's).
    (A loop, not recursion: reverse mode reaches it inside ``if``s on data, vmap of vmap of a ``while``.)"""
    lead: tuple[int, ...] = ()
    while is_tree(x) and len(x):
        lead, x = lead + (len(x),), x[0]
    return lead + ((0,) if is_tree(x) else np.shape(x)[1:])


def batch_size_of(x: Any, axis: int = 0) -> Any:
    """The batch size of a batched value: its first leaf's leading axis (``axis``: another, the inner batch axis of a
    value batched twice, transforms/batch_nested.py); None for ``UNSET`` or ``None``
    (a derivative's value not bound yet, which a batched helper passes on as it is), and for an empty container
    or one whose leaves are all None (no leaf tells it: an empty tape saved, integer leaves' cotangents)."""
    if x is UNSET or x is None:
        return None
    while is_tree(x):  # (a dataclass or registered class: its first field)
        keys = item_keys(x)
        k = 0
        while k < len(keys) - 1 and (tree_get(x, keys[k]) is None or tree_get(x, keys[k]) is UNSET):
            k = k + 1  # (an integer leaf's cotangent: None; a tape's value not computed on this path: UNSET)
        x = tree_get(x, keys[k]) if keys else None
    return None if x is None or x is UNSET else np.shape(x)[axis]


def batch_size_of_any(xs: Any) -> int:
    """The batch size from the first of a tuple of batched leaves that is an array (a tape's zero tangent
    of a value not computed on a path is ``UNSET``)."""
    for x in xs[:-1]:
        if np.ndim(x) > 0:
            return np.shape(x)[0]
    return np.shape(xs[-1])[0]


def batch_moveaxis(x: Any, source: int, destination: int) -> Any:
    """``np.moveaxis`` of a batched array: where its batch axis is (of every leaf of a container whose
    state is one flag: a derivative by a dict, list or NamedTuple argument, out_axes=-1)."""
    if is_tree(x):
        out = x
        for k in item_keys(x):
            out = index_update(out, k, batch_moveaxis(tree_get(x, k), source, destination))
        return out
    return np.moveaxis(x, source, destination)


def batch_out(x: Any, axis: int, n: int, batched: bool) -> Any:
    """An output (or every leaf of it) with its batch axis at ``axis`` (unbatched: broadcast first)."""
    if not batched:
        x = batch_broadcast_items(x, n)
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


def batch_axes_at(x: Any, lead: int) -> tuple[int, ...]:
    """:func:`batch_axes` of ``x`` after ``lead`` batch axes of outer vmaps (transforms/batch_leading.py)."""
    return tuple(range(1, np.ndim(x) - lead))


def batch_axis_at(axis: Any, x: Any, lead: int) -> Any:
    """:func:`batch_axis` of ``x`` after ``lead`` batch axes of outer vmaps (transforms/batch_leading.py): axes
    of one outer example's value."""
    if axis is None:
        return tuple(range(1, np.ndim(x) - lead))
    return batch_axis(axis, x)


def batch_flat_axis(x: Any) -> Any:
    """The batched ``x`` with its per-example axes flattened into one (``axis=None`` calls that
    flatten: ``argmax``, ``take``, ``repeat``, ``roll``)."""
    return np.reshape(x, (np.shape(x)[0], -1))


def batch_concatenate_flat(arrays: Any, dtype: Any) -> Any:
    """``np.concatenate(arrays, axis=None)`` per example, for a list of batched arrays."""
    return np.concatenate([batch_flat_axis(a) for a in arrays], axis=1, dtype=dtype)


def batch_argmax(a: Any, axis: Any, keepdims: bool) -> Any:
    """``np.argmax`` per example (``axis=None``: the index into each flattened example)."""
    if axis is None:
        out = np.argmax(batch_flat_axis(a), axis=1)
        return np.reshape(out, (np.shape(a)[0],) + (1,) * (np.ndim(a) - 1)) if keepdims else out
    return np.argmax(a, axis=batch_axis(axis, a), keepdims=keepdims)


def batch_argmin(a: Any, axis: Any, keepdims: bool) -> Any:
    """``np.argmin`` per example (``axis=None``: the index into each flattened example)."""
    if axis is None:
        out = np.argmin(batch_flat_axis(a), axis=1)
        return np.reshape(out, (np.shape(a)[0],) + (1,) * (np.ndim(a) - 1)) if keepdims else out
    return np.argmin(a, axis=batch_axis(axis, a), keepdims=keepdims)


def batch_cumsum(a: Any, axis: Any, dtype: Any) -> Any:
    """``np.cumsum`` per example (``axis=None``: along each flattened example)."""
    if axis is None:
        return np.cumsum(batch_flat_axis(a), axis=1, dtype=dtype)
    return np.cumsum(a, axis=batch_axis(axis, a), dtype=dtype)


def batch_cumprod(a: Any, axis: Any, dtype: Any) -> Any:
    """``np.cumprod`` per example (``axis=None``: along each flattened example)."""
    if axis is None:
        return np.cumprod(batch_flat_axis(a), axis=1, dtype=dtype)
    return np.cumprod(a, axis=batch_axis(axis, a), dtype=dtype)


def batch_repeat(a: Any, repeats: Any, axis: Any) -> Any:
    """``np.repeat`` per example (``axis=None``: each flattened example)."""
    if axis is None:
        return np.repeat(batch_flat_axis(a), repeats, axis=1)
    return np.repeat(a, repeats, axis=batch_axis(axis, a))


def batch_roll(a: Any, shift: Any, axis: Any) -> Any:
    """``np.roll`` per example (``axis=None``: each example rolled flat, then reshaped back)."""
    if axis is None:
        return np.reshape(np.roll(batch_flat_axis(a), shift, axis=1), np.shape(a))
    return np.roll(a, shift, axis=batch_axis(axis, a))


def batch_select(c: Any, a: Any, b: Any) -> Any:
    """Per example, ``a`` where the batched condition ``c`` holds, else ``b`` (``UNSET``: only one branch binds it)."""
    c = np.reshape(c, np.shape(c)[:1]) if np.ndim(c) > 1 else c  # (a user's test on a vector: example_errors.py)
    if a is UNSET:
        return b
    if b is UNSET:
        return a
    if (a is None) != (b is None):  # (`return None` on one path of an `if` on data, a value on the other)
        raise TypeError("the branches give different structures: a value and None")
    k = max(np.ndim(a), np.ndim(b)) - np.ndim(c)
    c2 = np.reshape(c, np.shape(c)[:1] + (1,) * k + np.shape(c)[1:]) if k > 0 else c
    if has_derivative(a) or has_derivative(b):
        return np.where(c2, a, b)
    # a flag or a counter (a batched while's carry): no derivative reads its cotangent (None); a Python
    # number per example (a counter `n = 0`, repeated weakly by batch_broadcast) stays weak, as np.where of
    # two weak operands does, so `x32 * n` stays float32 (bitwise functions made it strong: float64)
    return np.where(c2, _stop_gradient(a), _stop_gradient(b))


def batch_select_items(c: Any, a: Any, b: Any) -> Any:
    """:func:`batch_select` of values that may be containers (a cotangent of a dict of parameters):
    leaf by leaf (its own function: reverse mode writes ``batch_select`` out in branches on data). None (the
    cotangent of an integer leaf, ``pack_like``'s) is a zero beside an array, None beside None."""
    if a is None or b is None:
        return None if a is None and b is None else batch_select(c, zeros_like(b) if a is None else a,
                                                                 zeros_like(a) if b is None else b)
    if not is_tree(a) or b is UNSET:
        return batch_select(c, a, b)
    out = a
    for k in item_keys(a):
        out = index_update(out, k, batch_select_items(c, tree_get(a, k), tree_get(b, k)))
    return out


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


@linear_params("a")
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


def batch_ravel(a: Any, order: str) -> Any:
    """``np.ravel`` of every example; ``order="F"`` reads each example's axes in reverse."""
    if order == "F":
        a = batch_transpose(a, None)
    return batch_flat_axis(a)


def batch_rows(a: Any) -> Any:
    """The batched ``a`` with its first per-example axis first: what ``for row in a`` iterates over
    (a container of batched values: itself)."""
    if is_tree(a):
        return a
    return np.moveaxis(a, 1, 0)


def batch_static(c: Any) -> Any:
    """The test of an ``if`` or ``while`` that is static per example but that vmap broadcast (a flag a
    derivative saved on a tape of batched values): every row is the same value; its first."""
    return c if np.ndim(c) == 0 else np.ravel(c)[0]


def batch_unpacked(a: Any, spec: Any) -> Any:
    """The batched array ``a`` unpacked as a nested target whose structure is ``spec`` (a tuple per
    level, None for a name): rows of rows, each with the batch axis first (a container: itself)."""
    if spec is None or is_tree(a):
        return a
    rows = np.moveaxis(a, 1, 0)
    out = []
    for i in range(len(spec)):
        out.append(batch_unpacked(rows[i], spec[i]))
    return tuple(out)


def batch_squeeze(a: Any, axis: Any) -> Any:
    """``np.squeeze`` of every example (``axis=None``: the per-example axes of length 1)."""
    if axis is None:
        shape = np.shape(a)
        axis = tuple(i for i in range(1, len(shape)) if shape[i] == 1)
        return np.squeeze(a, axis=axis)
    return np.squeeze(a, axis=batch_axis(axis, a))


def batch_squeeze_at(a: Any, axis: Any, lead: int) -> Any:
    """:func:`batch_squeeze` of ``a`` after ``lead`` batch axes of outer vmaps (transforms/batch_leading.py)."""
    shape = np.shape(a)
    if axis is None:
        return np.squeeze(a, axis=tuple(i for i in range(lead + 1, len(shape)) if shape[i] == 1))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    return np.squeeze(a, axis=tuple(k + lead + 1 if k >= 0 else k for k in axes))


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


@linear_params("a")
def batch_take(a: Any, indices: Any, axis: Any, ba: bool, bi: bool) -> Any:
    """``np.take`` per example: ``a[:, ..., :, indices]`` with ``indices`` at ``axis`` (``axis=None``: of each
    flattened example), one gather (:func:`batch_index`) whichever operands are batched."""
    if axis is None:
        a = batch_flat_axis(a) if ba else np.ravel(a)
        axis = 0
    axis = axis % (np.ndim(a) - 1 if ba else np.ndim(a))
    return batch_index(a, (slice(None),) * axis + (indices,), ba, (False,) * axis + (bi,))


@linear_params("arr")
def batch_take_along_axis(arr: Any, indices: Any, axis: Any, ba: bool, bi: bool) -> Any:
    """``np.take_along_axis`` per example."""
    if not ba:
        arr = batch_broadcast(arr, np.shape(indices)[0])
    if not bi:
        indices = batch_broadcast(indices, np.shape(arr)[0])
    if axis is None:
        arr, indices, axis = batch_flat_axis(arr), batch_flat_axis(indices), 0
    axis = axis + 1 if axis >= 0 else axis
    if bi:  # (clamped, as batch_index's: _in_range)
        indices = _in_range(indices, np.shape(arr)[axis])
    return np.take_along_axis(arr, indices, axis=axis)


def _is_array_index(e: Any) -> bool:
    """Whether a key element is an integer array (not an integer, slice, None or ``...``)."""
    return e is not None and e is not Ellipsis and not isinstance(e, slice) and np.ndim(e) > 0


def _contiguous(positions: list[int]) -> bool:
    """Whether key positions are side by side (NumPy then keeps advanced-index axes in place)."""
    return positions == list(range(positions[0], positions[0] + len(positions)))


def _index_plan(shape: Any, key: Any, bx: bool, flags: Any, read: bool) -> tuple[tuple[int, ...], tuple[Any, ...],
                                                                     tuple[int, ...], tuple[int, ...]]:
    """How to index ``x`` (of shape ``shape``) with ``key`` per example in one NumPy indexing: ``(new, key2, source,
    destination)`` such that ``np.moveaxis(np.expand_dims(x, new)[key2], source, destination)`` is ``x[key]`` of
    every example, batch axis first (``new`` may be empty).

    ``x`` is batched or not (``bx``); ``flags`` (None: none) says which key elements are batched: an integer or
    integer array per example, batch axis first. NumPy's placement rule holds per example: the axes of advanced
    indices (integer arrays, and integers beside them) side by side stay in place, those of separated ones go
    first. A batched ``x`` with batched indices gets ``np.arange`` over the batch as one more advanced index in
    front; ``None`` beside integer arrays becomes a new axis of ``x`` and a full slice, ``...`` full slices.
    Batched indices are clamped (:func:`_in_range`) as a read's (``read``) or a write's.

    Every parameter is an index or a static value, never ``x`` itself: derivatives take the plan as a constant
    (:func:`srcjax.core.index_params`) and differentiate only the indexing of ``x``."""
    key = key if isinstance(key, tuple) else (key,)
    flags = (False,) * len(key) if flags is None else tuple(flags) if isinstance(flags, (tuple, list)) else (flags,)
    if len(key) == 1 and flags == (True,) and isinstance(key[0], tuple):  # a tuple key batched as a whole (built
        key, flags = key[0], (True,) * len(key[0])  # in a loop): its items, each batched
    batched = any(flags)
    if not any(_is_array_index(e) for e in key) and not batched:  # basic indexing: the batch axis stays whole
        return (), (slice(None),) + key, (), ()
    rank = len(shape) - 1 if bx else len(shape)
    used = len([e for e in key if e is not None and e is not Ellipsis])
    full: tuple[Any, ...] = ()
    fflags: tuple[bool, ...] = ()
    for e, f in zip(key, flags):
        if e is Ellipsis:
            full = full + (slice(None),) * (rank - used)
            fflags = fflags + (False,) * (rank - used)
        else:
            full = full + (e,)
            fflags = fflags + (f,)
    nones = tuple(j for j, e in enumerate(full) if e is None)
    new = tuple(j + 1 for j in nones) if bx else nones
    if nones:
        full = tuple(slice(None) if e is None else e for e in full)
    adv = [j for j, e in enumerate(full) if not isinstance(e, slice)]
    r = max([np.ndim(full[j]) - 1 if fflags[j] else np.ndim(full[j]) for j in adv])
    first = adv[0]
    together = _contiguous(adv)
    if not batched:  # x[:, key]: separated advanced axes come before the batch axis
        return (new, (slice(None),) + full, (), ()) if together else (new, (slice(None),) + full, (r,), (0,))
    dims = list(shape[1:] if bx else shape)
    for j in nones:
        dims.insert(j, 1)
    lifted = tuple(_lifted(_in_range(e, dims[j]) if read else e, r) if f else e
                   for j, (e, f) in enumerate(zip(full, fflags)))
    if not bx:  # the batched indices bring the batch axis: in front, or in place after `first` axes
        return (new, lifted, (first,), (0,)) if together and first > 0 else (new, lifted, (), ())
    n = shape[0]
    key2 = (np.reshape(np.arange(n), (n,) + (1,) * r),) + lifted
    if together and first > 0:  # (n, S, before, after) -> (n, before, S, after)
        return new, key2, tuple(range(1, 1 + r)), tuple(range(1 + first, 1 + first + r))
    return new, key2, (), ()


def _in_range(index: Any, dim: int) -> Any:
    """A batched index of a read clamped into ``[-dim, dim - 1]``, as the un-batched program's dynamic index is
    (XLA's gather clamps); a write's is left as it is: out of range, it is dropped, a number or an index array's
    entry per example (srcjax/index_writes.py; a number's was clamped, as ``dynamic_update_slice`` clamped it). An
    example the batched program masks (one done with a ``while`` on batched data, one on the other side of an
    ``if``) still computes its indices, which may be out of range where its own program never reads with them:
    NumPy running the generated source must not raise there (a write there is dropped). A boolean mask is left as
    it is (clipped it read as indices 0 and 1, a silent wrong answer): its use is refused, as the un-batched
    program's."""
    if index.dtype == bool:  # (a batched index: an array)
        return index
    return np.clip(index, -dim, dim - 1)


def _indexed(x: Any, new: tuple[int, ...], key2: Any, source: tuple[int, ...], destination: tuple[int, ...]) -> Any:
    """``x`` indexed by a plan of :func:`_index_plan`."""
    x2 = np.expand_dims(x, new) if new else x
    return _moved(x2[key2], source, destination)


def _moved(x: Any, source: tuple[int, ...], destination: tuple[int, ...]) -> Any:
    """``np.moveaxis`` when there is something to move."""
    return np.moveaxis(x, source, destination) if source else x


@linear_params("x")
def batch_getitem(x: Any, key: Any) -> Any:
    """``x[key]`` per example for a batched ``x`` and an unbatched key (integers, slices, None, ``...``,
    integer arrays): see :func:`_index_plan`; an element of a container of batched values (a record's field)."""
    if is_tree(x):  # (a list's item at a rolled loop's traced index: ``x[key]``, which the specializer reads)
        return tree_get(x, key) if isinstance(key, str) else x[key]
    new, key2, source, destination = _index_plan(np.shape(x), key, True, None, True)
    return _indexed(x, new, key2, source, destination)


@linear_params("x")
def batch_index(x: Any, key: Any, bx: bool, flags: Any) -> Any:
    """``x[key]`` per example where the key elements ``flags`` marks are batched (an integer or integer
    array per example), ``x`` batched or not (``bx``): one gather (:func:`_index_plan`); a container's item
    (``params[k]`` in ``for k in params`` over a mapped dict)."""
    if is_tree(x) and len(key) == 1:
        return tree_get(x, key[0])
    new, key2, source, destination = _index_plan(np.shape(x), key, bx, flags, True)
    return _indexed(x, new, key2, source, destination)


def _scattered(x: Any, key: Any, value: Any, n: int, bx: bool, bv: bool, flags: Any) -> tuple[Any, Any, Any]:
    """``(x2, key2, value2)``: a per-example ``x[key] = value`` as one scatter of ``value2`` into
    ``x2[key2]`` (``x`` batched, with the new axes of :func:`_index_plan`)."""
    xb = x if bx else batch_broadcast(x, n)
    new, key2, source, destination = _index_plan(np.shape(xb), key, True, flags, False)
    x2 = np.expand_dims(xb, new) if new else xb
    probe = tuple(k if k is None or k is Ellipsis or isinstance(k, slice) or np.asarray(k).dtype == np.bool_
                  else np.zeros_like(k, dtype=np.intp) for k in key2)  # (integers: `()` and `[]` are NumPy's
    # empty integer arrays, np.zeros_like of them floats)
    rank = len(np.shape(_moved(x2[probe], source, destination))) - 1  # the per-example target's rank (its indices
    # as zeros: one out of range is a write dropped, which NumPy's read would raise at)
    if bv:
        value = _lifted(value, rank)
    elif source:
        value = np.reshape(value, (1,) * (rank + 1 - np.ndim(value)) + np.shape(value))
    return x2, key2, _moved(value, destination, source)


@linear_params("x", "value")
def batch_index_update(x: Any, key: Any, value: Any, n: int, bx: bool, bv: bool, flags: Any) -> Any:
    """``index_update(x, key, value)`` (a functional ``x[key] = value``) per example: one scatter. ``n``: the
    batch size; ``flags`` as for :func:`batch_index` (None: an unbatched key). A container ``x``: item by item."""
    if is_tree(x):
        return index_update(x if bx else batch_broadcast_items(x, n), item_key(key, flags),
                            value if bv else batch_broadcast_items(value, n))  # (leaf by leaf)
    x2, key2, value2 = _scattered(x, key, value, n, bx, bv, flags)
    return np.reshape(index_update(x2, key2, value2), (n,) + (np.shape(x)[1:] if bx else np.shape(x)))


@linear_params("g", shape=("x",))
def batch_index_cleared(g: Any, key: Any, x: Any, n: int, bg: bool, bx: bool, flags: Any) -> Any:
    """``index_cleared(g, x, key)`` (``index_update``'s cotangent for ``x``) per example."""
    if is_tree(g):
        return index_cleared(g if bg else batch_broadcast_items(g, n), x if bx else batch_broadcast_items(x, n),
                             item_key(key, flags))
    return batch_index_update(g, key, 0.0, n, bg, False, flags)


def batch_winning_writes(x: Any, key: Any, n: int, bx: bool, flags: Any) -> Any:
    """``winning_writes(x, key)`` per example (the writes of ``x[key] = v`` that land): the ids of the
    writes scattered by the same per-example assignment, read back and compared."""
    if is_tree(x):
        return True
    slots = np.zeros((n,) + (np.shape(x)[1:] if bx else np.shape(x)), dtype=np.int32)
    selection = np.shape(batch_index(slots, key, True, flags))
    ids = np.reshape(np.arange(int(np.prod(selection)), dtype=np.int32), selection)
    landed = batch_index_update(slots - 1, key, ids, n, True, True, flags)
    return batch_index(landed, key, True, flags) == ids


@linear_params("z", "g")
def batch_index_add(z: Any, key: Any, g: Any, n: int, bz: bool, bg: bool, flags: Any, mode: str = "drop") -> Any:
    """``index_add(z, key, g, mode)`` (``z[key] += g``, repeated indices accumulating) per example: one scatter-add.
    ``n``: the batch size; ``flags`` as for :func:`batch_index`. A container ``z`` (a cotangent): item by item."""
    if is_tree(z):
        return index_add(z if bz else batch_broadcast_items(z, n), item_key(key, flags),
                         g if bg else batch_broadcast_items(g, n))
    z2, key2, g2 = _scattered(z, key, g, n, bz, bg, flags)
    return np.reshape(index_add(z2, key2, g2, mode), (n,) + (np.shape(z)[1:] if bz else np.shape(z)))


def batch_index_lands(x: Any, key: Any, n: int, bx: bool, flags: Any) -> Any:
    """``index_lands(x, key)`` per example (the writes of ``index_add(x, key, g)`` that land, not dropped out of
    range): the mask of the one scatter :func:`batch_index_add` makes (:func:`_scattered`'s key), as its selection."""
    if is_tree(x):
        return True
    slots = np.zeros((n,) + (np.shape(x)[1:] if bx else np.shape(x)), dtype=np.int8)
    new, key2, source, destination = _index_plan(np.shape(slots), key, True, flags, False)
    return _moved(index_lands(np.expand_dims(slots, new) if new else slots, key2), source, destination)


def batch_index_add_bar(g: Any, key: Any, v: Any, bv: bool, flags: Any, mode: str = "drop") -> Any:
    """``v``'s cotangent in ``batch_index_add(z, key, v, n, bz, bv, flags, mode)``: per example ``g[key]`` where the
    write lands (:func:`batch_index_lands`; zero where an index out of range dropped it; ``"clip"``: everywhere, the
    read clamping as the add did), summed to it."""
    if g is None or is_tree(g):
        return None if g is None else batch_summed_items(tree_get(g, item_key(key, flags)), v, bv)
    read = batch_index(g, key, True, flags)
    if mode == "drop":
        read = np.where(batch_index_lands(g, key, np.shape(g)[0], True, flags), read, 0.0)
    return batch_summed_items(batch_unbroadcast(read, v, True, bv), v, bv)


# The transposes of the other indexing helpers (reverse mode's rules: transforms/linear_calls.py), whose bodies' Python
# logic on a key an outer vmap cannot batch once it maps the key (vmap(vjp(vmap(f))) of `x[k] = v` at a data index)


@linear_params("g", shape=("x",))
def batch_index_bar(g: Any, key: Any, x: Any, bx: bool, flags: Any) -> Any:
    """``x``'s cotangent in ``batch_index(x, key, bx, flags)`` from the result's, ``g`` (batched): per example ``g``
    added at ``key`` into zeros (one scatter-add), summed over the batch where ``x`` was not batched."""
    if g is None or is_tree(x) and len(key) == 1:  # (a container's item: its cotangent at that item)
        return None if g is None else index_add(zeros_like(x), key[0], g)
    z = batch_index_add(zeros_like(x), key, g, np.shape(g)[0], bx, True, flags, "clip")  # (a read's: clamped)
    return batch_summed_items(z, x, bx)


@linear_params("g", shape=("x", "value"))
def batch_index_update_bar(g: Any, key: Any, x: Any, value: Any, n: int, bx: bool, bv: bool, flags: Any) -> Any:
    """``value``'s cotangent in ``batch_index_update(x, key, value, n, bx, bv, flags)``: per example ``g[key]`` at the
    writes that landed (:func:`batch_winning_writes`; zero at those a repeated index overwrote), summed to it."""
    if g is None or is_tree(g):
        return None if g is None else batch_summed_items(tree_get(g, item_key(key, flags)), value, bv)
    read = np.where(batch_winning_writes(x, key, n, bx, flags), batch_index(g, key, True, flags), 0.0)
    return batch_summed_items(batch_unbroadcast(read, value, True, bv), value, bv)


@linear_params("g", shape=("x",))
def batch_unbroadcast(g: Any, x: Any, bg: bool, bx: bool) -> Any:
    """``unbroadcast(g, x)`` per example: each example of ``g`` summed to the per-example shape of ``x`` (``x`` with
    length-1 axes after the batch axis for the axes ``g`` has in front). A container's cotangent is already shaped
    like it (as ``unbroadcast``: ``first_of``). None (an integer leaf's cotangent) stays None, batched or not."""
    if g is None:
        return None
    if is_tree(g):  # (first_of: a joined list's cotangent refused, as unbroadcast does; jacrev gave 5 leaves for 3)
        return first_of(g, x) if bg else batch_broadcast_items(first_of(g, x), batch_size_of(x))
    if not bg:
        return batch_broadcast(unbroadcast(g, x[0]), np.shape(x)[0])
    ref = x if bx else batch_broadcast(x, np.shape(g)[0])
    return np.reshape(unbroadcast(g, _lifted(ref, np.ndim(g) - 1)), np.shape(ref))


@linear_params("t", shape=("y",))
def batch_broadcast_like(t: Any, y: Any, bt: bool, by: bool) -> Any:
    """``broadcast_like(t, y)`` per example: ``t`` broadcast to the per-example shape of ``y`` (a
    container's tangent as it is, as ``broadcast_like``)."""
    if is_tree(t):
        return t if bt else batch_broadcast_items(t, batch_size_of(y))
    if not by:
        y = batch_broadcast(y, np.shape(t)[0])
    return broadcast_like(_lifted(t, np.ndim(y) - 1) if bt else t, y)


@linear_params("g", shape=("a",))
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
    """``np.full`` per example for a batched ``fill_value`` (a value per example, broadcast to ``shape``)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    v = fill_value if dtype is None else np.astype(fill_value, dtype)
    return np.broadcast_to(_lifted(v, len(shape)), np.shape(v)[:1] + shape)


def batch_tile(a: Any, reps: Any) -> Any:
    """``np.tile`` per example."""
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    r = max(len(reps), np.ndim(a) - 1)
    a = _lifted(a, r)
    return np.tile(a, (1,) + (1,) * (r - len(reps)) + reps)


def batch_triangle(m: Any, k: int, lower: bool) -> Any:
    """``np.tril``/``np.triu`` per example (a per-example vector is a row, as NumPy)."""
    if np.ndim(m) == 2:
        m = np.broadcast_to(m[:, None, :], (np.shape(m)[0], np.shape(m)[1], np.shape(m)[1]))
    return np.tril(m, k) if lower else np.triu(m, k)


def batch_diag(v: Any, k: int) -> Any:
    """``np.diag`` per example: each matrix's ``k``-th diagonal (a gather), or a matrix with each vector
    on its ``k``-th diagonal (a select on ``np.eye``'s mask)."""
    if np.ndim(v) == 3:
        n, m = np.shape(v)[1], np.shape(v)[2]
        first = max(-k, 0)
        length = max(min(n - first, m - max(k, 0)), 0)
        idx = np.arange(length)
        return v[:, idx + first, idx + max(k, 0)]
    size, n = np.shape(v)[0], np.shape(v)[1]
    zero = np.zeros((), dtype=v.dtype)
    # column j of the result holds v[j - max(k, 0)]: pad v to the result's width
    cols = np.concatenate([np.broadcast_to(zero, (size, max(k, 0))), v, np.broadcast_to(zero, (size, max(-k, 0)))],
                          axis=1)
    return np.where(np.eye(n + abs(k), k=k, dtype=bool), cols[:, None, :], zero)


def batch_norm(x: Any, ord: Any, axis: Any, keepdims: bool) -> Any:
    """``np.linalg.norm`` per example."""
    if axis is None:
        if ord is None:
            return np.sqrt(np.sum(x * x, axis=batch_axes(x), keepdims=keepdims))
        if np.ndim(x) == 2:
            return np.linalg.norm(x, ord=ord, axis=1, keepdims=keepdims)
        return np.linalg.norm(x, ord=ord, axis=(1, 2), keepdims=keepdims)
    return np.linalg.norm(x, ord=ord, axis=batch_axis(axis, x), keepdims=keepdims)


def batch_hstack(arrays: Any, dtype: Any) -> Any:
    """``np.hstack`` per example of batched arrays: each at least 1-D per example, joined along the
    first per-example axis of vectors, the second of anything else."""
    elems = [batch_atleast(a, 1) for a in arrays]
    return np.concatenate(elems, axis=1 if np.ndim(elems[0]) == 2 else 2, dtype=dtype)


def batch_vstack(arrays: Any, dtype: Any) -> Any:
    """``np.vstack`` per example of batched arrays: each at least 2-D per example, joined along rows."""
    return np.concatenate([batch_atleast(a, 2) for a in arrays], axis=1, dtype=dtype)


def batch_full_like(a: Any, fill_value: Any, dtype: Any, shape: Any, ba: bool) -> Any:
    """``np.full_like(a, fill_value, dtype, shape=shape)`` per example for a batched ``fill_value``."""
    dt = np.result_type(a) if dtype is None else dtype
    if shape is None:
        shape = np.shape(a)[1:] if ba else np.shape(a)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return np.astype(np.broadcast_to(_lifted(fill_value, len(shape)), np.shape(fill_value)[:1] + shape), dt)


def batch_like(out: Any, shape: Any, n: int) -> Any:
    """A ``*_like`` call's result for a batched template: batched already, unless ``shape`` was given
    (then the same array in every example)."""
    return out if shape is None else batch_broadcast(out, n)


# Parameters that only ever carry indices or static values (a key, integer arrays, flags, batch sizes,
# shapes, axes): derivatives take them as constants (srcjax.core.index_params), even where the name passed
# is differentiated flow-insensitively (an index or a size carried by a loop with differentiated values).
_STATIC_PARAMS = frozenset({
    "key", "flags", "indices", "index", "n", "shape", "axis", "axes", "keepdims", "dtype", "reps", "k", "r", "lower",
    "order", "spec", "perm", "source", "destination", "repeats", "shift", "row_ndim", "outer", "inner",
    "outer_batched", "inner_batched", "batched", "bx", "by", "bt", "bg", "ba", "bb", "bi", "bv", "bz", "b1", "b2",
    "new", "key2", "sa", "sb", "out_spec", "positions"})

# Helpers whose result is a size, a shape or axes (Python ints): every parameter read for its shape only
_SIZES = ("batch_size_of", "batch_size_of_any", "batch_axis", "batch_axes", "batch_shape", "batch_len")
# sizes, static for binding times; not the axes (``batch_axis(source, x)`` of a helper's parameter restored from a tape
# is static only where a push proves it: batch_popped.py; as STATIC it reached a broken program, seed 1411)
_SIZED = ("batch_size_of", "batch_size_of_any", "batch_shape", "batch_len")


def _mark_static_params() -> None:
    import inspect
    for f in list(globals().values()):
        if inspect.isfunction(f) and f.__module__ == __name__:
            names = [p for p in inspect.signature(f).parameters if p in _STATIC_PARAMS or f.__name__ in _SIZES]
            if names:  # (with those a helper marks itself: batch_unbroadcast's x, read for its shape only)
                index_params(*dict.fromkeys([*getattr(f, "__srcjax_index_params__", ()), *names]))(f)
            if f.__name__ in _SIZED:  # (static for the binding times of batched source: `if batch_len(h) > 2:`)
                f.__srcjax_static_result__ = True  # type: ignore[attr-defined]


_mark_static_params()
