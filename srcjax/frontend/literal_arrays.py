"""List and tuple literals where NumPy makes an array of them: ``np.array([x, y])`` (the literal written
``np.stack([x, y])``, inner lists first), and the items of a joined sequence, ``np.concatenate(([0.0], x))``
(each list an array of its own first, ``np.asarray([0.0])``: the derivative and batching rules of a join take
arrays), and a list of numbers given for a differentiable operand, ``np.power(x, [1.0, 2.0])`` (its derivative
rules compute with it: a list is not an array there)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
import numpy as np

from ..primitives import registry
from . import numpy_calls

if TYPE_CHECKING:
    from .normalize import Normalizer

__all__ = ["items_made_arrays", "listed_operand", "numbers", "operand_arrays", "stacked_call"]


def numbers(node: cst.BaseExpression) -> bool:
    """A (nested) list or tuple literal of number literals only (``[0.0, -9.81]``): NumPy makes it at once."""
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(not isinstance(e, cst.StarredElement) and numbers(e.value) for e in node.elements)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def listed_operand(norm: Normalizer, prim: registry.Primitive, pname: str, value: cst.BaseExpression) -> bool:
    """Whether ``value``, given for the array parameter ``pname`` of ``prim``, is a list NumPy makes one array
    of (written ``np.stack(value)``): a comprehension or a name of a list (``np.array(outs)``) where derivatives
    follow the list, and for NumPy's own functions a list or tuple display with values that are not number
    literals (``np.sum([a, b])``, ``np.mean((x, 2 * y))``: NumPy stacks it; jax refuses it) or any comprehension
    or list name (``b = [1, a * a, 2]; np.sum(b)``). A literal of numbers stays a constant (:func:`numbers`)."""
    if pname not in prim.arrays:
        return False
    t = value.__class__  # (exact classes: libcst's node classes are final; `isinstance` goes through ABCMeta)
    listed = t is cst.ListComp or t is cst.Name and value.value in numpy_calls.list_names(norm)  # type: ignore[attr-defined]
    if norm.comprehension_loops and listed:
        return True
    if not prim.path.startswith("np.") or pname in prim.nested or prim.tree is not None:
        return False
    return listed or isinstance(value, (cst.List, cst.Tuple)) and bool(value.elements) and not numbers(value) and \
        not any(isinstance(e, cst.StarredElement) for e in value.elements)


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


def items_made_arrays(norm: Normalizer, value: cst.BaseExpression, origin: cst.Call) -> cst.BaseExpression:
    """``value``, a sequence operand of a join (``np.concatenate(([0.0], x, [y[0], 1.0]))``), with each list or
    tuple literal or name of a list (``pad = [0.0]``) among its items bound to a name first, ``asarray =
    np.asarray([0.0])``, ``stack = np.stack([y[0], 1.0])``, as NumPy makes each item an array (a literal of
    numbers is float64 beside float32 arrays, as in NumPy). Anything else is returned as it is."""
    if not isinstance(value, (cst.List, cst.Tuple)):
        return value
    lists = numpy_calls.list_names(norm)

    def listed(e: cst.BaseElement) -> bool:
        return isinstance(e, cst.Element) and (isinstance(e.value, (cst.List, cst.Tuple)) and bool(e.value.elements)
                                               or isinstance(e.value, cst.Name) and e.value.value in lists)

    if not any(listed(e) for e in value.elements):
        return value
    asarray = registry.lookup(np.asarray)
    assert asarray is not None
    items = []
    for e in value.elements:
        if listed(e):
            made, hint = norm.prim_call(origin, asarray, [cst.Arg(e.value)])
            name = cst.Name(norm.fresh(hint or "asarray"))
            norm.assign(name, made, e.value)
            e = e.with_changes(value=name)
        items.append(e)
    return value.with_changes(elements=items)


def operand_arrays(norm: Normalizer, prim: registry.Primitive, pname: str, value: cst.BaseExpression,
                   origin: cst.Call) -> cst.BaseExpression:
    """``value``, the argument of ``prim``'s parameter ``pname``, with the lists NumPy makes arrays bound to names
    first: a join's items (:func:`items_made_arrays`), a literal list of numbers for an array operand of a
    primitive with derivative rules (``asarray = np.asarray([1.0, 2.0])``: NumPy's ``np.power(x, [1.0, 2.0])``
    makes it so; the rules compute with the operand, ``y - 1``). Anything else as it is."""
    if pname in prim.array_seqs:
        return items_made_arrays(norm, value, origin)
    if pname not in prim.arrays or pname in prim.nested or not prim.vjp or prim.nondiff or \
            value.__class__ is not cst.List and value.__class__ is not cst.Tuple or \
            not value.elements or not numbers(value):  # type: ignore[attr-defined]
        return value
    asarray = registry.lookup(np.asarray)
    assert asarray is not None
    made, hint = norm.prim_call(origin, asarray, [cst.Arg(value)])
    name = cst.Name(norm.fresh(hint or "asarray"))
    norm.assign(name, made, value)
    return name
