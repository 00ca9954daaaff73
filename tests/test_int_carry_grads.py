"""Derivatives of loops whose carry holds an integer beside floats (a counter in a tuple or dict carry).

Activity alone made the counter active (the carry is one active container), and reverse mode read its
cotangent, None, from the carry's cotangent: an internal error (session 30, crash12). Checked against jax
running the same text (``np`` as jax.numpy, ``srcjax.lax`` as jax.lax) and against finite differences.
"""

from __future__ import annotations

import inspect
import textwrap
import types

import numpy as np
import pytest

import srcjax
from tests.twins import JAX

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def fori_tuple(x):
    def body(i, c):
        n, s = c
        return (n + 1, s * 0.5 + x[i] * n)
    n, s = srcjax.lax.fori_loop(0, 3, body, (0, 0.0))
    return s


def fori_tuple_data_start(x):
    def body(i, c):
        n, s = c
        return (n + 2, s * x[i] + n * x[i] * x[i])
    n, s = srcjax.lax.fori_loop(0, 3, body, (1, x[0] * 0))
    return s + n


def fori_dict(x):
    def body(i, c):
        return {"n": c["n"] + 1, "s": c["s"] * 0.9 + np.sin(x[i]) * c["n"]}
    out = srcjax.lax.fori_loop(0, 3, body, {"n": 0, "s": 0.0})
    return out["s"]


def while_tuple(x):
    def cond(c):
        return c[0] < 3
    def body(c):
        n, s = c
        return (n + 1, s + x[n] * x[n] * (n + 1))
    n, s = srcjax.lax.while_loop(cond, body, (0, 0.0))
    return s


def scan_tuple(x):
    def step(c, xi):
        n, s = c
        return (n + 1, s * 0.5 + xi * n), s * xi
    (n, s), ys = srcjax.lax.scan(step, (0, 0.0), x)
    return s + np.sum(ys)


def vector_fori(x):
    def body(i, c):
        n, v = c
        return (n + 1, v * 0.5 + x * x[i] * n)
    n, v = srcjax.lax.fori_loop(0, 3, body, (0, np.zeros(3)))
    return v


def scan_dict(x):
    def step(c, xi):
        return {"n": c["n"] + 1, "s": c["s"] * 0.5 + xi * c["n"]}, c["s"] * xi
    c, ys = srcjax.lax.scan(step, {"n": 0, "s": 0.0}, x)
    return c["s"] + np.sum(ys)
def fori_nested(x):
    def body(i, c):
        (n, m), s = c
        return ((n + 1, m * 2), s * 0.5 + x[i] * n * m)
    c = srcjax.lax.fori_loop(0, 3, body, ((0, 1), 0.0))
    return c[1]
def while_dict(x):
    def cond(c):
        return c["n"] < 3
    def body(c):
        return {"n": c["n"] + 1, "s": c["s"] + x[c["n"]] ** 2 * c["n"]}
    return srcjax.lax.while_loop(cond, body, {"n": 0, "s": 0.0})["s"]


SCALARS = [fori_tuple, fori_tuple_data_start, fori_dict, scan_tuple, scan_dict, fori_nested]


def as_jax(fn):
    """``fn`` run by jax: its text with ``np`` as jax.numpy and ``srcjax.lax`` as jax.lax."""
    ns = {"np": jax.numpy, "srcjax": types.SimpleNamespace(lax=jax.lax)}
    exec(textwrap.dedent(inspect.getsource(fn)), ns)
    return ns[fn.__name__]


X = np.array([1.0, 2.0, 3.0])


@pytest.mark.parametrize("fn", SCALARS, ids=lambda f: f.__name__)
def test_grad_of_int_counter_carry(fn):
    np.testing.assert_allclose(np.asarray(srcjax.grad(fn)(X)), np.asarray(JAX.grad(as_jax(fn))(X)), rtol=1e-12)


def test_grad_of_a_while_loop_counting_in_its_carry():
    # (jax's reverse mode refuses while_loop: its forward mode is the oracle)
    for fn in (while_tuple, while_dict):
        np.testing.assert_allclose(np.asarray(srcjax.grad(fn, max_iters=5)(X)),
                                   np.asarray(JAX.jacfwd(as_jax(fn))(X)), rtol=1e-12)


@pytest.mark.parametrize("fn", [fori_tuple, fori_dict], ids=lambda f: f.__name__)
def test_grad_matches_finite_differences(fn):
    eps = 1e-6
    fd = [(fn(X + eps * e) - fn(X - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(np.asarray(srcjax.grad(fn)(X)), fd, rtol=1e-6, atol=1e-8)


def test_hessian_and_vmap_grad_of_int_counter_carry():
    fn = fori_tuple_data_start
    np.testing.assert_allclose(np.asarray(srcjax.hessian(fn)(X)), np.asarray(JAX.hessian(as_jax(fn))(X)),
                               rtol=1e-12)
    xs = np.stack([X, X + 1.0])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(fn))(xs)),
                               np.asarray(JAX.vmap(jax.grad(as_jax(fn)))(xs)), rtol=1e-12)


def test_jacrev_and_vjp_of_a_vector_carried_with_a_counter():
    want = np.asarray(JAX.jacrev(as_jax(vector_fori))(X))
    np.testing.assert_allclose(np.asarray(srcjax.jacrev(vector_fori)(X)), want, rtol=1e-12)
    out, pullback = srcjax.vjp(vector_fori, X)
    np.testing.assert_allclose(np.asarray(pullback(np.array([1.0, -2.0, 0.5]))[0]),
                               np.array([1.0, -2.0, 0.5]) @ want, rtol=1e-12)


def scan_vector(x):
    def step(c, xi):
        c = c * 0.5 + xi * xi * x
        return c, c[0] * xi
    c, ys = srcjax.lax.scan(step, np.zeros(3), x)
    return ys


@pytest.mark.parametrize("fn", [scan_vector, vector_fori], ids=lambda f: f.__name__)
def test_hessian_of_a_vector_output_and_its_generated_source(fn):
    """jax's hessian of a vector output is jacfwd(jacrev(f)); srcjax's too, also where NumPy runs the generated
    source (``srcjax.numpy_function``: was the generic form's raw AssertionError, "grad requires a real scalar
    output")."""
    want = np.asarray(JAX.hessian(as_jax(fn))(X))
    h = srcjax.hessian(fn)
    np.testing.assert_allclose(np.asarray(h(X)), want, rtol=1e-12)
    np.testing.assert_allclose(srcjax.numpy_function(h)(X), want, rtol=1e-12)


def test_vmap_of_the_hessian_of_a_vector_output_under_numpy():
    h = srcjax.hessian(scan_vector)
    xs = np.stack([X, X + 0.5])
    np.testing.assert_allclose(srcjax.numpy_function(srcjax.vmap(h))(xs), np.asarray(JAX.vmap(jax.hessian(
        as_jax(scan_vector)))(xs)), rtol=1e-12)
