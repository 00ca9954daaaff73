"""Batched programs: srcjax.vmap (and the Jacobians written with it) vs jax.jit(jax.vmap(...)) vs NumPy.

    .venv/bin/python benchmarks/bench_vmap.py            # full sizes (issue #15), ~2-4 min
    .venv/bin/python benchmarks/bench_vmap.py --quick    # small sizes, few rounds (smoke run)
    .venv/bin/python benchmarks/bench_vmap.py --cold 3   # first calls only, each in a new process

srcjax writes a batched program as source (``srcjax.source(srcjax.vmap(f))``
shows it) and compiles it like any other; jax traces ``f`` under ``vmap``.
Cases (issue #15), each a plain NumPy-style function; the jax version is the
same code object with ``np`` bound to ``jax.numpy`` (``as_jax``), except the
Newton iteration, which jax writes with ``lax.while_loop``:

* ``per-example grads``  ``vmap(grad(loss), in_axes=(None, 0, 0))``: softmax
  cross-entropy of a 64-128-10 tanh MLP, parameters a tuple of four arrays,
  float32, one gradient per example of a batch of 256;
* ``jacrev``   of ``tanh(w @ x) * x``, f64[256] -> f64[256] (one batched VJP);
* ``hessian``  of the Rosenbrock function on f64[512] (jacfwd of grad: one
  batched JVP of the generated gradient);
* ``newton while``  ``vmap`` of ``x = 0.5 * (x + a / x)`` while
  ``|x*x - a| > 1e-12 a``, a ~ U(0.5, 1e4), batch 1024: per-example trip
  counts (srcjax's batched ``while`` freezes finished examples; jax's
  ``vmap`` of ``lax.while_loop`` selects likewise);
* ``nested vmap``  ``vmap(vmap(dist, in_axes=(None, 0)), in_axes=(0, None))``
  of a Euclidean distance on (512, 3) x (512, 3) -> (512, 512).

Columns. ``first ms``: one call of a function never called before in this
process, srcjax's persistent cache pointed at an empty directory (srcjax:
writing the batched source + specialize + XLA compile + run; jax: trace +
lower + compile + run), the result read back to NumPy; both
libraries are warmed up on an unrelated function first, so neither pays its
one-time start-up here. Steady state: median microseconds per call (NumPy
inputs, every result read back with ``np.asarray``), srcjax and jax measured
interleaved batch by batch with the garbage collector off inside a batch
(``bench_foundation.measure``). ``numpy us``: srcjax's generated batched
source run as plain NumPy (the compiled object's ``.fn``, no XLA), measured
on its own just before. ``sj/jax``: the ratios (above 1: srcjax slower).
Every result (srcjax compiled and the NumPy-run source) is checked against
jax's before timing. A case srcjax gets wrong or refuses prints
``FAILED: <reason>`` in its row and the script goes on.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

# The first-call column times a real first call: the functions here are the same on every run, so
# srcjax's persistent cache (~/.cache/srcjax) would answer them from the second run on (jax's is off).
# A fresh, empty cache directory per run: the stores still happen, nothing can hit.
# (--cold's processes share one directory holding only srcjax's own entries: see cold())
if "BENCH_VMAP_COLD_CACHE" in os.environ:
    os.environ["SRCJAX_CACHE_DIR"] = os.environ["BENCH_VMAP_COLD_CACHE"]
else:
    os.environ["SRCJAX_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench_vmap_cache_")

import srcjax  # noqa: E402

try:
    import jax
    import jax.numpy as jnp
    from jax import lax
except ImportError:  # pragma: no cover - jax is a test/benchmark-only dependency
    sys.exit("bench_vmap.py needs jax (pip install -e '.[test]'): it is the comparison oracle")

from bench_foundation import as_jax, environment, measure  # same directory as this script

jax.config.update("jax_enable_x64", True)  # float64 cases; the MLP stays float32 (checked)


# ----------------------------------------------------------------------------------------------
# Workloads
# ----------------------------------------------------------------------------------------------


def mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    z = logits - np.max(logits)
    logp = z - np.log(np.sum(np.exp(z)))
    return -np.sum(y * logp)


def layer(x, w):
    return np.tanh(w @ x) * x


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def newton_sqrt(a):
    x = a
    while np.abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


def jax_newton_sqrt(a):
    return lax.while_loop(lambda x: jnp.abs(x * x - a) > 1e-12 * a, lambda x: 0.5 * (x + a / x), a)


def dist(x, y):
    return np.sqrt(np.sum((x - y) ** 2))


def _warm(x):
    return np.sum(np.sin(x) * 2.0)


# ----------------------------------------------------------------------------------------------
# Measuring
# ----------------------------------------------------------------------------------------------


def _read(r: Any) -> Any:
    """Every array of a result as NumPy (read back from the device)."""
    if isinstance(r, (tuple, list)):
        return type(r)(_read(v) for v in r)
    if isinstance(r, dict):
        return {k: _read(v) for k, v in r.items()}
    return np.asarray(r)


def _leaves(r: Any) -> list[np.ndarray]:
    if isinstance(r, (tuple, list)):
        return [a for v in r for a in _leaves(v)]
    if isinstance(r, dict):
        return [a for k in sorted(r) for a in _leaves(r[k])]
    return [np.asarray(r)]


def _check(got: Any, want: Any, what: str, rtol: float, atol: float) -> None:
    g, w = _leaves(got), _leaves(want)
    assert len(g) == len(w), f"{what}: {len(g)} outputs, jax has {len(w)}"
    for i, (a, b) in enumerate(zip(g, w)):
        assert a.shape == b.shape, f"{what}: output {i} has shape {a.shape}, jax's {b.shape}"
        assert a.dtype == b.dtype, f"{what}: output {i} has dtype {a.dtype}, jax's {b.dtype}"
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"{what}: output {i}")


def first_ms(make: Callable[[], Callable[..., Any]], args: tuple[Any, ...]) -> tuple[float, Any, Callable[..., Any]]:
    """(milliseconds of making the function and its first call, read back; the result; the function)."""
    t = time.perf_counter()
    f = make()
    out = _read(f(*args))
    return (time.perf_counter() - t) * 1e3, out, f


class Case:
    def __init__(self, name: str, make_sj: Callable[[], Any], make_jax: Callable[[], Any], args: tuple[Any, ...],
                 rtol: float = 1e-9, atol: float = 1e-9) -> None:
        self.name, self.make_sj, self.make_jax, self.args = name, make_sj, make_jax, args
        self.rtol, self.atol = rtol, atol


def cases(quick: bool, rng: np.random.Generator) -> list[Case]:
    f32 = np.float32
    nb = 32 if quick else 256  # per-example gradients: batch
    n = 32 if quick else 256  # jacrev
    nr = 64 if quick else 512  # hessian
    nn = 128 if quick else 1024  # newton batch
    nd = 64 if quick else 512  # nested vmap: points per side
    params = ((rng.standard_normal((64, 128)) / 8).astype(f32), (rng.standard_normal(128) * 0.1).astype(f32),
              (rng.standard_normal((128, 10)) / 11).astype(f32), (rng.standard_normal(10) * 0.1).astype(f32))
    xb = rng.standard_normal((nb, 64)).astype(f32)
    yb = np.eye(10, dtype=f32)[rng.integers(0, 10, nb)]
    x, w = rng.standard_normal(n), rng.standard_normal((n, n)) / np.sqrt(n)
    xr = rng.standard_normal(nr)
    a = rng.uniform(0.5, 1e4, nn)
    p, q = rng.standard_normal((nd, 3)), rng.standard_normal((nd, 3))
    return [
        Case(f"per-example grads mlp 64-128-10 f32, batch {nb}",
             lambda: srcjax.vmap(srcjax.grad(mlp_loss), in_axes=(None, 0, 0)),
             lambda: jax.jit(jax.vmap(jax.grad(as_jax(mlp_loss)), in_axes=(None, 0, 0))),
             (params, xb, yb), rtol=2e-4, atol=2e-6),
        Case(f"jacrev tanh(w@x)*x f64[{n}]", lambda: srcjax.jacrev(layer),
             lambda: jax.jit(jax.jacrev(as_jax(layer))), (x, w)),
        Case(f"hessian rosenbrock f64[{nr}]", lambda: srcjax.hessian(rosen),
             lambda: jax.jit(jax.hessian(as_jax(rosen))), (xr,)),
        Case(f"newton sqrt while, batch {nn}", lambda: srcjax.vmap(newton_sqrt),
             lambda: jax.jit(jax.vmap(jax_newton_sqrt)), (a,)),
        Case(f"nested vmap dist ({nd},3)x({nd},3)",
             lambda: srcjax.vmap(srcjax.vmap(dist, in_axes=(None, 0)), in_axes=(0, None)),
             lambda: jax.jit(jax.vmap(jax.vmap(as_jax(dist), in_axes=(None, 0)), in_axes=(0, None))), (p, q)),
    ]


def _reason(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".splitlines()
    return text[0] if text else type(e).__name__


def run_case(c: Case, rounds: int, batch_ns: float) -> str:
    f_jx, ref, jx = first_ms(c.make_jax, c.args)
    try:
        f_sj, ours, sj = first_ms(c.make_sj, c.args)
        _check(ours, ref, f"{c.name}: srcjax vs jax", c.rtol, c.atol)
    except Exception as e:  # a failure of srcjax's: reported in the row, the script goes on
        traceback.print_exc(file=sys.stderr)
        return f"| {c.name} | FAILED: {_reason(e)} | {f_jx:,.0f} | | | | | |"
    plain = getattr(sj, "fn", None)  # the generated batched source, a plain Python function
    np_us: str = "-"
    if plain is not None:
        try:
            _check(_read(plain(*c.args)), ref, f"{c.name}: srcjax source run by NumPy vs jax", c.rtol, c.atol)
            np_us = f"{measure({'numpy': lambda: _read(plain(*c.args))}, max(3, rounds // 2), batch_ns)['numpy']:,.0f}"
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            np_us = f"FAILED: {_reason(e)}"
    r = measure({"srcjax": lambda: _read(sj(*c.args)), "jax": lambda: _read(jx(*c.args))}, rounds, batch_ns)
    s1, s2 = r["srcjax"], r["jax"]
    return (f"| {c.name} | {f_sj:,.0f} | {f_jx:,.0f} | {f_sj / f_jx:.2f} | {s1:,.0f} | {s2:,.0f} | {s1 / s2:.2f} "
            f"| {np_us} |")


def _warm_up(lib: str) -> None:
    """One-time start-up of ``lib`` (its backend, the compiler's first use), on an unrelated function."""
    warm = np.linspace(0.0, 1.0, 8)
    fs = ((srcjax.compile(_warm), srcjax.grad(_warm)) if lib == "srcjax"
          else (jax.jit(as_jax(_warm)), jax.jit(jax.grad(as_jax(_warm)))))
    for f in fs:
        _read(f(warm))


def child(index: int, lib: str, quick: bool) -> None:
    """(a fresh process) the first call of case ``index`` in ``lib``, milliseconds on stdout."""
    _warm_up(lib)
    c = cases(quick, np.random.default_rng(0))[index]
    ms, _, _ = first_ms(c.make_sj if lib == "srcjax" else c.make_jax, c.args)
    print(ms)


def cold(runs: int, quick: bool) -> None:
    """First calls, each in a new process (libraries alternating which goes first): in one process,
    the second library to compile a program gets XLA's in-process caches of the first (on a GPU its
    autotuning and kernels: measured on an H200, whichever compiles second takes 0.2-0.3x).
    srcjax's persistent cache holds what an installation that ran anything before holds (its own
    library helpers normalized, its helper executables), never the case's program: one process runs
    every case first, then the entries of programs (``*.xla``, ``*.prog``) are deleted before each
    measured process."""
    import glob
    import statistics
    import subprocess

    shared = tempfile.mkdtemp(prefix="bench_vmap_cold_")
    env = {**os.environ, "BENCH_VMAP_COLD_CACHE": shared}

    def forget_programs() -> None:
        for path in glob.glob(os.path.join(shared, "**", "*.xla"), recursive=True) + \
                glob.glob(os.path.join(shared, "**", "*.prog"), recursive=True):
            os.remove(path)

    n = len(cases(quick, np.random.default_rng(0)))
    for i in range(n):  # (srcjax's own entries, once)
        subprocess.run([sys.executable, os.path.abspath(__file__), "--child", str(i), "srcjax"]
                       + (["--quick"] if quick else []), capture_output=True, text=True, env=env)

    print(f"| case | sj cold first ms | jax cold first ms | cold first sj/jax |  (medians of {runs} processes each)")
    print("|---|---|---|---|")
    for i, c in enumerate(cases(quick, np.random.default_rng(0))):
        got: dict[str, list[float]] = {"srcjax": [], "jax": []}
        for r in range(runs):
            for lib in (("srcjax", "jax") if r % 2 == 0 else ("jax", "srcjax")):
                cmd = [sys.executable, os.path.abspath(__file__), "--child", str(i), lib]
                cmd += ["--quick"] if quick else []
                forget_programs()
                out = subprocess.run(cmd, capture_output=True, text=True, env=env)
                if out.returncode:
                    print(out.stderr[-2000:], file=sys.stderr)
                    got[lib].append(float("nan"))
                else:
                    got[lib].append(float(out.stdout.split()[-1]))
        s, j = statistics.median(got["srcjax"]), statistics.median(got["jax"])
        print(f"| {c.name} | {s:,.0f} | {j:,.0f} | {s / j:.2f} |", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few rounds (smoke run)")
    ap.add_argument("--cold", type=int, default=0, metavar="N",
                    help="instead: each first call in a new process, N per library (fair on a GPU)")
    ap.add_argument("--child", nargs=2, metavar=("CASE", "LIB"), help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.child:
        child(int(ns.child[0]), ns.child[1], ns.quick)
        return 0
    if ns.cold:
        print(environment())
        cold(ns.cold, ns.quick)
        return 0
    rounds = 5 if ns.quick else 15
    batch_ns = 10e6 if ns.quick else 40e6
    print(environment())
    print(f"srcjax device {srcjax.devices()[0]}, jax device {jax.devices()[0]}; "
          f"{'--quick sizes' if ns.quick else 'full sizes'}\n")
    _warm_up("srcjax")  # one-time start-up of both libraries, not charged to the first case
    _warm_up("jax")
    print("| case | sj first ms | jax first ms | first sj/jax | sj us | jax us | steady sj/jax | numpy us |")
    print("|---|---|---|---|---|---|---|---|")
    for c in cases(ns.quick, np.random.default_rng(0)):
        print(run_case(c, rounds, batch_ns), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
