"""A data-parallel MLP training step on 1, 2 and 4 CPU devices, srcjax vs jax (issue #19).

    .venv/bin/python benchmarks/bench_spmd.py            # ~1-2 min
    .venv/bin/python benchmarks/bench_spmd.py --quick    # a smoke run
    .venv/bin/python benchmarks/bench_spmd.py --multiprocess   # 2 processes x 2 devices vs 1 x 4 (~1 min)

The step is ``value_and_grad`` of an MLP's mean squared error plus an SGD update, compiled once
per mesh with the batch sharded over the ``data`` axis and the parameters replicated (the same
mesh and the same shardings for both libraries; XLA's SPMD partitioner inserts the gradient
all-reduce). Measured as a training loop, ``params, loss = step(params, x, y)``, each step
waiting for its loss (jax hangs, then aborts, when multi-device steps are queued without waiting
on a 2-core machine; srcjax waits for the previous multi-device step itself). Median
milliseconds per step, the two libraries interleaved; ``sj/jax`` above 1: srcjax slower. The
losses are checked: every device count and both libraries give the one-device losses.

A second table runs the same loop with ``pmap`` (``srcjax.pmap`` vs ``jax.pmap``): one program per
device in XLA's replica mode, the gradients ``pmean``-ed in the body, parameters copied per device.

This machine has 2 cores: 4 "devices" share them, so the scaling columns show overheads of
partitioning (collectives, per-device dispatch), not speedups. Set the sizes with --batch/--hidden.

``--multiprocess`` times the same step with the batch sharded over 4 devices held by 2 processes
on 127.0.0.1 (``srcjax.distributed``; jax's ``jax.distributed`` with gloo for the jax column),
each process a copy of this script (``--mp-worker``), against 1 process with 4 devices: the
difference is the cost of going through gloo's TCP collectives instead of in-process ones.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from typing import Any

os.environ.setdefault("SRCJAX_NUM_CPU_DEVICES", "4")
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # (a worker gets its own)
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"

import numpy as np  # noqa: E402

import srcjax  # noqa: E402
from srcjax.sharding import NamedSharding, P  # noqa: E402

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover - jax is a benchmark-only dependency
    jax = None


def loss(params, x, y):
    h = np.tanh(x @ params[0]["w"] + params[0]["b"])
    h = np.tanh(h @ params[1]["w"] + params[1]["b"])
    out = h @ params[2]["w"] + params[2]["b"]
    return np.mean((out - y) ** 2)


def step(params, x, y):
    value, grads = srcjax.value_and_grad(loss)(params, x, y)
    return srcjax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads), value


def jax_loss(params, x, y):
    h = jnp.tanh(x @ params[0]["w"] + params[0]["b"])
    h = jnp.tanh(h @ params[1]["w"] + params[1]["b"])
    out = h @ params[2]["w"] + params[2]["b"]
    return jnp.mean((out - y) ** 2)


def jax_step(params, x, y):
    value, grads = jax.value_and_grad(jax_loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads), value


def pmap_step(params, x, y):
    value, grads = srcjax.value_and_grad(loss)(params, x, y)
    grads = srcjax.lax.pmean(grads, "data")  # each device's gradient averaged over the devices
    return srcjax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads), srcjax.lax.pmean(value, "data")


def jax_pmap_step(params, x, y):
    value, grads = jax.value_and_grad(jax_loss)(params, x, y)
    grads = jax.lax.pmean(grads, "data")
    return jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads), jax.lax.pmean(value, "data")


def problem(batch: int, hidden: int, d_in: int = 32, d_out: int = 8) -> tuple[Any, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    sizes = [d_in, hidden, hidden, d_out]
    params = [{"w": (rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), "b": np.zeros(b, np.float32)}
              for a, b in zip(sizes, sizes[1:])]
    x = rng.standard_normal((batch, d_in)).astype(np.float32)
    y = np.sin(x[:, :d_out]).astype(np.float32)
    return params, x, y


def srcjax_runner(n: int, params: Any, x: np.ndarray, y: np.ndarray) -> Any:
    mesh = srcjax.make_mesh((n,), ("data",))
    rep, rows = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    fn = srcjax.jit(step, out_shardings=rep)
    state = {"p": srcjax.device_put(params, rep)}
    xs, ys = srcjax.device_put(x, rows), srcjax.device_put(y, rows)

    def one() -> float:
        state["p"], value = fn(state["p"], xs, ys)
        return float(value)  # (waits for the step)
    return one


def jax_runner(n: int, params: Any, x: np.ndarray, y: np.ndarray) -> Any:
    from jax.sharding import Mesh
    from jax.sharding import NamedSharding as JNS
    from jax.sharding import PartitionSpec as JP

    mesh = Mesh(np.array(jax.devices()[:n]), ("data",))
    rep, rows = JNS(mesh, JP()), JNS(mesh, JP("data"))
    fn = jax.jit(jax_step, out_shardings=rep)
    state = {"p": jax.device_put(params, rep)}
    xs, ys = jax.device_put(x, rows), jax.device_put(y, rows)

    def one() -> float:
        state["p"], value = fn(state["p"], xs, ys)
        return float(value)
    return one


def pmap_runner(lib: str, n: int, params: Any, x: np.ndarray, y: np.ndarray) -> Any:
    """The same step written for ``pmap``: parameters copied to each device (a leading device axis),
    the batch split into ``n`` slices, the gradients ``pmean``-ed in the body; results fed back."""
    stacked = [{k: np.stack([v] * n) for k, v in layer.items()} for layer in params]
    xs, ys = x.reshape(n, -1, x.shape[1]), y.reshape(n, -1, y.shape[1])
    state = {"p": stacked}
    if lib == "srcjax":  # the batch uploaded once, as pmap lays it out (its slices on the devices)
        fn = srcjax.pmap(pmap_step, "data", out_axes=(0, None))
        rows = NamedSharding(srcjax.make_mesh((n,), ("data",)), P("data"))
        xs, ys = srcjax.device_put(xs, rows), srcjax.device_put(ys, rows)
    else:
        from jax.sharding import Mesh
        from jax.sharding import NamedSharding as JNS
        from jax.sharding import PartitionSpec as JP

        fn = jax.pmap(jax_pmap_step, "data", out_axes=(0, None))
        jrows = JNS(Mesh(np.array(jax.devices()[:n]), ("data",)), JP("data"))
        xs, ys = jax.device_put(xs, jrows), jax.device_put(ys, jrows)

    def one() -> float:
        state["p"], value = fn(state["p"], xs, ys)
        return float(value)
    return one


def timed(f: Any, steps: int, rounds: int) -> float:
    """Median milliseconds per step over ``rounds`` rounds of ``steps`` steps."""
    samples = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(steps):
            f()
        samples.append((time.perf_counter() - t) / steps * 1e3)
    return statistics.median(samples)


def mp_worker(args: argparse.Namespace) -> None:
    """One process of a multi-process run: this process's rows of the batch, the step over all devices."""
    rank, n_proc = args.mp_worker, args.processes
    address = f"127.0.0.1:{args.port}"
    params, x, y = problem(args.batch, args.hidden)
    per = args.batch // n_proc
    mine = slice(rank * per, (rank + 1) * per)
    if args.lib == "srcjax":
        srcjax.distributed.initialize(address, n_proc, rank, initialization_timeout=60)
        mesh = srcjax.make_mesh((srcjax.device_count(),), ("data",))
        rep, rows = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
        fn = srcjax.jit(step, out_shardings=rep)
        state = {"p": srcjax.device_put(params, rep)}
        xs = srcjax.make_array_from_process_local_data(rows, x[mine])
        ys = srcjax.make_array_from_process_local_data(rows, y[mine])
    else:
        from jax.sharding import Mesh
        from jax.sharding import NamedSharding as JNS
        from jax.sharding import PartitionSpec as JP

        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(address, n_proc, rank, initialization_timeout=60)
        mesh = Mesh(np.array(jax.devices()), ("data",))
        rep, rows = JNS(mesh, JP()), JNS(mesh, JP("data"))
        fn = jax.jit(jax_step, out_shardings=rep)
        state = {"p": jax.device_put(params, rep)}
        xs = jax.make_array_from_process_local_data(rows, x[mine])
        ys = jax.make_array_from_process_local_data(rows, y[mine])

    def one() -> float:
        state["p"], value = fn(state["p"], xs, ys)
        return float(value)  # (replicated: readable in every process; waits for the step)
    losses = [one() for _ in range(3)]
    ms = timed(one, args.steps, args.rounds)
    print(json.dumps({"rank": rank, "lib": args.lib, "devices": len(mesh.devices.flat), "ms": ms, "losses": losses}),
          flush=True)


def launch_workers(args: argparse.Namespace, lib: str, timeout: float = 300) -> dict[str, Any]:
    """Run ``--mp-worker`` processes (2 CPU devices each) and return process 0's report."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ, SRCJAX_NUM_CPU_DEVICES=str(args.devices),
               XLA_FLAGS=f"--xla_force_host_platform_device_count={args.devices}", TF_CPP_MIN_LOG_LEVEL="3")
    cmd = [sys.executable, os.path.abspath(__file__), "--lib", lib, "--port", str(port), "--batch", str(args.batch),
           "--hidden", str(args.hidden), "--processes", str(args.processes), "--steps", str(args.steps),
           "--rounds", str(args.rounds)]
    procs = [subprocess.Popen(cmd + ["--mp-worker", str(r)], env=env, stdout=subprocess.PIPE, text=True)
             for r in range(args.processes)]
    reports = []
    try:
        deadline = time.monotonic() + timeout
        for r, proc in enumerate(procs):
            out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            lines = [ln for ln in out.splitlines() if ln.startswith("{")]
            if proc.returncode != 0 or not lines:
                raise SystemExit(f"{lib} process {r} failed (exit code {proc.returncode})")
            reports.append(json.loads(lines[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
    for rep in reports[1:]:
        assert rep["losses"] == reports[0]["losses"], (lib, reports)
    return {**reports[0], "ms": max(rep["ms"] for rep in reports)}


def multiprocess(args: argparse.Namespace) -> None:
    params, x, y = problem(args.batch, args.hidden)
    n = args.processes * args.devices
    print(f"srcjax {srcjax.__version__}, jax {jax.__version__ if jax else '-'}, {os.cpu_count()} cores; MLP "
          f"{x.shape[1]}-{args.hidden}-{args.hidden}-{y.shape[1]}, batch {args.batch} sharded over {n} devices: "
          f"{args.processes} processes x {args.devices} devices (gloo over 127.0.0.1) vs 1 process x {n}")
    one = {"srcjax": srcjax_runner(n, params, x, y)}
    if jax is not None:
        one["jax"] = jax_runner(n, params, x, y)
    reference = [one["srcjax"]() for _ in range(3)]
    single = {k: timed(f, args.steps, args.rounds) for k, f in one.items()}
    many = {lib: launch_workers(args, lib) for lib in one}
    for lib, rep in many.items():
        assert np.allclose(rep["losses"], reference, rtol=1e-4), (lib, rep["losses"], reference)
    print("losses agree: every process, both layouts, both libraries: yes")
    print(f"{'layout':>18} {'srcjax ms':>10} {'jax ms':>8} {'sj/jax':>7}")
    spread = {k: v["ms"] for k, v in many.items()}
    for name, t in ((f"1 x {n}", single), (f"{args.processes} x {args.devices}", spread)):
        j = t.get("jax")
        print(f"{name:>18} {t['srcjax']:>10.3f} {j if j is not None else float('nan'):>8.3f} "
              f"{t['srcjax'] / j if j else float('nan'):>7.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--multiprocess", action="store_true", help="2 processes x 2 devices vs 1 process x 4")
    ap.add_argument("--processes", type=int, default=2, help=argparse.SUPPRESS)
    ap.add_argument("--devices", type=int, default=2, help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--mp-worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--lib", default="srcjax", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    steps, rounds = (5, 3) if args.quick else (20, 7)
    args.steps, args.rounds = args.steps or steps, args.rounds or rounds
    if args.mp_worker is not None:
        return mp_worker(args)
    if args.multiprocess:
        return multiprocess(args)
    params, x, y = problem(args.batch, args.hidden)
    print(f"srcjax {srcjax.__version__}, jax {jax.__version__ if jax else '-'}, {os.cpu_count()} cores, "
          f"{srcjax.device_count()} CPU devices; MLP {x.shape[1]}-{args.hidden}-{args.hidden}-{y.shape[1]}, "
          f"batch {args.batch} sharded over 'data', params replicated")

    reference = None
    rows = []
    for n in (1, 2, 4):
        runners = {"srcjax": srcjax_runner(n, params, x, y)}
        if jax is not None:
            runners["jax"] = jax_runner(n, params, x, y)
        losses = {k: [f() for _ in range(3)] for k, f in runners.items()}  # compile + check
        if reference is None:
            reference = losses["srcjax"]
        for k, v in losses.items():
            assert np.allclose(v, reference, rtol=1e-4), (n, k, v, reference)
        samples: dict[str, list[float]] = {k: [] for k in runners}
        for _ in range(rounds):
            for k, f in runners.items():
                t = time.perf_counter()
                for _ in range(steps):
                    f()
                samples[k].append((time.perf_counter() - t) / steps * 1e3)
        rows.append((n, {k: statistics.median(v) for k, v in samples.items()}))
    print("losses agree across device counts and with jax: yes")
    print(f"{'devices':>8} {'srcjax ms':>10} {'jax ms':>8} {'sj/jax':>7} {'srcjax vs 1 device':>19}")
    base = rows[0][1]["srcjax"]
    for n, t in rows:
        j = t.get("jax")
        print(f"{n:>8} {t['srcjax']:>10.3f} {j if j is not None else float('nan'):>8.3f} "
              f"{t['srcjax'] / j if j else float('nan'):>7.2f} {t['srcjax'] / base:>18.2f}x")
    pmap_rows(params, x, y, reference, steps, rounds)


def pmap_rows(params: Any, x: np.ndarray, y: np.ndarray, reference: Any, steps: int, rounds: int) -> None:
    """The same training loop with ``pmap`` (one program per device, gradients pmean-ed in the body)."""
    print("pmap (one program per device in replica mode; gradients pmean-ed in the body):")
    print(f"{'devices':>8} {'srcjax ms':>10} {'jax ms':>8} {'sj/jax':>7}")
    for n in (2, 4):
        runners = {"srcjax": pmap_runner("srcjax", n, params, x, y)}
        if jax is not None:
            runners["jax"] = pmap_runner("jax", n, params, x, y)
        losses = {k: [f() for _ in range(3)] for k, f in runners.items()}
        for k, v in losses.items():
            assert np.allclose(v, reference, rtol=1e-4), ("pmap", n, k, v, reference)
        samples: dict[str, list[float]] = {k: [] for k in runners}
        for _ in range(rounds):
            for k, f in runners.items():
                t = time.perf_counter()
                for _ in range(steps):
                    f()
                samples[k].append((time.perf_counter() - t) / steps * 1e3)
        t = {k: statistics.median(v) for k, v in samples.items()}
        j = t.get("jax")
        print(f"{n:>8} {t['srcjax']:>10.3f} {j if j is not None else float('nan'):>8.3f} "
              f"{t['srcjax'] / j if j else float('nan'):>7.2f}")
    print("pmap losses agree with one device and with jax: yes")


if __name__ == "__main__":
    main()
