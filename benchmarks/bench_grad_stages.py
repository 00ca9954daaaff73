"""``bench_grad.py``'s first calls stage by stage (issue #18), in ``bench_first_stages.py``'s stages.

Run (from the repository root, in the venv that has the test extras)::

    .venv/bin/python benchmarks/bench_grad_stages.py                      # mlp_xent, mlp_mse, rosen; thread CPU ms
    .venv/bin/python benchmarks/bench_grad_stages.py mlp_xent --runs 5 --clock process
    .venv/bin/python benchmarks/bench_grad_stages.py --calls              # Python and C calls per stage (thousands)

Each measurement is a new process that warms srcjax up on one fresh function of each kind (``bench_grad.py``'s
``_FIRST_TEMPLATES``: a new module per function, a constant never used before), then makes ``srcjax.grad`` of
another fresh function and calls it, the result read back: the stages are ``bench_first_stages.py``'s
(exclusive; ``grad(f)`` is the rest of ``srcjax.grad(f)`` itself). ``--calls`` counts calls with a profile hook (the
same on a loaded machine as on a quiet one: compare two revisions with it); medians of ``--runs`` processes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = ("mlp_xent", "mlp_mse", "rosen")


def child(kind: str, clock: str) -> None:
    """(a child process) the first call of ``kind``'s gradient, its stages as JSON on stdout."""
    sys.path.insert(0, HERE)
    import bench_first_stages as bfs
    import bench_grad as bg
    import numpy as np
    from bench_foundation import FreshFunctions

    import srcjax

    spent: dict[str, float] = {}
    bfs._instrument(spent)
    fresh = FreshFunctions(bg._FIRST_TEMPLATES, prefix="bench_grad_stages_")
    try:
        work = {k: (a, n) for _, k, _, a, n in bg.workloads(np.random.default_rng(1))}
        for k, (a, n) in work.items():  # (each kind once: the process's one-time costs)
            f, _ = fresh.make(k)
            bg._read(srcjax.grad(f, argnums=n)(*a))
        args, argnums = work[kind]
        f, _ = fresh.make(kind)
        spent.clear()
        if clock == "calls":
            bfs.CLOCK = bfs._calls_clock
            sys.setprofile(bfs._count_calls)
        else:
            bfs.CLOCK = time.process_time if clock == "process" else time.thread_time
        start = bfs.CLOCK()
        g = srcjax.grad(f, argnums=argnums)
        spent["grad(f)"] = bfs.CLOCK() - start - sum(spent.values())
        bg._read(g(*args))
        total = bfs.CLOCK() - start
        sys.setprofile(None)
        spent["other"] = total - sum(spent.values())
        print(json.dumps({"total": total * 1e3, **{k: v * 1e3 for k, v in spent.items()}}))
    finally:
        fresh.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("cases", nargs="*", help=f"of {', '.join(CASES)} (default: all three)")
    ap.add_argument("--runs", type=int, default=3, help="processes per case (default 3)")
    ap.add_argument("--calls", action="store_true", help="count calls (thousands) instead of timing")
    ap.add_argument("--clock", choices=("thread", "process"), default="thread",
                    help="the calling thread's CPU time (default) or the process's (XLA's compile threads included)")
    ap.add_argument("--child", nargs=2, metavar=("CASE", "CLOCK"), help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.child:
        child(*ns.child)
        return 0
    clock = "calls" if ns.calls else ns.clock
    what = "thousands of calls" if ns.calls else f"{ns.clock} CPU ms"
    print(f"{what}, medians of {ns.runs} processes each; load average {os.getloadavg()[0]:.1f}")
    stages = ("normalize user", "normalize generated", "writers", "simplify", "readable", "templates", "load generated",
              "level-2 cache", "lower", "XLA compile", "first run", "grad(f)", "other")
    print("| " + " | ".join(("case", "total", *stages)) + " |")
    print("|---|" + "---:|" * (1 + len(stages)))
    for case in ns.cases or CASES:
        rows = []
        for _ in range(ns.runs):
            out = subprocess.run([sys.executable, __file__, "--child", case, clock], capture_output=True, text=True,
                                 cwd=HERE)
            if out.returncode:
                print(out.stderr[-2000:], file=sys.stderr)
                continue
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        if rows:
            cells = [statistics.median(r.get(s, 0.0) for r in rows) for s in ("total", *stages)]
            print(f"| {case} | " + " | ".join(f"{v:.1f}" for v in cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
