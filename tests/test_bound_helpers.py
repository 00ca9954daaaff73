"""Helpers called with a function for a parameter (srcjax/frontend/bound_helpers.py): an activation passed to
a layer (``layer(x, np.tanh)``, ``layer(x, act=relu)``), a function default left alone (``def layer(x,
act=np.tanh)``), passed on to another helper, two functions for one helper in one program; under jit, vmap,
grad, jacrev and hessian, against NumPy (the function run as written) and jax. These were refused under vmap
("cannot batch 'f(x)'") and grad ("cannot differentiate through `f(...)`"; a function default: "leaves 'act'
to its default, which is not a literal value")."""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def relu(x):
    return np.maximum(x, 0.0)


def softplus(x):
    return np.log1p(np.exp(x))


def apply(f, x):
    return f(x) * 2.0


def layer(x, w, act=np.tanh):
    return act(x @ w)


def two_layers(x, w, act):
    return layer(layer(x, w, act), w, act=act)  # (passed on: the inner calls fix it too)


def mixed(x, w):
    return np.sum(apply(np.cos, x) + apply(relu, x)) + np.sum(layer(x, w)) + np.sum(two_layers(x, w, softplus))


def by_keyword(x, w):
    return np.sum(layer(x, w=w, act=np.sin))


CASES = [mixed, by_keyword]
RNG = np.random.default_rng(7)
X, W = RNG.standard_normal(3), RNG.standard_normal((3, 3)) / 2


def _jax_version(fn):
    """The same program written with jax.numpy (helpers included)."""
    import jax.numpy as jnp

    def jrelu(x):
        return jnp.maximum(x, 0.0)

    def jsoftplus(x):
        return jnp.log1p(jnp.exp(x))

    def japply(f, x):
        return f(x) * 2.0

    def jlayer(x, w, act=jnp.tanh):
        return act(x @ w)

    def jtwo(x, w, act):
        return jlayer(jlayer(x, w, act), w, act=act)

    if fn is mixed:
        return lambda x, w: (jnp.sum(japply(jnp.cos, x) + japply(jrelu, x)) + jnp.sum(jlayer(x, w))
                             + jnp.sum(jtwo(x, w, jsoftplus)))
    return lambda x, w: jnp.sum(jlayer(x, w=w, act=jnp.sin))


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_bound_helpers_compile_and_differentiate_as_numpy_and_jax(fn) -> None:
    want = fn(X, W)
    np.testing.assert_allclose(float(srcjax.jit(fn)(X, W)), want, rtol=1e-13)
    np.testing.assert_allclose(float(srcjax.numpy_function(fn)(X, W)), want, rtol=1e-13)  # (its source, by NumPy)
    xs = np.stack([X, X[::-1], X * 0.5])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(fn, in_axes=(0, None))(xs, W)),
                               [fn(x, W) for x in xs], rtol=1e-13)
    twin = _jax_version(fn)
    for ours, theirs in ((srcjax.grad, jax.grad), (srcjax.hessian, jax.hessian)):
        np.testing.assert_allclose(np.asarray(ours(fn)(X, W)), np.asarray(theirs(twin)(X, W)), rtol=1e-11,
                                   atol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(fn), in_axes=(0, None))(xs, W)),
                               np.asarray(jax.vmap(jax.grad(twin), in_axes=(0, None))(xs, W)), rtol=1e-11)
    np.testing.assert_allclose(np.asarray(srcjax.jacrev(fn, argnums=1)(X, W)),
                               np.asarray(jax.jacrev(twin, argnums=1)(X, W)), rtol=1e-11, atol=1e-12)


def test_each_function_a_helper_is_called_with_gets_its_copy() -> None:
    """The printed program: one copy of ``apply`` per function, without the parameter ``f``, calling the
    function directly; the same binding twice is one copy."""
    text = srcjax.source(srcjax.jit(mixed))
    import re

    assert len(re.findall(r"^def apply\w*\(x\):", text, re.M)) == 2 and "(f, x)" not in text, text
    assert "x, w, )" not in text and "def two_layers" in text and "act" not in text, text
    assert "np.cos(x)" in text and "relu(x)" in text, text


def rebinds(x, act):
    act = np.sin
    return act(x)


def rebinds_in_a_loop(x, act=np.cos):
    for _ in range(2):
        x = act(x)
        act = np.sin
    return x


def calls_rebinding_helpers(x):
    return rebinds(x, np.cos) + rebinds_in_a_loop(x)


def rebinds_at_entry(x, act):
    act = np.sin
    return np.sum(act(x))


def test_a_parameter_the_body_assigns_again_is_never_fixed() -> None:
    """Regression (a silent wrong answer, also of an entry function called with a function argument, before
    bound helpers): `act = np.sin` in the body, with `act` fixed to what the caller passed, computed `np.cos`
    throughout. Now the value NumPy computes, or a located refusal."""
    want = calls_rebinding_helpers(X)
    np.testing.assert_allclose(np.asarray(srcjax.jit(calls_rebinding_helpers)(X)), want, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(calls_rebinding_helpers)(X)), want, rtol=1e-13)
    try:
        got = srcjax.grad(rebinds_at_entry)(X, np.cos)
    except srcjax.TranspileError as e:
        assert f"{__file__}:" in str(e).splitlines()[0], str(e)
    else:
        np.testing.assert_allclose(np.asarray(got), np.cos(X), rtol=1e-13)


def too_many(x):
    return apply(np.cos, x, 3)


def unknown_keyword(x):
    return apply(np.cos, x, z=np.sin)


@pytest.mark.parametrize("fn, words", [(too_many, "too many positional arguments"),
                                       (unknown_keyword, "unexpected keyword argument 'z'")])
def test_a_wrong_call_with_a_function_argument_is_the_usual_located_error(fn, words: str) -> None:
    with pytest.raises(srcjax.ArgumentError, match=words) as e:
        srcjax.jit(fn)(X)
    assert f"{__file__}:" in str(e.value).splitlines()[0]
