"""Control flow on array data: srcjax vs jax.jit (lax loops) vs NumPy, steady state, first call, grad.

Run (from the repository root, in the venv that has the test extras, since
``jax`` is the oracle here; srcjax itself never imports it)::

    .venv/bin/python benchmarks/bench_control.py            # full run, ~45 s (2 quiet cores)
    .venv/bin/python benchmarks/bench_control.py --quick    # CI smoke run, ~30 s (mostly compiles)

srcjax is given *plain Python* loops (``for _ in range(1000):``, ``if ...: break``,
``while np.max(...) > tol:``) and rewrites them into ``srcjax.lax`` calls that
lower to one ``stablehlo.while`` (see ``srcjax.source``). jax is given the
equivalent hand-written ``jax.lax.fori_loop`` / ``jax.lax.while_loop``
program (the idiomatic way to write these for ``jax.jit``), and, in the first-call
table, also the plain Python loop, which ``jax.jit`` unrolls while tracing (or
cannot trace at all when the loop condition depends on data). NumPy runs the
plain Python function. Methodology as in ``bench_foundation.py`` (whose
helpers are reused): medians of batches, srcjax and jax interleaved batch by
batch, NumPy timed on its own just before, the garbage collector off inside
timed batches, every call forced.

Workloads
---------
* ``simulate``  ``x = x0; for _ in range(1000): x = x + dt * np.tanh(v * x)``;
  returns ``np.sum(x)``. ``x0``, ``v``: float32[1000] (``x0`` uniform in
  [0, 1), ``v`` in [0.5, 1.5)), ``dt = 0.02`` a Python float (weakly typed:
  everything stays float32 in all three).
* ``simulate+break``  the same loop with ``if np.max(x) > 10.0: break`` after
  the update (with these inputs it breaks after a bit under half the steps;
  the step is printed). jax: ``lax.while_loop`` over ``(x, i, stop)``.
* ``newton sqrt``  ``x = a; while np.max(np.abs(x * x - a)) > 1e-10:
  x = 0.5 * (x + a / x)`` on float64[1e5] (``a`` uniform in [0.01, 100)), so
  the tolerance is reachable. jax: ``lax.while_loop``. float64 needs jax's
  ``jax_enable_x64``, a process-wide switch turned on at start; the float32
  workloads are checked to stay float32 in all three.

Tables
------
1. Steady state: median microseconds per call; modes ``np->np`` (NumPy inputs,
   result read back) and ``dev->dev`` (inputs already on the device, result
   left there). ``srcjax/jax`` and ``srcjax/numpy``: below 1 srcjax is faster.
2. First call of a fresh function (a new module file with a unique constant, as
   ``FreshFunctions`` makes them): ``srcjax.compile(plain loop)`` vs
   ``jax.jit(lax loop)`` vs ``jax.jit(plain loop)``, NumPy inputs, result read
   back (``jax plain``: one fresh function only, it takes seconds). The
   breakdown rows time srcjax's stages (read + normalize, specialize ->
   StableHLO, XLA compile) and jax's (trace, lower, compile) for the lax
   version. Then the ``simulate`` first call at 10 and 10,000 steps: srcjax's
   cost should not depend on the step count (one ``stablehlo.while``; the
   StableHLO line count is printed), jax's plain loop grows linearly.
3. Gradient of ``simulate`` w.r.t. ``(x0, v)`` at 100 and 1,000 steps:
   ``srcjax.grad(simulate, argnums=(0, 1))`` (plain loop) vs
   ``jax.jit(jax.grad(fori_loop version))``; first call (total and stages) and
   steady state; at 100 steps also ``jax.jit(jax.grad(plain loop))`` (jax
   unrolls it), once. Each step count runs in a child process with a time
   limit (``--grad-timeout``, default 90 s, including the child's start-up:
   imports, PJRT clients, warm-up) so that a slow derivative cannot hang the
   benchmark: what finished is printed, the rest is marked as timed out.
   ``--grad-steps`` chooses the step counts (``--grad-steps 100`` skips 1,000).
   Before timing, srcjax's and jax's gradients are asserted to agree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import srcjax

try:
    import jax
    from jax import lax
except ImportError:  # pragma: no cover - jax is a test/benchmark-only dependency
    sys.exit("bench_control.py needs jax (pip install -e '.[test]'): it is the comparison oracle")

from bench_foundation import (  # same directory as this script
    FreshFunctions,
    _timed,
    as_jax,
    environment,
    fmt_us,
    measure,
)

# float64 for Newton. Process-wide: set once, before any jax array exists.
jax.config.update("jax_enable_x64", True)

DT = 0.02
NEWTON_TOL = 1e-10


# ----------------------------------------------------------------------------------------------
# Workloads: plain Python loops (srcjax, NumPy) and their lax versions (jax; ``np`` is bound to
# ``jax.numpy`` by ``as_jax``).
# ----------------------------------------------------------------------------------------------


def simulate(x0, v, dt):
    x = x0
    for _ in range(1000):
        x = x + dt * np.tanh(v * x)
    return np.sum(x)


def simulate_break(x0, v, dt):
    x = x0
    for _ in range(1000):
        x = x + dt * np.tanh(v * x)
        if np.max(x) > 10.0:
            break
    return np.sum(x)


def newton_sqrt(a):
    x = a
    while np.max(np.abs(x * x - a)) > 1e-10:
        x = 0.5 * (x + a / x)
    return x


def simulate_fori(x0, v, dt):
    def body(i, x):
        return x + dt * np.tanh(v * x)

    return np.sum(lax.fori_loop(0, 1000, body, x0))


def simulate_break_while(x0, v, dt):
    def cond(carry):
        x, i, stop = carry
        return (i < 1000) & ~stop

    def body(carry):
        x, i, stop = carry
        x = x + dt * np.tanh(v * x)
        return x, i + 1, np.max(x) > 10.0

    x, _, _ = lax.while_loop(cond, body, (x0, 0, False))
    return np.sum(x)


def newton_sqrt_while(a):
    def cond(x):
        return np.max(np.abs(x * x - a)) > 1e-10

    def body(x):
        return 0.5 * (x + a / x)

    return lax.while_loop(cond, body, a)



def sim_args(rng: np.random.Generator) -> tuple[Any, ...]:
    x0 = rng.uniform(0.0, 1.0, 1000).astype(np.float32)
    v = rng.uniform(0.5, 1.5, 1000).astype(np.float32)
    return x0, v, DT


def newton_args(rng: np.random.Generator) -> tuple[Any, ...]:
    return (rng.uniform(0.01, 100.0, 100_000),)


def break_step(x0: np.ndarray, v: np.ndarray, dt: float) -> int:
    x = x0
    for i in range(1000):
        x = x + dt * np.tanh(v * x)
        if np.max(x) > 10.0:
            return i
    return 1000


def newton_iterations(a: np.ndarray) -> int:
    x, n = a, 0
    while np.max(np.abs(x * x - a)) > NEWTON_TOL:
        x, n = 0.5 * (x + a / x), n + 1
    return n


Workload = tuple[str, Callable[..., Any], Callable[..., Any], tuple[Any, ...], float]
SteadyRow = tuple[str, str, float, float, float]


def workloads(rng: np.random.Generator) -> list[Workload]:
    """(name, plain function, lax version, arguments, rtol of the three-way check)."""
    return [
        ("simulate 1000 f32[1000]", simulate, simulate_fori, sim_args(rng), 1e-4),
        ("simulate+break f32[1000]", simulate_break, simulate_break_while, sim_args(rng), 1e-4),
        ("newton sqrt f64[1e5]", newton_sqrt, newton_sqrt_while, newton_args(rng), 1e-12),
    ]


# ----------------------------------------------------------------------------------------------
# 1. Steady state
# ----------------------------------------------------------------------------------------------


def check_agree(name: str, s: Any, j: Any, n: Any, rtol: float) -> None:
    s, j, n = np.asarray(s), np.asarray(j), np.asarray(n)
    assert s.shape == j.shape == n.shape and s.dtype == j.dtype == n.dtype, (name, s.dtype, j.dtype, n.dtype)
    np.testing.assert_allclose(s, n, rtol=rtol, err_msg=f"{name}: srcjax vs numpy")
    np.testing.assert_allclose(j, n, rtol=rtol, err_msg=f"{name}: jax vs numpy")


def steady_state_one(name: str, fn: Callable[..., Any], fn_lax: Callable[..., Any], args: tuple[Any, ...],
                     rtol: float, sj_put: Any, rounds: int, batch_ns: float) -> list[SteadyRow]:
    sj = srcjax.compile(fn)
    jx = jax.jit(as_jax(fn_lax))
    check_agree(name, sj(*args), jx(*args), fn(*args), rtol)
    sj_dev = tuple(sj_put(a) if isinstance(a, np.ndarray) else a for a in args)
    jx_dev = tuple(jax.device_put(a) if isinstance(a, np.ndarray) else a for a in args)
    # NumPy on its own, not interleaved with XLA (see bench_foundation)
    numpy_us = measure({"numpy": lambda: fn(*args)}, rounds, batch_ns)["numpy"]
    modes: list[tuple[str, dict[str, Callable[[], Any]]]] = [
        ("np->np", {"srcjax": lambda: np.asarray(sj(*args)), "jax": lambda: np.asarray(jx(*args))}),
        ("dev->dev", {"srcjax": lambda: sj(*sj_dev).block_until_ready(),
                      "jax": lambda: jx(*jx_dev).block_until_ready()}),
    ]
    rows = []
    for mode, fns in modes:
        r = measure(fns, rounds, batch_ns)
        rows.append((name, mode, r["srcjax"], r["jax"], numpy_us))
    return rows


def steady_state(rounds: int, batch_ns: float) -> list[SteadyRow]:
    sj_put = srcjax.device_put
    rows = []
    for name, fn, fn_lax, args, rtol in workloads(np.random.default_rng(0)):
        rows += steady_state_one(name, fn, fn_lax, args, rtol, sj_put, rounds, batch_ns)
    return rows


# ----------------------------------------------------------------------------------------------
# 2. First call
# ----------------------------------------------------------------------------------------------

_SIM_PLAIN = """
    def f(x0, v, dt):
        x = x0
        for _ in range(@N@):
            x = x + dt * np.tanh(v * x)
        return np.sum(x) + {c}
"""
_SIM_FORI = """
    from jax import lax

    def f(x0, v, dt):
        def body(i, x):
            return x + dt * np.tanh(v * x)

        return np.sum(lax.fori_loop(0, @N@, body, x0)) + {c}
"""
_TEMPLATES = {
    "sim_break": """
        def f(x0, v, dt):
            x = x0
            for _ in range(1000):
                x = x + dt * np.tanh(v * x)
                if np.max(x) > 10.0:
                    break
            return np.sum(x) + {c}
    """,
    "sim_break_lax": """
        from jax import lax

        def f(x0, v, dt):
            def cond(carry):
                x, i, stop = carry
                return (i < 1000) & ~stop

            def body(carry):
                x, i, stop = carry
                x = x + dt * np.tanh(v * x)
                return x, i + 1, np.max(x) > 10.0

            x, _, _ = lax.while_loop(cond, body, (x0, 0, False))
            return np.sum(x) + {c}
    """,
    "newton": """
        def f(a):
            x = a
            while np.max(np.abs(x * x - a)) > 1e-10:
                x = 0.5 * (x + a / x)
            return x * {c}
    """,
    "newton_lax": """
        from jax import lax

        def f(a):
            def cond(x):
                return np.max(np.abs(x * x - a)) > 1e-10

            def body(x):
                return 0.5 * (x + a / x)

            return lax.while_loop(cond, body, a) * {c}
    """,
}
for _n in (10, 100, 1000, 10_000):
    _TEMPLATES[f"sim{_n}"] = _SIM_PLAIN.replace("@N@", str(_n))
    _TEMPLATES[f"sim{_n}_lax"] = _SIM_FORI.replace("@N@", str(_n))


def _first_sj(f: Callable[..., Any], args: tuple[Any, ...]) -> np.ndarray:
    return np.asarray(srcjax.compile(f)(*args))


def _first_jx(f: Callable[..., Any], args: tuple[Any, ...]) -> np.ndarray:
    return np.asarray(jax.jit(f)(*args))


def _try_first_jx(f: Callable[..., Any], args: tuple[Any, ...]) -> tuple[float, str]:
    """(ms, '') of jax.jit's first call, or (nan, error class name) when jax cannot trace it."""
    try:
        return _timed(_first_jx, f, args)[0], ""
    except Exception as e:  # jax's tracer errors are the point of the row
        return float("nan"), type(e).__name__


FirstRow = tuple[str, str, float, float, float, str]


def first_call_one(kind: str, args: tuple[Any, ...], fresh: FreshFunctions, reps: int,
                   plain_jax: bool, stages: bool = True) -> list[FirstRow]:
    tot_s, tot_j, tot_p = [], [], []
    err = ""
    st_s: dict[str, list[float]] = {"read + normalize": [], "specialize -> StableHLO": [], "XLA compile": []}
    st_j: dict[str, list[float]] = {"trace": [], "lower -> StableHLO": [], "XLA compile": []}
    for rep in range(reps):
        f, _ = fresh.make(kind)
        tot_s.append(_timed(_first_sj, f, args)[0])
        _, fj = fresh.make(kind + "_lax")
        tot_j.append(_timed(_first_jx, fj, args)[0])
        if plain_jax and rep == 0:  # once: jax unrolling 1000 steps takes seconds
            _, fp = fresh.make(kind)
            ms, err = _try_first_jx(fp, args)
            tot_p.append(ms)
        if stages:
            f, _ = fresh.make(kind)
            c = srcjax.compile(f)
            st_s["read + normalize"].append(_timed(getattr, c, "program")[0])
            ms, low = _timed(c.lower, *args)
            st_s["specialize -> StableHLO"].append(ms)
            st_s["XLA compile"].append(_timed(low.compile)[0])
            _, fj = fresh.make(kind + "_lax")
            ms, traced = _timed(jax.jit(fj).trace, *args)
            st_j["trace"].append(ms)
            ms, lowered = _timed(traced.lower)
            st_j["lower -> StableHLO"].append(ms)
            st_j["XLA compile"].append(_timed(lowered.compile)[0])
    med = statistics.median
    nan = float("nan")
    rows = [(kind, "total first call", med(tot_s), med(tot_j), med(tot_p) if tot_p else nan, err)]
    if stages:
        for (ks, vs), (kj, vj) in zip(st_s.items(), st_j.items()):
            rows.append((kind, f"  srcjax: {ks} / jax lax: {kj}", med(vs), med(vj), nan, ""))
    return rows


def hlo_lines(kind: str, args: tuple[Any, ...], fresh: FreshFunctions) -> tuple[int, int]:
    """(StableHLO lines, stablehlo.while count) of srcjax's lowering of a fresh ``kind`` function."""
    f, _ = fresh.make(kind)
    text = srcjax.lower(f, *args).as_text()
    return len(text.splitlines()), text.count("stablehlo.while")


def first_call(reps: int) -> tuple[list[FirstRow], list[str]]:
    sargs = sim_args(np.random.default_rng(1))
    nargs = newton_args(np.random.default_rng(1))
    fresh = FreshFunctions(_TEMPLATES, prefix="srcjax_bench_control_")
    rows: list[FirstRow] = []
    notes = []
    try:
        # Process-wide one-time setup, excluded: PJRT clients, lazy imports, jax's tracing machinery.
        for kind, args in (("sim10", sargs), ("sim_break", sargs), ("newton", nargs)):
            f, _ = fresh.make(kind)
            _first_sj(f, args)
            _, fj = fresh.make(kind + "_lax")
            _first_jx(fj, args)
        _, fp = fresh.make("sim10")
        _first_jx(fp, sargs)
        rows += first_call_one("sim1000", sargs, fresh, reps, plain_jax=True)
        rows += first_call_one("sim_break", sargs, fresh, reps, plain_jax=True)
        rows += first_call_one("newton", nargs, fresh, reps, plain_jax=True)
        # step scaling: srcjax and jax lax should be flat; jax's plain loop is unrolled (10 steps only:
        # 10,000 would take ~10x the 1000-step row)
        for n in (10, 10_000):
            rows += first_call_one(f"sim{n}", sargs, fresh, reps, plain_jax=(n == 10), stages=False)
        totals = {k: s for k, stage, s, _, _, _ in rows if stage == "total first call"}
        lines = {n: hlo_lines(f"sim{n}", sargs, fresh) for n in (10, 1000, 10_000)}
        notes.append("srcjax first call, 10,000 steps / 10 steps: "
                     f"{totals['sim10000'] / totals['sim10']:.2f} (flat if ~1); StableHLO of srcjax's lowering: "
                     + ", ".join(f"{n:,} steps {ln} lines / {w} stablehlo.while" for n, (ln, w) in lines.items()))
    finally:
        fresh.close()
    return rows, notes


# ----------------------------------------------------------------------------------------------
# 3. Gradient (each step count in a child process, under a time limit)
# ----------------------------------------------------------------------------------------------


def _emit(kind: str, **row: Any) -> None:
    print("ROW " + json.dumps({"kind": kind, **row}), flush=True)


def grad_child(n: int, rounds: int, batch_ns: float, reps: int) -> int:
    """Runs in a child process: prints ``ROW {json}`` lines as results come in."""
    args = sim_args(np.random.default_rng(2))
    fresh = FreshFunctions(_TEMPLATES, prefix="srcjax_bench_control_grad_")
    argnums = (0, 1)
    plain_jax = n <= 100  # jax unrolls a plain loop: 1000 steps of grad take seconds to trace

    def sj_first(f: Callable[..., Any]) -> tuple[np.ndarray, ...]:
        return tuple(np.asarray(g) for g in srcjax.grad(f, argnums=argnums)(*args))

    def jx_first(f: Callable[..., Any]) -> tuple[np.ndarray, ...]:
        return tuple(np.asarray(g) for g in jax.jit(jax.grad(f, argnums=argnums))(*args))

    try:
        # Process-wide one-time setup, excluded (a 10-step gradient of each kind).
        f, _ = fresh.make("sim10")
        sj_first(f)
        _, fj = fresh.make("sim10_lax")
        jx_first(fj)
        _, fp = fresh.make("sim10")
        jx_first(fp)
        kind = f"sim{n}"
        if kind not in _TEMPLATES:
            _TEMPLATES[kind] = _SIM_PLAIN.replace("@N@", str(n))
            _TEMPLATES[kind + "_lax"] = _SIM_FORI.replace("@N@", str(n))
        # jax first (so its numbers survive a srcjax timeout), then srcjax
        tj, tp, ts = [], [], []
        st_j: dict[str, list[float]] = {"trace": [], "lower -> StableHLO": [], "XLA compile": []}
        for _ in range(reps):
            _, fj = fresh.make(kind + "_lax")
            tj.append(_timed(jx_first, fj)[0])
            _, fj = fresh.make(kind + "_lax")
            ms, traced = _timed(jax.jit(jax.grad(fj, argnums=argnums)).trace, *args)
            st_j["trace"].append(ms)
            ms, lowered = _timed(traced.lower)
            st_j["lower -> StableHLO"].append(ms)
            st_j["XLA compile"].append(_timed(lowered.compile)[0])
            if plain_jax and not tp:  # once
                _, fp = fresh.make(kind)
                tp.append(_timed(jx_first, fp)[0])
        med = statistics.median
        _emit("first_jax", total=med(tj), plain=med(tp) if tp else None, stages={k: med(v) for k, v in st_j.items()})
        st_s: dict[str, list[float]] = {"grad (write derivative source)": [], "specialize -> StableHLO": [],
                                        "XLA compile": []}
        for _ in range(reps):
            f, _ = fresh.make(kind)
            ts.append(_timed(sj_first, f)[0])
            _emit("first_sj_one", ms=ts[-1])
            f, _ = fresh.make(kind)
            ms, g = _timed(srcjax.grad, f, argnums)
            st_s["grad (write derivative source)"].append(ms)
            ms, low = _timed(srcjax.lower, g, *args)
            st_s["specialize -> StableHLO"].append(ms)
            st_s["XLA compile"].append(_timed(low.compile)[0])
        _emit("first_sj", total=med(ts), stages={k: med(v) for k, v in st_s.items()})

        # steady state
        fn, _ = fresh.make(kind)
        _, fn_lax = fresh.make(kind + "_lax")
        sj = srcjax.grad(fn, argnums=argnums)
        jx = jax.jit(jax.grad(fn_lax, argnums=argnums))
        gs, gj = sj(*args), jx(*args)
        for a, b in zip(gs, gj):
            a, b = np.asarray(a), np.asarray(b)
            assert a.dtype == b.dtype == np.float32 and a.shape == b.shape, (a.dtype, b.dtype)
            np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3 * float(np.max(np.abs(b))),
                                       err_msg=f"grad {n} steps: srcjax vs jax")
        sj_put = srcjax.device_put
        sj_dev = (sj_put(args[0]), sj_put(args[1]), args[2])
        jx_dev = (jax.device_put(args[0]), jax.device_put(args[1]), args[2])
        modes: list[tuple[str, dict[str, Callable[[], Any]]]] = [
            ("np->np", {"srcjax": lambda: [np.asarray(g) for g in sj(*args)],
                        "jax": lambda: [np.asarray(g) for g in jx(*args)]}),
            ("dev->dev", {"srcjax": lambda: [g.block_until_ready() for g in sj(*sj_dev)],
                          "jax": lambda: [g.block_until_ready() for g in jx(*jx_dev)]}),
        ]
        for mode, fns in modes:
            r = measure(fns, rounds, batch_ns)
            _emit("steady", mode=mode, sj=r["srcjax"], jax=r["jax"])
    finally:
        fresh.close()
    return 0


def grad_section(steps: list[int], rounds: int, batch_ns: float, reps: int, timeout: float) -> list[str]:
    out = []
    for n in steps:
        t0 = time.perf_counter()
        timed_out = False
        # the child's fresh-function modules go to a folder this process removes, even if the child is killed
        with tempfile.TemporaryDirectory(prefix="srcjax_bench_control_") as tmp:
            cmd = [sys.executable, os.path.abspath(__file__), "--_grad-child", str(n), "--rounds", str(rounds),
                   "--batch-ms", str(batch_ns / 1e6), "--first-reps", str(reps), "--_tmp", tmp]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
                stdout, rc, err = r.stdout, r.returncode, r.stderr
            except subprocess.TimeoutExpired as e:
                stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
                rc, err, timed_out = None, "", True
        wall = time.perf_counter() - t0
        rows = [json.loads(line[4:]) for line in stdout.splitlines() if line.startswith("ROW ")]
        by = {r["kind"]: r for r in rows if r["kind"] != "steady"}
        steady = [r for r in rows if r["kind"] == "steady"]
        name = f"grad {n} steps"
        sj_one = [r["ms"] for r in rows if r["kind"] == "first_sj_one"]
        fj, fs = by.get("first_jax"), by.get("first_sj")
        jt = fj["total"] if fj else float("nan")
        jp = fj["plain"] if fj and fj["plain"] is not None else float("nan")
        if fs:
            st = fs["total"]
        elif sj_one:
            st = statistics.median(sj_one)
        else:
            st = float("nan")
        out.append(f"| {name:<16} | {'total first call':<64} | {_ms(st):>10} | {_ms(jt):>10} | {_ms(jp):>10} "
                   f"| {_ratio(st, jt):>10} |")
        if fs and fj:
            for (ks, vs), (kj, vj) in zip(fs["stages"].items(), fj["stages"].items()):
                out.append(f"| {name:<16} | {'  srcjax: ' + ks + ' / jax: ' + kj:<64} | {_ms(vs):>10} "
                           f"| {_ms(vj):>10} | {'-':>10} | {_ratio(vs, vj):>10} |")
        for r in steady:
            out.append(f"| {name:<16} | {'steady state us per call, ' + r['mode']:<64} | {fmt_us(r['sj']):>10} "
                       f"| {fmt_us(r['jax']):>10} | {'-':>10} | {_ratio(r['sj'], r['jax']):>10} |")
        if timed_out:
            what = "srcjax first call" if fj and not sj_one else ("srcjax stages / steady state" if fj else "jax")
            out.append(f"| {name:<16} | TIMED OUT after {timeout:.0f} s (--grad-timeout) in {what}; rows above "
                       "are what finished")
        elif rc != 0:
            out.append(f"| {name:<16} | FAILED (exit {rc}, {wall:.1f} s): "
                       + " / ".join(err.strip().splitlines()[-3:]))
    return out


# ----------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------


def _ms(ms: float) -> str:
    return "-" if ms != ms else f"{ms:,.1f}"


def _ratio(a: float, b: float) -> str:
    return "-" if a != a or b != b else f"{a / b:.2f}"


def _load() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="few repetitions (CI smoke run, not for numbers)")
    ap.add_argument("--rounds", type=int, default=None, help="timed batches per cell (default 21, quick 5)")
    ap.add_argument("--batch-ms", type=float, default=None, help="target batch length (default 5, quick 1)")
    ap.add_argument("--first-reps", type=int, default=None, help="fresh functions per first-call row "
                    "(default 3, quick 1)")
    ap.add_argument("--skip-first-call", action="store_true")
    ap.add_argument("--grad-steps", default="100,1000", help="comma-separated step counts for the gradient "
                    "section ('' skips it; default 100,1000)")
    ap.add_argument("--grad-timeout", type=float, default=90.0, help="seconds per gradient step count "
                    "(child process; default 90)")
    ap.add_argument("--_grad-child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--_tmp", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    rounds = a.rounds or (5 if a.quick else 21)
    batch_ns = (a.batch_ms or (1.0 if a.quick else 5.0)) * 1e6
    first_reps = a.first_reps or (1 if a.quick else 3)
    if a._grad_child is not None:
        tempfile.tempdir = a._tmp
        return grad_child(a._grad_child, rounds, batch_ns, first_reps)

    print("srcjax control-flow benchmark" + (" (--quick: few repetitions, numbers are rough)" if a.quick else ""))
    print(environment())
    wl = {name.split()[0]: args for name, _, _, args, _ in workloads(np.random.default_rng(0))}
    print(f"simulate: float32[1000], dt={DT} (a Python float); simulate+break breaks at step "
          f"{break_step(*wl['simulate+break'])} of 1000; newton sqrt: float64[1e5], "
          f"{newton_iterations(*wl['newton'])} iterations to max|x*x-a| <= {NEWTON_TOL:g}")
    t0 = time.perf_counter()

    rows = steady_state(rounds, batch_ns)
    print(f"\n1. Steady state: median us per call over {rounds} interleaved batches of ~{batch_ns / 1e6:g} ms "
          "(srcjax: plain Python loop; jax.jit: lax.fori_loop / lax.while_loop; numpy: plain Python loop)")
    print(f"| {'workload':<24} | {'mode':<8} | {'srcjax us':>10} | {'jax.jit us':>10} | {'numpy us':>10} "
          f"| {'srcjax/jax':>10} | {'srcjax/numpy':>12} |")
    print(f"|{'-' * 26}|{'-' * 10}|{'-' * 12}|{'-' * 12}|{'-' * 12}|{'-' * 12}|{'-' * 14}|")
    for name, mode, s, j, n in rows:
        print(f"| {name:<24} | {mode:<8} | {fmt_us(s):>10} | {fmt_us(j):>10} | {fmt_us(n):>10} "
              f"| {s / j:>10.2f} | {s / n:>12.2f} |")

    if not a.skip_first_call:
        frows, notes = first_call(first_reps)
        print(f"\n2. First call of a fresh function (NumPy inputs, result read back): median ms over {first_reps} "
              "fresh functions\n   srcjax: compile(plain loop); jax lax: jit(lax.fori_loop / while_loop); "
              "jax plain: jit(plain Python loop), traced and unrolled by jax (one fresh function: it takes seconds)")
        print(f"| {'fn':<16} | {'stage':<64} | {'srcjax ms':>10} | {'jax lax ms':>10} | {'jax plain':>10} "
              f"| {'sj/jax lax':>10} | {'sj/jax plain':>12} |")
        print(f"|{'-' * 18}|{'-' * 66}|{'-' * 12}|{'-' * 12}|{'-' * 12}|{'-' * 12}|{'-' * 14}|")
        for kind, stage, s, j, p, err in frows:
            pcell = err[:10] if err else _ms(p)
            print(f"| {kind:<16} | {stage:<64} | {_ms(s):>10} | {_ms(j):>10} | {pcell:>10} "
                  f"| {_ratio(s, j):>10} | {_ratio(s, p):>12} |")
        errs = sorted({err for *_, err in frows if err})
        if errs:
            print("   jax plain: " + ", ".join(errs) + " = jax.jit cannot trace a Python if/while on array data")
        for note in notes:
            print("   " + note)

    steps = [int(s) for s in a.grad_steps.split(",") if s.strip()]
    if steps:
        print(f"\n3. Gradient of simulate w.r.t. (x0, v): srcjax.grad(plain loop) vs jax.jit(jax.grad(lax.fori_loop)); "
              f"first call median ms over {first_reps} fresh functions, steady state median us over {rounds} "
              f"interleaved batches;\n   each step count in a child process limited to {a.grad_timeout:.0f} s "
              "(--grad-timeout; --grad-steps 100 skips 1000); jax plain = jit(grad(plain loop)), 100 steps only")
        print(f"| {'fn':<16} | {'stage':<64} | {'srcjax':>10} | {'jax lax':>10} | {'jax plain':>10} "
              f"| {'srcjax/jax':>10} |")
        print(f"|{'-' * 18}|{'-' * 66}|{'-' * 12}|{'-' * 12}|{'-' * 12}|{'-' * 12}|")
        for line in grad_section(steps, rounds, batch_ns, first_reps, a.grad_timeout):
            print(line)

    print(f"\ndone in {time.perf_counter() - t0:.1f} s; load average at end: {_load()}")
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if hasattr(os, "getloadavg") and os.getloadavg()[0] > usable:
        print(f"WARNING: the machine was busy (1-min load average above its {usable} usable CPUs): "
              "other processes competed for the cores, so absolute times are inflated and noisy; the "
              "interleaved ratios are more robust but not immune. Rerun on a quiet machine before quoting numbers.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
