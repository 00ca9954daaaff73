"""Keyword calls of a compiled function bound to positional ones for jaxlib's C++ dispatcher (``cpp_calls.py``).

jaxlib's C++ side flattens a call's positional arguments, then its keyword ones sorted by name
(``parse_arguments``): a keyword call whose names sorted are the parameters' order, none left out, is
the positional call it binds to (:func:`positional`); any other form is bound in front of the dispatcher
by one generated function (:func:`binder`) following :func:`binding_plan`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["NUMBERS", "binder", "binding_plan", "positional"]

NUMBERS = frozenset((float, int, bool, complex))


def positional(c: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    """The positional form of a call of ``c`` passing ``kwargs`` by keyword, where the parameters right
    after the positional ones are passed by keyword (those after them left out), or None (a gap, another
    name: the Python path binds such calls, and raises srcjax's errors). The C++ side flattens a keyword
    call's leaves as the positional one's where none is left out and the names sorted are in the
    parameters' order (jaxlib sorts keyword arguments by name: ``parse_arguments``)."""
    rest = c.params[len(args):len(args) + len(kwargs)]
    if len(rest) != len(kwargs):
        return None
    try:
        return args + tuple(kwargs[n] for n in rest)
    except KeyError:
        return None


def binding_plan(c: Any, n_args: int, kwargs: dict[str, Any], static: tuple[int, ...],
                 defaults: dict[int, Any]) -> tuple[tuple[str | None, Any], ...] | None:
    """How a call of ``c`` with ``n_args`` positional arguments and the keywords ``kwargs`` binds to a
    positional call of all its parameters: for each parameter after the positional ones, ``(name, None)``
    (passed by that keyword) or ``(None, default)``: a default that is a Python number as a weak-typed
    device array uploaded once (kept in ``defaults``; the Python path keys it as the number: ``attach``'s
    ``plain``), a static parameter's as it is (keyed by value). None where the call does not bind so (a
    name that is not a parameter after the positional ones, a parameter without a default, another kind
    of default): the C++ side then hands it to srcjax's Python path, which binds it or raises its error."""
    params = c.params
    if n_args > c._nparams or not set(kwargs) <= set(params[n_args:]):
        return None
    plan: list[tuple[str | None, Any]] = []
    for i in range(n_args, c._nparams):
        name = params[i]
        if name in kwargs:
            plan.append((name, None))
            continue
        d = defaults.get(i)
        if d is None:
            v = c.signature.parameters[name].default
            if v is inspect.Parameter.empty:
                return None
            if i in static:
                d = v
            elif type(v) in NUMBERS:
                from .arguments import _uploadable  # (device_put's leaf check: api imports this module)
                from .runtime import device_put as upload
                from .runtime import get_backend, wrap

                leaf, aval = _uploadable(v)  # (a Python number: its weak-typed value and aval)
                d = wrap(upload(leaf, aval, get_backend(c.device if isinstance(c.device, str) else None)), aval)
            else:
                return None
            defaults[i] = d
        plan.append((None, d))
    return tuple(plan)


def binder(plan: tuple[tuple[str | None, Any], ...]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """A function of a call's keyword arguments giving the arguments after the positional ones, in the
    parameters' order, as ``plan`` (:func:`binding_plan`) says: written once per call form, so that a call
    costs one frame and a tuple."""
    items = ", ".join(f"kw[{n!r}]" if n is not None else f"D[{j}]" for j, (n, _) in enumerate(plan))
    scope: dict[str, Any] = {"D": tuple(d for _, d in plan)}
    exec(compile(f"def bind(kw, D=D):\n    return ({items},)", "<srcjax keyword binding>", "exec"), scope)
    return scope["bind"]  # type: ignore[no-any-return]
