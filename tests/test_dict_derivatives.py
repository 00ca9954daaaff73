"""Derivatives through dicts and records built inside a function: dict comprehensions over static
keys, item assignment (``out[k] = v``) on local dicts and on a dict argument, ``{**p, "k": v}`` and
``dict(p)``, loops over ``sorted(p.items())``, ``p._replace(w=v)`` and ``dataclasses.replace``, and
derivatives of functions that compute a dict-valued gradient themselves (second order).

Reverse mode reads a dict comprehension as ``items = {}`` and a loop that assigns
``items[k] = v``; the cotangent of ``index_update(x, "w", v)`` (a string key: ``x`` is a container)
for ``x`` is ``index_cleared(g, x, "w")``, which has ``x``'s structure (an item the assignment added
is not in it; a replaced one is zeros shaped like it). Each gradient is checked against jax running the same program on jax.numpy.
"""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from tests.twins import JAX

jax.config.update("jax_enable_x64", True)


def _params() -> dict:
    rng = np.random.default_rng(0)
    return {"w": rng.normal(size=3), "b": rng.normal(size=2)}


X = np.array([0.5, -1.0, 2.0])


def _close(a, b) -> None:
    assert jax.tree_util.tree_structure(jax.tree_util.tree_map(np.asarray, a)) == \
        jax.tree_util.tree_structure(jax.tree_util.tree_map(np.asarray, b))
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        assert np.shape(u) == np.shape(v)
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-10, atol=1e-12)


# -- programs: each written for NumPy; the jax twin runs the same source on jax.numpy -------------------

def comp_scale(p, x):
    q = {k: p[k] * 2.0 + np.sin(p[k]) for k in p}
    return np.sum(q["w"] * x) + np.sum(q["b"] ** 2)


def comp_items(p, x):
    q = {k: np.tanh(v) * 3.0 for k, v in p.items()}
    return np.sum(q["w"] * x) * np.sum(q["b"])


def comp_nested(ps, x):
    q = [{k: v * 2.0 for k, v in d.items()} for d in ps]
    return np.sum(q[0]["w"] * x) + np.sum(q[1]["b"] * q[0]["b"])


def comp_filtered(p, x):
    q = {k: p[k] ** 2 for k in p if k != "b"}
    return np.sum(q["w"] * x)


def sgd_step(p, x):
    g = srcjax.grad(comp_scale)(p, x)
    return {k: p[k] - 0.1 * g[k] for k in p}


def after_step(p, x):
    new = sgd_step(p, x)
    return np.sum(new["w"] ** 2) + np.sum(np.cos(new["b"]))


def assign_local(p, x):
    q = {}
    q["w"] = p["w"] * 3.0
    q["b"] = p["b"] + 1.0
    return np.sum(q["w"] * x) + np.sum(q["b"] ** 2)


def grad_of_assign(p, x):
    g = srcjax.grad(assign_local)(p, x)
    return np.sum(g["w"] ** 2) + np.sum(np.sin(g["b"]))


def assign_new_key(p, x):
    p["c"] = p["w"] * 2.0
    return np.sum(p["c"] * x) + np.sum(p["b"])


def overwrite_key(p, x):
    p["b"] = np.sum(p["w"] * x) * np.ones(2)
    return np.sum(p["b"] ** 2)


def merged(p, x):
    q = {**p, "c": p["w"] * x}
    r = dict(q)
    r["w"] = r["w"] + 1.0
    return np.sum(r["w"] * r["c"]) + np.sum(q["b"] ** 2)


def sorted_items(p, x):
    tot = 0.0
    for k, v in sorted(p.items()):
        tot = tot + np.sum(np.sin(v)) * (1.0 if k == "b" else 2.0)
    return tot + np.sum(p["w"] * x)


class Lin(NamedTuple):
    w: np.ndarray
    b: np.ndarray


@dataclasses.dataclass
class Dense:
    w: np.ndarray
    b: np.ndarray


srcjax.tree_util.register_dataclass(Dense, data_fields=["w", "b"], meta_fields=[])
jax.tree_util.register_dataclass(Dense, data_fields=["w", "b"], meta_fields=[])


def replaced(layer, x):
    m = layer._replace(b=layer.b * 0.5, w=layer.w + 1.0)
    return np.sum(np.tanh(x @ m.w + m.b))


def dc_replaced(layer, x):
    m = dataclasses.replace(layer, b=layer.b * 0.5)
    return np.sum(np.tanh(x @ m.w + m.b))


# jax twins (jax arrays are immutable; dicts are copied before item assignment)

def j_comp_scale(p, x):
    q = {k: p[k] * 2.0 + jnp.sin(p[k]) for k in p}
    return jnp.sum(q["w"] * x) + jnp.sum(q["b"] ** 2)


def j_comp_items(p, x):
    q = {k: jnp.tanh(v) * 3.0 for k, v in p.items()}
    return jnp.sum(q["w"] * x) * jnp.sum(q["b"])


def j_comp_nested(ps, x):
    q = [{k: v * 2.0 for k, v in d.items()} for d in ps]
    return jnp.sum(q[0]["w"] * x) + jnp.sum(q[1]["b"] * q[0]["b"])


def j_comp_filtered(p, x):
    return jnp.sum(p["w"] ** 2 * x)


def j_after_step(p, x):
    g = JAX.grad(j_comp_scale)(p, x)
    new = {k: p[k] - 0.1 * g[k] for k in p}
    return jnp.sum(new["w"] ** 2) + jnp.sum(jnp.cos(new["b"]))


def j_assign_local(p, x):
    return jnp.sum(p["w"] * 3.0 * x) + jnp.sum((p["b"] + 1.0) ** 2)


def j_grad_of_assign(p, x):
    g = JAX.grad(j_assign_local)(p, x)
    return jnp.sum(g["w"] ** 2) + jnp.sum(jnp.sin(g["b"]))


def j_assign_new_key(p, x):
    return jnp.sum(p["w"] * 2.0 * x) + jnp.sum(p["b"])


def j_overwrite_key(p, x):
    return jnp.sum((jnp.sum(p["w"] * x) * jnp.ones(2)) ** 2)


def j_merged(p, x):
    return jnp.sum((p["w"] + 1.0) * p["w"] * x) + jnp.sum(p["b"] ** 2)


def j_sorted_items(p, x):
    return jnp.sum(jnp.sin(p["b"])) + 2.0 * jnp.sum(jnp.sin(p["w"])) + jnp.sum(p["w"] * x)


def j_replaced(layer, x):
    return jnp.sum(jnp.tanh(x @ (layer.w + 1.0) + layer.b * 0.5))


def j_dc_replaced(layer, x):
    return jnp.sum(jnp.tanh(x @ layer.w + layer.b * 0.5))


CASES = [
    (comp_scale, j_comp_scale, False),
    (comp_items, j_comp_items, False),
    (comp_nested, j_comp_nested, True),
    (comp_filtered, j_comp_filtered, False),
    (after_step, j_after_step, False),
    (grad_of_assign, j_grad_of_assign, False),
    (assign_new_key, j_assign_new_key, False),
    (overwrite_key, j_overwrite_key, False),
    (merged, j_merged, False),
    (sorted_items, j_sorted_items, False),
]


@pytest.mark.parametrize("f, jf, nested", CASES, ids=[c[0].__name__ for c in CASES])
def test_grad_matches_jax(f, jf, nested) -> None:
    p = [_params(), {k: v + 1.0 for k, v in _params().items()}] if nested else _params()
    want = JAX.grad(jf)(p, X)
    g = srcjax.grad(f)
    _close(g(p, X), want)
    _close(srcjax.numpy_function(g)(p, X), want)  # the generated source run by NumPy


@pytest.mark.parametrize("f, jf", [(comp_scale, j_comp_scale), (grad_of_assign, j_grad_of_assign)])
def test_forward_mode_matches_jax(f, jf) -> None:
    p = _params()
    _close(srcjax.jacfwd(f)(p, X), JAX.jacfwd(jf)(p, X))


def test_value_and_grad_of_comprehension_step() -> None:
    p = _params()
    v, g = srcjax.value_and_grad(after_step)(p, X)
    jv, jg = JAX.value_and_grad(j_after_step)(p, X)
    np.testing.assert_allclose(float(v), float(jv), rtol=1e-12)
    _close(g, jg)


def test_per_example_gradients_of_comprehension() -> None:
    p = _params()
    xs = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    got = srcjax.vmap(srcjax.grad(comp_scale), in_axes=(None, 0))(p, xs)
    _close(got, JAX.vmap(jax.grad(j_comp_scale), in_axes=(None, 0))(p, xs))


def test_new_key_gradient_has_the_arguments_structure() -> None:
    """Regression: ``p["c"] = ...`` on a dict argument gave a gradient with an extra item ``"c": 0.0``."""
    g = srcjax.grad(assign_new_key)(_params(), X)
    assert sorted(g) == ["b", "w"]


def test_overwritten_item_gets_zeros_of_its_shape() -> None:
    """An item replaced before it is read gets zeros shaped like it (was the scalar 0.0)."""
    g = srcjax.grad(overwrite_key)(_params(), X)
    assert np.shape(g["b"]) == (2,) and not np.any(np.asarray(g["b"]))


def test_comprehension_gradient_source_reads_as_a_loop() -> None:
    text = srcjax.source(srcjax.grad(comp_items))
    assert "for " in text and "dict(" not in text


def test_merged_dict_compiles_like_python() -> None:
    p = _params()
    np.testing.assert_allclose(float(srcjax.compile(merged)(p, X)), merged(dict(p), X), rtol=1e-12)


def test_sorted_items_loop_is_not_silently_zero() -> None:
    """Regression: ``for k, v in sorted(p.items())`` gave a zero gradient (the items were taken as static)."""
    g = srcjax.grad(sorted_items)(_params(), X)
    assert np.all(np.asarray(g["b"]) != 0.0)


@pytest.mark.parametrize("f, jf, make", [(replaced, j_replaced, Lin), (dc_replaced, j_dc_replaced, Dense)],
                         ids=["namedtuple", "dataclass"])
def test_record_replace_derivatives_match_jax(f, jf, make) -> None:
    rng = np.random.default_rng(3)
    layer = make(rng.normal(size=(3, 2)), rng.normal(size=2))
    x = rng.normal(size=(4, 3))
    np.testing.assert_allclose(float(srcjax.compile(f)(layer, x)), float(f(layer, x)), rtol=1e-12)
    got, want = srcjax.grad(f)(layer, x), JAX.grad(jf)(layer, x)
    assert type(got) is make
    _close(got, want)
    xs = x[:, None, :]
    _close(srcjax.vmap(srcjax.grad(f), in_axes=(None, 0))(layer, xs),
           JAX.vmap(jax.grad(jf), in_axes=(None, 0))(layer, xs))


def l2_of_leaves(p):
    return sum(np.sum(v ** 2) for v in srcjax.tree_util.tree_leaves(p))


def leaves_loop(p, x):
    tot = 0.0
    for v in srcjax.tree_util.tree_leaves(p):
        tot = tot + np.sum(np.sin(v)) * x
    leaves = srcjax.tree_util.tree_leaves(p)
    return tot + np.sum(leaves[-1] ** 3)


def j_l2_of_leaves(p):
    return sum(jnp.sum(v ** 2) for v in jax.tree_util.tree_leaves(p))


def j_leaves_loop(p, x):
    tot = 0.0
    for v in jax.tree_util.tree_leaves(p):
        tot = tot + jnp.sum(jnp.sin(v)) * x
    leaves = jax.tree_util.tree_leaves(p)
    return tot + jnp.sum(leaves[-1] ** 3)


NESTED = {"w": np.arange(3.0), "b": [np.ones(2), {"z": np.array(0.5)}]}


def test_tree_leaves_derivatives_match_jax() -> None:
    """Regression: ``sum(... for v in tree_leaves(p))`` (weight decay) gave a zero gradient. Reverse,
    forward, second order and per-example gradients now follow ``tree_leaves`` through nested containers."""
    _close(srcjax.grad(l2_of_leaves)(NESTED), JAX.grad(j_l2_of_leaves)(NESTED))
    _close(srcjax.grad(leaves_loop)(NESTED, 1.5), JAX.grad(j_leaves_loop)(NESTED, 1.5))
    _close(srcjax.jacfwd(l2_of_leaves)(NESTED), JAX.jacfwd(j_l2_of_leaves)(NESTED))
    _close(srcjax.hessian(l2_of_leaves)(NESTED), JAX.hessian(j_l2_of_leaves)(NESTED))
    xs = np.arange(3.0)
    _close(srcjax.vmap(srcjax.grad(leaves_loop), in_axes=(None, 0))(NESTED, xs),
           JAX.vmap(jax.grad(j_leaves_loop), in_axes=(None, 0))(NESTED, xs))


def loop_over_flatten(p):
    tot = 0.0
    for v in srcjax.tree_util.tree_flatten(p)[0]:
        tot = tot + np.sum(v)
    return tot


def test_loop_over_unknown_call_is_refused_not_silently_zero() -> None:
    with pytest.raises(srcjax.TranspileError, match="tree_flatten") as e:
        srcjax.grad(loop_over_flatten)(_params())
    assert "test_dict_derivatives.py" in str(e.value)
