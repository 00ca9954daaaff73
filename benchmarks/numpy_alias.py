"""Does a NumPy argument written to right after a call change the call's result? jax.jit vs srcjax, on the CPU.

    .venv/bin/python benchmarks/numpy_alias.py            # sizes 8 .. 4M, a fast and a slow program
    .venv/bin/python benchmarks/numpy_alias.py --trials 20

jaxlib's C++ dispatcher uploads a NumPy argument with ``kImmutableZeroCopy`` semantics (the caller promises
not to touch the array until the program is done with it: the device buffer may *be* the NumPy memory, or a
copy jaxlib makes later) and runs the program asynchronously, so ``y = jax.jit(f)(x); x[...] = 0;
np.asarray(y)`` can read whatever ``x`` holds when the program gets to it. srcjax guarantees that such a
write never changes a result (it copies, or waits for the program where XLA runs it on the calling thread:
``cpp_calls.py``), so its column must read 0 everywhere.

Each row: the number of trials (of ``--trials``) whose result differed from the same call's result on an
untouched argument, with the call's time and the wait in ``np.asarray``. ``slow`` runs a 300k-step scalar
loop before it reads ``x`` (the call returns long before the read). Measured 2026-12-04, jax/jaxlib 0.10.2,
2-core VM, 5 trials each, two runs: jax changed the result at f32[1000] (fast: 4/5 and 1/5; slow: 1/5,
2/5), f32[1e5] (slow: 2/5, 5/5, arrays 64-byte aligned or not) and f32[4M] (fast: 3/5, 2/5; slow: 5/5,
2/5); never at f32[8].
srcjax: 0 everywhere.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import srcjax


def fast(x):
    return x * 2.0


def slow_np(x):
    s = np.float32(0.0)
    for _ in range(300_000):
        s = s * np.float32(0.999999) + np.float32(1e-7)
    return x + s


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--no-jax", action="store_true", help="srcjax only")
    args = ap.parse_args()
    libs: dict[str, dict[str, object]] = {"srcjax": {"fast": srcjax.compile(fast), "slow": srcjax.compile(slow_np)}}
    if not args.no_jax:
        import jax
        import jax.numpy as jnp
        from jax import lax

        def slow_jax(x):
            s = lax.fori_loop(0, 300_000, lambda i, c: c * 0.999999 + 1e-7, jnp.float32(0.0))
            return x + s

        libs["jax.jit"] = {"fast": jax.jit(fast), "slow": jax.jit(slow_jax)}
    print(f"{'lib':8s} {'program':7s} {'size':>9s} {'aligned':>7s} {'call us':>9s} {'wait us':>9s}  changed")
    for lib, fns in libs.items():
        for name, f in fns.items():
            for n in (8, 1000, 100_000, 4_000_000):
                want = np.asarray(f(np.ones(n, np.float32))).copy()  # (compiles; the untouched result)
                changed, call, wait, aligned = 0, 0.0, 0.0, 0
                for _ in range(args.trials):
                    x = np.ones(n, np.float32)
                    aligned += x.ctypes.data % 64 == 0
                    t0 = time.perf_counter()
                    y = f(x)  # type: ignore[operator]
                    t1 = time.perf_counter()
                    x[...] = 0.0
                    v = np.asarray(y)
                    t2 = time.perf_counter()
                    changed += not np.array_equal(v, want)
                    call, wait = call + t1 - t0, wait + t2 - t1
                k = args.trials
                print(f"{lib:8s} {name:7s} {n:9d} {aligned:>4d}/{k:<2d} {1e6 * call / k:9.1f} {1e6 * wait / k:9.1f}  "
                      f"{changed}/{k}", flush=True)


if __name__ == "__main__":
    main()
