"""np.fft: srcjax vs jax.jit vs NumPy, per-call time of transforms and of a gradient through one.

Run (from the repository root, in the venv that has jax, the oracle)::

    .venv/bin/python benchmarks/bench_fft.py                      # n = 2**10, 2**16, 2**20
    .venv/bin/python benchmarks/bench_fft.py --log2 10 --rounds 3 # a smoke run

Workloads, one signal of n points:

* ``fft f64``     ``np.fft.fft(x)`` of a float64 signal (a complex128 spectrum);
* ``fft c128``    ``np.fft.fft(z)`` of a complex128 signal;
* ``rfft f64``    ``np.fft.rfft(x)``;
* ``ifft c128``   ``np.fft.ifft(z)``;
* ``energy grad`` the gradient of the spectral energy ``np.sum(np.abs(np.fft.rfft(x)) ** 2)`` w.r.t. a
  float64 ``x`` (an rfft forward, the transpose of rfft backward: an fft of the padded cotangent).

srcjax is ``srcjax.compile(f)`` / ``srcjax.grad(f)``; jax is ``jax.jit`` of the same code with ``np``
bound to ``jax.numpy`` (``jax.jit(jax.grad(...))``); NumPy (pocketfft) runs the forward function only.
All three run on the CPU (XLA's FFT is DUCC's). Cells are the median time per call in microseconds
(``bench_foundation.measure``: interleaved batches, results forced, NumPy inputs); ``sj/jax`` and
``sj/np`` are ratios of medians (below 1 srcjax is faster).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

import srcjax

try:
    import jax
except ImportError:  # pragma: no cover
    sys.exit("bench_fft.py needs jax: it is the comparison oracle")

from bench_foundation import as_jax, measure  # same directory as this script

jax.config.update("jax_enable_x64", True)


def fft(x):
    return np.fft.fft(x)


def rfft(x):
    return np.fft.rfft(x)


def ifft(z):
    return np.fft.ifft(z)


def energy(x):
    return np.sum(np.abs(np.fft.rfft(x)) ** 2)


def force(x: Any) -> Any:
    return np.asarray(x)


def row(label: str, n: int, t: dict[str, float]) -> None:
    np_t = t.get("np")
    np_cell = f"{np_t:.1f}" if np_t else "-"
    np_ratio = f"{t['sj'] / np_t:.2f}" if np_t else "-"
    print(f"{label:<14}{n:>9}{t['sj']:>12.1f}{t['jax']:>12.1f}{np_cell:>12}{t['sj'] / t['jax']:>9.2f}{np_ratio:>9}",
          flush=True)


def bench_forward(f: Callable[..., Any], x: np.ndarray, rounds: int) -> dict[str, float]:
    sj, jj = srcjax.compile(f), jax.jit(as_jax(f))
    np.testing.assert_allclose(force(sj(x)), f(x), rtol=1e-9, atol=1e-9 * np.sqrt(x.size))
    np.testing.assert_allclose(force(jj(x)), f(x), rtol=1e-9, atol=1e-9 * np.sqrt(x.size))
    return measure({"sj": lambda: force(sj(x)), "jax": lambda: force(jj(x)), "np": lambda: f(x)}, rounds, 2e7)


def bench_grad(f: Callable[..., Any], x: np.ndarray, rounds: int) -> dict[str, float]:
    sg, jg = srcjax.grad(f), jax.jit(jax.grad(as_jax(f)))
    np.testing.assert_allclose(force(sg(x)), force(jg(x)), rtol=1e-9, atol=1e-9 * x.size)
    return measure({"sj": lambda: force(sg(x)), "jax": lambda: force(jg(x))}, rounds, 2e7)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log2", type=int, nargs="*", default=[10, 16, 20])
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'workload':<14}{'n':>9}{'srcjax':>12}{'jax.jit':>12}{'numpy':>12}{'sj/jax':>9}{'sj/np':>9}"
          "   (us per call)")
    for k in a.log2:
        n = 2 ** k
        x = rng.standard_normal(n)
        z = x + 1j * rng.standard_normal(n)
        row("fft f64", n, bench_forward(fft, x, a.rounds))
        row("fft c128", n, bench_forward(fft, z, a.rounds))
        row("rfft f64", n, bench_forward(rfft, x, a.rounds))
        row("ifft c128", n, bench_forward(ifft, z, a.rounds))
        row("energy grad", n, bench_grad(energy, x, a.rounds))


if __name__ == "__main__":
    main()
