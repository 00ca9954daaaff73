"""Reverse mode of a derivative whose loop branches on data (``grad(lambda x: np.sum(jacrev(f)(x)))``, ``vjp`` of a
function calling ``srcjax.jacrev``): found by test_vmap_compose_random's thorough tier.

The inner ``jacrev`` is one batched VJP whose backward half updates its cotangent with a library helper
(``batch_index_add``) inside the ``if`` on data; the outer reverse mode could not write srcjax's batched helpers
out there (a refusal located at the user's line, naming forward mode). Their cotangents now come from rules
(srcjax/transforms/linear_calls.py): ``grad`` of a ``jacrev`` through the branch runs, against jax (was a strict
xfail); an ``if`` on a reduction under ``vjp`` of ``jacrev`` too (was a refusal: an inner helper's check).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402

import srcjax  # noqa: E402

jax.config.update("jax_enable_x64", True)

X = np.array([0.18626825, -0.99125994, 0.04674114])
Y = np.array([-1.03425464, -1.71975885, 1.6768754])


def branchy(x: Any, y: Any) -> Any:
    acc = 0.0
    for i in range(3):
        if x[i] > y[i]:
            acc = acc + x[i] * y[i]
        else:
            acc = acc - np.sin(x[i])
    return acc


def _jax_branchy(x: Any, y: Any) -> Any:
    acc = 0.0
    for i in range(3):
        acc = jnp.where(x[i] > y[i], acc + x[i] * y[i], acc - jnp.sin(x[i]))
    return acc


def sum_of_jacrev(x: Any, y: Any) -> Any:
    return np.sum(srcjax.jacrev(branchy)(x, y))


def sum_of_jacfwd(x: Any, y: Any) -> Any:
    return np.sum(srcjax.jacfwd(branchy)(x, y))


def _want() -> Any:
    return jax.grad(lambda x, y: jnp.sum(jax.jacrev(_jax_branchy)(x, y)))(X, Y)


@pytest.mark.parametrize("how", ["grad of jacfwd", "jacfwd of jacrev"])
def test_the_forward_mode_alternatives_run(how: str) -> None:
    got = (srcjax.grad(sum_of_jacfwd) if how == "grad of jacfwd" else srcjax.jacfwd(sum_of_jacrev))(X, Y)
    np.testing.assert_allclose(np.asarray(got), np.asarray(_want()), rtol=1e-10, atol=1e-12)


def test_grad_of_jacrev_through_a_branch_on_data() -> None:
    np.testing.assert_allclose(np.asarray(srcjax.grad(sum_of_jacrev)(X, Y)), np.asarray(_want()), rtol=1e-10)
    g = srcjax.grad(sum_of_jacrev)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(g)(X, Y)), np.asarray(_want()), rtol=1e-10)


def summed_branch(x: Any, y: Any) -> Any:
    if np.sum(x * y) > 0.0:
        r = np.sum(np.sin(x) * y)
    else:
        r = np.sum(x ** 2) - np.sum(y)
    return r


def _jax_summed_branch(x: Any, y: Any) -> Any:
    return jnp.where(jnp.sum(x * y) > 0.0, jnp.sum(jnp.sin(x) * y), jnp.sum(x ** 2) - jnp.sum(y))


def vjp_of_jacrev(x: Any, y: Any) -> Any:
    out, back = srcjax.vjp(lambda a, b: srcjax.jacrev(summed_branch)(a, b), x, y)
    return back(np.ones_like(out))[0]


def _jax_vjp_of_jacrev(x: Any, y: Any) -> Any:
    out, back = jax.vjp(lambda a, b: jax.jacrev(_jax_summed_branch)(a, b), x, y)
    return back(jnp.ones_like(out))[0]


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_an_if_on_a_reduction_under_vjp_of_jacrev(sign: float) -> None:
    """Thorough seed 7467 of test_vmap_compose_random (and seeds 1100, 1275, 1276, 1411 of
    test_transform_compose_random): the inner derivative's helper (``batch_unbroadcast``, written out in the branch
    by reverse mode) checks its cotangent's structure, ``if len(a) != len(b): raise ...`` (adjoint.first_of), and
    the binding-time analysis takes every name bound under an ``if`` on data as data: the check's test looked like
    data, a refusal ("a derivative of a derivative: a helper of the inner one checks values inside the branch").
    Tests that are STATIC where they are read stay Python ``if``\\ s there (frontend/branch_checks.py). Both
    branches, against jax, and the generated source run by NumPy."""
    x = sign * X
    want = _jax_vjp_of_jacrev(x, Y)
    np.testing.assert_allclose(np.asarray(vjp_of_jacrev(x, Y)), np.asarray(want), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(vjp_of_jacrev)(x, Y)), np.asarray(want),
                               rtol=1e-10, atol=1e-12)
