"""One first call split into its parts, srcjax beside jax, for the cases of ``bench_vmap.py``.

Run (from the repository root, in the venv that has the test extras: ``jax`` is the oracle)::

    .venv/bin/python benchmarks/bench_first_split.py            # full sizes, wall clock
    .venv/bin/python benchmarks/bench_first_split.py --clock cpu --warm-helpers hessian
    .venv/bin/python benchmarks/bench_first_split.py --clock process --warm-helpers --programs

srcjax's first call is split into the front end (reading, normalizing, transforming and writing
source: everything but the next three), lowering the specialized program to StableHLO text
(``Specializer.lower``), XLA's compile (``runtime/xla._compile_cached``: XLA parses the text itself) and
the first execution (upload, run, results wrapped: ``Executable.put_many/run/run_one``); jax's into
``jax.jit(f).trace(*args)``, ``.lower()``, ``.compile()`` and the first run. Sizes of both programs:
characters and StableHLO ops of the text, characters and fusions of XLA's optimized HLO (a bigger
program would show here). ``--programs`` adds two columns: parsing srcjax's text into an MLIR module
(what XLA's compile starts with), and XLA compiling each library's StableHLO again, with srcjax's client
and options, median of three (equal programs compile alike: a difference there is the program's).
Both libraries are warmed up on an unrelated function first.

srcjax's persistent cache is a fresh, empty directory (as in ``bench_vmap.py``: nothing can hit; or
``SRCJAX_CACHE_DIR`` when set), so
srcjax's library helpers (``frontend/library_cache.py``) are normalized and stored by the first case
that needs each; ``--warm-helpers`` first runs every case once on other functions in a separate
process with the same directory, so that the timed process loads them from the disk as a user's
later processes do. ``--clock cpu`` times the calling thread's CPU (``time.thread_time``: steadier on
a busy machine; XLA compiles on other threads, so its compile column is nearly empty there);
``--clock process`` the whole process's CPU (``time.process_time``: XLA's threads included).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

CACHE = os.environ.get("SRCJAX_CACHE_DIR") or tempfile.mkdtemp(prefix="bench_split_cache_")

import numpy as np  # noqa: E402

import srcjax  # noqa: E402
from srcjax.lower import specialize  # noqa: E402
from srcjax.runtime import xla  # noqa: E402

try:
    import jax
except ImportError:  # pragma: no cover - jax is a test/benchmark-only dependency
    sys.exit("bench_first_split.py needs jax (pip install -e '.[test]'): it is the comparison oracle")

import bench_vmap  # noqa: E402  (same directory: its cases and workloads)

os.environ["SRCJAX_CACHE_DIR"] = CACHE  # (importing bench_vmap pointed it at a fresh directory of its own)
from bench_foundation import as_jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

CLOCK = time.perf_counter
PARTS: dict[str, float] = {"lower": 0.0, "compile": 0.0, "run": 0.0}
COMPILED: list[tuple[str, Any]] = []  # (StableHLO text, loaded executable) of the case being timed


def _timed(name: str, fn: Any) -> Any:
    def run(*args: Any, **kwargs: Any) -> Any:
        t = CLOCK()
        try:
            return fn(*args, **kwargs)
        finally:
            PARTS[name] += CLOCK() - t
    return run


_compile = xla._compile_cached


def _compile_recorded(text: str, *args: Any, **kwargs: Any) -> Any:
    loaded = _compile(text, *args, **kwargs)
    COMPILED.append((text, loaded))
    return loaded


# (private names on purpose: this script measures them; nothing else is changed)
xla._compile_cached = _timed("compile", _compile_recorded)
specialize.Specializer.lower = _timed("lower", specialize.Specializer.lower)  # type: ignore[method-assign]
for _name in ("run", "run_one", "put_many"):  # the first execution: upload, run, results wrapped
    setattr(xla.Executable, _name, _timed("run", getattr(xla.Executable, _name)))


def _optimized(loaded: Any) -> str:
    try:
        return str(loaded.hlo_modules()[0].to_string())
    except Exception:  # noqa: BLE001 - an executable from the disk cache may not carry its HLO
        return ""


def _ops(text: str) -> int:
    """StableHLO operations of a module's text (``stablehlo.`` op names; jax's ``func.call``s excluded)."""
    return text.count("stablehlo.") - text.count("stablehlo.return") - text.count("stablehlo.sharding")


def _parse_ms(text: str) -> float:
    """Milliseconds of parsing ``text`` into an MLIR module (what XLA does first with srcjax's text)."""
    with xla._LOCK:
        xla._mlir_module("")  # (the context, once)
        t = CLOCK()
        xla._mlir_module(text)
        return (CLOCK() - t) * 1e3


def _xla_ms(text: str, rounds: int = 3) -> float:
    """Median milliseconds of XLA compiling ``text`` with srcjax's client and options (the same for both
    libraries' texts: a difference is the program's, not the options')."""
    backend = xla.get_backend()
    got = []
    for _ in range(rounds):
        t = CLOCK()
        backend.client.compile_and_load(text, backend.device_list, xla.xla_client.CompileOptions())
        got.append((CLOCK() - t) * 1e3)
    return sorted(got)[len(got) // 2]


def split(case: bench_vmap.Case, programs: bool) -> str:
    PARTS.update(lower=0.0, compile=0.0, run=0.0)
    COMPILED.clear()
    t = CLOCK()
    f = case.make_sj()
    bench_vmap._read(f(*case.args))
    total = CLOCK() - t
    front = total - PARTS["lower"] - PARTS["compile"] - PARTS["run"]
    text = "".join(s for s, _ in COMPILED)
    opt = "".join(_optimized(e) for _, e in COMPILED)
    jf = case.make_jax()
    t = CLOCK()
    traced = jf.trace(*case.args)
    t_trace = CLOCK() - t
    t = CLOCK()
    lowered = traced.lower()
    t_lower = CLOCK() - t
    t = CLOCK()
    compiled = lowered.compile()
    t_compile = CLOCK() - t
    t = CLOCK()
    bench_vmap._read(compiled(*case.args))
    t_run = CLOCK() - t
    jtext, jopt = lowered.as_text(), compiled.as_text()
    j_total = t_trace + t_lower + t_compile + t_run
    ms = 1e3
    row = (f"| {case.name} | {total * ms:.0f} = {front * ms:.0f} + {PARTS['lower'] * ms:.1f} + "
           f"{PARTS['compile'] * ms:.1f} + {PARTS['run'] * ms:.1f} | {j_total * ms:.0f} = {t_trace * ms:.0f} + "
           f"{t_lower * ms:.1f} + {t_compile * ms:.1f} + {t_run * ms:.1f} | {total / j_total:.2f} | "
           f"{len(COMPILED)}: {len(text):,} ch, {_ops(text)} ops / {len(jtext):,} ch, "
           f"{_ops(jtext)} ops | {len(opt):,} ch, {opt.count('fusion(')} fusions / {len(jopt):,} ch, "
           f"{jopt.count('fusion(')} fusions |")
    if programs:  # both programs compiled again alike, and srcjax's parsed: the program's share, not the options'
        parse = sum(_parse_ms(s) for s, _ in COMPILED)
        sj_xla = sum(_xla_ms(s) for s, _ in COMPILED)
        row += f" {parse:.1f} | {sj_xla:.1f} / {_xla_ms(jtext):.1f} |"
    return row


def main() -> int:
    global CLOCK
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="bench_vmap's small sizes")
    ap.add_argument("--clock", choices=("wall", "cpu", "process"), default="wall",
                    help="wall time, this thread's CPU time, or the process's CPU time (XLA's threads included)")
    ap.add_argument("--programs", action="store_true",
                    help="also: MLIR parse of srcjax's text, and XLA compiling each library's StableHLO again, alike")
    ap.add_argument("--warm-helpers", action="store_true",
                    help="store srcjax's normalized helpers in the cache first (another process), as after a first run")
    ap.add_argument("cases", nargs="*", help="substrings of case names to run (default: all)")
    ns = ap.parse_args()
    if ns.warm_helpers:
        # other functions (copies with an extra line: no derivative or program of this run's can be found
        # in the cache) at the other sizes (no XLA executable of this run's either): the same helpers
        code = ("import importlib.util, inspect, os, sys, tempfile, numpy as np, bench_vmap as b\n"
                "os.environ['SRCJAX_CACHE_DIR'] = sys.argv[1]\n"
                "names = ('mlp_loss', 'layer', 'rosen', 'newton_sqrt', 'dist')\n"
                "extra = '):\\n    unused = 1.5\\n'\n"
                "srcs = [inspect.getsource(getattr(b, n)).replace('):\\n', extra, 1) for n in names]\n"
                "path = os.path.join(tempfile.mkdtemp(), 'copies.py')\n"
                "open(path, 'w').write('import numpy as np\\n\\n' + '\\n'.join(srcs))\n"
                "spec = importlib.util.spec_from_file_location('copies', path)\n"
                "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
                "for n in names: setattr(b, n, getattr(m, n))\n"
                f"for c in b.cases({not ns.quick}, np.random.default_rng(1)): b._read(c.make_sj()(*c.args))\n")
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([sys.executable, "-c", code, CACHE], check=True, cwd=here,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join([here, *sys.path])})
    CLOCK = {"wall": time.perf_counter, "cpu": time.thread_time, "process": time.process_time}[ns.clock]
    print(f"clock: {ns.clock}; srcjax's helpers {'from the disk cache' if ns.warm_helpers else 'normalized now'}; "
          f"load average {os.getloadavg()[0]:.1f}")
    warm = np.linspace(0.0, 1.0, 8)
    for f in (srcjax.compile(bench_vmap._warm), srcjax.grad(bench_vmap._warm), jax.jit(as_jax(bench_vmap._warm)),
              jax.jit(jax.grad(as_jax(bench_vmap._warm)))):
        bench_vmap._read(f(warm))
    print("| case | srcjax ms = front end + lower + XLA compile + run | jax ms = trace + lower + compile + run "
          "| sj/jax | StableHLO srcjax / jax | optimized HLO srcjax / jax |"
          + (" MLIR parse ms | XLA compile again ms srcjax / jax |" if ns.programs else ""))
    print("|---|---|---|---|---|---|" + ("---|---|" if ns.programs else ""))
    for c in bench_vmap.cases(ns.quick, np.random.default_rng(0)):
        if ns.cases and not any(s in c.name for s in ns.cases):
            continue
        print(split(c, ns.programs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
