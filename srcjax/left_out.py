"""Calls that leave out parameters with defaults (issue #18): their arguments completed as binding does.

``f(x)`` of ``def f(x, eps=1e-3)`` took srcjax's full path on every call (``inspect``'s binding, then keying
every argument: ~10 us), where ``f(x, 1e-3)`` takes the cache-hit path. :func:`filled` gives the positional
arguments with the defaults they leave out, the values binding gives, so both calls take that path and the
same program. Only defaults that are Python numbers, strings or None are filled in: a function (a
derivative binds function-valued arguments, ``autodiff.py``) or an array keeps the full path.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["default_constant", "filled"]

_PLAIN = frozenset((float, int, bool, complex, str, type(None)))


def filled(c: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` (a call's positional arguments, without keywords) of ``c`` (an ``api.Compiled``) with the
    defaults of the parameters they leave out, or ``args`` as they are (nothing left out, a parameter
    without a default, a default that is not plain, a signature with other kinds of parameters)."""
    left_out = c._nparams - len(args)
    if left_out <= 0 or not c._simple:
        return args
    sig, tail = c._defaults
    if sig is not c.signature:  # (a derivative's signature is set after Compiled.__init__: autodiff.py)
        sig = c.signature
        tail = ()
        for p in reversed(sig.parameters.values()):
            if p.default is p.empty or type(p.default) not in _PLAIN:
                break
            tail = (p.default, *tail)
        c._defaults = (sig, tail)
    if left_out > len(tail):
        return args
    return args + tail[len(tail) - left_out:]


def default_constant(signature: inspect.Signature, name: str, v: Any) -> Any:
    """A hashable copy of ``v``, the value of parameter ``name``, where it is a container (dict, list, tuple) of
    Python numbers, strings and None that the call left at its default: JAX traces no default, so it is a
    constant of the program (``if cfg["l1"]:`` decided while tracing), keyed by its contents; None: anything
    else (a container passed by the caller holds run-time values)."""
    p = signature.parameters.get(name)
    if p is None or p.default is not v:
        return None

    def frozen(x: Any) -> Any:
        if isinstance(x, dict):
            return ("dict", tuple((k, frozen(x[k])) for k in x))
        if isinstance(x, (list, tuple)):
            return (type(x).__name__, tuple(frozen(e) for e in x))
        if type(x) in _PLAIN:
            return x
        raise TypeError(type(x).__name__)
    try:
        return frozen(v)
    except TypeError:
        return None
