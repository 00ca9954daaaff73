"""tests/jax_style_programs.py's programs (written in JAX's idiom: pytrees of parameters, ``lax`` control flow,
``vmap``/``grad`` inside functions, custom rules, ``.at[]`` updates, random keys, linalg, optimizers) under the
transformations their authors apply, against jax, NumPy and finite differences.

Each case is a program, its arguments (drawn at float64 and float32; integer, boolean and key arguments stay what
they are) and the calls a user makes, written once as text and evaluated with srcjax's functions and jax's.
Checked: srcjax (XLA) against jax running the module's text with ``np`` as jax.numpy, ``srcjax`` as jax and
``lax`` as jax.lax (values and the dtype of every output leaf), the user's function run by NumPy where it runs
under NumPy (``jit(f)``, and a loop over the examples for ``vmap(f, ...)``), central finite differences for
``grad`` at float64, and the generated source run by NumPy against srcjax. A refusal (a ``TranspileError``
located at the user's line) is allowed for the messages in ``KNOWN_REFUSALS``; any other error, an error located
in srcjax's files, or a different answer fails.

The default run checks ``DEFAULT_CASES`` at float64; ``SRCJAX_HYPOTHESIS=thorough`` checks every case at both
dtypes. ``python -m tests.test_jax_style_programs [NAME ...] [--f64]`` runs the corpus (or the cases named) and
prints the counts and every failure.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest

import srcjax
from tests.corpus_harness import Corpus, as_dtype, evaluate, loop_reference, normal, positive

from . import jax_style_programs as jp
from .fd import central_fd
from .hunt_sweep import leaves_agree
from .twins import JAX, jitted

_a, _n, _pos = as_dtype, normal, positive  # (the corpora's argument makers, tests/corpus_harness.py)

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


# Refusals met where jax runs the program (reported; a located TranspileError with a hint)
KNOWN_REFUSALS: tuple[str, ...] = (
    # velocity_verlet_md: grad of an MD step taking forces by grad of an energy built with vmap(vmap(disp))
    "hands values saved for the adjoint through the tape; reverse mode does not follow",
)
# Errors met that are srcjax's own (located in code srcjax wrote, or wrong): xfail, not hidden
KNOWN_INTERNAL: tuple[str, ...] = ()
# Wrong answers found and not fixed yet: (case, check, dtype) -> why; xfail, not hidden
KNOWN_WRONG: dict[tuple[str, str, str], str] = {}
# srcjax right (jax and the user's function under NumPy agree) but NumPy running the generated source off: xfail
KNOWN_NUMPY_RUN: dict[tuple[str, str, str], str] = {
    # a Python number repeated along the batch axis (`p = C[0]` carried by random._horner, which normal's erfinv
    # runs) is weak under XLA (float32 draws) but a strong float64 array under NumPy: the scan's carry turns
    # float64 there, and the next draw (in t.dtype) takes other bits
    ("sgld_chain", "vmap(f, in_axes=(None, 0))", "float32"): "NumPy cannot keep a batched Python number weak",
}


# -- the jax side: the module's text with np as jax.numpy, srcjax as jax, lax as jax.lax ---------------------

def _twin_namespace() -> dict[str, Any]:
    fake = types.SimpleNamespace(
        grad=jax.grad, value_and_grad=jax.value_and_grad, vmap=jax.vmap, jit=jax.jit, jvp=jax.jvp, vjp=jax.vjp,
        jacfwd=jax.jacfwd, jacrev=jax.jacrev, hessian=jax.hessian, custom_jvp=jax.custom_jvp,
        custom_vjp=jax.custom_vjp, random=jax.random, tree_util=jax.tree_util)
    text = inspect.getsource(jp)
    text = text.replace("import numpy as np\n", "").replace("import srcjax\n", "")
    text = text.replace("from srcjax import lax\n", "")
    ns: dict[str, Any] = {"np": jnp, "srcjax": fake, "lax": jax.lax, "__name__": "jax_style_programs_twin"}
    exec(compile(text, inspect.getsourcefile(jp) or "<twin>", "exec"), ns)
    return ns


TWIN = _twin_namespace()
TRANSFORMS = ("jit", "grad", "value_and_grad", "vmap", "jacfwd", "jacrev", "hessian", "jvp")
JAX_T = {"jit": lambda f, **kw: f, "grad": jax.grad, "value_and_grad": jax.value_and_grad, "vmap": jax.vmap,
         "jacfwd": jax.jacfwd, "jacrev": jax.jacrev, "hessian": jax.hessian, "jvp": jax.jvp}
SRCJAX_T = {k: getattr(srcjax, k) for k in TRANSFORMS}


def to_twin(x: Any) -> Any:
    """An argument for the jax twin: the module's NamedTuples and dataclasses as the twin's."""
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return TWIN[type(x).__name__](*[to_twin(v) for v in x])
    if isinstance(x, jp.LinearModel):
        return TWIN["LinearModel"](to_twin(x.weight), to_twin(x.bias))
    if isinstance(x, dict):
        return {k: to_twin(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_twin(v) for v in x)
    return x


# -- the corpus's cases -------------------------------------------------------------------------------------

class Case(NamedTuple):
    name: str
    fn: Callable[..., Any]
    args: Callable[[np.random.Generator, Any], tuple[Any, ...]]
    # (expression over f and the transformations, in_axes of the batched arguments or None)
    checks: tuple[tuple[str, Any], ...]
    rtol32: float = 5e-4
    fd: bool = True  # False: a custom_vjp/custom_jvp rule that is not the function's derivative (on purpose)
    # why NumPy's dtypes differ from jax's here (srcjax follows NumPy): dtypes are then not compared with jax's
    numpy_dtypes: str = ""


def _key(rng: np.random.Generator) -> np.ndarray:
    return np.array([0, rng.integers(0, 2 ** 31)], dtype=np.uint32)


def _mlp(r: np.random.Generator, d: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(_n(r, d, 3, 4, scale=0.5), _n(r, d, 4, scale=0.1)), (_n(r, d, 4, 2, scale=0.5), _n(r, d, 2))]


def _mlp_data(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return _mlp(r, d), _n(r, d, 5, 3), _n(r, d, 5, 2)


def _dict_mlp(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    p = {"layer1": {"w": _n(r, d, 3, 4, scale=0.5), "b": _n(r, d, 4, scale=0.1)},
         "out": {"w": _n(r, d, 4, 3, scale=0.5), "b": _n(r, d, 3, scale=0.1)}}
    return p, _n(r, d, 6, 3), r.integers(0, 3, 6)


def _layers(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    layers = (jp.Linear(_n(r, d, 3, 4, scale=0.5), _n(r, d, 4)), jp.Linear(_n(r, d, 4, 1, scale=0.5), _n(r, d, 1)))
    return layers, _n(r, d, 5, 3), _n(r, d, 5)


def _ensemble(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return {"w1": _n(r, d, 4, 3, 5, scale=0.5), "w2": _n(r, d, 4, 5, scale=0.5)}, _n(r, d, 6, 3)


def _attn(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return _n(r, d, 4, 3), _n(r, d, 3, 3, scale=0.5), _n(r, d, 3, 3, scale=0.5), _n(r, d, 3, 3, scale=0.5)


def _rnn(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    p = {"wh": _n(r, d, 3, 3, scale=0.4), "wx": _n(r, d, 3, 2, scale=0.4), "b": _n(r, d, 3, scale=0.1)}
    return p, _n(r, d, 5, 2), _n(r, d, 3, scale=0.1)


def _lstm(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    p = {k: _n(r, d, 3, 5, scale=0.4) for k in ("wf", "wi", "wg")}
    return p, _n(r, d, 4, 2)


def _kalman(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return np.cumsum(_n(r, d, 6)).astype(d), _a(0.1 + 0.05 * r.random(), d), _a(0.5 + 0.1 * r.random(), d)


def _adam_state(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    p = {"w": _n(r, d, 3), "b": _n(r, d)}
    st = jp.AdamState(np.asarray(r.integers(0, 4)), {k: 0.1 * _n(r, d, *v.shape) for k, v in p.items()},
                      {k: _pos(r, d, *v.shape, lo=0.01, hi=0.1) for k, v in p.items()})
    return p, st, _n(r, d, 6, 3), _n(r, d, 6)


def _linreg(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return {"w": _n(r, d, 3), "b": _n(r, d)}, _n(r, d, 6, 3), _n(r, d, 6)


def _maml(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return {"w": _n(r, d, 3), "b": _n(r, d)}, _n(r, d, 5, 3), _n(r, d, 5), _n(r, d, 4, 3), _n(r, d, 4)


def _spd(r: np.random.Generator, d: Any, n: int = 3) -> np.ndarray:
    a = r.standard_normal((n, n))
    return (a @ a.T + n * np.eye(n)).astype(d)


def _md(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    grid = np.array([[0, 0], [0.8, 0], [0, 0.8], [0.8, 0.8]]) + 0.05 * r.standard_normal((4, 2))
    return grid.astype(d), _n(r, d, 4, 2, scale=0.1), _a(1.0, d)


def _logits(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return _n(r, d, 6, 4), r.integers(0, 4, 6)


CASES: tuple[Case, ...] = (
    # networks with pytrees of parameters
    Case("mlp_mse", jp.mlp_mse, _mlp_data,
         (("jit(f)", None), ("grad(f)", None), ("value_and_grad(f, argnums=1)", None),
          ("vmap(grad(f), in_axes=(None, 0, 0))", (None, 0, 0)), ("hessian(f, argnums=1)", None))),
    Case("mlp_sgd_step", jp.mlp_sgd_step, lambda r, d: (*_mlp_data(r, d), _a(0.1, d)),
         (("jit(f)", None), ("vmap(f, in_axes=(None, 0, 0, None))", (None, 0, 0, None)),
          ("jacrev(f, argnums=3)", None))),
    Case("per_example_grads", jp.per_example_grads, _mlp_data,
         (("jit(f)", None), ("jacfwd(f, argnums=1)", None))),
    Case("per_example_grad_norms", jp.per_example_grad_norms, _mlp_data,
         (("jit(f)", None), ("jacrev(f, argnums=2)", None))),
    Case("dict_mlp_loss", jp.dict_mlp_loss, _dict_mlp,
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=1)", None),
          ("vmap(grad(f), in_axes=(None, 0, 0))", (None, 0, 0)))),
    Case("namedtuple_layers_loss", jp.namedtuple_layers_loss, _layers,
         (("jit(f)", None), ("grad(f)", None), ("vmap(f, in_axes=(None, 0, 0))", (None, 0, 0)),
          ("jacfwd(grad(f), argnums=1)", None))),
    Case("dataclass_model_loss", jp.dataclass_model_loss,
         lambda r, d: (jp.LinearModel(_n(r, d, 3), _n(r, d)), _n(r, d, 5, 3), _n(r, d, 5)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(grad(f), in_axes=(None, 0, 0))", (None, 0, 0)),
          ("hessian(f, argnums=1)", None))),
    Case("ensemble_predict", jp.ensemble_predict, _ensemble,
         (("jit(f)", None), ("jacrev(f, argnums=1)", None), ("vmap(f, in_axes=(None, 0))", (None, 0)))),
    Case("ensemble_disagreement", jp.ensemble_disagreement, _ensemble,
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=1)", None), ("hessian(f, argnums=1)", None))),
    Case("layer_norm_residual", jp.layer_norm_residual,
         lambda r, d: ({"g": _pos(r, d, 3), "b": _n(r, d, 3), "w": _n(r, d, 3, 3, scale=0.5)}, _n(r, d, 4, 3)),
         (("jit(f)", None), ("jacrev(f, argnums=1)", None), ("vmap(f, in_axes=(None, 0))", (None, 0)),
          ("jacfwd(f)", None))),
    Case("causal_attention_loss", jp.causal_attention_loss, _attn,
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=1)", None), ("vmap(f, in_axes=(0, None, None, None))",
                                                                             (0, None, None, None)),
          ("hessian(f)", None)),
         numpy_dtypes="np.sqrt(d) of an int is a strong float64 NumPy scalar (weak in jax): float32 scores / it is float64"),
    Case("bilinear_einsum", jp.bilinear_einsum,
         lambda r, d: (_n(r, d, 4, 3), _n(r, d, 2, 3, 5), _n(r, d, 4, 5)),
         (("jit(f)", None), ("jacrev(f, argnums=1)", None), ("vmap(f, in_axes=(0, None, 0))", (0, None, 0)))),
    Case("conv1d_lax", jp.conv1d_lax, lambda r, d: (_n(r, d, 2, 2, 6), _n(r, d, 3, 2, 3, scale=0.5)),
         (("jit(f)", None), ("grad(f, argnums=1)", None), ("vmap(grad(f, argnums=1), in_axes=(0, None))", (0, None)))),
    Case("masked_sequence_mean", jp.masked_sequence_mean, lambda r, d: (_n(r, d, 3, 5, 2), r.integers(0, 6, 3)),
         (("jit(f)", None), ("jacfwd(f)", None), ("vmap(f)", (0, 0)))),
    # recurrences
    Case("rnn_scan", jp.rnn_scan, _rnn,
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=(1, 2))", None),
          ("vmap(grad(f), in_axes=(None, 0, 0))", (None, 0, 0)), ("hessian(f, argnums=2)", None))),
    Case("lstm_scan", jp.lstm_scan, _lstm,
         (("jit(f)", None), ("grad(f)", None), ("vmap(f, in_axes=(None, 0))", (None, 0)),
          ("jacfwd(f, argnums=1)", None))),
    Case("discounted_returns", jp.discounted_returns, lambda r, d: (_n(r, d, 6), _a(0.9, d)),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f, argnums=1)", None), ("vmap(f, in_axes=(0, None))", (0, None)))),
    Case("ema_scan_tuple_xs", jp.ema_scan_tuple_xs, lambda r, d: (_n(r, d, 5, 2), _pos(r, d, 5, 2), _a(0.8, d)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=2)", None), ("vmap(f)", (0, 0, 0)))),
    Case("logistic_map_unroll", jp.logistic_map_unroll, lambda r, d: (_a(3.2 + 0.3 * r.random(), d), _a(0.3, d)),
         (("jit(f)", None), ("jacfwd(f)", None), ("jacrev(f, argnums=(0, 1))", None), ("vmap(f)", (0, 0)))),
    Case("crf_log_partition", jp.crf_log_partition, lambda r, d: (_n(r, d, 5, 3), _n(r, d, 3, 3)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=1)", None), ("hessian(f, argnums=1)", None),
          ("vmap(grad(f), in_axes=(0, None))", (0, None)))),
    Case("power_iteration", jp.power_iteration, lambda r, d: (_spd(r, d), _n(r, d, 3)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f, in_axes=(None, 0))", (None, 0)))),
    Case("rk4_fori", jp.rk4_fori, lambda r, d: (_pos(r, d, 2, lo=0.2, hi=1.0), _n(r, d, 2)),
         (("jit(f)", None), ("grad(f)", None), ("jacfwd(grad(f))", None), ("vmap(grad(f), in_axes=(None, 0))", (None, 0)),
          ("grad(f, argnums=1)", None))),
    Case("euler_trajectory", jp.euler_trajectory, lambda r, d: (_pos(r, d), _n(r, d, 3)),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f, argnums=1)", None), ("vmap(f, in_axes=(0, None))", (0, None)))),
    Case("kalman_filter_scan", jp.kalman_filter_scan, _kalman,
         (("jit(f)", None), ("grad(f, argnums=(1, 2))", None), ("grad(f)", None),
          ("vmap(f, in_axes=(0, None, None))", (0, None, None)), ("hessian(f, argnums=2)", None))),
    # lax control flow
    Case("cond_piecewise", jp.cond_piecewise, lambda r, d: (_n(r, d, 3), _pos(r, d)),
         (("jit(f)", None), ("jacrev(f)", None), ("jacfwd(f, argnums=1)", None), ("vmap(f)", (0, 0)),
          ("vmap(jacrev(f), in_axes=(0, None))", (0, None)))),
    Case("switch_activation", jp.switch_activation, lambda r, d: (np.asarray(r.integers(0, 3)), _n(r, d, 4)),
         (("jit(f)", None), ("grad(f, argnums=1)", None), ("vmap(f)", (0, 0)),
          ("vmap(grad(f, argnums=1), in_axes=(None, 0))", (None, 0)), ("hessian(f, argnums=1)", None))),
    Case("while_bisection", jp.while_bisection, lambda r, d: (_pos(r, d, 3, lo=0.5, hi=4.0),),
         (("jit(f)", None), ("vmap(f)", (0,)))),
    Case("newton_fixed_iters", jp.newton_fixed_iters, lambda r, d: (_pos(r, d, 3, lo=0.5, hi=3.0),),
         (("jit(f)", None), ("jacfwd(f)", None), ("jacrev(f)", None), ("vmap(f)", (0,)))),
    Case("huber_cond", jp.huber_cond, lambda r, d: (_n(r, d, 6, scale=2.0), _a(1.0, d)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=1)", None), ("vmap(f, in_axes=(0, None))", (0, None)))),
    # custom derivatives
    Case("softplus_loss", jp.softplus_loss, lambda r, d: (_n(r, d, 3), _n(r, d, 5, 3)),
         (("jit(f)", None), ("grad(f)", None), ("hessian(f)", None), ("vmap(grad(f), in_axes=(None, 0))", (None, 0)))),
    Case("safe_norm_energy", jp.safe_norm_energy, lambda r, d: (_n(r, d, 4, 3),),
         (("jit(f)", None), ("grad(f)", None), ("jacfwd(f)", None), ("vmap(grad(f))", (0,)))),
    Case("domain_adversarial", jp.domain_adversarial, lambda r, d: (_n(r, d, 3, 2), _n(r, d, 4, 3), _a(0.5, d)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=1)", None), ("vmap(grad(f), in_axes=(None, 0, None))",
                                                                             (None, 0, None))), fd=False),
    Case("quantized_layer", jp.quantized_layer, lambda r, d: (_n(r, d, 3, 2), _n(r, d, 4, 3)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(grad(f), in_axes=(None, 0))", (None, 0))), fd=False),
    # indexed updates
    Case("tridiagonal_solve_loss", jp.tridiagonal_solve_loss,
         lambda r, d: (_pos(r, d, 4, lo=3.0, hi=4.0), _n(r, d, 3, scale=0.5), _n(r, d, 4)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=(1, 2))", None), ("vmap(f)", (0, 0, 0)),
          ("hessian(f, argnums=1)", None))),
    Case("segment_sum_at", jp.segment_sum_at, lambda r, d: (_n(r, d, 6, 2), r.integers(0, 3, 6)),
         (("jit(f)", None), ("jacrev(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)), ("vmap(f)", (0, 0)))),
    Case("scatter_update_loss", jp.scatter_update_loss, lambda r, d: (_n(r, d, 5), np.array([1, 3]), _n(r, d, 2)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=2)", None), ("vmap(f, in_axes=(0, None, 0))",
                                                                             (0, None, 0)))),
    # random keys
    Case("dropout_loss", jp.dropout_loss,
         lambda r, d: ({"w": _n(r, d, 4, 2), "b": _n(r, d, 2)}, _key(r), _n(r, d, 5, 4)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f, in_axes=(None, 0, None))", (None, 0, None)),
          ("vmap(grad(f), in_axes=(None, 0, 0))", (None, 0, 0)))),
    Case("reparam_elbo", jp.reparam_elbo, lambda r, d: (_n(r, d, 3), _n(r, d, 3, scale=0.2), _key(r), _n(r, d, 3)),
         (("jit(f)", None), ("grad(f, argnums=(0, 1))", None), ("vmap(f, in_axes=(None, None, 0, None))",
                                                                (None, None, 0, None)),
          ("hessian(f, argnums=1)", None))),
    Case("sgld_chain", jp.sgld_chain, lambda r, d: (_n(r, d, 3), _key(r)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f, in_axes=(None, 0))", (None, 0)))),
    Case("fold_in_noise", jp.fold_in_noise, lambda r, d: (_n(r, d, 4), _key(r)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f)", (0, 0)))),
    # linalg, probabilistic models
    Case("gp_nll_vmap_kernel", jp.gp_nll_vmap_kernel, lambda r, d: (_a(0.2 * r.standard_normal(), d), _n(r, d, 5, 2),
                                                                    _n(r, d, 5)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=2)", None), ("vmap(f, in_axes=(0, None, None))",
                                                                             (0, None, None)),
          ("hessian(f)", None)), rtol32=5e-3),
    Case("linear_flow_logdet", jp.linear_flow_logdet, lambda r, d: (_spd(r, d), _n(r, d, 4, 3)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(grad(f), in_axes=(None, 0))", (None, 0)),
          ("hessian(f)", None))),
    Case("eigh_spectral_loss", jp.eigh_spectral_loss, lambda r, d: (_spd(r, d) + np.diag([0.0, 2.0, 5.0]).astype(d),),
         (("jit(f)", None), ("grad(f)", None), ("vmap(grad(f))", (0,))), rtol32=5e-3),
    Case("ridge_per_task", jp.ridge_per_task, lambda r, d: (_n(r, d, 2, 6, 3), _n(r, d, 2, 6), _a(0.5, d)),
         (("jit(f)", None), ("jacrev(f, argnums=2)", None), ("jacfwd(f, argnums=1)", None),
          ("vmap(f, in_axes=(0, 0, None))", (0, 0, None)))),
    Case("mvn_batch_loglik", jp.mvn_batch_loglik, lambda r, d: (_n(r, d, 4, 3), _n(r, d, 3), _n(r, d, 3, 3)),
         (("jit(f)", None), ("grad(f, argnums=(1, 2))", None), ("grad(f)", None), ("hessian(f, argnums=1)", None),
          ("vmap(f, in_axes=(0, None, None))", (0, None, None)))),
    # MCMC, molecular dynamics
    Case("hmc_energy_error", jp.hmc_energy_error, lambda r, d: (_n(r, d, 3), _n(r, d, 3), _a(0.1, d)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=2)", None), ("vmap(f, in_axes=(0, 0, None))",
                                                                             (0, 0, None)),
          ("vmap(grad(f), in_axes=(0, 0, None))", (0, 0, None)))),
    Case("soft_sphere_energy", jp.soft_sphere_energy, lambda r, d: _md(r, d)[::2],
         (("jit(f)", None), ("grad(f)", None), ("hessian(f)", None), ("vmap(grad(f), in_axes=(0, None))", (0, None)))),
    Case("velocity_verlet_md", jp.velocity_verlet_md, _md,
         (("jit(f)", None), ("grad(f, argnums=1)", None), ("grad(f)", None), ("vmap(f, in_axes=(0, 0, None))",
                                                                             (0, 0, None)))),
    # optimizers
    Case("adam_train_step", jp.adam_train_step, _adam_state,
         (("jit(f)", None), ("vmap(f, in_axes=(None, None, 0, 0))", (None, None, 0, 0)),
          ("jacrev(f, argnums=2)", None))),
    Case("clip_then_sgd", jp.clip_then_sgd, lambda r, d: (*_linreg(r, d), _a(0.5, d)),
         (("jit(f)", None), ("jacfwd(f, argnums=3)", None), ("vmap(f, in_axes=(None, 0, 0, None))",
                                                             (None, 0, 0, None)))),
    Case("adamw_masked", jp.adamw_masked,
         lambda r, d: ({"w": _n(r, d, 3, 2), "b": _n(r, d, 2)}, {"w": _n(r, d, 3, 2), "b": _n(r, d, 2)},
                       {"w": _n(r, d, 3, 2), "b": _n(r, d, 2)}, _a(0.1, d), _a(0.01, d)),
         (("jit(f)", None), ("jacrev(f, argnums=4)", None), ("vmap(f, in_axes=(0, 0, 0, None, None))",
                                                             (0, 0, 0, None, None)))),
    Case("piecewise_lr", jp.piecewise_lr, lambda r, d: (np.asarray(r.integers(0, 80)), _a(0.1, d)),
         (("jit(f)", None), ("grad(f, argnums=1)", None), ("vmap(f, in_axes=(0, None))", (0, None))),
         numpy_dtypes="float32 base times an int64 step is float64 in NumPy (float32 in jax)"),
    Case("train_loop_scan", jp.train_loop_scan,
         lambda r, d: ({"w": _n(r, d, 3), "b": _n(r, d)}, _n(r, d, 4, 5, 3), _n(r, d, 4, 5)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f, in_axes=(None, 0, 0))", (None, 0, 0)))),
    # gradients inside functions
    Case("maml_multi_step", jp.maml_multi_step, _maml,
         (("jit(f)", None), ("grad(f)", None), ("vmap(grad(f), in_axes=(None, 0, 0, 0, 0))", (None, 0, 0, 0, 0)))),
    Case("learned_lr_hypergrad", jp.learned_lr_hypergrad,
         lambda r, d: (_a(-2.0, d), _n(r, d, 3), _n(r, d, 5, 3), _n(r, d, 5)),
         (("jit(f)", None), ("grad(f)", None), ("hessian(f)", None), ("vmap(grad(f), in_axes=(None, None, 0, 0))",
                                                                       (None, None, 0, 0)))),
    Case("gauss_newton_vp", jp.gauss_newton_vp, lambda r, d: (_n(r, d, 3), _n(r, d, 4, 3), _n(r, d, 3)),
         (("jit(f)", None), ("jacfwd(f, argnums=2)", None), ("vmap(f, in_axes=(None, None, 0))", (None, None, 0)),
          ("jacrev(f)", None))),
    Case("fisher_from_per_example", jp.fisher_from_per_example, lambda r, d: (_n(r, d, 3), _n(r, d, 5, 3)),
         (("jit(f)", None), ("jacrev(f)", None), ("vmap(f, in_axes=(0, None))", (0, None)))),
    Case("implicit_fixed_point", jp.implicit_fixed_point, lambda r, d: (_n(r, d, 3, 3, scale=0.2), _n(r, d, 3)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=1)", None), ("vmap(grad(f), in_axes=(None, 0))",
                                                                             (None, 0)))),
    Case("input_gradient_penalty", jp.input_gradient_penalty, lambda r, d: (_n(r, d, 3, 2), _n(r, d, 4, 3)),
         (("jit(f)", None), ("grad(f)", None), ("vmap(grad(f), in_axes=(None, 0))", (None, 0)))),
    Case("hessian_trace_inside", jp.hessian_trace_inside, lambda r, d: (_n(r, d, 3),),
         (("jit(f)", None), ("grad(f)", None), ("vmap(f)", (0,)))),
    # losses
    Case("focal_loss", jp.focal_loss, lambda r, d: (_n(r, d, 6), r.integers(0, 2, 6)),
         (("jit(f)", None), ("grad(f)", None), ("hessian(f)", None), ("vmap(grad(f))", (0, 0)))),
    Case("multiclass_hinge", jp.multiclass_hinge, _logits,
         (("jit(f)", None), ("grad(f)", None), ("vmap(f)", (0, 0)))),
    Case("stable_softmax_xent", jp.stable_softmax_xent, _logits,
         (("jit(f)", None), ("grad(f)", None), ("hessian(f)", None), ("vmap(grad(f))", (0, 0)))),
    Case("cosine_contrastive", jp.cosine_contrastive, lambda r, d: (_n(r, d, 4, 3), _n(r, d, 4, 3), _a(0.5, d)),
         (("jit(f)", None), ("grad(f)", None), ("grad(f, argnums=2)", None), ("vmap(grad(f), in_axes=(0, 0, None))",
                                                                             (0, 0, None)))),
    Case("vmap_dict_in_axes", jp.vmap_dict_in_axes,
         lambda r, d: ({"w": _n(r, d, 3, 2), "b": _n(r, d, 4, 2)}, _n(r, d, 4, 3)),
         (("jit(f)", None), ("jacrev(f)", None), ("vmap(f, in_axes=(None, 0))", (None, 0)))),
)
BY_NAME = {c.name: c for c in CASES}
DEFAULT_CASES = ("mlp_mse", "rnn_scan", "hmc_energy_error", "adam_train_step", "softplus_loss")


# -- running a check ------------------------------------------------------------------------------------------

def oracle(c: Case, expr: str, in_axes: Any, args: tuple[Any, ...]) -> Any:
    return jitted(evaluate(expr, JAX_T, TWIN[c.fn.__name__], jnp))(*to_twin(args))


def numpy_reference(c: Case, expr: str, in_axes: Any, args: tuple[Any, ...]) -> Any:
    """The user's function run by NumPy, for ``jit(f)`` and ``vmap(f, ...)`` (None where NumPy cannot run it:
    ``.at[]`` of a NumPy array)."""
    try:
        return loop_reference(c.fn, expr, in_axes, args)
    except Exception:  # noqa: BLE001 - (NumPy cannot run it)
        return None


def fd_reference(c: Case, expr: str, args: tuple[Any, ...]) -> Any:
    """Central finite differences of the user's function for ``grad(f)``/``grad(f, argnums=k)`` at float64."""
    m = re.fullmatch(r"grad\(f(?:, argnums=(\d))?\)", expr)
    if m is None or not c.fd:
        return None
    k = int(m.group(1) or 0)
    if not (isinstance(args[k], np.ndarray) and args[k].dtype == np.float64):
        return None
    try:
        return central_fd(lambda *a: float(c.fn(*a)), args, k)
    except Exception:  # noqa: BLE001 - (NumPy cannot run it)
        return None


CORPUS = Corpus(CASES, ("jax_style_programs.py",), KNOWN_REFUSALS, oracle, jax.tree_util.tree_leaves,
                lambda c, expr: evaluate(expr, SRCJAX_T, c.fn, np), numpy_reference, fd_reference,
                known_internal=KNOWN_INTERNAL, known_wrong=KNOWN_WRONG, known_numpy_run=KNOWN_NUMPY_RUN)


test_jax_style_program, test_jax_style_program_thorough = CORPUS.tests(DEFAULT_CASES)

if __name__ == "__main__":
    CORPUS.main(sys.argv[1:])


# -- regressions found by the corpus ------------------------------------------------------------------------

def _scan_tuple_xs(xs: Any, ws: Any, decay: Any) -> Any:
    def step(m: Any, inp: Any) -> Any:
        m = decay * m + (1 - decay) * inp[1] * inp[0]
        return m, m * m

    m, sq = srcjax.lax.scan(step, np.zeros_like(xs[0]), (xs, ws))
    return np.sum(sq) + np.sum(m)


def _scan_dict_xs(params: Any, batches: Any) -> Any:
    def step(p: Any, batch: Any) -> Any:
        x, y = batch["x"], batch["y"]
        r = x @ p - y
        return p - 0.1 * (x.T @ r), np.sum(r ** 2)

    p, losses = srcjax.lax.scan(step, params, batches)
    return np.sum(losses) + np.sum(p ** 2)


def _scan_tuple_xs_twin(xs: Any, ws: Any, decay: Any) -> Any:
    def step(m: Any, inp: Any) -> Any:
        m = decay * m + (1 - decay) * inp[1] * inp[0]
        return m, m * m

    m, sq = jax.lax.scan(step, jnp.zeros_like(xs[0]), (xs, ws))
    return jnp.sum(sq) + jnp.sum(m)


def _scan_dict_xs_twin(params: Any, batches: Any) -> Any:
    def step(p: Any, batch: Any) -> Any:
        x, y = batch["x"], batch["y"]
        r = x @ p - y
        return p - 0.1 * (x.T @ r), jnp.sum(r ** 2)

    p, losses = jax.lax.scan(step, params, batches)
    return jnp.sum(losses) + jnp.sum(p ** 2)


def test_grad_of_a_scan_over_a_container_scans_every_leafs_rows() -> None:
    # reverse mode wrote `lax.scan(f, c, (xs, ws))` as a loop over the tuple's two items (`len((xs, ws))`):
    # the gradient of xs was wrong in its first row and zero in the others (a silent wrong answer)
    r = np.random.default_rng(0)
    xs, ws = r.standard_normal((5, 2)), r.standard_normal((5, 2))
    for k in (0, 1):
        got = srcjax.grad(_scan_tuple_xs, argnums=k)(xs, ws, 0.8)
        np.testing.assert_allclose(got, JAX.grad(_scan_tuple_xs_twin, argnums=k)(xs, ws, 0.8), rtol=1e-10)
    p, batches = r.standard_normal(3), {"x": r.standard_normal((4, 6, 3)), "y": r.standard_normal((4, 6))}
    got = srcjax.grad(_scan_dict_xs, argnums=(0, 1))(p, batches)
    want = JAX.grad(_scan_dict_xs_twin, argnums=(0, 1))(p, batches)
    leaves_agree(srcjax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), "grad", 1e-9, dtypes=False)
    np.testing.assert_allclose(srcjax.jacfwd(_scan_tuple_xs)(xs, ws, 0.8),
                               JAX.jacfwd(_scan_tuple_xs_twin)(xs, ws, 0.8), rtol=1e-10)


def _pair_mse(p: Any, x: Any, y: Any) -> Any:
    w, b = p
    return np.mean((x @ w + b - y) ** 2)


def _one_example(p: Any, x: Any, y: Any) -> Any:
    return _pair_mse(p, x[None], y[None])


def _per_example(p: Any, xs: Any, ys: Any) -> Any:
    return srcjax.vmap(srcjax.grad(_one_example), in_axes=(None, 0, 0))(p, xs, ys)


def _sum_of_leaf_norms(p: Any, xs: Any, ys: Any) -> Any:
    g = _per_example(p, xs, ys)
    return np.sum(sum(np.sum(leaf ** 2) for leaf in srcjax.tree_util.tree_leaves(g)))


def _sum_of_leaf_norms_twin(p: Any, xs: Any, ys: Any) -> Any:
    def one(q: Any, x: Any, y: Any) -> Any:
        w, b = q
        return jnp.mean((x[None] @ w + b - y[None]) ** 2)

    g = jax.vmap(jax.grad(one), in_axes=(None, 0, 0))(p, xs, ys)
    return sum(jnp.sum(leaf ** 2) for leaf in jax.tree_util.tree_leaves(g))


def test_grad_of_a_sum_over_a_derivatives_leaves_reaches_its_inputs() -> None:
    # `sum(... for leaf in tree_leaves(g))` made reverse mode read the program again with the generator as a
    # loop, without writing out the tape the generated per-example gradient's helper halves share: its
    # derivative in ys was zero (a silent wrong answer; a `for` loop summing was right)
    r = np.random.default_rng(1)
    p, xs, ys = (r.standard_normal(3), np.float64(0.3)), r.standard_normal((4, 3)), r.standard_normal(4)
    got = srcjax.grad(_sum_of_leaf_norms, argnums=2)(p, xs, ys)
    np.testing.assert_allclose(got, JAX.grad(_sum_of_leaf_norms_twin, argnums=2)(p, xs, ys), rtol=1e-9)
    assert np.all(np.abs(np.asarray(got)) > 0)


def _nested_defs(w: Any, x: Any) -> Any:
    def f(u: Any) -> Any:  # reads no local of the caller
        return np.sum(np.sin(u) * u ** 2)

    def model(u: Any) -> Any:  # reads the caller's x
        return np.tanh(x @ u)

    h = srcjax.hessian(f)(w)
    _, pull = srcjax.vjp(model, w)
    (g,) = pull(np.ones(x.shape[0]))
    rows = srcjax.vmap(srcjax.grad(f))(x)
    return np.sum(h) + np.sum(g ** 2) + np.sum(rows)


def _nested_defs_twin(w: Any, x: Any) -> Any:
    def f(u: Any) -> Any:
        return jnp.sum(jnp.sin(u) * u ** 2)

    h = jax.hessian(f)(w)
    _, pull = jax.vjp(lambda u: jnp.tanh(x @ u), w)
    (g,) = pull(jnp.ones(x.shape[0]))
    return jnp.sum(h) + jnp.sum(g ** 2) + jnp.sum(jax.vmap(jax.grad(f))(x))


def test_nested_defs_handed_to_transformations_inside_compiled_code() -> None:
    # a nested def reading no local was refused with "cannot compile LocalFunction(fdef=FunctionDef(...))" (a
    # libcst dump) under jit and "cannot differentiate through the nested function" under grad; `srcjax.vjp`
    # of one reading locals with "model() takes 1 arguments, got 2"; jacfwd met the def itself (unlocated
    # "cannot differentiate FunctionDef")
    r = np.random.default_rng(2)
    w, x = r.standard_normal(3), r.standard_normal((4, 3))
    np.testing.assert_allclose(srcjax.jit(_nested_defs)(w, x), jitted(_nested_defs_twin)(w, x), rtol=1e-10)
    for t, jt in ((srcjax.grad, JAX.grad), (srcjax.jacfwd, JAX.jacfwd)):
        np.testing.assert_allclose(t(_nested_defs)(w, x), jt(_nested_defs_twin)(w, x), rtol=1e-9)
    xs = r.standard_normal((2, 3))
    np.testing.assert_allclose(srcjax.vmap(_nested_defs, in_axes=(0, None))(xs, x),
                               JAX.vmap(_nested_defs_twin, in_axes=(0, None))(xs, x), rtol=1e-10)


def _kernel_matrix(x: Any, ls: Any) -> Any:
    k = srcjax.vmap(lambda a: srcjax.vmap(lambda b: np.exp(-np.sum((a - b) ** 2) / ls))(x))(x)
    return np.sum(k * k)


def test_a_lambda_inside_a_lambda_handed_to_vmap() -> None:
    # the inner lambda's parameter was taken for a local the outer one reads: "name 'b' is not defined"
    r = np.random.default_rng(3)
    x = r.standard_normal((4, 2))

    def twin(x: Any, ls: Any) -> Any:
        k = jax.vmap(lambda a: jax.vmap(lambda b: jnp.exp(-jnp.sum((a - b) ** 2) / ls))(x))(x)
        return jnp.sum(k * k)

    np.testing.assert_allclose(srcjax.jit(_kernel_matrix)(x, 0.7), twin(x, 0.7), rtol=1e-10)
    np.testing.assert_allclose(srcjax.grad(_kernel_matrix)(x, 0.7), JAX.grad(twin)(x, 0.7), rtol=1e-9)


def test_lax_bodies_calling_nested_defs_and_a_named_list_of_branches_are_differentiated() -> None:
    # an RK4 step (`k1 = f(y)` of a nested def f inside a fori_loop body) and `lax.switch(i, branches, x)`
    # with `branches` a list bound before were refused under grad ("cannot differentiate through the nested
    # function `f`", "the branches must be a literal list or tuple of functions")
    th, y0, x = np.array([0.8, 0.3]), np.array([0.5, -0.2]), np.array([0.3, -1.2, 0.7])
    for k in (0, 1):
        np.testing.assert_allclose(srcjax.grad(jp.rk4_fori, argnums=k)(th, y0),
                                   JAX.grad(TWIN["rk4_fori"], argnums=k)(th, y0), rtol=1e-9)
    np.testing.assert_allclose(srcjax.jacfwd(srcjax.grad(jp.rk4_fori))(th, y0), JAX.hessian(TWIN["rk4_fori"])(th, y0),
                               rtol=1e-8)
    want = JAX.grad(TWIN["switch_activation"], argnums=1)  # (compiled once, the branch index an argument)
    for i in range(3):
        np.testing.assert_allclose(srcjax.grad(jp.switch_activation, argnums=1)(i, x), want(i, x), rtol=1e-10)
