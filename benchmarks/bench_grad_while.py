"""Reverse mode through loops that stop on data: srcjax.grad of the plain loop vs jax.

    .venv/bin/python benchmarks/bench_grad_while.py [--quick]

jax.grad cannot differentiate a ``lax.while_loop`` or a Python loop that
breaks on a traced value; what a jax user writes instead is the bounded form:
``lax.fori_loop`` over the bound with the state frozen by ``jnp.where`` once
done, every iteration computed. srcjax differentiates the plain loop (a
``break`` on data; a ``while`` with ``max_iters=``): a bounded loop whose body
is skipped (``stablehlo.if``) once the loop has stopped. Both give the same
gradient (checked); the table gives first-call and steady-state times.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

import srcjax

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover - jax is a test/benchmark-only dependency
    sys.exit("bench_grad_while.py needs jax (pip install -e '.[test]'): it is the comparison oracle")

jax.devices()  # jax's backend first (on a GPU srcjax shares its CUDA plugin registration)
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_default_matmul_precision", "highest")

STEPS = 1000
MAX_ITERS = 50


def sim_break(x0, v):
    x = x0
    for _ in range(1000):
        x = x + 0.02 * np.tanh(v * x)
        if np.max(x) > 10.0:
            break
    return np.sum(x)


def newton(a):
    x = a
    while np.max(np.abs(x * x - a)) > 1e-10:
        x = 0.5 * (x + a / x)
    return np.sum(x)


def jax_sim(x0, v):
    def body(i, s):
        x, done = s
        x = jnp.where(done, x, x + 0.02 * jnp.tanh(v * x))
        return x, done | (jnp.max(x) > 10.0)

    x, _ = jax.lax.fori_loop(0, STEPS, body, (x0, False))
    return jnp.sum(x)


def jax_newton(a):
    def body(i, s):
        x, done = s
        done = done | (jnp.max(jnp.abs(x * x - a)) <= 1e-10)
        return jnp.where(done, x, 0.5 * (x + a / x)), done

    x, _ = jax.lax.fori_loop(0, MAX_ITERS, body, (a, False))
    return jnp.sum(x)


def _ready(r: Any) -> list[np.ndarray]:
    return [np.asarray(z) for z in (r if isinstance(r, tuple) else (r,))]


def steady_us(f: Any, args: tuple[Any, ...], reps: int) -> float:
    _ready(f(*args))
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        _ready(f(*args))
        ts.append(time.perf_counter() - t)
    return float(np.median(ts) * 1e6)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="few repetitions (smoke run, not for numbers)")
    ns = ap.parse_args()
    reps = 5 if ns.quick else 31
    n = 100 if ns.quick else 1000
    x0 = np.linspace(0.1, 1.0, n).astype(np.float32)
    v = np.linspace(0.5, 2.0, n).astype(np.float32)
    a = np.linspace(1.0, 100.0, 1000 if ns.quick else 100_000)
    print(f"srcjax {srcjax.__version__}, jax {jax.__version__}; srcjax device {srcjax.devices()[0]}, "
          f"jax device {jax.devices()[0]}")
    rows = [
        (f"sim, break on data, {STEPS} steps, f32[{n}]", lambda: srcjax.grad(sim_break, argnums=(0, 1)),
         lambda: jax.jit(jax.grad(jax_sim, argnums=(0, 1))), (x0, v), 1e-4),
        (f"Newton while, max_iters={MAX_ITERS}, f64[{a.size}]", lambda: srcjax.grad(newton, max_iters=MAX_ITERS),
         lambda: jax.jit(jax.grad(jax_newton)), (a,), 1e-12),
    ]
    print("| workload | srcjax first ms | jax first ms | srcjax us | jax us | srcjax/jax |")
    print("|---|---|---|---|---|---|")
    for name, make_sj, make_jx, args, tol in rows:
        t = time.perf_counter()
        g = make_sj()
        ours = _ready(g(*args))
        first_sj = time.perf_counter() - t
        t = time.perf_counter()
        h = make_jx()
        ref = _ready(h(*args))
        first_jx = time.perf_counter() - t
        for p, q in zip(ours, ref):
            np.testing.assert_allclose(p, q, rtol=tol, atol=tol, err_msg=name)
        s1, s2 = steady_us(g, args, reps), steady_us(h, args, reps)
        print(f"| {name} | {first_sj * 1e3:,.0f} | {first_jx * 1e3:,.0f} | {s1:,.0f} | {s2:,.0f} | {s1 / s2:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
