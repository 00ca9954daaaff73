"""Jacobians composed in any order (issue #15: "composes with everything, in any order"): hessian of a
non-scalar or container output, jacfwd by a container argument and Jacobians of container outputs
transformed again (vmap, jit, a derivative of them), mixed with jvp/vjp, static arguments, helpers from
another module and custom rules (tests/compose_programs.py). Each was a refusal or an error before.

Oracles: jax's transformation of each program's jax twin (the same source with ``np`` as jax.numpy):
values, shapes, dtype kinds and pytree structure must agree; a few against central finite differences.
"""

from __future__ import annotations

import os
import types

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import srcjax  # noqa: E402
from tests.twins import JAX  # noqa: E402

from . import compose_programs as P  # noqa: E402
from . import unseen_helpers  # noqa: E402
from .twins import jax_twin, jitted  # noqa: E402
from .unseen_oracle import agree  # noqa: E402

THOROUGH = os.environ.get("SRCJAX_HYPOTHESIS") == "thorough"  # (every case; the default run keeps a few)
RNG = np.random.default_rng(1515)
JH = types.SimpleNamespace(softplus=jax_twin(unseen_helpers.softplus), dense=jax_twin(unseen_helpers.dense))
JC = types.SimpleNamespace(softplus=lambda x: jnp.log1p(jnp.exp(x)))  # (its custom_jvp rule is exact)
S, J = srcjax, jax


def T(f):
    """The jax twin of a program of tests/compose_programs.py."""
    return jax_twin(f, H=JH, C=JC, Layer=P.Layer, helpers=[P.layer_apply] if f is P.layer_loss else [])


def same(got, want, what: str = "") -> None:
    """agree, and the same pytree structure (dict keys, tuple vs list, the NamedTuple's class)."""
    gs = jax.tree_util.tree_structure(jax.tree_util.tree_map(np.asarray, got))
    assert gs == jax.tree_util.tree_structure(want), f"{what}: structure {gs} != {jax.tree_util.tree_structure(want)}"
    agree(got, want, what=what)


x, X = RNG.standard_normal(4), RNG.standard_normal((3, 4))
LAYER = P.Layer(RNG.standard_normal((4, 3)), RNG.standard_normal(3))
PD = {"w": RNG.standard_normal((4, 3)), "b": RNG.standard_normal(3)}
PS = [RNG.standard_normal(4), RNG.standard_normal(4)]
ONES = (np.ones((4, 4)), np.ones(4))

# name -> (srcjax's, jax's): 1. hessian of a non-scalar / container output, argnums tuples, containers in
CASES = {
    "hessian_vector_out": (lambda: S.hessian(P.vec_field)(x), lambda: J.hessian(T(P.vec_field))(x)),
    "hessian_matrix_out": (lambda: S.hessian(P.outer_field)(x), lambda: J.hessian(T(P.outer_field))(x)),
    "hessian_dict_out": (lambda: S.hessian(P.dict_out)(x), lambda: J.hessian(T(P.dict_out))(x)),
    "hessian_tuple_out": (lambda: S.hessian(P.tuple_out)(x), lambda: J.hessian(T(P.tuple_out))(x)),
    "vmap_hessian_dict_out": (lambda: S.vmap(S.hessian(P.dict_out))(X), lambda: J.vmap(J.hessian(T(P.dict_out)))(X)),
    "hessian_argnums_vector_out": (lambda: S.hessian(P.pair_field, argnums=(0, 1))(x, x[::-1]),
                                   lambda: J.hessian(T(P.pair_field), argnums=(0, 1))(x, x[::-1])),
    "hessian_namedtuple_in_matrix_out": (lambda: S.hessian(P.layer_apply)(LAYER, X),
                                         lambda: J.hessian(T(P.layer_apply))(LAYER, X)),
    "hessian_namedtuple_in": (lambda: S.hessian(P.layer_loss)(LAYER, X), lambda: J.hessian(T(P.layer_loss))(LAYER, X)),
    "hessian_dict_in_helper": (lambda: S.hessian(P.dense_loss)(PD, X), lambda: J.hessian(T(P.dense_loss))(PD, X)),
    # 2. Jacobians of and by containers, transformed again
    "vmap_jacfwd_namedtuple": (lambda: S.vmap(S.jacfwd(P.layer_apply), in_axes=(None, 0))(LAYER, X[:, None]),
                               lambda: J.vmap(J.jacfwd(T(P.layer_apply)), in_axes=(None, 0))(LAYER, X[:, None])),
    "jit_jacfwd_dict_helper": (lambda: S.jit(S.jacfwd(P.dense_dict))(PD, X), lambda: J.jacfwd(T(P.dense_dict))(PD, X)),
    "grad_of_jacfwd_dict": (
        lambda: S.grad(lambda p, x: np.sum(S.jacfwd(P.dense_dict)(p, x)["w"] ** 2))(PD, X),
        lambda: J.grad(lambda p, x: jnp.sum(J.jacfwd(T(P.dense_dict))(p, x)["w"] ** 2))(PD, X)),
    # (the container branch is an `if`/`else`, not an early return that reverse mode of the vmapped
    # Jacobian read past: np.result_type of the dict was an internal error)
    "grad_of_vmap_jacfwd_dict": (
        lambda: S.grad(lambda p, x: np.sum(S.vmap(S.jacfwd(P.dense_dict), in_axes=(None, 0))(p, x)["w"] ** 2))(
            PD, X[:, None]),
        lambda: J.grad(lambda p, x: jnp.sum(J.vmap(J.jacfwd(T(P.dense_dict)), in_axes=(None, 0))(p, x)["w"] ** 2))(
            PD, X[:, None])),
    "vmap_jacrev_list": (lambda: S.vmap(S.jacrev(P.list_params), in_axes=(None, 0))(PS, X),
                         lambda: J.vmap(J.jacrev(T(P.list_params)), in_axes=(None, 0))(PS, X)),
    "vmap_jacfwd_list": (lambda: S.vmap(S.jacfwd(P.list_params), in_axes=(None, 0))(PS, X),
                         lambda: J.vmap(J.jacfwd(T(P.list_params)), in_axes=(None, 0))(PS, X)),
    "vmap_jacfwd_mapped_list": (lambda: S.vmap(S.jacfwd(P.list_params), in_axes=(0, None))([X, X * 2], x),
                                lambda: J.vmap(J.jacfwd(T(P.list_params)), in_axes=(0, None))([X, X * 2], x)),
    "jacfwd_of_jacrev_dict_out": (lambda: S.jacfwd(S.jacrev(P.dict_out))(x), lambda: J.jacfwd(J.jacrev(T(P.dict_out)))(x)),
    "jacrev_of_jacfwd_dict_out": (lambda: S.jacrev(S.jacfwd(P.dict_out))(x), lambda: J.jacrev(J.jacfwd(T(P.dict_out)))(x)),
    "vmap_jacfwd_tuple_out": (lambda: S.vmap(S.jacfwd(P.tuple_out))(X), lambda: J.vmap(J.jacfwd(T(P.tuple_out)))(X)),
    "jit_jacrev_dict_out": (lambda: S.jit(S.jacrev(P.dict_out))(x), lambda: J.jacrev(T(P.dict_out))(x)),
    "jvp_of_jacrev_dict_out": (lambda: S.jvp(S.jacrev(P.dict_out), (x,), (x * 0 + 1,)),
                               lambda: J.jvp(J.jacrev(T(P.dict_out)), (x,), (x * 0 + 1,))),
    "vjp_of_jacfwd_tuple_out": (lambda: S.vjp(S.jacfwd(P.tuple_out), x)[1](ONES),
                                lambda: J.vjp(J.jacfwd(T(P.tuple_out)), x)[1](ONES)),
    "vmap_jvp_of_jacrev_tuple_out": (lambda: S.vmap(lambda x, t: S.jvp(S.jacrev(P.tuple_out), (x,), (t,)))(X, X),
                                     lambda: J.vmap(lambda x, t: J.jvp(J.jacrev(T(P.tuple_out)), (x,), (t,)))(X, X)),
    # 6. orders, static arguments, custom rules, composites that save to the tape
    "jacrev_of_jacrev": (lambda: S.jacrev(S.jacrev(P.vec_field))(x), lambda: J.jacrev(J.jacrev(T(P.vec_field)))(x)),
    "jacrev_of_jacfwd": (lambda: S.jacrev(S.jacfwd(P.vec_field))(x), lambda: J.jacrev(J.jacfwd(T(P.vec_field)))(x)),
    "vmap_hessian_static": (lambda: S.vmap(S.hessian(P.scaled_sum), in_axes=(0, None))(X, 3),
                            lambda: J.vmap(J.hessian(T(P.scaled_sum)), in_axes=(0, None))(X, 3)),
    "jit_jacrev_static": (lambda: S.jit(S.jacrev(P.scaled), static_argnums=1)(x, 2), lambda: J.jacrev(T(P.scaled))(x, 2)),
    "hessian_custom_jvp": (lambda: S.hessian(P.custom_sum)(x), lambda: J.hessian(T(P.custom_sum))(x)),
    "hessian_custom_jvp_vector_out": (lambda: S.hessian(P.custom_softplus)(x), lambda: J.hessian(T(P.custom_softplus))(x)),
    "vmap_grad_helper_dict": (lambda: S.vmap(S.grad(P.dense_loss), in_axes=(None, 0))(PD, X[:, None]),
                              lambda: J.vmap(J.grad(T(P.dense_loss)), in_axes=(None, 0))(PD, X[:, None])),
    "jacrev_grad_max": (lambda: S.jacrev(S.grad(P.max_energy))(x), lambda: J.jacrev(J.grad(T(P.max_energy)))(x)),
    "vmap_jacrev_grad_max": (lambda: S.vmap(S.jacrev(S.grad(P.max_energy)))(X),
                             lambda: J.vmap(J.jacrev(J.grad(T(P.max_energy))))(X)),
    "hessian_vdot": (lambda: S.hessian(P.vdot_energy)(x), lambda: J.hessian(T(P.vdot_energy))(x)),
    "jacrev_grad_relu_where": (lambda: S.jacrev(S.grad(P.relu_energy))(x), lambda: J.jacrev(J.grad(T(P.relu_energy)))(x)),
    "hessian_masked_fill": (lambda: S.hessian(P.masked_fill)(x), lambda: J.hessian(T(P.masked_fill))(x)),
    # 5. jacrev of a gradient whose helpers hand saved values through the tape: forward mode (were refused)
    "jacrev_grad_vdot": (lambda: S.jacrev(S.grad(P.vdot_energy))(x), lambda: J.jacrev(J.grad(T(P.vdot_energy)))(x)),
    "jacrev_grad_interp": (lambda: S.jacrev(S.grad(P.interp_energy))(x),
                           lambda: J.jacrev(J.grad(T(P.interp_energy)))(x)),
    # (the loop form of the Jacobian, where vmap cannot batch the gradient's JVP: its tape)
    "hessian_interp": (lambda: S.hessian(P.interp_energy)(x), lambda: J.hessian(T(P.interp_energy))(x)),
    # 3. np.diff with prepend=/append= (a scalar end: was an object array under vmap(jacfwd))
    "vmap_jacfwd_diff_prepend": (lambda: S.vmap(S.jacfwd(P.diff_prepend))(X), lambda: J.vmap(J.jacfwd(T(P.diff_prepend)))(X)),
    "vmap_jacfwd_diff_both_ends": (lambda: S.vmap(S.jacfwd(P.diff_both_ends))(X),
                                   lambda: J.vmap(J.jacfwd(T(P.diff_both_ends)))(X)),
    "jacrev_diff_both_ends": (lambda: S.jacrev(P.diff_both_ends)(x), lambda: J.jacrev(T(P.diff_both_ends))(x)),
    # 4. a tuple of static ints built in a loop over x.shape
    "grad_shape_tuple_loop": (lambda: S.grad(P.reshape_by_loop)(X), lambda: J.grad(T(P.reshape_by_loop))(X)),
    "hessian_shape_tuple_loop": (lambda: S.hessian(P.reshape_by_loop)(X), lambda: J.hessian(T(P.reshape_by_loop))(X)),
}
FAST = {"hessian_vector_out", "hessian_dict_out", "vmap_jacfwd_namedtuple", "jit_jacfwd_dict_helper",
        "vmap_jacfwd_tuple_out", "hessian_argnums_vector_out", "jacrev_grad_vdot", "grad_shape_tuple_loop",
        "vmap_jacfwd_diff_prepend", "grad_of_vmap_jacfwd_dict"}


@pytest.mark.parametrize("name", [n for n in CASES if n in FAST or THOROUGH])
def test_composition_agrees_with_jax(name: str) -> None:
    got, want = CASES[name]
    same(got(), jitted(want)(), what=name)  # (jax's side compiled whole: tests/twins.py)


def test_hessian_of_a_vector_output_agrees_with_finite_differences() -> None:
    """Each output's Hessian by central differences of jax's gradient of that output (float64)."""
    h = np.asarray(S.hessian(P.vec_field)(x))
    eps = 1e-5
    for k in range(x.size):
        g = JAX.grad(lambda v, k=k: T(P.vec_field)(v)[k])
        e = np.eye(x.size)
        fd = np.stack([(np.asarray(g(x + eps * e[j])) - np.asarray(g(x - eps * e[j]))) / (2 * eps)
                       for j in range(x.size)], axis=-1)
        np.testing.assert_allclose(h[k], fd, rtol=1e-6, atol=1e-7)


def test_vmap_of_a_hessian_of_a_vector_output_is_jacfwd_of_jacrev() -> None:
    """vmap of the hessian of a vector output (was refused: "grad requires a real scalar output"): JAX's
    hessian, vmap(jacfwd(jacrev(f)))."""
    want = J.vmap(J.hessian(T(P.vec_field)))(X)
    same(S.vmap(S.hessian(P.vec_field))(X), want)
    same(S.vmap(S.jacfwd(S.jacrev(P.vec_field)))(X), want)
