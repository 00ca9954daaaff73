"""Several processes through jaxlib alone: PJRT's coordination service and client, gloo collectives.

The call sequence is jax's (``shared/RUNTIME_FACTS.md``, "Multiple processes"): process 0 starts the
coordination service; every process connects a distributed client to it (a barrier: it returns when
all of them have), makes gloo TCP collectives over that client, and a CPU client that knows
``num_nodes`` processes. That client's ``devices()`` are every process's devices (ids ``2048 * p +
i``), its ``local_devices()`` this process's, and one executable compiled for all of them runs in
every process, each feeding and receiving only its own devices' shards.

Failures are bounded here, because XLA's own handling of them is to abort the process:

- ``connect`` runs in a helper thread and the caller waits at most ``init_timeout`` seconds for it,
  then raises :class:`DistributedError` naming the process and the address (XLA's own deadline,
  set a little later, would abort the process with ``QFATAL``; a Python ``missed_heartbeat_callback``
  cannot be used: jaxlib 0.10.2 cannot pass it the ``absl::Status`` and throws ``std::bad_cast``).
- After that, a peer that dies is noticed by the heartbeats (``heartbeat_timeout`` seconds) and XLA
  terminates the surviving processes with "Terminating process because the JAX distributed service
  detected fatal errors" — loud and bounded, not a Python exception (jax behaves the same).

No SIGTERM handler is installed (jax's preemption notifier swallows SIGTERM; srcjax has none).
"""

from __future__ import annotations

import math
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from jaxlib import _jax  # type: ignore[attr-defined]

from ..core import DistributedError

__all__ = ["State", "barrier", "connect", "current", "make_cpu_client", "shutdown"]

_GRACE = 30  # seconds XLA's own connect deadline runs past ours (see the module doc)


@dataclass
class State:
    """One process's place in a multi-process run."""

    coordinator_address: str
    num_processes: int
    process_id: int
    local_device_ids: list[int] | None
    init_timeout: float
    heartbeat_timeout: int
    shutdown_timeout: int
    service: Any = None
    client: Any = None
    collectives: Any = field(default=None, repr=False)


_STATE: list[State | None] = [None]
_LOCK = threading.Lock()


def current() -> State | None:
    """This process's :class:`State` after ``srcjax.distributed.initialize``, else None."""
    return _STATE[0]


def _reachable(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=1.0):
            return True
    except OSError:
        return False


def connect(state: State, bind_address: str) -> None:
    """Start the service (process 0) and connect this process's client, waiting at most
    ``state.init_timeout`` seconds for every process to connect."""
    who = f"process {state.process_id} of {state.num_processes}"
    deadline = int(math.ceil(state.init_timeout)) + _GRACE
    if state.process_id == 0:
        try:
            state.service = _jax.get_distributed_runtime_service(
                bind_address, state.num_processes, heartbeat_timeout=state.heartbeat_timeout,
                shutdown_timeout=state.shutdown_timeout, cluster_register_timeout=deadline)
        except Exception as e:  # noqa: BLE001 - jaxlib's error: the port taken, a bad address
            raise DistributedError(f"{who}: could not start the coordination service on {bind_address}: {e}",
                                   hint="choose a free port for coordinator_address") from None
    client = _jax.get_distributed_runtime_client(
        state.coordinator_address, state.process_id, init_timeout=deadline, shutdown_timeout=state.shutdown_timeout,
        heartbeat_timeout=state.heartbeat_timeout, use_compression=True)
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            client.connect()
            outcome.append(None)
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            outcome.append(e)

    start = time.monotonic()
    worker = threading.Thread(target=run, name="srcjax-distributed-connect", daemon=True)
    worker.start()
    worker.join(state.init_timeout)
    if not outcome or outcome[0] is not None:
        waited = time.monotonic() - start
        if outcome:
            cause = f"the connection failed: {outcome[0]}"
        elif state.process_id != 0 and not _reachable(state.coordinator_address):
            cause = "no coordinator answered there (process 0 starts it)"
        else:
            cause = f"not all {state.num_processes} processes connected to it"
        raise DistributedError(
            f"{who} could not join the run coordinated at {state.coordinator_address} within {waited:.1f} s: {cause}",
            hint=f"start all {state.num_processes} processes with the same coordinator_address and num_processes "
                 f"and process ids 0..{state.num_processes - 1}; initialization_timeout (or "
                 f"SRCJAX_INITIALIZATION_TIMEOUT) sets how long to wait")
    state.client = client
    _STATE[0] = state


def make_cpu_client(num_devices: int | None) -> Any:
    """The CPU client of a multi-process run: every process's devices, gloo collectives between them."""
    state = _STATE[0]
    assert state is not None and state.client is not None
    if state.collectives is None:
        state.collectives = _jax.make_gloo_tcp_collectives(distributed_client=state.client)
    minutes = max(1, int(math.ceil(state.init_timeout / 60)))
    return _jax.get_tfrt_cpu_client(
        asynchronous=True, distributed_client=state.client, node_id=state.process_id,
        num_nodes=state.num_processes, collectives=state.collectives, num_devices=num_devices,
        get_local_topology_timeout_minutes=minutes, get_global_topology_timeout_minutes=minutes)


def barrier(name: str, timeout: float) -> None:
    """Wait until every process reaches barrier ``name``, at most ``timeout`` seconds."""
    state = _STATE[0]
    assert state is not None
    try:
        state.client.wait_at_barrier(name, int(timeout * 1000))
    except Exception as e:  # noqa: BLE001 - jaxlib's DEADLINE_EXCEEDED or a peer's failure
        raise DistributedError(f"process {state.process_id} of {state.num_processes}: barrier {name!r} "
                               f"not reached by every process within {timeout:g} s: {e}") from None


def shutdown() -> None:
    """Leave the run: the client waits (at most its shutdown timeout) for the others, then process 0
    stops the service. A no-op when not initialized."""
    with _LOCK:
        state = _STATE[0]
        _STATE[0] = None
    if state is None:
        return
    try:
        if state.client is not None:
            state.client.shutdown()
    finally:
        if state.service is not None:
            state.service.shutdown()
