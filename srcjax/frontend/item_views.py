"""Items of a variable taken by integer indices (``m[0]``, ``m[i][j]``, a comprehension's ``r`` of ``for r in m``):
NumPy views or copies, known only when the function is specialized.

An integer index of a NumPy array of two or more dimensions is a *view* of its row: after ``rows = [m[0], m[1]]``,
``rows[0] += 1`` changes ``m`` and ``m += 1`` changes ``rows[0]``; of a 1-D array it is a number (a copy), and both
statements leave the other value as it was. An argument's list item (``ms[0]``) is the list's own array. srcjax's
arrays are immutable (as JAX's), so each such change, where the other value is read after it, would give another
number. ``aliasing.scan`` follows these items through names (``r = m[0]``, ``a, b = m[0], m[1]``), displays
(``[m[0], m[1]]``, ``{"a": m[0]}``), ``append``, loops over displays and comprehensions (``[m[i] for i in ...]``,
``list(m)`` of an argument); where the change is ``x op= v`` it leaves the decision to the specialization
(``in_place(x, new, alias=..., rank=...)``: refused where ``x`` has ``rank`` dimensions or more), else it refuses
at the changing line.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TypeVar

import libcst as cst

from .names import code

__all__ = ["branch_item", "depth", "display_sources", "may_overlap", "unsure_item", "unsure_sources"]

T = TypeVar("T")

_INDEX_KINDS = (cst.Name, cst.Integer, cst.SimpleString, cst.UnaryOperation, cst.BinaryOperation)
_SHARING_CALLS = {"list", "tuple", "reversed", "sorted", "iter"}


def _indices(value: cst.Subscript) -> bool:
    return all(isinstance(e.slice, cst.Index) and isinstance(e.slice.value, _INDEX_KINDS) and
               not (isinstance(e.slice.value, cst.Name) and e.slice.value.value == "None") for e in value.slice)


def unsure_item(value: cst.BaseExpression) -> str | None:
    """The variable ``value`` indexes with integers or keys only (``params["w"]``, ``W[i]``, ``W[i, j]``,
    ``ws[0][1]``): its item is the same array (an argument's item that is an array; a row of an array of two or more
    dimensions, a view) or not (a number; a 1-D array's element), which only the specialization knows."""
    if not isinstance(value, cst.Subscript) or not _indices(value):
        return None
    if isinstance(value.value, cst.Name):
        return value.value.value
    return unsure_item(value.value)


def branch_item(value: cst.BaseExpression) -> tuple[str, str] | None:
    """(variable, item as written) of a branch of the conditional expression ``value`` that is an integer-indexed
    item (``m[0] if c else m[1]``: NumPy's value is ``m``'s row where ``c`` holds)."""
    if not isinstance(value, cst.IfExp):
        return None
    for b in (value.body, value.orelse):
        if (base := unsure_item(b)) is not None:
            return base, code(b)
        if (found := branch_item(b)) is not None:
            return found
    return None


def depth(made: str) -> int:
    """How many integer indices ``made`` (``m[0]``, ``m[i, j]``, ``m[0][1]``, ``m[k]``) takes."""
    try:
        node = cst.parse_expression(made)
    except cst.ParserSyntaxError:  # pragma: no cover (srcjax writes ``made`` from the user's code)
        return 1
    n = 0
    while isinstance(node, cst.Subscript):
        n += len(node.slice)
        node = node.value
    return max(n, 1)


def _first_index(item: cst.BaseExpression) -> int | None:
    """The first integer index of ``item`` (``m[0]``, ``m[1, j]``, ``m[2][0]``, ``m[:2]`` -> None) where it is a
    non-negative integer literal."""
    while isinstance(item, cst.Subscript) and isinstance(item.value, cst.Subscript):
        item = item.value
    if isinstance(item, cst.Subscript) and item.slice and isinstance(item.slice[0].slice, cst.Index) and \
            isinstance(item.slice[0].slice.value, cst.Integer):
        return int(item.slice[0].slice.value.value, 0)
    return None


def may_overlap(a: cst.BaseExpression | str, b: cst.BaseExpression | str) -> bool:
    """Whether the items ``a`` and ``b`` of one variable (``m[0]``, ``m[1]``, ``m[i]``, ``m[:2]``, as written) may
    share elements: False only where both take a different literal first index (``m[0]`` and ``m[1, 2]``: other
    rows); a slice or a computed index may be any row."""
    try:
        na = cst.parse_expression(a) if isinstance(a, str) else a
        nb = cst.parse_expression(b) if isinstance(b, str) else b
    except cst.ParserSyntaxError:  # pragma: no cover (srcjax writes the items from the user's code)
        return True
    i, j = _first_index(na), _first_index(nb)
    return i is None or j is None or i == j


def _comprehension(value: cst.ListComp | cst.GeneratorExp | cst.SetComp | cst.DictComp) -> list[tuple[str, str]]:
    """``[r for r in m]`` (``list(m)`` of an argument): ``m``'s items; ``[m[i] for i in ...]``: ``m[i]``."""
    elt = value.value if isinstance(value, cst.DictComp) else value.elt
    bound: set[str] = set()
    comp: cst.CompFor | None = value.for_in
    while comp is not None:
        bound.update(n.value for n in _names(comp.target))
        comp = comp.inner_for_in
    if isinstance(elt, cst.Name) and elt.value in bound and isinstance(value.for_in.target, cst.Name) and \
            value.for_in.target.value == elt.value and isinstance(value.for_in.iter, cst.Name) and \
            value.for_in.inner_for_in is None:
        return [(value.for_in.iter.value, f"{value.for_in.iter.value}[k]")]
    base = unsure_item(elt)
    return [(base, code(elt))] if base is not None and base not in bound else []


def _names(t: cst.BaseExpression) -> list[cst.Name]:
    if isinstance(t, cst.Name):
        return [t]
    if isinstance(t, (cst.Tuple, cst.List)):
        return [n for e in t.elements for n in _names(e.value)]
    return []


def display_sources(value: cst.BaseExpression, held: bool, leaf: Callable[[cst.BaseExpression, bool], list[T] | None],
                    calls: Collection[str], through: bool) -> list[T]:
    """What ``leaf`` finds in ``value`` and in what ``value`` may be or hold without a copy (``held``: as an item of a
    container being made): ``leaf(value, held)`` first (a list ends the walk there, None walks on), then the
    elements of a display, an item of a display (``[s][0]``), the branches of a conditional expression, the operands
    of a concatenation of lists (``[s] + [x]``) and the arguments of a call of a name in ``calls``
    (``list(...)``). ``through``: a branch's, an operand's and an argument's values count as held items (else a
    branch keeps ``held`` and the others are not held). :func:`unsure_sources` and ``alias_events``' names a value
    may be walk with it."""
    if (found := leaf(value, held)) is not None:
        return found

    def inner(v: cst.BaseExpression, h: bool) -> list[T]:
        return display_sources(v, h, leaf, calls, through)

    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return [p for e in value.elements for p in inner(e.value, True)]
    if isinstance(value, cst.Dict):
        return [p for e in value.elements if isinstance(e, cst.DictElement) for p in inner(e.value, True)]
    if isinstance(value, cst.Subscript) and isinstance(value.value, (cst.List, cst.Tuple, cst.Dict)):
        return inner(value.value, True)
    if isinstance(value, cst.IfExp):
        return inner(value.body, held or through) + inner(value.orelse, held or through)
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add) and \
            any(isinstance(x, (cst.List, cst.Tuple)) for x in (value.left, value.right)):
        return inner(value.left, through) + inner(value.right, through)
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in calls:
        return [p for a in value.args for p in inner(a.value, through)]
    return []


def _unsure_leaf(value: cst.BaseExpression, held: bool) -> list[tuple[str, str]] | None:
    if held and (base := unsure_item(value)) is not None:
        return [(base, code(value))]
    if isinstance(value, (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)):
        return _comprehension(value)
    return None


def unsure_sources(value: cst.BaseExpression, held: bool = False) -> list[tuple[str, str]]:
    """(variable, item as written) of each integer-indexed item ``value`` may be or hold (``held``: as an item of a
    container being made): the elements of a display, its item, a branch of a conditional expression, a
    concatenation of lists, ``list(...)``'s argument, a comprehension's items."""
    return display_sources(value, held, _unsure_leaf, _SHARING_CALLS, False)
