"""``srcjax.tree_util.tree_map`` inside differentiated and batched code.

``tree_map(f, p, *rest)`` is read as a list comprehension over the leaves
(``frontend/jax_spellings.tree_map_call``), so a lambda's body (or a named function) is
differentiated like any expression: checked against jax's own ``tree_map`` programs under
``grad``, ``jvp``, ``vmap(grad)`` and ``hessian``, and the generated source run by NumPy.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from srcjax import tree_util as tu
from tests.twins import JAX

jax.config.update("jax_enable_x64", True)
rng = np.random.default_rng(0)


def _double(a):
    return a * 2.0


def sj_one(p, x):
    q = tu.tree_map(lambda a: a * 2.0, p)
    return np.sum((x @ q["w"] + q["b"]) ** 2)


def jx_one(p, x):
    q = jax.tree_util.tree_map(lambda a: a * 2.0, p)
    return jnp.sum((x @ q["w"] + q["b"]) ** 2)


def sj_two(p, x):
    q = srcjax.tree_util.tree_map(lambda a, b: a - 0.1 * b * b, p, p)
    return np.sum(np.tanh(x @ q["w"]) + q["b"])


def jx_two(p, x):
    q = jax.tree_util.tree_map(lambda a, b: a - 0.1 * b * b, p, p)
    return jnp.sum(jnp.tanh(x @ q["w"]) + q["b"])


def sj_named(p, x):
    q = tu.tree_map(_double, p)
    return np.sum(np.sin(x @ q["w"]) * q["b"])


def jx_named(p, x):
    q = jax.tree_util.tree_map(_double, p)
    return jnp.sum(jnp.sin(x @ q["w"]) * q["b"])


def sj_layers(ps, x):
    scaled = tu.tree_map(lambda a: a * 0.5, ps)  # a list of dicts
    for layer in scaled:
        x = np.tanh(x @ layer["w"] + layer["b"])
    return np.sum(x ** 2)


def jx_layers(ps, x):
    scaled = jax.tree_util.tree_map(lambda a: a * 0.5, ps)
    for layer in scaled:
        x = jnp.tanh(x @ layer["w"] + layer["b"])
    return jnp.sum(x ** 2)


def _params() -> dict[str, np.ndarray]:
    return {"w": rng.normal(size=(3, 2)) * 0.5, "b": rng.normal(size=2)}


CASES = [(sj_one, jx_one), (sj_two, jx_two), (sj_named, jx_named)]


@pytest.mark.parametrize(("sj", "jx"), CASES, ids=lambda f: f.__name__)
def test_grad_jvp_against_jax(sj: Any, jx: Any) -> None:
    p, x = _params(), rng.normal(size=(4, 3))
    g, gj = srcjax.grad(sj)(p, x), JAX.grad(jx)(p, x)
    for k in p:
        np.testing.assert_allclose(np.asarray(g[k]), np.asarray(gj[k]), rtol=1e-12)
    t = _params()
    (v, d), (vj, dj) = srcjax.jvp(sj, (p, x), (t, x)), JAX.jvp(jx, (p, x), (t, x))
    np.testing.assert_allclose([float(v), float(d)], [float(vj), float(dj)], rtol=1e-12)
    # the generated derivative, run by NumPy
    gn = srcjax.numpy_function(srcjax.grad(sj))(p, x)
    for k in p:
        np.testing.assert_allclose(gn[k], np.asarray(gj[k]), rtol=1e-12)


@pytest.mark.parametrize(("sj", "jx"), CASES, ids=lambda f: f.__name__)
def test_vmap_of_grad_against_jax(sj: Any, jx: Any) -> None:
    p, xs = _params(), rng.normal(size=(5, 4, 3))
    g = srcjax.vmap(srcjax.grad(sj), in_axes=(None, 0))(p, xs)
    gj = JAX.vmap(jax.grad(jx), in_axes=(None, 0))(p, xs)
    for k in p:
        np.testing.assert_allclose(np.asarray(g[k]), np.asarray(gj[k]), rtol=1e-12)


def test_hessian_against_jax() -> None:
    def sj(w, x):
        q = tu.tree_map(lambda a: np.sin(a) * 2.0, {"w": w})
        return np.sum((x @ q["w"]) ** 2)

    def jx(w, x):
        q = jax.tree_util.tree_map(lambda a: jnp.sin(a) * 2.0, {"w": w})
        return jnp.sum((x @ q["w"]) ** 2)

    w, x = rng.normal(size=3), rng.normal(size=(4, 3))
    np.testing.assert_allclose(np.asarray(srcjax.hessian(sj)(w, x)), np.asarray(JAX.hessian(jx)(w, x)), rtol=1e-10)


def test_list_of_dicts_against_jax() -> None:
    ps = [_params() | {"w": rng.normal(size=(3, 3))}, _params() | {"w": rng.normal(size=(3, 2))}]
    ps[0]["b"] = rng.normal(size=3)
    x = rng.normal(size=(4, 3))
    g, gj = srcjax.grad(sj_layers)(ps, x), JAX.grad(jx_layers)(ps, x)
    for a, b in zip(tu.tree_leaves(g), jax.tree_util.tree_leaves(gj)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)


class Params(NamedTuple):
    w: Any
    b: Any


def test_namedtuple_sgd_step_against_numpy() -> None:
    def loss(p, x):
        return np.sum((x @ p.w + p.b) ** 2)

    def step(p, x):
        g = srcjax.grad(loss)(p, x)
        return tu.tree_map(lambda a, b: a - 0.01 * b, p, g)

    p, x = Params(rng.normal(size=(3, 2)), rng.normal(size=2)), rng.normal(size=(4, 3))
    out = srcjax.jit(step)(p, x)
    r = x @ p.w + p.b
    want = Params(p.w - 0.01 * (x.T @ (2 * r)), p.b - 0.01 * np.sum(2 * r, axis=0))
    assert isinstance(out, Params)
    np.testing.assert_allclose(np.asarray(out.w), want.w, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(out.b), want.b, rtol=1e-12)


def test_source_reads_as_a_comprehension() -> None:
    text = srcjax.source(sj_two)
    assert "for a, b in zip(" in text and "from_leaves(" in text


def test_is_leaf_keeps_the_library_call() -> None:
    """With is_leaf, tree_map runs in the lowering (the structure is static); is_leaf may be a lambda
    (was an internal error: 'LocalFunction' object is not callable)."""
    def f(p):
        return tu.tree_map(lambda v: v[0] * v[1] if isinstance(v, tuple) else v + 1.0, p,
                           is_leaf=lambda v: isinstance(v, tuple))

    p = {"a": np.ones(2), "t": (np.ones(2), np.full(2, 3.0))}
    out = srcjax.jit(f)(p)
    np.testing.assert_allclose(np.asarray(out["a"]), 2.0)
    np.testing.assert_allclose(np.asarray(out["t"]), 3.0)


def test_printed_derivative_runs_on_its_own() -> None:
    """The printed module imports what it uses (`import srcjax` for srcjax.tree_util/pytree calls;
    from_leaves/leaves_like): executed alone, with nothing from the user's module, it gives jax's
    gradient."""
    space: dict[str, Any] = {}
    exec(compile(srcjax.source(srcjax.grad(sj_two)), "<printed>", "exec"), space)  # noqa: S102
    p, x = _params(), rng.normal(size=(4, 3))
    g, gj = space["sj_two_grad"](p, x), JAX.grad(jx_two)(p, x)
    for k in p:
        np.testing.assert_allclose(np.asarray(g[k]), np.asarray(gj[k]), rtol=1e-12)
