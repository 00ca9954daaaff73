"""Where a first call's time goes, stage by stage, in a new process and in a warm one (issues #15, #18).

Run (from the repository root, in the venv that has the test extras)::

    .venv/bin/python benchmarks/bench_first_stages.py                 # the five cases of bench_vmap.py
    .venv/bin/python benchmarks/bench_first_stages.py hessian --runs 5
    .venv/bin/python benchmarks/bench_first_stages.py --calls     # Python calls instead of times

Each measurement is one child process timing the first call of a case of ``bench_vmap.py`` (make the
transformed function, call it, read the result back) in the calling thread's CPU time
(``time.thread_time``: steady on a busy machine; XLA compiles partly on other threads). The persistent cache
holds srcjax's own entries (its library helpers, normalized: one process ran every case on other functions
first) and never the case's program (``*.xla``, ``*.prog`` are deleted before each child), as in
``bench_vmap.py --cold``. Two kinds of child, alternating:

* ``new``: a new process, warmed up on an unrelated function (as ``bench_vmap.py``'s children);
* ``warm``: the same, after the same case ran in that process on copies of its functions under other names
  (``rosen_b``): what an already-working process pays for a new function. ``new - warm`` is what a new
  process pays again (helpers read from the disk, templates instantiated, tables built on first use).

The stages are exclusive (a stage's time excludes the stages timed inside it): normalizing the user's
functions, normalizing source srcjax wrote (a derivative or batched program read back: the re-reading the
writers' hand-off would remove), library helpers read from the disk cache, the readable pass, the simplifier,
derivative templates instantiated, lowering to StableHLO, XLA's compile (with its persistent-cache lookup),
the first execution (upload, run, results wrapped, and the wait for the results read back: XLA runs the
program on its own threads, so only ``--clock process`` sees its CPU, 4-8 ms in bench_vmap's cases, which
were ``other`` before; jax's ``first run`` holds it too), loading generated modules (parse, register, compile to
bytecode, execute), the level-2 cache (``warm_cache``: the program's entry looked up and stored), the writers
(``vmap.batched_source``, ``jacobian_source``, ``grad_source``/``vjp_source``/``jvp_source``: the batched and
derivative source written, less the stages inside them), the front end's scratch dropped when the
collector's pause ends (``gc_pause.on_resume``: the shared ``ast`` trees and walks freed); ``other`` is the rest
(binding and keying arguments, eval_shape's and the wrappers' own work, dispatch). Medians of ``--runs`` children each.

``--clock process`` times the whole process's CPU (``time.process_time``) instead of the calling thread's:
XLA compiles on its own threads, so only this clock shows the compile (thread CPU saw 3 ms of jacrev's
~80 ms compile). ``--jax`` adds a third kind of child, ``jax``: jax's first call of the same case in a new
process warmed up alike, in jax's stages (``jit(f).trace(*args)`` in the first column, ``.lower()``,
``.compile()``, the call with its result read back).

``--calls`` counts the Python function calls of the first call instead (``cProfile``'s total, the same on a
loaded machine as on a quiet one: compare two revisions with it when timings are noise; a session's first-call
regression of 10-30% showed as 75k -> 133k calls for jacrev). ``--calls --stages`` counts them per stage (a
profile hook counting Python and C calls is the stages' clock: a little above ``cProfile``'s total, the same
from run to run).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

STAGES = ("normalize user", "normalize generated", "helpers from disk", "readable", "simplify", "templates",
          "lower", "XLA compile", "first run", "load generated", "level-2 cache", "writers", "scratch dropped",
          "other")
CLOCK = time.process_time if os.environ.get("BENCH_CLOCK") == "process" else time.thread_time
_CALLS = [0]  # (--calls --stages: Python calls made so far, counted by a profile hook)


def _count_calls(frame: Any, event: str, arg: Any) -> None:
    if event == "call" or event == "c_call":
        _CALLS[0] += 1


def _calls_clock() -> float:
    """Thousands of calls as "seconds": a stage's count comes out in the tables' units (thousands)."""
    return _CALLS[0] / 1e6
NAMES = ("mlp_loss", "layer", "rosen", "newton_sqrt", "dist")


def _instrument(spent: dict[str, float]) -> None:
    """Wrap each stage's function (private names on purpose: this script measures them) with an exclusive timer."""
    from srcjax.frontend import library_cache, program
    from srcjax.frontend.read import is_generated
    from srcjax.lower import specialize
    from srcjax.runtime import xla
    from srcjax.transforms import forward_ad, readable, reverse_ad, simplify, templates

    stack: list[list[float]] = []  # per open stage: [its start, the time of the stages inside it]

    def timed(stage: Any, fn: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            stack.append([CLOCK(), 0.0])
            try:
                return fn(*args, **kwargs)
            finally:
                start, inner = stack.pop()
                total = CLOCK() - start
                name = stage(*args) if callable(stage) else stage
                spent[name] = spent.get(name, 0.0) + total - inner
                if stack:
                    stack[-1][1] += total
        return run

    program.normalize = timed(lambda fn, *a: "normalize generated" if is_generated(fn) else "normalize user",
                              program.normalize)
    library_cache.load = timed("helpers from disk", library_cache.load)
    readable._readable = timed("readable", readable._readable)
    simplify._simplified = timed("simplify", simplify._simplified)
    instantiate = timed("templates", templates.instantiate)
    templates.instantiate = reverse_ad.instantiate = forward_ad.instantiate = instantiate  # type: ignore[attr-defined]
    specialize.Specializer.lower = timed("lower", specialize.Specializer.lower)  # type: ignore[method-assign]
    xla._compile_cached = timed("XLA compile", xla._compile_cached)
    for name in ("run", "run_one", "put_many"):  # the first execution: upload, run, results wrapped
        setattr(xla.Executable, name, timed("first run", getattr(xla.Executable, name)))
    import importlib

    from srcjax import api, generated, warm_cache

    # (by module path: srcjax's own names shadow some of its modules, srcjax.vmap is the function)
    autodiff, batch_shared, jacobian, partials, vmap = (importlib.import_module(f"srcjax.{m}") for m in (
        "autodiff", "batch_shared", "jacobian", "partials", "vmap"))

    for module in (autodiff, batch_shared, generated, jacobian, partials, vmap):  # (each imported the names)
        for name in ("load_module", "exec_generated"):
            if hasattr(module, name):
                setattr(module, name, timed("load generated", getattr(generated, name)))
    api.Compiled._warm_store = timed("level-2 cache", api.Compiled._warm_store)  # type: ignore[method-assign]
    from srcjax.transforms import ad

    for module, name in ((vmap, "batched_source"), (autodiff, "jacobian_source"), (autodiff, "_forward_grad_source"),
                         (ad, "grad_source"), (ad, "jvp_source"), (ad, "vjp_source")):
        setattr(module, name, timed("writers", getattr(module, name)))
    warm_cache.lookup = timed("level-2 cache", warm_cache.lookup)
    from srcjax import gc_pause

    gc_pause._ON_RESUME[:] = [timed("scratch dropped", drop) for drop in gc_pause._ON_RESUME]


def child(case: str, mode: str) -> None:
    """(a child process) the first call of ``case``, its stages as JSON on stdout."""
    import importlib.util
    import inspect

    import bench_vmap as b  # (same directory; it points SRCJAX_CACHE_DIR at BENCH_VMAP_COLD_CACHE)
    import numpy as np

    if mode == "jax":
        jax_child(b, case)
        return
    spent: dict[str, float] = {}
    _instrument(spent)
    b._warm_up("srcjax")
    if mode == "warm":  # the same case first, on copies of its functions under other names
        path = os.path.join(tempfile.mkdtemp(), "renamed_copies.py")
        with open(path, "w") as f:
            f.write("import numpy as np\n\n" + "\n".join(
                inspect.getsource(getattr(b, n)).replace(f"def {n}(", f"def {n}_b(", 1) for n in NAMES))
        spec = importlib.util.spec_from_file_location("renamed_copies", path)
        assert spec is not None and spec.loader is not None
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        own = {n: getattr(b, n) for n in NAMES}
        for n in NAMES:
            setattr(b, n, getattr(m, n + "_b"))
        c = next(c for c in b.cases(True, np.random.default_rng(1)) if case in c.name)
        b._read(c.make_sj()(*c.args))
        for n in NAMES:
            setattr(b, n, own[n])
    c = next(c for c in b.cases(False, np.random.default_rng(0)) if case in c.name)
    spent.clear()
    if os.environ.get("BENCH_FIRST_CALLS") == "stages":  # the calls of each stage: the call counter as the clock
        global CLOCK
        CLOCK = _calls_clock
        sys.setprofile(_count_calls)
    elif os.environ.get("BENCH_FIRST_CALLS"):
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        b._read(c.make_sj()(*c.args))
        prof.disable()
        if os.environ.get("BENCH_DUMP"):
            prof.dump_stats(os.environ["BENCH_DUMP"])
        print(json.dumps({"total": pstats.Stats(prof).total_calls / 1e3}))  # type: ignore[attr-defined]
        return
    start = CLOCK()
    out = c.make_sj()(*c.args)
    read = CLOCK()
    b._read(out)  # (waits for the run on XLA's threads: the first execution's, as jax's child counts it)
    spent["first run"] = spent.get("first run", 0.0) + CLOCK() - read
    total = CLOCK() - start
    spent["other"] = total - sum(spent.values())
    print(json.dumps({"total": total * 1e3, **{k: v * 1e3 for k, v in spent.items()}}))


JAX_STAGES = ("trace", "lower", "XLA compile", "first run")


def jax_child(b: Any, case: str) -> None:
    """(a child process) jax's first call of ``case`` in its stages (``jit(f).trace(*args)``, ``.lower()``,
    ``.compile()``, the call with its result read back), warmed up as srcjax's children are."""
    import numpy as np

    b._warm_up("jax")
    c = next(c for c in b.cases(False, np.random.default_rng(0)) if case in c.name)
    spent: dict[str, float] = {}
    start = t = CLOCK()
    f = c.make_jax()
    traced = f.trace(*c.args)
    spent["trace"], t = CLOCK() - t, CLOCK()
    lowered = traced.lower()
    spent["lower"], t = CLOCK() - t, CLOCK()
    compiled = lowered.compile()
    spent["XLA compile"], t = CLOCK() - t, CLOCK()
    b._read(compiled(*c.args))
    spent["first run"] = CLOCK() - t
    print(json.dumps({"total": (CLOCK() - start) * 1e3, **{k: v * 1e3 for k, v in spent.items()}}))


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("cases", nargs="*", help="substrings of bench_vmap's case names (default: all five)")
    ap.add_argument("--runs", type=int, default=3, help="children of each kind per case (default 3)")
    ap.add_argument("--calls", action="store_true", help="count Python calls (thousands) instead of timing")
    ap.add_argument("--stages", action="store_true",
                    help="with --calls: the calls of each stage (a profile hook counts them; slower)")
    ap.add_argument("--clock", choices=("thread", "process"), default="thread",
                    help="the calling thread's CPU time (default) or the process's (XLA's compile threads included)")
    ap.add_argument("--jax", action="store_true",
                    help="also jax's first call in new processes: trace, lower, XLA compile, first run")
    ap.add_argument("--child", nargs=2, metavar=("CASE", "MODE"), help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.child:
        child(*ns.child)
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    shared = tempfile.mkdtemp(prefix="bench_first_stages_")
    env = {**os.environ, "BENCH_VMAP_COLD_CACHE": shared}
    if ns.calls:
        env["BENCH_FIRST_CALLS"] = "stages" if ns.stages else "1"
    env["BENCH_CLOCK"] = ns.clock
    cases = ns.cases or ["per-example", "jacrev", "hessian", "newton", "nested"]
    for case in cases:  # srcjax's own entries (the helpers), from runs on the renamed copies
        subprocess.run([sys.executable, __file__, "--child", case, "warm"], capture_output=True, env=env, cwd=here)
    stages = () if ns.calls and not ns.stages else STAGES
    what = "thousands of Python calls" if ns.calls else f"{ns.clock} CPU ms"
    print(f"{what}, medians of {ns.runs} processes each; load average {os.getloadavg()[0]:.1f}")
    heads = [{"normalize user": "normalize user (jax: trace)"}.get(s, s) for s in stages] if ns.jax else stages
    print("| " + " | ".join(("case", "process", "total", *heads)) + " |")
    print("|---|---|" + "---:|" * (1 + len(stages)))
    for case in cases:
        got: dict[str, list[dict[str, float]]] = {"new": [], "warm": []}
        if ns.jax and not ns.calls:
            got["jax"] = []
        for r in range(ns.runs):
            for mode in (("new", "warm", "jax") if r % 2 == 0 else ("jax", "warm", "new")):
                if mode not in got:
                    continue
                for p in glob.glob(os.path.join(shared, "**", "*.xla"), recursive=True) + \
                        glob.glob(os.path.join(shared, "**", "*.prog"), recursive=True):
                    os.remove(p)
                out = subprocess.run([sys.executable, __file__, "--child", case, mode], capture_output=True,
                                     text=True, env=env, cwd=here)
                if out.returncode:
                    print(out.stderr[-2000:], file=sys.stderr)
                    continue
                got[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
        for mode, rows in got.items():
            if rows:
                names = [{"normalize user": "trace"}.get(s, s) for s in stages] if mode == "jax" else stages
                cells = [statistics.median(r.get(s, 0.0) for r in rows) for s in ("total", *names)]
                print(f"| {case} | {mode} | " + " | ".join(f"{v:.1f}" for v in cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
