"""srcjax.lax.dynamic_slice / dynamic_update_slice vs jax.jit: per-call time, one run, side by side.

Run (from the repository root, in the venv that has jax, the oracle)::

    .venv/bin/python benchmarks/bench_lax_dynamic.py               # median of 7 rounds
    .venv/bin/python benchmarks/bench_lax_dynamic.py --stat min    # the least disturbed round (a loaded machine)

Workloads (the start index is data, a new value each call would not change the program):

* ``slice 1-D``    ``dynamic_slice(x, (i,), (n // 8,))`` of a float64 ``x`` of n points;
* ``slice 2-D``    a (256, 256) window of a (1024, 1024) ``x`` at ``(i, j)``;
* ``update 1-D``   ``dynamic_update_slice(x, u, (i,))`` with ``u`` of n // 8 points;
* ``grad``         the gradient of ``sum(sin(dynamic_slice(x, (i,), (n // 8,))) ** 2)`` w.r.t. ``x``;
* ``vmap starts``  ``vmap`` over 256 start indices of a 64-point window of one ``x`` of 4096 points
  (every example's window: srcjax gathers them, jax too);
* ``vmap operand`` ``vmap`` over 64 rows of a (64, 4096) ``x``, one start index (one dynamic_slice).

srcjax is ``srcjax.compile`` / ``srcjax.grad`` / ``srcjax.vmap``; jax is ``jax.jit`` of the same code with
``np`` as ``jax.numpy`` and ``srcjax.lax`` as ``jax.lax``. Cells: microseconds per call
(``bench_foundation.measure``: interleaved batches, results forced); ``sj/jax`` is their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

import srcjax

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover
    sys.exit("bench_lax_dynamic.py needs jax: it is the comparison oracle")

from bench_foundation import measure  # same directory as this script

jax.config.update("jax_enable_x64", True)


def slice_1d(x, i):
    return srcjax.lax.dynamic_slice(x, (i,), (x.shape[0] // 8,))


def slice_2d(x, i, j):
    return srcjax.lax.dynamic_slice(x, (i, j), (256, 256))


def update_1d(x, u, i):
    return srcjax.lax.dynamic_update_slice(x, u, (i,))


def energy(x, i):
    return np.sum(np.sin(srcjax.lax.dynamic_slice(x, (i,), (x.shape[0] // 8,))) ** 2)


def window(x, i):
    return srcjax.lax.dynamic_slice(x, (i,), (64,))


def as_jax(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``'s code with ``np`` bound to jax.numpy and ``srcjax.lax`` to jax.lax."""
    g = dict(fn.__globals__)
    g["np"], g["srcjax"] = jnp, types.SimpleNamespace(lax=jax.lax)
    return types.FunctionType(fn.__code__, g, fn.__name__ + "_jax")


def force(x: Any) -> Any:
    return np.asarray(x)


def compare(label: str, ours: Callable[..., Any], theirs: Callable[..., Any], args: tuple[Any, ...],
            rounds: int, stat: Callable[[list[float]], float]) -> None:
    np.testing.assert_allclose(force(ours(*args)), force(theirs(*args)), rtol=1e-12)
    t = measure({"sj": lambda: force(ours(*args)), "jax": lambda: force(theirs(*args))}, rounds, 2e7, stat=stat)
    print(f"{label:<14}{t['sj']:>12.1f}{t['jax']:>12.1f}{t['sj'] / t['jax']:>9.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1 << 20)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--stat", choices=("median", "min"), default="median")
    a = ap.parse_args()
    stat = statistics.median if a.stat == "median" else min
    rng = np.random.default_rng(0)
    x = rng.standard_normal(a.n)
    x2 = rng.standard_normal((1024, 1024))
    u = rng.standard_normal(a.n // 8)
    i = np.int64(a.n // 3)
    print(f"{'workload':<14}{'srcjax':>12}{'jax.jit':>12}{'sj/jax':>9}   (us per call, {a.stat} of {a.rounds})")
    compare("slice 1-D", srcjax.jit(slice_1d), jax.jit(as_jax(slice_1d)), (x, i), a.rounds, stat)
    compare("slice 2-D", srcjax.jit(slice_2d), jax.jit(as_jax(slice_2d)), (x2, np.int64(300), np.int64(900)),
            a.rounds, stat)
    compare("update 1-D", srcjax.jit(update_1d), jax.jit(as_jax(update_1d)), (x, u, i), a.rounds, stat)
    compare("grad", srcjax.grad(energy), jax.jit(jax.grad(as_jax(energy))), (x, i), a.rounds, stat)
    starts = rng.integers(-100, 4200, 256)
    small = rng.standard_normal(4096)
    compare("vmap starts", srcjax.vmap(window, in_axes=(None, 0)),
            jax.jit(jax.vmap(as_jax(window), in_axes=(None, 0))), (small, starts), a.rounds, stat)
    rows = rng.standard_normal((64, 4096))
    compare("vmap operand", srcjax.vmap(window, in_axes=(0, None)),
            jax.jit(jax.vmap(as_jax(window), in_axes=(0, None))), (rows, np.int64(1000)), a.rounds, stat)


if __name__ == "__main__":
    main()
