"""tests/hunt24_programs.py's programs (benchmark kernels written for NumPy: spcl/npbench's polybench, stencil,
deep-learning and physics kernels, pythran's numpy-benchmarks) under the transformations their users apply, run by
``tests/vmap_corpus.py``: against jax over the module's text, the NumPy stand-in (the user's function run by NumPy,
a loop over the examples for vmap, finite differences for derivatives) and the generated source run by NumPy.

The default run checks ``DEFAULT_CASES`` at float64; ``SRCJAX_HYPOTHESIS=thorough`` every check at float64 and
float32. ``python -m tests.test_hunt24_programs [NAME ...] [--f64|--f32]`` runs the corpus (or the cases named)
and prints the counts and every failure.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import srcjax  # noqa: F401 - (the checks' namespace)

from . import hunt24_programs as hp
from .vmap_corpus import JF, JR, Case, G, H, J, VmapCorpus, g, gs, h, jp, jr, out, v, vg, vgs

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

# Refusals met where jax refuses too (reported; located at the user's line with a hint)
JAX_REFUSES: tuple[str, ...] = (
    # azimint_naive's `data[mask_r12].mean()`: a shape that depends on the data
    "indexing with a boolean mask",
    # spmv's `A_col[A_row[i]:A_row[i + 1]]`: a slice bound read from an array
    "a slice bound must be known at transpile time",
    # grayscott's `u, v = U[1:-1, 1:-1], V[1:-1, 1:-1]` then `u[:] = 1.0`, `u += ...`: writes through views
    "may be or hold that same array",
    # laplacien's `max(1., valmax)` on data under derivatives (jax: a TracerBoolConversionError; np.maximum is the
    # array spelling); jit and vmap run, and nussinov's `max(table[i, j], ...)` (session 43)
    "the builtin max() compares values known only at run time",
    # mandelbrot's `np.linspace(xmin, xmax, xn)` with endpoints from data (jax: the in-place `N[I] = n`)
    "np.linspace(): the argument 'start' must be known at transpile time",
)
# Refusals met where jax runs the program (each with a reason)
KNOWN_REFUSALS: tuple[str, ...] = ()
# Errors of srcjax's own met and not fixed yet: xfail, not hidden
KNOWN_INTERNAL: tuple[str, ...] = ()
# Wrong answers met and not fixed yet: (case, check[, dtype]) -> why; xfail, not hidden
KNOWN_WRONG: dict[tuple[str, ...], str] = {}


def _n(r: np.random.Generator, d: Any, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * r.standard_normal(shape)).astype(d)


def _u(r: np.random.Generator, d: Any, lo: float, hi: float, *shape: int) -> np.ndarray:
    return r.uniform(lo, hi, shape).astype(d)


def _c(r: np.random.Generator, d: Any, *shape: int, scale: float = 1.0) -> np.ndarray:
    z = scale * (r.standard_normal(shape) + 1j * r.standard_normal(shape))
    return z.astype(np.complex64 if d == np.float32 else np.complex128)


def _spd(r: np.random.Generator, d: Any, n: int) -> np.ndarray:
    M = r.standard_normal((n, n)) * 0.5
    return (M @ M.T + n * np.eye(n) * 0.5).astype(d)


def _dd(r: np.random.Generator, d: Any, n: int) -> np.ndarray:
    M = r.standard_normal((n, n)) * 0.4
    return (M + np.diag(np.sum(np.abs(M), axis=1) + 1.0)).astype(d)


def _lower(r: np.random.Generator, d: Any, n: int) -> np.ndarray:
    return np.tril(_dd(r, np.float64, n)).astype(d)


def _ints(r: np.random.Generator, hi: int, *shape: int) -> np.ndarray:
    return r.integers(0, hi, shape)


def _scal(r: np.random.Generator, d: Any, lo: float = 0.5, hi: float = 1.5) -> np.ndarray:
    return _u(r, d, lo, hi)


def _gemver(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return (_scal(r, d), _scal(r, d), _n(r, d, 4, 4, scale=0.5), *(_n(r, d, 4, scale=0.5) for _ in range(8)))


def _vadv(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return (_n(r, d, 3, 3, 4), _n(r, d, 3, 3, 4), _n(r, d, 4, 3, 4, scale=0.3), _n(r, d, 3, 3, 4),
            _n(r, d, 3, 3, 4), _u(r, d, 2.0, 4.0))


def _hasting(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return (_u(r, d, 0.2, 1.0, 3), _u(r, d, 0.0, 1.0), *(_u(r, d, 0.1, 1.0) for _ in range(6)))


def _nbody(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return _u(r, d, 0.5, 1.5, 4, 1), _n(r, d, 4, 3), _n(r, d, 4, 3, scale=0.3)


def _slowparts(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return (_n(r, d, 4, 3, 3, scale=0.5), _n(r, d, 2, 3, 3, scale=0.5), _n(r, d, 2, 4), _n(r, d, 2, 4),
            _n(r, d, 3, 3, 2))


def _mlp(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return (_n(r, d, 3, 4), _n(r, d, 4, 5, scale=0.5), _n(r, d, 5, scale=0.3), _n(r, d, 5, 5, scale=0.5),
            _n(r, d, 5, scale=0.3), _n(r, d, 5, 3, scale=0.5), _n(r, d, 3, scale=0.3))


def _wave(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    x = np.arange(5.0)[:, None] * np.array([1.0, 0.0]) + r.standard_normal((5, 2)) * 0.1
    return (np.stack([x, x + r.standard_normal((5, 2)) * 0.01]).astype(d),)


def _contour(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    z = np.exp(1j * r.uniform(0, 2 * np.pi, 4)) * r.uniform(0.5, 1.5, 4)
    H = _c(r, d, 3, 3, 3, scale=0.3) + 3.0 * np.eye(3)
    return H, z.astype(H.dtype), _c(r, d, 3, 2)


CASES: tuple[Case, ...] = (
    # polybench
    Case("adi", lambda r, d: (_n(r, d, 5, 5),), (J, gs(), JR, v((0,)), vgs((0,)), jp(1))),
    Case("atax", lambda r, d: (_n(r, d, 4, 3), _n(r, d, 3)), (J, jr("(0, 1)"), v((0, 0)), v((None, 0)), jp(2))),
    Case("bicg", lambda r, d: (_n(r, d, 4, 3), _n(r, d, 3), _n(r, d, 4)),
         (J, out(0, "jacrev", "(0, 2)"), out(1, "jacfwd", "(0, 1)"), v((0, 0, 0)), v((None, 0, None)), jp(3))),
    Case("cholesky_rows", lambda r, d: (_spd(r, d, 4),), (J, JR, JF, v((0,)), vgs((0,)), jp(1))),
    # (np.linalg.cholesky reads the lower triangle, as NumPy; its derivative is JAX's, for a symmetric operand:
    # finite differences of a raw entry differ by design, docs/numpy.md)
    Case("cholesky_factor", lambda r, d: (_spd(r, d, 4),), (J, JR, v((0,)), jp(1)), fd=False),
    Case("correlation", lambda r, d: (_n(r, d, 6, 4),), (J, JR, v((0,)), vgs((0,)), jp(1))),
    Case("covariance", lambda r, d: (_n(r, d, 6, 4),), (J, JR, JF, v((0,)), v((1,)), jp(1))),
    Case("covariance_np", lambda r, d: (_n(r, d, 6, 4),), (J, JR, v((0,)), jp(1))),
    Case("deriche", lambda r, d: (_u(r, d, 0.2, 0.5), _n(r, d, 4, 5)),
         (J, jr("(0, 1)"), v((0, 0)), v((None, 0)), vgs((0, 0)), jp(2))),
    Case("doitgen", lambda r, d: (_n(r, d, 2, 3, 4), _n(r, d, 4, 4)),
         (J, jr("(0, 1)"), v((0, None)), v((0, 0)), jp(2))),
    Case("durbin", lambda r, d: (_u(r, d, -0.3, 0.3, 5),), (J, JR, JF, v((0,)), jp(1))),
    Case("fdtd_2d", lambda r, d: (_n(r, d, 4, 5), _n(r, d, 4, 5), _n(r, d, 4, 5), _n(r, d, 3)),
         (J, out(2, "jacrev", "(0, 3)"), out(1, "jacfwd", 2), v((0, 0, 0, 0)), v((None, None, None, 0)), jp(4))),
    Case("floyd_warshall", lambda r, d: (_u(r, d, 0.5, 3.0, 4, 4),), (J, JR, v((0,)), jp(1))),
    Case("gemm", lambda r, d: (_scal(r, d), _scal(r, d), _n(r, d, 3, 4), _n(r, d, 3, 2), _n(r, d, 2, 4)),
         (J, jr("(0, 1, 2, 3, 4)"), v((None, None, 0, 0, 0)), v((0, 0, None, None, None)), jp(5))),
    Case("gemver", _gemver, (J, out(2, "jacrev", "(0, 2, 8)"), v((0,) * 11), v((None, None, 0) + (None,) * 8),
                             jp(11, (0, 2, 4, 8)))),
    Case("gesummv", lambda r, d: (_scal(r, d), _scal(r, d), _n(r, d, 3, 4), _n(r, d, 3, 4), _n(r, d, 4)),
         (J, jr("(0, 1, 2, 3, 4)"), v((0, 0, 0, 0, 0)), v((None, None, None, None, 0)), jp(5))),
    Case("gramschmidt", lambda r, d: (_n(r, d, 5, 3),),
         (J, out(0, "jacrev"), out(1, "jacfwd"), v((0,)), v((1,)), jp(1))),
    Case("heat_3d", lambda r, d: (_n(r, d, 4, 4, 4), _n(r, d, 4, 4, 4)),
         (J, out(0, "jacrev", "(0, 1)"), v((0, 0)), v((0, None)), jp(2))),
    Case("jacobi_1d", lambda r, d: (_n(r, d, 6), _n(r, d, 6)), (J, jr("(0, 1)"), v((0, 0)), v((None, 0)), jp(2))),
    Case("jacobi_2d", lambda r, d: (_n(r, d, 5, 5), _n(r, d, 5, 5)),
         (J, out(0, "jacrev", "(0, 1)"), v((0, 0)), v((1, 1)), jp(2))),
    Case("k2mm", lambda r, d: (_scal(r, d), _scal(r, d), _n(r, d, 2, 3), _n(r, d, 3, 4), _n(r, d, 4, 2),
                               _n(r, d, 2, 2)),
         (J, jr("(0, 1, 2, 5)"), v((0, 0, 0, 0, 0, 0)), v((None, None, None, 0, None, 0)), jp(6))),
    Case("k3mm", lambda r, d: (_n(r, d, 2, 3), _n(r, d, 3, 4), _n(r, d, 4, 2), _n(r, d, 2, 3)),
         (J, jr("(0, 1, 2, 3)"), v((0, None, None, 0)), jp(4))),
    Case("lu", lambda r, d: (_dd(r, d, 4),), (J, JR, JF, v((0,)), v((1,)), vgs((0,)), jp(1))),
    Case("ludcmp", lambda r, d: (_dd(r, d, 4), _n(r, d, 4)),
         (J, out(0, "jacrev", "(0, 1)"), out(1, "jacfwd", "(0, 1)"), v((0, 0)), v((None, 0)), jp(2))),
    Case("mvt", lambda r, d: tuple(_n(r, d, 4) for _ in range(4)) + (_n(r, d, 4, 4),),
         (J, out(0, "jacrev", "(0, 2, 4)"), v((0, 0, 0, 0, 0)), v((None, None, 0, 0, None)), jp(5))),
    Case("nussinov", lambda r, d: (_ints(r, 4, 6),), (J, v((0,)), ("jit(vmap(f))", (0,)))),
    Case("seidel_2d", lambda r, d: (_n(r, d, 5, 5),),
         (J, JR, v((0,)), vgs((0,)), ("lambda a0: f(a0, tsteps=3)", None), jp(1))),
    Case("symm", lambda r, d: (_scal(r, d), _scal(r, d), _n(r, d, 4, 3), _n(r, d, 4, 4), _n(r, d, 4, 3)),
         (J, jr("(0, 1, 2, 3, 4)"), v((None, None, 0, None, 0)), v((0, 0, 0, 0, 0)), jp(5))),
    Case("syr2k", lambda r, d: (_scal(r, d), _scal(r, d), _n(r, d, 4, 4), _n(r, d, 4, 3), _n(r, d, 4, 3)),
         (J, jr("(0, 1, 2, 3, 4)"), v((None, None, 0, 0, 0)), v((0, 0, None, None, None)), jp(5))),
    Case("syrk", lambda r, d: (_scal(r, d), _scal(r, d), _n(r, d, 4, 4), _n(r, d, 4, 3)),
         (J, jr("(0, 1, 2, 3)"), v((None, None, 0, 0)), v((0, None, None, 1)), jp(4))),
    Case("trisolv", lambda r, d: (_lower(r, d, 4), _n(r, d, 4)),
         (J, jr("(0, 1)"), v((0, 0)), v((None, 0)), vgs((None, 0), 1), jp(2))),
    Case("trmm", lambda r, d: (_scal(r, d), _n(r, d, 4, 4), _n(r, d, 4, 3)),
         (J, jr("(0, 1, 2)"), v((None, 0, 0)), v((0, None, 1)), jp(3))),
    # other npbench kernels
    Case("cavity_flow", lambda r, d: (_n(r, d, 5, 5, scale=0.3), _n(r, d, 5, 5, scale=0.3), _n(r, d, 5, 5, scale=0.3)),
         (J, out(0, "jacrev", "(0, 1, 2)"), v((0, 0, 0)), v((None, 0, None)), jp(3))),
    Case("compute", lambda r, d: (_u(r, d, 0.0, 12.0, 6), _n(r, d, 6), _scal(r, d), _scal(r, d), _scal(r, d)),
         (J, jr("(0, 1, 2, 3, 4)"), v((0, 0, None, None, None)), v((None, None, 0, 0, 0)), jp(5))),
    Case("conv2d_bias", lambda r, d: (_n(r, d, 2, 5, 5, 2), _n(r, d, 3, 3, 2, 2), _n(r, d, 2)),
         (J, v((0, None, None)), v((None, 0, 0))),
         numpy_dtypes="the float32 buffer plus a float64 bias: float64 (jax keeps float64 too)"),
    Case("lenet_small", lambda r, d: (_n(r, d, 2, 6, 6, 1), _n(r, d, 3, 3, 1, 2), _n(r, d, 2), _n(r, d, 8, 3),
                                      _n(r, d, 3)),
         (J, v((0, None, None, None, None)), v((None, 0, 0, 0, 0)))),
    Case("softmax", lambda r, d: (_n(r, d, 3, 4),), (J, JR, JF, v((0,)), v((1,)), vgs((0,)), jp(1))),
    Case("mlp", _mlp, (J, gs("(1, 2)"), jr(1), v((0, None, None, None, None, None, None)),
                       v((None, 0, 0, 0, 0, 0, 0)), jp(7, (0, 1, 5)))),
    Case("resnet_basicblock", lambda r, d: (_n(r, d, 3, 4, 4, 2), _n(r, d, 1, 1, 2, 2), _n(r, d, 3, 3, 2, 2)),
         (J, gs("(1, 2)"), v((0, None, None)), v((None, 0, 0)), jp(3, (1, 2)))),
    Case("go_fast", lambda r, d: (_n(r, d, 4, 4),), (J, JR, JF, v((0,)), v((1,)), jp(1))),
    # (no derivative of PE alone: its zero diagonal's sqrt and 1 / r meet a zero cotangent, 0 * inf, NaN as in
    # jax.grad of the same function written with jnp.where; finite differences see a finite one)
    Case("nbody", _nbody, (J, out(0, "jacrev", "(0, 1, 2)"), v((0, 0, 0)), v((None, 0, 0)), jp(3))),
    Case("arc_distance", lambda r, d: tuple(_n(r, d, 5) for _ in range(4)),
         (J, jr("(0, 1, 2, 3)"), v((0, 0, 0, 0)), v((None, 0, None, 0)), jp(4))),
    Case("azimint_naive", lambda r, d: (_n(r, d, 10), _u(r, d, 0.0, 1.0, 10)), (J, v((0, 0)))),
    Case("azimint_hist", lambda r, d: (_n(r, d, 10), _u(r, d, 0.0, 1.0, 10)), (J, v((0, 0)))),
    Case("crc16", lambda r, d: (_ints(r, 256, 5),), (J, v((0,)))),
    Case("stockham_fft", lambda r, d: (_c(r, d, 8),), (J, v((0,)))),
    Case("contour_integral", _contour, (J, v((0, 0, 0)), v((None, 0, None)))),
    Case("spmv", lambda r, d: (np.array([0, 2, 3, 5]), np.array([0, 2, 1, 0, 3]), _n(r, d, 5), _n(r, d, 4)),
         (J, v((None, None, 0, 0)))),
    Case("mandelbrot", lambda r, d: (_u(r, d, -2.0, -1.5), _u(r, d, 0.5, 1.0), _u(r, d, -1.0, -0.5),
                                     _u(r, d, 0.5, 1.0)), (J,)),
    Case("mandelbrot_grid", lambda r, d: (_c(r, d, 4, 5),), (J, v((0,)), v((1,)))),
    Case("hdiff", lambda r, d: (_n(r, d, 7, 7, 2), _n(r, d, 3, 3, 2)),
         (J, jr("(0, 1)"), v((0, 0)), v((None, 0)), jp(2))),
    Case("vadv", _vadv, (J, gs("(0, 1, 2, 5)"), v((0, 0, 0, 0, 0, 0)), v((None, None, None, None, 0, 0)), jp(6))),
    # numpy-benchmarks (pythran)
    Case("cronbach", lambda r, d: (_n(r, d, 5, 4),), (J, G, H, v((0,)), vg((0,)), jp(1))),
    Case("diffusion", lambda r, d: (_n(r, d, 5, 5),), (J, JR, v((0,)), v((1,)), jp(1))),
    Case("evolve", lambda r, d: (_n(r, d, 4, 5), _u(r, d, 0.05, 0.2)),
         (J, jr("(0, 1)"), v((0, None)), v((0, 0)), jp(2))),
    Case("grayscott", lambda r, d: (_u(r, d, 0.0, 1.0, 4, 4), _u(r, d, 0.0, 1.0, 4, 4)),
         (J, jr("(0, 1)"), v((0, 0)), vgs((0, 0)), jp(2))),
    Case("harris", lambda r, d: (_n(r, d, 5, 5),), (J, JR, v((0,)), v((1,)), jp(1))),
    Case("hasting", _hasting, (J, jr("(0, 2, 3)"), v((0, None, 0, 0, 0, 0, 0, 0)), v((0,) + (None,) * 7),
                               jp(8, (0, 2)))),
    Case("l1norm", lambda r, d: (_n(r, d, 3, 4), _n(r, d, 5, 4)), (J, jr("(0, 1)"), v((0, 0)), v((None, 0)), jp(2))),
    Case("l2norm", lambda r, d: (_n(r, d, 4, 3),), (J, JR, v((0,)), v((1,)), jp(1))),
    Case("laplacien", lambda r, d: (_n(r, d, 5, 5, 3, scale=0.2),), (J, JR, v((0,)), jp(1))),
    Case("local_maxima", lambda r, d: (_n(r, d, 3, 3),), (J, v((0,)))),
    Case("lstsqr", lambda r, d: (_n(r, d, 6), _n(r, d, 6)),
         (J, out(0, "grad", "(0, 1)"), out(1, "hessian", 0), v((0, 0)), v((None, 0)), jp(2))),
    Case("multiple_sum", lambda r, d: (_n(r, d, 4, 3),), (J, JR, v((0,)), v((1,)), jp(1))),
    Case("pairwise", lambda r, d: (_n(r, d, 4, 3),), (J, v((0,)), v((1,)))),
    Case("periodic_dist", lambda r, d: tuple(_u(r, d, 0.0, 4.0, 5) for _ in range(3)),
         (J, out(1, "jacrev", "(0, 1)"), v((0, 0, 0)), v((None, 0, None)), jp(3))),
    Case("repeating", lambda r, d: (_n(r, d, 4),), (J, JR, v((0,)), jp(1))),
    Case("reverse_cumsum", lambda r, d: (_n(r, d, 5),), (J, JR, v((0,)), jp(1))),
    Case("rosen", lambda r, d: (_n(r, d, 5),), (J, G, H, v((0,)), vg((0,)), jp(1))),
    Case("slowparts", _slowparts, (J, gs("(0, 2)"), v((0, 0, 0, 0, 0)), v((None, None, 0, None, None)), jp(5))),
    Case("specialconvolve", lambda r, d: (_n(r, d, 5, 5),), (J, JR, v((0,)), jp(1))),
    Case("vibr_energy", lambda r, d: (_u(r, d, 0.0, 1.0, 5), _u(r, d, 0.0, 1.0, 5), _u(r, d, 0.0, 1.0, 5)),
         (J, jr("(0, 1, 2)"), v((0, 0, 0)), v((None, 0, None)), jp(3))),
    Case("wave_physics", _wave, (J, JR, v((0,)), v((1,)), jp(1))),
    Case("wdist", lambda r, d: (_n(r, d, 4, 3), _n(r, d, 4, 3), _u(r, d, 0.5, 1.5, 4, 3)),
         (J, jr("(0, 1, 2)"), v((0, 0, 0)), v((None, 0, None)), jp(3))),
    Case("euclidean_distance_square", lambda r, d: (_n(r, d, 1, 4), _n(r, d, 5, 4)),
         (J, jr("(0, 1)"), v((0, 0)), v((None, 0)), jp(2))),
    Case("check_mask", lambda r, d: (r.integers(0, 2, (5, 4)).astype(bool),), (J, v((0,)))),
    Case("create_grid", lambda r, d: (_n(r, d, 4),), (J, JR, v((0,)), jp(1))),
    Case("log_likelihood", lambda r, d: (_n(r, d, 6), _n(r, d, scale=0.3), _u(r, d, 0.5, 1.5)),
         (J, g("(0, 1, 2)"), h(2), v((0, None, None)), v((None, 0, 0)), vg((None, 0, 0)), jp(3))),
    Case("make_decision", lambda r, d: (_c(r, d, 5), _c(r, d, 4)), (J, v((0, None)), v((0, 0)))),
    Case("normalize_complex_arr", lambda r, d: (_c(r, d, 5),), (J, v((0,)))),
)

DEFAULT_CASES = ("lu", "correlation", "grayscott")

CORPUS = VmapCorpus(hp, CASES, "hunt24_check_", known_refusals=JAX_REFUSES + KNOWN_REFUSALS,
                    known_internal=KNOWN_INTERNAL, known_wrong=KNOWN_WRONG)

test_hunt24_program, test_hunt24_program_thorough = CORPUS.tests(DEFAULT_CASES)

if __name__ == "__main__":
    CORPUS.main(sys.argv[1:])
