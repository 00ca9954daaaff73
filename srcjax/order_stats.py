"""NumPy-level helpers for sorting and order statistics (``np.sort``, ``np.median``, ``np.quantile``, ...).

Two kinds (the static plan of a quantile is :mod:`srcjax.quantile_plan`): the derivative
helpers that generated derivative source calls (re-exported by :mod:`srcjax.adjoint`), and the
batching helpers of batched source (re-exported by :mod:`srcjax.batched`). Like those modules,
plain NumPy with static control flow on shapes only: they run as they are under NumPy, and srcjax
transpiles them like user code.

The derivatives are JAX's: a sorted array's tangent is the tangent permuted like the values
(a stable sort: of tied values the first comes first), and a quantile reads the one or two
sorted elements it interpolates, so its gradient flows to those elements only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .quantile_plan import order_stat_shape, reduced_perm, stat_points


def reduced_last(x: Any, axis: Any) -> Any:
    """``x`` with the axes of ``axis`` moved to the end and merged into one (NumPy's ``_ureduce``)."""
    keep, red = reduced_perm(np.ndim(x), axis)
    shape = np.shape(x)
    n = 1
    for i in red:
        n = n * shape[i]
    return np.reshape(np.transpose(x, keep + red), tuple(shape[i] for i in keep) + (n,))


# -- derivatives --------------------------------------------------------------------------------------
def sort_jvp(t: Any, a: Any, axis: Any) -> Any:
    """The tangent of ``np.sort(a, axis)``: ``t`` permuted as the values are (stable)."""
    if axis is None:
        return np.take(np.ravel(t), np.argsort(a, axis=None, kind="stable"))
    return np.take_along_axis(t, np.argsort(a, axis=axis, kind="stable"), axis=axis)


def sort_bar(g: Any, a: Any, axis: Any) -> Any:
    """The cotangent of ``a`` in ``np.sort(a, axis)``: ``g`` put back by the inverse permutation."""
    if axis is None:
        inverse = np.argsort(np.argsort(a, axis=None, kind="stable"), kind="stable")
        return np.reshape(np.take(g, inverse), np.shape(a))
    perm = np.argsort(a, axis=axis, kind="stable")
    return np.take_along_axis(g, np.argsort(perm, axis=axis, kind="stable"), axis=axis)


def partition_jvp(t: Any, a: Any, kth: Any, axis: Any) -> Any:
    """The tangent of ``np.partition(a, kth, axis)``: ``t`` permuted as ``np.argpartition`` orders ``a``."""
    if axis is None:
        return np.take(np.ravel(t), np.argpartition(a, kth, axis=None))
    return np.take_along_axis(t, np.argpartition(a, kth, axis=axis), axis=axis)


def partition_bar(g: Any, a: Any, kth: Any, axis: Any) -> Any:
    """The cotangent of ``a`` in ``np.partition(a, kth, axis)``."""
    if axis is None:
        inverse = np.argsort(np.argpartition(a, kth, axis=None), kind="stable")
        return np.reshape(np.take(g, inverse), np.shape(a))
    perm = np.argpartition(a, kth, axis=axis)
    return np.take_along_axis(g, np.argsort(perm, axis=axis, kind="stable"), axis=axis)


def order_stat_jvp(t: Any, a: Any, q: Any, axis: Any, keepdims: Any, method: str, percent: bool) -> Any:
    """The tangent of a quantile (``np.quantile``, ``np.percentile`` with ``percent``, ``np.median`` with
    ``method='median'``): the same interpolation of the tangent permuted as ``a`` sorts."""
    x = reduced_last(a, axis)
    s = np.take_along_axis(reduced_last(t, axis), np.argsort(x, axis=-1, kind="stable"), axis=-1)
    outs = []
    for lo, hi, gamma in stat_points(np.shape(x)[-1], q, method, percent):
        low = s[..., lo]
        outs.append(low if gamma is None else low + (s[..., hi] - low) * gamma)
    r = outs[0] if np.ndim(q) == 0 else np.stack(outs)
    return np.reshape(r, order_stat_shape(np.shape(a), q, axis, keepdims))


def order_stat_bar(g: Any, a: Any, q: Any, axis: Any, keepdims: Any, method: str, percent: bool) -> Any:
    """The cotangent of ``a`` in a quantile: each result's cotangent shared between the one or two sorted
    elements it reads (weights ``1 - gamma`` and ``gamma``), then put back in ``a``'s order."""
    x = reduced_last(a, axis)
    points = stat_points(np.shape(x)[-1], q, method, percent)
    n = np.shape(x)[-1]
    gs = np.reshape(g, (len(points),) + np.shape(x)[:-1] + (1,))
    positions = np.arange(n)
    s = np.zeros_like(x, dtype=np.result_type(g))
    for k, (lo, hi, gamma) in enumerate(points):
        gk = gs[k]
        if gamma is None:
            s = s + np.where(positions == lo, gk, 0.0)
        else:
            s = s + np.where(positions == lo, gk * (1 - gamma), 0.0) + np.where(positions == hi, gk * gamma, 0.0)
    inverse = np.argsort(np.argsort(x, axis=-1, kind="stable"), axis=-1, kind="stable")
    s = np.take_along_axis(s, inverse, axis=-1)
    keep, red = reduced_perm(np.ndim(a), axis)
    shape = np.shape(a)
    s = np.reshape(s, tuple(shape[i] for i in keep) + tuple(shape[i] for i in red))
    order = keep + red
    return np.transpose(s, [order.index(i) for i in range(len(order))])


# -- batching ---------------------------------------------------------------------------------------
def _flat(x: Any) -> Any:
    return np.reshape(x, (np.shape(x)[0], -1))


def batch_sort(a: Any, axis: Any, kind: Any) -> Any:
    """``np.sort`` per example (``axis=None``: each example flattened)."""
    if axis is None:
        return np.sort(_flat(a), axis=1, kind=kind)
    return np.sort(a, axis=axis + 1 if axis >= 0 else axis, kind=kind)


def batch_argsort(a: Any, axis: Any, kind: Any) -> Any:
    """``np.argsort`` per example (``axis=None``: indices into each flattened example)."""
    if axis is None:
        return np.argsort(_flat(a), axis=1, kind=kind)
    return np.argsort(a, axis=axis + 1 if axis >= 0 else axis, kind=kind)


def batch_partition(a: Any, kth: Any, axis: Any) -> Any:
    """``np.partition`` per example."""
    if axis is None:
        return np.partition(_flat(a), kth, axis=1)
    return np.partition(a, kth, axis=axis + 1 if axis >= 0 else axis)


def batch_argpartition(a: Any, kth: Any, axis: Any) -> Any:
    """``np.argpartition`` per example."""
    if axis is None:
        return np.argpartition(_flat(a), kth, axis=1)
    return np.argpartition(a, kth, axis=axis + 1 if axis >= 0 else axis)


def _batch_stat_axis(a: Any, axis: Any) -> Any:
    if axis is None:
        return tuple(range(1, np.ndim(a)))
    if isinstance(axis, (tuple, list)):
        return tuple(x + 1 if x >= 0 else x for x in axis)
    return axis + 1 if axis >= 0 else axis


def batch_quantile(a: Any, q: Any, axis: Any, method: Any, keepdims: Any) -> Any:
    """``np.quantile`` per example: the axes of a 1-D ``q`` come first in NumPy's result, so the batch
    axis is moved back in front."""
    r = np.quantile(a, q, axis=_batch_stat_axis(a, axis), method=method, keepdims=keepdims)
    return np.moveaxis(r, np.ndim(q), 0) if np.ndim(q) else r


def batch_percentile(a: Any, q: Any, axis: Any, method: Any, keepdims: Any) -> Any:
    """``np.percentile`` per example (see :func:`batch_quantile`)."""
    r = np.percentile(a, q, axis=_batch_stat_axis(a, axis), method=method, keepdims=keepdims)
    return np.moveaxis(r, np.ndim(q), 0) if np.ndim(q) else r


def batch_searchsorted(a: Any, v: Any, side: Any, a_batched: bool, v_batched: bool) -> Any:
    """``np.searchsorted`` per example: a batched sorted ``a`` compares with every value of its example
    (NumPy's order: NaNs last)."""
    if not a_batched:
        return np.searchsorted(a, v, side=side)
    if not v_batched:
        v = np.broadcast_to(v, (np.shape(a)[0],) + np.shape(v))
    rows = np.reshape(a, (np.shape(a)[0],) + (1,) * (np.ndim(v) - 1) + (np.shape(a)[1],))
    vals = np.expand_dims(v, -1)
    if side == "left":  # how many elements come before v
        before = (rows < vals) | (np.isnan(vals) & ~np.isnan(rows))
    else:  # how many elements do not come after v
        before = ~((vals < rows) | (np.isnan(rows) & ~np.isnan(vals)))
    return np.sum(before, axis=-1, dtype=np.int64)


__all__ = ["reduced_last", "sort_jvp", "sort_bar",
           "partition_jvp", "partition_bar", "order_stat_jvp", "order_stat_bar", "batch_sort", "batch_argsort",
           "batch_partition", "batch_argpartition", "batch_quantile", "batch_percentile", "batch_searchsorted"]


def batch_builtin_max(values: Any, batched: Any, largest: bool = True) -> Any:
    """Python's ``max(a, b, ...)`` (``largest=False``: ``min``) of each example's single values in batched source
    (vmap): each next value where it compares greater (less) than the one kept, ``np.where(v > kept, v, kept)``, as
    the unbatched lowering selects (lower/python_builtins.py). ``batched`` says which values carry the batch axis;
    an example's value of one dimension or more is NumPy's error (an array's truth value is ambiguous)."""
    for v, b in zip(values, batched):
        if np.ndim(v) != (1 if b else 0):
            raise ValueError("the builtin max() or min() of arrays: the truth value of an array is ambiguous (NumPy's "
                             "error); use np.maximum(a, b) or np.minimum(a, b)")
    kept = values[0]
    for v in values[1:]:
        kept = np.where(v > kept if largest else v < kept, v, kept)
    return kept
