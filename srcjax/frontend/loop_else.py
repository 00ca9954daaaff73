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
iteration). A search's result that the function binds only in the loop, before each ``break``, and in the
``else`` clause (``for i in range(n): if x[i] > t: idx = i; break`` / ``else: idx = -1``) is bound first, before
the loop, to what the clause binds it to (``idx = -1``) where that value is the same there (it reads nothing the
loop binds): the loop on data then carries it (it was refused: a name the loop first binds, read after it), and
the clause still binds it after no ``break``.

The rest of the pipeline reads what it reads elsewhere: a ``break`` on array data becomes a carried flag, the
``if`` on it a branch on data (per example under ``vmap``). A loop nested in another is rewritten first, so a
``break`` in its ``else`` clause, now after it, is the outer loop's. The flag's name is ``no_break`` (numbered
where the function uses the name). Every node made is placed at the user's loop, ``break`` or clause.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import Any

import libcst as cst

from .located import Located
from .names import names_in, statement_nodes, target_names, walk
from .read import FunctionSource
from .syntax import assigned_in

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
    fdef = src.fdef.visit(_Else(src.positions, taken, _binding_counts(src.fdef)))
    assert isinstance(fdef, cst.FunctionDef)
    return dataclasses.replace(src, fdef=fdef)


class _Else(Located):
    def __init__(self, positions: dict[Any, Any], taken: set[str], bindings: Counter[str]) -> None:
        super().__init__(positions)
        self.taken = taken
        self.bindings = bindings  # how many times the function binds each name

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
        made = [*self._results_first(original, updated),
                self._line(original, cst.Assign([cst.AssignTarget(cst.Name(flag))], cst.Name("True"))), loop,
                self.located(original.orelse, cst.If(test=cst.Name(flag), body=updated.orelse.body))]
        return cst.FlattenSentinel(made)

    def _results_first(self, original: cst.For | cst.While, updated: cst.For | cst.While) -> \
            list[cst.SimpleStatementLine]:
        """``name = value`` before the loop for each ``name = value`` at the top of its ``else`` clause whose
        name the function binds only in the loop (before each of its ``break``s; never read there) and in the
        clause, and whose value reads nothing the loop or the clause before it binds."""
        assert updated.orelse is not None
        loop_bound = _binding_counts(original.body)
        if isinstance(updated, cst.For):
            loop_bound.update(target_names(updated.target))
        read_in_loop = set(names_in(updated.body, skip_targets=True))
        if isinstance(updated, cst.While):
            read_in_loop |= set(names_in(updated.test))
        clause = original.orelse.body.body  # type: ignore[union-attr]
        outside = self.bindings - loop_bound - _binding_counts(clause)  # (bound elsewhere in the function)
        first: list[cst.SimpleStatementLine] = []
        clause_bound: set[str] = set()
        body: Any = updated.body.body
        for st, orig in zip(updated.orelse.body.body, clause):  # type: ignore[union-attr]
            small = st.body[0] if isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 else None
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                    isinstance(small.targets[0].target, cst.Name):
                name = small.targets[0].target.value
                changed = set(loop_bound) | clause_bound
                if loop_bound[name] and not outside[name] and name not in read_in_loop | clause_bound and \
                        not set(names_in(small.value)) & changed and _bound_before_breaks(body, name):
                    first.append(self.located(orig, cst.SimpleStatementLine(body=[small])))
            clause_bound.update(assigned_in([st]))
        return first

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


def _binding_counts(node: cst.CSTNode | Sequence[cst.CSTNode]) -> Counter[str]:
    """How many times ``node`` (or the statements) binds each name (assignment, ``for`` and ``with`` targets)."""
    out: Counter[str] = Counter()
    for top in node if isinstance(node, Sequence) else [node]:
        for n in walk(top):
            if isinstance(n, cst.AssignTarget | cst.AugAssign | cst.AnnAssign | cst.For | cst.NamedExpr):
                out.update(target_names(n.target))
    return out


def _bound_before_breaks(stmts: Sequence[cst.BaseStatement], name: str, bound: bool = False) -> bool:
    """Whether each ``break`` of the loop whose body is ``stmts`` (not of a nested loop) follows a binding of
    ``name`` in its block or an enclosing one."""
    for st in stmts:
        if isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                if isinstance(small, cst.Break) and not bound:
                    return False
                if isinstance(small, cst.Assign) and any(name in target_names(t.target) for t in small.targets):
                    bound = True
        elif isinstance(st, cst.If):
            parts: list[Any] = [st.body.body]
            other = st.orelse
            while isinstance(other, cst.If):
                parts.append(other.body.body)
                other = other.orelse
            if other is not None:
                parts.append(other.body.body)
            if not all(_bound_before_breaks(p, name, bound) for p in parts):
                return False
        elif isinstance(st, cst.With | cst.Try):
            if any(isinstance(n, cst.Break) for n in walk(st)):
                return False
    return True
