"""``lax.scan`` whose carry starts as Python numbers, under forward mode, against jax (tests/twins.py).

jax promotes a weak-typed start value to the dtype of the carry the scanned function returns (``scan(f, 0.0,
x32)`` carries float32). Differentiation writes a scan out as its first step (whose row sizes the ys buffer)
and a loop over the rest; the first step read the Python number itself, so a row that is the carry (``return c
+ v, c``) made a float64 buffer: ``jvp``/``jacfwd``/``vmap(jacfwd)`` returned float64 where jax returns
float32. Each check runs the transformation by XLA and its generated source by NumPy (``numpy_function``).
The default tier checks forward mode at float32 (the class fixed) and jacrev/hessian on rows_are_carry;
``SRCJAX_HYPOTHESIS=thorough`` checks every transformation at float32 and float64.
"""

import jax
import numpy as np
import pytest

import srcjax
from tests.tiers import THOROUGH
from tests.twins import JAX, jax_twin

jax.config.update("jax_enable_x64", True)


# -- programs (module level: srcjax and the twins read their source) ------------------------------------------

def rows_are_carry(x):
    def body(c, v):
        return c + v * 2.0, c
    c, ys = srcjax.lax.scan(body, 0.0, x)
    return c + np.sum(ys * x)


def rows_scaled(x):
    def body(c, v):
        return c * 0.5 + np.sin(v), c * 3.0 - 1.0
    c, ys = srcjax.lax.scan(body, 1.0, x)
    return ys * c


def by_length(x):
    def body(c, _):
        return c * 0.5 + np.sum(x ** 2), c
    c, ys = srcjax.lax.scan(body, 0.0, None, length=4)
    return np.sum(ys) + c


def tuple_carry(x):
    def body(c, v):
        a, b = c
        return (a + v, b * 0.5 + a * v), (a, b * 2.0)
    (a, b), (ya, yb) = srcjax.lax.scan(body, (0.0, 1.0), x)
    return a * b + np.sum(ya * yb)


def dict_carry(x):
    def body(c, v):
        s = c["s"] + np.tanh(v)
        return {"s": s, "n": c["n"] + 1.0, "h": c["h"] * v}, {"prev": c["s"], "h": c["h"]}
    c, ys = srcjax.lax.scan(body, {"s": 0.0, "n": 0.0, "h": x[0]}, x)
    return c["s"] * c["n"] + np.sum(ys["prev"]) + np.sum(ys["h"] * c["h"])


def reversed_rows(x):
    def body(c, v):
        return c * v + 1.0, (c, v)
    c, (ys, vs) = srcjax.lax.scan(body, 2.0, x, reverse=True)
    return np.sum(ys * vs) + c


def int_counter(x, k):
    def body(c, row):
        n, s = c
        kv, xv = row
        return (n + kv, s + xv * 2.0), (n, s)
    (n, s), (ns, ss) = srcjax.lax.scan(body, (0, 0.0), (k, x))
    return s + np.sum(ss), ns


def mapped(x):  # (srcjax reads lax.map as a scan carrying the Python int 0 unchanged: no dtype to find)
    return np.sum(srcjax.lax.map(lambda v: np.sin(v) * 2.0, x) * x)


PROGRAMS = [rows_are_carry, rows_scaled, by_length, tuple_carry, dict_carry, reversed_rows, mapped]


def _x(dtype):
    return np.array([0.3, -0.2, 0.5, 0.7], dtype)


def _same(got, want, what, dtype):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype == dtype, (what, got.dtype, want.dtype)
    tol = 2e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_forward_mode_keeps_jax_dtype(fn, dtype):
    twin = jax_twin(fn)
    x = _x(dtype)
    xb = np.stack([x, -x * 0.5])
    if dtype == np.float64 and not THOROUGH:
        pytest.skip("float64: SRCJAX_HYPOTHESIS=thorough (the float32 case checks the same class)")
    checks = [
        ("jvp", lambda a: srcjax.jvp(fn, (a,), (a,))[1], lambda a: JAX.jvp(twin, (a,), (a,))[1], x),
        ("jacfwd", srcjax.jacfwd(fn), JAX.jacfwd(twin), x),
        ("vmap(jacfwd)", srcjax.vmap(srcjax.jacfwd(fn)), JAX.vmap(jax.jacfwd(twin)), xb),
    ]
    if THOROUGH or fn is rows_are_carry:  # (dict_carry's, ~3.5 CPU s: thorough)
        checks.append(("jacrev", srcjax.jacrev(fn), JAX.jacrev(twin), x))
        if fn is not rows_scaled:  # (a scalar output)
            checks.append(("hessian", srcjax.hessian(fn), JAX.hessian(twin), x))
    for what, ours, theirs, a in checks:
        want = theirs(a)
        _same(ours(a), want, what, dtype)
        _same(srcjax.numpy_function(srcjax.jit(ours))(a), want, f"{what} by NumPy", dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_int_counter_carry(dtype):
    """An int32 counter carried from the Python int 0 stays int32 (rows too) beside a float carry."""
    x = _x(dtype)
    k = np.array([1, 2, 3, 4], np.int32)
    twin = jax_twin(int_counter)
    want_value, want_ns = jax.jit(twin)(x, k)
    for f in (srcjax.jit(int_counter), srcjax.numpy_function(srcjax.jit(int_counter))):
        value, ns = f(x, k)
        _same(value, want_value, "value", dtype)
        assert np.asarray(ns).dtype == np.int32 == want_ns.dtype
        np.testing.assert_array_equal(np.asarray(ns), np.asarray(want_ns))
    jac = srcjax.jacfwd(lambda a: int_counter(a, k)[0])
    want = jax.jacfwd(lambda a: twin(a, k)[0])(x)
    _same(jac(x), want, "jacfwd", dtype)
    _same(srcjax.numpy_function(srcjax.jit(jac))(x), want, "jacfwd by NumPy", dtype)
