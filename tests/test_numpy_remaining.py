"""NumPy functions srcjax refused as unsupported until session 35 while jax runs them (np16's survey of the
functions ``numpy`` and ``jax.numpy`` share): ``np.unstack``, ``np.i0``, ``np.sort_complex``,
``np.put_along_axis`` (NumPy's in-place form on a local array), ``np.polydiv``, ``np.roots``
(``srcjax/numpy_extras.py``, ``srcjax/polynomials.py``), and ``np.gcd``/``np.lcm``, ``np.nextafter``/
``np.spacing``, ``np.packbits``/``np.unpackbits`` (``srcjax/numpy_bits.py``). Each against NumPy (values and
dtypes) and jax (jit, and grad and vmap(grad) where differentiable, vmap otherwise), then the located
refusals of arguments NumPy refuses or srcjax does not support."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from tests.twins import JAX, jitted

jax.config.update("jax_enable_x64", True)


# -- differentiable: (srcjax's function, jax's twin) ----------------------------------------------------------

def unstack_i0(x, v):
    a, b, c = np.unstack(x)
    p, q = np.unstack(x[:2, :2], axis=1)
    return a * b + c, p - q, np.i0(v * 6.0 - 3.0), np.i0(x * 9.0)


def unstack_i0_jax(x, v):
    a, b, c = jnp.unstack(x)
    p, q = jnp.unstack(x[:2, :2], axis=1)
    return a * b + c, p - q, jnp.i0(v * 6.0 - 3.0), jnp.i0(x * 9.0)


def put_along(x, v):
    y = x * 2.0
    i = np.array([[0, 3], [1, 1], [2, 0]])
    np.put_along_axis(y, i, v[:2] * 3.0, axis=1)
    z = np.zeros(4)
    np.put_along_axis(z, np.array([-1, 1]), v[1:3], axis=None)
    return y, z


def put_along_jax(x, v):
    i = jnp.array([[0, 3], [1, 1], [2, 0]])
    y = jnp.put_along_axis(x * 2.0, i, v[:2] * 3.0, axis=1, inplace=False)
    z = jnp.put_along_axis(jnp.zeros(4), jnp.array([-1, 1]), v[1:3], axis=None, inplace=False)
    return y, z


def poly_division(x, v):
    q, r = np.polydiv(np.concatenate((v, x[0])), x[1, :3])
    q2, r2 = np.polydiv(v[:2], x[2])  # (the divisor the longer: q = [0.], r = u)
    return q, r, q2, r2


def poly_division_jax(x, v):
    q, r = jnp.polydiv(jnp.concatenate((v, x[0])), x[1, :3])
    return q, r[-2:], jnp.zeros(1), v[:2]  # (jax keeps the remainder's leading zeros: NumPy's last len(v) - 1)


def roots_of(x, v):
    r = np.roots(np.concatenate((v, x[0, :2] - 1.0)))
    return np.sum(np.real(r) ** 3) + np.sum(np.imag(r) ** 2), np.sort_complex(v * x[0])  # (order-free)


def roots_of_jax(x, v):
    r = jnp.roots(jnp.concatenate((v, x[0, :2] - 1.0)), strip_zeros=False)
    return jnp.sum(jnp.real(r) ** 3) + jnp.sum(jnp.imag(r) ** 2), jnp.sort_complex(v * x[0]).astype(jnp.complex128)


CASES = [(unstack_i0, unstack_i0_jax), (put_along, put_along_jax), (poly_division, poly_division_jax),
         (roots_of, roots_of_jax)]


def loss_of(fn: Any) -> Any:
    def loss(x, v):
        leaves = fn(x, v)
        return sum((k + 1.0) * (leaf.real ** 2).sum() for k, leaf in enumerate(leaves))
    return loss


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    return rng.uniform(0.5, 1.5, (3, 4)), rng.uniform(0.5, 1.5, (4,))


@pytest.mark.parametrize("fn, twin", CASES, ids=[f.__name__ for f, _ in CASES])
def test_against_jax_and_numpy(fn, twin):
    x, v = data()
    got, want, ref = srcjax.jit(fn)(x, v), twin(x, v), fn(x, v)
    assert len(got) == len(want) == len(ref)
    for g, w, r in zip(got, want, ref):
        g, r = np.asarray(g), np.asarray(r)
        assert g.dtype == r.dtype or r.dtype == np.float64 and g.dtype == np.complex128, (g.dtype, r.dtype)
        assert g.shape == r.shape, (g.shape, r.shape)
        np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-10, atol=1e-12)
    got_bars = srcjax.grad(loss_of(fn), argnums=(0, 1))(x, v)
    for g, w in zip(got_bars, JAX.grad(loss_of(twin), argnums=(0, 1))(x, v)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-9, atol=1e-11)
    xs = np.stack([x, 1.5 * x])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(loss_of(fn)), in_axes=(0, None))(xs, v)),
                               JAX.vmap(jax.grad(loss_of(twin)), in_axes=(0, None))(xs, v), rtol=1e-9, atol=1e-11)


def i0_far(x):
    return np.i0(x)


def test_i0_follows_numpy_on_both_sides_of_8():
    x = np.array([0.0, -0.5, 3.0, 7.999, 8.0, 8.001, -20.0, 100.0, 700.0])
    np.testing.assert_allclose(np.asarray(srcjax.jit(i0_far)(x)), np.i0(x), rtol=1e-14)
    assert srcjax.jit(i0_far)(x.astype(np.float32)).dtype == np.i0(x.astype(np.float32)).dtype == np.float32
    assert srcjax.jit(i0_far)(np.arange(3)).dtype == np.float64
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(i0_far))(x[:-1])), JAX.vmap(jax.grad(jnp.i0))(x[:-1]),
                               rtol=1e-10, atol=1e-15)


def sorted_complex(z):
    return np.sort_complex(z)


def test_sort_complex_orders_by_real_then_imaginary_part():
    z = np.array([[1 + 2j, 1 - 1j, -3 + 0j, 1 + 0j], [2j, -2j, 0j, -1 + 5j]])
    assert np.asarray(srcjax.jit(sorted_complex)(z)).tolist() == np.sort_complex(z).tolist()
    for a in (np.array([3, 1, 2], np.int16), np.array([3.0, 1.0], np.float32), np.array([5, -1])):
        g = np.asarray(srcjax.jit(sorted_complex)(a))
        assert g.dtype == np.sort_complex(a).dtype and g.tolist() == np.sort_complex(a).tolist(), (g, a.dtype)


# -- integers and bits: values and dtypes, jit and vmap -------------------------------------------------------

def integers(i, j):
    return np.gcd(i, j), np.lcm(i, j), np.gcd(i, 12), np.lcm(i[:, None], j[None, :3])


def integers_jax(i, j):
    return jnp.gcd(i, j), jnp.lcm(i, j), jnp.gcd(i, 12), jnp.lcm(i[:, None], j[None, :3])


def test_gcd_and_lcm_follow_numpy_and_jax():
    i = np.array([12, -18, 0, 7, 0, 1 << 40, 35], np.int64)
    j = np.array([8, 27, 5, -21, 0, 3 << 20, 0], np.int64)
    for a, b in ((i, j), (i.astype(np.int32) % 1000, j.astype(np.int32) % 1000), (np.abs(i % 200).astype(np.uint8), 6)):
        for g, w, r in zip(srcjax.jit(integers)(a, np.broadcast_to(b, a.shape)),
                           integers_jax(a, np.broadcast_to(b, a.shape)), integers(a, np.broadcast_to(b, a.shape))):
            assert np.asarray(g).dtype == r.dtype and np.array_equal(np.asarray(g), r), (g, r)
            assert np.array_equal(np.asarray(g), np.asarray(w))
    rows = np.stack([i, j, i * 3])
    for g, r in zip(srcjax.vmap(integers)(rows, rows[::-1]), JAX.vmap(integers_jax)(rows, rows[::-1])):
        assert np.array_equal(np.asarray(g), np.asarray(r))


def neighbours(x, y):
    return np.nextafter(x, y), np.spacing(x), np.spacing(y)


def test_nextafter_and_spacing_are_numpys_bit_for_bit():
    f = np.finfo(np.float64)
    x = np.array([1.0, -3.0, 0.0, -0.0, 0.0, 5e-324, -5e-324, f.max, np.inf, np.nan, 1.0, 2.0, -f.max, 1e-310])
    y = np.array([0.0, 0.0, 1.0, -1.0, -0.0, 0.0, 0.0, np.inf, 0.0, 1.0, np.nan, 2.0, -np.inf, 1.0])
    for dt in (np.float64, np.float32):
        a, b = x.astype(dt), y.astype(dt) if dt == np.float64 else np.where(np.abs(y) > 1e38, y, y).astype(dt)
        with np.errstate(all="ignore"):
            a, b = x.astype(dt), y.astype(dt)
            want = neighbours(a, b)
        for g, w in zip(srcjax.jit(neighbours)(a, b), want):
            g = np.asarray(g)
            assert g.dtype == w.dtype, (g.dtype, w.dtype)
            np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
            ok = ~np.isnan(w)
            assert g[ok].tobytes() == w[ok].tobytes(), (dt, g, w)
    for ints in (np.arange(-3, 4, dtype=np.int16), np.arange(4), np.array([True, False])):
        g, r = np.asarray(srcjax.jit(neighbours)(ints, ints[::-1])[1]), np.spacing(ints)
        assert g.dtype == r.dtype, (g.dtype, r.dtype)  # (int16: float32; 8-byte: float64; bool: float16)
        if ints.dtype != np.bool_:  # (NumPy's float16 spacing of a negative number is positive: not followed)
            np.testing.assert_array_equal(g, r)
    xs = np.stack([x[:6], x[6:12]])
    for g, w in zip(srcjax.vmap(neighbours)(xs, xs[::-1]), JAX.vmap(lambda a, b: (jnp.nextafter(a, b),))(xs, xs[::-1])):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def packed(b, axis_bits):
    return np.packbits(b), np.packbits(b, axis=1, bitorder="little"), np.unpackbits(axis_bits), \
        np.unpackbits(axis_bits, axis=0, count=-3), np.unpackbits(axis_bits, count=20, bitorder="little")


def test_packbits_and_unpackbits_follow_numpy():
    rng = np.random.default_rng(0)
    b = rng.uniform(size=(3, 11)) > 0.5
    u = rng.integers(0, 256, (2, 2), dtype=np.uint8)
    for arg in (b, b.astype(np.int32) * 3):
        for g, r in zip(srcjax.jit(packed)(arg, u), packed(arg, u)):
            assert np.asarray(g).dtype == r.dtype == np.uint8 and np.array_equal(np.asarray(g), r), (g, r)
    got = srcjax.vmap(packed, in_axes=(0, None))(np.stack([b, ~b]), u)
    for g, r in zip(got[:2], JAX.vmap(lambda a: (jnp.packbits(a), jnp.packbits(a, axis=1, bitorder="little")))(
            np.stack([b, ~b]))):
        assert np.array_equal(np.asarray(g), np.asarray(r))


# -- refusals ----------------------------------------------------------------------------------------------------

def gcd_of_floats(x):
    return np.gcd(x, 2.0)


def unpackbits_of_int64(i):
    return np.unpackbits(i)


def i0_of_complex(z):
    return np.i0(z)


def put_along_float_indices(x):
    y = x * 1.0
    np.put_along_axis(y, np.array([[0.0]]), 1.0, axis=1)
    return y


def polydiv_of_a_matrix(x):
    return np.polydiv(x, x[0])


def roots_of_a_matrix(x):
    return np.roots(x)


def unstack_of_a_number(x):
    return np.unstack(x.sum())


def put_along_aliased(x):
    y = x * 1.0
    z = y
    np.put_along_axis(y, np.array([[0]]), 1.0, axis=1)
    return z


def linalg_cross_of_2_vectors(x):
    return np.linalg.cross(x, x)


def bitwise_count_of_floats(x):
    return np.bitwise_count(x)


@pytest.mark.parametrize("fn, arg, says", [
    (linalg_cross_of_2_vectors, np.ones((3, 2)), "np.linalg.cross: both inputs must be 3-vectors"),
    (bitwise_count_of_floats, np.ones(3), "np.bitwise_count is defined for integers only"),
    (gcd_of_floats, np.ones(3), "np.gcd is defined for integers only"),
    (unpackbits_of_int64, np.arange(3), "np.unpackbits: expected an input array of unsigned byte"),
    (i0_of_complex, np.ones(3) * 1j, "np.i0 is not supported for complex values"),
    (put_along_float_indices, np.ones((1, 3)), "np.put_along_axis: the indices must be integers"),
    (polydiv_of_a_matrix, np.ones((2, 3)), "np.polydiv takes 1-D coefficient arrays"),
    (roots_of_a_matrix, np.ones((2, 3)), "np.roots takes a 1-D array"),
    (unstack_of_a_number, np.ones(3), "np.unstack needs an array of at least one dimension"),
    (put_along_aliased, np.ones((1, 3)), "would change too"),
])
def test_refusals_are_located(fn, arg, says):
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.jit(fn)(arg)
    text = str(e.value)
    assert says in text and "test_numpy_remaining.py:" in text.splitlines()[0], text
    assert "hint:" in text or "would change too" in text, text


# -- np.linalg's array-API names, tensorinv/tensorsolve, bitwise_count (srcjax/linalg_names.py) --------------------

def linalg_names(x, v):
    m = x[:, :3]
    t = np.reshape(np.eye(6) * 2.0 + x[0, 0] * 0.1 + np.reshape(np.arange(36.0), (6, 6)) * 0.01, (2, 3, 6))
    return (np.linalg.cross(m, m[::-1]), np.linalg.diagonal(x, offset=1), np.linalg.matmul(x, v),
            np.linalg.matrix_norm(x), np.linalg.matrix_norm(m, ord=1, keepdims=True), np.linalg.matrix_transpose(x),
            np.linalg.outer(v, x[0]), np.linalg.svdvals(x), np.linalg.tensordot(x, v, axes=1),
            np.linalg.trace(x, offset=-1), np.linalg.vecdot(x, v), np.linalg.vector_norm(x),
            np.linalg.vector_norm(x, axis=0, ord=3, keepdims=True), np.linalg.vector_norm(x, axis=(0, 1), ord=np.inf),
            np.linalg.tensorinv(t, ind=2), np.linalg.tensorsolve(t, x[:2, :3]))


def linalg_names_jax(x, v):
    m = x[:, :3]
    t = jnp.reshape(jnp.eye(6) * 2.0 + x[0, 0] * 0.1 + jnp.reshape(jnp.arange(36.0), (6, 6)) * 0.01, (2, 3, 6))
    return (jnp.linalg.cross(m, m[::-1]), jnp.linalg.diagonal(x, offset=1), jnp.linalg.matmul(x, v),
            jnp.linalg.matrix_norm(x), jnp.linalg.matrix_norm(m, ord=1, keepdims=True),
            jnp.linalg.matrix_transpose(x), jnp.linalg.outer(v, x[0]), jnp.linalg.svdvals(x),
            jnp.linalg.tensordot(x, v, axes=1), jnp.linalg.trace(x, offset=-1), jnp.linalg.vecdot(x, v),
            jnp.linalg.vector_norm(x), jnp.linalg.vector_norm(x, axis=0, ord=3, keepdims=True),
            jnp.linalg.vector_norm(x, axis=(0, 1), ord=jnp.inf), jnp.linalg.tensorinv(t, ind=2),
            jnp.linalg.tensorsolve(t, x[:2, :3]))


def test_linalg_array_api_names_against_jax_and_numpy():
    x, v = data()
    # (jax's oracle jitted: one compile, not one per linalg primitive dispatched)
    for g, w, r in zip(srcjax.jit(linalg_names)(x, v), jitted(linalg_names_jax)(x, v), linalg_names(x, v)):
        g = np.asarray(g)
        assert g.dtype == r.dtype and g.shape == r.shape, (g.dtype, r.dtype, g.shape, r.shape)
        np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-10, atol=1e-12)
    got = srcjax.grad(loss_of(linalg_names), argnums=(0, 1))(x, v)
    for g, w in zip(got, JAX.grad(loss_of(linalg_names_jax), argnums=(0, 1))(x, v)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-9, atol=1e-11)


def bit_counts(i):
    return np.bitwise_count(i)


def test_bitwise_count_follows_numpy():
    for a in (np.array([-128, -1, 0, 7, 127], np.int8), np.array([1 << 62, -(1 << 63), 255]),
              np.array([3, 65535], np.uint16), np.array([True, False])):
        g, r = np.asarray(srcjax.jit(bit_counts)(a)), np.bitwise_count(a)
        assert g.dtype == r.dtype == np.uint8 and g.tolist() == r.tolist(), (a, g, r)
    rows = np.arange(12).reshape(3, 4) * 37
    assert np.asarray(srcjax.vmap(bit_counts)(rows)).tolist() == np.bitwise_count(rows).tolist()
