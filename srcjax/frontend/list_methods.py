"""A list's in-place ``reverse`` and ``extend`` read as the rebinding and the appends every transformation follows:
``out.reverse()`` -> ``out = out[::-1]``, ``out.extend([a, b])`` -> ``out.append(a)`` then ``out.append(b)``,
``out.extend(xs)`` -> ``for item in xs: out.append(item)``.

Derivatives follow a list built by ``append`` and read by slices, but did not follow the other methods that change
it in place: the tangent (or cotangent) list kept the old order or length, a silently wrong Jacobian under
``jacfwd``/``jacrev``/``jvp`` (rlax's and torchbeast's returns, ``targets.append(g)`` in a reversed loop, then
``targets.reverse()``); vmap refused them. A method is rewritten only where NumPy's change could not be seen
through another name: the list is a local or a parameter whose bare name is never stored elsewhere (``m = out``,
``[out, x]``, ``d[k] = out``, ``outer.append(out)``, a call of the user's); it may be read as ``out[i]``,
``out.append(...)``, ``len(out)``, ``np.stack(out)``, iterated or returned. What is left is refused under
derivatives where it changes a list that carries them (``transforms/activity.py``), at the user's line.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import libcst as cst

from .names import walk
from .read import FunctionSource, Located
from .syntax import attr_chain, params_of

_REWRITTEN = ("reverse", "extend")
_READING_CALLS = frozenset({"len", "sum", "max", "min", "sorted", "tuple", "list", "any", "all"})
_NUMPY = frozenset({"np", "numpy", "jnp", "math"})


def rewrite(src: FunctionSource) -> FunctionSource:
    """``src`` with the ``reverse()``/``extend(...)`` statements of its unaliased lists rewritten."""
    code = getattr(src.fn, "__code__", None)
    if code is not None and not _names_method(code):  # (most functions: no walk of the body)
        return src
    calls = [(s, c) for s, c in _method_statements(src.fdef.body)]
    if not calls:
        return src
    fresh, shared = _bindings(src.fdef.body)
    local = ({p.name.value for p in params_of(src.fdef)} | fresh) - shared
    names = {c.func.value.value for _, c in calls} & local  # type: ignore[attr-defined]
    safe = {n for n in names if not _stored(src.fdef.body, n)}
    if not safe:
        return src
    taken = {n.value for n in walk(src.fdef) if isinstance(n, cst.Name)}
    fdef = src.fdef.visit(_Rewrite(safe, taken, src.positions))
    assert isinstance(fdef, cst.FunctionDef)
    return dataclasses.replace(src, fdef=fdef)


def _names_method(code: Any) -> bool:
    import types

    return any(m in code.co_names for m in _REWRITTEN) or any(
        isinstance(c, types.CodeType) and _names_method(c) for c in code.co_consts)


def _method_call(small: cst.CSTNode) -> cst.Call | None:
    """``small``'s call when it is a statement ``name.reverse()`` or ``name.extend(x)``."""
    if not isinstance(small, cst.Expr) or not isinstance(call := small.value, cst.Call):
        return None
    f = call.func
    if not (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.attr.value in _REWRITTEN):
        return None
    n_args = 0 if f.attr.value == "reverse" else 1
    if len(call.args) != n_args or any(a.keyword is not None or a.star for a in call.args):
        return None
    return call


def _method_statements(body: cst.CSTNode) -> list[tuple[cst.CSTNode, cst.Call]]:
    """The ``reverse``/``extend`` statements of ``body``, not of a function nested in it (a closure's change to
    the enclosing function's list stays as it is)."""
    out: list[tuple[cst.CSTNode, cst.Call]] = []
    todo = [body]
    while todo:
        n = todo.pop()
        if isinstance(n, cst.FunctionDef | cst.Lambda | cst.ClassDef) and n is not body:
            continue
        if isinstance(n, cst.SimpleStatementLine):
            out += [(s, c) for s in n.body if (c := _method_call(s)) is not None]
        todo.extend(n.children)
    return out


def _bindings(body: cst.CSTNode) -> tuple[set[str], set[str]]:
    """The names ``body`` binds to a new list only (a display, a comprehension, a join, ``list(...)``, a slice),
    and those it binds otherwise too (another name, an item, a loop's target: a list that may be another's)."""
    fresh: set[str] = set()
    shared: set[str] = set()
    for n in walk(body):
        if isinstance(n, cst.Assign):
            new = isinstance(n.value, cst.List | cst.ListComp) or (
                isinstance(n.value, cst.BinaryOperation) and isinstance(n.value.operator, cst.Add)) or (
                isinstance(n.value, cst.Call) and isinstance(n.value.func, cst.Name) and
                n.value.func.value in ("list", "sorted")) or (
                isinstance(n.value, cst.Subscript) and all(isinstance(e.slice, cst.Slice) for e in n.value.slice))
            for t in n.targets:
                if isinstance(t.target, cst.Name):
                    (fresh if new else shared).add(t.target.value)
                else:
                    shared.update(x.value for x in walk(t.target) if isinstance(x, cst.Name))
        elif isinstance(n, cst.AnnAssign | cst.For | cst.CompFor | cst.WithItem | cst.NamedExpr):
            target = n.asname if isinstance(n, cst.WithItem) else n.target
            if target is not None:
                shared.update(x.value for x in walk(target) if isinstance(x, cst.Name))
    return fresh, shared


class _Uses(cst.CSTVisitor):
    """Whether the bare name ``name`` is read anywhere other than where NumPy's list could not be shared."""

    def __init__(self, name: str) -> None:
        self.name, self.stored = name, False
        self.fine: set[int] = set()

    def _is(self, e: cst.CSTNode) -> bool:
        return isinstance(e, cst.Name) and e.value == self.name

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self._is(node.value):
            self.fine.add(id(node.value))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if self._is(node.value):
            self.fine.add(id(node.value))

    def visit_For(self, node: cst.For) -> None:
        if self._is(node.iter):
            self.fine.add(id(node.iter))
        for t in walk(node.target):
            if self._is(t):
                self.fine.add(id(t))

    def visit_CompFor(self, node: cst.CompFor) -> None:
        if self._is(node.iter):
            self.fine.add(id(node.iter))

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None and self._is(node.value):
            self.fine.add(id(node.value))

    def visit_Call(self, node: cst.Call) -> None:
        chain = attr_chain(node.func)
        reads = (isinstance(node.func, cst.Name) and node.func.value in _READING_CALLS) or (
            chain is not None and len(chain) > 1 and chain[0] in _NUMPY)
        if reads:
            self.fine.update(id(a.value) for a in node.args if self._is(a.value))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        for t in walk(node.target):
            if self._is(t):
                self.fine.add(id(t))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._is(node.target):
            self.fine.add(id(node.target))

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name and id(node) not in self.fine:
            self.stored = True


def _stored(body: cst.CSTNode, name: str) -> bool:
    """Whether ``name``'s list may be another name's too (a bare read that is not a plain read of its items)."""
    uses = _Uses(name)
    body.visit(uses)
    return uses.stored


class _Rewrite(Located):
    def __init__(self, names: set[str], taken: set[str], positions: dict[Any, Any]) -> None:
        super().__init__(positions)
        self.names, self.taken = names, set(taken)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth = getattr(self, "depth", 0) + 1
        return self.depth == 1  # (the function itself, not one nested in it)

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> Any:
        self.depth -= 1
        return updated

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def fresh(self, base: str) -> str:
        k, name = 1, base
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine,
                                  updated: cst.SimpleStatementLine) -> Any:
        if not any((c := _method_call(s)) is not None and c.func.value.value in self.names  # type: ignore[attr-defined]
                   for s in updated.body):
            return updated
        out: list[Any] = []
        run: list[cst.BaseSmallStatement] = []

        def flush() -> None:
            if run:
                out.append(self.located(original, cst.SimpleStatementLine(body=list(run))))
                run.clear()

        for s in updated.body:
            call = _method_call(s)
            if call is None or call.func.value.value not in self.names:  # type: ignore[attr-defined]
                run.append(s)
                continue
            name = call.func.value  # type: ignore[attr-defined]
            if call.func.attr.value == "reverse":  # type: ignore[attr-defined]
                rev = cst.Subscript(value=name, slice=[cst.SubscriptElement(cst.Slice(
                    lower=None, upper=None, step=cst.UnaryOperation(cst.Minus(), cst.Integer("1"))))])
                run.append(self.located(s, cst.Assign(targets=[cst.AssignTarget(name)], value=rev)))
                continue
            seq = call.args[0].value

            def append(v: cst.BaseExpression, name: cst.Name = name, s: Any = s) -> cst.Expr:
                return self.located(s, cst.Expr(cst.Call(func=cst.Attribute(value=name, attr=cst.Name("append")),
                                                         args=[cst.Arg(v)])))
            if isinstance(seq, cst.List | cst.Tuple) and all(isinstance(e, cst.Element) for e in seq.elements):
                run += [append(e.value) for e in seq.elements]
                continue
            flush()
            item = cst.Name(self.fresh(f"{name.value}_item"))
            body = cst.IndentedBlock(body=[self.located(original, cst.SimpleStatementLine(body=[append(item)]))])
            out.append(self.located(original, cst.For(target=item, iter=seq, body=body)))
        flush()
        if out:
            out[0] = out[0].with_changes(leading_lines=updated.leading_lines)
        return cst.FlattenSentinel(out)
