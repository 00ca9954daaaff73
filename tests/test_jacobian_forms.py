"""A generated Jacobian's two forms (issue #15, first calls): its own calls and a Jacobian of it run the
*array form* (the array path alone); the *generic form*, with the container branch that vmap, grad or
another Jacobian of it may need, is written only when something reads it (``srcjax.source``, another
transformation). The container branch's test is the marker ``by_leaves``, not the function's name."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from srcjax import lax
from srcjax.pytree import is_tree
from tests.twins import JAX

jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(7)
X = RNG.standard_normal(5)
W = RNG.standard_normal((5, 5))
P = {"w": W, "b": X}


def layer(x, w):  # type: ignore[no-untyped-def]
    return np.tanh(w @ x) * x


def layer_j(x, w):  # type: ignore[no-untyped-def]
    return jnp.tanh(w @ x) * x


def dict_out(p, x):  # type: ignore[no-untyped-def]
    return {"a": np.sin(p["w"] @ x), "b": np.sum(x * p["b"])}


def dict_out_j(p, x):  # type: ignore[no-untyped-def]
    return {"a": jnp.sin(p["w"] @ x), "b": jnp.sum(x * p["b"])}


def close(a, b) -> None:  # type: ignore[no-untyped-def]
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["jacfwd", "jacrev"])
def test_a_call_runs_the_array_form_and_the_generic_form_is_written_when_read(kind: str) -> None:
    j = getattr(srcjax, kind)(layer)
    close(j(X, W), getattr(jax, kind)(layer_j)(X, W))
    assert j._generic is not None  # (not written: nothing read it)
    assert "by_leaves(" in srcjax.source(j)  # the shape-generic print keeps the container branch
    assert j._generic is None
    close(j(X, W), getattr(jax, kind)(layer_j)(X, W))


def test_a_jacobian_of_a_jacobian_reads_the_inner_array_form() -> None:
    def layer2(x, w):  # type: ignore[no-untyped-def]  (a function no other test transformed)
        return np.tanh(w @ x) * x

    inner = srcjax.jacrev(layer2)
    outer = srcjax.jacfwd(inner)
    close(outer(X, W), JAX.jacfwd(jax.jacrev(layer_j))(X, W))
    assert inner._generic is not None and outer._generic is not None
    close(srcjax.jacrev(srcjax.jacfwd(layer))(X, W), JAX.jacrev(jax.jacfwd(layer_j))(X, W))
    close(srcjax.hessian(layer)(X, W), JAX.hessian(layer_j)(X, W))  # (a vector output: jacfwd(jacrev))


def test_containers_still_take_the_container_branch() -> None:
    # the inner Jacobian by a dict, or of a dict output: the outer one is not on its array path
    close(srcjax.jacfwd(srcjax.jacrev(dict_out, argnums=0), argnums=1)(P, X),
          JAX.jacfwd(jax.jacrev(dict_out_j, argnums=0), argnums=1)(P, X))
    close(srcjax.jacfwd(srcjax.jacrev(dict_out, argnums=1), argnums=1)(P, X),
          JAX.jacfwd(jax.jacrev(dict_out_j, argnums=1), argnums=1)(P, X))
    close(srcjax.vmap(srcjax.jacrev(dict_out, argnums=0), in_axes=(None, 0))(P, np.stack([X, 2 * X])),
          JAX.vmap(jax.jacrev(dict_out_j, argnums=0), in_axes=(None, 0))(P, np.stack([X, 2 * X])))


def test_vmap_defers_a_refusal_into_the_marked_container_branch() -> None:
    def g(x):  # type: ignore[no-untyped-def]
        return lax.psum(x, "i") * np.sin(x)

    text = srcjax.source(srcjax.vmap(srcjax.jacfwd(g), axis_name="i"))
    head, _, rest = text.partition("if by_leaves")
    assert "raise NotImplementedError" in rest.split("else:")[0], text


def test_a_function_named_like_a_jacobian_gets_no_deferred_refusal() -> None:
    # (the deferral was chosen by the function's name: `g_jacfwd`'s own `if is_tree(x)` hid the refusal in a
    # `raise NotImplementedError` with no location)
    def g_jacfwd(x):  # type: ignore[no-untyped-def]
        if is_tree(x):
            return lax.psum((x, np.ones(4)), "i")[0]
        return x * 2.0

    with pytest.raises(srcjax.TranspileError, match="psum of a container") as e:
        srcjax.vmap(g_jacfwd, axis_name="i")
    assert "test_jacobian_forms.py" in str(e.value)


def pair_out(x, w):  # type: ignore[no-untyped-def]
    return (np.sin(w @ x), np.sum(x * x))


def pair_out_j(x, w):  # type: ignore[no-untyped-def]
    return (jnp.sin(w @ x), jnp.sum(x * x))


def test_a_container_output_known_from_the_source_writes_no_array_path() -> None:
    # (every return of pair_out is a tuple: the generic form's array-output path was dead code that vmap, jvp
    # and a Jacobian of it transformed again, ~30% of the hessian of a tuple-output function's source)
    rev = srcjax.source(srcjax.jacrev(pair_out))
    assert "jacrev_blocks(" in rev and "jacobian_rows(" not in rev and "by_leaves(" not in rev, rev
    hess = srcjax.source(srcjax.hessian(pair_out))
    assert "if by_leaves(out)" not in hess and "by_leaves(" not in hess.split("def pair_out_jacrev_jvp_vmap")[1], hess
    xs = np.stack([X, 2 * X])
    close(srcjax.vmap(srcjax.jacrev(pair_out), in_axes=(0, None))(xs, W),
          jax.vmap(jax.jacrev(pair_out_j), in_axes=(0, None))(xs, W))
    close(srcjax.vmap(srcjax.jacfwd(pair_out), in_axes=(0, None))(xs, W),
          jax.vmap(jax.jacfwd(pair_out_j), in_axes=(0, None))(xs, W))
    close(srcjax.vmap(srcjax.hessian(pair_out), in_axes=(0, None))(xs, W),
          jax.vmap(jax.hessian(pair_out_j), in_axes=(0, None))(xs, W))


def test_an_output_that_may_be_an_array_keeps_both_paths() -> None:
    def maybe_pair(x):  # type: ignore[no-untyped-def]
        if x.ndim == 2:
            return np.sin(x)
        return (np.sin(x), np.sum(x * x))

    def maybe_pair_j(x):  # type: ignore[no-untyped-def]
        if x.ndim == 2:
            return jnp.sin(x)
        return (jnp.sin(x), jnp.sum(x * x))

    assert "jacobian_rows(" in srcjax.source(srcjax.jacrev(maybe_pair))
    for xs in (np.stack([X, 2 * X]), np.stack([W, 2 * W])):  # (a tuple output, an array output)
        close(srcjax.vmap(srcjax.jacrev(maybe_pair))(xs), jax.vmap(jax.jacrev(maybe_pair_j))(xs))
