"""Assignments into an array's elements, as the normalizer writes them (functional updates).

``y[k] = v``   ->  ``y = srcjax.lax.index_update(y, k, v)``
``y[k] += v``  ->  ``add = y[k] + v; y = srcjax.lax.index_update(y, k, add)`` (NumPy's semantics for basic
indices: a repeated index in ``k`` is written once, the last write wins)

Through a boolean mask over ``y``'s leading axes, NumPy's everyday clean-up of an array, the selection
``y[mask]`` has a size that depends on the data but the write does not:

``y[mask] = v``   ->  ``y = masked_write(y, mask, v, v)``
``y[mask] *= v``  ->  ``mul = y * v; y = masked_write(y, mask, mul, v)``

(``srcjax.composites.masked_write``: ``np.where`` of the mask, cast to ``y``'s dtype as NumPy's assignment
casts; ``v`` a number or one row of the selection, as NumPy broadcasts it). A mask is what
``numpy_calls`` reads as one: a comparison, ``~``/``&``/``|`` of those, a predicate, a name only ever bound to
such an expression. Input: a small statement; output: the normalizer's statements, or False (not such a
statement).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .. import composites
from . import element_targets, in_place_updates, numpy_calls
from .syntax import AUG_TO_BIN, BINOP_HINT

if TYPE_CHECKING:
    from .normalize import Normalizer

__all__ = ["MASKED_WRITE", "statement"]

MASKED_WRITE = "masked_write"  # (the composite's name: view_updates.check_views reads its calls as writes)


def _mask(norm: Normalizer, t: cst.Subscript) -> cst.BaseExpression | None:
    """``mask`` of ``y[mask]`` written as a boolean array (one index); None for any other subscript."""
    if len(t.slice) != 1 or not isinstance(sl := t.slice[0].slice, cst.Index) or sl.star is not None:
        return None
    if not numpy_calls.boolean(sl.value, numpy_calls.boolean_names(norm)):
        return None
    return sl.value


def statement(norm: Normalizer, s: cst.BaseSmallStatement) -> bool:
    """``s`` written as a functional update when it assigns into a subscript (True), else False."""
    # (exact types: libcst has no subclasses of these; isinstance on one goes through ABCMeta)
    if type(s) is cst.Assign and element_targets.writes_an_element(s):  # a[i] = b[j] = v; a[0], b[1] = v
        element_targets.assign(norm, s)  # (one target a statement)
        return True
    if type(s) is cst.Assign and len(s.targets) == 1 and type(s.targets[0].target) is cst.Subscript:
        t, op = s.targets[0].target, None
    elif type(s) is cst.AugAssign and type(s.target) is cst.Subscript:
        t, op = s.target, AUG_TO_BIN[type(s.operator).__name__]()  # type: ignore[abstract]
    else:
        return False
    mask = _mask(norm, t)
    if mask is not None and isinstance(t.value, cst.Name) and t.value.value in norm.locals and \
            _selection_write(norm, s, t, mask, op):
        return True
    if mask is not None and isinstance(t.value, cst.Name) and t.value.value in norm.locals:
        y = cst.Name(t.value.value)
        value = norm.atom(s.value)
        new = value
        if op is not None:  # y[mask] *= v: y * v where the mask holds
            new = cst.Name(norm.fresh(BINOP_HINT[type(op).__name__]))
            norm.assign(new, cst.BinaryOperation(left=y, operator=op, right=value), s)
        write = norm.helper_call_name(composites.masked_write, s)
        norm.assign(y, cst.Call(func=write, args=[cst.Arg(y), cst.Arg(norm.atom(mask)), cst.Arg(new),
                                                  cst.Arg(value)]), s)
        norm.updated.add(y.value)
        return True
    if op is None:
        alias = norm.checked_in_place.get(id(s))  # (`m[0] = v` of `a, b = m[0], m[1]`, a read later: 2-D m refused)
        base = t.value.value if isinstance(t.value, cst.Subscript) else t.value  # (`m[0][1] = v`: m's rank)
        if alias is not None and isinstance(base, cst.Name):
            y = cst.Name(base.value)
            norm.assign(y, in_place_updates.checked_call(cst.Name(y.value), cst.Name(y.value), alias), s)
        norm.index_assign(t, norm.atom(s.value), s)  # type: ignore[union-attr]
        return True
    sub = norm.atom(t)  # y[k] += v  ->  y = index_update(y, k, y[k] + v): NumPy's semantics for basic indices
    name = norm.fresh(BINOP_HINT[type(op).__name__])
    norm.assign(cst.Name(name), cst.BinaryOperation(left=sub, operator=op, right=norm.atom(s.value)), s)
    alias = norm.checked_in_place.get(id(s))  # (`rows[0] += v` of `rows = [m[0], m[1]]`, m read later)
    if alias is not None and alias[1] > 1 and isinstance(t.value, cst.Name):  # (`m[k] += v`, rows read later)
        y = cst.Name(t.value.value)
        norm.assign(y, in_place_updates.checked_call(cst.Name(y.value), cst.Name(y.value), alias), s)
    elif alias is not None:
        checked = norm.fresh(in_place_updates.IN_PLACE)
        norm.assign(cst.Name(checked), in_place_updates.checked_call(sub, cst.Name(name), alias), s)
        name = checked
    norm.index_assign(t, cst.Name(name), s)
    return True


def _operands(n: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The names and attributes ``n`` computes with, besides its selections ``a[mask]`` and called functions."""
    if isinstance(n, (cst.Name, cst.Attribute)):
        return [n]
    if isinstance(n, cst.BinaryOperation):
        return _operands(n.left) + _operands(n.right)
    if isinstance(n, cst.UnaryOperation):
        return _operands(n.expression)
    if isinstance(n, cst.Comparison):
        return _operands(n.left) + [x for c in n.comparisons for x in _operands(c.comparator)]
    if isinstance(n, cst.Call):
        return [x for a in n.args for x in _operands(a.value)]
    return []  # (a selection, a number)


def _selection_write(norm: Normalizer, s: cst.Assign | cst.AugAssign, t: cst.Subscript, mask: cst.BaseExpression,
                     op: cst.BaseBinaryOp | None) -> bool:
    """``y[mask] = f(a[mask], ...)`` (pmocz's ``inv_r[inv_r > 0] = 1.0 / inv_r[inv_r > 0]``, label spreading's
    ``F[labeled] = Y0[labeled]``): elementwise arithmetic on selections by ``y``'s own mask is ``f`` on the whole
    arrays where the mask holds (``masked_write_selection``; the selections' gaps filled with a selected value,
    as a selection's reduction has them, so no value outside the selection reaches a derivative). False: not
    such a value (it then is a value per selected element, refused where it is computed)."""

    if not any(type(n) is cst.Subscript for n in numpy_calls.walk(s.value)):
        return False
    names = numpy_calls.boolean_names(norm)
    code = cst.Module([]).code_for_node
    found = numpy_calls.selected(norm, s.value, names)
    if found is None or found[0] != code(mask):
        return False
    y = cst.Name(t.value.value)  # type: ignore[attr-defined]
    m = norm.atom(mask)
    fill = norm.helper_call_name(composites.selection_fill, s)

    def filled(x: cst.BaseExpression) -> cst.BaseExpression:
        name = cst.Name(norm.fresh("selected"))
        norm.assign(name, cst.Call(func=fill, args=[cst.Arg(norm.atom(x)), cst.Arg(m)]), s)
        return name

    again = numpy_calls.selected(norm, s.value, names, filled)
    assert again is not None
    new = norm.atom(again[2])
    if op is not None:  # y[mask] += f(...): y + f(...) where the mask holds
        new = cst.Name(norm.fresh(BINOP_HINT[type(op).__name__]))
        norm.assign(new, cst.BinaryOperation(left=y, operator=op, right=norm.atom(again[2])), s)
    operands = cst.Tuple([cst.Element(norm.atom(x)) for x in _operands(s.value)])
    write = norm.helper_call_name(composites.masked_write_selection, s)
    norm.assign(y, cst.Call(func=write, args=[cst.Arg(y), cst.Arg(m), cst.Arg(new), cst.Arg(operands)]), s)
    norm.updated.add(y.value)
    return True
