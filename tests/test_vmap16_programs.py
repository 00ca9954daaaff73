"""tests/vmap16_programs.py's programs (real code that uses ``jax.vmap``, ported to srcjax's names: the autodiff
cookbook, the vmap tutorial, NTKs, MAML, ensembles, GP kernels, batched ODE solvers, Newton/bisection, scan RNNs,
cond/switch, custom rules, pytree in_axes, jax-md energies, optax-style updates) under vmap and its compositions.

Each check is an expression over the program ``f`` and the transformations (``vmap(jacfwd(f), in_axes=(0,
None))``), evaluated three ways: with srcjax's functions (under ``srcjax.jit``), with jax's over the module's
text run with ``srcjax`` bound to jax and ``np`` to jax.numpy (values and every output leaf's dtype; where jax
cannot vmap Python control flow on data, one example at a time), and with a NumPy stand-in
(``tests/loop_fd_standin.py``: vmap a loop over the examples, derivatives central finite differences at float64)
over the module's text run with ``srcjax`` bound to it. The generated source run by NumPy is checked against
srcjax too. A check's arguments are the case's draws, ``B`` of them stacked along the check's in_axes (a prefix
per argument; a list of prefixes: nested vmaps, innermost first).

Outcomes: ok; known (a refusal in ``KNOWN_REFUSALS``); WRONG (a silent wrong answer); internal (a crash, or an
error located in srcjax's files); refused (located at the user's line, where jax runs); numpy (the generated
source does not run under NumPy). The default run checks ``DEFAULT_CASES`` at float64;
``SRCJAX_HYPOTHESIS=thorough`` every check at float64 and float32. ``python -m tests.test_vmap16_programs [NAME
...] [--f64|--f32]`` runs the corpus (or the cases named) and prints the counts and every failure.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import srcjax

from . import vmap16_programs as vp
from .hunt_sweep import leaves_agree
from .vmap_corpus import Case, VmapCorpus

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

# Refusals met where jax runs the program (reported; located at the user's line with a hint)
KNOWN_REFUSALS: tuple[str, ...] = ()
# Errors of srcjax's own met and not fixed yet: xfail, not hidden
KNOWN_INTERNAL: tuple[str, ...] = (
    # NumPy running the generated source: srcjax.numpy_function of a transformation of a lambda taking *args
    # ("it has no Python source"); srcjax's XLA results are right
    "<srcjax transformation of make.<locals>.<lambda>, one per number of arguments>",
)
# Wrong answers met and not fixed yet: (case, check[, dtype]) -> why; xfail, not hidden
KNOWN_WRONG: dict[tuple[str, ...], str] = {}


# -- cases ------------------------------------------------------------------------------------------------------

def _n(r: np.random.Generator, d: Any, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * r.standard_normal(shape)).astype(d)


def _u(r: np.random.Generator, d: Any, lo: float, hi: float, *shape: int) -> np.ndarray:
    return r.uniform(lo, hi, shape).astype(d)


def _s(r: np.random.Generator, d: Any, lo: float, hi: float) -> np.ndarray:
    return np.asarray(r.uniform(lo, hi), dtype=d)


def _mlp(r: np.random.Generator, d: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(_n(r, d, 5, 4, scale=0.5), _n(r, d, 5, scale=0.1)), (_n(r, d, 3, 5, scale=0.5), _n(r, d, 3, scale=0.1))]


def _ntk_params(r: np.random.Generator, d: Any) -> dict[str, np.ndarray]:
    return {"w1": _n(r, d, 4, 3, scale=0.5), "b1": _n(r, d, 4, scale=0.1), "w2": _n(r, d, 2, 4, scale=0.5),
            "b2": _n(r, d, 2, scale=0.1)}


def _sine_params(r: np.random.Generator, d: Any) -> dict[str, np.ndarray]:
    return {"w1": _n(r, d, 1, 6, scale=0.5), "b1": _n(r, d, 6, scale=0.1), "w2": _n(r, d, 6, 1, scale=0.5),
            "b2": _n(r, d, 1, scale=0.1)}


def _sine_tasks(r: np.random.Generator, d: Any, tasks: int = 2) -> tuple[np.ndarray, ...]:
    amp, phase = r.uniform(0.5, 2.0, (tasks, 1, 1)), r.uniform(0, np.pi, (tasks, 1, 1))
    x1, x2 = r.uniform(-3, 3, (tasks, 4, 1)), r.uniform(-3, 3, (tasks, 4, 1))
    return tuple(v.astype(d) for v in (x1, amp * np.sin(x1 + phase), x2, amp * np.sin(x2 + phase)))


def _member(r: np.random.Generator, d: Any, members: int = 3) -> dict[str, np.ndarray]:
    return {"w1": _n(r, d, members, 2, 4, scale=0.5), "b1": _n(r, d, members, 4, scale=0.1),
            "w2": _n(r, d, members, 4, 1, scale=0.5)}


def _rnn(r: np.random.Generator, d: Any) -> dict[str, np.ndarray]:
    return {"Wh": _n(r, d, 3, 3, scale=0.4), "Wx": _n(r, d, 3, 2, scale=0.5), "b": _n(r, d, 3, scale=0.1),
            "Wo": _n(r, d, 1, 3, scale=0.5)}


def _lattice(r: np.random.Generator, d: Any, n: int, spacing: float) -> np.ndarray:
    grid = np.stack(np.meshgrid(np.arange(2), np.arange(2), indexing="ij"), -1).reshape(-1, 2)[:n]
    return (spacing * grid + 0.05 * r.standard_normal((n, 2))).astype(d)


def _key(r: np.random.Generator) -> np.ndarray:
    return np.array([0, r.integers(0, 2 ** 31)], dtype=np.uint32)


def _adam_args(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return {"w": _n(r, d, 3), "b": _n(r, d, scale=0.1)}, _n(r, d, 6, 3), _n(r, d, 6), _u(r, d, 0.01, 0.1, 3)


J = ("jit(f)", None)

CASES: tuple[Case, ...] = (
    # the autodiff cookbook
    Case("hvp_fwd_over_rev", lambda r, d: (_n(r, d, 4), _n(r, d, 4)),
         (J, ("vmap(f, in_axes=(None, 0))", (None, 0)), ("vmap(f)", (0, 0)),
          ("jacfwd(f, argnums=1)", None))),
    Case("hessian_by_vmapped_hvp", lambda r, d: (_n(r, d, 4),),
         (J, ("vmap(f)", (0,)), ("vmap(f, in_axes=1, out_axes=-1)", (1,)))),
    Case("per_example_logistic_grads", lambda r, d: (_n(r, d, 3), _n(r, d, scale=0.1), _n(r, d, 5, 3),
                                                     (r.random(5) < 0.5).astype(d)),
         (J, ("vmap(f, in_axes=(0, 0, None, None))", (0, 0, None, None)),
          ("jacrev(lambda W, b, x, t: f(W, b, x, t)[0].sum(0))", None))),
    Case("jacobian_rows_by_vmapped_vjp", lambda r, d: (_n(r, d, 4),),
         (J, ("vmap(f)", (0,)), ("vmap(f, in_axes=1, out_axes=2)", (1,)))),
    Case("jacobian_columns_by_vmapped_jvp", lambda r, d: (_n(r, d, 4),),
         (J, ("vmap(f)", (0,)), ("vmap(f, out_axes=(0, -1))", (0,)))),
    Case("directional_derivatives", lambda r, d: (_n(r, d, 3), _n(r, d, 4, 3)),
         (J, ("vmap(f, in_axes=(0, None))", (0, None)), ("grad(lambda x, vs: f(x, vs).sum())", None))),
    Case("predict_tanh_layer", lambda r, d: (_n(r, d, 2, 3), _n(r, d, 3)),
         (("vmap(jacfwd(f, argnums=1), in_axes=(None, 0))", (None, 0)),
          ("jacrev(vmap(f, in_axes=(None, 0)))", (None, 0)),
          ("vmap(hessian(lambda W, x: f(W, x).sum(), argnums=1), in_axes=(None, 0))", (None, 0)),
          ("vmap(jacrev(f), in_axes=(0, 0))", (0, 0)))),
    # the vmap tutorial and the simple neural network tutorial
    Case("convolve", lambda r, d: (_n(r, d, 6), _n(r, d, 3)),
         (J, ("vmap(f)", (0, 0)), ("vmap(f, in_axes=(0, None))", (0, None)),
          ("vmap(f, in_axes=1, out_axes=1)", (1, 1)),
          ("vmap(grad(lambda x, w: f(x, w).sum(), argnums=1))", (0, 0)))),
    Case("mlp_batched_loss", lambda r, d: (_mlp(r, d), _n(r, d, 6, 4), np.eye(3)[r.integers(0, 3, 6)].astype(d)),
         (J, ("grad(f)", None), ("value_and_grad(f)", None), ("vmap(f, in_axes=(None, 0, 0))", (None, 0, 0)))),
    Case("mlp_sgd_update", lambda r, d: (_mlp(r, d), _n(r, d, 6, 4), np.eye(3)[r.integers(0, 3, 6)].astype(d)),
         (J, ("vmap(f, in_axes=(None, 0, 0))", (None, 0, 0)))),
    # neural tangent kernels
    Case("empirical_ntk", lambda r, d: (_ntk_params(r, d), _n(r, d, 3, 3), _n(r, d, 2, 3)),
         (J, ("vmap(f, in_axes=(None, 0, None))", (None, 0, None)))),
    Case("ntk_by_nested_vmap_of_grads", lambda r, d: (_ntk_params(r, d), _n(r, d, 3, 3), _n(r, d, 2, 3)),
         (J, ("jacfwd(f, argnums=2)", None))),
    # MAML
    Case("maml_loss", lambda r, d: (_sine_params(r, d), *[a[0] for a in _sine_tasks(r, d)]),
         (J, ("grad(f)", None), ("vmap(f, in_axes=(None, 0, 0, 0, 0))", (None, 0, 0, 0, 0)),
          ("vmap(grad(f), in_axes=(None, 0, 0, 0, 0))", (None, 0, 0, 0, 0)))),
    Case("batch_maml_loss", lambda r, d: (_sine_params(r, d), *_sine_tasks(r, d)),
         (J, ("grad(f)", None), ("value_and_grad(f)", None))),
    Case("maml_meta_step", lambda r, d: (_sine_params(r, d), *_sine_tasks(r, d)), (J,)),
    # ensembles
    Case("ensemble_mean_and_spread", lambda r, d: (_member(r, d), _n(r, d, 5, 2)),
         (J, ("vmap(f, in_axes=(None, 0))", (None, 0)), ("grad(lambda p, x: f(p, x)[0].sum())", None))),
    Case("member_sgd_step", lambda r, d: ({k: v[0] for k, v in _member(r, d).items()}, _n(r, d, 5, 2),
                                          _n(r, d, 5, 1)),
         (J, ("vmap(f, in_axes=(0, None, None))", (0, None, None)),
          ("vmap(f, in_axes=({'w1': 0, 'b1': 0, 'w2': None}, None, None))",
           ({"w1": 0, "b1": 0, "w2": None}, None, None)),
          ("vmap(f, in_axes=(None, 0, 0))", (None, 0, 0)))),
    Case("ensemble_train", lambda r, d: (_member(r, d), _n(r, d, 5, 2), _n(r, d, 5, 1)),
         (J, ("grad(lambda p, x, y: f(p, x, y)['w2'].sum())", None))),
    # Gaussian processes
    Case("gram", lambda r, d: (_n(r, d, 4, 2), _n(r, d, 3, 2), _s(r, d, -0.3, 0.3)),
         (J, ("jacfwd(f, argnums=2)", None), ("vmap(f, in_axes=(None, None, 0))", (None, None, 0)),
          ("jacrev(f)", None))),
    Case("gp_posterior_mean", lambda r, d: (_n(r, d, 5, 2), _n(r, d, 5), _n(r, d, 3, 2), _s(r, d, -0.2, 0.2),
                                            _s(r, d, -1.5, -1.0)),
         (J, ("grad(lambda *a: f(*a).sum(), argnums=(3, 4))", None),
          ("vmap(f, in_axes=(None, 0, None, None, None))", (None, 0, None, None, None)),
          ("vmap(f, in_axes=(None, None, None, 0, 0))", (None, None, None, 0, 0)))),
    Case("gp_neg_log_marginal", lambda r, d: (_s(r, d, -0.2, 0.2), _n(r, d, 5, 2), _n(r, d, 5)),
         (J, ("grad(f)", None), ("hessian(f)", None), ("vmap(grad(f), in_axes=(None, 0, 0))", (None, 0, 0)),
          ("vmap(f, in_axes=(0, None, None))", (0, None, None)))),
    Case("matern_gram_trace_norm", lambda r, d: (_n(r, d, 4, 2), _s(r, d, -0.2, 0.2)),
         (J, ("grad(f)", None), ("grad(f, argnums=1)", None), ("vmap(f, in_axes=(0, None))", (0, None))),
         numpy_dtypes="np.sqrt(5.0) is a float64 NumPy scalar (weak in jax)"),
    # batched ODE solvers
    Case("rk4_fori", lambda r, d: (_u(r, d, 0.5, 1.5, 2), _u(r, d, 0.5, 1.5, 4)),
         (J, ("vmap(f, in_axes=(0, None))", (0, None)), ("vmap(jacfwd(f), in_axes=(0, None))", (0, None)),
          ("jacrev(f, argnums=1)", None), ("vmap(f)", (0, 0)))),
    Case("rk4_until_time", lambda r, d: (_n(r, d, 2), _s(r, d, 0.07, 0.3)),
         (J, ("vmap(f)", (0, 0)), ("vmap(f, in_axes=(0, None))", (0, None)),
          ("vmap(jacfwd(lambda y, h: f(y, h)[0]))", (0, 0)))),
    Case("damped_euler", lambda r, d: (_n(r, d, 3), _s(r, d, 0.5, 2.0)),
         (J, ("vmap(f, in_axes=(None, 0))", (None, 0)), ("vmap(grad(lambda x, k: f(x, k).sum(), argnums=1))", (0, 0)),
          ("vmap(jacrev(f), in_axes=(0, None))", (0, None)))),
    Case("pendulum_energy_after", lambda r, d: (_s(r, d, -1.0, 1.0), _s(r, d, -1.0, 1.0)),
         (J, ("vmap(f)", (0, 0)), ("vmap(grad(f, argnums=(0, 1)))", (0, 0)), ("vmap(hessian(f))", (0, 0)))),
    # batched Newton and bisection
    Case("newton_cbrt", lambda r, d: (_s(r, d, 0.1, 30.0),),
         (J, ("vmap(f)", (0,)), ("vmap(vmap(f), in_axes=1, out_axes=1)", [(0,), (1,)])),
         numpy_dtypes="the trip count is a Python int in NumPy (int64; weak in jax)"),
    Case("bisection_root", lambda r, d: (_s(r, d, -5.0, 5.0),), (J, ("vmap(f)", (0,))),
         numpy_dtypes="float32 c against Python float bounds: NumPy float64 (jax float32)"),
    Case("newton_break", lambda r, d: (_s(r, d, 0.1, 50.0),),
         (J, ("vmap(f)", (0,)), ("vmap(grad(f))", (0,)))),
    Case("kepler_newton", lambda r, d: (_s(r, d, 0.1, 3.0), _s(r, d, 0.1, 0.8)),
         (J, ("vmap(f)", (0, 0)), ("vmap(f, in_axes=(0, None))", (0, None)))),
    # scan RNNs, cond and switch
    Case("rnn_final_state", lambda r, d: (_rnn(r, d), _n(r, d, 5, 2), _n(r, d, 3, scale=0.1)),
         (J, ("vmap(f, in_axes=(None, 0, 0))", (None, 0, 0)),
          ("vmap(f, in_axes=(None, 1, 0), out_axes=(0, 1))", (None, 1, 0)),
          ("vmap(grad(lambda p, xs, h: f(p, xs, h)[1].sum()), in_axes=(None, 0, 0))", (None, 0, 0)))),
    Case("rnn_sequence_loss", lambda r, d: (_rnn(r, d), _n(r, d, 5, 2), _n(r, d, 5, 1)),
         (J, ("grad(f)", None), ("vmap(grad(f), in_axes=(None, 0, 0))", (None, 0, 0)),
          ("vmap(f, in_axes=({'Wh': None, 'Wx': 0, 'b': None, 'Wo': None}, 0, 0))",
           ({"Wh": None, "Wx": 0, "b": None, "Wo": None}, 0, 0)))),
    Case("cumulative_ema", lambda r, d: (_n(r, d, 5, 2), _s(r, d, 0.5, 0.9)),
         (J, ("vmap(f, in_axes=(1, None), out_axes=1)", (1, None)), ("vmap(f, in_axes=(None, 0))", (None, 0)),
          ("vmap(jacfwd(f, argnums=1), in_axes=(0, 0))", (0, 0)))),
    Case("cond_piecewise", lambda r, d: (_n(r, d, 3), _n(r, d)),
         (J, ("vmap(f)", (0, 0)), ("vmap(f, in_axes=(0, None))", (0, None)),
          ("vmap(grad(lambda x, t: f(x, t).sum(), argnums=(0, 1)))", (0, 0)))),
    Case("switch_activation", lambda r, d: (np.asarray(r.integers(0, 3)), _n(r, d, 3)),
         (J, ("vmap(f)", (0, 0)), ("vmap(f, in_axes=(None, 0))", (None, 0)),
          ("vmap(jacrev(f, argnums=1))", (0, 0)))),
    Case("python_if_regimes", lambda r, d: (_n(r, d, 3),),
         (J, ("vmap(f)", (0,)), ("vmap(jacfwd(f))", (0,)), ("vmap(f, in_axes=-1, out_axes=-1)", (-1,)))),
    # custom rules
    Case("safe_log_loss", lambda r, d: (_n(r, d, 4),),
         (J, ("vmap(f)", (0,)), ("vmap(grad(f))", (0,)), ("grad(lambda x: vmap(f)(x).sum())", (0,)))),
    Case("clipped_loss", lambda r, d: (_n(r, d, 4),),
         (J, ("vmap(grad(f))", (0,)), ("vmap(jacrev(grad(f)))", (0,))), fd=False),
    Case("softplus_regression", lambda r, d: (_n(r, d, 3), _n(r, d, 5, 3)),
         (J, ("vmap(grad(f), in_axes=(0, None))", (0, None)), ("vmap(hessian(f), in_axes=(None, 0))", (None, 0)))),
    # pytrees and in_axes prefixes
    Case("namedtuple_affine", lambda r, d: (vp.Params(_n(r, d, 3, 2), _n(r, d, 2)), _n(r, d, 3)),
         (("vmap(f, in_axes=(Params(0, None), None))", (vp.Params(0, None), None)),
          ("vmap(f, in_axes=(None, 0))", (None, 0)),
          ("vmap(grad(lambda p, x: f(p, x).sum()), in_axes=(Params(None, 0), 0))", (vp.Params(None, 0), 0)))),
    Case("dict_affine", lambda r, d: ({"w": _n(r, d, 3, 2), "b": _n(r, d, 2)}, _n(r, d, 3)),
         (("vmap(f, in_axes=({'w': 0, 'b': None}, 0))", ({"w": 0, "b": None}, 0)),
          ("vmap(f, in_axes=({'w': None, 'b': 0}, None), out_axes=1)", ({"w": None, "b": 0}, None)),
          ("vmap(jacrev(f), in_axes=({'w': 1, 'b': None}, 0))", ({"w": 1, "b": None}, 0)))),
    Case("two_layer_dict", lambda r, d: ({"hidden": {"w": _n(r, d, 3, 4), "b": _n(r, d, 4)}, "out": _n(r, d, 4, 2)},
                                         _n(r, d, 3)),
         (("vmap(f, in_axes=(None, 0), out_axes={'out': 0, 'norm': None})", (None, 0)),
          ("vmap(f, in_axes=({'hidden': 0, 'out': None}, 0), out_axes={'out': -1, 'norm': None})",
           ({"hidden": 0, "out": None}, 0)))),
    Case("moments", lambda r, d: (_n(r, d, 4),),
         (("vmap(f, out_axes=(0, 1, None))", (0,)), ("vmap(f, in_axes=-1, out_axes=(0, -1, None))", (-1,)))),
    Case("batch_of_inits", lambda r, d: (_s(r, d, 0.5, 2.0),),
         (("vmap(f, in_axes=None, axis_size=3)", None), ("vmap(f, in_axes=(None,), axis_size=2, out_axes=1)", None))),
    # jacobians, hessians and sums of vmaps
    Case("lorenz", lambda r, d: (_n(r, d, 3),),
         (("vmap(jacfwd(f))", (0,)), ("vmap(jacrev(f), in_axes=1)", (1,)), ("jacfwd(vmap(f))", (0,)))),
    Case("rosenbrock", lambda r, d: (_n(r, d, 4),),
         (("vmap(hessian(f))", (0,)), ("vmap(grad(f))", (0,)), ("grad(lambda x: vmap(f)(x).sum())", (0,)))),
    Case("summed_vmap_loss", lambda r, d: (_n(r, d, 3), _n(r, d, 5, 3), _n(r, d, 5)),
         (J, ("grad(f)", None), ("hessian(f)", None), ("vmap(grad(f), in_axes=(0, None, None))", (0, None, None)))),
    Case("per_example_hessian_traces", lambda r, d: (_n(r, d, 3), _n(r, d, 4, 3)),
         (J, ("grad(lambda w, X: f(w, X).sum())", None))),
    Case("jitted_vmapped_inner", lambda r, d: (_n(r, d, 3), _n(r, d, 5, 3)),
         (J, ("grad(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)))),
    Case("repeated_rows", lambda r, d: (_n(r, d, 3), 2),
         (("jit(vmap(f, in_axes=(0, None)), static_argnums=1)", (0, None)),
          ("vmap(lambda x: f(x, 3))", (0,))),
         numpy_dtypes="float32 times np.arange's int64 is float64 in NumPy (float32 in jax)"),
    Case("power_sum", lambda r, d: (_n(r, d, 3, scale=0.5), 4),
         (("jit(vmap(f, in_axes=(0, None)), static_argnums=1)", (0, None)),
          ("vmap(jacfwd(lambda x: f(x, 3)))", (0,)))),
    # jax-md style energies
    Case("lennard_jones_energy", lambda r, d: (_lattice(r, d, 4, 1.15),),
         (J, ("grad(f)", None), ("vmap(f)", (0,)), ("vmap(grad(f))", (0,)), ("hessian(f)", None))),
    Case("soft_sphere_periodic", lambda r, d: (_u(r, d, 0.0, 3.0, 5, 2), _s(r, d, 1.0, 1.5)),
         (J, ("grad(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)), ("vmap(grad(f, argnums=1))", (0, 0)))),
    Case("forces", lambda r, d: (_lattice(r, d, 4, 1.15),), (J, ("vmap(f)", (0,)), ("jacfwd(f)", None))),
    # optax-style updates
    Case("adam_fit_many_lrs", _adam_args,
         (J, ("vmap(f, in_axes=(None, 0, 0, None))", (None, 0, 0, None)), ("grad(lambda *a: f(*a).sum(), argnums=3)", None))),
    Case("clip_by_global_norm_update", lambda r, d: ({"w": _n(r, d, 3, 2), "b": _n(r, d, 2)}, _s(r, d, 0.5, 2.0)),
         (J, ("vmap(f, in_axes=(0, None))", (0, None)), ("vmap(f, in_axes=({'w': 0, 'b': None}, 0))",
                                                         ({"w": 0, "b": None}, 0)))),
    # break/continue masks, scatters with batched indices
    Case("rows_until_budget", lambda r, d: (_n(r, d, 5, 2), _s(r, d, 1.0, 4.0)),
         (J, ("vmap(f)", (0, 0)), ("vmap(f, in_axes=(None, 0))", (None, 0)),
          ("vmap(grad(lambda X, b: f(X, b)[0]))", (0, 0))),
         numpy_dtypes="the count is a Python int in NumPy (int64; weak in jax)"),
    Case("scatter_add_batched", lambda r, d: (_n(r, d, 5), r.integers(0, 5, 3), _n(r, d, 3)),
         (("vmap(f)", (0, 0, 0)), ("vmap(f, in_axes=(None, 0, 0))", (None, 0, 0)),
          ("vmap(f, in_axes=(0, 0, None))", (0, 0, None)),
          ("vmap(grad(lambda x, i, v: (f(x, i, v) ** 2).sum(), argnums=2))", (0, 0, 0)))),
    Case("one_hot_update", lambda r, d: (_n(r, d, 5), np.asarray(r.integers(0, 5)), _n(r, d)),
         (("vmap(f)", (0, 0, 0)), ("vmap(f, in_axes=(None, 0, None))", (None, 0, None)),
          ("vmap(jacrev(f, argnums=(0, 2)))", (0, 0, 0)))),
    Case("gather_neighbors", lambda r, d: (_n(r, d, 6, 2), r.integers(-6, 6, 3)),
         (("vmap(f)", (0, 0)), ("vmap(f, in_axes=(None, 0))", (None, 0)),
          ("vmap(grad(lambda x, i: f(x, i).sum()), in_axes=(0, 0))", (0, 0))),
         numpy_dtypes="float32 times np.arange's int64 is float64 in NumPy (float32 in jax)"),
    # helpers taking functions, lambdas, random keys, aux outputs
    Case("normalize_rows", lambda r, d: (_n(r, d, 4, 3),),
         (J, ("vmap(f, in_axes=2)", (2,)), ("jacrev(f)", None))),
    Case("dropout_per_example", lambda r, d: (_key(r), _n(r, d, 4)),
         (("vmap(f)", (0, 0)), ("vmap(f, in_axes=(None, 0))", (None, 0)), ("vmap(f, in_axes=(0, None))", (0, None))),
         fd=False),
    Case("noisy_features", lambda r, d: (np.stack([_key(r) for _ in range(4)]), _n(r, d, 4, 3)),
         (J, ("vmap(f, in_axes=(None, 0))", (None, 0)))),
    Case("per_example_grads_with_aux", lambda r, d: (_n(r, d, 3), _n(r, d, 5, 3), _n(r, d, 5)),
         (J, ("vmap(f, in_axes=(0, None, None))", (0, None, None)))),
    Case("value_and_grads_per_task", lambda r, d: (_n(r, d, 3), _n(r, d, scale=0.1), _n(r, d, 2, 4, 3),
                                                   _n(r, d, 2, 4)),
         (J, ("grad(lambda w, b, xs, ys: f(w, b, xs, ys)[0].sum())", None))),
    Case("hyper_grid", lambda r, d: (_n(r, d, 3), _n(r, d, 4)),
         (J, ("jacfwd(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)))),
    Case("time_series_features", lambda r, d: (_n(r, d, 5),),
         (("vmap(f, in_axes=-1)", (-1,)), ("vmap(f, in_axes=-1, out_axes=-1)", (-1,)),
          ("vmap(jacrev(f), in_axes=-1)", (-1,)))),
    Case("implicit_sqrt_grads", lambda r, d: (_u(r, d, 0.5, 4.0, 3),),
         (J, ("jacfwd(f)", None), ("vmap(f)", (0,)))),
    Case("batched_cholesky_solve", lambda r, d: (_n(r, d, 3, 3, 3), _n(r, d, 3)),
         (J, ("jacrev(lambda A, b: f(A, b).sum(), argnums=1)", None), ("vmap(f, in_axes=(None, 0))", (None, 0)))),
    Case("attention_one_query", lambda r, d: (_n(r, d, 3), _n(r, d, 4, 3), _n(r, d, 4, 2)),
         (("vmap(f, in_axes=(0, None, None))", (0, None, None)),
          ("vmap(vmap(f, in_axes=(0, None, None)), in_axes=(None, 0, 0))", [(0, None, None), (None, 0, 0)]),
          ("vmap(jacrev(f, argnums=1), in_axes=(0, None, None))", (0, None, None))),
         numpy_dtypes="np.sqrt(q.shape[0]) is a float64 NumPy scalar (weak in jax)"),
    Case("hessian_of_vmapped_sum", lambda r, d: (_n(r, d, 3),), (J, ("vmap(f)", (0,)))),
)

DEFAULT_CASES = ("per_example_logistic_grads", "rk4_until_time", "dict_affine", "rows_until_budget")


# -- running a check ---------------------------------------------------------------------------------------------

CORPUS = VmapCorpus(vp, CASES, "vmap16_check_", classes=("Params", "AdamState"), known_refusals=KNOWN_REFUSALS,
                    known_internal=KNOWN_INTERNAL, known_wrong=KNOWN_WRONG)
JAX_TWIN = CORPUS.jax_twin
_run = CORPUS.run
_leaves = srcjax.tree_util.tree_leaves


test_vmap16_program, test_vmap16_program_thorough = CORPUS.tests(DEFAULT_CASES)

if __name__ == "__main__":
    CORPUS.main(sys.argv[1:])


# -- regressions found by the corpus ------------------------------------------------------------------------------

def _agree(got: Any, want: Any, what: str, rtol: float = 1e-10) -> None:
    leaves_agree(_leaves(got), jax.tree_util.tree_leaves(want), what, rtol, dtypes=False)


def _jvp_of_a_nested_def(x: Any, vs: Any) -> Any:
    s = np.sum(x)

    def f(z: Any) -> Any:
        return np.sum(z ** 3) * s

    def directional(v: Any) -> Any:
        return srcjax.jvp(f, (x,), (v,))[1]

    return srcjax.vmap(lambda v: srcjax.jvp(f, (x,), (v,))[1])(vs) + srcjax.vmap(directional)(vs)


def test_vmap_of_a_function_reading_a_nested_def() -> None:
    """Refused where jax runs it (the autodiff cookbook's ``vmap(lambda v: jvp(f, (x,), (v,))[1])(vs)`` and
    ``vmap(pushfwd, out_axes=(None, 1))`` with ``f`` a ``def`` in the function): "vmap: cannot batch
    'srcjax.jvp(f, (x,), (v,))'", located in srcjax's lifted copy. The lambda (or def) handed to vmap is lifted
    with the caller's locals as parameters; the nested ``f`` was one of them, a function value no transformation
    can read the source of. It is written in the lifted function's body now, its own locals (``s``) passed."""
    r = np.random.default_rng(0)
    x, vs = r.standard_normal(3), r.standard_normal((4, 3))
    want = 2 * (vs @ (3 * x ** 2)) * np.sum(x)
    _agree(srcjax.jit(_jvp_of_a_nested_def)(x, vs), want, "jit")
    X = np.stack([x, -2 * x])
    _agree(srcjax.vmap(_jvp_of_a_nested_def, in_axes=(0, None))(X, vs),
           np.stack([2 * (vs @ (3 * a ** 2)) * np.sum(a) for a in X]), "vmap")
    for name in ("jacobian_columns_by_vmapped_jvp", "directional_derivatives"):
        assert _run(name, "jit(f)", "float64").status == "ok", name


def test_vmap_of_the_function_a_vjp_returns() -> None:
    """Refused where jax runs it (the autodiff cookbook's Jacobian by rows: ``y, vjp_fun = srcjax.vjp(g, x)``,
    then ``srcjax.vmap(vjp_fun)(np.eye(n))``): "cannot compile <function vjp_fun>: it has no Python source" under
    jit, "name 'vjp_fun' is not defined" under vmap. The nested function srcjax writes for ``vjp_fun`` is lifted
    like a def of the user's, the generated vjp it calls passed as its closure."""
    x = np.array([0.3, -1.0, 2.0])
    twin = JAX_TWIN["jacobian_rows_by_vmapped_vjp"]
    _agree(srcjax.jit(vp.jacobian_rows_by_vmapped_vjp)(x), twin(x), "jit")
    X = np.stack([x, 2 * x])
    _agree(srcjax.vmap(vp.jacobian_rows_by_vmapped_vjp)(X), jax.vmap(twin)(X), "vmap")
    # the nested defs the lifted functions stand for, read by nothing, are not in the jit text (was `def vjp_fun`)
    text = srcjax.source(srcjax.jit(vp.jacobian_rows_by_vmapped_vjp))
    assert "def vjp_fun(" not in text and "def g(" not in text and "vjp_fun_lifted_vmap(eye, x)" in text, text
    _agree(srcjax.numpy_function(srcjax.jit(vp.jacobian_rows_by_vmapped_vjp))(x), twin(x), "NumPy")


def test_hessian_of_a_sum_of_a_vmapped_dot() -> None:
    """Refused where jax runs it (``hessian(lambda w: np.sum(srcjax.vmap(squared_error, in_axes=(None, 0, 0))(w,
    X, Y)))``, a dot of a mapped and an unmapped vector): "cannot differentiate through `subscripts.replace(...)`"
    in srcjax/einsum_adjoint.py (forward over the batched dot's VJP: the einsum subscripts, popped from the tape,
    counted as active) and, reverse over reverse, "hands values saved for the adjoint through the tape". The
    einsum's subscripts as terms (``einsum_terms``) are static."""
    r = np.random.default_rng(0)
    w, X, Y = r.standard_normal(3), r.standard_normal((5, 3)), r.standard_normal(5)
    for t in (srcjax.hessian, lambda f: srcjax.jacrev(srcjax.grad(f))):
        _agree(t(vp.summed_vmap_loss)(w, X, Y), 2 * X.T @ X, "hessian")


def _scaled_twice(p: Any, lr: Any) -> Any:
    for _ in range(2):
        p = srcjax.tree_util.tree_map(lambda a: a * lr, p)
    return p


def test_a_dict_a_loop_carries_made_mapped_by_the_loop() -> None:
    """Silently wrong before (optax-style sweeps: ``vmap(run)(lrs)`` with ``for _ in range(3): p = tree_map(lambda
    a: a - lr * g, p, grads)`` and ``p`` unmapped before the loop): the loop's carry, unmapped on entry and mapped in
    the body, was broadcast with ``batch_broadcast``, which left a container as it was; its leaves were then read as
    mapped, ``w``'s own first axis taken for the batch (``w * lr[k]`` per element, not per example), a shape error
    where the sizes differ ("IndexError: tuple index out of range" located at the user's loss). A while/fori
    loop's carry is broadcast leaf by leaf (``batch_broadcast_items``, as scan's was)."""
    p = {"w": np.array([0.5, -1.0, 2.0]), "b": np.asarray(0.1)}
    lrs = np.array([0.1, 0.2, 0.3])  # (as many examples as w has elements: the silent case)
    got = srcjax.vmap(_scaled_twice, in_axes=(None, 0))(p, lrs)
    want = {"w": lrs[:, None] ** 2 * p["w"], "b": lrs ** 2 * 0.1}
    leaves_agree(_leaves(got), _leaves(want), "vmap", 1e-12)
    leaves_agree(_leaves(srcjax.vmap(_scaled_twice, in_axes=(None, 0))(p, lrs[:2])), _leaves(
        {"w": lrs[:2, None] ** 2 * p["w"], "b": lrs[:2] ** 2 * 0.1}), "vmap of two", 1e-12)
    assert _run("adam_fit_many_lrs", "vmap(f, in_axes=(None, 0, 0, None))", "float64").status == "ok"


def _map_rows(fn: Any, xs: Any) -> Any:
    return srcjax.vmap(fn)(xs)


def _scaled_rows(X: Any, s: Any) -> Any:
    return _map_rows(lambda r: r * s, X) + _map_rows(lambda r: r / np.sqrt(np.sum(r ** 2)), X)


def test_vmap_of_a_function_argument_inside_a_helper() -> None:
    """Refused where jax runs it (``map_rows(fn, xs)`` calling ``srcjax.vmap(fn)(xs)``, given a lambda): a lambda
    reading no locals reached the helper as a function value with no source ("cannot compile <function lambda_fn>:
    it has no Python source"); one reading the caller's locals (``s``) was vmapped without them ("lambda_fn_vmap():
    missing a required argument: 's'"). Both are the helper's bound copy's function now, with its locals."""
    X = np.arange(1.0, 7.0).reshape(2, 3)
    want = X * 2.0 + X / np.linalg.norm(X, axis=1, keepdims=True)
    leaves_agree(_leaves(srcjax.jit(_scaled_rows)(X, 2.0)), [want], "jit", 1e-12)
    Xs = np.stack([X, -X, 2 * X])
    leaves_agree(_leaves(srcjax.vmap(_scaled_rows, in_axes=(0, None))(Xs, 2.0)),
                 [np.stack([_scaled_rows(x, 2.0) for x in Xs])], "vmap", 1e-12)
    g = srcjax.grad(lambda s: np.sum(_scaled_rows(X, s)))(2.0)
    leaves_agree([g], [np.sum(X)], "grad", 1e-12)
