"""NumPy calls the normalizer writes in other terms: a reduction with ``where=`` (the masked elements
replaced by the reduction's identity) and ``np.add.at`` (a functional scatter-add)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import libcst as cst
import numpy as np

from .. import composites  # (library code the normalizer calls into, as it does for np.isclose)
from ..core import ArgumentError, UnknownFunctionError
from ..primitives import registry
from .names import statement_nodes, walk
from .syntax import dotted

if TYPE_CHECKING:
    from .normalize import Normalizer

__all__ = ["WHERE_FILL", "boolean", "boolean_names", "check_sized", "diff_ends", "emitted", "keywords",
           "list_names", "list_names_in", "piecewise", "reduction_where", "selection_reduction", "ufunc_at"]

# the value a reduction's `where=False` elements take (None: NumPy requires initial=)
WHERE_FILL: dict[str, cst.BaseExpression | None] = {
    "sum": cst.Integer("0"), "mean": cst.Integer("0"), "prod": cst.Integer("1"), "any": cst.Name("False"),
    "all": cst.Name("True"), "max": None, "min": None}

# other spellings of a primitive's keywords: NumPy 2.1's (and jax's) `np.clip(x, min=0.0, max=1.0)`,
# `x.clip(min=0.0)`, for the parameters NumPy also calls `a_min` and `a_max`
KEYWORD_SPELLINGS: dict[str, dict[str, str]] = {"clip": {"min": "a_min", "max": "a_max"}}
# parameters NumPy's function takes by position only with every one before it (np.clip(x, lo) is a TypeError:
# `x.clip(lo)` and `np.clip(x, max=hi)` are written np.clip(x, lo, None) and np.clip(x, None, hi))
WRITTEN_TOGETHER: dict[str, int] = {"clip": 3}


def keywords(prim: registry.Primitive, args: list[cst.Arg]) -> dict[str, cst.BaseExpression]:
    """A call's keyword arguments by the primitive's names for its parameters."""
    spelled = KEYWORD_SPELLINGS.get(prim.name, {})
    return {spelled.get(a.keyword.value, a.keyword.value): a.value for a in args if a.keyword is not None}


def emitted(prim: registry.Primitive, bound: inspect.BoundArguments) -> dict[str, Any]:
    """The arguments a call of ``prim`` writes, in the signature's order: a parameter the call left out, before
    one written by position (below ``prim.positional``), is written as its default (``np.clip(x, a_max=1.0)`` is
    ``np.clip(x, None, 1.0)``: written ``np.clip(x, 1.0)``, the bound moved to ``a_min``), and so are those
    :data:`WRITTEN_TOGETHER` names."""
    params = list(prim.signature.parameters.values())
    last = max((k for k, p in enumerate(params[:prim.positional]) if p.name in bound.arguments), default=-1)
    last = max(last, WRITTEN_TOGETHER.get(prim.name, 0))
    return {p.name: bound.arguments[p.name] if p.name in bound.arguments else cst.parse_expression(repr(p.default))
            for k, p in enumerate(params)
            if p.name in bound.arguments or (k < last and p.default is not inspect.Parameter.empty)}


def check_sized(norm: Normalizer, call: cst.Call, fv: Any) -> None:
    """``np.unique`` needs JAX's static ``size=``, ``np.bincount`` its ``length=`` (their results' sizes
    would depend on the data)."""
    from ..composites import bincount, unique

    if fv is np.where and len(call.args) == 1 and call.args[0].keyword is None and call.args[0].star == "":
        raise UnknownFunctionError("np.where(condition) with one argument is np.nonzero(condition), the indices "
                                   "where it holds: not supported, its result's size depends on the data",
                                   span=norm.span(call),
                                   hint="select values with np.where(condition, x, y), or use the mask itself: "
                                        "np.sum(x * condition), np.count_nonzero(condition), x[condition] = v")
    if fv is bincount and not any(a.keyword is not None and a.keyword.value == "length" for a in call.args):
        raise UnknownFunctionError("np.bincount without length= is not supported: its result's size depends on "
                                   "the data", span=norm.span(call),
                                   hint="pass a static number of bins, as jnp.bincount: np.bincount(x, length=8) "
                                        "(values outside 0..7 are dropped)")
    if fv is not unique:
        return
    if len([a for a in call.args if a.keyword is None]) > 4 or any(
            a.keyword is not None and a.keyword.value == "axis" and not (isinstance(a.value, cst.Name) and
                                                                       a.value.value == "None") for a in call.args):
        raise UnknownFunctionError("np.unique with axis= is not supported yet", span=norm.span(call),
                                   hint="np.unique flattens its input: pass no axis (or axis=None)")
    if not any(a.keyword is not None and a.keyword.value == "size" for a in call.args):
        raise UnknownFunctionError("np.unique without size= is not supported: its result's size depends on the data",
                                   span=norm.span(call),
                                   hint="pass a static size, as jnp.unique: np.unique(x, size=8) (padded with "
                                        "fill_value=..., by default the smallest value)")


def keyword_forms(norm: Normalizer, node: cst.Call, prim: registry.Primitive, pos: list[cst.BaseExpression],
                  kws: dict[str, cst.BaseExpression]) -> cst.BaseExpression | None:
    """A call whose keywords the primitive has no parameter for, written over the primitive: ``np.diff`` with
    ``prepend=``/``append=`` (:func:`diff_ends`), ``np.take`` with ``mode=`` (:func:`take_mode`); None otherwise."""
    if prim.fn is np.diff and ("prepend" in kws or "append" in kws):  # the ends joined first
        return diff_ends(norm, node, pos, kws)
    if prim.fn is np.take and "mode" in kws:
        return take_mode(norm, node, pos, kws)
    return None


def take_mode(norm: Normalizer, node: cst.Call, pos: list[cst.BaseExpression],
              kws: dict[str, cst.BaseExpression]) -> cst.BaseExpression:
    """``np.take(a, indices, axis, mode=m)`` as ``np.take(a, take_indices(a, indices, axis, m), axis)``
    (``srcjax.numpy_extras.take_indices``: the indices clipped or wrapped as NumPy's ``mode="clip"``/``"wrap"``)."""
    from ..numpy_extras import take_indices

    mode = kws.pop("mode")
    if not (isinstance(mode, cst.SimpleString) and mode.evaluated_value in ("raise", "clip", "wrap")) or \
            len(pos) > 3 or "out" in kws:
        raise norm.unsupported(node, "this form of np.take(..., mode=)",
                               'write np.take(a, indices, axis, mode="clip") (or "wrap", "raise") without out=')
    a = pos[0] if pos else kws.pop("a", None)
    indices = pos[1] if len(pos) > 1 else kws.pop("indices", None)
    if a is None or indices is None:
        raise ArgumentError("np.take(): missing the array or the indices", span=norm.span(node))
    axis = pos[2] if len(pos) > 2 else kws.pop("axis", cst.Name("None"))
    a = norm.atom(a)
    chosen = cst.Name(norm.fresh("indices"))
    norm.assign(chosen, cst.Call(func=norm.helper_call_name(take_indices, node), args=[
        cst.Arg(a), cst.Arg(norm.atom(indices)), cst.Arg(axis), cst.Arg(mode)]), node)
    return cst.Call(func=dotted("np.take"), args=[cst.Arg(a), cst.Arg(chosen), cst.Arg(axis)])


def diff_ends(norm: Normalizer, node: cst.Call, pos: list[cst.BaseExpression],
              kws: dict[str, cst.BaseExpression]) -> cst.BaseExpression:
    """``np.diff(a, n, axis, prepend=p, append=q)`` as ``np.diff(diff_operand(a, p, q, axis, n), n, axis)``:
    the differences of ``a`` with the ends joined (``srcjax.numpy_extras.diff_operand``)."""
    from ..numpy_extras import diff_operand

    a = pos[0] if pos else kws.pop("a", None)
    if a is None:
        raise ArgumentError("np.diff(): missing the array argument", span=norm.span(node))
    n = pos[1] if len(pos) > 1 else kws.pop("n", cst.Integer("1"))
    axis = pos[2] if len(pos) > 2 else kws.pop("axis", cst.UnaryOperation(cst.Minus(), cst.Integer("1")))
    ends = [kws.pop(k, cst.Name("None")) for k in ("prepend", "append")]
    joined = cst.Name(norm.fresh("joined"))
    norm.assign(joined, cst.Call(func=norm.helper_call_name(diff_operand, node), args=[
        cst.Arg(norm.atom(v)) for v in (a, ends[0], ends[1], axis, n)]), node)
    return cst.Call(func=dotted("np.diff"), args=[cst.Arg(joined), cst.Arg(n), cst.Arg(axis)])


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


# ufunc -> the ``x.at[...]`` method combining its repeated indices the same way (NumPy's ``ufunc.at`` is
# unbuffered: every value at a repeated index applies, as JAX's scatters do)
_UFUNC_AT = {np.add: "add", np.subtract: "subtract", np.multiply: "multiply", np.divide: "divide", np.power: "power",
             np.maximum: "max", np.minimum: "min"}


def ufunc_at(norm: Normalizer, call: cst.Call) -> bool:
    """``np.add.at(a, indices, b)`` (NumPy's unbuffered in-place add: repeated indices accumulate) as
    the functional ``a = index_add(a, indices, b)``; ``np.subtract.at`` adds ``-b``; ``np.multiply.at``,
    ``np.divide.at``, ``np.power.at``, ``np.maximum.at``, ``np.minimum.at`` as ``x.at[indices].multiply/divide/
    power/max/min(b)`` (``composites.AT_COMBINE``: every value at a repeated index applies, as NumPy's);
    other ``ufunc.at`` are refused. False: not one."""
    try:
        ok, fv = norm.static_value(call.func)
    except UnknownFunctionError:
        return False
    if not ok or getattr(fv, "__name__", None) != "at" or not isinstance(getattr(fv, "__self__", None), np.ufunc):
        return False
    method = _UFUNC_AT.get(fv.__self__)
    name = f"np.{fv.__self__.__name__}.at"
    if method is None:
        raise norm.unsupported(call, name, "np.add.at, np.subtract.at, np.multiply.at, np.divide.at, np.power.at, "
                               "np.maximum.at and np.minimum.at are supported; write other updates with np.where")
    args = [a.value for a in call.args]
    if len(args) != 3 or any(a.keyword is not None or a.star for a in call.args) or \
            not isinstance(args[0], cst.Name) or args[0].value not in norm.locals:
        raise norm.unsupported(call, f"this form of {name}",
                               f"write {name}(a, indices, values) with `a` a local array variable")
    key, value = norm.atom(args[1]), norm.atom(args[2])
    if method == "subtract":
        value = norm.atom(cst.UnaryOperation(operator=cst.Minus(), expression=value))
    if method in ("add", "subtract"):
        update: cst.BaseExpression = cst.Call(func=cst.Name("index_add"), args=[
            cst.Arg(args[0]), cst.Arg(key), cst.Arg(value)])
    else:

        update = cst.Call(func=norm.helper_call_name(composites.AT_COMBINE[method], call), args=[
            cst.Arg(args[0]), cst.Arg(key), cst.Arg(value)])
    norm.assign(cst.Name(args[0].value), update, call)
    norm.updated.add(args[0].value)
    return True


def written_ufunc(norm: Normalizer, call: cst.Call) -> Any:
    """The ufunc (or ``np.clip``) ``call`` calls when it writes its result into an array, ``out=`` or a ufunc's
    positional output (``np.exp(K, K)``); None otherwise."""
    positional = [a for a in call.args if a.keyword is None]
    has_out = any(a.keyword is not None and a.keyword.value == "out" for a in call.args)
    if not has_out and (len(positional) < 2 or any(a.star for a in call.args)):
        return None
    try:
        ok, fv = norm.static_value(call.func)
    except UnknownFunctionError:
        return None
    if not ok or not (isinstance(fv, np.ufunc) or fv is np.clip):
        return None
    if not has_out and not (isinstance(fv, np.ufunc) and fv.nout == 1 and len(positional) == fv.nin + 1):
        return None
    return fv


def out_argument(norm: Normalizer, call: cst.Call) -> bool:
    """``np.add(a, b, out=b)`` and ``np.exp(K, K)`` (a ufunc, or np.clip, writing its result into an array:
    numpy-100's in-place arithmetic, min-char-rnn's ``np.clip(d, -5, 5, out=d)``, scikit-learn's kernels) as
    ``b[...] = np.add(a, b)``, the write into a
    local array srcjax follows (cast to ``b``'s dtype; a view of another array is refused there). False: not one."""
    if in_place_function(norm, call):
        return True
    fv = written_ufunc(norm, call)
    if fv is None:
        return False
    out = next((a for a in call.args if a.keyword is not None and a.keyword.value == "out"), None)
    if out is None:  # (a ufunc's positional output: scikit-learn's `np.exp(K, K)`)
        out = [a for a in call.args if a.keyword is None][fv.nin]
    if not isinstance(out.value, cst.Name):
        raise norm.unsupported(out, "an `out=` that is not a local array variable",
                               "assign the result instead: `y = np.add(a, b)`")
    args = [a for a in call.args if a is not out]
    args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    value = norm.atom(call.with_changes(args=args))
    whole = cst.Subscript(value=out.value, slice=[cst.SubscriptElement(cst.Index(cst.Ellipsis()))])
    norm.index_assign(whole, value, call)
    return True


def written_value(norm: Normalizer, call: cst.Call) -> cst.BaseExpression | None:
    """A ufunc call writing into an array used as a value (``return np.sqrt(d, out=d)``, ``p = np.exp(p, p)``):
    the write (:func:`out_argument`), then the array written, which is the call's value in NumPy. None: not one."""
    fv = written_ufunc(norm, call)
    if fv is None:
        return None
    out = next((a for a in call.args if a.keyword is not None and a.keyword.value == "out"), None) or \
        [a for a in call.args if a.keyword is None][fv.nin]
    out_argument(norm, call)
    return out.value


def in_place_function(norm: Normalizer, call: cst.Call) -> bool:
    """``np.fill_diagonal(a, v)``, ``np.put_along_axis(a, i, v, axis)``, ``np.copyto(a, b[, where=m])`` and
    ``a.fill(v)`` (NumPy functions and a method writing into their first array) as ``a[...] =
    composites.fill_diagonal(a, v)`` (and ``put_along_axis(a, i, v, axis)``), ``a[...] = b`` (with ``where=``:
    ``np.where(m, b, a)``) and ``a[...] = v``: the write
    into a local array srcjax follows (cast to ``a``'s dtype; a view of another array is refused there). False:
    not one."""
    f = call.func
    pos = [a for a in call.args if a.keyword is None and not a.star]
    if isinstance(f, cst.Attribute) and f.attr.value == "fill" and isinstance(f.value, cst.Name) and \
            len(pos) == len(call.args) == 1 and f.value.value not in ("np", "numpy"):
        target, value = f.value, pos[0].value
    else:
        name = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""
        if name not in ("fill_diagonal", "copyto", "put_along_axis"):  # (the name first: no other call's value
            return False  # is looked up)
        try:
            ok, fv = norm.static_value(f)
        except UnknownFunctionError:
            return False
        from ..numpy_extras import fill_diagonal, put_along_axis  # (what the resolver reads np.X as)

        n_args = 4 if fv in (np.put_along_axis, put_along_axis) else 2
        where = [a.value for a in call.args if a.keyword is not None and a.keyword.value == "where"]
        if fv is np.copyto and where and len(pos) == 2:
            n_args = 3  # np.copyto(a, b, where=m)
        if not ok or fv not in (np.fill_diagonal, fill_diagonal, np.copyto, np.put_along_axis, put_along_axis) or \
                len(pos) < 2 or len(call.args) != n_args:
            return False
        if not isinstance(pos[0].value, cst.Name):
            raise norm.unsupported(pos[0], f"np.{fv.__name__}() into something other than a local array variable",
                                   "write into a local array: `a = x.copy()`, then the call on `a`")
        target = pos[0].value
        value = pos[1].value if fv is np.copyto else call  # (np.fill_diagonal, np.put_along_axis: srcjax's
        # functional ones)
        if fv is np.copyto and where:  # the elements where `m` holds: `a[...] = np.where(m, b, a)`
            value = cst.Call(func=dotted("np.where"), args=[cst.Arg(where[0]), cst.Arg(value), cst.Arg(target)])
    whole = cst.Subscript(value=target, slice=[cst.SubscriptElement(cst.Index(cst.Ellipsis()))])
    norm.index_assign(whole, norm.atom(value), call)
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
               for n in walk(f.body)):
            return None
        body = f.body.visit(_Substitute(ps.params[0].name.value, x))
        assert isinstance(body, cst.BaseExpression)
        return body.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    if isinstance(f, (cst.Name, cst.Attribute)):
        return cst.Call(func=f, args=[cst.Arg(x)])
    return None


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


_BOOL_CALLS = {"isnan", "isinf", "isfinite", "isneginf", "isposinf", "logical_and", "logical_or", "logical_not",
               "logical_xor", "isclose", "isin", "signbit", "equal", "not_equal", "less", "less_equal", "greater",
               "greater_equal"}


def boolean(node: cst.BaseExpression, names: set[str]) -> bool:
    """Whether ``node`` is written as a boolean array: a comparison, ``~``/``&``/``|``/``^`` of those, a
    NumPy predicate (``np.isnan(x)``), or a name only ever assigned such an expression."""
    if isinstance(node, cst.Comparison):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.BitInvert, cst.Not)):
        return boolean(node.expression, names)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        return boolean(node.left, names) and boolean(node.right, names)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.attr.value in _BOOL_CALLS
    return isinstance(node, cst.Name) and node.value in names


def boolean_names(norm: Normalizer) -> set[str]:
    """Local names every assignment of which (in the function as written) is a boolean expression."""
    found = getattr(norm, "_boolean_names", None)
    if found is None:
        found = norm._boolean_names = names_always(  # type: ignore[attr-defined]
            norm.src.fdef.body, lambda v: boolean(v, set()))
    return found


def names_always(body: cst.CSTNode, test: Callable[[cst.BaseExpression], bool]) -> set[str]:
    """Names bound in ``body`` only by plain assignments ``name = value`` whose every ``value`` passes
    ``test`` (not by unpacking, ``+=``, annotations or loops)."""
    seen: dict[str, bool] = {}
    for n in statement_nodes(body):
        kind = type(n)  # (libcst's node classes are ABCs: an isinstance per node costs two Python calls)
        if kind is cst.Assign:
            ok = test(n.value)  # type: ignore[attr-defined]
            for t in n.targets:  # type: ignore[attr-defined]
                for part in _bound(t.target):
                    seen[part] = seen.get(part, True) and ok and type(t.target) is cst.Name
        elif kind is cst.AugAssign or kind is cst.AnnAssign or kind is cst.For:
            for part in _bound(n.target):  # type: ignore[attr-defined]
                seen[part] = False
    return {k for k, v in seen.items() if v}


def _bound(target: cst.BaseExpression) -> list[str]:
    """The names an assignment to ``target`` binds or changes: ``y`` of ``y[mask] = v`` (``mask`` is read)."""
    if target.__class__ is cst.Name:  # (the common case: no walk; libcst's node classes are final)
        return [target.value]  # type: ignore[attr-defined]
    while isinstance(target, (cst.Subscript, cst.Attribute)):
        target = target.value
    return [part.value for part in walk(target) if isinstance(part, cst.Name)]


_ARITH = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power, cst.FloorDivide, cst.Modulo)


def selected(norm: Normalizer, node: cst.BaseExpression, names: set[str],
              base: Callable[[cst.BaseExpression], cst.BaseExpression] = lambda x: x
              ) -> tuple[str, cst.BaseExpression, cst.BaseExpression] | None:
    """``(mask's code, mask, node with x[mask] written x)`` when ``node`` is elementwise arithmetic
    (operators, NumPy ufuncs, numbers, names) over boolean selections ``x[mask]`` of one mask; None
    when it has none, or something else (another mask, an index, a call that is not a ufunc)."""
    def walk(n: cst.BaseExpression) -> tuple[list[tuple[str, cst.BaseExpression]], cst.BaseExpression] | None:
        if isinstance(n, cst.Subscript):
            if len(n.slice) == 1 and isinstance(n.slice[0].slice, cst.Index) and \
                    boolean(n.slice[0].slice.value, names):
                m = n.slice[0].slice.value
                return [(cst.Module([]).code_for_node(m), m)], base(n.value)
            return None
        if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, _ARITH):
            left, right = walk(n.left), walk(n.right)
            if left is None or right is None:
                return None
            return left[0] + right[0], n.with_changes(left=left[1], right=right[1])
        if isinstance(n, cst.Comparison) and len(n.comparisons) == 1:
            left, right = walk(n.left), walk(n.comparisons[0].comparator)
            if left is None or right is None:
                return None
            return left[0] + right[0], n.with_changes(left=left[1], comparisons=[
                n.comparisons[0].with_changes(comparator=right[1])])
        if isinstance(n, cst.UnaryOperation) and isinstance(n.operator, (cst.Minus, cst.Plus)):
            inner = walk(n.expression)
            return None if inner is None else (inner[0], n.with_changes(expression=inner[1]))
        if isinstance(n, cst.Call):
            try:
                ok, fv = norm.static_value(n.func)
            except UnknownFunctionError:
                return None
            if not ok or not isinstance(fv, np.ufunc) or any(a.keyword is not None or a.star for a in n.args):
                return None
            parts = [walk(a.value) for a in n.args]
            if any(p is None for p in parts):
                return None
            return [m for p in parts for m in p[0]], n.with_changes(  # type: ignore[index]
                args=[a.with_changes(value=p[1]) for a, p in zip(n.args, parts)])  # type: ignore[index]
        if isinstance(n, (cst.Name, cst.Integer, cst.Float, cst.Attribute)):
            return [], n
        return None

    found = walk(node)
    if found is None or not found[0] or any(code != found[0][0][0] for code, _ in found[0]):
        return None
    return found[0][0][0], found[0][0][1], found[1]


def selection_reduction(norm: Normalizer, call: cst.Call) -> tuple[cst.BaseExpression, str] | None:
    """``x[mask].sum()`` / ``np.mean((x[mask] - c) ** 2)`` (also prod, any, all, max, min) with ``mask``
    written as a boolean array and elementwise arithmetic between: the reduction over ``x`` where
    ``mask`` holds (``srcjax.composites``'s ``selection_sum``...), so no array of a data-dependent size
    is made. None: not such a call."""
    f = call.func
    if f.__class__ is cst.Attribute and f.attr.value in composites.SELECTION_REDUCTIONS and not call.args:  # type: ignore[attr-defined]
        arg, kind = f.value, f.attr.value  # x[mask].sum()
    elif len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star:
        arg, kind = call.args[0].value, ""  # np.sum(x[mask])
    else:
        return None
    if not any(type(n) is cst.Subscript for n in walk(arg)):  # (no x[...]: none; cheaper than its text)
        return None
    found = selected(norm, arg, boolean_names(norm))
    if found is None:
        return None
    if not kind:
        try:
            ok, fv = norm.static_value(f)
        except UnknownFunctionError:
            return None
        kind = next((k for k in composites.SELECTION_REDUCTIONS if ok and fv is getattr(np, k)), "")
        if not kind:
            return None
    _, mask_node, expr = found
    mask = norm.atom(mask_node)
    if not isinstance(arg, cst.Subscript):  # arithmetic on the selection: on x with its gaps filled
        fill = norm.helper_call_name(composites.selection_fill, call)

        def filled_base(x: cst.BaseExpression) -> cst.BaseExpression:
            name = cst.Name(norm.fresh("selected"))
            norm.assign(name, cst.Call(func=fill, args=[cst.Arg(norm.atom(x)), cst.Arg(mask)]), call)
            return name

        filled = selected(norm, arg, boolean_names(norm), filled_base)
        assert filled is not None
        expr = filled[2]
    x = norm.atom(expr)
    name = norm.helper_call_name(composites.SELECTION_REDUCTIONS[kind], call)
    return cst.Call(func=name, args=[cst.Arg(x), cst.Arg(mask)]), kind


def list_names(norm: Normalizer) -> set[str]:
    """Local names every assignment of which (in the function as written) makes a list: ``[]``, a list
    literal or comprehension, ``list(...)`` (then appended to, indexed, passed on)."""
    found = getattr(norm, "_list_names", None)
    if found is None:
        built = norm.src.built_names()  # (a tree built from ast, as built: a position for each of its nodes)
        if built is not None and "list" not in built.names and \
                cst.List not in {n.__class__ for n in tuple(norm.src.positions)}:
            found = norm._list_names = set()  # type: ignore[attr-defined]  # (no list made: no walk)
        else:
            found = norm._list_names = list_names_in(norm.src.fdef.body)  # type: ignore[attr-defined]
    return found


def list_names_in(body: cst.CSTNode) -> set[str]:
    """:func:`list_names` of a function body."""
    return names_always(body, _makes_list)


def _makes_list(v: Any) -> bool:
    """``[...]``, ``[... for ...]``, ``list(...)`` (by exact class: libcst's are final, an ``isinstance`` of one
    is two calls through ``ABCMeta``)."""
    t = v.__class__
    return t is cst.List or t is cst.ListComp or t is cst.Call and v.func.__class__ is cst.Name and \
        v.func.value == "list"
