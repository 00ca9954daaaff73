"""First calls of transformed functions: srcjax vs jax, side by side, with the front end's share.

Run (from the repository root, in the venv that has the test extras: ``jax`` is the oracle)::

    .venv/bin/python benchmarks/bench_first_call.py            # 7 fresh functions per case, ~1-2 min
    .venv/bin/python benchmarks/bench_first_call.py --reps 3 grad_rosen vmap_hessian   # some cases

A *first call* is the first call of a new transformed function in a process where both libraries
are imported and warmed up on the same kind of function: srcjax reads the source, normalizes,
transforms (writes the derivative / batched source and reads it back), specializes, lowers to
StableHLO and compiles with XLA; jax traces, lowers and compiles. Every function is fresh (a new
module file with a constant never used before), so no cache of either library can hit, in memory
or on disk; srcjax's persistent cache is left as it is (``SRCJAX_CACHE_DIR`` / ``~/.cache/srcjax``:
a store into a full cache is part of a real first call).

Cases: the bodies of ``bench_grad.py`` (``grad`` of an MLP's cross-entropy and MSE, 128x784-256-10
f32, and of the Rosenbrock function on f64[1e5]) and of ``bench_vmap.py --quick`` (per-example
gradients ``vmap(grad(loss), in_axes=(None, 0, 0))`` of a 64-128-10 MLP, batch 32; ``jacrev`` of
``tanh(w @ x) * x`` f64[32]; ``hessian`` of Rosenbrock f64[64]; ``vmap`` of a Newton ``while``
with per-example trip counts, batch 128; nested ``vmap`` of a distance, 64x64).

Columns: ``srcjax ms`` / ``jax ms``: the whole first call (make the transformed function, call it
once with NumPy inputs, read every result back), medians over ``--reps`` fresh functions, the two
libraries alternating; ``ratio`` and its range over the reps (per-rep ratios). ``front end``:
process CPU time of srcjax's ``transform + srcjax.lower(...)`` against jax's ``trace().lower()``
(on other fresh functions; CPU time moves less than wall time on a busy machine). The rest of a
first call is XLA's compile, the same for both within noise (``bench_grad.py`` times it apart).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import srcjax

try:
    import jax
    import jax.numpy as jnp
    from jax import lax
except ImportError:  # pragma: no cover - jax is a test/benchmark-only dependency
    sys.exit("bench_first_call.py needs jax (pip install -e '.[test]'): it is the comparison oracle")

from bench_foundation import as_jax, environment  # same directory as this script
from bench_grad import _FIRST_TEMPLATES  # noqa: E402

jax.config.update("jax_enable_x64", True)  # the float64 cases; the MLPs stay float32

# the grad workloads are bench_grad.py's first-call bodies (one definition of each)
TEMPLATES = {
    **{k: textwrap.dedent(_FIRST_TEMPLATES[g]) for k, g in (("xent", "mlp_xent"), ("mse", "mlp_mse"),
                                                           ("rosen", "rosen"))},
    "example_loss": """
def f(params, x, y):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    z = logits - np.max(logits)
    logp = z - np.log(np.sum(np.exp(z)))
    return -np.sum(y * logp) * {c}
""",
    "layer": """
def f(x, w):
    return np.tanh(w @ x) * x * {c}
""",
    "newton": """
def f(a):
    x = a
    while np.abs(x * x - a) > 1e-12 * a * {c}:
        x = 0.5 * (x + a / x)
    return x
""",
    "dist": """
def f(x, y):
    return np.sqrt(np.sum((x - y) ** 2)) * {c}
""",
}


class Fresh:
    """A new module file per function, with a constant never used before."""

    def __init__(self) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="srcjax_bench_first_")
        self.n = 0

    def make(self, kind: str) -> tuple[Callable[..., Any], float]:
        self.n += 1
        c = 1.0 + self.n * 1e-6
        path = os.path.join(self.dir.name, f"first_{kind}_{self.n}.py")
        with open(path, "w") as fh:
            fh.write("import numpy as np\n" + TEMPLATES[kind].format(c=repr(c)))
        spec = importlib.util.spec_from_file_location(f"first_{kind}_{self.n}", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.f, c


def _jax_newton(c: float) -> Callable[..., Any]:
    def f(a: Any) -> Any:
        return lax.while_loop(lambda x: jnp.abs(x * x - a) > 1e-12 * a * c, lambda x: 0.5 * (x + a / x), a)
    return f




def cases(rng: np.random.Generator) -> list[tuple[str, str, Any, Any, tuple[Any, ...]]]:
    """(name, template, make srcjax's function, make jax's, NumPy arguments)."""
    f32 = np.float32
    mlp = ((rng.standard_normal((784, 256)) * 0.05).astype(f32), (rng.standard_normal(256) * 0.1).astype(f32),
           (rng.standard_normal((256, 10)) * 0.05).astype(f32), (rng.standard_normal(10) * 0.1).astype(f32),
           rng.standard_normal((128, 784)).astype(f32), np.eye(10, dtype=f32)[rng.integers(0, 10, 128)])
    params = ((rng.standard_normal((64, 128)) / 8).astype(f32), (rng.standard_normal(128) * 0.1).astype(f32),
              (rng.standard_normal((128, 10)) / 11).astype(f32), (rng.standard_normal(10) * 0.1).astype(f32))
    xb = rng.standard_normal((32, 64)).astype(f32)
    yb = np.eye(10, dtype=f32)[rng.integers(0, 10, 32)]
    nums = (0, 1, 2, 3)
    return [
        ("grad_xent", "xent", lambda f: srcjax.grad(f, argnums=nums),
         lambda f, c: jax.jit(jax.grad(as_jax(f), argnums=nums)), mlp),
        ("grad_mse", "mse", lambda f: srcjax.grad(f, argnums=nums),
         lambda f, c: jax.jit(jax.grad(as_jax(f), argnums=nums)), mlp),
        ("grad_rosen", "rosen", lambda f: srcjax.grad(f), lambda f, c: jax.jit(jax.grad(as_jax(f))),
         (rng.standard_normal(100_000),)),
        ("vmap_per_example_grads", "example_loss", lambda f: srcjax.vmap(srcjax.grad(f), in_axes=(None, 0, 0)),
         lambda f, c: jax.jit(jax.vmap(jax.grad(as_jax(f)), in_axes=(None, 0, 0))), (params, xb, yb)),
        ("vmap_jacrev", "layer", lambda f: srcjax.jacrev(f), lambda f, c: jax.jit(jax.jacrev(as_jax(f))),
         (rng.standard_normal(32), rng.standard_normal((32, 32)))),
        ("vmap_hessian", "rosen", lambda f: srcjax.hessian(f), lambda f, c: jax.jit(jax.hessian(as_jax(f))),
         (rng.standard_normal(64),)),
        ("vmap_newton_while", "newton", lambda f: srcjax.vmap(f), lambda f, c: jax.jit(jax.vmap(_jax_newton(c))),
         (rng.uniform(0.5, 1e4, 128),)),
        ("vmap_nested", "dist", lambda f: srcjax.vmap(srcjax.vmap(f, in_axes=(None, 0)), in_axes=(0, None)),
         lambda f, c: jax.jit(jax.vmap(jax.vmap(as_jax(f), in_axes=(None, 0)), in_axes=(0, None))),
         (rng.standard_normal((64, 3)), rng.standard_normal((64, 3)))),
    ]


def _read(r: Any) -> Any:
    if isinstance(r, (tuple, list)):
        return [_read(v) for v in r]
    return np.asarray(r)


def _leaves(r: Any) -> list[np.ndarray]:
    return [a for v in r for a in _leaves(v)] if isinstance(r, list) else [r]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=7, help="fresh functions per case and library (default 7)")
    ap.add_argument("names", nargs="*", help="cases to run (default: all)")
    a = ap.parse_args()
    print(environment())
    fresh = Fresh()
    try:
        all_cases = cases(np.random.default_rng(0))
        chosen = [c for c in all_cases if not a.names or c[0] in a.names]
        for _, kind, ms, mj, args in chosen:  # one-time start-up of both libraries, per kind of function
            f, c = fresh.make(kind)
            _read(ms(f)(*args))
            f, c = fresh.make(kind)
            _read(mj(f, c)(*args))
        print(f"\nfirst calls: medians over {a.reps} fresh functions; front end = process CPU time of "
              "srcjax's transform + lower vs jax's trace + lower\n")
        print("| case | srcjax ms | jax ms | srcjax/jax | per-rep range | front end srcjax ms | jax ms |")
        print("|---|---|---|---|---|---|---|")
        for name, kind, ms, mj, args in chosen:
            s, j, fs, fj = [], [], [], []
            for _ in range(a.reps):
                f, c = fresh.make(kind)
                t = time.perf_counter()
                got = _read(ms(f)(*args))
                s.append(time.perf_counter() - t)
                f, c = fresh.make(kind)
                t = time.perf_counter()
                want = _read(mj(f, c)(*args))
                j.append(time.perf_counter() - t)
                for x, y in zip(_leaves(got), _leaves(want)):
                    np.testing.assert_allclose(x, y, rtol=2e-4, atol=2e-5, err_msg=name)
                f, c = fresh.make(kind)
                t = time.process_time()
                srcjax.lower(ms(f), *args)
                fs.append(time.process_time() - t)
                f, c = fresh.make(kind)
                t = time.process_time()
                mj(f, c).trace(*args).lower()
                fj.append(time.process_time() - t)
            med = statistics.median
            ratios = sorted(x / y for x, y in zip(s, j))
            print(f"| {name} | {med(s) * 1e3:,.0f} | {med(j) * 1e3:,.0f} | {med(s) / med(j):.2f} | "
                  f"{ratios[0]:.2f}-{ratios[-1]:.2f} | {med(fs) * 1e3:,.1f} | {med(fj) * 1e3:,.1f} |", flush=True)
    finally:
        fresh.dir.cleanup()
    try:
        print(f"\nload average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
