"""A derivative of a Hessian whose loop has a static ``if`` calling helpers in its branches.

``s = s + (h1(x) if i % 2 == 0 else h2(x))`` in ``for i in range(3)``: the Hessian's forward loop is rolled
(one ``stablehlo.while``), so its test ``i % 2 == 0`` is saved per iteration and popped by the adjoint loop as
data; the outer reverse mode's forward half then saves values inside that branch, which a branch on data cannot
do ("reverse mode through a branch on array data of a derivative srcjax wrote", though the user's test is
static). A test computed from a rolled loop's counter now names the loop when popped, and the loop is unrolled
where a branch on it must save values (``lower/rolled_for.py``, ``lower/regions.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import srcjax  # noqa: E402

from .twins import jax_twin, jitted  # noqa: E402

jax.config.update("jax_enable_x64", True)

X = np.array([0.3, -0.7, 1.1])


def h1(x: Any) -> Any:
    return np.sum(np.sin(x) * x)


def h2(x: Any) -> Any:
    return np.sum(x ** 3)


def alternating(x: Any) -> Any:
    s = 0.0
    for i in range(3):
        s = s + (h1(x) if i % 2 == 0 else h2(x))
    return s


def first_and_odd(x: Any) -> Any:
    s = 0.0
    for i in range(4):
        if i == 0:
            t = h1(x)
        elif i % 2 == 1:
            t = h2(x) * x[i % 3]
        else:
            t = np.tanh(x[0])
        s = s + t
    return s


def test_jacrev_of_hessian_through_a_static_conditional_expression() -> None:
    # alternating = 2 * h1 + h2: its third derivative is diagonal, 2 * (-3 sin x - x cos x) + 6
    want = np.zeros((3, 3, 3))
    want[np.arange(3), np.arange(3), np.arange(3)] = 2 * (-3 * np.sin(X) - X * np.cos(X)) + 6
    got = srcjax.jacrev(srcjax.hessian(alternating))(X)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)


def test_vjp_of_hessian_through_static_if_statements() -> None:
    want = jitted(jax.jacrev(jax.hessian(jax_twin(first_and_odd, helpers=(h1, h2)))))(X)
    _, back = srcjax.vjp(srcjax.hessian(first_and_odd), X)
    got = back(np.ones((3, 3)))[0]
    np.testing.assert_allclose(np.asarray(got), np.asarray(want).sum(axis=(0, 1)), rtol=1e-10, atol=1e-12)
