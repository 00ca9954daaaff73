"""NumPy calls the normalizer writes in other terms: a reduction with ``where=`` (the masked elements
replaced by the reduction's identity) and ``np.add.at`` (a functional scatter-add)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
import numpy as np

from ..core import ArgumentError, UnknownFunctionError
from ..primitives import registry
from .syntax import dotted

if TYPE_CHECKING:
    from .normalize import Normalizer

__all__ = ["WHERE_FILL", "piecewise", "reduction_where", "ufunc_at"]

# the value a reduction's `where=False` elements take (None: NumPy requires initial=)
WHERE_FILL: dict[str, cst.BaseExpression | None] = {
    "sum": cst.Integer("0"), "mean": cst.Integer("0"), "prod": cst.Integer("1"), "any": cst.Name("False"),
    "all": cst.Name("True"), "max": None, "min": None}


def reduction_where(norm: Normalizer, node: cst.Call, prim: registry.Primitive, pos: list[cst.BaseExpression],
                    kws: dict[str, cst.BaseExpression]) -> cst.BaseExpression:
    """``np.sum(x, where=m)`` as ``np.sum(np.where(m, x, 0))``: the reduction of ``x`` with the
    elements where ``m`` is false replaced by the reduction's identity (``initial`` for max/min,
    which NumPy requires there); ``np.mean`` divides by the count of the others."""
    m = kws.pop("where")
    a = pos[0] if pos else kws.pop("a", None)
    if a is None:
        raise ArgumentError(f"{prim.path}(): missing the array argument", span=norm.span(node))
    rest = [cst.Arg(v) for v in pos[1:]] + [cst.Arg(v, keyword=cst.Name(k)) for k, v in kws.items()]
    fill: cst.BaseExpression | None = WHERE_FILL[prim.name]
    if fill is None:
        if "initial" not in kws:
            raise ArgumentError(f"{prim.path}() with where= needs initial= (as in NumPy): the value of a slice "
                                "where nothing is selected", span=norm.span(node),
                                hint=f"{prim.path}(x, where=m, initial=-np.inf)" if prim.name == "max" else
                                f"{prim.path}(x, where=m, initial=np.inf)")
        fill = kws["initial"]
    chosen = cst.Call(func=dotted("np.where"), args=[cst.Arg(m), cst.Arg(a), cst.Arg(fill)])
    if prim.name != "mean":
        return cst.Call(func=dotted(prim.path), args=[cst.Arg(chosen), *rest])
    total = cst.Call(func=dotted("np.sum"), args=[cst.Arg(chosen), *rest])
    ones = cst.Call(func=dotted("np.where"), args=[
        cst.Arg(m), cst.Arg(cst.Call(func=dotted("np.ones_like"), args=[cst.Arg(a)])), cst.Arg(cst.Integer("0"))])
    count = cst.Call(func=dotted("np.sum"), args=[cst.Arg(ones), *[r for r in rest if not (
        r.keyword is not None and r.keyword.value == "dtype")]])
    return cst.BinaryOperation(left=total, operator=cst.Divide(), right=count)


def ufunc_at(norm: Normalizer, call: cst.Call) -> bool:
    """``np.add.at(a, indices, b)`` (NumPy's unbuffered in-place add: repeated indices accumulate) as
    the functional ``a = index_add(a, indices, b)``; other ``ufunc.at`` are refused. False: not one."""
    try:
        ok, fv = norm.static_value(call.func)
    except UnknownFunctionError:
        return False
    if not ok or getattr(fv, "__name__", None) != "at" or not isinstance(getattr(fv, "__self__", None), np.ufunc):
        return False
    if fv.__self__ is not np.add:
        raise norm.unsupported(call, f"np.{fv.__self__.__name__}.at",
                               "np.add.at is supported (a scatter-add); write other updates with np.where")
    args = [a.value for a in call.args]
    if len(args) != 3 or any(a.keyword is not None or a.star for a in call.args) or \
            not isinstance(args[0], cst.Name) or args[0].value not in norm.locals:
        raise norm.unsupported(call, "this form of np.add.at",
                               "write np.add.at(a, indices, values) with `a` a local array variable")
    key, value = norm.atom(args[1]), norm.atom(args[2])
    norm.assign(cst.Name(args[0].value), cst.Call(func=cst.Name("index_add"), args=[
        cst.Arg(args[0]), cst.Arg(key), cst.Arg(value)]), call)
    norm.updated.add(args[0].value)
    return True


class _Substitute(cst.CSTTransformer):
    def __init__(self, name: str, value: cst.BaseExpression) -> None:
        self.name, self.value = name, value

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)  # (an attribute's name is not the parameter)
        return False

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        return updated.with_changes(value=original.value.visit(self))

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.value if original.value == self.name else updated


def _applied(f: cst.BaseExpression, x: cst.Name) -> cst.BaseExpression | None:
    """``f`` applied to ``x`` as an expression: a one-parameter lambda's body with ``x`` for its
    parameter, ``name(x)`` for a named function; a number as itself; None otherwise."""
    if isinstance(f, (cst.Integer, cst.Float)) or (isinstance(f, cst.UnaryOperation) and
                                                   isinstance(f.expression, (cst.Integer, cst.Float))):
        return f
    if isinstance(f, cst.Lambda):
        ps = f.params
        if len(ps.params) != 1 or ps.star_arg is not cst.MaybeSentinel.DEFAULT and ps.star_arg is not None or \
                ps.kwonly_params or ps.star_kwarg is not None or ps.posonly_params:
            return None
        if any(isinstance(n, (cst.Lambda, cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp))
               for n in _walk(f.body)):
            return None
        body = f.body.visit(_Substitute(ps.params[0].name.value, x))
        assert isinstance(body, cst.BaseExpression)
        return body.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    if isinstance(f, (cst.Name, cst.Attribute)):
        return cst.Call(func=f, args=[cst.Arg(x)])
    return None


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    out = [node]
    for c in node.children:
        out += _walk(c)
    return out


def piecewise(norm: Normalizer, call: cst.Call) -> cst.BaseExpression | None:
    """``np.piecewise(x, [c0, c1], [f0, f1(, otherwise)])`` with literal lists as ``np.select`` of each
    function applied to ``x`` (a lambda's body written out), cast to ``x``'s dtype as NumPy's result
    is, so derivatives go through the functions like any expression; None: another form (the
    composite handles it, without derivatives through lambdas)."""
    if len(call.args) != 3 or any(a.keyword is not None or a.star for a in call.args):
        return None
    xs, conds, funcs = (a.value for a in call.args)
    if not isinstance(conds, (cst.List, cst.Tuple)) or not isinstance(funcs, (cst.List, cst.Tuple)):
        return None
    n = len(conds.elements)
    if len(funcs.elements) not in (n, n + 1) or n == 0:
        return None
    x = norm.atom(xs)
    if not isinstance(x, cst.Name):
        name = cst.Name(norm.fresh("piecewise_x"))
        norm.assign(name, x, xs)
        x = name
    applied = [_applied(e.value, x) for e in funcs.elements]
    if any(a is None for a in applied):
        return None
    default: cst.BaseExpression = applied[n] if len(applied) == n + 1 else cst.Integer("0")  # type: ignore[assignment]
    select = cst.Call(func=dotted("np.select"), args=[
        cst.Arg(cst.List([cst.Element(e.value) for e in conds.elements])),
        cst.Arg(cst.List([cst.Element(a) for a in applied[:n]])),  # type: ignore[arg-type]
        cst.Arg(default, keyword=cst.Name("default"))])
    return cst.Call(func=cst.Attribute(value=select, attr=cst.Name("astype")),
                    args=[cst.Arg(cst.Attribute(value=x, attr=cst.Name("dtype")))])
