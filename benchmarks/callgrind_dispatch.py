"""Instructions per call of the tiny function's C++ dispatch, in parts, counted by callgrind.

Run::

    .venv/bin/python benchmarks/callgrind_dispatch.py [--calls N] [--jax]

Timings of a ~5 us call swing by more than srcjax's whole gap to ``jax.jit`` on a loaded machine;
instruction counts do not. This runs itself under ``valgrind --tool=callgrind`` (needed on the PATH;
3-5 minutes, most of it imports), collecting only inside ``functools.reduce``, which calls one variant
``--calls`` times and is dumped on its exit, and prints the instructions per call of each variant:
the same executable behind ``PjitFunction`` records taking and giving jaxlib's own arrays (``jax.jit``'s
floor), a srcjax.Array argument, a srcjax.Array result, srcjax's dispatcher called directly, and the full
call ``f(x)``; with ``--jax``, ``jax.jit(f)(x)`` too (jax's import under valgrind adds minutes).
``profile_dispatch.py`` times the same parts. Last counted 2026-12-06 (``--jax``, docs/benchmarks.md): floor
37516, srcjax.Array argument +921, srcjax.Array result +2186, both +4167, ``f(x)`` 41623 vs ``jax.jit`` 37806
(1.101x): what is left is the srcjax.Array itself (a C type would remove it).
"""

from __future__ import annotations

import argparse
import functools
import glob
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any


def tiny(x):
    return x * 2.0 + 1.0


def variants(with_jax: bool) -> dict[str, Callable[[], Any]]:
    import ml_dtypes  # noqa: F401  (srcjax's C++ dispatcher starts once it is imported: cpp_budget.BUDGET)
    import numpy as np

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from profile_dispatch import cpp_parts

    import srcjax

    f = srcjax.jit(tiny)
    x = np.array(1.5, np.float32)
    xd = f(x)
    for _ in range(3):
        f(xd)
    out = {name.replace("C++ parts: ", ""): fn for name, fn in cpp_parts(f, f._cache[f._fast_key((x,))], xd).items()}
    out["full call f(x), device in"] = lambda: f(xd)
    if with_jax:
        import jax
        import jax.numpy as jnp

        jf = jax.jit(tiny)
        xj = jnp.asarray(x)
        jf(xj)
        out["jax.jit(f)(x), device in"] = lambda: jf(xj)
    return out


def child(calls: int, with_jax: bool, order: str) -> None:
    fns = variants(with_jax)
    for fn in fns.values():
        fn(), fn()
    with open(order, "w") as f:
        f.write("\n".join(fns))
    for fn in fns.values():
        functools.reduce(lambda acc, _: fn(), range(calls), None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--jax", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        child(a.calls, a.jax, a.child)
        return 0
    with tempfile.TemporaryDirectory() as d:
        order = os.path.join(d, "order.txt")
        cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=functools_reduce",
               "--dump-after=functools_reduce", f"--callgrind-out-file={d}/cg.out", sys.executable,
               os.path.abspath(__file__), "--calls", str(a.calls), "--child", order] + (["--jax"] if a.jax else [])
        subprocess.run(cmd, check=True, capture_output=True, env=dict(os.environ, PYTHONHASHSEED="0"))
        names = open(order).read().splitlines()
        dumps = sorted(glob.glob(f"{d}/cg.out.*"), key=lambda p: int(p.rsplit(".", 1)[1]))
        dumps = dumps[len(dumps) - len(names):]  # (the variants' loops are the last calls of functools.reduce)
        print(f"instructions per call (callgrind, {a.calls} calls each, x * 2.0 + 1.0 on f32[]):")
        for name, path in zip(names, dumps):
            total = next(int(line.split()[1]) for line in open(path) if line.startswith(("totals:", "summary:")))
            print(f"  {name:<58} {total / a.calls:10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
