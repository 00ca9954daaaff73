"""Newton's method with a `while` loop whose condition depends on the data.

    .venv/bin/python examples/newton.py [--n 100000]

`while np.max(np.abs(x * x - a)) > tol:` cannot be traced by jax.jit (the
condition is an array value); srcjax reads the source instead and rewrites the
loop into `srcjax.lax.while_loop(cond, body, carry)` (printed at the end),
which lowers to a single `stablehlo.while`: the number of iterations is
decided on the device, per call, and a new input needing more iterations runs
the same compiled executable. The same function is also run as plain NumPy to
check the results and the iteration counts. Last, `srcjax.grad` differentiates
through the loop (reverse mode, bounded by the loop's own iteration cap).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import srcjax


def newton_sqrt(a, tol):
    """sqrt(a) for every element of a > 0, to max |x*x - a| <= tol * max(a); also the iteration count."""
    x = np.maximum(a, 1.0)  # at or above sqrt(a): Newton then decreases monotonically
    n = 0
    while np.max(np.abs(x * x - a)) > tol * np.max(a):
        x = 0.5 * (x + a / x)
        n += 1
    return x, n


def cubic_root(c, tol, max_iter):
    """The real root of x**3 + x = c for every element of c (a data-dependent loop with an iteration cap)."""
    x = np.cbrt(c)
    step = np.ones_like(c)
    n = 0
    while np.max(np.abs(step)) > tol and n < max_iter:
        step = (x ** 3 + x - c) / (3 * x * x + 1)
        x = x - step
        n += 1
    return x, n


def root_sum(c, tol, max_iter):
    x, _ = cubic_root(c, tol, max_iter)
    return np.sum(x)


def timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    out = tuple(np.asarray(o) for o in out)  # force the result (srcjax arrays stay on the device)
    return out, (time.perf_counter() - t) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="vector length (default 100000)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    sqrt = srcjax.compile(newton_sqrt)

    print(f"== Newton sqrt on float64[{args.n}], stopping when max|x*x - a| <= 1e-15 * max(a)")
    for lo, hi in ((0.5, 2.0), (1.0, 1e6), (1e-3, 1e12)):
        a = rng.uniform(lo, hi, args.n)
        (x, n), ms = timed(sqrt, a, 1e-15)
        (x_np, n_np), ms_np = timed(newton_sqrt, a, 1e-15)
        err = np.max(np.abs(x - np.sqrt(a)) / np.sqrt(a))
        assert int(n) == n_np and np.allclose(x, x_np, rtol=1e-14), (int(n), n_np)
        print(f"a in [{lo:g}, {hi:g}): {int(n):2d} iterations (NumPy: {n_np}), max rel. error vs np.sqrt "
              f"{err:.1e}; srcjax {ms:7.1f} ms, NumPy {ms_np:6.1f} ms")
    print(f"(one compilation for all three: the first srcjax call includes it; the loop count is data: "
          f"{srcjax.lower(sqrt, a, 1e-15).as_text().count('stablehlo.while')} stablehlo.while in the StableHLO)")

    print("\n== Root of x**3 + x = c, at most 50 iterations")
    c = np.array([-10.0, -2.0, 0.0, 0.5, 2.0, 10.0, 1e6])
    (x, n), _ = timed(srcjax.compile(cubic_root), c, 1e-12, 50)
    x_np, n_np = cubic_root(c, 1e-12, 50)
    assert int(n) == n_np and np.allclose(x, x_np, rtol=1e-12)
    for ci, xi in zip(c, x):
        print(f"  c = {ci:>9g}: x = {xi:.12f}  (x**3 + x - c = {xi ** 3 + xi - ci:+.1e})")
    print(f"  {int(n)} iterations (NumPy: {n_np})")

    print("\n== d root / d c through the `while` loop (jax.grad cannot differentiate a while_loop)")
    # the test `n < max_iter` bounds the loop, so reverse mode needs no max_iters=; the implicit function
    # theorem gives the exact answer: dx/dc = 1 / (3 x**2 + 1)
    # (c = 0 is left out: the starting guess np.cbrt(c) has an infinite derivative there)
    c, x_np = c[c != 0], x_np[c != 0]
    g = srcjax.grad(root_sum)(c, 1e-12, 50)
    exact = 1 / (3 * x_np ** 2 + 1)
    assert np.allclose(g, exact, rtol=1e-9), (g, exact)
    for ci, gi, ei in zip(c, np.asarray(g), exact):
        print(f"  c = {ci:>9g}: grad {gi:.12f}  exact 1/(3x**2+1) {ei:.12f}")

    print("\n--- srcjax.source(newton_sqrt): the while statement, functionalized ---")
    print(srcjax.source(sqrt))


if __name__ == "__main__":
    main()
