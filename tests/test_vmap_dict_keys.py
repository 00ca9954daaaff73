"""vmap of loops and comprehensions over a dict's keys where the dict is mapped whole (``in_axes=0`` of a dict of
parameters): ``{k: params[k] - lr * grads[k] for k in params}`` (hunt14's momentum_sgd_dict) was refused ("the
index [k] into the Python container `grads` must be the same for every example, but it depends on `params`"):
a dict's keys are the same in every example (srcjax/transforms/batch_dict_keys.py, srcjax/batch_keys.py). Also
``vmap(grad(f))`` where ``f`` rebinds an unmapped dict argument to mapped values in a loop (``batch_broadcast``
of a dict broadcast the dict as one array: a ShapeError). Checked against jax and the user's function run by
NumPy per example."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def sgd_steps(params, x, y):
    for _ in range(2):
        r = x @ params["w"] + params["b"] - y
        grads = {"w": x.T @ r / len(y), "b": np.mean(r)}
        params = {k: params[k] - 0.1 * grads[k] for k in params}
    return np.sum((x @ params["w"] + params["b"] - y) ** 2)


def scaled_keys(params, s):
    out = {}
    for k in params.keys():
        out[k] = params[k] * s
    return np.sum(out["w"]) + out["b"]


def _twin_sgd(params, x, y):
    for _ in range(2):
        r = x @ params["w"] + params["b"] - y
        grads = {"w": x.T @ r / len(y), "b": jnp.mean(r)}
        params = {k: params[k] - 0.1 * grads[k] for k in params}
    return jnp.sum((x @ params["w"] + params["b"] - y) ** 2)


RNG = np.random.default_rng(11)
PS = {"w": RNG.standard_normal((4, 3)), "b": RNG.standard_normal(4)}
X, Y = RNG.standard_normal((6, 3)), RNG.standard_normal(6)


def _example(p: dict[str, Any], i: int) -> dict[str, Any]:
    return {k: v[i] for k, v in p.items()}


def _agree(got: Any, want: Any, what: str) -> None:
    got_l, want_l = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_l) == len(want_l), what
    for g, w in zip(got_l, want_l):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-12, err_msg=what)


def test_vmap_over_a_mapped_dicts_keys() -> None:
    got = srcjax.vmap(sgd_steps, in_axes=(0, None, None))(PS, X, Y)
    _agree(got, np.array([sgd_steps(_example(PS, i), X, Y) for i in range(4)]), "vmap vs NumPy per example")
    got = srcjax.vmap(scaled_keys, in_axes=(0, None))(PS, 2.0)
    _agree(got, np.array([scaled_keys(_example(PS, i), 2.0) for i in range(4)]), "vmap of `for k in d.keys()`")


def test_vmap_of_grad_rebinding_an_unmapped_dict() -> None:
    p0 = _example(PS, 0)
    xs, ys = np.stack([X, -X, 0.5 * X]), np.stack([Y, Y, -Y])
    got = srcjax.vmap(srcjax.grad(sgd_steps), in_axes=(None, 0, 0))(p0, xs, ys)
    _agree(got, jax.vmap(jax.grad(_twin_sgd), in_axes=(None, 0, 0))(p0, xs, ys), "vmap(grad) vs jax")
    got = srcjax.vmap(srcjax.grad(sgd_steps), in_axes=(0, None, None))(PS, X, Y)
    _agree(got, jax.vmap(jax.grad(_twin_sgd), in_axes=(0, None, None))(PS, X, Y), "vmap(grad) over params")


def iterate_rows_named_like_a_dict(d, x):
    w = d["w"]
    total = 0.0
    for row in x:  # (x: an array, its rows; never read as a dict's keys)
        total = total + np.sum(row * w)
    return total


def test_an_array_is_still_iterated_by_rows() -> None:
    d = {"w": RNG.standard_normal(3)}
    xs = RNG.standard_normal((2, 5, 3))
    got = srcjax.vmap(iterate_rows_named_like_a_dict, in_axes=(None, 0))(d, xs)
    _agree(got, np.array([iterate_rows_named_like_a_dict(d, x) for x in xs]), "vmap vs NumPy per example")


def recurrence(W, U, x):
    xs, hs = {}, {}
    hs[-1] = np.zeros((5, 1))
    for t in range(3):
        xs[t] = x * (t + 1)
        hs[t] = np.tanh(W @ xs[t] + U @ hs[t - 1])
    return hs[2]


def test_vmap_of_a_dict_made_by_unpacking_and_filled_in_a_loop() -> None:
    """min-char-rnn's ``xs, hs = {}, {}`` filled with mapped values in a loop: the unmapped dict carried by the
    loop was broadcast as one array (a ShapeError at ``U @ hs[t - 1]``)."""
    W, U, x = RNG.standard_normal((3, 5, 4)), RNG.standard_normal((5, 5)), RNG.standard_normal((4, 1))
    got = srcjax.vmap(recurrence, in_axes=(0, None, None))(W, U, x)
    _agree(got, np.stack([recurrence(w, U, x) for w in W]), "vmap vs NumPy per example")
