"""np.linalg solvers and decompositions (primitives/decomp.py, LAPACK through jaxlib).

The registry-driven tests (test_primitives, test_ad_rules, test_vmap_primitives) check each
primitive once; this file checks what they cannot: random shapes with batch dimensions (hypothesis),
what compiled code returns where NumPy raises (singular matrices, Cholesky of a matrix that is not
positive definite: NaNs, as in JAX), ill-conditioned inputs against a documented tolerance, located
errors, float32 derivatives, and that derivative source stays readable.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcjax
from tests.fd import central_fd

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

HYPOTHESIS = settings(max_examples=10, deadline=None, derandomize=True, database=None)


def spd(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    m = rng.normal(size=shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def solve_f(a, b):
    return np.linalg.solve(a, b)


def decomp_f(a):
    w, v = np.linalg.eigh(a)
    sign, logdet = np.linalg.slogdet(a)
    return (np.linalg.inv(a), np.linalg.det(a), sign, logdet, np.linalg.cholesky(a), w, np.abs(v),
            np.linalg.eigvalsh(a))


@HYPOTHESIS
@given(batch=st.lists(st.integers(1, 3), max_size=2), n=st.integers(1, 5), k=st.integers(0, 2),
       seed=st.integers(0, 2**16), f32=st.booleans())
def test_random_shapes_against_numpy(batch: list[int], n: int, k: int, seed: int, f32: bool) -> None:
    """Every function on a random stack of well-conditioned matrices; b a vector (k == 0) or (n, k)."""
    rng = np.random.default_rng(seed)
    dt = np.float32 if f32 else np.float64
    tol = dict(rtol=2e-4, atol=2e-4) if f32 else dict(rtol=1e-10, atol=1e-10)
    a = spd(rng, (*batch, n, n)).astype(dt)
    b = rng.normal(size=(n,) if k == 0 else (*batch[1:], n, k)).astype(dt)
    got, want = srcjax.compile(solve_f)(a, b), solve_f(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, **tol)
    for g, w in zip(srcjax.compile(decomp_f)(a), decomp_f(a)):
        assert np.asarray(g).dtype == w.dtype and np.shape(g) == w.shape
        np.testing.assert_allclose(g, w, **tol)


def orth_f(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    q, r = np.linalg.qr(a)
    return np.abs(u), s, np.abs(vh), np.linalg.svd(a, compute_uv=False), np.abs(q), np.abs(r)


@HYPOTHESIS
@given(batch=st.lists(st.integers(1, 3), max_size=2), m=st.integers(1, 5), n=st.integers(1, 5),
       seed=st.integers(0, 2**16))
def test_random_shapes_svd_qr(batch: list[int], m: int, n: int, seed: int) -> None:
    """Tall, wide and square stacks; the signs of singular vectors and of Q's columns are LAPACK's
    (the same as NumPy's here), compared in absolute value."""
    a = np.random.default_rng(seed).normal(size=(*batch, m, n))
    for g, w in zip(srcjax.compile(orth_f)(a), orth_f(a)):
        assert np.shape(g) == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)
    u, s, vh = srcjax.compile(lambda a: np.linalg.svd(a))(a)  # full_matrices: orthogonal, reconstructs a
    assert np.shape(u) == (*batch, m, m) and np.shape(vh) == (*batch, n, n)
    k = min(m, n)
    np.testing.assert_allclose((np.asarray(u)[..., :k] * np.asarray(s)[..., None, :]) @ np.asarray(vh)[..., :k, :],
                               a, atol=1e-12)


def test_numpy_device_runs_numpy() -> None:
    rng = np.random.default_rng(1)
    a = spd(rng, (2, 3, 3))
    got = srcjax.compile(decomp_f, device="numpy")(a)
    for g, w in zip(got, decomp_f(a)):
        np.testing.assert_array_equal(g, w)


# -- where NumPy raises LinAlgError: NaNs (JAX's convention), per matrix of a stack ------------------
def test_singular_solve_and_inv_are_nan() -> None:
    a = np.stack([np.ones((3, 3)), 4 * np.eye(3)])
    x = srcjax.compile(solve_f)(a, np.ones(3))
    assert np.isnan(x[0]).all() and np.allclose(x[1], 0.25)
    inv = srcjax.compile(lambda a: np.linalg.inv(a))(a)
    assert np.isnan(inv[0]).all() and np.allclose(inv[1], np.eye(3) / 4)
    with pytest.raises(np.linalg.LinAlgError):
        srcjax.compile(solve_f, device="numpy")(a, np.ones(3))


def test_singular_det_and_slogdet_follow_numpy() -> None:
    a = np.ones((3, 3))
    assert float(srcjax.compile(lambda a: np.linalg.det(a))(a)) == 0.0
    sign, logdet = srcjax.compile(lambda a: np.linalg.slogdet(a))(a)
    assert float(sign) == 0.0 and float(logdet) == -np.inf
    assert np.linalg.slogdet(a) == (0.0, -np.inf)


def test_cholesky_not_positive_definite_is_nan() -> None:
    a = np.stack([-np.eye(2), 2 * np.eye(2)])
    c = srcjax.compile(lambda a: np.linalg.cholesky(a))(a)
    assert np.isnan(c[0]).all()
    np.testing.assert_allclose(c[1], np.sqrt(2) * np.eye(2))


def test_ill_conditioned_within_condition_number_tolerance() -> None:
    """Hilbert matrices (cond ~ 1e10 for n = 8): compiled and NumPy agree to the accuracy the
    condition number allows (relative error of the solution <= 1e-16 * cond * 10), not bitwise."""
    n = 8
    h = 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0)
    b = h @ np.ones(n)
    cond = np.linalg.cond(h)
    x = np.asarray(srcjax.compile(solve_f)(h, b))
    assert np.linalg.norm(x - np.ones(n)) <= 1e-16 * cond * 10 * np.sqrt(n)
    np.testing.assert_allclose(x, np.linalg.solve(h, b), rtol=1e-16 * cond * 10)
    np.testing.assert_allclose(srcjax.compile(lambda a: np.linalg.eigvalsh(a))(h), np.linalg.eigvalsh(h),
                               atol=1e-15 * np.linalg.norm(h, 2) * 10)


def test_lstsq_rank_deficient_residuals_follow_jax() -> None:
    """NumPy's residuals are empty for a rank-deficient tall matrix (a shape that depends on the data);
    srcjax's, as JAX's, are the sums of squared residuals whatever the rank. x, rank and s agree."""
    a = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    b = np.array([1.0, 0.0, 1.0])
    x, res, rank, s = srcjax.compile(lambda a, b: np.linalg.lstsq(a, b))(a, b)
    nx, nres, nrank, ns = np.linalg.lstsq(a, b)
    np.testing.assert_allclose(x, nx, atol=1e-12)
    assert int(rank) == nrank == 1 and nres.shape == (0,)
    np.testing.assert_allclose(res, [np.sum((b - a @ nx) ** 2)])
    np.testing.assert_allclose(s, ns, atol=1e-12)


# -- errors -------------------------------------------------------------------------------------------
def test_errors_are_located_with_hints() -> None:
    def non_square(a):
        return np.linalg.inv(a)

    with pytest.raises(srcjax.ShapeError) as e:
        srcjax.compile(non_square)(np.ones((3, 4)))
    assert "square" in str(e.value) and "np.linalg.inv(a)" in str(e.value)
    with pytest.raises(srcjax.ShapeError, match="b has shape"):
        srcjax.compile(solve_f)(np.eye(3), np.ones((2, 4)))
    with pytest.raises(srcjax.DTypeError, match="float16"):
        srcjax.compile(non_square)(np.eye(3, dtype=np.float16))
    with pytest.raises(srcjax.DTypeError, match="mode"):
        srcjax.compile(lambda a: np.linalg.qr(a, mode="complete"))(np.eye(3))
    with pytest.raises(srcjax.TranspileError, match="full_matrices=True needs square"):
        srcjax.grad(lambda a: np.sum(np.linalg.svd(a)[0]))(np.ones((3, 2)))
    with pytest.raises(srcjax.DTypeError, match="upper"):
        srcjax.compile(lambda a: np.linalg.cholesky(a, upper=True))(np.eye(3))


def test_integers_compute_in_float64_like_numpy() -> None:
    a = np.array([[2, 1], [1, 3]])
    got = srcjax.compile(lambda a: np.linalg.inv(a))(a)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.linalg.inv(a))


# -- derivatives beyond the rule table ---------------------------------------------------------------------
def nll(a, y):
    """A Gaussian negative log-likelihood: the usual reason for cholesky + solve + slogdet together."""
    chol = np.linalg.cholesky(a)
    z = np.linalg.solve(chol, y)
    return 0.5 * np.sum(z * z) + 0.5 * np.linalg.slogdet(a)[1]


def test_gaussian_nll_gradient_against_jax_and_fd() -> None:
    rng = np.random.default_rng(2)
    a, y = spd(rng, (4, 4)), rng.normal(size=(4, 3))
    got = srcjax.grad(nll, argnums=(0, 1))(a, y)
    want = jax.grad(lambda a, y: jax.jit(lambda a, y: 0.5 * jnp.sum(jnp.linalg.solve(jnp.linalg.cholesky(a), y) ** 2)
                                         + 0.5 * jnp.linalg.slogdet(a)[1])(a, y), argnums=(0, 1))(a, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-11)
    # finite differences along a symmetric direction (the functions read one triangle of a)
    d = rng.normal(size=(4, 4))
    d = d + d.T
    fd = central_fd(lambda t: nll(a + t * d, y), (0.0,), 0)
    np.testing.assert_allclose(np.sum(np.asarray(got[0]) * d), fd, rtol=1e-6)
    np.testing.assert_allclose(got[1], central_fd(nll, (a, y), 1), rtol=1e-6, atol=1e-8)


def test_eigh_gradient_symmetric_and_float32() -> None:
    rng = np.random.default_rng(3)
    a = (spd(rng, (3, 3)) + np.diag([0.0, 5.0, 10.0])).astype(np.float32)

    def f(a):
        w, v = np.linalg.eigh(a)
        return np.sum(w * w) + np.sum(v[:, 0] ** 2 * np.arange(3.0, dtype=np.float32))

    g = np.asarray(srcjax.grad(f)(a))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, g.T, rtol=1e-6, atol=1e-6)
    jg = jax.grad(lambda a: (lambda w, v: jnp.sum(w * w) + jnp.sum(v[:, 0] ** 2 * jnp.arange(3.0)))(
        *jnp.linalg.eigh(a)))(a.astype(np.float64))
    np.testing.assert_allclose(g, jg, rtol=1e-3, atol=1e-3)


def test_vmap_of_grad_of_solve() -> None:
    rng = np.random.default_rng(4)
    a = np.stack([spd(rng, (3, 3)) for _ in range(4)])
    b = rng.normal(size=(4, 3))
    g = srcjax.vmap(srcjax.grad(lambda a, b: np.sum(np.linalg.solve(a, b) ** 2), argnums=(0, 1)))(a, b)
    want = jax.vmap(jax.grad(lambda a, b: jnp.sum(jnp.linalg.solve(a, b) ** 2), argnums=(0, 1)))(a, b)
    for x, y in zip(g, want):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-11)


def test_gradient_source_reads_like_the_math() -> None:
    text = srcjax.source(srcjax.grad(nll))
    assert "np.linalg.cholesky(a)" in text and "cholesky_bar(" in text and "slogdet_bar(" in text
    assert "np.linalg.solve(mT(" in text  # the adjoint of a solve is a solve with the transpose
    assert max(len(line) for line in text.splitlines()) < 140


def test_gpu_backend_refuses_lapack_with_a_clear_error() -> None:
    """No GPU here: the check that a GPU backend refuses the CPU LAPACK kernels (instead of an XLA
    error about an unknown custom-call target) runs on a stand-in backend."""
    from srcjax.runtime import xla

    class GpuStandIn:
        platform = "gpu"

    with pytest.raises(srcjax.TranspileError, match="CPU only"):
        xla._register_lapack(GpuStandIn())  # type: ignore[arg-type]  # (private: the one registration point)


_SHARDED_FIRST = '''
import numpy as np
import srcjax


def inv(a):
    return np.linalg.inv(a)


x = np.stack([np.eye(3) * 2, np.eye(3) * 4])
print(np.asarray(srcjax.pmap(inv)(x))[:, 0, 0].tolist())
'''


def test_linalg_compiled_first_for_several_devices(tmp_path) -> None:
    """A process whose first np.linalg program is a pmap (or a sharded jit): LAPACK's kernels were
    registered by the one-device compile only, and XLA refused the module ("No FFI handler registered
    for lapack_dgetrf_ffi"). A fresh process with 2 CPU devices."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "sharded_first.py"
    script.write_text(_SHARDED_FIRST)
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root), SRCJAX_NUM_CPU_DEVICES="2", SRCJAX_CACHE="0")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[0.5, 0.25]"
