"""Small libcst helpers shared by the frontend passes and the AD pre-passes.

Readers: attribute chains (``np.linalg.norm`` -> ``["np", "linalg", "norm"]``),
literals, integer literals, a function's parameters, the statements of a block
(nested ``def`` bodies not searched) and the names they bind. Builders: dotted
paths, calls of dotted paths, one-statement lines and assignments.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import libcst as cst

from .names import children, literal_value, target_names, walk

LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis)
LITERAL_TYPES = frozenset(LITERALS)  # for `type(n) in LITERAL_TYPES` (libcst's classes are final: no ABCMeta check)
LOOPS = (cst.For, cst.While)


def attr_chain(node: cst.BaseExpression) -> list[str] | None:
    parts: list[str] = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
    if type(node) is cst.Name:
        parts.append(node.value)
        return parts[::-1]
    return None


def dotted(path: str) -> cst.BaseExpression:
    parts = path.split(".")
    node: cst.BaseExpression = cst.Name(parts[0])
    for p in parts[1:]:
        node = cst.Attribute(value=node, attr=cst.Name(p))
    return node


def is_literal(e: cst.BaseExpression) -> bool:
    if isinstance(e, LITERALS):
        return True
    if isinstance(e, cst.Name) and e.value in ("None", "True", "False"):
        return True
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, (cst.Minus, cst.Plus)):
        return isinstance(e.expression, (cst.Integer, cst.Float))
    if isinstance(e, cst.Tuple):
        return all(is_literal(el.value) for el in e.elements)
    return False


def power_base(left: cst.BaseExpression, op: cst.BaseBinaryOp) -> cst.BaseExpression:
    """``left`` as the base of ``op`` when that is ``**``: a negative literal (an atom of the ANF form,
    its parentheses dropped) parenthesized again, as ``-0.5 ** 2`` is ``-(0.5 ** 2)``."""
    if isinstance(op, cst.Power) and isinstance(left, cst.UnaryOperation) and not left.lpar:
        return left.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return left


def is_true(e: cst.BaseExpression) -> bool:
    return isinstance(e, cst.Name) and e.value == "True"


def int_literal(e: cst.BaseExpression) -> int | None:
    if isinstance(e, cst.Integer):
        return int(literal_value(e))
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus) and isinstance(e.expression,
                                                                                            cst.Integer):
        return -int(literal_value(e.expression))
    return None


def int_expr(v: int) -> cst.BaseExpression:
    return cst.Integer(str(v)) if v >= 0 else cst.UnaryOperation(cst.Minus(), cst.Integer(str(-v)))


def params_of(fdef: cst.FunctionDef) -> list[cst.Param]:
    p = fdef.params
    out = list(p.posonly_params) + list(p.params) + list(p.kwonly_params)
    if isinstance(p.star_arg, cst.Param):
        out.append(p.star_arg)
    if p.star_kwarg is not None:
        out.append(p.star_kwarg)
    return out


def statements_in(stmts: Sequence[Any]) -> Iterable[Any]:
    """Small and compound statements, recursively; a nested ``def`` is yielded, its body not searched."""
    for s in stmts:
        if isinstance(s, cst.SimpleStatementLine):
            yield from s.body
        elif isinstance(s, cst.If):
            yield s
            yield from statements_in(s.body.body)
            yield from statements_in(orelse_stmts(s))
        elif isinstance(s, LOOPS):
            yield s
            yield from statements_in(s.body.body)
        else:
            yield s


def assigned_in(stmts: Sequence[Any]) -> list[str]:
    """Names bound in ``stmts`` (assignment and ``for`` targets, ``def``s, recursively), in order, once each."""
    out: dict[str, None] = {}
    for s in statements_in(stmts):
        if isinstance(s, cst.Assign):
            for t in s.targets:
                out.update(dict.fromkeys(target_names(t.target)))
        elif isinstance(s, cst.For):
            out.update(dict.fromkeys(target_names(s.target)))
        elif isinstance(s, cst.FunctionDef):
            out[s.name.value] = None
    return list(out)


def orelse_stmts(s: cst.If) -> list[Any]:
    if s.orelse is None:
        return []
    if isinstance(s.orelse, cst.If):
        return [s.orelse]
    return list(s.orelse.body.body)


def stmt_line(small: cst.BaseSmallStatement) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[small])


def assign_stmt(target: str | Sequence[str], value: cst.BaseExpression) -> cst.SimpleStatementLine:
    t = names_expr(target, parens=False)
    assert isinstance(t, (cst.Name, cst.Tuple))
    return stmt_line(cst.Assign(targets=[cst.AssignTarget(target=t)], value=value))


def names_expr(names: str | Sequence[str], parens: bool) -> cst.BaseExpression:
    if isinstance(names, str):
        return cst.Name(names)
    if len(names) == 1:
        return cst.Name(names[0])
    par = ([cst.LeftParen()], [cst.RightParen()]) if parens else ([], [])
    return cst.Tuple(elements=[cst.Element(cst.Name(n)) for n in names], lpar=par[0], rpar=par[1])


def dotted_call(path: str, *args: cst.BaseExpression) -> cst.Call:
    return cst.Call(func=dotted(path), args=[cst.Arg(value=a) for a in args])


def is_pass(s: Any) -> bool:
    return isinstance(s, cst.SimpleStatementLine) and all(isinstance(x, cst.Pass) for x in s.body)


def dict_comprehensions(st: Any, positions: dict[cst.CSTNode, Any]) -> Any:
    """``st`` with each ``{k: v for k in keys}`` written ``dict([(k, v) for k in keys])``: the keys are
    static (a dict's keys, a list of names), so the dict is built while compiling, like any container.
    The rewritten statement's nodes keep the user's positions."""
    if not any(type(n) is cst.DictComp for n in walk(st)):
        return st
    done: list[tuple[cst.DictComp, cst.Call]] = []

    class Rewrite(cst.CSTTransformer):
        def leave_DictComp(self, original: cst.DictComp, updated: cst.DictComp) -> cst.BaseExpression:
            pairs = cst.ListComp(elt=cst.Tuple(elements=[cst.Element(updated.key), cst.Element(updated.value)]),
                                 for_in=updated.for_in)
            call = cst.Call(func=cst.Name("dict"), args=[cst.Arg(pairs)])
            done.append((original, call))
            return call

    new = st.visit(Rewrite())

    def copy(old: cst.CSTNode, now: cst.CSTNode) -> None:  # _copy_positions, around the rewritten parts
        r = positions.get(old)
        if r is not None:
            positions[now] = r
        if isinstance(old, cst.DictComp):
            return
        for a, b in zip(children(old), children(now)):
            copy(a, b)

    copy(st, new)
    for original, call in done:
        where = positions.get(original)
        pairs = call.args[0].value
        assert isinstance(pairs, cst.ListComp) and isinstance(pairs.elt, cst.Tuple)
        for node in (call, pairs, pairs.elt):
            if where is not None:
                positions[node] = where
        copy(original.key, pairs.elt.elements[0].value)
        copy(original.value, pairs.elt.elements[1].value)
        copy(original.for_in, pairs.for_in)
    return new


def keyword_dict(node: cst.CSTNode) -> bool:
    """``dict(a=x, b=y)``: keywords only (no ``**``, no positional argument)."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict" and \
        bool(node.args) and all(a.keyword is not None and not a.star for a in node.args)


def dict_keywords(st: Any, positions: dict[cst.CSTNode, Any]) -> Any:
    """``st`` with each ``dict(a=x, b=y)`` of the builtin ``dict`` written ``{"a": x, "b": y}`` (a dict display,
    which every transformation follows; the call was refused under grad and vmap). The display and its keys take
    the call's position, the values keep theirs."""
    if not any(keyword_dict(n) for n in walk(st)):
        return st
    made: list[tuple[cst.Call, cst.Dict]] = []

    class Rewrite(cst.CSTTransformer):
        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
            if not keyword_dict(updated):
                return updated
            shown = cst.Dict([cst.DictElement(cst.SimpleString(f'"{a.keyword.value}"'), a.value)  # type: ignore[union-attr]
                              for a in updated.args])
            made.append((original, shown))
            return shown

    new = st.visit(Rewrite())

    def copy(old: cst.CSTNode, now: cst.CSTNode) -> None:
        r = positions.get(old)
        if r is not None:
            positions[now] = r
        if keyword_dict(old) and isinstance(now, cst.Dict):
            for a, el in zip(old.args, now.elements):  # type: ignore[attr-defined]
                assert isinstance(el, cst.DictElement)
                if r is not None:
                    positions[el] = positions[el.key] = r
                copy(a.value, el.value)
            return
        for a, b in zip(children(old), children(now)):
            copy(a, b)

    copy(st, new)
    return new


def literal_code(v: Any) -> str | None:
    """Source for a default value that is a plain literal (numbers, strings, None, tuples of them)."""
    if v is None or isinstance(v, (bool, int, str)):
        return repr(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else None
    if type(v) is tuple:  # (not a NamedTuple: its literal would lose its class and its fields' names)
        parts = [literal_code(x) for x in v]
        if all(p is not None for p in parts):
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"  # type: ignore[arg-type]
    return None


class OneLine(cst.CSTTransformer):
    """Line breaks inside an expression (legal in the user's brackets, which flattening may drop)
    as single spaces; none just inside a bracket."""

    def on_leave(self, original: Any, updated: Any) -> Any:
        if isinstance(original, cst.ParenthesizedWhitespace):
            return cst.SimpleWhitespace(" ")
        if isinstance(original, (cst.LeftParen, cst.LeftSquareBracket, cst.LeftCurlyBrace)) and \
                isinstance(original.whitespace_after, cst.ParenthesizedWhitespace):
            return updated.with_changes(whitespace_after=cst.SimpleWhitespace(""))
        if isinstance(original, (cst.RightParen, cst.RightSquareBracket, cst.RightCurlyBrace)) and \
                isinstance(original.whitespace_before, cst.ParenthesizedWhitespace):
            return updated.with_changes(whitespace_before=cst.SimpleWhitespace(""))
        return updated


# an operator's readable name (the temporaries it makes: `add`, `mul`), and `+=`'s operator
BINOP_HINT = {
    "Add": "add", "Subtract": "sub", "Multiply": "mul", "Divide": "div", "FloorDivide": "floordiv",
    "Modulo": "mod", "Power": "pow", "MatrixMultiply": "matmul", "BitAnd": "and_", "BitOr": "or_",
    "BitXor": "xor", "LeftShift": "lshift", "RightShift": "rshift",
}
AUG_TO_BIN = {
    "AddAssign": cst.Add, "SubtractAssign": cst.Subtract, "MultiplyAssign": cst.Multiply,
    "DivideAssign": cst.Divide, "FloorDivideAssign": cst.FloorDivide, "ModuloAssign": cst.Modulo,
    "PowerAssign": cst.Power, "MatrixMultiplyAssign": cst.MatrixMultiply, "BitAndAssign": cst.BitAnd,
    "BitOrAssign": cst.BitOr, "BitXorAssign": cst.BitXor, "LeftShiftAssign": cst.LeftShift,
    "RightShiftAssign": cst.RightShift,
}
