"""tests/hunt13_programs.py's programs (NumPy scripts turned into functions: ``np.where`` chains and masks,
``np.pad``/``np.roll``/``np.cumsum``/``np.diff``/``np.interp``, ``np.einsum`` spellings, argsort ranks,
``np.linalg`` inside losses, ``keepdims``, int/bool/float mixing, negative steps, ``x[mask]`` reads, repeated-index
``x[idx] += v`` and ``np.add.at``, in-place updates in loops, while loops on data, early returns, helpers with
defaults, classes, closures over module constants, float32 with Python numbers) under the transformations their
authors apply, against four oracles.

Each case is a program, its arguments (drawn at float64 and float32; integer, boolean and Python-number
arguments stay what they are) and the calls a user makes, written once as text (``jit(f)``, ``grad(f)``,
``value_and_grad``, ``vmap`` with ``in_axes``, ``vmap(grad(f))``, ``jacfwd``/``jacrev``/``hessian``) and evaluated
with srcjax's functions and jax's. Checked: srcjax (XLA) against jax running the module's text with ``np`` as
jax.numpy (values, and the dtype of every output leaf; programs that write into arrays have a hand-written twin),
the user's function run by NumPy (``jit(f)``, and a loop over the examples for ``vmap(f, ...)``), central finite
differences of the user's function at float64 (``grad``, ``value_and_grad``, ``jacfwd``, ``jacrev`` and
``vmap(grad(...))`` by a loop over the examples), and the generated source run by NumPy (``srcjax.numpy_function``)
against srcjax. A refusal (a ``TranspileError`` located at the user's line) is allowed for the messages in
``KNOWN_REFUSALS``; any other error, an error located in srcjax's files, or a different answer fails.

The default run checks ``DEFAULT_CASES`` at float64; ``SRCJAX_HYPOTHESIS=thorough`` checks every case at both
dtypes. ``python -m tests.test_hunt13_programs [NAME ...] [--f64|--f32]`` runs the corpus (or the cases named)
and prints the counts and every failure.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import srcjax
from tests import corpus_harness
from tests.corpus_harness import (
    JF,
    JR,
    VG,
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

from . import hunt13_programs as hp

_a, _n, _pos, _spd = as_dtype, normal, positive, spd  # (the corpora's argument makers, tests/corpus_harness.py)

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


# Refusals met where jax runs the program (reported; a located TranspileError with a hint)
KNOWN_REFUSALS: tuple[str, ...] = (
    # mask_read_sum, mask_read_mean_2d: `pos = x[x > 0]` bound to a name (jax.jit refuses it too:
    # NonConcreteBooleanIndexError); `np.sum(x[x > 0])` and `x[x > 0].sum()` written in one expression run
    "indexing with a boolean mask",
    # class_mutating_state: a method of an object built inside the function that changes it (`st.update(row)`;
    # class_with_methods' `model(x)` runs since objs16): said as such since known17
    "which changes the object `st` made in the function in place",
    # closure_over_constants: a function returned by a helper (a closure), called under grad/vmap
    "cannot differentiate through `f(...)`",
    "vmap: cannot batch 'f(",
)
# Errors met that are srcjax's own (located in code srcjax wrote, or wrong): xfail, not hidden
KNOWN_INTERNAL: tuple[str, ...] = ()
# Wrong answers found and not fixed yet: (case, check[, dtype]) -> why; xfail, not hidden
KNOWN_WRONG: dict[tuple[str, ...], str] = {}


# -- the jax side: the module's text with np as jax.numpy ----------------------------------------------------


def _last_writes(idx: Any, n: int) -> Any:
    """``idx`` with every index written again later replaced by ``n`` (dropped): NumPy's ``x[idx] = v`` keeps
    the last write of a repeated index."""
    later = jnp.triu(idx[:, None] == idx[None, :], k=1).any(axis=1)
    return jnp.where(later, n, idx)


def _fancy_iadd_repeated_twin(base: Any, idx: Any, v: Any) -> Any:
    return base.at[_last_writes(idx, base.shape[0])].set(base[idx] + v, mode="drop")


def _fancy_iadd_then_loss_twin(base: Any, idx: Any, v: Any) -> Any:
    out = base * 1.0
    out = out.at[_last_writes(idx, base.shape[0])].set(out[idx] + v * 2.0, mode="drop")
    out = out.at[idx].set(out[idx] * 1.5)
    return jnp.sum(out ** 2)


def _add_at_histogram_twin(values: Any, idx: Any) -> Any:
    return jnp.zeros(hp.N_BINS, dtype=values.dtype).at[idx].add(values) * jnp.arange(1, hp.N_BINS + 1)


def _iir_filter_inplace_twin(x: Any, a: Any) -> Any:
    y = jnp.zeros_like(x)
    y = y.at[0].set(x[0])
    for i in range(1, x.shape[0]):
        y = y.at[i].set(a * y[i - 1] + (1 - a) * x[i])
    return y


def _slice_update_smoother_twin(u: Any, steps: int = 3) -> Any:
    for _ in range(steps):
        u = u.at[1:-1].set(0.25 * u[:-2] + 0.5 * u[1:-1] + 0.25 * u[2:])
        u = u.at[0].set(u[1])
        u = u.at[-1].set(u[-2])
    return jnp.sum(u ** 2)


def _column_update_loop_twin(a: Any) -> Any:
    for j in range(1, a.shape[1]):
        a = a.at[:, j].add(-0.5 * a[:, j - 1])
    return a


def _boolean_mask_assign_twin(x: Any) -> Any:
    y = jnp.where(x < 0, 0.0, x)
    y = jnp.where(y > 1.0, y * 0.5, y)
    return jnp.sum(y * x)


TWIN = corpus_harness.twin_namespace(
    hp, jnp, fancy_iadd_repeated=_fancy_iadd_repeated_twin, fancy_iadd_then_loss=_fancy_iadd_then_loss_twin,
    add_at_histogram=_add_at_histogram_twin, iir_filter_inplace=_iir_filter_inplace_twin,
    slice_update_smoother=_slice_update_smoother_twin, column_update_loop=_column_update_loop_twin,
    boolean_mask_assign=_boolean_mask_assign_twin)


# -- the corpus's cases -------------------------------------------------------------------------------------

_v, _vg = vmap_check, vmap_grad_check


CASES: tuple[Case, ...] = (
    # np.where chains, masks, clip
    Case("where_chain_piecewise", hp.where_chain_piecewise, lambda r, d: (_n(r, d, 9, scale=2.0),),
         (J, G, VG, H, _v((0,)), _vg((0,)))),
    Case("masked_huber", hp.masked_huber,
         lambda r, d: (_n(r, d, 6, scale=2.0), _n(r, d, 6), r.random(6) < 0.7),
         (J, G, ("grad(f, argnums=1)", None), H, _v((0, 0, 0)), _vg((0, None, 0))),
         numpy_dtypes="float32 / int64 (a count) is float64 in NumPy (float32 in jax)"),
    Case("clip_ratio_objective", hp.clip_ratio_objective,
         lambda r, d: (_n(r, d, 6, scale=0.3), _n(r, d, 6, scale=0.3), _n(r, d, 6)),
         (J, G, VG, ("hessian(f)", None), _v((0, None, 0)), _vg((0, 0, None)))),
    Case("clip_array_bounds", hp.clip_array_bounds,
         lambda r, d: (_n(r, d, 5, scale=2.0), _a([-1.0, -0.5, -2.0, 0.0, -1.0], d), _a([1.0, 0.5, 2.0, 0.3, 1.5], d)),
         (J, G, ("grad(f, argnums=(1, 2))", None), _v((0, None, None)), _vg((0, None, None)))),
    Case("relu_by_mask", hp.relu_by_mask, lambda r, d: (_n(r, d, 4, 3), _n(r, d, 3, 5)),
         (J, G, ("grad(f, argnums=1)", None), H, _v((0, None)), _vg((None, 0), 1))),
    # pad, roll, cumsum/cumprod, diff, interp
    Case("pad_edge_laplacian", hp.pad_edge_laplacian, lambda r, d: (_n(r, d, 4, 5),),
         (J, G, H, _v((0,)), _vg((2,)))),
    Case("pad_constant_conv", hp.pad_constant_conv, lambda r, d: (_n(r, d, 7), _n(r, d, 3)),
         (J, JF, ("jacrev(f, argnums=1)", None), _v((0, None)), _v((None, 0)))),
    Case("roll_upwind", hp.roll_upwind, lambda r, d: (_n(r, d, 8), _a(0.4, d)),
         (J, JF, ("jacrev(f, argnums=1)", None), _v((0, None)), _v((None, 0)), ("hessian(f, argnums=1)", None))),
    Case("roll_2d_shift_energy", hp.roll_2d_shift_energy, lambda r, d: (_n(r, d, 4, 5),),
         (J, G, H, _v((0,)), _vg((1,)))),
    Case("cumulative_trapezoid", hp.cumulative_trapezoid, lambda r, d: (_n(r, d, 6), _a(0.25, d)),
         (J, JF, JR, ("jacrev(f, argnums=1)", None), _v((0, None)), _v((1, 0)))),
    Case("survival_nll", hp.survival_nll, lambda r, d: (_n(r, d, 6), int(r.integers(0, 6)), int(r.integers(0, 2))),
         (J, G, H, _v((0, 0, 0)), _vg((0, 0, None))),
         numpy_dtypes="vmap stacks `observed` into an int64 array: times float32 it is float64 in NumPy"),
    Case("second_difference_penalty", hp.second_difference_penalty, lambda r, d: (_n(r, d, 7), _a(0.5, d)),
         (J, G, VG, ("grad(f, argnums=1)", None), H, _v((0, None)), _vg((0, 0)))),
    Case("diff_2d_axis0", hp.diff_2d_axis0, lambda r, d: (_n(r, d, 4, 3),),
         (J, G, H, _v((0,)), _vg((1,))),
         numpy_dtypes="np.diff's prepend=0.0 is a float64 array in NumPy (weak in jax)"),
    Case("interp_lookup", hp.interp_lookup, lambda r, d: (r.uniform(-2.5, 2.5, 6).astype(d), _n(r, d, 5)),
         (J, G, ("grad(f, argnums=1)", None), ("hessian(f, argnums=1)", None), _v((0, None)), _vg((None, 0), 1))),
    Case("interp_with_bounds", hp.interp_with_bounds, lambda r, d: (r.uniform(-3.0, 3.0, 6).astype(d), _n(r, d, 5)),
         (J, JF, ("jacrev(f, argnums=1)", None), _v((0, None)), _v((None, 0)))),
    # einsum, take_along_axis, argsort
    Case("einsum_zoo", hp.einsum_zoo, lambda r, d: (_n(r, d, 3, 3), _n(r, d, 3, 3), _n(r, d, 3)),
         (J, G, ("grad(f, argnums=(0, 1, 2))", None), H, ("hessian(f, argnums=2)", None), _v((0, None, None)),
          _vg((None, 0, 0), 2))),
    Case("einsum_batched", hp.einsum_batched, lambda r, d: (_n(r, d, 2, 3, 4), _n(r, d, 4, 2)),
         (J, JF, ("jacrev(f, argnums=1)", None), _v((0, None)), _v((None, 0)))),
    Case("einsum_ellipsis", hp.einsum_ellipsis, lambda r, d: (_n(r, d, 2, 3, 4), _n(r, d, 4, 2)),
         (J, JR, ("jacfwd(f, argnums=1)", None), _v((1, None)), _v((None, 0)))),
    Case("sort_rows_by_key", hp.sort_rows_by_key, lambda r, d: (_n(r, d, 3, 4), _n(r, d, 3, 4)),
         (J, ("jacrev(f, argnums=1)", None), ("jacfwd(f, argnums=1)", None), _v((0, 0)), _v((None, 1))),
         numpy_dtypes="np.arange(...) is int64: int64 and float32 arrays give float64 in NumPy (float32 in jax)"),
    Case("argsort_ranks", hp.argsort_ranks, lambda r, d: (_n(r, d, 6),),
         (J, G, VG, H, _v((0,)), _vg((0,)))),
    Case("argmax_gather", hp.argmax_gather, lambda r, d: (_n(r, d, 4, 3), _n(r, d, 4, 3)),
         (J, G, ("grad(f, argnums=1)", None), _v((0, 0)), _vg((None, 0), 1))),
    Case("descending_sort_weights", hp.descending_sort_weights, lambda r, d: (_n(r, d, 6),),
         (J, G, H, _v((0,)), _vg((0,)))),
    # np.linalg inside losses
    Case("ridge_solve_loss", hp.ridge_solve_loss, lambda r, d: (_n(r, d, 6, 3), _n(r, d, 6), _a(0.3, d)),
         (J, G, ("grad(f, argnums=(1, 2))", None), ("hessian(f, argnums=2)", None), _v((0, 0, None)),
          _vg((None, 0, None), 1)), rtol32=5e-3),
    Case("gp_cholesky_nll", hp.gp_cholesky_nll, lambda r, d: (_n(r, d, 5), _n(r, d, 5), _a(0.1, d)),
         (J, G, ("grad(f, argnums=2)", None), ("hessian(f, argnums=2)", None), _v((None, 0, None)),
          _vg((0, 0, None), 2)), rtol32=5e-3),
    Case("slogdet_barrier", hp.slogdet_barrier, lambda r, d: (_n(r, d, 3, 3),),
         (J, G, VG, H, _v((0,)), _vg((0,))), rtol32=5e-3),
    Case("inverse_trace_loss", hp.inverse_trace_loss, lambda r, d: (_n(r, d, 3, 3),),
         (J, G, H, _v((0,)), _vg((0,))), rtol32=5e-3),
    Case("norm_variants", hp.norm_variants, lambda r, d: (_n(r, d, 3, 4),),
         (J, G, H, _v((0,)), _vg((2,)))),
    Case("qr_projection_residual", hp.qr_projection_residual, lambda r, d: (_n(r, d, 5, 2), _n(r, d, 5)),
         (J, G, ("grad(f, argnums=1)", None), _v((0, None)), _vg((None, 0), 1)), rtol32=5e-3),
    Case("eigh_spectrum_loss", hp.eigh_spectrum_loss, lambda r, d: (_n(r, d, 3, 3),),
         (J, G, VG, _v((0,)), _vg((0,))), rtol32=5e-3,
         numpy_dtypes="np.arange(...) is int64: int64 and float32 arrays give float64 in NumPy (float32 in jax)"),
    Case("det_volume", hp.det_volume, lambda r, d: (_spd(r, d, 3),),
         (J, G, H, _v((0,)), _vg((0,))), rtol32=5e-3),
    Case("lstsq_by_normal_equations", hp.lstsq_by_normal_equations, lambda r, d: (_n(r, d, 6, 2), _n(r, d, 6)),
         (J, G, ("grad(f, argnums=1)", None), _v((0, 0)), _vg((0, None))), rtol32=5e-3),
    # polynomials, grids, keepdims
    Case("polyval_fit", hp.polyval_fit, lambda r, d: (_n(r, d, 4), _n(r, d, 6), _n(r, d, 6)),
         (J, G, VG, H, ("grad(f, argnums=1)", None), _v((0, None, None)), _vg((None, 0, 0)))),
    Case("meshgrid_potential", hp.meshgrid_potential, lambda r, d: (_n(r, d, 3, 2, scale=0.5), _a(0.4, d)),
         (J, G, ("grad(f, argnums=1)", None), H, _v((0, None)), _vg((None, 0)))),
    Case("meshgrid_ij_bilinear", hp.meshgrid_ij_bilinear, lambda r, d: (_n(r, d, 3, 4),),
         (J, G, H, _v((0,)), _vg((2,))),
         numpy_dtypes="np.arange(...) is int64: int64 and float32 arrays give float64 in NumPy (float32 in jax)"),
    Case("keepdims_standardize", hp.keepdims_standardize, lambda r, d: (_n(r, d, 5, 3),),
         (J, JF, JR, _v((0,)), _v((2,)))),
    Case("softmax_keepdims", hp.softmax_keepdims, lambda r, d: (_n(r, d, 4, 3), r.integers(0, 3, 4)),
         (J, G, VG, H, _v((0, None)), _vg((0, 0)))),
    # int / bool / float mixing, powers, slices
    Case("int_bool_float_mix", hp.int_bool_float_mix, lambda r, d: (_n(r, d, 6), int(r.integers(1, 6))),
         (J, G, VG, H, _v((0, None)))),
    Case("integer_powers", hp.integer_powers, lambda r, d: (_pos(r, d, 5),),
         (J, G, VG, H, _v((0,)), _vg((0,)))),
    Case("int_array_scaling", hp.int_array_scaling, lambda r, d: (_n(r, d, 5), r.integers(1, 6, 5)),
         (J, G, H, _v((0, None)), _v((0, 0)), _vg((0, 0)))),
    Case("negative_step_slices", hp.negative_step_slices, lambda r, d: (_n(r, d, 8),),
         (J, G, VG, H, _v((0,)), _vg((0,)))),
    Case("reversed_cummax_like", hp.reversed_cummax_like, lambda r, d: (_n(r, d, 6),),
         (J, JF, JR, _v((0,)), _v((0,), "jacrev(f)"))),
    # x[mask] reads, repeated-index updates, in-place updates in loops
    Case("mask_read_sum", hp.mask_read_sum, lambda r, d: (_n(r, d, 8),),
         (J, G, VG, H, _v((0,)), _vg((0,)))),
    Case("mask_read_mean_2d", hp.mask_read_mean_2d, lambda r, d: (_n(r, d, 3, 4), _a(0.3, d)),
         (J, G, _v((0, None)), _vg((0, None)))),
    Case("add_at_histogram", hp.add_at_histogram, lambda r, d: (_n(r, d, 7), r.integers(0, hp.N_BINS, 7)),
         (J, JF, JR, _v((0, None)), _v((0, 0))),
         numpy_dtypes="np.arange(...) is int64: int64 and float32 arrays give float64 in NumPy (float32 in jax)"),
    Case("fancy_iadd_repeated", hp.fancy_iadd_repeated,
         lambda r, d: (_n(r, d, 5), np.array([0, 3, 3, 1, 0, 3]), _n(r, d, 6)),
         (J, JF, ("jacrev(f, argnums=2)", None), ("jacfwd(f, argnums=2)", None), _v((0, None, 0)),
          _v((None, None, 0)))),
    Case("fancy_iadd_then_loss", hp.fancy_iadd_then_loss,
         lambda r, d: (_n(r, d, 5), np.array([4, 1, 4, 4, 2]), _n(r, d, 5)),
         (J, G, ("grad(f, argnums=2)", None), ("hessian(f, argnums=2)", None), _v((0, None, 0)),
          _vg((None, None, 0), 2))),
    Case("iir_filter_inplace", hp.iir_filter_inplace, lambda r, d: (_n(r, d, 6), _a(0.7, d)),
         (J, JF, JR, ("jacrev(f, argnums=1)", None), _v((0, None)), _v((None, 0)))),
    Case("slice_update_smoother", hp.slice_update_smoother, lambda r, d: (_n(r, d, 7),),
         (J, G, VG, H, _v((0,)), _vg((0,)))),
    Case("column_update_loop", hp.column_update_loop, lambda r, d: (_n(r, d, 3, 4),),
         (J, JF, JR, _v((0,)), _v((2,)))),
    Case("boolean_mask_assign", hp.boolean_mask_assign, lambda r, d: (_n(r, d, 7, scale=1.5),),
         (J, G, VG, _v((0,)), _vg((0,)))),
    # control flow
    Case("gd_until_converged", hp.gd_until_converged,
         lambda r, d: (_n(r, d, 3), _spd(r, d, 3), _n(r, d, 3)),
         (J, _v((0, None, None)), _v((None, None, 0))), rtol32=5e-3),
    Case("halving_until_small", hp.halving_until_small, lambda r, d: (_n(r, d, 4, scale=3.0),),
         (J, _v((0,)), JF)),
    Case("early_return_sign", hp.early_return_sign, lambda r, d: (_n(r, d, 4), _n(r, d, 4)),
         (J, G, ("grad(f, argnums=1)", None), H, _v((0, None)), _vg((0, 0)))),
    Case("early_return_in_loop", hp.early_return_in_loop, lambda r, d: (_n(r, d, 6),),
         (J, G, VG, _v((0,)), _vg((0,)))),
    Case("continue_skips", hp.continue_skips, lambda r, d: (_n(r, d, 6),),
         (J, G, H, _v((0,)), _vg((0,)))),
    # helpers with defaults, classes, closures over module constants
    Case("nested_helpers_defaults", hp.nested_helpers_defaults,
         lambda r, d: (_n(r, d, 2, 3), _n(r, d, 3, 3), _n(r, d, 3)),
         (J, G, ("grad(f, argnums=(1, 2))", None), H, _v((0, None, None)), _vg((None, 0, None), 1))),
    Case("class_with_methods", hp.class_with_methods,
         lambda r, d: (_n(r, d, 3, 2), _n(r, d, 2), _n(r, d, 5, 3), _n(r, d, 5, 2)),
         (J, G, ("grad(f, argnums=(0, 1))", None), H, _v((None, None, 0, 0)), _vg((None, None, 0, 0)))),
    Case("class_mutating_state", hp.class_mutating_state, lambda r, d: (_n(r, d, 4, 3),),
         (J, G, VG, H, _v((0,)), _vg((0,))),
         numpy_dtypes="RunningStats' np.zeros(n) is float64: float32 rows promote to float64 in both"),
    Case("sobel_edges", hp.sobel_edges, lambda r, d: (_n(r, d, 5, 5),),
         (J, G, H, _v((0,)), _vg((0,)))),
    Case("closure_over_constants", hp.closure_over_constants, lambda r, d: (_n(r, d, 5),),
         (J, G, VG, H, _v((0,)), _vg((0,)))),
    # float32 with Python numbers
    Case("f32_python_scalars", hp.f32_python_scalars, lambda r, d: (_n(r, d, 5),),
         (J, G, VG, H, _v((0,)), _vg((0,)))),
    Case("f32_where_constants", hp.f32_where_constants, lambda r, d: (_n(r, d, 5),),
         (J, JF, JR, _v((0,)))),
    Case("f32_int_count", hp.f32_int_count, lambda r, d: (_n(r, d, 5),),
         (J, JF, JR, _v((0,))),
         numpy_dtypes="float32 / int64 (a count) is float64 in NumPy (float32 in jax)"),
    Case("f32_astype_roundtrip", hp.f32_astype_roundtrip, lambda r, d: (_n(r, d, 5),),
         (J, G, _v((0,)), _vg((0,))), fd=False),
    # more shapes of user code
    Case("triangle_pair_energy", hp.triangle_pair_energy,
         lambda r, d: ((np.array([[0, 0], [1, 0], [0, 1], [1, 1]], float) + 0.1 * r.standard_normal((4, 2))).astype(d),),
         (J, G, H, _v((0,)), _vg((0,)))),
    Case("tril_masked_scores", hp.tril_masked_scores, lambda r, d: (_n(r, d, 4, 3), _n(r, d, 4, 3)),
         (J, JF, ("jacrev(f, argnums=1)", None), _v((0, None)), _v((0, 0))),
         numpy_dtypes="np.sqrt(q.shape[1]) of a Python int is a float64 NumPy scalar (weak in jax)"),
    Case("tile_repeat_features", hp.tile_repeat_features, lambda r, d: (_n(r, d, 4),),
         (J, G, H, _v((0,)), _vg((0,))),
         numpy_dtypes="np.arange(...) is int64: int64 and float32 arrays give float64 in NumPy (float32 in jax)"),
    Case("angles_arctan2", hp.angles_arctan2, lambda r, d: (_n(r, d, 5, 2),),
         (J, G, H, _v((0,)), _vg((0,)))),
    Case("searchsorted_bins", hp.searchsorted_bins, lambda r, d: (_n(r, d, 6, scale=1.5), _a(0.1, d)),
         (J, G, ("grad(f, argnums=1)", None), _v((0, None)), _vg((0, None)))),
    Case("cross_outer_inner", hp.cross_outer_inner, lambda r, d: (_n(r, d, 2, 3), _n(r, d, 2, 3)),
         (J, G, ("grad(f, argnums=1)", None), H, _v((0, None)), _vg((None, 0), 1))),
    Case("split_and_stack", hp.split_and_stack, lambda r, d: (_n(r, d, 6),),
         (J, JF, JR, _v((0,)))),
    Case("moveaxis_reduce", hp.moveaxis_reduce, lambda r, d: (_n(r, d, 3, 2, 4),),
         (J, JF, JR, _v((0,)), _v((2,))),
         numpy_dtypes="np.arange(...) is int64: int64 and float32 arrays give float64 in NumPy (float32 in jax)"),
    Case("array_methods", hp.array_methods, lambda r, d: (_n(r, d, 4, 3),),
         (J, G, VG, H, _v((0,)), _vg((1,)))),
    Case("modular_indices", hp.modular_indices, lambda r, d: (_n(r, d, 7),),
         (J, G, H, _v((0,)), _vg((0,)))),
    Case("count_nonzero_sparsity", hp.count_nonzero_sparsity, lambda r, d: (_n(r, d, 6), _a(0.5, d)),
         (J, G, H, _v((0, None)), _vg((0, None))),
         numpy_dtypes="float32 / int64 (a count) is float64 in NumPy (float32 in jax)"),
    Case("nan_guarded_log", hp.nan_guarded_log, lambda r, d: (_n(r, d, 6),),
         (J, G, H, _v((0,)), _vg((0,))),
         numpy_dtypes="np.sum of a bool array is int64: times 1.0 it is float64 in NumPy (weak in jax)"),
    Case("softplus_stable", hp.softplus_stable, lambda r, d: (_n(r, d, 6, scale=10.0),),
         (J, G, H, _v((0,)), _vg((0,)))),
    Case("tuple_outputs", hp.tuple_outputs, lambda r, d: (_n(r, d, 3, 2), _n(r, d, 2, 4)),
         (J, JF, JR, ("jacrev(f, argnums=1)", None), _v((0, None)), _v((None, 0)))),
    Case("enumerate_rows_weighted", hp.enumerate_rows_weighted, lambda r, d: (_n(r, d, 4, 3),),
         (J, JF, JR, _v((0,)), _v((1,)))),
)

# default tier: the two riskiest idioms (a repeated index under `x[idx] += v`, writes through a boolean mask)
DEFAULT_CASES = ("fancy_iadd_then_loss", "boolean_mask_assign")


# -- running a check ------------------------------------------------------------------------------------------

CORPUS = twin_corpus(CASES, "hunt13_programs.py", KNOWN_REFUSALS, TWIN, KNOWN_INTERNAL, KNOWN_WRONG)



test_hunt13_program, test_hunt13_program_thorough = CORPUS.tests(DEFAULT_CASES)

if __name__ == "__main__":
    CORPUS.main(sys.argv[1:])


# -- regressions found by the corpus ------------------------------------------------------------------------

def _agree(got: Any, want: Any, what: str, rtol: float = 1e-9, dtypes: bool = True) -> None:
    corpus_harness.agree_values(got, want, what, rtol, dtypes)


def _twin(fn: Callable[..., Any], **names: Any) -> Callable[..., Any]:
    """``fn``'s text run with ``np`` as jax.numpy (jax names clip's bounds ``min=``/``max=`` only)."""
    ns: dict[str, Any] = {"np": jnp, "Any": Any, **names}
    exec(inspect.getsource(fn).replace("a_min=", "min=").replace("a_max=", "max="), ns)  # noqa: S102
    return ns[fn.__name__]  # type: ignore[no-any-return]


def _clip_keywords(x: Any, lo: Any) -> Any:
    return (np.sum(x.clip(min=-0.5) * 0.1) + np.sum(np.clip(x, a_min=lo, a_max=1.0) ** 2)
            + np.sum(np.clip(x, max=0.2) * x))


def test_clip_by_its_keywords() -> None:
    """Refused where NumPy and jax run it (clip_array_bounds): ``x.clip(min=-0.5)`` and ``np.clip(x, max=0.2)``
    (NumPy 2.1's and jax's keywords) and ``np.clip(x, a_min=lo, a_max=1.0)`` ("got an unexpected keyword
    argument"). A bound given by keyword with the one before it left out is written in its place:
    ``np.clip(x, None, 0.2)`` (written ``np.clip(x, 0.2)`` it would have clipped from below, silently)."""
    x = np.linspace(-2.0, 2.0, 7)
    want = _clip_keywords(x, -0.7)
    _agree(srcjax.jit(_clip_keywords)(x, -0.7), want, "jit vs NumPy", dtypes=False)
    twin = _twin(_clip_keywords)
    g = srcjax.grad(_clip_keywords)
    _agree(g(x, -0.7), jax.grad(twin)(x, -0.7), "grad vs jax")
    _agree(srcjax.numpy_function(g)(x, -0.7), g(x, -0.7), "grad's source run by NumPy")
    xs = np.stack([x, 0.5 * x])
    _agree(srcjax.vmap(g, in_axes=(0, None))(xs, -0.7), jax.vmap(jax.grad(twin), in_axes=(0, None))(xs, -0.7),
           "vmap(grad) vs jax")
    assert "np.clip(x, None, 0.2)" in srcjax.source(srcjax.jit(_clip_keywords))


_LEVELS = np.array([0.1, 0.2, 0.3])


def _constant_gathers(x: Any, s: Any) -> Any:
    w = np.array([0.5, 1.0, 2.0, 1.0])
    b = np.searchsorted(np.linspace(-1.0, 1.0, 3), s)
    return np.sum(w[b] * s ** 2) + np.sum(_LEVELS[np.argmax(x, axis=-1)] * s)


def test_a_constant_array_indexed_by_data() -> None:
    """Refused where NumPy and jax run it (searchsorted_bins): ``w = np.array([0.5, 1.0, ...])`` (or a module's
    constant array) indexed by an integer array computed from the arguments (``w[np.searchsorted(edges, x)]``)
    was taken for an index into a Python container ("must be known at transpile time"); it is a gather from the
    constant, under jit, grad, vmap and vmap(grad)."""
    rng = np.random.default_rng(0)
    x, s = rng.standard_normal((4, 3)), 1.5 * rng.standard_normal(4)
    twin = _twin(_constant_gathers, _LEVELS=jnp.asarray(_LEVELS))
    _agree(srcjax.jit(_constant_gathers)(x, s), _constant_gathers(x, s), "jit vs NumPy")
    g = srcjax.grad(_constant_gathers, argnums=1)
    _agree(g(x, s), jax.grad(twin, argnums=1)(x, s), "grad vs jax")
    _agree(srcjax.numpy_function(g)(x, s), g(x, s), "grad's source run by NumPy")
    xs, ss = np.stack([x, -x]), np.stack([s, 0.5 * s])
    _agree(srcjax.vmap(_constant_gathers)(xs, ss), jax.vmap(twin)(xs, ss), "vmap vs jax")
    _agree(srcjax.vmap(g)(xs, ss), jax.vmap(jax.grad(twin, argnums=1))(xs, ss), "vmap(grad) vs jax")


def _masked_cleanup(a: Any, r: Any) -> Any:
    a = a.copy()
    m = np.abs(a[:, 0]) > 0.5
    a[m] = r
    a[~m] -= 1
    a[a > 1.0] *= 0.5
    return a


def _masked_cleanup_twin(a: Any, r: Any) -> Any:
    m = jnp.abs(a[:, 0]) > 0.5
    a = jnp.where(m[:, None], r, a)
    a = jnp.where(m[:, None], a, a - 1)
    return jnp.where(a > 1.0, a * 0.5, a)


def test_writes_through_a_boolean_mask() -> None:
    """Refused where NumPy runs it (boolean_mask_assign): ``y[y < 0] = 0.0``, ``y[mask] *= 0.5`` and
    ``a[m] = row`` (a mask over the leading axis, a row for every selected one) are NumPy's everyday clean-up of
    an array, and their result's shape does not depend on the data ("indexing with a boolean mask gives a result
    whose shape depends on the data"): written ``masked_write(y, mask, new, v)`` (np.where, in ``y``'s dtype),
    under jit, jacrev, vmap and vmap(jacrev). A value per selected element (its size is the data's) is refused at
    the user's line."""
    rng = np.random.default_rng(0)
    a, r = rng.standard_normal((4, 3)), np.arange(3.0)
    _agree(srcjax.jit(_masked_cleanup)(a, r), _masked_cleanup(a, r), "jit vs NumPy")
    _agree(srcjax.jit(_masked_cleanup)(a.astype(np.float32), r), _masked_cleanup(a.astype(np.float32), r),
           "jit vs NumPy (float32 array, float64 row: NumPy's assignment casts)", 1e-6)
    for k in (0, 1):
        jr = srcjax.jacrev(_masked_cleanup, argnums=k)
        _agree(jr(a, r), jax.jacrev(_masked_cleanup_twin, argnums=k)(a, r), f"jacrev(argnums={k}) vs jax")
        _agree(srcjax.numpy_function(jr)(a, r), jr(a, r), "jacrev's source run by NumPy")
    As, rs = np.stack([a, -a, 2 * a]), np.stack([r, -r, r])
    _agree(srcjax.vmap(_masked_cleanup)(As, rs), jax.vmap(_masked_cleanup_twin)(As, rs), "vmap vs jax")
    _agree(srcjax.vmap(srcjax.jacrev(_masked_cleanup, argnums=1))(As, rs),
           jax.vmap(jax.jacrev(_masked_cleanup_twin, argnums=1))(As, rs), "vmap(jacrev) vs jax")


def _per_element_value(x: Any, v: Any) -> Any:
    y = x.copy()
    y[y < 0] = v
    return y


def test_a_value_per_masked_element_is_refused_at_the_users_line() -> None:
    with pytest.raises(srcjax.TranspileError, match="one row of x\\[mask\\]") as e:
        srcjax.jit(_per_element_value)(np.linspace(-1.0, 1.0, 5), np.ones(5))
    assert "test_hunt13_programs.py" in str(e.value).splitlines()[0]


def _list_keyed_by_a_comparison(x: Any, n: int) -> Any:
    xs = [x, 2 * x, 3 * x]
    xs[n > 0] = x * 10
    d = {True: x, False: 2 * x}
    d[x.shape[0] > 1] = x * 5
    return xs[0] + xs[1] + xs[2] + d[True] * d[False]


def test_a_container_item_keyed_by_a_comparison_is_still_its_item() -> None:
    """``xs[n > 0] = v`` of a list (``xs[True]``: item 1) and ``d[k > 1] = v`` of a dict are no mask writes: the
    item is written, as before writes through a boolean mask were read (the mask path made them np.where of the
    list, an error)."""
    x = np.ones(2)
    _agree(srcjax.jit(_list_keyed_by_a_comparison, static_argnums=1)(x, 1), _list_keyed_by_a_comparison(x, 1),
           "jit vs NumPy")
    _agree(srcjax.grad(lambda v: np.sum(_list_keyed_by_a_comparison(v, 0)))(x),
           jax.grad(lambda v: jnp.sum(_list_keyed_by_a_comparison(v, 0)))(x), "grad vs jax")
