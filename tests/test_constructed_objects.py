"""An object of a plain class of the user's made in the function (``p = Point(x, y)``, then ``p.norm()``) under jit,
grad, vmap, vmap(grad), hessian.

Constructing it was refused everywhere ("constructing a Point object runs Python code srcjax does not
transpile"). A class whose ``__init__`` only stores expressions of its parameters in attributes is read as a
dataclass of its own (``frontend/constructed_objects.py``), whose objects srcjax follows. Oracle: jax (twins with
the classes' sources).
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

from .twins import jax_twin, jitted

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm(self):
        return np.sqrt(self.x ** 2 + self.y ** 2)


class Affine:
    """A scaled affine map (an attribute computed from the parameters, a default)."""

    def __init__(self, w, b=0.5, scale=2.0):
        self.w = w * scale
        self.b = b

    def apply(self, v):
        return np.tanh(self.w * v + self.b)


class Chain:
    """A method calling another on ``self`` (read inside the method's copy: the dataclass named there too)."""

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def sq(self):
        return self.x ** 2 + np.sin(self.y)

    def energy(self):
        return np.sum(self.sq() * self.y)


def chained(x, y):
    c = Chain(x, y)
    return c.energy()


def point_norm(x, y):
    p = Point(x, y)
    return np.sum(p.norm())


def affine_twice(x, w):
    a = Affine(w, scale=3.0)
    b = Affine(x, 1.0)
    return np.sum(a.apply(x) * b.apply(w))


CASES = [point_norm, affine_twice, chained]


def _close(got, want):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn", CASES)
def test_constructed_object_under_transformations(fn):
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=3) + 2.0, rng.normal(size=3)
    twin = jax_twin(fn, helpers=[Point, Affine, Chain])
    _close(srcjax.jit(fn)(x, w), fn(x, w))
    _close(srcjax.grad(fn, argnums=(0, 1))(x, w), jitted(jax.grad(twin, argnums=(0, 1)))(x, w))
    _close(srcjax.hessian(fn)(x, w), jitted(jax.hessian(twin))(x, w))
    xb, wb = rng.normal(size=(4, 3)) + 2.0, rng.normal(size=(4, 3))
    _close(srcjax.vmap(fn)(xb, wb), jitted(jax.vmap(twin))(xb, wb))
    _close(srcjax.vmap(srcjax.grad(fn))(xb, wb), jitted(jax.vmap(jax.grad(twin)))(xb, wb))
    _close(srcjax.numpy_function(srcjax.grad(fn))(x, w), jitted(jax.grad(twin))(x, w))


class Counted:
    def __init__(self, x):
        self.x = x
        self.n = len(x)  # (reads a builtin: still a store of an expression)

    def average(self):
        return np.sum(self.x) / self.n


class Logged:
    def __init__(self, x):
        print("made")
        self.x = x


def counted_mean(x):
    c = Counted(x)
    return c.average() ** 2


def logged(x):
    o = Logged(x)
    return np.sum(o.x)


def test_stores_of_expressions_and_a_class_doing_more_refused():
    x = np.array([0.5, 1.5, -2.0])
    _close(srcjax.grad(counted_mean)(x), jax.grad(jax_twin(counted_mean, helpers=[Counted]))(x))
    with pytest.raises(srcjax.TranspileError, match="constructing a Logged object"):
        srcjax.jit(logged)(x)
    with pytest.raises(srcjax.TranspileError, match="cannot differentiate through `Logged"):
        srcjax.grad(logged)(x)


class Stats:
    """A method named as an array's (``mean``, ``sum``): the object's own, not NumPy's."""

    def __init__(self, v):
        self.v = v

    def mean(self):
        return np.max(self.v) - np.min(self.v)

    def sum(self, w):
        return np.sum(self.v * w)


def stats_spread(x):
    c = Stats(x)
    return c.mean() + c.sum(x)


def test_methods_named_as_an_arrays_are_the_objects():
    """``c.mean()`` of ``c = Stats(x)`` was read as ``np.mean(c)`` (refused: "np.mean(): TypeError: Stats.mean() got
    an unexpected keyword argument 'axis'"; a ``mean(self, axis=None, dtype=None, out=None)`` would have been
    called by NumPy's the same way): the class's method, under every transformation."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=4)
    twin = jax_twin(stats_spread, helpers=[Stats])
    _close(srcjax.jit(stats_spread)(x), stats_spread(x))
    _close(srcjax.grad(stats_spread)(x), jitted(jax.grad(twin))(x))
    xb = rng.normal(size=(3, 4))
    _close(srcjax.vmap(stats_spread)(xb), np.array([stats_spread(v) for v in xb]))
    _close(srcjax.vmap(srcjax.grad(stats_spread))(xb), jitted(jax.vmap(jax.grad(twin)))(xb))
    _close(srcjax.numpy_function(srcjax.grad(stats_spread))(x), jitted(jax.grad(twin))(x))


class Sigmoid:  # (no __init__: object's)
    def __call__(self, x):
        return 1 / (1 + np.exp(-x))

    def gradient(self, x):
        return self(x) * (1 - self(x))


class TanH:
    def __init__(self): pass

    def __call__(self, x):
        return np.tanh(x)


def made_and_used_at_once(x, w):
    # ML-From-Scratch's `Sigmoid()(x)`, a temporary's method, a `pass` __init__
    return np.sum(Sigmoid()(x) * TanH()(w) + Affine(w).apply(x) + Sigmoid().gradient(w))


def made_then_called(x, w):
    s = Sigmoid()
    return np.sum(s(x) * s.gradient(w))


@pytest.mark.parametrize("fn", [made_and_used_at_once, made_then_called])
def test_objects_made_and_used_at_once(fn):
    """``Sigmoid()(x)``, ``Affine(w).apply(x)``, ``s(x)`` of ``s = Sigmoid()`` (a class without ``__init__``, or
    with ``def __init__(self): pass``) under every transformation (was refused: "constructing a Sigmoid object runs
    Python code srcjax does not transpile", "cannot differentiate through `Sigmoid_1(...)`"): the object is made on
    a line of its own first (``sigmoid = Sigmoid()``) and read as any constructed object."""
    rng = np.random.default_rng(4)
    x, w = rng.normal(size=3), rng.normal(size=3)
    twin = jax_twin(fn, helpers=[Sigmoid, TanH, Affine])
    _close(srcjax.jit(fn)(x, w), fn(x, w))
    _close(srcjax.grad(fn, argnums=(0, 1))(x, w), jitted(jax.grad(twin, argnums=(0, 1)))(x, w))
    xb, wb = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    _close(srcjax.vmap(fn)(xb, wb), np.array([fn(a, b) for a, b in zip(xb, wb, strict=True)]))
    _close(srcjax.vmap(srcjax.grad(fn))(xb, wb), jitted(jax.vmap(jax.grad(twin)))(xb, wb))
    _close(srcjax.numpy_function(srcjax.grad(fn))(x, w), jitted(jax.grad(twin))(x, w))
    assert "Sigmoid()(" not in srcjax.source(srcjax.grad(fn))


def _no_objects(x):
    return np.sum(np.tanh(x) * len(x))


def _one_object(x):
    p = Point(x, 2.0 * x)
    return np.sum(p.norm())


def test_a_function_calling_no_plain_class_is_not_rewritten(monkeypatch):
    """Only a function calling a plain class is rewritten (a walk finds the calls first; libcst's transformer
    over the whole function ran for every function read): the others come back as they were."""
    from srcjax.frontend import constructed_objects
    from srcjax.frontend.read import read_function

    assert not constructed_objects._calls_a_plain_class(read_function(_no_objects))
    assert constructed_objects._calls_a_plain_class(read_function(_one_object))
    src = read_function(_no_objects)
    monkeypatch.setattr(constructed_objects, "_Constructions", None)  # (not made at all)
    assert constructed_objects.rewrite(src) is src
