"""``functools.partial`` under srcjax's transformations, with JAX's meaning (issue #18, ``srcjax/partials.py``):
bound arguments are constants of the program (a bound int usable as a shape), ``argnums`` and
``in_axes`` count the remaining parameters, a keyword bound may be passed again. Checked against jax
and NumPy."""

from __future__ import annotations

import functools
import gc
import types
import weakref

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")

from tests.twins import JAX  # noqa: E402

jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

X = np.linspace(0.1, 0.9, 4)
W = np.array([1.0, 2.0, 3.0, 4.0])


def head(x, n, scale=1.0):
    return np.sum(np.zeros(n) + x[:n] ** 2) * scale


def layer(w, x, scale=1.0):
    return np.sum(np.tanh(w * x)) * scale


def both(w, x):
    return np.tanh(w * x) * w


def first(n, x):
    return np.reshape(x[:n * 2], (n, 2))


def _jax(fn):
    """``fn``'s code with ``np`` bound to ``jax.numpy`` (the oracle runs the same program)."""
    return types.FunctionType(fn.__code__, {**fn.__globals__, "np": jnp}, fn.__name__, fn.__defaults__)


def _pair(fn, *args, **kw):
    return functools.partial(fn, *args, **kw), functools.partial(_jax(fn), *args, **kw)


@pytest.mark.parametrize("kind", ["jit", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian"])
def test_keyword_bound_int_is_static(kind):
    p, pj = _pair(head, n=2)  # (n: a shape, np.zeros(n))
    got, want = getattr(srcjax, kind)(p)(X), getattr(jax, kind)(pj)(X)
    for g, w in zip(*(jax.tree_util.tree_leaves(v) for v in (got, want))):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)


def test_positionally_bound_int_is_static():
    p, pj = _pair(first, 2)
    np.testing.assert_allclose(srcjax.jit(p)(X), jax.jit(pj)(X))
    np.testing.assert_allclose(srcjax.jacfwd(p)(X), JAX.jacfwd(pj)(X))


@pytest.mark.parametrize("kind", ["jit", "grad", "jacrev", "vmap"])
def test_positionally_bound_array_is_a_constant(kind):
    p, pj = _pair(layer, W, scale=3.0)
    x = np.ones((2, 4)) if kind == "vmap" else X
    np.testing.assert_allclose(getattr(srcjax, kind)(p)(x), getattr(jax, kind)(pj)(x), rtol=1e-12)
    np.testing.assert_allclose(srcjax.jit(p)(X), layer(W, X, 3.0), rtol=1e-12)  # (NumPy)


def test_argnums_count_the_remaining_parameters():
    p, pj = _pair(both)
    np.testing.assert_allclose(srcjax.jacrev(p, argnums=1)(W, X), JAX.jacrev(pj, argnums=1)(W, X), rtol=1e-12)
    q, qj = _pair(layer, scale=2.0)
    np.testing.assert_allclose(srcjax.grad(q, argnums=(0, 1))(W, X), JAX.grad(qj, argnums=(0, 1))(W, X), rtol=1e-12)


def test_bound_keywords_are_constants():
    """A keyword the partial binds is a constant of the call, as its positional ones (vmap maps none of them);
    passed again it is an ArgumentError, never silently another value."""
    p, pj = _pair(layer, scale=3.0)
    np.testing.assert_allclose(srcjax.vmap(p, in_axes=(None, 0))(W, np.ones((2, 4))),
                               JAX.vmap(pj, in_axes=(None, 0))(W, np.ones((2, 4))), rtol=1e-12)
    q, qj = _pair(head, n=3)
    np.testing.assert_allclose(srcjax.vmap(q)(np.ones((2, 4))), JAX.vmap(qj)(np.ones((2, 4))), rtol=1e-12)
    with pytest.raises(srcjax.ArgumentError, match="unexpected keyword argument 'scale'"):
        srcjax.jit(p)(W, X, scale=2.0)
    arr = functools.partial(layer, scale=np.float64(2.0))  # (not a literal: a constant by name)
    np.testing.assert_allclose(srcjax.grad(arr, argnums=1)(W, X), JAX.grad(_jax(layer), argnums=1)(W, X, 2.0),
                               rtol=1e-12)


def test_partial_of_a_numpy_function_and_of_a_method():
    np.testing.assert_allclose(srcjax.jit(functools.partial(np.add, 1.0))(X), X + 1.0)
    np.testing.assert_allclose(srcjax.grad(functools.partial(np.dot, W))(X), W)

    class Model:
        scale = 3.0

        def apply(self, x, n):
            return np.sum(x[:n]) * self.scale

    np.testing.assert_allclose(srcjax.jit(functools.partial(Model().apply, n=2))(X), X[:2].sum() * 3.0)


def test_partial_of_partial_and_of_a_transformed_function():
    pp = functools.partial(functools.partial(layer, W), scale=5.0)
    np.testing.assert_allclose(srcjax.jit(pp)(X), layer(W, X, 5.0), rtol=1e-12)
    g = srcjax.grad(layer, argnums=1)
    pg = functools.partial(g, W)
    gj = jax.grad(_jax(layer), argnums=1)
    np.testing.assert_allclose(srcjax.jit(pg)(X), gj(W, X), rtol=1e-12)
    xs = np.ones((2, 4))
    np.testing.assert_allclose(srcjax.vmap(pg)(xs), JAX.vmap(functools.partial(gj, W))(xs), rtol=1e-12)


def test_source_shows_the_call():
    text = srcjax.source(functools.partial(head, n=2))
    assert "def head_partial(x, *, scale=1.0):\n    return head(x, n=2, scale=scale)" in text
    assert "def head(x, n" in text
    text = srcjax.source(functools.partial(layer, W))
    assert "def layer_partial(x, scale=1.0):\n    return layer(w, x, scale)" in text


def test_reused_and_collected():
    p = functools.partial(layer, W.copy())
    assert srcjax.jit(p) is srcjax.jit(p)
    srcjax.grad(p)(X)
    refs = [weakref.ref(p), weakref.ref(srcjax.jit(p)), weakref.ref(srcjax.api._as_compiled(p).fn)]
    del p
    gc.collect()
    assert all(r() is None for r in refs)


def test_wrong_calls_are_argument_errors():
    p = functools.partial(head, n=2)
    with pytest.raises(srcjax.ArgumentError):
        srcjax.jit(p)(X, 3, 4, 5, 6)
