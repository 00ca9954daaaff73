"""Random draws: ``srcjax.random`` compiled vs ``jax.jit(jax.random...)`` vs NumPy's generator.

    .venv/bin/python benchmarks/bench_random.py            # 1_000_000 draws
    .venv/bin/python benchmarks/bench_random.py --quick    # 10_000 draws, few rounds (smoke run)

Rows: ``normal`` and ``uniform`` (float32 and float64) and ``bits`` (uint32), each ``shape=(n,)`` from
one key. srcjax and jax run the same Threefry-2x32 program (srcjax's is NumPy source it transpiles;
jax's is its ``threefry2x32`` primitive), and the compiled results are checked bit for bit against
jax's before timing. ``numpy rng``: ``np.random.default_rng().standard_normal`` / ``.random`` /
``.integers`` (PCG64: a different generator, for scale). jax lowers ``threefry2x32`` on CPU as a rolled
loop over the rounds (a ``while`` in its HLO); srcjax's source is straight-line, which XLA fuses.
``srcjax numpy``: the generated source run by NumPy (``device="numpy"``). Median microseconds per call,
the result read back with ``np.asarray``, measured interleaved (``bench_foundation.measure``); ratios
above 1: srcjax slower.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import srcjax
import srcjax.random as sr

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover - jax is a benchmark-only dependency
    sys.exit("bench_random.py needs jax (pip install -e '.[test]'): it is the comparison oracle")

from bench_foundation import environment, measure  # same directory as this script


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ns = ap.parse_args()
    jax.config.update("jax_enable_x64", True)
    n = 10_000 if ns.quick else 1_000_000
    rounds = 3 if ns.quick else 15
    print(environment())
    print(f"n = {n:_} draws per call\n")
    key, jkey = sr.key(0), jax.random.PRNGKey(0)
    rng = np.random.default_rng(0)
    cases = [
        ("normal f32", lambda k: sr.normal(k, (n,), np.float32), lambda k: jax.random.normal(k, (n,), jnp.float32),
         lambda: rng.standard_normal(n, dtype=np.float32)),
        ("normal f64", lambda k: sr.normal(k, (n,)), lambda k: jax.random.normal(k, (n,), jnp.float64),
         lambda: rng.standard_normal(n)),
        ("uniform f32", lambda k: sr.uniform(k, (n,), np.float32), lambda k: jax.random.uniform(k, (n,), jnp.float32),
         lambda: rng.random(n, dtype=np.float32)),
        ("bits u32", lambda k: sr.bits(k, (n,)), lambda k: jax.random.bits(k, (n,), jnp.uint32),
         lambda: rng.integers(0, 2 ** 32, n, dtype=np.uint32)),
    ]
    head = f"{'case':<12} {'srcjax us':>10} {'jax us':>10} {'numpy rng us':>13} {'srcjax numpy us':>16} " \
           f"{'sj/jax':>7} {'sj/rng':>7}"
    print(head)
    print("-" * len(head))
    for name, mine, theirs, numpy_draw in cases:
        compiled = srcjax.jit(mine)
        jitted = jax.jit(theirs)
        got, want = np.asarray(compiled(key)), np.asarray(jitted(jkey))
        assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8)), name
        on_numpy = srcjax.compile(mine, device="numpy")
        t_np = measure({"numpy": lambda f=on_numpy: np.asarray(f(key))}, max(1, rounds // 3), 2e8)["numpy"]
        t = measure({"srcjax": lambda f=compiled: np.asarray(f(key)), "jax": lambda f=jitted: np.asarray(f(jkey)),
                     "rng": numpy_draw}, rounds, 2e8)
        print(f"{name:<12} {t['srcjax']:>10.0f} {t['jax']:>10.0f} {t['rng']:>13.0f} {t_np:>16.0f} "
              f"{t['srcjax'] / t['jax']:>7.2f} {t['srcjax'] / t['rng']:>7.2f}")


if __name__ == "__main__":
    main()
