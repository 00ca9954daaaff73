"""Augmented assignment to a name, as NumPy runs it: ``w *= m`` -> ``mul = w * m; w = in_place(w, mul)``.

NumPy updates an array in place: ``w *= m`` keeps ``w``'s dtype (float32 stays float32 when ``m`` is
float64; float into int is NumPy's error) and its shape (a result of a larger broadcast shape is NumPy's
error). ``in_place`` (``srcjax/in_place_cast.py``, its record in ``primitives/in_place.py``) casts the new
value into an array target and binds anything else (a Python number, a list, a 0-d value) again.

It is written only where it can change something: not where the value is a Python number (a literal,
``-1``, a module constant: NEP 50's weak scalar keeps an array's dtype, so ``i += 1`` and ``x *= 0.5``
read as before), a string, or a list or tuple display holding something other than numbers (``xs += [h]``
joins lists). NumPy's errors for a number into an array of a lower kind (``wi *= 0.5``, ``b += 1`` on a
bool array) are then not raised (docs/limitations.md). Input: an ``AugAssign`` to a name; output: the
normalizer's statements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import libcst as cst

from .syntax import AUG_TO_BIN, BINOP_HINT

if TYPE_CHECKING:
    from .normalize import Normalizer

__all__ = ["statement"]

IN_PLACE = "in_place"  # (the primitive's bare name in generated source: srcjax.adjoint.in_place)


def _python_number(v: Any) -> bool:
    return type(v) in (bool, int, float)  # (not complex: it makes a real array complex; not NumPy scalars)


def _number_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def _numbers_only(node: cst.BaseExpression) -> bool:
    """A (nested) list or tuple display of number literals (``[1.0, 2.0]``: an array operand)."""
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(isinstance(e, cst.Element) and _numbers_only(e.value) for e in node.elements)
    return _number_literal(node) or isinstance(node, cst.Imaginary)


def _keeps_target(norm: Normalizer, value: cst.BaseExpression) -> bool:
    """Whether ``x op= value`` is ``x = x op value`` for every target NumPy accepts (statically)."""
    if _number_literal(value) or isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(value, (cst.List, cst.Tuple)):
        return not _numbers_only(value)
    known, v = norm.constant(value) if isinstance(value, (cst.Name, cst.Attribute)) else (False, None)
    return known and _python_number(v)


def statement(norm: Normalizer, s: cst.AugAssign, target: cst.Name) -> None:
    """``target op= value`` as the normalizer's statements."""
    op = AUG_TO_BIN[type(s.operator).__name__]()  # type: ignore[abstract]
    value = norm.atom(s.value)
    new = cst.BinaryOperation(left=target, operator=op, right=value)
    if _keeps_target(norm, s.value):
        norm.assign(target, new, s)
        return
    name = cst.Name(norm.fresh(BINOP_HINT[type(op).__name__]))
    norm.assign(name, new, s)
    norm.assign(target, cst.Call(func=cst.Name(IN_PLACE), args=[cst.Arg(target), cst.Arg(name)]), s)
