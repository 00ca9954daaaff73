"""A data-parallel MLP training step on 1, 2 and 4 CPU devices, srcjax vs jax (issue #19).

    .venv/bin/python benchmarks/bench_spmd.py            # ~1-2 min
    .venv/bin/python benchmarks/bench_spmd.py --quick    # a smoke run

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
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

os.environ.setdefault("SRCJAX_NUM_CPU_DEVICES", "4")
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--hidden", type=int, default=256)
    args = ap.parse_args()
    steps, rounds = (5, 3) if args.quick else (20, 7)
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
