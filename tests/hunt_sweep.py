"""The command line both random-program hunts share (``python -m tests.test_hunt_random`` and
``python -m tests.test_hunt_domains``): run seeds in one process, print each case and what went wrong."""

from __future__ import annotations

import argparse
import collections
import pathlib
import tempfile
from collections.abc import Callable
from typing import Any


def main(run_case: Callable[..., Any], describe: Callable[[int], str], detail_chars: int) -> None:
    """``--start S --count N`` or ``--seeds a,b,c`` (``--no-numpy``: skip the NumPy run of the source)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--seeds", type=str, default="")
    ap.add_argument("--no-numpy", action="store_true")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else range(args.start, args.start + args.count)
    counts: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory() as d:
        for s in seeds:
            import srcjax

            srcjax.reuse.forget()
            out = run_case(s, pathlib.Path(d), numpy_check=not args.no_numpy)
            counts[out.status] += 1
            print(f"[{out.status}] {describe(s)}", flush=True)
            if out.status != "ok":
                print("    " + out.detail.replace("\n", "\n    ")[:detail_chars], flush=True)
    print(dict(counts))
