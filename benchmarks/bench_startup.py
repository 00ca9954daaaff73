"""A short job as a whole new process (issue #18): import, ``value_and_grad`` of a small MLP, one
call, print. srcjax cold (empty persistent cache) and warm (the cache filled by an earlier run),
jax cold and warm (its persistent compilation cache on, in a directory of its own), and
``import`` alone; processes interleaved, medians of wall-clock seconds.

    .venv/bin/python benchmarks/bench_startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

JOB = r'''
import sys
import numpy as np
LIB = sys.argv[1]
if LIB == "jax":
    import jax, jax.numpy as np_
    if len(sys.argv) > 2:
        jax.config.update("jax_compilation_cache_dir", sys.argv[2])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    value_and_grad = lambda f: jax.jit(jax.value_and_grad(f))
else:
    import srcjax
    np_ = np
    value_and_grad = srcjax.value_and_grad

def loss(params, x, y):
    h = x
    for layer in params[:-1]:
        h = np_.tanh(h @ layer["w"] + layer["b"])
    out = h @ params[-1]["w"] + params[-1]["b"]
    return np_.mean((out - y) ** 2)

rng = np.random.default_rng(0)
sizes = [16, 32, 32, 4]
params = [{"w": (rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), "b": np.zeros(b, np.float32)}
          for a, b in zip(sizes[:-1], sizes[1:])]
x = rng.standard_normal((32, 16)).astype(np.float32)
y = rng.standard_normal((32, 4)).astype(np.float32)
value, grads = value_and_grad(loss)(params, x, y)
print(float(value))
'''


def run(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{cmd} failed:\n{r.stderr}")
    return dt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ns = ap.parse_args(argv)
    py = sys.executable
    tmp = tempfile.mkdtemp(prefix="srcjax-startup-")
    try:
        job = os.path.join(tmp, "job.py")
        with open(job, "w") as f:
            f.write(JOB)
        sj_cache, jx_cache = os.path.join(tmp, "sj"), os.path.join(tmp, "jx")
        base = {k: v for k, v in os.environ.items() if k not in ("SRCJAX_CACHE", "SRCJAX_CACHE_DIR")}
        sj_env = {**base, "SRCJAX_CACHE_DIR": sj_cache}
        times: dict[str, list[float]] = {k: [] for k in (
            "import srcjax", "import jax", "srcjax cold", "srcjax warm", "jax cold", "jax warm")}
        # srcjax's bytecode, as `pip install` writes it (an editable install under PYTHONDONTWRITEBYTECODE=1,
        # as on the project's machines, has none: every process would compile ~130 modules, ~1 s; jax's
        # site-packages have theirs)
        spec = importlib.util.find_spec("srcjax")
        if spec is not None and spec.origin:
            run([py, "-m", "compileall", "-q", os.path.dirname(spec.origin)], base)
        run([py, job, "srcjax"], sj_env)  # fill both caches once
        run([py, job, "jax", jx_cache], base)
        for _ in range(ns.runs):
            times["import srcjax"].append(run([py, "-c", "import srcjax"], base))
            times["import jax"].append(run([py, "-c", "import jax"], base))
            times["srcjax cold"].append(run([py, job, "srcjax"], {**base, "SRCJAX_CACHE": "0"}))
            times["srcjax warm"].append(run([py, job, "srcjax"], sj_env))
            times["jax cold"].append(run([py, job, "jax"], base))
            times["jax warm"].append(run([py, job, "jax", jx_cache], base))
        med = {k: statistics.median(v) for k, v in times.items()}
        print("| case | seconds (median) |")
        print("|---|---:|")
        for k, v in med.items():
            print(f"| {k} | {v:.3f} |")
        print(f"\nimport: srcjax/jax {med['import srcjax'] / med['import jax']:.2f}; "
              f"cold: {med['srcjax cold'] / med['jax cold']:.2f}; "
              f"warm: srcjax warm / jax warm {med['srcjax warm'] / med['jax warm']:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
