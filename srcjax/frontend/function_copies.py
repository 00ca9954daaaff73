"""A copy of a user's function: the same code, globals, defaults and closure under a new function object.

The front end calls a user's function through such copies wherever one function needs several readings (a
``*args`` helper for each argument count, a helper with a parameter fixed to a function, a method bound to its
class, a tuple-spreading helper for each tuple length): each copy carries its variant's marks as attributes,
and the caches keyed by function object keep the variants apart.
"""

from __future__ import annotations

import types


def copy_function(fn: types.FunctionType, name: str | None = None) -> types.FunctionType:
    """A new function object running ``fn``'s code (its name ``name`` where given), with ``fn``'s keyword
    defaults, qualified name, module and docstring."""
    made = types.FunctionType(fn.__code__, fn.__globals__, name or fn.__name__, fn.__defaults__, fn.__closure__)
    made.__kwdefaults__ = fn.__kwdefaults__
    made.__qualname__, made.__module__, made.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    return made
