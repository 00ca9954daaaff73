"""``for ... else`` and ``while ... else`` read as a flag the loop's ``break`` clears.

Input: a user's function (``FunctionSource``). Output: the same function in which each loop with an ``else``
clause is written::

    no_break = True
    for v in xs:            # (or `while test:`)
        ...
            no_break = False
            break           # each `break` of this loop (not of a loop or function nested in it)
    if no_break:
        <the else clause>

which is Python's meaning of the clause (it runs when the loop ends without a ``break``, also after no
iteration). The rest of the pipeline reads what it reads elsewhere: a ``break`` on array data becomes a carried
flag, the ``if`` on it a branch on data (per example under ``vmap``). A loop nested in another is rewritten
first, so a ``break`` in its ``else`` clause, now after it, is the outer loop's. The flag's name is ``no_break``
(numbered where the function uses the name). Every node made is placed at the user's loop or ``break``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import libcst as cst

from .located import Located
from .names import statement_nodes, walk
from .read import FunctionSource

_LOOPS = (cst.For, cst.While)


def has_loop_else(fdef: cst.FunctionDef) -> bool:
    """Whether ``fdef`` (or a function nested in it) has a loop with an ``else`` clause: a walk of its statements
    alone (``names.statement_nodes``), not of every expression (most functions, srcjax's generated ones among
    them, have none)."""
    return any(n.__class__ in _LOOPS and n.orelse is not None for n in statement_nodes(fdef.body, small=False))  # type: ignore


def rewrite(src: FunctionSource) -> FunctionSource:
    """``src`` with its loops' ``else`` clauses written as flags (``src`` itself where there are none)."""
    if not has_loop_else(src.fdef):
        return src
    taken = {n.value for n in walk(src.fdef) if type(n) is cst.Name}  # type: ignore[attr-defined]
    fdef = src.fdef.visit(_Else(src.positions, taken))
    assert isinstance(fdef, cst.FunctionDef)
    return dataclasses.replace(src, fdef=fdef)


class _Else(Located):
    def __init__(self, positions: dict[Any, Any], taken: set[str]) -> None:
        super().__init__(positions)
        self.taken = taken

    def _flag(self) -> str:
        name, k = "no_break", 0
        while name in self.taken:
            k += 1
            name = f"no_break_{k}"
        self.taken.add(name)
        return name

    def _loop(self, original: cst.For | cst.While, updated: cst.For | cst.While) -> \
            cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        if updated.orelse is None:
            return updated
        flag = self._flag()
        body = updated.body.visit(_Breaks(self, flag))
        loop = self.located(original, updated.with_changes(body=body, orelse=None))
        made = [self._line(original, cst.Assign([cst.AssignTarget(cst.Name(flag))], cst.Name("True"))), loop,
                self.located(original.orelse, cst.If(test=cst.Name(flag), body=updated.orelse.body))]
        return cst.FlattenSentinel(made)

    def _line(self, origin: cst.CSTNode, small: cst.BaseSmallStatement) -> cst.SimpleStatementLine:
        self.located(origin, small)
        return self.located(origin, cst.SimpleStatementLine(body=[small]))  # type: ignore[no-any-return]

    leave_For = leave_While = _loop  # type: ignore[assignment]


class _Breaks(cst.CSTTransformer):
    """Each ``break`` of one loop's body (not in a loop or function nested in it) as ``flag = False; break``."""

    def __init__(self, owner: _Else, flag: str) -> None:
        self.owner = owner
        self.flag = flag

    def _skip(self, node: cst.CSTNode) -> bool:
        return False

    visit_For = visit_While = visit_FunctionDef = visit_ClassDef = visit_Lambda = _skip  # type: ignore[assignment]

    def leave_Break(self, original: cst.Break, updated: cst.Break) -> cst.FlattenSentinel[cst.BaseSmallStatement]:
        clear = self.owner.located(original, cst.Assign([cst.AssignTarget(cst.Name(self.flag))], cst.Name("False")))
        return cst.FlattenSentinel([clear, updated])
