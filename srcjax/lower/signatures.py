"""Program functions' signatures for :meth:`Specializer.call_function`, remembered per function.

``inspect.signature`` and ``Signature.bind`` cost ~10-20 us a call; a specialized program calls its
functions and srcjax's helpers a few hundred times. The signature is kept while the function's defaults
stay the same objects, with its parameters' names where every one is positional: a call that gives each
of them positionally (most calls) binds them in order without ``bind`` (the same mapping ``bind`` makes).
Those names of a plain Python function are read off its code (:func:`plain_names`): ``inspect.signature``
runs only for a call that does not give them all positionally.
"""

from __future__ import annotations

import inspect
import types
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["plain_names", "signature_of"]

_SIGNATURES: weakref.WeakKeyDictionary[Any, tuple[Any, Any, inspect.Signature, tuple[str, ...] | None]] = \
    weakref.WeakKeyDictionary()
_PLAIN = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _plain(sig: inspect.Signature) -> tuple[str, ...] | None:
    """The parameters' names when every one is positional (no ``*args``, ``**kw`` or keyword-only): a call
    giving each of them positionally binds them in order, as ``sig.bind`` would (its defaults unused)."""
    params = sig.parameters.values()
    return tuple(p.name for p in params) if all(p.kind in _PLAIN for p in params) else None


def signature_of(fn: Callable[..., Any]) -> tuple[inspect.Signature, tuple[str, ...] | None]:
    """``inspect.signature(fn)`` and its :func:`_plain` names, remembered while ``fn``'s defaults stay the
    same objects."""
    defaults, kwdefaults = getattr(fn, "__defaults__", None), getattr(fn, "__kwdefaults__", None)
    try:
        hit = _SIGNATURES.get(fn)
    except TypeError:  # not weakly referable
        sig = inspect.signature(fn)
        return sig, _plain(sig)
    if hit is not None and hit[0] is defaults and hit[1] is kwdefaults:
        return hit[2], hit[3]
    sig = inspect.signature(fn)
    plain = _plain(sig)
    _SIGNATURES[fn] = (defaults, kwdefaults, sig, plain)
    return sig, plain


_NOT_PLAIN = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def plain_names(fn: Callable[..., Any]) -> tuple[str, ...] | None:
    """``signature_of(fn)[1]``; for a Python function that ``inspect.signature`` reads from its code alone (no
    ``__wrapped__`` or ``__signature__`` set on it), read off its code here: its positional parameters
    unless it has ``*args``, ``**kw`` or keyword-only parameters."""
    if type(fn) is types.FunctionType:
        d = fn.__dict__
        if "__wrapped__" not in d and "__signature__" not in d:
            code = fn.__code__
            if code.co_flags & _NOT_PLAIN or code.co_kwonlyargcount:
                return None
            return code.co_varnames[:code.co_argcount]
    return signature_of(fn)[1]
