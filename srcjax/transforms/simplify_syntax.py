"""Syntax the simplifier (:mod:`.simplify`) reads: how often a function binds and reads each name,
literal indices and slices, containers. Pure functions of :mod:`ast` nodes."""

from __future__ import annotations

import ast
from collections import Counter
from typing import Any

from ..frontend.ast_walk import AST_CLASSES, exact_kinds, walked

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)
_SCOPE_KINDS = exact_kinds(*_SCOPES)  # (for exact-type tests: ``type(n) in _SCOPE_KINDS``)
# helper -> the positions of the arguments it reads only for their shape and dtype
SHAPE_ARGS = {"unbroadcast": (1,), "broadcast_like": (1,), "expand_reduced": (1,), "reduced_size": (0,),
              "ones_like": (0,), "zeros_like": (0,)}


def checks(call: ast.Call) -> int:
    """Whether ``call`` is a check made while specializing, kept whether or not its value is read: 2 for
    ``in_place(x, new, alias=...)`` (refused where NumPy's change reaches a value read later,
    frontend/item_views.py), 1 for ``in_place(x, new)`` (refused where ``new`` does not fit ``x``'s shape or
    dtype, as NumPy's ``x op= v``: dead only where the simplifier proves it fits), else 0. A dead ``r =
    in_place(r, add, alias="t[0]")`` dropped ran where NumPy's ``t`` changes: the old value, silently;
    frontend/functionalize.py keeps a branch holding one for the same reason."""
    f = call.func
    if f.__class__ is not ast.Name or f.id != "in_place":  # type: ignore[attr-defined]
        return 0
    return 2 if any(k.arg == "alias" for k in call.keywords) else 1


def _binds(fdef: ast.FunctionDef) -> Counter[str]:
    """How many times each name is bound in ``fdef``: twice for a binding inside a loop or a
    nested scope (comprehension, lambda, def), so only names bound once at top level count 1."""
    out: Counter[str] = Counter()
    a = fdef.args
    for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, *([a.vararg] if a.vararg else []),
              *([a.kwarg] if a.kwarg else [])]:
        out[p.arg] += 1

    # (a loop over a stack, not a recursive visit over ``ast.iter_child_nodes``: 4 of a hessian's first
    # call's functions, ~2 ms; only the counts matter, not the order)
    todo: list[tuple[Any, int]] = [(st, 1) for st in fdef.body]
    pop, push = todo.pop, todo.append
    name_t, load_t, nodes = ast.Name, ast.Load, AST_CLASSES
    while todo:
        node, w = pop()
        t = type(node)
        if t is name_t:
            if type(node.ctx) is not load_t:
                out[node.id] += w
            continue
        if t in _BINDERS:
            _bound_by(node, out)
        if t in _DEEPER:
            w = 2
        d = node.__dict__  # (a parsed tree's fields: no getattr or isinstance call per field)
        for f in node._fields:
            v: Any = d[f] if f in d else None
            c = v.__class__
            if c is list:
                for x in v:
                    if x.__class__ in nodes:
                        push((x, w))
            elif c in nodes:
                push((v, w))
    return out


_DEEPER = frozenset({ast.For, ast.AsyncFor, ast.While, *_SCOPES})  # a binding inside counts twice
_BINDERS = frozenset({ast.arg, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Global, ast.Nonlocal,
                      ast.alias, ast.ExceptHandler, ast.MatchAs, ast.MatchStar, ast.MatchMapping})


def _bound_by(node: Any, out: Counter[str]) -> None:
    """The names a node other than a ``Name`` binds (twice: never a plain top-level binding)."""
    if isinstance(node, ast.arg):
        out[node.arg] += 2
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        out[node.name] += 2
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        for n in node.names:
            out[n] += 2
    elif isinstance(node, ast.alias):
        out[(node.asname or node.name).split(".")[0]] += 2
    elif isinstance(node, ast.ExceptHandler) and node.name:
        out[node.name] += 2
    elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        out[node.name] += 2
    elif isinstance(node, ast.MatchMapping) and node.rest:
        out[node.rest] += 2


def _value_reads(fdef: ast.FunctionDef) -> Counter[str]:
    """How many times each name is read in ``fdef`` other than as an argument read for its shape."""
    shape_only: set[int] = set()
    call_t, name_t, load_t = ast.Call, ast.Name, ast.Load  # (exact types: no class derives from these)
    for n in walked(fdef):
        if type(n) is call_t and type(n.func) is name_t:  # type: ignore[attr-defined]
            shape_only |= {id(n.args[k]) for k in SHAPE_ARGS.get(n.func.id, ())  # type: ignore[attr-defined]
                           if k < len(n.args)}  # type: ignore[attr-defined]
    return Counter(n.id for n in walked(fdef)  # type: ignore[attr-defined]
                   if type(n) is name_t and type(n.ctx) is load_t and id(n) not in shape_only)  # type: ignore[attr-defined]


def _none_false(axis: ast.expr, keepdims: ast.expr) -> bool:
    """Whether ``axis, keepdims`` are ``None, False`` (a full reduction's cotangent)."""
    return isinstance(axis, ast.Constant) and axis.value is None and \
        isinstance(keepdims, ast.Constant) and keepdims.value is False


def _container(node: ast.expr) -> bool:
    """A literal that is not a number (``[x] * 2`` repeats a list, ``"%d" % n`` formats)."""
    return isinstance(node, (ast.List, ast.Tuple, ast.ListComp, ast.JoinedStr)) or \
        isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))


def _literal(node: ast.expr) -> Any:
    """A static literal (int, or tuple of ints) as a key; None when not one."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) is int:
        return -node.operand.value
    if isinstance(node, ast.Tuple):
        items = [_literal(e) for e in node.elts]
        return None if any(i is None for i in items) else tuple(items)
    return None


def _np_s(e: ast.expr) -> ast.expr | None:
    """``i`` of ``np.s_[i]`` (an index written through NumPy's index maker); else None."""
    if type(e) is ast.Subscript:
        v = e.value  # type: ignore[attr-defined]
        if type(v) is ast.Attribute and v.attr == "s_" and type(v.value) is ast.Name and v.value.id == "np":
            return e.slice  # type: ignore[attr-defined,no-any-return]
    return None


def _slices_only(s: ast.expr) -> bool:
    """``x[1:]``, ``x[:, 0]``: an index that takes no item of a container (a slice of a tuple is a
    tuple; a tuple index fails on one), so it keeps an array's dtype or gives a non-number."""
    return isinstance(s, ast.Tuple) and len(s.elts) > 1 or isinstance(s, ast.Slice) or \
        isinstance(s, ast.Constant) and s.value in (None, Ellipsis)


def _slice_delta(s: ast.expr) -> int | None:
    """For ``x[lo:hi]`` with literal ``lo >= 0`` and ``hi < 0`` (either may be absent), the
    length along axis 0 is ``max(0, len(x) + hi - lo)``: ``hi - lo`` (0 for ``x[:]``)."""
    if not isinstance(s, ast.Slice) or s.step is not None:
        return None
    lo = 0 if s.lower is None else _literal(s.lower)
    hi = 0 if s.upper is None else _literal(s.upper)
    if type(lo) is not int or type(hi) is not int or lo < 0 or hi > 0 or (s.upper is not None and hi == 0):
        return None
    return hi - lo
