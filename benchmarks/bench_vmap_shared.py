"""Plain vmap of a branch on batched data that reads an unmapped matrix: srcjax vs an older tree vs jax.

Issue #15: an unmapped value a batched branch reads is broadcast and marked ``taken`` (so that
``grad`` masks its cotangent per example); the lowering must then read the unrepeated matrix, so that
plain vmap pays nothing for the mark. Each workload is ``vmap(g, in_axes=(None, 0))`` with ``A``
float64[64, 64] and 256 examples ``x`` float64[64]; ``g`` branches on ``np.sum(x) > 0``.

Run (from the repository root; jax is the oracle, srcjax never imports it)::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_vmap_shared.py                 # srcjax vs jax
    PYTHONPATH=. .venv/bin/python benchmarks/bench_vmap_shared.py --old /tmp/old  # + an older srcjax tree

``--old DIR`` times the same workloads with the srcjax package in ``DIR`` (a checkout before the
change) in a child process, rounds interleaved with this tree's. Printed: median microseconds per
call (NumPy inputs, result read back), per workload and round, and ``new/jax``, ``new/old``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def solve_tensordot(A, x):
    if np.sum(x) > 0:
        y = np.linalg.solve(A, x)
    else:
        y = np.tensordot(A, x, axes=1)
    return y


def einsum2(A, x):
    if np.sum(x) > 0:
        y = np.einsum("ij,j->i", A, x)
    else:
        y = np.einsum("ji,j->i", A, x)
    return y


def dot_inner(A, x):
    if np.sum(x) > 0:
        y = np.dot(A, x)
    else:
        y = np.inner(A, x + 1.0)
    return y


def matmul2(A, x):
    if np.sum(x) > 0:
        y = A @ x
    else:
        y = np.tanh(A.T @ x)
    return y


def solve_only(A, x):
    if np.sum(x) > 0:
        y = np.linalg.solve(A, x)
    else:
        y = x
    return y


def inv_copy(A, x):
    if np.sum(x) > 0:
        y = np.linalg.inv(A) @ x
    else:
        y = x
    return y


WORKLOADS = {"solve|tensordot": solve_tensordot, "einsum|einsum": einsum2, "dot|inner": dot_inner,
             "matmul|matmul": matmul2, "solve|copy": solve_only, "inv|copy": inv_copy}


def jax_twins():  # type: ignore[no-untyped-def]
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def cond(f, g):
        return lambda A, x: jax.lax.cond(jnp.sum(x) > 0, f, g, A, x)

    return {
        "solve|tensordot": cond(jnp.linalg.solve, lambda A, x: jnp.tensordot(A, x, axes=1)),
        "einsum|einsum": cond(lambda A, x: jnp.einsum("ij,j->i", A, x), lambda A, x: jnp.einsum("ji,j->i", A, x)),
        "dot|inner": cond(jnp.dot, lambda A, x: jnp.inner(A, x + 1.0)),
        "matmul|matmul": cond(lambda A, x: A @ x, lambda A, x: jnp.tanh(A.T @ x)),
        "solve|copy": cond(jnp.linalg.solve, lambda A, x: x),
        "inv|copy": cond(lambda A, x: jnp.linalg.inv(A) @ x, lambda A, x: x),
    }


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(64, 64)) + 64 * np.eye(64), rng.normal(size=(256, 64))


def median_us(f, A, xs, calls: int = 30) -> float:  # type: ignore[no-untyped-def]
    np.asarray(f(A, xs))
    ts = []
    for _ in range(calls):
        t = time.perf_counter()
        np.asarray(f(A, xs))
        ts.append(time.perf_counter() - t)
    return float(np.median(ts) * 1e6)


def srcjax_times() -> dict[str, float]:
    import srcjax

    A, xs = data()
    out = {}
    for name, g in WORKLOADS.items():
        v = srcjax.vmap(g, in_axes=(None, 0))
        ref = np.stack([g(A, x) for x in xs])
        assert np.allclose(np.asarray(v(A, xs)), ref, atol=1e-9), name
        out[name] = median_us(v, A, xs)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", help="a directory holding an older srcjax package")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(srcjax_times()))
        return
    import jax

    A, xs = data()
    twins = {k: jax.jit(jax.vmap(f, in_axes=(None, 0))) for k, f in jax_twins().items()}
    for r in range(args.rounds):
        new = srcjax_times()
        jx = {k: median_us(f, A, xs) for k, f in twins.items()}
        old = None
        if args.old:
            env = dict(os.environ, PYTHONPATH=args.old)
            res = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True,
                                 check=True)
            old = json.loads(res.stdout.strip().splitlines()[-1])
        heads = " ".join(f"{h:>9s}" for h in ("new us", "jax us", "old us", "new/jax", "new/old"))
        print(f"round {r}: {'workload':18s} {heads}")
        for k in WORKLOADS:
            o = old[k] if old else float("nan")
            print(f"         {k:18s} {new[k]:9.0f} {jx[k]:9.0f} {o:9.0f} {new[k] / jx[k]:9.2f} {new[k] / o:9.2f}")


if __name__ == "__main__":
    main()
