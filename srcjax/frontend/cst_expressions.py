"""libcst trees of small one-line expressions srcjax writes, built from Python's ``ast``.

``cst.parse_expression`` costs 20-110 us for the short expressions the derivative writers and vmap's
writer parse (``x[1:] - x[:-1] ** 2``, a rule's template ``g * (1 - np.tanh(x) ** 2)``, an
argument's text): libcst's parser is 5-10x slower than ``ast.parse`` on them, and a first ``grad``
parses dozens.
:func:`parse_expression` reads such a text with ``ast`` and builds the tree libcst's parser builds
from it, node type for node type and field for field, whitespace included (each node made without
its ``__init__`` and validation, as ``read.parse_module`` leaves the parser's own nodes unchecked).

Only the forms srcjax writes are built here: names, numbers, strings (one literal, no bracket, quote
or backslash in it), ``True``/``False``/``None``, ``...``, attributes, calls (positional, keyword
and ``*`` arguments), subscripts (indices, slices, tuples of them), unary, binary, boolean and
comparison operators, conditional expressions, tuples and lists, with parentheses anywhere; spaces
only where they separate tokens (around an operator, after a comma; a keyword's ``=`` without).
Anything else (another form, a tab, a line break, a comment, a space before a comma or a closing
bracket, a non-ASCII character) goes to ``cst.parse_expression``, as does a text libcst refuses
(its error is the one raised). ``tests/test_cst_expressions.py`` checks
that the tree is libcst's on every rule template of the primitive table and on a corpus of texts.
"""

from __future__ import annotations

import ast
import dataclasses
import keyword
import re
from typing import Any

import libcst as cst

__all__ = ["TOKENS", "TWO_TOKENS", "ExpressionBuilder", "Unsupported", "assign", "line", "make", "parse_expression",
           "whitespace"]


class Unsupported(Exception):
    """A form this module does not build: libcst parses the text."""


_NEW = object.__new__
_MISSING: Any = dataclasses.MISSING
_SLOTS: dict[type, tuple[dict[str, Any], tuple[tuple[str, Any, Any, Any], ...]]] = {}
# class -> (field -> its slot's setter, (field, setter, default, factory) for each field)


def _slots(cls: type) -> tuple[dict[str, Any], tuple[tuple[str, Any, Any, Any], ...]]:
    found = _SLOTS.get(cls)
    if found is None:
        fields = tuple((f.name, cls.__dict__[f.name].__set__, f.default, f.default_factory)
                       for f in dataclasses.fields(cls))
        found = _SLOTS[cls] = ({name: setter for name, setter, _, _ in fields}, fields)
    return found


def make(cls: type, **given: Any) -> Any:
    """``cls(**given)`` without its ``__init__``'s checks; a field not given gets its default, and
    a whitespace field (a default factory) an empty ``SimpleWhitespace`` of its own, as the parser's."""
    node: Any = _NEW(cls)
    try:
        setters, fields = _SLOTS[cls]
    except KeyError:
        setters, fields = _slots(cls)
    for name, v in given.items():  # (a name the class has not: KeyError, a form not built)
        setters[name](node, v)
    if len(given) != len(fields):  # (most callers give every field)
        for name, setter, default, factory in fields:
            if name in given:
                continue
            if default is not _MISSING:
                setter(node, default)
            elif factory is not _MISSING:
                setter(node, factory())
            else:  # pragma: no cover - every required field is given below
                raise Unsupported(name)
    return node


_SET_WS = cst.SimpleWhitespace.__dict__["value"].__set__


def whitespace(value: str) -> cst.SimpleWhitespace:
    node = _NEW(cst.SimpleWhitespace)
    _SET_WS(node, value)
    return node  # type: ignore[no-any-return]


def _setters(cls: type, *fields: str) -> tuple[Any, ...]:
    assert [f.name for f in dataclasses.fields(cls)] == list(fields), cls  # (every field, in order)
    return tuple(cls.__dict__[f].__set__ for f in fields)


_LINE = _setters(cst.SimpleStatementLine, "body", "leading_lines", "trailing_whitespace")
_TRAILING = _setters(cst.TrailingWhitespace, "whitespace", "comment", "newline")
_SET_NEWLINE = _setters(cst.Newline, "value")[0]
_ASSIGN = _setters(cst.Assign, "targets", "value", "semicolon")
_TARGET = _setters(cst.AssignTarget, "target", "whitespace_before_equal", "whitespace_after_equal")


_SET_NAME, _SET_LPAR, _SET_RPAR = _setters(cst.Name, "value", "lpar", "rpar")


def line(small: cst.BaseSmallStatement) -> cst.SimpleStatementLine:
    """``cst.SimpleStatementLine(body=[small])``, each node of it made without its ``__init__`` (its defaults' nodes
    made by their own ``__init__``, one call each: ~4x the time of the line's own) and validation (which a line of
    one statement, its empty space and its newline pass): the same fields, fresh nodes
    (``tests/test_cst_expressions.py``)."""
    newline = _NEW(cst.Newline)
    _SET_NEWLINE(newline, None)
    trailing = _NEW(cst.TrailingWhitespace)
    ws, comment, nl = _TRAILING
    ws(trailing, whitespace(""))
    comment(trailing, None)
    nl(trailing, newline)
    node = _NEW(cst.SimpleStatementLine)
    body, leading, trailing_ws = _LINE
    body(node, [small])
    leading(node, ())
    trailing_ws(node, trailing)
    return node  # type: ignore[no-any-return]


def assign(target: cst.BaseAssignTargetExpression, value: cst.BaseExpression) -> cst.Assign:
    """``cst.Assign(targets=[cst.AssignTarget(target=target)], value=value)``, made as :func:`line` makes a line
    (an assignment of one target passes the validation)."""
    at = _NEW(cst.AssignTarget)
    tg, before, after = _TARGET
    tg(at, target)
    before(at, whitespace(" "))
    after(at, whitespace(" "))
    node = _NEW(cst.Assign)
    targets, val, semicolon = _ASSIGN
    targets(node, [at])
    val(node, value)
    semicolon(node, cst.MaybeSentinel.DEFAULT)
    return node  # type: ignore[no-any-return]


_Ops = dict[type, tuple[str, type]]
_BINARY: _Ops = {ast.Add: ("+", cst.Add), ast.Sub: ("-", cst.Subtract), ast.Mult: ("*", cst.Multiply),
           ast.Div: ("/", cst.Divide), ast.FloorDiv: ("//", cst.FloorDivide), ast.Mod: ("%", cst.Modulo),
           ast.Pow: ("**", cst.Power), ast.MatMult: ("@", cst.MatrixMultiply), ast.LShift: ("<<", cst.LeftShift),
           ast.RShift: (">>", cst.RightShift), ast.BitOr: ("|", cst.BitOr), ast.BitAnd: ("&", cst.BitAnd),
           ast.BitXor: ("^", cst.BitXor)}
_UNARY: _Ops = {ast.USub: ("-", cst.Minus), ast.UAdd: ("+", cst.Plus), ast.Invert: ("~", cst.BitInvert),
          ast.Not: ("not", cst.Not)}
_COMPARE: _Ops = {ast.Lt: ("<", cst.LessThan), ast.Gt: (">", cst.GreaterThan), ast.LtE: ("<=", cst.LessThanEqual),
            ast.GtE: (">=", cst.GreaterThanEqual), ast.Eq: ("==", cst.Equal), ast.NotEq: ("!=", cst.NotEqual),
            ast.Is: ("is", cst.Is), ast.In: ("in", cst.In)}
_COMPARE2 = {ast.IsNot: ("is", "not", cst.IsNot), ast.NotIn: ("not", "in", cst.NotIn)}
_BOOL = {ast.And: ("and", cst.And), ast.Or: ("or", cst.Or)}
TOKENS: dict[type, str] = {cls: tok for table in (_BINARY, _UNARY, _COMPARE, _BOOL) for tok, cls in table.values()}
TWO_TOKENS: dict[type, tuple[str, str]] = {cls: (a, b) for a, b, cls in _COMPARE2.values()}  # (`is not`, `not in`)
_NUMBER = re.compile(r"(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9_]+)?[jJ]?\Z")
# one string literal, no prefix, without quotes, backslashes or brackets inside (brackets in a string would
# mislead _closes; such a text is libcst's)
_STRING = re.compile(r"'[^'\"\\()\[\]{}]*'\Z|\"[^'\"\\()\[\]{}]*\"\Z")
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


class ExpressionBuilder:
    """Builds one text's tree, reading it left to right (``i``: the next character not yet read). ``pos`` gets
    each node's range on ``line`` as libcst's ``PositionProvider`` gives it (syntactic: an expression without
    its parentheses, an operator without its spaces, a unary operator with the space after it), found as the
    text is read (a second walk of the tree found them: ``cst_functions.function_module``); ``names`` the
    variable names of the nodes built (``set(names.names_in(tree))``: not an attribute's or a keyword's name);
    ``refs`` each variable's ``Name`` and each ``Attribute`` built, in the order of the text (a tree's order:
    an attribute before the names in it), an attribute as ``(node, k)``, ``k`` the index in ``refs`` after the
    names and attributes in it (``resolve.Resolver.reserve_helpers`` reads them instead of walking the tree)."""

    def __init__(self, text: str, line: int = 1, pos: dict[Any, tuple[int, int, int, int]] | None = None,
                 names: set[str] | None = None, refs: list[Any] | None = None) -> None:
        self.t = text
        self.i = 0
        self.line = line
        self.pos: dict[Any, tuple[int, int, int, int]] = {} if pos is None else pos
        self.names: set[str] = set() if names is None else names
        self.refs: list[Any] = [] if refs is None else refs

    # -- reading the text between nodes -------------------------------------------------
    def spaces(self) -> str:
        t, i = self.t, self.i
        if not t.startswith(" ", i):  # (most often: no space, or one)
            return ""
        j = i + 1
        while t.startswith(" ", j):
            j += 1
        self.i = j
        return t[i:j]

    def token(self, tok: str) -> None:
        t, i = self.t, self.i
        if not t.startswith(tok, i):
            raise Unsupported(tok)
        end = i + len(tok)
        if tok[0] in _WORD_CHARS and end < len(t) and t[end] in _WORD_CHARS:  # (`in` is not `index`)
            raise Unsupported(tok)
        self.i = end

    def around(self, tok: str) -> tuple[str, str]:
        """The spaces before and after ``tok``, read with it."""
        before = self.spaces()
        self.token(tok)
        return before, self.spaces()

    def operator(self, tok: str, cls: type) -> Any:
        """The node ``cls`` of the operator ``tok`` (``+``, ``and``, ``.``, ``+=``), with the spaces around it."""
        before = self.spaces()
        start = self.i
        self.token(tok)
        op = make(cls, whitespace_before=whitespace(before), whitespace_after=whitespace(self.spaces()))
        self.pos[op] = (self.line, start, self.line, start + len(tok))
        return op

    def no_space(self) -> None:
        """Where libcst's choice of owner for a space is not one this module writes: none allowed."""
        if self.i < len(self.t) and self.t[self.i] == " ":
            raise Unsupported("space")

    # -- nodes ----------------------------------------------------------------------------
    def expr(self, node: Any) -> Any:
        """``node``'s tree, with the parentheses around it (those its span leaves out)."""
        start = node.col_offset
        pos, ln = self.pos, self.line
        if node.__class__ is ast.Name and self.i == start:  # (the most common node: no parentheses, no children)
            built = _NEW(cst.Name)
            self.names.add(node.id)
            _SET_NAME(built, node.id)
            _SET_LPAR(built, ())
            _SET_RPAR(built, ())
            self.i = end = node.end_col_offset or 0  # (never None for a parsed expression)
            pos[built] = (ln, start, ln, end)
            self.refs.append(built)
            return built
        lpar = []
        while self.i < start:
            s = self.i
            self.token("(")
            lpar.append(p := make(cst.LeftParen, whitespace_after=whitespace(self.spaces())))
            pos[p] = (ln, s, ln, self.i)
        if self.i != start:
            raise Unsupported("position")
        own_parens = type(node) is ast.Tuple and _parenthesized(self.t, node)
        if own_parens:
            s = self.i
            self.token("(")
            lpar.append(p := make(cst.LeftParen, whitespace_after=whitespace(self.spaces())))
            pos[p] = (ln, s, ln, self.i)
        s = self.i
        built = self.inner(node, own_parens)
        pos[built] = (ln, s, ln, self.i)
        rpar = []
        if own_parens:
            s = self.i
            rpar.append(p := make(cst.RightParen, whitespace_before=whitespace(self.spaces())))
            self.token(")")
            pos[p] = (ln, s, ln, self.i)
        if self.i != node.end_col_offset:
            raise Unsupported("end")
        for _ in range(len(lpar) - len(rpar)):
            s = self.i
            rpar.append(p := make(cst.RightParen, whitespace_before=whitespace(self.spaces())))
            self.token(")")
            pos[p] = (ln, s, ln, self.i)
        if lpar:
            slot = type(built).__dict__
            slot["lpar"].__set__(built, tuple(lpar))
            slot["rpar"].__set__(built, tuple(rpar))
        return built

    def inner(self, node: Any, own_parens: bool) -> Any:
        kind = type(node)
        if kind is ast.Name:
            self.i = node.end_col_offset
            self.names.add(node.id)
            self.refs.append(made := make(cst.Name, value=node.id, lpar=(), rpar=()))
            return made
        if kind is ast.Constant:
            return self.constant(node)
        if kind is ast.BinOp:
            left = self.expr(node.left)
            tok, bin_cls = _BINARY[type(node.op)]
            op = self.operator(tok, bin_cls)
            right = self.expr(node.right)
            return make(cst.BinaryOperation, left=left, operator=op, right=right, lpar=(), rpar=())
        if kind is ast.Attribute:
            refs = self.refs
            k = len(refs)
            refs.append(None)  # (its place: before the names in its value)
            value = self.expr(node.value)
            dot = self.operator(".", cst.Dot)
            attr = node.attr
            s = self.i
            self.token(attr)
            name = make(cst.Name, value=attr, lpar=(), rpar=())
            self.pos[name] = (self.line, s, self.line, self.i)
            made = make(cst.Attribute, value=value, attr=name, dot=dot, lpar=(), rpar=())
            refs[k] = (made, len(refs))
            return made
        if kind is ast.Call:
            return self.call(node)
        if kind is ast.Subscript:
            return self.subscript(node)
        if kind is ast.UnaryOp:
            tok, un_cls = _UNARY[type(node.op)]
            s = self.i
            self.token(tok)
            op = make(un_cls, whitespace_after=whitespace(self.spaces()))
            self.pos[op] = (self.line, s, self.line, self.i)  # (its space after it is in its range)
            return make(cst.UnaryOperation, operator=op, expression=self.expr(node.operand),
                         lpar=(), rpar=())
        if kind is ast.Compare:
            return self.compare(node)
        if kind is ast.BoolOp:
            tok, bool_cls = _BOOL[type(node.op)]
            values = node.values
            s = self.i
            out = self.expr(values[0])
            for v in values[1:]:
                op = self.operator(tok, bool_cls)
                out = make(cst.BooleanOperation, left=out, operator=op, right=self.expr(v), lpar=(), rpar=())
                self.pos[out] = (self.line, s, self.line, self.i)  # (`a and b` of `a and b and c`: its own range)
            return out
        if kind is ast.IfExp:
            body = self.expr(node.body)
            w1, w2 = self.around("if")
            test = self.expr(node.test)
            w3, w4 = self.around("else")
            orelse = self.expr(node.orelse)
            return make(cst.IfExp, test=test, body=body, orelse=orelse, lpar=(), rpar=(),
                         whitespace_before_if=whitespace(w1), whitespace_after_if=whitespace(w2),
                         whitespace_before_else=whitespace(w3), whitespace_after_else=whitespace(w4))
        if kind is ast.Tuple:
            elements = self.elements(node.elts, ")" if own_parens else None)
            if not own_parens and len(elements) == 1 and elements[0].comma is cst.MaybeSentinel.DEFAULT:
                raise Unsupported("tuple")  # pragma: no cover - ast's one-tuple has its comma
            return make(cst.Tuple, elements=elements, lpar=(), rpar=())
        if kind is ast.List:
            s = self.i
            self.token("[")
            lb = make(cst.LeftSquareBracket, whitespace_after=whitespace(self.spaces()))
            self.pos[lb] = (self.line, s, self.line, self.i)
            elements = self.elements(node.elts, "]")
            s = self.i
            rb = make(cst.RightSquareBracket, whitespace_before=whitespace(self.spaces()))
            self.token("]")
            self.pos[rb] = (self.line, s, self.line, self.i)
            return make(cst.List, elements=elements, lbracket=lb, rbracket=rb, lpar=(), rpar=())
        raise Unsupported(kind)

    def constant(self, node: Any) -> Any:
        text = self.t[node.col_offset:node.end_col_offset]
        v = node.value
        self.i = node.end_col_offset
        if v is None or v is True or v is False:
            self.names.add(text)
            self.refs.append(made := make(cst.Name, value=text, lpar=(), rpar=()))
            return made
        if v is Ellipsis:
            return make(cst.Ellipsis, lpar=(), rpar=())
        if isinstance(v, (str, bytes)):
            if not _STRING.match(text):
                raise Unsupported("string")
            return make(cst.SimpleString, value=text, lpar=(), rpar=())
        if not _NUMBER.match(text):
            raise Unsupported("number")
        cls = cst.Imaginary if isinstance(v, complex) else cst.Float if isinstance(v, float) else cst.Integer
        return make(cls, value=text, lpar=(), rpar=())

    def elements(self, elts: list[ast.expr], close: str | None) -> tuple[Any, ...]:
        """A tuple's or list's elements, each with the comma after it (``close``: the bracket that ends
        them; None for a tuple without parentheses)."""
        out = []
        pos, ln = self.pos, self.line
        for k, e in enumerate(elts):
            if type(e) is ast.Starred:
                raise Unsupported("starred")
            start = self.i
            value = self.expr(e)
            end = self.i
            if close is not None or k < len(elts) - 1:  # (after a bare tuple's last element: the next token's)
                self.no_space()
            comma: Any = cst.MaybeSentinel.DEFAULT
            if self.i < len(self.t) and self.t[self.i] == ",":
                self.i += 1
                # (a space after a trailing comma is the next token's: `a, = b`'s before the `=`)
                after = self.spaces() if k < len(elts) - 1 else ""
                comma = make(cst.Comma, whitespace_before=whitespace(""), whitespace_after=whitespace(after))
                pos[comma] = (ln, end, ln, end + 1)
            elif k < len(elts) - 1:
                raise Unsupported("comma")
            out.append(element := make(cst.Element, value=value, comma=comma))
            pos[element] = (ln, start, ln, end)
        if close is not None:
            self.no_space()
        return tuple(out)

    def call(self, node: ast.Call) -> Any:
        func = self.expr(node.func)
        w_func = self.spaces()
        self.token("(")
        w_args = self.spaces()
        parts: list[Any] = [*node.args, *node.keywords]
        parts.sort(key=lambda p: (p.lineno, p.col_offset))
        args = []
        pos, ln = self.pos, self.line
        for k, p in enumerate(parts):
            star, keyword, equal = "", None, cst.MaybeSentinel.DEFAULT
            start = self.i
            if type(p) is ast.keyword:
                if p.arg is None:
                    raise Unsupported("**")
                self.token(p.arg)
                keyword = make(cst.Name, value=p.arg, lpar=(), rpar=())
                pos[keyword] = (ln, start, ln, self.i)
                self.no_space()
                self.token("=")
                self.no_space()
                equal = make(cst.AssignEqual, whitespace_before=whitespace(""), whitespace_after=whitespace(""))
                pos[equal] = (ln, self.i - 1, ln, self.i)
                value = self.expr(p.value)
            elif type(p) is ast.Starred:
                self.token("*")
                self.no_space()
                star = "*"
                value = self.expr(p.value)
            else:
                value = self.expr(p)
            self.no_space()
            end = self.i
            comma: Any = cst.MaybeSentinel.DEFAULT
            if self.i < len(self.t) and self.t[self.i] == ",":
                self.i += 1
                after = self.spaces()
                if k == len(parts) - 1 and after:
                    raise Unsupported("space")
                comma = make(cst.Comma, whitespace_before=whitespace(""), whitespace_after=whitespace(after))
                pos[comma] = (ln, end, ln, end + 1)
            elif k < len(parts) - 1:
                raise Unsupported("comma")
            args.append(arg := make(cst.Arg, value=value, keyword=keyword, equal=equal, comma=comma, star=star,
                                    whitespace_after_star=whitespace(""), whitespace_after_arg=whitespace("")))
            pos[arg] = (ln, start, ln, end)
        if not parts and w_args:
            raise Unsupported("space")
        self.no_space()
        self.token(")")
        return make(cst.Call, func=func, args=tuple(args), lpar=(), rpar=(), whitespace_after_func=whitespace(w_func),
                     whitespace_before_args=whitespace(w_args))

    def subscript(self, node: ast.Subscript) -> Any:
        value = self.expr(node.value)
        w_value = self.spaces()
        pos, ln = self.pos, self.line
        start = self.i
        self.token("[")
        lb = make(cst.LeftSquareBracket, whitespace_after=whitespace(self.spaces()))
        pos[lb] = (ln, start, ln, self.i)
        s = node.slice
        items = s.elts if type(s) is ast.Tuple and not _parenthesized(self.t, s) else [s]
        elements = []
        for k, item in enumerate(items):
            if type(item) is ast.Starred:
                raise Unsupported("starred")
            start = self.i
            sl = self.slice(item) if type(item) is ast.Slice else make(
                cst.Index, value=self.expr(item), star=None, whitespace_after_star=None)
            self.no_space()
            end = self.i
            comma: Any = cst.MaybeSentinel.DEFAULT
            if self.i < len(self.t) and self.t[self.i] == ",":
                self.i += 1
                after = self.spaces()
                if k == len(items) - 1 and after:
                    raise Unsupported("space")
                comma = make(cst.Comma, whitespace_before=whitespace(""), whitespace_after=whitespace(after))
                pos[comma] = (ln, end, ln, end + 1)
            elif k < len(items) - 1:
                raise Unsupported("comma")
            elements.append(element := make(cst.SubscriptElement, slice=sl, comma=comma))
            pos[sl] = pos[element] = (ln, start, ln, end)
        self.no_space()
        end = self.i
        self.token("]")
        rb = make(cst.RightSquareBracket, whitespace_before=whitespace(""))
        pos[rb] = (ln, end, ln, end + 1)
        return make(cst.Subscript, value=value, slice=tuple(elements), lbracket=lb, rbracket=rb, lpar=(), rpar=(),
                     whitespace_after_value=whitespace(w_value))

    def slice(self, node: ast.Slice) -> Any:
        """``lower:upper:step``, no spaces around its colons."""
        lower = self.expr(node.lower) if node.lower is not None else None
        self.no_space()
        self.token(":")
        self.no_space()
        first = make(cst.Colon, whitespace_before=whitespace(""), whitespace_after=whitespace(""))
        self.pos[first] = (self.line, self.i - 1, self.line, self.i)
        upper = self.expr(node.upper) if node.upper is not None else None
        self.no_space()
        second: Any = cst.MaybeSentinel.DEFAULT
        step = None
        if self.i < len(self.t) and self.t[self.i] == ":":
            self.i += 1
            self.no_space()
            second = make(cst.Colon, whitespace_before=whitespace(""), whitespace_after=whitespace(""))
            self.pos[second] = (self.line, self.i - 1, self.line, self.i)
            step = self.expr(node.step) if node.step is not None else None
        elif node.step is not None:  # pragma: no cover - a step is after a second colon
            raise Unsupported("step")
        return make(cst.Slice, lower=lower, upper=upper, step=step, first_colon=first, second_colon=second)

    def compare(self, node: ast.Compare) -> Any:
        left = self.expr(node.left)
        targets = []
        pos, ln = self.pos, self.line
        for op, right in zip(node.ops, node.comparators):
            start = self.i  # (a target's range: its operator's space before it included)
            two = _COMPARE2.get(type(op))
            if two is not None:  # (`not in`, `is not`)
                before, between = self.around(two[0])
                self.token(two[1])
                end = self.i
                cmp = make(two[2], whitespace_before=whitespace(before), whitespace_between=whitespace(between),
                           whitespace_after=whitespace(self.spaces()))
                pos[cmp] = (ln, start + len(before), ln, end)
            else:
                cmp = self.operator(*_COMPARE[type(op)])
            targets.append(target := make(cst.ComparisonTarget, operator=cmp, comparator=self.expr(right)))
            pos[target] = (ln, start, ln, self.i)
        return make(cst.Comparison, left=left, comparisons=tuple(targets), lpar=(), rpar=())


def _closes(text: str, i: int) -> int:
    """Where the bracket opened at ``text[i]`` closes (-1: not in the text)."""
    depth = 0
    for j in range(i, len(text)):
        c = text[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _parenthesized(text: str, node: Any) -> bool:
    """Whether the tuple ``node``'s own parentheses are in its span (``x[(a, b)]``, not ``x[a, b]``)."""
    return text[node.col_offset] == "(" and _closes(text, node.col_offset) == node.end_col_offset - 1


_PLAIN = re.compile(r"[ -~]*\Z")  # printable ASCII, no tab, no line break


def parse_expression(text: str) -> cst.BaseExpression:
    """``cst.parse_expression(text)``: the same tree (built from ``ast`` for the forms srcjax writes;
    libcst parses anything else), a new one each call."""
    if text.isidentifier() and text.isascii() and not keyword.iskeyword(text):  # (a name: ast's Name, not parsed)
        return ExpressionBuilder(text).expr(ast.Name(text, col_offset=0, end_col_offset=len(text)))  # type: ignore
    if _PLAIN.match(text) and "#" not in text and "\\" not in text and text[:1] != " " and text[-1:] != " ":
        try:
            node = ast.parse(text, mode="eval").body
            b = ExpressionBuilder(text)
            built = b.expr(node)
            if b.i == len(text):
                return built  # type: ignore[no-any-return]
        except (Unsupported, SyntaxError, ValueError, KeyError, IndexError, AttributeError):
            pass
    return cst.parse_expression(text)
