"""Reverse mode through a bounded ``while`` on data: first-call time against the bound ``max_iters``.

    .venv/bin/python benchmarks/bench_bounded_while.py            # N = 25, 50, 100, 200, 400, 800
    .venv/bin/python benchmarks/bench_bounded_while.py --quick    # N = 25, 400, one repetition

Two workloads, gradients with respect to ``(v0, angle, drag)`` (float64 scalars):

* ``projectile``: a projectile with quadratic drag stepped until it lands
  (``while t < T_END and y >= 0.0:``, five state variables, about a dozen
  operations per step; 252 steps for these arguments).
* ``implicit``: five backward-Euler steps of the horizontal velocity, each
  solved by Newton's method (``while err > 1e-12:``, three iterations each), in
  a ``for`` loop: the bounded loop sits inside another loop.

srcjax: ``srcjax.grad(f, argnums=(0, 1, 2), max_iters=N)`` of the plain
Python function. A ``while`` on data becomes ``for _ in range(N):`` whose body
runs only while the test holds, lowered to one ``stablehlo.while`` each way
with a tape of N rows (a loop around it: one more ``stablehlo.while``, the
inner tape stacked per outer iteration), so the program, and the time to
write, specialize and compile it, should not depend on N. The StableHLO line
count is printed.

jax: its ``while_loop`` is not reverse-differentiable, so a jax user writes the
bounded form, ``lax.fori_loop(0, N, body, state)`` with the state frozen by
``jnp.where`` once the test fails, under ``jax.jit(jax.grad(...))`` (the outer
``for`` of ``implicit`` is unrolled by jax's tracing: five loops).

Both give the same gradient (checked for every N, also for N below the trip
count: then both are the derivative of the first N iterations). First call: a
fresh function (a new module file, so no cache can hit), NumPy inputs, result
read back; median of ``--reps``. The stage columns time srcjax's stages on other
fresh functions: writing the derivative source (``srcjax.grad``), specializing
it to StableHLO (``srcjax.lower``) and XLA's compile (``.compile()``). Steady
state: median microseconds per call of the compiled gradient.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

import srcjax

try:
    import jax
except ImportError:  # pragma: no cover - jax is a test/benchmark-only dependency
    sys.exit("bench_bounded_while.py needs jax (pip install -e '.[test]'): it is the comparison oracle")

from bench_foundation import FreshFunctions, _timed, environment  # same directory as this script

jax.config.update("jax_enable_x64", True)

ARGS = (np.float64(18.0), np.float64(0.9), np.float64(0.02))  # v0 (m/s), launch angle (rad), drag (1/m)
ARGNUMS = (0, 1, 2)

_PROJECTILE = """
    DT = 0.01
    T_END = 10.0

    def f(v0, angle, drag):
        vx = v0 * np.cos(angle)
        vy = v0 * np.sin(angle)
        x = 0.0
        y = 0.0
        t = 0.0
        while t < T_END and y >= 0.0:
            speed = np.sqrt(vx * vx + vy * vy)
            vx = vx - DT * drag * speed * vx
            vy = vy - DT * (9.81 + drag * speed * vy)
            x = x + DT * vx
            y = y + DT * vy
            t = t + DT
        return x * {c}
"""

# what a jax user writes for reverse mode: N steps, each one skipped (state frozen) once the test fails
_PROJECTILE_MASKED = """
    import jax

    DT = 0.01
    T_END = 10.0

    def f(v0, angle, drag):
        def body(i, s):
            vx, vy, x, y, t, done = s
            done = done | ~((t < T_END) & (y >= 0.0))
            speed = np.sqrt(vx * vx + vy * vy)
            nvx = vx - DT * drag * speed * vx
            nvy = vy - DT * (9.81 + drag * speed * vy)
            new = (nvx, nvy, x + DT * nvx, y + DT * nvy, t + DT)
            old = (vx, vy, x, y, t)
            return tuple(np.where(done, o, n) for o, n in zip(old, new)) + (done,)

        zero = np.zeros_like(v0)
        s = (v0 * np.cos(angle), v0 * np.sin(angle), zero, zero, zero, False)
        s = jax.lax.fori_loop(0, @N@, body, s)
        return s[2] * {c}
"""

_IMPLICIT = """
    def f(v0, angle, drag):
        vx = v0 * np.cos(angle)
        vy = v0 * np.sin(angle)
        x = 0.0
        for _ in range(5):
            w = vx
            err = 1.0
            while err > 1e-12:
                r = w - vx + 0.05 * drag * w * np.abs(w)
                w = w - r / (1.0 + 0.1 * drag * np.abs(w))
                err = np.abs(r)
            vx = w
            x = x + 0.05 * vx
        return (x + vy) * {c}
"""

_IMPLICIT_MASKED = """
    import jax

    def f(v0, angle, drag):
        vx = v0 * np.cos(angle)
        vy = v0 * np.sin(angle)
        x = 0.0
        for _ in range(5):
            def body(i, s, vx=vx):
                w, err, done = s
                done = done | ~(err > 1e-12)
                r = w - vx + 0.05 * drag * w * np.abs(w)
                new_w = w - r / (1.0 + 0.1 * drag * np.abs(w))
                return np.where(done, w, new_w), np.where(done, err, np.abs(r)), done

            vx, _, _ = jax.lax.fori_loop(0, @N@, body, (vx, np.ones_like(vx), False))
            x = x + 0.05 * vx
        return (x + vy) * {c}
"""

WORKLOADS = {"projectile": (_PROJECTILE, _PROJECTILE_MASKED), "implicit": (_IMPLICIT, _IMPLICIT_MASKED)}


def steps_taken() -> int:
    v0, angle, drag = (float(a) for a in ARGS)
    vx, vy, y, t, n = v0 * np.cos(angle), v0 * np.sin(angle), 0.0, 0.0, 0
    while t < 10.0 and y >= 0.0:
        speed = np.sqrt(vx * vx + vy * vy)
        vx = vx - 0.01 * drag * speed * vx
        vy = vy - 0.01 * (9.81 + drag * speed * vy)
        y, t, n = y + 0.01 * vy, t + 0.01, n + 1
    return n


def _grads(r: Any) -> list[np.ndarray]:
    return [np.asarray(g) for g in r]


def first_srcjax(f: Callable[..., Any], n: int) -> list[np.ndarray]:
    return _grads(srcjax.grad(f, argnums=ARGNUMS, max_iters=n)(*ARGS))


def first_jax(f: Callable[..., Any]) -> list[np.ndarray]:
    return _grads(jax.jit(jax.grad(f, argnums=ARGNUMS))(*ARGS))


def steady_us(f: Callable[..., Any], reps: int) -> float:
    _grads(f(*ARGS))
    return statistics.median(_timed(lambda: _grads(f(*ARGS)))[0] for _ in range(reps)) * 1e3


def row(name: str, n: int, fresh: FreshFunctions, reps: int, steady_reps: int) -> dict[str, Any]:
    plain, kind = name, f"{name}_masked{n}"
    fresh.templates[kind] = WORKLOADS[name][1].replace("@N@", str(n))
    med = statistics.median
    sj_first, jx_first, src, spec, comp = [], [], [], [], []
    lines = 0
    for _ in range(reps):
        f, _ = fresh.make(plain)
        sj_first.append(_timed(first_srcjax, f, n)[0])
        f, _ = fresh.make(plain)
        ms, g = _timed(functools.partial(srcjax.grad, f, ARGNUMS, max_iters=n))
        src.append(ms)
        ms, low = _timed(srcjax.lower, g, *ARGS)
        spec.append(ms)
        comp.append(_timed(low.compile)[0])
        lines = low.as_text().count("\n")
        _, fm = fresh.make(kind)
        jx_first.append(_timed(first_jax, fm)[0])
    f, _ = fresh.make(plain)
    c_f = float(f"1.{fresh.n:06d}")  # each fresh function scales its result by its own constant
    _, fm = fresh.make(kind)
    c_m = float(f"1.{fresh.n:06d}")
    g = srcjax.grad(f, argnums=ARGNUMS, max_iters=n)
    h = jax.jit(jax.grad(fm, argnums=ARGNUMS))
    for a, b in zip(_grads(g(*ARGS)), _grads(h(*ARGS))):
        np.testing.assert_allclose(a / c_f, b / c_m, rtol=1e-9, atol=1e-12,
                                   err_msg=f"{name}, max_iters={n}: srcjax vs jax")
    return {"n": n, "sj": med(sj_first), "src": med(src), "spec": med(spec), "comp": med(comp), "lines": lines,
            "jx": med(jx_first), "sj_us": steady_us(g, steady_reps), "jx_us": steady_us(h, steady_reps)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="N = 25 and 400, one repetition (smoke run)")
    ap.add_argument("--reps", type=int, default=3, help="first calls per N (median)")
    ap.add_argument("--n", type=int, nargs="*", help="the bounds to time (default 25 50 100 200 400 800)")
    ap.add_argument("--workload", choices=list(WORKLOADS), nargs="*", help="default: both")
    ns = ap.parse_args(argv)
    bounds = ns.n or ([25, 400] if ns.quick else [25, 50, 100, 200, 400, 800])
    reps = 1 if ns.quick else ns.reps
    print(environment())
    print(f"grad w.r.t. (v0, angle, drag); jax: jit(grad(fori_loop(0, N) masked)); first call in ms (median of "
          f"{reps}), steady state in us; projectile: {steps_taken()} steps\n")
    fresh = FreshFunctions({k: v[0] for k, v in WORKLOADS.items()}, prefix="srcjax_bench_bounded_")
    try:
        # process-wide one-time setup (PJRT clients, imports), excluded
        f, _ = fresh.make("projectile")
        first_srcjax(f, 5)
        fresh.templates["warm"] = _PROJECTILE_MASKED.replace("@N@", "5")
        _, fm = fresh.make("warm")
        first_jax(fm)
        for name in ns.workload or list(WORKLOADS):
            print(f"{name}:\n")
            print("| N | srcjax first | write source | specialize | XLA compile | HLO lines | jax first "
                  "| srcjax/jax | srcjax us | jax us |")
            print("|---|---|---|---|---|---|---|---|---|---|")
            for n in bounds:
                r = row(name, n, fresh, reps, 5 if ns.quick else 51)
                print(f"| {r['n']} | {r['sj']:,.0f} | {r['src']:,.0f} | {r['spec']:,.0f} | {r['comp']:,.0f} "
                      f"| {r['lines']} | {r['jx']:,.0f} | {r['sj'] / r['jx']:.2f} | {r['sj_us']:,.0f} "
                      f"| {r['jx_us']:,.0f} |", flush=True)
            print()
    finally:
        fresh.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
