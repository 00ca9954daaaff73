"""List and tuple literals where NumPy makes an array of them: ``np.array([x, y])`` (the literal written
``np.stack([x, y])``, inner lists first)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
import numpy as np

from ..primitives import registry

if TYPE_CHECKING:
    from .normalize import Normalizer

__all__ = ["numbers", "stacked_call"]


def numbers(node: cst.BaseExpression) -> bool:
    """A (nested) list or tuple literal of number literals only (``[0.0, -9.81]``): NumPy makes it at once."""
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(not isinstance(e, cst.StarredElement) and numbers(e.value) for e in node.elements)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def stacked_call(norm: Normalizer, node: cst.BaseExpression, origin: cst.Call) -> cst.BaseExpression | None:
    """``np.stack`` of a (nested) list or tuple literal's elements, inner lists first (NumPy's
    ``np.array`` of such a list: one array of the elements' common dtype); None for anything else."""
    if not isinstance(node, (cst.List, cst.Tuple)) or not node.elements or \
            any(isinstance(e, cst.StarredElement) for e in node.elements) or numbers(node):
        return None
    items = []
    for e in node.elements:
        inner = stacked_call(norm, e.value, origin)
        if inner is not None:
            name = cst.Name(norm.fresh("stack"))
            norm.assign(name, inner, e.value)
            items.append(cst.Element(value=name))
        else:
            items.append(cst.Element(value=e.value))
    stack = registry.lookup(np.stack)
    assert stack is not None
    return norm.prim_call(origin, stack, [cst.Arg(cst.List(elements=items))])[0]
