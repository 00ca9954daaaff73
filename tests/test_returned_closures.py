"""A closure made by a helper and called in the function (``g = make_scaler(a)``, then ``g(x)``), under grad, vmap,
vmap(grad), hessian.

The transformations refused the call ("cannot differentiate through `g(...)`", "vmap: cannot batch 'g(x)'"): they
did not know what ``g`` is. The helper's body is written out in the function now (``frontend/returned_closures.py``).
Oracle: jax (twins with the helpers' sources).
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

from .twins import jax_twin, jitted

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

SCALE = 10.0


def make_affine(w, b=0.5, *, scale=2.0):
    """An affine map."""
    s = scale * w
    def apply(v):
        return s * v + b
    return apply


def make_lambda(c):
    return lambda v: np.sin(c * v)


def make_nested(k):
    def inner(k2):  # (its own parameter: shadows nothing of the helper's)
        return k2 ** 2 * k
    def outer(v):
        return inner(v) + k * SCALE
    return outer


def affine_twice(x, w):
    g = make_affine(w, scale=3.0)
    h = make_affine(x, 1.0)
    return np.sum(g(x) * h(w))


def lambda_in_loop(x, w):
    g = make_lambda(x[0])
    acc = 0.0
    for i in range(3):
        acc = acc + np.sum(g(w * i))
    return acc


def nested_closures(x, w):
    g = make_nested(w[1])
    return np.sum(g(x))


HELPERS = [make_affine, make_lambda, make_nested]
CASES = [affine_twice, lambda_in_loop, nested_closures]


def _close(got, want):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn", CASES)
def test_returned_closure_under_transformations(fn):
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=3), rng.normal(size=3)
    twin = jax_twin(fn, helpers=HELPERS, SCALE=SCALE)
    _close(srcjax.grad(fn, argnums=(0, 1))(x, w), jitted(jax.grad(twin, argnums=(0, 1)))(x, w))
    _close(srcjax.hessian(fn)(x, w), jitted(jax.hessian(twin))(x, w))
    xb, wb = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    _close(srcjax.vmap(fn)(xb, wb), jitted(jax.vmap(twin))(xb, wb))
    _close(srcjax.vmap(srcjax.grad(fn, argnums=1))(xb, wb), jitted(jax.vmap(jax.grad(twin, argnums=1)))(xb, wb))


def test_written_out_source_reads_the_helper_body():
    src = srcjax.source(srcjax.grad(affine_twice))
    assert "make_affine_s = make_affine_scale * w" in src and "make_affine(" not in src, src


def make_bad(a):
    def g(v):
        return v @ np.ones(5) * a
    return g


def bad_shapes(x):
    g = make_bad(2.0)
    return np.sum(g(x))


def test_an_error_in_the_written_out_closure_is_located_at_the_helper_line():
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.grad(bad_shapes)(np.ones(3))
    assert f"{__file__}:{make_bad.__code__.co_firstlineno + 2}:" in str(e.value), str(e.value)


def make_reads_scale(a):
    def g(v):
        return v * a * SCALE
    return g


def shadows_the_helper_global(x):
    SCALE = 0.5  # noqa: N806  (the helper's SCALE is the module's: not written out here)
    g = make_reads_scale(2.0)
    return np.sum(g(x)) + SCALE


def test_a_helper_reading_a_name_the_function_rebinds_is_left_as_it_is():
    x = np.ones(3)
    np.testing.assert_allclose(np.asarray(srcjax.jit(shadows_the_helper_global)(x)), shadows_the_helper_global(x))
    with pytest.raises(srcjax.TranspileError, match="cannot differentiate through `g"):
        srcjax.grad(shadows_the_helper_global)(x)


def make_defaulted(a):
    def g(v, a=a):  # (the default is the helper's a: written out here it would read the caller's)
        return a * v
    return g


def defaulted(x, a):
    g = make_defaulted(2.0)
    return np.sum(g(x)) + a


def test_a_nested_default_is_not_written_out():
    x = np.ones(3)
    try:
        got = srcjax.jit(defaulted)(x, 5.0)
    except srcjax.TranspileError as e:  # (refused at the nested def, as before)
        assert "nested functions with defaults" in str(e), str(e)
    else:
        np.testing.assert_allclose(np.asarray(got), defaulted(x, 5.0))
