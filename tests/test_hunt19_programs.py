"""tests/hunt19_programs.py's programs (jax's lax_control_flow_test and lax_numpy_test, optax's update rules,
schedules and losses, example_libraries' stax and optimizers) under the transformations their users apply (jit,
grad, value_and_grad, jvp, jacfwd, jacrev, hessian, vmap, vmap(grad), grad of a vmap), run by
``tests/vmap_corpus.py``: against jax over the module's text, the NumPy stand-in (the user's function run by NumPy,
a loop over the examples for vmap, finite differences for derivatives) and the generated source run by NumPy.

The default run checks ``DEFAULT_CASES`` at float64; ``SRCJAX_HYPOTHESIS=thorough`` every check at float64 and
float32. ``python -m tests.test_hunt19_programs [NAME ...] [--f64|--f32]`` runs the corpus (or the cases named)
and prints the counts and every failure.
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

import numpy as np
import pytest

import srcjax

from . import hunt19_programs as hp
from .vmap_corpus import Case, VmapCorpus, gv, jp, jv, v

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

# Refusals met where jax refuses too (reported; located at the user's line with a hint)
JAX_REFUSES: tuple[str, ...] = (
    # a while_loop under reverse mode (jax: "Reverse-mode differentiation does not work for lax.while_loop")
    "needs a bound on its iterations",
)
# Refusals met where jax runs the program (each with a reason)
KNOWN_REFUSALS: tuple[str, ...] = (
    # stax_mlp_loss, residual_block, fan_in_concat, stax_init_then_apply: stax's serial/parallel combinators made at
    # module level, closures over lists of other closures (`for fun, p in zip(applies, params): x = fun(p, x)`):
    # a function read from a captured list is opaque to the transformations
    "cannot differentiate through `fun(...)`: srcjax does not know its derivative",
    "vmap: cannot batch 'fun(p, x)'",
    "vmap: cannot batch 'init(sub, in_dim)'",
    # chained_transformations: optax's chain as a list of nested defs called through the loop variable (`for t, s
    # in zip(chain, states): u, s = t(u, s)`)
    "cannot differentiate through the nested function `clip`",
    "vmap: cannot batch 't(u, s)'",
    # clip_per_leaf_and_value under jacfwd: tree_map of a nested def of several statements (`def leaf(g): n = ...;
    # return ...`), differentiated only as a lax body (a lambda, or the def called directly, run)
    "cannot differentiate through the nested function `leaf`",
)
# Errors of srcjax's own met and not fixed yet: xfail, not hidden
KNOWN_INTERNAL: tuple[str, ...] = (
    # train_step_tuple_params under vmap(f, in_axes=(None, 0, 0)): a nested def called with unmapped parameters
    # (through value_and_grad) and with mapped ones (a list built by appends, `(W1, b1), (W2, b2) = params`): the
    # second call's b1 is read unmapped, added to the mapped product unaligned (hunt17's flat_parameter_net: the
    # same class)
    "operands could not be broadcast together with shapes (3, 5, 4) and (3, 4)",
    # stax_mlp_loss, residual_block under jit (stax's `elementwise(lambda x: ...)` made at module level: the closure's
    # captured lambda is lifted under a name the generated source does not define), stax_init_then_apply (Dense's
    # init_fun made at module level reading srcjax.random.normal): a NameError located at the user's line
    "name 'lambda_fn",
    "name 'normal' is not defined",
)
# Wrong answers met and not fixed yet: (case, check[, dtype]) -> why; xfail, not hidden
KNOWN_WRONG: dict[tuple[str, ...], str] = {}


def _n(r: np.random.Generator, d: Any, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * r.standard_normal(shape)).astype(d)


def _u(r: np.random.Generator, d: Any, lo: float, hi: float, *shape: int) -> np.ndarray:
    return r.uniform(lo, hi, shape).astype(d)


def _key(r: np.random.Generator) -> np.ndarray:
    return np.array([0, r.integers(0, 2 ** 31)], dtype=np.uint32)


def _onehot(r: np.random.Generator, d: Any, n: int, k: int) -> np.ndarray:
    return np.eye(k, dtype=d)[r.integers(0, k, n)]


def _params(r: np.random.Generator, d: Any) -> dict[str, np.ndarray]:
    return {"w": _n(r, d, 3, 2, scale=0.5), "b": _n(r, d, 2, scale=0.1)}


def _reg(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return _params(r, d), _n(r, d, 5, 3), _n(r, d, 5, 2, scale=0.5)


def _lin(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return _n(r, d, 3, scale=0.5), _n(r, d, 6, 3), _n(r, d, 6)


def _logreg(r: np.random.Generator, d: Any) -> tuple[Any, ...]:
    return _n(r, d, 3, scale=0.5), _n(r, d, 6, 3), r.integers(0, 2, 6).astype(d)


def _spd_ish(r: np.random.Generator, d: Any) -> np.ndarray:
    return (r.standard_normal((3, 3)) + 3.0 * np.eye(3)).astype(d)


def _mlp(r: np.random.Generator, d: Any) -> list[Any]:
    (W1, b1), (W2, b2) = [(_n(r, d, m, k, scale=0.5), _n(r, d, k, scale=0.1)) for m, k in ((3, 4), (4, 3))]
    return [(W1, b1), (), (W2, b2), ()]


def _grads(r: np.random.Generator, d: Any) -> dict[str, Any]:
    return {"w": _n(r, d, 3, 2), "b": [_n(r, d, 2), _n(r, d)]}


J = ("jit(f)", None)
G, VG, H, JF, JR = (("grad(f)", None), ("value_and_grad(f)", None), ("hessian(f)", None), ("jacfwd(f)", None),
                    ("jacrev(f)", None))


def g(argnums: Any) -> tuple[str, None]:
    return (f"grad(f, argnums={argnums})", None)


def vg(axes: tuple[Any, ...], argnums: int = 0) -> tuple[str, Any]:
    """``vmap(grad(f[, argnums]), in_axes=axes)``."""
    return v(axes, "grad(f)" if argnums == 0 else f"grad(f, argnums={argnums})")


CLASSES = {"Hidden": hp.Hidden, "AdamState": hp.AdamState}
Hidden = hp.Hidden  # (named in check texts)

CASES: tuple[Case, ...] = (
    # jax: lax_control_flow_test
    Case("while_count_product", lambda r, d: (_n(r, d, 3, scale=0.5),), (J, JF, v((0,)), jp(1))),
    Case("while_on_data", lambda r, d: (_u(r, d, 0.2, 1.0, 3),), (J, JF, v((0,)), v((1,)), jp(1))),
    Case("while_dict_carry", lambda r, d: (_n(r, d, 3), _u(r, d, 0.5, 1.2)),
         (J, JF, ("jacfwd(f, argnums=1)", None), v((0, None)), v((0, 0)), jp(2))),
    Case("while_newton_sqrt", lambda r, d: (_u(r, d, 0.5, 4.0),), (J, JF, v((0,)), jv((0,)), jp(1))),
    Case("while_bisection", lambda r, d: (_u(r, d, -2.0, 2.0),), (J, v((0,)), jp(1)), fd=False),
    Case("fori_dict_carry", lambda r, d: (_n(r, d, 3), _n(r, d, 3)),
         (J, g("(0, 1)"), H, v((0, None)), vg((0, 0)), jp(2))),
    Case("fori_closure_outer", lambda r, d: (_n(r, d, 3), _n(r, d, 3)),
         (J, g("(0, 1)"), ("hessian(f, argnums=1)", None), v((None, 0)), vg((0, None), 1), jp(2))),
    Case("fori_index_as_data", lambda r, d: (_n(r, d, 3),), (J, G, H, v((0,)), vg((0,)), jp(1))),
    Case("fori_nested", lambda r, d: (_n(r, d, 3),), (J, G, H, vg((0,)), jp(1))),
    Case("fori_reads_row", lambda r, d: (_n(r, d, 4, 3),), (J, G, H, v((0,)), vg((1,)))),
    Case("fori_dynamic_slice", lambda r, d: (_n(r, d, 5),), (J, JF, JR, v((0,)), jp(1))),
    Case("fori_set_items", lambda r, d: (_n(r, d, 4),), (J, JF, JR, v((0,)), jp(1))),
    Case("fori_int_and_float_carry", lambda r, d: (_n(r, d, 3),), (J, G, v((0,)), vg((0,))),
         numpy_dtypes="float32 times the int64 count `(n + 1)` is float64 in NumPy (float32 in jax)"),
    Case("fori_with_while_inside", lambda r, d: (_u(r, d, 0.3, 0.6, 2),), (J, JF, v((0,)), jp(1))),
    Case("cond_tuple_operand", lambda r, d: (_n(r, d), _n(r, d, 3), _n(r, d, 3)),
         (J, g("(1, 2)"), ("hessian(f, argnums=1)", None), v((0, 0, 0)), v((0, None, None)), vg((0, 0, 0), 1),
          jp(3, (1, 2)))),
    Case("cond_closure_over_argument", lambda r, d: (_n(r, d, 3), _n(r, d, 3)),
         (J, g("(0, 1)"), v((0, None)), v((0, 0)), vg((0, 0), 1), gv((0, None), "f"))),
    Case("cond_nested", lambda r, d: (_n(r, d, 3),), (J, JF, JR, v((0,)), jp(1))),
    Case("cond_int_predicate", lambda r, d: (np.asarray(r.integers(0, 4)), _n(r, d, 3)),
         (J, ("jacrev(f, argnums=1)", None), v((0, 0)), v((0, None)), jp(2, (1,)))),
    Case("cond_constant_branch", lambda r, d: (_n(r, d, 3),), (J, G, v((0,)), vg((0,)))),
    Case("cond_dict_operand", lambda r, d: (_n(r, d, 2), _n(r, d, 2)),
         (J, g("(0, 1)"), H, v((0, 0)), v((0, None)), vg((0, 0)))),
    Case("cond_two_operands", lambda r, d: (_n(r, d, 3), _n(r, d, 3)),
         (J, JF, ("jacrev(f, argnums=1)", None), v((0, 0)), v((None, 0)), jp(2))),
    Case("switch_tuple_out", lambda r, d: (np.asarray(r.integers(0, 3)), _n(r, d, 3), _n(r, d, 3)),
         (J, ("grad(f, argnums=(1, 2))", None), v((0, 0, 0)), v((0, None, None)), vg((0, 0, None), 1))),
    Case("switch_clamped_from_data", lambda r, d: (_n(r, d, 3),), (J, JF, JR, v((0,)), jp(1))),
    Case("switch_in_fori", lambda r, d: (_n(r, d, 3),), (J, G, H, v((0,)), vg((0,)))),
    Case("scan_dict_xs", lambda r, d: (_n(r, d, 2), _n(r, d, 4, 2), _n(r, d, 4, 2)),
         (J, g("(0, 1, 2)"), ("hessian(f, argnums=0)", None), v((0, None, None)), v((None, 1, 1)),
          vg((0, 0, 0), 2), jp(3))),
    Case("scan_reverse", lambda r, d: (_n(r, d, 4, 2),), (J, G, H, v((0,)), v((2,)), vg((0,)), jp(1))),
    Case("scan_length_only", lambda r, d: (_n(r, d, 2),), (J, G, H, v((0,)), vg((0,)), jp(1))),
    Case("scan_tuple_outputs", lambda r, d: (_n(r, d, 2), _n(r, d, 3, 2)),
         (J, g("(0, 1)"), v((0, None)), v((None, 0)), vg((0, 0), 1), jp(2))),
    Case("scan_rnn", lambda r, d: (_n(r, d, 3, 3, scale=0.5), _n(r, d, 3, 2, scale=0.5), _n(r, d, 4, 2)),
         (J, g("(0, 1)"), ("hessian(f, argnums=1)", None), v((None, None, 0)), vg((None, None, 0)),
          gv((None, None, 0), "f"), jp(3))),
    Case("scan_params_closure", lambda r, d: ({"W": _n(r, d, 3, 3, scale=0.5), "b": _n(r, d, 3), "v": _n(r, d, 3)},
                                              _n(r, d, 4)),
         (J, G, v((None, 0)), v(({"W": None, "b": 0, "v": None}, None)), vg((None, 0)))),
    Case("scan_nested", lambda r, d: (_n(r, d, 3, 2, scale=0.7),), (J, G, H, v((0,)), vg((0,)), jp(1))),
    Case("scan_unrolled", lambda r, d: (_n(r, d, 5, 2),), (J, G, v((0,)), vg((0,)), jp(1))),
    Case("scan_grad_in_body", lambda r, d: (_n(r, d, 2), _n(r, d, 3, 2)),
         (J, g("(0, 1)"), v((0, None)), vg((None, 0)), jp(2))),
    Case("scan_vmap_in_body", lambda r, d: (_n(r, d, 3), _n(r, d, 2, 3)),
         (J, g("(0, 1)"), v((0, None)), v((None, 0)), vg((0, 0)))),
    Case("scan_int_xs", lambda r, d: (_n(r, d, 4, scale=0.5), np.array([0, 2, 3, 1, 2])),
         (J, G, H, v((0, None)), v((None, 0)), vg((0, None)))),
    Case("scan_cond_in_body", lambda r, d: (_n(r, d, 4),), (J, G, JF, v((0,)), vg((0,)), jp(1))),
    Case("scan_namedtuple_carry", lambda r, d: (hp.Hidden(_n(r, d, 2), _n(r, d, 2)), _n(r, d, 3, 2)),
         (J, G, g(1), v((0, None)), v((Hidden(0, None), 0)), vg((None, 0)))),
    Case("lax_map_rows", lambda r, d: (_n(r, d, 3, 2),), (J, G, H, v((0,)), vg((1,)))),
    Case("fori_python_for_mix", lambda r, d: (_n(r, d, 3),), (J, G, H, v((0,)), vg((0,)), jp(1))),
    # jax: lax_numpy_test
    Case("polyval_trapezoid", lambda r, d: (_n(r, d, 3), np.sort(_n(r, d, 5))),
         (J, g("(0, 1)"), H, v((0, None)), vg((None, 0)), jp(2))),
    Case("cumulative_diffs", lambda r, d: (_n(r, d, 5, scale=0.5),), (J, G, H, v((0,)), vg((0,)), jp(1))),
    Case("einsum_three", lambda r, d: (_n(r, d, 2, 3), _n(r, d, 3, 4), _n(r, d, 4)),
         (J, JF, ("jacrev(f, argnums=(0, 1, 2))", None), v((0, None, None)), v((None, 2, 0)), jp(3))),
    Case("take_along_sorted", lambda r, d: (_n(r, d, 2, 4),), (J, G, v((0,)), vg((2,)), jp(1)),
         numpy_dtypes="float32 times np.arange's int64 is float64 in NumPy (float32 in jax)"),
    Case("logaddexp_hypot_arctan2", lambda r, d: (_n(r, d, 3), _u(r, d, 0.5, 1.5, 3)),
         (J, g("(0, 1)"), H, v((0, 0)), vg((0, None)), jp(2))),
    Case("tril_kron_cross", lambda r, d: (_n(r, d, 3), _n(r, d, 3)),
         (J, g("(0, 1)"), H, v((0, None)), vg((0, 0)), jp(2))),
    Case("slogdet_solve", lambda r, d: (_spd_ish(r, d), _n(r, d, 3)),
         (J, g("(0, 1)"), ("hessian(f, argnums=1)", None), v((0, None)), vg((None, 0)), jp(2))),
    Case("where_clip_var", lambda r, d: (_n(r, d, 6),), (J, G, v((0,)), vg((0,)), jp(1))),
    # optax: update rules
    Case("sgd_momentum", lambda r, d: (*_reg(r, d), np.asarray(0.1, d)),
         (J, g(0), g(3), v((None, None, None, 0)), v((None, 0, 0, None)), vg((None, None, None, 0), 3))),
    Case("sgd_nesterov", _reg, (J, v((None, 0, 0)), v(({"w": 0, "b": None}, None, None)), JR)),
    Case("adam_steps", lambda r, d: (*_reg(r, d), np.asarray(0.05, d)),
         (J, g(3), v((None, None, None, 0)), v((0, None, None, None)), vg((None, 0, 0, None), 3))),
    Case("adam_fori", _reg, (J, G, v((None, 0, 0)), v((0, None, None)))),
    Case("adamw_masked", lambda r, d: (*_reg(r, d), np.asarray(0.01, d)),
         (J, g(3), v((None, None, None, 0)), v((None, 0, 0, None)))),
    # (fd=False: the stand-in's finite differences nested twice, through adam's m / sqrt(v) and the trust ratio,
    # are 4e-3 off in one element; srcjax agrees with jax to 1e-8)
    Case("lamb_trust_ratio", _reg, (J, G, v((0, None, None)), v((None, 0, 0))), fd=False),
    Case("lion_steps", _reg, (J, v((0, None, None)), v((None, 0, 0)), g(1))),
    Case("adagrad_rmsprop", _lin, (J, G, g(1), v((0, None, None)), v((None, 0, 0)), vg((0, None, None)))),
    Case("adabelief_yogi", _lin, (J, G, v((0, None, None)), v((None, 0, 0)))),
    Case("radam_rectified", _lin, (J, G, v((0, None, None)), vg((None, 0, 0))),
         numpy_dtypes="np.sqrt of a Python float is a strong float64 NumPy scalar (weak in jax)"),
    Case("factored_second_moment", lambda r, d: (_n(r, d, 3, 4), _n(r, d, 3, 4)),
         (J, JR, ("jacfwd(f, argnums=1)", None), v((0, 0)), v((None, 0)))),
    Case("clip_by_global_norm", lambda r, d: (_grads(r, d), np.asarray(1.0, d)),
         (J, JR, ("jacfwd(f, argnums=1)", None), v((0, None)), v((None, 0)), v(({"w": 0, "b": None}, 0)))),
    Case("clip_per_leaf_and_value", lambda r, d: (_grads(r, d),), (J, JF, v((0,)))),
    Case("apply_if_finite", lambda r, d: (_grads(r, d), _grads(r, d)), (J, JR, v((0, 0)), v((None, 0)))),
    Case("ema_debiased", lambda r, d: (_n(r, d, 4, 2),), (J, G, H, v((0,)), vg((1,)), jp(1))),
    Case("cosine_warmup_schedule", lambda r, d: (np.asarray(r.integers(0, 30)), np.asarray(0.1, d)),
         (J, g(1), v((0, None)), v((0, 0)), vg((0, None), 1)),
         numpy_dtypes="float32 times the int64 step is float64 in NumPy (float32 in jax)"),
    Case("decay_schedules", lambda r, d: (np.asarray(r.integers(0, 12)), np.asarray(0.1, d)),
         (J, g(1), v((0, None)), vg((0, 0), 1)),
         numpy_dtypes="float32 times the int64 step is float64 in NumPy (float32 in jax)"),
    Case("lookahead", _lin, (J, G, v((0, None, None)), vg((None, 0, 0)))),
    Case("multi_steps_accumulate", lambda r, d: (_n(r, d, 3), _n(r, d, 4, 2, 3), _n(r, d, 4, 2)),
         (J, JR, v((0, None, None)), v((None, 0, 0)))),
    Case("chained_transformations", _reg, (J, G, v((None, 0, 0)))),
    Case("list_params_sgd", lambda r, d: ([_n(r, d, 3, 3, scale=0.5), _n(r, d, 3, 2, scale=0.5)], _n(r, d, 4, 3)),
         (J, G, g(1), v((None, 0)), v(([0, None], None)))),
    Case("tree_utilities", lambda r, d: (_grads(r, d), _grads(r, d)),
         (J, g("(0, 1)"), H, v((0, None)), vg((None, 0)))),
    Case("hyper_gradient", lambda r, d: (np.asarray(0.1, d), *_lin(r, d)),
         (J, G, H, v((0, None, None, None)), vg((0, None, None, None)), jp(4, (0,)))),
    # optax: losses
    Case("softmax_xent", lambda r, d: (_n(r, d, 4, 3), _onehot(r, d, 4, 3)),
         (J, JR, JF, v((0, 0)), v((1, None), out="1"), gv((0, 0), "f"), jp(2, (0,)))),
    Case("softmax_xent_int_labels", lambda r, d: (_n(r, d, 4, 3), r.integers(0, 3, 4)),
         (J, JR, v((0, 0)), v((None, 0)), gv((0, None), "f"))),
    Case("smoothed_label_xent", lambda r, d: (_n(r, d, 4, 3), _onehot(r, d, 4, 3)),
         (J, G, H, v((0, 0)), vg((0, None)))),
    Case("sigmoid_bce", lambda r, d: (_n(r, d, 5, scale=3.0), r.integers(0, 2, 5).astype(d)),
         (J, JR, JF, v((0, 0)), gv((0, None), "f"), jp(2, (0,)))),
    Case("sigmoid_focal", lambda r, d: (_n(r, d, 5, scale=2.0), r.integers(0, 2, 5).astype(d)),
         (J, G, H, v((0, 0)), vg((0, None)))),
    Case("huber_and_log_cosh", lambda r, d: (_n(r, d, 5, scale=2.0), _n(r, d, 5)),
         (J, g("(0, 1)"), v((0, 0)), vg((0, None)), jp(2)),
         numpy_dtypes="np.log(2.0) is a strong float64 NumPy scalar (weak in jax)"),
    Case("cosine_distance", lambda r, d: (_n(r, d, 3, 4), _n(r, d, 3, 4)),
         (J, JR, ("jacfwd(f, argnums=1)", None), v((0, 0)), v((None, 1)), jp(2))),
    Case("l2_and_squared", lambda r, d: (_n(r, d, 2, 3), _n(r, d, 2, 3)), (J, JR, v((0, 0)), jp(2))),
    Case("kl_divergence", lambda r, d: (_n(r, d, 3, 4),
                                        np.array([[0.5, 0.5, 0.0, 0.0], [0.1, 0.2, 0.3, 0.4], [0.0, 1.0, 0.0, 0.0]], d)),
         (J, JR, v((0, 0)), v((0, None)), gv((0, None), "f"))),
    Case("hinge_and_perceptron", lambda r, d: (_n(r, d, 5), r.integers(0, 2, 5).astype(d)),
         (J, G, v((0, 0)), vg((0, None)))),
    Case("ctc_like_forward", lambda r, d: (_n(r, d, 4, 3),), (J, G, H, v((0,)), vg((0,)), jp(1)),
         numpy_dtypes="np.full(1, neg) of a Python float is float64 in NumPy (weakly typed in jax)"),
    Case("losses_mean_over_batch", lambda r, d: (_n(r, d, 3, 4), _onehot(r, d, 3, 4),
                                                 r.integers(0, 2, (3, 4)).astype(d)),
         (J, G, v((0, 0, 0)), vg((0, None, None)))),
    # example_libraries: stax
    Case("stax_mlp_loss", lambda r, d: (_mlp(r, d), _n(r, d, 5, 3), _onehot(r, d, 5, 3)),
         (J, G, v((None, 0, 0)), vg((None, 0, 0)), vg(([(0, None), (), (None, None), ()], None, None)))),
    Case("stax_init_then_apply", lambda r, d: (_key(r), _n(r, d, 2, 3)),
         (J, ("jacrev(f, argnums=1)", None), v((0, None)), v((None, 0))), fd=False),
    Case("residual_block", lambda r, d: (_n(r, d, 3, 3, scale=0.5), _n(r, d, 3), _n(r, d, 2, 3)),
         (J, g("(0, 1, 2)"), H, v((None, None, 0)), vg((0, 0, None)), jp(3))),
    Case("fan_in_concat", lambda r, d: (_n(r, d, 3, 2), _n(r, d, 2), _n(r, d, 2, 3)),
         (J, JR, v((None, None, 0)), v((0, None, None)), jp(3))),
    Case("batch_norm_apply", lambda r, d: (_n(r, d, 4, 3), _u(r, d, 0.5, 1.5, 3), _n(r, d, 3)),
         (J, g("(0, 1, 2)"), H, v((0, None, None)), vg((2, 0, 0)), jp(3)), rtol32=5e-3),
    Case("avg_max_pool", lambda r, d: (_n(r, d, 4, 4),), (J, G, v((0,)), vg((2,)), jp(1))),
    Case("dropout_apply", lambda r, d: (_key(r), _n(r, d, 3, 4), _n(r, d, 4, 2)),
         (J, g(1), g(2), v((0, None, None)), v((None, 0, None))), fd=False),
    Case("conv_layer", lambda r, d: (_n(r, d, 1, 4, 4, 2), _n(r, d, 3, 3, 2, 2, scale=0.3)),
         (J, g("(0, 1)"), v((0, None)), vg((None, 0), 1)), rtol32=5e-3),
    # example_libraries: optimizers and training steps
    Case("train_sgd_python_loop", _logreg, (J, JR, v((0, None, None)), v((None, 0, 0)), jp(3, (0,)))),
    Case("train_momentum_fori", _logreg, (J, G, H, v((0, None, None)), vg((None, 0, 0)))),
    Case("train_adam_schedule", _logreg, (J, JR, v((0, None, None)), v((None, 0, 0)))),
    Case("per_example_grad_norms", _logreg, (J, JR, v((0, None, None)), jp(3, (0,)))),
    Case("per_example_clipped_mean", _logreg, (J, JF, v((None, 0, 0)))),
    Case("optimizer_schedules", lambda r, d: (np.asarray(r.integers(0, 10)), np.asarray(0.1, d)),
         (J, g(1), v((0, None)), vg((0, 0), 1)),
         numpy_dtypes="a 0-d float32 array times `0.9 ** (i / 2.0)` of a 0-d int64 array is float64 in NumPy "
                      "(0-d arrays are not weak; jax's int64 / 2.0 is weak, so float32)"),
    Case("clip_grads_tree", lambda r, d: (_grads(r, d), np.asarray(1.5, d)),
         (J, JR, v((0, None)), v((0, 0)))),
    Case("train_step_tuple_params", lambda r, d: ([(_n(r, d, 3, 4, scale=0.5), _n(r, d, 4)),
                                                   (_n(r, d, 4, 2, scale=0.5), _n(r, d, 2))], _n(r, d, 5, 3),
                                                  _n(r, d, 5, 2)),
         (J, ("grad(lambda p, x, y: f(p, x, y)[1])", None), v((None, 0, 0)))),
    Case("ensemble_predict", lambda r, d: (_n(r, d, 3, 2, 2), _n(r, d, 2)),
         (J, JR, ("jacfwd(f, argnums=1)", None), v((None, 0)), v((1, None)), jp(2))),
)

DEFAULT_CASES = ("scan_dict_xs", "adam_steps", "cond_dict_operand")

CORPUS = VmapCorpus(hp, CASES, "hunt19_check_", classes=tuple(CLASSES), known_refusals=JAX_REFUSES + KNOWN_REFUSALS,
                    known_internal=KNOWN_INTERNAL, known_wrong=KNOWN_WRONG)

test_hunt19_program, test_hunt19_program_thorough = CORPUS.tests(DEFAULT_CASES)

if __name__ == "__main__":
    CORPUS.main(sys.argv[1:])


# -- regressions found by the corpus ------------------------------------------------------------------------------

def _agree(got: Any, want: Any, rtol: float = 1e-10) -> None:
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=1e-12)


def _sum_into_zeros(p: Any, X: Any) -> Any:
    g = {"w": X * 2.0, "b": np.sin(X)}
    mu = {"w": np.zeros_like(p), "b": np.zeros_like(p)}
    mu = srcjax.tree_util.tree_map(lambda m, gi: m + gi, mu, g)
    return np.sum(mu["w"]) + np.sum(mu["b"])


def _sum_into_zeros_array(p: Any, X: Any) -> Any:
    return np.sum(srcjax.tree_util.tree_map(lambda m, gi: m + gi * gi, np.zeros_like(p), X))


def test_tree_map_whose_first_tree_is_constant() -> None:
    """Silently wrong before (hunt19's lion_steps under ``grad(f, argnums=1)``: optax's momentum ``mu =
    tree_map(lambda m, g: b * m + (1 - b) * g, mu, grads)`` with ``mu`` zeros): ``tree_map(f, a, b)`` is written
    ``from_leaves(a, [f(x, y) for x, y in zip(tree_leaves(a), leaves_like(b, a))])``, and activity did not read
    ``b`` through ``leaves_like``: with ``a`` constant the result was constant, its derivative zero, under grad,
    jacfwd, hessian and vmap(grad). ``leaves_like``/``from_leaves`` read their operands' values now."""
    p, X = np.ones(3), np.array([0.1, 0.2, 0.3])
    want = 2.0 + np.cos(X)
    _agree(srcjax.grad(_sum_into_zeros, argnums=1)(p, X), want)
    _agree(srcjax.jacfwd(_sum_into_zeros, argnums=1)(p, X), want)
    _agree(srcjax.vmap(srcjax.grad(_sum_into_zeros, argnums=1))(np.stack([p, p]), np.stack([X, -X])),
           np.stack([want, 2.0 + np.cos(-X)]))
    _agree(srcjax.hessian(_sum_into_zeros_array, argnums=1)(p, X), 2.0 * np.eye(3))


class _Count(NamedTuple):
    count: Any
    mu: Any


def _debiased_steps(w: Any, x: Any, lr: Any) -> Any:
    s = _Count(0, np.zeros_like(w))
    for _ in range(2):
        g = srcjax.grad(lambda v: np.sum((x * v) ** 2))(w)
        mu = 0.9 * s.mu + 0.1 * g
        count = s.count + 1
        s = _Count(count, mu)
        w = w - lr * mu / (1 - 0.9 ** count)
    return np.sum((x * w) ** 2)


def test_reverse_mode_through_an_integer_field_of_a_record() -> None:
    """An internal error before (hunt19's adam_steps under ``grad(f, argnums=3)``, the learning rate: optax's
    ``ScaleByAdamState(count, mu, nu)`` with an integer ``count``): "AttributeError: 'NoneType' object has no
    attribute 'shape'" at ``count = state.count + 1``. The cotangent of the record's integer field is None;
    reverse mode added the cotangent of ``0.9 ** count`` to it with ``+``. A record field's cotangent is added
    with ``tree_add`` now (None where the field is an integer)."""
    w, x = np.array([0.5, -0.3]), np.array([1.0, 2.0])

    def twin(w: Any, x: Any, lr: Any) -> Any:
        count, mu = 0, jax.numpy.zeros_like(w)
        for _ in range(2):
            g = jax.grad(lambda v: jax.numpy.sum((x * v) ** 2))(w)
            mu, count = 0.9 * mu + 0.1 * g, count + 1
            w = w - lr * mu / (1 - 0.9 ** count)
        return jax.numpy.sum((x * w) ** 2)

    _agree(srcjax.grad(_debiased_steps, argnums=2)(w, x, 0.1), jax.grad(twin, argnums=2)(w, x, 0.1))
    _agree(srcjax.grad(_debiased_steps, argnums=(0, 2))(w, x, 0.1), jax.grad(twin, argnums=(0, 2))(w, x, 0.1))


def test_branch_on_batched_data_with_a_dict_operand() -> None:
    """Refused where jax runs it (hunt19's cond_dict_operand, ``lax.cond(p[0] > p[1], f, g, {"a": x, "b": p})``):
    under ``vmap(grad)`` "cannot use a value of type dict (object) as an array" (the branch's read of the batched
    dict marked ``taken(d, test)``, a primitive of arrays; it maps over a container's leaves now; reverse mode
    over the vmap, ``grad(lambda P, X: np.sum(vmap(f)(P, X) ** 2))``, is still refused), and under ``jit(hessian)`` "TypeError: '_Unset' object is not subscriptable" (a dict bound on one path
    only broadcast item by item on the other, where it is UNSET: ``batch_broadcast_parts`` takes dicts now)."""
    twin = CORPUS.jax_twin["cond_dict_operand"]
    r = np.random.default_rng(0)
    for p in (np.array([0.3, -0.2]), np.array([-0.3, 0.2])):
        x = r.standard_normal(2)
        _agree(srcjax.jit(srcjax.hessian(hp.cond_dict_operand))(p, x), jax.hessian(twin)(p, x))
    P, X = r.standard_normal((4, 2)), r.standard_normal((4, 2))
    _agree(srcjax.vmap(srcjax.grad(hp.cond_dict_operand))(P, X), jax.vmap(jax.grad(twin))(P, X))


def _sgd_with_a_named_lambda(w: Any, X: Any, Y: Any) -> Any:
    loss = lambda w: np.mean((X @ w - Y) ** 2)  # noqa: E731
    for _ in range(2):
        w = w - 0.1 * srcjax.grad(loss)(w)
    return loss(w)


def test_a_lambda_bound_to_a_name_is_a_nested_function() -> None:
    """An internal error before under jit (hunt19's adagrad_rmsprop, lookahead, hyper_gradient: optax's and
    example_libraries' ``loss = lambda w: ...`` then ``srcjax.grad(loss)(w)``): "cannot transform <function loss>:
    it is of type LocalFunction, not a function", located in the test's own file; refused under grad ("cannot
    differentiate through the nested function `loss`") and vmap ("cannot batch 'grad(w)'"), where a nested ``def``
    ran. A lambda bound once to a name, on a line of its own, is that ``def`` now (frontend/named_lambdas.py)."""
    r = np.random.default_rng(0)
    w, X, Y = r.standard_normal(3), r.standard_normal((6, 3)), r.standard_normal(6)

    def twin(w: Any, X: Any, Y: Any) -> Any:
        loss = lambda w: jax.numpy.mean((X @ w - Y) ** 2)  # noqa: E731
        for _ in range(2):
            w = w - 0.1 * jax.grad(loss)(w)
        return loss(w)

    _agree(srcjax.jit(_sgd_with_a_named_lambda)(w, X, Y), _sgd_with_a_named_lambda(w, X, Y))
    _agree(srcjax.grad(_sgd_with_a_named_lambda, argnums=(0, 1))(w, X, Y), jax.grad(twin, argnums=(0, 1))(w, X, Y))
    Xs, Ys = r.standard_normal((3, 6, 3)), r.standard_normal((3, 6))
    _agree(srcjax.vmap(srcjax.grad(_sgd_with_a_named_lambda), in_axes=(None, 0, 0))(w, Xs, Ys),
           jax.vmap(jax.grad(twin), in_axes=(None, 0, 0))(w, Xs, Ys))


def test_unmapped_dict_parameters_carried_by_a_loop_that_batches_them() -> None:
    """Refused where jax runs it (hunt19's adam_steps and sgd_momentum under ``vmap(grad(f, argnums=3), in_axes=
    (None, 0, 0, None))``: dict parameters updated by ``tree_map`` in a Python loop, at mapped data): "matmul: inner
    dimensions do not match ... (3, 5, 3) ... (3, 2, 1)". The loop carries the parameters batched, so vmap broadcast
    the unmapped dict on entry with ``batch_broadcast``, an array's (it did not know the parameter holds a dict):
    a container is broadcast leaf by leaf there now (``batch_broadcast_items``)."""
    c = CORPUS.by_name["sgd_momentum"]
    for name in ("sgd_momentum", "adam_steps"):
        assert CORPUS.run(name, "vmap(grad(f, argnums=3), in_axes=(None, 0, 0, None))" if name == "adam_steps"
                          else "vmap(grad(f, argnums=3), in_axes=(None, None, None, 0))", "float64").status == "ok"
    assert c.name == "sgd_momentum"


def test_scan_takes_unroll() -> None:
    """Refused before (hunt19's scan_unrolled, ``lax.scan(step, c, xs, unroll=2)``, jax's lax_control_flow_test):
    "srcjax.lax.scan() got an unexpected or repeated argument 'unroll'". Accepted now, left to XLA (the values are
    the same)."""
    xs = np.random.default_rng(0).standard_normal((5, 2))
    twin = CORPUS.jax_twin["scan_unrolled"]
    _agree(srcjax.jit(hp.scan_unrolled)(xs), twin(xs))
    _agree(srcjax.grad(hp.scan_unrolled)(xs), jax.grad(twin)(xs))
    _agree(srcjax.lax.scan(lambda c, x: (c + x, c * x), 0.0, xs[:, 0], unroll=2), hp.lax.scan(
        lambda c, x: (c + x, c * x), 0.0, xs[:, 0]))


def _global_norm_by_vdot(grads: Any) -> Any:
    return np.sqrt(sum(np.vdot(g, g) for g in srcjax.tree_util.tree_leaves(grads)))


def test_a_composite_numpy_function_in_a_comprehension() -> None:
    """Refused where NumPy and jax run it (hunt19's clip_grads_tree, example_libraries' ``optimizers.l2_norm``:
    ``sum(np.vdot(g, g) for g in tree_leaves(grads))`` under jit): "cannot call numpy.vdot() in compiled code: it
    has no Python source". A comprehension kept as it is runs while compiling, and met np.vdot itself, not its
    implementation in NumPy terms (srcjax/composites.py) that a statement gets: it calls that now."""
    g = {"w": np.arange(6.0).reshape(2, 3), "b": [np.array([1.0, -2.0]), np.asarray(0.5)]}
    want = np.sqrt(55.0 + 5.0 + 0.25)
    _agree(srcjax.jit(_global_norm_by_vdot)(g), want)
    G = {"w": np.stack([g["w"], 2 * g["w"]]), "b": [np.stack([g["b"][0]] * 2), np.array([0.5, 0.5])]}
    _agree(srcjax.vmap(_global_norm_by_vdot)(G), np.array([want, np.sqrt(4 * 55.0 + 5.25)]))


def test_an_unmapped_item_of_a_mapped_dict_holding_a_list() -> None:
    """Refused where jax runs it (hunt19's clip_by_global_norm under ``vmap(f, in_axes=({'w': 0, 'b': None}, 0))``,
    ``grads["b"]`` a list): "np.shape of a sequence of arrays of different shapes [(), (2,)]", located at the
    ``def`` line. ``tree_leaves(grads)`` batches the whole dict; its unmapped item was broadcast as one array
    (``batch_broadcast``): an unmapped item of a container is broadcast leaf by leaf now."""
    r = np.random.default_rng(0)
    g = {"w": r.standard_normal((3, 3, 2)), "b": [r.standard_normal(2), np.asarray(0.7)]}
    m = np.array([1.0, 2.0, 0.5])
    got = srcjax.vmap(hp.clip_by_global_norm, in_axes=({"w": 0, "b": None}, 0))(g, m)
    twin = CORPUS.jax_twin["clip_by_global_norm"]
    _agree(got, jax.vmap(twin, in_axes=({"w": 0, "b": None}, 0))(g, m))


def test_a_helper_returning_a_tuple_of_closures() -> None:
    """Refused where jax runs it (hunt19's train_sgd_python_loop, train_momentum_fori, train_adam_schedule:
    example_libraries' ``init, update, get_params = optimizers.momentum(0.9)``): "cannot differentiate through
    `init(...)`: srcjax does not know its derivative", "vmap: cannot batch 'init(w)'". A helper returning one
    closure was written out in place (frontend/returned_closures.py); one returning a tuple of them, unpacked, is
    too, each ``def`` (or lambda, bound as a nested ``def``) named by its target."""
    r = np.random.default_rng(0)
    w, X, y = r.standard_normal(3) * 0.5, r.standard_normal((6, 3)), r.integers(0, 2, 6).astype(float)
    for name in ("train_momentum_fori", "train_adam_schedule"):
        twin = CORPUS.jax_twin[name]
        _agree(srcjax.jacrev(getattr(hp, name))(w, X, y), jax.jacrev(twin)(w, X, y))
        Xs, ys = r.standard_normal((2, 6, 3)), r.integers(0, 2, (2, 6)).astype(float)
        _agree(srcjax.vmap(getattr(hp, name), in_axes=(None, 0, 0))(w, Xs, ys),
               jax.vmap(twin, in_axes=(None, 0, 0))(w, Xs, ys))


def _momentum_total(params: Any) -> Any:
    mu = srcjax.tree_util.tree_map(np.zeros_like, params)
    mu = srcjax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, mu, params)
    return sum(np.sum(m) for m in srcjax.tree_util.tree_leaves(mu))


def test_a_generator_over_the_leaves_of_a_dict_of_data_under_vmap() -> None:
    """Refused where jax runs it (hunt19's lion_steps under vmap, optax's ``sum(np.sum(m) for m in
    tree_leaves(mu))`` of a dict two ``tree_map``s built): "vmap: cannot batch the argument 'tree_leaves(mu)'". The
    vmap's functionalization took ``tree_leaves`` of a dict of data for an array and walked it by index as rows
    (``lax.fori_loop`` reading ``tree_leaves(mu)[i]``); a call that gives a Python list is walked as one now."""
    r = np.random.default_rng(0)
    P = {"w": r.standard_normal((3, 3, 2)), "b": [r.standard_normal((3, 2)), r.standard_normal(3)]}
    want = [_momentum_total(jax.tree_util.tree_map(lambda v, i=i: v[i], P)) for i in range(3)]
    _agree(srcjax.vmap(_momentum_total)(P), np.array(want))
    c = CORPUS.by_name["lion_steps"]
    for check in c.checks:
        if check[0].startswith("vmap"):
            assert CORPUS.run("lion_steps", check[0], "float64").status == "ok", check
