"""Instructions (callgrind) or Python calls (cProfile) of first gradients' front ends, bench_grad.py's three cases
(and, with ``--cases jacrev,hessian,nested,newton``, four of bench_vmap.py's first calls).

Each case: after one warm-up gradient of its own, ``N`` fresh functions (a new module each, a unique constant) go
through ``srcjax.grad(f, argnums).lower(*args)`` (``jacrev``: ``srcjax.jacrev(f)``'s array form, ``hessian``:
``srcjax.hessian``'s, ``nested``: ``vmap(vmap(f, in_axes=(None, 0)), in_axes=(0, None))``, ``newton``: ``vmap`` of
a Newton ``while`` on data): the front end (read,
normalize, write the derivative, read it back) and the lowering to StableHLO, no XLA compile. ``SRCJAX_CACHE=0``:
no disk cache, so the counts do not depend on what earlier runs stored.
The collector runs as it would (its work is counted).

Run (from the repository root)::

    .venv/bin/python benchmarks/callgrind_first_grad.py              # instructions, 3 front ends a case
    .venv/bin/python benchmarks/callgrind_first_grad.py --calls      # cProfile: calls, and the top functions
    .venv/bin/python benchmarks/callgrind_first_grad.py --keep DIR   # keep callgrind's files (callgrind_annotate)
    .venv/bin/python benchmarks/callgrind_first_grad.py --cases jacrev,hessian,nested   # bench_vmap.py's
"""

from __future__ import annotations

import argparse
import functools
import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
from first_grad_programs import FIRST_TEMPLATES  # same directory as this script

_TEMPLATES = {
    **FIRST_TEMPLATES,
    # bench_vmap.py's cases (VMAP_CASES: not run by default)
    "jacrev": """
        def f(x, w):
            return np.tanh(w @ x) * x * {c}
    """,
    "hessian": """
        def f(x):
            return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2) * {c}
    """,
    "nested": """
        def f(x, y):
            return np.sqrt(np.sum((x - y) ** 2)) * {c}
    """,
    "newton": """
        def f(a):
            x = a
            while np.abs(x * x - a) > 1e-12 * {c} * a:
                x = 0.5 * (x + a / x)
            return x
    """,
}
VMAP_CASES = ("jacrev", "hessian", "nested", "newton")
CASES = tuple(k for k in _TEMPLATES if k not in VMAP_CASES)


def _transform(kind: str, f: Callable[..., Any], argnums: Any) -> Any:
    """The transformed function a case lowers: a gradient (bench_grad.py's), or bench_vmap.py's transform (a
    Jacobian's array form: what its call runs; its generic form is written when first read)."""
    import srcjax

    if kind in ("jacrev", "hessian"):
        jac = srcjax.jacrev(f) if kind == "jacrev" else srcjax.hessian(f)
        return getattr(jac, "_arrays", None) or jac
    if kind == "nested":
        return srcjax.vmap(srcjax.vmap(f, in_axes=(None, 0)), in_axes=(0, None))
    if kind == "newton":
        return srcjax.vmap(f)
    return srcjax.grad(f, argnums=argnums)


def _args(kind: str) -> tuple[tuple[np.ndarray, ...], Any]:
    rng = np.random.default_rng(1)
    if kind == "rosen":
        return (rng.standard_normal(100_000),), 0
    if kind == "jacrev":
        return (rng.standard_normal(256), rng.standard_normal((256, 256)) / 16), 0
    if kind == "hessian":
        return (rng.standard_normal(512),), 0
    if kind == "nested":
        return (rng.standard_normal((512, 3)), rng.standard_normal((512, 3))), 0
    if kind == "newton":
        return (rng.uniform(1.0, 4.0, 1024),), 0
    f32 = np.float32
    ws = [(rng.standard_normal(s) * 0.05).astype(f32) for s in ((784, 256), (256,), (256, 10), (10,))]
    x = rng.standard_normal((128, 784)).astype(f32)
    y = np.eye(10, dtype=f32)[rng.integers(0, 10, 128)] if kind == "mlp_xent" else rng.standard_normal(
        (128, 10)).astype(f32)
    return (*ws, x, y), (0, 1, 2, 3)


class _Fresh:
    def __init__(self, d: str) -> None:
        self.d, self.n = d, 0

    def make(self, kind: str) -> Callable[..., Any]:
        self.n += 1
        path = os.path.join(self.d, f"first_grad_{kind}_{self.n}.py")
        with open(path, "w") as fh:
            fh.write("import numpy as np\n" + textwrap.dedent(_TEMPLATES[kind]).format(c=f"1.{self.n:06d}"))
        spec = importlib.util.spec_from_file_location(f"first_grad_{kind}_{self.n}", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.f  # type: ignore[no-any-return]


def child(kind: str, n: int, profile: bool) -> None:
    args, argnums = _args(kind)
    with tempfile.TemporaryDirectory() as d:
        fresh = _Fresh(d)
        _transform(kind, fresh.make(kind), argnums).lower(*args)  # warm-up: the process's one-time costs
        fs = [fresh.make(kind) for _ in range(n)]
        kept = []

        def step(acc: Any, f: Callable[..., Any]) -> Any:
            kept.append(_transform(kind, f, argnums).lower(*args))
            return acc

        if profile:
            import cProfile
            import pstats

            pr = cProfile.Profile()
            pr.enable()
            functools.reduce(step, fs, None)
            pr.disable()
            st = pstats.Stats(pr)
            calls = sum(v[1] for v in st.stats.values())  # type: ignore[attr-defined]
            print(f"{kind}: {calls / n / 1e3:.1f}k calls a front end")
            st.sort_stats("cumulative").print_stats(45)
        else:
            functools.reduce(step, fs, None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--n", type=int, default=3, help="fresh functions a case")
    ap.add_argument("--calls", action="store_true", help="cProfile instead of callgrind")
    ap.add_argument("--keep", help="a folder to copy callgrind's files into")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    env = dict(os.environ, PYTHONHASHSEED="0", SRCJAX_CACHE="0")
    if a.child:
        child(a.child, a.n, a.calls)
        return 0
    for kind in a.cases.split(","):
        me = [sys.executable, os.path.abspath(__file__), "--n", str(a.n), "--child", kind]
        if a.calls:
            subprocess.run(me + ["--calls"], env=env, check=True)
            continue
        with tempfile.TemporaryDirectory() as d:
            cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=functools_reduce",
                   f"--callgrind-out-file={d}/cg.out", *me]
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if r.returncode:
                sys.exit(r.stderr[-3000:])
            path = glob.glob(f"{d}/cg.out*")[0]
            total = next(int(line.split()[1]) for line in open(path) if line.startswith(("totals:", "summary:")))
            print(f"{kind}: {total / 1e6:.1f}M instructions, {a.n} front ends", flush=True)
            if a.keep:
                os.makedirs(a.keep, exist_ok=True)
                shutil.copy(path, os.path.join(a.keep, f"{kind}.cg"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
