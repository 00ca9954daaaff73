"""``functools.partial`` objects as functions srcjax reads (issue #18).

``srcjax.jit(partial(loss, w, n=3))``, ``grad``, ``vmap``, ``jacrev``... of a partial transform the
function with JAX's meaning: the arguments bound positionally and by keyword are constants of the
program (a bound array is closed over; a bound int is a Python value, usable as a shape), ``argnums``
and ``in_axes`` count the partial's remaining parameters, and a keyword bound by the partial may be
passed again in a call (it is the parameter's default). The partial becomes a short generated
function with its signature (``inspect.signature`` of the partial) calling the partial's function::

    def loss_partial(x, *, n=n):
        return loss(w, x, n=n)

in a namespace holding ``loss`` and the bound values by the names of the parameters they bind, so
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
import weakref
from typing import Any

from .core import ArgumentError
from .generated import forget_module, load_module
from .lifetimes import PerFunction

__all__ = ["as_function"]

_WRITTEN: PerFunction[Any] = PerFunction("partial")  # partial -> its generated function
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
    """A value the generated source writes as itself (``n=3``), the same value read back."""
    t = type(v)
    return v is None or t is bool or t is int or t is str or (t is float and math.isfinite(v))


def as_function(p: functools.partial[Any]) -> Any:
    """The generated function standing for ``p`` (made once per partial)."""
    hit = _WRITTEN.get(p)
    if hit is None:
        hit = _WRITTEN.set(p, None, _write(p))
    return hit


def _write(p: functools.partial[Any]) -> Any:
    func = p.func
    if isinstance(func, functools.partial):  # (Python flattens partials of plain partials; a subclass may not)
        func = as_function(func)
    try:
        sig = inspect.signature(p)
        inner = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError) as e:
        raise ArgumentError(f"cannot transform {p!r}: its signature is unknown ({e})",
                            hint="wrap it in a function: def f(x): return g(x, ...)") from None
    callee = _function_name(func)
    remaining = list(sig.parameters.values())
    taken = {prm.name for prm in remaining} | {callee}
    ns: dict[str, Any] = {"__name__": getattr(func, "__module__", None) or __name__, callee: func}

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
    params, call = [], list(bound)
    for prm in remaining:
        if prm.default is not prm.empty:
            if _literal(prm.default):
                prm = prm.replace(default=_Name(repr(prm.default)))
            else:
                name = prm.name if prm.name not in ns else fresh(f"{prm.name}_default")
                ns[name] = prm.default
                prm = prm.replace(default=_Name(name))
        params.append(prm.replace(annotation=prm.empty))
        if prm.kind in (prm.POSITIONAL_ONLY, prm.POSITIONAL_OR_KEYWORD):
            call.append(prm.name)
        elif prm.kind == prm.VAR_POSITIONAL:
            call.append(f"*{prm.name}")
        elif prm.kind == prm.KEYWORD_ONLY:
            call.append(f"{prm.name}={prm.name}")
        else:
            call.append(f"**{prm.name}")
    name = fresh(f"{callee}_partial")
    text = (f"def {name}{sig.replace(parameters=params, return_annotation=sig.empty)}:\n"
            f"    return {callee}({', '.join(call)})\n")
    filename = f"<srcjax.partial of {getattr(func, '__qualname__', callee)} #{next(_COUNTER)}>"
    code = load_module(filename, text, {})
    exec(code, ns)  # noqa: S102 - srcjax's own text
    fn = ns[name]
    fn.__srcjax_partial__ = weakref.ref(p)
    weakref.finalize(fn, forget_module, filename)
    return fn
