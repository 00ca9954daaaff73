"""tests/hunt16_programs.py's programs (real NumPy code ported as its authors wrote it: dynamic programming on
arrays, signal processing, optimization routines, robotics and graphics, differentiable physics, economics,
Bayesian computation, hand-written linear algebra and the NumPy idioms scripts use) under the transformations their users apply, against four
oracles.

Each case is a program, its arguments (drawn at float64 and float32; integer, boolean and Python-number
arguments stay what they are) and the calls a user makes, written once as text and evaluated with srcjax's
functions and jax's. Checked: srcjax (XLA) against jax running the module's text with ``np`` as jax.numpy (values
and dtypes; where jax cannot run the text, an in-place write or ``np.add.at``, NumPy and finite differences
decide), the user's function run by NumPy (``jit(f)``, and a loop over the examples for ``vmap(f, ...)``),
central finite differences at float64 (``grad``, ``value_and_grad``, ``jacfwd``, ``jacrev``, ``vmap(grad)``),
and the generated source run by NumPy (``srcjax.numpy_function``) against srcjax. A refusal (a located
``TranspileError``) is allowed for the messages in ``KNOWN_REFUSALS``.

The default run checks ``DEFAULT_CASES`` at float64; ``SRCJAX_HYPOTHESIS=thorough`` checks every case at both
dtypes. ``python -m tests.test_hunt16_programs [NAME ...] [--f64|--f32]`` runs the corpus (or the cases named)
and prints the counts and every failure.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

import numpy as np
import pytest

import srcjax
from tests import corpus_harness
from tests.corpus_harness import (
    JF,
    JR,
    Case,
    G,
    H,
    J,
    as_dtype,
    normal,
    positive,
    spd,
    twin_corpus,
    vmap_check,
    vmap_grad_check,
)

from . import hunt16_programs as hp

_a, _n, _pos, _spd = as_dtype, normal, positive, spd

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

# Refusals met (reported; a located TranspileError with a hint), each refused by jax too
KNOWN_REFUSALS: tuple[str, ...] = (
    # weighted_edit_distance, soft_dtw, knapsack: the builtin min()/max() of values computed from arrays (jax:
    # TracerBoolConversionError); the hint names np.minimum / np.maximum
    "the builtin min() compares values known only at run time",
    "the builtin max() compares values known only at run time",
    # knapsack under jit: `range(capacity, wt - 1, -1)` with `wt` an item of an integer array argument
    "a range() bound must be known at transpile time",
    # l1_ball_projection: Duchi's `np.nonzero(cond)[0][-1]` (jax: needs size=)
    "np.nonzero is not supported",
    # newton_armijo under grad: the Armijo `while` on data (jax's while_loop is not reverse-differentiable)
    "needs a bound on its iterations",
    # bincount_stats: np.bincount(..., minlength=5) (jnp.bincount needs length= under jit)
    "np.bincount without length= is not supported",
    # gradient_spacing: np.gradient(..., edge_order=2) (jax: NotImplementedError)
    "np.gradient: srcjax supports edge_order=1",
    # where_one_argument: np.where(cond) as indices (a data-dependent size; jax needs size=)
    "np.where(condition) with one argument is np.nonzero(condition)",
    # look_at_project: `view[0, :3], view[1, :3], view[2, :3] = xaxis, yaxis, zaxis` (jax: in-place writes)
    "assignment to an array element inside a tuple target",
)
# Errors met that are srcjax's own: xfail, not hidden
KNOWN_INTERNAL: tuple[str, ...] = (
    # histogram_fixed under vmap: `np.histogram(x, bins=edges)` with the edges of an earlier np.histogram(x, 6,
    # range=...): the composite's `lo = np.min(x) if range is None else range[0]` joins to a mapped value, so its
    # edges are mapped, and the second call's dead `np.arange(bins)` branch is refused for a mapped `bins`
    "np.arange's start= argument must be the same for every example, but it depends on `bins`",
)
# Wrong answers found and not fixed yet: (case, check[, dtype]) -> why; xfail, not hidden
_CTC = ("np.logaddexp(-inf, -inf)'s derivative is NaN, as jax's (exp(-inf - -inf)): 0 * NaN reaches log_probs from "
        "the unreachable states of alphas; finite differences are finite")
_RAY = ("jax's NaN (0 * inf: sqrt's derivative at 0 for a missed ray); srcjax gives 0, as finite differences do")
_INT_JAC = "jacfwd of an integer output: srcjax's zeros are float64, jax's int64 (DTYPE)"
_O0_MAX = ("XLA at the tests' flags (tests/optimized_xla.py: -O0, no fusion emitters) computes `mask = a == np.max(a)` "
           "as [F, T, F, F] when returned but np.sum(mask) as 0 in the same program (a fused copy of the loop-computed "
           "`a` differs): max_bar divides by 0, NaN. XLA's default flags: right, as jax (/tmp repro in session 35's note)")
KNOWN_WRONG: dict[tuple[str, ...], str] = {
    ("ctc_loss", "grad(f)", "float64"): _CTC,
    ("ctc_loss", "vmap(grad(f), in_axes=(0, None))", "float64"): _CTC,
    ("ray_sphere_shade", "grad(f)"): _RAY,
    ("ray_sphere_shade", "grad(f, argnums=(2, 3))"): _RAY,
    ("ray_sphere_shade", "vmap(grad(f), in_axes=(None, None, 0, 0))"): _RAY,
    ("metropolis_chain", "jacfwd(f)"): _INT_JAC,
    ("mask_logic", "jacfwd(f)"): _INT_JAC,
    ("argmax_nonzero_first", "jacfwd(f)"): _INT_JAC,
    ("value_function_iteration", "jacfwd(f)"): _O0_MAX,
    ("value_function_iteration", "jacrev(f)"): _O0_MAX,
    ("convolve_modes", "vmap(grad(f), in_axes=(0, 0))"): _O0_MAX,
}


# -- the jax side: the module's text with np as jax.numpy ----------------------------------------------------


TWIN = corpus_harness.twin_namespace(hp, jnp)


# -- the corpus's cases -------------------------------------------------------------------------------------

_v, _vg = vmap_check, vmap_grad_check


_t = corpus_harness.unbatched


_u = corpus_harness.uniform


def _log_softmax_rows(r: np.random.Generator, d: Any, T: int, C: int) -> np.ndarray:
    z = r.standard_normal((T, C))
    return _a(z - np.log(np.sum(np.exp(z), axis=1, keepdims=True)), d)


def _lbm(r: np.random.Generator, d: Any) -> np.ndarray:
    w = np.array([4 / 9, 1 / 9, 1 / 36, 1 / 9, 1 / 36, 1 / 9, 1 / 36, 1 / 9, 1 / 36])
    return _a(w * (1.0 + 0.05 * r.standard_normal((4, 5, 9))), d)


def _cloth(r: np.random.Generator, d: Any) -> np.ndarray:
    g = np.stack(np.meshgrid(np.arange(3) * 0.5, np.arange(3) * 0.5, indexing="ij"), -1)
    return _a(np.concatenate([g, np.zeros((3, 3, 1))], -1) + 0.05 * r.standard_normal((3, 3, 3)), d)


def _simplex(r: np.random.Generator, d: Any) -> np.ndarray:
    return (_a(np.array([[-1.2, 1.0], [-1.0, 1.0], [-1.2, 1.2]]) + 0.05 * r.standard_normal((3, 2)), d),)


def _biquad(r: np.random.Generator, d: Any) -> tuple[np.ndarray, ...]:
    return (_n(r, d, 8), _a([0.2, 0.4, 0.2] + 0.02 * r.standard_normal(3), d),
            _a([1.0, -0.5 + 0.05 * r.standard_normal(), 0.2], d))


def _bfgs(r: np.random.Generator, d: Any) -> tuple[np.ndarray, ...]:
    return (_spd(r, d, 3), _n(r, d, 3), _n(r, d, 3))


def _dogleg(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return (_n(r, d, 3), _spd(r, d, 3), _a(r.uniform(0.3, 0.6), d))


def _rays(r: np.random.Generator, d: Any) -> tuple[np.ndarray, ...]:
    origins = np.zeros((5, 3)) + 0.05 * r.standard_normal((5, 3))
    dirs = np.array([[0, 0, 1.0], [0.1, 0, 1], [0.9, 0, 0.2], [0, 0.2, 1], [0, 0, -1]])
    return (_a(origins, d), _a(dirs + 0.02 * r.standard_normal((5, 3)), d), _a([0.0, 0.0, 3.0], d),
            _a(r.uniform(0.8, 1.2), d))


def _tri(r: np.random.Generator, d: Any) -> tuple[np.ndarray, ...]:
    return (_u(r, d, 0.0, 1.0, 4, 2), _a([0.0, 0.0], d), _a([1.5, 0.1], d) + _n(r, d, 2, scale=0.05),
            _a([0.2, 1.3], d))


def _phong(r: np.random.Generator, d: Any) -> tuple[np.ndarray, ...]:
    return (_n(r, d, 4, 3) + _a([0, 0, -2.0], d), _a([1.0, 2.0, 1.0], d) + _n(r, d, 3, scale=0.1),
            _n(r, d, 4, 3, scale=0.3) + _a([0, 0, 4.0], d))


def _sph(r: np.random.Generator, d: Any) -> tuple[np.ndarray, ...]:
    return (_a(np.array([[0, 0], [0.7, 0.1], [0.2, 1.3], [1.5, 1.4], [2.9, 0.2]]) + 0.03 * r.standard_normal((5, 2)),
               d), _pos(r, d, 5))


def _groups(r: np.random.Generator, d: Any) -> tuple[np.ndarray, ...]:
    return (_n(r, d, 8), np.array([0, 1, 1, 3, 0, 3, 3, 1]))


def _hmc(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return (_n(r, d, 2), _n(r, d, 2), _a(r.uniform(0.2, 0.5), d))


def _metropolis(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return (_n(r, d, 2), _n(r, d, 6, 2), _u(r, d, 0.05, 0.95, 6))


def _pivot(r: np.random.Generator, d: Any) -> tuple[np.ndarray, ...]:
    A = r.standard_normal((4, 4)) + 2 * np.eye(4)
    A[0, 0] = 0.1  # (a pivot to swap)
    return (_a(A, d), _n(r, d, 4))


CASES: tuple[Case, ...] = (
    # dynamic programming on arrays
    Case("weighted_edit_distance", hp.weighted_edit_distance,
         lambda r, d: (_u(r, d, 0.0, 2.0, 4, 3), _a(r.uniform(0.5, 1.0), d), _a(r.uniform(0.5, 1.0), d)),
         (J, G, _t("grad(f, argnums=(1, 2))"), _v((0, None, None)), _vg((0, None, None)))),
    Case("dtw_distance", hp.dtw_distance, lambda r, d: (_n(r, d, 5), _n(r, d, 4)),
         (J, G, _t("grad(f, argnums=1)"), _v((0, None)), _vg((0, 0)))),
    Case("soft_dtw", hp.soft_dtw, lambda r, d: (_n(r, d, 4, 2), _n(r, d, 3, 2)),
         (J, G, _t("grad(f, argnums=1)"), H, _v((0, None)), _vg((0, 0)))),
    Case("ctc_loss", hp.ctc_loss, lambda r, d: (_log_softmax_rows(r, d, 5, 4), np.array([1, 3, 3])),
         (J, G, _v((0, None)), _vg((0, None)))),
    Case("smith_waterman", hp.smith_waterman, lambda r, d: (_n(r, d, 4, 4),),
         (J, G, _v((0,)), _vg((0,)))),
    Case("knapsack", hp.knapsack, lambda r, d: (_pos(r, d, 4), np.array([2, 3, 1, 4])),
         (J, G, _v((0, None)), _vg((0, None)))),
    # signal processing
    Case("biquad_df2t", hp.biquad_df2t, _biquad,
         (J, JF, _t("jacrev(f, argnums=1)"), _t("jacfwd(f, argnums=2)"), _v((0, None, None)), _v((None, 0, 0)))),
    Case("goertzel_bins", hp.goertzel_bins, lambda r, d: (_n(r, d, 8),), (J, JF, JR, _v((0,))),
         numpy_dtypes="np.cos(w) of a Python float is a float64 NumPy scalar (weak in jax)"),
    Case("lpc_from_signal", hp.lpc_from_signal, lambda r, d: (_n(r, d, 10),), (J, JF, JR, _v((0,)))),
    Case("windowed_spectrum", hp.windowed_spectrum, lambda r, d: (_n(r, d, 8),), (J, JF, JR, _v((0,)))),
    Case("overlap_add", hp.overlap_add, lambda r, d: (_n(r, d, 3, 4),), (J, JF, JR, _v((0,)), _v((1,)))),
    Case("convolve_modes", hp.convolve_modes, lambda r, d: (_n(r, d, 6), _n(r, d, 3)),
         (J, G, _t("grad(f, argnums=1)"), H, _v((0, None)), _vg((0, 0)))),
    Case("savgol_smooth", hp.savgol_smooth, lambda r, d: (_n(r, d, 9),), (J, JF, JR, _v((0,))),
         numpy_dtypes="np.linalg.pinv of an int64 Vandermonde matrix is float64 in NumPy (float32 in jax)"),
    Case("autocorr_normalized", hp.autocorr_normalized, lambda r, d: (_n(r, d, 8),), (J, JF, JR, _v((0,)))),
    # optimization routines
    Case("bfgs_quadratic", hp.bfgs_quadratic, _bfgs,
         (J, JF, _t("jacrev(f, argnums=1)"), _t("jacfwd(f, argnums=2)"), _v((0, 0, 0)), _v((None, 0, None))),
         rtol32=5e-3),
    Case("nelder_mead", hp.nelder_mead, _simplex, (J, JF, _v((0,)))),
    Case("dogleg_step", hp.dogleg_step, _dogleg,
         (J, JF, _t("jacrev(f, argnums=2)"), _v((0, None, None)), _v((0, 0, 0)))),
    Case("l1_ball_projection", hp.l1_ball_projection, lambda r, d: (_n(r, d, 5),), (J, JF, _v((0,)))),
    Case("newton_armijo", hp.newton_armijo, lambda r, d: (_n(r, d, 3),), (J, G, _v((0,)), _vg((0,))),
         rtol32=5e-3),
    # robotics and graphics
    Case("quat_slerp", hp.quat_slerp, lambda r, d: (_n(r, d, 4), _n(r, d, 4), _a(r.uniform(0.2, 0.8), d)),
         (J, JF, _t("jacrev(f, argnums=2)"), _v((0, 0, None)), _v((None, None, 0)))),
    Case("quat_to_matrix_euler", hp.quat_to_matrix_euler, lambda r, d: (_n(r, d, 4),), (J, JF, JR, _v((0,)))),
    Case("planar_arm_fk", hp.planar_arm_fk, lambda r, d: (_n(r, d, 3), _pos(r, d, 3)),
         (J, JF, _t("jacrev(f, argnums=1)"), _v((0, None)), _v((0, 0)))),
    Case("planar_ik_dls", hp.planar_ik_dls, lambda r, d: (_n(r, d, 3, scale=0.5), _a([1.2, 1.0], d)),
         (J, JF, _t("jacrev(f, argnums=1)"), _v((0, None)), _v((None, 0)))),
    Case("ray_sphere_shade", hp.ray_sphere_shade, _rays,
         (J, G, _t("grad(f, argnums=(2, 3))"), _v((0, None, None, None)), _vg((None, None, 0, 0)))),
    Case("barycentric", hp.barycentric, _tri, (J, JF, _t("jacrev(f, argnums=2)"), _v((0, None, None, None)),
                                              _v((None, 0, 0, 0)))),
    Case("phong_shading", hp.phong_shading, _phong,
         (J, JF, _t("jacrev(f, argnums=1)"), _v((0, None, None)), _v((None, 0, 0)))),
    Case("look_at_project", hp.look_at_project,
         lambda r, d: (_n(r, d, 4, 3, scale=0.5), _a([1.0, 1.5, 5.0], d) + _n(r, d, 3, scale=0.1)),
         (J, JF, _t("jacrev(f, argnums=1)"), _v((0, None)), _v((None, 0)))),
    # differentiable physics
    Case("sph_density", hp.sph_density, _sph,
         (J, JF, _t("jacrev(f, argnums=1)"), _v((0, None)), _v((None, 0)))),
    Case("lbm_d2q9", hp.lbm_d2q9, lambda r, d: (_lbm(r, d),), (J, G, _v((0,)), _vg((0,))), rtol32=5e-3),
    Case("cloth_energy", hp.cloth_energy, lambda r, d: (_cloth(r, d),), (J, G, H, _v((0,)), _vg((0,))),
         numpy_dtypes="rest * np.sqrt(2) is a float64 NumPy scalar: float32 lengths minus it are float64 in NumPy 2 (weak in jax)"),
    Case("xy_model_energy", hp.xy_model_energy, lambda r, d: (_n(r, d, 3, 4),), (J, G, H, _v((0,)), _vg((0,)))),
    Case("gray_scott", hp.gray_scott, lambda r, d: (_u(r, d, 0.5, 1.0, 4, 4), _u(r, d, 0.0, 0.5, 4, 4)),
         (J, JF, _t("jacrev(f, argnums=1)"), _v((0, 0)), _v((None, 0)))),
    # economics
    Case("value_function_iteration", hp.value_function_iteration, lambda r, d: (_a(r.uniform(0.85, 0.95), d),),
         (J, JF, JR, _v((0,)))),
    Case("ces_demand", hp.ces_demand, lambda r, d: (_pos(r, d, 3), _a(r.uniform(1.0, 2.0), d), _pos(r, d, 3)),
         (J, G, _t("grad(f, argnums=(1, 2))"), H, _v((0, None, None)), _vg((0, 0, 0)))),
    Case("bellman_job_search", hp.bellman_job_search, lambda r, d: (_u(r, d, 0.5, 2.0, 6),),
         (J, G, _v((0,)), _vg((0,)))),
    # Bayesian computation
    Case("metropolis_chain", hp.metropolis_chain, _metropolis,
         (J, JF, _v((0, None, None)), _v((None, 0, 0)))),
    Case("log_mean_exp_weights", hp.log_mean_exp_weights, lambda r, d: (_n(r, d, 3, 6, scale=2.0),),
         (J, JF, JR, _v((0,)), _v((1,)))),
    Case("hmc_step", hp.hmc_step, _hmc, (J, JF, _t("jacrev(f, argnums=1)"), _v((0, 0, 0)), _v((None, None, 0)))),
    # hand-written linear algebra
    Case("gauss_pivot_solve", hp.gauss_pivot_solve, _pivot,
         (J, JF, _t("jacrev(f, argnums=1)"), _v((0, 0)), _v((None, 0))), rtol32=5e-3),
    Case("cholesky_banachiewicz", hp.cholesky_banachiewicz, lambda r, d: (_spd(r, d, 4),),
         (J, JF, JR, _v((0,))), fd=False),  # (reads one triangle: finite differences of one element differ)
    Case("modified_gram_schmidt", hp.modified_gram_schmidt, lambda r, d: (_n(r, d, 5, 3),), (J, JF, JR, _v((0,))),
         rtol32=5e-3),
    Case("lanczos_tridiag", hp.lanczos_tridiag, lambda r, d: (_spd(r, d, 5), _n(r, d, 5)),
         (J, JF, _t("jacrev(f, argnums=1)"), _v((0, None)), _v((None, 0))), rtol32=5e-3),
    Case("jacobi_eigenvalues", hp.jacobi_eigenvalues, lambda r, d: (_spd(r, d, 3),), (J, JF, JR, _v((0,))),
         rtol32=5e-3, fd=False),
    Case("inverse_iteration", hp.inverse_iteration, lambda r, d: (_spd(r, d, 4), _a(0.2, d)),
         (J, JF, _t("jacrev(f, argnums=1)"), _v((0, None)), _v((None, 0))), rtol32=5e-3, fd=False),
    # NumPy idioms
    Case("tax_select", hp.tax_select, lambda r, d: (_u(r, d, 0.0, 4.0, 6),), (J, JF, JR, _v((0,)))),
    Case("piecewise_callables", hp.piecewise_callables, lambda r, d: (_n(r, d, 5),), (J, JF, JR, _v((0,)))),
    Case("digitize_lookup", hp.digitize_lookup, lambda r, d: (_u(r, d, -1.5, 1.5, 6), _n(r, d, 5)),
         (J, JF, _t("jacrev(f, argnums=1)"), _v((0, None)), _v((None, 0)))),
    Case("searchsorted_sides", hp.searchsorted_sides, lambda r, d: (_u(r, d, -1.2, 1.2, 6), _n(r, d, 5)),
         (J, JF, _t("jacrev(f, argnums=1)"), _v((0, None)), _v((None, 0))),
         numpy_dtypes="float32 plus np.searchsorted's int64 indices is float64 in NumPy (float32 in jax)"),
    Case("bincount_stats", hp.bincount_stats, _groups, (J, JF, JR, _v((0, None)), _v((0, 0)))),
    Case("histogram_fixed", hp.histogram_fixed, lambda r, d: (_n(r, d, 10),), (J, _v((0,))),
         numpy_dtypes="np.histogram's counts are int64 in NumPy (float in jax)"),
    Case("topk_take_along", hp.topk_take_along, lambda r, d: (_n(r, d, 3, 5),), (J, JF, JR, _v((0,)), _v((1,)))),
    Case("lexsort_ranking", hp.lexsort_ranking, lambda r, d: (_n(r, d, 6), _a(r.integers(0, 3, 6), d)),
         (J, JF, _v((0, 0)), _v((None, 0)))),
    Case("survival_cumprod", hp.survival_cumprod, lambda r, d: (_u(r, d, 0.05, 0.5, 2, 5),),
         (J, JF, JR, _v((0,)), _v((1,)))),
    Case("curvature_diff2", hp.curvature_diff2, lambda r, d: (_n(r, d, 7),), (J, G, H, _v((0,)), _vg((0,)))),
    Case("gradient_spacing", hp.gradient_spacing, lambda r, d: (_n(r, d, 4, 5),), (J, G, H, _v((0,)), _vg((0,)))),
    Case("trapezoid_moments", hp.trapezoid_moments, lambda r, d: (_pos(r, d, 7),), (J, G, _v((0,)), _vg((0,)))),
    Case("polyval_polyder", hp.polyval_polyder, lambda r, d: (_n(r, d, 4), _n(r, d, 5)),
         (J, JF, _t("jacrev(f, argnums=1)"), _v((0, None)), _v((0, 0))),
         numpy_dtypes="np.polyder multiplies by an int64 np.arange: float64 in NumPy (float32 in jax)"),
    Case("kron_laplacian", hp.kron_laplacian, lambda r, d: (_n(r, d, 3, 3),), (J, G, H, _v((0,)), _vg((0,)))),
    Case("banded_masks", hp.banded_masks, lambda r, d: (_n(r, d, 4, 4),), (J, G, H, _v((0,)), _vg((0,)))),
    Case("meshgrid_ij_field", hp.meshgrid_ij_field, lambda r, d: (_a(r.uniform(0.5, 2.0), d), _a(r.uniform(0.5, 2.0), d)),
         (J, JF, _t("jacrev(f, argnums=1)"), _v((0, None)), _v((0, 0)))),
    Case("broadcast_to_outer", hp.broadcast_to_outer, lambda r, d: (_n(r, d, 3), _n(r, d, 4)),
         (J, JF, _t("jacrev(f, argnums=1)"), _v((0, None)), _v((0, 0)))),
    Case("split_array_split", hp.split_array_split, lambda r, d: (_n(r, d, 9),), (J, G, _v((0,)), _vg((0,)))),
    Case("stacks_columns", hp.stacks_columns, lambda r, d: (_n(r, d, 4), _n(r, d, 4)),
         (J, JF, _t("jacrev(f, argnums=1)"), _v((0, None)), _v((0, 0)))),
    Case("pad_modes", hp.pad_modes, lambda r, d: (_n(r, d, 5),), (J, JF, JR, _v((0,)))),
    Case("clip_arrays", hp.clip_arrays, lambda r, d: (_n(r, d, 6), _u(r, d, -1.0, -0.2, 6), _u(r, d, 0.2, 1.0, 6)),
         (J, JF, _t("jacrev(f, argnums=(1, 2))"), _v((0, None, None)), _v((0, 0, 0)))),
    Case("nan_to_num_guard", hp.nan_to_num_guard, lambda r, d: (_a([0.0, -1.0, 0.5, 1.05, 2.0, 3.0], d) +
                                                                _a(np.r_[0, 0, 0.01 * r.standard_normal(4)], d),),
         (J, JF, JR, _v((0,))), fd=False),  # (log at 0: finite differences straddle the pole; jax agrees)
    Case("fancy_negative_repeated", hp.fancy_negative_repeated, lambda r, d: (_n(r, d, 6),),
         (J, JF, JR, _v((0,)))),
    Case("mask_logic", hp.mask_logic, lambda r, d: (_n(r, d, 8), _n(r, d, 8)),
         (J, JF, _t("jacrev(f, argnums=1)"), _v((0, None)), _v((0, 0))),
         numpy_dtypes="a float32 sum divided by np.count_nonzero's int64 is float64 in NumPy (float32 in jax)"),
    Case("negative_floordiv_mod", hp.negative_floordiv_mod, lambda r, d: (_u(r, d, -3.0, 3.0, 8),),
         (J, JF, JR, _v((0,))),
         numpy_dtypes="int64 (k // 3) times float32 x is float64 in NumPy (float32 in jax)"),
    Case("int_float_mix", hp.int_float_mix, lambda r, d: (_n(r, d, 5), 3), (J, JF, _v((0, None)))),
    Case("axis_tuple_ddof", hp.axis_tuple_ddof, lambda r, d: (_n(r, d, 3, 2, 4),), (J, JF, JR, _v((0,)), _v((2,)))),
    Case("where_one_argument", hp.where_one_argument, lambda r, d: (_n(r, d, 6),), (J, G)),
    Case("argmax_nonzero_first", hp.argmax_nonzero_first, lambda r, d: (_n(r, d, 6),), (J, JF, _v((0,)))),
)

DEFAULT_CASES = ("hmc_step", "quat_to_matrix_euler")  # (the two programs whose fixes the corpus found)


# -- running a check ------------------------------------------------------------------------------------------

CORPUS = twin_corpus(CASES, "hunt16_programs.py", KNOWN_REFUSALS, TWIN, KNOWN_INTERNAL, KNOWN_WRONG)



test_hunt16_program, test_hunt16_program_thorough = CORPUS.tests(DEFAULT_CASES)

if __name__ == "__main__":
    CORPUS.main(sys.argv[1:])




# -- regressions found by the corpus ------------------------------------------------------------------------

_agree = corpus_harness.agree_values


def _unpacked_quotient(q: Any, s: Any) -> Any:
    w, x, y, z = q / s
    return w * x + y * z


def _unpacked_unit(q: Any) -> Any:
    w, x, y, z = q / np.linalg.norm(q)
    return np.arctan2(2 * (x * y + z * w), 1 - 2 * (y * y + z * z))


def test_reverse_mode_of_a_quotient_unpacked_into_names() -> None:
    """Refused where jax runs it (hunt16's quat_to_matrix_euler under jacrev): ``w, x, y, z = q / np.linalg.norm(q)``
    failed "np.multiply(): a tuple of traced values where an array goes": the division's rule for its divisor reads
    its result (``-out_bar * out / x2``), and ``out`` was the tuple ``(w, x, y, z)``, not the array of its rows."""
    q = np.array([0.3, -0.5, 0.7, 0.2])
    jq = lambda q: jnp.arctan2(2 * (q[1] * q[2] + q[3] * q[0]), 1 - 2 * (q[2] ** 2 + q[3] ** 2))  # noqa: E731
    _agree(srcjax.grad(_unpacked_unit)(q), jax.grad(lambda q: jq(q / jnp.linalg.norm(q)))(q), "grad vs jax")
    _agree(srcjax.jacrev(_unpacked_unit)(q), srcjax.jacfwd(_unpacked_unit)(q), "jacrev vs jacfwd")
    g = srcjax.grad(_unpacked_quotient, argnums=(0, 1))(q, 2.0)
    _agree(g[1], -2 * (q[0] * q[1] + q[2] * q[3]) / 8.0, "d/ds")
    _agree(g[0], np.array([q[1], q[0], q[3], q[2]]) / 4.0, "d/dq")


def _leapfrog(q0: Any, p0: Any, eps: float = 0.15, L: int = 3) -> Any:
    def grad_U(q: Any) -> Any:
        return 2.0 * q

    q = q0
    p = p0 - 0.5 * eps * grad_U(q)
    for i in range(L):
        q = q + eps * p
        if i != L - 1:
            p = p - eps * grad_U(q)
    return q + p


def _function_by_data(x: Any) -> Any:
    if x.sum() > 0:
        h = np.sin
    else:
        h = np.cos
    return h(x)


def test_vmap_of_a_loop_calling_a_nested_def_in_an_if_on_its_counter() -> None:
    """Refused where jax runs it (hunt16's hmc_step under vmap): a leapfrog loop ``for i in range(L)`` calling a
    nested ``def grad_U`` under ``if i != L - 1`` failed "`grad_U` is <function grad_U> on one branch and something
    else on another": vmap's loop body defines ``grad_U`` again inside the branch (a rolled loop's counter is data),
    and the branches' join refused the two functions although nothing reads ``grad_U`` after the ``if``. A name
    read after it that is a different Python object on each branch is still refused, at the read."""
    Q = np.random.default_rng(0).standard_normal((3, 2))
    _agree(srcjax.vmap(_leapfrog)(Q, -Q), np.stack([_leapfrog(q, -q) for q in Q]), "vmap vs NumPy")
    _agree(srcjax.vmap(srcjax.grad(lambda q, p: np.sum(_leapfrog(q, p))))(Q, -Q),
           np.stack([jax.grad(lambda q, p: jnp.sum(_leapfrog(q, p)))(q, -q) for q in Q]), "vmap(grad) vs jax")
    with pytest.raises(srcjax.TranspileError, match="on one branch and something else on another") as e:
        srcjax.jit(_function_by_data)(np.ones(3))
    assert "test_hunt16_programs.py" in str(e.value).splitlines()[0] and "h(x)" in str(e.value)


def _design(x: Any, y: Any) -> Any:
    X = np.column_stack([x, y, x * y])
    D = np.dstack([X, X ** 2])
    return np.sum((X.T @ X) ** 2) + np.sum(np.dstack([x, y]) * D[:1, :1, :])


def test_column_stack_and_dstack() -> None:
    """Refused where NumPy and jax run them (hunt16's stacks_columns): "np.column_stack is not supported by srcjax
    (yet)". 1-D arrays become columns (dstack: ``(1, n, 1)``), 2-D ones join as they are, under jit, grad and
    vmap(grad) (jax oracle)."""
    r = np.random.default_rng(0)
    x, y = r.standard_normal(4), r.standard_normal(4)

    def twin(x: Any, y: Any) -> Any:
        X = jnp.column_stack([x, y, x * y])
        D = jnp.dstack([X, X ** 2])
        return jnp.sum((X.T @ X) ** 2) + jnp.sum(jnp.dstack([x, y]) * D[:1, :1, :])

    _agree(srcjax.jit(_design)(x, y), _design(x, y), "jit vs NumPy")
    _agree(srcjax.grad(_design, argnums=(0, 1))(x, y), jax.grad(twin, argnums=(0, 1))(x, y), "grad vs jax")
    X, Y = np.stack([x, 2 * x]), np.stack([y, -y])
    _agree(srcjax.vmap(srcjax.grad(_design))(X, Y), jax.vmap(jax.grad(twin))(X, Y), "vmap(grad) vs jax")


def _logdet_by_loops(S: Any) -> Any:
    L = hp.cholesky_banachiewicz(S @ S.T + np.eye(len(S)))
    return 2.0 * np.sum(np.log(np.diag(L)))


def test_cholesky_by_loops_writing_rows_by_two_subscripts() -> None:
    """Refused where NumPy runs it (hunt16's cholesky_banachiewicz, Rosetta Code's ``L[i][j] = ...``): "a[i][j] = v
    into an array: write a[i, j] = v". ``L[i]`` of a number ``i`` is a view NumPy writes through: jit against
    NumPy, grad against jax's ``slogdet``, vmap against NumPy."""
    S = np.random.default_rng(2).standard_normal((4, 4))
    A = S @ S.T + np.eye(4)
    _agree(srcjax.jit(hp.cholesky_banachiewicz)(A), np.linalg.cholesky(A), "jit vs np.linalg.cholesky")
    _agree(srcjax.grad(_logdet_by_loops)(S), jax.grad(lambda S: jnp.linalg.slogdet(S @ S.T + jnp.eye(4))[1])(S),
           "grad vs jax", rtol=1e-8)
    As = np.stack([A, 2 * A])
    _agree(srcjax.vmap(hp.cholesky_banachiewicz)(As), np.linalg.cholesky(As), "vmap vs NumPy")


def _sgd_zip(w: Any, b: Any, gw: Any, gb: Any) -> Any:
    params = [w.copy(), b.copy()]
    for p, g in zip(params, [gw, gb]):
        p -= 0.1 * g  # (NumPy: params' own arrays change)
    return params[0].sum() + params[1].sum()


def _halve_values(w: Any, b: Any) -> Any:
    params = {"w": w.copy(), "b": b.copy()}
    for p in params.values():
        p *= 0.5
    return params["w"].sum() + params["b"].sum()


def _scale_enumerated(w: Any, b: Any) -> Any:
    params = [w.copy(), b.copy()]
    for i, p in enumerate(params):
        p += i
    return params[1]


def _sgd_by_key(w: Any, b: Any, gw: Any, gb: Any) -> Any:
    params, grads = {"w": w.copy(), "b": b.copy()}, {"w": gw, "b": gb}
    for k in params:
        params[k] -= 0.1 * grads[k]
    return params["w"].sum() + params["b"].sum()


@pytest.mark.parametrize("fn", [_sgd_zip, _halve_values, _scale_enumerated], ids=lambda f: f.__name__)
def test_an_in_place_change_of_a_zip_enumerate_or_values_item_is_refused(fn: Any) -> None:
    """Silently wrong before: ``for p, g in zip(params, grads): p -= lr * g`` (the optimizer loop of hand-written
    NumPy training code) changes ``params``' arrays in NumPy; srcjax rebound ``p`` and returned the old
    parameters (``_sgd_zip``: -0.59 for -0.78). ``for p in d.values()`` and ``for i, p in enumerate(ps)`` too. The
    item of ``zip``, ``enumerate``, ``.values()`` and ``.items()`` is the sequence's own array, as ``for d in ds``'s
    was: refused at the change, as there. The same update by key runs (jit vs NumPy); with the dicts bound by one
    tuple assignment (``params, grads = {...}, {...}``) it failed "KeyError: 0" at ``for k in params`` (the loop
    walked params by position: only a dict bound alone was known to be one)."""
    r = np.random.default_rng(0)
    args = (r.standard_normal(3), r.standard_normal(2), r.standard_normal(3), r.standard_normal(2))
    n = len(inspect.signature(fn).parameters)
    with pytest.raises(srcjax.TranspileError, match="in place in NumPy") as e:
        srcjax.jit(fn)(*args[:n])
    assert "test_hunt16_programs.py" in str(e.value).splitlines()[0]
    _agree(srcjax.jit(_sgd_by_key)(*args), _sgd_by_key(*[a.copy() for a in args]), "by key: jit vs NumPy")
    _agree(srcjax.grad(_sgd_by_key, argnums=2)(*args), np.full(3, -0.1), "by key: grad")


def _row_alias(W: Any) -> Any:
    W = W.copy()
    row = W[1]  # (a view of a 2-D W's row; a copy of a 1-D W's item)
    row += 1.0
    return W


def test_an_in_place_change_through_a_row_bound_by_an_integer_index() -> None:
    # `row = W[i]; row += v` changes a 2-D W's row in NumPy (W[i] is a view): refused at the line when W is read
    # later (was silently the old W); a 1-D W's item is a copy, bound again as NumPy does
    with pytest.raises(srcjax.TranspileError, match="in place") as e:
        srcjax.jit(_row_alias)(np.arange(6.0).reshape(2, 3))
    assert "row += 1.0" in str(e.value)
    W1 = np.arange(3.0)
    _agree(srcjax.jit(_row_alias)(W1), _row_alias(W1), "1-D: jit vs NumPy")
    with pytest.raises(srcjax.TranspileError, match="in place"):  # (per example under vmap too)
        srcjax.vmap(_row_alias)(np.arange(12.0).reshape(2, 2, 3))
    _agree(srcjax.vmap(_row_alias)(np.arange(6.0).reshape(2, 3)),
           np.stack([_row_alias(r) for r in np.arange(6.0).reshape(2, 3)]), "vmap of 1-D rows vs NumPy")


def _nearest_distance(X: Any) -> Any:
    D = np.sqrt(np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1) + 1e-12)
    np.fill_diagonal(D, np.inf)  # (a point is not its own neighbour)
    return D.min(axis=1).sum()


def _filled(A: Any, v: Any) -> Any:
    B = A.copy()
    np.fill_diagonal(B, v)
    C = np.empty_like(A)
    C.fill(2.0)
    np.copyto(C, C * B)
    return C


def _aliased_fill(A: Any) -> Any:
    B = A.copy()
    C = B
    np.fill_diagonal(B, 0.0)
    return C


def test_fill_diagonal_copyto_and_fill_write_into_their_array() -> None:
    """Refused where NumPy runs them: "np.fill_diagonal is not supported by srcjax (yet)" (kNN and kernel code's
    ``np.fill_diagonal(D, np.inf)``), "np.copyto is not supported", "the array method .fill() changes the array in
    place". Each is the write ``a[...] = ...`` into its array: jit against NumPy, grad against jax's functional
    twin, a value per diagonal element on a wide and a tall matrix; through another name bound to the same array
    it is refused (NumPy changes both)."""
    X = np.random.default_rng(3).standard_normal((5, 2))
    _agree(srcjax.jit(_nearest_distance)(X), _nearest_distance(X), "jit vs NumPy")

    def twin(X: Any) -> Any:
        D = jnp.sqrt(jnp.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1) + 1e-12)
        return jnp.where(jnp.eye(len(X), dtype=bool), jnp.inf, D).min(axis=1).sum()

    _agree(srcjax.grad(_nearest_distance)(X), jax.grad(twin)(X), "grad vs jax")
    A, v = np.arange(12.0).reshape(3, 4) - 5, np.array([7.0, 8.0, 9.0])
    for M in (A, A.T):
        _agree(srcjax.jit(_filled)(M, v), _filled(M, v), "a value per element: jit vs NumPy")
        _agree(srcjax.jit(_filled)(M, 1.5), _filled(M, 1.5), "a number: jit vs NumPy")
    with pytest.raises(srcjax.TranspileError, match="would change too") as e:
        srcjax.jit(_aliased_fill)(A)
    assert "test_hunt16_programs.py" in str(e.value).splitlines()[0]


def _item_updated_by_name(w: Any, b: Any) -> Any:
    params = {"w": w.copy(), "b": b.copy()}
    W = params["w"]
    W -= 0.1  # (NumPy: params["w"] changes)
    return params["w"]


def _list_item_updated_by_name(w: Any, b: Any) -> Any:
    layers = [w.copy(), b.copy()]
    first = layers[0]
    first *= 2.0
    return layers[0].sum() + layers[1].sum()


def _number_item_rebound(w: Any, b: Any) -> Any:
    cfg = {"lr": 0.1, "decay": 0.5}
    lr = cfg["lr"]
    lr *= cfg["decay"]  # (a Python number: `*=` binds lr again, cfg keeps 0.1)
    return w * lr + cfg["lr"]


def test_an_in_place_change_through_a_name_bound_to_a_containers_item_is_refused() -> None:
    """Silently wrong before: ``W = params["w"]; W -= lr`` with ``params`` a dict (or list) the function made
    changes ``params["w"]`` in NumPy; srcjax rebound ``W`` and ``params["w"]`` kept the old array. Refused at the
    change now, as ``W[0] = v`` was. A container of numbers only (``cfg = {"lr": 0.1}``) is not refused: ``*=``
    binds a number again in NumPy too."""
    w, b = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0])
    for fn in (_item_updated_by_name, _list_item_updated_by_name):
        with pytest.raises(srcjax.TranspileError, match="in place in NumPy") as e:
            srcjax.jit(fn)(w, b)
        assert "test_hunt16_programs.py" in str(e.value).splitlines()[0]
    _agree(srcjax.jit(_number_item_rebound)(w, b), _number_item_rebound(w, b), "numbers: jit vs NumPy")


def _late_bound_in_loop(w: Any) -> Any:
    a = w.copy()

    def h() -> Any:
        return a.sum()

    out = 0.0
    for _ in range(3):
        a = a * 2
        out = out + h()  # (Python: h reads the current a)
    return out


def _argument_item_updated(params: Any) -> Any:
    W = params["w"]
    W -= 0.1  # (NumPy: the caller's params["w"] changes, and the function returns it)
    return params["w"]


def _late_bound_unrolled(w: Any) -> Any:
    a = w.copy()
    h = lambda: a.sum()  # noqa: E731
    out = []
    for _ in range(3):
        a = a * 2
        out.append(h())
    return np.array(out)


def _argument_passed(w: Any) -> Any:
    a = w.copy()

    def h(a: Any) -> Any:
        return a.sum()

    out = 0.0
    for _ in range(3):
        a = a * 2
        out = out + h(a)
    return out


def test_a_nested_def_called_in_a_loop_that_rebinds_what_it_reads_is_refused() -> None:
    """Silently wrong before: ``def h(): return a.sum()``, then ``for ...: a = a * 2; out += h()``: Python's ``h``
    reads each new ``a`` (21.0); srcjax's loop body, a generated function with its own ``a``, called ``h`` closed
    over the ``a`` from before the loop (4.5); an unrolled loop (``out.append(h())``) too. Refused at the loop now
    (``frontend/closure_reads.py``), with the hint to pass ``a``; passed as an argument it runs."""
    w = np.array([0.5, -1.0, 2.0])
    for fn in (_late_bound_in_loop, _late_bound_unrolled):
        with pytest.raises(srcjax.TranspileError, match="reads `a`, which the loop binds again") as e:
            srcjax.jit(fn)(w)
        assert "test_hunt16_programs.py" in str(e.value).splitlines()[0]
    _agree(srcjax.jit(_argument_passed)(w), _argument_passed(w), "jit vs NumPy")


def test_an_in_place_change_through_an_arguments_item() -> None:
    # `W = params['w']; W -= v` with params an argument read later: an array item is changed in NumPy (refused at
    # the line, under grad too; was silently the old item), a number item is bound again (runs, as NumPy)
    p = {"w": np.array([0.5, -1.0, 2.0])}
    with pytest.raises(srcjax.TranspileError, match="in place"):
        srcjax.jit(_argument_item_updated)(p)
    with pytest.raises(srcjax.TranspileError, match="in place"):
        srcjax.grad(lambda q: np.sum(_argument_item_updated(q)))(p)
    q = {"w": 0.5}
    _agree(srcjax.jit(_argument_item_updated)(q), _argument_item_updated(dict(q)), "a number item: jit vs NumPy")


def _list_slots_replaced(w: Any, b: Any) -> Any:
    weights = [w.copy(), b.copy()]
    s = 0.0
    for i, v in enumerate(weights):
        weights[i] = v * 0.5  # (the list's slot gets a new array: v keeps the old one, in NumPy too)
        s = s + v.sum()
    return s + weights[0].sum()


def test_replacing_a_lists_slot_does_not_change_its_old_item() -> None:
    """``xs[i] = v`` on a list the function made replaces the slot: the old item, still read through the loop's
    name, is unchanged in NumPy, so it is not refused (an array's row written this way is: its view changes)."""
    w, b = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0])
    _agree(srcjax.jit(_list_slots_replaced)(w, b), _list_slots_replaced(w, b), "jit vs NumPy")


def _chained_zeros(x: Any) -> Any:
    a = b = np.zeros(3)
    a += x  # (NumPy: b is the same array)
    return b


def _chained_moments(w: Any, g: Any) -> Any:
    m = v = np.zeros_like(w)  # (rebound before any in-place change: no alias is ever changed)
    for _ in range(2):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g ** 2
        w = w - 0.01 * m / (np.sqrt(v) + 1e-8)
    return w


def test_an_in_place_change_through_a_chained_assignment_is_refused() -> None:
    """Silently wrong before: ``a = b = np.zeros(3); a += x`` changes ``b`` too in NumPy (one array, two names);
    srcjax returned zeros for ``b``. The names of a chained assignment are copies of one value now, refused at the
    change as ``b = a`` was; Adam's ``m = v = np.zeros_like(w)``, rebound before any change, runs."""
    x = np.array([0.5, -1.0, 2.0])
    with pytest.raises(srcjax.TranspileError, match="bound to the same array") as e:
        srcjax.jit(_chained_zeros)(x)
    assert "test_hunt16_programs.py" in str(e.value).splitlines()[0]
    _agree(srcjax.jit(_chained_moments)(x, -x), _chained_moments(x, -x), "jit vs NumPy")
