"""Print ``srcjax.source`` of programs after calling them, with the level-2 cache in a given directory
(tests/test_source_warm.py runs it twice in fresh processes: with an empty cache, then with the cache the first
process filled, and asserts that both print the same program, and that it is the one whose StableHLO ran).

A job (JSON): ``{"name": NAME, "cache": DIR, "first": "call"|"print"}``: ``PROGRAMS[NAME]`` is built, called on
its arguments and printed (``"print"``: printed before the call too, which then runs the source printed).
``python -m tests.source_warm JOBS.json`` prints one JSON line per job: ``{"name", "source", "ran", "arrays",
"hits", "stores"}``: ``ran`` the generated source of every level-2 entry the job was served or made (the text each
StableHLO that ran was lowered from: ``warm_cache.entry``'s ``source``), ``arrays`` a Jacobian's array form's
print (what its calls on arrays run), ``before_call`` the print before the call (or None), ``hits`` and ``stores`` the job's lookups the cache served and its entries
stored (``warm_cache.STATS``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

import srcjax


def g(x):
    return np.tanh(x) * np.sin(x).sum()


def h(x):  # (another g, for the programs printed before their call: reuse.py would give g's the same objects)
    return np.cos(x) * np.tanh(x).sum()


def h_loss(x):
    return np.sum(np.cos(x) * np.tanh(x))


def loss(x):
    return np.sum(np.tanh(x) ** 2) + np.sum(x * x[::-1])


def pair(x, y):
    return np.sin(x) * y + np.cos(y).sum()


def tree_loss(p, x):
    return np.sum(np.tanh(x @ p["w"] + p["b"]) ** 2)


def jvp_of_g(x, t):
    return srcjax.jvp(g, (x,), (t,))


def vjp_of_loss(x):
    out, back = srcjax.vjp(loss, x)
    return back(np.ones_like(out))


_X = np.linspace(0.1, 1.0, 3)
_B = np.linspace(0.1, 1.2, 12).reshape(4, 3)
_BB = np.linspace(0.1, 2.4, 24).reshape(2, 4, 3)
_P = {"w": np.linspace(-1.0, 1.0, 6).reshape(3, 2), "b": np.array([0.1, -0.2])}

# name -> (the transformed function, its arguments)
PROGRAMS: dict[str, Callable[[], tuple[Any, tuple[Any, ...]]]] = {
    "grad": lambda: (srcjax.grad(loss), (_X,)),
    "value_and_grad_tree": lambda: (srcjax.value_and_grad(tree_loss), (_P, _B)),
    "jit_jvp": lambda: (srcjax.jit(jvp_of_g), (_X, _X)),
    "jit_vjp": lambda: (srcjax.jit(vjp_of_loss), (_X,)),
    "vmap": lambda: (srcjax.vmap(pair, in_axes=(0, None)), (_B, _X)),
    "vmap_vmap": lambda: (srcjax.vmap(srcjax.vmap(g)), (_BB,)),
    "jacfwd": lambda: (srcjax.jacfwd(g), (_X,)),
    "jacrev": lambda: (srcjax.jacrev(g), (_X,)),
    "hessian": lambda: (srcjax.hessian(loss), (_X,)),
    "vmap_jacfwd": lambda: (srcjax.vmap(srcjax.jacfwd(g)), (_B,)),
    "vmap_jacrev": lambda: (srcjax.vmap(srcjax.jacrev(g)), (_B,)),
    "vmap_hessian": lambda: (srcjax.vmap(srcjax.hessian(loss)), (_B,)),
    "vmap_grad_tree": lambda: (srcjax.vmap(srcjax.grad(tree_loss), in_axes=(None, 0)), (_P, _BB)),
    "jacfwd_tree": lambda: (srcjax.jacfwd(tree_loss), (_P, _B)),
    # (the jobs that print these before their call)
    "vmap_jacfwd_h": lambda: (srcjax.vmap(srcjax.jacfwd(h)), (_B,)),
    "vmap_jacrev_h": lambda: (srcjax.vmap(srcjax.jacrev(h)), (_B,)),
    "vmap_hessian_h": lambda: (srcjax.vmap(srcjax.hessian(h_loss)), (_B,)),
}


def _watching() -> list[str | None]:
    """The generated source of every level-2 entry served or made from now on (``warm_cache.lookup``'s hits,
    ``warm_cache.entry``'s programs: the text each StableHLO that ran was lowered from)."""
    from srcjax import warm_cache

    seen: list[str | None] = []
    lookup, entry = warm_cache.lookup, warm_cache.entry

    def served(key: str) -> Any:
        found = lookup(key)
        if found is not None and "source" in found:
            seen.append(found["source"])
        return found

    def made(*args: Any) -> Any:
        seen.append(args[-1])
        return entry(*args)

    warm_cache.lookup, warm_cache.entry = served, made  # type: ignore[assignment]
    return seen


def run_job(job: dict[str, Any], seen: list[str | None]) -> dict[str, Any]:
    from srcjax import warm_cache

    os.environ["SRCJAX_CACHE_DIR"] = job["cache"]
    before = dict(warm_cache.STATS)
    del seen[:]
    fn, args = PROGRAMS[job["name"]]()
    before_call = srcjax.source(fn) if job.get("first") == "print" else None
    fn(*args)
    printed = srcjax.source(fn)
    arrays = getattr(fn, "_arrays", None)  # (a Jacobian: the array form its calls of arrays run)
    from srcjax.runtime import disk_cache

    disk_cache.flush()
    return {"name": job["name"], "source": printed, "before_call": before_call, "ran": sorted(set(map(str, seen))),
            "arrays": srcjax.source(arrays) if arrays is not None else None,
            "hits": warm_cache.STATS["hits"] - before["hits"], "stores": warm_cache.STATS["stores"] - before["stores"]}


if __name__ == "__main__":
    watched = _watching()
    with open(sys.argv[1]) as f:
        for job in json.load(f):
            print(json.dumps(run_job(job, watched)), flush=True)
