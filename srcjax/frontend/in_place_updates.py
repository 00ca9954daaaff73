"""Augmented assignment to a name, as NumPy runs it: ``w *= m`` -> ``mul = w * m; w = in_place(w, mul)``.

NumPy updates an array in place: ``w *= m`` keeps ``w``'s dtype (float32 stays float32 when ``m`` is
float64; float into int is NumPy's error) and its shape (a result of a larger broadcast shape is NumPy's
error). ``in_place`` (``srcjax/in_place_cast.py``, its record in ``primitives/in_place.py``) casts the new
value into an array target and binds anything else (a Python number, a list, a 0-d value) again.

It is written only where it can change something: not where the value is a Python number (a literal,
``-1``, a module constant, a local name only ever bound to numbers, shapes' entries, ``len()``s, ``range``
counters and arithmetic of them: NEP 50's weak scalar keeps an array's dtype, so ``i += 1``, ``n += k``
with ``k = x.shape[0]`` and ``x *= 0.5`` read as before), a string, or a list or tuple display holding
something other than numbers (``xs += [h]`` joins lists), nor where the target is only ever bound to list
or tuple displays (``xs += ys``). NumPy's errors for a number into an array of a
lower kind (``wi *= 0.5``, ``b += 1`` on a bool array) are then not raised (docs/limitations.md). Input: an
``AugAssign`` to a name; output: the normalizer's statements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import libcst as cst

from .names import walk
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


_ARITH = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power)
_SHAPE_NUMBERS = ("ndim", "size")
_RANGE = cst.Name("range")


def _number_expr(e: cst.BaseExpression, names: set[str]) -> bool:
    """Whether ``e`` is always a Python number, given local ``names`` that are: a number literal, a shape's
    entry, ``x.ndim``, ``x.size``, ``len(...)``, such a name, or arithmetic of those."""
    if _number_literal(e) or isinstance(e, cst.Name) and (e.value in names or e.value in ("True", "False")):
        return True
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, (cst.Minus, cst.Plus)):
        return _number_expr(e.expression, names)
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, _ARITH):
        return _number_expr(e.left, names) and _number_expr(e.right, names)
    if isinstance(e, cst.Attribute):
        return e.attr.value in _SHAPE_NUMBERS
    if isinstance(e, cst.Subscript):  # x.shape[0]
        return isinstance(e.value, cst.Attribute) and e.value.attr.value == "shape" and len(e.slice) == 1 and \
            isinstance(e.slice[0].slice, cst.Index) and _number_expr(e.slice[0].slice.value, names)
    return isinstance(e, cst.Call) and isinstance(e.func, cst.Name) and e.func.value == "len" and len(e.args) == 1


_Bindings = tuple[dict[str, list[cst.BaseExpression | None]], set[str], set[int]]


def _bindings(norm: Normalizer) -> _Bindings:
    """Each local name's values in ``name = e`` and ``name op= e`` (``None``: a ``for name in range(...)``
    counter), the names bound any other way too (a parameter, unpacking, ``with``, ``:=``, a nested
    function's parameter, ...), and the ids of the values of ``name op= e``."""
    found = getattr(norm, "_in_place_bindings", None)
    if found is not None:
        return found  # type: ignore[no-any-return]
    values: dict[str, list[cst.BaseExpression | None]] = {}
    other: set[str] = set()
    augmented: set[int] = set()
    for n in walk(norm.src.fdef):
        if isinstance(n, cst.Assign):
            for t in n.targets:
                if isinstance(t.target, cst.Name):
                    values.setdefault(t.target.value, []).append(n.value)
                else:
                    other.update(x.value for x in walk(t.target) if isinstance(x, cst.Name))
        elif isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name):
            values.setdefault(n.target.value, []).append(n.value)
            augmented.add(id(n.value))
        elif isinstance(n, cst.For) and isinstance(n.target, cst.Name) and isinstance(n.iter, cst.Call) and \
                n.iter.func.deep_equals(_RANGE):
            values.setdefault(n.target.value, []).append(None)
        elif isinstance(n, (cst.For, cst.CompFor, cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
            other.update(x.value for x in walk(n.target) if isinstance(x, cst.Name))
        elif isinstance(n, cst.AsName):
            other.update(x.value for x in walk(n.name) if isinstance(x, cst.Name))
        elif isinstance(n, (cst.Param, cst.Global, cst.Nonlocal, cst.ImportAlias)):
            other.update(x.value for x in walk(n) if isinstance(x, cst.Name))
    norm._in_place_bindings = found = (values, other, augmented)  # type: ignore[attr-defined]
    return found


def _number_names(norm: Normalizer) -> set[str]:
    """The local names bound only to Python numbers (:func:`_number_expr`, a fixed point) or as ``range``
    counters."""
    found: set[str] | None = getattr(norm, "_in_place_numbers", None)
    if found is not None:
        return found
    values, other, _ = _bindings(norm)
    found = {k for k in values if k not in other}
    while True:
        kept = {k for k in found if all(v is None or _number_expr(v, found) for v in values[k])}
        if kept == found:
            break
        found = kept
    norm._in_place_numbers = found  # type: ignore[attr-defined]
    return found


def _sequence_target(norm: Normalizer, target: str) -> bool:
    """Whether ``target`` is bound only to list or tuple displays or list comprehensions, besides its augmented
    assignments (``xs += ys`` then joins sequences: it binds ``xs`` again)."""
    values, other, augmented = _bindings(norm)
    plain = [v for v in values.get(target, []) if v is None or id(v) not in augmented]
    return target not in other and bool(plain) and all(isinstance(v, (cst.List, cst.Tuple, cst.ListComp))
                                                       for v in plain)


def _list_target(norm: Normalizer, target: str) -> bool:
    """Whether ``target`` is bound only to list displays or list comprehensions, besides its augmented
    assignments."""
    values, other, augmented = _bindings(norm)
    plain = [v for v in values.get(target, []) if v is None or id(v) not in augmented]
    return target not in other and bool(plain) and all(isinstance(v, (cst.List, cst.ListComp)) for v in plain)


def _keeps_target(norm: Normalizer, value: cst.BaseExpression) -> bool:
    """Whether ``x op= value`` is ``x = x op value`` for every target NumPy accepts (statically)."""
    if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(value, (cst.List, cst.Tuple)):
        return not _numbers_only(value)
    if isinstance(value, (cst.Name, cst.Attribute)):
        known, v = norm.constant(value)
        if known:
            return _python_number(v)
    return _number_expr(value, _number_names(norm))


_TIGHT = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def statement(norm: Normalizer, s: cst.AugAssign, target: cst.Name) -> None:
    """``target op= value`` as the normalizer's statements."""
    op = AUG_TO_BIN[type(s.operator).__name__]()  # type: ignore[abstract]
    if type(op) is cst.Add and type(s.value) is cst.Tuple and _list_target(norm, target.value):
        # (xs += (a, b) of a list extends it by the tuple's items: Python's list.__iadd__; an array value adds)
        value = norm.atom(cst.List(elements=s.value.elements))
        norm.assign(target, cst.BinaryOperation(left=target, operator=op, right=value), s)
        return
    value = norm.atom(s.value)
    new = cst.BinaryOperation(left=target, operator=op, right=value)
    alias = norm.checked_in_place.get(id(s))  # (w bound to params["w"] or W[i], read later: refused if an array)
    if alias is None and _keeps_target(norm, s.value) or _sequence_target(norm, target.value):
        norm.assign(target, new, s)
        return
    name = cst.Name(norm.fresh(BINOP_HINT[type(op).__name__]))
    norm.assign(name, new, s)
    norm.assign(target, checked_call(target, name, alias), s)


def checked_call(target: cst.BaseExpression, new: cst.Name, alias: tuple[str, int] | None) -> cst.Call:
    """``in_place(target, new)``, with ``alias="W[i]"`` (and ``rank=2`` where ``target`` is the variable indexed,
    ``W``) where NumPy's change would reach an item read after it (aliasing.scan, item_views.py)."""
    args = [cst.Arg(target), cst.Arg(new)]
    if alias is not None:
        args.append(cst.Arg(cst.SimpleString(repr(alias[0])), keyword=cst.Name("alias"), equal=_TIGHT))
        if alias[1] != 1:
            args.append(cst.Arg(cst.Integer(str(alias[1])), keyword=cst.Name("rank"), equal=_TIGHT))
    return cst.Call(func=cst.Name(IN_PLACE), args=args)
