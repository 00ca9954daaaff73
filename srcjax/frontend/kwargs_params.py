"""Helpers with a ``**kwargs`` parameter: ``def layer(x, **kw): return act(x, **kw)``.

JAX traces such a helper with the keywords a call passes; srcjax writes source, so each set of keywords that
calls pass to ``**kw`` gets its own copy of the helper (a *keywords variant*: the same code object, the keywords
in ``__srcjax_kwargs__``) whose ``**kw`` is spelled as keyword-only parameters of those names, the body starting
with ``kw = {"slope": slope, "scale": scale}``: a dict, as Python makes it (:func:`expand`). A ``**kw`` passed on
in the body (``act(x, **kw)``) is spelled as the keywords themselves (``act(x, slope=slope, scale=scale)``:
:func:`spread_names`), so the callee binds them by Python's rules. Every transformation then sees plain
parameters. A keyword whose name the helper uses for something else (a local, a global it reads) keeps the
refusal: the parameter would change what that name means in the body.

Prerequisite: :mod:`star_params` (a helper with both ``*args`` and ``**kwargs`` is a keywords variant first,
then a star variant of it, which keeps the keyword-only parameters).
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from typing import Any

import libcst as cst

from .function_copies import copy_function
from .read import FunctionSource

KWARGS = "__srcjax_kwargs__"
_VARIANTS: dict[tuple[Any, tuple[str, ...]], types.FunctionType] = {}


def kwargs_parameter(fn: Any) -> inspect.Parameter | None:
    """The ``**kwargs`` parameter of the plain Python function ``fn`` (None: it has none, or is a variant)."""
    if not isinstance(fn, types.FunctionType) or getattr(fn, KWARGS, None) is not None or \
            not fn.__code__.co_flags & inspect.CO_VARKEYWORDS:
        return None
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return next((p for p in params if p.kind == p.VAR_KEYWORD), None)


def call_variant(fn: Any, node: cst.Call) -> types.FunctionType | None:
    """The keywords variant of ``fn`` that ``node`` calls (its keywords that no named parameter takes), or None:
    ``fn`` has no ``**kwargs``, the call spreads ``**`` itself, or a keyword's name means something else in
    ``fn``'s body."""
    p = kwargs_parameter(fn)
    if p is None or any(a.star == "**" for a in node.args):
        return None
    named = set(inspect.signature(fn).parameters) - {p.name}
    keys = tuple(a.keyword.value for a in node.args if a.keyword is not None and a.keyword.value not in named)
    code = fn.__code__
    used = set(code.co_varnames) | set(code.co_names) | set(code.co_cellvars) | set(code.co_freevars)
    if any(k in used for k in keys):
        return None
    key = (fn, keys)
    hit = _VARIANTS.get(key)
    if hit is None:
        hit = _VARIANTS[key] = copy_function(fn)
        setattr(hit, KWARGS, (p.name, keys))
        hit.__srcjax_kwargs_of__ = fn  # type: ignore[attr-defined]  # (the function it is a copy of)
        params = [q for q in inspect.signature(fn).parameters.values() if q.kind != q.VAR_KEYWORD]
        hit.__signature__ = inspect.signature(fn).replace(  # type: ignore[attr-defined]
            parameters=params + [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY) for k in keys])
    return hit


def expand(src: FunctionSource) -> FunctionSource:
    """``src`` of a keywords variant with its ``**kw`` spelled as keyword-only parameters, the dict bound
    first; else ``src``."""
    held = _held(src.fn)
    if held is None:
        return src
    name, keys = held
    fdef = src.fdef
    params = fdef.params
    kwonly = [*params.kwonly_params, *(cst.Param(cst.Name(k)) for k in keys)]
    kwonly = [q.with_changes(comma=cst.MaybeSentinel.DEFAULT) for q in kwonly]
    star = params.star_arg if isinstance(params.star_arg, cst.Param) else cst.ParamStar() if kwonly else \
        cst.MaybeSentinel.DEFAULT
    positional = list(params.params)
    if positional and star is cst.MaybeSentinel.DEFAULT:  # (`def layer(x, **kw)` called with no keyword)
        positional[-1] = positional[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    clean = params.with_changes(params=positional, kwonly_params=kwonly, star_kwarg=None, star_arg=star)
    entries = ", ".join(f'"{k}": {k}' for k in keys)
    bind = cst.parse_statement(f"{name} = {{{entries}}}\n")
    body = fdef.body
    assert isinstance(body, cst.IndentedBlock)
    stmts = list(body.body)
    first = stmts[0] if stmts else None
    k = 1 if isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1 and \
        isinstance(first.body[0], cst.Expr) and isinstance(first.body[0].value, cst.SimpleString) else 0
    fdef = fdef.with_changes(params=clean, body=body.with_changes(body=[*stmts[:k], bind, *stmts[k:]]))
    return dataclasses.replace(src, fdef=fdef)


def spread_names(fn: Any) -> dict[str, tuple[str, ...]]:
    """``{kw: keys}`` of the keywords variant ``fn`` (a ``**kw`` passed on is those keywords), else empty."""
    held = _held(fn)
    return {} if held is None else {held[0]: held[1]}


def _held(fn: Any) -> tuple[str, tuple[str, ...]] | None:
    """``(kw, keys)`` of a keywords variant, or of a star variant of one (``def f(x, *a, **kw)``)."""
    return getattr(fn, KWARGS, None) or getattr(getattr(fn, "__srcjax_star_of__", None), KWARGS, None)
