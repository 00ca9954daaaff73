"""Derivatives at points where a function has no derivative: JAX's values where JAX defines one, srcjax's own
choice (docs/limitations.md, "Derivatives") where JAX's is NaN.

- ``np.hypot`` at the origin: 0.5 for each operand, as ``jnp.hypot`` (``max(|x1|, |x2|)`` there: abs' = 1 at 0,
  the tie shared); was 0.
- ``np.linalg.norm`` (the 2-norm and Frobenius) at 0: 0, a subgradient (JAX: NaN).
Away from those points both are checked against jax and central finite differences.
"""

import jax
import jax.numpy as jnp
import numpy as np

import srcjax

from .fd import central_fd

jax.config.update("jax_enable_x64", True)


def hyp(a, b):
    return np.sum(np.hypot(a, b))


def jhyp(a, b):
    return jnp.sum(jnp.hypot(a, b))


def norm_shifted(x):
    return np.linalg.norm(x - 1)


def norm_rows(x):
    return np.sum(np.linalg.norm(x, axis=1))


A = np.array([0.0, -0.0, 3.0, -2.0, 0.0, 1e-3])
B = np.array([0.0, 0.0, 0.0, 0.5, -4.0, 2e-3])


def test_hypot_at_the_origin_is_jax_s():
    for d in (np.float64, np.float32):
        a, b = A.astype(d), B.astype(d)
        got = srcjax.grad(hyp, argnums=(0, 1))(a, b)
        want = jax.grad(jhyp, argnums=(0, 1))(a, b)
        for g, w in zip(got, want):
            assert np.asarray(g).dtype == d
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
        assert float(np.asarray(got[0])[0]) == 0.5 and float(np.asarray(got[1])[1]) == 0.5
    out, t = srcjax.jvp(hyp, (A, B), (np.ones(6), -np.ones(6)))
    jout, jt = jax.jvp(jhyp, (A, B), (np.ones(6), -np.ones(6)))
    np.testing.assert_allclose(float(t), float(jt), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.hessian(lambda a: hyp(a, B))(A)),
                               np.asarray(jax.hessian(lambda a: jhyp(a, B))(A)), rtol=1e-9, atol=1e-12)


def test_hypot_away_from_the_origin_against_finite_differences():
    a, b = A + 0.3, B - 0.2
    ga, gb = srcjax.grad(hyp, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(np.asarray(ga), central_fd(hyp, (a, b), 0), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gb), central_fd(hyp, (a, b), 1), rtol=1e-6)


def test_norm_at_zero_is_zero_where_jax_gives_nan():
    x = np.ones(3)
    assert np.isnan(np.asarray(jax.grad(lambda x: jnp.linalg.norm(x - 1))(x))).all()
    np.testing.assert_array_equal(np.asarray(srcjax.grad(norm_shifted)(x)), np.zeros(3))
    m = np.array([[0.0, 0.0], [3.0, 4.0]])
    np.testing.assert_array_equal(np.asarray(srcjax.grad(norm_rows)(m)), [[0.0, 0.0], [0.6, 0.8]])
    x = np.array([1.5, 0.2, -1.0])
    np.testing.assert_allclose(np.asarray(srcjax.grad(norm_shifted)(x)),
                               np.asarray(jax.grad(lambda x: jnp.linalg.norm(x - 1))(x)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.grad(norm_shifted)(x)), central_fd(norm_shifted, (x,), 0), rtol=1e-6)
