"""The batch size of a batched function whose only batched inputs are tapes: read from the batched leaves of the
last push that are arrays, not from its first leaf.

hunt14's kepler_eccentric_anomaly (Newton's iteration with a ``break`` on data, through lambdas reading the
caller's locals) under hessian: the generated source run by NumPy failed "'NoneType' object cannot be interpreted
as an integer" (XLA's values were right). The batched JVP of newton's backward half read its batch size from its
tape's last push's first leaf, ``E_dot``: the tangent of a value the iterations after the ``break`` do not
compute (UNSET by NumPy; XLA's ``cond`` merges both branches). Oracle: the implicit function's derivatives.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax


def newton(f, fprime, x0, tol=1e-12, maxiter=50):
    x = x0
    for _ in range(maxiter):
        dx = f(x) / fprime(x)
        x = x - dx
        if abs(dx) < tol:
            break
    return x


def kepler(M, e):
    f = lambda E: E - e * np.sin(E) - M  # noqa: E731
    fprime = lambda E: 1 - e * np.cos(E)  # noqa: E731
    return newton(f, fprime, M)


def _implicit(M: float, e: float) -> tuple[float, float]:
    """E(M) solving E - e sin E = M: dE/dM = 1 / g and d2E/dM2 = -e sin E / g**3, g = 1 - e cos E."""
    E = M
    for _ in range(100):
        E = E - (E - e * np.sin(E) - M) / (1 - e * np.cos(E))
    g = 1 - e * np.cos(E)
    return 1 / g, -e * np.sin(E) / g ** 3


@pytest.mark.parametrize("M,e", [(1.1, 0.3), (0.4, 0.7)])
def test_hessian_of_newton_with_break_runs_by_numpy(M, e):
    h = srcjax.hessian(kepler)
    want = _implicit(M, e)[1]
    np.testing.assert_allclose(np.asarray(h(np.float64(M), np.float64(e))), want, rtol=1e-9)
    np.testing.assert_allclose(srcjax.numpy_function(h)(np.float64(M), np.float64(e)), want, rtol=1e-9)
    text = srcjax.source(h)
    assert "batch_size_of_any((_tape_dot[-1][" in text  # (not the first leaf alone)


def test_vmap_grad_of_newton_with_break_runs_by_numpy():
    g = srcjax.vmap(srcjax.grad(kepler), in_axes=(0, None))
    M = np.array([0.2, 1.1, 2.5])
    want = [_implicit(m, 0.5)[0] for m in M]
    np.testing.assert_allclose(np.asarray(g(M, 0.5)), want, rtol=1e-9)
    np.testing.assert_allclose(srcjax.numpy_function(g)(M, 0.5), want, rtol=1e-9)
