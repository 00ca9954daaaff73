"""Where derivative code comes from: user locations for the lines of generated modules.

srcjax writes derivatives as Python source (``<srcjax.grad of f #3>``) and reads it back, so
the statements of derivative code have spans in that generated text, and the adjoint helpers
it calls (``matmul_lhs_bar``) have spans in ``srcjax/adjoint.py``. Errors keep those spans (the
generated line is what srcjax ran); the *locations* StableHLO carries, which XLA keeps as
``source_file``/``source_line`` metadata in profiles and dumps, should name the user's line.

:func:`register` maps each statement line of a generated module to the user statement it
derives from, by the names the derivative's conventions give: a primal line assigns the
user's ANF name (``matmul``), a tangent line its ``_dot``, an adjoint line reads the
``_bar`` of the statement it transposes (``x_bar = matmul_lhs_bar(matmul_bar, x, w)`` comes
from ``matmul = x @ w``); anything else (tapes of loop counters, ``assert``) gets the
function's ``def``. :func:`user_span` resolves a span through these maps (a derivative of a
derivative maps twice) and returns None for srcjax's own helpers, whose operations take the
location of the user statement that called them.
"""

from __future__ import annotations

import ast
import itertools
import os
import re
import sys
from typing import Any

import libcst as cst

from ..core import ArgumentError, InternalError, Span, TranspileError
from . import columns
from .ast_walk import walk_ast
from .names import assigned_names, code, names_in, target_names
from .normalize import NormalizedFunction

_TABLES: dict[str, dict[int, Span]] = {}  # generated filename -> line -> the user's span
_SRCJAX_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SUFFIX = re.compile(r"^(.+?)_(bar|dot)(_\d+)?$")
_NUMBERED = re.compile(r"_\d+$")


def user_span(span: Span, exact: bool = False) -> Span | None:
    """The user's location for ``span`` (a statement srcjax is lowering); None for a statement of
    srcjax's own helpers (``srcjax/adjoint.py``): its operations belong to the caller's line. ``exact`` (an
    error's place): the sub-expression of the user's statement that ``span``'s expression comes from
    (``columns.within``: a generated line folds several of the user's)."""
    for _ in range(16):  # generated from generated ...: each level maps to the one below
        table = _TABLES.get(span.filename)
        if table is None:
            break
        mapped = table.get(span.line)
        if mapped is None:
            return None
        span = columns.within(span, mapped) if exact else mapped
    if span.filename.startswith(_SRCJAX_DIR):
        return None
    return span


def is_users(span: Span) -> bool:
    """Whether ``span`` is in the user's code (not in source srcjax wrote nor in srcjax itself)."""
    return not span.filename.startswith("<srcjax.") and not span.filename.startswith(_SRCJAX_DIR)


def caller_span(depth: int = 1) -> Span | None:
    """The call in the user's code that is running srcjax now (the innermost frame outside srcjax and the
    source it wrote: the expression its instruction belongs to), or None where srcjax's front end is
    reading a function (a transformation it applies while reading: it places the error at the call it
    reads) or no such frame is found. ``depth``: the frames above this one to start from (their caller's)."""
    f = sys._getframe(depth)
    front = _SRCJAX_DIR + "frontend" + os.sep
    while f is not None:
        name = f.f_code.co_filename
        if name.startswith(front):
            return None
        if not name.startswith("<") and not name.startswith(_SRCJAX_DIR) and f.f_lineno is not None:
            line, end_line, col, end_col = next(itertools.islice(f.f_code.co_positions(), f.f_lasti // 2, None),
                                                (None, None, None, None))
            if line is None or end_line is None or col is None or end_col is None:
                return Span(name, f.f_lineno, 0, f.f_lineno, 0)
            return Span(name, line, col, end_line, end_col)
        f = f.f_back  # type: ignore[assignment]
    return None


def register(filename: str, module_text: str, owners: dict[str, NormalizedFunction],
             tree: ast.Module | None = None, renamed: dict[str, dict[str, str]] | None = None,
             marked: dict[int, Span] | None = None) -> None:
    """Map every statement line of the generated module ``filename`` (text ``module_text``, parsed:
    ``tree``) to a span of the function it derives from (``owners``: generated function name -> the
    program function it was written from). ``renamed``: per generated function, the temporaries the
    readable form renamed (``transforms/readable_names.renamed``: new name -> the writer's), each looked up
    by the writer's name, the user's statement's (the new one may be another statement's: ``sum_1``). ``marked``:
    the lines whose user statement the writer gave (``frontend.provenance``): taken as they are, before names."""
    table: dict[int, Span] = {}
    for node in (tree if tree is not None else ast.parse(module_text)).body:
        nf = owners.get(node.name) if isinstance(node, ast.FunctionDef) else None
        if nf is None:
            continue
        assert isinstance(node, ast.FunctionDef)
        every: dict[str, list[Span]] = {}
        bindings = _bindings(nf, every)
        back = renamed.get(node.name) if renamed else None
        if back:  # (a renamed temporary: the binding of its writer's name, or none; the new name's is another's)
            bindings = {**bindings, **{new: _lookup(old, bindings) for new, old in back.items()}}
        default = nf.source.def_span()
        if default is None:
            continue
        table[node.lineno] = default
        loops = _loops(nf)
        returned = _only_return(nf)
        rebound = _Rebound({n: spans for n, spans in every.items() if len(spans) > 1})
        for st in _statements(node.body):
            origin = _marked(st, marked) if marked else None
            origin = origin or rebound.origin(st) or _loop_origin(st, bindings, loops) or _origin(st, bindings)
            if isinstance(st, ast.Return) and returned is not None and origin in (None, default):
                origin = returned  # (`return a * b` written as one expression of the parameters: the user's return)
            table.setdefault(st.lineno, origin or default)
            rebound.passed(origin)
    _TABLES[filename] = table


class _Rebound:
    """The statement of a name the user binds more than once (``add = x * s`` then ``add = c * 3.0``) that an
    assignment of it in generated code derives from: the user's statements in order, each taken once, at or after
    the user's line the generated code was at (its forward sweep follows the user's order); None where none is
    left (an adjoint sweep's ``add = _tape.pop()``: the name's last binding, as for any name)."""

    def __init__(self, spans: dict[str, list[Span]]) -> None:
        self.spans, self.taken, self.line = spans, {n: -1 for n in spans}, 0

    def origin(self, st: ast.stmt) -> Span | None:
        if not self.spans or type(st) is not ast.Assign or len(st.targets) != 1 or \
                type(st.targets[0]) is not ast.Name or st.targets[0].id not in self.spans:
            return None
        n = st.targets[0].id
        spans = self.spans[n]
        k = next((k for k in range(self.taken[n] + 1, len(spans)) if spans[k].line >= self.line), None)
        if k is None:
            return None
        self.taken[n] = k
        return spans[k]

    def passed(self, origin: Span | None) -> None:
        if origin is not None:
            self.line = origin.line


def _marked(st: ast.stmt, marked: dict[int, Span]) -> Span | None:
    """The user's statement a writer marked the simple statement ``st`` (on its last line) as written from."""
    if hasattr(st, "body"):  # (a compound statement: its header is not marked)
        return None
    return marked.get(st.end_lineno or st.lineno)


def forget(filename: str) -> None:
    """Drop the table of the generated module ``filename`` (its functions died)."""
    _TABLES.pop(filename, None)


def _bindings(nf: NormalizedFunction, every: dict[str, list[Span]]) -> dict[str, Span | None]:
    """Each name the function binds -> the span of (the last) statement binding it; parameters ->
    the ``def``. ``every``: each name -> the spans of every statement binding it, in order."""
    out: dict[str, Span | None] = {}
    span = nf.source.def_span()
    if span is not None:
        for p in nf.plain_fdef.params.params:
            out[p.name.value] = span
    for fdef in dict.fromkeys([nf.plain_fdef, nf.fdef]):
        for st in _cst_statements(fdef.body.body):
            sp = nf.spans.get(id(st))
            if type(st) is cst.FunctionDef:  # a nested def (a loop body): its parameters (exact types: no ABCMeta)
                sp = nf.source.span(st.name) or sp
                for p in st.params.params:
                    if sp is not None:
                        out.setdefault(p.name.value, sp)
                continue
            if sp is None:
                continue
            if type(st) is cst.For:
                names = target_names(st.target)
            elif type(st) is cst.SimpleStatementLine:
                names = _line_assigned(st)
            else:
                continue
            for n in names:
                out[n] = sp
                spans = every.setdefault(n, [])
                if sp not in spans:
                    spans.append(sp)
    for n, sp in nf.loop_names.items():  # (a loop's sequence in derivative source: the user's loop)
        out.setdefault(n, sp)
    return out


def _line_assigned(st: cst.SimpleStatementLine) -> list[str]:
    """``assigned_names([st])`` without walking the values: in a line of simple statements only an
    assignment's targets bind (``for`` and ``def`` are compound; an expression holds no ``AssignTarget``)."""
    out: dict[str, None] = {}
    for sm in st.body:
        if isinstance(sm, cst.Assign):
            for t in sm.targets:
                out.update(dict.fromkeys(target_names(t.target)))
        elif isinstance(sm, (cst.AugAssign, cst.AnnAssign)):
            out.update(dict.fromkeys(target_names(sm.target)))
    return list(out)


def _only_return(nf: NormalizedFunction) -> Span | None:
    """The span of the user function's ``return`` statement where it has exactly one (None otherwise)."""
    found = [st for st in _cst_statements(nf.plain_fdef.body.body) if type(st) is cst.SimpleStatementLine
             and any(type(sm) is cst.Return for sm in st.body)]
    return nf.spans.get(id(found[0])) if len(found) == 1 else None


def _loops(nf: NormalizedFunction) -> list[tuple[set[str], Span]]:
    """The user's loops: the names each one's body assigns, and its span."""
    out: list[tuple[set[str], Span]] = []
    for st in _cst_statements(nf.plain_fdef.body.body):
        sp = nf.spans.get(id(st))
        if (type(st) is cst.While or type(st) is cst.For) and sp is not None:
            out.append((set(assigned_names(list(st.body.body))), sp))
    return out


def _loop_origin(st: ast.stmt, bindings: dict[str, Span | None], loops: list[tuple[set[str], Span]]) -> Span | None:
    """A batched ``while`` (``(acc, i), trips = srcjax.lax.while_loop(...)``): the innermost user loop whose
    body assigns the user's names it binds (not the line of their last assignment)."""
    if not (isinstance(st, ast.Assign) and isinstance(st.value, ast.Call) and
            isinstance(st.value.func, ast.Attribute) and st.value.func.attr == "while_loop"):
        return None
    names = {n.id for t in st.targets for n in walk_ast(t) if isinstance(n, ast.Name)} & set(bindings)
    found = [(len(assigned), k) for k, (assigned, _) in enumerate(loops) if names and names <= assigned]
    return loops[min(found)[1]][1] if found else None  # (the innermost such loop)


def _cst_statements(stmts: object) -> list[cst.CSTNode]:
    """The statements of ``stmts`` and of the blocks they hold (``body``, then ``orelse``: ``else`` and
    ``elif``), each before its blocks' (a list, not a generator: a generator's every step is a call)."""
    out: list[cst.CSTNode] = []
    todo = list(stmts)[::-1]  # type: ignore[call-overload]
    while todo:
        st = todo.pop()
        out.append(st)
        inner: list[Any] = []
        for field in ("body", "orelse"):
            block = getattr(st, field, None)
            t = type(block)  # (exact types: libcst's node classes are final, and isinstance goes through ABCMeta)
            if t is cst.Else:
                block = block.body  # type: ignore[union-attr]
                t = type(block)
            if t is cst.If:  # elif
                inner.append(block)
            elif t is cst.IndentedBlock or t is cst.SimpleStatementSuite:
                inner += block.body  # type: ignore[union-attr]
        todo += inner[::-1]
    return out


def _statements(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of ``stmts`` and of the blocks they hold, each before its blocks' (a list: see
    :func:`_cst_statements`)."""
    out: list[ast.stmt] = []
    todo = stmts[::-1]
    while todo:
        st = todo.pop()
        out.append(st)
        inner: list[ast.stmt] = []
        for field in ("body", "orelse", "finalbody"):
            block = getattr(st, field, None)
            if type(block) is list:
                inner += block
        todo += inner[::-1]
    return out


def _origin(st: ast.stmt, bindings: dict[str, Span | None]) -> Span | None:
    """The span of the user statement ``st`` derives from (see the module docstring)."""
    targets: list[str] = []
    t = type(st)
    if t is ast.Assign:
        for target in st.targets:  # type: ignore[attr-defined]
            _names_in(target, targets)
    elif t is ast.AugAssign or t is ast.AnnAssign or t is ast.For:
        _names_in(st.target, targets)  # type: ignore[attr-defined]
    if any((m := _SUFFIX.match(t)) is not None and m.group(2) == "bar" for t in targets):
        for n in _reads(st):  # the cotangent it transposes (not its own accumulation)
            m = _SUFFIX.match(n)
            found = _lookup(m.group(1), bindings) if m is not None and m.group(2) == "bar" and n not in targets \
                else None
            if found is not None:
                return found
    for n in targets:
        found = _lookup(n, bindings)
        if found is not None:
            return found
    for n in _reads(st):  # (walked only when no target is found: most statements stop above)
        found = _lookup(n, bindings)
        if found is not None:
            return found
    return None


def _names_in(target: ast.AST, out: list[str]) -> None:
    """``out`` += the names ``walk_ast(target)`` meets, in its order (a plain name: itself, no walk)."""
    if type(target) is ast.Name:
        out.append(target.id)
    else:
        out += [n.id for n in walk_ast(target) if n.__class__ is ast.Name]  # type: ignore[attr-defined]


def _reads(st: ast.stmt) -> list[str]:
    """The names the head of ``st`` reads (its value, test, iterable or message), in ``walk_ast``'s order."""
    head: list[ast.AST] = [v for v in (getattr(st, f, None) for f in ("value", "test", "iter", "msg")) if v is not None]
    return [n.id for h in head for n in walk_ast(h)  # type: ignore[attr-defined]
            if n.__class__ is ast.Name and n.ctx.__class__ is ast.Load]  # type: ignore[attr-defined]


def _lookup(name: str, bindings: dict[str, Span | None]) -> Span | None:
    """``name``'s binding: itself, the primal of a ``_bar``/``_dot``, or the name a renaming numbered
    (``mul_1``: a loop body of ``srcjax.lax.fori_loop`` written into the function); None where it is bound to
    None (a temporary the readable form renamed whose writer's name has no binding: ``register``)."""
    m = _SUFFIX.match(name)
    for n in (name, m.group(1) if m is not None else None):
        while n is not None:
            if n in bindings:
                return bindings[n]
            stripped = _NUMBERED.sub("", n)
            n = stripped if stripped != n else None
    return None


def user_error(e: TranspileError) -> TranspileError:
    """Drop srcjax's own frames from a user-facing error (internal errors keep them); an error placed
    in source srcjax wrote (``<srcjax.vmap of f #0>``) or in its helpers is placed at the user's line
    that source comes from (or the innermost user call that led there)."""
    if not isinstance(e, InternalError):
        e.__cause__ = None
        e.__suppress_context__ = True
        e.with_traceback(None)
    if e.span is None and isinstance(e, ArgumentError):  # (about a call's arguments or a transformation's
        e.span = caller_span(2)  # options: at the user's line making it; above this frame)
    if e.span is not None and not is_users(e.span):
        for k, site in enumerate([e.span, *e.chain]):
            mapped = user_span(site, exact=True)
            if mapped is not None:
                e.span, e.chain = mapped, [c for c in e.chain[k:] if is_users(c) and c != mapped]
                if e.note:  # (its names are those of the code srcjax wrote: a batched helper's parameters)
                    e.note = f"in the code srcjax wrote for this line: {e.note}"
                break
    return e


def user_code(node: cst.CSTNode, span: Span | None) -> str:
    """``node``, a normalized statement or expression that a refusal quotes, as the user wrote it at ``span``
    (``out.insert(0, r[t] * 2)``, which normalization wrote ``out.insert(0, mul)``): the span's statement, or its
    value for an expression (a call of the same function, or an expression of the same kind); ``node``'s own code
    where the span holds something else (a statement srcjax wrote, a line of several parts)."""
    text = span.text() if span is not None else ""
    try:
        line = cst.parse_module(text.strip() + "\n").body if text.strip() else []
    except cst.ParserSyntaxError:
        line = []
    if len(line) != 1 or not isinstance(line[0], cst.SimpleStatementLine) or len(line[0].body) != 1:
        return code(node)
    small = line[0].body[0]
    if isinstance(node, cst.Assign) and isinstance(small, cst.Expr) and len(node.targets) == 1 and \
            set(names_in(node.value)) - set(names_in(small.value)):  # (`cur = items` of a span at the user's
        return code(node.with_changes(value=small.value))  # `[p * 2.0 for p in prev]`: `cur = [p * 2.0 for ...]`)
    if not isinstance(node, cst.BaseExpression):
        return code(small) if type(small) is type(node) else code(node)
    if isinstance(small, cst.AugAssign) and isinstance(node, cst.BinaryOperation):
        return code(small)  # (`out += [r[1]]`, normalized `out = out + [getitem_1]`)
    value = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
    if value is None or type(value) is not type(node) or \
            isinstance(node, cst.Call) and code(node.func) != code(value.func):  # type: ignore[attr-defined]
        if value is not None and set(names_in(node)) - set(names_in(small)):
            return code(value)  # (`items + [mul_1]`, names srcjax made: the user's `[*[f(t) for t in ts], y]`)
        return code(node)
    return code(value)
