"""A helper's parameter spread in its body (``f(y, t, *args)``) and passed a tuple written at the call
(``rk4(f, y0, t, args=(alpha, beta))``, scipy's style): the copy of the helper for that length.

``*args`` of a parameter spreads a tuple whose length the helper's source does not say; the call does. As for a
``*args`` parameter (:mod:`.star_params`), each length gets its own copy of the helper (a *tuple variant*: the
same code object, ``__srcjax_tuple_params__`` naming the parameter and its elements' names), whose parameter is
spelled as that many keyword-only parameters ``args_0, args_1`` and bound first, ``args = (args_0, args_1)``, a
tuple as the caller's; the call passes the elements (``args_0=alpha, args_1=beta``). Every transformation then
sees plain parameters (derivatives with respect to ``alpha`` follow ``f(y, t, args_0, args_1)``). A parameter
the helper assigns again, or a value that is not a tuple or list display, is left (and refused as before).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import opcode
import types
from typing import Any

import libcst as cst

from ..core import TranspileError
from .function_copies import copy_function
from .names import walk
from .read import FunctionSource, read_function
from .star_params import TUPLE, _assigned, _is_docstring, _names  # (the same spelling as a *args copy)

_VARIANTS: dict[tuple[Any, ...], types.FunctionType] = {}
_TIGHT = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


_CALL_EX = opcode.opmap.get("CALL_FUNCTION_EX")


@functools.lru_cache(maxsize=4096)
def _calls_with_star(code: types.CodeType) -> bool:
    """``code`` (or a function nested in it) makes a call with ``*`` (``g(*args)``): read from its bytecode, so
    the functions that spread nothing (nearly all, srcjax's own helpers included) are never parsed here.
    (CPython 3.11+ writes 2-byte code units: the opcodes are the even bytes; an unknown opcode set reads all.)"""
    if _CALL_EX is None or _CALL_EX in code.co_code[::2]:
        return True
    return any(_calls_with_star(c) for c in code.co_consts if isinstance(c, types.CodeType))


def _spread_params(fn: types.FunctionType) -> list[str]:
    """The parameters ``fn``'s body spreads (``g(*args)``) and never assigns again."""
    if not _calls_with_star(fn.__code__):
        return []
    fdef = read_function(fn).fdef
    params = {p.name.value for p in (*fdef.params.posonly_params, *fdef.params.params, *fdef.params.kwonly_params)}
    spread = {a.value.value for a in walk(fdef.body) if isinstance(a, cst.Arg) and a.star == "*" and
              isinstance(a.value, cst.Name) and a.value.value in params}
    return sorted(p for p in spread if not _assigned(fdef, p))


def spreads(fn: Any) -> bool:
    """``fn`` (a user function) spreads one of its parameters (``g(*args)``): its calls name copies of it."""
    if not isinstance(fn, types.FunctionType) or getattr(fn, TUPLE, None) is not None or \
            fn.__code__.co_flags & inspect.CO_VARARGS:  # (a `*args` function is star_params')
        return False
    try:
        return bool(_spread_params(fn))
    except (TypeError, ValueError, OSError, TranspileError):
        return False


def _display(v: cst.BaseExpression) -> bool:
    return isinstance(v, (cst.Tuple, cst.List)) and all(isinstance(e, cst.Element) for e in v.elements)


def call_variant(node: cst.Call, fn: Any) -> tuple[cst.Call, Any]:
    """``(node, fn)`` with each tuple display passed for a parameter ``fn`` spreads given element by element to
    ``fn``'s tuple variant for those lengths; ``(node, fn)`` itself where there is none."""
    if not isinstance(fn, types.FunctionType) or getattr(fn, TUPLE, None) is not None or \
            any(a.star for a in node.args):
        return node, fn
    try:
        sig = inspect.signature(fn)
        spread = _spread_params(fn)
    except (TypeError, ValueError, OSError):
        return node, fn
    if not spread:
        return node, fn
    names = list(sig.parameters)
    lengths: dict[str, cst.Tuple | cst.List] = {}
    passed = set()
    for i, a in enumerate(node.args):
        p = a.keyword.value if a.keyword is not None else names[i] if i < len(names) else None
        passed.add(p)
        if p in spread and _display(a.value):
            lengths[p] = a.value  # type: ignore[assignment]
    for p in spread:  # (left to an empty default, `args=()`: no elements)
        if p not in passed and p in sig.parameters and sig.parameters[p].default in ((), []):
            lengths[p] = cst.Tuple([])
    if not lengths:
        return node, fn
    made = tuple_variant(fn, {p: len(v.elements) for p, v in lengths.items()})
    spelled = getattr(made, TUPLE)
    args: list[cst.Arg] = []
    for i, a in enumerate(node.args):
        p = a.keyword.value if a.keyword is not None else names[i]
        if p in lengths:
            args += [cst.Arg(e.value, keyword=cst.Name(m), equal=_TIGHT)
                     for m, e in zip(spelled[p], lengths[p].elements)]
        else:
            args.append(a)
    if any(a.keyword is not None for a in args):  # (positional arguments first)
        args = [a for a in args if a.keyword is None] + [a for a in args if a.keyword is not None]
    return node.with_changes(args=[a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args]), made


def tuple_variant(fn: types.FunctionType, lengths: dict[str, int]) -> types.FunctionType:
    """The copy of ``fn`` whose parameters ``lengths`` are spelled as that many keyword-only parameters."""
    key = (fn, *sorted(lengths.items()))
    hit = _VARIANTS.get(key)
    if hit is not None:
        return hit
    made = copy_function(fn)
    # (named for its lengths, `euler_args2`: a caller's temporary named after one copy never takes another's name)
    made.__name__ = fn.__name__ + "".join(f"_{p}{n}" for p, n in sorted(lengths.items()))
    spelled = {p: tuple(_names(fn, p, n)) for p, n in lengths.items()}
    setattr(made, TUPLE, spelled)
    sig = inspect.signature(fn)
    kept = [q for q in sig.parameters.values() if q.name not in lengths]
    new = [inspect.Parameter(m, inspect.Parameter.KEYWORD_ONLY) for p in lengths for m in spelled[p]]
    at = next((i for i, q in enumerate(kept) if q.kind in (q.KEYWORD_ONLY, q.VAR_KEYWORD)), len(kept))
    made.__signature__ = sig.replace(parameters=kept[:at] + new + kept[at:])  # type: ignore[attr-defined]
    _VARIANTS[key] = made
    return made


def expand(src: FunctionSource) -> FunctionSource:
    """``src`` of a tuple variant with each spread parameter spelled as its elements (keyword-only) and the tuple
    bound first; else ``src``."""
    spelled: dict[str, tuple[str, ...]] | None = getattr(src.fn, TUPLE, None)
    if not spelled:
        return src
    fdef = src.fdef
    ps = fdef.params
    positional = [p for p in ps.params if p.name.value not in spelled]
    kwonly = [p for p in ps.kwonly_params if p.name.value not in spelled]
    new = [cst.Param(cst.Name(m)) for p in spelled for m in spelled[p]]
    clean = ps.with_changes(params=[p.with_changes(comma=cst.MaybeSentinel.DEFAULT) for p in positional],
                            kwonly_params=[p.with_changes(comma=cst.MaybeSentinel.DEFAULT) for p in new + kwonly],
                            star_arg=ps.star_arg if isinstance(ps.star_arg, cst.Param) or not new + kwonly
                            else cst.ParamStar())
    binds = [cst.parse_statement(f"{p} = (" + ", ".join(ms) + ("," if len(ms) == 1 else "") + ")\n")
             for p, ms in spelled.items()]
    body = fdef.body
    assert isinstance(body, cst.IndentedBlock)
    stmts = list(body.body)
    k = 1 if stmts and _is_docstring(stmts[0]) else 0
    fdef = fdef.with_changes(params=clean, body=body.with_changes(body=[*stmts[:k], *binds, *stmts[k:]]))
    return dataclasses.replace(src, fdef=fdef)


def spelled_names(fn: Any) -> dict[str, tuple[str, ...]]:
    """The parameters a tuple variant spells element by element (for ``g(*args)`` in it)."""
    return dict(getattr(fn, TUPLE, None) or {})
