"""np.linalg: srcjax vs jax.jit vs NumPy, forward and gradient, per-call time.

Run (from the repository root, in the venv that has jax, the oracle)::

    .venv/bin/python benchmarks/bench_linalg.py                  # n = 64, 256, 1024 (minutes)
    .venv/bin/python benchmarks/bench_linalg.py --sizes 32 64    # a smoke run
    .venv/bin/python benchmarks/bench_linalg.py --only c         # the complex workloads only

Workloads, float64, one n x n matrix (symmetric positive definite, well-conditioned):

* ``solve``     ``np.linalg.solve(a, b)``, ``b`` an n x 8 matrix;
* ``cholesky``  ``np.linalg.cholesky(a)``;
* ``eigh``      ``np.linalg.eigh(a)`` (eigenvalues and eigenvectors);
* ``svd``       ``np.linalg.svd(a, full_matrices=False)`` (u, s and vh);

and for each, ``grad``: the gradient w.r.t. ``a`` of a scalar of its result (``sum(x ** 2)``,
``sum(sin(L))``, ``sum(w * w) + sum(v[:, 0] ** 2)``, ``sum(s * s) + sum(u[:, 0] ** 2 * vh[0] ** 2)``).
The ``c ...`` workloads are the same four on complex128 (``a`` Hermitian positive definite, ``b``
complex), with ``abs(...) ** 2`` where the real ones square (``sum(abs(L) ** 2)`` for cholesky): LAPACK's
z kernels, and the gradient JAX defines for a real function of a complex matrix.
srcjax is ``srcjax.compile(f)`` / ``srcjax.grad(f)``; jax is ``jax.jit`` of the same code with ``np``
bound to ``jax.numpy`` (and ``jax.jit(jax.grad(...))``); NumPy runs the forward function only. Cells
are the median time per call in microseconds (``bench_foundation.measure``: interleaved batches,
results forced, NumPy inputs); ``sj/jax`` and ``sj/np`` are ratios of medians (below 1 srcjax is faster).
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
    sys.exit("bench_linalg.py needs jax: it is the comparison oracle")

from bench_foundation import as_jax, measure  # same directory as this script

jax.config.update("jax_enable_x64", True)


def solve(a, b):
    return np.sum(np.linalg.solve(a, b) ** 2)


def cholesky(a, b):
    return np.sum(np.sin(np.linalg.cholesky(a)))


def eigh(a, b):
    w, v = np.linalg.eigh(a)
    return np.sum(w * w) + np.sum(v[:, 0] ** 2)


def svd(a, b):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(s * s) + np.sum(u[:, 0] ** 2 * vh[0] ** 2)


def c_solve(a, b):
    return np.sum(np.abs(np.linalg.solve(a, b)) ** 2)


def c_cholesky(a, b):
    return np.sum(np.abs(np.linalg.cholesky(a)) ** 2)


def c_eigh(a, b):
    w, v = np.linalg.eigh(a)
    return np.sum(w * w) + np.sum(np.abs(v[:, 0]) ** 4)


def c_svd(a, b):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(s * s) + np.sum(np.abs(u[:, 0]) ** 2 * np.abs(vh[0]) ** 2)


WORKLOADS: list[tuple[str, Callable[..., Any]]] = [("solve", solve), ("cholesky", cholesky), ("eigh", eigh),
                                                   ("svd", svd), ("c solve", c_solve), ("c cholesky", c_cholesky),
                                                   ("c eigh", c_eigh), ("c svd", c_svd)]


def force(x: Any) -> Any:
    return np.asarray(x)


def bench_one(f: Callable[..., Any], mat: np.ndarray, rhs: np.ndarray, rounds: int
              ) -> tuple[dict[str, float], dict[str, float]]:
    """(forward times, gradient times) of one workload, each checked against its oracle first."""
    fj = as_jax(f)
    sj, jj = srcjax.compile(f), jax.jit(fj)
    sg, jg = srcjax.grad(f), jax.jit(jax.grad(fj))
    np.testing.assert_allclose(force(sj(mat, rhs)), f(mat, rhs), rtol=1e-8)
    np.testing.assert_allclose(force(sg(mat, rhs)), force(jg(mat, rhs)), rtol=1e-5, atol=1e-7)
    fwd = measure({"sj": lambda: force(sj(mat, rhs)), "jax": lambda: force(jj(mat, rhs)),
                   "np": lambda: f(mat, rhs)}, rounds, 2e7)
    grd = measure({"sj": lambda: force(sg(mat, rhs)), "jax": lambda: force(jg(mat, rhs))}, rounds, 2e7)
    return fwd, grd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[64, 256, 1024])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", choices=["real", "c"], help="the real or the complex (c) workloads only")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'workload':<16}{'n':>6}{'srcjax':>12}{'jax.jit':>12}{'numpy':>12}{'sj/jax':>9}{'sj/np':>9}"
          "   (us per call)")
    for n in a.sizes:
        m = rng.standard_normal((n, n))
        mat = m @ m.T / n + np.eye(n)
        rhs = rng.standard_normal((n, 8))
        mc = m + 1j * rng.standard_normal((n, n))
        cmat = mc @ mc.conj().T / n + np.eye(n)
        crhs = rhs + 1j * rng.standard_normal((n, 8))
        for name, f in WORKLOADS:
            cplx = name.startswith("c ")
            if a.only and a.only != ("c" if cplx else "real"):
                continue
            fwd, grd = bench_one(f, cmat if cplx else mat, crhs if cplx else rhs, a.rounds)
            for label, t in ((name, fwd), (name + " grad", grd)):
                np_t = t.get("np")
                np_cell = f"{np_t:.1f}" if np_t else "-"
                np_ratio = f"{t['sj'] / np_t:.2f}" if np_t else "-"
                print(f"{label:<16}{n:>6}{t['sj']:>12.1f}{t['jax']:>12.1f}{np_cell:>12}{t['sj'] / t['jax']:>9.2f}"
                      f"{np_ratio:>9}")


if __name__ == "__main__":
    main()
