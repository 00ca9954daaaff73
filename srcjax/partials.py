"""``functools.partial`` objects as functions srcjax reads (issue #18).

``srcjax.jit(partial(loss, w, n=3))``, ``grad``, ``vmap``, ``jacrev``... of a partial transform the
function with JAX's meaning: the arguments bound positionally and by keyword are constants of the
program (a bound array is closed over; a bound int is a Python value, usable as a shape), ``argnums``
and ``in_axes`` count the partial's remaining parameters. A keyword the partial binds is a constant of
the call too, not a parameter (``vmap`` maps no bound argument; passing it again is an ``ArgumentError``,
where JAX's ``jit`` would take the new value: never silently another value). The partial becomes a
short generated function with the partial's other parameters calling the partial's function::

    def loss_partial(x, *, scale=1.0):
        return loss(w, x, n=3, scale=scale)

in a namespace holding ``loss`` and the bound values that are not literals by the names of the
parameters they bind, so
``srcjax.source`` shows that function and the user's. A partial of a partial, or of a srcjax-
transformed function, is such a call too (the front end reads a call of either). The function is
made once per partial object and dies with it (:class:`lifetimes.PerFunction`).
"""

from __future__ import annotations

import functools
import inspect
import itertools
import keyword
import math
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .core import ArgumentError
from .generated import forget_module, load_module
from .lifetimes import PerFunction

__all__ = ["as_function", "bound_method"]

_WRITTEN: PerFunction[Any] = PerFunction("partial")  # partial -> its generated function
_BOUND: PerFunction[Any] = PerFunction("bound method")  # a bound method (by equality: function, object) -> partial
_COUNTER = itertools.count()


class _Name:
    """A default value printed as the name that holds it in the generated module."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


def _function_name(fn: Any) -> str:
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return name if name.isidentifier() and not keyword.iskeyword(name) else "function"


def _literal(v: Any) -> bool:
    """A value the generated source writes as itself (``n=3``, ``shape=(2, 3)``), the same value read back."""
    t = type(v)
    if t is tuple:
        return all(_literal(x) for x in v)
    return v is None or t is bool or t is int or t is str or (t is float and math.isfinite(v))


def as_function(p: functools.partial[Any], callee: Callable[[Any], Any] = lambda f: f) -> Any:
    """The generated function standing for ``p`` (made once per partial); ``callee(p.func)``: what it calls
    (``api._wrapped_numpy``: a NumPy function as a one-line function srcjax reads)."""
    hit = _WRITTEN.get(p)
    if hit is None:
        hit = _WRITTEN.set(p, None, _write(p, callee))
    return hit


def bound_method(m: Any, callee: Callable[[Any], Any] = lambda f: f) -> Any:
    """``srcjax.jit(Model().loss)``, ``srcjax.grad(m.loss)``: a method bound to an object (not a class), as JAX
    reads it: the partial of its function with the object bound, a constant of the program (its attributes read
    when the function is transformed); anything else unchanged."""
    if not isinstance(m, types.MethodType) or not isinstance(m.__func__, types.FunctionType) \
            or isinstance(m.__self__, type):
        return m
    p = _BOUND.get(m)  # (one partial per method and object: `m.loss` is a new object at each access, equal to
    if p is None:  # the last one; a new partial would be a new generated function, transformed again at each call)
        p = _BOUND.set(m, None, functools.partial(m.__func__, m.__self__))
    return as_function(p, callee)


def _write(p: functools.partial[Any], convert: Callable[[Any], Any]) -> Any:
    func = p.func
    if isinstance(func, functools.partial):  # (Python flattens partials of plain partials; a subclass may not)
        func = as_function(func, convert)
    func = bound_method(func, convert)  # (`partial(Model().apply, n=2)`: the method's own generated function)
    module = getattr(func, "__module__", None)
    plain = convert(func)  # (a NumPy function: a one-line function calling it, with its parameters' names)
    try:
        sig = inspect.signature(functools.partial(plain, *p.args, **p.keywords))
        inner = list(inspect.signature(plain).parameters.values())
    except (TypeError, ValueError) as e:
        raise ArgumentError(f"cannot transform {p!r}: its signature is unknown ({e})",
                            hint="wrap it in a function: def f(x): return g(x, ...)") from None
    callee = _function_name(plain)
    remaining = list(sig.parameters.values())
    taken = {prm.name for prm in remaining} | {callee, "np"}
    ns: dict[str, Any] = {"__name__": module if isinstance(module, str) and plain is func else "partial",
                          callee: func, "np": np}
    target = callee
    if plain is not func:  # (called as itself, np.add(...), where srcjax reads it as NumPy's)
        ns.pop(callee)
        target = plain.__srcjax_numpy__

    def fresh(base: str) -> str:
        name, k = base, 1
        while name in taken or keyword.iskeyword(name):
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        return name

    bound = []  # the positionally bound values, in order: literals, or the names that hold them
    positional = [prm for prm in inner if prm.kind in (prm.POSITIONAL_ONLY, prm.POSITIONAL_OR_KEYWORD)]
    for i, v in enumerate(p.args):
        if _literal(v):
            bound.append(repr(v))
            continue
        name = fresh(positional[i].name if i < len(positional) else f"arg{i}")
        ns[name] = v
        bound.append(name)
    params, call, kw_call = [], list(bound), []
    for k, v in p.keywords.items():  # (constants of the call, as the positional ones: vmap maps none of them)
        if _literal(v):
            kw_call.append(f"{k}={v!r}")
            continue
        const = k if k not in ns else fresh(k)
        ns[const] = v
        kw_call.append(f"{k}={const}")
    by_keyword = False  # (a parameter left out: those after it are passed by keyword, and only so)
    for prm in remaining:
        if prm.name in p.keywords:
            continue
        if prm.default is not prm.empty and not _literal(prm.default):
            # a default srcjax would have to write as a name (an array, a function): not a parameter of the
            # generated function (a derivative's module runs its `def` where that name is unknown): the
            # function's own default applies
            if prm.kind == prm.POSITIONAL_ONLY:
                raise ArgumentError(f"cannot transform {p!r}: its positional-only parameter {prm.name!r} has a "
                                    "default that is not a number or a string",
                                    hint="wrap it in a function: def f(x): return g(x, ...)")
            by_keyword = by_keyword or prm.kind == prm.POSITIONAL_OR_KEYWORD
            continue
        if prm.default is not prm.empty:
            prm = prm.replace(default=_Name(repr(prm.default)))
        if by_keyword and prm.kind != prm.KEYWORD_ONLY:
            if prm.kind != prm.POSITIONAL_OR_KEYWORD:
                raise ArgumentError(f"cannot transform {p!r}: {prm.name!r} comes after a parameter whose "
                                    "default is not a number or a string",
                                    hint="wrap it in a function: def f(x): return g(x, ...)")
            prm = prm.replace(kind=prm.KEYWORD_ONLY)
        params.append(prm.replace(annotation=prm.empty))
        if prm.kind in (prm.POSITIONAL_ONLY, prm.POSITIONAL_OR_KEYWORD):
            call.append(prm.name)
        elif prm.kind == prm.VAR_POSITIONAL:
            call.append(f"*{prm.name}")
        elif prm.kind == prm.KEYWORD_ONLY:
            kw_call.append(f"{prm.name}={prm.name}")
        else:
            kw_call.append(f"**{prm.name}")
    name = fresh(f"{callee}_partial")
    text = (f"def {name}{sig.replace(parameters=params, return_annotation=sig.empty)}:\n"
            f"    return {target}({', '.join(call + kw_call)})\n")
    filename = f"<srcjax.partial of {getattr(func, '__qualname__', callee)} #{next(_COUNTER)}>"
    code = load_module(filename, text, {})
    exec(code, ns)  # noqa: S102 - srcjax's own text
    fn = ns[name]
    fn.__srcjax_partial__ = weakref.ref(p)
    weakref.finalize(fn, forget_module, filename)
    return fn
