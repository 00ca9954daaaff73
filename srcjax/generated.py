"""Running generated module text (derivatives, batched programs) where the user's functions live."""

from __future__ import annotations

import ast
import linecache
import math
import sys
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .core import Span, index_params
from .frontend import locations, read
from .frontend.normalize import NormalizedFunction
from .frontend.parsed import parse
from .frontend.program import Program
from .transforms import linear_calls, readable_names

__all__ = ["exec_functions", "exec_generated", "load_module"]


def load_module(filename: str, module_text: str, owners: dict[str, NormalizedFunction],
                marked: dict[int, Span] | None = None) -> Any:
    """Register the generated module ``module_text`` as ``filename`` (in ``linecache``, so ``inspect``
    and srcjax read it again; its lines' user locations, ``marked``'s where a writer marked them
    (``frontend.provenance``); where its functions are) and compile it. One
    ``ast`` parse serves the registrations and the compiler. SyntaxError: a bug in the writer."""
    linecache.cache[filename] = (len(module_text), None, module_text.splitlines(True), filename)
    tree = parse(module_text, filename)
    # (the user's lines in StableHLO locations and errors; the temporaries the readable form renumbered by the names
    # the writer gave them)
    locations.register(filename, module_text, owners, tree, readable_names.renamed(module_text), marked)
    read.note_generated(filename, module_text, tree)
    return compile(tree, filename, "exec")  # (from the tree: the text is not parsed again; the tree is unchanged)


def exec_generated(code: Any, name: str, prog: Program, origins: dict[str, str],
                  extra: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """Execute the derivative module; each generated function in the namespace of the function it derives
    from (its module's globals and its closure: what its body reads), all of them linked by name."""
    functions = {nf.name: nf.fn for nf in prog.functions.values()}
    spaces: dict[tuple[Any, ...], dict[str, Any]] = {}
    chosen: dict[str, Callable[..., Any]] = {}
    owners = {g: prog.functions.get(origins.get(g, prog.entry.name), prog.entry) for g in [name, *origins]}

    def key_of(nf: NormalizedFunction) -> tuple[Any, ...]:
        return id(nf.source.globals), tuple(sorted((k, id(v)) for k, v in nf.source.closure.items()))

    for generated, nf in owners.items():
        src = nf.source
        key = key_of(nf)
        ns = spaces.get(key)
        if ns is None:
            ns = spaces[key] = dict(src.globals)
            ns.update(src.closure)
            ns.update(functions)
            ns.update(np=np, math=math, srcjax=sys.modules["srcjax"])
            ns.update(extra)
            ns.update(linear_calls.CALLED)  # (the helpers reverse mode's rules call: a user's module lacks them)
            ns["__name__"] = getattr(nf.fn, "__module__", None) or prog.entry_fn.__module__
            exec_functions(code, ns, {g for g, o in owners.items() if key_of(o) == key})
        chosen[generated] = ns[generated]
        index = getattr(nf.fn, "__srcjax_index_params__", None)
        if index and generated != name:  # a helper's batched or derivative copy: its index parameters too
            index_params(*index)(chosen[generated])
    for ns in spaces.values():
        ns.update(chosen)
    # (each function of the module reads all of them by name: the module's registrations live as long as
    # its entry function does, and are dropped with it)
    weakref.finalize(chosen[name], forget_module, code.co_filename)
    return chosen


def exec_functions(code: Any, ns: dict[str, Any], wanted: set[str]) -> None:
    """``exec(code, ns)``; where a ``def`` line's default reads a name of another module (``def
    f_grad(x, w=W)``, run here for a helper of another module; ``def f_vmap(data, mode=wrap)`` run in
    ``srcjax.batched``'s namespace), only the functions taken from ``ns`` (``wanted``). ``code``'s text is in
    ``linecache``."""
    try:
        exec(code, ns)  # noqa: S102 - code srcjax wrote
    except NameError:
        text = "".join(linecache.getlines(code.co_filename))
        tree = parse(text, code.co_filename)
        body = [st for st in tree.body if not isinstance(st, ast.FunctionDef) or st.name in wanted]
        exec(compile(ast.Module(body=body, type_ignores=[]), code.co_filename, "exec"), ns)  # noqa: S102


def forget_module(filename: str) -> None:
    """Drop what :func:`load_module` registered for ``filename`` (its functions died)."""
    linecache.cache.pop(filename, None)
    locations.forget(filename)
    read.forget_generated(filename)
