"""Transformations called inside compiled, vmapped or differentiated functions (issue #15) vs jax.jit.

    .venv/bin/python benchmarks/bench_inside.py [--quick] [--clock cpu|wall]

Each row is one program run by srcjax and by ``jax.jit`` of the same jax program: a hessian of a
non-scalar output inside ``jit`` (``jacfwd(jacrev(f))`` there), the gradient of a Jacobian's sum (grad of
``jacrev``/``jacfwd``: reverse mode over the Jacobian's generic source), a jvp of a Jacobian, and
``vmap`` of a function calling ``srcjax.vjp``. Every result is checked against jax first. Times: first
call (writing source + compile + run) and the steady-state median per call, results read back to NumPy;
``--clock cpu`` measures the calling thread's CPU time (``time.thread_time``: steadier on a loaded machine).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import srcjax

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover - jax is a test/benchmark-only dependency
    sys.exit("bench_inside.py needs jax (pip install -e '.[test]'): it is the comparison oracle")

jax.devices()
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_default_matmul_precision", "highest")

CLOCK: Callable[[], float] = time.perf_counter


def f(x):
    return np.tanh(x) * x[::-1]


def jf(x):
    return jnp.tanh(x) * x[::-1]


def hess_in(x):
    return srcjax.hessian(f)(x).sum(axis=0) @ x


def jhess_in(x):
    return jax.hessian(jf)(x).sum(axis=0) @ x


def vjp_in(x, v):
    y, pull = srcjax.vjp(f, x)
    return pull(v)[0] * y


def jvjp_in(x, v):
    y, pull = jax.vjp(jf, x)
    return pull(v)[0] * y


def steady_us(fn: Any, args: tuple[Any, ...], reps: int) -> float:
    np.asarray(fn(*args))
    ts = []
    for _ in range(reps):
        t = CLOCK()
        np.asarray(fn(*args))
        ts.append(CLOCK() - t)
    return float(np.median(ts) * 1e6)


def first_ms(fn: Any, args: tuple[Any, ...]) -> tuple[float, np.ndarray]:
    t = CLOCK()
    out = np.asarray(fn(*args))
    return (CLOCK() - t) * 1e3, out


def main() -> int:
    global CLOCK
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few repetitions (smoke run)")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="wall")
    ns = ap.parse_args()
    CLOCK = time.thread_time if ns.clock == "cpu" else time.perf_counter
    reps, n, b = (5, 16, 8) if ns.quick else (21, 128, 64)
    rng = np.random.default_rng(0)
    x, xs, vs = rng.normal(size=n), rng.normal(size=(b, n)), rng.normal(size=(b, n))
    rows = [
        (f"jit(hessian(f) inside) f64[{n}]", srcjax.jit(hess_in), jax.jit(jhess_in), (x,)),
        (f"grad(jacrev(f)(x).sum()) f64[{n}]", srcjax.grad(lambda x: srcjax.jacrev(f)(x).sum()),
         jax.jit(jax.grad(lambda x: jax.jacrev(jf)(x).sum())), (x,)),
        (f"grad(jacfwd(f)(x).sum()) f64[{n}]", srcjax.grad(lambda x: srcjax.jacfwd(f)(x).sum()),
         jax.jit(jax.grad(lambda x: jax.jacfwd(jf)(x).sum())), (x,)),
        (f"jit(jvp(jacrev(f)) inside) f64[{n}]", srcjax.jit(lambda x: srcjax.jvp(srcjax.jacrev(f), (x,), (x,))[1]),
         jax.jit(lambda x: jax.jvp(jax.jacrev(jf), (x,), (x,))[1]), (x,)),
        (f"vmap(vjp inside) f64[{b},{n}]", srcjax.vmap(vjp_in), jax.jit(jax.vmap(jvjp_in)), (xs, vs)),
    ]
    print(f"srcjax {srcjax.__version__}, jax {jax.__version__}; clock {ns.clock}")
    print("| workload | srcjax first ms | jax first ms | srcjax us | jax us | srcjax/jax |")
    print("|---|---|---|---|---|---|")
    for name, ours_fn, theirs_fn, args in rows:
        try:
            f1, ours = first_ms(ours_fn, args)
        except srcjax.TranspileError as e:  # (a srcjax that refuses it: the row says so)
            print(f"| {name} | refused: {str(e).splitlines()[0][:80]} | | | | |")
            continue
        f2, ref = first_ms(theirs_fn, args)
        np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-9, err_msg=name)
        s1, s2 = steady_us(ours_fn, args, reps), steady_us(theirs_fn, args, reps)
        print(f"| {name} | {f1:,.0f} | {f2:,.0f} | {s1:,.0f} | {s2:,.0f} | {s1 / s2:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
