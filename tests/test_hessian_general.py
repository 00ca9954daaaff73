"""Transformations of ``srcjax.hessian(f)`` (issue #15): forward over reverse for a scalar output,
``jacfwd(jacrev(f))`` (JAX's hessian) for any other, decided from ``f``'s inferred output type on the
arguments ``f`` gets inside the transformation (srcjax/general_hessian.py), never from an error's text.

Each output kind (a scalar, a 0-d array, a shape-(1,) array, an array, a tuple, a dict) under jit, vmap,
jacfwd, jacrev, jvp, vjp, eval_shape and lower agrees with jax; an integer output gets grad's located error
(it got a silent result under jit and vmap before)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402

import srcjax  # noqa: E402
from srcjax import general_hessian  # noqa: E402
from tests.twins import JAX, jitted  # noqa: E402
from tests.written import THOROUGH  # noqa: E402

jax.config.update("jax_enable_x64", True)


def scalar_out(x):  # type: ignore[no-untyped-def]
    return np.sum(np.sin(x) * x)


def array_out(x):  # type: ignore[no-untyped-def]
    return np.sin(x) * x


def one_out(x):  # type: ignore[no-untyped-def]
    return np.reshape(np.sum(np.sin(x) * x), (1,))


def tuple_out(x):  # type: ignore[no-untyped-def]
    return np.sum(np.sin(x)), np.cos(x) * x


def dict_out(x):  # type: ignore[no-untyped-def]
    return {"a": np.sum(np.sin(x)), "b": np.cos(x) * x}


def int_out(x):  # type: ignore[no-untyped-def]
    return np.sum(x).astype(np.int32)


TWINS: dict[Any, Any] = {
    scalar_out: lambda x: jnp.sum(jnp.sin(x) * x),
    array_out: lambda x: jnp.sin(x) * x,
    one_out: lambda x: jnp.reshape(jnp.sum(jnp.sin(x) * x), (1,)),
    tuple_out: lambda x: (jnp.sum(jnp.sin(x)), jnp.cos(x) * x),
    dict_out: lambda x: {"a": jnp.sum(jnp.sin(x)), "b": jnp.cos(x) * x},
}
X = np.linspace(0.1, 1.0, 3)
X0 = np.asarray(0.4)  # a 0-d array: array_out's output is 0-d there (forward over reverse)
XS = np.linspace(0.1, 1.2, 6).reshape(2, 3)


def close(a: Any, b: Any) -> None:
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b), (a, b)
    for u, v in zip(la, lb):
        assert np.shape(u) == np.shape(v)
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-9, atol=1e-12)


CASES = [(f, X) for f in TWINS] + [(array_out, X0), (scalar_out, X0)]
# third derivatives (jacfwd/jacrev/vjp of the hessian: seconds each) of every output kind under
# SRCJAX_HYPOTHESIS=thorough; by default of one scalar-output case (forward over reverse) and one array-output
# case (jacfwd(jacrev)), the two forms the decision picks (each kind's decision is checked by the cheaper
# transformations here)
THIRD_ORDER = {(scalar_out, 1), (array_out, 1)}


@pytest.mark.parametrize("f, x", CASES, ids=[f"{f.__name__}-{np.ndim(x)}d" for f, x in CASES])
def test_transformations_of_a_hessian_agree_with_jax(f: Any, x: np.ndarray) -> None:
    h, hj = srcjax.hessian(f), jax.hessian(TWINS[f])
    jh = jitted(hj)  # (the oracles run jitted: transformations of jax's hessian take hj)
    close(h(x), jh(x))
    close(srcjax.jit(h)(x), jh(x))
    if THOROUGH or (f, np.ndim(x)) in THIRD_ORDER:
        close(srcjax.jacfwd(h)(x), JAX.jacfwd(hj)(x))
        close(srcjax.jacrev(h)(x), JAX.jacrev(hj)(x))
    out, t = srcjax.jvp(h, (x,), (np.ones_like(x),))
    jout, jt = JAX.jvp(hj, (x,), (jnp.ones_like(x),))
    close(out, jout)
    close(t, jt)
    if THOROUGH or (f, np.ndim(x)) in THIRD_ORDER:
        out, back = srcjax.vjp(h, x)
        jout, jback = jax.vjp(hj, x)
        close(out, jout)
        close(back(jout), jback(jout))
    shapes = srcjax.eval_shape(h, x)
    assert [(s.shape, s.dtype) for s in jax.tree_util.tree_leaves(shapes)] == \
        [(s.shape, s.dtype) for s in jax.tree_util.tree_leaves(jax.eval_shape(hj, x))]
    assert "func.func" in srcjax.jit(h).lower(x).as_text()


@pytest.mark.parametrize("f", list(TWINS), ids=lambda f: f.__name__)
def test_vmap_of_a_hessian_decides_per_example(f: Any) -> None:
    """vmap over a matrix: each example is a vector; over a vector: each is a 0-d array (a scalar
    output of array_out, forward over reverse)."""
    h, hj = srcjax.hessian(f), jax.hessian(TWINS[f])
    vj = JAX.vmap(hj)
    close(srcjax.vmap(h)(XS), vj(XS))
    if f is array_out:
        close(srcjax.vmap(h)(X), vj(X))
        close(srcjax.jit(srcjax.vmap(h, in_axes=1))(XS.T), JAX.vmap(hj, in_axes=1)(XS.T))


def test_the_decision_follows_the_arguments_down_to_the_hessian() -> None:
    h = srcjax.hessian(array_out)
    v = srcjax.vmap(srcjax.jit(h))
    assert general_hessian.takes_general(h, (X,), {})
    assert not general_hessian.takes_general(h, (X0,), {})
    assert general_hessian.takes_general(v, (XS,), {})  # an example: a vector
    assert not general_hessian.takes_general(v, (X,), {})  # an example: 0-d
    d = srcjax.autodiff._wrap(h, "jvp", (0,), False)  # (the primals, then the tangents: the primals decide)
    assert general_hessian.takes_general(d, (X, np.ones_like(X)), {})
    assert not general_hessian.takes_general(d, (X0, np.ones_like(X0)), {})
    assert not general_hessian.takes_general(srcjax.jit(srcjax.hessian(scalar_out)), (X,), {})


def test_the_general_form_is_not_chosen_by_an_error_text() -> None:
    assert not hasattr(general_hessian, "_MESSAGES")


@pytest.mark.parametrize("how", ["call", "jit", "vmap", "eval_shape", "lower", "jacfwd"])
def test_an_integer_output_gets_grads_located_error(how: str) -> None:
    h = srcjax.hessian(int_out)
    run = {"call": lambda: h(X), "jit": lambda: srcjax.jit(h)(X), "vmap": lambda: srcjax.vmap(h)(XS),
           "eval_shape": lambda: srcjax.eval_shape(h, X), "lower": lambda: srcjax.jit(h).lower(X),
           "jacfwd": lambda: srcjax.jacfwd(h)(X)}[how]
    with pytest.raises(srcjax.DTypeError, match="requires a real-valued") as e:
        run()
    assert e.value.span is not None and e.value.span.line == int_out.__code__.co_firstlineno + 1


def int_array_out(x):  # type: ignore[no-untyped-def]
    return (x * 3.0).astype(np.int64)


@pytest.mark.parametrize("how", ["jacrev", "hessian"])
def test_an_integer_array_output_is_refused_as_jax_refuses_it(how: str) -> None:
    """jacrev and hessian of an integer array output returned a float Jacobian where jax refuses ("jacrev
    requires real-valued outputs"): now grad's DTypeError, located at the return."""
    with pytest.raises(TypeError, match="real-valued"):
        getattr(jax, how)(lambda x: (x * 3.0).astype(jnp.int32))(X)
    with pytest.raises(srcjax.DTypeError, match="requires real-valued") as e:
        getattr(srcjax, how)(int_array_out)(X)
    assert e.value.span is not None and e.value.span.line == int_array_out.__code__.co_firstlineno + 1


def _vector_out(x):
    return np.sin(x) * x[0]


def test_a_hessian_leaves_the_users_jacfwd_of_grad_alone() -> None:
    """Regression: hessian(f) was the very object jacfwd(grad(f)) hands out (reuse), and set its general
    form on it: the user's jacfwd(grad(f)) of a function with a vector output then returned a Hessian
    instead of grad's error (as jax's does), only after a hessian of f had been made."""
    jg = srcjax.jacfwd(srcjax.grad(_vector_out))
    h = srcjax.hessian(_vector_out)
    assert h is not jg
    x = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(np.asarray(h(x)), np.asarray(JAX.hessian(lambda x: jnp.sin(x) * x[0])(x)),
                               rtol=1e-12)
    with pytest.raises(srcjax.ShapeError, match="scalar output"):
        jg(x)


def _pseudo_huber(x, y):
    return np.sum(np.sqrt(1.0 + (x - y) ** 2) - 1.0)


def test_eval_shape_of_jacrev_of_jacfwd() -> None:
    """Regression (CI of this session's merge): vmap's `if` wrote `basis = basis` on a path where `basis` is
    bound only by the other branch of an earlier `if` (a no-op conversion of a name bound on one path only);
    the specializer read the unbound name: eval_shape(jacrev(jacfwd(f))) said "name 'basis' is not defined"."""
    x, y = np.linspace(-1, 1, 5), np.linspace(0, 2, 5)
    j = srcjax.jacrev(srcjax.jacfwd(_pseudo_huber))
    assert srcjax.eval_shape(j, x, y).shape == (5, 5)
    np.testing.assert_allclose(np.asarray(j(x, y)), np.asarray(JAX.hessian(
        lambda x: jnp.sum(jnp.sqrt(1.0 + (x - y) ** 2) - 1.0))(x)), rtol=1e-12)
