"""``srcjax.source`` prints the program that runs, whatever the level-2 cache holds (tests/source_warm.py).

Each program is called and printed in a fresh process with an empty cache directory, then in a second fresh
process with the cache the first one filled: both must print the same text, and it must be the text the StableHLO
that ran was lowered from (the level-2 entry the job made, or was served). A Jacobian's own print is its generic
form (docs/ARCHITECTURE.md), which its calls on arrays do not run: for those, the array form's print is the text.

(session 46) ``srcjax.source(srcjax.vmap(srcjax.jacfwd(g)))`` after a call printed the vmap of the array form in
the first process, and the vmap of the generic form (``by_leaves``) in the second: that call was served the first
process's program before the source was written, and ``source`` then wrote it for no example (the generic form).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.source_warm import PROGRAMS

ROOT = Path(__file__).parent.parent
JACOBIANS = ("jacfwd", "jacrev", "hessian", "jacfwd_tree")


def _run(jobs: list[dict[str, Any]], tmp: Path, tag: str) -> dict[str, dict[str, Any]]:
    """Each job's outcome, by its cache directory."""
    path = tmp / f"{tag}.json"
    path.write_text(json.dumps(jobs))
    env = dict(os.environ)
    env.pop("SRCJAX_CACHE", None)
    out = subprocess.run([sys.executable, "-m", "tests.source_warm", str(path)], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    return {job["cache"]: r for job, r in zip(jobs, map(json.loads, out.stdout.splitlines()), strict=True)}


def _check(cold: dict[str, Any], warm: dict[str, Any], first: str) -> list[str]:
    name = cold["name"]
    bad = []
    if first == "call" and cold["source"] != warm["source"]:
        bad.append(f"{name}: the warm process printed another program:\n{warm['source']}\n--- cold:\n{cold['source']}")
    for r, which in ((cold, "cold"), (warm, "warm")):
        ran = r["arrays"] if name in JACOBIANS and name != "jacfwd_tree" else r["source"]
        if name != "jacfwd_tree" and r["ran"] != [ran]:
            bad.append(f"{name} ({which}): printed\n{ran}\n--- but the StableHLO that ran came from\n"
                       + "\n---\n".join(r["ran"]))
    if first == "call" and (warm["hits"] == 0 or warm["stores"] != 0):
        bad.append(f"{name}: the warm process was not served from the cache ({warm['hits']} hits, "
                   f"{warm['stores']} stores)")
    if first == "print" and cold["before_call"] != cold["source"]:
        bad.append(f"{name}: printed before its call:\n{cold['before_call']}\n--- after:\n{cold['source']}")
    if first == "print" and name != "vmap_hessian_h":  # (a hessian's vmap batches its generic form whatever the call)
        # printed before its call in the cold process: the vmap of the Jacobian's generic form, which that call
        # ran; the warm process, which calls it first, runs (and prints) the array form's, not served the other
        if "by_leaves" not in cold["source"] or "by_leaves" in warm["source"]:
            bad.append(f"{name}: printed before its call, then after a call in a process with that cache:\n"
                       f"{cold['source']}\n---\n{warm['source']}")
    return bad


def test_source_prints_the_program_that_ran_with_a_cold_or_a_warm_cache(tmp_path):
    """Every program called then printed (and three vmaps of Jacobians printed before their call in the cold
    process, after it in the warm one)."""
    jobs = [{"name": n, "cache": str(tmp_path / n), "first": "print" if n.endswith("_h") else "call"}
            for n in PROGRAMS]
    cold = _run(jobs, tmp_path, "cold")
    warm = _run([dict(j, first="call") for j in jobs], tmp_path, "warm")
    bad = [b for j in jobs for b in _check(cold[j["cache"]], warm[j["cache"]], j["first"])]
    assert not bad, "\n\n".join(bad)
