"""tests/user_programs.py's programs (code as JAX users write it) under the transformations users apply,
against jax running the same text with ``np`` as jax.numpy (and ``srcjax`` as jax).

Each case is a program, its arguments (drawn at float64 and float32), and the calls a user makes: ``jit``,
``grad``, ``value_and_grad``, ``vmap`` with realistic ``in_axes``, ``jacfwd``/``jacrev``/``hessian``,
``jvp``/``vjp`` and their compositions, written once as text and evaluated with srcjax's functions and with
jax's. Checked: srcjax (XLA) against jax (values, and the dtype of every output leaf), the generated source run
by NumPy (``srcjax.numpy_function``) against srcjax, and, where the program is plain NumPy, the user's
function run by NumPy against ``srcjax.jit``. A refusal (a ``TranspileError`` located at the user's line)
is allowed for the messages in ``KNOWN_REFUSALS``; any other error, an error located in srcjax's files, or
a different answer fails.

The default run checks ``DEFAULT_CASES`` at float64; ``SRCJAX_HYPOTHESIS=thorough`` checks every case at
both dtypes. ``python -m tests.test_user_programs`` runs the whole corpus and prints the counts and every
failure.
"""

from __future__ import annotations

import inspect
import sys
import types
from typing import Any

import numpy as np
import pytest

import srcjax
from tests.corpus_harness import B, Case, Corpus, agree, evaluate, loop_reference, normal, take

from . import user_programs as up
from .twins import JAX, jitted

_n = normal  # (the corpora's argument makers, tests/corpus_harness.py)

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

# Refusals met where jax runs the program (reported; a located TranspileError with a hint)
KNOWN_REFUSALS: tuple[str, ...] = ()
# Errors met that are srcjax's own (located in code srcjax wrote, or wrong): xfail, not hidden
KNOWN_INTERNAL: tuple[str, ...] = ()


# -- the jax side: the module's text with np as jax.numpy ----------------------------------------------------

def _no_jit(f: Any, **options: Any) -> Any:
    return f  # (the oracle runs under twins.jitted, which falls back to eager jax where jit cannot trace)


def _twin_namespace() -> dict[str, Any]:
    def grad(f: Any, argnums: Any = 0, has_aux: bool = False, max_iters: Any = None) -> Any:
        return jax.grad(f, argnums, has_aux=has_aux)

    def value_and_grad(f: Any, argnums: Any = 0, has_aux: bool = False, max_iters: Any = None) -> Any:
        return jax.value_and_grad(f, argnums, has_aux=has_aux)

    def vmap(f: Any, in_axes: Any = 0, out_axes: Any = 0) -> Any:
        def run(*args: Any) -> Any:
            try:
                return jax.vmap(f, in_axes, out_axes)(*args)
            except jax.errors.TracerBoolConversionError:  # (`if` on data in f: one example at a time)
                axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
                n = next(a.shape[ax] for a, ax in zip(args, axes) if ax is not None)
                outs = [f(*[a if ax is None else a[k] for a, ax in zip(args, axes)]) for k in range(n)]
                return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs, out_axes), *outs)
        return run

    fake = types.SimpleNamespace(lax=jax.lax, grad=grad, value_and_grad=value_and_grad, vmap=vmap,
                                 custom_jvp=jax.custom_jvp, custom_vjp=jax.custom_vjp,
                                 jvp=jax.jvp, vjp=jax.vjp, jacfwd=jax.jacfwd, jacrev=jax.jacrev,
                                 hessian=jax.hessian, jit=_no_jit, tree_util=jax.tree_util)
    text = inspect.getsource(up)
    text = text.replace("import numpy as np\n", "").replace("import srcjax\n", "")
    ns: dict[str, Any] = {"np": jnp, "srcjax": fake, "__name__": "user_programs_twin"}
    exec(compile(text, inspect.getsourcefile(up) or "<twin>", "exec"), ns)
    ns["build_tridiagonal"] = _build_tridiagonal_twin  # (`m[i, i] = v` is `m = m.at[i, i].set(v)` in jax)
    return ns


def _build_tridiagonal_twin(diag: Any, off: Any) -> Any:
    n = diag.shape[0]
    m = jnp.zeros((n, n), dtype=diag.dtype)
    for i in range(n):
        m = m.at[i, i].set(diag[i])
        if i + 1 < n:
            m = m.at[i, i + 1].set(off[i]).at[i + 1, i].set(off[i])
    return jnp.linalg.slogdet(m)[1]


TWIN = _twin_namespace()
JAX_T = dict(vars(TWIN["srcjax"]))
SRCJAX_T = {k: getattr(srcjax, k) for k in JAX_T if k not in ("lax", "tree_util")}


def to_twin(x: Any) -> Any:
    """An argument for the jax twin: the module's registered dataclass as the twin's (a leaf to jax otherwise)."""
    if isinstance(x, up.Linear):
        return TWIN["Linear"](to_twin(x.w), to_twin(x.b))
    if isinstance(x, dict):
        return {k: to_twin(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[to_twin(v) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(to_twin(v) for v in x)
    return x


# -- the corpus's cases -------------------------------------------------------------------------------------

def _mlp_params(rng: np.random.Generator, dt: Any, sizes: tuple[int, ...] = (4, 6, 5, 3)) -> list[Any]:
    return [(_n(rng, dt, m, k, scale=1 / np.sqrt(m)), _n(rng, dt, k, scale=0.1)) for m, k in zip(sizes, sizes[1:])]


def _onehot(rng: np.random.Generator, dt: Any, n: int, k: int) -> np.ndarray:
    return np.eye(k, dtype=dt)[rng.integers(0, k, n)]


def _reg_params_xy(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    return _reg_params(rng, dt), _n(rng, dt, 6, 3), _n(rng, dt, 6)


def _reg_params(rng: np.random.Generator, dt: Any) -> dict[str, np.ndarray]:
    return {"w": _n(rng, dt, 3, 5, scale=0.5), "b": _n(rng, dt, 5, scale=0.1), "v": _n(rng, dt, 5, scale=0.5)}


def _attn(rng: np.random.Generator, dt: Any, d: int = 4) -> dict[str, np.ndarray]:
    return {k: _n(rng, dt, d, d, scale=0.5) for k in ("wq", "wk", "wv", "wo")}


def _block(rng: np.random.Generator, dt: Any) -> dict[str, Any]:
    d = 4
    return {"attn": _attn(rng, dt), "ln1_g": 1 + _n(rng, dt, d, scale=0.1), "ln1_b": _n(rng, dt, d, scale=0.1),
            "ln2_g": 1 + _n(rng, dt, d, scale=0.1), "ln2_b": _n(rng, dt, d, scale=0.1),
            "w1": _n(rng, dt, d, 8, scale=0.5), "b1": _n(rng, dt, 8, scale=0.1), "w2": _n(rng, dt, 8, d, scale=0.3),
            "b2": _n(rng, dt, d, scale=0.1)}


def _gru(rng: np.random.Generator, dt: Any) -> up.GRUParams:
    return up.GRUParams(*[_n(rng, dt, 3, 4, scale=0.5) for _ in range(3)],
                        *[_n(rng, dt, 4, 4, scale=0.5) for _ in range(3)])


def _kalman(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    a = (0.9 * np.eye(2) + 0.1 * rng.standard_normal((2, 2))).astype(dt)
    p = up.KalmanParams(a, _n(rng, dt, 1, 2), np.asarray(-1.0 + 0.1 * rng.standard_normal(), dt),
                        np.asarray(-0.5 + 0.1 * rng.standard_normal(), dt))
    return p, _n(rng, dt, 5, 1), _n(rng, dt, 2, scale=0.1), np.eye(2, dtype=dt)


def _cnn(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    params = {"conv": _n(rng, dt, 3, 1, 3, 3, scale=0.3), "conv_b": _n(rng, dt, 3, scale=0.1),
              "dense": _n(rng, dt, 12, 4, scale=0.3), "dense_b": _n(rng, dt, 4, scale=0.1)}
    return params, _n(rng, dt, 2, 1, 4, 4), _onehot(rng, dt, 2, 4)


def _adam(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    p = _reg_params(rng, dt)
    state = up.AdamState({k: np.zeros_like(v) for k, v in p.items()}, {k: np.zeros_like(v) for k, v in p.items()},
                         np.asarray(0, np.int32))
    return p, state, _n(rng, dt, 6, 3), _n(rng, dt, 6)


def _kmeans(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    x = np.concatenate([_n(rng, dt, 5, 2, scale=0.3) + 2, _n(rng, dt, 5, 2, scale=0.3) - 2])
    return x[[0, 6, 3]] + _n(rng, dt, 3, 2, scale=0.1), x


def _sinkhorn(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    a = rng.random(4) + 0.5
    b = rng.random(3) + 0.5
    return (rng.random((4, 3)).astype(dt), (a / a.sum()).astype(dt), (b / b.sum()).astype(dt),
            np.asarray(0.5, dt))


def _mdp(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    t = rng.random((4, 2, 4))
    return _n(rng, dt, 4, 2), (t / t.sum(-1, keepdims=True)).astype(dt), np.asarray(0.8, dt)


def _lv(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    theta = np.array([1.0, 0.4, 0.3, 0.8]) + 0.05 * rng.standard_normal(4)
    return theta.astype(dt), np.array([1.5, 1.0], dt), (1.2 + 0.3 * rng.random((5, 2))).astype(dt)


def _decay(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    t = np.linspace(0, 3, 8)
    y = 2.0 * np.exp(-0.7 * t) + 0.5 + 0.02 * rng.standard_normal(8)
    return (np.array([1.5, 0.5, 0.3]) + 0.05 * rng.standard_normal(3)).astype(dt), t.astype(dt), y.astype(dt)


def _nbody(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    return _n(rng, dt, 4, 2), (1 + rng.random(4)).astype(dt)


def _gp(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    x = np.sort(rng.random(6))[:, None] * 3
    return ((np.array([-0.2, 0.1, -1.0]) + 0.1 * rng.standard_normal(3)).astype(dt), x.astype(dt),
            (np.sin(x[:, 0]) + 0.1 * rng.standard_normal(6)).astype(dt))


def _linear_layers(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    return up.Linear(_n(rng, dt, 4, 3, 2, scale=0.5), _n(rng, dt, 4, 2, scale=0.1)), _n(rng, dt, 5, 3)


def _vae(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    p = {"enc_w": _n(rng, dt, 5, 4, scale=0.4), "enc_b": _n(rng, dt, 4, scale=0.1),
         "mu_w": _n(rng, dt, 4, 2, scale=0.4), "lv_w": _n(rng, dt, 4, 2, scale=0.4),
         "dec_w": _n(rng, dt, 2, 5, scale=0.4), "dec_b": _n(rng, dt, 5, scale=0.1)}
    return p, (rng.random((3, 5)) < 0.5).astype(dt), _n(rng, dt, 3, 2)


def _spd(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    return (_n(rng, dt, 3, 3, scale=0.5),)


CASES: tuple[Case, ...] = (
    Case("mlp_predict", up.mlp_predict, lambda r, d: (_mlp_params(r, d), _n(r, d, 5, 4)),
         (("jit(f)", None, None), ("vmap(f, in_axes=(None, 0))", (None, 0), None),
          ("jacrev(f)", None, None), ("vmap(f, in_axes=(None, 0), out_axes=-1)", (None, 0), None))),
    Case("mlp_loss", up.mlp_loss, lambda r, d: (_mlp_params(r, d), _n(r, d, 5, 4), _onehot(r, d, 5, 3)),
         (("jit(value_and_grad(f))", None, None), ("grad(f, argnums=1)", None, None),
          ("vmap(grad(f), in_axes=(0, None, None))", (0, None, None), None),
          ("jit(vmap(grad(f), in_axes=(None, 0, 0)))", (None, 0, 0), None))),
    Case("mlp_loss_labels", up.mlp_loss_labels,
         lambda r, d: (_mlp_params(r, d), _n(r, d, 5, 4), r.integers(0, 3, 5)),
         (("jit(grad(f))", None, None), ("vmap(grad(f), in_axes=(None, 0, 0))", (None, 0, 0), None))),
    Case("accuracy", up.accuracy, lambda r, d: (_mlp_params(r, d), _n(r, d, 5, 4), r.integers(0, 3, 5)),
         (("jit(f)", None, None), ("vmap(f, in_axes=(0, None, None))", (0, None, None), None)),
         numpy_dtypes="np.mean of a bool array is float64 in NumPy (float32 in jax)"),
    Case("cnn_loss", up.cnn_loss, _cnn,
         (("jit(grad(f))", None, None), ("vmap(grad(f), in_axes=(None, 0, 0))", (None, 0, 0), None), ("value_and_grad(f, argnums=(0, 1))", None, None)), numpy=False),
    Case("logistic_loss", up.logistic_loss,
         lambda r, d: (_n(r, d, 3), np.asarray(0.1, d), _n(r, d, 8, 3), (r.random(8) < 0.5).astype(d),
                       np.asarray(0.01, d)),
         (("jit(grad(f, argnums=(0, 1)))", None, None), ("hessian(f)", None, None),
          ("vmap(grad(f), in_axes=(None, None, None, None, 0))", (None, None, None, None, 0), None))),
    Case("logistic_newton_step", up.logistic_newton_step,
         lambda r, d: (_n(r, d, 3, scale=0.1), _n(r, d, 10, 3), (r.random(10) < 0.5).astype(d)),
         (("jit(f)", None, None), ("jacfwd(f)", None, None)), numpy=False, rtol32=2e-3),
    Case("ridge_validation_loss", up.ridge_validation_loss,
         lambda r, d: (np.asarray(-1.0, d), _n(r, d, 8, 3), _n(r, d, 8), _n(r, d, 5, 3), _n(r, d, 5)),
         (("jit(value_and_grad(f))", None, None), ("jacfwd(jacrev(f))", None, None), ("vmap(f, in_axes=(0, None, None, None, None))",
                                                   (0, None, None, None, None), None),
          ("vmap(grad(f), in_axes=(0, None, None, None, None))", (0, None, None, None, None), None),
          ("hessian(f)", None, None)), rtol32=2e-3),
    Case("poly_regression_loss", up.poly_regression_loss,
         lambda r, d: (_n(r, d, 4), np.linspace(-1, 1, 7).astype(d), _n(r, d, 7)),
         (("jit(grad(f))", None, None), ("hessian(f)", None, None),
          ("vmap(grad(f), in_axes=(0, None, 0))", (0, None, 0), None))),
    Case("lstm_loss", up.lstm_loss,
         lambda r, d: ({"wx": _n(r, d, 3, 16, scale=0.5), "wh": _n(r, d, 4, 16, scale=0.5),
                        "b": _n(r, d, 16, scale=0.1)}, _n(r, d, 5, 3), _n(r, d, 4)),
         (("jit(grad(f))", None, None), ("hessian(f, argnums=2)", None, None), ("vmap(grad(f), in_axes=(None, 0, 0))", (None, 0, 0), None),
          ("jacfwd(f, argnums=1)", None, None), ("vmap(jacrev(f, argnums=2), in_axes=(None, 0, None))", (None, 0, None), None))),
    Case("gru_encode", up.gru_encode, lambda r, d: (_gru(r, d), _n(r, d, 5, 3)),
         (("jit(f)", None, None), ("vmap(f, in_axes=(None, 1), out_axes=1)", (None, 1), None),
          ("jacrev(f, argnums=1)", None, None))),
    Case("rnn_scan_loss", up.rnn_scan_loss,
         lambda r, d: (_n(r, d, 4, 4, scale=0.5), _n(r, d, 3, 4, scale=0.5), _n(r, d, 6, 3)),
         (("jit(grad(f, argnums=(0, 1)))", None, None), ("vmap(f, in_axes=(None, None, 0))", (None, None, 0),
                                                          None),
          ("hessian(f, argnums=1)", None, None)), numpy=False),
    Case("self_attention", up.self_attention, lambda r, d: (_attn(r, d), _n(r, d, 5, 4)),
         (("jit(f)", None, None), ("vmap(f, in_axes=(None, 0))", (None, 0), None),
          ("jacrev(f, argnums=1)", None, None)),
         numpy_dtypes="np.sqrt(d) of a Python int is a float64 NumPy scalar, which promotes float32 (weak in jax)"),
    Case("multi_head_attention", up.multi_head_attention, lambda r, d: (_attn(r, d), _n(r, d, 5, 4), 2),
         (("jit(f, static_argnums=2)", None, None), ("vmap(f, in_axes=(None, 0, None))", (None, 0, None), None),
          ("jacfwd(f, argnums=1)", None, None)),
         numpy_dtypes="np.sqrt(d) of a Python int is a float64 NumPy scalar, which promotes float32 (weak in jax)"),
    Case("transformer_loss", up.transformer_loss, lambda r, d: (_block(r, d), _n(r, d, 5, 4), _n(r, d, 5, 4)),
         (("jit(value_and_grad(f))", None, None), ("jit(hessian(f, argnums=1))", None, None), ("vmap(grad(f), in_axes=(None, 0, 0))", (None, 0, 0), None)),
         rtol32=2e-3,
         numpy_dtypes="np.sqrt(d) of a Python int is a float64 NumPy scalar, which promotes float32 (weak in jax)"),
    Case("gp_neg_log_likelihood", up.gp_neg_log_likelihood, _gp,
         (("jit(value_and_grad(f))", None, None), ("hessian(f)", None, None),
          ("vmap(f, in_axes=(0, None, None))", (0, None, None), None),
          ("vmap(hessian(f), in_axes=(0, None, None))", (0, None, None), None)), rtol32=5e-3),
    Case("gp_predict_mean", up.gp_predict_mean,
         lambda r, d: (*_gp(r, d), np.linspace(0, 3, 4)[:, None].astype(d)),
         (("jit(f)", None, None), ("jacrev(f)", None, None)), rtol32=5e-3),
    Case("gmm_log_likelihood", up.gmm_log_likelihood,
         lambda r, d: (_n(r, d, 3), _n(r, d, 3), _n(r, d, 3, scale=0.2), _n(r, d, 10)),
         (("jit(grad(f, argnums=(0, 1, 2)))", None, None), ("hessian(f, argnums=1)", None, None),
          ("vmap(f, in_axes=(None, None, None, 0))", (None, None, None, 0), None)),
         numpy_dtypes="np.log(2 * np.pi) is a float64 NumPy scalar, which promotes float32 (weak in jax)"),
    Case("vae_elbo", up.vae_elbo, _vae,
         (("jit(value_and_grad(f))", None, None), ("jit(vmap(value_and_grad(f), in_axes=(None, 0, 0)))", (None, 0, 0), None), ("vmap(grad(f), in_axes=(None, None, 0))", (None, None, 0), None))),
    Case("bayes_linreg_posterior", up.bayes_linreg_posterior,
         lambda r, d: (_n(r, d, 8, 3), _n(r, d, 8), np.asarray(1.0, d), np.asarray(2.0, d)),
         (("jit(f)", None, None), ("jacfwd(f, argnums=(2, 3))", None, None),
          ("vmap(f, in_axes=(None, None, 0, None))", (None, None, 0, None), None)), rtol32=5e-3),
    Case("kalman_filter_nll", up.kalman_filter_nll, _kalman,
         (("jit(value_and_grad(f))", None, None), ("hessian(f)", None, None), ("vmap(f, in_axes=(None, 0, None, None))",
                                                   (None, 0, None, None), None)), rtol32=5e-3),
    Case("policy_gradient_loss", up.policy_gradient_loss,
         lambda r, d: (_n(r, d, 3, 4), _n(r, d, 6, 3), r.integers(0, 4, 6), _n(r, d, 6)),
         (("jit(grad(f))", None, None), ("hessian(f)", None, None), ("vmap(grad(f), in_axes=(None, 0, 0, 0))", (None, 0, 0, 0), None))),
    Case("info_nce", up.info_nce, lambda r, d: (_n(r, d, 4, 3), _n(r, d, 4, 3), np.asarray(0.5, d)),
         (("jit(grad(f, argnums=(0, 1, 2)))", None, None), ("hessian(f)", None, None))),
    Case("batch_norm_train", up.batch_norm_train,
         lambda r, d: (_n(r, d, 6, 3), 1 + _n(r, d, 3, scale=0.1), _n(r, d, 3, scale=0.1)),
         (("jit(f)", None, None), ("jacrev(f)", None, None),
          ("vmap(f, in_axes=(2, None, None), out_axes=2)", (2, None, None), None))),
    Case("kmeans", up.kmeans, lambda r, d: (*_kmeans(r, d), 3),
         (("jit(f, static_argnums=2)", None, None), ("vmap(f, in_axes=(0, None, None))", (0, None, None), None))),
    Case("kmeans_objective", up.kmeans_objective, _kmeans,
         (("jit(grad(f))", None, None), ("vmap(value_and_grad(f), in_axes=(0, None))", (0, None), None))),
    Case("sinkhorn", up.sinkhorn, _sinkhorn,
         (("jit(grad(f))", None, None), ("jacfwd(grad(f))", None, None), ("vmap(f, in_axes=(0, None, None, None))", (0, None, None, None), None),
          ("grad(f, argnums=3)", None, None)), rtol32=5e-3),
    Case("value_iteration", up.value_iteration, _mdp,
         (("jit(f)", None, None), ("jacrev(f)", None, None),
          ("vmap(f, in_axes=(None, None, 0))", (None, None, 0), None))),
    Case("rk4_fit_loss", up.rk4_fit_loss, _lv,
         (("jit(value_and_grad(f))", None, None), ("hessian(f)", None, None),
          ("vmap(grad(f), in_axes=(0, None, None))", (0, None, None), None)), rtol32=2e-3),
    Case("rk4_step", up.rk4_step, lambda r, d: (_lv(r, d)[1], _lv(r, d)[0], 0.1),
         (("jacfwd(f)", None, None), ("jacrev(jacfwd(f))", None, None), ("jacrev(f, argnums=1)", None, None),
          ("vmap(jacfwd(f), in_axes=(0, None, None))", (0, None, None), None))),
    Case("pendulum_euler", up.pendulum_euler, lambda r, d: (_n(r, d, 2), np.asarray(0.1, d), 20),
         (("jit(f)", None, None), ("jacrev(f)", None, None), ("vmap(f, in_axes=(0, None, None))",
                                                              (0, None, None), None),
          ("vmap(jacfwd(f, argnums=1), in_axes=(None, 0, None))", (None, 0, None), None))),
    Case("neural_ode_loss", up.neural_ode_loss,
         lambda r, d: ({"w1": _n(r, d, 2, 5, scale=0.5), "b1": _n(r, d, 5, scale=0.1),
                        "w2": _n(r, d, 5, 2, scale=0.5)}, _n(r, d, 2), _n(r, d, 2)),
         (("jit(grad(f))", None, None), ("vmap(grad(f), in_axes=(None, 0, 0))", (None, 0, 0), None))),
    Case("newton_kepler", up.newton_kepler, lambda r, d: (np.asarray(1.0 + 0.3 * r.random(), d), np.asarray(0.3, d)),
         (("jit(f)", None, None), ("grad(f, max_iters=60)", None, None),
          ("vmap(f, in_axes=(0, None))", (0, None), "f"),
          ("vmap(grad(f, argnums=1, max_iters=60), in_axes=(0, None))", (0, None), "grad(f, argnums=1)"))),
    Case("bisection_root", up.bisection_root,
         lambda r, d: (np.asarray(1.0 + 3 * r.random(), d), np.asarray(0.0, d), np.asarray(3.0, d)),
         (("jit(f)", None, None), ("vmap(f, in_axes=(0, None, None))", (0, None, None), None))),
    Case("gauss_newton_step", up.gauss_newton_step, _decay,
         (("jit(f)", None, None), ("jacfwd(f)", None, None), ("vmap(f, in_axes=(0, None, None))",
                                                              (0, None, None), None)),
         numpy=False, rtol32=5e-3),
    Case("levenberg_marquardt", up.levenberg_marquardt, lambda r, d: (*_decay(r, d), np.asarray(0.1, d)),
         (("jit(f)", None, None), ("jacrev(f, argnums=3)", None, None)), numpy=False, rtol32=5e-3),
    Case("nbody_energy", up.nbody_energy, _nbody,
         (("jit(grad(f))", None, None), ("vmap(hessian(f), in_axes=(0, None))", (0, None), None), ("hessian(f)", None, None),
          ("vmap(grad(f), in_axes=(0, None))", (0, None), None))),
    Case("nbody_forces", up.nbody_forces, _nbody,
         (("jit(f)", None, None), ("jacrev(f)", None, None), ("vmap(f, in_axes=(0, None))", (0, None), None))),
    Case("leapfrog", up.leapfrog, lambda r, d: (*_nbody(r, d)[:1], _n(r, d, 4, 2, scale=0.1), _nbody(r, d)[1], 3),
         (("jit(f, static_argnums=3)", None, None), ("jacfwd(f, argnums=1)", None, None)), numpy=False),
    Case("heat_equation", up.heat_equation, lambda r, d: (_n(r, d, 8), np.asarray(0.5, d), 10),
         (("jit(grad(f, argnums=(0, 1)))", None, None), ("vmap(grad(f, argnums=1), in_axes=(None, 0, None))", (None, 0, None), None), ("vmap(f, in_axes=(None, 0, None))", (None, 0, None), None))),
    Case("sgd_step", up.sgd_step, lambda r, d: (_mlp_params(r, d), _n(r, d, 5, 4), _onehot(r, d, 5, 3),
                                                 np.asarray(0.1, d)),
         (("jit(f)", None, None), ("vmap(f, in_axes=(None, None, None, 0))", (None, None, None, 0), None)),
         numpy=False),
    Case("adam_step", up.adam_step, _adam, (("vmap(f, in_axes=(None, None, 0, 0))", (None, None, 0, 0), None), ("jit(f)", None, None),), numpy=False),
    Case("train_regression", up.train_regression, lambda r, d: (_reg_params(r, d), _n(r, d, 6, 3), _n(r, d, 6)),
         (("jit(f)", None, None), ("grad(f)", None, None)), numpy=False),
    Case("dp_sgd_grads", up.dp_sgd_grads,
         lambda r, d: (_reg_params(r, d), _n(r, d, 6, 3), _n(r, d, 6), np.asarray(0.5, d)),
         (("jit(f)", None, None), ("jacfwd(f, argnums=3)", None, None)), numpy=False),
    Case("maml_loss", up.maml_loss,
         lambda r, d: (_reg_params(r, d), _n(r, d, 4, 3), _n(r, d, 4), _n(r, d, 4, 3), _n(r, d, 4)),
         (("jit(value_and_grad(f))", None, None), ("vmap(grad(f), in_axes=(None, 0, 0, 0, 0))", (None, 0, 0, 0, 0),
                                                   None)), numpy=False),
    Case("maml_batch_loss", up.maml_batch_loss,
         lambda r, d: (_reg_params(r, d), _n(r, d, 2, 4, 3), _n(r, d, 2, 4), _n(r, d, 2, 4, 3), _n(r, d, 2, 4)),
         (("jit(grad(f))", None, None),), numpy=False),
    Case("hvp", up.hvp, lambda r, d: (_n(r, d, 5), _n(r, d, 5)),
         (("jit(f)", None, None), ("vmap(f, in_axes=(None, 0))", (None, 0), None)), numpy=False, rtol32=2e-3),
    Case("hvp_rev", up.hvp_rev, lambda r, d: (_n(r, d, 5), _n(r, d, 5)),
         (("jit(f)", None, None), ("vmap(f, in_axes=(None, 0))", (None, 0), None)), numpy=False, rtol32=2e-3),
    Case("ensemble_mean", up.ensemble_mean, _linear_layers,
         (("jit(f)", None, None),), numpy=False),
    Case("ensemble_loss", up.ensemble_loss, lambda r, d: (*_linear_layers(r, d), _n(r, d, 5)),
         (("jit(grad(f))", None, None), ("vmap(grad(f), in_axes=(None, 0, 0))", (None, 0, 0), None)),
         numpy=False),
    Case("spd_logdet_trace", up.spd_logdet_trace, _spd,
         (("jit(grad(f))", None, None), ("vmap(hessian(f))", (0,), None), ("vmap(grad(f))", (0,), None), ("hessian(f)", None, None)), rtol32=5e-3),
    Case("expm_taylor", up.expm_taylor, _spd,
         (("jit(f)", None, None), ("vmap(jacrev(f))", (0,), None), ("vmap(f)", (0,), None), ("jacfwd(f)", None, None))),
    Case("pca_reconstruction", up.pca_reconstruction, lambda r, d: (_n(r, d, 8, 3), 2),
         (("jit(f, static_argnums=1)", None, None), ("grad(f)", None, None),
          ("vmap(f, in_axes=(0, None))", (0, None), None)), rtol32=5e-3),
)


def _hmm(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    def logp(*shape: int) -> np.ndarray:
        p = rng.random(shape) + 0.2
        return np.log(p / p.sum(-1, keepdims=True)).astype(dt)
    return logp(3), logp(3, 3), logp(3, 4), rng.integers(0, 4, 6)


def _layers(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    layers = [up.Linear(_n(rng, dt, 3, 4, scale=0.5), _n(rng, dt, 4, scale=0.1)),
              up.Linear(_n(rng, dt, 4, 2, scale=0.5), _n(rng, dt, 2, scale=0.1))]
    return layers, _n(rng, dt, 5, 3), _n(rng, dt, 5, 2)


def _ens_dict(rng: np.random.Generator, dt: Any) -> tuple[Any, ...]:
    return ({"w": _n(rng, dt, 4, 3, 5, scale=0.5), "b": _n(rng, dt, 4, 5, scale=0.1), "v": _n(rng, dt, 5, scale=0.5)},
            _n(rng, dt, 6, 3), _n(rng, dt, 6))


CASES += (
    Case("entropy_loss", up.entropy_loss, lambda r, d: (_n(r, d, 5, scale=2.0), np.asarray(0.05, d)),
         (("jit(grad(f))", None, None), ("vmap(grad(f), in_axes=(0, None))", (0, None), None),
          ("jacfwd(grad(f))", None, None)), numpy=False),
    Case("hyper_sgd", up.hyper_sgd, lambda r, d: (np.asarray(-2.0, d), *_reg_params_xy(r, d)),
         (("jit(value_and_grad(f))", None, None), ("vmap(grad(f), in_axes=(0, None, None, None))",
                                                   (0, None, None, None), None)), numpy=False, rtol32=2e-3),
    Case("fixed_point_sqrt", up.fixed_point_sqrt, lambda r, d: (np.asarray(1.0 + 4 * r.random(), d),),
         (("jit(f)", None, None), ("vmap(f)", (0,), None)), numpy=False),
    Case("huber_regression", up.huber_regression,
         lambda r, d: (_n(r, d, 3), _n(r, d, 8, 3), _n(r, d, 8), np.asarray(0.5, d)),
         (("jit(value_and_grad(f))", None, None), ("vmap(f, in_axes=(0, None, None, None))", (0, None, None, None),
                                                   None)), numpy=False),
    Case("clipped_grad_step", up.clipped_grad_step,
         lambda r, d: (_n(r, d, 3), _n(r, d, 8, 3), (r.random(8) < 0.5).astype(d), np.asarray(0.05, d)),
         (("jit(f)", None, None), ("vmap(f, in_axes=(None, None, None, 0))", (None, None, None, 0), None),
          ("jacrev(f)", None, None)), numpy=False),
    Case("clipped_train_step", up.clipped_train_step, lambda r, d: _reg_params_xy(r, d),
         (("jit(f)", None, None), ("vmap(f, in_axes=(None, 0, 0))", (None, 0, 0), None)), numpy=False),
    Case("sqrt_relu_safe", up.sqrt_relu_safe, lambda r, d: (_n(r, d, 6),),
         (("jit(grad(f))", None, None), ("hessian(f)", None, None), ("vmap(grad(f))", (0,), None))),
    Case("embedding_bag_loss", up.embedding_bag_loss,
         lambda r, d: (_n(r, d, 7, 3), r.integers(0, 7, 5), _n(r, d, 3)),
         (("jit(grad(f))", None, None), ("jacfwd(grad(f))", None, None), ("vmap(grad(f), in_axes=(None, 0, 0))", (None, 0, 0), None),
          ("vmap(f, in_axes=(None, 0, None))", (None, 0, None), None))),
    Case("segment_mean", up.segment_mean, lambda r, d: (_n(r, d, 8), r.integers(0, 3, 8), 3),
         (("jit(f, static_argnums=2)", None, None), ("jacrev(f)", None, None),
          ("vmap(f, in_axes=(0, 0, None))", (0, 0, None), None)), numpy=False),
    Case("build_tridiagonal", up.build_tridiagonal, lambda r, d: (2 + r.random(4).astype(d), _n(r, d, 3, scale=0.3)),
         (("jit(f)", None, None), ("grad(f, argnums=(0, 1))", None, None), ("vmap(grad(f))", (0, 0), None))),
    Case("discounted_returns_loss", up.discounted_returns_loss,
         lambda r, d: (_n(r, d, 6), _n(r, d, 6), np.asarray(0.9, d)),
         (("jit(grad(f, argnums=(1, 2)))", None, None), ("hessian(f, argnums=1)", None, None), ("vmap(f, in_axes=(0, 0, None))", (0, 0, None), None))),
    Case("topk_mean", up.topk_mean, lambda r, d: (_n(r, d, 7), 3),
         (("jit(f, static_argnums=1)", None, None), ("grad(f)", None, None),
          ("vmap(grad(f), in_axes=(0, None))", (0, None), None))),
    Case("triplet_loss", up.triplet_loss,
         lambda r, d: (_n(r, d, 5, 3), _n(r, d, 5, 3), _n(r, d, 5, 3), np.asarray(0.5, d)),
         (("jit(grad(f, argnums=(0, 1, 2)))", None, None), ("vmap(f, in_axes=(None, None, None, 0))",
                                                             (None, None, None, 0), None))),
    Case("label_smoothing_ce", up.label_smoothing_ce,
         lambda r, d: (_n(r, d, 5, 4), r.integers(0, 4, 5), np.asarray(0.1, d)),
         (("jit(grad(f))", None, None), ("hessian(f)", None, None),
          ("vmap(f, in_axes=(None, None, 0))", (None, None, 0), None))),
    Case("gumbel_softmax_sample", up.gumbel_softmax_sample,
         lambda r, d: (_n(r, d, 4), r.random(4).astype(d), np.asarray(0.5, d)),
         (("jit(f)", None, None), ("jacrev(f, argnums=(0, 2))", None, None),
          ("vmap(f, in_axes=(None, 0, None))", (None, 0, None), None))),
    Case("hmm_log_likelihood", up.hmm_log_likelihood, _hmm,
         (("jit(grad(f, argnums=(0, 1, 2)))", None, None), ("vmap(grad(f), in_axes=(None, None, None, 0))", (None, None, None, 0), None), ("vmap(f, in_axes=(None, None, None, 0))",
                                                             (None, None, None, 0), None),
          ("hessian(f)", None, None))),
    Case("rotation_loss", up.rotation_loss, lambda r, d: (_n(r, d, 3), _n(r, d, 4, 2), _n(r, d, 3, 4, 2)),
         (("jit(grad(f))", None, None), ("hessian(f)", None, None),
          ("vmap(grad(f), in_axes=(0, None, None))", (0, None, None), None))),
    Case("langevin", up.langevin, lambda r, d: (_n(r, d, 3, scale=0.3), _n(r, d, 4, 3), np.asarray(1e-3, d)),
         (("jit(f)", None, None), ("jacfwd(f)", None, None), ("vmap(f, in_axes=(None, 0, None))",
                                                              (None, 0, None), None)), numpy=False, rtol32=2e-3),
    Case("warmup_lr", up.warmup_lr, lambda r, d: (np.asarray(r.integers(0, 20)), np.asarray(0.1, d), 10),
         (("jit(f)", None, None), ("vmap(f, in_axes=(0, None, None))", (0, None, None), None),
          ("grad(f, argnums=1)", None, None))),
    Case("nuclear_norm_loss", up.nuclear_norm_loss, lambda r, d: (_n(r, d, 4, 3), _n(r, d, 4, 3)),
         (("jit(grad(f))", None, None), ("vmap(grad(f), in_axes=(0, None))", (0, None), None)), rtol32=2e-3),
    Case("qr_orthogonality", up.qr_orthogonality, lambda r, d: (_n(r, d, 4, 3),),
         (("jit(f)", None, None), ("grad(f)", None, None), ("vmap(grad(f))", (0,), None)), rtol32=2e-3),
    Case("spectrum_loss", up.spectrum_loss, lambda r, d: (_n(r, d, 8), r.random(5).astype(d)),
         (("jit(grad(f))", None, None), ("vmap(grad(f), in_axes=(0, None))", (0, None), None),
          ("hessian(f)", None, None))),
    Case("mlp_layers_loss", up.mlp_layers_loss, _layers,
         (("jit(value_and_grad(f))", None, None), ("vmap(grad(f), in_axes=(None, 0, 0))", (None, 0, 0), None)),
         numpy=False),
    Case("ensemble_dict_loss", up.ensemble_dict_loss, _ens_dict,
         (("jit(value_and_grad(f))", None, None), ("vmap(f, in_axes=(None, 0, 0))", (None, 0, 0), None)),
         numpy=False),
    Case("loss_and_grad_norm", up.loss_and_grad_norm, lambda r, d: _reg_params_xy(r, d),
         (("jit(f)", None, None), ("vmap(f, in_axes=(None, 0, 0), out_axes=(0, 0))", (None, 0, 0), None),
          ("vmap(f, in_axes=(0, None, None))", (0, None, None), None)), numpy=False),
    Case("input_saliency", up.input_saliency, lambda r, d: (_mlp_params(r, d), _n(r, d, 4)),
         (("jit(f)", None, None), ("jacrev(f, argnums=1)", None, None), ("vmap(f, in_axes=(None, 0))", (None, 0), None), ("jacfwd(f, argnums=1)", None, None)),
         numpy=False),
    Case("per_example_cnn", up.per_example_cnn,
         lambda r, d: ({"conv": _n(r, d, 2, 1, 2, 2, scale=0.5), "head": _n(r, d, 2)}, _n(r, d, 1, 4, 4)),
         (("jit(grad(f))", None, None), ("vmap(f, in_axes=(None, 0))", (None, 0), None),
          ("vmap(grad(f), in_axes=(None, 0))", (None, 0), None)), numpy=False),
)

BY_NAME = {c.name: c for c in CASES}
DEFAULT_CASES = ("mlp_loss", "gru_encode", "newton_kepler", "dp_sgd_grads")


# -- running a check ------------------------------------------------------------------------------------------

def oracle(c: Case, expr: str, in_axes: Any, args: tuple[Any, ...]) -> Any:
    """jax's result: the check's transformation of the twin, or (where jax's vmap cannot run the program:
    Python control flow on data) the check's ``loop`` expression one example at a time, stacked."""
    loop = next(lp for e, a, lp in c.checks if e == expr)
    twin = TWIN[c.fn.__name__]
    if loop is None:
        return jitted(evaluate(expr, JAX_T, twin, jnp))(*to_twin(args))
    one = evaluate(loop, JAX_T, twin, jnp)
    outs = [one(*to_twin(tuple(take(a, ax, k) for a, ax in zip(args, in_axes)))) for k in range(B)]
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *outs)


def numpy_reference(c: Case, expr: str, in_axes: Any, args: tuple[Any, ...]) -> Any:
    """The user's function run by NumPy, for ``jit(f...)`` and ``vmap(f, ...)`` of a plain NumPy program
    (None otherwise)."""
    return loop_reference(c.fn, expr, in_axes, args) if c.numpy else None


# (jax failing to run a check makes it no case; the dtypes always agree with the user's function run by NumPy)
CORPUS = Corpus(CASES, ("user_programs.py",), KNOWN_REFUSALS, oracle, jax.tree_util.tree_leaves,
                lambda c, expr: evaluate(expr, SRCJAX_T, c.fn, np), numpy_reference, jax_required=True,
                numpy_dtypes_always=True, known_internal=KNOWN_INTERNAL)


test_user_program, test_user_program_thorough = CORPUS.tests(DEFAULT_CASES)

if __name__ == "__main__":
    CORPUS.main(sys.argv[1:])


# -- regressions found by the corpus ------------------------------------------------------------------------

def test_forward_mode_over_a_tape_holding_a_rebound_constant() -> None:
    """``jacfwd``/``jvp`` of a function calling ``srcjax.grad`` of a helper that rebinds a name holding a
    value without a tangent (``w = w1; ...; w = w2``, the weights of input_saliency's MLP loop): the tape's
    tangent list held None for the first ``w`` while its pop was differentiated as an array (was a
    StaticValueError located at the user's line: "np.swapaxes(): axis -1 is out of bounds for array of
    dimension 0", or a matmul shape error)."""
    rng = np.random.default_rng(0)
    w1, w2, x, v = rng.standard_normal((4, 6)), rng.standard_normal((6, 3)), rng.standard_normal(4), rng.standard_normal(4)
    twin = TWIN["saliency_of_rebinding"]
    agree(srcjax.jacfwd(up.saliency_of_rebinding, argnums=2)(w1, w2, x),
          JAX.jacfwd(twin, argnums=2)(w1, w2, x), "jacfwd", 1e-9)
    got = srcjax.jvp(up.saliency_of_rebinding, (w1, w2, x), (np.zeros_like(w1), np.zeros_like(w2), v))
    agree(got, JAX.jvp(twin, (w1, w2, x), (np.zeros_like(w1), np.zeros_like(w2), v)), "jvp", 1e-9)
    got = srcjax.vmap(srcjax.jacfwd(up.saliency_of_rebinding, argnums=2), in_axes=(None, None, 0))(w1, w2, x[None] + v[:, None])
    agree(got, JAX.vmap(jax.jacfwd(twin, argnums=2), in_axes=(None, None, 0))(w1, w2, x[None] + v[:, None]), "vmap(jacfwd)", 1e-9)


def test_a_list_rebound_to_its_stacked_array() -> None:
    """``r = np.stack(r)`` after the loop appending to ``r`` (discounted_returns_loss's ``returns``): ``r`` is an
    array from there on, so ``r * x`` is differentiated (was refused: "cannot differentiate through the list
    `r` passed to np.multiply as an array": a name bound to a list anywhere counted as a list everywhere)."""
    x = np.random.default_rng(0).standard_normal(4)
    twin = TWIN["stacked_rebinding"]
    agree(srcjax.grad(up.stacked_rebinding)(x), JAX.grad(twin)(x), "grad", 1e-9)
    agree(srcjax.hessian(up.stacked_rebinding)(x), JAX.hessian(twin)(x), "hessian", 1e-9)
    agree(srcjax.vmap(srcjax.grad(up.stacked_rebinding))(np.stack([x, 2 * x])),
          JAX.vmap(jax.grad(twin))(np.stack([x, 2 * x])), "vmap(grad)", 1e-9)


def test_a_comprehension_target_named_like_its_iterables_name() -> None:
    """``tree_map(lambda m, g: ..., m, params)`` (adam_step's moments; srcjax writes it as a comprehension
    over ``zip(tree_leaves(m), ...)``) and ``sum(... for m, x in zip([m, 2.0 * m], xs))``: the first iterable
    reads the enclosing ``m``, not the comprehension's (written as a loop for vmap and derivatives, it read
    the loop's renamed target: "name 'm_1' is not defined")."""
    rng = np.random.default_rng(0)
    params, m = {"w": rng.standard_normal((3, 2))}, {"w": rng.standard_normal((4, 3, 2))}
    agree(srcjax.vmap(up.momentum_update, in_axes=(None, 0))(params, m),
          JAX.vmap(TWIN["momentum_update"], in_axes=(None, 0))(params, m), "vmap", 1e-12)
    xs, mm = [rng.standard_normal(3), rng.standard_normal(3)], rng.standard_normal(3)
    agree(srcjax.grad(up.sum_of_scaled, argnums=1)(xs, mm), JAX.grad(TWIN["sum_of_scaled"], argnums=1)(xs, mm),
          "grad", 1e-12)
    ms = rng.standard_normal((2, 3))
    agree(srcjax.vmap(srcjax.grad(up.sum_of_scaled, argnums=1), in_axes=(None, 0))(xs, ms),
          JAX.vmap(jax.grad(TWIN["sum_of_scaled"], argnums=1), in_axes=(None, 0))(xs, ms), "vmap(grad)", 1e-12)


def test_jit_of_jacfwd_of_grad_through_a_loop_carrying_two_potentials() -> None:
    """``jit(jacfwd(grad(f)))`` of a loop alternating two potentials (Sinkhorn's f and g): the reverse loop's
    ``f_bar = zeros_like(f)`` at the end of its body made the cotangent's tangent unbatched where the body's top
    read it batched (vmap forced a loop-carried name batched only when batched at the end, not at the top):
    was "too many indices for array" located at the user's ``for``."""
    rng = np.random.default_rng(0)
    args = (rng.random((4, 3)), rng.random(4), rng.random(3))
    want = JAX.jacfwd(jax.grad(TWIN["alternating_potentials"]))(*args)
    agree(srcjax.jit(srcjax.jacfwd(srcjax.grad(up.alternating_potentials)))(*args), want, "jit(jacfwd(grad))", 1e-9)
    agree(srcjax.jacfwd(srcjax.grad(up.alternating_potentials))(*args), want, "jacfwd(grad)", 1e-9)


def test_a_loop_target_rebinding_a_differentiated_name() -> None:
    """Silent wrong answer: ``w = x * 2.0`` then ``for w in ws:`` (ws not differentiated): reverse mode added
    the loop items' cotangents to the first ``w``'s and read the last item for it (grad, hessian, jacfwd of
    it all wrong); with ``for w, b in params[:-1]`` then ``w, b = params[-1]`` (mlp_predict) under
    ``jacfwd`` of an input saliency, forward mode kept the earlier ``w``'s tangent (a matmul shape error at
    the user's line). Such a loop is now read ``for w_item in ws: w = w_item``."""
    rng = np.random.default_rng(0)
    x, ws = rng.standard_normal(3), [rng.standard_normal(3), rng.standard_normal(3)]
    twin = TWIN["loop_target_shadowing"]
    agree(srcjax.grad(up.loop_target_shadowing)(x, ws), JAX.grad(twin)(x, ws), "grad", 1e-9)
    agree(srcjax.hessian(up.loop_target_shadowing)(x, ws), JAX.hessian(twin)(x, ws), "hessian", 1e-9)
    agree(srcjax.jacfwd(up.loop_target_shadowing)(x, ws), JAX.jacfwd(twin)(x, ws), "jacfwd", 1e-9)
    assert float(srcjax.jit(up.loop_target_shadowing)(x, ws)) == pytest.approx(float(up.loop_target_shadowing(x, ws)))
    params, xi = _mlp_params(rng, np.float64), rng.standard_normal(4)
    agree(srcjax.jacfwd(up.mlp_saliency, argnums=1)(params, xi),
          JAX.jacfwd(TWIN["mlp_saliency"], argnums=1)(params, xi), "jacfwd(saliency)", 1e-9)
