"""Simplify generated source: copy propagation and dead-code elimination.

Input and output: the Python source of generated functions (a module text).
Only straight-line statements at the top level of a function are touched,
and only names assigned exactly once in the whole function, so control flow
and the tape (``_tape.append``/``pop``) are never reordered:

- copy propagation: ``a = b`` (both names, each bound once) -> uses of ``a`` read ``b``;
- common subexpressions: a second ``b = <e>`` for the same pure ``<e>`` -> uses of ``b`` read ``a``;
- dead code: ``a = <pure expression>`` whose ``a`` is never read is dropped.

A call is pure when it calls ``np.*`` or a :mod:`srcjax.adjoint` helper;
calls to other functions (forward halves that push on a tape) are kept.
Shapes and dtypes are untouched: no ``0 * x`` folding (that is wrong for arrays).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import libcst as cst

from ..frontend.names import RenameNames, names_in, target_names

_MOD = cst.Module(body=[])


def _names_read(node: cst.CSTNode) -> Counter[str]:
    return Counter(names_in(node, skip_targets=True))


def _assign_counts(fdef: cst.FunctionDef) -> Counter[str]:
    out: Counter[str] = Counter(p.name.value for p in fdef.params.params)

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            out.update(target_names(n.target))

        def visit_For(self, n: cst.For) -> None:
            out.update(target_names(n.target))
            out.update(target_names(n.target))  # loop targets are rebound every iteration

    fdef.visit(V())
    return out


def _is_pure(node: cst.BaseExpression, pure_calls: set[str]) -> bool:
    ok = True

    class V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            nonlocal ok
            f = _MOD.code_for_node(n.func)
            if not (f.startswith("np.") or f in pure_calls):
                ok = False

    node.visit(V())
    return ok


def _builds_mutable(node: cst.BaseExpression) -> bool:
    """Lists, dicts and sets are distinct objects even when spelled alike (two tapes ``[]``)."""
    found = False

    class V(cst.CSTVisitor):
        def visit_List(self, n: cst.List) -> None:
            nonlocal found
            found = True

        def visit_Dict(self, n: cst.Dict) -> None:
            nonlocal found
            found = True

        def visit_ListComp(self, n: cst.ListComp) -> None:
            nonlocal found
            found = True

    node.visit(V())
    return found


def _resolve(mapping: dict[str, str]) -> dict[str, str]:
    """Follow chains (``a -> b -> c``) so one renaming pass suffices."""
    out = {}
    for name in mapping:
        seen = {name}
        target = mapping[name]
        while target in mapping and target not in seen:
            seen.add(target)
            target = mapping[target]
        out[name] = target
    return out


def simplify_function(fdef: cst.FunctionDef, pure_calls: set[str]) -> cst.FunctionDef:
    for _ in range(4):  # to a fixpoint (a few rounds suffice)
        counts = _assign_counts(fdef)
        body = list(fdef.body.body)
        # copy propagation
        mapping: dict[str, str] = {}
        keep: list[Any] = []
        for s in body:
            if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign):
                a = s.body[0]
                if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name) and isinstance(a.value, cst.Name):
                    dst, src = a.targets[0].target.value, a.value.value
                    if counts[dst] == 1 and counts[src] <= 1:
                        mapping[dst] = src
                        continue
            keep.append(s)
        # common subexpressions: `b = <e>` after `a = <e>` (pure, all names bound once) reads `a`
        seen: dict[str, str] = {}
        keep_cse: list[Any] = []
        for s in keep:
            if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign):
                a = s.body[0]
                if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name) and \
                        not isinstance(a.value, cst.Name) and _is_pure(a.value, pure_calls) and \
                        not _builds_mutable(a.value):
                    dst = a.targets[0].target.value
                    expr = _MOD.code_for_node(a.value)
                    if counts[dst] == 1 and all(counts[n] <= 1 for n in _names_read(a.value)):
                        if expr in seen:
                            mapping[dst] = seen[expr]
                            continue
                        seen[expr] = dst
            keep_cse.append(s)
        keep = keep_cse
        changed = bool(mapping)
        new = fdef.with_changes(body=fdef.body.with_changes(body=keep))
        if mapping:
            new = new.visit(RenameNames(_resolve(mapping)))  # type: ignore[assignment]
        # dead code
        reads = _names_read(new.body)
        counts = _assign_counts(new)
        keep2: list[Any] = []
        for s in new.body.body:
            if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign):
                a = s.body[0]
                if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name):
                    n = a.targets[0].target.value
                    if reads[n] == 0 and counts[n] == 1 and _is_pure(a.value, pure_calls):
                        changed = True
                        continue
            keep2.append(s)
        fdef = new.with_changes(body=new.body.with_changes(body=keep2))
        if not changed:
            break
    return fdef


def simplify_source(text: str, pure_calls: set[str]) -> str:
    """Simplify every function of a generated module."""
    module = cst.parse_module(text)
    body = [simplify_function(s, pure_calls) if isinstance(s, cst.FunctionDef) else s for s in module.body]
    return module.with_changes(body=body).code
