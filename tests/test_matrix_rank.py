"""``np.linalg.matrix_rank`` (NumPy 2's and jax's algorithm: singular values above ``tol``, by default the
largest times ``max(M, N) * eps``) compiled, batched and inside a differentiated function, against NumPy
running the function and jax."""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)


def _low_rank(rng: np.random.Generator, shape: tuple[int, ...], rank: int, dtype: object = np.float64) -> np.ndarray:
    *lead, m, n = shape
    a = rng.normal(size=(*lead, m, rank)) @ rng.normal(size=(*lead, rank, n))
    return a.astype(dtype)


@pytest.mark.parametrize("shape,rank,dtype", [((4, 5), 2, np.float64), ((6, 3), 3, np.float64), ((5, 5), 1, np.float32),
                                              ((3, 4, 4), 2, np.float64)])
def test_rank_against_numpy_and_jax(shape, rank, dtype):
    a = _low_rank(np.random.default_rng(0), shape, rank, dtype)
    got = srcjax.jit(lambda x: np.linalg.matrix_rank(x))(a)
    want = np.linalg.matrix_rank(a)
    np.testing.assert_array_equal(np.asarray(got), want)
    assert np.asarray(got).dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(jnp.linalg.matrix_rank(a)))


def test_rank_options_and_vectors():
    rng = np.random.default_rng(1)
    a = np.diag([3.0, 1.0, 1e-3, 0.0])
    cases = [(lambda x: np.linalg.matrix_rank(x, tol=0.5), 2), (lambda x: np.linalg.matrix_rank(x, 1e-6), 3),
             (lambda x: np.linalg.matrix_rank(x, rtol=1e-2), 2), (lambda x: np.linalg.matrix_rank(x, hermitian=True), 3)]
    for f, want in cases:
        assert f(a) == want
        np.testing.assert_array_equal(np.asarray(srcjax.jit(f)(a)), want)
    for v in (np.zeros(3), rng.normal(size=3)):
        assert int(srcjax.jit(lambda x: np.linalg.matrix_rank(x))(v)) == np.linalg.matrix_rank(v)


def rank_weighted(x):
    return np.sum(x ** 2) * np.linalg.matrix_rank(x)


def test_rank_batched_and_differentiated():
    rng = np.random.default_rng(2)
    xs = np.stack([_low_rank(rng, (4, 4), r) for r in (1, 2, 4)])
    np.testing.assert_array_equal(np.asarray(srcjax.vmap(lambda x: np.linalg.matrix_rank(x))(xs)), [1, 2, 4])
    jtwin = lambda x: jnp.sum(x ** 2) * jnp.linalg.matrix_rank(x)  # noqa: E731
    np.testing.assert_allclose(np.asarray(srcjax.grad(rank_weighted)(xs[1])), jax.grad(jtwin)(xs[1]), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(rank_weighted))(xs)), jax.vmap(jax.grad(jtwin))(xs),
                               rtol=1e-12)
