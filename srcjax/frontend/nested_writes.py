"""Writes into an item of a local list or dict: ``xs[t][inputs[t]] = 1`` (min-char-rnn's one-hot inputs, ``xs`` a
dict of arrays), ``state["mu"][k] = v`` (an optimizer's state, a dict of dicts).

Python and NumPy change the item ``c[key]`` in place; srcjax's values are immutable, so the statement is
``c = item_write(c, key, inner, value)`` (``srcjax.composites.item_write``: ``c`` with its item updated at
``inner``, functionally), which every transformation follows as any helper. One level of nesting; ``c`` a local
name (an argument's container is changed for the function only, as ``c[k] = v`` is).

What NumPy would also change is refused, never silently different (:func:`check_item_sources`, with
``view_updates.check_views`` for a name bound to ``c[key]`` before and read after): an item stored from a name that
the function reads elsewhere (``a = np.zeros(3); xs[0] = a; xs[0][1] = 5.0``, then ``a`` read: NumPy changed
``a`` too). A copy of ``c`` itself read later is refused by ``aliasing.check_in_place_aliasing``. An array ``c``
(``a[i][j] = v``, a view of a row written into) is refused by ``item_write`` while specializing, with a hint to
write ``a[i, j] = v``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst

from ..core import Span, UnsupportedSyntaxError
from .names import Visitor, names_in
from .syntax import attr_chain

ITEM_WRITE = "item_write"  # (the composite's name: view_updates.check_views reads its calls as writes)


def item_write(norm: Any, t: cst.Subscript, value: cst.BaseExpression, origin: cst.CSTNode) -> bool:
    """``c[key][inner] = value`` written ``c = item_write(c, key, inner, value)`` (True), or False: not such a
    target (deeper, or ``c`` not a local name)."""
    from .. import composites

    outer = t.value
    if type(outer) is not cst.Subscript or type(outer.value) is not cst.Name or \
            outer.value.value not in norm.locals and outer.value.value not in norm.temps:
        return False
    c = cst.Name(outer.value.value)
    key, inner = norm.subscript_key(outer), norm.subscript_key(t)
    write = norm.helper_call_name(composites.item_write, origin)
    norm.assign(c, cst.Call(func=write, args=[cst.Arg(c), cst.Arg(key), cst.Arg(inner), cst.Arg(value)]), origin)
    norm.updated.add(c.value)
    return True


def _lines(body: Sequence[Any]) -> tuple[list[cst.SimpleStatementLine], dict[int, list[set[int]]]]:
    """The statement lines in program order, and per line (by id) the sets of lines of the loops around it."""
    order: list[cst.SimpleStatementLine] = []
    loops: dict[int, list[set[int]]] = {}
    open_loops: list[set[int]] = []

    class V(Visitor):
        def visit_SimpleStatementLine(self, n: cst.SimpleStatementLine) -> None:
            order.append(n)
            loops[id(n)] = list(open_loops)
            for lp in open_loops:
                lp.add(id(n))

        def visit_For(self, n: cst.For) -> None:
            open_loops.append(set())

        def leave_For(self, n: cst.For) -> None:
            open_loops.pop()

        def visit_While(self, n: cst.While) -> None:
            open_loops.append(set())

        def leave_While(self, n: cst.While) -> None:
            open_loops.pop()

    for st in body:
        V().walk(st)
    return order, loops


def _stored(value: cst.BaseExpression, c: str) -> list[str]:
    """The names ``value`` (bound to ``c``) stores as items of ``c``: a display's elements, the value of an
    ``index_update(c, k, v)``. (Not ``item_write(c, k, j, v)``'s: ``v`` goes one level deeper, into the item
    ``c[k]``, whose later one-level writes replace an element or copy into an array, never change ``v``.)"""
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return [e.value.value for e in value.elements if isinstance(e.value, cst.Name)]
    if isinstance(value, cst.Dict):
        return [e.value.value for e in value.elements if isinstance(e, cst.DictElement) and
                isinstance(e.value, cst.Name)]
    if isinstance(value, cst.Call) and value.args and isinstance(value.args[-1].value, cst.Name) and \
            isinstance(value.args[0].value, cst.Name) and value.args[0].value.value == c and (
                attr_chain(value.func) == ["srcjax", "lax", "index_update"]):
        return [value.args[-1].value.value]
    return []


def check_item_sources(body: Sequence[Any], spans: dict[int, Span]) -> None:
    """Refuse ``c = item_write(c, ...)`` where an item of ``c`` was stored from a name the function reads
    elsewhere: NumPy's in-place change of the item changes that name's array too."""
    order, loops = _lines(body)
    writes = [(ln, ln.body[0]) for ln in order if isinstance(ln.body[0], cst.Assign) and
              isinstance(ln.body[0].value, cst.Call) and isinstance(ln.body[0].value.func, cst.Name) and
              ln.body[0].value.func.value.startswith(ITEM_WRITE)]
    for line, w in writes:
        c = w.targets[0].target.value  # type: ignore[attr-defined]
        around = set().union(*loops[id(line)])  # (a read anywhere in a loop around the write comes after it)
        for k, ln in enumerate(order):
            s = ln.body[0]
            if not (isinstance(s, cst.Assign) and len(s.targets) == 1 and isinstance(s.targets[0].target, cst.Name)
                    and s.targets[0].target.value == c):
                continue
            later = [other for j, other in enumerate(order) if j > k or id(other) in around and other is not ln]
            for n in _stored(s.value, c):
                if n != c and any(n in names_in(other, skip_targets=True) for other in later):
                    raise UnsupportedSyntaxError(
                        f"writing into an item of {c!r} would also change {n!r} in NumPy (the item is {n!r}'s "
                        f"array), and {n!r} is used elsewhere; srcjax updates values functionally",
                        span=spans.get(id(line)),
                        hint=f"store a copy: {c}[...] = {n}.copy(), or write {n}[...] = v instead")
