"""libcst modules of the functions srcjax writes, built from Python's ``ast``.

A derivative's or a batched function's text is read back (``read.read_function``) to be normalized
and lowered; libcst's parser took ~2.4 us a character of it (11 ms of a first ``hessian``), ``ast`` a
tenth of that. :func:`parse_function_module` builds from ``ast`` the module libcst's parser builds
(as :mod:`.cst_expressions` does for expressions: the same node types and fields, whitespace
included), for a text of the form srcjax writes::

    def name(a, b):
        target = expression          (or `t1, t2 = ...`, `x[i] = ...`, `x += ...`)
        assert test, 'message'
        call(...)
        return expression            (each line may end in `  # a comment`)
        if test:                     (`elif test:`, `else:`; `while test:`, `for target in iterable:`, no `else`)
            pass                     (`break`, `continue`)

        def body(c):                 (a nested def with plain parameters; empty lines before a statement)
            return c

one simple statement a line, every block four spaces further in, plain parameters, expressions that
:class:`~.cst_expressions.ExpressionBuilder` builds. Any other text (a docstring, a comment or spaces on a
line of their own, a default or an annotation, a decorator, a loop's ``else``, a ``with``, a line break
inside a statement) is parsed by libcst, as before. :func:`function_module` also gives the positions of a
built module's nodes without libcst's code generation (``read._positions`` ran it over the whole
tree: ~half the cost of the parse): the builders record each node's range as they read its text (a second
walk over the built tree found them before, ~12% of the Python calls of normalizing generated functions).
``tests/test_cst_expressions.py`` checks the trees are libcst's on generated texts of every transformation,
and the positions too.
"""

from __future__ import annotations

import ast
import re
from typing import Any, NamedTuple

import libcst as cst

from .cst_expressions import ExpressionBuilder, Unsupported, make, whitespace

__all__ = ["BuiltNames", "function_module", "parse_function_module"]


class BuiltNames(NamedTuple):
    """The names of a function built here, met as it was built (no walk of the tree)."""

    names: frozenset[str]  # its variable names: ``set(names.names_in(fdef))``
    bound: frozenset[str]  # the names it binds: ``resolve.local_names(fdef)``
    # the body's variables (``Name``) and attributes (``(Attribute, k)``) in the tree's order (ExpressionBuilder.refs);
    # None: not recorded
    refs: tuple[Any, ...] | None = None

_HEADER = re.compile(r"def ([A-Za-z_][A-Za-z_0-9]*)\(((?:[A-Za-z_][A-Za-z_0-9]*(?:, [A-Za-z_][A-Za-z_0-9]*)*)?)\):\Z")
_PLAIN = re.compile(r"[ -~\n]*\Z")  # printable ASCII and line ends: no tab, no carriage return
_COMMENT = re.compile(r"( +)(#[^\n]*)\Z")
_AUG = {ast.Add: ("+=", cst.AddAssign), ast.Sub: ("-=", cst.SubtractAssign), ast.Mult: ("*=", cst.MultiplyAssign),
        ast.Div: ("/=", cst.DivideAssign), ast.MatMult: ("@=", cst.MatrixMultiplyAssign),
        ast.FloorDiv: ("//=", cst.FloorDivideAssign), ast.Mod: ("%=", cst.ModuloAssign),
        ast.Pow: ("**=", cst.PowerAssign)}

_WORDS: dict[type, tuple[str, type]] = {ast.Pass: ("pass", cst.Pass), ast.Break: ("break", cst.Break),
                                        ast.Continue: ("continue", cst.Continue)}


def _name(value: str) -> Any:
    return make(cst.Name, value=value, lpar=(), rpar=())


def _trailing(comment: str | None, spaces: str) -> Any:
    return make(cst.TrailingWhitespace, whitespace=whitespace(spaces),
                comment=make(cst.Comment, value=comment) if comment is not None else None,
                newline=make(cst.Newline, value=None))


def _params(names: list[str], line: int, col: int, pos: dict[Any, Any], seen: set[str]) -> Any:
    """Plain parameters ``a, b`` from column ``col`` of ``line``, their positions in ``pos``, names in ``seen``."""
    params = []
    start = col
    seen.update(names)
    for k, n in enumerate(names):
        name = _name(n)
        end = col + len(n)
        comma: Any = cst.MaybeSentinel.DEFAULT
        if k < len(names) - 1:
            comma = make(cst.Comma, whitespace_before=whitespace(""), whitespace_after=whitespace(" "))
            pos[comma] = (line, end, line, end + 1)
        params.append(param := make(cst.Param, name=name, annotation=None, equal=cst.MaybeSentinel.DEFAULT,
                                    default=None, comma=comma, star="", whitespace_after_star=whitespace(""),
                                    whitespace_after_param=whitespace("")))
        pos[name] = pos[param] = (line, col, line, end)  # (a parameter's: its name's)
        col = end + 2
    out = make(cst.Parameters, params=tuple(params), star_arg=cst.MaybeSentinel.DEFAULT, kwonly_params=(),
               star_kwarg=None, posonly_params=(), posonly_ind=cst.MaybeSentinel.DEFAULT)
    pos[out] = (line, start, line, col - 2 if names else start)
    return out


class _Line(ExpressionBuilder):
    """One statement's line (its indentation and comment taken off), read left to right."""

    def statement(self, node: Any) -> Any:
        kind = type(node)
        if kind is ast.Assign:
            targets = []
            for t in node.targets:
                start = self.i
                target = self.expr(t)
                end = self.i
                before, after = self.around("=")
                targets.append(at := make(cst.AssignTarget, target=target, whitespace_before_equal=whitespace(before),
                                          whitespace_after_equal=whitespace(after)))
                self.pos[at] = (self.line, start, self.line, end)
            return make(cst.Assign, targets=tuple(targets), value=self.expr(node.value),
                        semicolon=cst.MaybeSentinel.DEFAULT)
        if kind is ast.Return:
            self.token("return")
            after = self.spaces()
            value = self.expr(node.value) if node.value is not None else None
            return make(cst.Return, value=value, whitespace_after_return=whitespace(after),
                        semicolon=cst.MaybeSentinel.DEFAULT)
        if kind is ast.Expr:
            return make(cst.Expr, value=self.expr(node.value), semicolon=cst.MaybeSentinel.DEFAULT)
        if kind is ast.Assert:
            self.token("assert")
            after = self.spaces()
            test = self.expr(node.test)
            msg, comma = None, cst.MaybeSentinel.DEFAULT
            if node.msg is not None:
                self.no_space()
                self.token(",")
                at = self.i - 1
                comma = make(cst.Comma, whitespace_before=whitespace(""), whitespace_after=whitespace(self.spaces()))
                self.pos[comma] = (self.line, at, self.line, at + 1)
                msg = self.expr(node.msg)
            return make(cst.Assert, test=test, msg=msg, comma=comma, whitespace_after_assert=whitespace(after),
                        semicolon=cst.MaybeSentinel.DEFAULT)
        if kind is ast.AugAssign:
            tok, cls = _AUG[type(node.op)]
            target = self.expr(node.target)
            op = self.operator(tok, cls)
            return make(cst.AugAssign, target=target, operator=op, value=self.expr(node.value),
                        semicolon=cst.MaybeSentinel.DEFAULT)
        if kind is ast.Pass or kind is ast.Break or kind is ast.Continue:
            word, simple = _WORDS[kind]
            self.token(word)
            return make(simple, semicolon=cst.MaybeSentinel.DEFAULT)
        raise Unsupported(kind)


def _function(text: str, node: Any = None, places: dict[Any, tuple[int, int, int, int]] | None = None,
              names: set[str] | None = None, bound: set[str] | None = None, refs: list[Any] | None = None) -> Any:
    """The module of ``text``; ``node``: where given, ``ast``'s ``FunctionDef`` of exactly this text parsed as
    part of a larger module (its lines there start at ``node.lineno``, its columns are the text's: a top-level
    ``def``), so the text is not parsed again. ``places``: where given, gets each node's position (as libcst's
    ``PositionProvider`` finds them in the module), found as the text is read; ``names``: where given, gets the
    variable names of the module's nodes (``set(names.names_in(its def))``), ``bound`` the names the function
    binds (``resolve.local_names``: its parameters, targets, nested ``def``s' names and theirs), ``refs`` its
    body's variables and attributes in the tree's order (:class:`BuiltNames`)."""
    if not text.endswith("\n") or not _PLAIN.match(text):
        raise Unsupported("text")
    lines = text[:-1].split("\n")
    if len(lines) < 2 or not lines[0].startswith("def "):
        raise Unsupported("header")
    if node is None:
        tree = ast.parse(text)
        if len(tree.body) != 1:
            raise Unsupported("form")
        node = tree.body[0]
    fdef = node
    base = fdef.lineno - 1  # (0 for the text's own parse)
    if type(fdef) is not ast.FunctionDef or fdef.col_offset != 0 or fdef.end_lineno != len(lines) + base:
        raise Unsupported("form")
    pos = places if places is not None else {}
    seen = names if names is not None else set()
    binds = bound if bound is not None else set()
    params = _signature(lines[0], fdef, 0, 1, pos, seen)
    binds.update(p.name.value for p in params.params)
    reader = _Lines([""] * base + lines, base, pos, seen, binds, [] if refs is None else refs)  # (read by the node's
    # own line numbers; its header's defaults are not in refs: the body's alone)
    reader.next = base + 2
    block = reader.block(fdef.body, 4)
    if reader.next != len(lines) + base + 1:  # pragma: no cover - the function's last line is its last statement's
        raise Unsupported("end")
    func = _def(fdef.name, params, block, (), 1, 0, pos, seen)
    module = make(cst.Module, body=(func,), header=(), footer=(), encoding="utf-8", default_indent="    ",
                  default_newline="\n", has_trailing_newline=True)
    pos[module] = (1, 0, len(lines) + 1, 0)
    return module


def _signature(line: str, node: Any, indent: int, ln: int, pos: dict[Any, Any], seen: set[str],
               refs: list[Any] | None = None) -> Any:
    """The parameters of the ``def`` on ``line`` (line ``ln`` of the text: positions in ``pos``): plain names
    (:data:`_HEADER`), or names with defaults (``initial=None``: no spaces around ``=``, one after each comma)
    that the expression builder reads."""
    head = _HEADER.match(line, indent)
    if head is not None:
        return _params(head.group(2).split(", ") if head.group(2) else [], ln, indent + 5 + len(head.group(1)), pos,
                       seen)
    a = node.args
    if node.decorator_list or node.returns is not None or a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or \
            node.type_comment is not None or any(x.annotation is not None for x in a.args) or not line.endswith(":"):
        raise Unsupported("header")
    b = _Line(line[:-1], ln, pos, seen, refs)
    b.i = indent
    b.token("def")
    if b.spaces() != " ":
        raise Unsupported("header")
    b.token(node.name)
    b.token("(")
    pstart = b.i
    first_default = len(a.args) - len(a.defaults)
    params = []
    for k, arg in enumerate(a.args):
        start = b.i
        b.token(arg.arg)
        name = _name(arg.arg)
        seen.add(arg.arg)
        pos[name] = (ln, start, ln, b.i)
        equal: Any = cst.MaybeSentinel.DEFAULT
        default = None
        if k >= first_default:
            b.no_space()
            b.token("=")
            b.no_space()
            equal = make(cst.AssignEqual, whitespace_before=whitespace(""), whitespace_after=whitespace(""))
            pos[equal] = (ln, b.i - 1, ln, b.i)
            default = b.expr(a.defaults[k - first_default])
        comma: Any = cst.MaybeSentinel.DEFAULT
        if k < len(a.args) - 1:
            b.no_space()
            b.token(",")
            if b.spaces() != " ":
                raise Unsupported("header")
            comma = make(cst.Comma, whitespace_before=whitespace(""), whitespace_after=whitespace(" "))
            pos[comma] = (ln, b.i - 2, ln, b.i - 1)
        params.append(param := make(cst.Param, name=name, annotation=None, equal=equal, default=default,
                                    comma=comma, star="", whitespace_after_star=whitespace(""),
                                    whitespace_after_param=whitespace("")))
        pos[param] = pos[name]  # (a parameter's: its name's)
    b.no_space()
    end = b.i
    b.token(")")
    if b.i != len(b.t):
        raise Unsupported("header")
    out = make(cst.Parameters, params=tuple(params), star_arg=cst.MaybeSentinel.DEFAULT, kwonly_params=(),
               star_kwarg=None, posonly_params=(), posonly_ind=cst.MaybeSentinel.DEFAULT)
    pos[out] = (ln, pstart, ln, end)
    return out


def _def(name: str, params: Any, block: Any, leading: tuple[Any, ...], line: int, indent: int,
         pos: dict[Any, Any], seen: set[str]) -> Any:
    """The ``def`` on ``line`` at ``indent``, its name's and its own positions in ``pos`` (its block's there), its
    name in ``seen``."""
    node = _name(name)
    seen.add(name)
    pos[node] = (line, indent + 4, line, indent + 4 + len(name))
    f = make(cst.FunctionDef, name=node, params=params, body=block,
             decorators=(), returns=None, asynchronous=None, leading_lines=leading, lines_after_decorators=(),
             whitespace_after_def=whitespace(" "), whitespace_after_name=whitespace(""),
             whitespace_before_params=whitespace(""), whitespace_before_colon=whitespace(""),
             type_parameters=None, whitespace_after_type_parameters=whitespace(""))
    pos[f] = (line, indent, *pos[block][2:])
    return f


def _empty_line() -> Any:
    return make(cst.EmptyLine, indent=False, whitespace=whitespace(""), comment=None,
                newline=make(cst.Newline, value=None))


class _Lines:
    """A function's body read statement by statement: simple statements one a line (as above), ``if``/``elif``/
    ``else``, ``while`` and ``for`` (no ``else``) and nested ``def``s with plain parameters, their headers one a
    line with no comment, every block indented four spaces more, empty lines (no spaces) before a statement."""

    def __init__(self, lines: list[str], base: int, pos: dict[Any, Any], names: set[str], bound: set[str],
                 refs: list[Any]) -> None:
        self.lines = lines
        self.next = 2  # the next line to read (1-based: the header is line 1)
        self.base = base  # (ast's line numbers less the text's)
        self.pos = pos
        self.names = names
        self.bound = bound
        self.refs = refs  # (the body's: ExpressionBuilder.refs)

    def block(self, stmts: list[Any], indent: int) -> Any:
        body = tuple(self.statement(s, indent) for s in stmts)
        if not body:  # pragma: no cover - ast's blocks are never empty
            raise Unsupported("block")
        pos = self.pos
        out = make(cst.IndentedBlock, body=body, header=_trailing(None, ""), indent=None, footer=())
        pos[out] = (pos[body[0]][0], indent, *pos[body[-1]][2:])
        return out

    def statement(self, node: Any, indent: int) -> Any:
        leading = []
        while self.next < node.lineno:
            if self.lines[self.next - 1]:
                raise Unsupported("line")
            leading.append(_empty_line())
            self.next += 1
        line = self.lines[node.lineno - 1]
        if self.next != node.lineno or node.col_offset != indent or len(line) <= indent or line[indent] == " " or \
                not line.startswith(" " * indent):
            raise Unsupported("line")
        kind = type(node)
        if kind is ast.If:
            return self.if_(node, indent, tuple(leading), "if")
        if kind is ast.While or kind is ast.For:
            return self.loop(node, indent, tuple(leading))
        if kind is ast.FunctionDef:
            if node.decorator_list or node.end_lineno is None:
                raise Unsupported("def")
            ln = node.lineno - self.base
            params = _signature(line, node, indent, ln, self.pos, self.names, self.refs)
            self.bound.add(node.name)  # (a nested def: its name, and its own locals, in one namespace)
            self.bound.update(p.name.value for p in params.params)
            self.next += 1
            return _def(node.name, params, self.block(node.body, indent + 4), tuple(leading), ln, indent, self.pos,
                        self.names)
        return self.simple(node, line, indent, tuple(leading))

    def simple(self, node: Any, line: str, indent: int, leading: tuple[Any, ...]) -> Any:
        end = node.end_col_offset or 0
        if node.end_lineno != node.lineno:
            raise Unsupported("line")
        comment, spaces = None, ""
        if "#" in line:
            found = _COMMENT.search(line, end)
            if found is None or found.start() != end:
                raise Unsupported("comment")
            spaces, comment = found.group(1), found.group(2)
        elif line.endswith(" "):
            raise Unsupported("space")
        # (a statement's columns are the line's: read it with its indentation)
        ln = node.lineno - self.base
        b = _Line(line[:end], ln, self.pos, self.names, self.refs)
        b.i = indent
        stmt = b.statement(node)
        kind = type(node)
        if kind is ast.Assign:
            for t in node.targets:
                _bound_by(t, self.bound)
        elif kind is ast.AugAssign:
            _bound_by(node.target, self.bound)
        if b.i != end:
            raise Unsupported("end")
        self.next += 1
        out = make(cst.SimpleStatementLine, body=(stmt,), leading_lines=leading,
                   trailing_whitespace=_trailing(comment, spaces))
        self.pos[out] = self.pos[stmt] = (ln, indent, ln, end)
        return out

    def header(self, node: Any, indent: int, keyword: str) -> _Line:
        """The reader of ``node``'s header line, past its keyword (the line must end in the colon)."""
        line = self.lines[node.lineno - 1]
        if not line.endswith(":") or node.end_lineno is None:
            raise Unsupported("header")
        b = _Line(line[:-1], node.lineno - self.base, self.pos, self.names, self.refs)
        b.i = indent
        b.token(keyword)
        self.next = node.lineno + 1
        return b

    def if_(self, node: Any, indent: int, leading: tuple[Any, ...], keyword: str) -> Any:
        b = self.header(node, indent, keyword)
        before = b.spaces()
        test = b.expr(node.test)
        after = b.spaces()
        if b.i != len(b.t):
            raise Unsupported("header")
        body = self.block(node.body, indent + 4)
        pos = self.pos
        end = pos[body][2:]
        orelse: Any = None
        if node.orelse:
            line = self.lines[self.next - 1] if self.next <= len(self.lines) else ""
            first = node.orelse[0]
            if line.startswith(" " * indent + "elif ") and len(node.orelse) == 1 and type(first) is ast.If and \
                    first.lineno == self.next and first.col_offset == indent:
                orelse = self.if_(first, indent, (), "elif")
                end = pos[orelse][2:]
            elif line == " " * indent + "else:":
                start = self.next - self.base
                self.next += 1
                orelse = make(cst.Else, body=self.block(node.orelse, indent + 4), leading_lines=(),
                              whitespace_before_colon=whitespace(""))
                end = pos[orelse.body][2:]
                pos[orelse] = (start, indent, *end)
            else:
                raise Unsupported("else")
        out = make(cst.If, test=test, body=body, orelse=orelse, leading_lines=leading,
                   whitespace_before_test=whitespace(before), whitespace_after_test=whitespace(after))
        pos[out] = (node.lineno - self.base, indent, *end)
        return out

    def loop(self, node: Any, indent: int, leading: tuple[Any, ...]) -> Any:
        if node.orelse:
            raise Unsupported("else")
        if type(node) is ast.While:
            b = self.header(node, indent, "while")
            after_while = b.spaces()
            test = b.expr(node.test)
            before_colon = b.spaces()
            if b.i != len(b.t):
                raise Unsupported("header")
            out = make(cst.While, test=test, body=self.block(node.body, indent + 4), orelse=None,
                       leading_lines=leading, whitespace_after_while=whitespace(after_while),
                       whitespace_before_colon=whitespace(before_colon))
            self.pos[out] = (node.lineno - self.base, indent, *self.pos[out.body][2:])
            return out
        if node.type_comment is not None:
            raise Unsupported("for")
        b = self.header(node, indent, "for")
        after_for = b.spaces()
        target = b.expr(node.target)
        _bound_by(node.target, self.bound)
        before_in, after_in = b.around("in")
        it = b.expr(node.iter)
        before_colon = b.spaces()
        if b.i != len(b.t) or not before_in or not after_in:
            raise Unsupported("header")
        out = make(cst.For, target=target, iter=it, body=self.block(node.body, indent + 4), orelse=None,
                   asynchronous=None, leading_lines=leading, whitespace_after_for=whitespace(after_for),
                   whitespace_before_in=whitespace(before_in), whitespace_after_in=whitespace(after_in),
                   whitespace_before_colon=whitespace(before_colon))
        self.pos[out] = (node.lineno - self.base, indent, *self.pos[out.body][2:])
        return out


def _bound_by(t: Any, out: set[str]) -> None:
    """(``ast``) the names the target ``t`` binds, into ``out``, as ``names.target_names`` finds them."""
    kind = type(t)
    if kind is ast.Name:
        out.add(t.id)
    elif kind is ast.Tuple or kind is ast.List:
        for e in t.elts:
            _bound_by(e, out)
    elif kind is ast.Starred:
        _bound_by(t.value, out)


_REFUSED = (Unsupported, SyntaxError, ValueError, KeyError, IndexError, AttributeError, TypeError)


def parse_function_module(text: str, parse: Any) -> cst.Module:
    """``parse(text)`` (libcst's ``parse_module``, or ``read.parse_module``): the same tree, built from ``ast``
    for a straight-line function srcjax writes (see the module's docstring)."""
    try:
        return _function(text)  # type: ignore[no-any-return]
    except _REFUSED:
        return parse(text)  # type: ignore[no-any-return]


def function_module(text: str, parse: Any, positions: Any, node: Any = None
                    ) -> tuple[cst.Module, dict[Any, tuple[int, int, int, int]], BuiltNames | None]:
    """``(module, positions(module), names)`` of :func:`parse_function_module`'s ``module``: for a module built
    here, the positions found as it is built (the ranges libcst's code generation finds, without it) and its
    names (:class:`BuiltNames`; None for a module libcst parsed). ``node``: ``ast``'s tree of the text where a
    larger module's parse holds it already (see :func:`_function`)."""
    places: dict[Any, tuple[int, int, int, int]] = {}
    names: set[str] = set()
    bound: set[str] = set()
    refs: list[Any] = []
    try:
        module = _function(text, node, places, names, bound, refs)
    except _REFUSED:
        module = parse(text)
        return module, positions(module), None
    return module, places, BuiltNames(frozenset(names), frozenset(bound), tuple(refs))


