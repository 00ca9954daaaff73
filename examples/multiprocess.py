"""Several processes: the data_parallel MLP trained by 2 processes of 2 CPU devices each, its batch
sharded over all 4 devices, checked against a single-process run. Run:

    python examples/multiprocess.py [--steps N] [--processes 2] [--devices 2]

This launcher starts the processes on 127.0.0.1 with a free port (each runs this file with
``--worker``), waits for them (bounded), and compares their losses with the same training on one
device in this process; it exits non-zero if they disagree or a process fails. Each worker does what
a real multi-host job does on every host:

    srcjax.distributed.initialize("127.0.0.1:PORT", num_processes=2, process_id=rank)
    mesh = srcjax.make_mesh((4,), ("data",))                        # every process's devices
    x = srcjax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), my_rows)
    params, loss = step(params, x, y)                               # one SPMD program, all 4 devices
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def data(n_rows: int) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """The same parameters and batch in every process (one seed)."""
    from data_parallel import make_data

    rng = np.random.default_rng(0)
    x, y = make_data(n_rows, rng)
    params = {"w1": (rng.normal(size=(8, 32)) / np.sqrt(8)).astype(np.float32), "b1": np.zeros(32, np.float32),
              "w2": (rng.normal(size=(32, 3)) / np.sqrt(32)).astype(np.float32), "b2": np.zeros(3, np.float32)}
    return params, x, y


def worker(args: argparse.Namespace) -> None:
    os.environ["SRCJAX_NUM_CPU_DEVICES"] = str(args.devices)  # (before srcjax makes its client)
    from data_parallel import train_step

    import srcjax
    from srcjax.sharding import NamedSharding, P

    rank = args.worker
    srcjax.distributed.initialize(f"127.0.0.1:{args.port}", num_processes=args.processes, process_id=rank,
                                  initialization_timeout=60, heartbeat_timeout_seconds=10)
    params, x, y = data(args.rows)
    mesh = srcjax.make_mesh((srcjax.device_count(),), ("data",))
    batch, replicated = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
    per = args.rows // args.processes
    mine = slice(rank * per, (rank + 1) * per)  # this process's rows (its devices' shards of the batch)
    xg = srcjax.make_array_from_process_local_data(batch, x[mine])
    yg = srcjax.make_array_from_process_local_data(batch, y[mine])
    seen = (f"process {rank} of {srcjax.process_count()}: devices {[d.id for d in srcjax.devices()]}, its own "
            f"{[d.id for d in srcjax.local_devices()]}; its {per} rows of x {xg.shape} on devices "
            f"{[s.device.id for s in xg.addressable_shards]}")
    step = srcjax.jit(train_step, out_shardings=replicated)
    p = srcjax.device_put(params, replicated)
    losses, times = [], []
    for _ in range(args.steps):
        t = time.perf_counter()
        p, loss = step(p, xg, yg)
        losses.append(float(loss))  # (replicated: every process reads it; waiting also keeps gloo in step)
        times.append(time.perf_counter() - t)
    print(json.dumps({"rank": rank, "seen": seen, "losses": losses,
                      "step_ms": 1e3 * float(np.median(times[1:] or times))}), flush=True)
    srcjax.distributed.shutdown()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch(args: argparse.Namespace) -> int:
    port = free_port()
    cmd = [sys.executable, os.path.abspath(__file__), "--port", str(port), "--steps", str(args.steps),
           "--processes", str(args.processes), "--devices", str(args.devices), "--rows", str(args.rows)]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    print(f"starting {args.processes} processes x {args.devices} CPU devices, coordinator 127.0.0.1:{port}")
    procs = [subprocess.Popen(cmd + ["--worker", str(r)], env=env, stdout=subprocess.PIPE, text=True)
             for r in range(args.processes)]
    try:
        reference = single_process(args)  # (meanwhile, in this process: the same training on one device)
        results = []
        deadline = time.monotonic() + args.timeout
        for r, proc in enumerate(procs):
            out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            lines = [ln for ln in out.splitlines() if ln.startswith("{")]  # (gloo prints its own lines)
            if proc.returncode != 0 or not lines:
                print(f"process {r} failed with exit code {proc.returncode}", file=sys.stderr)
                return 1
            results.append(json.loads(lines[-1]))
    except subprocess.TimeoutExpired:
        print(f"the processes did not finish within {args.timeout} s", file=sys.stderr)
        return 1
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
    for res in results:
        print(res["seen"])
    ok = True
    for k, ref in enumerate(reference):
        got = [res["losses"][k] for res in results]
        agree = all(np.isclose(g, ref, rtol=1e-5) for g in got)
        ok &= agree
        if k % 5 == 0 or k == len(reference) - 1 or not agree:
            print(f"step {k:3d}  loss in the {len(got)} processes {' '.join(f'{g:.6f}' for g in got)}   "
                  f"one process, one device {ref:.6f}" + ("" if agree else "   DISAGREE"))
    print(f"median step time, {args.processes} processes x {args.devices} devices: "
          f"{max(res['step_ms'] for res in results):.2f} ms")
    print(f"same losses in every process as in a single-process run: {ok}")
    return 0 if ok else 1


def single_process(args: argparse.Namespace) -> list[float]:
    os.environ.setdefault("SRCJAX_NUM_CPU_DEVICES", "1")
    from data_parallel import train_step

    import srcjax

    params, x, y = data(args.rows)
    step = srcjax.jit(train_step)
    losses = []
    for _ in range(args.steps):
        params, loss = step(params, x, y)
        losses.append(float(loss))
    return losses


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--devices", type=int, default=2, help="CPU devices per process")
    ap.add_argument("--rows", type=int, default=512, help="global batch size")
    ap.add_argument("--timeout", type=float, default=120, help="seconds to wait for the processes")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    sys.path.insert(0, HERE)  # (data_parallel.py, beside this file)
    if args.worker is not None:
        worker(args)
    else:
        sys.exit(launch(args))


if __name__ == "__main__":
    main()
