"""Nested functions with defaults: ``def g(v, k=k)`` inside a loop (the idiom that captures the loop variable).

A default is evaluated when the ``def`` runs. Where the function is only ever called by name, its parameters
bound by position or keyword (``g(x)``, ``g(x, k=2)``: never stored or passed, no ``*args``), every call runs the
function the latest ``def`` made, so the value that ``def`` saw can be kept in a name of the enclosing function
instead: ``g_k_default = k`` before the ``def``, and each call passes every parameter by position, the name where
it leaves the default out (``g(x, g_k_default)``, ``g(x, 2)``). The nested function then has plain positional
parameters, which the normalizer takes (:func:`rewrite`). Any other use (``fs.append(g)``, ``g(*xs)``) is left as
it is, and refused as before ("nested functions with defaults").
"""

from __future__ import annotations

import dataclasses
from typing import Any

import libcst as cst

from .names import Names, Visitor, walk
from .read import FunctionSource


def rewrite(src: FunctionSource) -> FunctionSource:
    """``src`` with its nested functions' defaults moved out as above (``src`` itself where there are none)."""
    defs = [d for d in _nested_defs(src.fdef) if _rewritable(d)]
    if not defs:
        return src
    calls: dict[int, tuple[int, list[int | None]]] = {}
    ok = [d for d in defs if _calls(src.fdef, d, calls)]
    if not ok:
        return src
    seen = {n.value for n in walk(src.fdef) if type(n) is cst.Name}  # type: ignore[attr-defined]
    fresh = Names(seen).fresh
    omitted = {(d, i) for d, args in calls.values() for i, a in enumerate(args) if a is None}
    keeps = {id(d): {i: fresh(f"{d.name.value}_{p.name.value}_default") for i, p in enumerate(d.params.params)
                     if (id(d), i) in omitted} for d in ok}
    fdef = src.fdef.visit(_Move(keeps, calls, src.positions))
    assert isinstance(fdef, cst.FunctionDef)
    return dataclasses.replace(src, fdef=fdef)


def _nested_defs(fdef: cst.FunctionDef) -> list[cst.FunctionDef]:
    """Every ``def`` inside ``fdef``, in the order a visitor meets them. A ``def`` is a statement, so only
    blocks are walked (compound statements and their clauses), never expressions or simple lines: a
    visitor over every node of the function was a third of normalizing one (#15's first calls)."""
    found: list[cst.FunctionDef] = []
    _defs_in(fdef.body, found)
    return found


# the nodes a `def` can be inside: blocks, compound statements and their clauses (else, except, finally, case)
_HOLDERS = (cst.BaseSuite, cst.BaseCompoundStatement, cst.Else, cst.Finally, cst.ExceptHandler,
            cst.ExceptStarHandler, cst.MatchCase)


_HELD: dict[type, bool] = {}  # a node's type -> whether a `def` can be inside it (one of _HOLDERS, not a line)


def _holds_defs(t: type) -> bool:
    """Whether ``t`` is one of :data:`_HOLDERS` other than a line of simple statements, by its MRO (``isinstance``
    against libcst's abstract classes walks each one's subclasses the first time a process asks it of a type)."""
    k = _HELD[t] = t is not cst.SimpleStatementLine and not frozenset(_HOLDERS).isdisjoint(t.__mro__)
    return k


def _defs_in(node: cst.CSTNode, found: list[cst.FunctionDef]) -> None:
    children = node.body if type(node) is cst.IndentedBlock else node.children
    for ch in children:
        t = type(ch)
        if not (_HELD[t] if t in _HELD else _holds_defs(t)):
            continue
        if type(ch) is cst.FunctionDef:
            found.append(ch)
        _defs_in(ch, found)


def _rewritable(d: cst.FunctionDef) -> bool:
    p = d.params
    return not d.decorators and d.asynchronous is None and not p.posonly_params and not p.kwonly_params and \
        not isinstance(p.star_arg, cst.Param) and p.star_kwarg is None and any(x.default is not None for x in p.params)


def _calls(fdef: cst.FunctionDef, d: cst.FunctionDef, calls: dict[int, tuple[int, list[int | None]]]) -> bool:
    """Whether every other occurrence of ``d``'s name in ``fdef`` is the callee of a call that binds its
    parameters by position or keyword (no ``*``/``**``), and ``d`` is the only ``def`` of that name. Each such
    call goes into ``calls`` (by the call's id) as ``d``'s id and, per parameter in order, the index of the
    argument passing it (None: its default)."""
    name = d.name.value
    params = [p.name.value for p in d.params.params]
    required = {p.name.value for p in d.params.params if p.default is None}
    bad = False
    callees: set[int] = set()
    found: dict[int, tuple[int, list[int | None]]] = {}
    defs = 0

    def bound(n: cst.Call) -> list[int | None] | None:
        args: dict[str, int] = {}
        for i, a in enumerate(n.args):
            if a.star:
                return None
            key = params[i] if a.keyword is None and i < len(params) else a.keyword.value if a.keyword else None
            if key is None or key not in params or key in args:
                return None
            args[key] = i
        return [args.get(p) for p in params] if required <= set(args) else None

    class V(Visitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> None:
            nonlocal defs
            defs += n.name.value == name
            callees.add(id(n.name))

        def visit_Call(self, n: cst.Call) -> None:
            if isinstance(n.func, cst.Name) and n.func.value == name:
                args = bound(n)
                if args is not None:
                    callees.add(id(n.func))
                    found[id(n)] = (id(d), args)

        def visit_Name(self, n: cst.Name) -> None:
            nonlocal bad
            if n.value == name and id(n) not in callees:
                bad = True

    V().walk(fdef)
    if defs != 1 or bad:
        return False
    calls.update(found)
    return True


class _Move(cst.CSTTransformer):
    """Each ``def`` of ``keeps`` (by id: its parameters' indices -> the names keeping their defaults) without
    defaults, the defaults it needs saved before it; each call of ``calls`` passing every parameter by position."""

    def __init__(self, keeps: dict[int, dict[int, str]], calls: dict[int, tuple[int, list[int | None]]],
                 positions: dict[Any, Any]) -> None:
        self.keeps, self.calls, self.positions = keeps, calls, positions
        self.origins: dict[int, Any] = {}  # id of a node rewritten -> the node it was

    def on_leave(self, original: Any, updated: Any) -> Any:
        if isinstance(updated, (cst.IndentedBlock, cst.Module)):
            body: list[Any] = []
            for st in updated.body:
                body.extend(self.moved(st) if isinstance(st, cst.FunctionDef) and id(self.origin(st)) in self.keeps
                            else [st])
            if any(a is not b for a, b in zip(body, updated.body)) or len(body) != len(updated.body):
                updated = updated.with_changes(body=body)
        elif type(updated) is cst.Call and id(original) in self.calls:
            d, args = self.calls[id(original)]
            keep = self.keeps[d]
            updated = updated.with_changes(args=[
                cst.Arg(updated.args[a].value if a is not None else cst.Name(keep[i]),
                        comma=cst.MaybeSentinel.DEFAULT) for i, a in enumerate(args)])
        if updated is not original and original in self.positions:
            self.positions[updated] = self.positions[original]  # (errors keep the user's positions)
        self.origins[id(updated)] = self.origin(original)
        return updated

    def origin(self, node: Any) -> Any:
        return self.origins.get(id(node), node)

    def moved(self, d: cst.FunctionDef) -> list[Any]:
        saves = []
        for i, keep in self.keeps[id(self.origin(d))].items():
            default = d.params.params[i].default
            assert default is not None
            saves.append(cst.SimpleStatementLine(body=[cst.Assign(
                targets=[cst.AssignTarget(target=cst.Name(keep))], value=default)]))
            if default in self.positions:
                self.positions[saves[-1]] = self.positions[default]
        new = d.with_changes(params=d.params.with_changes(params=[
            p.with_changes(default=None, equal=cst.MaybeSentinel.DEFAULT, comma=cst.MaybeSentinel.DEFAULT)
            for p in d.params.params]))
        if d in self.positions:
            self.positions[new] = self.positions[d]
        return [*saves, new]
