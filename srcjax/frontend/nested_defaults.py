"""Nested functions with defaults: ``def g(v, k=k)`` inside a loop (the idiom that captures the loop variable).

A default is evaluated when the ``def`` runs. Where the function is only ever called by name, with its
parameters without defaults (``g(x)``: never stored, passed or called with the defaulted ones), every call runs
the function the latest ``def`` made, so the value that ``def`` saw can be kept in a name of the enclosing
function instead: ``g_k_default = k`` before the ``def``, and ``k = g_k_default`` first in its body. The nested
function then has plain positional parameters, which the normalizer takes (:func:`rewrite`). Any other use
(``fs.append(g)``, ``g(x, 2)``) is left as it is, and refused as before ("nested functions with defaults").
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
    ok = [d for d in defs if _called_plainly(src.fdef, d)]
    if not ok:
        return src
    seen = {n.value for n in walk(src.fdef) if type(n) is cst.Name}  # type: ignore[attr-defined]
    fdef = src.fdef.visit(_Move({id(d) for d in ok}, seen, src.positions))
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


def _called_plainly(fdef: cst.FunctionDef, d: cst.FunctionDef) -> bool:
    """Whether every other occurrence of ``d``'s name in ``fdef`` is the callee of a call passing exactly its
    parameters without defaults, by position; and ``d`` is the only ``def`` of that name."""
    name = d.name.value
    required = sum(x.default is None for x in d.params.params)
    bad = False
    callees: set[int] = set()
    defs = 0

    class V(Visitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> None:
            nonlocal defs
            defs += n.name.value == name
            callees.add(id(n.name))

        def visit_Call(self, n: cst.Call) -> None:
            if isinstance(n.func, cst.Name) and n.func.value == name:
                if len(n.args) == required and all(a.keyword is None and not a.star for a in n.args):
                    callees.add(id(n.func))

        def visit_Name(self, n: cst.Name) -> None:
            nonlocal bad
            if n.value == name and id(n) not in callees:
                bad = True

    V().walk(fdef)
    return defs == 1 and not bad


class _Move(cst.CSTTransformer):
    def __init__(self, ids: set[int], taken: set[str], positions: dict[Any, Any]) -> None:
        self.ids, self.fresh, self.positions = ids, Names(taken).fresh, positions
        self.origins: dict[int, Any] = {}  # id of a node rewritten -> the node it was

    def on_leave(self, original: Any, updated: Any) -> Any:
        if isinstance(updated, (cst.IndentedBlock, cst.Module)):
            body: list[Any] = []
            for st in updated.body:
                body.extend(self.moved(st) if isinstance(st, cst.FunctionDef) and id(self.origin(st)) in self.ids
                            else [st])
            if len(body) != len(updated.body):
                updated = updated.with_changes(body=body)
        if updated is not original and original in self.positions:
            self.positions[updated] = self.positions[original]  # (errors keep the user's positions)
        self.origins[id(updated)] = self.origin(original)
        return updated

    def origin(self, node: Any) -> Any:
        return self.origins.get(id(node), node)

    def moved(self, d: cst.FunctionDef) -> list[Any]:
        saves, loads, params = [], [], []
        for p in d.params.params:
            if p.default is None:
                params.append(p)
                continue
            keep = self.fresh(f"{d.name.value}_{p.name.value}_default")
            saves.append(cst.SimpleStatementLine(body=[cst.Assign(
                targets=[cst.AssignTarget(target=cst.Name(keep))], value=p.default)]))
            loads.append(cst.SimpleStatementLine(body=[cst.Assign(
                targets=[cst.AssignTarget(target=p.name)], value=cst.Name(keep))]))
            if p.default in self.positions:
                self.positions[saves[-1]] = self.positions[p.default]
                self.positions[loads[-1]] = self.positions[p.default]
        assert isinstance(d.body, cst.IndentedBlock)
        new = d.with_changes(params=d.params.with_changes(params=[p.with_changes(comma=cst.MaybeSentinel.DEFAULT)
                                                                  for p in params]),
                             body=d.body.with_changes(body=[*loads, *d.body.body]))
        if d in self.positions:
            self.positions[new] = self.positions[d]
        return [*saves, new]
