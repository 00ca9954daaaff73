"""``grad`` (and ``vmap(grad)``, ``jacfwd``) of a function that calls ``srcjax.vjp(g, x, has_aux=True)`` or
``srcjax.jacrev(g, has_aux=True)`` inside, against jax. The derivative of ``g``'s output (a generated
``g_output``: ``return g(x)[0]``) called ``g``'s forward and backward halves through a tape, which reverse
mode refused to differentiate again ("`g_fwd` hands values saved for the adjoint through the tape"); it now
writes ``g``'s body out in ``g_output``'s, as the derivative of ``g`` itself is written."""

from __future__ import annotations

import types

import numpy as np
import pytest

import srcjax
from tests import twins
from tests.tiers import THOROUGH

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

SCALE = 2.0


def pair(x):
    return np.sin(x) * SCALE, {"n": np.sum(x ** 2), "first": x[0]}


def through_vjp(x):
    y, vjp_fn, aux = srcjax.vjp(pair, x, has_aux=True)
    (ct,) = vjp_fn(np.ones_like(y) * x)
    return np.sum(ct * x) + aux["n"] * aux["first"]


def through_jacrev(x):
    jac, aux = srcjax.jacrev(pair, has_aux=True)(x)
    return np.sum(jac @ x) * aux["n"]


def through_jacfwd(x):
    jac, aux = srcjax.jacfwd(pair, has_aux=True)(x)
    return np.sum(jac * jac) + aux["first"]


@pytest.mark.parametrize("f", [through_vjp, through_jacrev, through_jacfwd], ids=lambda f: f.__name__)
def test_grad_of_has_aux_inside(f):
    x = np.array([0.3, -0.5, 1.2])
    xs = np.stack([x, 2 * x])
    twin = twins.jax_twin(f, helpers=[pair], SCALE=SCALE, srcjax=types.SimpleNamespace(
        vjp=jax.vjp, jacrev=jax.jacrev, jacfwd=jax.jacfwd))
    close = lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)  # noqa: E731
    close(srcjax.jit(f)(x), jax.jit(twin)(x))
    close(srcjax.grad(f)(x), twins.JAX.grad(twin)(x))
    if THOROUGH or f is not through_jacrev:  # (its vmap(grad), ~2 CPU s: thorough; through_vjp's and through_jacfwd's stay)
        close(srcjax.vmap(srcjax.grad(f))(xs), twins.JAX.vmap(jax.grad(twin))(xs))
    if f is through_vjp:  # (one Hessian: the suite's cost)
        close(srcjax.jacfwd(srcjax.grad(f))(x), twins.JAX.jacfwd(jax.grad(twin))(x))


def test_has_aux_errors_stay_at_the_users_line():
    def bad(x):
        return np.ones((2, 2)) @ x, x

    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.vjp(bad, np.ones(3), has_aux=True)
    assert f"{__file__}:" in str(e.value).replace(".pyc", ".py"), str(e.value)
