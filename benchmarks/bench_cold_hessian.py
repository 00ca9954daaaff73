"""The first ``hessian`` of a new process: srcjax vs jax, each in fresh processes, alternating.

Run (from the repository root, in the venv that has the test extras: ``jax`` is the oracle)::

    .venv/bin/python benchmarks/bench_cold_hessian.py --runs 5

Each run starts a new Python process that imports the library, defines a fresh Rosenbrock function
(a new module file with a constant never used before, so no cache of either library can hit for the
function itself) and times ``hessian(f)(x)`` on f64[64], read back: wall time and the process's CPU
time (which moves less on a busy machine). srcjax's persistent cache is left as it is
(``SRCJAX_CACHE_DIR`` / ``~/.cache/srcjax``): what a real new process finds there (XLA's executables
of srcjax's own helper programs, the normalized library helpers) is part of a cold first call; jax's
persistent cache is off, as by default. ``import`` time is printed apart.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

CHILD = textwrap.dedent('''
    import importlib.util, os, random, sys, tempfile, time
    lib = sys.argv[1]
    c = repr(1.0 + random.random())
    np_import = "import jax.numpy as np" if lib == "jax" else "import numpy as np"
    src = (np_import + "\\ndef rosen(x):\\n"
           "    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2) * " + c + "\\n")
    path = os.path.join(tempfile.mkdtemp(), "cold_%d.py" % os.getpid())
    with open(path, "w") as f:
        f.write(src)
    t0 = time.perf_counter()
    import numpy
    if lib == "jax":
        import jax
        jax.config.update("jax_enable_x64", True)
    else:
        import srcjax
    t1, c1 = time.perf_counter(), time.process_time()
    spec = importlib.util.spec_from_file_location("cold_mod", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    x = numpy.linspace(-1.0, 1.0, 64)
    h = jax.jit(jax.hessian(m.rosen))(x) if lib == "jax" else srcjax.hessian(m.rosen)(x)
    numpy.asarray(h)
    t2, c2 = time.perf_counter(), time.process_time()
    print((jax if lib == "jax" else srcjax).__file__, file=sys.stderr)
    print(1e3 * (t1 - t0), 1e3 * (t2 - t1), 1e3 * (c2 - c1))
''')


def run(lib: str) -> tuple[float, float, float]:
    # this process's import path, made absolute, from a neutral directory (a child's `-c` puts its
    # working directory first on its path: the srcjax there would be imported instead)
    path = os.pathsep.join(os.path.abspath(p) for p in sys.path)
    out = subprocess.run([sys.executable, "-c", CHILD, lib], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": path}, cwd=tempfile.gettempdir())
    imp, wall, cpu = (float(v) for v in out.stdout.split()[-3:])
    WHERE[lib] = out.stderr.strip().splitlines()[-1]
    return imp, wall, cpu


WHERE: dict[str, str] = {}  # the library each child imported


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="processes per library (alternating)")
    args = ap.parse_args()
    res: dict[str, list[tuple[float, float, float]]] = {"srcjax": [], "jax": []}
    for _ in range(args.runs):
        for lib in res:
            res[lib].append(run(lib))
    print(f"load average: {os.getloadavg()}; medians over {args.runs} processes each")
    print("| library | import ms | first hessian ms | its CPU ms |\n|---|---|---|---|")
    med = {lib: [statistics.median(r[i] for r in rows) for i in range(3)] for lib, rows in res.items()}
    for lib, (imp, wall, cpu) in med.items():
        print(f"| {lib} | {imp:.0f} | {wall:.0f} | {cpu:.0f} |")
    (_, sw, sc), (_, jw, jc) = med["srcjax"], med["jax"]
    print(f"srcjax/jax: first hessian {sw / jw:.2f} (CPU {sc / jc:.2f}); srcjax from {WHERE['srcjax']}")


if __name__ == "__main__":
    main()
