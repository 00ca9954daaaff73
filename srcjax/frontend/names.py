"""Name queries and renaming on libcst trees, shared by every pass.

In all of them a ``Name`` node that is an attribute (``x.shape``'s ``shape``)
or a keyword (``axis=``) is not a variable and is left alone.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

import libcst as cst


def names_in(node: cst.CSTNode, *, skip_targets: bool = False) -> list[str]:
    """Variable names in ``node`` in source order (repeats kept).

    With ``skip_targets``, names only bound (assignment and ``for`` targets) are left out.
    """
    out: list[str] = []

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            out.append(n.value)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            n.value.visit(self)
            return False

        def visit_AssignTarget(self, n: cst.AssignTarget) -> bool:
            return not skip_targets

        def visit_For(self, n: cst.For) -> bool:
            if not skip_targets:
                return True
            n.iter.visit(self)
            n.body.visit(self)
            if n.orelse is not None:
                n.orelse.visit(self)
            return False

    node.visit(V())
    return out


def target_names(t: cst.CSTNode) -> list[str]:
    """The names an assignment or ``for`` target binds (``a, (b, *c)`` -> a, b, c)."""
    if isinstance(t, cst.Name):
        return [t.value]
    if isinstance(t, (cst.Tuple, cst.List)):
        return [n for e in t.elements for n in target_names(e.value)]
    if isinstance(t, cst.StarredElement):
        return target_names(t.value)
    return []


class RenameNames(cst.CSTTransformer):
    """Replace variable names by expressions (or other names)."""

    def __init__(self, mapping: Mapping[str, cst.BaseExpression | str]) -> None:
        self.mapping = mapping

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        rep = self.mapping.get(original.value)
        if rep is None:
            return updated
        return cst.Name(rep) if isinstance(rep, str) else rep


def assigned_names(stmts: Sequence[cst.CSTNode]) -> list[str]:
    """Every name the statements bind (assignments, ``for`` targets, ``def``s), in order, once each;
    nested function bodies are their own scope and are not searched."""
    out: dict[str, None] = {}

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            out.update(dict.fromkeys(target_names(n.target)))

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            out.update(dict.fromkeys(target_names(n.target)))

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            out.update(dict.fromkeys(target_names(n.target)))

        def visit_For(self, n: cst.For) -> None:
            out.update(dict.fromkeys(target_names(n.target)))

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            out[n.name.value] = None
            return False

    for s in stmts:
        s.visit(V())
    return list(out)


class Names:
    """Fresh names: ``base``, else ``base_1``, ``base_2``, ... avoiding every name taken so far."""

    def __init__(self, taken: Iterable[str]) -> None:
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        if base not in self.taken:
            self.taken.add(base)
            return base
        for k in itertools.count(1):
            n = f"{base}_{k}"
            if n not in self.taken:
                self.taken.add(n)
                return n
        raise AssertionError
