"""Classes registered as containers (``srcjax.tree_util.register_pytree_node`` /
``register_dataclass``): arguments and results of compiled code, differentiated and batched, against
jax with the same registrations."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from srcjax.tree_util import register_dataclass, register_pytree_node, tree_leaves, tree_map, tree_structure
from tests.twins import JAX

jax.config.update("jax_enable_x64", True)
rng = np.random.default_rng(0)


class Linear:
    def __init__(self, w, b):
        self.w, self.b = w, b


def _flatten(m):
    return (m.w, m.b), None


def _unflatten(aux, children):
    return Linear(*children)


register_pytree_node(Linear, _flatten, _unflatten)
jax.tree_util.register_pytree_node(Linear, _flatten, _unflatten)


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    act: str = "tanh"


register_dataclass(Layer, data_fields=["w"], meta_fields=["act"])
jax.tree_util.register_dataclass(Layer, data_fields=["w"], meta_fields=["act"])


def loss(m, x, y):
    return np.mean((np.tanh(x @ m.w + m.b) - y) ** 2)


def j_loss(m, x, y):
    return jnp.mean((jnp.tanh(x @ m.w + m.b) - y) ** 2)


def sgd(m, x, y):
    g = srcjax.grad(loss)(m, x, y)
    return tree_map(lambda p, q: p - 0.1 * q, m, g)


def made_inside(x):
    return Linear(x * 2.0, np.sum(x))


def layer_out(layer, x):
    h = x @ layer.w
    return np.sum(np.tanh(h) if layer.act == "tanh" else h)


def _same(a, b):
    assert type(a) is type(b)
    for u, v in zip(tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-12)


def test_registered_classes_compile_differentiate_and_batch_like_jax():
    m = Linear(rng.normal(size=(3, 2)), rng.normal(size=2))
    x, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    assert str(tree_structure(m)) == "Linear(*, *)"
    np.testing.assert_allclose(float(srcjax.compile(loss)(m, x, y)), float(j_loss(m, x, y)), rtol=1e-12)
    _same(srcjax.grad(loss)(m, x, y), JAX.grad(j_loss)(m, x, y))
    _same(srcjax.jit(sgd)(m, x, y), jax.tree_util.tree_map(lambda p, q: p - 0.1 * q, m, JAX.grad(j_loss)(m, x, y)))
    t = Linear(np.ones((3, 2)), np.zeros(2))
    tx, ty = np.zeros_like(x), np.zeros_like(y)
    np.testing.assert_allclose(float(srcjax.jvp(loss, (m, x, y), (t, tx, ty))[1]),
                               float(JAX.jvp(j_loss, (m, x, y), (t, tx, ty))[1]), rtol=1e-12)
    models = Linear(rng.normal(size=(4, 3, 2)), rng.normal(size=(4, 2)))
    np.testing.assert_allclose(np.asarray(srcjax.vmap(loss, in_axes=(0, None, None))(models, x, y)),
                               np.asarray(JAX.vmap(j_loss, in_axes=(0, None, None))(models, x, y)), rtol=1e-12)
    out = srcjax.compile(made_inside)(np.arange(3.0))
    assert isinstance(out, Linear)
    np.testing.assert_allclose(np.asarray(out.w), [0.0, 2.0, 4.0])


def test_register_dataclass_meta_fields_are_static_and_kept_in_gradients():
    layer, x = Layer(rng.normal(size=(3, 2))), rng.normal(size=(4, 3))
    for act in ("tanh", "id"):
        np.testing.assert_allclose(float(srcjax.compile(layer_out)(Layer(layer.w, act), x)),
                                   float(layer_out(Layer(layer.w, act), x)), rtol=1e-12)
    g = srcjax.grad(layer_out)(layer, x)
    assert isinstance(g, Layer) and g.act == "tanh"

    def j_layer_out(layer, x):
        return jnp.sum(jnp.tanh(x @ layer.w))

    np.testing.assert_allclose(np.asarray(g.w), np.asarray(JAX.grad(j_layer_out)(layer, x).w), rtol=1e-12)


class Opaque:
    def __init__(self, w):
        self.params = {"w": w}


register_pytree_node(Opaque, lambda o: ((o.params["w"],), None), lambda aux, ch: Opaque(*ch))


def opaque_loss(o):
    return np.sum(o.params["w"] ** 2)


def test_a_flatten_that_computes_its_children_is_refused_by_derivatives_not_wrong():
    o = Opaque(np.arange(3.0))
    assert float(srcjax.compile(opaque_loss)(o)) == 5.0
    with pytest.raises(srcjax.TranspileError, match="flatten") as e:
        srcjax.grad(opaque_loss)(o)
    assert "test_custom_pytrees.py" in str(e.value)  # at the function the user differentiates


@dataclasses.dataclass
class State:
    x: np.ndarray
    v: np.ndarray


def state_step(s, dt):
    return State(s.x + dt * s.v, s.v - dt * s.x)


def test_dataclasses_are_built_of_arrays_inside_compiled_code():
    s = State(np.arange(3.0), np.ones(3))
    got = srcjax.compile(state_step)(s, 0.1)
    assert isinstance(got, State)
    np.testing.assert_allclose(np.asarray(got.x), s.x + 0.1 * s.v)
    np.testing.assert_allclose(np.asarray(got.v), s.v - 0.1 * s.x)


class Phase(NamedTuple):
    x: np.ndarray
    v: np.ndarray


def simulate(x0, v0, k):
    s = Phase(x0, v0)
    for _ in range(5):
        s = Phase(x=s.x + 0.1 * s.v, v=s.v - 0.1 * k * s.x)
    st = State(s.x, s.v)
    return np.sum(st.x ** 2) + np.sum(st.v)


def j_simulate(x0, v0, k):
    x, v = x0, v0
    for _ in range(5):
        x, v = x + 0.1 * v, v - 0.1 * k * x
    return jnp.sum(x ** 2) + jnp.sum(v)


def test_derivatives_through_building_namedtuples_and_dataclasses():
    x0, v0 = rng.normal(size=3), rng.normal(size=3)
    got = srcjax.grad(simulate, argnums=(0, 1, 2))(x0, v0, 2.0)
    want = JAX.grad(j_simulate, argnums=(0, 1, 2))(x0, v0, 2.0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)
    t = (np.ones(3), np.zeros(3), 0.0)
    np.testing.assert_allclose(float(srcjax.jvp(simulate, (x0, v0, 2.0), t)[1]),
                               float(JAX.jvp(j_simulate, (x0, v0, 2.0), t)[1]), rtol=1e-12)


def dict_items(x):
    out = {}
    out["a"] = x * 2
    out["b"] = np.sum(x)
    items = [x, x]
    items[1] = x + 1
    return out, items


def test_item_assignment_on_local_dicts_and_lists():
    x = np.arange(3.0)
    got = srcjax.compile(dict_items)(x)
    np.testing.assert_allclose(np.asarray(got[0]["a"]), 2 * x)
    np.testing.assert_allclose(float(got[0]["b"]), 3.0)
    np.testing.assert_allclose(np.asarray(got[1][1]), x + 1)
    np.testing.assert_allclose(np.asarray(srcjax.compile(dict_items, device="numpy")(x)[0]["a"]), 2 * x)
