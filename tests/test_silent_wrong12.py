"""Silent wrong answers of #15's composition promise (each was a wrong number or dtype, returned without an
error), checked against jax, the user's function run by NumPy and the generated source run by NumPy:

- a Python number's tangent was a strong float64 zero (``s = 1.0; for ...: s = s * np.sum(x32)`` under
  ``jvp``/``jacfwd``/``hessian``: float64; jax: float32): ``adjoint.zeros_like`` of a Python number is ``0.0``;
- NumPy running batched source made a Python number repeated along the batch axis a float64 array
  (``vmap(lambda k: random.normal(k, (3,), np.float32))`` float64 samples): ``weak_arrays.WeakArray``;
- ``lax.scan(f, 0.0, x32)`` run by NumPy stacked float64 rows (the first from the Python number);
- ``jvp`` paired a dict's items with its tangent's by position (``zip(d.items(), d_dot.items())``): a tangent
  dict in another key order gave another number under NumPy; and NumPy read dict arguments in insertion
  order where the compiled function reads them sorted (as jax's jit);
- ``vals = list(params.values()); vals[0]`` (``tuple(d.items())``, ``[*d.values()]``): a zero gradient, then a
  refusal; now the derivative (``frontend/view_copies.py``).
"""


import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from srcjax import lax
from tests.twins import JAX

jax.config.update("jax_enable_x64", True)


# -- programs (module level: srcjax reads their source) -------------------------------------------------------

def carry_for(x):
    s = 1.0
    for i in range(3):
        s = s * np.sum(np.sin(x * (i + 1)))
    return s


def carry_fori(x):
    return lax.fori_loop(0, 3, lambda i, s: s * np.sum(np.cos(x)) + 0.5, 1.0)


def carry_while(x):
    s = 0.5
    i = 0
    while i < 3:
        s = s * 2.0 + np.sum(x ** 2)
        i = i + 1
    return s


def carry_if(x):
    s = 1.0
    if np.sum(x) > 0:
        s = np.sum(x * 2.0)
    return s * np.sum(x)


def scan_body(c, xi):
    return c + xi * 2.0, c


def carry_scan(x):
    c, ys = lax.scan(scan_body, 0.0, x)
    return c + np.sum(ys * x)


def carry_if_jax(x):  # (jax's twin of carry_if: its `if` on data as lax.cond)
    s = jax.lax.cond(jnp.sum(x) > 0, lambda: jnp.sum(x * 2.0), lambda: jnp.ones((), x.dtype))  # (jax: same dtypes)
    return s * jnp.sum(x)


def nested_dicts(tree, x):
    s = 0.0
    for name, sub in tree.items():
        for k, v in sub.items():
            s = s * 0.5 + np.sum(np.tanh(v * x)) * (len(name) + len(k))
    return s


def values_list_index(params, x):
    vals = list(params.values())
    return np.sum(vals[0] * x) + np.sum(vals[-1] ** 2)


def items_tuple(params, x):
    its = tuple(params.items())
    s = 0.0
    for _, v in its:
        s = s * 0.5 + np.sum(np.sin(v * x))
    return s + np.sum(its[1][1])


def star_values(params, x):
    a, b, c = [*params.values()]
    return np.sum(a * x * b) + np.sum(c ** 2)


def normal32(k):
    return srcjax.random.normal(k, (3,), np.float32)


def half_plus_one(x):
    return x * 0.5 + 1.0


def poly_carry(x):
    p = 2.0
    for c in (0.5, -1.0, 3.0):
        p = c + p * x
    return p


def int_count(x):
    n = 0
    for i in range(3):
        n = n + i
    return x * n + 1


def scan_rows(x):
    c, ys = lax.scan(scan_body, 0.0, x)
    return ys * 2.0 + c


def _jax(fn, **extra):
    return type(fn)(fn.__code__, {**fn.__globals__, "np": jnp, "lax": jax.lax, **extra})


X32 = np.array([0.3, -0.2, 0.5], np.float32)


# -- a Python number's tangent stays weak ---------------------------------------------------------------------

@pytest.mark.parametrize("fn", [carry_for, carry_fori, carry_while, carry_if], ids=lambda f: f.__name__)
def test_weak_carry_float32_forward(fn):
    twin = carry_if_jax if fn is carry_if else _jax(fn)
    checks = [
        ("jvp", lambda x: srcjax.jvp(fn, (x,), (x,))[1], lambda x: JAX.jvp(twin, (x,), (x,))[1], X32),
        ("jacfwd", srcjax.jacfwd(fn), JAX.jacfwd(twin), X32),
        ("hessian", srcjax.hessian(fn), JAX.hessian(twin), X32),
        ("vmap(jacfwd)", srcjax.vmap(srcjax.jacfwd(fn)), JAX.vmap(jax.jacfwd(twin)), np.stack([X32, -X32])),
    ]
    for what, ours, theirs, x in checks:
        got, want = ours(x), theirs(x)
        assert np.asarray(got).dtype == want.dtype == np.float32, what
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-4, atol=1e-5, err_msg=what)
        by_numpy = srcjax.numpy_function(srcjax.jit(ours))(x)
        assert np.asarray(by_numpy).dtype == np.float32, what
        np.testing.assert_allclose(np.asarray(by_numpy), np.asarray(want), rtol=2e-4, atol=1e-5, err_msg=what)


def test_scan_weak_init_by_numpy():
    f = srcjax.jit(carry_scan)
    want = jax.jit(_jax(carry_scan))(X32)
    for got in (f(X32), srcjax.numpy_function(f)(X32)):
        assert np.asarray(got).dtype == want.dtype == np.float32
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)


# -- NumPy running batched source keeps XLA's dtypes ---------------------------------------------------------

@pytest.mark.parametrize("fn", [half_plus_one, poly_carry, int_count], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dt", [np.float32, np.int32])
def test_vmap_python_numbers_dtype_by_numpy(fn, dt):
    x = np.arange(6, dtype=dt).reshape(2, 3)
    f = srcjax.vmap(fn)
    got, by_numpy, want = f(x), srcjax.numpy_function(f)(x), fn(x)
    assert np.asarray(got).dtype == np.asarray(by_numpy).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(np.asarray(by_numpy), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_vmap_scan_weak_init_by_numpy():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    f = srcjax.vmap(scan_rows)
    want = JAX.vmap(_jax(scan_rows))(x)
    for got in (f(x), srcjax.numpy_function(f)(x)):
        assert np.asarray(got).dtype == want.dtype == np.float32
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_vmap_random_normal_float32_by_numpy():
    keys = np.asarray(srcjax.random.split(srcjax.random.key(0), 4))
    f = srcjax.vmap(normal32)
    got, by_numpy = f(keys), srcjax.numpy_function(f)(keys)
    assert np.asarray(got).dtype == np.asarray(by_numpy).dtype == np.float32
    np.testing.assert_allclose(np.asarray(by_numpy), np.asarray(got), rtol=1e-5, atol=1e-6)


# -- jvp pairs a dict's tangent by key; NumPy reads dict arguments sorted ------------------------------------

def test_jvp_tangent_dict_in_another_key_order():
    r = np.random.default_rng(0)
    t = {"enc": {"w": r.normal(size=3), "bias": r.normal(size=3)}, "dec": {"w": r.normal(size=3)}}
    td = {"dec": {"w": r.normal(size=3)}, "enc": {"bias": r.normal(size=3), "w": r.normal(size=3)}}
    x, zeros = r.normal(size=3), np.zeros(3)
    want = jax.jvp(_jax(nested_dicts), (t, x), (td, zeros))[1]
    g = srcjax.jit(lambda a, b: srcjax.jvp(nested_dicts, (a, x), (b, zeros))[1])
    for got in (g(t, td), srcjax.numpy_function(g)(t, td), srcjax.jvp(nested_dicts, (t, x), (td, zeros))[1]):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10)


def test_numpy_reads_dict_arguments_sorted():
    r = np.random.default_rng(1)
    p = {k: r.normal(size=3) for k in "cab"}  # (insertion order is not sorted order)
    x = r.normal(size=3)
    want = jax.jit(jax.grad(_jax(values_list_index)))(p, x)
    g = srcjax.jit(srcjax.grad(values_list_index))
    for got in (g(p, x), srcjax.numpy_function(g)(p, x)):
        for k in p:
            np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-10)


# -- a dict's values or items copied into a list or tuple ----------------------------------------------------

def _fd(fn, p, x, eps=1e-6):
    out = {}
    for k in p:
        g = np.zeros_like(p[k])
        for i in range(p[k].size):
            hi, lo = dict(p), dict(p)
            hi[k], lo[k] = p[k].copy(), p[k].copy()
            hi[k][i] += eps
            lo[k][i] -= eps
            g[i] = (fn(hi, x) - fn(lo, x)) / (2 * eps)
        out[k] = g
    return out


@pytest.mark.parametrize("fn", [values_list_index, items_tuple, star_values], ids=lambda f: f.__name__)
def test_view_copies_differentiate(fn):
    r = np.random.default_rng(2)
    p = {k: r.normal(size=3) for k in "abc"}
    x = r.normal(size=3)
    twin = _jax(fn)
    want = JAX.grad(twin)(p, x)
    fd = _fd(fn, p, x)
    for got in (srcjax.grad(fn)(p, x), srcjax.jacfwd(fn)(p, x)):
        assert np.abs(np.asarray(got["a"])).max() > 0  # (was a zero gradient)
        for k in p:
            np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(np.asarray(got[k]), fd[k], rtol=1e-5, atol=1e-7)
    xs = np.stack([x, 2.0 * x])
    got = srcjax.vmap(srcjax.grad(fn), in_axes=(None, 0))(p, xs)
    want = JAX.vmap(jax.grad(twin), in_axes=(None, 0))(p, xs)
    for k in p:
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-9, atol=1e-12)


def unpack_view(params, x):
    a, b, c = params.values()
    return np.sum(a * x * b) + np.sum(c ** 2)


def unpack_view_jax(params, x):
    a, b, c = params.values()
    return jnp.sum(a * x * b) + jnp.sum(c ** 2)


def test_view_unpacked_directly_differentiates_each_value():
    """``a, b, c = params.values()`` (refused at the user's line before session 31: now read as
    ``list(params.values())``): the gradient of every value, as jax's."""
    rng = np.random.default_rng(3)
    p = {k: rng.standard_normal(3) for k in "abc"}
    x = rng.standard_normal(3)
    got = srcjax.grad(unpack_view)(p, x)
    want = JAX.grad(unpack_view_jax)(p, x)
    assert set(got) == set(p)
    for k in p:
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-12, atol=1e-12)
