"""srcjax.vjp vs jax.vjp: per-call time of ``out, f = vjp(loss, *args); f(1.0)``.

Run (from the repository root, in the venv that has jax)::

    .venv/bin/python benchmarks/bench_vjp.py            # ~1 min
    .venv/bin/python benchmarks/bench_vjp.py --quick

Workloads: the MLP losses of ``bench_grad.py`` (784-256-10 tanh MLP, batch 128,
float32), the cotangent taken w.r.t. all six arguments (``srcjax.vjp`` and
``jax.vjp`` differentiate every primal). Rows, each the median time per call in
microseconds (batches interleaved round by round, the garbage collector off in
timed batches, every result forced):

* ``sj vjp``       ``out, f = srcjax.vjp(loss, *args); f(1.0)``: the forward program
  (output + residuals), then the backward program on the residuals;
* ``sj grad``      ``srcjax.value_and_grad(loss, argnums=(0..5))(*args)``: one program, for scale;
* ``sj fwd``       ``srcjax.compile(loss)(*args)``: the forward pass alone;
* ``jax vjp``      ``jax.vjp(loss_jax, *args)`` and its function, not jitted (op by op);
* ``jax jit vjp``  ``jax.jit``-ed forward (returning the vjp function, a pytree of residuals)
  and a ``jax.jit``-ed backward taking it: JAX's split, compiled;
* ``jax grad``     ``jax.jit(jax.value_and_grad(loss_jax, argnums=(0..5)))``.

``np`` = NumPy inputs (uploaded on every call), ``dev`` = inputs already on the device.
The ratio ``vjp/fwd`` (srcjax's vjp time over its forward time) is the cost of the
derivative in units of the forward pass: about 3 with a recomputing backward pass
(fwd + fwd + bwd), about 2 with residuals.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import srcjax

try:
    import jax
except ImportError:  # pragma: no cover
    sys.exit("bench_vjp.py needs jax: it is the comparison oracle")

from bench_foundation import as_jax  # same directory as this script
from bench_grad import mlp_mse, mlp_xent, workloads


def identity(a):
    return a


def _force(v: Any) -> None:
    for leaf in jax.tree_util.tree_leaves(v):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()


def bench(cases: dict[str, Callable[[], Any]], rounds: int, batch: int) -> dict[str, float]:
    for f in cases.values():  # warm up (compiles)
        for _ in range(3):
            _force(f())
    times: dict[str, list[float]] = {k: [] for k in cases}
    for r in range(rounds):
        names = list(cases)
        names = names[r % len(names):] + names[:r % len(names)]
        for k in names:
            f = cases[k]
            gc.disable()
            t0 = time.perf_counter()
            for _ in range(batch):
                _force(f())
            t = (time.perf_counter() - t0) / batch
            gc.enable()
            times[k].append(t * 1e6)
    return {k: statistics.median(v) for k, v in times.items()}


def cases(fn: Callable[..., Any], args: tuple[Any, ...], jargs: tuple[Any, ...]) -> dict[str, Callable[[], Any]]:
    jfn = as_jax(fn)
    nums = tuple(range(len(args)))
    sj_vg = srcjax.value_and_grad(fn, argnums=nums)
    sj_fwd = srcjax.compile(fn)
    j_vg = jax.jit(jax.value_and_grad(jfn, argnums=nums))
    j_fwd = jax.jit(lambda *a: jax.vjp(jfn, *a))
    j_bwd = jax.jit(lambda f, ct: f(ct))
    one = np.float32(1.0)

    def sj_vjp() -> Any:
        out, f = srcjax.vjp(fn, *args)
        return out, f(1.0)

    def jax_vjp() -> Any:
        out, f = jax.vjp(jfn, *jargs)
        return out, f(one)

    def jax_jit_vjp() -> Any:
        out, f = j_fwd(*jargs)
        return out, j_bwd(f, one)

    return {"sj vjp": sj_vjp, "sj grad": lambda: sj_vg(*args), "sj fwd": lambda: sj_fwd(*args),
            "jax vjp": jax_vjp, "jax jit vjp": jax_jit_vjp, "jax grad": lambda: j_vg(*jargs)}


def main() -> None:
    quick = "--quick" in sys.argv
    rounds, batch = (5, 10) if quick else (25, 20)
    print(f"srcjax from {srcjax.__file__}; jax {jax.__version__}; rounds={rounds} batch={batch}")
    chosen = {mlp_mse.__name__, mlp_xent.__name__}
    ident = srcjax.compile(identity)
    for name, kind, fn, args, _ in workloads(np.random.default_rng(0)):
        if kind not in chosen:
            continue
        # the numbers agree before anything is timed
        out, f = srcjax.vjp(fn, *args)
        _, jf = jax.vjp(as_jax(fn), *args)
        for a, b in zip(f(1.0), jf(np.float32(1.0))):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=1e-6)
        print(f"\n{name}   (srcjax vjp_fn recomputes the forward pass: {getattr(f, 'recomputes', True)})")
        print(f"{'mode':5} {'sj vjp':>9} {'sj grad':>9} {'sj fwd':>9} {'jax vjp':>9} {'jax jit vjp':>12} "
              f"{'jax grad':>9} {'vjp/fwd':>8} {'sj/jax jit':>10}")
        modes = {"np": (args, args),
                 "dev": (tuple(ident(a) for a in args), tuple(jax.device_put(a) for a in args))}
        for mode, (a, ja) in modes.items():
            t = bench(cases(fn, a, ja), rounds, batch)
            print(f"{mode:5} {t['sj vjp']:9.1f} {t['sj grad']:9.1f} {t['sj fwd']:9.1f} {t['jax vjp']:9.1f} "
                  f"{t['jax jit vjp']:12.1f} {t['jax grad']:9.1f} {t['sj vjp'] / t['sj fwd']:8.2f} "
                  f"{t['sj vjp'] / t['jax jit vjp']:10.2f}")


if __name__ == "__main__":
    main()
