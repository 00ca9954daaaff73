"""Where the microseconds of one srcjax call go (the tiny function ``x * 2.0 + 1.0``).

Run::

    .venv/bin/python benchmarks/profile_dispatch.py [--quick] [--no-jax]

It re-times, one stage at a time, what ``Compiled.__call__`` does on a cache
hit (it reaches into srcjax internals: ``_fast_key``, ``_cache``, the plan's
``Executable``; update it when those change), then times reading a fresh
result back with ``np.asarray``, then prints a cProfile of many calls. Every
row is the median per-operation time in microseconds over interleaved batches.
``--x64`` turns on ``jax_enable_x64`` before anything runs (see "numpy in" below).
``--no-jax`` skips the jax reference rows (and, unlike the default, does not
import jax before the measurements, which matters: see the np.asarray rows).

The "device in (C++ dispatcher)" call goes through jaxlib's C++ dispatcher (``srcjax/cpp_calls.py``,
srcjax's default; it starts once ``ml_dtypes`` is imported, which this script does); the "(Python
path)" row times srcjax's own path on the same call. "numpy in": the first dispatcher reads the NumPy
argument in place where 64-bit values are keyed as they are (srcjax alone, or ``--x64``); with jax
imported and x64 off (jax's default), srcjax copies it for a second dispatcher through Python.

Reading it: the "sum of stages" row should be close to the "full call" row;
the gap is interpreter overhead of the call itself. Stages that are pure
Python (key, cache lookup, wrapping) are srcjax's to shrink; upload and
execute are jaxlib's C++ (batched_device_put, execute_sharded), which jax's
own C++ dispatcher (``_jax.pjit``) replaces entirely.

The "C++ parts" rows split the C++ dispatcher's call (device in): the same executable behind
``PjitFunction``s whose records take and give jaxlib's own arrays (what ``jax.jit`` does: its floor),
a srcjax.Array argument (a node of srcjax's registry, ``_buf`` read by the C++ side), a srcjax.Array
result (built by srcjax's generated function, ``cpp_dispatch._builder``), and the function's own
dispatcher called directly (without ``Compiled.__call__``). Timings on a loaded machine swing more
than these parts; callgrind counts them exactly (``docs/benchmarks.md``, the dispatch paragraph).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import ml_dtypes  # noqa: F401  (srcjax's C++ dispatcher starts once it is imported: cpp_budget.BUDGET)
import numpy as np

import srcjax
from srcjax.runtime import wrap


def tiny(x):
    return x * 2.0 + 1.0


def measure(fns: dict[str, Callable[[], Any]], rounds: int, k: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {n: [] for n in fns}
    for f in fns.values():
        f()
    for _ in range(rounds):
        for n, f in fns.items():
            gc.disable()
            t = time.perf_counter_ns()
            for _ in range(k):
                f()
            samples[n].append((time.perf_counter_ns() - t) / k / 1e3)
            gc.enable()
    return {n: statistics.median(v) for n, v in samples.items()}


def per_item(fn: Callable[[Any], Any], items: list[Any]) -> float:
    gc.disable()
    t = time.perf_counter_ns()
    for it in items:
        fn(it)
    dt = (time.perf_counter_ns() - t) / len(items) / 1e3
    gc.enable()
    return dt


class _HostView:
    """Prototype of a jax-free zero-copy read of a CPU result (not in srcjax)."""

    __slots__ = ("__array_interface__", "_buf")


def proto_to_numpy(buf: Any, aval: Any) -> np.ndarray:
    buf.block_until_ready()
    if 0 in aval.shape:
        return np.empty(aval.shape, aval.dtype)
    h = _HostView()
    h._buf = buf  # the view's base keeps the device buffer alive
    h.__array_interface__ = {"shape": aval.shape, "typestr": aval.dtype.str,
                             "data": (buf.unsafe_buffer_pointer(), True), "version": 3}
    return np.asarray(h)


def cpp_parts(c: Any, plan: Any, xd: Any) -> dict[str, Callable[[], Any]]:
    """Rows timing the C++ dispatcher's call of ``c`` (device in) in parts (see the module's docstring)."""
    from jaxlib import _jax

    from srcjax.cpp_calls import _out_treedef
    from srcjax.runtime import cpp_dispatch

    buf = xd._buf
    leaf = _jax.pytree.default_registry().flatten(object())[1]  # (a result as it is: jax's)

    def pjit(registry: Any, out_def: Any) -> Any:
        def miss(*args: Any) -> tuple[Any, Any, bool]:
            return None, cpp_dispatch.fastpath(plan.exe, [buf], out_def), False  # (the first call: not timed)

        return _jax.pjit("tiny", tiny, miss, [], [], ("profile", id(miss)), registry,
                         cpp_dispatch._no_host_values, cpp_dispatch._State.cache)

    plain = pjit(_jax.pytree.default_registry(), leaf)
    array_in = pjit(cpp_dispatch._State.registry, leaf)
    array_out = pjit(_jax.pytree.default_registry(), _out_treedef(plan, False))
    cpp = c._cpp
    assert cpp is not None, "the C++ dispatcher is not attached"
    return {"C++ parts: jaxlib array in, jaxlib array out (jax.jit's floor)": lambda: plain(buf),
            "C++ parts: srcjax.Array in, jaxlib array out": lambda: array_in(xd),
            "C++ parts: jaxlib array in, srcjax.Array out": lambda: array_out(buf),
            "C++ parts: the dispatcher, without Compiled.__call__": lambda: cpp(xd)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-jax", action="store_true")
    ap.add_argument("--x64", action="store_true", help="turn on jax_enable_x64 first (jaxlib then keys 64-bit "
                    "host values as they are, and srcjax's dispatcher reads NumPy arguments in place)")
    a = ap.parse_args(argv)
    if a.x64 and not a.no_jax:
        import jax

        jax.config.update("jax_enable_x64", True)
    rounds, k = (5, 200) if a.quick else (31, 2000)

    x = np.array(3.0, np.float32)
    c = srcjax.compile(tiny)
    xd = c(x)
    key = c._fast_key((x,))
    plan = c._cache[key]
    exe = plan.exe
    aval = plan.in_avals[0]
    buf = exe.put(x, aval)
    loaded, handlers, out_aval = exe.loaded, exe.handlers, exe.out_avals[0]
    res = loaded.execute_sharded([buf]).consume_with_handlers(handlers)[0]

    stages = {
        "1 _fast_key(args)": lambda: c._fast_key((x,)),
        "2 _cache.get(key)": lambda: c._cache.get(key),
        "3 upload: exe.put (batched_device_put)": lambda: exe.put(x, aval),
        "4 loaded.execute_sharded": lambda: loaded.execute_sharded([buf]),
        "5 execute_sharded + consume_with_handlers": lambda: loaded.execute_sharded([buf]).consume_with_handlers(
            handlers),
        "6 wrap(buf, aval)": lambda: wrap(res, out_aval),
        "full call, numpy in": lambda: c(x),
        "full call, device in (C++ dispatcher)": lambda: c(xd),
        "full call, device in (Python path)": lambda: c._call((xd,), {}),
        "full call + block_until_ready, device in": lambda: c(xd).block_until_ready(),
    }
    stages.update(cpp_parts(c, plan, xd))
    if not a.no_jax:
        import jax

        jf = jax.jit(tiny)
        jf(x)
        jd = jax.device_put(x)
        stages["jax.jit call, numpy in"] = lambda: jf(x)
        stages["jax.jit call, device in"] = lambda: jf(jd)
    r = measure(stages, rounds, k)
    if not a.no_jax:
        for what in ("numpy in", "device in (C++ dispatcher)", "device in (Python path)"):
            jax_row = "jax.jit call, " + what.split(" (")[0]
            r[f"ratio srcjax/jax, {what}"] = r[f"full call, {what}"] / r[jax_row]
    r["sum of stages 1,2,3,5,6 (numpy in)"] = sum(r[n] for n in stages if n[0] in "12356")
    r["sum of stages 1,2,5,6 (device in)"] = sum(r[n] for n in stages if n[0] in "1256")

    # Reading a fresh result back: the first np.asarray of each Array does the work.
    n = 300 if a.quick else 2000
    had_jax = "jax" in sys.modules
    t0 = time.perf_counter()
    np.asarray(c(x))
    first_ms = (time.perf_counter() - t0) * 1e3
    imported_jax = "jax" in sys.modules and not had_jax
    reads: dict[str, list[float]] = {"np.asarray(fresh Array) (current)": [],
                                      "prototype: unsafe_buffer_pointer view": []}
    for _ in range(3 if a.quick else 9):
        outs = [c(x) for _ in range(2 * n)]
        for o in outs:
            o.block_until_ready()
        reads["np.asarray(fresh Array) (current)"].append(per_item(np.asarray, outs[:n]))
        reads["prototype: unsafe_buffer_pointer view"].append(
            per_item(lambda o: proto_to_numpy(o._buf, o.aval), outs[n:]))
    for name, v in reads.items():
        r[name] = statistics.median(v)
    v1 = np.asarray(c(x))
    o = c(x)
    v2 = proto_to_numpy(o._buf, o.aval)
    assert v1 == v2 == tiny(x) and not v2.flags.writeable

    print(f"srcjax {srcjax.__version__}, numpy {np.__version__}, python {sys.version.split()[0]}")
    print(f"median us per operation, {rounds} interleaved batches of {k} (f32[] input):")
    for name, us in r.items():
        print(f"  {name:<48} {us:8.2f}")
    print(f"first np.asarray of a result in this process: {first_ms:.1f} ms"
          + ("  <- jaxlib imported jax here" if imported_jax else "")
          + f"; jax in sys.modules now: {'jax' in sys.modules}")

    # cProfile of many calls (device in and numpy in).
    for label, arg in (("numpy in", x), ("device in", xd)):
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(2000 if a.quick else 20000):
            c(arg)
        pr.disable()
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(8)
        lines = [ln for ln in s.getvalue().splitlines() if ln.strip() and "Ordered by" not in ln]
        print(f"\ncProfile, {label} (tottime; cProfile inflates pure-Python frames):")
        print("\n".join(lines[:12]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
