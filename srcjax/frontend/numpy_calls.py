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

__all__ = ["WHERE_FILL", "reduction_where", "ufunc_at"]

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
