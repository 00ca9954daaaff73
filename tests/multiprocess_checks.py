"""One process of a multi-process run, launched by tests/test_multiprocess.py (two of these on
127.0.0.1, each with 2 CPU devices). Usage: ``multiprocess_checks.py PROCESS_ID NUM_PROCESSES PORT MODE``.

MODE ``checks``: join the run and print one JSON line {check name: "ok" or the failure}.
MODE ``join``: join with a 3 s initialization timeout and print the outcome as a JSON line
(``{"error": message, "seconds": waited}``): run alone, its peer or coordinator never comes.
MODE ``die``: join; process 1 leaves abruptly (``os._exit``) after the first step, process 0 keeps
stepping and must stop with an error within the heartbeat timeout instead of hanging.
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ["SRCJAX_NUM_CPU_DEVICES"] = "2"

import numpy as np  # noqa: E402

import srcjax  # noqa: E402
from srcjax.multihost_utils import process_allgather, sync_global_devices  # noqa: E402
from srcjax.sharding import NamedSharding, P  # noqa: E402
from tests.child_checks import recorder  # noqa: E402

PID, N, PORT, MODE = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ADDRESS = f"127.0.0.1:{PORT}"
RESULTS: dict[str, str] = {}


check = recorder(RESULTS)


def loss(params, x, labels):
    h = np.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"]
    z = logits - np.max(logits, axis=-1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return -np.mean(np.sum(labels * logp, axis=-1))


def train_step(params, x, labels):
    value, grads = srcjax.value_and_grad(loss)(params, x, labels)
    return srcjax.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, grads), value


def forward(x, w):
    return np.tanh(x @ w)


def lambda_free_loss(w, x):
    return np.mean(np.tanh(x @ w) ** 2)


RNG = np.random.default_rng(0)  # the same data in every process
X = RNG.standard_normal((16, 6)).astype(np.float32)
Y = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 16)]
W = RNG.standard_normal((6, 5)).astype(np.float32)
PARAMS = {"w1": (RNG.standard_normal((6, 8)) / 3).astype(np.float32), "b1": np.zeros(8, np.float32),
          "w2": (RNG.standard_normal((8, 3)) / 3).astype(np.float32)}


def numpy_loss_and_grad(params: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> tuple[float, dict]:
    """The reference: the same loss and its gradient written out in NumPy (float64)."""
    p = {k: v.astype(np.float64) for k, v in params.items()}
    a = x @ p["w1"] + p["b1"]
    h = np.tanh(a)
    logits = h @ p["w2"]
    z = logits - logits.max(-1, keepdims=True)
    sm = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    value = -np.mean(np.sum(y * (z - np.log(np.exp(z).sum(-1, keepdims=True))), -1))
    dlogits = (sm * y.sum(-1, keepdims=True) - y) / x.shape[0]
    dh = dlogits @ p["w2"].T
    da = dh * (1 - h * h)
    return float(value), {"w1": x.T @ da, "b1": da.sum(0), "w2": h.T @ dlogits}


def run_checks() -> None:
    srcjax.distributed.initialize(ADDRESS, N, PID, initialization_timeout=60, heartbeat_timeout_seconds=10)
    mesh = srcjax.make_mesh((2 * N,), ("data",))
    rows, replicated = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
    per = X.shape[0] // N
    mine = slice(PID * per, (PID + 1) * per)

    @check
    def devices() -> None:
        assert srcjax.process_index() == PID and srcjax.process_count() == N
        assert srcjax.device_count() == 2 * N and srcjax.local_device_count() == 2
        assert [d.process_index for d in srcjax.devices()] == sorted(d.process_index for d in srcjax.devices())
        assert {d.process_index for d in srcjax.local_devices()} == {PID}
        assert srcjax.distributed.is_initialized()

    @check
    def make_array_from_process_local_data() -> None:
        x = srcjax.make_array_from_process_local_data(rows, X[mine])  # global shape inferred: (16, 6)
        assert x.shape == X.shape and x.dtype == np.float32 and not x.sharding.is_fully_addressable()
        shards = x.addressable_shards
        assert len(shards) == 2 and {s.device for s in shards} == set(srcjax.local_devices())
        for s in shards:
            assert np.array_equal(np.asarray(s.data), X[s.index]), s.index
        y = srcjax.make_array_from_process_local_data(rows, X[mine], X.shape)
        assert y.shape == X.shape
        r = srcjax.make_array_from_process_local_data(replicated, W)  # replicated: the whole value everywhere
        assert r.shape == W.shape and np.array_equal(np.asarray(r), W)
        try:
            np.asarray(x)
        except srcjax.DistributedError as e:
            assert "process_allgather" in str(e), str(e)
        else:
            raise AssertionError("np.asarray of a global array did not fail")
        assert np.array_equal(process_allgather(x, tiled=True), X)
        try:
            srcjax.make_array_from_process_local_data(rows, X[:3], X.shape)
        except srcjax.ShardingError as e:
            assert "dimension 0" in str(e), str(e)
        else:
            raise AssertionError("wrong local rows were accepted")

    @check
    def sharded_forward_equals_numpy() -> None:
        x = srcjax.make_array_from_process_local_data(rows, X[mine])
        w = srcjax.device_put(W, replicated)  # (each process passes the same whole value)
        f = srcjax.jit(forward, out_shardings=replicated)
        out = f(x, w)
        assert np.allclose(np.asarray(out), np.tanh(X @ W), rtol=1e-5, atol=1e-6)
        g = srcjax.jit(forward)(x, w)  # rows stay split: each process holds its own
        assert g.sharding.spec.axes(2) == (("data",), ()) and not g.sharding.is_fully_addressable(), g.sharding
        for s in g.addressable_shards:
            assert np.allclose(np.asarray(s.data), np.tanh(X @ W)[s.index], rtol=1e-5, atol=1e-6)
        assert np.allclose(process_allgather(g, tiled=True), np.tanh(X @ W), rtol=1e-5, atol=1e-6)
        try:
            process_allgather(g)
        except srcjax.ShardingError as e:
            assert "tiled=True" in str(e)
        else:
            raise AssertionError("process_allgather(global, tiled=False) was accepted (jax refuses it)")

    @check
    def device_put_of_the_whole_value_takes_the_local_pieces() -> None:
        a = srcjax.device_put(X, rows)  # (every process passes the same whole value)
        assert a.shape == X.shape and not a.sharding.is_fully_addressable()
        assert {s.device for s in a.addressable_shards} == set(srcjax.local_devices())
        for s in a.addressable_shards:
            assert np.array_equal(np.asarray(s.data), X[s.index])
        assert np.array_equal(process_allgather(a, tiled=True), X)

    @check
    def two_dimensional_mesh_split_across_and_within_processes() -> None:
        mesh2 = srcjax.make_mesh((N, 2), ("proc", "local"))  # rows of the grid: the processes
        assert {d.process_index for d in mesh2.devices[PID]} == {PID}
        s = NamedSharding(mesh2, P("local", "proc"))  # rows split within a process, columns across
        cols = X.shape[1] // N
        x = srcjax.make_array_from_process_local_data(s, X[:, PID * cols:(PID + 1) * cols])
        assert x.shape == X.shape
        w = srcjax.device_put(W, NamedSharding(mesh2, P()))
        out = srcjax.jit(forward, out_shardings=NamedSharding(mesh2, P()))(x, w)  # contracts a split dimension
        assert np.allclose(np.asarray(out), np.tanh(X @ W), rtol=1e-5, atol=1e-6)
        g = srcjax.jit(srcjax.grad(lambda_free_loss), out_shardings=NamedSharding(mesh2, P()))(w, x)
        h = np.tanh(X @ W)
        assert np.allclose(np.asarray(g), X.T @ (2 * h * (1 - h * h)) / h.size, rtol=1e-4, atol=1e-6)

    @check
    def grad_training_steps_equal_numpy_and_one_device() -> None:
        step = srcjax.jit(train_step, out_shardings=replicated)
        x = srcjax.make_array_from_process_local_data(rows, X[mine])
        y = srcjax.make_array_from_process_local_data(rows, Y[mine])
        p = srcjax.device_put(PARAMS, replicated)
        one = srcjax.jit(train_step)  # the same step on this process's first device alone
        p1, ref = PARAMS, {k: v.astype(np.float64) for k, v in PARAMS.items()}
        for _ in range(3):
            p, value = step(p, x, y)
            p1, value1 = one(p1, X, Y)
            ref_value, ref_grad = numpy_loss_and_grad(ref, X, Y)
            ref = {k: ref[k] - 0.5 * ref_grad[k] for k in ref}
            assert np.allclose(float(value), float(value1), rtol=1e-5), (float(value), float(value1))
            assert np.allclose(float(value), ref_value, rtol=1e-4), (float(value), ref_value)
        for k in PARAMS:
            assert np.allclose(np.asarray(p[k]), ref[k], rtol=1e-3, atol=1e-5), k
            assert np.allclose(np.asarray(p[k]), np.asarray(p1[k]), rtol=1e-5, atol=1e-6), k

    @check
    def process_allgather_of_local_values() -> None:
        mine_value = np.full((2, 3), float(PID), np.float32)
        stacked = process_allgather(mine_value)
        assert stacked.shape == (N, 2, 3) and [float(v[0, 0]) for v in stacked] == list(range(N))
        tiled = process_allgather({"a": mine_value}, tiled=True)["a"]
        assert tiled.shape == (2 * N, 3) and np.array_equal(tiled[::2, 0], np.arange(N, dtype=np.float32))
        scalars = process_allgather(np.float32(PID), tiled=True)  # (scalars are stacked either way)
        assert scalars.shape == (N,) and list(scalars) == list(range(N))

    @check
    def barrier() -> None:
        sync_global_devices("checks done")

    @check
    def initialize_twice_is_an_error() -> None:
        try:
            srcjax.distributed.initialize(ADDRESS, N, PID)
        except srcjax.DistributedError as e:
            assert "only be called once" in str(e)
        else:
            raise AssertionError("a second initialize was accepted")

    @check
    def jax_not_imported() -> None:
        assert "jax" not in sys.modules, "srcjax imported jax"

    print(json.dumps(RESULTS), flush=True)
    srcjax.distributed.shutdown()


def run_join() -> None:
    start = time.monotonic()
    try:
        srcjax.distributed.initialize(ADDRESS, N, PID, initialization_timeout=3)
    except srcjax.DistributedError as e:
        print(json.dumps({"error": str(e), "seconds": time.monotonic() - start}), flush=True)
        return
    print(json.dumps({"error": None, "seconds": time.monotonic() - start}), flush=True)


def run_die() -> None:
    srcjax.distributed.initialize(ADDRESS, N, PID, initialization_timeout=60,
                                  heartbeat_timeout_seconds=int(os.environ.get("HB", "3")))
    mesh = srcjax.make_mesh((2 * N,), ("data",))
    rows, replicated = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
    per = X.shape[0] // N
    step = srcjax.jit(train_step, out_shardings=replicated)
    x = srcjax.make_array_from_process_local_data(rows, X[PID * per:(PID + 1) * per])
    y = srcjax.make_array_from_process_local_data(rows, Y[PID * per:(PID + 1) * per])
    p = srcjax.device_put(PARAMS, replicated)
    p, value = step(p, x, y)
    print(json.dumps({"step": 0, "loss": float(value)}), flush=True)
    if PID == 1:
        os._exit(0)  # gone without a word: no shutdown, no goodbye to the coordinator
    for _ in range(1, 10_000):
        p, value = step(p, x, y)
        float(value)
    print(json.dumps({"error": None}), flush=True)  # (never reached: the run stops with an error)


{"checks": run_checks, "join": run_join, "die": run_die}[MODE]()
