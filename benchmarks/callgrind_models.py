"""Instructions per call of ``bench_models.py``'s training steps on the calling thread, srcjax and jax.jit.

Run::

    .venv/bin/python benchmarks/callgrind_models.py [--calls N] [--only NAME] [--modes dev,mixed,np] [--keep DIR]

Timings of these steps swing by more than srcjax's gap to ``jax.jit`` on a loaded machine (the
programs run on XLA's threads, other processes share the cores); instruction counts of the calling
thread do not. This runs itself under ``valgrind --tool=callgrind --separate-threads=yes`` (needed on
the PATH; minutes, most of it imports), collecting only inside ``functools.reduce``, which calls one
variant ``--calls`` times, and prints the calling thread's instructions per call of each variant (what
dispatching costs the caller: flattening and keying the arguments, uploads, building the results; XLA's
own threads, which run the programs, are left out). Modes as ``bench_models.py``'s: ``dev`` (arguments
on the device), ``mixed`` (parameters on the device, a NumPy batch), ``np`` (NumPy arguments); srcjax's
calls with NumPy arguments are brought to their steady state first (packed: ``_steady``), every mode's of
a model before any is counted, so one function is called the np way and the mixed way by turns (a function
keeps a packer for each since 2026-12-06: before, its np window ran the copies' route, 1.17-1.31x jax.jit). XLA compiles
for AVX2 there (valgrind 3.19 runs no AVX-512), without srcjax's persistent cache. ``--keep DIR`` keeps
callgrind's file of each variant (names are not compressed: ``callgrind_annotate`` reads each alone).

``--cpu ROUNDS`` runs the same sequence without valgrind (where valgrind cannot finish: at a load average
of ~20 on 2 cores it ran for an hour), timing each window by the calling thread's CPU time, ROUNDS times
in the same order, and prints the minimum per call of each and the route each srcjax function's calls
ended on (``direct``: packed; ``host_first``/``host_top``: NumPy leaves copied and uploaded one by one).
"""

from __future__ import annotations

import argparse
import functools
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any


def variants(only: str, modes: list[str]) -> dict[str, Callable[[], Any]]:
    import ml_dtypes  # noqa: F401  (srcjax's C++ dispatcher starts once it is imported: cpp_budget.BUDGET)
    import numpy as np

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import jax
    from bench_models import _steady, as_jax, cases

    import srcjax
    from srcjax import packed_calls

    out: dict[str, Callable[[], Any]] = {}
    for name, loss, args in cases(np.random.default_rng(0)):
        if not any(o in name for o in only.split(",")):
            continue
        sj = srcjax.value_and_grad(loss)
        jx = jax.jit(jax.value_and_grad(as_jax(loss)))
        sj(*args), jx(*args)
        sj_dev = tuple(jax.tree_util.tree_map(srcjax.device_put, a) for a in args)
        jx_dev = tuple(jax.tree_util.tree_map(jax.device_put, a) for a in args)
        for mode, sa, ja in (("np", args, args), ("dev", sj_dev, jx_dev),
                             ("mixed", (sj_dev[0], *args[1:]), (jx_dev[0], *args[1:]))):
            if mode not in modes:
                continue
            s_call = functools.partial(sj, *sa)
            _steady(s_call, mode)
            packed_calls.wait()  # (under valgrind the packed program's compile may outlast _steady's wait)
            out[f"{name} {mode} srcjax"] = s_call
            out[f"{name} {mode} jax"] = functools.partial(jx, *ja)
    return out


def child(calls: int, only: str, modes: list[str], order: str) -> None:
    fns = variants(only, modes)
    for fn in fns.values():
        for _ in range(20):
            fn()
    with open(order, "w") as f:
        f.write("\n".join(fns))
    for fn in fns.values():
        out = functools.reduce(lambda acc, _: fn(), range(calls), None)
        import numpy as np

        np.asarray(out[0])  # (wait for the last program outside the counted loop)


def timed(rounds: int, only: str, modes: list[str]) -> None:
    """``--cpu``: the child's sequence, each window timed by the calling thread's CPU time (min of ``rounds``)."""
    import time

    fns = variants(only, modes)
    for fn in fns.values():
        for _ in range(20):
            fn()
    best = dict.fromkeys(fns, float("inf"))
    routes = {}
    for _ in range(rounds):
        for name, fn in fns.items():
            t = time.thread_time_ns()
            functools.reduce(lambda acc, _: fn(), range(100), None)
            best[name] = min(best[name], (time.thread_time_ns() - t) / 100e3)
            if name.endswith(" srcjax"):
                d = fn.func.__dict__.get("_dispatch")  # type: ignore[attr-defined]
                routes[name] = getattr(d, "__name__", type(d).__name__)
    print(f"calling thread's CPU time per call (us, min of {rounds} windows of 100 calls):")
    for name, v in best.items():
        if name.endswith(" srcjax"):
            j = best[name[:-7] + " jax"]
            print(f"  {name[:-7]:<28} srcjax {v:7.1f}  jax {j:7.1f}  {v / j:.3f}x  (route {routes[name]})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--only", default="", help="the cases whose name contains one of these (comma-separated)")
    ap.add_argument("--modes", default="dev,mixed,np")
    ap.add_argument("--keep", help="a folder to copy callgrind's files of the variants into (callgrind_annotate)")
    ap.add_argument("--cpu", type=int, metavar="ROUNDS", help="no valgrind: thread CPU time, min of ROUNDS windows")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    modes = a.modes.split(",")
    if a.cpu:
        timed(a.cpu, a.only, modes)
        return 0
    if a.child:
        child(a.calls, a.only, modes, a.child)
        return 0
    with tempfile.TemporaryDirectory() as d:
        order = os.path.join(d, "order.txt")
        cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes", "--compress-strings=no", "--compress-pos=no",
               "--collect-atstart=no",
               "--toggle-collect=functools_reduce", "--dump-after=functools_reduce",
               f"--callgrind-out-file={d}/cg.out", sys.executable, os.path.abspath(__file__), "--calls",
               str(a.calls), "--only", a.only, "--modes", a.modes, "--child", order]
        # (valgrind 3.19 runs no AVX-512: XLA's code for this CPU would die of SIGILL; no persistent cache,
        # whose executables were compiled for the CPU's full instruction set)
        env = dict(os.environ, PYTHONHASHSEED="0", SRCJAX_CACHE="0", XLA_FLAGS="--xla_cpu_max_isa=AVX2")
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode:
            sys.exit(r.stderr[-3000:])
        names = open(order).read().splitlines()
        main_thread = sorted(glob.glob(f"{d}/cg.out.*-01"), key=lambda p: int(p.rsplit(".", 1)[1].split("-")[0]))
        dumps = main_thread[len(main_thread) - len(names):]  # (the variants' loops: the last reduce calls)
        print(f"calling thread's instructions per call (callgrind, {a.calls} calls each):")
        totals = {}
        for name, path in zip(names, dumps):
            if a.keep:
                os.makedirs(a.keep, exist_ok=True)
                shutil.copy(path, os.path.join(a.keep, name.replace(" ", "_") + ".cg"))
            totals[name] = next(int(line.split()[1]) for line in open(path)
                                if line.startswith(("totals:", "summary:"))) / a.calls
        for name, v in totals.items():
            ratio = ""
            if name.endswith(" srcjax") and name[:-7] + " jax" in totals:
                ratio = f"  ({v / totals[name[:-7] + ' jax']:.3f}x jax)"
            print(f"  {name:<40} {v:10.0f}{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
