"""Restructure early returns so a function has a single exit.

Shared by reverse-mode AD (which needs one ``return`` at the end to start the
adjoint sweep) and control-flow functionalization (an ``if`` on array data
becomes ``srcjax.lax.cond``, whose branches cannot return from the caller).

``single_exit`` moves the statements after an ``if`` that returns into the
branches that fall through, then turns every ``return v`` into ``result = v``
and ends the function with ``return result``. With ``spans`` (the
``id(node) -> Span`` map of :class:`~srcjax.frontend.normalize.NormalizedFunction`)
every rewritten statement keeps the span of the one it replaces.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import libcst as cst

from ..core import Span, UnsupportedSyntaxError

__all__ = ["ends_with_return", "has_return", "push_rest", "ReturnToAssign", "single_exit", "walk"]


def walk(stmts: Sequence[Any]) -> Iterable[tuple[Any, int]]:
    """(small statement or compound, loop depth) in program order, recursively."""
    return _walk(stmts, 0)


def _walk(ss: Sequence[Any], depth: int) -> Iterable[tuple[cst.CSTNode, int]]:
    """:func:`walk` from ``depth`` (a module-level generator: a nested one calling itself made a reference cycle per
    call, each left to the cyclic collector)."""
    for s in ss:
        if isinstance(s, cst.SimpleStatementLine):
            for small in s.body:
                yield small, depth
        elif isinstance(s, cst.If):
            yield s, depth
            yield from _walk(s.body.body, depth)
            orelse = s.orelse
            while orelse is not None:
                if isinstance(orelse, cst.If):
                    yield orelse, depth
                    yield from _walk(orelse.body.body, depth)
                    orelse = orelse.orelse
                else:
                    yield from _walk(orelse.body.body, depth)
                    orelse = None
        elif isinstance(s, (cst.For, cst.While)):
            yield s, depth
            yield from _walk(s.body.body, depth + 1)


def ends_with_return(stmts: Sequence[Any]) -> bool:
    """Every path through ``stmts`` ends in ``return`` (or ``raise``)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return isinstance(last.body[-1], (cst.Return, cst.Raise))
    if isinstance(last, cst.If):
        if last.orelse is None:
            return False
        other = [last.orelse] if isinstance(last.orelse, cst.If) else list(last.orelse.body.body)
        return ends_with_return(list(last.body.body)) and ends_with_return(other)
    return False


def has_return(stmts: Sequence[Any]) -> bool:
    return any(s.__class__ is cst.Return for s, _ in walk(stmts))  # (exact: libcst's node classes are final)


def push_rest(stmts: list[Any], spans: dict[int, Span] | None = None) -> list[Any]:
    """Move the statements after an ``if`` that returns into its branches that fall through."""
    out: list[Any] = []
    for i, s in enumerate(stmts):
        if isinstance(s, cst.If) and has_return([s]):
            rest = stmts[i + 1:]
            body = list(s.body.body)
            body = push_rest(body if ends_with_return(body) else body + rest, spans)
            if s.orelse is None:
                other: list[Any] = list(rest)
            elif isinstance(s.orelse, cst.If):
                other = [s.orelse] + ([] if ends_with_return([s.orelse]) else rest)
            else:
                other = list(s.orelse.body.body)
                other = other if ends_with_return(other) else other + rest
            other = push_rest(other, spans)
            new = s.with_changes(body=cst.IndentedBlock(body=body),  # type: ignore[arg-type]
                                 orelse=cst.Else(body=cst.IndentedBlock(body=other or [
                                     cst.SimpleStatementLine(body=[cst.Pass()])])))
            if spans is not None and id(s) in spans:
                spans[id(new)] = spans[id(s)]
            out.append(new)
            return out
        out.append(s)
    return out


class ReturnToAssign(cst.CSTTransformer):
    """``return v`` -> ``name = v`` (not inside nested function definitions)."""

    def __init__(self, name: str, spans: dict[int, Span] | None = None, statements_only: bool = False) -> None:
        self.name = name
        self.spans = spans
        self.statements_only = statements_only

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.statements_only and isinstance(node, (cst.BaseExpression, cst.BaseSmallStatement)):
            return False  # (a `return` is a small statement: left as it is, then rewritten on leaving it)
        return super().on_visit(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def on_leave(self, original: Any, updated: Any) -> Any:
        out = super().on_leave(original, updated)
        if self.spans is not None and out is not original and id(original) in self.spans:
            self.spans[id(out)] = self.spans[id(original)]
        return out

    def leave_Return(self, original: cst.Return, updated: cst.Return) -> Any:
        return cst.Assign(targets=[cst.AssignTarget(target=cst.Name(self.name))],
                          value=updated.value or cst.Name("None"))


def single_exit(stmts: list[Any], result: str, spans: dict[int, Span] | None = None,
                statements_only: bool = False) -> list[Any]:
    """Rewrite early returns in ``if``s so the function has one ``return`` at the end.

    A ``return`` inside a loop cannot be moved this way: :class:`UnsupportedSyntaxError`.
    ``statements_only``: the compound statements and lines rebuilt, not what is inside a line (its small
    statements and expressions stay the objects of ``stmts``, shared by the copies of a statement moved
    into both branches): for a caller that rebuilds every node afterwards (the inliner renames them),
    which spares a walk over every expression (it was half of the inliner's time).
    """
    last_is_return = bool(stmts) and isinstance(stmts[-1], cst.SimpleStatementLine) and \
        isinstance(stmts[-1].body[-1], cst.Return)
    if not has_return(stmts[:-1] if last_is_return else stmts):
        return stmts
    for s, _depth in walk(stmts):
        if isinstance(s, (cst.For, cst.While)) and has_return(list(s.body.body)):
            raise UnsupportedSyntaxError("`return` inside a loop cannot be moved to the end of the function",
                                         span=spans.get(id(s)) if spans is not None else None,
                                         hint="break out of the loop with a flag and return after it")
    flat = push_rest(stmts, spans)
    block = cst.IndentedBlock(body=flat).visit(ReturnToAssign(result, spans, statements_only))
    assert isinstance(block, cst.IndentedBlock)
    ret = cst.SimpleStatementLine(body=[cst.Return(value=cst.Name(result))])
    if spans is not None and last_is_return and id(stmts[-1]) in spans:
        spans[id(ret)] = spans[id(stmts[-1])]
    return list(block.body) + [ret]
