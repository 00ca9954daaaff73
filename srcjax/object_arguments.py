"""Objects of the user's plain classes passed as arguments not marked static.

``jax.jit`` refuses such an argument ("not a valid JAX type"); srcjax takes a value that is not an array as static
(a string, a function, a config object), keyed by the value itself: for an object, its identity. An object holding
arrays (``layer.w``) would have them baked into the compiled program as constants, and a change to them in place
(``layer.w = w2``, ``layer.w[0] = 1``) would not be seen by code already compiled for that object: old values
without an error. Such an argument is refused, naming the attribute, with what to write instead.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from .core import ArgumentError

_NOT_OBJECTS = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType)


def held_array(v: Any, name: str, depth: int = 0) -> str | None:
    """The path (``layer.w``, ``net.hidden.w``) of an array held by ``v``, an object of a plain class (its
    ``__dict__``, objects it holds, lists, tuples and dicts of them, three levels deep); None: none."""
    if depth > 3:
        return None
    if isinstance(v, np.ndarray) or type(v).__name__ in ("Array", "ShardedArray") and hasattr(v, "aval"):
        return name
    if isinstance(v, (list, tuple)):
        for i, item in enumerate(v):
            if (hit := held_array(item, f"{name}[{i}]", depth + 1)) is not None:
                return hit
        return None
    if isinstance(v, dict):
        for k, item in v.items():
            if (hit := held_array(item, f"{name}[{k!r}]", depth + 1)) is not None:
                return hit
        return None
    if isinstance(v, _NOT_OBJECTS) or not hasattr(v, "__dict__") or \
            (type(v).__module__ or "").split(".")[0] in ("srcjax", "numpy", "builtins", "functools"):
        return None
    try:
        attrs = vars(v)
    except TypeError:
        return None
    for k, item in attrs.items():
        if (hit := held_array(item, f"{name}.{k}", depth + 1)) is not None:
            return hit
    return None


def refusal(v: Any, name: str, held: str, span: Any) -> ArgumentError:
    cls = type(v).__name__
    return ArgumentError(
        f"argument {name!r} is an object of class {cls} holding an array ({held}), passed as an argument not "
        f"marked static: its arrays would be constants of the compiled program, and a change to them in place "
        f"would not be seen (jax.jit refuses such an argument too)", span=span,
        hint=f"make {cls} a pytree (@dataclasses.dataclass, or srcjax.tree_util.register_pytree_node) so its "
             f"arrays are arguments, pass the arrays themselves, or mark it static (static_argnames=({name!r},)): "
             "its arrays are then constants, read when it is first compiled")
