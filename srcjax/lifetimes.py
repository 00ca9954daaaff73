"""Caches keyed by a user's function that die with it.

A transformed function's cached program (a ``Compiled``, a derivative, a parsed source) refers to
the function, so a module-level dict keyed by the function (or a ``WeakKeyDictionary``, whose
value keeps its key alive) keeps every function ever transformed alive, with its executables and
device buffers. :class:`PerFunction` keeps its entries on the function itself, in a slot of its
``__dict__`` tagged with the function's identity: the cycle function -> slot -> program ->
function is garbage the collector frees once the user drops the function. A ``functools.wraps``
wrapper copies ``__dict__`` (the slot with it): the tag tells its copy from its own, so a wrapper
never gets the wrapped function's program. Pickling (cloudpickle copies a function's
``__dict__``), copying and deep copying see an empty slot.

``functools.partial`` objects are tagged as functions are. Callables without a ``__dict__`` srcjax
may write to (bound methods, a user's callable objects, builtins) go to a bounded LRU keyed by the
callable (by equality, as before: ``obj.method`` is a new object at each access), so at most
:data:`KEPT` of them outlive their users.
"""

from __future__ import annotations

import functools
import types
import weakref
from collections import OrderedDict
from typing import Any, Generic, TypeVar

V = TypeVar("V")

KEPT = 256  # callables kept by each bounded cache (those srcjax cannot tag)
_MISSING: Any = object()
_SLOT = "__srcjax_cache__"
_FUNCTION = types.FunctionType


class _Slot:
    """The entries of one function, by cache, then rest of key; ``owner``: a weak reference to the
    function they belong to (a copied slot's owner is another function)."""

    __slots__ = ("owner", "entries", "__weakref__")

    def __init__(self, fn: Any = None) -> None:
        self.owner: Any = weakref.ref(fn) if fn is not None else _nobody
        self.entries: dict[Any, Any] = {}

    def __reduce__(self) -> tuple[Any, tuple[()]]:  # (pickled, copied: empty)
        return (_Slot, ())

    def __copy__(self) -> _Slot:
        return _Slot()

    def __deepcopy__(self, memo: Any) -> _Slot:
        return _Slot()

    def __repr__(self) -> str:
        return "<srcjax cache>"


def _nobody() -> None:
    """The owner of an empty slot (pickled, copied): no function."""
    return None


def _taggable(fn: Any) -> bool:
    """Whether srcjax keeps ``fn``'s entries on ``fn`` (plain functions and srcjax's own objects;
    not a user's objects, whose ``__dict__`` is theirs)."""
    t = type(fn)
    if t is types.FunctionType or t is functools.partial:  # (a partial's __dict__ is as a function's)
        return True
    return t.__module__.startswith("srcjax.") and hasattr(fn, "__dict__")


def _slot(fn: Any) -> _Slot:
    d = fn.__dict__
    s = d.get(_SLOT)
    if type(s) is _Slot and s.owner() is fn:
        return s
    s = d[_SLOT] = _Slot(fn)  # (a copied slot, or none: this function's own)
    return s


class PerFunction(Generic[V]):
    """A cache from (function, rest of key) to a value, kept as long as the function lives.

    ``rest`` must be hashable; an unhashable function raises ``TypeError`` as a dict would."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lru: OrderedDict[Any, V] = OrderedDict()

    def get(self, fn: Any, rest: Any = None, default: Any = None) -> Any:
        if type(fn) is _FUNCTION or _taggable(fn):
            s = fn.__dict__.get(_SLOT)
            if type(s) is not _Slot or s.owner() is not fn:
                return default
            mine = s.entries.get(self.name)
            return default if mine is None else mine.get(rest, default)
        key = (fn, rest)
        hit = self._lru.get(key, _MISSING)
        if hit is _MISSING:
            return default
        self._lru.move_to_end(key)
        return hit

    def set(self, fn: Any, rest: Any, value: V) -> V:
        if _taggable(fn):
            s = _slot(fn)
            s.entries.setdefault(self.name, {})[rest] = value
            return value
        key = (fn, rest)
        self._lru[key] = value
        self._lru.move_to_end(key)
        while len(self._lru) > KEPT:
            self._lru.popitem(last=False)
        return value

    def clear(self) -> None:
        """Forget the untagged entries (tagged ones die with their functions)."""
        self._lru.clear()

    def __len__(self) -> int:
        """The untagged entries kept (for tests)."""
        return len(self._lru)
