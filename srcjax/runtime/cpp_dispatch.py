"""jaxlib's C++ dispatcher (``_jax.pjit``) driven without jax: the cache-hit path of a call in C++.

A ``PjitFunction`` flattens a call's arguments, computes their signature (shapes, dtypes, weak
types, shardings, the tree structure), looks it up, and on a hit executes the program and builds
the results, all in C++ (``shared/RUNTIME_FACTS.md``, "C++ pjit path"). On a miss it calls back
into Python (``cache_miss``), which runs srcjax's own path and hands back a *fast-path record*
(:func:`fastpath`) describing the executable for that signature, or None to keep falling back.

srcjax's :class:`~srcjax.runtime.xla.Array` is registered in a private pytree registry as a
node whose one child is its device buffer (``_buf``): the C++ side sees jaxlib arrays. The
results' structure (:func:`out_treedef`) comes from a second registry, where the whole structure is
one node rebuilt by one small generated function from the result buffers (:func:`_builder`), not by
calling ``Array(_buf=...)`` with keywords (a dictionary and an ``__init__`` frame per result: 0.28 us
against 0.16 us). Where the cost over ``jax.jit`` goes (instructions per call counted by callgrind,
``x * 2.0 + 1.0`` of an f32[] on the device, a ``jax.jit``-like PjitFunction of the same executable
at 34.4k): an Array argument's flattening ~1.0k (a node and a ``getattr`` of ``_buf``, where jax's
argument is a leaf), the result's building ~2.0k plus its release ~0.4k (a Python frame and an
allocation, where jax's result is built in C++), ``Compiled.__call__``'s property ~0.4k.

Host leaves (NumPy arrays, Python numbers): the C++ side's upload of a NumPy array *aliases* its
memory on the CPU (zero-copy, read while the program runs: a write to the array right after the call
changes the result, measured with jax), so a record that takes NumPy arrays as they are gets results
whose rebuilding waits for the program (:func:`out_treedef`'s ``ready``); otherwise the C++ side is
handed NumPy arrays srcjax copied itself (``cpp_calls.py``: those calls go to a second dispatcher).
With jax imported and ``jax_enable_x64`` off it keys float64 and float32 host arrays alike
(:func:`x64` tells; such calls keep srcjax's own path or copies), and every record is checked against
the C++ side's own signature of each leaf (:func:`same_signatures`).

Traps (RUNTIME_FACTS): ``kept_var_bitvec`` of the wrong length crashes the process, and wrong
``out_avals`` are taken silently, so :func:`fastpath` builds both from the executable itself.
On by default; ``SRCJAX_CPP_DISPATCH=0`` turns it off (srcjax's Python path alone).
"""

from __future__ import annotations

import operator
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from jaxlib import _jax  # type: ignore[attr-defined]

from ..core import ShapedArray
from .xla import Array, Executable

__all__ = ["enabled", "make", "flatten", "same_signatures", "fastpath", "out_treedef", "x64", "x64_state", "Array",
           "BUFFER"]

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
    registry: Any = None  # arguments: srcjax.Array -> its buffer (C++ attribute reads)
    out_registry: Any = None  # results: buffer -> srcjax.Array (_rebuild)
    cache: Any = None
    x64: Any = None  # the jax_enable_x64 state srcjax set (None: jax's own)
    ok: bool | None = None


_LOCK = threading.Lock()


def enabled() -> bool:
    """Whether calls may use the C++ dispatcher: this jaxlib has it (0.10, where it is tested; older
    ones need more setup) and ``SRCJAX_CPP_DISPATCH`` does not say 0/false/no/off."""
    if os.environ.get("SRCJAX_CPP_DISPATCH", "1").strip().lower() in ("0", "false", "no", "off"):
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
    out_registry = _jax.pytree.PyTreeRegistry()
    out_registry.register_node(Array, _children, _rebuild)
    out_registry.register_node(_Ready, _children, _rebuild_ready)
    out_registry.register_node(_Results, _results_children, operator.call)
    if "jax._src.config" not in sys.modules:  # jax sets these itself (and again when imported later)
        jit = _jax.jax_jit
        jit.set_disable_jit_state(_jax.config.Config("jax_disable_jit", False, include_in_jit_key=False,
                                                     include_in_trace_context=True))
        _State.x64 = _jax.config.Config("jax_enable_x64", True, include_in_jit_key=True,
                                        include_in_trace_context=True)
        jit.set_enable_x64_state(_State.x64)
        jit.set_post_hook_state(_jax.config.Config("post_hook", None, include_in_jit_key=False))
    _State.registry = registry
    _State.out_registry = out_registry
    _State.cache = _jax.PjitFunctionCache(capacity=4096)
    return True


def _children(a: Array) -> tuple[tuple[Any], Any]:
    return (a._buf,), a.aval


def _rebuild(aval: Any, children: Any, array: type = Array) -> Array:
    """A result: the srcjax.Array around its buffer (what ``wrap(buf, aval)`` builds, without the call)."""
    a = array()
    a._buf = children[0]
    a.aval = aval
    a._np = None
    return a


class _Ready(Array):
    """The first result of a call that reads NumPy memory in place (:func:`out_treedef`'s ``ready``): its
    rebuilding waits for the program to finish, so the call returns only once that memory is read."""

    __slots__ = ()


def _rebuild_ready(aval: Any, children: Any, array: type = Array) -> Array:
    """A call's first result, once the program has run (all its results share one completion event on
    the CPU; the host arrays it was handed in place are not read after that): :func:`_rebuild`'s work,
    inlined (one Python frame per result)."""
    a = array()
    a._buf = children[0].block_until_ready()
    a.aval = aval
    a._np = None
    return a


def x64() -> bool:
    """Whether the C++ side keys and uploads 64-bit host values as they are (jax's ``jax_enable_x64``;
    srcjax sets it on where jax is not imported). Off, it takes float64 for float32 (and int64 for int32)."""
    if _State.x64 is not None and "jax._src.config" not in sys.modules:
        return bool(_State.x64.value)
    config = sys.modules.get("jax._src.config")
    state = getattr(config, "enable_x64", None)
    return bool(getattr(state, "value", False))


def x64_state() -> Any:
    """jax's ``jax_enable_x64`` config, which the C++ side reads, where jax is imported with it off (the
    C++ side then keys and uploads 64-bit host values as 32-bit), or None: a thread-local True set on it
    around a call (``swap_local``, as jax's ``enable_x64`` context does) makes the C++ side key that call's
    host values as srcjax does (``cpp_calls.py``'s ``wide``)."""
    if x64():
        return None
    state = getattr(sys.modules.get("jax._src.config"), "enable_x64", None)
    return state if hasattr(state, "swap_local") and hasattr(state, "set_local") else None


def _no_host_values(x: Any, sharding: Any, layout: Any, *rest: Any) -> Any:
    """``shard_arg_fallback``: records hand every leaf to the C++ side itself (device buffers as they are,
    srcjax's private copies of NumPy arrays uploaded by it), so nothing reaches here (a guard, should a
    jaxlib change route a value here)."""
    raise TypeError(f"srcjax: the C++ dispatcher was handed a {type(x).__name__}; "
                    "unset SRCJAX_CPP_DISPATCH and report this")


def default_flatten() -> Callable[[Any], tuple[list[Any], Any]]:
    """jaxlib's default pytree flattening (srcjax arrays are leaves there; its ``unflatten`` rebuilds)."""
    return _jax.pytree.default_registry().flatten  # type: ignore[no-any-return]


def make(name: str, fun: Callable[..., Any], cache_miss: Callable[..., Any], key: Any,
         static_argnums: Sequence[int] = (), static_argnames: Sequence[str] = ()) -> Any:
    """A C++ ``PjitFunction``: ``cache_miss(*args)`` returns ``(result, record or None, False)``;
    ``fun`` runs a call in Python (what it does under jax's ``disable_jit``). ``key`` tells apart
    functions that share ``fun``'s code. The arguments at ``static_argnums`` (or passed by a name in
    ``static_argnames``) are keyed by their hash and equality (and type) and not handed to the program:
    a record's leaves are the other arguments'."""
    return _jax.pjit(name, fun, cache_miss, list(static_argnums), list(static_argnames), key, _State.registry,
                     _no_host_values, _State.cache)


def flatten(args: tuple[Any, ...]) -> list[Any]:
    """The leaves the C++ side sees for ``args``: srcjax arrays as their device buffers."""
    return _State.registry.flatten(args)[0]  # type: ignore[no-any-return]


class _Slot:
    """A placeholder result buffer (see :func:`out_treedef`)."""

    __slots__ = ()


class _Results:
    """A call's whole result structure as one node of the results' registry (:func:`out_treedef`): its
    children are the result buffers, its data the function that builds srcjax's results from them
    (:func:`_builder`), which the registry calls (``operator.call``: no Python frame of its own)."""

    __slots__ = ("slots", "build")

    def __init__(self, slots: list[Any], build: Callable[[Sequence[Any]], Any]) -> None:
        self.slots = slots
        self.build = build


def _results_children(r: _Results) -> tuple[list[Any], Any]:
    return r.slots, r.build


class _Unsupported(Exception):
    """A result structure :func:`_builder` does not write (a dataclass, a node of the user's)."""


def _builder(results: Any, arrays: Sequence[Array], avals: Sequence[ShapedArray],
             ready: bool) -> Callable[[Sequence[Any]], Any] | None:
    """A function of the result buffers (in order) building ``results``' structure (tuples, lists, dicts,
    NamedTuples, None) with a new srcjax.Array around each buffer, written as Python source once per
    program: one call per call where a node per result costs ~0.2 us each (the registry's custom-node
    path). ``arrays`` are the placeholder results in ``results``; ``ready``: the first waits for the
    program (see :func:`out_treedef`). None for any other structure."""
    index = {id(a): i for i, a in enumerate(arrays)}
    used: list[int] = []
    consts: list[Any] = []

    def expr(o: Any) -> str:
        t = type(o)
        if t is Array or t is _Ready:
            i = index.get(id(o))
            if i is None:
                raise _Unsupported
            used.append(i)
            return f"a{i}"
        if o is None:
            return "None"
        if t is tuple:
            return "(" + "".join(expr(x) + ", " for x in o) + ")"
        if t is list:
            return "[" + ", ".join(expr(x) for x in o) + "]"
        if t is dict:
            items = []
            for k, v in o.items():
                if type(k) is str or type(k) is int:  # (written as a literal: a display of constant keys is
                    items.append(f"{k!r}: {expr(v)}")  # one BUILD_CONST_KEY_MAP)
                    continue
                consts.append(k)
                items.append(f"K[{len(consts) - 1}]: {expr(v)}")
            return "{" + ", ".join(items) + "}"
        if isinstance(o, tuple) and isinstance(getattr(t, "_fields", None), tuple) and t.__new__ is not tuple.__new__:
            consts.append(t)
            return f"K[{len(consts) - 1}](" + ", ".join(expr(x) for x in o) + ")"
        raise _Unsupported

    try:
        body = expr(results)
    except _Unsupported:
        return None
    if sorted(used) != list(range(len(arrays))):
        return None
    # (the buffers unpacked at once and each aval a default, read as a local: no subscript per result)
    n = len(arrays)
    lines = ["def build(b, K=K, A=A, " + "".join(f"V{i}=V[{i}], " for i in range(n)) + "):",
             "    " + "".join(f"b{i}, " for i in range(n)) + "= b"]
    for i in range(n):
        buf = f"b{i}.block_until_ready()" if ready and i == 0 else f"b{i}"
        lines.append(f"    a{i} = A(); a{i}._buf = {buf}; a{i}.aval = V{i}; a{i}._np = None")  # (A(): no frame)
    lines.append(f"    return {body}")
    scope: dict[str, Any] = {"V": tuple(avals), "K": tuple(consts), "A": Array}
    exec(compile("\n".join(lines), "<srcjax results>", "exec"), scope)
    return scope["build"]  # type: ignore[no-any-return]


def out_treedef(build: Callable[[list[Any]], Any], avals: Sequence[ShapedArray], ready: bool = False) -> Any:
    """The C++ structure of a program's results, whose ``unflatten`` of its result buffers gives what
    srcjax returns (srcjax arrays in their containers), or None when the results hold anything else
    (a Python value fixed at compile time, a dataclass). ``build(arrays)`` is srcjax's own rebuilding
    of the results from a list of srcjax arrays; ``avals`` are the results' (one per buffer). With
    ``ready``, its ``unflatten`` waits for the program to finish (for calls that hand the program NumPy
    memory in place: see ``cpp_calls.py``), and a program without results has none (None)."""
    n_out = len(avals)
    if ready and not n_out:
        return None
    slots = [_Slot() for _ in range(n_out)]
    arrays = [_rebuild(a, (s,)) for s, a in zip(slots, avals)]
    if ready:
        arrays[0] = _rebuild(avals[0], (slots[0],), array=_Ready)
    results = build(arrays)
    leaves, tree = _State.out_registry.flatten(results)
    if len(leaves) != n_out or any(a is not b for a, b in zip(leaves, slots)):
        return None
    whole = _builder(results, arrays, avals, ready) if n_out else None
    if whole is not None:  # (one node for the whole structure: one Python call per call)
        leaves, tree = _State.out_registry.flatten(_Results(slots, whole))
        if len(leaves) != n_out or any(a is not b for a, b in zip(leaves, slots)):  # pragma: no cover - a guard
            return None
    return tree


HOST = (np.ndarray, float, int, bool)  # the host leaves a record may take (uploaded by the C++ side)


def same_signatures(leaves: Sequence[Any], avals: Sequence[ShapedArray], host: bool = False) -> bool:
    """Whether every leaf is, as the C++ side sees and uploads it, of exactly the shape, dtype and weak
    type srcjax compiled for: a device buffer, or (``host``) a NumPy array or Python number (whose
    upload by the C++ side aliases a NumPy array's memory: ``cpp_calls.py`` says when that is safe)."""
    if len(leaves) != len(avals):
        return False
    wide = None
    for b, a in zip(leaves, avals):
        t = type(b)
        if t is BUFFER:
            v = b.aval
        elif host and t in HOST:
            if wide is None:
                wide = x64()
            v = _jax.jax_jit._ArgSignatureOfValue(b, wide)  # (what the C++ side keys and uploads)
        else:
            return False
        if tuple(v.shape) != a.shape or v.dtype != a.dtype or v.weak_type != a.weak_type:
            return False
    return True


def fastpath(exe: Any, leaves: Sequence[Any], out_def: Any) -> _Record | None:
    """The record for ``exe`` called with ``leaves``: device buffers (as their shardings say) and host
    values (uploaded by the C++ side to the program's device); None where the C++ path cannot run it
    the way srcjax does (a sharded program, another device)."""
    if type(exe) is not Executable:
        return None
    backend = exe.backend
    shardings = []
    for b in leaves:
        if type(b) is not BUFFER:
            if type(b) not in HOST:
                return None
            shardings.append(backend.result_sharding)
            continue
        if b._sharding._device != backend.device:
            return None
        shardings.append(b._sharding)
    n_in, n_out = len(leaves), len(exe.out_avals)
    return _Record(exe.loaded, out_def, shardings, [backend.result_sharding] * n_out,
                   list(exe.out_avals), [True] * n_out, [True] * n_in, [None] * n_in, [])
