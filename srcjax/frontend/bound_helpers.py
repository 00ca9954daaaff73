"""Helpers called with a function for a parameter: ``apply(np.tanh, x)``, ``layer(x, act=relu)``, or a
function default left to itself (``def layer(x, act=np.tanh)``).

JAX traces through such a call; srcjax writes source, so each such call gets its own copy of the helper with
the function parameters fixed (a *bound variant*: the same code object, the parameters named in
``__srcjax_bound__``): calls through the parameter are calls of the function (``Normalizer.bindings``, as
for an entry function called with a function argument), the parameter leaves the copy's signature and the
argument leaves the call. Every transformation then sees plain calls (vmap and derivatives of ``act(h)``
are those of ``np.tanh(h)``), and a second call with another function is another copy.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from .function_copies import copy_function

BOUND = "__srcjax_bound__"
# (helper, its bound names and the ids of their functions) -> (the copy, those functions: kept alive)
_VARIANTS: dict[tuple[Any, ...], tuple[types.FunctionType, tuple[Any, ...]]] = {}


def is_plain_function(v: Any) -> bool:
    """A Python function, or a NumPy function or ufunc: what a helper's parameter is fixed to."""
    if isinstance(v, type) or hasattr(v, "shape"):
        return False
    return isinstance(v, (types.FunctionType, types.BuiltinFunctionType, np.ufunc)) or \
        callable(v) and getattr(type(v), "__module__", "") == "numpy"


_VARIANT_ATTRS = ("__srcjax_tuple_params__", "__srcjax_star__", "__srcjax_star_of__", "__srcjax_kwargs__")


def bound_variant(fn: types.FunctionType, bound: dict[str, Any],
                  extras: dict[str, tuple[str, ...]] | None = None) -> types.FunctionType:
    """The copy of ``fn`` whose parameters ``bound`` are fixed to those functions (one per binding); ``extras``:
    keyword-only parameters it takes for the locals a fixed function reads (frontend/closure_bindings.py)."""
    key = (fn, *sorted((k, id(v)) for k, v in bound.items()), *sorted((extras or {}).items()))
    hit = _VARIANTS.get(key)
    if hit is not None:
        return hit[0]
    made = copy_function(fn)
    setattr(made, BOUND, dict(bound))
    for kept_attr in _VARIANT_ATTRS:  # (a tuple, star or keywords variant's parameters: what its source reads)
        if hasattr(fn, kept_attr):
            setattr(made, kept_attr, getattr(fn, kept_attr))
    made.__srcjax_bound_of__ = fn  # type: ignore[attr-defined]  # (the helper it is a copy of)
    sig = inspect.signature(fn)  # (what callers bind their arguments to: without the fixed parameters)
    kept = [p for p in sig.parameters.values() if p.name not in bound]
    if extras:  # (keyword-only, before a **kwargs)
        made.__srcjax_closure_params__ = dict(extras)  # type: ignore[attr-defined]
        new = [inspect.Parameter(m, inspect.Parameter.KEYWORD_ONLY) for names in extras.values() for m in names]
        at = next((i for i, p in enumerate(kept) if p.kind == p.VAR_KEYWORD), len(kept))
        kept = kept[:at] + new + kept[at:]
    made.__signature__ = sig.replace(parameters=kept)  # type: ignore[attr-defined]
    _VARIANTS[key] = (made, tuple(bound.values()))
    return made


def bound_names(fn: Callable[..., Any]) -> dict[str, Any] | None:
    """The parameters a bound variant fixes (None: not one)."""
    return getattr(fn, BOUND, None)


def call_bindings(fn: types.FunctionType, positional: list[tuple[bool, Any]],
                  keywords: dict[str, tuple[bool, Any]], rebound: set[str]) -> dict[str, Any]:
    """The parameters of ``fn`` a call fixes to functions: its arguments known statically to be functions
    (``(known, value)`` per positional and keyword argument), and function defaults it leaves alone; never
    one of ``rebound`` (assigned again in its body)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return {}
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return {}
    out: dict[str, Any] = {}
    for p, (known, v) in zip(params, positional):
        if p.kind == p.KEYWORD_ONLY:
            return {}
        if known and is_plain_function(v):
            out[p.name] = v
    passed = {p.name for p in params[:len(positional)]} | set(keywords)
    for name, (known, v) in keywords.items():
        if known and is_plain_function(v):
            out[name] = v
    for p in params:
        if p.name not in passed and p.default is not p.empty and is_plain_function(p.default):
            out[p.name] = p.default
    return {k: v for k, v in out.items() if k not in rebound}


def unbound_originals(functions: Any) -> set[Any]:
    """Of these normalized functions, the helpers that only bound copies of them are called as (normalized
    because a caller's body names them, never called: not printed)."""
    functions = list(functions)
    of = {getattr(nf.fn, "__srcjax_bound_of__", None) for nf in functions}
    dropped: set[Any] = set()
    while True:  # (an original called only by dropped ones is dropped too)
        called = {c for nf in functions if nf.fn not in dropped for c in nf.calls}
        more = {nf.fn for nf in functions if nf.fn in of and nf.fn not in called} - dropped
        if not more:
            return dropped
        dropped |= more
