"""``np.repeat``'s cotangent (its record in primitives/shape_ops.py): the copies of each element summed.

:mod:`srcjax.adjoint` helpers in every respect, kept in their own file for the line budget (as
:mod:`srcjax.loop_adjoint`): their ``__module__`` is ``srcjax.adjoint`` (set at the bottom). With one static
count the copies are an axis of their own, summed; with a static count for each slice (``np.repeat(x, [1, 0, 3],
axis=0)``) each slice's run of copies is summed (:func:`repeat_runs_bar`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

REPEAT_HELPERS = ["repeat_bar", "repeat_runs_bar"]


def repeat_bar(g: Any, a: Any, repeats: Any, axis: Any) -> Any:
    """Cotangent of ``a`` in ``np.repeat(a, repeats, axis)``: the copies summed."""
    if isinstance(repeats, (tuple, list)) and len(repeats) > 1:
        return repeat_runs_bar(g, a, repeats, axis)
    r = repeats[0] if isinstance(repeats, (tuple, list)) else repeats
    shape = tuple(np.shape(a))
    if axis is None:
        return np.reshape(np.sum(np.reshape(g, (np.size(a), r)), axis=1), shape)
    ax = axis % len(shape)
    return np.sum(np.reshape(g, shape[:ax + 1] + (r,) + shape[ax + 1:]), axis=ax + 1)


def repeat_runs_bar(g: Any, a: Any, repeats: Any, axis: Any) -> Any:
    """:func:`repeat_bar` with a static count for each slice along the axis (``axis=None``: each element of the
    flattened ``a``): each slice's run of copies summed, the sums joined."""
    shape = tuple(np.shape(a))
    ax = 0 if axis is None else axis % len(shape)
    runs = []
    for k in range(len(repeats)):
        run = g[(slice(None),) * ax + (slice(sum(repeats[:k]), sum(repeats[:k + 1])),)]
        runs.append(np.sum(run, axis=ax, keepdims=True))
    return np.reshape(np.concatenate(runs, axis=ax), shape)


for _name in REPEAT_HELPERS:  # (transpiled as srcjax.adjoint's, as loop_adjoint's)
    globals()[_name].__module__ = "srcjax.adjoint"
