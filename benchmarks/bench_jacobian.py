"""Jacobians and Hessians: srcjax's one-program jacfwd/jacrev/hessian vs jax.jit(jax.<same>).

    .venv/bin/python benchmarks/bench_jacobian.py [--quick]

srcjax writes a Jacobian as generated source: one batched JVP (jacfwd) or
VJP (jacrev) over all the basis vectors at once, the generated JVP/VJP under
``srcjax.vmap`` (``srcjax.source(srcjax.jacrev(f))`` shows it), in one
executable with no loop over elements; jax batches the same JVPs/VJPs with
``vmap``. The per-element column is srcjax's general path (one compiled JVP
or VJP call from Python per element; what containers still take), timed on
the same inputs for comparison. Every result is checked against jax first.
Times: first call (writing source + compile + run) and the steady-state
median per call, results read back to NumPy.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

import srcjax
from srcjax.jacobian import _jacfwd_loop, _jacrev_loop

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover - jax is a test/benchmark-only dependency
    sys.exit("bench_jacobian.py needs jax (pip install -e '.[test]'): it is the comparison oracle")

jax.devices()  # jax's backend first (on a GPU srcjax shares its CUDA plugin registration)
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_default_matmul_precision", "highest")


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def layer(x, w):
    return np.tanh(w @ x) * x[::-1]


def jax_rosen(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def jax_layer(x, w):
    return jnp.tanh(w @ x) * x[::-1]


def _read(r: Any) -> np.ndarray:
    return np.asarray(r)


def steady_us(f: Any, args: tuple[Any, ...], reps: int) -> float:
    _read(f(*args))
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        _read(f(*args))
        ts.append(time.perf_counter() - t)
    return float(np.median(ts) * 1e6)


def first_ms(make: Any, args: tuple[Any, ...]) -> tuple[float, np.ndarray]:
    t = time.perf_counter()
    f = make()
    out = _read(f(*args))
    return (time.perf_counter() - t) * 1e3, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few repetitions (smoke run)")
    ns = ap.parse_args()
    reps = 5 if ns.quick else 21
    n = 32 if ns.quick else 256
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=n), rng.normal(size=(n, n)) / np.sqrt(n)
    xr = rng.normal(size=n * 4)
    print(f"srcjax {srcjax.__version__}, jax {jax.__version__}; srcjax device {srcjax.devices()[0]}, "
          f"jax device {jax.devices()[0]}")
    rows = [
        (f"hessian rosen f64[{xr.size}]", lambda: srcjax.hessian(rosen), lambda: jax.jit(jax.hessian(jax_rosen)),
         lambda: _jacfwd_loop(srcjax.grad(rosen)), (xr,)),
        (f"jacfwd tanh(w@x)*rev(x) f64[{n}]", lambda: srcjax.jacfwd(layer), lambda: jax.jit(jax.jacfwd(jax_layer)),
         lambda: _jacfwd_loop(layer), (x, w)),
        (f"jacrev tanh(w@x)*rev(x) f64[{n}]", lambda: srcjax.jacrev(layer), lambda: jax.jit(jax.jacrev(jax_layer)),
         lambda: _jacrev_loop(layer), (x, w)),
    ]
    print("| workload | srcjax first ms | jax first ms | srcjax us | jax us | srcjax/jax | per-element us |")
    print("|---|---|---|---|---|---|---|")
    for name, make_sj, make_jx, make_loop, args in rows:
        f_sj, ours = first_ms(make_sj, args)
        f_jx, ref = first_ms(make_jx, args)
        np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-9, err_msg=name)
        g, h, loop = make_sj(), make_jx(), make_loop()
        np.testing.assert_allclose(_read(loop(*args)), ref, rtol=1e-9, atol=1e-9, err_msg=name)
        s1, s2 = steady_us(g, args, reps), steady_us(h, args, reps)
        s3 = steady_us(loop, args, max(3, reps // 5))
        print(f"| {name} | {f_sj:,.0f} | {f_jx:,.0f} | {s1:,.0f} | {s2:,.0f} | {s1 / s2:.2f} | {s3:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
