"""What a compiled function returns: its leaves split into the program's outputs (run-time values) and
the Python values kept as they are (the result's template), with errors at the user's ``return`` for
what a compiled function cannot return."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import pytree
from ..core import Span, TranspileError
from .hlo import HloValue
from .values import is_dynamic

_KEPT = (bool, int, float, str, np.generic, np.ndarray, type(None), range, slice, np.dtype)


def split_result(result: Any, where: Callable[[], Span | None]) -> tuple[list[HloValue], list[Any], pytree.TreeDef]:
    """(outputs, template: None where an output goes, the result's structure); ``where()``: the
    ``return`` to blame."""
    try:
        leaves, tree = pytree.flatten(result, nodes=True)
    except pytree.UnsortableKeys as e:
        raise TranspileError(f"cannot return a dict that has no leaf order: {e}", where(),
                             hint="use dict keys of one type (all str, or all int): a pytree's leaves are ordered "
                                  "by its sorted keys, as in jax") from None
    outs: list[HloValue] = []
    template: list[Any] = []
    for leaf in leaves:
        if is_dynamic(leaf):
            outs.append(leaf)
            template.append(None)
        elif isinstance(leaf, _KEPT):
            template.append(leaf)
        else:
            raise TranspileError(f"cannot return a value of type {type(leaf).__name__} from a compiled function",
                                 where(), hint="return arrays, numbers, or tuples/lists/dicts of them")
    return outs, template, tree
