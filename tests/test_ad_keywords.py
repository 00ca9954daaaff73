"""Keyword-only parameters under every derivative (regression: "name 'scale' is not defined" in
generated code, "too many positional arguments", and a silently wrong jvp through a helper called
with a keyword argument, whose derivative took the default instead).

As in JAX, keyword arguments are passed on and not differentiated; jvp and vjp pass primals by
position, so a keyword-only parameter there needs a default."""

import inspect

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")

from tests.twins import JAX  # noqa: E402

jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)


def scaled(x, *, scale=2.0):
    return np.sum(np.sin(x) * scale)


def shifted(x, *, scale=2.0, shift):
    return np.tanh(x * scale) + shift


def helper(x, *, s=2.0):
    return np.sin(x) * s


def calls_helper(x):
    return np.sum(helper(x, s=3.0) * helper(x))


def loop_with_keywords(x, *, n=3, s=0.5):
    for _ in range(n):
        x = np.tanh(x) * s + x
    return np.sum(x)


def helper_in_a_branch(x):
    if np.sum(x) > 0:
        y = helper(x, s=3.0)
    else:
        y = helper(x)
    return np.sum(y * y)


def twin(fn):
    ns = {"np": jnp}
    exec(inspect.getsource(helper), ns)
    exec(inspect.getsource(fn), ns)
    return ns[fn.__name__]


X = np.array([0.1, -0.2, 0.3])


def close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kw", [{}, {"scale": 3.0}])
def test_grad_value_and_grad_hessian_pass_keywords_on(kw):
    jf = twin(scaled)
    close(srcjax.grad(scaled)(X, **kw), JAX.grad(jf)(X, **kw))
    v, g = srcjax.value_and_grad(scaled)(X, **kw)
    jv, jg = JAX.value_and_grad(jf)(X, **kw)
    close(v, jv)
    close(g, jg)
    close(srcjax.hessian(scaled)(X, **kw), JAX.hessian(jf)(X, **kw))
    close(srcjax.numpy_function(srcjax.grad(scaled))(X, **kw), JAX.grad(jf)(X, **kw))


def test_jvp_and_vjp_use_the_default():
    jf = twin(scaled)
    out, t = srcjax.jvp(scaled, (X,), (X,))
    jout, jt = JAX.jvp(jf, (X,), (X,))
    close(out, jout)
    close(t, jt)
    close(srcjax.vjp(scaled, X)[1](1.0)[0], jax.vjp(jf, X)[1](1.0)[0])


@pytest.mark.parametrize("kind", ["jacfwd", "jacrev"])
def test_jacobians_with_a_required_keyword(kind):
    ours, ref = getattr(srcjax, kind)(shifted), getattr(jax, kind)(twin(shifted))
    close(ours(X, shift=1.0), ref(X, shift=1.0))
    close(ours(X, scale=0.5, shift=1.0), ref(X, scale=0.5, shift=1.0))
    assert "shift=shift" in srcjax.source(ours)


@pytest.mark.parametrize("what", ["jvp", "vjp"])
def test_jvp_and_vjp_refuse_a_required_keyword_at_the_def(what):
    with pytest.raises(srcjax.TranspileError) as info:
        if what == "jvp":
            srcjax.jvp(shifted, (X,), (X,))
        else:
            srcjax.vjp(shifted, X)
    line = inspect.getsourcelines(shifted)[1]
    first = str(info.value).splitlines()[0]
    assert f"test_ad_keywords.py:{line}:" in first and "`shift`" in first, str(info.value)


@pytest.mark.parametrize("fn", [calls_helper, helper_in_a_branch])
@pytest.mark.parametrize("x", [X, -X], ids=["pos", "neg"])
def test_a_helper_called_with_a_keyword(fn, x):
    jf = twin(fn)
    close(srcjax.grad(fn)(x), JAX.grad(jf)(x))
    close(srcjax.jvp(fn, (x,), (x,))[1], JAX.jvp(jf, (x,), (x,))[1])
    close(srcjax.hessian(fn)(x), JAX.hessian(jf)(x))
    close(srcjax.vjp(fn, x)[1](0.5)[0], jax.vjp(jf, x)[1](0.5)[0])


def test_keywords_through_loops_and_reverse_over_reverse():
    jf = twin(loop_with_keywords)
    close(srcjax.grad(loop_with_keywords)(X, n=4, s=0.3), JAX.grad(jf)(X, n=4, s=0.3))
    close(srcjax.jacrev(srcjax.grad(loop_with_keywords))(X, s=0.3), JAX.hessian(jf)(X, s=0.3))
    close(srcjax.grad(srcjax.grad(loop_with_keywords))(0.3, s=0.3), JAX.grad(jax.grad(jf))(0.3, s=0.3))
