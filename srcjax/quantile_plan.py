"""The static plan of a quantile: which elements of the sorted axis it reads, with what weights.

Read by the lowering (``primitives/sorting.py``) and by the derivative helpers of
:mod:`srcjax.order_stats`, which call it with static values only, so it runs while compiling
(it is not a library module: never transpiled).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


# -- the plan of a quantile: (low index, high index, weight of the high one) per q -------------------
def quantile_points(n: int, q: Any, method: str) -> list[tuple[int, int, Any]]:
    """For a sorted axis of length ``n``: ``(lo, hi, gamma)`` per quantile of ``q`` (flattened), the
    result being ``s[lo] + (s[hi] - s[lo]) * gamma`` (NumPy's ``_lerp``) or, with ``gamma`` None, ``s[lo]``.

    ``method`` is one of NumPy's ``'linear'``, ``'lower'``, ``'higher'``, ``'midpoint'``, ``'nearest'``,
    or ``'median'`` (NumPy's median: the middle element, or the mean of the two middle ones).
    ``q`` is in [0, 1] (a percentile's already divided by 100)."""
    if method == "median":
        k = n // 2
        return [(k, k, None)] if n % 2 else [(k - 1, k, 0.5)]
    qs = np.asarray(q)
    points: list[tuple[int, int, Any]] = []
    for v in np.ravel((n - 1) * qs).tolist():
        if qs.dtype.kind in "iu" and method == "linear":  # an integer index: no interpolation (NumPy)
            points.append((int(v), int(v), None))
            continue
        lo = math.floor(v)
        if method == "lower":
            points.append((lo, lo, None))
        elif method == "higher":
            points.append((min(math.ceil(v), n - 1),) * 2 + (None,))
        elif method == "nearest":
            k = int(np.around(v))
            points.append((k, k, None))
        elif method == "midpoint":
            hi = min(lo + 1, n - 1)
            points.append((lo, hi, 0.0 if v % 1 == 0 else 0.5))
        elif v >= n - 1:  # linear, at the end: the last element
            points.append((n - 1, n - 1, v - lo))
        else:
            points.append((lo, lo + 1, v - lo))
    return points


def reduced_perm(ndim: int, axis: Any) -> tuple[list[int], list[int]]:
    """(kept axes, reduced axes) of a reduction over ``axis`` (None: every axis), both ascending."""
    if axis is None:
        red = list(range(ndim))
    else:
        axes = [int(a) % ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
        red = [i for i in range(ndim) if i in axes]
    return [i for i in range(ndim) if i not in red], red


def order_stat_shape(shape: Any, q: Any, axis: Any, keepdims: Any) -> tuple[int, ...]:
    """The result shape of a quantile of ``q`` over ``axis`` of an array of ``shape``."""
    keep, red = reduced_perm(len(shape), axis)
    kept = tuple(1 if i in red else d for i, d in enumerate(shape)) if keepdims else tuple(shape[i] for i in keep)
    return np.shape(q) + kept


def stat_points(n: int, q: Any, method: str, percent: bool) -> list[tuple[int, int, Any]]:
    """:func:`quantile_points` of a quantile (``percent``: a percentile, ``q`` in [0, 100])."""
    return quantile_points(n, np.true_divide(q, 100) if percent else q, method)
