"""tests/field_programs.py's programs (physics, hand-written optimizers, likelihoods, filters, geometry, tables,
control flow with tolerances) under the transformations their authors apply, against four oracles.

Each case is a program, its arguments (drawn at float64 and float32; integer, boolean and Python-number
arguments stay what they are) and the calls a user makes, written once as text (``jit(f)``, ``grad(f)``,
``value_and_grad``, ``vmap`` with ``in_axes``, ``jacfwd``/``jacrev``/``hessian``) and evaluated with srcjax's
functions and jax's. Checked: srcjax (XLA) against jax running the module's text with ``np`` as jax.numpy (values,
and the dtype of every output leaf), the user's function run by NumPy (``jit(f)``, and a loop over the examples
for ``vmap(f, ...)``), central finite differences of the user's function for ``grad`` at float64, and the
generated source run by NumPy (``srcjax.numpy_function``) against srcjax. A refusal (a ``TranspileError``
located at the user's line) is allowed for the messages in ``KNOWN_REFUSALS``; any other error, an error located
in srcjax's files, or a different answer fails.

The default run checks ``DEFAULT_CASES`` at float64; ``SRCJAX_HYPOTHESIS=thorough`` checks every case at both
dtypes. ``python -m tests.test_field_programs [NAME ...]`` runs the corpus (or the cases named) and prints the
counts and every failure.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
from typing import Any

import numpy as np
import pytest

import srcjax
from tests import corpus_harness
from tests.corpus_harness import (
    Case,
    Corpus,
    agree,
    arguments,
    as_dtype,
    evaluate,
    jax_vmap,
    loop_reference,
    normal,
    positive,
)

from . import field_programs as fp
from .fd import central_fd
from .hunt_sweep import Outcome
from .twins import JAX, jitted

_a, _n, _pos = as_dtype, normal, positive  # (the corpora's argument makers, tests/corpus_harness.py)

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


# Refusals met where jax runs the program (reported; a located TranspileError with a hint)
KNOWN_REFUSALS: tuple[str, ...] = (
    "np.bincount without length= is not supported",  # weighted_bincount: NumPy's minlength= (jax's jit too)
)
# Errors met that are srcjax's own (located in code srcjax wrote, or wrong): xfail, not hidden
KNOWN_INTERNAL: tuple[str, ...] = ()


# -- the jax side: the module's text with np as jax.numpy ----------------------------------------------------

def _twin_namespace() -> dict[str, Any]:
    def grad(f: Any, argnums: Any = 0, has_aux: bool = False, max_iters: Any = None) -> Any:
        return jax.grad(f, argnums, has_aux=has_aux)

    def value_and_grad(f: Any, argnums: Any = 0, has_aux: bool = False, max_iters: Any = None) -> Any:
        return jax.value_and_grad(f, argnums, has_aux=has_aux)

    def vmap(f: Any, in_axes: Any = 0, out_axes: Any = 0) -> Any:
        return jax_vmap(f, in_axes, out_axes)

    fake = types.SimpleNamespace(grad=grad, value_and_grad=value_and_grad, vmap=vmap, jacfwd=jax.jacfwd,
                                 jacrev=jax.jacrev, hessian=jax.hessian, jit=lambda f, **kw: f)
    text = inspect.getsource(fp)
    text = text.replace("import numpy as np\n", "").replace("import srcjax\n", "")
    ns: dict[str, Any] = {"np": jnp, "srcjax": fake, "__name__": "field_programs_twin"}
    exec(compile(text, inspect.getsourcefile(fp) or "<twin>", "exec"), ns)
    ns["biquad"] = _biquad_twin  # (`y[i] = acc` is `y = y.at[i].set(acc)` in jax)
    ns["histogram_add_at"] = _histogram_twin  # (`np.add.at(c, i, v)` is `c = c.at[i].add(v)`)
    return ns


def _biquad_twin(x: Any, b: Any, a: Any) -> Any:
    y = jnp.zeros_like(x)
    for i in range(x.shape[0]):
        acc = b[0] * x[i]
        if i >= 1:
            acc = acc + b[1] * x[i - 1] - a[0] * y[i - 1]
        if i >= 2:
            acc = acc + b[2] * x[i - 2] - a[1] * y[i - 2]
        y = y.at[i].set(acc)
    return y


def _histogram_twin(x: Any, lo: Any, hi: Any, nbins: int = 5) -> Any:
    idx = jnp.clip(((x - lo) / (hi - lo) * nbins).astype(jnp.int64), 0, nbins - 1)
    return jnp.zeros(nbins).at[idx].add(1.0)


TWIN = _twin_namespace()
TRANSFORMS = ("jit", "grad", "value_and_grad", "vmap", "jacfwd", "jacrev", "hessian")
JAX_T = {"jit": lambda f, **kw: f, "grad": TWIN["srcjax"].grad, "value_and_grad": TWIN["srcjax"].value_and_grad,
         "vmap": TWIN["srcjax"].vmap, "jacfwd": jax.jacfwd, "jacrev": jax.jacrev, "hessian": jax.hessian}
SRCJAX_T = {k: getattr(srcjax, k) for k in TRANSFORMS}


def to_twin(x: Any) -> Any:
    """An argument for the jax twin: the module's NamedTuples as the twin's."""
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return TWIN[type(x).__name__](*[to_twin(v) for v in x])
    if isinstance(x, dict):
        return {k: to_twin(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_twin(v) for v in x)
    return x


# -- the corpus's cases -------------------------------------------------------------------------------------

def _nbody(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return _n(r, d, 4, 2), _n(r, d, 4, 2, scale=0.3), _pos(r, d, 4)


def _springs(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 2]])
    pos = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], float) + 0.1 * r.standard_normal((4, 2))
    return pos.astype(d), edges, _pos(r, d, 5, lo=0.8, hi=1.2), _pos(r, d, 5)


def _grid(r: np.random.Generator, d: Any, n: int = 4, spacing: float = 1.3) -> np.ndarray:
    g = np.stack(np.meshgrid(np.arange(n), np.arange(2), indexing="ij"), -1).reshape(-1, 2) * spacing
    return (g + 0.05 * r.standard_normal(g.shape)).astype(d)


def _adam(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    p = {"w": _n(r, d, 3, 2), "b": _n(r, d, 2)}
    g = {k: _n(r, d, *v.shape) for k, v in p.items()}
    m = {k: 0.1 * _n(r, d, *v.shape) for k, v in p.items()}
    v = {k: _pos(r, d, *val.shape, lo=0.01, hi=0.1) for k, val in p.items()}
    return p, g, m, v, np.asarray(r.integers(0, 5))


def _reg(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return _n(r, d, 3, scale=0.3), _n(r, d, 8, 3), _n(r, d, 8)


def _gmm(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return _n(r, d, 6, 2), _n(r, d, 3, 2), np.log(np.full(3, 1 / 3)).astype(d), _n(r, d, 3, 2, scale=0.2)


def _tri(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    verts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float) + 0.05 * r.standard_normal((4, 3))
    return verts.astype(d), np.array([[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]])


def _nan_table(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    x = _n(r, d, 5, 3)
    x[r.random((5, 3)) < 0.25] = np.nan
    x[0] = 1.0  # (no all-NaN column or row)
    x[:, 0] = 0.5
    return (x,)


CASES: tuple[Case, ...] = (
    # physics
    Case("nbody_step", fp.nbody_step, _nbody,
         (("jit(f)", None), ("vmap(f, in_axes=(0, 0, None))", (0, 0, None)), ("jacfwd(f)", None))),
    Case("nbody_kinetic_after", fp.nbody_kinetic_after, _nbody,
         (("jit(value_and_grad(f, argnums=(0, 1, 2)))", None), ("grad(f)", None), ("grad(f, argnums=2)", None),
          ("vmap(grad(f), in_axes=(0, None, None))", (0, None, None)), ("hessian(f, argnums=2)", None))),
    Case("heat_periodic", fp.heat_periodic, lambda r, d: (_n(r, d, 8), _a(0.2, d)),
         (("jit(f)", None), ("jacrev(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)),
          ("vmap(f, in_axes=(None, 0))", (None, 0)))),
    Case("heat_periodic_energy", fp.heat_periodic_energy, lambda r, d: (_n(r, d, 8), _a(0.2, d)),
         (("grad(f)", None), ("grad(f, argnums=1)", None), ("hessian(f)", None),
          ("vmap(grad(f, argnums=(0, 1)))", (0, 0)))),
    Case("heat_dirichlet", fp.heat_dirichlet, lambda r, d: (_n(r, d, 7), 0.25),
         (("jit(f)", None), ("jacfwd(f)", None), ("vmap(f, in_axes=(0, None))", (0, None))),
         numpy_dtypes="np.array([left]) of a Python float is float64 in NumPy (weak float32 in jax)"),
    Case("heat_2d", fp.heat_2d, lambda r, d: (_n(r, d, 5, 6), _a(0.1, d)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(grad(f), in_axes=(0, None))", (0, None)),
          ("jacrev(grad(f, argnums=1), argnums=1)", None))),
    Case("verlet_oscillator", fp.verlet_oscillator, lambda r, d: (_pos(r, d), _a(1.0, d), _a(0.0, d)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=(1, 2))", None), ("vmap(f)", (0, 0, 0)),
          ("hessian(f)", None))),
    Case("pendulum_until", fp.pendulum_until, lambda r, d: (_a(0.5, d), _a(0.0, d), _a(1.0 + 0.3 * r.random(), d)),
         (("jit(f)", None), ("vmap(f, in_axes=(0, None, 0))", (0, None, 0)),
          ("grad(f, max_iters=40)", None))),
    Case("spring_energy", fp.spring_energy, _springs,
         (("jit(f)", None), ("grad(f)", None), ("hessian(f)", None), ("grad(f, argnums=(2, 3))", None),
          ("vmap(grad(f), in_axes=(0, None, None, None))", (0, None, None, None)))),
    Case("coulomb_energy", fp.coulomb_energy, lambda r, d: (_grid(r, d), _n(r, d, 8)),
         (("jit(f)", None), ("grad(f)", None), ("jacfwd(grad(f, argnums=1), argnums=1)", None),
          ("vmap(f, in_axes=(None, 0))", (None, 0)))),
    Case("lennard_jones", fp.lennard_jones, lambda r, d: (_grid(r, d, 3),),
         (("jit(f)", None), ("grad(f)", None), ("hessian(f)", None), ("vmap(grad(f))", (0,)))),
    Case("projectile_range", fp.projectile_range,
         lambda r, d: (_a(20.0 + r.random(), d), _a(0.7, d), _a(0.01, d)),
         (("jit(f)", None), ("jacrev(f, argnums=(0, 1, 2))", None), ("vmap(f, in_axes=(0, 0, None))", (0, 0, None)))),
    # optimizers
    Case("adam_update", fp.adam_update, _adam,
         (("jit(f)", None), ("vmap(f, in_axes=(0, 0, 0, 0, None))", (0, 0, 0, 0, None)),
          ("jacrev(f, argnums=1)", None))),
    Case("rmsprop_update", fp.rmsprop_update,
         lambda r, d: ([_n(r, d, 3), _n(r, d, 2, 2)], [_n(r, d, 3), _n(r, d, 2, 2)],
                       [_pos(r, d, 3), _pos(r, d, 2, 2)]),
         (("jit(f)", None), ("vmap(f)", (0, 0, 0)), ("jacfwd(f, argnums=1)", None))),
    Case("momentum_descent", fp.momentum_descent, _reg,
         (("jit(f)", None), ("grad(f)", None), ("vmap(f, in_axes=(None, 0, 0))", (None, 0, 0)),
          ("value_and_grad(f, argnums=1)", None))),
    Case("warmup_cosine", fp.warmup_cosine, lambda r, d: (np.asarray(r.integers(0, 30)), _a(0.1, d)),
         (("jit(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)), ("grad(f, argnums=1)", None),
          ("vmap(grad(f, argnums=1), in_axes=(0, None))", (0, None)))),
    Case("clip_global_norm", fp.clip_global_norm,
         lambda r, d: ({"a": _n(r, d, 3), "b": _n(r, d, 2, 2)}, _a(1.0, d)),
         (("jit(f)", None), ("jacrev(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)))),
    Case("adagrad_steps", fp.adagrad_steps, _reg,
         (("jit(f)", None), ("jacfwd(f)", None), ("vmap(f, in_axes=(0, None, None))", (0, None, None)))),
    Case("nesterov_rosenbrock", fp.nesterov_rosenbrock, lambda r, d: (_a([-1.0, 1.0], d) + _n(r, d, 2, scale=0.1),),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f)", (0,)), ("hessian(f)", None))),
    # probabilistic
    Case("lse_rows_cols", fp.lse_rows_cols, lambda r, d: (_n(r, d, 3, 4),),
         (("jit(f)", None), ("grad(f)", None), ("hessian(f)", None), ("vmap(grad(f))", (0,)))),
    Case("gauss_loglik_chol", fp.gauss_loglik_chol, lambda r, d: (_n(r, d, 5, 3), _n(r, d, 3), _n(r, d, 3, 3)),
         (("jit(f)", None), ("grad(f, argnums=(1, 2))", None), ("vmap(f, in_axes=(0, None, None))", (0, None, None)),
          ("vmap(grad(f, argnums=2), in_axes=(None, 0, None))", (None, 0, None))), rtol32=2e-3),
    Case("gauss_loglik_slogdet", fp.gauss_loglik_slogdet, lambda r, d: (_n(r, d, 5, 3), _n(r, d, 3), _n(r, d, 3, 3)),
         (("jit(value_and_grad(f, argnums=2))", None), ("hessian(f, argnums=1)", None),
          ("vmap(f, in_axes=(None, 0, 0))", (None, 0, 0))), rtol32=2e-3),
    Case("gmm_em_step", fp.gmm_em_step, _gmm,
         (("jit(f)", None), ("jacfwd(f, argnums=1)", None), ("vmap(f, in_axes=(0, None, None, None))", (0, None, None, None)),
          ("jacrev(f, argnums=3)", None)),
         numpy_dtypes="np.log(2 * np.pi) of a Python float is a float64 NumPy scalar (weak in jax)"),
    Case("softmax_xent_int", fp.softmax_xent_int, lambda r, d: (_n(r, d, 5, 4), r.integers(0, 4, 5)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(grad(f))", (0, 0)), ("hessian(f)", None))),
    Case("kl_diag_gauss", fp.kl_diag_gauss, lambda r, d: tuple(_n(r, d, 3) for _ in range(4)),
         (("jit(f)", None), ("grad(f, argnums=(0, 1, 2, 3))", None), ("vmap(f, in_axes=(0, 0, None, None))", (0, 0, None, None)))),
    Case("kl_categorical", fp.kl_categorical, lambda r, d: (_n(r, d, 2, 4), _n(r, d, 2, 4)),
         (("jit(f)", None), ("jacrev(f)", None), ("vmap(f)", (0, 0)))),
    Case("binary_xent_clipped", fp.binary_xent_clipped,
         lambda r, d: (np.concatenate([[-0.5, 1.5], r.random(4)]).astype(d), (r.random(6) < 0.5).astype(d)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(grad(f), in_axes=(None, 0))", (None, 0)))),
    Case("student_t_loglik", fp.student_t_loglik, lambda r, d: (_n(r, d, 6), _a(0.1, d), _a(-0.2, d)),
         (("jit(f)", None), ("grad(f, argnums=(1, 2))", None), ("hessian(f, argnums=1)", None),
          ("vmap(f, in_axes=(0, None, None))", (0, None, None))),
         numpy_dtypes="math.lgamma(...) is a Python float: weak in both, but c - log_scale follows NumPy 2"),
    Case("effective_sample_size", fp.effective_sample_size, lambda r, d: (_n(r, d, 6),),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f)", (0,)))),
    Case("poisson_glm_nll", fp.poisson_glm_nll,
         lambda r, d: (_n(r, d, 3, scale=0.3), _n(r, d, 7, 3), r.poisson(1.0, 7).astype(d)),
         (("jit(grad(f))", None), ("hessian(f)", None), ("vmap(grad(f), in_axes=(0, None, None))", (0, None, None)))),
    Case("entropy_of_probs", fp.entropy_of_probs,
         lambda r, d: (np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]], d),),
         (("jit(f)", None), ("jacrev(f)", None), ("vmap(f)", (0,)))),
    # signal
    Case("smooth_convolve", fp.smooth_convolve, lambda r, d: (_n(r, d, 9), _pos(r, d, 3)),
         (("jit(f)", None), ("jacrev(f, argnums=(0, 1))", None), ("vmap(f, in_axes=(0, None))", (0, None)))),
    Case("lagged_correlation", fp.lagged_correlation, lambda r, d: (_n(r, d, 6), _n(r, d, 6)),
         (("jit(f)", None), ("jacfwd(f)", None), ("vmap(f)", (0, 0)))),
    Case("moving_average", fp.moving_average, lambda r, d: (_n(r, d, 8),),
         (("jit(f)", None), ("jacrev(f)", None), ("vmap(f)", (0,)))),
    Case("ema_filter", fp.ema_filter, lambda r, d: (_n(r, d, 6), _a(0.7, d)),
         (("jit(f)", None), ("jacrev(f, argnums=1)", None), ("vmap(f, in_axes=(0, None))", (0, None)),
          ("jacfwd(f)", None))),
    Case("biquad", fp.biquad, lambda r, d: (_n(r, d, 6), _a([0.2, 0.3, 0.2], d), _a([-0.5, 0.2], d)),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f, argnums=2)", None),
          ("vmap(f, in_axes=(0, None, None))", (0, None, None)))),
    Case("total_variation", fp.total_variation, lambda r, d: (_n(r, d, 7), 0.5),
         (("jit(f)", None), ("grad(f)", None), ("vmap(grad(f), in_axes=(0, None))", (0, None)))),
    Case("curvature_penalty", fp.curvature_penalty, lambda r, d: (_n(r, d, 6),),
         (("jit(f)", None), ("grad(f)", None), ("hessian(f)", None), ("vmap(f)", (0,))),
         numpy_dtypes="np.diff's prepend=0.0 is a float64 array in NumPy (weak in jax)"),
    Case("detrend", fp.detrend, lambda r, d: (np.linspace(0, 1, 6).astype(d), _n(r, d, 6)),
         (("jit(f)", None), ("jacrev(f, argnums=1)", None), ("vmap(f, in_axes=(None, 0))", (None, 0)),
          ("jacfwd(f)", None)), rtol32=2e-3),
    Case("spectral_power", fp.spectral_power, lambda r, d: (_n(r, d, 8),),
         (("jit(f)", None), ("jacrev(f)", None), ("vmap(f)", (0,)))),
    # geometry
    Case("rotate_2d", fp.rotate_2d, lambda r, d: (_n(r, d, 5, 2), _a(0.3, d)),
         (("jit(f)", None), ("jacfwd(f, argnums=1)", None), ("vmap(f, in_axes=(None, 0))", (None, 0)),
          ("vmap(f, in_axes=(0, None))", (0, None)))),
    Case("quat_rotate", fp.quat_rotate, lambda r, d: (_n(r, d, 4), _n(r, d, 3)),
         (("jit(f)", None), ("jacrev(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)),
          ("vmap(jacfwd(f, argnums=1))", (0, 0)))),
    Case("rodrigues", fp.rodrigues, lambda r, d: (_n(r, d, 3), _n(r, d, 3)),
         (("jit(f)", None), ("jacfwd(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)), ("jacrev(f)", None))),
    Case("chamfer", fp.chamfer, lambda r, d: (_n(r, d, 4, 2), _n(r, d, 5, 2)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(grad(f), in_axes=(None, 0))", (None, 0)))),
    Case("norm_zoo", fp.norm_zoo, lambda r, d: (_n(r, d, 3, 4),),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f)", (0,)), ("hessian(f)", None))),
    Case("polygon_area", fp.polygon_area,
         lambda r, d: ((np.array([[0, 0], [2, 0], [2, 1], [0, 1]], float) + 0.1 * r.standard_normal((4, 2))).astype(d),),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f)", (0,)))),
    Case("triangle_normals", fp.triangle_normals, _tri,
         (("jit(f)", None), ("jacrev(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)))),
    Case("procrustes_residual", fp.procrustes_residual, lambda r, d: (_n(r, d, 5, 3), _n(r, d, 5, 3)),
         (("jit(f)", None), ("grad(f, argnums=1)", None), ("vmap(f, in_axes=(0, None))", (0, None))),
         rtol32=2e-3),
    # tabular
    Case("masked_mean", fp.masked_mean, lambda r, d: (_n(r, d, 5, 3), r.random((5, 3)) < 0.6),
         (("jit(f)", None), ("jacrev(f)", None), ("vmap(f)", (0, 0)), ("vmap(f, in_axes=(1, 1))", (1, 1))),
         numpy_dtypes="float32 / int64 (a count) is float64 in NumPy (float32 in jax)"),
    Case("nanmean_by_hand", fp.nanmean_by_hand, _nan_table,
         (("jit(f)", None), ("jacrev(f)", None), ("vmap(f)", (0,))),
         numpy_dtypes="float32 / int64 (a count) is float64 in NumPy (float32 in jax)"),
    Case("rank_transform", fp.rank_transform, lambda r, d: (_n(r, d, 5, 2),),
         (("jit(f)", None), ("vmap(f)", (0,)), ("vmap(f, in_axes=1)", (1,)))),
    Case("histogram_add_at", fp.histogram_add_at, lambda r, d: (r.random(9).astype(d), _a(0.0, d), _a(1.0, d)),
         (("jit(f)", None), ("vmap(f, in_axes=(0, None, None))", (0, None, None)))),
    Case("weighted_bincount", fp.weighted_bincount, lambda r, d: (r.integers(0, 4, 7), _n(r, d, 7)),
         (("jit(f)", None), ("jacrev(f, argnums=1)", None), ("vmap(f)", (0, 0)))),
    Case("standardize", fp.standardize, lambda r, d: (_n(r, d, 5, 3),),
         (("jit(f)", None), ("jacfwd(f)", None), ("vmap(f, in_axes=2)", (2,)))),
    Case("group_means", fp.group_means, lambda r, d: (_n(r, d, 6, 2), r.integers(0, 3, 6)),
         (("jit(f)", None), ("jacrev(f)", None), ("vmap(f)", (0, 0)))),
    Case("winsorize", fp.winsorize, lambda r, d: (_n(r, d, 9),),
         (("jit(f)", None), ("jacrev(f)", None), ("vmap(f)", (0,)))),
    Case("robust_zscore", fp.robust_zscore, lambda r, d: (_n(r, d, 5, 3),),
         (("jit(f)", None), ("jacfwd(f)", None), ("vmap(f)", (0,)))),
    Case("int_table_stats", fp.int_table_stats, lambda r, d: (r.integers(1, 9, (3, 4)),),
         (("jit(f)", None), ("vmap(f)", (0,)), ("vmap(f, in_axes=1)", (1,)))),
    # control flow, closures, parameters
    Case("newton_sqrt", fp.newton_sqrt, lambda r, d: (_a(2.0 + r.random(), d),),
         (("jit(f)", None), ("vmap(f)", (0,)), ("grad(f, max_iters=60)", None))),
    Case("bisect_root", fp.bisect_root, lambda r, d: (_a(2.0 + r.random(), d),),
         (("jit(f)", None), ("vmap(f)", (0,)))),
    Case("first_above", fp.first_above, lambda r, d: (_n(r, d, 6), _a(0.5, d)),
         (("jit(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)), ("vmap(f, in_axes=(None, 0))", (None, 0)))),
    Case("sum_until_negative", fp.sum_until_negative, lambda r, d: (np.abs(_n(r, d, 6)) * np.array([1, 1, 1, -1, 1, 1], d),),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f)", (0,)), ("vmap(grad(f))", (0,)))),
    Case("make_and_use_closure", fp.make_and_use_closure, lambda r, d: (_n(r, d, 3), _n(r, d, 4, 3), _a(0.5, d)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=2)", None),
          ("vmap(grad(f), in_axes=(0, None, None))", (0, None, None)))),
    Case("call_penalized", fp.call_penalized, lambda r, d: (_n(r, d, 4),),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f)", (0,)))),
    Case("sum_star_caller", fp.sum_star_caller, lambda r, d: (_n(r, d, 3), _n(r, d, 3)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f)", (0, 0)))),
    Case("spring_system", fp.spring_system,
         lambda r, d: (fp.Spring(_pos(r, d, 3), _n(r, d, 3)), _n(r, d, 3)),
         (("jit(f)", None), ("grad(f, argnums=1)", None), ("grad(f)", None),
          ("vmap(f, in_axes=(None, 0))", (None, 0)))),
    Case("two_layer", fp.two_layer,
         lambda r, d: ([fp.Layer(_n(r, d, 3, 4), _n(r, d, 4)), fp.Layer(_n(r, d, 4, 2), _n(r, d, 2))], _n(r, d, 5, 3)),
         (("jit(value_and_grad(f))", None), ("vmap(grad(f), in_axes=(None, 0))", (None, 0)))),
    Case("horner_poly", fp.horner_poly, lambda r, d: (_n(r, d, 5), _n(r, d, 4)),
         (("jit(f)", None), ("jacfwd(f, argnums=1)", None), ("vmap(f, in_axes=(None, 0))", (None, 0)))),
    Case("fixed_point_cos", fp.fixed_point_cos, lambda r, d: (_n(r, d, 3),),
         (("jit(f)", None), ("vmap(f)", (0,)))),
    Case("piecewise_by_branch", fp.piecewise_by_branch, lambda r, d: (_a(r.standard_normal() * 2, d), _a(1.5, d)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=1)", None), ("vmap(f)", (0, 0)),
          ("vmap(grad(f))", (0, 0)))),
    Case("weak_scalar_mix", fp.weak_scalar_mix, lambda r, d: (_n(r, d, 4),),
         (("jit(f)", None), ("vmap(f)", (0,)), ("jacfwd(f)", None))),
    Case("int_input_features", fp.int_input_features, lambda r, d: (r.integers(0, 10, 5),),
         (("jit(f)", None), ("vmap(f)", (0,)))),
    Case("accumulate_list_of_arrays", fp.accumulate_list_of_arrays,
         lambda r, d: ([_n(r, d, 3) for _ in range(3)],),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f)", (0,)))),
    Case("loop_over_rows_with_state", fp.loop_over_rows_with_state, lambda r, d: (_n(r, d, 4, 3), _n(r, d, 3)),
         (("jit(f)", None), ("grad(f, argnums=(0, 1))", None), ("vmap(f, in_axes=(None, 0))", (None, 0)),
          ("hessian(f, argnums=1)", None))),
    Case("enumerate_weights", fp.enumerate_weights, lambda r, d: (_n(r, d, 3), [_n(r, d, 3), _n(r, d, 3)]),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=1)", None), ("vmap(f, in_axes=(0, None))", (0, None)))),
    Case("tolerance_gd", fp.tolerance_gd, _reg,
         (("jit(f)", None), ("vmap(f, in_axes=(0, None, None))", (0, None, None)))),
)

BY_NAME = {c.name: c for c in CASES}
DEFAULT_CASES = ("nbody_kinetic_after", "gauss_loglik_chol", "biquad", "first_above", "spring_system")


# -- running a check ------------------------------------------------------------------------------------------

def oracle(c: Case, expr: str, in_axes: Any, args: tuple[Any, ...]) -> Any:
    return jitted(evaluate(expr, JAX_T, TWIN[c.fn.__name__], jnp))(*to_twin(args))


def numpy_reference(c: Case, expr: str, in_axes: Any, args: tuple[Any, ...]) -> Any:
    """The user's function run by NumPy, for ``jit(f)`` and ``vmap(f, ...)`` (None otherwise)."""
    if not c.numpy:
        return None
    try:
        return loop_reference(c.fn, expr, in_axes, args)
    except Exception:  # noqa: BLE001 - (NumPy cannot run it: jax's spelling, e.g. bincount's length=)
        return None


def fd_reference(c: Case, expr: str, args: tuple[Any, ...]) -> Any:
    """Central finite differences of the user's function for ``grad(f)``/``grad(f, argnums=k)`` at float64."""
    m = re.fullmatch(r"grad\(f(?:, argnums=(\d))?(?:, max_iters=\d+)?\)", expr)
    if m is None or not c.numpy:
        return None
    k = int(m.group(1) or 0)
    if not (isinstance(args[k], np.ndarray) and args[k].dtype == np.float64):
        return None
    return central_fd(lambda *a: float(c.fn(*a)), args, k)


CORPUS = Corpus(CASES, ("field_programs.py",), KNOWN_REFUSALS, oracle, jax.tree_util.tree_leaves,
                lambda c, expr: evaluate(expr, SRCJAX_T, c.fn, np), numpy_reference, fd_reference,
                known_internal=KNOWN_INTERNAL)


def run_check(c: Case, expr: str, in_axes: Any, dtype: str, seed: int = 0) -> Outcome:
    return corpus_harness.run_check(CORPUS, c, expr, in_axes, dtype, seed)


test_field_program, test_field_program_thorough = CORPUS.tests(DEFAULT_CASES)

if __name__ == "__main__":
    CORPUS.main(sys.argv[1:])


# -- regressions found by the corpus ------------------------------------------------------------------------

def _dict_loop(params: Any, m: Any) -> Any:
    out = {}
    for k in params:
        out[k] = params[k] * m[k] + 1.0
    return out


def test_vmap_of_a_loop_over_a_mapped_dicts_keys() -> None:
    """``for k in params: out[k] = params[k] * m[k]`` (adam_update) under ``vmap`` of mapped dicts: the keys were
    taken for the rows of a batched array and ``params[k]`` for a per-example gather (was "IndexError: tuple
    index out of range" at the user's line)."""
    rng = np.random.default_rng(0)
    p = {"w": rng.standard_normal((3, 2, 2)), "b": rng.standard_normal((3, 2))}
    m = {"w": rng.standard_normal((3, 2, 2)), "b": rng.standard_normal((3, 2))}
    agree(srcjax.vmap(_dict_loop)(p, m), JAX.vmap(_dict_loop)(p, m), "vmap", 1e-12)
    args = arguments(BY_NAME["adam_update"], 0, np.float64, (0, 0, 0, 0, None))
    agree(srcjax.vmap(fp.adam_update, in_axes=(0, 0, 0, 0, None))(*args),
          JAX.vmap(TWIN["adam_update"], in_axes=(0, 0, 0, 0, None))(*args), "vmap(adam_update)", 1e-12)


def _mean_of_list(x: Any, y: Any) -> Any:
    items = [x, y, x * y]
    outs = []
    for v in items:
        outs.append(v * 2.0)
    return (outs[0] + outs[1] + outs[2]) / len(items) + len(outs)


def _list_mean(xs: Any, scale: Any) -> Any:
    return sum(xs) / len(xs) * len(scale)


def test_vmap_of_len_of_a_list_of_mapped_arrays() -> None:
    """``len(items)`` of a list (or a list built by ``append``) holding mapped arrays is the list's length under
    ``vmap``, not an example's (was ``np.shape(items)[1]``: "IndexError: tuple index out of range"), also of a list
    argument vmap maps (``sum(xs) / len(xs)``); also inside
    ``np.gradient`` (total_variation under ``vmap`` and ``vmap(grad)``)."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    agree(srcjax.vmap(_mean_of_list)(x, y), JAX.vmap(_mean_of_list)(x, y), "vmap", 1e-12)
    # a list (tuple) vmap maps: its length, decided when the argument is seen (was `np.shape(xs)[1]`)
    agree(srcjax.vmap(_list_mean)([x, y, x], (y, y)), JAX.vmap(_list_mean)([x, y, x], (y, y)), "vmap(list)", 1e-12)
    c = BY_NAME["total_variation"]
    for expr in ("vmap(f, in_axes=(0, None))", "vmap(grad(f), in_axes=(0, None))"):
        out = run_check(c, expr, (0, None), "float64")
        assert out.status == "ok", f"{expr}: {out}"


def test_grad_through_a_method_of_the_differentiated_object() -> None:
    """Silent wrong answer once: ``grad`` of ``params.energy(x)`` (``params`` a NamedTuple with methods) with
    respect to ``params`` was zero (the method call was read as a value that does not depend on ``params``),
    then refused; now the method is read as ``Spring.energy(params, x)`` (frontend/methods.py): jax's gradient."""
    p = fp.Spring(np.array([1.0, 2.0]), np.array([0.1, 0.2]))
    x = np.array([0.5, -0.2])
    twin = _twin_namespace()["spring_system"]
    jp = type(p)(jnp.asarray(p.k), jnp.asarray(p.rest))
    for argnums in (0, 1):
        got, want = srcjax.grad(fp.spring_system, argnums=argnums)(p, x), JAX.grad(twin, argnums=argnums)(jp, x)
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)


def test_break_on_data_in_a_loop_over_an_array_argument() -> None:
    """``for v in x: if v < 0: break`` with ``x`` an argument (an array or a list: unknown before specializing)
    is walked by index (was refused: "it does not loop over range(...) or the rows of an array")."""
    c = BY_NAME["sum_until_negative"]
    for expr, axes in c.checks:
        out = run_check(c, expr, axes, "float64")
        assert out.status == "ok", f"{expr}: {out}"


def test_a_zip_loop_rebinding_one_of_its_targets_is_differentiated() -> None:
    """``for p, g, s in zip(params, grads, sq): s = decay * s + ...`` (rmsprop_update): the loop was rewritten
    ``for p_g_s_item in zip(...): p, g, s = p_g_s_item`` (a target rebound in the body) and derivatives refused
    it ("cannot differentiate a loop over `zip(params, grads, sq)` yet"); now only ``s`` is renamed."""
    c = BY_NAME["rmsprop_update"]
    for expr, axes in c.checks:
        out = run_check(c, expr, axes, "float64")
        assert out.status == "ok", f"{expr}: {out}"


def _strong_after_weak(x: Any) -> Any:
    return x * 2.0, np.float64(2.0) * x, x + 1, x + np.int64(1), x * 3.0 + np.float64(3.0)


def test_a_numpy_scalar_equal_to_an_earlier_python_number_stays_strong() -> None:
    """Silent wrong answer (dtype and precision): ``x * 2.0`` then ``np.float64(2.0) * x`` on float32 ``x`` gave
    float32 for both (NumPy and jax: float64 for the second): the program's constants were shared by value, and
    the NumPy scalar got the weak Python number's constant (``stablehlo.constant`` reused without its weak flag)."""
    x = np.random.default_rng(0).standard_normal(3).astype(np.float32)
    got, want = srcjax.jit(_strong_after_weak)(x), _strong_after_weak(x)
    agree(got, want, "jit vs NumPy", 1e-6, jax_leaves=False)
    agree(srcjax.vmap(_strong_after_weak)(np.stack([x, x])), srcjax.tree_util.tree_map(
        lambda a: np.stack([a, a]), want), "vmap vs NumPy", 1e-6, jax_leaves=False)


def _unpacked_gradient(x: Any) -> Any:
    gx, gy = np.gradient(x, 0.5, 2.0)
    return np.sum(gx ** 2 + gy * x)


def _scaled_copies(x: Any) -> Any:
    outs = []
    for k in range(1, 3):
        outs.append(x * k)
    return outs


def _unpacks_a_helpers_list(x: Any) -> Any:
    a, b = _scaled_copies(x)
    return np.sum(a + b ** 2)


def test_grad_of_a_list_result_unpacked_by_the_caller() -> None:
    """``gx, gy = np.gradient(x, 0.5, 2.0)`` under ``grad``: the caller passed the unpacked results' cotangents as
    a tuple, which the adjoint of ``gradient``'s ``outs.append(...)`` pops (was "'tuple' object has no attribute
    'pop'" at the user's line); a list's cotangent bound from another name is now a list of its own."""
    x = np.random.default_rng(0).standard_normal((3, 4))
    twin = JAX.grad(lambda v: jnp.sum(jnp.gradient(v, 0.5, 2.0)[0] ** 2 + jnp.gradient(v, 0.5, 2.0)[1] * v))
    agree(srcjax.grad(_unpacked_gradient)(x), twin(x), "grad", 1e-9)
    agree(srcjax.grad(_unpacked_gradient)(x), central_fd(_unpacked_gradient, (x,), 0), "finite differences", 1e-5,
          dtypes=False, jax_leaves=False)
    v = x[0]  # (the same for a helper of the user's: `a, b = helper(x)`, helper returning a list it appends to)
    agree(srcjax.grad(_unpacks_a_helpers_list)(v), JAX.grad(_unpacks_a_helpers_list)(v), "grad(helper)", 1e-9)
    agree(srcjax.hessian(_unpacks_a_helpers_list)(v), JAX.hessian(_unpacks_a_helpers_list)(v), "hessian(helper)", 1e-9)
