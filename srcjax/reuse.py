"""Transformed objects reused: ``srcjax.jit(f)(x)`` in a loop compiles ``f`` once (issue #18).

JAX caches ``jax.jit(f)`` per function and options; user code written for it calls ``jit(f)(x)``,
``vmap(f)(xs)`` or ``jacrev(f)(x)`` inside loops. Each public transformation asks :func:`reused`
for its object: the one made before for the same function and the same (hashable) options, kept
on the function with :class:`lifetimes.PerFunction` (it dies with the function), or a new one.

A new wrapper object used to mean a new specialization, which read the module globals, closure
values and constants' attributes the program depends on afresh. Reuse keeps that meaning: the
front end notes every such read (``warm_cache.note_global``/``note_closure``/``note_attr``, the
level-2 cache's recording) with a :func:`fingerprint` of the value, and a transformed object is
reused only while each read still gives the same object with the same contents (a global rebound,
a global array changed in place: a new object, as before). A read that cannot be checked cheaply
(a user's object, an array over :data:`MAX_BYTES`) makes the object never reused: correct as
before, and as slow. A kept object itself (``j = srcjax.jit(f)``, called again) is unchanged:
code already compiled for a signature keeps what it read (docs/limitations.md).
"""

from __future__ import annotations

import functools
import os
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from .lifetimes import PerFunction

__all__ = ["UNCHECKABLE", "fingerprint", "forget", "generation", "names_key", "reused", "unchanged"]

MAX_BYTES = 1 << 20  # arrays compared by their bytes at each reuse up to this size
MAX_ITEMS = 4096  # container elements compared at each reuse
UNCHECKABLE: Any = type("Uncheckable", (), {"__repr__": lambda self: "UNCHECKABLE"})()
_MISSING: Any = object()
_IDENTITY = (type(None), bool, int, float, complex, str, bytes, types.ModuleType, types.FunctionType,
             types.BuiltinFunctionType, types.MethodWrapperType, types.BuiltinMethodType, types.CodeType, np.ufunc,
             np.dtype, functools.partial)
_TRANSFORMED: PerFunction[tuple[Any, Any, int]] = PerFunction("transformed")  # fn -> (kind, options) -> object
_GENERATION = [0]  # (entries of an earlier generation are misses: forget())


class _TooBig(Exception):
    pass


def fingerprint(value: Any) -> Any:
    """What must stay equal for a read of ``value`` to give the same program: None when the object's
    identity is enough (immutable values, modules, functions, classes), a comparable snapshot of a
    container's or an array's contents, or :data:`UNCHECKABLE`."""
    t = type(value)
    if t in _IDENTITY or isinstance(value, (type, np.generic)) or _srcjax_object(value):
        return None
    try:
        return _contents(value, [0])
    except _TooBig:
        return UNCHECKABLE


def _srcjax_object(v: Any) -> bool:
    mod = type(v).__module__
    return mod == "srcjax" or mod.startswith("srcjax.")


def _contents(v: Any, count: list[int]) -> Any:
    count[0] += 1
    if count[0] > MAX_ITEMS:
        raise _TooBig
    t = type(v)
    if t is np.ndarray:
        if v.dtype.hasobject or v.nbytes > MAX_BYTES:
            raise _TooBig
        return (t, v.shape, v.dtype.str, v.tobytes())
    if t in (float, complex):
        return (t, repr(v))  # (NaN equals itself; 0.0 and -0.0 differ)
    if t in _IDENTITY or isinstance(v, (type, np.generic)) or _srcjax_object(v):
        return (t, v)  # (== is identity for functions, modules and classes; values for numbers and strings)
    if isinstance(v, (tuple, list)):  # (NamedTuples too: the type is part of it)
        return (t, tuple(_contents(x, count) for x in v))
    if t is dict:
        return (t, tuple((_contents(k, count), _contents(x, count)) for k, x in v.items()))
    raise _TooBig  # (a user's object: its contents are not known)


def unchanged(seen: dict[Any, tuple[str, Any, str, Any, Any]]) -> bool:
    """Whether every read noted in ``seen`` (``warm_cache.Reads.seen``) would give the same value now."""
    for kind, where, name, value, snap in seen.values():
        if snap is UNCHECKABLE:
            return False
        if kind == "global":
            if where.get(name, _MISSING) is not value:
                return False
        elif kind == "attr":
            try:
                if getattr(where, name) is not value:
                    return False
            except Exception:  # noqa: BLE001 - (a property that raises now: not the same read)
                return False
        if snap is not None and fingerprint(value) != snap:
            return False
    return True


def _reads_of(obj: Any) -> list[Any]:
    """The ``warm_cache.Reads`` of a transformed object: its own specializations', its program's, and
    those of the objects it calls (a Jacobian's loop form and its derivatives per function-valued argument,
    a tuple of Jacobians' parts, the vmaps of a vmap called without its parameters that have defaults)."""
    out = []
    for attr in ("_reads",):
        r = getattr(obj, attr, None)
        if r is not None:
            out.append(r)
    prog = obj.__dict__.get("_program") if hasattr(obj, "__dict__") else None
    if prog is not None:
        out.append(prog.reads)
    inners = (getattr(obj, "_fallback", None), getattr(obj, "_arrays", None),  # (a Jacobian's array form)
              *getattr(obj, "_parts", ()), *getattr(obj, "_omitting", {}).values(),
              *getattr(obj, "_bound", {}).values())
    for inner in inners:
        if inner is not None:
            out.extend(_reads_of(inner))
    return out


def _defaults(fn: Any) -> Any:
    """The fingerprint of a plain function's code and default values (a new object reads them again)."""
    if type(fn) is not types.FunctionType:
        return None
    return fingerprint((fn.__code__, fn.__defaults__, fn.__kwdefaults__))


def names_key(v: Any) -> Any:
    """An argnums/argnames option as a key: one int or name, or a sequence of them, as a tuple."""
    return (v,) if isinstance(v, (int, str)) else tuple(v) if isinstance(v, (list, tuple)) else v


def _typed(v: Any) -> Any:
    """Options with their types (``0`` and ``False``, ``1`` and ``1.0`` are equal keys, not equal options)."""
    if type(v) is tuple:
        return tuple(_typed(x) for x in v)
    return (type(v), v)


def _settings() -> tuple[str | None, ...]:
    """The environment a new object reads when it is made or first called (its platform, its dispatcher)."""
    env = os.environ
    return env.get("SRCJAX_PLATFORM"), env.get("SRCJAX_CPP_DISPATCH")


def reused(fn: Any, kind: str, options: Any, make: Callable[[], Any]) -> Any:
    """The object ``make()`` made before for ``fn`` and these options, if nothing it read has changed
    since; else ``make()`` (kept for next time when the options are hashable)."""
    try:
        key = (kind, _typed(options), _settings())
        hash(key)
        hit = _TRANSFORMED.get(fn, key)
    except TypeError:  # (unhashable options or function: a new object each time, as before)
        return make()
    defaults = _defaults(fn)
    if hit is not None and hit[1] == defaults and hit[2] == _GENERATION[0] and defaults is not UNCHECKABLE and \
            all(unchanged(r.seen) for r in _reads_of(hit[0])):
        return hit[0]
    obj = make()
    if defaults is not UNCHECKABLE:
        _TRANSFORMED.set(fn, key, (obj, defaults, _GENERATION[0]))
    return obj


def generation() -> int:
    """The generation of reused objects now (:func:`forget` starts a new one)."""
    return _GENERATION[0]


def forget() -> None:
    """Reuse none of the objects made so far (the test suite: each test starts with its own)."""
    _GENERATION[0] += 1
