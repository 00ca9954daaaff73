"""srcjax vs jax.jit vs NumPy: per-call time, dispatch overhead and first-call time.

Run (from the repository root, in the venv that has the test extras, since
``jax`` is the oracle here; srcjax itself never imports it)::

    .venv/bin/python benchmarks/bench_foundation.py            # full run, ~15-60 s
    .venv/bin/python benchmarks/bench_foundation.py --quick    # CI smoke run, a few seconds

How to read the output
----------------------
Table 1, "steady state": the same source function is run three ways,

* ``srcjax``  ``srcjax.compile(f)``,
* ``jax``     ``jax.jit`` of the *same code object* with ``np`` bound to ``jax.numpy``,
* ``numpy``   ``f`` itself,

after warm-up (compiled once, caches hot). Each cell is the median over many
batches of the time per call in microseconds; every call is forced
(``np.asarray`` or ``block_until_ready``), so asynchronous dispatch cannot hide
work. srcjax and jax are measured interleaved, batch by batch, so machine
noise hits them alike; NumPy is measured on its own just before (interleaving
OpenBLAS with XLA's thread pools on few cores distorts both). NumPy's time is
the same in every mode (it has no device). Modes:

* ``np->np``    NumPy inputs, result read back with ``np.asarray`` (what a script sees),
* ``np->dev``   NumPy inputs (uploaded on every call), result left on the device
                (``block_until_ready``),
* ``dev->dev``  inputs already on the device (srcjax ``Array`` outputs fed back,
                ``jax.device_put`` arrays for jax), result left on the device.

``srcjax/jax`` is the ratio of the two medians: below 1 srcjax is faster. For
the tiny function the cell is pure dispatch overhead (argument checks, cache
lookup, upload, execute, result wrapping); for the MLP and the elementwise
chain it is mostly XLA's kernel time, where both run the same compiler.

Table 2, "first call": a *fresh* function object (a new module file written
to a temporary directory, with a unique constant so that no cache anywhere can
hit) is called once with NumPy inputs and its result read back; for srcjax this
is read source + normalize + specialize/lower + XLA compile + upload + run, for
jax it is trace + lower + compile + run. Process-wide one-time setup (creating
the PJRT client, importing modules) is done before timing and excluded. The
breakdown rows time the stages separately on other fresh functions
(srcjax: ``Compiled(f).program``, ``.lower(*args)``, ``.compile()``; jax:
``jit(f).trace(*args)``, ``.lower()``, ``.compile()``).

Timings use ``time.perf_counter_ns``; the garbage collector is disabled inside
timed batches. The load average is printed before and after: on a shared or
busy machine the medians of the tiny function can move by 2x, the ratios much
less (they are measured interleaved), and NumPy's multithreaded BLAS (the
MLP row) can slow down 30x or more when other processes oversubscribe the
cores; the script prints a warning when the load average says so.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import platform
import statistics
import sys
import tempfile
import textwrap
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np

import srcjax

try:
    import jax
    import jax.numpy as jnp
    import jaxlib
except ImportError:  # pragma: no cover - jax is a test/benchmark-only dependency
    sys.exit("bench_foundation.py needs jax (pip install -e '.[test]'): it is the comparison oracle")

# Start jax's backend before srcjax's: on a GPU both use the CUDA PJRT plugin, which jax
# registers once (it refuses one srcjax registered first) and srcjax then shares.
jax.devices()
# srcjax lowers float32 matmuls at HIGHEST precision (full float32, what NumPy computes); jax's
# default on GPUs is TF32, which is faster and ~1e-3 off. Compare the same arithmetic.
jax.config.update("jax_default_matmul_precision", "highest")


# ----------------------------------------------------------------------------------------------
# Workloads. Each is plain NumPy-style source; the jax version is the same code object with
# ``np`` bound to ``jax.numpy`` (so all three run the identical program).
# ----------------------------------------------------------------------------------------------


def mlp(w1, b1, w2, b2, x):
    h = np.maximum(x @ w1 + b1, 0.0)
    return h @ w2 + b2


def chain10(x):
    y = x * 1.5  # 1
    y = y + 0.5  # 2
    y = np.sin(y)  # 3
    y = y * y  # 4
    y = np.exp(y)  # 5
    y = y - 0.5  # 6
    y = np.tanh(y)  # 7
    y = np.abs(y)  # 8
    y = np.sqrt(y)  # 9
    return y / 3.0  # 10


def tiny(x):
    return x * 2.0 + 1.0



def as_jax(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``'s code object with ``np`` bound to ``jax.numpy``."""
    g = dict(fn.__globals__)
    g["np"] = jnp
    return types.FunctionType(fn.__code__, g, fn.__name__ + "_jax")


def workloads(rng: np.random.Generator) -> list[tuple[str, Callable[..., Any], tuple[np.ndarray, ...]]]:
    f32 = np.float32
    w1 = (rng.standard_normal((784, 256)) * 0.05).astype(f32)
    b1 = (rng.standard_normal(256) * 0.1).astype(f32)
    w2 = (rng.standard_normal((256, 10)) * 0.05).astype(f32)
    b2 = (rng.standard_normal(10) * 0.1).astype(f32)
    x = rng.standard_normal((128, 784)).astype(f32)
    return [
        ("mlp 128x784-256-10 relu", mlp, (w1, b1, w2, b2, x)),
        ("chain10 f32[1e6]", chain10, (rng.standard_normal(1_000_000).astype(f32),)),
        ("tiny x*2+1 f32[]", tiny, (np.array(3.0, f32),)),
        ("tiny x*2+1 f32[3]", tiny, (np.arange(3, dtype=f32),)),
    ]


# ----------------------------------------------------------------------------------------------
# Timing
# ----------------------------------------------------------------------------------------------


def _batch_size(fn: Callable[[], Any], target_ns: float) -> int:
    t = time.perf_counter_ns()
    fn()
    one = max(time.perf_counter_ns() - t, 1)
    return max(1, min(10_000, int(target_ns // one)))


def measure(fns: dict[str, Callable[[], Any]], rounds: int, batch_ns: float,
            clock: Callable[[], int] = time.perf_counter_ns,
            stat: Callable[[list[float]], float] = statistics.median) -> dict[str, float]:
    """Median per-call microseconds of each zero-argument callable, measured interleaved; ``clock``
    (``time.thread_time_ns``: the calling thread's CPU time, what dispatch costs it) picks the clock,
    ``stat`` the statistic over the rounds (``min``: the least disturbed batch, on a loaded machine)."""
    for f in fns.values():  # warm-up
        for _ in range(3):
            f()
    ks = {name: _batch_size(f, batch_ns) for name, f in fns.items()}
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, f in fns.items():
            k = ks[name]
            gc.disable()
            t = clock()
            for _ in range(k):
                f()
            dt = clock() - t
            gc.enable()
            samples[name].append(dt / k / 1e3)
    return {name: stat(v) for name, v in samples.items()}


def at_offset(a: np.ndarray, offset: int, align: int = 64) -> np.ndarray:
    """A C-contiguous copy of the NumPy array ``a`` whose data starts ``offset`` bytes past an ``align``-byte
    boundary: ``at_offset(a, 0)`` is what XLA's CPU client reads in place (jax.jit aliases it: no copy), any
    other offset it copies (issue #18, round np49). NumPy's own allocation puts an array wherever ``malloc``
    does (16-byte aligned), which made jax's column of a NumPy-input row move between processes."""
    a = np.asarray(a)
    raw = np.empty(a.nbytes + 2 * align, np.uint8)
    start = (offset - raw.ctypes.data) % align
    out = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


ALIGNMENTS = {"a64": 0, "a16": 16}  # (NumPy input rows: data at an address % 64 of 0, aliased by jax; of 16, copied)


def check_agree(name: str, a: Any, b: Any, c: Any) -> None:
    a, b, c = np.asarray(a), np.asarray(b), np.asarray(c)
    assert a.shape == b.shape == c.shape and a.dtype == b.dtype == c.dtype, (name, a.dtype, b.dtype, c.dtype)
    np.testing.assert_allclose(a, c, rtol=2e-5, atol=2e-5, err_msg=f"{name}: srcjax vs numpy")
    np.testing.assert_allclose(b, c, rtol=2e-5, atol=2e-5, err_msg=f"{name}: jax vs numpy")


def steady_state_one(name: str, fn: Callable[..., Any], args: tuple[np.ndarray, ...], sj_put: Any,
                     rounds: int, batch_ns: float) -> list[tuple[str, str, float, float, float]]:
    sj = srcjax.compile(fn)
    jx = jax.jit(as_jax(fn))
    check_agree(name, sj(*args), jx(*args), fn(*args))
    sj_dev = tuple(sj_put(a) for a in args)
    jx_dev = tuple(jax.device_put(a) for a in args)
    assert all(isinstance(a, srcjax.Array) for a in sj_dev)
    # NumPy is timed on its own, not interleaved with XLA: on few cores, OpenBLAS's spinning
    # threads and XLA's thread pools slow each other down by up to 30x when alternated.
    numpy_us = measure({"numpy": lambda: fn(*args)}, rounds, batch_ns)["numpy"]
    modes: list[tuple[str, dict[str, Callable[[], Any]]]] = [
        ("np->np", {
            "srcjax": lambda: np.asarray(sj(*args)),
            "jax": lambda: np.asarray(jx(*args)),
        }),
        ("np->dev", {
            "srcjax": lambda: sj(*args).block_until_ready(),
            "jax": lambda: jx(*args).block_until_ready(),
        }),
        ("dev->dev", {
            "srcjax": lambda: sj(*sj_dev).block_until_ready(),
            "jax": lambda: jx(*jx_dev).block_until_ready(),
        }),
    ]
    rows = []
    for mode, fns in modes:
        r = measure(fns, rounds, batch_ns)
        rows.append((name, mode, r["srcjax"], r["jax"], numpy_us))
    return rows


def steady_state(rounds: int, batch_ns: float) -> list[tuple[str, str, float, float, float]]:
    sj_put = srcjax.device_put
    rows = []
    for name, fn, args in workloads(np.random.default_rng(0)):
        rows += steady_state_one(name, fn, args, sj_put, rounds, batch_ns)
    return rows


# ----------------------------------------------------------------------------------------------
# A new wrapper per call (issue #18)
# ----------------------------------------------------------------------------------------------

def loss_tiny(x):
    return np.sum(np.sin(x) * 2.0)


def vec_tiny(x):
    return np.sin(x) * 2.0


def new_wrappers(rounds: int, batch_ns: float) -> list[tuple[str, float, float]]:
    """``srcjax.jit(f)(x)`` written inside the loop (a new wrapper object per call, as JAX code often
    does) against ``jax.jit(f)(x)``, for each transformation: both reuse what the first call compiled."""
    x = np.linspace(0.1, 0.9, 8, dtype=np.float32)
    xs = np.linspace(0.1, 0.9, 32, dtype=np.float32).reshape(4, 8)
    lj, vj = as_jax(loss_tiny), as_jax(vec_tiny)
    cases: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
        ("jit(f)(x)", lambda: np.asarray(srcjax.jit(vec_tiny)(x)), lambda: np.asarray(jax.jit(vj)(x))),
        ("grad(f)(x)", lambda: np.asarray(srcjax.grad(loss_tiny)(x)), lambda: np.asarray(jax.grad(lj)(x))),
        ("jit(grad(f))(x)", lambda: np.asarray(srcjax.jit(srcjax.grad(loss_tiny))(x)),
         lambda: np.asarray(jax.jit(jax.grad(lj))(x))),
        ("vmap(f)(xs)", lambda: np.asarray(srcjax.vmap(vec_tiny)(xs)), lambda: np.asarray(jax.vmap(vj)(xs))),
        ("jacrev(f)(x)", lambda: np.asarray(srcjax.jacrev(vec_tiny)(x)), lambda: np.asarray(jax.jacrev(vj)(x))),
        ("hessian(f)(x)", lambda: np.asarray(srcjax.hessian(loss_tiny)(x)),
         lambda: np.asarray(jax.hessian(lj)(x))),
    ]
    rows = []
    for name, sj, jx in cases:
        check_agree(name, sj(), jx(), jx())
        r = measure({"srcjax": sj, "jax": jx}, rounds, batch_ns)
        rows.append((name, r["srcjax"], r["jax"]))
    return rows


# ----------------------------------------------------------------------------------------------
# First call
# ----------------------------------------------------------------------------------------------

_FIRST_TEMPLATES = {
    "tiny": """
        def f(x):
            return x * 2.0 + {c}
    """,
    "mlp": """
        def f(w1, b1, w2, b2, x):
            h = np.maximum(x @ w1 + b1, 0.0)
            return h @ w2 + b2 + {c}
    """,
}


class FreshFunctions:
    """Writes one new module per call, so every function object (and its code) is new."""

    def __init__(self, templates: dict[str, str] | None = None, prefix: str = "srcjax_bench_") -> None:
        self.templates = templates if templates is not None else _FIRST_TEMPLATES
        self.dir = tempfile.TemporaryDirectory(prefix=prefix)
        self.n = 0

    def make(self, kind: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """(numpy function, jax function) with the same body and a constant never used before."""
        self.n += 1
        c = f"1.{self.n:06d}"  # a unique constant: no executable cache can hit
        body = textwrap.dedent(self.templates[kind]).format(c=c)
        path = os.path.join(self.dir.name, f"bench_fresh_{kind}_{self.n}.py")
        with open(path, "w") as fh:
            fh.write("import numpy as np\n" + body)
        spec = importlib.util.spec_from_file_location(f"bench_fresh_{kind}_{self.n}", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.f, as_jax(mod.f)

    def close(self) -> None:
        self.dir.cleanup()


def _timed(fn: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """(milliseconds, result) of one call."""
    t = time.perf_counter_ns()
    out = fn(*args)
    return (time.perf_counter_ns() - t) / 1e6, out


def _first_srcjax(f: Callable[..., Any], args: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(srcjax.compile(f)(*args))


def _first_jax(f: Callable[..., Any], args: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(jax.jit(f)(*args))


def first_call_one(kind: str, args: tuple[np.ndarray, ...], fresh: FreshFunctions,
                   reps: int) -> list[tuple[str, str, float, float]]:
    tot_s, tot_j = [], []
    st_s: dict[str, list[float]] = {"read + normalize": [], "specialize -> StableHLO": [], "XLA compile": []}
    st_j: dict[str, list[float]] = {"trace": [], "lower -> StableHLO": [], "XLA compile": []}
    for _ in range(reps):
        # the whole first call
        f, fj = fresh.make(kind)
        tot_s.append(_timed(_first_srcjax, f, args)[0])
        tot_j.append(_timed(_first_jax, fj, args)[0])
        # stage by stage, on other fresh functions
        f, fj = fresh.make(kind)
        c = srcjax.compile(f)
        st_s["read + normalize"].append(_timed(getattr, c, "program")[0])
        ms, low = _timed(c.lower, *args)
        st_s["specialize -> StableHLO"].append(ms)
        st_s["XLA compile"].append(_timed(low.compile)[0])
        ms, traced = _timed(jax.jit(fj).trace, *args)
        st_j["trace"].append(ms)
        ms, lowered = _timed(traced.lower)
        st_j["lower -> StableHLO"].append(ms)
        st_j["XLA compile"].append(_timed(lowered.compile)[0])
    med = statistics.median
    rows = [(kind, "total first call", med(tot_s), med(tot_j))]
    for (ks, vs), (kj, vj) in zip(st_s.items(), st_j.items()):
        rows.append((kind, f"  srcjax: {ks} / jax: {kj}", med(vs), med(vj)))
    return rows


def first_call(reps: int) -> list[tuple[str, str, float, float]]:
    args_by_kind = {
        "tiny": (np.array(3.0, np.float32),),
        "mlp": workloads(np.random.default_rng(1))[0][2],
    }
    fresh = FreshFunctions()
    rows = []
    try:
        # Process-wide one-time setup, excluded: PJRT clients, lazy imports, jax's tracing machinery.
        for kind, args in args_by_kind.items():
            f, fj = fresh.make(kind)
            _first_srcjax(f, args)
            _first_jax(fj, args)
        for kind, args in args_by_kind.items():
            rows += first_call_one(kind, args, fresh, reps)
    finally:
        fresh.close()
    return rows


# ----------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------


def environment() -> str:
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        load = "?"
    from importlib.metadata import PackageNotFoundError, version

    try:
        libcst_version = version("libcst")
    except PackageNotFoundError:
        libcst_version = "?"
    return "\n".join([
        f"python {platform.python_version()} on {platform.system()} {platform.machine()}; CPU: {cpu}; "
        f"cpu_count={os.cpu_count()} usable={usable}; load average at start: {load}",
        f"srcjax {srcjax.__version__}, jax {jax.__version__}, jaxlib {jaxlib.__version__}, "
        f"numpy {np.__version__}, libcst {libcst_version}",
        f"srcjax device: {srcjax.devices()[0]}; jax device: {jax.devices()[0]}; "
        f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r} "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '')!r}",
    ])


def fmt_us(us: float) -> str:
    if us != us:  # nan
        return "-"
    return f"{us:,.1f}" if us < 1e4 else f"{us / 1e3:,.2f} ms"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="few repetitions (CI smoke run, not for numbers)")
    ap.add_argument("--rounds", type=int, default=None, help="timed batches per cell (default 41, quick 5)")
    ap.add_argument("--first-reps", type=int, default=None, help="fresh functions per first-call row "
                    "(default 9, quick 2)")
    ap.add_argument("--skip-first-call", action="store_true")
    a = ap.parse_args(argv)
    rounds = a.rounds or (5 if a.quick else 41)
    batch_ns = 1e6 if a.quick else 5e6
    first_reps = a.first_reps or (2 if a.quick else 9)

    print("srcjax foundation benchmark" + (" (--quick: few repetitions, numbers are rough)" if a.quick else ""))
    print(environment())
    t0 = time.perf_counter()

    rows = steady_state(rounds, batch_ns)
    print(f"\n1. Steady state: median us per call over {rounds} interleaved batches of ~{batch_ns / 1e6:g} ms")
    print(f"| {'workload':<24} | {'mode':<8} | {'srcjax us':>10} | {'jax.jit us':>10} | {'numpy us':>10} "
          f"| {'srcjax/jax':>10} |")
    print(f"|{'-' * 26}|{'-' * 10}|{'-' * 12}|{'-' * 12}|{'-' * 12}|{'-' * 12}|")
    for name, mode, s, j, n in rows:
        print(f"| {name:<24} | {mode:<8} | {fmt_us(s):>10} | {fmt_us(j):>10} | {fmt_us(n):>10} "
              f"| {s / j:>10.2f} |")

    wrows = new_wrappers(rounds, batch_ns)
    print(f"\n3. A new wrapper per call (`srcjax.jit(f)(x)` inside the loop vs `jax.jit(f)(x)`; float32, NumPy "
          f"inputs, result read back): median us per call over {rounds} interleaved batches")
    print(f"| {'call':<24} | {'srcjax us':>10} | {'jax us':>10} | {'srcjax/jax':>10} |")
    print(f"|{'-' * 26}|{'-' * 12}|{'-' * 12}|{'-' * 12}|")
    for name, s, j in wrows:
        print(f"| {name:<24} | {fmt_us(s):>10} | {fmt_us(j):>10} | {s / j:>10.2f} |")

    if not a.skip_first_call:
        frows = first_call(first_reps)
        print(f"\n2. First call of a fresh function (NumPy inputs, result read back): median ms over "
              f"{first_reps} fresh functions")
        print(f"| {'fn':<5} | {'stage':<58} | {'srcjax ms':>10} | {'jax ms':>10} | {'srcjax/jax':>10} |")
        print(f"|{'-' * 7}|{'-' * 60}|{'-' * 12}|{'-' * 12}|{'-' * 12}|")
        for kind, stage, s, j in frows:
            print(f"| {kind:<5} | {stage:<58} | {s:>10.2f} | {j:>10.2f} | {s / j:>10.2f} |")

    try:
        load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        load = "?"
    print(f"\ndone in {time.perf_counter() - t0:.1f} s; load average at end: {load}")
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if hasattr(os, "getloadavg") and os.getloadavg()[0] > usable:
        print(f"WARNING: the machine was busy (1-min load average above its {usable} usable CPUs): "
              "other processes competed for the cores; NumPy's multithreaded BLAS in particular can slow "
              "down by 30x or more when oversubscribed. Rerun on a quiet machine (or with "
              "OPENBLAS_NUM_THREADS=1) before quoting numbers.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
