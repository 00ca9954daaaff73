"""NumPy functions srcjax refused as unsupported until session 34 (found by calling every function
``numpy`` and ``jax.numpy`` share): joining and splitting (``column_stack``, ``dstack``, ``hsplit``/
``vsplit``/``dsplit``, ``broadcast_arrays``, ``diagflat``, ``ediff1d``, ``matrix_transpose``,
``cumulative_sum``/``cumulative_prod``, ``rollaxis``, ``tri``, ``array_equal``/``array_equiv``) and
elementwise functions and products (``signbit``, ``copysign``, ``fabs``, ``isposinf``/``isneginf``,
``iscomplex``/``isreal``, ``modf``, ``divmod``, ``nancumsum``/``nancumprod``, ``geomspace``, ``unwrap``,
``vecdot``/``matvec``/``vecmat``, ``ldexp``, ``frexp``, ``choose``, ``poly``).
Each case is one function run three ways: by srcjax (jit, grad of a weighted sum of squares of its
results, vmap of that grad) and, as the oracle, by jax with the same code (``np`` bound to
``jax.numpy``) and by NumPy (values and dtypes). Then the located refusals, and positional-only
parameters of a helper (a silent zero derivative before)."""

from __future__ import annotations

import types
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from tests.twins import JAX, jitted

jax.config.update("jax_enable_x64", True)


def column_stack(x, v):
    return np.column_stack((v[:3], x, 2.0 * x[:, 0]))


def dstack(x, v):
    return np.dstack((x, x * v)), np.dstack((v, v))


def hsplit(x, v):
    a, b = np.hsplit(x, 2)
    c, d = np.hsplit(v, [1])
    return a * b, c, d


def vsplit_dsplit(x, v):
    a, b = np.vsplit(x, [1])
    c, d = np.dsplit(x[:, :, np.newaxis] * v[:2], 2)
    return a, b, c * d


def broadcast_arrays(x, v):
    a, b, c = np.broadcast_arrays(x, v, v[:3, np.newaxis] * 0.5)
    return a * b + c


def diagflat(x, v):
    return np.diagflat(v, 1), np.diagflat(x[:2, :2], -1)


def ediff1d(x, v):
    return np.ediff1d(x), np.ediff1d(v, to_begin=x[0, 0], to_end=x[1, :2])


def matrix_transpose(x, v):
    return np.matrix_transpose(x) @ v[:3]


def cumulative(x, v):
    return (np.cumulative_sum(x, axis=1, include_initial=True), np.cumulative_prod(v),
            np.cumulative_prod(x, axis=0, include_initial=True), np.cumulative_sum(v))


def rollaxis_tri(x, v):
    y = x[:, :, np.newaxis] * v[:2]
    return np.rollaxis(y, 2), np.rollaxis(y, 0, 3), np.tri(3, 4, 1) * x, np.tri(4, k=-1) @ v


def equal_where(x, v):
    e = np.array_equal(x, x * 1.0) * x + np.array_equal(x, x[:2]) * 2.0 + np.array_equiv(v, x[0]) * 3.0
    return e + np.array_equiv(x, x[0]) + np.array_equal(v, v, equal_nan=True)


def signs(x, v):
    s = np.signbit(x - 1.0) * 1.0 + np.copysign(x, x - 1.0) + np.fabs(x - 1.0)
    return s, np.isposinf(x / (x - x)) * 1.0 + np.isneginf(-x / (x - x)), np.iscomplex(x) * 1.0 + np.isreal(x)


def modf_divmod(x, v):
    f, w = np.modf(x * 3.0 - 2.0)
    q, r = np.divmod(x * 5.0, v * 2.0)
    return f, w, q, r


def nan_cumulative(x, v):
    y = np.where(x > 1.2, np.nan, x)
    return np.nancumsum(y), np.nancumsum(y, axis=1), np.nancumprod(y, axis=0)


def geomspace(x, v):
    return (np.geomspace(1.0, 1000.0, 4) * v, np.geomspace(v[:2], v[2:] * 10.0, 3, axis=1),
            np.geomspace(2.0, 32.0, 5, endpoint=False))


def unwrap(x, v):
    return np.unwrap(x * 7.0), np.unwrap(x * 7.0, axis=0), np.unwrap(v * 2.5, period=1.0)


def products(x, v):
    return np.vecdot(x, v), np.matvec(x, v), np.vecmat(x[:, 0], x), np.vecdot(x, x, axis=0)


def choose_ldexp_poly(x, v):
    i = np.array([[0, 2, 1, 5], [1, 0, 2, 2], [2, 2, 0, 1]])
    m, e = np.frexp(x * 100.0)
    return (np.choose(i, [x, x * 2.0, v], mode="clip"), np.ldexp(x, np.array([3, -2, 0, 7])), np.poly(v),
            np.ldexp(v.astype(np.float32), 2), m, e)


CASES = [choose_ldexp_poly, column_stack, dstack, hsplit, vsplit_dsplit, broadcast_arrays, diagflat, ediff1d, matrix_transpose,
         cumulative, rollaxis_tri, equal_where, signs, modf_divmod, nan_cumulative, geomspace, unwrap, products]


def with_jax(fn: Any) -> Any:
    """``fn``'s code with ``np`` bound to ``jax.numpy`` (the oracle runs the user's very lines)."""
    return types.FunctionType(fn.__code__, {**fn.__globals__, "np": jnp}, fn.__name__)


def loss_of(fn: Any) -> Any:
    def loss(x, v):
        leaves = fn(x, v)
        leaves = leaves if isinstance(leaves, tuple) else (leaves,)
        return sum((k + 1.0) * (leaf.astype(float) ** 2).sum() for k, leaf in enumerate(leaves))
    return loss


def leaves(r: Any) -> list[Any]:
    return list(r) if isinstance(r, (tuple, list)) else [r]


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    return rng.uniform(0.5, 1.5, (3, 4)), rng.uniform(0.5, 1.5, (4,))


@pytest.mark.parametrize("fn", CASES, ids=[f.__name__ for f in CASES])
def test_against_jax_and_numpy(fn):
    x, v = data()
    got, want, ref = leaves(srcjax.jit(fn)(x, v)), leaves(jitted(with_jax(fn))(x, v)), leaves(fn(x, v))
    assert len(got) == len(want) == len(ref)
    for g, w, r in zip(got, want, ref):
        assert np.asarray(g).dtype == np.asarray(r).dtype, (np.asarray(g).dtype, np.asarray(r).dtype)
        np.testing.assert_allclose(np.asarray(g), r, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)
    # (the loss is written with methods and builtins srcjax reads too, so it is one program)
    got_bars = srcjax.grad(loss_of(fn), argnums=(0, 1))(x, v)
    for g, w in zip(got_bars, JAX.grad(loss_of(with_jax(fn)), argnums=(0, 1))(x, v)):  # (jax's oracles jitted)
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-12)
    xs = np.stack([x, 2.0 * x])
    vg = srcjax.vmap(srcjax.grad(loss_of(fn)), in_axes=(0, None))(xs, v)
    np.testing.assert_allclose(np.asarray(vg), JAX.vmap(jax.grad(loss_of(with_jax(fn))), in_axes=(0, None))(xs, v),
                               rtol=1e-10, atol=1e-12)


def integer_joins(i, j):
    return np.column_stack((i, j)), np.dstack((i, j)), np.cumulative_sum(i), np.ediff1d(i, to_end=j[:1]), np.tri(2, dtype=int)


def test_integer_dtypes_follow_numpy():
    i, j = np.arange(4, dtype=np.int32), np.arange(4, dtype=np.int64)
    for g, r in zip(srcjax.jit(integer_joins)(i, j), integer_joins(i, j)):
        assert np.asarray(g).dtype == r.dtype and np.array_equal(np.asarray(g), r), (g, r)


def sign_bits(x, i):
    f, w = np.modf(x)
    return np.signbit(x), np.copysign(2.0, x), np.copysign(i, x), np.signbit(i), np.fabs(i), f, w


def signbit_only(x):
    return np.signbit(x)


def test_signed_zeros_nans_and_integers_follow_numpy():
    x = np.array([-0.0, 0.0, -np.nan, np.nan, -np.inf, np.inf, -1.5, 2.5])
    i = np.arange(-4, 4, dtype=np.int32)
    with np.errstate(invalid="ignore"):
        ref = sign_bits(x, i)
    for g, r in zip(srcjax.jit(sign_bits)(x, i), ref):
        g = np.asarray(g)
        assert g.dtype == r.dtype and g.shape == r.shape, (g.dtype, r.dtype)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(r))
        np.testing.assert_array_equal(g, r)
    x32 = x.astype(np.float32)
    assert np.asarray(srcjax.jit(signbit_only)(x32)).tolist() == np.signbit(x32).tolist()


def ldexp_only(x, n):
    return np.ldexp(x, n)


def frexp_only(x):
    return np.frexp(x)


def test_frexp_follows_numpy():
    x = np.array([1.0, -3.0, 0.5, 1e-300, 1e300, -0.0, 0.0, np.inf, -np.inf, np.nan, 0.7, 1024.0])
    for v in (x, x[:-3].astype(np.float32) * 1e-20, np.arange(-3, 4, dtype=np.int32)):
        with np.errstate(all="ignore"):
            want = np.frexp(v)
        for g, w in zip(srcjax.jit(frexp_only)(v), want):
            g = np.asarray(g)
            assert g.dtype == w.dtype, (g.dtype, w.dtype)
            np.testing.assert_array_equal(g, w)
            np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


def test_ldexp_is_exact_in_the_normal_range():
    x = np.array([1.0, 3.0, 1e-300, 1e300, -0.0, np.inf, -2.5, 0.7])
    n = np.array([1023, -1022, 1000, -1500, 3, -2, 900, -1020])  # (XLA flushes subnormals to zero)
    with np.errstate(all="ignore"):
        assert np.asarray(srcjax.jit(ldexp_only)(x, n)).tolist() == np.ldexp(x, n).tolist()


def poly_of_a_matrix(x):
    return np.poly(x)


def row_stacked(x, v):
    return np.row_stack((x, v))


def test_row_stack_is_vstack():
    x, v = data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = np.vstack((x, v))
        got = np.asarray(srcjax.jit(row_stacked)(x, v))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(np.asarray(srcjax.grad(lambda x, v: (row_stacked(x, v) ** 2).sum(), argnums=1)(x, v)), 2 * v)


def vsplit_of_a_vector(v):
    return np.vsplit(v, 2)


def transpose_of_a_vector(v):
    return np.matrix_transpose(v)


def cumulative_sum_without_axis(x):
    return np.cumulative_sum(x)


def broadcast_mismatch(x, v):
    return np.broadcast_arrays(x, v[:3])


def rollaxis_out_of_bounds(x):
    return np.rollaxis(x, 5)


@pytest.mark.parametrize("fn, args, says", [
    (vsplit_of_a_vector, (np.ones(4),), "np.vsplit only works on arrays of 2 or more dimensions"),
    (transpose_of_a_vector, (np.ones(4),), "np.matrix_transpose needs an array of at least 2 dimensions"),
    (cumulative_sum_without_axis, (np.ones((2, 3)),), "axis must be given"),
    (broadcast_mismatch, (np.ones((3, 4)), np.ones(4)), "do not broadcast"),
    (rollaxis_out_of_bounds, (np.ones((3, 4)),), "out of bounds"),
    (poly_of_a_matrix, (np.ones((3, 3)),), "np.poly of a matrix"),
])
def test_refusals_are_located(fn, args, says):
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.jit(fn)(*args)
    text = str(e.value)
    assert says in text and f"test_numpy_joins.py:{fn.__code__.co_firstlineno + 1}:" in text, text
    assert "hint:" in text


def scaled(x, y, /, z, *, k=2.0):
    return x * y + z * k


def uses_positional_only(x, y):
    return np.sum(scaled(x, y, x, k=3.0) ** 2)


def test_positional_only_parameters_are_differentiated():
    """A helper's positional-only parameters (`def scaled(x, y, /, z)`) were left out of the passes that
    read `params`: grad gave zeros for them, silently."""
    x, y = np.arange(3.0), np.full(3, 0.5)
    jf = types.FunctionType(uses_positional_only.__code__, {**uses_positional_only.__globals__, "np": jnp,
                                                             "scaled": with_jax(scaled)})
    for argnums in (0, 1):
        np.testing.assert_allclose(np.asarray(srcjax.grad(uses_positional_only, argnums=argnums)(x, y)),
                                   jax.grad(jf, argnums=argnums)(x, y), rtol=1e-12)
    xs = np.stack([x, y])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(uses_positional_only))(xs, xs[::-1])),
                               jax.vmap(jax.grad(jf))(xs, xs[::-1]), rtol=1e-12)
