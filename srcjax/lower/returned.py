"""What a compiled function returns: its leaves split into the program's outputs (run-time values) and
the Python values kept as they are (the result's template), with errors at the user's ``return`` for
what a compiled function cannot return."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst
import numpy as np

from .. import pytree
from ..core import Span, TranspileError
from ..custom import def_span
from ..frontend.names import Visitor
from ..frontend.normalize import NormalizedFunction
from .hlo import HloValue
from .host_print import DeferredText
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
        elif isinstance(leaf, DeferredText):  # (its text holds abstract values, f64[3], where NumPy's has numbers)
            raise TranspileError(f"cannot return a string formatted from array values ({leaf!r}): compiled code "
                                 "has no text of run-time values", where(),
                                 hint="return the values and format them after the call (print(f\"...\") inside "
                                      "the function shows them at run time)")
        elif isinstance(leaf, _KEPT):
            template.append(leaf)
        else:
            raise TranspileError(f"cannot return a value of type {type(leaf).__name__} from a compiled function",
                                 where(), hint="return arrays, numbers, or tuples/lists/dicts of them")
    return outs, template, tree


def return_span(nf: NormalizedFunction) -> Span | None:
    """Where a function returns, when it has one ``return``; else its ``def`` line."""
    spans = set()

    class V(Visitor):
        def visit_SimpleStatementLine(self, n: cst.SimpleStatementLine) -> None:
            if any(type(s) is cst.Return for s in n.body):
                spans.add(nf.spans.get(id(n)))

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is nf.fdef

    V().walk(nf.fdef)
    return spans.pop() if len(spans) == 1 and None not in spans else def_span(nf.fn)


def mlir_loc(span: Span) -> str:
    name = span.filename.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{name}":{span.line}:{span.col + 1}'
