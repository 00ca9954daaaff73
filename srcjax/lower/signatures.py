"""Program functions' signatures for :meth:`Specializer.call_function`, remembered per function.

``inspect.signature`` and ``Signature.bind`` cost ~10-20 us a call; a specialized program calls its
functions and srcjax's helpers a few hundred times. The signature is kept while the function's defaults
stay the same objects, with its parameters' names where every one is positional: a call that gives each
of them positionally (most calls) binds them in order without ``bind`` (the same mapping ``bind`` makes).
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["signature_of"]

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
