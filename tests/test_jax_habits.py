"""JAX users' spellings: ``srcjax.jit``, ``srcjax.tree_util`` (outside and inside compiled code) and
dict comprehensions over static keys, against NumPy and jax."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from srcjax.tree_util import tree_flatten, tree_leaves, tree_map, tree_reduce, tree_structure, tree_unflatten
from tests.twins import JAX

jax.config.update("jax_enable_x64", True)
rng = np.random.default_rng(0)
PARAMS = {"w": rng.normal(size=(2, 3)), "b": rng.normal(size=3), "layers": [rng.normal(size=3), None]}


def test_tree_util_matches_jax_outside_compiled_code():
    leaves, treedef = tree_flatten(PARAMS)
    jleaves, jdef = jax.tree_util.tree_flatten(PARAMS)
    assert len(leaves) == len(jleaves) == 3  # None holds no leaf, as in JAX
    for a, b in zip(leaves, jleaves):
        np.testing.assert_array_equal(a, b)
    assert tree_unflatten(treedef, leaves)["layers"][1] is None
    assert tree_structure(PARAMS) == treedef
    doubled = tree_map(lambda p, q: p + 2 * q, PARAMS, PARAMS)
    jdoubled = jax.tree_util.tree_map(lambda p, q: p + 2 * q, PARAMS, PARAMS)
    for a, b in zip(tree_leaves(doubled), jax.tree_util.tree_leaves(jdoubled)):
        np.testing.assert_allclose(a, b)
    assert tree_reduce(lambda a, b: a + np.sum(b), PARAMS, 0.0) == pytest.approx(
        sum(float(np.sum(v)) for v in jleaves))
    with pytest.raises(ValueError, match="structure"):
        tree_map(lambda a, b: a + b, PARAMS, {"w": 1.0})


def loss(params, x, y):
    h = np.tanh(x @ params["w"] + params["b"])
    return np.mean((h - y) ** 2)


def j_loss(params, x, y):
    h = jnp.tanh(x @ params["w"] + params["b"])
    return jnp.mean((h - y) ** 2)


@srcjax.jit
def sgd_tree_map(params, x, y):
    g = srcjax.grad(loss)(params, x, y)
    return tree_map(lambda p, d: p - 0.1 * d, params, g)


@srcjax.jit
def sgd_dict_comprehension(params, x, y):
    g = srcjax.grad(loss)(params, x, y)
    return {k: params[k] - 0.1 * g[k] for k in params}


@pytest.mark.parametrize("step", [sgd_tree_map, sgd_dict_comprehension])
def test_an_sgd_step_as_jax_users_write_it(step):
    params = {"w": PARAMS["w"], "b": PARAMS["b"]}
    x, y = rng.normal(size=(5, 2)), rng.normal(size=(5, 3))
    jg = JAX.grad(j_loss)(params, x, y)
    want = {k: params[k] - 0.1 * np.asarray(jg[k]) for k in params}
    got = step(params, x, y)
    assert set(got) == set(want)
    for k in want:
        np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=1e-10)
    via_numpy = srcjax.compile(step.fn, device="numpy")(params, x, y)
    for k in want:
        np.testing.assert_allclose(np.asarray(via_numpy[k]), want[k], rtol=1e-10)


def penalty(params, x, y):
    sq = {k: np.sum(v ** 2) for k, v in params.items()}
    return sq["w"] + 0.5 * sq["b"] + loss(params, x, y)


def j_penalty(params, x, y):
    sq = {k: jnp.sum(v ** 2) for k, v in params.items()}
    return sq["w"] + 0.5 * sq["b"] + j_loss(params, x, y)


def squares_by_pairs(p):
    sq = dict([(k, np.sum(v ** 2)) for k, v in p.items()])
    return sq["a"]


def test_dict_comprehensions_compile_batch_and_differentiate():
    params = {"w": PARAMS["w"], "b": PARAMS["b"]}
    x, y = rng.normal(size=(5, 2)), rng.normal(size=(5, 3))
    np.testing.assert_allclose(np.asarray(srcjax.compile(penalty)(params, x, y)), penalty(params, x, y))
    # derivatives follow a dict built from pairs (read as a loop of item assignments)
    got = srcjax.grad(penalty)(params, x, y)
    want = JAX.grad(j_penalty)(params, x, y)
    for k in params:
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-10)
    a = x[0]
    np.testing.assert_allclose(np.asarray(srcjax.grad(squares_by_pairs)({"a": a})["a"]), 2 * a, rtol=1e-12)
    xs = rng.normal(size=(4, 5, 2))
    got = srcjax.vmap(penalty, in_axes=(None, 0, None))(params, xs, y)
    want = JAX.vmap(j_penalty, in_axes=(None, 0, None))(params, xs, y)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10)


def test_jit_is_compile_with_jax_arguments():
    def f(x, n):
        return x * n

    jf = srcjax.jit(f, static_argnums=1, donate_argnums=0)
    assert isinstance(jf, srcjax.Compiled)
    np.testing.assert_allclose(np.asarray(jf(np.ones(3), 4)), 4.0 * np.ones(3))


# -- transformations of lambdas reading the caller's locals ------------------------------------------

def sq_loss(w, x, y):
    return np.mean((x @ w - y) ** 2)


def closure_step(w, x, y):
    value, g = srcjax.value_and_grad(lambda p: sq_loss(p, x, y))(w)
    per_example = srcjax.vmap(lambda xi, yi: srcjax.grad(sq_loss)(w, xi[None], yi[None]))
    return w - 0.1 * g, value, per_example(x, y), srcjax.jacrev(lambda p: x @ p * y)(w)


def j_closure_step(w, x, y):
    def jl(w, x, y):
        return jnp.mean((x @ w - y) ** 2)
    value, g = jax.value_and_grad(lambda p: jl(p, x, y))(w)
    per_example = jax.vmap(lambda xi, yi: jax.grad(jl)(w, xi[None], yi[None]))(x, y)
    return w - 0.1 * g, value, per_example, jax.jacrev(lambda p: x @ p * y)(w)


def nested_reverse(w, x, y):
    return np.sum(srcjax.grad(lambda p: sq_loss(p, x, y))(w) ** 2)


def j_nested_reverse(w, x, y):
    return jnp.sum(jax.grad(lambda p: jnp.mean((x @ p - y) ** 2))(w) ** 2)


def test_transformations_of_lambdas_that_read_locals_match_jax():
    w, x, y = rng.normal(size=3), rng.normal(size=(5, 3)), rng.normal(size=5)
    for got, want in zip(srcjax.jit(closure_step)(w, x, y), jax.jit(j_closure_step)(w, x, y)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10)
    text = srcjax.source(srcjax.jit(closure_step))
    assert "lambda_fn_value_and_grad(w, x, y)" in text and "lambda_fn_vmap(x, y, w)" in text


def test_reverse_mode_over_an_inner_derivative_with_helpers_matches_jax_not_zero():
    """Reverse mode over grad of a lambda calling a helper: refused (never zero) until maml7 wrote the helper
    halves out in place (reverse_over.inline_tape_calls); now grad of it equals jax's, as jacfwd's does."""
    w, x, y = rng.normal(size=3), rng.normal(size=(5, 3)), rng.normal(size=5)
    want = np.asarray(JAX.grad(j_nested_reverse)(w, x, y))
    assert np.max(np.abs(want)) > 1e-3
    np.testing.assert_allclose(np.asarray(srcjax.grad(nested_reverse)(w, x, y)), want, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(srcjax.jacfwd(nested_reverse)(w, x, y)),
                               np.asarray(JAX.grad(j_nested_reverse)(w, x, y)), rtol=1e-10)


def aux_step(w, x):
    def loss(w):
        pred = x @ w
        return np.mean(pred ** 2), pred

    (value, pred), g = srcjax.value_and_grad(loss, has_aux=True)(w)
    return value, pred, g


def j_aux_step(w, x):
    def loss(w):
        pred = x @ w
        return jnp.mean(pred ** 2), pred

    (value, pred), g = jax.value_and_grad(loss, has_aux=True)(w)
    return value, pred, g


def dict_loss(p, x):
    return np.sum((np.maximum(x @ p["w1"] + p["b1"], 0.0) @ p["w2"]) ** 2)


def per_example(p, xs):
    return srcjax.vmap(srcjax.grad(dict_loss), in_axes=(None, 0))(p, xs)


def test_defs_reading_locals_and_nested_transformations_inside_compiled_code():
    w, x = rng.normal(size=3), rng.normal(size=(4, 3))
    for got, want in zip(srcjax.jit(aux_step)(w, x), jax.jit(j_aux_step)(w, x)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10)
    p = {"w1": rng.normal(size=(3, 4)), "b1": rng.normal(size=4), "w2": rng.normal(size=(4, 2))}
    xs = rng.normal(size=(5, 3))
    got = srcjax.jit(per_example)(p, xs)
    want = JAX.vmap(jax.grad(lambda p, x: jnp.sum((jnp.maximum(x @ p["w1"] + p["b1"], 0.0) @ p["w2"]) ** 2)),
                    in_axes=(None, 0))(p, xs)
    for k in p:
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-10)


def test_numpy_functions_are_transformed_directly():
    np.testing.assert_allclose(float(srcjax.grad(np.sin)(0.5)), np.cos(0.5), rtol=1e-14)
    y, t = srcjax.jvp(np.tanh, (np.array([0.1, 0.2]),), (np.ones(2),))
    np.testing.assert_allclose(np.asarray(t), 1 - np.tanh([0.1, 0.2]) ** 2, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(np.sum)(np.ones((3, 2)))), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(np.asarray(srcjax.grad(np.linalg.det)(2.0 * np.eye(2))), 2.0 * np.eye(2))
    np.testing.assert_allclose(np.asarray(srcjax.jit(np.exp)(np.zeros(2))), np.ones(2))


def curvy(x):
    return np.sum(np.sin(x) * x ** 2)


def hvp_inside(x, v):
    return srcjax.jvp(srcjax.grad(curvy), (x,), (v,))[1]


def jvp_of_closure(x, a):
    y, t = srcjax.jvp(lambda z: np.tanh(a * z), (x,), (np.ones_like(x),))
    return y, t


def test_jvp_inside_compiled_code_hessian_vector_products():
    x, v = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.5, -2.0])
    want = JAX.jvp(jax.grad(lambda x: jnp.sum(jnp.sin(x) * x ** 2)), (x,), (v,))[1]
    np.testing.assert_allclose(np.asarray(srcjax.jit(hvp_inside)(x, v)), np.asarray(want), rtol=1e-12)
    y, t = srcjax.jit(jvp_of_closure)(x, 2.0)
    np.testing.assert_allclose(np.asarray(y), np.tanh(2 * x), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(t), 2 * (1 - np.tanh(2 * x) ** 2), rtol=1e-12)
    assert "f_grad_jvp(x, v)" in srcjax.source(srcjax.jit(hvp_inside)).replace("curvy", "f")
