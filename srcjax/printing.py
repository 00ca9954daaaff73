"""``srcjax.source``: the generated Python of a function, shape-generic or for given arguments.

``source(f)`` prints the program srcjax writes for every shape and dtype; ``source(f, *args)``
(arrays or ``srcjax.ShapeDtypeStruct``s, like ``srcjax.lower``) prints it specialized for those
arguments' shapes and dtypes (:mod:`srcjax.transforms.specialized_print`), like JAX's
``make_jaxpr(f)(*args)``. The specialized print is shown only where it is checked to be the
program that runs for those arguments (:func:`_same_program`); otherwise the generic one is.
"""

from __future__ import annotations

import itertools
import linecache
import math
import re
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from . import star_args
from .api import Compiled, _as_compiled, _clean  # (api's shared helpers: the function's one Compiled)
from .core import ArgumentError, TranspileError
from .gc_pause import pausing
from .generated import exec_functions

_COUNTER = itertools.count()


@pausing
def source(fn: Callable[..., Any], *args: Any, form: str = "readable", **kwargs: Any) -> str:
    """The generated Python module for ``fn``: imports, the entry function, helpers.

    ``form="readable"`` (the default) is the program that runs; ``form="anf"`` shows derivatives
    and batched functions as written before their single-use temporaries were folded back into
    the expressions they feed (one primitive per line: for debugging srcjax itself).

    With example arguments (arrays or ``srcjax.ShapeDtypeStruct``s, as for ``srcjax.lower``), the
    entry function is printed for their shapes and dtypes: guards they pass are gone, ``unbroadcast``
    of equal shapes is its operand, forward values needed only for shapes are not computed. It is
    printed only where it lowers to the same XLA program as the generic one for those arguments."""
    if not isinstance(form, str) or form not in ("readable", "anf"):
        what = repr(form) if isinstance(form, str) else f"a value of type {type(form).__name__}"
        raise _clean(ArgumentError(f"source: form must be 'readable' or 'anf', not {what}",
                                   hint="source(fn, *example_args, form='anf'): example arguments come "
                                        "before form, which is a keyword"))
    if any(isinstance(a, str) and a in ("readable", "anf") for a in args):
        raise _clean(ArgumentError(f"source: {next(a for a in args if a in ('readable', 'anf'))!r} was passed as "
                                   "an example argument", hint="form is a keyword: source(fn, form='anf'), "
                                                               "source(fn, *example_args, form='anf')"))
    if args:
        fn = star_args.for_args(fn, len(args))  # (`def f(*xs)`: the program for this many arguments)
    elif (refused := star_args.source_refusal(fn)) is not None:
        raise _clean(refused)
    written = getattr(fn, "__srcjax_source__", None)
    if written is not None:  # a split VJP's cotangent function: its forward and backward programs
        return written(form)  # type: ignore[no-any-return]
    needs = getattr(fn, "_needs", None)
    if needs:  # a derivative of a function that calls a parameter: written per function
        raise _clean(ArgumentError(
            f"this derivative is written once the function passed for `{sorted(needs)[0]}` is known",
            hint="call it once with that function, or differentiate a function that calls it by name"))
    try:
        c = fn if isinstance(fn, Compiled) else _as_compiled(fn)
        generic = c.program.source(form)
        if not args and not kwargs:
            return generic
        return specialized(c, args, kwargs, form, generic)
    except TranspileError as e:
        raise _clean(e) from None


def specialized(c: Compiled, args: tuple[Any, ...], kwargs: dict[str, Any], form: str, generic: str) -> str:
    """``generic`` with its entry function printed for these arguments, where that is checked."""
    from .transforms import specialized_print as sp

    theirs = c.lower(*args, **kwargs)  # (errors for these arguments are raised here; some may become static)
    try:
        rec = sp.record(c.program, c._specs(c._bind(args, kwargs)))
        texts = sp.modules_for(c.program, rec, generic, form)
    except Exception:  # (a program this pass does not read, or a bug in it: the generic print is safe)
        return generic
    optimized: list[str] = []  # (the generic program's optimized HLO: compiled once, if needed)
    for text in texts:
        if text == generic or _same_program(c, text, args, kwargs, theirs, optimized):
            return text
    return generic


def _same_program(c: Compiled, text: str, args: tuple[Any, ...], kwargs: dict[str, Any], theirs: Any,
                  optimized: list[str]) -> bool:
    """Whether ``text`` (a module whose entry is ``c``'s, specialized) lowers, for these arguments, to
    the program ``c`` lowers to (``theirs``): the same output shapes, dtypes and structure, and the
    same StableHLO or else the same XLA optimized HLO up to names (XLA drops unread values)."""
    if not re.search(rf"^def {re.escape(c.program.entry.name)}\(", text, re.M):
        return False  # (exec_module would run the generic entry in its place: a text without it checks as alike)
    try:
        fn = exec_module(text, c.program)  # (the arguments the generic program took static, static here too)
        mine = Compiled(fn, static_argnames=tuple(sorted(c.static | c.auto_static))).lower(*args, **kwargs)
        if (mine.out_avals, mine.out_tree, mine.template) != (theirs.out_avals, theirs.out_tree, theirs.template):
            return False
        if mine.as_text() == theirs.as_text():
            return True
        if not optimized:
            optimized.append(canonical_hlo(theirs.compile().as_text()))
        return canonical_hlo(mine.compile().as_text()) == optimized[0] != ""
    except Exception:  # (anything that keeps it from being checked: the generic program is printed)
        return False


def exec_module(text: str, program: Any) -> Callable[..., Any]:
    """The entry function of ``text`` (a module ``srcjax.source`` printed for ``program``), each
    function of it run in the namespace of the function it was written from (as
    ``srcjax.numpy_function`` does), all linked by name."""
    entry = program.entry
    filename = f"<srcjax.source of {entry.fn.__qualname__} for its arguments #{next(_COUNTER)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    code = compile(text, filename, "exec")
    namespaces: dict[tuple[int, tuple[str, ...]], dict[str, Any]] = {}
    chosen: dict[str, Any] = {}
    keys = {name: (id(nf.source.globals), tuple(sorted(nf.source.closure))) for name, nf in program.functions.items()}
    for name, nf in program.functions.items():
        key = keys[name]
        ns = namespaces.get(key)
        if ns is None:
            ns = namespaces[key] = dict(nf.source.globals)
            ns.update(nf.source.closure)
            ns.update(np=np, math=math, srcjax=sys.modules["srcjax"])
            ns["__name__"] = getattr(nf.fn, "__module__", None) or "__main__"
            exec_functions(code, ns, {n for n, k in keys.items() if k == key})
        chosen[name] = ns.get(name, nf.fn)
    for ns in namespaces.values():
        ns.update(chosen)
    return chosen[entry.name]  # type: ignore[no-any-return]


_META = re.compile(r",? ?metadata=\{[^}]*\}|, ?origin=\{[^}]*\}|, ?frontend_attributes=\{[^}]*\}")
_TOKEN = re.compile(r"%[\w.\-]+")
_COMPUTATION = re.compile(r"^(ENTRY )?(%[\w.\-]+) .*\{$")
_INSTRUCTION = re.compile(r"^\s+(ROOT )?(%[\w.\-]+) = (.*)$")
_SIGNED = re.compile(r"^((?:f|bf|c)\d+\[\S*) (negate|multiply|divide)\((?:[^\s%]\S* )?(%[\w.\-]+)"
                     r"(?:, (?:[^\s%]\S* )?(%[\w.\-]+))?\)$")  # (floats: an integer's negation may wrap)
_BROADCAST = re.compile(r"^\S+ broadcast\((?:[^\s%]\S* )?(%[\w.\-]+)\), dimensions=\{\}$")
_MINUS_ONE = re.compile(r"^\S+ constant\(-1\)$")
_NEGATIVE = re.compile(r"^((?:f|bf)\d+\[\]) constant\(-([\w.+\-]+)\)$")  # (a float scalar: -c is negate(c))
_SPLAT = re.compile(r"^(\S+) broadcast\((?:[^\s%]\S* )?(%[\w.\-]+)\), dimensions=\{\}$")
_PARAMETER = re.compile(r"^\S+ parameter\((\d+)\)$")
_FUSION = re.compile(r"^(\S+) fusion\((.*)\), kind=\w+, calls=(%[\w.\-]+)(?:, backend_config=\{.*\})?$")
# (a GPU fusion carries a backend_config: how it launches, not what it computes)


def canonical_hlo(text: str) -> str:
    """XLA's optimized HLO text as digests of its entry computation's result and instructions, built
    from the operations (opcode, shapes, attributes and constants) and how they are wired, not from
    their names, their order or their metadata: two modules computing the same thing the same way
    agree. Also alike: a fusion and its computation inlined (however XLA numbers its parameters),
    ``a * b`` and ``b * a``, and where a float's negation sits in a product or quotient
    (``-a * b``, ``-(a * b)``, ``a * -b``, ``a * -1 * b``: the same numbers, exactly). Empty
    (comparable to nothing) where a constant is printed elided."""
    import hashlib

    if "{...}" in text:  # a large constant printed elided: not comparable
        return ""
    comps: dict[str, dict[str, str]] = {}
    roots: dict[str, str] = {}
    entry, current = "", ""
    text = _META.sub("", text)  # (a GPU module's header carries a fingerprint in its frontend attributes)
    for line in text.splitlines():
        m = _COMPUTATION.match(line)
        if m:
            current = m.group(2)
            comps[current] = {}
            entry = current if m.group(1) else entry
            continue
        m = _INSTRUCTION.match(line)
        if m and current:
            comps[current][m.group(2)] = m.group(3)
            if m.group(1):
                roots[current] = m.group(2)
    Signed = tuple[bool, str]
    memo: dict[tuple[str, str, tuple[Signed, ...] | None], Signed] = {}

    def sha(s: str) -> str:
        return hashlib.sha1(s.encode()).hexdigest()

    def minus_one(comp: str, t: str) -> bool:  # constant(-1), or it broadcast
        m = _BROADCAST.match(comps[comp].get(t, ""))
        return bool(_MINUS_ONE.match(comps[comp].get(m.group(1) if m else t, "")))

    def signed(comp: str, name: str, ctx: tuple[Signed, ...] | None = None) -> Signed:
        """(negated, digest) of an instruction. A fusion is its computation with the fusion's
        operands for its parameters (``ctx``: how XLA numbers them does not matter); a float's
        negations are carried up through products and quotients (``-a * b`` is ``-(a * b)``, and
        ``a * -1`` is ``-a``, exactly), so where XLA keeps them is not told apart."""
        key = (comp, name, ctx)
        if key in memo:
            return memo[key]
        line = comps[comp][name]
        m = _SIGNED.match(line)
        p = _PARAMETER.match(line)
        f = _FUSION.match(line)
        if p and ctx is not None and int(p.group(1)) < len(ctx):
            out = ctx[int(p.group(1))]
        elif f and f.group(3) in roots and all(t in comps[comp] for t in _TOKEN.findall(f.group(2))):
            inner = tuple(signed(comp, t, ctx) for t in _TOKEN.findall(f.group(2)))
            out = signed(f.group(3), roots[f.group(3)], inner)
        elif c := _NEGATIVE.match(line):
            out = (True, sha(f"{c.group(1)} constant({c.group(2)})"))
        elif (b := _SPLAT.match(line)) and b.group(2) in comps[comp]:  # (negation commutes with a splat)
            neg, h = signed(comp, b.group(2), ctx)
            out = (neg, sha(f"{b.group(1)} broadcast(<{h}>), dimensions={{}}"))
        elif m and m.group(2) == "negate" and m.group(3) in comps[comp]:
            neg, h = signed(comp, m.group(3), ctx)
            out = (not neg, h)
        elif m and m.group(4) is not None and {m.group(3), m.group(4)} <= comps[comp].keys():
            x, y = m.group(3), m.group(4)
            if m.group(2) == "multiply" and (minus_one(comp, y) or minus_one(comp, x)):
                neg, h = signed(comp, x if minus_one(comp, y) else y, ctx)
                out = (not neg, h)
            else:
                (nx, hx), (ny, hy) = signed(comp, x, ctx), signed(comp, y, ctx)
                if m.group(2) == "multiply":  # (it commutes)
                    hx, hy = sorted((hx, hy))
                out = (nx != ny, sha(f"{m.group(1)} {m.group(2)}(<{hx}>, <{hy}>)"))
        else:
            def sub(m: re.Match[str]) -> str:
                t = m.group(0)
                if t in comps[comp]:
                    return "<" + inst(comp, t, ctx) + ">"
                if t in comps and t in roots:
                    return "{" + inst(t, roots[t]) + "}"
                return t
            out = (False, sha(_TOKEN.sub(sub, line)))
        memo[key] = out
        return out

    def inst(comp: str, name: str, ctx: tuple[Signed, ...] | None = None) -> str:
        neg, h = signed(comp, name, ctx)
        return sha("negate " + h) if neg else h

    layout = re.search(r"entry_computation_layout=\{.*\}", text)
    if entry not in roots:  # pragma: no cover - XLA's text always has one
        return ""
    every = sorted(inst(entry, name) for name in comps[entry])  # (with what the result does not read)
    return (layout.group(0) if layout else "") + inst(entry, roots[entry]) + " " + " ".join(every)
