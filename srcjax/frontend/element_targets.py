"""Assignments that write array elements through a chained or a tuple target, written as single writes for the
normalizer (as Python runs them: the value evaluated once, then each target assigned left to right):

- ``corr[i + 1:, i] = corr[i, i + 1:] = v``  ->  ``chained = v``, ``corr[i + 1:, i] = chained``,
  ``corr[i, i + 1:] = chained`` (any mix of names, elements and tuples among the targets); a literal value is
  written into each target as it is (``force[0] = force[-1] = 0, 0``: no object two items could share);
- ``KE[0], PE[0] = energy(pos)``  ->  ``item, item_1 = energy(pos)``, ``KE[0] = item``, ``PE[0] = item_1``
  (nested tuples the same way, level by level).

Each statement written keeps the user's statement's location, and its entry of ``checked_in_place``
(frontend/aliasing.py scans every target of a chained or tuple assignment), or its target's own (an element whose
write a later value of the statement may view: ``y[0]`` of ``y[0], y[1] = y[1], y[0]``). A starred target with an
element (``x[0], *rest = v``) is left to the normalizer, which refuses it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .syntax import is_literal

if TYPE_CHECKING:
    from .normalize import Normalizer

__all__ = ["assign", "writes_an_element"]


def _has_element(t: cst.BaseExpression) -> bool:
    if type(t) is cst.Subscript:
        return True
    if type(t) is cst.Tuple or type(t) is cst.List:
        return all(type(e) is not cst.StarredElement for e in t.elements) and any(
            _has_element(e.value) for e in t.elements)
    return False


def writes_an_element(s: cst.Assign) -> bool:
    """Whether ``s`` is a chained assignment or one to a tuple target with an array element among its targets."""
    if len(s.targets) == 1 and type(s.targets[0].target) is cst.Subscript:
        return False  # (a single write: frontend/subscript_writes.py)
    return any(_has_element(t.target) for t in s.targets)


def assign(norm: Normalizer, s: cst.Assign) -> None:
    """Emit ``s`` (:func:`writes_an_element`) as assignments to one target each."""
    if len(s.targets) > 1 and is_literal(s.value):  # (`force[0] = force[-1] = 0, 0`: a literal is no shared object)
        stmts = [cst.Assign(targets=[t], value=s.value) for t in s.targets]
    elif len(s.targets) > 1:
        name = cst.Name(norm.fresh("chained"))
        stmts = [cst.Assign(targets=[cst.AssignTarget(name)], value=s.value)]
        stmts += [cst.Assign(targets=[t], value=cst.Name(name.value)) for t in s.targets]
    else:
        target = s.targets[0].target
        assert isinstance(target, (cst.Tuple, cst.List))
        names = [cst.Name(norm.fresh("item")) for _ in target.elements]
        unpack = cst.Tuple(elements=[cst.Element(n) for n in names], lpar=[], rpar=[])
        stmts = [cst.Assign(targets=[cst.AssignTarget(unpack)], value=s.value)]
        stmts += [cst.Assign(targets=[cst.AssignTarget(e.value)],  # type: ignore[arg-type]
                             value=cst.Name(n.value)) for e, n in zip(target.elements, names, strict=True)]
    positions = norm.src.positions
    checked = norm.checked_in_place.get(id(s))
    for st in stmts:
        if s in positions:
            positions[st] = positions[s]
        own = norm.checked_in_place.get(id(st.targets[0].target))  # (the check of this target: `y[0]` of `y[0],
        if own is not None or checked is not None:  # y[1] = y[1], y[0]`, whose value y[0] is read after it)
            norm.checked_in_place[id(st)] = own or checked  # type: ignore[assignment]
        norm.small_statement(st)
