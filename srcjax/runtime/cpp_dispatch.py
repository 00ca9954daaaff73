"""jaxlib's C++ dispatcher (``_jax.pjit``) driven without jax: the cache-hit path of a call in C++.

A ``PjitFunction`` flattens a call's arguments, computes their signature (shapes, dtypes, weak
types, shardings, the tree structure), looks it up, and on a hit executes the program and builds
the results, all in C++ (``shared/RUNTIME_FACTS.md``, "C++ pjit path"). On a miss it calls back
into Python (``cache_miss``), which runs srcjax's own path and hands back a *fast-path record*
(:func:`fastpath`) describing the executable for that signature, or None to keep falling back.

srcjax's :class:`~srcjax.runtime.xla.Array` is registered in a private pytree registry as a
node whose one child is its device buffer (``_buf``): the C++ side sees jaxlib arrays, and builds
srcjax arrays around its results (``Array(_buf=...)``). Only device arrays go through the fast
path (:mod:`srcjax.cpp_calls` checks every record before it is handed over). NumPy and Python
number leaves keep srcjax's own upload: the C++ side's upload of a NumPy array aliases its memory
(a write to the array right after the call changes the result: measured), and with jax imported
and ``jax_enable_x64`` off it keys float64 and float32 host arrays alike.

Traps (RUNTIME_FACTS): ``kept_var_bitvec`` of the wrong length crashes the process, and wrong
``out_avals`` are taken silently, so :func:`fastpath` builds both from the executable itself.
``SRCJAX_CPP_DISPATCH=1`` turns the path on; it is off by default because it did not measure
faster than srcjax's Python path on the development machine (``docs/benchmarks.md``), where
srcjax's own wrapping (a Python ``Array`` built per result, the ``__call__`` frame) dominates.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from jaxlib import _jax  # type: ignore[attr-defined]

from ..core import ShapedArray
from .xla import Array, Executable

__all__ = ["enabled", "make", "flatten", "same_signatures", "fastpath", "out_treedef", "Array", "BUFFER"]

BUFFER: Any = _jax.ArrayImpl  # what a srcjax.Array's device buffer is (the fast path's only leaf kind)


class _Record(NamedTuple):
    """The fields ``_jax.pjit`` reads from a cache miss's record (jax's ``MeshExecutableFastpathData``)."""

    xla_executable: Any
    out_pytree_def: Any
    in_shardings: Sequence[Any]
    out_shardings: Sequence[Any]
    out_avals: Sequence[ShapedArray]
    out_committed: Sequence[bool]
    kept_var_bitvec: Sequence[bool]
    in_device_local_layouts: Sequence[Any]
    const_args: Sequence[Any]


class _State:
    registry: Any = None
    cache: Any = None
    ok: bool | None = None


_LOCK = threading.Lock()


def enabled() -> bool:
    """Whether calls may use the C++ dispatcher: ``SRCJAX_CPP_DISPATCH=1`` and this jaxlib has it
    (0.10, where it is tested; older ones need more setup)."""
    if os.environ.get("SRCJAX_CPP_DISPATCH", "0").strip().lower() not in ("1", "true", "yes", "on"):
        return False
    if _State.ok is None:
        with _LOCK:
            if _State.ok is None:
                _State.ok = _setup()
    return _State.ok


def _setup() -> bool:
    import jaxlib

    try:
        major, minor = (int(p) for p in jaxlib.__version__.split(".")[:2])
    except ValueError:
        return False
    if (major, minor) < (0, 10) or not hasattr(_jax, "pjit") or not hasattr(_jax, "PjitFunctionCache"):
        return False
    registry = _jax.pytree.PyTreeRegistry()
    registry.register_dataclass_node(Array, ["_buf"], [])  # (ShardedArray, a subclass, stays a leaf)
    if "jax._src.config" not in sys.modules:  # jax sets these itself (and again when imported later)
        jit = _jax.jax_jit
        jit.set_disable_jit_state(_jax.config.Config("jax_disable_jit", False, include_in_jit_key=False,
                                                     include_in_trace_context=True))
        jit.set_enable_x64_state(_jax.config.Config("jax_enable_x64", True, include_in_jit_key=True,
                                                    include_in_trace_context=True))
        jit.set_post_hook_state(_jax.config.Config("post_hook", None, include_in_jit_key=False))
    _State.registry = registry
    _State.cache = _jax.PjitFunctionCache(capacity=4096)
    return True


def _no_host_values(x: Any, sharding: Any, layout: Any, *rest: Any) -> Any:
    """``shard_arg_fallback``: a fast-path record is only made for calls whose leaves are all device
    arrays, so a host value never reaches here (a guard, should a jaxlib change route one here)."""
    raise TypeError(f"srcjax: the C++ dispatcher was handed a {type(x).__name__}; "
                    "unset SRCJAX_CPP_DISPATCH and report this")


def make(name: str, fun: Callable[..., Any], cache_miss: Callable[..., Any], key: Any) -> Any:
    """A C++ ``PjitFunction``: ``cache_miss(*args)`` returns ``(result, record or None, False)``;
    ``fun`` runs a call in Python (what it does under jax's ``disable_jit``). ``key`` tells apart
    functions that share ``fun``'s code."""
    return _jax.pjit(name, fun, cache_miss, [], [], key, _State.registry, _no_host_values, _State.cache)


def flatten(args: tuple[Any, ...]) -> list[Any]:
    """The leaves the C++ side sees for ``args``: srcjax arrays as their device buffers."""
    return _State.registry.flatten(args)[0]  # type: ignore[no-any-return]


class _Slot:
    """A placeholder result buffer (see :func:`out_treedef`)."""

    __slots__ = ()


def out_treedef(build: Callable[[list[Any]], Any], n_out: int) -> Any:
    """The C++ structure of a program's results, whose ``unflatten`` of its ``n_out`` result
    buffers gives what srcjax returns (srcjax arrays in their containers), or None when the results
    hold anything else (a Python value fixed at compile time, a dataclass). ``build(arrays)`` is
    srcjax's own rebuilding of the results from a list of srcjax arrays."""
    slots = [_Slot() for _ in range(n_out)]
    arrays = []
    for s in slots:
        a = Array.__new__(Array)
        a._buf = s
        arrays.append(a)
    leaves, tree = _State.registry.flatten(build(arrays))
    if len(leaves) != n_out or any(a is not b for a, b in zip(leaves, slots)):
        return None
    return tree


def same_signatures(leaves: Sequence[Any], avals: Sequence[ShapedArray]) -> bool:
    """Whether every leaf is a device buffer of exactly the shape, dtype and weak type srcjax compiled
    for. Host values never take the C++ path: its upload of a NumPy array aliases the array's memory
    (a write right after the call changes the result, measured), where srcjax's own upload copies."""
    if len(leaves) != len(avals):
        return False
    for b, a in zip(leaves, avals):
        if type(b) is not BUFFER:
            return False
        v = b.aval
        if v.shape != a.shape or v.dtype != a.dtype or v.weak_type != a.weak_type:
            return False
    return True


def fastpath(exe: Any, leaves: Sequence[Any], out_def: Any) -> _Record | None:
    """The record for ``exe`` called with device buffers ``leaves`` (as their shardings say), or None
    where the C++ path cannot run it the way srcjax does (a sharded program, another device)."""
    if type(exe) is not Executable:
        return None
    backend = exe.backend
    shardings = []
    for b in leaves:
        if type(b) is not BUFFER or b._sharding._device != backend.device:
            return None
        shardings.append(b._sharding)
    n_in, n_out = len(leaves), len(exe.out_avals)
    return _Record(exe.loaded, out_def, shardings, [backend.result_sharding] * n_out,
                   list(exe.out_avals), [True] * n_out, [True] * n_in, [None] * n_in, [])
