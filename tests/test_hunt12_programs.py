"""tests/hunt12_programs.py's programs (log-densities, ODE/SDE integrators, lattices and pair potentials, FFT
filters, optimizer inner loops, kernels, masked attention, normalizations, segment sums, sorting, integer/bool,
float32 and complex arithmetic) under the transformations their authors apply, against five oracles.

Each case is a program, its arguments (drawn at float64 and float32; integer, boolean and Python-number
arguments stay what they are) and the calls a user makes, written once as text (``jit(f)``, ``grad(f)``,
``value_and_grad``, ``vmap`` with ``in_axes``, ``vmap(grad(f))``, ``jacfwd``/``jacrev``/``hessian``, and
``jvp`` of every argument) and evaluated with srcjax's functions and jax's. Checked: srcjax (XLA) against jax
running the module's text with ``np`` as jax.numpy (values, and the dtype of every output leaf), the user's
function run by NumPy (``jit(f)``, and a loop over the examples for ``vmap(f, ...)``), central finite
differences of the user's function (``grad`` and ``jvp`` at float64), and the generated source run by NumPy
(``srcjax.numpy_function``) against srcjax. A refusal (a ``TranspileError`` located at the user's line) is
allowed for the messages in ``KNOWN_REFUSALS``; any other error, an error located in srcjax's files, or a
different answer fails.

The default run checks ``DEFAULT_CASES`` at float64; ``SRCJAX_HYPOTHESIS=thorough`` checks every case at both
dtypes. ``python -m tests.test_hunt12_programs [NAME ...] [--f64]`` runs the corpus (or the cases named) and
prints the counts and every failure.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import srcjax
from tests import corpus_harness
from tests.corpus_harness import (
    Case,
    Corpus,
    agree,
    as_dtype,
    evaluate,
    jax_vmap,
    loop_reference,
    normal,
    positive,
    spd,
)

from . import hunt12_programs as hp
from .fd import central_fd
from .hunt_sweep import Outcome
from .twins import jitted

_a, _n, _pos, _spd = as_dtype, normal, positive, spd  # (the corpora's argument makers, tests/corpus_harness.py)

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


# Refusals met where jax runs the program (reported; a located TranspileError with a hint)
KNOWN_REFUSALS: tuple[str, ...] = ()
# Errors met that are srcjax's own (located in code srcjax wrote, or wrong): xfail, not hidden
KNOWN_INTERNAL: tuple[str, ...] = ()
# Wrong answers found and not fixed yet: (case, check, dtype) -> why; xfail(strict), not hidden
KNOWN_WRONG: dict[tuple[str, str, str], str] = {}


# -- the jax side: the module's text with np as jax.numpy ----------------------------------------------------

def _twin_namespace() -> dict[str, Any]:
    def vmap(f: Any, in_axes: Any = 0, out_axes: Any = 0) -> Any:
        return jax_vmap(f, in_axes, out_axes)

    text = inspect.getsource(hp)
    text = text.replace("import numpy as np\n", "").replace("from srcjax import lax\n", "")
    text = text.replace("from srcjax.scipy.special import", "from jax.scipy.special import")
    ns: dict[str, Any] = {"np": jnp, "lax": jax.lax, "__name__": "hunt12_programs_twin", "vmap": vmap}
    exec(compile(text, inspect.getsourcefile(hp) or "<twin>", "exec"), ns)
    ns["segment_sum_add_at"] = _segment_sum_twin  # (`np.add.at(out, i, v)` is `out = out.at[i].add(v)`)
    ns["segment_mean_softmax"] = _segment_softmax_twin
    return ns


def _segment_sum_twin(values: Any, seg: Any, num: int = 4) -> Any:
    return jnp.zeros((num,) + values.shape[1:], dtype=values.dtype).at[seg].add(values)


def _segment_softmax_twin(scores: Any, seg: Any, num: int = 3) -> Any:
    e = jnp.exp(scores - scores.max())
    return e / jnp.zeros(num, dtype=scores.dtype).at[seg].add(e)[seg]


TWIN = _twin_namespace()
TRANSFORMS = ("jit", "grad", "value_and_grad", "vmap", "jacfwd", "jacrev", "hessian")
JAX_T = {"jit": lambda f, **kw: f, "grad": jax.grad, "value_and_grad": jax.value_and_grad, "vmap": TWIN["vmap"],
         "jacfwd": jax.jacfwd, "jacrev": jax.jacrev, "hessian": jax.hessian}
SRCJAX_T = {k: getattr(srcjax, k) for k in TRANSFORMS}


# -- the corpus's cases -------------------------------------------------------------------------------------

def _lattice(rng: np.random.Generator, dt: Any, n: int = 4, spacing: float = 1.1) -> np.ndarray:
    g = np.stack(np.meshgrid(np.arange(2), np.arange(n // 2), indexing="ij"), -1).reshape(-1, 2) * spacing
    return (g + 0.05 * rng.standard_normal(g.shape)).astype(dt)


def _hist(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    a = _spd(rng, np.float64, 3)
    xs = [0.3 * rng.standard_normal(3) for _ in range(3)]
    ys = [a @ s for s in xs]
    return _n(rng, dt, 3), [s.astype(dt) for s in xs], [y.astype(dt) for y in ys]


def _eight(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    return (_a(1.0, dt), _a(0.5, dt), _n(rng, dt, 8), _n(rng, dt, 8, scale=8.0),
            _a([15, 10, 16, 11, 9, 11, 10, 18], dt))


def _mix(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    return _n(rng, dt, 7, scale=2.0), _n(rng, dt, 3), _n(rng, dt, 3, scale=2.0), _n(rng, dt, 3, scale=0.3)


def _attn(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    return _n(rng, dt, 5, 4), _n(rng, dt, 4, 4, scale=0.5), _n(rng, dt, 4, 4, scale=0.5), _n(rng, dt, 4, 4, scale=0.5)


def _qkv(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    return _n(rng, dt, 4, 3), _n(rng, dt, 5, 3), _n(rng, dt, 5, 2)


def _graph(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    return (_n(rng, dt, 4, 3), _n(rng, dt, 3, 3, scale=0.5), np.array([0, 1, 2, 3, 0, 2]),
            np.array([1, 2, 3, 0, 2, 0]))


def _hier(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    return (_n(rng, dt, 2), _n(rng, dt, 3, 2), _a(-0.5, dt), _n(rng, dt, 6, 2), _n(rng, dt, 6),
            np.array([0, 1, 2, 0, 1, 2]))


ALL_F = (("jit(f)", None), ("grad(f)", None), ("value_and_grad(f)", None), ("jvp", None), ("hessian(f)", None))
CASES: tuple[Case, ...] = (
    # probabilistic programs
    Case("eight_schools", hp.eight_schools, _eight,
         (("jit(f)", None), ("grad(f, argnums=(0, 1, 2))", None), ("hessian(f, argnums=1)", None), ("jvp", None),
          ("vmap(f, in_axes=(0, 0, 0, None, None))", (0, 0, 0, None, None)),
          ("vmap(grad(f, argnums=2), in_axes=(None, None, 0, None, None))", (None, None, 0, None, None))),
         numpy_dtypes="np.log(5.0) of a Python float is a float64 NumPy scalar (weak in jax)"),
    Case("mixture_loglik", hp.mixture_loglik, _mix,
         (("jit(f)", None), ("grad(f, argnums=(1, 2, 3))", None), ("hessian(f, argnums=2)", None),
          ("vmap(f, in_axes=(0, None, None, None))", (0, None, None, None)), ("jvp", None),
          ("jacrev(f, argnums=1)", None))),
    Case("mixture_loglik_by_hand", hp.mixture_loglik_by_hand, _mix,
         (("jit(f)", None), ("grad(f, argnums=1)", None), ("grad(f, argnums=3)", None), ("jvp", None),
          ("vmap(grad(f, argnums=2), in_axes=(0, None, None, None))", (0, None, None, None)),
          ("jacfwd(f, argnums=3)", None)),
         numpy_dtypes="np.log(2 * np.pi) of a Python float is a float64 NumPy scalar (weak in jax)"),
    Case("stick_breaking", hp.stick_breaking, lambda r, d: (_n(r, d, 4),),
         (("jit(f)", None), ("jacfwd(f)", None), ("jacrev(f)", None), ("vmap(f)", (0,)), ("jvp", None))),
    Case("dp_mixture_weights_entropy", hp.dp_mixture_weights_entropy, lambda r, d: (_n(r, d, 4),),
         (("jit(f)", None), ("grad(f)", None), ("hessian(f)", None), ("vmap(grad(f))", (0,)))),
    Case("student_t_logpdf", hp.student_t_logpdf, lambda r, d: (_n(r, d, 6), _a(4.0, d), _a(0.1, d), _a(-0.2, d)),
         (("jit(f)", None), ("grad(f, argnums=(1, 2, 3))", None), ("hessian(f, argnums=1)", None), ("jvp", None),
          ("vmap(f, in_axes=(0, 0, None, None))", (0, 0, None, None)))),
    Case("dirichlet_logpdf", hp.dirichlet_logpdf, lambda r, d: (_n(r, d, 4), _n(r, d, 4, scale=0.3)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=1)", None), ("hessian(f, argnums=1)", None),
          ("vmap(f)", (0, 0)), ("vmap(grad(f, argnums=1), in_axes=(None, 0))", (None, 0)), ("jvp", None))),
    Case("ordinal_logit", hp.ordinal_logit, lambda r, d: (_n(r, d, 6), _a([-1.0, 0.0, -0.5], d), r.integers(0, 4, 6)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=1)", None), ("hessian(f, argnums=1)", None),
          ("vmap(f, in_axes=(0, None, 0))", (0, None, 0)), ("vmap(grad(f, argnums=1), in_axes=(0, None, 0))", (0, None, 0)))),
    Case("negbin_loglik", hp.negbin_loglik, lambda r, d: (_n(r, d, 5), _a(0.3, d), r.poisson(2.0, 5).astype(d)),
         (("jit(f)", None), ("grad(f, argnums=(0, 1))", None), ("hessian(f, argnums=1)", None),
          ("vmap(f, in_axes=(None, 0, None))", (None, 0, None)), ("jacfwd(f)", None))),
    Case("categorical_onehot_loglik", hp.categorical_onehot_loglik, lambda r, d: (_n(r, d, 5, 3), r.integers(0, 3, 5)),
         (("jit(f)", None), ("grad(f)", None), ("hessian(f)", None), ("vmap(grad(f))", (0, 0)))),
    Case("hierarchical_regression", hp.hierarchical_regression, _hier,
         (("jit(f)", None), ("grad(f, argnums=(0, 1, 2))", None), ("hessian(f, argnums=2)", None),
          ("vmap(f, in_axes=(None, None, 0, None, None, None))", (None, None, 0, None, None, None)),
          ("vmap(grad(f), in_axes=(0, None, None, None, None, None))", (0, None, None, None, None, None)))),
    # ODE / SDE integrators
    Case("rk4_scan", hp.rk4_scan, lambda r, d: (_n(r, d, 2), _a([[0.0, 1.0], [-1.0, -0.1]], d)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=1)", None), ("hessian(f)", None), ("jvp", None),
          ("vmap(f, in_axes=(0, None))", (0, None)), ("vmap(grad(f), in_axes=(0, None))", (0, None)))),
    Case("heun_sde", hp.heun_sde, lambda r, d: (_n(r, d, 3), _a(0.7, d), _n(r, d, 5, 3, scale=0.3)),
         (("jit(f)", None), ("grad(f, argnums=(0, 1))", None), ("hessian(f, argnums=1)", None), ("jvp", None),
          ("vmap(f, in_axes=(None, None, 0))", (None, None, 0)), ("vmap(grad(f), in_axes=(0, None, None))", (0, None, None)))),
    Case("adaptive_euler", hp.adaptive_euler, lambda r, d: (_pos(r, d, 2), _a(1.5, d)),
         (("jit(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)), ("vmap(f, in_axes=(None, 0))", (None, 0)),
          ("jacfwd(f)", None))),
    Case("symplectic_euler", hp.symplectic_euler, lambda r, d: (_n(r, d, 3), _n(r, d, 3), _pos(r, d, 3)),
         (("jit(f)", None), ("grad(f, argnums=(0, 1, 2))", None), ("hessian(f)", None), ("jvp", None),
          ("vmap(f, in_axes=(0, 0, None))", (0, 0, None)), ("vmap(grad(f, argnums=2), in_axes=(None, None, 0))", (None, None, 0)))),
    Case("logistic_growth_trajectory", hp.logistic_growth_trajectory, lambda r, d: (_a(1.2, d), _pos(r, d, 3, lo=0.1, hi=0.5)),
         (("jit(f)", None), ("jacfwd(f)", None), ("jacrev(f, argnums=1)", None), ("vmap(f, in_axes=(0, None))", (0, None)),
          ("vmap(f, in_axes=(None, 1), out_axes=1)", (None, 1)), ("jvp", None))),
    # physics
    Case("lj_masked", hp.lj_masked, lambda r, d: (_lattice(r, d), _a(1.0, d)),
         (("jit(f)", None), ("grad(f)", None), ("hessian(f)", None), ("vmap(grad(f), in_axes=(0, None))", (0, None)),
          ("jvp", None))),
    Case("ewald_reciprocal", hp.ewald_reciprocal, lambda r, d: (r.random((4, 2)).astype(d), _a([1.0, -1.0, 0.5, -0.5], d)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=1)", None), ("hessian(f, argnums=1)", None),
          ("vmap(f, in_axes=(0, None))", (0, None)), ("jvp", None))),
    Case("ising_soft_energy", hp.ising_soft_energy, lambda r, d: (_n(r, d, 3, 4), _a(0.8, d)),
         (("jit(f)", None), ("grad(f)", None), ("hessian(f, argnums=1)", None), ("vmap(grad(f), in_axes=(0, None))", (0, None)),
          ("jvp", None))),
    Case("morse_bonds", hp.morse_bonds,
         lambda r, d: (_lattice(r, d), np.array([[0, 1], [1, 3], [3, 2], [2, 0]]), _pos(r, d, 4), _pos(r, d, 4)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=(2, 3))", None), ("hessian(f)", None),
          ("vmap(f, in_axes=(0, None, None, None))", (0, None, None, None)))),
    Case("harmonic_chain_modes", hp.harmonic_chain_modes, lambda r, d: (_n(r, d, 6), _a(2.0, d)),
         (("jit(f)", None), ("grad(f)", None), ("hessian(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)),
          ("jvp", None))),
    # signal processing
    Case("hann_power_spectrum", hp.hann_power_spectrum, lambda r, d: (_n(r, d, 8),),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f)", None), ("vmap(f)", (0,)), ("jvp", None))),
    Case("gaussian_smooth_same", hp.gaussian_smooth_same, lambda r, d: (_n(r, d, 9), _a(1.3, d)),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f, argnums=1)", None), ("vmap(f, in_axes=(0, None))", (0, None)),
          ("vmap(f, in_axes=(None, 0))", (None, 0)), ("jvp", None)),
         numpy_dtypes="np.arange's int64 over a float32 width is float64 in NumPy (float32 in jax)"),
    Case("fft_circular_conv", hp.fft_circular_conv, lambda r, d: (_n(r, d, 8), _n(r, d, 3)),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f, argnums=1)", None), ("vmap(f)", (0, 0)),
          ("vmap(f, in_axes=(0, None))", (0, None)), ("jvp", None))),
    Case("autocorr_fft", hp.autocorr_fft, lambda r, d: (_n(r, d, 6),),
         (("jit(f)", None), ("jacrev(f)", None), ("vmap(f)", (0,)), ("jvp", None))),
    Case("framed_energy", hp.framed_energy, lambda r, d: (_n(r, d, 10),),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f)", None), ("vmap(f)", (0,)), ("jvp", None))),
    Case("preemphasis_rms", hp.preemphasis_rms, lambda r, d: (_n(r, d, 7), _a(0.9, d)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=1)", None), ("hessian(f)", None),
          ("vmap(grad(f), in_axes=(0, None))", (0, None)), ("jvp", None))),
    # optimization inner loops
    Case("lbfgs_direction", hp.lbfgs_direction, _hist,
         (("jit(f)", None), ("jacfwd(f)", None), ("jacrev(f, argnums=1)", None), ("vmap(f, in_axes=(0, None, None))", (0, None, None)),
          ("jvp", None))),
    Case("armijo_step", hp.armijo_step, lambda r, d: (_n(r, d, 3), _spd(r, d, 3) * 3.0, _n(r, d, 3)),
         (("jit(f)", None), ("vmap(f, in_axes=(0, None, None))", (0, None, None)),
          ("vmap(f, in_axes=(None, None, 0))", (None, None, 0)))),
    Case("project_simplex", hp.project_simplex, lambda r, d: (_n(r, d, 5),),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f)", None), ("vmap(f)", (0,)), ("jvp", None)),
         numpy_dtypes="(css - 1.0) / ks, ks = np.arange(...) int64: float64 in NumPy (float32 in jax)"),
    Case("projected_gradient", hp.projected_gradient, lambda r, d: (_n(r, d, 4), _n(r, d, 4)),
         (("jit(f)", None), ("grad(f, argnums=1)", None), ("vmap(f)", (0, 0)), ("vmap(grad(f, argnums=1))", (0, 0))),
         numpy_dtypes="project_simplex's / np.arange(...): float64 in NumPy (float32 in jax)"),
    Case("conjugate_gradient", hp.conjugate_gradient, lambda r, d: (_spd(r, d, 3), _n(r, d, 3)),
         (("jit(f)", None), ("jacrev(f, argnums=1)", None), ("jacfwd(f)", None), ("vmap(f, in_axes=(None, 0))", (None, 0)),
          ("jvp", None)), rtol32=2e-3),
    Case("box_projected_gd", hp.box_projected_gd,
         lambda r, d: (_n(r, d, 4), _a(-0.5, d), _a([0.5, 0.6, 0.7, 0.8], d), _n(r, d, 4)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=3)", None), ("vmap(f, in_axes=(0, None, None, None))", (0, None, None, None)),
          ("vmap(grad(f, argnums=3), in_axes=(None, None, None, 0))", (None, None, None, 0)))),
    # kernels and GPs
    Case("matern52", hp.matern52, lambda r, d: (_n(r, d, 4, 2), _n(r, d, 3, 2), _a(0.2, d), _a(-0.1, d)),
         (("jit(f)", None), ("jacrev(f, argnums=(0, 2))", None), ("jacfwd(f, argnums=3)", None),
          ("vmap(f, in_axes=(0, None, None, None))", (0, None, None, None)), ("jvp", None))),
    Case("gp_matern_nll", hp.gp_matern_nll, lambda r, d: (_a(0.1, d), _a(0.0, d), _a(-1.0, d), _n(r, d, 5, 2), _n(r, d, 5)),
         (("jit(f)", None), ("grad(f, argnums=(0, 1, 2))", None), ("hessian(f, argnums=0)", None),
          ("vmap(f, in_axes=(0, None, None, None, None))", (0, None, None, None, None)), ("jvp", None)), rtol32=5e-3),
    Case("ard_rbf_slogdet", hp.ard_rbf_slogdet, lambda r, d: (_n(r, d, 2, scale=0.2), _n(r, d, 4, 2)),
         (("jit(f)", None), ("grad(f)", None), ("hessian(f)", None), ("vmap(grad(f), in_axes=(None, 0))", (None, 0)),
          ("jvp", None)), rtol32=5e-3),
    Case("kernel_ridge_loo", hp.kernel_ridge_loo, lambda r, d: (_a(-1.0, d), _n(r, d, 5, 2), _n(r, d, 5)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=1)", None), ("vmap(f, in_axes=(0, None, None))", (0, None, None)),
          ("jvp", None)), rtol32=5e-3),
    Case("gp_posterior_var", hp.gp_posterior_var, lambda r, d: (_n(r, d, 3, 1), _n(r, d, 4, 1), _a(0.3, d)),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f, argnums=2)", None), ("vmap(f, in_axes=(None, None, 0))", (None, None, 0)),
          ("jvp", None)), rtol32=5e-3),
    # attention
    Case("causal_mha", hp.causal_mha, _attn,
         (("jit(f)", None), ("jacrev(f, argnums=1)", None), ("jacfwd(f)", None), ("vmap(f, in_axes=(0, None, None, None))", (0, None, None, None)),
          ("jvp", None)),
         numpy_dtypes="np.sqrt(hd) of a Python int is a float64 NumPy scalar (weak in jax)"),
    Case("banded_attention", hp.banded_attention, lambda r, d: (_n(r, d, 5, 3), _n(r, d, 5, 3), _n(r, d, 5, 2)),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f, argnums=2)", None), ("vmap(f)", (0, 0, 0)),
          ("vmap(f, in_axes=(None, None, 1), out_axes=1)", (None, None, 1)), ("jvp", None))),
    Case("padded_attention", hp.padded_attention, lambda r, d: (*_qkv(r, d), np.asarray(3)),
         (("jit(f)", None), ("grad(f, argnums=(0, 1, 2))", None), ("hessian(f)", None),
          ("vmap(f, in_axes=(None, None, None, 0))", (None, None, None, 0)),
          ("vmap(grad(f), in_axes=(0, None, None, 0))", (0, None, None, 0)))),
    Case("alibi_attention", hp.alibi_attention, lambda r, d: (_n(r, d, 4, 3), _a(0.5, d)),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f, argnums=1)", None), ("vmap(f)", (0, 0)), ("jvp", None))),
    # normalizations
    Case("group_norm", hp.group_norm, lambda r, d: (_n(r, d, 2, 4, 3), _pos(r, d, 4), _n(r, d, 4)),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f, argnums=1)", None), ("vmap(f, in_axes=(0, None, None))", (0, None, None)),
          ("jvp", None)), rtol32=2e-3),
    Case("batch_norm_running", hp.batch_norm_running,
         lambda r, d: (_n(r, d, 5, 3), _pos(r, d, 3), _n(r, d, 3), _n(r, d, 3), _pos(r, d, 3)),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f, argnums=(1, 2))", None),
          ("vmap(f, in_axes=(0, None, None, 0, 0))", (0, None, None, 0, 0)), ("jvp", None)), rtol32=2e-3),
    Case("instance_norm_loss", hp.instance_norm_loss, lambda r, d: (_n(r, d, 3, 5), _n(r, d, 3)),
         (("jit(f)", None), ("grad(f)", None), ("hessian(f, argnums=1)", None), ("vmap(grad(f))", (0, 0)),
          ("jvp", None)), rtol32=2e-3),
    Case("rms_norm_weight_std", hp.rms_norm_weight_std, lambda r, d: (_n(r, d, 4, 3), _n(r, d, 3, 2), _pos(r, d, 2)),
         (("jit(f)", None), ("jacrev(f, argnums=1)", None), ("jacfwd(f)", None), ("vmap(f, in_axes=(0, None, None))", (0, None, None)),
          ("jvp", None)), rtol32=2e-3),
    # segment sums
    Case("segment_sum_add_at", hp.segment_sum_add_at, lambda r, d: (_n(r, d, 6, 2), np.array([0, 2, 2, 1, 0, 3])),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)),
          ("vmap(f)", (0, 0)))),
    Case("message_passing", hp.message_passing, _graph,
         (("jit(f)", None), ("grad(f, argnums=(0, 1))", None), ("hessian(f, argnums=1)", None),
          ("vmap(f, in_axes=(0, None, None, None))", (0, None, None, None)),
          ("vmap(grad(f), in_axes=(0, None, None, None))", (0, None, None, None))), numpy=False),
    Case("segment_mean_softmax", hp.segment_mean_softmax, lambda r, d: (_n(r, d, 6), np.array([0, 1, 1, 2, 0, 2])),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)))),
    # sorting
    Case("topk_mean", hp.topk_mean, lambda r, d: (_n(r, d, 6),),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f)", (0,)), ("vmap(grad(f))", (0,)), ("jvp", None))),
    Case("spearman_like", hp.spearman_like, lambda r, d: (_n(r, d, 6), _n(r, d, 6)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f)", (0, 0)), ("vmap(f, in_axes=(None, 0))", (None, 0)))),
    Case("trimmed_mean", hp.trimmed_mean, lambda r, d: (_n(r, d, 3, 5),),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f)", None), ("vmap(f)", (0,)), ("vmap(f, in_axes=1)", (1,)),
          ("jvp", None))),
    Case("pinball_at_median", hp.pinball_at_median, lambda r, d: (_n(r, d, 7), _a(0.3, d)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=1)", None), ("vmap(f, in_axes=(0, None))", (0, None)),
          ("vmap(grad(f), in_axes=(0, None))", (0, None)), ("jvp", None))),
    Case("quantile_spread", hp.quantile_spread, lambda r, d: (_n(r, d, 9),),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f)", (0,)), ("jvp", None)),
         numpy_dtypes="np.quantile of float32 at float64 quantiles is float64 in NumPy (float32 in jax)"),
    # integers, booleans, float32, complex
    Case("int_mixing", hp.int_mixing, lambda r, d: (r.integers(-9, 20, 5), r.integers(0, 9, 5)),
         (("jit(f)", None), ("vmap(f)", (0, 0)), ("vmap(f, in_axes=(0, None))", (0, None)))),
    Case("bool_weights", hp.bool_weights, lambda r, d: (_n(r, d, 6), _a(0.1, d)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)),
          ("vmap(grad(f), in_axes=(None, 0))", (None, 0))),
         numpy_dtypes="np.count_nonzero(...) + 1 is a NumPy int64 (a float32 over it is float64; weak in jax)"),
    Case("f32_python_numbers", hp.f32_python_numbers, lambda r, d: (_n(r, d, 4),),
         (("jit(f)", None), ("grad(f)", None), ("hessian(f)", None), ("vmap(f)", (0,)), ("jvp", None))),
    Case("f32_int_index_scale", hp.f32_int_index_scale, lambda r, d: (_n(r, d, 4), np.asarray(2)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f)", (0, 0)), ("vmap(grad(f), in_axes=(None, 0))", (None, 0))),
         numpy_dtypes="1.0 / (k + 1) of an int64 array is a strong float64 in NumPy (weak in jax)"),
    Case("complex_map_energy", hp.complex_map_energy, lambda r, d: (_n(r, d, 3, scale=0.5), _n(r, d, 3, scale=0.5), _a(0.3, d)),
         (("jit(f)", None), ("grad(f, argnums=(0, 1, 2))", None), ("hessian(f)", None), ("vmap(f, in_axes=(0, 0, None))", (0, 0, None)),
          ("jvp", None))),
    Case("complex_rotate", hp.complex_rotate, lambda r, d: (_n(r, d, 4, 2), _a(0.4, d)),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f, argnums=1)", None), ("vmap(f, in_axes=(None, 0))", (None, 0)),
          ("jvp", None))),
    Case("complex_polyval", hp.complex_polyval, lambda r, d: (_n(r, d, 4), _n(r, d, 3)),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f, argnums=1)", None), ("vmap(f, in_axes=(None, 0))", (None, 0)),
          ("jvp", None))),
    # more: spectral methods, reverse scans, interpolation, online statistics, lax loops on data
    Case("spectral_derivative", hp.spectral_derivative, lambda r, d: (_n(r, d, 8),),
         (("jit(f)", None), ("grad(f)", None), ("hessian(f)", None), ("vmap(grad(f))", (0,)), ("jvp", None))),
    Case("fft2_blur", hp.fft2_blur, lambda r, d: (_n(r, d, 4, 6), _a(0.8, d)),
         (("jit(f)", None), ("jacrev(f, argnums=1)", None), ("jacfwd(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)),
          ("vmap(f, in_axes=(None, 0))", (None, 0)), ("jvp", None))),
    Case("gae_scan_reverse", hp.gae_scan_reverse, lambda r, d: (_n(r, d, 5), _n(r, d, 6)),
         (("jit(f)", None), ("grad(f, argnums=(0, 1))", None), ("hessian(f, argnums=1)", None), ("vmap(f)", (0, 0)),
          ("vmap(grad(f, argnums=1), in_axes=(None, 0))", (None, 0)), ("jvp", None))),
    Case("hmm_backward", hp.hmm_backward, lambda r, d: (_n(r, d, 3, 3), _n(r, d, 4, 3)),
         (("jit(f)", None), ("grad(f, argnums=(0, 1))", None), ("hessian(f, argnums=1)", None),
          ("vmap(f, in_axes=(None, 0))", (None, 0)), ("vmap(grad(f), in_axes=(None, 0))", (None, 0)), ("jvp", None))),
    Case("inverse_cdf_interp", hp.inverse_cdf_interp, lambda r, d: (r.uniform(0.05, 0.95, 5).astype(d), _a([0.0, 1.0, 2.5, 3.0], d), _n(r, d, 3)),
         (("jit(f)", None), ("jacrev(f, argnums=(1, 2))", None), ("jacfwd(f)", None), ("vmap(f, in_axes=(0, None, None))", (0, None, None)),
          ("vmap(f, in_axes=(None, None, 0))", (None, None, 0)), ("jvp", None))),
    Case("welford_rows", hp.welford_rows, lambda r, d: (_n(r, d, 5, 3),),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f)", None), ("vmap(f)", (0,)), ("vmap(f, in_axes=2)", (2,)),
          ("jvp", None))),
    Case("newton_while_dict", hp.newton_while_dict, lambda r, d: (_a(1.0 + 7.0 * r.random(), d),),
         (("jit(f)", None), ("jacfwd(f)", None), ("vmap(f)", (0,)), ("jvp", None))),
    Case("bouncing_ball", hp.bouncing_ball, lambda r, d: (_a(1.0 + 0.1 * r.random(), d), _a(0.5, d), _a(0.8, d)),
         (("jit(f)", None), ("grad(f, argnums=(0, 1, 2))", None), ("vmap(f, in_axes=(0, None, 0))", (0, None, 0)),
          ("vmap(grad(f, argnums=2), in_axes=(0, None, None))", (0, None, None)), ("jvp", None))),
)

BY_NAME = {c.name: c for c in CASES}
DEFAULT_CASES = ("eight_schools", "rk4_scan", "causal_mha", "project_simplex")


# -- running a check ------------------------------------------------------------------------------------------

def _tangents(args: tuple[Any, ...]) -> tuple[Any, ...]:
    rng = np.random.default_rng(123)
    return tuple(srcjax.tree_util.tree_map(lambda a: rng.standard_normal(np.shape(a)).astype(np.asarray(a).dtype), a)
                 for a in args)


def oracle(c: Case, expr: str, in_axes: Any, args: tuple[Any, ...]) -> Any:
    if expr == "jvp":
        return jitted(lambda p, t: jax.jvp(TWIN[c.fn.__name__], p, t))(tuple(args), _tangents(args))
    return jitted(evaluate(expr, JAX_T, TWIN[c.fn.__name__], jnp))(*args)


def srcjax_function(c: Case, expr: str) -> Any:
    """``expr`` over srcjax's transformations; ``jvp``: a function pushing every argument forward along
    ``_tangents`` (run as it is: ``Corpus.uncompiled``)."""
    if expr == "jvp":
        return lambda *args: srcjax.jvp(c.fn, args, _tangents(args))
    return evaluate(expr, SRCJAX_T, c.fn, np)


def numpy_reference(c: Case, expr: str, in_axes: Any, args: tuple[Any, ...]) -> Any:
    """The user's function run by NumPy, for ``jit(f)`` and ``vmap(f, ...)`` (None otherwise)."""
    return loop_reference(c.fn, expr, in_axes, args) if c.numpy else None


def fd_reference(c: Case, expr: str, args: tuple[Any, ...]) -> Any:
    """Central finite differences of the user's function at float64: ``grad(f)``/``grad(f, argnums=k)``, and
    ``jvp``'s (value, directional derivative)."""
    leaves = srcjax.tree_util.tree_leaves(args)
    if not c.numpy or any(np.asarray(a).dtype != np.float64 for a in leaves if np.asarray(a).dtype.kind == "f"):
        return None
    if expr == "jvp":
        eps = 1e-6
        ts = _tangents(args)
        tm = srcjax.tree_util.tree_map
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plus = c.fn(*tm(lambda a, t: a + eps * t, tuple(args), ts))
            minus = c.fn(*tm(lambda a, t: a - eps * t, tuple(args), ts))
            value = c.fn(*args)
        return value, tm(lambda p, m: (np.asarray(p) - np.asarray(m)) / (2 * eps), plus, minus)
    m = re.fullmatch(r"grad\(f(?:, argnums=(\d|\(\d(?:, \d)*\)))?\)", expr)
    if m is None:
        return None
    ks = eval(m.group(1) or "0")  # noqa: S307
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = (lambda k: central_fd(lambda *a: float(c.fn(*a)), args, k))
        return tuple(one(k) for k in ks) if isinstance(ks, tuple) else one(ks)


CORPUS = Corpus(CASES, ("hunt12_programs.py",), KNOWN_REFUSALS, oracle, jax.tree_util.tree_leaves, srcjax_function,
                numpy_reference, fd_reference, known_internal=KNOWN_INTERNAL, known_wrong=KNOWN_WRONG,
                uncompiled=("jvp",), passing=("ok", "known"))


def run_check(c: Case, expr: str, in_axes: Any, dtype: str, seed: int = 0) -> Outcome:
    return corpus_harness.run_check(CORPUS, c, expr, in_axes, dtype, seed)


test_hunt12_program, test_hunt12_program_thorough = CORPUS.tests(DEFAULT_CASES)

if __name__ == "__main__":
    CORPUS.main(sys.argv[1:])


# -- regressions found by the corpus ------------------------------------------------------------------------

def _neg_half_square(x: Any, s: Any) -> Any:
    return np.sum(-0.5 * (x / s) ** 2)


def _gauss_by_hand(x: Any, mean: Any, log_scale: Any) -> Any:
    s = np.exp(log_scale)
    return np.sum(-0.5 * ((x[:, None] - mean) / s) ** 2 - log_scale)


def _neg_quarter_cube(x: Any, s: Any) -> Any:
    return np.sum(-0.25 * (x / s) ** 4 + 3.0 * x * s)


@pytest.mark.parametrize("fn", [_neg_half_square, _gauss_by_hand, _neg_quarter_cube], ids=lambda f: f.__name__)
def test_a_negated_product_with_a_gathered_constant_keeps_its_sign(fn: Callable[..., Any]) -> None:
    """Silent wrong answer (mixture_loglik_by_hand): the gradient of ``-0.5 * (x / s) ** 2`` with respect to
    ``s`` had the wrong sign. Its adjoint ``-(-0.5 * g * 2 * div) * div / s`` was tidied (readable.tidy) to
    ``-1.0 * g * div * div / s``: removing the double negation replaced ``-0.5`` by ``0.5`` in the product,
    but the product itself was tidied from its original factors (``-0.5 * g * 2`` -> ``-1.0 * g``), which
    dropped that replacement. A Gaussian log-density's gradient with respect to its scale was negated."""
    rng = np.random.default_rng(0)
    args = ((rng.standard_normal(4), rng.standard_normal(3), rng.standard_normal(3)) if fn is _gauss_by_hand
            else (rng.standard_normal(3), rng.uniform(0.5, 1.5, 3)))
    ns: dict[str, Any] = {"np": jnp, "Any": Any}
    exec(inspect.getsource(fn), ns)  # noqa: S102
    k = len(args) - 1
    got = srcjax.grad(fn, argnums=k)(*args)
    agree(got, jax.grad(ns[fn.__name__], argnums=k)(*args), "grad vs jax", 1e-9)
    agree(got, central_fd(lambda *a: float(fn(*a)), args, k), "grad vs finite differences", 1e-6, dtypes=False,
          jax_leaves=False)
    agree(srcjax.numpy_function(srcjax.grad(fn, argnums=k))(*args), got, "the source run by NumPy", 1e-9,
          dtypes=False, jax_leaves=False)


def test_tidy_keeps_the_sign_of_a_double_negation_inside_a_gathered_product() -> None:
    """readable.tidy on the adjoint text itself: the double negation is removed and the constants gathered,
    with the sign right."""
    from srcjax.transforms.readable import tidy

    text = "def f(g, d, s):\n    return -(-0.5 * g * 2 * d) * d / s\n"
    out = tidy(text)
    g, d, s = 1.5, -0.7, 1.3
    ns: dict[str, Any] = {}
    exec(out, ns)  # noqa: S102
    assert ns["f"](g, d, s) == pytest.approx(-(-0.5 * g * 2 * d) * d / s), out


def _interquartile(x: Any) -> Any:
    lo, hi = np.quantile(x, np.array([0.25, 0.75]))
    return hi - 2.0 * lo


def _median_and_mean(x: Any) -> Any:
    m, s = np.percentile(x, np.array([50.0, 90.0]), axis=0)
    return m * s


@pytest.mark.parametrize("fn", [_interquartile, _median_and_mean], ids=lambda f: f.__name__)
def test_forward_mode_of_an_order_statistic_unpacked_into_names(fn: Callable[..., Any]) -> None:
    """Internal error where jax runs (quantile_spread): ``jvp``/``jacfwd`` of ``lo, hi = np.quantile(x, qs)``
    gave the quantile's tangent rule the target ``lo, hi`` for its result ("broadcast_like(): a tuple of traced
    values where an array goes"); the result now gets a name of its own, then is unpacked with its tangent."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((7, 2)) if fn is _median_and_mean else rng.standard_normal(7)
    t = rng.standard_normal(x.shape)
    ns: dict[str, Any] = {"np": jnp, "Any": Any}
    exec(inspect.getsource(fn), ns)  # noqa: S102
    agree(srcjax.jvp(fn, (x,), (t,)), jax.jvp(ns[fn.__name__], (x,), (t,)), "jvp vs jax", 1e-9)
    jf = srcjax.jacfwd(fn)
    agree(jf(x), jax.jacfwd(ns[fn.__name__])(x), "jacfwd vs jax", 1e-9)
    agree(srcjax.numpy_function(jf)(x), jf(x), "jacfwd's source run by NumPy", 1e-9, dtypes=False,
          jax_leaves=False)


def _half_carry(q0: Any, p0: Any) -> Any:
    def body(i: Any, carry: Any) -> Any:
        q, p = carry
        return (q, p - q * q)

    q, p = srcjax.lax.fori_loop(0, 3, body, (q0, p0))
    return np.sum(p)


def test_jit_of_hessian_of_a_fori_loop_whose_tuple_carry_half_depends_on_the_argument() -> None:
    """Internal error where jax runs (symplectic_euler's ``hessian(f)`` under ``jit``): ``jit(hessian(f))``, and
    ``vmap`` over ``jvp(grad(f))`` with a zero tangent for ``p0``, of a ``fori_loop`` whose carry ``(q, p)`` has
    ``p``'s tangent unbatched at the loop's entry and batched after one step ("unbroadcast: a value of shape (3,)
    is not a broadcast of shape (3, 3)" at the user's line): vmap compared only whether the carried tuple held
    some batched leaf at the top and at the end of the body; a leaf batched by the body now makes the carry
    batched from the top (transforms/batch_control.loop)."""
    rng = np.random.default_rng(0)
    q0, p0 = rng.standard_normal(3), rng.standard_normal(3)
    ns: dict[str, Any] = {"np": jnp, "Any": Any, "srcjax": types.SimpleNamespace(lax=jax.lax)}
    exec(inspect.getsource(_half_carry), ns)  # noqa: S102
    want = jax.hessian(ns["_half_carry"])(q0, p0)
    agree(srcjax.hessian(_half_carry)(q0, p0), want, "hessian vs jax", 1e-9)
    agree(srcjax.jit(srcjax.hessian(_half_carry))(q0, p0), want, "jit(hessian) vs jax", 1e-9)
    g = srcjax.grad(_half_carry)
    ts = np.eye(3)
    got = srcjax.vmap(lambda t: srcjax.jvp(g, (q0, p0), (t, np.zeros(3)))[1])(ts)
    agree(got, want, "vmap of jvp(grad) vs jax", 1e-9)


def _reset_carry(q0: Any, p0: Any) -> Any:
    c = (q0, p0)
    for _ in range(3):
        q, p = c
        c = (q * p + 1.0, np.ones(3))
    return np.sum(c[0] + c[1])


def _reset_fori(q0: Any, p0: Any) -> Any:
    def body(i: Any, c: Any) -> Any:
        q, p = c
        return (q * p + 1.0, np.ones(3))

    q, p = srcjax.lax.fori_loop(0, 3, body, (q0, p0))
    return np.sum(q + p)


@pytest.mark.parametrize("fn", [_reset_carry, _reset_fori], ids=lambda f: f.__name__)
@pytest.mark.parametrize("in_axes", [(0, 0), (None, 0)], ids=str)
def test_vmap_of_grad_of_a_loop_whose_carry_loses_or_gains_a_batched_leaf(fn: Callable[..., Any],
                                                                          in_axes: tuple[Any, ...]) -> None:
    """The other direction of the carried tuple's leaves (found probing the fix above): ``c = (q * p, ones)``
    under ``vmap(grad)`` with ``p0`` mapped has ``p`` batched at the loop's entry and unbatched after a step (was
    "operands could not be broadcast together with shapes (2, 3) and (3, 1)" at the user's line), or, with only
    ``p0`` mapped, ``q``'s cotangent batched after a step ("... (2, 2, 3) and (3, 1, 1)")."""
    rng = np.random.default_rng(2)
    q = rng.standard_normal((2, 3)) if in_axes[0] == 0 else rng.standard_normal(3)
    p = rng.standard_normal((2, 3))
    ns: dict[str, Any] = {"np": jnp, "Any": Any, "srcjax": types.SimpleNamespace(lax=jax.lax)}
    exec(inspect.getsource(fn), ns)  # noqa: S102
    want = jax.vmap(jax.grad(ns[fn.__name__], argnums=(0, 1)), in_axes=in_axes)(q, p)
    agree(srcjax.vmap(srcjax.grad(fn, argnums=(0, 1)), in_axes=in_axes)(q, p), want, "vmap(grad) vs jax", 1e-9)
    agree(srcjax.vmap(fn, in_axes=in_axes)(q, p), jax.vmap(ns[fn.__name__], in_axes=in_axes)(q, p), "vmap", 1e-9)
