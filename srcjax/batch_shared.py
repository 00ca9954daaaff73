"""vmap's batched copies of srcjax's own helpers: one function object per content, shared by programs.

``vmap`` of a derivative batches the library helpers its source calls (``matmul_rhs_bar``, ``max_bar``,
``batch_align``, ...) for the states of their arguments: ``matmul_rhs_bar_vmap``. The same text comes out
of every program that batches the helper for those states, but executed with its program's module it was
a new function, normalized again by the next transformation (``lower``, ``jit``, another ``vmap``: 2-4 ms a
copy). :func:`share_library_copies` replaces such a copy by the process's function for its *content*,
compiled in a module of its own, so its normalized form (kept on the function:
:func:`~srcjax.frontend.program.library_form`) serves every program.

Input: the functions a batched module defined (``exec_generated``), where each came from
(``origins``), the module's text and its text before :mod:`~srcjax.transforms.readable` (``anf``).
Output: the same dict, each shareable copy replaced, in it and in every namespace of the module.

A copy is shared only when its content decides everything it computes:

- it is a copy of a library helper's process-wide normalized form (or of a shared copy);
- each global its code may read (``co_names``, nested functions too) is what every generated namespace
  binds (``np``, ``math``, ``srcjax``), a library module's own object of that name, or another copy
  shared by this rule (its key is part of this one's); default values are literals; not on a cycle of
  calls;
- its key: its home module, its name, its text, its text before ``readable`` and its callees' keys.

Nothing depends on what ran before in the process: names and text are the module's own; a copy of a
key is the one alive for it (:class:`weakref.WeakValueDictionary`: it dies with the last program that
calls it, its module's registrations with it), or made now, the same text again.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .frontend.normalize import NormalizedFunction
from .frontend.program import Program, library_form
from .frontend.read import function_texts, is_generated
from .frontend.resolve import LIBRARY_MODULES
from .generated import forget_module, load_module

__all__ = ["is_shared", "share_library_copies"]

SHARED_ATTR = "__srcjax_shared__"  # on a shared copy: its key
_SHARED: weakref.WeakValueDictionary[str, Callable[..., Any]] = weakref.WeakValueDictionary()
_COUNTER = itertools.count()
_MISSING = object()
_OWN = frozenset({SHARED_ATTR, "__srcjax_library_form__", "__srcjax_anf__"})  # (not copied from the original)


def is_shared(fn: Any) -> bool:
    """Whether ``fn`` is a shared batched copy of a library helper."""
    return isinstance(getattr(fn, "__dict__", {}).get(SHARED_ATTR), str)


def share_library_copies(functions: dict[str, Callable[..., Any]], origins: dict[str, str], prog: Program,
                         module_text: str, anf: str, keep_out: set[str]) -> None:
    """Replace each shareable copy in ``functions`` (and in the namespaces they run in) by the process's
    one for its content. ``keep_out``: functions never shared (custom rules', rewrapped by the caller)."""
    owners = {g: nf for g, o in origins.items() if (nf := prog.functions.get(o)) is not None}
    candidates = {g for g, nf in owners.items() if g in functions and g not in keep_out and _library_origin(nf)}
    if not candidates:
        return
    texts = function_texts(module_text)
    anfs = function_texts(anf) if anf != module_text else texts
    keys: dict[str, str | None] = {}
    shared: dict[str, Callable[..., Any]] = {}

    def key_of(g: str) -> str | None:
        if g in keys:
            return keys[g]  # (None while g is being keyed: a cycle is not shared)
        keys[g] = None
        fn = functions[g]
        reads = _reads(fn, functions, candidates, key_of)
        if reads is None or g not in texts or not all(map(_constant, fn.__defaults__ or ())) or fn.__kwdefaults__:
            return None
        home = getattr(fn, "__module__", "")
        h = hashlib.sha256("\0".join((home, g, texts[g], anfs.get(g, ""))).encode())
        for name, part in sorted(reads.items()):  # (a library object: the same for the process's life)
            h.update(f"\0{name}={part if isinstance(part, str) else id(part)}".encode())
        key = h.hexdigest()
        got = _SHARED.get(key)
        if got is None:
            got = _compile(g, fn, home, texts[g], anfs.get(g), reads, shared, owners[g])
            if got is None:
                return None
            setattr(got, SHARED_ATTR, key)
            _SHARED[key] = got
        shared[g] = got
        keys[g] = key
        return key

    for g in sorted(candidates):
        key_of(g)
    if not shared:
        return
    for f in list(functions.values()):
        ns = getattr(f, "__globals__", None)
        if ns is not None:
            for g, fn in shared.items():
                if ns.get(g) is functions[g]:
                    ns[g] = fn
    functions.update(shared)


def _library_origin(nf: NormalizedFunction) -> bool:
    """Whether ``nf`` is a library helper's (or a shared copy's) normalized form, the same in every program."""
    fn = nf.fn
    return getattr(fn, "__module__", "") in LIBRARY_MODULES and library_form(fn) is nf and \
        (not is_generated(fn) or is_shared(fn))


def _global_reads(code: types.CodeType) -> set[str]:
    """The global names ``code`` (and the code nested in it) may read: its ``co_names`` (attribute names
    too, a superset: an attribute named like a function of the program is taken as read, not shared)."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_reads(c)
    return names


def _reads(fn: Callable[..., Any], functions: dict[str, Callable[..., Any]], candidates: set[str],
           key_of: Callable[[str], str | None]) -> dict[str, Any] | None:
    """What ``fn`` reads from its namespace: name -> the library object, or -> the key of the shared copy
    it calls; None where it reads something of its program's."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    out: dict[str, Any] = {}
    for name in _global_reads(code):
        value = fn.__globals__.get(name, _MISSING)
        if value is _MISSING:
            continue  # (a builtin)
        if name in functions and value is functions[name] and name in candidates:
            key = key_of(name)
            if key is None:
                return None
            out[name] = key
        elif is_shared(value) and getattr(value, "__name__", None) == name:
            out[name] = value.__dict__[SHARED_ATTR]  # (a shared copy this program calls unbatched)
        elif value is _fixed(name) or _library_object(name, value):
            out[name] = value
        else:
            return None  # (a function or value of this program's)
    return out


def _constant(value: Any) -> bool:
    """A default value its ``def`` line writes as a literal (evaluated again alike in any namespace)."""
    if isinstance(value, tuple):
        return all(map(_constant, value))
    return value is None or type(value) in (bool, int, float, str)


def _library_object(name: str, value: Any) -> bool:
    """Whether ``value`` is what a library module binds ``name`` to (the same object in every program)."""
    return any(value is getattr(sys.modules.get(m), name, _MISSING) for m in LIBRARY_MODULES)


def _fixed(name: str) -> Any:
    """What every generated namespace binds ``name`` to (``exec_generated``), or a marker nothing is."""
    return {"np": np, "math": math, "srcjax": sys.modules["srcjax"]}.get(name, _MISSING)


def _compile(g: str, fn: Callable[..., Any], home: str, text: str, anf: str | None, reads: dict[str, Any],
             shared: dict[str, Callable[..., Any]], owner: NormalizedFunction) -> Callable[..., Any] | None:
    """``g`` again, compiled from its text as a module of its own (registered while the copy lives), in a
    namespace of its own: its home module's globals, what it reads and the shared copies it calls."""
    module = sys.modules.get(home)
    if module is None:
        return None
    ns = dict(module.__dict__)
    # (a callee's key: the copy shared now, or a shared copy the program called as it was)
    ns.update({n: (shared.get(n, fn.__globals__[n]) if isinstance(v, str) else v) for n, v in reads.items()})
    ns.update(np=np, math=math, srcjax=sys.modules["srcjax"], __name__=home)
    filename = f"<srcjax.vmap shared {g} #{next(_COUNTER)}>"
    try:
        code = load_module(filename, text, {g: owner})
    except SyntaxError:  # pragma: no cover - not one function's text
        forget_module(filename)
        return None
    exec(code, ns)  # noqa: S102 - code srcjax wrote (the module's own text of this function)
    got = ns.get(g)
    if not isinstance(got, types.FunctionType) or got.__code__.co_varnames != fn.__code__.co_varnames or \
            _global_reads(got.__code__) != _global_reads(fn.__code__) or got.__defaults__ != fn.__defaults__ or \
            set(ns) - set(module.__dict__) - set(reads) - {"np", "math", "srcjax", "__builtins__", g}:
        forget_module(filename)
        return None
    got.__dict__.update({k: v for k, v in fn.__dict__.items() if k not in _OWN})  # (index parameters)
    if anf is not None and anf != text:
        got.__dict__["__srcjax_anf__"] = anf  # (``srcjax.source(form="anf")``: this function's part)
    weakref.finalize(got, forget_module, filename)
    return got
