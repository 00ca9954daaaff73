"""Methods of the differentiated or mapped object (issue #15; frontend/methods.py): ``params.energy(x)`` with
``params`` a NamedTuple, or a frozen dataclass registered as a pytree, whose class defines ``energy``: read as the
class's function with the object first, so grad with respect to ``params``, vmap over it and vmap of grad follow
its leaves, as jax does (was "cannot differentiate through `params.energy(...)`" / "vmap: cannot batch
'params.energy(x)'"); against jax and NumPy running the user's function. An object of another class is refused
at the call (never read with the wrong method)."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

import srcjax
from srcjax.tree_util import register_dataclass

jax = pytest.importorskip("jax")

from tests.twins import JAX  # noqa: E402

jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


class Spring(NamedTuple):
    k: np.ndarray
    rest: np.ndarray

    def energy(self, x):
        return 0.5 * np.sum(self.k * (x - self.rest) ** 2)

    def force(self, x):
        return -self.k * (x - self.rest)

    def total(self, x):
        return self.energy(x) + 0.1 * np.sum(self.force(x) ** 2)  # (a method calling methods of self)


@dataclasses.dataclass(frozen=True)
class Affine:
    w: np.ndarray
    b: np.ndarray

    def apply(self, x):
        return np.tanh(x @ self.w + self.b)


register_dataclass(Affine, data_fields=["w", "b"], meta_fields=[])
jax.tree_util.register_dataclass(Affine, data_fields=["w", "b"], meta_fields=[])


def spring_system(params, x):
    return params.energy(x) + 0.1 * np.sum(params.force(x) ** 2)


def spring_total(params, x):
    return params.total(x)


def affine_loss(layer, x):
    return np.mean(layer.apply(x) ** 2)


def _jax_spring(params, x):
    k, rest = params
    return 0.5 * jnp.sum(k * (x - rest) ** 2) + 0.1 * jnp.sum((-k * (x - rest)) ** 2)


def _jax_affine(layer, x):
    return jnp.mean(jnp.tanh(x @ layer.w + layer.b) ** 2)


def _close(a, b):
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn", [spring_system, spring_total])
def test_namedtuple_methods(fn):
    rng = np.random.default_rng(0)
    p, x = Spring(rng.normal(size=3), rng.normal(size=3)), rng.normal(size=3)
    pb, xb = Spring(rng.normal(size=(4, 3)), rng.normal(size=(4, 3))), rng.normal(size=(4, 3))
    _close(srcjax.jit(fn)(p, x), fn(p, x))
    _close(srcjax.grad(fn)(p, x), JAX.grad(_jax_spring)(p, x))
    _close(srcjax.grad(fn, argnums=1)(p, x), JAX.grad(_jax_spring, argnums=1)(p, x))
    _close(srcjax.vmap(fn)(pb, xb), JAX.vmap(_jax_spring)(pb, xb))
    _close(srcjax.vmap(fn, in_axes=(None, 0))(p, xb), JAX.vmap(_jax_spring, in_axes=(None, 0))(p, xb))
    _close(srcjax.vmap(srcjax.grad(fn))(pb, xb), JAX.vmap(jax.grad(_jax_spring))(pb, xb))


def test_dataclass_methods():
    rng = np.random.default_rng(1)
    layer, x = Affine(rng.normal(size=(3, 2)), rng.normal(size=2)), rng.normal(size=(5, 3))
    _close(srcjax.jit(affine_loss)(layer, x), affine_loss(layer, x))
    _close(srcjax.grad(affine_loss)(layer, x), JAX.grad(_jax_affine)(layer, x))
    xb = rng.normal(size=(4, 5, 3))
    _close(srcjax.vmap(srcjax.grad(affine_loss), in_axes=(None, 0))(layer, xb),
           JAX.vmap(jax.grad(_jax_affine), in_axes=(None, 0))(layer, xb))


def test_an_object_of_another_class_is_refused_at_the_call():
    class Other(NamedTuple):  # (a class the module does not name: `energy` read as Spring's)
        k: np.ndarray
        rest: np.ndarray

        def energy(self, x):
            return np.sum(self.k * x)

    with pytest.raises(srcjax.TranspileError, match="not a Spring") as e:
        srcjax.grad(spring_system)(Other(np.ones(3), np.ones(3)), np.ones(3))
    assert "test_method_calls.py" in str(e.value).splitlines()[0] and "params.energy(x)" in str(e.value)


class Rod(NamedTuple):
    k: np.ndarray

    def stretch(self, x):
        return np.sum(self.k * x)


class Beam(NamedTuple):
    k: np.ndarray

    def stretch(self, x):
        return np.sum(self.k * x ** 2)


def stretched(obj, x):
    return obj.stretch(x)


def test_two_classes_defining_the_method_stay_refused_in_derivatives():
    with pytest.raises(srcjax.TranspileError, match="cannot differentiate through `obj.stretch") as e:
        srcjax.grad(stretched)(Rod(np.ones(3)), np.ones(3))
    assert "test_method_calls.py" in str(e.value).splitlines()[0]
    np.testing.assert_allclose(srcjax.jit(stretched)(Beam(np.ones(3)), np.full(3, 2.0)), 12.0)
