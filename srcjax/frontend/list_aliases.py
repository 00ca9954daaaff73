"""A list (or dict) changed in place while a second name holds it: found, for the transformations to refuse.

Python's ``m = out`` makes ``m`` the same list as ``out``: ``out.append(y)`` later is seen through ``m``, and
through a container holding it (``d = {"l": out}``, ``t = (out, 1)``, ``outer.append(out)``), or an item read
back out of one (``getitem = t[0]``). Derivative and batched source follow a list by the name it is changed
through (the tangent list ``out_dot``, the cotangent list ``out_bar``, the tape of appends), not by identity, so
a read through the other name saw the list as it was: a silently wrong Jacobian under ``jacrev``, a wrong
``vmap`` (``jit`` runs Python's lists and was right). :func:`shared_changes` finds, in a function's normalized
body, each statement that makes such a second reference to a list that is then changed in place while both
references hold it, with the change; the transformations refuse it at the user's line.

The walk is flow-sensitive in program order (a loop's body twice: what one iteration makes shared, the next may
change): a name rebound to a new value leaves its old list (``prev = cur; cur = []; cur.append(y)`` changes the
new list, which nothing else holds). Both branches of an ``if`` are walked, one after the other (conservative).
"""

from __future__ import annotations

import itertools
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from . import list_methods
from .names import code, names_in, target_names

__all__ = ["SharedChange", "lists_of_rows", "shared_changes"]

_CHANGES = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort", "update",
                      "setdefault", "popitem"})
"""Methods that change a list or dict in place."""

_HOLDS = frozenset({"append", "insert", "extend", "setdefault"})
"""Of those, the ones that store their argument in the container (``outer.append(out)``: outer holds out)."""


@dataclass(frozen=True)
class SharedChange:
    """``made`` gives the list a second reference (``alias``, next to ``name``); ``change`` changes it later."""

    made: cst.CSTNode
    name: str
    alias: str
    change: cst.CSTNode
    item: bool = False  # the second reference is an item read out of a container (`lists[0]`, `for r in rows`)


@dataclass
class _State:
    objects: Iterator[int] = field(default_factory=itertools.count)
    refs: dict[str, frozenset[int]] = field(default_factory=dict)  # name -> the objects it may be
    held: dict[int, set[int]] = field(default_factory=dict)  # container -> the objects it holds
    made: dict[int, tuple[cst.CSTNode, str, str, bool]] = field(default_factory=dict)  # object -> where shared
    found: list[SharedChange] = field(default_factory=list)

    def fresh(self) -> frozenset[int]:
        return frozenset({next(self.objects)})

    def of(self, name: str) -> frozenset[int]:
        if name not in self.refs:  # (a parameter, a global: a value of its own)
            self.refs[name] = self.fresh()
        return self.refs[name]

    def holders(self, obj: int) -> list[str]:
        """The names by which ``obj`` is reached: its own, and those of containers holding it."""
        out = [n for n, objs in self.refs.items() if obj in objs]
        out += [n for n, objs in self.refs.items() if any(obj in self.held.get(c, ()) for c in objs)]
        return out

    def share(self, objs: frozenset[int], node: cst.CSTNode, name: str, alias: str, item: bool = False) -> None:
        for o in objs:
            self.made.setdefault(o, (node, name, alias, item))

    def change(self, name: str, node: cst.CSTNode) -> None:
        for o in self.of(name):
            if o in self.made and len(set(self.holders(o))) > 1:
                made, first, alias, item = self.made[o]
                if not any(f.made is made for f in self.found):
                    self.found.append(SharedChange(made, first, alias, node, item))


def shared_changes(body: Sequence[Any], fn: Any = None) -> list[SharedChange]:
    """Each statement of ``body`` (normalized statements) that makes a second reference to a list or dict changed
    in place afterwards while both hold it (see the module docstring); none without a walk where the function
    ``fn`` the body comes from calls no method that changes a container."""
    if fn is not None and not _calls_changes(getattr(fn, "__code__", None)):  # (most functions: no walk)
        return []
    st = _State()
    _block(st, body)
    return st.found


def _calls_changes(code_obj: Any) -> bool:
    """Whether a function's code (or its nested code) names a method that changes a container in place (None,
    unknown: True)."""
    if code_obj is None:
        return True
    if list_methods.may_change(code_obj):  # (`cur += [x]`, written `cur.append(x)` by list_methods: was not walked,
        return True  # `cur = [2 * p for p in prev]; cur += [x]; prev = cur[:]` a silently wrong gradient)
    return bool(_CHANGES & set(code_obj.co_names)) or any(
        isinstance(c, types.CodeType) and _calls_changes(c) for c in code_obj.co_consts)


def _block(st: _State, stmts: Sequence[Any]) -> None:
    for s in stmts:
        if isinstance(s, cst.SimpleStatementLine):
            for small in s.body:
                _small(st, small)
        elif isinstance(s, cst.For):
            seq = s.iter
            for _ in range(2):  # (what one iteration makes shared, the next may change)
                items = _items(st, seq)
                for n in target_names(s.target):
                    st.refs[n] = items if isinstance(s.target, cst.Name) and items else st.fresh()
                if isinstance(s.target, cst.Name) and items and isinstance(seq, cst.Name):  # for r in rows
                    st.share(items, s, seq.value, s.target.value, item=True)
                _block(st, s.body.body)
            if s.orelse is not None:
                _block(st, s.orelse.body.body)
        elif isinstance(s, cst.While):
            for _ in range(2):
                _block(st, s.body.body)
        elif isinstance(s, cst.If):
            _block(st, s.body.body)
            if s.orelse is not None:
                _block(st, [s.orelse] if isinstance(s.orelse, cst.If) else s.orelse.body.body)
        elif isinstance(s, (cst.With, cst.Try)):
            _block(st, s.body.body)


def _items(st: _State, value: cst.BaseExpression) -> frozenset[int]:
    """The objects an item of ``value`` may be (``t[0]``, ``d["l"]``, ``for r in rows``): those its containers hold."""
    if isinstance(value, cst.Name):
        return frozenset(o for c in st.of(value.value) for o in st.held.get(c, ()))
    return frozenset()


def _display_names(value: cst.BaseExpression) -> list[str]:
    """The names a display holds as items, nested displays too (``{"l": out}``, ``(out, 1)``, ``[[a, b], c]``)."""
    if isinstance(value, cst.Name):
        return [value.value]
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return [n for e in value.elements for n in _display_names(e.value)]
    if isinstance(value, cst.Dict):
        return [n for e in value.elements if isinstance(e, cst.DictElement) for n in _display_names(e.value)]
    return []


def _nested_displays(value: cst.BaseExpression) -> int:
    """How many lists, dicts or sets a display holds made in it (``[[], []]``, ``{"a": [x]}``, ``[[v] for v in x]``
    counts one: a comprehension's lists are alike)."""
    elements = [e.value for e in value.elements if isinstance(e, (cst.Element, cst.DictElement))] \
        if isinstance(value, (cst.List, cst.Tuple, cst.Dict, cst.Set)) else []
    return sum(1 + _nested_displays(e) if isinstance(e, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp))
               else _nested_displays(e) for e in elements)


def _small(st: _State, s: cst.CSTNode) -> None:
    if isinstance(s, cst.Assign):
        value = s.value
        for t in s.targets:
            tgt = t.target
            if isinstance(tgt, cst.Name) and isinstance(value, cst.Name):  # m = out: one list, two names
                objs = st.of(value.value)
                st.refs[tgt.value] = objs
                st.share(objs, s, value.value, tgt.value)
            elif isinstance(tgt, cst.Name) and isinstance(value, (cst.List, cst.Tuple, cst.Dict, cst.Set)):
                made = st.fresh()
                inner = [n for n in _display_names(value) if n in st.refs]
                for n in inner:  # d = {"l": out}: d holds out's list
                    st.held.setdefault(next(iter(made)), set()).update(st.refs[n])
                    st.share(st.refs[n], s, n, tgt.value)
                for _ in range(_nested_displays(value)):  # lists = [[], []]: two lists of its own
                    st.held.setdefault(next(iter(made)), set()).add(next(st.objects))
                st.refs[tgt.value] = made
            elif isinstance(tgt, cst.Name) and isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) \
                    and all(isinstance(e.slice, cst.Slice) for e in value.slice):
                made = st.fresh()  # out = out[::-1], rest = rows[1:]: a list of its own holding the same items (was
                items = _items(st, value.value)  # read as an item: `bwd = [z]; bwd = bwd[::-1]; bwd.append(y)`
                st.held[next(iter(made))] = set(items)  # changed "the list z", a false refusal)
                if items:
                    st.share(items, s, value.value.value, tgt.value, item=True)
                st.refs[tgt.value] = made
            elif isinstance(tgt, cst.Name) and isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) \
                    and (items := _items(st, value.value)):
                st.refs[tgt.value] = items  # getitem = t[0]: the list t holds
                st.share(items, s, value.value.value, tgt.value, item=True)
            elif isinstance(tgt, cst.Subscript) and isinstance(tgt.value, cst.Name):
                if isinstance(value, cst.Name) and value.value in st.refs:  # d["l"] = out: d holds it too
                    for c in st.of(tgt.value.value):
                        st.held.setdefault(c, set()).update(st.refs[value.value])
                    st.share(st.refs[value.value], s, value.value, code(tgt))
                st.change(tgt.value.value, s)
            else:
                for n in target_names(tgt):
                    st.refs[n] = st.fresh()
    elif isinstance(s, cst.AugAssign) and isinstance(s.target, cst.Name) and \
            isinstance(s.value, (cst.List, cst.Tuple, cst.Dict)):
        st.change(s.target.value, s)  # (out += [y]: in place, for a list)
    elif isinstance(s, cst.AugAssign):
        for n in names_in(s.target):
            st.refs[n] = st.fresh()
    elif isinstance(s, cst.Expr) and isinstance(call := s.value, cst.Call) and \
            isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) and \
            call.func.attr.value in _CHANGES:
        recv = call.func.value.value
        if call.func.attr.value in _HOLDS:  # outer.append(out): outer holds out's list
            for a in call.args:
                if isinstance(a.value, cst.Name) and a.value.value in st.refs:
                    for c in st.of(recv):
                        st.held.setdefault(c, set()).update(st.refs[a.value.value])
                    st.share(st.refs[a.value.value], s, a.value.value, recv)
        st.change(recv, s)


def lists_of_rows(body: Sequence[Any]) -> set[str]:
    """The lists of ``body`` some item of which is a list, tuple or dict (``items.append((v, w))``, ``rows.append(row)``
    of a list ``row``, ``[[a, b], c]``): ``np.stack`` of them makes each such item an array first, and their
    cotangents are lists like them (``rows_bars``, not ``join_bars``)."""
    displays = (cst.List, cst.Tuple, cst.Dict)
    lists: set[str] = set()
    appended: list[tuple[str, cst.BaseExpression]] = []
    copies: list[tuple[str, str]] = []
    for node in _statements(body):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name):  # rows = items
            copies += [(n, node.value.value) for t in node.targets for n in target_names(t.target)]
        if isinstance(node, cst.Assign) and isinstance(node.value, (cst.List, cst.Tuple, cst.Dict, cst.ListComp)):
            lists.update(n for t in node.targets for n in target_names(t.target))  # (t = (v, w): a row)
            items = [e.value for e in node.value.elements if isinstance(e, (cst.Element, cst.DictElement))] \
                if not isinstance(node.value, cst.ListComp) else [node.value.elt]
            appended += [(n, e) for t in node.targets for n in target_names(t.target) for e in items]
        elif isinstance(node, cst.Expr) and isinstance(call := node.value, cst.Call) and call.args and \
                isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) and \
                call.func.attr.value in ("append", "insert"):
            lists.add(call.func.value.value)
            appended.append((call.func.value.value, call.args[-1].value))
    rows = {n for n, e in appended if isinstance(e, displays) or isinstance(e, cst.Name) and e.value in lists}
    for _ in copies:  # (through copies of copies)
        rows |= {n for n, src in copies if src in rows}
    return rows


def _statements(stmts: Sequence[Any]) -> Iterator[cst.CSTNode]:
    """The small statements of ``stmts``, in loops and branches too."""
    for s in stmts:
        if isinstance(s, cst.SimpleStatementLine):
            yield from s.body
        elif isinstance(s, (cst.For, cst.While, cst.If, cst.With, cst.Try)):
            yield from _statements(s.body.body)
            orelse = getattr(s, "orelse", None)
            if isinstance(orelse, cst.If):
                yield from _statements([orelse])
            elif orelse is not None:
                yield from _statements(orelse.body.body)
