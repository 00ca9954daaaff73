"""Transformations of a function with a ``*args`` parameter (``def total(*xs)``, ``def f(x, *rest)``).

JAX traces such a function with the arguments of each call; srcjax writes one program per number of
positional arguments: the transformation is applied, at the first call with that many, to the function's copy
taking them as plain parameters (``frontend/star_params.py``). So ``grad(f, argnums=2)`` and
``vmap(f, in_axes=(0, None, 0))`` count positions as jax does, and ``vmap(grad(total))`` is
``vmap(grad(copy))`` of one copy.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from .core import ArgumentError
from .frontend.star_params import call_variant, star_parameter


class StarDispatch:
    """``make`` (a transformation, or several composed) applied per number of positional arguments of a call
    to the copy of ``fn`` taking them."""

    def __init__(self, fn: Any, make: Callable[[Any], Any]) -> None:
        self.fn = fn
        self.make = make
        self._made: dict[int, Any] = {}
        self.__name__ = getattr(fn, "__name__", "f")
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__doc__ = getattr(fn, "__doc__", None)

    def for_count(self, positional: int) -> Any:
        """The transformed copy for calls passing ``positional`` positional arguments."""
        made = self._made.get(positional)
        if made is None:
            made = self._made[positional] = self.make(call_variant(self.fn, positional))
        return made

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.for_count(len(args))(*args, **kwargs)

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        return self.for_count(len(args)).lower(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<srcjax transformation of {self.__qualname__}, one per number of arguments>"


def dispatch(fn: Any, make: Callable[[Any], Any]) -> StarDispatch | None:
    """``make(fn)`` made per call's number of arguments where ``fn`` takes ``*args`` (None: it does not)."""
    if isinstance(fn, StarDispatch):
        inner = fn.make
        return StarDispatch(fn.fn, lambda v: make(inner(v)))
    # (only a plain function: an attribute read of a transformed object may write its program, which a lazy
    # Jacobian defers until something reads it)
    if isinstance(fn, types.FunctionType) and not hasattr(fn, "__srcjax_fn__") and star_parameter(fn) is not None:
        return StarDispatch(fn, make)
    return None


def for_args(fn: Any, count: int) -> Any:
    """``fn`` as called with ``count`` positional arguments: the copy for them where it takes ``*args``."""
    if isinstance(fn, StarDispatch):
        return fn.for_count(count)
    if star_parameter(fn) is not None:
        return call_variant(fn, count)
    return fn


def source_refusal(fn: Any) -> ArgumentError | None:
    """``srcjax.source(f)`` of a function with ``*args`` and no example arguments: which program to show?"""
    if isinstance(fn, StarDispatch) or star_parameter(fn) is not None:
        return ArgumentError(f"source: {getattr(fn, '__name__', 'the function')} takes *args: its program depends "
                            "on the number of arguments",
                            hint="pass example arguments: srcjax.source(f, x, y) shows the program for two")
    return None
