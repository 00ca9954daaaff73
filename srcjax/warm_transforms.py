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

from typing import Any

from . import warm_cache

# api's underscore name: the shared Compiled of a plain function (what every transformation reads)
from .api import _as_compiled
from .core import TranspileError

__all__ = ["identity_of", "jacobian_identity", "mark_written", "marked", "reads_of", "vmap_identity", "written_key"]


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
    # (options as JSON: numbers, strings, None, tuples and lists of them; None where another value)
    return warm_cache._plain(options)  # (warm_cache's own JSON form of plain values, as its keys use)


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
    from .runtime import disk_cache, get_backend

    if disk_cache.cache_dir() is None:
        return None
    inner = identity_of(base)
    if inner is None:
        return None
    try:
        return warm_cache.entry_key(["jacobian-written", kind, argnum, max_iters, inner], ("written",), device,
                                    disk_cache.environment(get_backend(device)))
    except (TypeError, ValueError):
        return None


def marked(key: str | None) -> bool:
    """Whether the marker under ``key`` is there and nothing it read has changed."""
    return key is not None and warm_cache.marked(key)


def mark_written(key: str | None, base: Any) -> None:
    """Note that the derivative under ``key`` was written from what ``base``'s programs read."""
    if key is not None:
        warm_cache.mark(key, reads_of(base))
