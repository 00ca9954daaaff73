"""vmap of helpers that recurse to a static depth (issue #15): each call batched per its own argument
states, recursion to a fixed point (transforms/batch_recursion.py).

Found as a silent wrong answer: ``vmap`` of a Hessian-vector product through ``_rec(x, n)`` gave wrong
values, because the batched recursive call did not follow its tape (a list pushed once per level) and
popped the tangents of the deeper levels as unbatched. Each case is checked against jax and against a
Python loop over examples, for several depths, mapped arguments and transformations.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from tests.twins import JAX

jax.config.update("jax_enable_x64", True)


def _rec(x, w, n):
    if n == 0:
        return x
    return _rec(np.sin(x) * w + 0.3, w, n - 1)


def _jrec(x: Any, w: Any, n: int) -> Any:
    return x if n == 0 else _jrec(jnp.sin(x) * w + 0.3, w, n - 1)


def _even(x, n):
    if n == 0:
        return x
    return _odd(np.cos(x) * 1.2, n - 1)


def _odd(x, n):
    if n == 0:
        return x * x
    return _even(np.sin(x) * 1.5, n - 1)


def _jeven(x: Any, n: int) -> Any:
    return x if n == 0 else _jodd(jnp.cos(x) * 1.2, n - 1)


def _jodd(x: Any, n: int) -> Any:
    return x * x if n == 0 else _jeven(jnp.sin(x) * 1.5, n - 1)


def loss_d0(x, w):
    return np.sum(_rec(x, w, 0) ** 2)


def loss_d1(x, w):
    return np.sum(_rec(x, w, 1) ** 2)


def loss_d3(x, w):
    return np.sum(_rec(x, w, 3) ** 2)


def loss_two_depths(x, w):  # one helper called at two depths
    return np.sum(_rec(x, w, 2) * _rec(w, x, 4))


def loss_mutual(x, w):
    return np.sum(_even(x * w, 3)) + np.sum(_odd(x, 2) * w)


def _jloss(name: str) -> Any:
    return {
        "loss_d0": lambda x, w: jnp.sum(_jrec(x, w, 0) ** 2),
        "loss_d1": lambda x, w: jnp.sum(_jrec(x, w, 1) ** 2),
        "loss_d3": lambda x, w: jnp.sum(_jrec(x, w, 3) ** 2),
        "loss_two_depths": lambda x, w: jnp.sum(_jrec(x, w, 2) * _jrec(w, x, 4)),
        "loss_mutual": lambda x, w: jnp.sum(_jeven(x * w, 3)) + jnp.sum(_jodd(x, 2) * w),
    }[name]


LOSSES = [loss_d0, loss_d1, loss_d3, loss_two_depths, loss_mutual]
IN_AXES = [(0, None), (None, 0), (0, 0)]
rng = np.random.default_rng(0)
X, W = rng.standard_normal((4, 3)) * 0.7, rng.standard_normal((4, 3)) * 0.7


def _args(in_axes: tuple[Any, ...]) -> tuple[Any, Any]:
    return (X if in_axes[0] == 0 else X[0]), (W if in_axes[1] == 0 else W[1])


def _examples(in_axes: tuple[Any, ...], x: Any, w: Any) -> list[tuple[Any, Any]]:
    return [(x[i] if in_axes[0] == 0 else x, w[i] if in_axes[1] == 0 else w) for i in range(4)]


def _hvp(f: Any) -> Any:
    def hvp(x, w):
        return srcjax.jvp(srcjax.grad(f), (x, w), (np.ones_like(x), np.zeros_like(w)))[1]
    return hvp


def _jhvp(f: Any) -> Any:
    return lambda x, w: JAX.jvp(jax.grad(f), (x, w), (jnp.ones_like(x), jnp.zeros_like(w)))[1]


@pytest.mark.parametrize("how", ["plain", "grad", "hvp"])
@pytest.mark.parametrize("in_axes", IN_AXES, ids=str)
@pytest.mark.parametrize("f", LOSSES, ids=lambda f: f.__name__)
def test_vmap_through_static_recursion(f: Any, in_axes: tuple[Any, ...], how: str) -> None:
    jf = _jloss(f.__name__)
    fn, jfn = {"plain": (f, jf), "grad": (srcjax.grad(f), JAX.grad(jf)), "hvp": (_hvp(f), _jhvp(jf))}[how]
    x, w = _args(in_axes)
    got = np.asarray(srcjax.vmap(fn, in_axes=in_axes)(x, w))
    want = np.asarray(JAX.vmap(jfn, in_axes=in_axes)(jnp.asarray(x), jnp.asarray(w)))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    loop = np.stack([np.asarray(fn(xi, wi)) for xi, wi in _examples(in_axes, x, w)])
    np.testing.assert_allclose(got, loop, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f", LOSSES, ids=lambda f: f.__name__)
def test_hessian_through_static_recursion(f: Any) -> None:
    """(loss_two_depths: one recursive helper at two depths on one tape, batched whole by the Hessian's
    vmap: its values stay as pushed, slot by slot, srcjax/transforms/batch_tapes.py.)"""
    got = np.asarray(srcjax.hessian(f)(X[0], W[0]))
    want = np.asarray(JAX.hessian(_jloss(f.__name__))(jnp.asarray(X[0]), jnp.asarray(W[0])))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def _tree_sum(parts):
    if len(parts) == 1:
        return parts[0]
    mid = len(parts) // 2
    return _tree_sum(parts[:mid]) * 0.5 + np.sin(_tree_sum(parts[mid:]))


def _jtree_sum(parts: Any) -> Any:
    if len(parts) == 1:
        return parts[0]
    mid = len(parts) // 2
    return _jtree_sum(parts[:mid]) * 0.5 + jnp.sin(_jtree_sum(parts[mid:]))


def tree_loss(x):
    return np.sum(_tree_sum(tuple(x[i] for i in range(x.shape[0]))) ** 2)


def test_hessian_and_vmap_of_grad_through_recursion_over_a_tuple() -> None:
    jl = lambda x: jnp.sum(_jtree_sum(tuple(x[i] for i in range(x.shape[0]))) ** 2)  # noqa: E731
    x = rng.standard_normal((5, 2)) * 0.6
    np.testing.assert_allclose(np.asarray(srcjax.hessian(tree_loss)(x)), np.asarray(JAX.hessian(jl)(x)),
                               rtol=1e-10, atol=1e-12)
    xs = rng.standard_normal((3, 5, 2)) * 0.6
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(tree_loss))(xs)),
                               np.asarray(JAX.vmap(jax.grad(jl))(xs)), rtol=1e-10, atol=1e-12)


def _pick(x, y, k):  # two returns, in different states when only x is mapped
    if k == 0:
        return y
    return x * y


def picks(x, y):
    return _pick(x, y, 0) * 2.0 + _pick(x, y, 1)


def test_a_helper_returning_an_unmapped_value_on_one_path() -> None:
    x, y = rng.standard_normal((4, 4)), rng.standard_normal(4)  # (y's shape is one example's x's and the batch)
    got = np.asarray(srcjax.vmap(picks, in_axes=(0, None))(x, y))
    np.testing.assert_allclose(got, np.stack([picks(xi, y) for xi in x]), rtol=1e-12)


# -- a helper's returns in different states (the 4 wrong answers that reverted the first merge) -------

def _axes(a, axis):  # as srcjax.composites' reduce_axes: a tuple of any length, or a 1-tuple
    nd = np.ndim(a)
    if axis is None:
        return tuple(range(nd))
    return (axis % nd,)


def mean_all_and_last(x):
    return np.sum(x, axis=_axes(x, None)) / x.size + np.sum(np.sum(x, axis=_axes(x, -1)))


def test_a_tuple_of_any_length_is_not_cut_to_another_returns_length() -> None:
    """Both returns unbatched, one a 1-tuple literal: the second return's state (a Tree of one unbatched
    element) was the join, and the first return, ``tuple(range(nd))``, was packed to it as
    ``(tuple_1[0],)``: np.mean over the first axis only (vmap of grad of a mean: 2x the values)."""
    xs = rng.standard_normal((3, 4, 2))
    got = np.asarray(srcjax.vmap(mean_all_and_last)(xs))
    np.testing.assert_allclose(got, np.stack([mean_all_and_last(x) for x in xs]), rtol=1e-12)
    g = np.asarray(srcjax.vmap(srcjax.grad(mean_all_and_last))(xs))
    np.testing.assert_allclose(g, np.stack([np.asarray(srcjax.grad(mean_all_and_last)(x)) for x in xs]), rtol=1e-12)
    jm = lambda x: jnp.mean(x) + jnp.sum(jnp.sum(x, axis=-1))  # noqa: E731
    np.testing.assert_allclose(g, np.asarray(JAX.vmap(jax.grad(jm))(xs)), rtol=1e-12)


def mean_loss(w, x, y):  # tests/test_cli.py's model: per-example gradients were 2x
    p = np.tanh(x @ w) * 0.5
    return np.mean((p - y) ** 2)


def test_per_example_gradients_of_a_mean() -> None:
    w, x, y = rng.standard_normal((3, 2)), rng.standard_normal((5, 4, 3)), rng.standard_normal((5, 4, 2))
    got = np.asarray(srcjax.vmap(srcjax.grad(mean_loss), in_axes=(None, 0, 0))(w, x, y))
    jl = lambda w, x, y: jnp.mean((jnp.tanh(x @ w) * 0.5 - y) ** 2)  # noqa: E731
    np.testing.assert_allclose(got, np.asarray(JAX.vmap(jax.grad(jl), in_axes=(None, 0, 0))(w, x, y)), rtol=1e-10)


def _rows_or_pair(x, y, k):  # an array on one path, a pair with a batched element on the other
    if k == 0:
        return np.stack([y, 2.0 * y, 3.0 * y])
    return (x, y)


def rows_then_pair(x, y):
    a = _rows_or_pair(x, y, 0)
    b = _rows_or_pair(x, y, 1)
    return np.sum(a, axis=0) + b[0] * b[1]


def test_an_unbatched_array_is_not_packed_to_another_returns_pair() -> None:
    """The join of an unbatched value (any structure) and a pair with a batched element is every leaf
    batched (each return keeping its own structure), not the pair's keys: the 3-row array was cut to 2."""
    x, y = rng.standard_normal((4, 3)), rng.standard_normal(3)
    got = np.asarray(srcjax.vmap(rows_then_pair, in_axes=(0, None))(x, y))
    np.testing.assert_allclose(got, np.stack([rows_then_pair(xi, y) for xi in x]), rtol=1e-12)


# -- hessian through recursion and containers ----------------------------------------------------------

def test_hessian_of_tree_sum_over_a_dict() -> None:
    from tests.container_programs import tree_sum

    def jts(t: Any) -> Any:
        if isinstance(t, dict):
            return sum(jts(t[k]) for k in t)
        if isinstance(t, (tuple, list)):
            return sum(jts(v) for v in t)
        return jnp.sum(jnp.sin(t) * t)

    tree = {"a": [rng.standard_normal(2), (rng.standard_normal((2, 2)), np.float64(0.5))], "b": rng.standard_normal(3)}
    got, want = srcjax.hessian(tree_sum)(tree), JAX.hessian(jts)(tree)
    g, gs = jax.tree_util.tree_flatten(got)
    j, js = jax.tree_util.tree_flatten(want)
    assert gs == js
    for a, b in zip(g, j):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)


def test_jacfwd_batches_the_jvp_through_two_depths() -> None:
    """The batched JVP of loss_two_depths was refused (its tape batched whole), so hessian took the loop over
    basis vectors; the tape keeps its values as pushed now (batch_tapes), and the JVP is batched."""
    assert "_vmap(" in srcjax.source(srcjax.hessian(loss_two_depths))
    assert "_vmap(" in srcjax.source(srcjax.hessian(loss_d3))
