"""Callees: what a call in compiled code reaches, and what srcjax does with it.

srcjax reads the source of the function it compiles and of the functions that
function calls. Every callee is one of four kinds, decided by what the callee
*is* (the object, its type, the file its code is in), never by its name:

- a **primitive** (the table in :mod:`srcjax.primitives`): lowered;
- the **user's own code**: a Python function whose file is not in Python's
  standard library, not in an installed package (``site-packages`` /
  ``dist-packages``) and not srcjax's own: read and transpiled like the entry
  (methods and properties of the user's classes too, see the specializer);
- a **pure function of static values** (the builtins srcjax allows, ``math``,
  ``itertools``, NumPy's dtype and shape queries, exception classes,
  NamedTuple and dataclass constructors, methods of numbers, strings, tuples,
  lists, dicts, slices and dtypes, srcjax's own helpers): evaluated while
  specializing, like shapes, once per argument signature;
- **anything else**: library Python code (``statistics.fmean``), C functions
  of other modules (``time.time``), methods of other objects (a
  ``np.random.Generator``, a ``random.Random``), callable objects. Running it
  while specializing would make its result a constant of the compiled code,
  where NumPy calls it again on every call; so the call is refused
  (:class:`OpaqueCallError`) where the user wrote it.

This module is shape-agnostic; the normalizer checks callees it can name
statically (``statistics.fmean``, ``from time import time``), the specializer
the ones it meets as values (``rng.normal`` with ``rng`` an argument).
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import inspect
import math
import os
import sysconfig
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import OpaqueCallError, Span

# Builtins a program may use (most only on static values; the interpreter checks).
ALLOWED_BUILTINS = {
    "range", "len", "abs", "min", "max", "float", "int", "bool", "complex", "tuple", "list", "dict",
    "enumerate", "zip", "reversed", "sum", "round", "isinstance", "slice", "sorted", "any", "all",
    "divmod", "pow", "str", "ValueError", "TypeError", "AssertionError", "NotImplementedError",
    "Ellipsis", "None", "True", "False", "map", "print",
}

# NumPy functions of static values (dtypes, shapes; index arrays of static sizes) evaluated at transpile time.
STATIC_NUMPY: set[Any] = {getattr(np, n) for n in (
    "dtype", "finfo", "iinfo", "result_type", "promote_types", "shape", "ndim", "size", "can_cast",
    "issubdtype", "indices", "triu_indices", "tril_indices", "hanning", "hamming", "bartlett", "blackman",
    "kaiser", "ndindex") if hasattr(np, n)}

# (print prints at run time, at every call: srcjax/lower/host_print.py)
_PURE_BUILTINS = {id(getattr(builtins, n)) for n in ALLOWED_BUILTINS - {"print"}
                  if callable(getattr(builtins, n, None))}

# Values whose (C) methods are pure functions of the value: their methods run at transpile time.
PLAIN_TYPES: tuple[type, ...] = (int, float, complex, str, bytes, tuple, list, dict, set, frozenset, range,
                                 slice, type(None), np.dtype, np.generic, type({}.keys()), type({}.values()),
                                 type({}.items()))

_RANDOM_MODULES = ("random", "_random", "numpy.random", "secrets")


# -- where code lives --------------------------------------------------------------------


def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


_SRCJAX_DIR = _real(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_STDLIB_DIRS = tuple({_real(p) for p in (sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib"),
                                         os.path.dirname(os.__file__)) if p})
_INSTALLED = {"site-packages", "dist-packages"}


def code_of(fn: Any) -> types.CodeType | None:
    """The code object of a Python function or of the function behind a bound method."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    return code if isinstance(code, types.CodeType) else None


def origin(fn: Any) -> str | None:
    """Where a Python function's code lives: ``"stdlib"``, ``"installed"`` (site-packages or
    dist-packages), ``"srcjax"``, or ``None`` for the user's own code (what srcjax transpiles)."""
    code = code_of(fn)
    return None if code is None else _file_origin(code.co_filename)


@functools.lru_cache(maxsize=4096)
def _file_origin(filename: str) -> str | None:
    if filename.startswith("<frozen "):
        return "stdlib"
    if filename.startswith("<"):  # derivative source srcjax wrote (`<srcjax.grad of f #1>`), a notebook cell
        return None
    path = _real(filename)
    if _INSTALLED & set(path.split(os.sep)):
        return "installed"
    if path == _SRCJAX_DIR or path.startswith(_SRCJAX_DIR + os.sep):
        return "srcjax"
    if any(path.startswith(d + os.sep) for d in _STDLIB_DIRS):
        return "stdlib"
    return None


_WHERE = {"stdlib": "Python's standard library", "installed": "an installed package"}


# -- pure functions of static values ------------------------------------------------------


def is_static_pure(fv: Any) -> bool:
    """Calling ``fv`` on static values is a pure function of them: it may run at transpile time."""
    if id(fv) in _PURE_BUILTINS or any(fv is f for f in STATIC_NUMPY):
        return True
    if isinstance(fv, type):
        return _pure_constructor(fv)
    if isinstance(fv, types.BuiltinFunctionType):  # a C function or a C method bound to its object
        owner = fv.__self__
        if isinstance(owner, types.ModuleType):
            return owner is math
        if isinstance(owner, type):  # a classmethod of a plain type (dict.fromkeys, int.from_bytes)
            return issubclass(owner, PLAIN_TYPES)
        return isinstance(owner, PLAIN_TYPES)
    if isinstance(fv, types.MethodWrapperType):  # (1).__add__
        return isinstance(fv.__self__, PLAIN_TYPES)
    if isinstance(fv, (types.MethodDescriptorType, types.WrapperDescriptorType, types.ClassMethodDescriptorType)):
        return issubclass(fv.__objclass__, PLAIN_TYPES)  # str.join, list.index
    if isinstance(fv, types.FunctionType):
        return origin(fv) == "srcjax" or (fv.__module__ or "").startswith("srcjax.")
    return False


def _pure_constructor(cls: type) -> bool:
    if cls.__module__ == "builtins":
        return id(cls) in _PURE_BUILTINS or issubclass(cls, BaseException)
    if issubclass(cls, np.generic) or cls.__module__ == "itertools" or issubclass(cls, BaseException):
        return True
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):  # a NamedTuple class: its __new__ stores fields
        return True
    if dataclasses.is_dataclass(cls):  # the generated __init__ stores fields; __post_init__ would be code
        return not hasattr(cls, "__post_init__")
    return (cls.__module__ or "").startswith("srcjax.")


# -- methods and callable objects of the user's classes -------------------------------------------


def user_method(fv: Any) -> tuple[Callable[..., Any], Any] | None:
    """``(function, self)`` when ``fv`` runs the user's own code on an object: a bound method
    (or classmethod) of a user class, or an object whose class defines ``__call__``."""
    if isinstance(fv, types.MethodType):
        f = fv.__func__
        if isinstance(f, types.FunctionType) and origin(f) is None:
            return f, fv.__self__
        return None
    if isinstance(fv, type) or isinstance(fv, (types.FunctionType, types.BuiltinFunctionType)):
        return None
    call = inspect.getattr_static(type(fv), "__call__", None)
    if isinstance(call, types.FunctionType) and origin(call) is None:
        return call, fv
    return None


# -- the refusal ------------------------------------------------------------------------------


def callee_name(fv: Any) -> str:
    """``statistics.fmean``, ``Generator.normal``, ``time.time``: how the message names a callee."""
    owner = getattr(fv, "__self__", None)
    name = getattr(fv, "__name__", None)
    if owner is not None and not isinstance(owner, types.ModuleType) and name:
        cls = owner if isinstance(owner, type) else type(owner)
        return f"{cls.__qualname__}.{name}"
    qual = getattr(fv, "__qualname__", None) or name
    if qual is None:
        return type(fv).__qualname__
    mod = getattr(fv, "__module__", None) or (owner.__name__ if isinstance(owner, types.ModuleType) else None)
    if mod and mod not in ("builtins", "__main__"):
        mod = mod.lstrip("_") if mod in ("_random", "_operator", "_functools") else mod
        return f"{mod}.{qual}"
    return qual


def is_random(fv: Any) -> bool:
    """``fv`` draws random numbers (``random``, ``numpy.random``, their generators' methods)."""
    owner = getattr(fv, "__self__", None)
    mods = [getattr(fv, "__module__", None) or "", type(fv).__module__]
    if owner is not None:
        mods.append(owner.__name__ if isinstance(owner, types.ModuleType) else type(owner).__module__ or "")
    return any(m == r or m.startswith(r + ".") for m in mods for r in _RANDOM_MODULES)


def refusal(fv: Any, span: Span | None = None, name: str | None = None) -> OpaqueCallError:
    """The error for calling ``fv`` (none of a primitive, user code, or a pure static function);
    ``name``: how the program spells it, when that says more than its own name (``np.random.normal``)."""
    own = getattr(fv, "srcjax_refusal", None)  # an object that says itself why (a pmapped function)
    if isinstance(own, tuple):
        return OpaqueCallError(own[0], span=span, hint=own[1])
    name = name or callee_name(fv)
    lib = origin(fv)
    note = None
    frozen = "run once while compiling, its result would become a constant that every call reuses"
    pass_in = "compute it outside the compiled function and pass the result in as an argument"
    owner = getattr(fv, "__self__", None)
    if lib in _WHERE:
        code = code_of(fv)
        assert code is not None
        what = f"it is in {_WHERE[lib]}, and srcjax transpiles only your own code"
        note = f"{name} is defined at {code.co_filename}:{code.co_firstlineno}"
        pass_in = "write it with NumPy in your own code, or " + pass_in
    elif isinstance(fv, type):
        name = f"{fv.__qualname__}"
        what = f"constructing a {name} object runs Python code srcjax does not transpile; {frozen}"
        pass_in = "build the object outside the compiled function and pass it in as an argument"
    elif owner is not None and not isinstance(owner, types.ModuleType):
        cls = owner if isinstance(owner, type) else type(owner)
        what = f"srcjax cannot read the methods of {'the class' if cls is owner else 'a'} {cls.__qualname__}" \
               f"{'' if cls is owner else ' object'}; {frozen}"
    elif isinstance(fv, (types.BuiltinFunctionType, types.FunctionType)) or hasattr(fv, "__qualname__"):
        what = f"it has no Python source srcjax can read; {frozen}"  # (C and Cython functions)
    else:
        name = f"a {type(fv).__module__}.{type(fv).__qualname__} object"
        what = f"srcjax cannot read it; {frozen}"
    message = f"cannot call {name}{'' if name.startswith('a ') else '()'} in compiled code: {what}"
    if is_random(fv):
        draw = _SRCJAX_RANDOM.get(name.split(".")[-1], "normal(sub, shape)")
        pass_in = ("use srcjax.random, whose keys are values: pass a key in as an argument (made once with "
                   "srcjax.random.key(0)), split it (key, sub = srcjax.random.split(key)) and draw "
                   f"srcjax.random.{draw}; or draw the numbers outside and pass them in")
    err = OpaqueCallError(message, span=span, hint=pass_in)
    err.note = note
    return err


# NumPy's and Python's random draws -> srcjax.random's (the hint for a refused draw)
_SRCJAX_RANDOM = {
    "normal": "normal(sub, shape) * scale + loc", "standard_normal": "normal(sub, shape)",
    "randn": "normal(sub, shape)", "gauss": "normal(sub, ()) * sigma + mu",
    "uniform": "uniform(sub, shape, minval=low, maxval=high)", "random": "uniform(sub, shape)",
    "rand": "uniform(sub, shape)", "random_sample": "uniform(sub, shape)",
    "integers": "randint(sub, shape, low, high)", "randint": "randint(sub, shape, low, high)",
    "choice": "choice(sub, a, shape)", "permutation": "permutation(sub, x)", "shuffle": "permutation(sub, x)",
    "binomial": "bernoulli(sub, p, shape) (summed)",
}


def library_function(fv: Any) -> bool:
    """A Python function of the standard library or an installed package (refused, not transpiled)."""
    return isinstance(fv, types.FunctionType) and origin(fv) in _WHERE


__all__ = ["ALLOWED_BUILTINS", "OpaqueCallError", "PLAIN_TYPES", "STATIC_NUMPY", "callee_name", "code_of",
           "is_static_pure", "library_function", "origin", "refusal", "user_method"]


def user_property(base: Any, attr: str) -> Callable[..., Any] | None:
    """The getter of ``type(base).attr`` when it is a property written in the user's own code."""
    if isinstance(base, (type, types.ModuleType)) or type(base) in PLAIN_TYPES:
        return None  # (a NamedTuple's property is the user's getter: a tuple subclass's, not tuple's own)
    for cls in type(base).__mro__:
        d = cls.__dict__.get(attr)
        if d is None:
            continue
        if isinstance(d, functools.cached_property) and attr not in getattr(base, "__dict__", {}):
            d = property(d.func)
        if isinstance(d, property) and isinstance(d.fget, types.FunctionType) and origin(d.fget) is None:
            return d.fget
        return None
    return None
