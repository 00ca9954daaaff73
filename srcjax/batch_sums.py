"""Linear helpers of batched source whose derivatives are written from rules, never from their bodies
(:func:`srcjax.core.linear_params`; reverse mode: transforms/linear_calls.py; a second vmap:
transforms/batch_nested.py): :func:`batch_broadcast`, :func:`batch_broadcast_items` and
:func:`batch_broadcast_parts` repeat values along a new batch axis (an array, a container's leaves, its items that
flags mark), :func:`batch_summed_items` and :func:`batch_broadcast_parts_bar` sum their cotangents over it; the
transposes of ``batch_unbroadcast``, ``batch_broadcast_like`` and ``batch_expand_reduced`` (``*_bar``: each one's
own transpose is the helper again);
:func:`batch_merge` and :func:`batch_split`, the two batch axes of a vmap of batched source merged into one and
split again, and the merge's transpose. Generated batched code imports them from :mod:`srcjax.batched`, which
re-exports them."""

from __future__ import annotations

from typing import Any

import numpy as np

from .adjoint import UNSET, broadcast_like, unbroadcast
from .core import index_params, linear_params
from .lax import index_update
from .pytree import is_tree, item_keys, tree_get


@index_params("bx")
def batch_summed_items(g: Any, x: Any, bx: bool) -> Any:
    """The cotangent of ``x`` from that of its repeat along the batch (the transpose of :func:`batch_broadcast_items`,
    reverse mode's rule for it: transforms/linear_calls.py): each leaf of ``g`` summed over the batch axis, in ``x``'s
    dtype; ``g`` itself where ``x`` was batched (``bx``). None and ``UNSET`` stay as they are, and a cotangent of a
    value not computed on this path (``x`` UNSET: a branch on data not taken, lowered too) is ``UNSET``."""
    if x is UNSET:
        return UNSET
    if bx or g is None or g is UNSET:
        return g
    if is_tree(g):
        out = g
        for k in item_keys(g):
            out = index_update(out, k, batch_summed_items(tree_get(g, k), tree_get(x, k), False))
        return out
    return unbroadcast(g, x)


@linear_params("x")
@index_params("n")
def batch_broadcast(x: Any, n: int) -> Any:
    """An unbatched array (or number) repeated along a new batch axis (``UNSET`` and an empty tuple, a carry's
    ``key = ()``, stay). Not a container: its writers call batch_broadcast_items (reverse mode inlines this one)."""
    if x is UNSET:
        return x
    if is_tree(x):
        if len(x) == 0:
            return x
    # (broadcast_like to a bool array keeps a Python number weakly typed per example, as it is unbatched:
    # np.broadcast_to makes `s = 0.0` a float64 array, and a loop carrying it promoted float32 work to float64)
    return broadcast_like(x, np.zeros((n,) + np.shape(x), dtype=bool))


@index_params("n")
def batch_broadcast_items(x: Any, n: int) -> Any:
    """A list or tuple (of arrays, or of such lists and tuples: a derivative tape, a cotangent of a
    nested tuple) with every array repeated along a new batch axis; an array itself otherwise
    (``UNSET`` and ``None`` stay as they are)."""
    if x is UNSET or x is None:
        return x
    if is_tree(x):  # a dict, tuple, list, NamedTuple, dataclass: the same kind of container, item by item
        out = x
        for k in item_keys(x):
            out = index_update(out, k, batch_broadcast_items(tree_get(x, k), n))  # (differentiable: linear)
        return out
    return broadcast_like(x, np.zeros((n,) + np.shape(x), dtype=bool))  # (a Python number stays weak: batch_broadcast)


@index_params("flags", "n")
def batch_broadcast_parts(x: Any, flags: Any, n: int) -> Any:
    """A tuple or list with the items ``flags`` marks repeated along a new batch axis (each as
    :func:`batch_broadcast_items`), the others as they are (a dict: ``flags`` a dict by its keys); ``UNSET`` (a
    name a branch join makes a container of, bound on the other path only) and ``None`` stay as they are."""
    if x is UNSET or x is None:
        return x
    out = x
    for k, f in flags.items() if isinstance(flags, dict) else zip(item_keys(x), flags):
        if f:
            out = index_update(out, k, batch_broadcast_items(tree_get(x, k), n))
    return out


@linear_params("c", shape=("x",))
@index_params("flags", "n")
def batch_broadcast_parts_bar(c: Any, x: Any, flags: Any, n: int) -> Any:
    """``x``'s cotangent in ``batch_broadcast_parts(x, flags, n)`` from the result's, ``c``: the items ``flags``
    marks summed over the batch axis (:func:`batch_summed_items`), the others as they are: the helper's transpose,
    reverse mode's rule for it (transforms/linear_calls.py; its body differentiated unbroadcast an integer item's
    cotangent to the item's batched shape), whose own is ``batch_broadcast_parts`` again (``n``: for it)."""
    if x is UNSET:
        return UNSET
    if x is None or c is None or c is UNSET:
        return c
    out = c
    for k, f in flags.items() if isinstance(flags, dict) else zip(item_keys(x), flags):
        if f:
            out = index_update(out, k, batch_summed_items(tree_get(c, k), tree_get(x, k), False))
    return out


@linear_params("c", shape=("g",))
@index_params("bg")
def batch_unbroadcast_bar(c: Any, g: Any, bg: bool) -> Any:
    """``g``'s cotangent in ``batch_unbroadcast(g, x, bg, bx)`` from the result's, ``c`` (batched, shaped like the
    result): the helper's transpose, reverse mode's rule for it (transforms/linear_calls.py). Each example of ``c``
    broadcast back to ``g``'s per-example shape (``broadcast_like``: in ``g``'s dtype), summed over the batch where
    ``g`` was not batched (``bg``). Its own transpose is ``batch_unbroadcast`` again, and it is linear in ``c``: no
    derivative of it is written from this body."""
    if g is None or c is None:
        return None
    if is_tree(g):  # (batch_unbroadcast of a container: the container, repeated along the batch where not batched)
        return c if bg else batch_summed_items(c, g, False)
    k = np.ndim(g) - (1 if bg else 0) - (np.ndim(c) - 1)  # (c lifted to g's per-example rank)
    t = np.reshape(c, np.shape(c)[:1] + (1,) * k + np.shape(c)[1:]) if k > 0 else c
    return broadcast_like(t, g) if bg else broadcast_like(np.sum(t, axis=0), g)


@linear_params("c", shape=("t",))
@index_params("bt")
def batch_broadcast_like_bar(c: Any, t: Any, bt: bool) -> Any:
    """``t``'s cotangent in ``batch_broadcast_like(t, y, bt, by)`` from the result's, ``c`` (batched): each example
    of ``c`` summed to ``t``'s per-example shape (``unbroadcast``: in ``t``'s dtype), over the batch too where ``t``
    was not batched (``bt``). The helper's transpose (transforms/linear_calls.py), whose own is
    ``batch_broadcast_like`` again."""
    if t is None or c is None:
        return None
    if is_tree(t):  # (batch_broadcast_like of a container: the container, repeated along the batch where not batched)
        return c if bt else batch_summed_items(c, t, False)
    if not bt:
        return unbroadcast(c, t)  # (the batch axis and the broadcast ones summed at once)
    k = np.ndim(c) - np.ndim(t)  # (t lifted to c's per-example rank: new length-1 axes after the batch axis)
    ref = np.reshape(t, np.shape(t)[:1] + (1,) * k + np.shape(t)[1:]) if k > 0 else t
    return np.reshape(unbroadcast(c, ref), np.shape(t))


@linear_params("c", shape=("g",))
@index_params("axis", "keepdims", "bg")
def batch_expand_reduced_bar(c: Any, g: Any, axis: Any, keepdims: Any, bg: bool) -> Any:
    """``g``'s cotangent in ``batch_expand_reduced(g, a, axis, keepdims, bg, ba)`` from the result's, ``c``
    (batched, shaped like ``a``): each example of ``c`` summed over the reduced axes (``keepdims`` as the
    reduction), in ``g``'s dtype, over the batch too where ``g`` was not batched. The helper's transpose
    (transforms/linear_calls.py), whose own is ``batch_expand_reduced`` again."""
    if axis is None:
        axes: Any = tuple(range(1, np.ndim(c)))
    elif isinstance(axis, (tuple, list)):
        axes = tuple(a + 1 if a >= 0 else a for a in axis)
    else:
        axes = axis + 1 if axis >= 0 else axis
    return unbroadcast(np.sum(c, axis=axes, keepdims=keepdims), g)


@linear_params("v")
@index_params("outer_batched", "inner_batched", "outer", "inner")
def batch_merge(v: Any, outer_batched: bool, inner_batched: bool, outer: int, inner: int) -> Any:
    """A value of a program batched twice (an outer vmap of batched source) with its two batch axes
    merged into one of ``outer * inner`` (outer-major); a value batched by one level only is broadcast
    along the other first (transforms/batch_nested.py). A tuple (a key built in a loop, batched as a
    whole: each item batched alike) is merged item by item."""
    if is_tree(v):
        out = v
        for k in item_keys(v):
            out = index_update(out, k, batch_merge(tree_get(v, k), outer_batched, inner_batched, outer, inner))
        return out
    if outer_batched and inner_batched:
        return np.reshape(v, (outer * inner,) + np.shape(v)[2:])
    rest = np.shape(v)[1:]
    both = np.broadcast_to(np.expand_dims(v, 1) if outer_batched else v, (outer, inner) + rest)
    return np.reshape(both, (outer * inner,) + rest)


@linear_params("v")
@index_params("outer")
def batch_split(v: Any, outer: int) -> Any:
    """:func:`batch_merge` undone: a merged batch axis split into the outer and the inner one (a container, a
    cotangent of a dict an indexing helper wrote into on the merged batch: leaf by leaf; None, and a flag such a
    helper returns for a container, ``batch_winning_writes``' True, stay)."""
    if v is None or v is UNSET or not is_tree(v) and np.ndim(v) == 0:
        return v
    if is_tree(v):
        out = v
        for k in item_keys(v):
            out = index_update(out, k, batch_split(tree_get(v, k), outer))
        return out
    return np.reshape(v, (outer, np.shape(v)[0] // outer) + np.shape(v)[1:])


@linear_params("c", shape=("v",))
@index_params("outer_batched", "inner_batched", "outer", "inner")
def batch_merge_bar(c: Any, v: Any, outer_batched: bool, inner_batched: bool, outer: int, inner: int) -> Any:
    """``v``'s cotangent in ``batch_merge(v, outer_batched, inner_batched, outer, inner)`` from the result's, ``c``:
    the merged axis split again, summed over the level ``v`` was not batched by (it was broadcast along it). The
    helper's transpose (transforms/linear_calls.py), whose own is ``batch_merge`` again."""
    if c is None or c is UNSET:
        return c
    if is_tree(v):
        out = c
        for k in item_keys(v):
            out = index_update(out, k, batch_merge_bar(tree_get(c, k), tree_get(v, k), outer_batched, inner_batched,
                                                       outer, inner))
        return out
    if outer_batched and inner_batched:
        return np.reshape(c, np.shape(v))
    both = np.reshape(c, (outer, inner) + np.shape(c)[1:])
    return np.sum(both, axis=1 if outer_batched else 0)
