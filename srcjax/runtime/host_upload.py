"""Uploads that do not import ml_dtypes: host arrays handed to the device by a tiny XLA program.

jaxlib's ``batched_device_put`` (and its DLPack upload) import ``ml_dtypes`` the first time they
run, which costs 0.7-1.8 s on these machines (``shared/RUNTIME_FACTS.md``): a short job paid it
at its first call. Executing a program and reading its results does not import it. So until
something else has imported ml_dtypes, srcjax uploads a call's NumPy arguments on CPU with one
program per signature of arguments, ``@main() -> (tensor<..>, ...)``, whose body is a single
host callback (``xla_ffi_python_cpu_callback``) returning the arrays: XLA copies them into its
own buffers (so later NumPy mutation cannot leak in, as with ``IMMUTABLE_ONLY_DURING_CALL``).
All the leaves of a call go up in one execution. Once ml_dtypes is imported (a bfloat16 array,
the user's own import), ``batched_device_put`` is used again. For one or two leaves it is faster
(a tiny call with a NumPy argument pays ~5-10 us more through the callback; with 8 leaves and more
the callback is faster), so after :data:`BUDGET` uploads this way (a long loop) srcjax goes back to
``batched_device_put`` and pays the import once: by then that is the cheaper choice.

With ml_dtypes imported (by jax, or by the user), ``batched_device_put`` is at hand and the program only
saves microseconds a call (2+ leaves), while compiling it costs a signature's first call 8-40 ms of wall
time (XLA compiles on its own threads: the calling thread's CPU hardly shows it). So the first
:data:`YOUNG` uploads of a signature go leaf by leaf (``upload`` returns None), and only a signature
used more often gets its program (< 1 ms of leaf-by-leaf uploads before it, for 6 leaves).

The callback gets back exactly the dtypes and shapes the program declares (XLA would take others
silently as garbage): every array is made C-contiguous in the declared dtype first. The program is
compiled once per process and signature, and stored in the persistent cache
(``runtime/disk_cache.py``) like any other; loading it again binds a new callback.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import ShapedArray
from ..lower.hlo import aval_type

__all__ = ["active", "prepare", "upload"]

# dtypes whose bytes NumPy and XLA lay out alike (bfloat16 and float8 arrive with ml_dtypes imported)
_NATIVE = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128))
_PROGRAMS: dict[tuple[Any, ...], tuple[Any, list[Any], _Slot]] = {}
BUDGET = 50_000  # uploads through the callback before batched_device_put takes over (~0.7 s of import)
_LEFT = [BUDGET]
_LOCK = threading.Lock()
YOUNG = 64  # with ml_dtypes imported: a signature's uploads leaf by leaf before its program is compiled
_SEEN: dict[tuple[Any, ...], int] = {}  # signature -> its uploads without a program (ml_dtypes imported)


def active() -> bool:
    """Whether uploads should avoid ``batched_device_put`` (ml_dtypes not imported yet, budget left)."""
    return _LEFT[0] > 0 and "ml_dtypes" not in sys.modules


def program_text(avals: Sequence[ShapedArray]) -> str:
    """The upload program: no arguments, one host callback returning every array."""
    types = ", ".join(aval_type(a) for a in avals)
    n = len(avals)
    name = f"%r:{n}" if n > 1 else "%r"
    results = ", ".join(f"%r#{i}" for i in range(n)) if n > 1 else "%r"
    return (f"module @srcjax_upload {{\n"
            f"  func.func public @main() -> ({types}) {{\n"
            f"    {name} = stablehlo.custom_call @xla_ffi_python_cpu_callback() "
            f"{{mhlo.backend_config = {{index = 0 : ui64}}}} : () -> ({types})\n"
            f"    return {results} : {types}\n"
            f"  }}\n}}\n")


class _Slot:
    """The arrays one execution of an upload program hands over; one upload at a time per program."""

    __slots__ = ("arrays", "lock")

    def __init__(self) -> None:
        self.arrays: tuple[np.ndarray, ...] | None = None
        self.lock = threading.Lock()


_LAST: dict[int, tuple[Sequence[ShapedArray], Any, tuple[Any, list[Any], _Slot]]] = {}  # id(avals) -> program


def _program_of(avals: Sequence[ShapedArray], backend: Any) -> tuple[Any, list[Any], _Slot]:
    """:func:`_program`, remembered by the identity of ``avals`` (a plan's list, passed on every call:
    no key built per call); the entry holds the list, so its id cannot be reused while it is there."""
    hit = _LAST.get(id(avals))
    if hit is not None and hit[0] is avals and hit[1] is backend:
        return hit[2]
    program = _program(tuple(avals), backend)
    if len(_LAST) > 256:
        _LAST.clear()
    _LAST[id(avals)] = (avals, backend, program)
    return program


def _key(avals: Sequence[ShapedArray], backend: Any) -> tuple[Any, ...]:
    return id(backend), tuple((a.shape, a.dtype, a.weak_type) for a in avals)


def _young(avals: Sequence[ShapedArray], backend: Any) -> bool:
    """Whether ``avals``' program is not compiled yet and should not be yet: ml_dtypes is imported (leaf by
    leaf costs microseconds) and the signature has gone up fewer than :data:`YOUNG` times (counted here)."""
    if "ml_dtypes" not in sys.modules:
        return False
    key = _key(avals, backend)
    if key in _PROGRAMS:
        return False
    n = _SEEN.get(key, 0)
    if n >= YOUNG:
        return False
    if len(_SEEN) > 4096:
        _SEEN.clear()
    _SEEN[key] = n + 1
    return True


def _program(avals: tuple[ShapedArray, ...], backend: Any) -> tuple[Any, list[Any], _Slot]:
    key = _key(avals, backend)
    hit = _PROGRAMS.get(key)
    if hit is not None:
        return hit
    slot = _Slot()

    def give() -> tuple[np.ndarray, ...]:
        out = slot.arrays
        slot.arrays = None
        if out is None:  # (cannot happen while upload() holds the lock until the arrays are taken)
            raise RuntimeError("srcjax: an upload program ran without arrays to hand over")
        return out

    loaded = backend.compile_with_callbacks(program_text(avals), [give])
    handlers = [backend.result_handler(a) for a in avals]
    with _LOCK:
        hit = _PROGRAMS.setdefault(key, (loaded, handlers, slot))
    return hit


def prepare(avals: Sequence[ShapedArray], backend: Any) -> None:
    """Load (or compile) ahead the program a first :func:`upload` of ``avals`` will use, where it will use one
    (run while XLA compiles the calling program: ``runtime/compile_worker.py``). Not with ml_dtypes imported
    (a signature's first uploads then go leaf by leaf: :func:`_young`). An error is left for the upload."""
    if backend.platform != "cpu" or "ml_dtypes" in sys.modules or any(a.dtype not in _NATIVE for a in avals):
        return
    try:
        _program_of(avals, backend)
    except Exception:  # noqa: BLE001 - upload() tries again, and raises it there as it did before
        pass


def upload(values: Sequence[Any], avals: Sequence[ShapedArray], backend: Any) -> list[Any] | None:
    """Device buffers of host ``values`` (NumPy arrays or Python numbers) uploaded in one execution,
    or None where this path does not apply (not CPU, a dtype other than the native ones, a signature
    :func:`_young` yet with ml_dtypes imported: then ``batched_device_put`` leaf by leaf is cheaper).

    The callback does not always run on this thread, nor before ``execute_sharded`` returns (XLA's
    CPU client runs executions asynchronously when work is queued): the arrays wait in the
    program's slot, under its lock, until the results are ready, so each execution takes its own."""
    if backend.platform != "cpu":
        return None
    arrays = []
    for v, a in zip(values, avals):
        if a.dtype not in _NATIVE:
            return None
        if type(v) is not np.ndarray or v.dtype != a.dtype or not v.flags.c_contiguous or v.shape != a.shape:
            v = np.ascontiguousarray(v, dtype=a.dtype).reshape(a.shape)
        arrays.append(v)
    hit = _LAST.get(id(avals))
    if hit is not None and hit[0] is avals and hit[1] is backend:
        loaded, handlers, slot = hit[2]
    elif _young(avals, backend):
        return None
    else:
        loaded, handlers, slot = _program_of(avals, backend)
    if len(arrays) == 1:  # (where batched_device_put would be faster: see active())
        _LEFT[0] -= 1
    with slot.lock:
        slot.arrays = tuple(arrays)
        out = loaded.execute_sharded([]).consume_with_handlers(handlers)
        out[0].block_until_ready()  # the callback has run (and copied the arrays into XLA's buffers)
    return list(out)
