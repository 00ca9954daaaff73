"""Names that hold known functions, written as those functions: ``fn = np.sin``, ``for f in (np.sin, np.cos):``,
a comprehension's ``for f in (np.sin, np.cos)``.

jit runs a call through such a name (the specializer evaluates the name), but derivatives and vmap read ``fn(x)``
as a call of an unknown value ("srcjax does not know its derivative", "vmap: cannot batch 'fn(x)'"). Where every
binding of the name holds a known function (a NumPy function or ufunc, a Python function: a name or dotted name
that the function does not bind itself), each read of the name is written as that function's spelling:

- ``fn = np.sin``, the name's only binding, a statement of the function's own body: ``fn(x)`` -> ``np.sin(x)``,
  the assignment dropped;
- ``for f in (np.sin, np.cos): body``, the loop's target bound by such loops only, read in their bodies only, and
  bodies without ``break``/``continue`` or nested ``def``: the body once per function, ``f`` replaced (the loop
  unrolled, as Python runs it);
- a comprehension's clause ``for f in (np.sin, np.cos)`` that :mod:`.comprehension_loops` writes as a loop (for
  derivatives and vmap): that loop unrolled the same way (:func:`unrolled`).

Anything else is left as it is (jit still runs it). Positions stay the user's: each copy of a statement takes the
positions of the statement it copies.
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import libcst as cst

from .bound_helpers import is_plain_function
from .names import assigned_names, copy_positions, names_in, renamed, walk
from .read import FunctionSource, Located
from .restructure import walk as statements
from .syntax import attr_chain

_BINDERS = (cst.Param, cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr,
            cst.AsName, cst.Del, cst.Global, cst.Nonlocal, cst.FunctionDef, cst.ClassDef)


def binds(node: cst.CSTNode, name: str) -> bool:
    """Whether ``name`` is bound anywhere under ``node`` (a target, a parameter, a ``def``, ``global``, ...)."""
    for n in walk(node):
        if isinstance(n, _BINDERS):
            own = getattr(n, "name", None)
            if isinstance(own, cst.Name) and own.value == name:
                return True
            if isinstance(n, (cst.Global, cst.Nonlocal)) and any(a.name.value == name for a in n.names):
                return True
            target = getattr(n, "target", None) or getattr(n, "asname", None)
            if target is not None and name in names_in(target):
                return True
    return False


def function_items(it: cst.BaseExpression, is_function: Callable[[cst.BaseExpression], bool]
                   ) -> list[cst.BaseExpression] | None:
    """The items of ``it`` where it is a tuple or list display of known functions (``(np.sin, np.cos)``)."""
    if not isinstance(it, (cst.Tuple, cst.List)) or not it.elements:
        return None
    items = [e.value for e in it.elements if isinstance(e, cst.Element)]
    if len(items) != len(it.elements) or not all(attr_chain(v) is not None and is_function(v) for v in items):
        return None
    return items


def unrolled(body: Sequence[cst.BaseStatement], target: str, items: Sequence[cst.BaseExpression],
             positions: dict[Any, Any]) -> list[cst.BaseStatement]:
    """``body`` once per item, ``target`` replaced by that item, each copy placed where ``body`` is."""
    out: list[cst.BaseStatement] = []
    for item in items:
        for s in body:
            clone = s.deep_clone()  # (a copy of its own: passes keep facts per node)
            copy_positions(s, clone, positions)
            made = renamed(clone, {target: item.deep_clone()})
            copy_positions(clone, made, positions)
            out.append(made)
    return out


def plain_body(body: cst.BaseSuite, target: str) -> bool:
    """A loop body that ``unrolled`` may copy: no ``break``/``continue`` of its own, no nested ``def`` or class,
    ``target`` bound nowhere in it."""
    if binds(body, target) or any(isinstance(n, (cst.FunctionDef, cst.ClassDef)) for n in walk(body)):
        return False
    own = statements(body.body if isinstance(body, cst.IndentedBlock) else [body])  # (as exits.own_exits)
    return not any(depth == 0 and isinstance(s, (cst.Break, cst.Continue)) for s, depth in own)


def rewrite(src: FunctionSource) -> FunctionSource:
    """``src`` with the names bound to known functions written as those functions (see the module's docstring)."""
    if src.filename.startswith("<srcjax.") or str(getattr(src.fn, "__module__", "") or "").startswith("srcjax."):
        return src  # (source srcjax wrote, its own helpers: their names were resolved when they were written)
    fdef = src.fdef
    candidates = [n for n in walk(fdef.body) if _candidate(n)]
    if not candidates:
        return src
    local = set(assigned_names(fdef.body.body)) | {p.name.value for p in _params(fdef.params)}

    def is_function(v: cst.BaseExpression) -> bool:
        chain = attr_chain(v)
        if chain is None or chain[0] in local:
            return False
        value: Any = src.closure[chain[0]] if chain[0] in src.closure else src.globals[chain[0]] \
            if chain[0] in src.globals else getattr(builtins, chain[0], _MISSING)
        for part in chain[1:]:
            value = getattr(value, part, _MISSING)
        return value is not _MISSING and is_plain_function(value)

    counts: dict[str, int] = {}
    for name in names_in(fdef):
        counts[name] = counts.get(name, 0) + 1
    loops: dict[str, list[tuple[cst.For, list[cst.BaseExpression]]]] = {}
    assigned: dict[str, cst.SimpleStatementLine] = {}
    top = list(fdef.body.body)
    for n in candidates:
        if isinstance(n, cst.For):
            assert isinstance(n.target, cst.Name)
            items = function_items(n.iter, is_function)
            if items is not None and plain_body(n.body, n.target.value):
                loops.setdefault(n.target.value, []).append((n, items))
        elif n in top:
            assert isinstance(n, cst.SimpleStatementLine)
            a = n.body[0]
            assert isinstance(a, cst.Assign)
            t = a.targets[0].target
            assert isinstance(t, cst.Name)
            if is_function(a.value) and not any(t.value in names_in(s) for s in top[:top.index(n)]):
                assigned[t.value] = n
    # (each name's every occurrence accounted for: its loops' targets and the reads in their bodies, or its one
    # assignment and reads; another binding anywhere, a parameter of a nested function included, keeps it)
    loops = {k: ls for k, ls in loops.items()
             if counts.get(k, 0) == sum(1 + names_in(f.body).count(k) for f, _ in ls)}
    assigned = {k: s for k, s in assigned.items() if k not in loops and counts.get(k, 0) > 1 and
                not binds(fdef.params, k) and not any(binds(s2, k) for s2 in top if s2 is not s)}
    if not loops and not assigned:
        return src
    subs = {k: s.body[0].value for k, s in assigned.items()}  # type: ignore[attr-defined]
    new = fdef.visit(_Rewrite({id(f): (k, items) for k, ls in loops.items() for f, items in ls},
                              {id(s) for s in assigned.values()}, subs, src.positions))
    assert isinstance(new, cst.FunctionDef)
    return dataclasses.replace(src, fdef=new)


_MISSING = object()


def _params(ps: cst.Parameters) -> list[cst.Param]:
    out = [*ps.posonly_params, *ps.params, *ps.kwonly_params]
    for p in (ps.star_arg, ps.star_kwarg):
        if isinstance(p, cst.Param):
            out.append(p)
    return out


def _candidate(n: cst.CSTNode) -> bool:
    """A loop over a tuple or list display with a name for target, or a line ``name = dotted.name`` alone."""
    t = n.__class__  # (exact classes, here for every node of the function: libcst's node classes are final, and
    if t is cst.For:  # `isinstance` on them goes through ABCMeta)
        f: Any = n
        return f.target.__class__ is cst.Name and f.iter.__class__ in (cst.Tuple, cst.List) and f.orelse is None
    if t is cst.SimpleStatementLine and len(n.body) == 1 and (a := n.body[0]).__class__ is cst.Assign:  # type: ignore[attr-defined]
        return len(a.targets) == 1 and a.targets[0].target.__class__ is cst.Name and attr_chain(a.value) is not None
    return False


class _Rewrite(Located):
    def __init__(self, loops: dict[int, tuple[str, list[cst.BaseExpression]]], dropped: set[int],
                 subs: dict[str, cst.BaseExpression], positions: dict[Any, Any]) -> None:
        super().__init__(positions)
        self.loops, self.dropped, self.subs = loops, dropped, subs
        self.of: dict[int, int] = {}  # (a rebuilt node's id -> its original's)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> Any:
        return self.located(original, self.subs[original.value].deep_clone()) if original.value in self.subs \
            else updated

    def leave_AssignTarget(self, original: cst.AssignTarget, updated: cst.AssignTarget) -> Any:
        return original if isinstance(original.target, cst.Name) and original.target.value in self.subs else updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> Any:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> Any:
        return updated.with_changes(keyword=original.keyword)

    def leave_Param(self, original: cst.Param, updated: cst.Param) -> Any:
        return updated.with_changes(name=original.name)

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine) -> Any:
        return cst.RemovalSentinel.REMOVE if id(original) in self.dropped else updated

    def leave_For(self, original: cst.For, updated: cst.For) -> Any:
        got = self.loops.get(id(original))
        if got is None:
            return updated
        target, items = got
        body = updated.body.body if isinstance(updated.body, cst.IndentedBlock) else \
            [cst.SimpleStatementLine(body=list(updated.body.body))]  # type: ignore[arg-type]
        copies = unrolled(body, target, items, self.positions)
        if copies:
            copies[0] = copies[0].with_changes(leading_lines=original.leading_lines) if \
                hasattr(copies[0], "leading_lines") else copies[0]
        return cst.FlattenSentinel(copies)
