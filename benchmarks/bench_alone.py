"""Per-call cost of ``bench_models.py``'s training steps in a process where srcjax runs alone (#18).

    .venv/bin/python benchmarks/bench_alone.py              # ~1 min
    .venv/bin/python benchmarks/bench_alone.py --calls 3000 --runs 3

``bench_models.py`` imports jax (its oracle), which imports ``ml_dtypes``: srcjax's C++ dispatcher then
starts at a function's first call. A script that imports srcjax alone keeps srcjax's Python call path
for its first ``cpp_budget.BUDGET`` calls (jaxlib's dispatcher would import ml_dtypes, 1.2-1.8 s:
``srcjax/cpp_budget.py``). This script measures that: each model's ``value_and_grad`` step in a new
process importing srcjax and NumPy alone, and ``jax.jit`` of it in a process importing jax, run
alternately (``--runs`` pairs of processes), with the calling thread's CPU time per call (the least
disturbed batch). Modes as ``bench_models.py``'s: ``dev`` (parameters and batch on the device),
``mixed`` (parameters on the device, a NumPy batch), ``np`` (all NumPy). Each worker says whether
``jax`` or ``ml_dtypes`` was imported by the end (srcjax's must say neither).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
MODELS = ("mlp 6", "lstm", "transformer", "mlp-wide")


def _models() -> dict[str, Any]:
    """``bench_models.py``'s model functions and ``cases`` without its imports of jax and srcjax."""
    tree = ast.parse((HERE / "bench_models.py").read_text())
    keep = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign))
            or (isinstance(n, (ast.Import, ast.ImportFrom)) and all(
                a.name.split(".")[0] not in ("jax", "srcjax", "bench_foundation") for a in n.names)
                and getattr(n, "module", None) not in ("srcjax", "bench_foundation"))]
    scope: dict[str, Any] = {"__name__": "bench_models_alone"}
    exec(compile(ast.Module(keep, []), str(HERE / "bench_models.py"), "exec"), scope)
    return scope


def worker(lib: str, calls: int, batches: int) -> dict[str, Any]:
    m = _models()
    out: dict[str, Any] = {}
    rng = np.random.default_rng(0)
    if lib == "srcjax":
        import srcjax

        vg, put = srcjax.value_and_grad, srcjax.device_put
        tree_map = srcjax.tree_util.tree_map
    else:
        import jax

        m["np"] = __import__("jax.numpy").numpy
        vg, put = (lambda f: jax.jit(jax.value_and_grad(f))), jax.device_put
        tree_map = jax.tree_util.tree_map
    for name, loss, args in m["cases"](rng):
        if not any(name.startswith(k) for k in MODELS):
            continue
        if lib == "jax":
            import types

            g = dict(loss.__globals__)
            g["np"] = m["np"]
            for k, v in list(g.items()):  # (the helpers it calls see jax.numpy too)
                if isinstance(v, types.FunctionType) and v.__module__ == loss.__module__:
                    g[k] = types.FunctionType(v.__code__, g, v.__name__, v.__defaults__, v.__closure__)
            loss = g[loss.__name__]
        f = vg(loss)
        dev = tuple(tree_map(put, a) for a in args)
        for mode, a in (("dev", dev), ("mixed", (dev[0], *args[1:])), ("np", args)):
            for _ in range(3):
                f(*a)
            best = float("inf")
            for _ in range(batches):
                t = time.thread_time_ns()
                for _ in range(calls):
                    f(*a)
                best = min(best, (time.thread_time_ns() - t) / calls / 1e3)
            out[f"{name} | {mode}"] = best
    out["imported"] = sorted(k for k in ("jax", "ml_dtypes") if k in sys.modules)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", choices=("srcjax", "jax"))
    ap.add_argument("--calls", type=int, default=400, help="calls per timed batch")
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--runs", type=int, default=2, help="pairs of worker processes, run alternately")
    ns = ap.parse_args(argv)
    if ns.worker:
        print(json.dumps(worker(ns.worker, ns.calls, ns.batches)))
        return 0
    rows: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, SRCJAX_CACHE_DIR=cache)  # (no function remembered from an earlier process)
        for _ in range(ns.runs):
            for lib in ("srcjax", "jax"):
                res = subprocess.run([sys.executable, __file__, "--worker", lib, "--calls", str(ns.calls),
                                      "--batches", str(ns.batches)], env=env, capture_output=True, text=True,
                                     check=True)
                got = json.loads(res.stdout.strip().splitlines()[-1])
                print(f"{lib} worker imported: {got.pop('imported')}", flush=True)
                for k, v in got.items():
                    rows.setdefault(k, {}).setdefault(lib, []).append(v)
    print("| case | mode | srcjax alone us | jax us | sj/jax (per run) |")
    print("|---|---|---:|---:|---|")
    for k, v in rows.items():
        ratios = " / ".join(f"{a / b:.2f}" for a, b in zip(v["srcjax"], v["jax"]))
        print(f"| {k} | {min(v['srcjax']):.1f} | {min(v['jax']):.1f} | {ratios} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
