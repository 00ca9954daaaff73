"""Several processes, JAX's ``jax.distributed``: :func:`initialize` and :func:`shutdown`.

Each process calls ``srcjax.distributed.initialize(coordinator_address, num_processes, process_id)``
before its first computation; process 0 starts the coordination service at that address. After it,
``srcjax.devices()`` lists every process's devices, ``srcjax.local_devices()`` this process's, and a
program compiled for a mesh over all of them (``srcjax.jit(..., in_shardings=, out_shardings=)``) runs
as one SPMD program in every process, each feeding and receiving only its own devices' shards
(``docs/many_devices.md``, "Many processes"). The jaxlib calls live in ``runtime/distributed.py``.

Arguments not given are read from the environment: ``SRCJAX_COORDINATOR_ADDRESS``,
``SRCJAX_NUM_PROCESSES``, ``SRCJAX_PROCESS_ID``, ``SRCJAX_LOCAL_DEVICE_IDS`` (each also under its
``JAX_`` name, as jax reads ``JAX_COORDINATOR_ADDRESS`` and ``JAX_LOCAL_DEVICE_IDS``), and the waits
from ``SRCJAX_INITIALIZATION_TIMEOUT``, ``SRCJAX_HEARTBEAT_TIMEOUT``, ``SRCJAX_SHUTDOWN_TIMEOUT``
(seconds). CPU only for now; each process has ``SRCJAX_NUM_CPU_DEVICES`` CPU devices.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Sequence

from .core import DistributedError

__all__ = ["initialize", "is_initialized", "shutdown"]


def _env(name: str) -> str | None:
    for key in (f"SRCJAX_{name}", f"JAX_{name}"):
        raw = os.environ.get(key, "").strip()
        if raw:
            return raw
    return None


def _env_number(name: str, kind: type, given: float | None, default: float | None) -> float | None:
    if given is not None:
        return given
    raw = _env(name)
    if raw is None:
        return default
    try:
        return kind(raw)
    except ValueError:
        raise DistributedError(f"SRCJAX_{name}={raw!r} is not a number", hint=f"e.g. SRCJAX_{name}=2") from None


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids: int | Sequence[int] | None = None, *,
               initialization_timeout: float | None = None, heartbeat_timeout_seconds: int | None = None,
               shutdown_timeout_seconds: int | None = None, coordinator_bind_address: str | None = None) -> None:
    """Join a run of ``num_processes`` processes coordinated at ``coordinator_address`` ("host:port"),
    as process ``process_id`` (JAX's ``jax.distributed.initialize``).

    Call it once, before the first computation. Every process waits, at most
    ``initialization_timeout`` seconds (default 300, as jax), for all of them to connect, else it
    raises :class:`srcjax.DistributedError` naming the process and the address. A process that dies
    later is noticed within ``heartbeat_timeout_seconds`` (default 100, as jax) and the others stop
    with an error. ``local_device_ids`` is accepted for compatibility (on GPU jax uses it to pick the
    visible devices); on CPU each process has ``SRCJAX_NUM_CPU_DEVICES`` devices.
    """
    from .runtime import distributed as _runtime
    from .runtime import xla

    address = coordinator_address or _env("COORDINATOR_ADDRESS")
    n = num_processes if num_processes is not None else _env_number("NUM_PROCESSES", int, None, None)
    pid = process_id if process_id is not None else _env_number("PROCESS_ID", int, None, None)
    if address is None:
        raise DistributedError("srcjax.distributed.initialize: coordinator_address should be defined",
                               hint="pass 'host:port' of process 0, or set SRCJAX_COORDINATOR_ADDRESS")
    if n is None or pid is None:
        raise DistributedError("srcjax.distributed.initialize: num_processes and process_id must be defined",
                               hint="pass them, or set SRCJAX_NUM_PROCESSES and SRCJAX_PROCESS_ID")
    if not isinstance(n, int) or not isinstance(pid, int) or isinstance(n, bool) or isinstance(pid, bool):
        raise DistributedError(f"num_processes and process_id must be ints, got {n!r} and {pid!r}")
    if not 0 <= pid < n:
        raise DistributedError(f"process_id and num_processes must be nonnegative, with process_id < num_processes. "
                               f"Got process_id={pid}, num_processes={n}")
    if ":" not in address:
        raise DistributedError(f"coordinator_address {address!r} has no port", hint="write it 'host:port'")
    if local_device_ids is None and (raw := _env("LOCAL_DEVICE_IDS")):
        local_device_ids = [int(i) for i in raw.split(",")]
    ids = [local_device_ids] if isinstance(local_device_ids, int) else \
        None if local_device_ids is None else [int(i) for i in local_device_ids]
    timeout = _env_number("INITIALIZATION_TIMEOUT", float, initialization_timeout, 300)
    heartbeat = _env_number("HEARTBEAT_TIMEOUT", int, heartbeat_timeout_seconds, 100)
    down = _env_number("SHUTDOWN_TIMEOUT", int, shutdown_timeout_seconds, 300)
    assert timeout is not None and heartbeat is not None and down is not None
    if timeout <= 0 or heartbeat < 1 or down < 1:
        raise DistributedError(f"the timeouts must be positive: initialization {timeout}, heartbeat {heartbeat}, "
                               f"shutdown {down}")
    if _runtime.current() is not None:
        raise DistributedError("srcjax.distributed.initialize should only be called once",
                               hint="call srcjax.distributed.shutdown() first to join another run")
    if xla.backends_initialized():
        raise DistributedError("srcjax.distributed.initialize() must be called before any srcjax computation "
                               "(this process already made its devices)",
                               hint="call it first thing, before srcjax.devices(), device_put or a compiled call")
    bind = coordinator_bind_address or _env("COORDINATOR_BIND_ADDRESS") or "[::]:" + address.rsplit(":", 1)[1]
    state = _runtime.State(address, n, pid, ids, float(timeout), int(heartbeat), int(down))
    _runtime.connect(state, bind)
    try:
        xla.get_backend("cpu")  # the client: every process's devices (its topology exchange is part of joining)
    except Exception:
        _runtime.shutdown()
        raise


def is_initialized() -> bool:
    """Whether this process joined a multi-process run (and has not left it)."""
    state = sys.modules.get("srcjax.runtime.distributed")
    return state is not None and state.current() is not None


def shutdown() -> None:
    """Leave the multi-process run (JAX's ``jax.distributed.shutdown``): waits for the other processes
    (at most the shutdown timeout); process 0 then stops the coordination service. Called at exit."""
    state = sys.modules.get("srcjax.runtime.distributed")  # (never imported: never initialized)
    if state is not None:
        state.shutdown()


atexit.register(shutdown)
