"""What jax runs and srcjax refused (refuse48), against eager jax (the user's text with np as jax.numpy), the user's
function run by NumPy and finite differences: Python's ``min``/``max`` of single values under derivatives (the first
of equal values gets the whole cotangent, as Python's comparison keeps it and eager jax differentiates it)."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax

jax.config.update("jax_enable_x64", True)


def jax_twin(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with ``np`` read as jax.numpy (eager jax runs Python's min on concrete values)."""
    return types.FunctionType(fn.__code__, {**fn.__globals__, "np": jnp}, fn.__name__, fn.__defaults__)


def fd_grad(fn: Callable[..., Any], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    return np.array([(fn(x + eps * e) - fn(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


# == builtin min/max of single values =================================================================================


def pair_min_max(x):
    return max(x[0], x[1]) + min(x[1] * 2.0, 1.0) * min(x[0], x[1])


def several_min_max(x):
    return min(x[0], x[1], x[2]) + max([x[0] * 2.0, x[1], 1.0]) - min((x[2], x[0] ** 2))


def clipped_step(x, lr=0.5):
    # a step length capped by the gradient's norm, a trust region by hand
    g = 2.0 * x
    norm = np.sqrt(np.sum(g * g))
    step = min(lr, 1.0 / norm)
    return np.sum((x - step * g) ** 2) + max(norm, 0.1)


POINTS = [np.array([3.0, 1.0, 2.0]), np.array([0.2, 0.4, 0.3]), np.array([1.0, 1.0, 1.0]),
          np.array([0.5, 0.25, -1.0])]


@pytest.mark.parametrize("fn", [pair_min_max, several_min_max, clipped_step], ids=lambda f: f.__name__)
def test_builtin_min_max_of_single_values_under_derivatives(fn):
    """Refused before ("the builtin min() compares values known only at run time"): ``min(a, b)`` of single values
    is ``np.where(b < a, b, a)`` to derivatives (ties: the first argument, eager jax's gradient); several values
    or a list written out compare in Python's order, two at a time."""
    g, jg = srcjax.grad(fn), jax.grad(jax_twin(fn))
    for x in POINTS:
        want = np.asarray(jg(x))
        np.testing.assert_allclose(np.asarray(g(x)), want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(x)), fn(x), rtol=1e-12)
        t = np.array([1.0, -0.5, 0.25])
        out, out_dot = srcjax.jvp(fn, (x,), (t,))
        np.testing.assert_allclose(np.asarray(out_dot), float(want @ t), rtol=1e-12, atol=1e-12)
    x = np.array([0.7, 0.25, -1.0])  # (no ties: finite differences agree)
    np.testing.assert_allclose(np.asarray(g(x)), fd_grad(fn, x), rtol=1e-6, atol=1e-8)
    X = np.stack(POINTS)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(g)(X)), [np.asarray(jg(x)) for x in X], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.hessian(fn)(x)), np.asarray(jax.hessian(jax_twin(fn))(x)),
                               rtol=1e-10, atol=1e-10)


def min_of_vectors(a, b):
    return np.sum(min(a, b))


def test_builtin_min_of_arrays_is_refused_as_numpy_refuses_it():
    a, b = np.ones(3), np.zeros(3)
    with pytest.raises(ValueError, match="ambiguous"):
        min_of_vectors(a, b)
    for make in (srcjax.jit, srcjax.grad):
        with pytest.raises(srcjax.TranspileError, match="NumPy refuses their truth value too") as e:
            make(min_of_vectors)(a, b)
        assert "test_refuse48.py" in str(e.value) and "np.minimum" in str(e.value)


# == a `while` test whose right side indexes with the counter =========================================================


def first_not_below(x, v):
    n = x.shape[0]
    k = 0
    while k < n and x[k] < v:
        k += 1
    return k


def sum_below(x, v):
    n = x.shape[0]
    k = 0
    s = 0.0
    while k < n and s + x[k] < v:
        s = s + x[k]
        k += 1
    return s * k


@pytest.mark.parametrize("fn", [first_not_below, sum_below], ids=lambda f: f.__name__)
def test_while_and_indexed_by_its_counter_runs_under_jit(fn):
    """Refused before ("a value carried by a loop on array data is used where srcjax needs it at transpile time"):
    a `while` on data cannot be unrolled, so the counter is carried as data and the test is the `and` of two
    booleans of data; NumPy never reads ``x[n]``, XLA reads it at a clamped index where ``k < n`` is False already
    (jax's value)."""
    x = np.array([1.0, 2.0, 3.0])
    for v in (0.5, 2.5, 4.0, 10.0):
        np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(x, v)), fn(x, v), rtol=1e-15)
    X = np.array([[1.0, 2.0, 3.0], [0.1, 0.2, 0.3], [5.0, 0.0, 1.0]])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(fn, in_axes=(0, None))(X, 2.5)), [fn(r, 2.5) for r in X])


def test_while_and_indexed_by_its_counter_differentiates():
    """Refused before under grad ("reverse mode through this `while` test (an `and`/`or` whose right side may fail
    when the left decides)"): each side of the `and` is its own ``if not ...: break`` in the bounded loop, in order,
    so the generated source run by NumPy never reads ``x[n]`` either."""
    x = np.array([1.0, 2.0, 3.0])
    g, jg = srcjax.grad(sum_below), jax.grad(jax_twin(sum_below))
    for v in (0.5, 2.5, 4.0, 10.0):
        want = np.asarray(jg(x, v))
        np.testing.assert_allclose(np.asarray(g(x, v)), want, rtol=1e-15)
        np.testing.assert_allclose(np.asarray(srcjax.numpy_function(g)(x, v)), want, rtol=1e-15)
        np.testing.assert_allclose(np.asarray(g(x, v)), fd_grad(lambda y, v=v: sum_below(y, v), x), atol=1e-6)
    X = np.array([[1.0, 2.0, 3.0], [0.1, 0.2, 0.3], [5.0, 0.0, 1.0]])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(g, in_axes=(0, None))(X, 2.5)),
                               [np.asarray(jg(r, 2.5)) for r in X], rtol=1e-15)
