"""A method bound to an object, transformed as the entry: ``srcjax.jit(Model().loss)``, ``srcjax.grad(m.loss)``
(was "cannot compile <bound method Model.loss of ...>: it has no Python source"). As in JAX, the object is a
constant of the program, as a partial's bound argument (``partials.bound_method``)."""

from __future__ import annotations

from typing import Any

import numpy as np

import srcjax


class Model:
    def __init__(self, w: Any) -> None:
        self.w = w

    def predict(self, x: Any) -> Any:
        return np.tanh(x @ self.w)

    def loss(self, x: Any, scale: float = 2.0) -> Any:
        return scale * np.sum(self.predict(x) ** 2)


W = np.array([[0.5, -0.2], [0.1, 0.3], [-0.4, 0.2]])
X = np.array([0.3, -0.7, 1.1])


def _loss(x: Any, scale: float = 2.0) -> Any:
    return scale * np.sum(np.tanh(x @ W) ** 2)


def test_jit_grad_and_vmap_of_a_bound_method_agree_with_numpy() -> None:
    np.testing.assert_allclose(np.asarray(srcjax.jit(Model(W).loss)(X)), _loss(X), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.jit(Model(W).loss)(X, 3.0)), _loss(X, 3.0), rtol=1e-12)
    eps = 1e-6
    fd = [(_loss(X + eps * e) - _loss(X - eps * e)) / (2 * eps) for e in np.eye(3)]
    m = Model(W)
    np.testing.assert_allclose(np.asarray(srcjax.grad(m.loss)(X)), fd, rtol=1e-6, atol=1e-9)
    xs = np.stack([X, -X, 2 * X])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(m.predict)(xs)), np.tanh(xs @ W), rtol=1e-12)
    by_numpy = srcjax.numpy_function(srcjax.grad(m.loss))(X)
    np.testing.assert_allclose(np.asarray(by_numpy), fd, rtol=1e-6, atol=1e-9)


def test_each_object_is_its_own_constant() -> None:
    a, b = Model(W), Model(2 * W)
    np.testing.assert_allclose(np.asarray(srcjax.jit(a.predict)(X)), np.tanh(X @ W), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.jit(b.predict)(X)), np.tanh(X @ (2 * W)), rtol=1e-12)


def test_a_bound_method_is_transpiled_once(monkeypatch: Any) -> None:
    """``srcjax.jit(m.loss)(x)`` in a loop wrote (and transformed) a new function at every call: ``m.loss`` is a
    new object at each attribute access, so each got a partial and a generated function of its own (jacrev's
    second call 0.7 s). The partial is kept per method and object now: the second call writes nothing, and the
    object's attributes are still read again where they changed."""
    from srcjax import partials

    written: list[Any] = []
    write = partials._write
    monkeypatch.setattr(partials, "_write", lambda *a: written.append(a) or write(*a))
    m = Model(W)
    for t in (srcjax.jit, srcjax.grad, srcjax.jacrev):
        t(m.loss)(X)
        n = len(written)
        np.testing.assert_allclose(np.asarray(t(m.loss)(X)), np.asarray(t(m.loss)(X)), rtol=1e-12)
        assert len(written) == n, t
    assert partials.bound_method(m.loss) is partials.bound_method(m.loss)
    assert partials.bound_method(Model(W).loss) is not partials.bound_method(m.loss)
    m.w = 2 * W
    np.testing.assert_allclose(np.asarray(srcjax.jit(m.loss)(X)), 2.0 * np.sum(np.tanh(X @ (2 * W)) ** 2),
                               rtol=1e-12)
    m.w[0, 0] = 5.0
    np.testing.assert_allclose(np.asarray(srcjax.jit(m.loss)(X)), m.loss(X), rtol=1e-12)
