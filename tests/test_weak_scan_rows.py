"""Rows of a Python-number carry stack weakly typed, as jax's (``lax.scan``, ``lax.map``), against jax.

jax keeps a weak carry's rows weak: ``ys`` of ``scan(lambda c, _: (c * 0.5 + 1.0, c), 0.0, None, length=3)``
is a weak float64 array, and ``ys * x32[0]`` float32. srcjax stacked them strongly (float64 under jit, jvp,
jacfwd, vmap and vmap(jacfwd), by XLA and by NumPy): the XLA lowering's ys buffer, ``index_update`` into it
(which dropped the weak type in the loop carry), the NumPy reference's ``np.stack``, the buffer
``np.zeros(..., dtype=np.result_type(y))`` written out under derivatives, and ``np.transpose``/``moveaxis``/
``swapaxes``/``broadcast_to`` of such a stack (vmap moves the batch axis of ys) and its items (``ys[-1]``). vmap of a scan whose rows are a
tuple with an unbatched leaf (``(c, v)``) failed ("source 1 is out of bounds"): that leaf now rows batched. Each check runs the transformation
by XLA, its generated source by NumPy (``numpy_function``), and the user's function by NumPy (its dtype).
"""

import jax
import numpy as np
import pytest

import srcjax
from tests.twins import JAX, jax_twin

jax.config.update("jax_enable_x64", True)


# -- programs (module level: srcjax and the twins read their source) ------------------------------------------

def rows_by_length(x):
    c, ys = srcjax.lax.scan(lambda c, _: (c * 0.5 + 1.0, c), 0.0, None, length=3)
    return ys * x[0]


def rows_rolled(x):  # (long enough to be one stablehlo.while, not unrolled)
    c, ys = srcjax.lax.scan(lambda c, _: (c * 0.5 + 1.0, c), 0.0, None, length=40)
    return np.sum(ys * x[0]) + c * x[1]


def rows_reversed_tuple(x):  # (one weak leaf, one float32 leaf)
    def body(c, v):
        return c * 0.5 + 1.0, (c, v * c)
    c, (ys, vs) = srcjax.lax.scan(body, 2.0, x, reverse=True)
    return ys * x + vs


def rows_moved(x):  # (moving a weak stack's axes keeps it weak, as in jax and in NumPy's reference)
    c, ys = srcjax.lax.scan(lambda c, _: (c * 0.5 + 1.0, c), 0.0, None, length=3)
    grid = np.broadcast_to(ys, (2, 3))
    return np.sum(np.transpose(grid) * x[0] + np.moveaxis(grid, 1, 0) * np.swapaxes(grid, 0, 1), axis=1)


def rows_indexed(x):  # (an item or a slice of a weak stack is weak: `ys[-1] * x32` was float64 under XLA)
    c, ys = srcjax.lax.scan(lambda c, _: (c * 0.5 + 1.0, c), 0.0, None, length=4)
    return ys[1] * x + ys[1:] * x[0] + ys[np.array([0, 2, 3])] * x[1] + ys[-1] * x[2]


def map_constant(x):
    return srcjax.lax.map(lambda v: 2.0, x) * x[0]


def fori_number(x):
    return srcjax.lax.fori_loop(0, 3, lambda i, c: c * 0.5, 1.0) * x


def while_number(x):
    return srcjax.lax.while_loop(lambda c: c < 5.0, lambda c: c + 1.5, 1.0) * x


PROGRAMS = [rows_by_length, rows_rolled, rows_reversed_tuple, rows_moved, rows_indexed, map_constant, fori_number, while_number]


def _same(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=what)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_weak_rows_keep_jax_dtype(fn):
    twin = jax_twin(fn)
    x = np.array([0.3, -0.2, 0.5], np.float32)
    xb = np.stack([x, -x * 0.5])
    assert np.asarray(fn(x)).dtype == np.float32  # (the user's function run by NumPy: srcjax.lax's reference)
    checks = [
        ("jit", srcjax.jit(fn), jax.jit(twin), x),
        ("jvp", lambda a: srcjax.jvp(fn, (a,), (a,))[1], lambda a: JAX.jvp(twin, (a,), (a,))[1], x),
        ("jacfwd", srcjax.jacfwd(fn), JAX.jacfwd(twin), x),
        ("vmap(jacfwd)", srcjax.vmap(srcjax.jacfwd(fn)), JAX.vmap(jax.jacfwd(twin)), xb),
    ]
    checks.insert(3, ("vmap", srcjax.vmap(fn), JAX.vmap(twin), xb))
    for what, ours, theirs, a in checks:
        want = theirs(a)
        assert np.asarray(want).dtype == np.float32, what  # (the case: jax's answer is float32)
        _same(ours(a), want, what)
        _same(srcjax.numpy_function(ours if what == "jit" else srcjax.jit(ours))(a), want, f"{what} by NumPy")


def test_strong_rows_stay_strong():
    """A float64 row (``np.sin`` of a Python number is a NumPy value) keeps ys float64, as jax's."""
    def fn(x):
        c, ys = srcjax.lax.scan(lambda c, _: (c * 0.5, np.sin(c)), 1.0, None, length=3)
        return ys * x[0]
    x = np.array([0.3, -0.2], np.float32)
    assert np.asarray(fn(x)).dtype == np.float64
    assert np.asarray(srcjax.jit(fn)(x)).dtype == np.float64
    assert np.asarray(srcjax.jacfwd(fn)(x)).dtype == np.float64

