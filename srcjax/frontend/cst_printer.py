"""The code of a libcst node, written without libcst's code generation.

``names.code`` prints the operands and statements the derivative writers and vmap's writer put together
(hundreds in a first ``hessian``): libcst's code generation makes ~10 calls a node (``_codegen``, the
``before``/``after`` hooks, a generator-based context manager for the parentheses and each syntactic
position, a call per token). :func:`fast_code` writes the same text in one call a node, for the node types
those writers print (the ones :mod:`.cst_expressions` and :mod:`.cst_functions` build, and simple statements,
alone or on their line), reading the fields libcst's ``_codegen_impl`` reads, with its defaults (a ``Call``'s
argument without a comma gets ``", "`` unless it is the last, a one-element ``Tuple`` gets ``","``, ...).
Any other node, or a whitespace other than ``SimpleWhitespace`` (a line break inside brackets), a comment,
a leading empty line: ``None``, and libcst prints it. ``tests/test_cst_printer.py`` checks the text is
libcst's for every node printed while the golden corpora are written.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

__all__ = ["fast_code"]


class _Other(Exception):
    """A node this module does not write: libcst does."""


_DEFAULT = cst.MaybeSentinel.DEFAULT
_WS = cst.SimpleWhitespace
_COMMA = cst.Comma


def _ws(w: Any) -> str:
    if w.__class__ is not _WS:
        raise _Other
    return w.value  # type: ignore[no-any-return]


def _lpar(n: Any, out: list[str]) -> None:
    for p in n.lpar:
        if p.__class__ is not cst.LeftParen:
            raise _Other
        out.append("(")
        out.append(_ws(p.whitespace_after))


def _rpar(n: Any, out: list[str]) -> None:
    for p in n.rpar:
        if p.__class__ is not cst.RightParen:
            raise _Other
        out.append(_ws(p.whitespace_before))
        out.append(")")


def _token_op(op: Any, out: list[str]) -> None:
    """A one- or two-token operator (``+``, ``.``, ``,``, ``=``, ``is not``) with its spaces."""
    tok = _TOKENS.get(op.__class__)
    if tok is not None:
        out.append(_ws(op.whitespace_before))
        out.append(tok)
        out.append(_ws(op.whitespace_after))
        return
    two = _TWO_TOKENS.get(op.__class__)
    if two is None:
        raise _Other
    out.append(_ws(op.whitespace_before))
    out.append(two[0])
    out.append(_ws(op.whitespace_between))
    out.append(two[1])
    out.append(_ws(op.whitespace_after))


def _comma(c: Any, default: str, out: list[str]) -> None:
    """An element's comma: its own, or ``default`` where it has none (libcst's ``default_comma``)."""
    if c is _DEFAULT:
        if default:
            out.append(default)
    elif c.__class__ is _COMMA:
        _token_op(c, out)
    else:
        raise _Other


def _atom(n: Any, out: list[str]) -> None:  # Name, Integer, Float, Imaginary, SimpleString
    if n.lpar:
        _lpar(n, out)
        out.append(n.value)
        _rpar(n, out)
    else:
        out.append(n.value)


def _ellipsis(n: Any, out: list[str]) -> None:
    _lpar(n, out)
    out.append("...")
    _rpar(n, out)


def _attribute(n: Any, out: list[str]) -> None:
    _lpar(n, out)
    _expr(n.value, out)
    _token_op(n.dot, out)
    _expr(n.attr, out)
    _rpar(n, out)


def _binary(n: Any, out: list[str]) -> None:  # BinaryOperation, BooleanOperation
    _lpar(n, out)
    _expr(n.left, out)
    _token_op(n.operator, out)
    _expr(n.right, out)
    _rpar(n, out)


def _unary(n: Any, out: list[str]) -> None:
    _lpar(n, out)
    op = n.operator
    tok = _UNARY.get(op.__class__)
    if tok is None:
        raise _Other
    out.append(tok)
    out.append(_ws(op.whitespace_after))
    _expr(n.expression, out)
    _rpar(n, out)


def _comparison(n: Any, out: list[str]) -> None:
    _lpar(n, out)
    _expr(n.left, out)
    for t in n.comparisons:
        if t.__class__ is not cst.ComparisonTarget:
            raise _Other
        _token_op(t.operator, out)
        _expr(t.comparator, out)
    _rpar(n, out)


def _if_exp(n: Any, out: list[str]) -> None:
    _lpar(n, out)
    _expr(n.body, out)
    out.append(_ws(n.whitespace_before_if))
    out.append("if")
    out.append(_ws(n.whitespace_after_if))
    _expr(n.test, out)
    out.append(_ws(n.whitespace_before_else))
    out.append("else")
    out.append(_ws(n.whitespace_after_else))
    _expr(n.orelse, out)
    _rpar(n, out)


def _call(n: Any, out: list[str]) -> None:
    _lpar(n, out)
    _expr(n.func, out)
    out.append(_ws(n.whitespace_after_func))
    out.append("(")
    out.append(_ws(n.whitespace_before_args))
    args = n.args
    last = len(args) - 1
    for i, a in enumerate(args):
        if a.__class__ is not cst.Arg:
            raise _Other
        out.append(a.star)
        out.append(_ws(a.whitespace_after_star))
        keyword = a.keyword
        if keyword is not None:
            _expr(keyword, out)
            equal = a.equal
            if equal is _DEFAULT:
                out.append(" = ")
            elif equal.__class__ is cst.AssignEqual:
                _token_op(equal, out)
            else:
                raise _Other
        _expr(a.value, out)
        _comma(a.comma, ", " if i != last else "", out)
        out.append(_ws(a.whitespace_after_arg))
    out.append(")")
    _rpar(n, out)


def _subscript(n: Any, out: list[str]) -> None:
    _lpar(n, out)
    _expr(n.value, out)
    out.append(_ws(n.whitespace_after_value))
    lb, rb = n.lbracket, n.rbracket
    if lb.__class__ is not cst.LeftSquareBracket or rb.__class__ is not cst.RightSquareBracket:
        raise _Other
    out.append("[")
    out.append(_ws(lb.whitespace_after))
    elements = n.slice
    last = len(elements) - 1
    for i, e in enumerate(elements):
        if e.__class__ is not cst.SubscriptElement:
            raise _Other
        sl: Any = e.slice
        write = _SLICES.get(sl.__class__)
        if write is None:
            raise _Other
        write(sl, out)
        _comma(e.comma, ", " if i != last else "", out)
    out.append(_ws(rb.whitespace_before))
    out.append("]")
    _rpar(n, out)


def _index(sl: Any, out: list[str]) -> None:
    """A subscript's ``Index`` (``x[i]``'s ``i``, ``x[*a]``'s ``*a``)."""
    if sl.star is not None:
        out.append(sl.star)
    if sl.whitespace_after_star is not None:
        out.append(_ws(sl.whitespace_after_star))
    _expr(sl.value, out)


def _slice(sl: Any, out: list[str]) -> None:
    """A subscript's ``Slice`` (``1:n``, ``::2``): printed alone too (``anf``'s index keys print each)."""
    if sl.lower is not None:
        _expr(sl.lower, out)
    if sl.first_colon.__class__ is not cst.Colon:
        raise _Other
    _token_op(sl.first_colon, out)
    if sl.upper is not None:
        _expr(sl.upper, out)
    second = sl.second_colon
    if second is _DEFAULT:
        if sl.step is not None:
            out.append(":")
    elif second.__class__ is cst.Colon:
        _token_op(second, out)
    else:
        raise _Other
    if sl.step is not None:
        _expr(sl.step, out)


_SLICES: dict[type, Any] = {cst.Index: _index, cst.Slice: _slice}


def _elements(elements: Any, default_last: str, out: list[str]) -> None:
    last = len(elements) - 1
    for i, e in enumerate(elements):
        if e.__class__ is not cst.Element:
            raise _Other
        _expr(e.value, out)
        _comma(e.comma, ", " if i != last else default_last, out)


def _tuple(n: Any, out: list[str]) -> None:
    _lpar(n, out)
    elements = n.elements
    if len(elements) == 1:  # (libcst's: a one-element tuple's comma without its space)
        e = elements[0]
        if e.__class__ is not cst.Element:
            raise _Other
        _expr(e.value, out)
        _comma(e.comma, ",", out)
    else:
        _elements(elements, "", out)
    _rpar(n, out)


def _list(n: Any, out: list[str]) -> None:
    _lpar(n, out)
    lb, rb = n.lbracket, n.rbracket
    if lb.__class__ is not cst.LeftSquareBracket or rb.__class__ is not cst.RightSquareBracket:
        raise _Other
    out.append("[")
    out.append(_ws(lb.whitespace_after))
    _elements(n.elements, "", out)
    out.append(_ws(rb.whitespace_before))
    out.append("]")
    _rpar(n, out)


def _expr(n: Any, out: list[str]) -> None:
    write = _EXPRESSIONS.get(n.__class__)
    if write is None:
        raise _Other
    write(n, out)


def _semicolon(s: Any, default: bool, out: list[str]) -> None:
    semicolon = s.semicolon
    if semicolon is _DEFAULT:
        if default:
            out.append("; ")
    elif semicolon.__class__ is cst.Semicolon:
        _token_op(semicolon, out)
    else:
        raise _Other


def _small(s: Any, default_semicolon: bool, out: list[str]) -> None:
    """A small statement (``x = e``, ``e``, ``return e``, ``x += e``, ``assert e, 'm'``)."""
    kind = s.__class__
    if kind is cst.Assign:
        for t in s.targets:
            if t.__class__ is not cst.AssignTarget:
                raise _Other
            _expr(t.target, out)
            out.append(_ws(t.whitespace_before_equal))
            out.append("=")
            out.append(_ws(t.whitespace_after_equal))
        _expr(s.value, out)
    elif kind is cst.Expr:
        _expr(s.value, out)
    elif kind is cst.Return:
        out.append("return")
        ws = s.whitespace_after_return
        value = s.value
        if ws is _DEFAULT:
            if value is not None:
                out.append(" ")
        else:
            out.append(_ws(ws))
        if value is not None:
            _expr(value, out)
    elif kind is cst.AugAssign:
        _expr(s.target, out)
        _token_op(s.operator, out)
        _expr(s.value, out)
    elif kind is cst.Assert:
        out.append("assert")
        out.append(_ws(s.whitespace_after_assert))
        _expr(s.test, out)
        comma, msg = s.comma, s.msg
        if comma is _DEFAULT:
            if msg is not None:
                out.append(", ")
        elif comma.__class__ is _COMMA:
            _token_op(comma, out)
        else:
            raise _Other
        if msg is not None:
            _expr(msg, out)
    else:
        raise _Other
    _semicolon(s, default_semicolon, out)


def _line(n: Any, out: list[str]) -> None:
    """A ``SimpleStatementLine`` printed on its own (no indentation: a node printed alone has none), without
    leading empty lines or a comment."""
    if n.leading_lines:
        raise _Other
    body = n.body
    if not body:
        out.append("pass")
    last = len(body) - 1
    for i, s in enumerate(body):
        _small(s, i != last, out)
    tw = n.trailing_whitespace
    if tw.__class__ is not cst.TrailingWhitespace or tw.comment is not None \
            or tw.newline.__class__ is not cst.Newline:
        raise _Other
    out.append(_ws(tw.whitespace))
    newline = tw.newline.value
    out.append("\n" if newline is None else newline)


_EXPRESSIONS: dict[type, Any] = {
    cst.Name: _atom, cst.Integer: _atom, cst.Float: _atom, cst.Imaginary: _atom, cst.SimpleString: _atom,
    cst.Ellipsis: _ellipsis, cst.Attribute: _attribute, cst.BinaryOperation: _binary,
    cst.BooleanOperation: _binary, cst.UnaryOperation: _unary, cst.Comparison: _comparison, cst.IfExp: _if_exp,
    cst.Call: _call, cst.Subscript: _subscript, cst.Tuple: _tuple, cst.List: _list}

_TOKENS: dict[type, str] = {
    cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.FloorDivide: "//", cst.Modulo: "%",
    cst.Power: "**", cst.MatrixMultiply: "@", cst.LeftShift: "<<", cst.RightShift: ">>", cst.BitOr: "|",
    cst.BitAnd: "&", cst.BitXor: "^", cst.And: "and", cst.Or: "or", cst.LessThan: "<", cst.GreaterThan: ">",
    cst.LessThanEqual: "<=", cst.GreaterThanEqual: ">=", cst.Equal: "==", cst.NotEqual: "!=", cst.Is: "is",
    cst.In: "in", cst.Dot: ".", cst.Comma: ",", cst.Colon: ":", cst.AssignEqual: "=", cst.Semicolon: ";",
    cst.AddAssign: "+=", cst.SubtractAssign: "-=", cst.MultiplyAssign: "*=", cst.DivideAssign: "/=",
    cst.MatrixMultiplyAssign: "@=", cst.FloorDivideAssign: "//=", cst.ModuloAssign: "%=", cst.PowerAssign: "**=",
    cst.LeftShiftAssign: "<<=", cst.RightShiftAssign: ">>=", cst.BitOrAssign: "|=", cst.BitAndAssign: "&=",
    cst.BitXorAssign: "^="}
_TWO_TOKENS: dict[type, tuple[str, str]] = {cst.IsNot: ("is", "not"), cst.NotIn: ("not", "in")}
_UNARY: dict[type, str] = {cst.Minus: "-", cst.Plus: "+", cst.BitInvert: "~", cst.Not: "not"}

def _alone(s: Any, out: list[str]) -> None:
    """A small statement printed on its own (libcst's default: no semicolon after it)."""
    _small(s, False, out)


_WRITERS: dict[type, Any] = {**_EXPRESSIONS, **_SLICES, cst.SimpleStatementLine: _line, cst.Assign: _alone,
                             cst.Expr: _alone, cst.Return: _alone, cst.AugAssign: _alone, cst.Assert: _alone}


def fast_code(node: cst.CSTNode) -> str | None:
    """``cst.Module([]).code_for_node(node)`` for the node types this module writes; None for any other
    (libcst prints it)."""
    write = _WRITERS.get(node.__class__)
    if write is None:
        return None
    out: list[str] = []
    try:
        write(node, out)
    except (_Other, AttributeError):
        return None
    return "".join(out)
