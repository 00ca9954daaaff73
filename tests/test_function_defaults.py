"""A parameter called as a function, defaulted to one (``f=np.sin``): a Python constant, as jax runs it (#15).

Before: ``grad`` refused ("calls its parameter `f`, so it needs a function there") and ``hessian``/
``jacfwd(grad)``/``jvp(grad)`` returned the GRADIENT (shape (3,)), silently: the derivative's function was the
user's function standing in until a call passed one, and transforming it differentiated the function once.
Without a default, those compositions are refused at the user's call (grad alone still takes the function).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax

jax.config.update("jax_enable_x64", True)


def with_default(v, f=np.sin):
    return np.sum(f(v) * v)


def jax_with_default(v, f=jnp.sin):
    return jnp.sum(f(v) * v)


def without_default(v, act):
    return np.sum(act(v) * v)


X = np.array([0.3, 1.7, 4.0])

HOW = {
    "grad": (srcjax.grad, jax.grad),
    "hessian": (srcjax.hessian, jax.hessian),
    "jacfwd_grad": (lambda f: srcjax.jacfwd(srcjax.grad(f)), lambda f: jax.jacfwd(jax.grad(f))),
    "jacrev_grad": (lambda f: srcjax.jacrev(srcjax.grad(f)), lambda f: jax.jacrev(jax.grad(f))),
    "vmap_grad": (lambda f: srcjax.vmap(srcjax.grad(f)), lambda f: jax.vmap(jax.grad(f))),
}


@pytest.mark.parametrize("how", HOW)
def test_function_default_is_a_constant(how):
    ours, theirs = HOW[how]
    x = np.stack([X, X[::-1]]) if how == "vmap_grad" else X
    got = ours(with_default)(x)
    want = theirs(jax_with_default)(x)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)


def test_jvp_of_grad_with_a_function_default():
    t = np.array([1.0, -2.0, 0.5])
    got = srcjax.jvp(srcjax.grad(with_default), (X,), (t,))
    want = jax.jvp(jax.grad(jax_with_default), (X,), (t,))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10)


def test_a_function_passed_over_the_default():
    got = srcjax.grad(with_default)(X, np.cos)
    np.testing.assert_allclose(np.asarray(got), np.asarray(jax.grad(jax_with_default)(X, jnp.cos)), rtol=1e-10)


@pytest.mark.parametrize("how", ["hessian", "jacfwd_grad", "jacrev_grad", "jvp_grad"])
def test_transforming_a_derivative_of_a_function_parameter_is_refused_at_the_call(how):
    with pytest.raises(srcjax.ArgumentError, match="calls its parameter `act`") as e:
        if how == "jvp_grad":
            srcjax.jvp(srcjax.grad(without_default), (X, np.sin), (X, np.sin))
        else:
            HOW[how][0](without_default)(X, np.sin)
    assert str(e.value).startswith(f"{__file__}:"), str(e.value)
