"""The level-2 persistent cache (``warm_cache.py``) for the transformations beyond jit and grad:
``vmap``, ``jacfwd``, ``jacrev``, ``hessian`` and their compositions (issue #18: a second process
running the same program skips reading, transforming, lowering and compiling).

A transformation's identity across processes is its kind and options over its function's identity
(``Compiled._warm_identity``), so ``vmap(grad(f))`` is ``["vmap", options, ["derived", "grad", ...,
["jit", f's identity]]]``. What a stored program depends on is what the front end read for it and for
every function under it, down to the user's function (``reads_of``): the files of the function and
its helpers, the module-level names they read. A Jacobian is built lazily in a process that finds
its marker (:func:`written_key`: the same Jacobian was written before from unchanged sources, so
writing it cannot raise): its derivative is written only when a call's program is not in the cache.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from . import warm_cache

# api's underscore name: the shared Compiled of a plain function (what every transformation reads)
from .api import _as_compiled
from .core import TranspileError

__all__ = ["identity_of", "jacobian_identity", "jvp_stand_in", "mark_split", "mark_written", "marked", "marked_split",
           "merged", "reads_of", "same_parameters", "split_identity", "split_layout", "split_marker", "stand_in",
           "vmap_identity", "written_key"]


def identity_of(fn: Any) -> list[Any] | None:
    """The identity of ``fn`` (a user's function, or a transformed one) across processes, or None."""
    try:
        return _as_compiled(fn)._warm_identity()
    except (TranspileError, TypeError, AttributeError):
        return None


def reads_of(fn: Any) -> warm_cache.Reads:
    """What the front end read for ``fn``'s programs and those under it (tainted where not known)."""
    try:
        return _as_compiled(fn)._warm_reads()
    except TranspileError:
        reads = warm_cache.Reads()
        reads.taint("its function could not be read")
        return reads


def _options(options: Any) -> Any:
    # (options as JSON: numbers, strings, None, tuples and lists of them, a record's class by its name (vmap's
    # in_axes as a NamedTuple or a dataclass: their fields are beside it); None where another value)
    return warm_cache._plain(_named_classes(options))  # (warm_cache's own JSON form of plain values, as its keys)


def _named_classes(v: Any) -> Any:
    if isinstance(v, (tuple, list)):
        return type(v)(_named_classes(x) for x in v)
    if isinstance(v, type):
        return warm_cache.stable(v) or v
    return v


def vmap_identity(options: Any, fn: Any) -> list[Any] | None:
    """``vmap(fn, ...)``'s identity: its options (in_axes, out_axes, axis_size, axis_name, and which
    form it batches) over ``fn``'s."""
    opts = _options(options)
    inner = identity_of(fn) if opts is not None else None
    return None if inner is None else ["vmap", opts, inner]


def jacobian_identity(kind: str, argnum: int, max_iters: int | None, hessian: bool, base: Any) -> list[Any] | None:
    """A Jacobian's identity (``hessian``: the forward-over-reverse Jacobian ``srcjax.hessian`` made)."""
    inner = identity_of(base)
    return None if inner is None else ["jacobian", kind, argnum, max_iters, hessian, inner]


def written_key(kind: str, argnum: int, max_iters: int | None, base: Any, device: str | None) -> str | None:
    """The level-2 key of the marker noting that this Jacobian's derivative was written (None: not cached)."""
    return _marker_key(["jacobian-written", kind, argnum, max_iters], base, device)


def _marker_key(what: list[Any], base: Any, device: str | None) -> str | None:
    """The level-2 key of a marker: ``what`` (its kind and options) over ``base``'s identity (None: not cached)."""
    from .runtime import disk_cache, get_backend

    if disk_cache.cache_dir() is None:
        return None
    inner = identity_of(base)
    if inner is None:
        return None
    try:
        return warm_cache.entry_key([*what, inner], ("written",), device, disk_cache.environment(get_backend(device)))
    except (TypeError, ValueError):
        return None


def marked(key: str | None) -> bool:
    """Whether the marker under ``key`` is there and nothing it read has changed."""
    return key is not None and warm_cache.marked(key)


def mark_written(key: str | None, base: Any) -> None:
    """Note that the derivative under ``key`` was written from what ``base``'s programs read."""
    if key is not None:
        warm_cache.mark(key, reads_of(base))


def jvp_stand_in(signature: inspect.Signature, argnums: Any) -> Callable[..., Any] | None:
    """What stands in for ``jvp(f)``'s derivative until it is written (``autodiff._wrap_new``): a function
    of its signature, ``f``'s positional parameters (their defaults written out by the caller), a tangent
    ``p_dot`` per differentiated one, then ``f``'s keyword-only ones; None where that is not known so (a
    ``*args``, a name taken). A process marks the derivative written only where the signatures agree."""
    P = inspect.Parameter
    params = list(signature.parameters.values())
    if not isinstance(argnums, tuple) or any(p.kind not in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY) for p in params):
        return None
    pos = [p.replace(default=P.empty) for p in params if p.kind is P.POSITIONAL_OR_KEYWORD]
    names = {p.name for p in params}
    dots = []
    for i in argnums:
        if type(i) is not int or not 0 <= i < len(pos) or f"{pos[i].name}_dot" in names:
            return None
        names.add(f"{pos[i].name}_dot")
        dots.append(P(f"{pos[i].name}_dot", P.POSITIONAL_OR_KEYWORD))

    def stand_in(*args: Any, **kwargs: Any) -> Any:  # pragma: no cover - never called (its signature is read)
        raise AssertionError("a lazy derivative's stand-in is not called")

    stand_in.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [*pos, *dots, *(p for p in params if p.kind is P.KEYWORD_ONLY)])
    return stand_in


def same_parameters(a: Callable[..., Any], b: Callable[..., Any]) -> bool:
    """Whether ``a`` and ``b`` take the same parameters (names, kinds, the same defaults: one object, or
    values with one stable description, as a generated derivative's copy ``2.0`` of the user's ``s=2.0``)."""
    pa, pb = list(inspect.signature(a).parameters.values()), list(inspect.signature(b).parameters.values())
    return len(pa) == len(pb) and all(p.name == q.name and p.kind == q.kind and _same_default(p.default, q.default)
                                      for p, q in zip(pa, pb))


def _same_default(a: Any, b: Any) -> bool:
    return a is b or (warm_cache.stable(a) is not None and warm_cache.stable(a) == warm_cache.stable(b))


# -- srcjax.vjp's split halves ----------------------------------------------------------------------
# A process that wrote the two halves of ``vjp(f)`` (``split_vjp._SplitVJP``) marks them with their layout:
# the parameter names of the forward and backward halves, which primals the backward half takes again and
# how many residuals the forward half returns. A later process finding that marker makes both halves lazily
# (stand-ins of those signatures) and each is written only when its call's program is not in the cache.

def split_identity(half: str, max_iters: int | None, base: Any, static: Any) -> list[Any] | None:
    """The identity of one half (``"fwd"`` or ``"bwd"``) of ``vjp(base)``'s split, with its static parameters."""
    inner = identity_of(base)
    return None if inner is None else ["vjp-split", half, max_iters, inner, sorted(static)]


def split_marker(max_iters: int | None, n: int, base: Any, device: str | None) -> str | None:
    """The level-2 key of the marker noting that ``vjp(base)``'s split halves were written (None: not cached)."""
    return _marker_key(["vjp-split-written", max_iters, n], base, device)


def split_layout(fwd: Callable[..., Any], bwd: Callable[..., Any], reads: Any, nres: int) -> list[Any] | None:
    """The halves' layout as JSON, or None where a stand-in could not take their place (a parameter with a
    default or of another kind than positional-or-keyword)."""
    names = []
    for f in (fwd, bwd):
        params = list(inspect.signature(f).parameters.values())
        if any(p.kind is not p.POSITIONAL_OR_KEYWORD or p.default is not p.empty for p in params):
            return None
        names.append([p.name for p in params])
    return [names[0], names[1], [int(i) for i in reads], int(nres)]


def marked_split(key: str | None) -> list[Any] | None:
    """The layout marked under ``key`` (checked: its shape and types) if nothing it read has changed."""
    data: Any = warm_cache.marked_data(key) if key is not None else warm_cache.MISSING
    try:
        fwd, bwd, reads, nres = data
        if all(type(p) is str for p in [*fwd, *bwd]) and all(type(i) is int for i in [*reads, nres]):
            return [list(fwd), list(bwd), list(reads), nres]
    except (TypeError, ValueError):
        pass
    return None


def mark_split(key: str | None, layout: list[Any] | None, *reads: warm_cache.Reads) -> None:
    """Note that ``vjp``'s split under ``key`` was written, with its ``layout``, from what ``reads`` hold."""
    if key is not None and layout is not None:
        warm_cache.mark(key, *reads, data=layout)


def merged(*reads: warm_cache.Reads) -> warm_cache.Reads:
    """One :class:`warm_cache.Reads` holding all of ``reads``."""
    out = warm_cache.Reads()
    for r in reads:
        out.merge(r)
    return out


def stand_in(names: list[str]) -> Callable[..., Any]:
    """A function of these positional-or-keyword parameters (what stands in for a half not written yet)."""
    P = inspect.Parameter

    def stand(*args: Any, **kwargs: Any) -> Any:  # pragma: no cover - never called (its signature is read)
        raise AssertionError("a lazy derivative's stand-in is not called")

    stand.__signature__ = inspect.Signature([P(n, P.POSITIONAL_OR_KEYWORD) for n in names])  # type: ignore[attr-defined]
    return stand
