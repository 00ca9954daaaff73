"""Functions with a ``*args`` parameter: ``def total(*xs)``, ``def f(x, *rest)``.

JAX traces such a function with as many arguments as a call passes; srcjax writes source, so each number of
arguments gets its own copy of the function (a *star variant*: the same code object, the number of starred
arguments in ``__srcjax_star__``) whose ``*xs`` is spelled as that many parameters ``xs_0, xs_1, ...``, the
body starting with ``xs = (xs_0, xs_1, ...)``: a tuple, as Python makes it (:func:`expand`). Every
transformation then sees plain positional parameters: ``grad``'s argnums counts them as jax does (argnums=1
of ``total(a, b)`` is ``b``), ``vmap``'s in_axes has one entry per position.

A helper called with ``*args`` (``sum_of_all(a, b, a * b)``) is a call of its variant
(``Normalizer.bound_call``); a transformed entry function is made per number of arguments when it is called
(``srcjax.star_dispatch``).
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from collections.abc import Callable
from typing import Any

import libcst as cst

from . import kwargs_params
from .function_copies import copy_function
from .names import target_names, walk
from .read import FunctionSource, read_function

STAR = "__srcjax_star__"
TUPLE = "__srcjax_tuple_params__"  # (a parameter passed a tuple display, spelled element by element: tuple_params)
SPREAD_HINT = ("pass the arguments one by one (f(xs[0], xs[1])), or bind the tuple, list or dict once in this function "
               "to a literal (xs = (a, b); kw = {\"scale\": 2.0}) and never change it: f(*xs, **kw) then works")
_TIGHT_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
_VARIANTS: dict[tuple[Any, int], types.FunctionType] = {}


def star_parameter(fn: Any) -> inspect.Parameter | None:
    """The ``*args`` parameter of the plain Python function ``fn`` (None: it has none, or is a variant)."""
    if not isinstance(fn, types.FunctionType) or getattr(fn, STAR, None) is not None:
        return None
    if not fn.__code__.co_flags & inspect.CO_VARARGS:
        return None
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return next((p for p in params if p.kind == p.VAR_POSITIONAL), None)


def fixed_count(fn: Callable[..., Any]) -> int:
    """How many positional parameters come before ``*args``."""
    return sum(1 for p in inspect.signature(fn).parameters.values()
               if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _names(fn: types.FunctionType, star: str, n: int) -> list[str]:
    taken = set(fn.__code__.co_varnames) | set(fn.__code__.co_names) | set(fn.__code__.co_cellvars)
    base = star
    while any(f"{base}_{i}" in taken for i in range(n)):
        base += "_"
    return [f"{base}_{i}" for i in range(n)]


def star_variant(fn: types.FunctionType, n: int) -> types.FunctionType:
    """The copy of ``fn`` taking ``n`` arguments in place of its ``*args`` (one per ``(fn, n)``)."""
    key = (fn, n)
    hit = _VARIANTS.get(key)
    if hit is not None:
        return hit
    p = star_parameter(fn)
    assert p is not None
    names = _names(fn, p.name, n)
    made = copy_function(fn)
    setattr(made, STAR, (p.name, tuple(names)))
    made.__srcjax_star_of__ = fn  # type: ignore[attr-defined]  # (the function it is a copy of)
    params = list(inspect.signature(fn).parameters.values())
    k = params.index(p)
    kind = inspect.Parameter.POSITIONAL_ONLY if all(q.kind == q.POSITIONAL_ONLY for q in params[:k]) \
        else inspect.Parameter.POSITIONAL_OR_KEYWORD
    fixed = [q.replace(kind=inspect.Parameter.POSITIONAL_ONLY) if kind == q.POSITIONAL_ONLY else q
             for q in params[:k]]
    made.__signature__ = inspect.signature(fn).replace(  # type: ignore[attr-defined]
        parameters=fixed + [inspect.Parameter(m, kind) for m in names] + params[k + 1:])
    _VARIANTS[key] = made
    return made


def call_variant(fn: types.FunctionType, positional: int) -> types.FunctionType:
    """The variant of ``fn`` that a call passing ``positional`` positional arguments calls."""
    return star_variant(fn, max(0, positional - fixed_count(fn)))


def expand(src: FunctionSource) -> FunctionSource:
    """``src`` of a star variant with its ``*xs`` spelled as parameters, the tuple bound first; else ``src``."""
    star = getattr(src.fn, STAR, None)
    if star is None:
        return src
    name, names = star
    fdef = src.fdef
    params = fdef.params
    new = [cst.Param(cst.Name(m)) for m in names]
    positional = list(params.params)
    if positional and new:
        positional[-1] = positional[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    clean = params.with_changes(params=positional + new,
                                star_arg=cst.ParamStar() if params.kwonly_params else cst.MaybeSentinel.DEFAULT)
    tup = "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"
    bind = cst.parse_statement(f"{name} = {tup}\n")
    body = fdef.body
    assert isinstance(body, cst.IndentedBlock)
    stmts = list(body.body)
    k = 1 if stmts and _is_docstring(stmts[0]) else 0
    fdef = fdef.with_changes(params=clean, body=body.with_changes(body=[*stmts[:k], bind, *stmts[k:]]))
    return dataclasses.replace(src, fdef=fdef)


def _is_docstring(s: cst.BaseStatement) -> bool:
    return isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Expr) \
        and isinstance(s.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


def spread(src: FunctionSource, node: cst.Call) -> cst.Call:
    """``node`` with its ``*xs`` spelled as the values: of a tuple or list literal (``f(*(a, b))``), or of the
    ``*args`` parameter of the star variant ``src`` is read from, never assigned again (``g(*xs)`` in ``def
    f(*xs)``: ``g(xs_0, xs_1)``); other ``*`` arguments are left (and refused by the caller)."""
    if not any(a.star for a in node.args):
        return node
    keyed = kwargs_params.spread_names(src.fn)  # (`act(x, **kw)` in `def layer(x, **kw)`: its keywords)
    star = getattr(src.fn, STAR, None)
    names = {} if star is None or _assigned(read_function(src.fn).fdef, star[0]) else {star[0]: star[1]}
    names.update(getattr(src.fn, TUPLE, None) or {})  # (`f(y, t, *args)` of `args=(a, b)`: never assigned)
    args: list[cst.Arg] = []
    spreads = False
    for a in node.args:
        v = a.value
        if a.star == "*" and isinstance(v, (cst.Tuple, cst.List)) and all(
                isinstance(e, cst.Element) for e in v.elements):
            args += [cst.Arg(e.value) for e in v.elements]
            spreads = True
        elif a.star == "*" and isinstance(v, cst.Name) and v.value in names:
            args += [cst.Arg(cst.Name(m)) for m in names[v.value]]
            spreads = True
        elif a.star == "**" and isinstance(v, cst.Name) and v.value in keyed and \
                not _assigned(read_function(src.fn).fdef, v.value):
            args += [cst.Arg(cst.Name(k), keyword=cst.Name(k), equal=_TIGHT_EQUAL) for k in keyed[v.value]]
            spreads = True
        elif a.star and isinstance(v, cst.Name) and (held := literal_held(src.fdef, v.value, a.star == "**")):
            for k in held:  # `f(*xs)` of `xs = (a, b)`: f(xs[0], xs[1]); `f(**kw)` of `kw = {"s": 2.0}`: s=kw["s"]
                item = cst.Subscript(v, [cst.SubscriptElement(cst.Index(
                    cst.Integer(str(k)) if isinstance(k, int) else cst.SimpleString(repr(k))))])
                if a in src.positions:
                    src.positions[item] = src.positions[a]
                args.append(cst.Arg(item, keyword=cst.Name(k), equal=_TIGHT_EQUAL) if isinstance(k, str)
                            else cst.Arg(item))
            spreads = True
        else:
            args.append(a)  # (the user's node: errors about it are located)
    if not spreads:
        return node
    if args:  # (`act(x, **kw)` of no keywords: `act(x)`)
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    out = node.with_changes(args=args)
    if node in src.positions:  # (errors about the call are located at the user's)
        src.positions[out] = src.positions[node]
    return out


def literal_held(fdef: cst.FunctionDef, name: str, keyed: bool) -> list[int] | list[str] | None:
    """The positions (``keyed``: the keys) of the tuple or list (dict) literal ``name`` holds in ``fdef``: bound
    there once, to that literal, and never changed (no method called, no item assigned), so its length (keys) is
    the literal's wherever it is read. None: not such a name."""
    bound: list[cst.CSTNode] = []
    for n in walk(fdef):
        if isinstance(n, cst.Param) and n.name.value == name or \
                isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == name or \
                isinstance(n, cst.Arg) and not n.star and isinstance(n.value, cst.Name) and n.value.value == name:
            return None  # (a parameter; `xs.append(v)`; `grow(xs)`, which may change it)
        if isinstance(n, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)):
            t = n.target
            if isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and t.value.value == name:
                return None  # (`kw["s"] = v`)
            if name in target_names(t):
                bound.append(n)
        elif isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.AsName)) and \
                isinstance(named := getattr(n, "name", None), cst.Name) and named.value == name:
            return None
    if len(bound) != 1 or not isinstance(bound[0], cst.AssignTarget) or not isinstance(bound[0].target, cst.Name):
        return None
    value = next((s.value for s in walk(fdef) if isinstance(s, cst.Assign) and bound[0] in s.targets), None)
    if keyed and isinstance(value, cst.Dict):
        keys = [e.key.evaluated_value if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                else None for e in value.elements]
        return keys if all(isinstance(k, str) and k.isidentifier() for k in keys) else None  # type: ignore[return-value]
    if not keyed and isinstance(value, (cst.Tuple, cst.List)) and all(
            isinstance(e, cst.Element) for e in value.elements):
        return list(range(len(value.elements)))
    return None


def _assigned(fdef: cst.FunctionDef, name: str) -> bool:
    """Whether ``fdef``'s body binds ``name`` (an assignment, a loop or ``with`` target, a nested def)."""
    for n in walk(fdef.body):
        targets: list[cst.BaseExpression] = []
        if isinstance(n, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)):
            targets = [n.target]
        elif isinstance(n, (cst.For, cst.CompFor)):
            targets = [n.target]
        elif isinstance(n, cst.AsName):
            targets = [n.name]  # type: ignore[list-item]
        elif isinstance(n, (cst.FunctionDef, cst.ClassDef)) and n.name.value == name:
            return True
        if any(name in target_names(t) for t in targets):
            return True
    return False
