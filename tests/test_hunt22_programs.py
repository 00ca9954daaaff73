"""tests/hunt22_programs.py's programs (JAX users' code from tutorials and example repositories: Flax's examples
and the UvA tutorials' modules over nested dicts, optax's later update rules, jax-md and physics tutorials,
probabilistic programs, attention variants, normalizations, losses, ODE solvers, per-example gradients and
Jacobians, programs written to be vmapped) under the transformations their users apply, run by
``tests/vmap_corpus.py``: against jax over the module's text, the NumPy stand-in (the user's function run by NumPy,
a loop over the examples for vmap, finite differences for derivatives) and the generated source run by NumPy.

The default run checks ``DEFAULT_CASES`` at float64; ``SRCJAX_HYPOTHESIS=thorough`` every check at float64 and
float32. ``python -m tests.test_hunt22_programs [NAME ...] [--f64|--f32]`` runs the corpus (or the cases named)
and prints the counts and every failure.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import srcjax  # noqa: F401 - (the checks' namespace)

from . import hunt22_programs as hp
from .fd import central_fd
from .vmap_corpus import JF, JR, Case, G, H, J, VmapCorpus, g, gs, h, jf, jp, jr, out, v, vg, vgs

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

# Refusals met where jax refuses too (reported; located at the user's line with a hint)
JAX_REFUSES: tuple[str, ...] = (
    # a while_loop under reverse mode (jax: "Reverse-mode differentiation does not work for lax.while_loop")
    "needs a bound on its iterations",
    # kmeans_inplace's `max(np.sum(mask), 1.0)`: jax.jit refuses Python's max of traced values too
    # (ConcretizationTypeError); eager jax runs it
    "the builtin max() compares values known only at run time",
    # bubble_swaps' `x[i], x[i + 1] = x[i + 1], x[i]`: jax's arrays take no item assignment at all; NumPy runs it
    "assignment to an array element inside a tuple target",
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


def _sorted(r: np.random.Generator, d: Any, n: int, lo: float = 0.0) -> np.ndarray:
    return (lo + np.cumsum(r.uniform(0.2, 0.6, n))).astype(d)


def _bits(r: np.random.Generator, d: Any, *shape: int) -> np.ndarray:
    return (r.uniform(size=shape) < 0.5).astype(d)


def _dense(r: np.random.Generator, d: Any, i: int, o: int) -> dict[str, np.ndarray]:
    return {"kernel": _n(r, d, i, o, scale=0.5), "bias": _n(r, d, o, scale=0.1)}


def _ln(r: np.random.Generator, d: Any, n: int) -> dict[str, np.ndarray]:
    return {"scale": 1.0 + _n(r, d, n, scale=0.1), "bias": _n(r, d, n, scale=0.1)}


def _mlp(r: np.random.Generator, d: Any, i: int = 2, h: int = 3, o: int | None = None) -> dict[str, np.ndarray]:
    return {"w1": _n(r, d, i, h, scale=0.7), "b1": _n(r, d, h, scale=0.1),
            "w2": _n(r, d, h, scale=0.7) if o is None else _n(r, d, h, o, scale=0.7)}


def _like(r: np.random.Generator, d: Any, p: dict[str, Any], scale: float = 1.0) -> dict[str, np.ndarray]:
    return {k: _n(r, d, *np.shape(w), scale=scale) for k, w in p.items()}


def _vae(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    params = {"encoder": {"fc1": _dense(r, d, 6, 4), "fc2_mean": _dense(r, d, 4, 2), "fc2_logvar": _dense(r, d, 4, 2)},
              "decoder": {"fc1": _dense(r, d, 2, 4), "fc2": _dense(r, d, 4, 6)}}
    return params, _bits(r, d, 5, 6), _n(r, d, 5, 2)


def _mha(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return ({"qkv_proj": _dense(r, d, 4, 12), "o_proj": _dense(r, d, 4, 4)}, _n(r, d, 3, 4),
            np.tril(np.ones((3, 3))).astype(d))


def _mixer(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return ({"ln1": _ln(r, d, 4), "tok1": _dense(r, d, 3, 5), "tok2": _dense(r, d, 5, 3), "ln2": _ln(r, d, 4),
             "ch1": _dense(r, d, 4, 6), "ch2": _dense(r, d, 6, 4)}, _n(r, d, 3, 4))


def _sgd_params(r: np.random.Generator, d: Any) -> dict[str, np.ndarray]:
    return {"w": _n(r, d, 3, 2, scale=0.5), "b": _n(r, d, 2, scale=0.1)}


def _adan(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    p = _sgd_params(r, d)
    n = {k: np.abs(w) + 0.1 for k, w in _like(r, d, p, 0.5).items()}
    return p, _like(r, d, p), _like(r, d, p), _like(r, d, p, 0.1), _like(r, d, p, 0.1), {k: w.astype(d) for k, w in
                                                                                         n.items()}


def _sophia(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    p = _mlp(r, d)
    u = {k: np.sign(w).astype(d) for k, w in _like(r, d, p).items()}
    h = {k: (np.abs(w) + 0.05).astype(d) for k, w in _like(r, d, p, 0.2).items()}
    return p, _n(r, d, 4, 2), _n(r, d, 4), u, _like(r, d, p, 0.1), h


def _novograd(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    p = _sgd_params(r, d)
    return p, _like(r, d, p), _like(r, d, p, 0.1), {k: _u(r, d, 0.5, 1.5) for k in p}, np.array(r.integers(0, 2) * 3)


def _probes(r: np.random.Generator, d: Any, p: dict[str, Any], n: int = 3) -> dict[str, np.ndarray]:
    return {k: np.sign(r.standard_normal((n, *np.shape(w)))).astype(d) for k, w in p.items()}


def _hmm(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    A = _n(r, d, 3, 3)
    E = _n(r, d, 5, 3)
    pi = _n(r, d, 3)
    return A - np.log(np.sum(np.exp(A), axis=1, keepdims=True)), E, pi - np.log(np.sum(np.exp(pi)))


def _cloth(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    grid = np.array([[0, 0], [1, 0], [2, 0], [0, 1], [1, 1], [2, 1]], float)
    return (grid + _n(r, np.float64, 6, 2, scale=0.1)).astype(d), _u(r, d, 0.9, 1.1, 7)


def _lj(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    grid = np.array([[0.2, 0.2], [1.3, 0.2], [0.2, 1.3], [1.3, 1.3]])
    return ((grid + _n(r, np.float64, 4, 2, scale=0.05)).astype(d),)




def nested(outer: tuple[Any, ...], inner: tuple[Any, ...], fn: str = "f", out_axes: str = "") -> tuple[str, Any]:
    """``vmap(vmap(fn, in_axes=inner), in_axes=outer)``."""
    text, _ = v(inner, fn)
    text, _ = v(outer, text, out=out_axes)
    return text, [inner, outer]


def _spelled(c: Case) -> Case:
    """``c`` with its checks' ``lambda *a: ...f(*a)...`` written with one parameter per argument (the generated
    source's check, ``srcjax.numpy_function``, needs a function of fixed arity)."""
    n = len(c.args(np.random.default_rng(0), np.float64))
    names = ", ".join(f"a{k}" for k in range(n))
    return c._replace(checks=tuple((t.replace("lambda *a:", f"lambda {names}:").replace("f(*a)", f"f({names})"), ax)
                                   for t, ax in c.checks))


MLP_AXES = {"w1": 0, "b1": None, "w2": None}

CASES: tuple[Case, ...] = (
    # Flax examples, UvA tutorials
    Case("vae_elbo", _vae, (J, G, g(2), v((None, 0, 0)), vg((None, 0, 0)),
                            v(({"encoder": 0, "decoder": None}, None, None)), jp(3, (1, 2)))),
    Case("lippe_mha", _mha, (J, out(0, "jacrev", 1), out(0, "jacfwd", 0), v((None, 0, None)), v((None, 0, 0)),
                             v((None, 0, None), out="(1, 0)"), jp(3, (1,))),
         numpy_dtypes="np.sqrt of a Python int is a float64 NumPy scalar in NumPy 2 (weak in jax)"),
    Case("sinusoidal_encoding", lambda r, d: (_n(r, d, 5, 6),), (J, JF, JR, v((0,)), v((1,), out="-1"), jp(1))),
    Case("t5_bucket_bias", lambda r, d: (_n(r, d, 6, 4), _n(r, d, 6, 4), _n(r, d, 8)),
         (J, g("(0, 1, 2)"), v((0, 0, None)), v((None, None, 0)), jp(3))),
    Case("neox_rotary", lambda r, d: (_n(r, d, 4, 6), _n(r, d, 4, 6)),
         (J, JF, jr(1), v((0, 0)), v((1, None)), nested((0, None), (None, 0)), jp(2))),
    Case("gqa_attention", lambda r, d: ({"wq": _n(r, d, 8, 8, scale=0.4), "wk": _n(r, d, 8, 4, scale=0.4),
                                         "wv": _n(r, d, 8, 4, scale=0.4), "wo": _n(r, d, 8, 8, scale=0.4)},
                                        _n(r, d, 4, 8)),
         (J, jr(1), gs(0), v((None, 0)), v(({"wq": 0, "wk": None, "wv": None, "wo": None}, None)), vgs((None, 0)),
          jp(2, (1,))), numpy_dtypes="np.sqrt of a Python int is a float64 NumPy scalar in NumPy 2 (weak in jax)"),
    Case("sst2_masked_lstm", lambda r, d: ({"ih": _n(r, d, 3, 16, scale=0.5), "hh": _n(r, d, 4, 16, scale=0.5),
                                            "b": _n(r, d, 16, scale=0.1), "out": _n(r, d, 4, 2)},
                                           _n(r, d, 5, 3), np.array(r.integers(1, 6))),
         (J, jr(0), jf(1), gs(0), v((None, 0, 0)), vgs((None, 0, 0)), jp(3, (1,)))),
    Case("mixer_block", _mixer, (J, jr(1), gs(0), v((None, 0)), v((None, 2)), vgs((None, 0)), jp(2, (1,)))),
    Case("swiglu_ffn", lambda r, d: ({"norm": 1.0 + _n(r, d, 4, scale=0.1), "w1": _n(r, d, 4, 6, scale=0.5),
                                      "w3": _n(r, d, 4, 6, scale=0.5), "w2": _n(r, d, 6, 4, scale=0.5)},
                                     _n(r, d, 3, 4)),
         (J, jr(1), gs(0), v((None, 0)), v(({"norm": None, "w1": 0, "w3": 0, "w2": None}, 0)), jp(2, (1,)))),
    Case("kv_cache_decode", lambda r, d: ({"wq": _n(r, d, 4, 4), "wk": _n(r, d, 4, 4), "wv": _n(r, d, 4, 4)},
                                          _n(r, d, 5, 4), _n(r, d, 5, 4), _n(r, d, 4), np.array(r.integers(0, 5))),
         (J, out(0, "jacrev", "(0, 3)"), out(0, "jacfwd", 1), v((None, 0, 0, 0, 0)), v((None, None, None, 0, 0)),
          v((None, 0, 0, None, 0), out="(0, 1, 1)"), jp(5, (1, 2, 3)))),
    Case("sliding_window_attention", lambda r, d: (_n(r, d, 5, 3), _n(r, d, 5, 3), _n(r, d, 5, 3)),
         (J, JF, jr(2), v((0, 0, 0)), v((None, 0, None)), jp(3))),
    Case("linear_attention_causal", lambda r, d: (_n(r, d, 5, 3), _n(r, d, 5, 3), _n(r, d, 5, 3)),
         (J, JF, jr("(1, 2)"), v((0, 0, 0)), v((1, None, 1), out="1"), jp(3))),
    Case("blockwise_softmax_attention", lambda r, d: (_n(r, d, 3, 2), _n(r, d, 5, 2), _n(r, d, 5, 3)),
         (J, JF, JR, jr(1), v((0, 0, 0)), v((None, 1, None)), jp(3))),
    Case("perceiver_latents", lambda r, d: ({"latents": _n(r, d, 2, 4), "wq": _n(r, d, 4, 4, scale=0.5),
                                             "wk": _n(r, d, 3, 4, scale=0.5), "wv": _n(r, d, 3, 4, scale=0.5)},
                                            _n(r, d, 5, 3)),
         (J, jr(1), gs(0), v((None, 0)), vgs((None, 0)), jp(2, (1,)))),
    Case("nerf_render", lambda r, d: (_n(r, d, 6, 4), _sorted(r, d, 6, 2.0)),
         (J, out(0, "jacrev", "(0, 1)"), out(1, "grad"), v((0, 0)), v((0, None)), jp(2))),
    Case("nerf_posenc_mlp", lambda r, d: ([{"w": _n(r, d, 14, 5, scale=0.4), "b": _n(r, d, 5, scale=0.1)},
                                           {"w": _n(r, d, 5, 3, scale=0.4), "b": _n(r, d, 3, scale=0.1)}],
                                          _u(r, d, -1.0, 1.0, 4, 2)),
         (J, jr(1), gs(0), v((None, 0)), v(([{"w": 0, "b": None}, None], None)), jp(2, (1,)))),
    Case("ebm_langevin", lambda r, d: (_mlp(r, d), _u(r, d, -0.8, 0.8, 3, 2), _n(r, d, 3, 3, 2)),
         (J, G, g(1), v((None, 0, 0)), vg((None, 0, 0)), jp(3, (1, 2))),
         fd=False),  # (the samples are held out of the gradient: finite differences see them move)
    # optax
    Case("adan_step", _adan, (J, out(0, "jacrev", "(0, 1)"), v((0, 0, 0, 0, 0, 0)), v((None, 0, 0, None, None, None)))),
    Case("sophia_step", _sophia, (J, out(0, "jacrev", 1), v((None, 0, 0, 0, None, None)), v((0, None, None, None, 0, 0)),
                                  jp(6, (1, 2)))),
    Case("sam_step", lambda r, d: (_mlp(r, d), _n(r, d, 4, 2), _n(r, d, 4)),
         (J, JR, v((None, 0, 0)), v((0, None, None)), jp(3, (1, 2)))),
    Case("agc_clip", lambda r, d: (_like(r, d, _sgd_params(r, d), 0.1), _sgd_params(r, d)),
         (J, JR, jf(1), v((0, 0)), v((0, None)), v((None, 0), out="1"))),
    Case("lars_update", lambda r, d: (_sgd_params(r, d), _like(r, d, _sgd_params(r, d)), _like(r, d, _sgd_params(r, d))),
         (J, jr("(0, 1)"), v((0, 0, 0)), v((None, 0, None)))),
    Case("novograd_step", _novograd, (J, out(0, "jacrev", "(0, 1)"), v((0, 0, 0, 0, 0)),
                                      v((None, 0, None, None, None)))),
    Case("sgdr_schedule", lambda r, d: (np.array(r.uniform(0.0, 27.0), d),), (J, G, H, v((0,)), jp(1))),
    Case("schedule_free_sgd", lambda r, d: (_mlp(r, d), _n(r, d, 3, 4, 2), _n(r, d, 3, 4)),
         (J, G, g(1), v((None, 0, 0)), vg((None, 0, 0)))),
    Case("accumulate_every_k", lambda r, d: (_mlp(r, d), _n(r, d, 4, 4, 2), _n(r, d, 4, 4)),
         (J, JR, v((None, 0, 0)), v((0, None, None)))),
    Case("ema_train_fori", lambda r, d: (_mlp(r, d), _n(r, d, 4, 2), _n(r, d, 4)),
         (J, G, v((None, 0, 0)), vg((None, 0, 0)), v((MLP_AXES, None, None)))),
    # jax-md and physics
    Case("periodic_lj", _lj, (J, G, H, v((0,)), vg((0,)), jp(1))),
    Case("fire_descent", lambda r, d: (_u(r, d, 0.0, 1.2, 3, 2),),
         (J, out(0, "grad"), out(1, "jacfwd"), v((0,)), jp(1))),
    Case("baoab_langevin", lambda r, d: (_n(r, d, 3), _n(r, d, 3), _n(r, d, 4, 3)),
         (J, out(0, "jacrev", "(0, 1, 2)"), v((0, 0, 0)), v((None, None, 0)), jp(3))),
    Case("gray_scott", lambda r, d: (1.0 - _u(r, d, 0.0, 0.3, 5, 5), _u(r, d, 0.0, 0.3, 5, 5)),
         (J, out(0, "grad", "(0, 1)"), out(1, "jacfwd"), v((0, 0)), v((2, None)), jp(2))),
    Case("heat_2d_interior", lambda r, d: (_n(r, d, 5, 5),), (J, JF, JR, v((0,)), v((1,)), jp(1))),
    Case("cloth_springs", _cloth, (J, out(0, "jacrev", "(0, 1)"), out(1, "grad"), v((0, None)), v((0, 0)), jp(2))),
    Case("nbody_loops", lambda r, d: (_n(r, d, 3, 2), _n(r, d, 3, 2, scale=0.3), _u(r, d, 0.5, 1.5, 3)),
         (J, out(1, "grad", "(0, 1, 2)"), out(0, "jacfwd"), v((0, 0, None)), v((None, None, 0)), jp(3))),
    Case("lnn_accel", lambda r, d: (_n(r, d, 2, scale=0.5), _n(r, d, 2, scale=0.5)),
         (J, jf("(0, 1)"), jr(0), v((0, 0)), v((0, None)), jp(2))),
    Case("lnn_rollout", lambda r, d: (_n(r, d, 4, scale=0.5),), (J, JF, v((0,)), jp(1))),
    Case("hnn_loss", lambda r, d: ({"w1": _n(r, d, 2, 5, scale=0.7), "b1": _n(r, d, 5, scale=0.1),
                                    "w2": _n(r, d, 5, scale=0.7)}, _n(r, d, 6, 2), _n(r, d, 6, 2)),
         (J, G, g(1), v((None, 0, 0)), vg((None, 0, 0)), jp(3, (1, 2)))),
    Case("orbit_until_crossing", lambda r, d: (_u(r, d, 0.05, 0.1), _u(r, d, 0.9, 1.1)),
         (J, jf("(0, 1)"), v((0, 0)), v((None, 0)))),
    Case("shallow_water_lf", lambda r, d: (1.0 + _n(r, d, 6, scale=0.1), _n(r, d, 6, scale=0.1)),
         (J, out(0, "jacrev", "(0, 1)"), out(1, "jacfwd"), v((0, 0)), v((0, None)), jp(2))),
    # probabilistic programs
    Case("gmm_logdensity", lambda r, d: (_n(r, d, 8), _n(r, d, 3), _n(r, d, 3), _n(r, d, 3, scale=0.3)),
         (J, g("(0, 1, 2, 3)"), h(2), v((0, None, None, None)), v((None, 0, 0, 0)), vg((0, None, None, None), 1),
          jp(4))),
    Case("banana_hmc", lambda r, d: (_n(r, d, 2), _n(r, d, 3, 2), np.log(_u(r, d, 0.01, 1.0, 3))),
         (J, out(0, "jacrev", "(0, 1)"), v((0, 0, 0)), v((None, None, 0)), jp(3, (0, 1)))),
    Case("bayes_logreg_elbo", lambda r, d: (_n(r, d, 3, scale=0.3), _n(r, d, 3, scale=0.3) - 1.0, _n(r, d, 4, 3),
                                            _n(r, d, 6, 3), _bits(r, d, 6)),
         (J, g("(0, 1)"), h(0), v((0, 0, None, None, None)), vg((None, None, 0, None, None)), jp(5, (0, 1, 2)))),
    Case("svgd_step", lambda r, d: (_n(r, d, 5, 2),), (J, JF, JR, v((0,)), v((1,)), jp(1))),
    Case("ais_log_weights", lambda r, d: (_n(r, d, 6), _n(r, d, 4, 6), np.log(_u(r, d, 0.01, 1.0, 4, 6))),
         (J, out(0, "jacrev", "(0, 1)"), v((0, 0, 0)), v((None, 0, None)), jp(3, (0, 1)))),
    Case("mdn_nll", lambda r, d: ({"w": _n(r, d, 2, 4), "b": _n(r, d, 4, scale=0.1), "head": _n(r, d, 4, 9, scale=0.5)},
                                  _n(r, d, 6, 2), _n(r, d, 6)),
         (J, G, g(2), v((None, 0, 0)), vg((None, 0, 0)), jp(3, (1, 2)))),
    Case("horseshoe_logdensity", lambda r, d: (_n(r, d, 7, scale=0.5), _n(r, d, 5, 3), _n(r, d, 5)),
         (J, G, H, v((0, None, None)), vg((0, 0, 0)), jp(3, (0,)))),
    Case("rts_smoother", lambda r, d: (_n(r, d, 6),), (J, JF, JR, v((0,)), v((1,), out="1"), jp(1))),
    Case("batch_renorm", lambda r, d: (_n(r, d, 6, 3), 1.0 + _n(r, d, 3, scale=0.1), _n(r, d, 3, scale=0.1),
                                       _n(r, d, 3, scale=0.3), _u(r, d, 0.7, 1.3, 3)),
         (J, jr("(0, 1)"), gs("(0, 3)"), v((0, None, None, None, None)), v((None, 0, 0, 0, 0)), jp(5, (0, 1, 2))),
         fd=False),
    Case("adain", lambda r, d: (_n(r, d, 4, 4, 3), _n(r, d, 4, 4, 3)), (J, JF, jr(1), v((0, 0)), v((3, None)), jp(2))),
    Case("weight_norm_dense", lambda r, d: (_n(r, d, 3, 4), 1.0 + _n(r, d, 4, scale=0.1), _n(r, d, 4, scale=0.1),
                                            _n(r, d, 5, 3)),
         (J, jr("(0, 1)"), gs("(0, 1, 2)"), v((None, None, None, 0)), v((0, 0, None, None)), jp(4))),
    # losses
    Case("clip_loss", lambda r, d: (_n(r, d, 4, 3), _n(r, d, 4, 3), _u(r, d, 1.5, 3.0)),
         (J, g("(0, 1, 2)"), h(2), v((0, 0, None)), vg((None, None, 0)), jp(3))),
    Case("supcon_loss", lambda r, d: (_n(r, d, 6, 3), np.array([0, 1, 2, 0, 1, 1])),
         (J, G, v((0, None)), vg((0, None)), jp(2, (0,)))),
    Case("lovasz_hinge", lambda r, d: (_n(r, d, 6), _bits(r, d, 6)), (J, G, v((0, 0)), vg((0, None)), jp(2, (0,)))),
    Case("quantile_huber", lambda r, d: (_n(r, d, 5), _n(r, d, 4)),
         (J, g("(0, 1)"), v((0, 0)), v((None, 0)), vg((0, 0)), jp(2))),
    Case("wing_loss", lambda r, d: (_n(r, d, 5), _n(r, d, 5)), (J, G, H, v((0, 0)), vg((0, None)), jp(2))),
    Case("tversky_poly", lambda r, d: (_u(r, d, 0.05, 0.95, 6), _bits(r, d, 6)),
         (J, G, H, v((0, 0)), vg((0, None)), jp(2, (0,)))),
    Case("charbonnier_emd", lambda r, d: (_u(r, d, 0.1, 1.0, 5), _u(r, d, 0.1, 1.0, 5)),
         (J, g("(0, 1)"), v((0, 0)), v((None, 0)), jp(2))),
    # ODE solvers
    Case("rk4_dict_state", lambda r, d: ({"r": _u(r, d, 1.1, 1.3), "th": _u(r, d, 0.2, 0.4),
                                          "pr": _n(r, d, scale=0.1), "pth": _n(r, d, scale=0.1)},
                                         {"k": _u(r, d, 4.0, 6.0), "c": _u(r, d, 0.05, 0.15)}),
         (J, out(0, "grad", "(0, 1)"), out(1, "jacfwd", 0), v(({"r": 0, "th": 0, "pr": None, "pth": None}, None)),
          v((None, {"k": 0, "c": None})))),
    Case("dopri5_adaptive", lambda r, d: (_n(r, d, 3), _u(r, d, 0.5, 2.0)),
         (J, jf("(0, 1)"), v((0, None)), v((None, 0)), v((0, 0)), jp(2))),
    Case("neural_ode_zip", lambda r, d: ({"w": _n(r, d, 2, 4, scale=0.5), "b": _n(r, d, 4, scale=0.1),
                                          "v": _n(r, d, 4, 2, scale=0.5)}, _n(r, d, 2), _sorted(r, d, 5)),
         (J, jr("(0, 1)"), jf(2), v((None, 0, None)), v((None, None, 0)), v((None, 0, 0)), jp(3, (1, 2)))),
    Case("implicit_midpoint", lambda r, d: (_n(r, d, 2, scale=0.5), _u(r, d, 0.8, 1.5)),
         (J, jf("(0, 1)"), jr(0), v((0, None)), v((0, 0)), jp(2))),
    Case("leapfrog_hamiltonian", lambda r, d: (_n(r, d, 3), _n(r, d, 3), _u(r, d, 0.8, 1.5)),
         (J, out(1, "grad", "(0, 1, 2)"), out(0, "jacrev", 1), v((0, 0, None)), v((None, None, 0)), jp(3))),
    # per-example gradients and Jacobians
    Case("gradient_noise_scale", lambda r, d: (_mlp(r, d, o=1), _n(r, d, 5, 2), _n(r, d, 5, 1)),
         (J, G, v((None, 0, 0)), v((MLP_AXES, None, None)), jp(3, (1,)))),
    Case("influence_scores", lambda r, d: (_mlp(r, d, o=1), _n(r, d, 5, 2), _n(r, d, 5, 1), _n(r, d, 2), _n(r, d, 1)),
         (J, jr(0), jf(3), v((None, None, None, 0, 0)), v((0, None, None, None, None)), jp(5, (3,)))),
    Case("empirical_ntk", lambda r, d: (_mlp(r, d, o=2), _n(r, d, 3, 2), _n(r, d, 2, 2)),
         (J, jr(1), v((None, 0, 0)), v((None, None, 0), out="1"), jp(3, (1, 2)))),
    Case("hutchinson_trace", lambda r, d: (lambda p: (p, _n(r, d, 4, 2), _n(r, d, 4, 1), _probes(r, d, p)))(
        _mlp(r, d, o=1)),
         (J, G, v((None, 0, 0, None)), v((0, None, None, None)), jp(4, (1,)))),
    Case("flow_logdet_jacfwd", lambda r, d: (_n(r, d, 3), _n(r, d, 3, 3, scale=0.5), _n(r, d, 3, scale=0.1)),
         (J, G, g("(1, 2)"), v((0, None, None)), vg((0, None, None)), jp(3))),
    Case("jacobian_penalty", lambda r, d: (_mlp(r, d, o=2), _n(r, d, 4, 2)),
         (J, G, v((None, 0)), vg((0, None)), jp(2, (1,)))),
    Case("r1_penalty", lambda r, d: (_mlp(r, d), _n(r, d, 4, 2)), (J, G, v((None, 0)), vg((None, 0)), jp(2, (1,)))),
    # programs written to be vmapped
    Case("weighted_histogram", lambda r, d: (_u(r, d, -2.5, 2.5, 6), _n(r, d, 6)),
         (J, jr(1), v((0, 0)), v((0, None)), v((None, 0)), jp(2, (1,)))),
    Case("bubble_swaps", lambda r, d: (_n(r, d, 5),), (J, JF, JR, v((0,)), v((1,), out="1"), jp(1))),
    Case("viterbi_backtrace", _hmm, (J, out(1, "grad", "(0, 1, 2)"), out(1, "jacfwd", 1), v((0, 0, 0)),
                                     v((None, 0, None)), nested((None, 0, None), (0, None, None)))),
    Case("ring_buffer", lambda r, d: (_n(r, d, 4, 3), _n(r, d, 3), np.array(r.integers(0, 8))),
         (J, out(0, "jacrev", "(0, 1)"), out(1, "grad", 1), v((None, 0, 0)), v((0, 0, 0)), v((None, None, 0)),
          jp(3, (0, 1)))),
    Case("kmeans_inplace", lambda r, d: (_n(r, d, 8, 2), _n(r, d, 3, 2)),
         (J, jr(0), v((0, None)), v((None, 0)), v((0, 0)), jp(2))),
    Case("euclid_gcd", lambda r, d: (np.array(r.integers(1, 40)), np.array(r.integers(1, 40))),
         (J, v((0, 0)), v((0, None)), nested((None, 0), (0, None)))),
    Case("thermostat_fsm", lambda r, d: (20.0 + _n(r, d, 6, scale=2.0),
                                         {"on": _bits(r, d), "energy": _u(r, d, 0.0, 1.0),
                                          "power": _u(r, d, 0.5, 1.5)}),
         (J, jr(1), v((0, None)), v((None, {"on": 0, "energy": None, "power": 0})))),
    Case("argmax_row_update", lambda r, d: (_n(r, d, 4, 3), _n(r, d, 3)),
         (J, jr("(0, 1)"), v((0, 0)), v((None, 0)), v((1, None), out="2"), jp(2))),
    Case("running_extremes", lambda r, d: (_n(r, d, 6),), (J, out(0, "grad"), v((0,)), v((1,)))),
    Case("clipped_scatter_add", lambda r, d: (_n(r, d, 5, 3), np.array([0, 3, 3, 1]), _n(r, d, 4, 3)),
         (J, jr("(0, 2)"), v((None, 0, 0)), v((0, None, None)), v((0, 0, 0)), jp(3, (0, 2)))),
    Case("topk_inplace_mask", lambda r, d: (_n(r, d, 6),), (J, JR, v((0,)), nested((0,), (1,)), jp(1))),
    Case("while_until_norm", lambda r, d: (_n(r, d, 3),), (J, out(0, "jacfwd"), v((0,)), v((1,)))),
)

# float32 programs whose NumPy result is float64 (NumPy 2 promotes float32 with a float64 NumPy scalar or array
# made from Python numbers: `np.sqrt(d_k)`, `np.log(2 * np.pi)`, `np.arange(T) / d`, `np.zeros(n)`, `np.eye(n)`;
# jax keeps float32): srcjax's dtypes are NumPy's there, so they are not compared with jax's
F64_FROM_NUMPY = ("sinusoidal_encoding", "neox_rotary", "sst2_masked_lstm", "mixer_block", "kv_cache_decode",
                  "sliding_window_attention", "blockwise_softmax_attention", "perceiver_latents", "nerf_render",
                  "sgdr_schedule", "fire_descent", "baoab_langevin", "nbody_loops", "gmm_logdensity", "banana_hmc",
                  "bayes_logreg_elbo", "svgd_step", "ais_log_weights", "mdn_nll", "supcon_loss", "quantile_huber",
                  "wing_loss", "weighted_histogram", "ring_buffer", "topk_inplace_mask")
CASES = tuple(_spelled(c if c.name not in F64_FROM_NUMPY or c.numpy_dtypes else
                       c._replace(numpy_dtypes="a float64 NumPy value made from Python numbers (F64_FROM_NUMPY)"))
              for c in CASES)

DEFAULT_CASES = ("kv_cache_decode", "neural_ode_zip", "viterbi_backtrace")

CORPUS = VmapCorpus(hp, CASES, "hunt22_check_", known_refusals=JAX_REFUSES + KNOWN_REFUSALS,
                    known_internal=KNOWN_INTERNAL, known_wrong=KNOWN_WRONG)

test_hunt22_program, test_hunt22_program_thorough = CORPUS.tests(DEFAULT_CASES)

if __name__ == "__main__":
    CORPUS.main(sys.argv[1:])


# -- regressions found by the corpus ------------------------------------------------------------------------------

def _agree(got: Any, want: Any, rtol: float = 1e-10) -> None:
    got_leaves, want_leaves = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g_, w in zip(got_leaves, want_leaves):
        assert np.shape(g_) == np.shape(w)
        np.testing.assert_allclose(np.asarray(g_), np.asarray(w), rtol=rtol, atol=1e-12)


def _moment(m: Any, g: Any) -> Any:
    return {k: 0.9 * m[k] + 0.1 * g[k] for k in g}


def _moment_by_loop(m: Any, g: Any) -> Any:
    out = {}
    for k in g:
        out[k] = 0.9 * m[k] + 0.1 * g[k]
    return out


def _scaled_by_loop(m: Any, g: Any) -> Any:
    out = {}
    for k in g:
        out[k] = m[k] * 2.0
    return out


def _debiased_ema(p: Any, x: Any) -> Any:
    def body(i: Any, carry: Any) -> Any:
        a, ema = carry
        a = {k: a[k] * x for k in a}
        return a, {k: 0.5 * ema[k] + a[k] for k in a}

    _, ema = srcjax.lax.fori_loop(0, 2, body, (p, {k: np.zeros_like(w) for k, w in p.items()}))
    return {k: ema[k] / (1 - 0.5 ** 2) for k in ema}


def test_vmap_of_a_loop_over_a_dicts_keys_indexing_other_dicts() -> None:
    """Silently wrong or refused before (hunt22's adan_step, sophia_step, agc_clip, ema_train_fori: optax's
    ``{k: b1 * m[k] + (1 - b1) * g[k] for k in g}`` with the gradients mapped and the moments not): a loop over a
    dict mapped whole that the function never indexed by a string was read as a loop over a batched array's rows,
    its key a mapped value: ``m[k]`` of the unmapped ``m`` read as mapped (a ShapeError, "(2, 1) and (3, 2)"), or,
    with nothing mapped read, the results returned without their batch axis (shapes (2,) and (3, 2) for (3, 2)
    and (3, 3, 2)); a dict a ``fori_loop`` returned was walked by position (``KeyError: 0``). A loop whose body
    indexes by the loop's name the dict it runs over, or another dict, runs over the keys."""
    r = np.random.default_rng(0)
    m = {"w": r.standard_normal((3, 2)), "b": r.standard_normal(2)}
    g = {"w": r.standard_normal((4, 3, 2)), "b": r.standard_normal((4, 2))}
    for fn in (_moment, _moment_by_loop, _scaled_by_loop):
        want = jax.vmap(fn, in_axes=(None, 0))(m, g)
        _agree(srcjax.vmap(fn, in_axes=(None, 0))(m, g), want)
        _agree(srcjax.vmap(fn, in_axes=(0, None))(g, m), jax.vmap(fn, in_axes=(0, None))(g, m))
    p, x = {"w": r.standard_normal(2), "b": r.standard_normal(3)}, r.standard_normal(4)
    _agree(srcjax.vmap(_debiased_ema, in_axes=(None, 0))(p, x), jax.vmap(_debiased_ema, in_axes=(None, 0))(p, x))


def _field_energy(w: Any, x: Any) -> Any:
    def H(z: Any) -> Any:
        return np.sum(np.tanh(z * w))

    return np.sum(srcjax.vmap(srcjax.grad(H))(x) ** 2)


def _field_energy_jax(w: Any, x: Any) -> Any:
    def H(z: Any) -> Any:
        return jax.numpy.sum(jax.numpy.tanh(z * w))

    return jax.numpy.sum(jax.vmap(jax.grad(H))(x) ** 2)


def _r1(p: Any, real: Any) -> Any:
    def D(x: Any) -> Any:
        return np.sum(np.tanh(x @ p["w1"] + p["b1"]) @ p["w2"])

    return np.mean(np.sum(srcjax.vmap(srcjax.grad(D))(real) ** 2, axis=1))


def _r1_jax(p: Any, real: Any) -> Any:
    def D(x: Any) -> Any:
        return jax.numpy.sum(jax.numpy.tanh(x @ p["w1"] + p["b1"]) @ p["w2"])

    return jax.numpy.mean(jax.numpy.sum(jax.vmap(jax.grad(D))(real) ** 2, axis=1))


def test_vmap_of_grad_of_a_program_with_vmap_of_grad_inside() -> None:
    """An internal error before (hunt22's hnn_loss, jacobian_penalty, r1_penalty: Hamiltonian neural networks'
    ``vmap(grad(H))(x)`` in a loss, per-example gradients of that loss by ``vmap(grad(loss))``): "a loop over
    'range(loop_count)' runs a different number of times per example", located in srcjax's own helper
    (``batch_unbroadcast``'s loop over a tree's levels, whose count its tape holds), or, with a bias broadcast
    (R1's discriminator over a dict), "an `if` condition: cannot take the truth value of array([False, ...])". The
    counts and tests of derivatives' and vmap's own helpers are the same in every example: read once for all."""
    r = np.random.default_rng(0)
    w, x = r.standard_normal(2), r.standard_normal((3, 4, 2))
    _agree(srcjax.vmap(srcjax.grad(_field_energy), in_axes=(None, 0))(w, x),
           jax.vmap(jax.grad(_field_energy_jax), in_axes=(None, 0))(w, x))
    W = r.standard_normal((3, 2))
    _agree(srcjax.vmap(srcjax.grad(_field_energy))(W, x), jax.vmap(jax.grad(_field_energy_jax))(W, x))
    p = {"w1": r.standard_normal((2, 3)), "b1": r.standard_normal(3), "w2": r.standard_normal(3)}
    _agree(srcjax.vmap(srcjax.grad(_r1), in_axes=(None, 0))(p, x), jax.vmap(jax.grad(_r1_jax), in_axes=(None, 0))(p, x))


def _heater(temps: Any, state: Any) -> Any:
    s = dict(state)
    if temps[0] > 0.0:
        s["e"] = s["e"] + s["p"]
    return s


def _heater_loop(temps: Any, state: Any) -> Any:
    s = dict(state)
    for t in range(temps.shape[0]):
        if temps[t] > 0.0:
            s["e"] = s["e"] + s["p"]
    return s


def test_vmap_of_an_if_on_data_updating_an_unmapped_dict() -> None:
    """Refused before (hunt22's thermostat_fsm, a state machine over readings: ``s = dict(state)`` then
    ``if temps[t] > 0: s["e"] = s["e"] + s["p"]`` with ``temps`` mapped): the unmapped dict the branch leaves as
    it is was broadcast whole as an array operand (``batch_broadcast(s)``: "a test of shape (2,) does not lead a
    value of shape ()"), and in a loop the join selected it whole (``batch_select``: "cannot use a value of type
    dict"); ``dict(state)`` of a dict mapped in part was refused ("cannot batch 'dict(state)'"). A dict the
    function shows is broadcast and selected item by item, and its copy keeps its items' states."""
    T = np.array([[1.0, -1.0, 2.0], [-1.0, -2.0, 3.0]])
    st = {"e": np.array(0.0), "p": np.array(1.5)}
    for fn in (_heater, _heater_loop):
        want = {k: np.stack([fn(t, st)[k] for t in T]) for k in st}
        _agree(srcjax.vmap(fn, in_axes=(0, None))(T, st), want)
        _agree(srcjax.vmap(fn, in_axes=(0, {"e": None, "p": 0}))(T, {"e": st["e"], "p": np.array([1.5, 2.0])}),
               {k: np.stack([fn(t, {"e": st["e"], "p": p})[k] for t, p in zip(T, (1.5, 2.0))]) for k in st})


def test_vmap_of_per_example_gradients_with_the_parameters_mapped_in_part() -> None:
    """An internal error before (hunt22's gradient_noise_scale under ``vmap(in_axes=({'w1': 0, 'b1': None, 'w2':
    None}, None, None))``: the program's own ``vmap(grad(loss), in_axes=(None, 0, 0))`` batched again): the
    cotangent's dict, mapped in part, was read by a key known only when it runs (``tree_get(x, k)`` in the loop of
    ``batch_broadcast_items`` over its keys) as mapped at every leaf, so its unmapped leaf's first axis was taken
    for the batch ("could not be broadcast together with shapes (3, 5, 1) and (3, 5, 3, 1)" where the sizes agree).
    Such a read is of the dict made mapped at every leaf."""
    r = np.random.default_rng(1)
    axes = ({"w1": 0, "b1": None, "w2": None}, None, None)
    for hidden in (3, 4):
        p = {"w1": r.standard_normal((3, 2, hidden)), "b1": r.standard_normal(hidden),
             "w2": r.standard_normal((hidden, 1))}
        X, Y = r.standard_normal((5, 2)), r.standard_normal((5, 1))
        want = [hp.gradient_noise_scale({"w1": w1, "b1": p["b1"], "w2": p["w2"]}, X, Y) for w1 in p["w1"]]
        _agree(srcjax.vmap(hp.gradient_noise_scale, in_axes=axes)(p, X, Y), np.array(want), rtol=1e-9)


_TABLE = [[], [0.5], [0.25, 0.25]]


def _ragged_stages(y: Any, k: Any) -> Any:
    t = 0.0 * k
    while t < 1.0:
        ks = []
        for i in range(3):
            yi = y
            for j in range(len(_TABLE[i])):
                yi = yi + 0.1 * _TABLE[i][j] * ks[j]
            ks.append(-k * yi + np.sin(yi))
        y = y + 0.1 * sum(ks)
        t = t + 0.3 * k
    return y


def test_a_static_loop_in_a_while_on_data_keeps_its_counter_static() -> None:
    """Refused before (hunt22's dopri5_adaptive, a Butcher tableau's ragged rows in a `while` on the time): "reads
    with the index of a loop whose bound is computed from array data". Binding times took every name the body of a
    `while` on data binds for data, `for i in range(7)`'s counter and `len(DP_A[i])` too; a name that the loop's own
    body binds alone (a `for` target, a statement of the body) and reads alone holds the same value at every pass."""
    y, k = np.array([0.3, -0.2]), np.array(0.7)
    _agree(srcjax.jit(_ragged_stages)(y, k), _ragged_stages(y, k), rtol=1e-12)
    eps = 1e-6
    fd = np.stack([(_ragged_stages(y + eps * e, k) - _ragged_stages(y - eps * e, k)) / (2 * eps) for e in np.eye(2)],
                  axis=1)
    np.testing.assert_allclose(np.asarray(srcjax.jacfwd(_ragged_stages)(y, k)), fd, rtol=1e-6, atol=1e-9)
    ks = np.array([0.5, 0.7, 0.9])
    _agree(srcjax.vmap(_ragged_stages, in_axes=(None, 0))(y, ks), np.stack([_ragged_stages(y, q) for q in ks]),
           rtol=1e-12)


def _mixed_paths(x: Any) -> Any:
    z = np.zeros(2)  # (float64: NumPy's)
    if np.sum(x) > 0:
        z = x * 2.0
    return z


def test_derivative_code_s_names_of_two_dtypes_after_an_if_on_data_are_refused_where_read() -> None:
    """Refused before (hunt22's nbody_loops under grad at float32, "`add_1_bar` is float32 and float64 on different
    paths" at `if i != j`): the cotangents reverse mode binds in a branch on a test the tape holds (the steps' loop
    rolled) change dtype where `ai = np.zeros(2)` (float64) is added to float32 forces, and are read in that branch
    alone; the branches' join refused them. In derivative code srcjax wrote, such a name is an error where it is read
    after the `if`; in the user's code the error stays at the `if`."""
    r = np.random.default_rng(0)
    d = np.float32
    pos, vel = r.standard_normal((3, 2)).astype(d), (0.3 * r.standard_normal((3, 2))).astype(d)
    m = r.uniform(0.5, 1.5, 3).astype(d)
    got = srcjax.grad(lambda p, v, w: hp.nbody_loops(p, v, w)[1], argnums=(0, 1, 2))(pos, vel, m)
    args = tuple(a.astype(np.float64) for a in (pos, vel, m))
    want = [central_fd(lambda p, v, w: hp.nbody_loops(p, v, w)[1], args, i) for i in range(3)]
    for g_, w in zip(got, want):
        assert np.asarray(g_).dtype == d
        np.testing.assert_allclose(np.asarray(g_), np.asarray(w), rtol=2e-3, atol=1e-4)
    with pytest.raises(srcjax.TranspileError, match="float32 and float64 on different paths") as e:
        srcjax.jit(_mixed_paths)(np.ones(2, np.float32))
    assert "if np.sum(x) > 0" in str(e.value)
