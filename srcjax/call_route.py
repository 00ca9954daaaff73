"""Where a compiled function's calls go: the ``__call__`` slot of ``api.Compiled`` (issue #18 item 1).

CPython calls an instance through its type's ``__call__``; ``Compiled`` declares it as a slot, so the read
is the slot's member descriptor (C) and the call goes straight to what the slot holds: jaxlib's C++
dispatcher once attached, one of ``cpp_calls``' shortcuts, or srcjax's Python path. Measured with callgrind
(``x * 2.0 + 1.0`` on an f32[] on the device, ~37k instructions per call): CPython's ``slot_tp_call``
costs 157 around the dispatcher's call, where it cost 483 with the ``property(attrgetter("_dispatch"))``
this replaces.

The slot is set through :func:`route`'s property, ``Compiled._dispatch``: ``cpp_calls`` assigns it (the
value is kept in the instance's ``__dict__`` too, where it reads the current route), and deleting it
goes back to the Python path, held through a weak reference (:func:`_python_path`) so that a function
holds no reference cycle to itself and is freed without the garbage collector.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["route"]


def route(cls: type) -> property:
    """The ``_dispatch`` property of ``cls`` (``api.Compiled``), over its ``__call__`` slot."""
    slot = cls.__dict__["__call__"]  # (the slot's member descriptor)

    def get(self: Any) -> Callable[..., Any]:
        return slot.__get__(self)  # type: ignore[no-any-return]

    def set_(self: Any, call: Callable[..., Any]) -> None:
        self.__dict__["_dispatch"] = call
        slot.__set__(self, call)

    def delete(self: Any) -> None:
        self.__dict__.pop("_dispatch", None)
        slot.__set__(self, functools.partial(_python_path, weakref.ref(self)))

    return property(get, set_, delete, doc="Where this function's calls go (call_route.py).")


def _python_path(ref: weakref.ref[Any], *args: Any, **kwargs: Any) -> Any:
    """A call of the function ``ref`` refers to, through srcjax's Python path (``_python_dispatch``)."""
    me = ref()
    assert me is not None
    return me._python_dispatch(*args, **kwargs)
