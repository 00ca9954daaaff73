"""libcst modules of the straight-line functions srcjax writes, built from Python's ``ast``.

A derivative's or a batched function's text is read back (``read.read_function``) to be normalized
and lowered; libcst's parser took ~2.4 us a character of it (11 ms of a first ``hessian``), ``ast`` a
tenth of that. :func:`parse_function_module` builds from ``ast`` the module libcst's parser builds
(as :mod:`.cst_expressions` does for expressions: the same node types and fields, whitespace
included), for a text of the form srcjax writes for straight-line code::

    def name(a, b):
        target = expression          (or `t1, t2 = ...`, `x[i] = ...`, `x += ...`)
        assert test, 'message'
        call(...)
        return expression            (each line may end in `  # a comment`)

one statement a line, four spaces of indentation, plain parameters, expressions that
:class:`~.cst_expressions.ExpressionBuilder` builds. Any other text (a loop, a branch, a nested
``def``, a docstring, a blank line, a default or an annotation, a decorator, a line break inside a
statement) is parsed by libcst, as before. :func:`function_module` also gives the positions of a
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
                before = self.spaces()
                self.token("=")
                targets.append(make(cst.AssignTarget, target=target, whitespace_before_equal=whitespace(before),
                                    whitespace_after_equal=whitespace(self.spaces())))
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
            before = self.spaces()
            self.token(tok)
            op = make(cls, whitespace_before=whitespace(before), whitespace_after=whitespace(self.spaces()))
            return make(cst.AugAssign, target=target, operator=op, value=self.expr(node.value),
                        semicolon=cst.MaybeSentinel.DEFAULT)
        if kind is ast.Pass:
            self.token("pass")
            return make(cst.Pass, semicolon=cst.MaybeSentinel.DEFAULT)
        raise Unsupported(kind)


def _function(text: str) -> Any:
    if not text.endswith("\n") or not _PLAIN.match(text):
        raise Unsupported("text")
    lines = text[:-1].split("\n")
    head = _HEADER.match(lines[0])
    if head is None or len(lines) < 2:
        raise Unsupported("header")
    tree = ast.parse(text)
    fdef = tree.body[0]
    if len(tree.body) != 1 or type(fdef) is not ast.FunctionDef or len(fdef.body) != len(lines) - 1:
        raise Unsupported("form")
    body = []
    for k, node in enumerate(fdef.body):
        line, end = lines[k + 1], node.end_col_offset or 0
        if node.lineno != k + 2 or node.end_lineno != k + 2 or not line.startswith("    ") or line[4] == " ":
            raise Unsupported("line")
        comment, spaces = None, ""
        if "#" in line:
            found = _COMMENT.search(line, end)
            if found is None or found.start() != end:
                raise Unsupported("comment")
            spaces, comment = found.group(1), found.group(2)
        elif line.endswith(" "):
            raise Unsupported("space")
        # (a statement's columns are the line's: read it with its indentation, from column 4)
        b = _Line(line[:end])
        b.i = 4
        stmt = b.statement(node)
        if b.i != end:
            raise Unsupported("end")
        body.append(make(cst.SimpleStatementLine, body=(stmt,), leading_lines=(),
                         trailing_whitespace=_trailing(comment, spaces)))
    block = make(cst.IndentedBlock, body=tuple(body), header=_trailing(None, ""), indent=None, footer=())
    name, params = head.group(1), head.group(2)
    func = make(cst.FunctionDef, name=_name(name), params=_params(params.split(", ") if params else []), body=block,
                decorators=(), returns=None, asynchronous=None, leading_lines=(), lines_after_decorators=(),
                whitespace_after_def=whitespace(" "), whitespace_after_name=whitespace(""),
                whitespace_before_params=whitespace(""), whitespace_before_colon=whitespace(""),
                type_parameters=None, whitespace_after_type_parameters=whitespace(""))
    return make(cst.Module, body=(func,), header=(), footer=(), encoding="utf-8", default_indent="    ",
                default_newline="\n", has_trailing_newline=True)


_REFUSED = (Unsupported, SyntaxError, ValueError, KeyError, IndexError, AttributeError, TypeError)


def parse_function_module(text: str, parse: Any) -> cst.Module:
    """``parse(text)`` (libcst's ``parse_module``, or ``read.parse_module``): the same tree, built from ``ast``
    for a straight-line function srcjax writes (see the module's docstring)."""
    try:
        return _function(text)  # type: ignore[no-any-return]
    except _REFUSED:
        return parse(text)  # type: ignore[no-any-return]


def function_module(text: str, parse: Any, positions: Any) -> tuple[cst.Module, dict[Any, tuple[int, int, int, int]]]:
    """``(module, positions(module))`` of :func:`parse_function_module`'s ``module``: for a module built here,
    the positions found without libcst's code generation (:class:`_Places`: the same ranges)."""
    try:
        module = _function(text)
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
        elif kind is cst.Pass:
            self.col += 4
        else:
            raise Unsupported(kind)
        self.pos[s] = (self.line, start, self.line, self.col)

    def module(self, m: Any) -> dict[Any, tuple[int, int, int, int]]:
        f = m.body[0]
        self.col = 4
        self.pos[f.name] = (1, 4, 1, 4 + len(f.name.value))
        self.col = 5 + len(f.name.value)
        params = f.params
        pstart = self.col
        for p in params.params:
            start = self.col
            self.col += len(p.name.value)
            self.pos[p.name] = self.pos[p] = (1, start, 1, self.col)
            self.comma(p.comma)
        self.pos[params] = (1, pstart, 1, self.col)
        body = f.body.body
        for k, line in enumerate(body):
            self.line, self.col = k + 2, 4
            self.statement(line.body[0])
            self.pos[line] = self.pos[line.body[0]]
        end = self.pos[body[-1]]
        self.pos[f.body] = (2, 4, end[2], end[3])
        self.pos[f] = (1, 0, end[2], end[3])
        self.pos[m] = (1, 0, len(body) + 2, 0)
        return self.pos


_EXPRESSIONS: dict[type, Any] = {
    cst.Name: _Places.name, cst.Integer: _Places.name, cst.Float: _Places.name, cst.Imaginary: _Places.name,
    cst.SimpleString: _Places.name, cst.Ellipsis: lambda self, n: setattr(self, "col", self.col + 3),
    cst.Attribute: _Places.attribute, cst.BinaryOperation: _Places.binary, cst.UnaryOperation: _Places.unary,
    cst.Comparison: _Places.comparison, cst.BooleanOperation: _Places.boolean, cst.IfExp: _Places.if_exp,
    cst.Call: _Places.call, cst.Subscript: _Places.subscript, cst.Tuple: _Places.elements, cst.List: _Places.bracketed}
_AUG_TOKENS = {cls: tok for tok, cls in _AUG.values()}
