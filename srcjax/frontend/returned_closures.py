"""A closure made by a helper and called here (``g = make_scaler(a)``, then ``g(x)``; ``init, update, get_params =
sgd(0.1)``, a tuple of them): the helper's body written out in place.

``def make_scaler(a): def g(v): return a * np.tanh(v); return g`` returns a function that closes over the
helper's parameter. Compiled code followed it (``jit`` calls the closure), but the transformations did not know
what ``g`` is ("cannot differentiate through `g(...)`", "vmap: cannot batch 'g(x)'"). A nested ``def`` of the
function itself they follow, so ``g = make_scaler(a)`` is read as the helper's body with its names renamed
apart (``make_scaler_a = a``, then ``def g(v): return make_scaler_a * np.tanh(v)``): its parameters bound to the
call's arguments, the ``def`` it returns named ``g``.

Only a helper that does nothing else is written out: a plain function of the user's, defined in the module of
the function being read (its names mean the same there) and closing over nothing, whose body is nested
``def``\\ s and assignments to names, then ``return`` of one of its ``def``\\ s (or of a ``lambda``); called
with arguments by position or keyword, a parameter left out having a number, string, bool or None as default.
Anything else is left as it is (refused as before where a transformation cannot follow it).
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from typing import Any, cast

import libcst as cst

from ..core import TranspileError
from .callees import origin
from .names import Names, Visitor, assigned_names, names_in, walk
from .read import FunctionSource, Located, Range, read_function


def rewrite(src: FunctionSource) -> FunctionSource:
    """``src`` with its calls of closure-making helpers written out (``src`` itself where there are none)."""
    if src.filename.startswith("<srcjax.") or not _candidates(src):
        return src
    taken = set(names_in(src.fdef)) | set(src.globals) | set(src.closure)
    fdef = src.fdef.visit(_WriteOut(src, taken))
    if fdef is src.fdef:
        return src
    assert isinstance(fdef, cst.FunctionDef)
    return dataclasses.replace(src, fdef=fdef)


def _assigned_call(s: cst.BaseStatement) -> tuple[cst.BaseAssignTargetExpression, cst.Call] | None:
    """``(target, f(...))`` of a line holding one assignment ``target = f(...)`` of a call by a plain name."""
    if type(s) is not cst.SimpleStatementLine or len(s.body) != 1 or type(a := s.body[0]) is not cst.Assign:
        return None
    if len(a.targets) != 1 or type(a.value) is not cst.Call or type(a.value.func) is not cst.Name:
        return None
    return a.targets[0].target, a.value


def call_of(s: cst.BaseStatement) -> tuple[str, cst.Call] | None:
    """``(g, make_scaler(a))`` of a line ``g = make_scaler(a)``."""
    found = _assigned_call(s)
    if found is None or type(target := found[0]) is not cst.Name:
        return None
    return target.value, found[1]


def _targets_call(s: cst.BaseStatement) -> tuple[list[str], cst.Call] | None:
    """``([g], make_scaler(a))`` of ``g = make_scaler(a)``; ``([init, update, get], sgd(0.1))`` of ``init, update,
    get = sgd(0.1)`` (example_libraries' optimizers: a helper returning a tuple of closures)."""
    found = _assigned_call(s)
    if found is None:
        return None
    target, call = found
    if type(target) is cst.Name:
        return [target.value], call
    if type(target) is not cst.Tuple:
        return None
    names = [e.value.value for e in target.elements if type(e) is cst.Element and type(e.value) is cst.Name]
    if len(names) != len(target.elements) or len(set(names)) != len(names):
        return None
    return names, call


def _candidates(src: FunctionSource) -> bool:
    v = _Candidates(src)
    v.walk(src.fdef.body)
    return v.found


class _Candidates(Visitor):  # (read-only: libcst's visitor rebuilt the user's body, every user function's first read;
    # one class, not one made per call: each was garbage the cyclic collector freed)
    def __init__(self, src: FunctionSource) -> None:
        self.src, self.found = src, False

    def visit_SimpleStatementLine(self, n: cst.SimpleStatementLine) -> bool:
        if not self.found:
            call = _targets_call(n)
            self.found = call is not None and _helper(self.src, call[1].func.value) is not None  # type: ignore[attr-defined]
        return False


def _helper(src: FunctionSource, name: str) -> types.FunctionType | None:
    """The user's function ``name`` stands for, where it may be written out here."""
    if name in assigned_names(src.fdef.body.body) or name in params_of(src.fdef):
        return None
    fv = src.closure[name] if name in src.closure else src.globals.get(name)
    if not isinstance(fv, types.FunctionType) or origin(fv) is not None or fv.__closure__ or \
            fv.__globals__ is not src.globals or fv is src.fn or \
            fv.__code__.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_VARARGS |
                                    inspect.CO_VARKEYWORDS):
        return None
    return fv


def params_of(fdef: cst.FunctionDef | cst.Lambda) -> list[str]:
    p = fdef.params
    out = [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)]
    for star in (p.star_arg, p.star_kwarg):
        if isinstance(star, cst.Param):
            out.append(star.name.value)
    return out


def _closure_body(fdef: cst.FunctionDef) -> tuple[list[cst.BaseStatement], cst.BaseExpression] | None:
    """The statements before the final ``return``, and what it returns, of a helper that only makes a closure."""
    body = list(fdef.body.body) if isinstance(fdef.body, cst.IndentedBlock) else []
    if body and is_docstring(body[0]):
        body = body[1:]
    if not body or type(body[-1]) is not cst.SimpleStatementLine or len(body[-1].body) != 1 or \
            type(body[-1].body[0]) is not cst.Return:
        return None
    value = body[-1].body[0].value
    defs = {s.name.value for s in body[:-1] if type(s) is cst.FunctionDef}
    parts = [e.value for e in value.elements] if type(value) is cst.Tuple and all(
        type(e) is cst.Element for e in value.elements) else [value]  # (a tuple of closures: init, update, get)
    if not all(type(v) is cst.Lambda or (type(v) is cst.Name and v.value in defs) for v in parts) or \
            len({v.value for v in parts if type(v) is cst.Name}) != sum(type(v) is cst.Name for v in parts):
        return None
    for s in body[:-1]:
        if type(s) is cst.FunctionDef:
            if s.decorators or s.asynchronous is not None:
                return None
        elif type(s) is cst.SimpleStatementLine:
            if not all(type(x) is cst.Assign and all(type(t.target) is cst.Name for t in x.targets) for x in s.body):
                return None
        else:
            return None
    if value is None or any(type(n) is cst.Param and n.default is not None for s in [*body[:-1], value]
                            for n in walk(s)):
        return None  # (a nested default is evaluated in the helper's scope: `def g(v, a=a)`)
    return body[:-1], value


def is_docstring(s: cst.BaseStatement) -> bool:
    return type(s) is cst.SimpleStatementLine and len(s.body) == 1 and type(s.body[0]) is cst.Expr and \
        isinstance(s.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


_LITERAL = (int, float, str, bool, type(None))


def bound_arguments(helper: types.FunctionType, call: cst.Call, skip: int = 0) -> dict[str, cst.BaseExpression] | None:
    """The helper's parameters (but its first ``skip``: ``self``) bound to the call's arguments (a default written
    as its literal), or None."""
    sig = inspect.signature(helper)
    params = list(sig.parameters.values())[skip:]
    out: dict[str, cst.BaseExpression] = {}
    for i, a in enumerate(call.args):
        if a.star:
            return None
        if a.keyword is None:
            if i >= len(params) or params[i].kind not in (params[i].POSITIONAL_ONLY, params[i].POSITIONAL_OR_KEYWORD):
                return None
            out[params[i].name] = a.value
        else:
            p = sig.parameters.get(a.keyword.value)
            if p is None or p not in params or p.kind is p.POSITIONAL_ONLY or p.name in out:
                return None
            out[p.name] = a.value
    for p in params:
        if p.name not in out:
            if p.default is p.empty or type(p.default) not in _LITERAL or \
                    (isinstance(p.default, float) and p.default != p.default):
                return None
            try:
                out[p.name] = cst.parse_expression(repr(p.default))
            except cst.ParserSyntaxError:  # pragma: no cover - (inf: no literal)
                return None
    return out


class _Renamed(cst.CSTTransformer):
    """The helper's local names renamed apart; a nested function's own parameters and locals shadow them."""

    def __init__(self, mapping: dict[str, str], moved: dict[cst.CSTNode, Range]) -> None:
        self.scopes = [mapping]
        self.moved = moved  # (a node's place in the helper -> the place of its renamed copy)
        self.positions: dict[cst.CSTNode, Range] = {}

    def on_leave(self, original: Any, updated: Any) -> Any:
        out = super().on_leave(original, updated)
        if original in self.moved and isinstance(out, cst.CSTNode):
            self.positions[out] = self.moved[original]
        return out

    def _enter(self, bound: list[str]) -> None:
        self.scopes.append({k: v for k, v in self.scopes[-1].items() if k not in bound})

    def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
        body = list(n.body.body) if isinstance(n.body, cst.IndentedBlock) else []
        self._enter(params_of(n) + assigned_names(body))
        return True

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        self.scopes.pop()
        new = self.scopes[-1].get(original.name.value)  # (the def's own name is the enclosing scope's)
        return updated.with_changes(name=cst.Name(new)) if new else updated

    def visit_Lambda(self, n: cst.Lambda) -> bool:
        self._enter(params_of(n))
        return True

    def leave_Lambda(self, original: cst.Lambda, updated: cst.Lambda) -> cst.Lambda:
        self.scopes.pop()
        return updated

    def visit_Param(self, n: cst.Param) -> bool:
        return True

    def leave_Param(self, original: cst.Param, updated: cst.Param) -> cst.Param:
        return updated.with_changes(name=original.name)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        new = self.scopes[-1].get(original.value)
        return cst.Name(new) if new else updated


class _WriteOut(Located):
    def __init__(self, src: FunctionSource, taken: set[str]) -> None:
        super().__init__(src.positions)
        self.src, self.fresh = src, Names(taken).fresh

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        body: list[cst.BaseStatement] = []
        for st in updated.body:
            body.extend(self.written_out(st) or [st])
        return self.located(original, updated.with_changes(body=body))  # type: ignore[no-any-return]

    def written_out(self, st: cst.BaseStatement) -> list[cst.BaseStatement] | None:
        call = _targets_call(st)
        if call is None:
            return None
        targets, c = call
        helper = _helper(self.src, c.func.value)  # type: ignore[attr-defined]
        if helper is None:
            return None
        try:
            hsrc = read_function(helper)
        except TranspileError:
            return None
        made = _closure_body(hsrc.fdef)
        args = bound_arguments(helper, c) if made is not None else None
        if made is None or args is None:
            return None
        stmts, returned = made
        parts = [e.value for e in returned.elements] if type(returned) is cst.Tuple else [returned]
        if len(parts) != len(targets) or (type(returned) is cst.Tuple) != (len(targets) > 1):
            return None
        local = dict.fromkeys([*params_of(hsrc.fdef), *assigned_names(stmts)])
        caller = {*params_of(self.src.fdef), *assigned_names(self.src.fdef.body.body)}
        if any(n in caller and n not in local and n in self.src.globals for s in [*stmts, returned]
               for n in names_in(s)):
            return None  # (a module name the helper reads, a local of this function: written out, it would read that)
        mapping = {n: self.fresh(f"{helper.__name__}_{n}") for n in local}
        for target, part in zip(targets, parts):
            if type(part) is cst.Name:
                mapping[part.value] = target
        out: list[cst.BaseStatement] = [
            cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(mapping[p]))], value=v)])
            for p, v in args.items()]
        rename = _Renamed(mapping, _moved(hsrc, self.src))
        out += [cast(cst.BaseStatement, s.visit(rename)) for s in stmts]
        for target, part in zip(targets, parts):
            if type(part) is cst.Lambda:
                out.append(cst.SimpleStatementLine(body=[cst.Assign(
                    targets=[cst.AssignTarget(cst.Name(target))], value=cast(cst.Lambda, part.visit(rename)))]))
        self.positions.update(rename.positions)  # (the helper's lines, where it is in the same file)
        for s in out:
            self.located(st, s)
            for small in (s.body if type(s) is cst.SimpleStatementLine else []):
                self.located(st, small)
        return out


def _moved(helper: FunctionSource, src: FunctionSource) -> dict[cst.CSTNode, Range]:
    """The helper's node positions in ``src``'s coordinates (an error in its written-out body is located at the
    helper's line); none where it is in another file."""
    if helper.filename != src.filename:
        return {}
    dl, dc = helper.line_offset - src.line_offset, helper.col_offset - src.col_offset
    return {n: (r[0] + dl, r[1] + dc, r[2] + dl, r[3] + dc) for n, r in helper.positions.items()}

