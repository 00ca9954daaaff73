"""Loop targets that rebind a name the function also binds otherwise, bound by an assignment instead.

``w = x * 2.0`` then ``for w in ws:`` (or ``for w in params[:-1]: ...`` then ``w = params[-1]``): the
derivative writers restore a name's earlier values and reset its cotangent where an *assignment* rebinds
it, not where a ``for`` does (reverse mode accumulated the loop items' cotangents into the earlier ``w``'s
and read the last item for it: silent wrong gradients; forward mode kept the earlier tangent). So such a
loop is written ``for w_item in ws: w = w_item`` (the same Python: after the loop ``w`` is the last item,
and unchanged when there is none). A name bound only by ``for`` targets (``for i in range(3)`` twice) is
left alone.

Input: a normalized user function (ANF) and its statement spans; output: the same function with those
loops rewritten, the spans carried to the rebuilt loops and the new assignments.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import libcst as cst

from ..core import Span
from .names import Visitor, target_names, walk


def _other_bindings(fdef: cst.FunctionDef) -> Counter[str]:
    """How often each name is bound otherwise than as a ``for`` target (parameters, assignments)."""
    n: Counter[str] = Counter(p.name.value for p in (*fdef.params.params, *fdef.params.posonly_params,
                                                     *fdef.params.kwonly_params))
    _Bindings(n, fdef).walk(fdef)
    return n


class _Bindings(Visitor):
    """:func:`_other_bindings`' walk (read-only: libcst's own visitor rebuilt every node it passed)."""

    def __init__(self, n: Counter[str], fdef: cst.FunctionDef) -> None:
        self.n, self.fdef = n, fdef

    def visit_Assign(self, node: cst.Assign) -> None:
        self.n.update(x for t in node.targets for x in target_names(t.target))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.n.update(target_names(node.target))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.fdef  # (a nested function's names are its own)


def _has_for(stmts: Sequence[Any]) -> bool:
    """A ``for`` statement among ``stmts`` or in the blocks of their ``if``/``while`` (where
    :func:`rebind_targets` looks)."""
    for s in stmts:  # (exact classes: libcst's node classes are final; `isinstance` on them goes through ABCMeta)
        t = s.__class__
        if t is cst.For:
            return True
        if t is cst.If:
            orelse: Any = s.orelse
            if _has_for(s.body.body) or orelse is not None and _has_for([orelse] if orelse.__class__ is cst.If
                                                                     else orelse.body.body):
                return True
        elif t is cst.While and _has_for(s.body.body):
            return True
    return False


def rebind_targets(fdef: cst.FunctionDef, spans: dict[int, Span], fresh: Callable[[str], str]) -> cst.FunctionDef:
    """``fdef`` with its ``for`` loops whose targets the function binds otherwise written as above
    (``fdef`` itself when it has no ``for`` loop: most functions; counting its bindings visits every node)."""
    if not _has_for(fdef.body.body):
        return fdef
    others = _other_bindings(fdef)

    def block(stmts: Sequence[Any]) -> list[Any]:
        return [one(s) for s in stmts]

    def one(s: Any) -> Any:
        new: Any
        if isinstance(s, cst.If):
            orelse: Any = s.orelse
            if orelse is not None:
                orelse = one(orelse) if isinstance(orelse, cst.If) else \
                    orelse.with_changes(body=orelse.body.with_changes(body=block(orelse.body.body)))
            new = s.with_changes(body=s.body.with_changes(body=block(s.body.body)), orelse=orelse)
        elif isinstance(s, (cst.For, cst.While)):
            body = block(s.body.body)
            if isinstance(s, cst.For) and any(others[x] for x in target_names(s.target)):
                target, binds = _renamed(s.target, others, fresh)
                for bind in binds:
                    if id(s) in spans:
                        spans[id(bind)] = spans[id(bind.body[0])] = spans[id(s)]
                new = s.with_changes(target=target, body=s.body.with_changes(body=[*binds, *body]))
            else:
                new = s.with_changes(body=s.body.with_changes(body=body))
        else:
            return s
        if id(s) in spans:
            spans[id(new)] = spans[id(s)]
        return new

    return fdef.with_changes(body=fdef.body.with_changes(body=block(fdef.body.body)))


def _renamed(target: cst.BaseExpression, others: Counter[str], fresh: Callable[[str], str]) -> \
        tuple[cst.BaseExpression, list[cst.SimpleStatementLine]]:
    """The loop's new target and the assignments binding the old one at the top of its body. A tuple of names
    (``for p, g, s in zip(ps, gs, ss)``, ``s`` rebound in the body; nested tuples too) renames only the names bound
    otherwise,
    ``for p, g, s_item in zip(...): s = s_item``: the loop still reads as one over its sequences' items (the
    whole target renamed, derivatives refused a loop over ``zip(...)`` bound to one name)."""
    def bind(t: Any, item: str) -> cst.SimpleStatementLine:
        return cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(t)], value=cst.Name(item))])

    def names_only(t: Any) -> bool:  # (nested: `for (s, y), (rho, a) in zip(zip(ss, ys), reversed(alphas))`)
        return t.__class__ is cst.Name or t.__class__ in (cst.Tuple, cst.List) and all(
            e.__class__ is cst.Element and names_only(e.value) for e in t.elements)

    def renamed(t: Any, binds: list[cst.SimpleStatementLine]) -> Any:
        if t.__class__ is not cst.Name:
            return t.with_changes(elements=[e.with_changes(value=renamed(e.value, binds)) for e in t.elements])
        if not others[t.value]:
            return t
        item = fresh(t.value + "_item")
        binds.append(bind(cst.Name(t.value), item))
        return cst.Name(item)

    if isinstance(target, (cst.Tuple, cst.List)) and names_only(target):
        binds: list[cst.SimpleStatementLine] = []
        return renamed(target, binds), binds
    item = fresh("_".join(target_names(target)) + "_item")
    return cst.Name(item), [bind(target, item)]


def separate_targets(fdef: cst.FunctionDef, spans: dict[int, Span], fresh: Callable[[str], str]) -> cst.FunctionDef:
    """``fdef`` with a name that several ``for`` loops bind, and nothing else binds or reads outside them (``for c
    in cs: ...`` then ``for c in (1.0, 2.0): ...`` under an ``if`` on data), given a name of its own in each later
    loop inside an ``if`` or a ``while`` (``c_1``): the binding-time analysis, which gives a name one kind, took
    the second loop's constants for the first loop's data (its ``if c == 2.0: continue`` refused)."""
    if not _has_for(fdef.body.body):
        return fdef
    others = _other_bindings(fdef)
    loops: dict[str, list[cst.For]] = {}
    guarded: set[int] = set()  # (loops inside an `if` or a `while`: the only ones renamed, the rest read as written)
    for node, under in _fors(fdef.body.body):
        for name in target_names(node.target):
            loops.setdefault(name, []).append(node)
        if under:
            guarded.add(id(node))
    mapping: dict[int, dict[str, str]] = {}
    for name, fors in loops.items():
        if len(fors) < 2 or others[name] or all(_over_range(f) for f in fors) or not _only_inside(fdef, name, fors):
            continue  # (`for i in range(n)` twice: static in both, the generated code keeps its names)
        for node in fors[1:]:
            if id(node) in guarded:
                mapping.setdefault(id(node), {})[name] = fresh(name)
    if not mapping:
        return fdef
    out = fdef.visit(_Separate(mapping, spans))
    assert isinstance(out, cst.FunctionDef)
    return out


def _over_range(f: cst.For) -> bool:
    return isinstance(f.iter, cst.Call) and isinstance(f.iter.func, cst.Name) and f.iter.func.value == "range"


def _fors(stmts: Sequence[Any], under: bool = False) -> list[tuple[cst.For, bool]]:
    """The ``for`` loops in ``stmts``' blocks, each with whether an ``if`` or a ``while`` holds it."""
    out: list[tuple[cst.For, bool]] = []
    for s in stmts:
        if isinstance(s, cst.For):
            out.append((s, under))
        if isinstance(s, cst.If):
            out += _fors(s.body.body, True)
            if s.orelse is not None:
                out += _fors([s.orelse] if isinstance(s.orelse, cst.If) else s.orelse.body.body, True)
        elif isinstance(s, cst.For | cst.While):
            out += _fors(s.body.body, under or isinstance(s, cst.While))
    return out


def _only_inside(fdef: cst.FunctionDef, name: str, fors: list[cst.For]) -> bool:
    """Whether every occurrence of the variable ``name`` in ``fdef`` is inside one of ``fors`` (none nested in
    another, no nested function or lambda among them taking it as a parameter)."""
    inside = {id(n) for f in fors for n in _occurrences(f, name)}
    if len(inside) != sum(len(_occurrences(f, name)) for f in fors):
        return False  # (a loop inside another: its names counted twice)
    return set(id(n) for n in _occurrences(fdef.body, name)) == inside and not any(
        isinstance(n, cst.Param) and n.name.value == name for f in fors for n in walk(f))


def _occurrences(node: cst.CSTNode, name: str) -> list[cst.Name]:
    """The variable ``name``'s nodes in ``node`` (not an attribute's or a keyword's name)."""
    nodes = list(walk(node))
    other = {id(n.attr) for n in nodes if isinstance(n, cst.Attribute)} | \
        {id(n.keyword) for n in nodes if isinstance(n, cst.Arg) and n.keyword is not None}
    return [n for n in nodes if isinstance(n, cst.Name) and n.value == name and id(n) not in other]


class _Separate(cst.CSTTransformer):
    """Each loop of ``mapping`` (by id) with its names renamed (not attributes' or keywords'), spans carried."""

    def __init__(self, mapping: dict[int, dict[str, str]], spans: dict[int, Span]) -> None:
        self.mapping, self.spans = mapping, spans
        self.active: list[dict[str, str]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.mapping:
            self.active.append(self.mapping[id(node)])
        return True

    def on_leave(self, original: Any, updated: Any) -> Any:
        if self.active:
            if isinstance(updated, cst.Name) and updated.value in self.active[-1]:
                updated = updated.with_changes(value=self.active[-1][updated.value])
            elif isinstance(updated, cst.Attribute):
                updated = updated.with_changes(attr=original.attr)
            elif isinstance(updated, cst.Arg):
                updated = updated.with_changes(keyword=original.keyword)
        if id(original) in self.mapping:
            self.active.pop()
        if id(original) in self.spans:
            self.spans[id(updated)] = self.spans[id(original)]
        return updated
