"""``srcjax.numpy_function``: a function's generated source executed by NumPy (the second oracle)."""

from __future__ import annotations

import builtins
import functools
import itertools
import linecache
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .frontend.program import Program
from .generated import exec_functions
from .weak_arrays import WeakArray

_NUMPY_MODULES = itertools.count()


def program_function(prog: Program, qualname: str) -> Callable[..., Any]:
    """The generated source of the program ``prog`` (of the function ``qualname``) executed by NumPy (in the
    user's globals): ``srcjax.numpy_function``."""
    cached = getattr(prog, "_numpy_fn", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    # Each generated function must see its own module's globals and closure: execute the module
    # once per distinct namespace, take each function from its own, and link them together.
    text = prog.source()
    filename = f"<srcjax.source of {qualname} #{next(_NUMPY_MODULES)}>"  # (one per module: its source
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)  # is read again by a transformation
    code = builtins.compile(text, filename, "exec")  # called in it, `srcjax.vmap(f)` of a generated `f`)
    namespaces: dict[tuple[int, tuple[str, ...]], dict[str, Any]] = {}
    chosen: dict[str, Any] = {}
    keys = {name: (id(nf.source.globals), tuple(sorted(nf.source.closure))) for name, nf in prog.functions.items()
            if name not in prog.methods}  # (methods: run through their objects, not by name)
    for name, key in keys.items():
        nf = prog.functions[name]
        ns = namespaces.get(key)
        if ns is None:
            ns = dict(nf.source.globals)
            ns.update(nf.source.closure)
            ns.setdefault("round", array_round)  # (the user's own `round`, if any, wins)
            exec_functions(code, ns, {n for n, k in keys.items() if k == key})
            namespaces[key] = ns
        if name in ns:
            chosen[name] = ns[name]
    for ns in namespaces.values():
        ns.update(chosen)
    f = chosen[prog.entry.name]
    prog._numpy_fn = f  # type: ignore[attr-defined]
    weakref.finalize(f, linecache.cache.pop, filename, None)  # (its registration dies with it)
    return f  # type: ignore[no-any-return]


def array_round(number: Any, ndigits: Any = None) -> Any:
    """Python's ``round`` as compiled code reads it (and jax's arrays): ``np.round`` of an array, which has no
    ``__round__`` in NumPy (``round(x)`` of an array in generated source run by NumPy raised a TypeError)."""
    if isinstance(number, np.ndarray):
        return np.round(number, 0 if ndigits is None else ndigits)
    return builtins.round(number, ndigits)


def sorted_entry(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` taking its arguments' dicts with their keys sorted, as a compiled function takes them (its leaves
    in sorted key order, as jax's ``jit``): NumPy running the generated source iterated ``{"c": .., "a": ..}``
    in insertion order where XLA read it sorted (``list(d.values())[0]`` another item)."""
    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        out = f(*[_sorted_dicts(a) for a in args], **{k: _sorted_dicts(v) for k, v in kwargs.items()})
        return _plain(out)  # (a weakly typed repeat of a Python number handed out as a plain array)

    return run


def _plain(x: Any) -> Any:
    if isinstance(x, WeakArray):
        return np.asarray(x)
    if type(x) is dict:
        return {k: _plain(v) for k, v in x.items()}
    if type(x) is list or type(x) is tuple:
        return type(x)(_plain(v) for v in x)
    return x


def _sorted_dicts(x: Any) -> Any:
    if type(x) is dict:
        try:
            keys = sorted(x)
        except TypeError:  # (keys that do not compare: as they are)
            keys = list(x)
        return {k: _sorted_dicts(x[k]) for k in keys}
    if type(x) is list or type(x) is tuple:
        return type(x)(_sorted_dicts(v) for v in x)
    return x
