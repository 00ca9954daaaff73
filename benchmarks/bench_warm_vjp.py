"""``srcjax.vjp`` in a new process (issue #18 item 2): construction + the forward call + one ``vjp_fn``
call, thread CPU, srcjax cold (empty persistent cache) and warm (filled by the cold run: both halves
from the level-2 cache), jax cold and warm (``jax.vjp`` under ``jax.jit``, its persistent compilation
cache on); Rosenbrock and a two-primal function with a tuple output; medians of milliseconds.

    .venv/bin/python benchmarks/bench_warm_vjp.py [--runs 3]

Bytecode is written (PYTHONDONTWRITEBYTECODE dropped; into PYTHONPYCACHEPREFIX when set) so that the
warm numbers are not Python compiling srcjax's lazily imported modules.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

JOB = r'''
import sys, time
import numpy as np
lib, which = sys.argv[1], sys.argv[2]
if lib == "jax":
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_compilation_cache_dir", sys.argv[3])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    xp = jnp
else:
    import srcjax
    xp = np


def rosen(x):
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def two(x, w):
    y = xp.tanh(x @ w)
    return xp.sum(y ** 2), y


x, w = np.linspace(0.1, 0.9, 5), np.ones((5, 3)) * 0.1
fn, primals, ct = (rosen, (x,), 1.0) if which == "rosen" else (two, (x, w), (1.0, np.ones(3)))
t = time.thread_time()
if lib == "jax":
    fwd = jax.jit(lambda *p: jax.vjp(fn, *p))
    y, f_vjp = fwd(*primals)
    bars = jax.jit(lambda f, c: f(c))(f_vjp, ct)
else:
    y, f_vjp = srcjax.vjp(fn, *primals)
    bars = f_vjp(ct)
np.asarray(bars[0])
print((time.thread_time() - t) * 1e3)
'''


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args(argv)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("SRCJAX_CACHE", None)
    with tempfile.TemporaryDirectory() as tmp:
        job = os.path.join(tmp, "job.py")
        with open(job, "w") as fh:
            fh.write(JOB)

        def run(*args: str, cache: str) -> float:
            e = {**env, "SRCJAX_CACHE_DIR": cache}
            r = subprocess.run([sys.executable, job, *args], env=e, capture_output=True, text=True, check=True)
            return float(r.stdout.split()[-1])

        run("srcjax", "rosen", cache=os.path.join(tmp, "warmup"))  # (bytecode written)
        for which in ("rosen", "two"):
            times: dict[str, list[float]] = {k: [] for k in ("srcjax cold", "srcjax warm", "jax cold", "jax warm")}
            for i in range(a.runs):
                sj, jx = os.path.join(tmp, f"s{which}{i}"), os.path.join(tmp, f"j{which}{i}")
                times["srcjax cold"].append(run("srcjax", which, cache=sj))
                times["srcjax warm"].append(run("srcjax", which, cache=sj))
                times["jax cold"].append(run("jax", which, jx, cache=sj))
                times["jax warm"].append(run("jax", which, jx, cache=sj))
                shutil.rmtree(sj, ignore_errors=True)
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"{which}: " + ", ".join(f"{k} {v:.1f} ms" for k, v in med.items())
                  + f"; warm: srcjax / jax {med['srcjax warm'] / med['jax warm']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
