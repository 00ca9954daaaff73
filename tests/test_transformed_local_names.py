"""A transformation bound to a local and called (``f = srcjax.jit(srcjax.vmap(lambda x: ...))``, then ``f(X)``).

The call's result was named after the helper it calls (``lambda_fn_vmap = lambda_fn_vmap(X, w)``): XLA's run
was right (srcjax reads the statement in order), but the generated source run by NumPy, or printed and run by
the user, raised "cannot access local variable 'lambda_fn_vmap'" (vmap16's jitted_vmapped_inner). A helper a
name resolves to is reserved now, as a helper called by name is (``frontend/resolve.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import srcjax


def jitted_vmapped_inner(w: Any, X: Any) -> Any:
    f = srcjax.jit(srcjax.vmap(lambda x: np.tanh(np.dot(w, x))))
    return np.mean(f(X) ** 2)


def _reference(w: Any, X: Any) -> Any:
    return np.mean(np.tanh(X @ w) ** 2)


W = np.array([0.1, -0.2, 0.3])
X = np.arange(12.0).reshape(4, 3) / 10


def test_the_generated_source_runs_by_numpy_and_agrees() -> None:
    want = _reference(W, X)
    np.testing.assert_allclose(np.asarray(srcjax.jit(jitted_vmapped_inner)(W, X)), want, rtol=1e-12)
    np.testing.assert_allclose(srcjax.numpy_function(srcjax.jit(jitted_vmapped_inner))(W, X), want, rtol=1e-12)
    text = srcjax.source(srcjax.jit(jitted_vmapped_inner))
    assert "lambda_fn_vmap = lambda_fn_vmap(" not in text


def test_its_gradient_by_numpy_agrees_with_finite_differences() -> None:
    g = srcjax.numpy_function(srcjax.grad(jitted_vmapped_inner))(W, X)
    eps = 1e-6
    fd = [(_reference(W + eps * e, X) - _reference(W - eps * e, X)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(np.asarray(g), fd, rtol=1e-6, atol=1e-9)
