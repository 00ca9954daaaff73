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
statement) is parsed by libcst, as before. ``tests/test_cst_expressions.py`` checks the trees are
libcst's on generated texts of every transformation.
"""

from __future__ import annotations

import ast
import re
from typing import Any

import libcst as cst

from .cst_expressions import ExpressionBuilder, Unsupported, make, whitespace

__all__ = ["parse_function_module"]

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


def parse_function_module(text: str, parse: Any) -> cst.Module:
    """``parse(text)`` (libcst's ``parse_module``, or ``read.parse_module``): the same tree, built from ``ast``
    for a straight-line function srcjax writes (see the module's docstring)."""
    try:
        return _function(text)  # type: ignore[no-any-return]
    except (Unsupported, SyntaxError, ValueError, KeyError, IndexError, AttributeError, TypeError):
        return parse(text)  # type: ignore[no-any-return]
