"""Several processes (issue #19): srcjax.distributed, make_array_from_process_local_data, process_allgather.

The two-process runs are launched by the tests themselves on 127.0.0.1 (``tests/multiprocess_checks.py``,
2 CPU devices per process), bounded in time, their processes killed and reaped in a ``finally``.
What needs no second process (argument checks, the one-process forms, the index arithmetic of
``make_array_from_process_local_data`` with stand-in devices of several processes) runs here.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcjax
from srcjax.multihost_utils import local_pieces, process_allgather, sync_global_devices
from srcjax.sharding import Mesh, NamedSharding, P

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "tests" / "multiprocess_checks.py"
_SCALE = 10 if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" else 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch(mode: str, ids: list[int], n: int = 2, timeout: float = 90) -> list[tuple[int | None, str, str, float]]:
    """Start one worker per process id in ``ids`` (of ``n``), wait for all of them at most ``timeout``
    seconds, and return (exit code, stdout, stderr, seconds) for each; they are killed and reaped in
    any case (a worker still running at the deadline gets exit code None)."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    env.pop("SRCJAX_COORDINATOR_ADDRESS", None)
    start = time.monotonic()
    procs = [subprocess.Popen([sys.executable, str(WORKER), str(i), str(n), str(port), mode], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in ids]
    out: list[tuple[int | None, str, str, float]] = []
    try:
        for p in procs:
            left = max(0.1, timeout - (time.monotonic() - start))
            try:
                so, se = p.communicate(timeout=left)
                out.append((p.returncode, so, se, time.monotonic() - start))
            except subprocess.TimeoutExpired:
                p.kill()
                so, se = p.communicate(timeout=10)
                out.append((None, so, se, time.monotonic() - start))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)
    return out


def last_json(stdout: str) -> Any:
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]  # (gloo prints its own lines too)
    assert lines, stdout
    return json.loads(lines[-1])


_RUN: list[list[dict[str, str]]] = []


def _two_processes() -> list[dict[str, str]]:
    if not _RUN:
        results = launch("checks", [0, 1])
        for rc, so, se, _ in results:
            assert rc == 0, f"a worker failed ({rc}):\n{so[-2000:]}\n{se[-4000:]}"
        _RUN.append([last_json(so) for _, so, _, _ in results])
    return _RUN[0]


CHECKS = ["devices", "make_array_from_process_local_data", "sharded_forward_equals_numpy",
          "device_put_of_the_whole_value_takes_the_local_pieces", "two_dimensional_mesh_split_across_and_within_processes",
          "grad_training_steps_equal_numpy_and_one_device", "process_allgather_of_local_values", "barrier",
          "initialize_twice_is_an_error", "jax_not_imported"]


@pytest.mark.parametrize("name", CHECKS)
def test_two_processes(name: str) -> None:
    for pid, results in enumerate(_two_processes()):
        assert results.get(name) == "ok", f"process {pid}: {results.get(name)}"


def test_a_missing_peer_or_coordinator_is_an_error_within_the_bound() -> None:
    """Process 1 alone finds no coordinator; process 0 alone waits for a peer that never comes: each
    raises DistributedError naming itself and the address after its 3 s initialization timeout. (The two lone
    runs wait side by side, each on a port of its own: the test waits out one timeout, not two.)"""
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        alone = [pool.submit(launch, "join", [i], timeout=60) for i in (0, 1)]
        ((rc0, so0, se0, _),), ((rc1, so1, se1, t1),) = (f.result() for f in alone)
    for rc, so, se, who, cause in [(rc0, so0, se0, "process 0 of 2", "not all 2 processes connected"),
                                   (rc1, so1, se1, "process 1 of 2", "no coordinator answered")]:
        assert rc == 0, se[-3000:]
        got = last_json(so)
        assert got["error"] is not None and who in got["error"] and cause in got["error"], got
        assert "127.0.0.1:" in got["error"] and "initialization_timeout" in got["error"]
        assert 2.5 < got["seconds"] < 10, got
    assert t1 < 30


def test_a_run_of_one_process_joins_at_once() -> None:
    (rc, so, se, _), = launch("join", [0], n=1, timeout=60)
    assert rc == 0, se[-3000:]
    got = last_json(so)
    assert got["error"] is None and got["seconds"] < 10, got


def test_a_peer_that_dies_stops_the_others() -> None:
    """Process 1 vanishes after one training step; process 0, still stepping, is stopped by the
    coordination service's heartbeat check (3 s here) with a message naming the dead task."""
    (rc0, so0, se0, t0), (rc1, so1, _, _) = launch("die", [0, 1], timeout=60)
    assert rc1 == 0 and last_json(so1)["step"] == 0
    assert rc0 is not None and rc0 != 0, "process 0 was still running at the deadline (a hang)"
    assert last_json(so0)["step"] == 0 and '"error": null' not in so0
    assert "stopped sending heartbeats" in se0 or "unhealthy" in se0 or "another task died" in se0, se0[-3000:]
    assert t0 < 45


def test_initialize_checks_its_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("COORDINATOR_ADDRESS", "NUM_PROCESSES", "PROCESS_ID"):
        monkeypatch.delenv(f"SRCJAX_{var}", raising=False)
        monkeypatch.delenv(f"JAX_{var}", raising=False)
    with pytest.raises(srcjax.DistributedError, match="coordinator_address should be defined"):
        srcjax.distributed.initialize()
    with pytest.raises(srcjax.DistributedError, match="num_processes and process_id must be defined"):
        srcjax.distributed.initialize("127.0.0.1:1234")
    with pytest.raises(srcjax.DistributedError, match="process_id < num_processes"):
        srcjax.distributed.initialize("127.0.0.1:1234", 2, 2)
    with pytest.raises(srcjax.DistributedError, match="has no port"):
        srcjax.distributed.initialize("127.0.0.1", 2, 0)
    monkeypatch.setenv("SRCJAX_NUM_PROCESSES", "two")
    with pytest.raises(srcjax.DistributedError, match="SRCJAX_NUM_PROCESSES='two' is not a number"):
        srcjax.distributed.initialize("127.0.0.1:1234", process_id=0)
    # the JAX_ spellings are read too; the values reach the check that they are in range
    monkeypatch.delenv("SRCJAX_NUM_PROCESSES")
    monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", "127.0.0.1:1234")
    monkeypatch.setenv("JAX_NUM_PROCESSES", "2")
    monkeypatch.setenv("SRCJAX_PROCESS_ID", "5")
    with pytest.raises(srcjax.DistributedError, match="Got process_id=5, num_processes=2"):
        srcjax.distributed.initialize()
    with pytest.raises(srcjax.DistributedError, match="timeouts must be positive"):
        srcjax.distributed.initialize(process_id=0, initialization_timeout=0)
    assert not srcjax.distributed.is_initialized()


def test_initialize_after_the_first_computation_is_an_error() -> None:
    srcjax.devices()  # (this process has its devices now)
    with pytest.raises(srcjax.DistributedError, match="must be called before any srcjax computation"):
        srcjax.distributed.initialize("127.0.0.1:1234", 2, 0)
    assert not srcjax.distributed.is_initialized()
    srcjax.distributed.shutdown()  # (not initialized: nothing to do)


def test_one_process_forms() -> None:
    """In one process every array is addressable: the helpers reduce to device_put and np.asarray."""
    mesh = srcjax.make_mesh((1,), ("data",))
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    a = srcjax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), x)
    assert a.shape == (4, 3) and a.sharding.is_fully_addressable() and np.array_equal(np.asarray(a), x)
    assert np.array_equal(process_allgather(a), x[None]) and np.array_equal(process_allgather(a, tiled=True), x)
    assert np.array_equal(process_allgather({"x": x})["x"], x[None])
    assert process_allgather(np.float32(2.0), tiled=True).shape == (1,)
    sync_global_devices("nothing to wait for")
    with pytest.raises(srcjax.ShardingError, match="global shape"):
        srcjax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), x, (4,))


class FakeClient:
    def __init__(self, index: int) -> None:
        self.index = index

    def process_index(self) -> int:
        return self.index


class FakeDevice:
    """A device of process ``process_index`` (what Mesh and the index arithmetic read)."""

    platform = "cpu"

    def __init__(self, id: int, process_index: int) -> None:
        self.id, self.process_index, self.client = id, process_index, FakeClient(process_index)

    def __repr__(self) -> str:
        return f"FakeDevice({self.id})"


SPECS = [P(), P("a"), P("b"), P("a", "b"), P("b", "a"), P(("a", "b")), P(None, "a"), P(None, ("b", "a"))]


@settings(max_examples=40 * _SCALE, deadline=None, derandomize=_SCALE == 1, database=None)
@given(procs=st.sampled_from([1, 2, 4]), per=st.sampled_from([1, 2, 4]), spec=st.sampled_from(SPECS),
       infer=st.booleans(), mult=st.integers(1, 3), data=st.data())
def test_local_pieces_rebuild_the_global_array(procs: int, per: int, spec: P, infer: bool, mult: int,
                                               data: st.DataObject) -> None:
    """Each process's local data (the distinct pieces of its devices, concatenated per dimension)
    gives every device of that process exactly its shard of the global array, and the inferred
    global shape is the real one: for meshes laid out over processes either way round."""
    total = procs * per
    shapes = [(a, total // a) for a in range(1, total + 1) if total % a == 0]
    grid = data.draw(st.sampled_from(shapes))
    devs = [FakeDevice(p * 2048 + i, p) for p in range(procs) for i in range(per)]
    if data.draw(st.booleans()):  # processes interleaved along the mesh, not blocks of it
        devs = [devs[p * per + i] for i in range(per) for p in range(procs)]
    arr = np.empty(total, dtype=object)
    arr[:] = devs
    mesh = Mesh(arr.reshape(grid), ("a", "b"))
    s = NamedSharding(mesh, spec)
    tiles = [int(np.prod([mesh.shape[a] for a in axes])) for axes in spec.axes(2)]
    shape = (tiles[0] * mult, tiles[1] * (mult + 1))
    g = np.arange(np.prod(shape)).reshape(shape)
    index = s.devices_indices_map(shape)
    for p in range(procs):
        mine = [d for d in mesh.device_list() if d.process_index == p]
        keep = []
        for dim in range(2):
            rows = sorted({i for d in mine for i in range(shape[dim])[index[d][dim]]})
            keep.append(rows)
        local = g[np.ix_(*keep)]
        if infer and _uneven(mesh, spec):
            continue
        got_shape, pieces = local_pieces(s, local, None if infer else shape, mine)
        assert got_shape == shape and set(pieces) == set(mine)
        for d in mine:
            assert np.array_equal(pieces[d], g[index[d]]), (d, spec, grid)


def _uneven(mesh: Mesh, spec: P) -> bool:
    """Whether processes hold different numbers of pieces along a dimension (jax infers the global
    shape from this process's count alone then, and so does srcjax)."""
    s = NamedSharding(mesh, spec)
    tiles = [int(np.prod([mesh.shape[a] for a in axes])) for axes in spec.axes(2)]
    probe = s.devices_indices_map(tuple(tiles))
    counts = {q: [len({probe[d][dim].start for d in mesh.device_list() if d.process_index == q}) for dim in range(2)]
              for q in {d.process_index for d in mesh.device_list()}}
    return len({tuple(c) for c in counts.values()}) > 1


def test_importing_srcjax_and_making_devices_logs_nothing() -> None:
    """Regression: runtime/__init__ imported jaxlib (through runtime/spmd) before runtime/xla set
    TF_CPP_MIN_LOG_LEVEL, so every process printed XLA's startup lines on stderr."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-c", "import srcjax; srcjax.devices()"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-2000:]
