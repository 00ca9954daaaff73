"""A ufunc's output written into an array, as scikit-learn writes its kernels and norms (hunt25): the positional
output (``np.exp(K, K)``, ``np.sqrt(norms, norms)``, ``np.tanh(S, S)``) and a call writing into ``out=`` used as a
value (``return np.sqrt(d, out=d)``, ``p = np.exp(p, p)``): each the write into the array (``K[...] = np.exp(K)``,
frontend/numpy_calls.py), the value the array written, as NumPy returns it. Were refused ("too many positional
arguments", "unexpected keyword argument 'out'"). A name bound to the call's value is the array written: an in-place
change of either later, with the other read, is refused as any alias is. Oracles: the function run by NumPy;
finite differences for the gradient."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax


def exp_positional(K):
    K = K * 1.0
    np.exp(K, K)
    return K


def sqrt_out_value(d):
    d = d * d
    return np.sqrt(d, out=d)


def exp_rebound(p):
    p = p - 1.0
    p = np.exp(p, p)
    return p + 1


def row_normalized(X):
    norms = np.einsum("ij,ij->i", X, X)
    np.sqrt(norms, norms)
    return X / norms[:, np.newaxis]


def add_into(x):
    y = x * 2.0
    z = np.add(x, 1.0, y)
    return z * y


def kernels(X, gamma=0.5, coef0=1.0):
    K = np.dot(X, X.T)
    K *= gamma
    K += coef0
    np.tanh(K, K)
    L = -gamma * np.abs(X[:, np.newaxis, :] - X[np.newaxis, :, :] + 0.1).sum(axis=2)
    np.exp(L, L)
    return K + L


def alias_changed_after(p):
    p = p * 1.0
    q = np.exp(p, p)
    p += 1.0
    return q


def alias_of_out(K):
    K = K * 1.0
    L = K
    np.exp(K, K)
    return L


PROGRAMS = [exp_positional, sqrt_out_value, exp_rebound, row_normalized, add_into, kernels]


@pytest.mark.parametrize("fn", PROGRAMS)
def test_a_ufunc_writing_its_output_runs_as_numpy(fn: Any) -> None:
    x = np.array([[0.5, 1.0, -0.3], [2.0, 0.3, 0.7]])
    np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(x)), fn(x.copy()), rtol=1e-12)
    loss = lambda a: np.sum(fn(a) ** 2)  # noqa: E731
    fd = np.array([(loss(x + 1e-6 * e) - loss(x - 1e-6 * e)) / 2e-6 for e in np.eye(6).reshape(6, 2, 3)])
    np.testing.assert_allclose(np.asarray(srcjax.grad(loss)(x)), fd.reshape(2, 3), rtol=1e-5, atol=1e-6)
    xs = np.stack([x, x[::-1] * 0.5])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(fn)(xs)), np.stack([fn(a.copy()) for a in xs]), rtol=1e-12)


@pytest.mark.parametrize("fn", [alias_changed_after, alias_of_out])
def test_a_second_name_of_the_array_written_is_refused_where_read_after_a_change(fn: Any) -> None:
    with pytest.raises(srcjax.TranspileError, match="would keep the old value"):
        srcjax.jit(fn)(np.ones((2, 2)))
