"""``srcjax.numpy_function``: a function's generated source executed by NumPy (the second oracle)."""

from __future__ import annotations

import builtins
import itertools
import linecache
import weakref
from collections.abc import Callable
from typing import Any

from .frontend.program import Program

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
    for name, nf in prog.functions.items():
        if name in prog.methods:  # (run through their objects, not by name)
            continue
        key = (id(nf.source.globals), tuple(sorted(nf.source.closure)))
        ns = namespaces.get(key)
        if ns is None:
            ns = dict(nf.source.globals)
            ns.update(nf.source.closure)
            exec(code, ns)
            namespaces[key] = ns
        if name in ns:
            chosen[name] = ns[name]
    for ns in namespaces.values():
        ns.update(chosen)
    f = chosen[prog.entry.name]
    prog._numpy_fn = f  # type: ignore[attr-defined]
    weakref.finalize(f, linecache.cache.pop, filename, None)  # (its registration dies with it)
    return f  # type: ignore[no-any-return]
