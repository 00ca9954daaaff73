"""The front end's passes over generated text, replayed on their captured inputs (issues #15, #18).

Run (from the repository root; ``PYTHONPATH=<another checkout>`` measures that one: A/B in one session)::

    .venv/bin/python benchmarks/bench_front_replay.py               # process CPU ms per stage, min of 15
    .venv/bin/python benchmarks/bench_front_replay.py --calls       # Python calls per stage (any load)
    .venv/bin/python benchmarks/bench_front_replay.py --profile normalize hessian   # cProfile, by tottime

One process runs the first call of each case of ``bench_vmap.py`` (its persistent cache in ``--cache``, kept
between runs so that srcjax's own helpers come from the disk as in ``bench_first_stages.py``'s children: run
twice after srcjax changes), capturing the inputs of three stages: the simplifier (``simplify._simplified``, with
``dead_nested``), the readable pass (``readable._readable``) and the normalization of functions srcjax wrote
(``program.normalize`` of a generated function). Each stage is then run again on those inputs, the collector off
and the front end's scratch dropped before each run (``gc_pause``'s hooks: the shared ``ast`` trees and walks, as
a first call finds them), its own caches bypassed: the minimum of ``--reps`` runs of process CPU time is steady on
a loaded machine where a first call's stages are not (a first call happens once per process). What a replay does
not see: first-use costs of a new process, and the parse the simplifier's output shares with the readable pass.
"""

from __future__ import annotations

import argparse
import gc
import glob
import os
import sys
import time
from typing import Any

CASES = ("per-example", "jacrev", "hessian", "newton", "nested")
STAGES = ("normalize", "simplify", "readable")


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=15, help="runs per stage and case (the minimum is shown)")
    ap.add_argument("--calls", action="store_true", help="Python and C calls per stage instead of times")
    ap.add_argument("--profile", nargs=2, metavar=("STAGE", "CASE"), help="cProfile one stage of one case")
    ap.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache", "srcjax-front-replay"),
                    help="the persistent cache directory (kept between runs: srcjax's own entries)")
    ns = ap.parse_args()
    os.makedirs(ns.cache, exist_ok=True)
    for p in glob.glob(os.path.join(ns.cache, "**", "*.xla"), recursive=True) + \
            glob.glob(os.path.join(ns.cache, "**", "*.prog"), recursive=True):
        os.remove(p)  # (never the cases' programs: as bench_vmap.py --cold)
    os.environ["BENCH_VMAP_COLD_CACHE"] = ns.cache
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_vmap as b
    import numpy as np

    from srcjax import gc_pause, warm_cache
    from srcjax.frontend import program, read
    from srcjax.transforms import dead_nested, readable, simplify

    got: dict[Any, dict[str, list[Any]]] = {c: {s: [] for s in STAGES} for c in (None, *CASES)}
    current: list[Any] = [None]
    readable0, simplified0, normalize0 = readable._readable, simplify._simplified, program.normalize

    def capture_readable(*a: Any) -> Any:
        got[current[0]]["readable"].append(a)
        return readable0(*a)

    def capture_simplify(*a: Any) -> Any:
        got[current[0]]["simplify"].append(a)
        return simplified0(*a)

    def capture_normalize(fn: Any, *a: Any, **k: Any) -> Any:
        if read.is_generated(fn):
            got[current[0]]["normalize"].append((fn, a, k))
        return normalize0(fn, *a, **k)

    readable._readable, simplify._simplified = capture_readable, capture_simplify  # type: ignore[assignment]
    program.normalize = capture_normalize  # type: ignore[assignment]
    b._warm_up("srcjax")
    for case in CASES:
        current[0] = case
        c = next(c for c in b.cases(False, np.random.default_rng(0)) if case in c.name)
        b._read(c.make_sj()(*c.args))
    readable._readable, simplify._simplified = readable0, simplified0  # type: ignore[assignment]
    program.normalize = normalize0  # type: ignore[assignment]
    cached = read._CACHE.get

    def replay(stage: str, case: str) -> None:
        if stage == "readable":
            for a in got[case]["readable"]:
                readable0.__wrapped__(*a)  # type: ignore[attr-defined]
        elif stage == "simplify":
            dead_nested._dropped.cache_clear()
            for a in got[case]["simplify"]:
                simplified0.__wrapped__(*a)  # type: ignore[attr-defined]
        else:
            read._CACHE.get = lambda *a, **k: None  # type: ignore[method-assign]
            read._GENERATED_TREES.clear()
            try:
                for fn, a, k in got[case]["normalize"]:
                    with warm_cache.recording(warm_cache.Reads()), read.unchecked_nodes():
                        normalize0(fn, *a, **k)
            finally:
                read._CACHE.get = cached  # type: ignore[method-assign]

    def drop() -> None:
        for d in gc_pause._ON_RESUME:
            d()

    gc.disable()
    if ns.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        for _ in range(ns.reps):
            drop()
            prof.enable()
            replay(*ns.profile)
            prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(40)
        return 0
    calls = [0]

    def count(frame: Any, event: str, arg: Any) -> None:
        if event == "call" or event == "c_call":
            calls[0] += 1

    unit = "thousands of calls" if ns.calls else f"process CPU ms, min of {ns.reps}"
    print(f"{unit}; load average {os.getloadavg()[0]:.1f}; (inputs per case)")
    print("| stage | " + " | ".join(CASES) + " |\n|---|" + "---:|" * len(CASES))
    for stage in STAGES:
        cells = []
        for case in CASES:
            if ns.calls:
                drop()
                calls[0] = 0
                sys.setprofile(count)
                replay(stage, case)
                sys.setprofile(None)
                value = calls[0] / 1e3
            else:
                value = 1e9
                for _ in range(ns.reps):
                    drop()
                    t = time.process_time()
                    replay(stage, case)
                    value = min(value, (time.process_time() - t) * 1e3)
            cells.append(f"{value:.2f} ({len(got[case][stage])})")
        print(f"| {stage} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
