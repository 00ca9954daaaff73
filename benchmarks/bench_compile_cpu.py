"""XLA's compile of a first call, srcjax against jax: program sizes, compile options, compile CPU (issues #15, #18).

Run (from the repository root, in the venv that has the test extras)::

    .venv/bin/python benchmarks/bench_compile_cpu.py              # bench_grad's three cases, bench_vmap's five
    .venv/bin/python benchmarks/bench_compile_cpu.py rosen --rounds 9
    .venv/bin/python benchmarks/bench_compile_cpu.py newton nested --new-processes 5   # compiles in new processes

A first call's largest stage is XLA's compile. This asks whether srcjax's part of it can shrink: is the
program srcjax hands XLA bigger than jax's for the same function, or are its compile options different?
For each case (``bench_grad.py``'s gradients, ``bench_vmap.py``'s batched programs):

* ``ops``: StableHLO operations in srcjax's text and jax's (``.lower(...).as_text()``), and in the
  optimized HLO XLA makes of each (``bench_grad.hlo_counts``: top-level instructions, fusions);
* ``compile ms``: the process CPU (``time.process_time``: XLA compiles on its own threads; steady on a
  loaded machine where wall time is not) of ``compile_and_load`` on srcjax's client, for srcjax's text and
  jax's, each under srcjax's ``CompileOptions()`` and under the options jax compiled its own with
  (``jax._src.compiler.get_compile_options``, captured; ``-`` where that private function is gone).
  Rounds interleave the four; medians. Only the text and the options differ between the four columns, so
  a ratio away from 1 is the program's or the options' doing;
* ``stage ms``: each library's whole compile stage of a fresh function (srcjax ``Lowered.compile()``:
  its persistent-cache key, lookup and background store included; jax ``Lowered.compile()``), process CPU.

Measured 2026-12-06 (load average 14-18, 2 cores): the compile of srcjax's text equals jax's within the
noise in all eight cases (per-example gradients: srcjax's 25% less), under either set of options; the
optimized HLO has as many or fewer top-level instructions and fusions. srcjax's compile stage costs
~1-2 ms more than jax's (the executable serialized for the persistent cache on srcjax's writer thread,
which holds the GIL: 1.0 ms for rosen, 2.0 ms for the cross-entropy MLP; jax's persistent cache is off here).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_grad  # noqa: E402  (sets jax_enable_x64, as bench_vmap does)
import bench_vmap  # noqa: E402  (points SRCJAX_CACHE_DIR at an empty directory)
import jax  # noqa: E402
from bench_foundation import FreshFunctions  # noqa: E402

import srcjax  # noqa: E402
from srcjax.runtime import xla  # noqa: E402

CLOCK = time.process_time
_OPS = re.compile(r"= (?:\"?)(stablehlo\.[a-z_]+|func\.call)")
_JAX_OPTIONS: list[Any] = []  # the options jax's last compile used (captured)


def _capture_jax_options() -> bool:
    try:
        from jax._src import compiler
    except ImportError:
        return False
    real = compiler.get_compile_options

    def keep(*args: Any, **kwargs: Any) -> Any:
        options = real(*args, **kwargs)
        _JAX_OPTIONS[:] = [options]
        return options

    compiler.get_compile_options = keep
    return True


class Case:
    """A function both libraries compile: srcjax's and jax's transformed functions, and their arguments."""

    def __init__(self, name: str, sj: Callable[[], Any], jx: Callable[[], Any], args: tuple[Any, ...],
                 fresh: Callable[[], tuple[Any, Any]] | None = None) -> None:
        self.name, self.sj, self.jx, self.args, self.fresh = name, sj, jx, args, fresh


def cases(fresh: FreshFunctions) -> list[Case]:
    out = []
    for _, kind, fn, args, argnums in bench_grad.workloads(np.random.default_rng(0)):
        def pair(kind: str = kind, argnums: Any = argnums) -> tuple[Any, Any]:
            f, fj = fresh.make(kind)
            return srcjax.grad(f, argnums=argnums), jax.jit(jax.grad(fj, argnums=argnums))

        out.append(Case(f"grad {kind}", lambda fn=fn, a=argnums: srcjax.grad(fn, argnums=a),
                        lambda fn=fn, a=argnums: jax.jit(jax.grad(bench_grad.as_jax(fn), argnums=a)), args, pair))
    for c in bench_vmap.cases(False, np.random.default_rng(0)):
        out.append(Case(c.name.split(", ")[0], c.make_sj, c.make_jax, c.args))
    return out


def _ops(text: str) -> int:
    return len(_OPS.findall(text))


def child(name: str, mode: str, path: str) -> None:
    """(a new process) after srcjax's warm-up (``bench_vmap._warm_up``), one compile's process CPU ms: srcjax's
    whole compile stage in the first call of case ``name`` (``stage``: ``xla._compile_cached``, its cache key,
    lookup and store, the work it overlaps, the writer thread's stores meanwhile), or ``compile_and_load``
    of the StableHLO text in ``path`` on srcjax's client (``text``)."""
    bench_vmap._warm_up("srcjax")
    xla.disk_cache.flush()
    backend = xla.get_backend(None)
    spent = [0.0]
    if mode == "stage":
        real = xla._compile_cached

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = CLOCK()
            try:
                return real(*args, **kwargs)
            finally:
                spent[0] += CLOCK() - t

        xla._compile_cached = timed
        fresh = FreshFunctions(bench_grad._FIRST_TEMPLATES, prefix="srcjax_bench_compile_")
        try:
            c = next(c for c in cases(fresh) if c.name == name)
            bench_vmap._read(c.sj()(*c.args))
        finally:
            fresh.close()
    else:
        with open(path) as f:
            text = f.read()
        t = CLOCK()
        backend.client.compile_and_load(text, backend.device_list, xla.xla_client.CompileOptions())
        spent[0] = CLOCK() - t
    print(f"{spent[0] * 1e3:.2f}")


def new_processes(chosen: list[Case], runs: int) -> None:
    """Each case's compile in new processes, ``runs`` of each kind alternated: srcjax's compile stage of its
    first call against ``compile_and_load`` of srcjax's text and of jax's (no in-process warm compiles). The
    children share one persistent cache holding srcjax's own entries (as ``bench_vmap.py --cold``'s), never
    the case's program: its ``*.xla`` and ``*.prog`` entries are deleted before each child."""
    import glob
    import subprocess
    import tempfile

    print(f"process CPU ms in new processes, medians of {runs} each; load average {os.getloadavg()[0]:.1f}")
    print("| case | sj compile stage | sj text | jax text | stage / jax text |")
    print("|---|---:|---:|---:|---:|")
    folder = tempfile.mkdtemp(prefix="bench_compile_cpu_")
    env = {**os.environ, "BENCH_VMAP_COLD_CACHE": os.path.join(folder, "cache")}
    for c in chosen:
        paths = {"sj": os.path.join(folder, "sj.mlir"), "jx": os.path.join(folder, "jx.mlir")}
        with open(paths["sj"], "w") as f:
            f.write(srcjax.lower(c.sj(), *c.args).as_text())
        with open(paths["jx"], "w") as f:
            f.write(c.jx().lower(*c.args).as_text())
        got: dict[str, list[float]] = collections.defaultdict(list)
        kinds = [("stage", "stage", ""), ("sj", "text", paths["sj"]), ("jx", "text", paths["jx"])]
        for r in range(runs):
            for label, mode, path in (kinds if r % 2 == 0 else kinds[::-1]):
                for entry in glob.glob(os.path.join(folder, "cache", "**", "*.xla"), recursive=True) + \
                        glob.glob(os.path.join(folder, "cache", "**", "*.prog"), recursive=True):
                    os.remove(entry)
                out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", c.name, mode, path],
                                     capture_output=True, text=True, env=env)
                got[label].append(float(out.stdout.split()[-1]) if out.returncode == 0 else float("nan"))
        med = {k: statistics.median(v) for k, v in got.items()}
        print(f"| {c.name} | {med['stage']:.1f} | {med['sj']:.1f} | {med['jx']:.1f} | "
              f"{med['stage'] / med['jx']:.3f} |", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("cases", nargs="*", help="substrings of the cases' names (default: all eight)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved compiles of each text and options")
    ap.add_argument("--new-processes", type=int, default=0, metavar="N",
                    help="instead: each compile in a new process, N of each kind (srcjax's compile stage of a "
                         "first call, srcjax's text, jax's text), alternated")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.child:
        child(*ns.child)
        return 0
    have_jax_options = _capture_jax_options()
    backend = xla.get_backend(None)
    fresh = FreshFunctions(bench_grad._FIRST_TEMPLATES, prefix="srcjax_bench_compile_")
    try:
        chosen = [c for c in cases(fresh) if not ns.cases or any(s in c.name for s in ns.cases)]
        if ns.new_processes:
            new_processes(chosen, ns.new_processes)
            return 0
        print(f"process CPU ms, medians of {ns.rounds} rounds; load average {os.getloadavg()[0]:.1f}")
        print("| case | ops sj / jax | optimized top-level sj / jax | fusions sj / jax | compile sj text | jax text "
              "| sj text, jax options | jax text, jax options | sj / jax | stage sj / jax |")
        print("|---|---|---|---|---:|---:|---:|---:|---:|---|")
        for c in chosen:
            st = srcjax.lower(c.sj(), *c.args).as_text()
            lowered = c.jx().lower(*c.args)
            jt = lowered.as_text()
            so = srcjax.lower(c.sj(), *c.args).compile().as_text()
            jo = lowered.compile().as_text()  # (jax's options captured here)
            jax_options = _JAX_OPTIONS[0] if have_jax_options and _JAX_OPTIONS else None
            hs, hj = bench_grad.hlo_counts(so), bench_grad.hlo_counts(jo)
            spent: dict[str, list[float]] = collections.defaultdict(list)
            runs = [("sj", st, None), ("jx", jt, None)]
            if jax_options is not None:
                runs += [("sj+jo", st, jax_options), ("jx+jo", jt, jax_options)]
            for _ in range(ns.rounds):
                for label, text, options in runs:
                    opts = options if options is not None else xla.xla_client.CompileOptions()
                    t = CLOCK()
                    backend.client.compile_and_load(text, backend.device_list, opts)
                    spent[label].append(CLOCK() - t)
            stage = ""
            if c.fresh is not None:  # the whole compile stage of a fresh function, each library
                s_stage, j_stage = [], []
                for _ in range(ns.rounds):
                    sj, jx = c.fresh()
                    low, jlow = sj.lower(*c.args), jx.trace(*c.args).lower()
                    t = CLOCK()
                    low.compile()
                    s_stage.append(CLOCK() - t)
                    t = CLOCK()
                    jlow.compile()
                    j_stage.append(CLOCK() - t)
                stage = f"{statistics.median(s_stage) * 1e3:.1f} / {statistics.median(j_stage) * 1e3:.1f}"
            med = {k: statistics.median(v) * 1e3 for k, v in spent.items()}
            cell = [f"{med[k]:.1f}" if k in med else "-" for k in ("sj", "jx", "sj+jo", "jx+jo")]
            print(f"| {c.name} | {_ops(st)} / {_ops(jt)} | {hs['top-level']} / {hj['top-level']} | "
                  f"{hs['fusion']} / {hj['fusion']} | " + " | ".join(cell) +
                  f" | {med['sj'] / med['jx']:.3f} | {stage or '-'} |", flush=True)
    finally:
        fresh.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
