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
tree: ~half the cost of the parse), as :class:`_Places` finds them. ``tests/test_cst_expressions.py``
checks the trees are libcst's on generated texts of every transformation, and the positions too.
"""

from __future__ import annotations

import ast
import re
from typing import Any

import libcst as cst

from .cst_expressions import TOKENS, TWO_TOKENS, ExpressionBuilder, Unsupported, make, whitespace

__all__ = ["function_module", "parse_function_module"]

_HEADER = re.compile(r"def ([A-Za-z_][A-Za-z_0-9]*)\(((?:[A-Za-z_][A-Za-z_0-9]*(?:, [A-Za-z_][A-Za-z_0-9]*)*)?)\):\Z")
_PLAIN = re.compile(r"[ -~\n]*\Z")  # printable ASCII and line ends: no tab, no carriage return
_COMMENT = re.compile(r"( +)(#[^\n]*)\Z")
_AUG = {ast.Add: ("+=", cst.AddAssign), ast.Sub: ("-=", cst.SubtractAssign), ast.Mult: ("*=", cst.MultiplyAssign),
        ast.Div: ("/=", cst.DivideAssign), ast.MatMult: ("@=", cst.MatrixMultiplyAssign),
        ast.FloorDiv: ("//=", cst.FloorDivideAssign), ast.Mod: ("%=", cst.ModuloAssign),
        ast.Pow: ("**=", cst.PowerAssign)}

_WORDS: dict[type, tuple[str, type]] = {ast.Pass: ("pass", cst.Pass), ast.Break: ("break", cst.Break),
                                        ast.Continue: ("continue", cst.Continue)}
_WORD_LENGTHS = {cls: len(word) for word, cls in _WORDS.values()}


def _name(value: str) -> Any:
    return make(cst.Name, value=value, lpar=(), rpar=())


def _trailing(comment: str | None, spaces: str) -> Any:
    return make(cst.TrailingWhitespace, whitespace=whitespace(spaces),
                comment=make(cst.Comment, value=comment) if comment is not None else None,
                newline=make(cst.Newline, value=None))


def _params(names: list[str]) -> Any:
    params = []
    for k, n in enumerate(names):
        comma: Any = make(cst.Comma, whitespace_before=whitespace(""), whitespace_after=whitespace(" ")) \
            if k < len(names) - 1 else cst.MaybeSentinel.DEFAULT
        params.append(make(cst.Param, name=_name(n), annotation=None, equal=cst.MaybeSentinel.DEFAULT, default=None,
                           comma=comma, star="", whitespace_after_star=whitespace(""),
                           whitespace_after_param=whitespace("")))
    return make(cst.Parameters, params=tuple(params), star_arg=cst.MaybeSentinel.DEFAULT, kwonly_params=(),
                star_kwarg=None, posonly_params=(), posonly_ind=cst.MaybeSentinel.DEFAULT)


class _Line(ExpressionBuilder):
    """One statement's line (its indentation and comment taken off), read left to right."""

    def statement(self, node: Any) -> Any:
        kind = type(node)
        if kind is ast.Assign:
            targets = []
            for t in node.targets:
                target = self.expr(t)
                before, after = self.around("=")
                targets.append(make(cst.AssignTarget, target=target, whitespace_before_equal=whitespace(before),
                                    whitespace_after_equal=whitespace(after)))
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
                comma = make(cst.Comma, whitespace_before=whitespace(""), whitespace_after=whitespace(self.spaces()))
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


def _function(text: str, node: Any = None) -> Any:
    """The module of ``text``; ``node``: where given, ``ast``'s ``FunctionDef`` of exactly this text parsed as
    part of a larger module (its lines there start at ``node.lineno``, its columns are the text's: a top-level
    ``def``), so the text is not parsed again."""
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
    params = _signature(lines[0], fdef, 0)
    reader = _Lines([""] * base + lines)  # (read by the node's own line numbers)
    reader.next = base + 2
    block = reader.block(fdef.body, 4)
    if reader.next != len(lines) + base + 1:  # pragma: no cover - the function's last line is its last statement's
        raise Unsupported("end")
    func = _def(fdef.name, params, block, ())
    return make(cst.Module, body=(func,), header=(), footer=(), encoding="utf-8", default_indent="    ",
                default_newline="\n", has_trailing_newline=True)


def _signature(line: str, node: Any, indent: int) -> Any:
    """The parameters of the ``def`` on ``line``: plain names (:data:`_HEADER`), or names with defaults
    (``initial=None``: no spaces around ``=``, one after each comma) that the expression builder reads."""
    head = _HEADER.match(line, indent)
    if head is not None:
        return _params(head.group(2).split(", ") if head.group(2) else [])
    a = node.args
    if node.decorator_list or node.returns is not None or a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or \
            node.type_comment is not None or any(x.annotation is not None for x in a.args) or not line.endswith(":"):
        raise Unsupported("header")
    b = _Line(line[:-1])
    b.i = indent
    b.token("def")
    if b.spaces() != " ":
        raise Unsupported("header")
    b.token(node.name)
    b.token("(")
    first_default = len(a.args) - len(a.defaults)
    params = []
    for k, arg in enumerate(a.args):
        b.token(arg.arg)
        equal: Any = cst.MaybeSentinel.DEFAULT
        default = None
        if k >= first_default:
            b.no_space()
            b.token("=")
            b.no_space()
            equal = make(cst.AssignEqual, whitespace_before=whitespace(""), whitespace_after=whitespace(""))
            default = b.expr(a.defaults[k - first_default])
        comma: Any = cst.MaybeSentinel.DEFAULT
        if k < len(a.args) - 1:
            b.no_space()
            b.token(",")
            if b.spaces() != " ":
                raise Unsupported("header")
            comma = make(cst.Comma, whitespace_before=whitespace(""), whitespace_after=whitespace(" "))
        params.append(make(cst.Param, name=_name(arg.arg), annotation=None, equal=equal, default=default, comma=comma,
                           star="", whitespace_after_star=whitespace(""), whitespace_after_param=whitespace("")))
    b.no_space()
    b.token(")")
    if b.i != len(b.t):
        raise Unsupported("header")
    return make(cst.Parameters, params=tuple(params), star_arg=cst.MaybeSentinel.DEFAULT, kwonly_params=(),
                star_kwarg=None, posonly_params=(), posonly_ind=cst.MaybeSentinel.DEFAULT)


def _def(name: str, params: Any, block: Any, leading: tuple[Any, ...]) -> Any:
    return make(cst.FunctionDef, name=_name(name), params=params, body=block,
                decorators=(), returns=None, asynchronous=None, leading_lines=leading, lines_after_decorators=(),
                whitespace_after_def=whitespace(" "), whitespace_after_name=whitespace(""),
                whitespace_before_params=whitespace(""), whitespace_before_colon=whitespace(""),
                type_parameters=None, whitespace_after_type_parameters=whitespace(""))


def _empty_line() -> Any:
    return make(cst.EmptyLine, indent=False, whitespace=whitespace(""), comment=None,
                newline=make(cst.Newline, value=None))


class _Lines:
    """A function's body read statement by statement: simple statements one a line (as above), ``if``/``elif``/
    ``else``, ``while`` and ``for`` (no ``else``) and nested ``def``s with plain parameters, their headers one a
    line with no comment, every block indented four spaces more, empty lines (no spaces) before a statement."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.next = 2  # the next line to read (1-based: the header is line 1)

    def block(self, stmts: list[Any], indent: int) -> Any:
        body = tuple(self.statement(s, indent) for s in stmts)
        return make(cst.IndentedBlock, body=body, header=_trailing(None, ""), indent=None, footer=())

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
            params = _signature(line, node, indent)
            self.next += 1
            return _def(node.name, params, self.block(node.body, indent + 4), tuple(leading))
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
        b = _Line(line[:end])
        b.i = indent
        stmt = b.statement(node)
        if b.i != end:
            raise Unsupported("end")
        self.next += 1
        return make(cst.SimpleStatementLine, body=(stmt,), leading_lines=leading,
                    trailing_whitespace=_trailing(comment, spaces))

    def header(self, node: Any, indent: int, keyword: str) -> _Line:
        """The reader of ``node``'s header line, past its keyword (the line must end in the colon)."""
        line = self.lines[node.lineno - 1]
        if not line.endswith(":") or node.end_lineno is None:
            raise Unsupported("header")
        b = _Line(line[:-1])
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
        orelse: Any = None
        if node.orelse:
            line = self.lines[self.next - 1] if self.next <= len(self.lines) else ""
            first = node.orelse[0]
            if line.startswith(" " * indent + "elif ") and len(node.orelse) == 1 and type(first) is ast.If and \
                    first.lineno == self.next and first.col_offset == indent:
                orelse = self.if_(first, indent, (), "elif")
            elif line == " " * indent + "else:":
                self.next += 1
                orelse = make(cst.Else, body=self.block(node.orelse, indent + 4), leading_lines=(),
                              whitespace_before_colon=whitespace(""))
            else:
                raise Unsupported("else")
        return make(cst.If, test=test, body=body, orelse=orelse, leading_lines=leading,
                    whitespace_before_test=whitespace(before), whitespace_after_test=whitespace(after))

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
            return make(cst.While, test=test, body=self.block(node.body, indent + 4), orelse=None,
                        leading_lines=leading, whitespace_after_while=whitespace(after_while),
                        whitespace_before_colon=whitespace(before_colon))
        if node.type_comment is not None:
            raise Unsupported("for")
        b = self.header(node, indent, "for")
        after_for = b.spaces()
        target = b.expr(node.target)
        before_in, after_in = b.around("in")
        it = b.expr(node.iter)
        before_colon = b.spaces()
        if b.i != len(b.t) or not before_in or not after_in:
            raise Unsupported("header")
        return make(cst.For, target=target, iter=it, body=self.block(node.body, indent + 4), orelse=None,
                    asynchronous=None, leading_lines=leading, whitespace_after_for=whitespace(after_for),
                    whitespace_before_in=whitespace(before_in), whitespace_after_in=whitespace(after_in),
                    whitespace_before_colon=whitespace(before_colon))


_REFUSED = (Unsupported, SyntaxError, ValueError, KeyError, IndexError, AttributeError, TypeError)


def parse_function_module(text: str, parse: Any) -> cst.Module:
    """``parse(text)`` (libcst's ``parse_module``, or ``read.parse_module``): the same tree, built from ``ast``
    for a straight-line function srcjax writes (see the module's docstring)."""
    try:
        return _function(text)  # type: ignore[no-any-return]
    except _REFUSED:
        return parse(text)  # type: ignore[no-any-return]


def function_module(text: str, parse: Any, positions: Any,
                    node: Any = None) -> tuple[cst.Module, dict[Any, tuple[int, int, int, int]]]:
    """``(module, positions(module))`` of :func:`parse_function_module`'s ``module``: for a module built here,
    the positions found without libcst's code generation (:class:`_Places`: the same ranges). ``node``:
    ``ast``'s tree of the text where a larger module's parse holds it already (see :func:`_function`)."""
    try:
        module = _function(text, node)
    except _REFUSED:
        module = parse(text)
        return module, positions(module)
    try:
        return module, _Places().module(module)
    except _REFUSED:  # pragma: no cover - _Places reads every node _function builds
        return module, positions(module)


class _Places:
    """The positions ``read._positions`` (libcst's code generation, recording) finds in a module
    :func:`_function` built, without the code generation: each node's range as libcst's
    ``PositionProvider`` gives it (syntactic: an expression without its parentheses, an operator
    without its spaces; a node that records none, its whole text). Only the node types
    :func:`_function` builds: anything else raises ``Unsupported``."""

    def __init__(self) -> None:
        self.pos: dict[Any, tuple[int, int, int, int]] = {}
        self.line = 1
        self.col = 0
        self.indent = 0

    def ws(self, w: Any) -> None:
        self.col += len(w.value)

    def tok(self, n: Any, text: str) -> None:
        """A one-token operator (``+``, ``,``, ``=``): its spaces around it, the token alone recorded."""
        self.col += len(n.whitespace_before.value)
        self.pos[n] = (self.line, self.col, self.line, self.col + len(text))
        self.col += len(text) + len(n.whitespace_after.value)

    def expr(self, n: Any) -> None:
        for p in n.lpar:
            start = self.col
            self.col += 1 + len(p.whitespace_after.value)
            self.pos[p] = (self.line, start, self.line, self.col)
        start = self.col
        _EXPRESSIONS[type(n)](self, n)
        self.pos[n] = (self.line, start, self.line, self.col)
        for p in n.rpar:
            s = self.col
            self.col += len(p.whitespace_before.value) + 1
            self.pos[p] = (self.line, s, self.line, self.col)

    def name(self, n: Any) -> None:
        self.col += len(n.value)

    def attribute(self, n: Any) -> None:
        self.expr(n.value)
        self.tok(n.dot, ".")
        self.expr(n.attr)

    def binary(self, n: Any) -> None:
        self.expr(n.left)
        self.tok(n.operator, TOKENS[type(n.operator)])
        self.expr(n.right)

    def unary(self, n: Any) -> None:
        op = n.operator
        text = TOKENS[type(op)]
        start = self.col  # (a unary operator records no syntactic range: its space after it is in it)
        self.col += len(text) + len(op.whitespace_after.value)
        self.pos[op] = (self.line, start, self.line, self.col)
        self.expr(n.expression)

    def comparison(self, n: Any) -> None:
        self.expr(n.left)
        for t in n.comparisons:
            start = self.col
            op = t.operator
            two = TWO_TOKENS.get(type(op))
            if two is None:
                self.tok(op, TOKENS[type(op)])
            else:
                self.col += len(op.whitespace_before.value)
                s = self.col
                self.col += len(two[0]) + len(op.whitespace_between.value) + len(two[1])
                self.pos[op] = (self.line, s, self.line, self.col)
                self.col += len(op.whitespace_after.value)
            self.expr(t.comparator)
            self.pos[t] = (self.line, start, self.line, self.col)

    def boolean(self, n: Any) -> None:
        self.expr(n.left)
        self.tok(n.operator, TOKENS[type(n.operator)])
        self.expr(n.right)

    def if_exp(self, n: Any) -> None:
        self.expr(n.body)
        self.col += len(n.whitespace_before_if.value) + 2 + len(n.whitespace_after_if.value)
        self.expr(n.test)
        self.col += len(n.whitespace_before_else.value) + 4 + len(n.whitespace_after_else.value)
        self.expr(n.orelse)

    def comma(self, c: Any) -> None:
        if c is not cst.MaybeSentinel.DEFAULT:
            self.tok(c, ",")

    def elements(self, n: Any) -> None:
        for e in n.elements:
            start = self.col
            self.expr(e.value)
            self.pos[e] = (self.line, start, self.line, self.col)
            self.comma(e.comma)

    def bracketed(self, n: Any) -> None:
        lb, rb = n.lbracket, n.rbracket
        s = self.col
        self.col += 1 + len(lb.whitespace_after.value)
        self.pos[lb] = (self.line, s, self.line, self.col)
        self.elements(n)
        s = self.col
        self.col += len(rb.whitespace_before.value) + 1
        self.pos[rb] = (self.line, s, self.line, self.col)

    def call(self, n: Any) -> None:
        self.expr(n.func)
        self.col += len(n.whitespace_after_func.value) + 1 + len(n.whitespace_before_args.value)
        for a in n.args:
            start = self.col
            self.col += len(a.star) + len(a.whitespace_after_star.value)
            if a.keyword is not None:
                self.expr(a.keyword)
                self.tok(a.equal, "=")
            self.expr(a.value)
            self.pos[a] = (self.line, start, self.line, self.col)
            self.comma(a.comma)
            self.col += len(a.whitespace_after_arg.value)
        self.col += 1

    def subscript(self, n: Any) -> None:
        self.expr(n.value)
        self.ws(n.whitespace_after_value)
        lb, rb = n.lbracket, n.rbracket
        s = self.col
        self.col += 1 + len(lb.whitespace_after.value)
        self.pos[lb] = (self.line, s, self.line, self.col)
        for e in n.slice:
            start = self.col
            sl = e.slice
            if type(sl) is cst.Index:
                self.expr(sl.value)
            else:
                if sl.lower is not None:
                    self.expr(sl.lower)
                self.tok(sl.first_colon, ":")
                if sl.upper is not None:
                    self.expr(sl.upper)
                if sl.second_colon is not cst.MaybeSentinel.DEFAULT:
                    self.tok(sl.second_colon, ":")
                if sl.step is not None:
                    self.expr(sl.step)
            self.pos[sl] = self.pos[e] = (self.line, start, self.line, self.col)
            self.comma(e.comma)
        s = self.col
        self.col += len(rb.whitespace_before.value) + 1
        self.pos[rb] = (self.line, s, self.line, self.col)

    def statement(self, s: Any) -> None:
        kind = type(s)
        start = self.col
        if kind is cst.Assign:
            for t in s.targets:
                ts = self.col
                self.expr(t.target)
                self.pos[t] = (self.line, ts, self.line, self.col)
                self.col += len(t.whitespace_before_equal.value) + 1 + len(t.whitespace_after_equal.value)
            self.expr(s.value)
        elif kind is cst.Return:
            self.col += 6 + len(s.whitespace_after_return.value)
            if s.value is not None:
                self.expr(s.value)
        elif kind is cst.Expr:
            self.expr(s.value)
        elif kind is cst.Assert:
            self.col += 6 + len(s.whitespace_after_assert.value)
            self.expr(s.test)
            if s.msg is not None:
                self.comma(s.comma)
                self.expr(s.msg)
        elif kind is cst.AugAssign:
            self.expr(s.target)
            self.tok(s.operator, _AUG_TOKENS[type(s.operator)])
            self.expr(s.value)
        elif kind in _WORD_LENGTHS:
            self.col += _WORD_LENGTHS[kind]
        else:
            raise Unsupported(kind)
        self.pos[s] = (self.line, start, self.line, self.col)

    def module(self, m: Any) -> dict[Any, tuple[int, int, int, int]]:
        f = m.body[0]
        self.line, self.indent = 1, 0
        self.function(f)
        self.pos[m] = (1, 0, self.line, 0)
        return self.pos

    def function(self, f: Any) -> None:
        """A ``def`` at ``self.line`` (its leading lines passed) and ``self.indent``; ``self.line`` after it."""
        line, indent = self.line, self.indent
        self.col = indent + 4
        self.pos[f.name] = (line, self.col, line, self.col + len(f.name.value))
        self.col += len(f.name.value) + 1
        params = f.params
        pstart = self.col
        for p in params.params:
            start = self.col
            self.col += len(p.name.value)
            self.pos[p.name] = self.pos[p] = (line, start, line, self.col)  # (a parameter's: its name's)
            if p.default is not None:
                self.tok(p.equal, "=")
                self.expr(p.default)
            self.comma(p.comma)
        self.pos[params] = (line, pstart, line, self.col)
        end = self.block(f.body)
        self.pos[f] = (line, indent, *end)

    def block(self, b: Any) -> tuple[int, int]:
        """The block after a header on ``self.line``: its statements one level in; the end of its last."""
        self.line += 1
        self.indent += 4
        first = None
        for st in b.body:
            self.line += len(st.leading_lines)
            start = (self.line, self.indent)
            first = first or start
            kind = type(st)
            if kind is cst.SimpleStatementLine:
                self.col = self.indent
                self.statement(st.body[0])
                self.pos[st] = self.pos[st.body[0]]
                self.line += 1
            elif kind is cst.FunctionDef:
                self.function(st)
            elif kind is cst.If:
                self.if_(st, "if")
            elif kind is cst.While:
                self.col = self.indent + 5 + len(st.whitespace_after_while.value)
                self.expr(st.test)
                self.pos[st] = (*start, *self.block(st.body))
            elif kind is cst.For:
                self.col = self.indent + 3 + len(st.whitespace_after_for.value)
                self.expr(st.target)
                self.col += len(st.whitespace_before_in.value) + 2 + len(st.whitespace_after_in.value)
                self.expr(st.iter)
                self.pos[st] = (*start, *self.block(st.body))
            else:
                raise Unsupported(kind)
        self.indent -= 4
        if first is None or b.footer:
            raise Unsupported("block")
        end = self.pos[b.body[-1]][2:]
        self.pos[b] = (*first, *end)
        return end

    def if_(self, st: Any, keyword: str) -> None:
        start = (self.line, self.indent)
        self.col = self.indent + len(keyword) + len(st.whitespace_before_test.value)
        self.expr(st.test)
        end = self.block(st.body)
        if type(st.orelse) is cst.If:
            self.if_(st.orelse, "elif")
            end = self.pos[st.orelse][2:]
        elif st.orelse is not None:
            else_start = (self.line, self.indent)
            end = self.block(st.orelse.body)
            self.pos[st.orelse] = (*else_start, *end)
        self.pos[st] = (*start, *end)


_EXPRESSIONS: dict[type, Any] = {
    cst.Name: _Places.name, cst.Integer: _Places.name, cst.Float: _Places.name, cst.Imaginary: _Places.name,
    cst.SimpleString: _Places.name, cst.Ellipsis: lambda self, n: setattr(self, "col", self.col + 3),
    cst.Attribute: _Places.attribute, cst.BinaryOperation: _Places.binary, cst.UnaryOperation: _Places.unary,
    cst.Comparison: _Places.comparison, cst.BooleanOperation: _Places.boolean, cst.IfExp: _Places.if_exp,
    cst.Call: _Places.call, cst.Subscript: _Places.subscript, cst.Tuple: _Places.elements, cst.List: _Places.bracketed}
_AUG_TOKENS = {cls: tok for tok, cls in _AUG.values()}
