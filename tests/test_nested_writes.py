"""Writes into an item of a local list or dict (srcjax/frontend/nested_writes.py, ``composites.item_write``):
min-char-rnn's ``xs[t][inputs[t]] = 1`` (a dict of arrays) and an optimizer's ``state["mu"][k] = v`` (a dict of
dicts) were refused ("assignment into an element of something other than a local array variable"); under jit,
grad and vmap against the user's function run by NumPy, jax (a functional twin) and the generated source run
by NumPy. What NumPy would also change (the item's array under another name, read later; a view of the item)
is refused at the write, and ``a[i][j] = v`` into an array with ``i`` an array of indices (NumPy writes into a copy) is refused with a hint
to write ``a[i, j] = v``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax
from srcjax import TranspileError

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def onehot_sum(w, idx):
    xs = {}
    total = 0.0
    for t in range(3):
        xs[t] = np.zeros(4)
        xs[t][idx[t]] = 1
        total = total + np.sum(xs[t] * w) * w[t]
    return total


def _onehot_twin(w, idx):
    return sum(jnp.sum(jnp.zeros(4).at[idx[t]].set(1) * w) * w[t] for t in range(3))


def state_update(p, g):
    state = {"mu": {k: np.zeros_like(v) for k, v in p.items()}, "n": 0}
    for _ in range(2):
        for k in p:
            state["mu"][k] = 0.5 * state["mu"][k] + g * p[k]
    return np.sum(state["mu"]["w"] ** 2) + state["mu"]["b"]


def _state_twin(p, g):
    mu = {k: jnp.zeros_like(v) for k, v in p.items()}
    for _ in range(2):
        mu = {k: 0.5 * mu[k] + g * p[k] for k in p}
    return jnp.sum(mu["w"] ** 2) + mu["b"]


def list_items(w, idx):
    xs = [np.zeros(4), np.zeros(4)]
    for t in range(2):
        xs[t][idx[t]] = w[t]
        xs[t][idx[t] - 1] += w[t + 1]
    return np.sum(xs[0] * w) + np.sum(xs[1] ** 2)


def _agree(got: Any, want: Any, what: str) -> None:
    for g, v in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(v), rtol=1e-9, atol=1e-12, err_msg=what)


W, IDX = np.array([0.5, -1.0, 2.0, 1.5]), np.array([1, 3, 1])
P = {"w": np.array([0.3, -0.7, 1.1]), "b": np.float64(0.4)}


def test_a_write_into_an_array_held_in_a_dict() -> None:
    _agree(srcjax.jit(onehot_sum)(W, IDX), onehot_sum(W, IDX), "jit vs NumPy")
    g = srcjax.grad(onehot_sum)
    _agree(g(W, IDX), jax.grad(_onehot_twin)(W, IDX), "grad vs jax")
    _agree(srcjax.numpy_function(g)(W, IDX), g(W, IDX), "grad's source run by NumPy")
    ws = np.stack([W, -W, 2 * W])
    _agree(srcjax.vmap(g, in_axes=(0, None))(ws, IDX), jax.vmap(jax.grad(_onehot_twin), in_axes=(0, None))(ws, IDX),
           "vmap(grad) vs jax")


def test_a_write_into_a_dict_held_in_a_dict() -> None:
    _agree(srcjax.jit(state_update)(P, 0.3), state_update(P, 0.3), "jit vs NumPy")
    _agree(srcjax.grad(state_update)(P, 0.3), jax.grad(_state_twin)(P, 0.3), "grad vs jax")
    gs = np.array([0.3, -0.2, 1.0])
    _agree(srcjax.vmap(state_update, in_axes=(None, 0))(P, gs), np.array([state_update(P, g) for g in gs]),
           "vmap vs NumPy per example")


def test_writes_into_arrays_held_in_a_list() -> None:
    _agree(srcjax.jit(list_items)(W, IDX), list_items(W, IDX), "jit vs NumPy")
    eps, g = 1e-6, np.asarray(srcjax.grad(list_items)(W, IDX))
    fd = [(list_items(W + eps * e, IDX) - list_items(W - eps * e, IDX)) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def adam_list_state(ws, gs):
    # (state["m"][i] = m, then m read again: NumPy stores m in the list, changing nothing; was refused "would also
    # change 'm'")
    state = {"m": [np.zeros_like(w) for w in ws]}
    out = []
    for i in range(len(ws)):
        m = 0.9 * state["m"][i] + 0.1 * gs[i]
        state["m"][i] = m
        out.append(ws[i] - 0.01 * m)
    return np.sum(out[0] ** 2) + np.sum(out[1] * state["m"][1])


def test_an_element_stored_into_a_list_in_a_dict_is_read_again() -> None:
    ws = [np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.75])]
    gs = [np.array([0.1, 0.2, 0.3]), np.array([-0.3, 0.1, 0.4])]
    np.testing.assert_allclose(np.asarray(srcjax.jit(adam_list_state)(ws, gs)), adam_list_state(ws, gs), rtol=1e-12)
    g = srcjax.grad(adam_list_state)(ws, gs)
    eps = 1e-6
    for k in range(2):
        fd = []
        for e in np.eye(3):
            up = [w + eps * e if j == k else w for j, w in enumerate(ws)]
            dn = [w - eps * e if j == k else w for j, w in enumerate(ws)]
            fd.append((adam_list_state(up, gs) - adam_list_state(dn, gs)) / (2 * eps))
        np.testing.assert_allclose(np.asarray(g[k]), fd, rtol=1e-6, atol=1e-8)


def aliased_item(w):
    a = np.zeros(3)
    xs = [a]
    xs[0][1] = 5.0
    return np.sum(a * w)


def viewed_item(w):
    xs = [np.zeros(3)]
    b = xs[0]
    xs[0][1] = 5.0
    return np.sum(b * w)


def array_row(w):
    a = np.zeros((2, 3))
    a[1][2] = 1.0
    return np.sum(a * w)


def fancy_rows(w):
    a = np.zeros((2, 3))
    a[[0, 1]][0] = 1.0  # (NumPy writes into a copy: `a` is unchanged)
    return np.sum(a * w)


def test_a_write_into_an_arrays_row_by_two_subscripts() -> None:
    """``a[i][j] = v`` with ``i`` a number writes through the view ``a[i]``, as ``a[i, j] = v`` (Rosetta Code's
    Cholesky ``L[i][j] = ...``): it was refused with a hint to write ``a[i, j] = v``."""
    w = np.arange(1.0, 4.0)
    np.testing.assert_allclose(np.asarray(srcjax.jit(array_row)(w)), array_row(w))
    np.testing.assert_allclose(np.asarray(srcjax.grad(lambda v: array_row(v * v))(w)), [0.0, 0.0, 6.0])


@pytest.mark.parametrize("fn, match", [(aliased_item, "so NumPy's `a` changes too"),
                                       (viewed_item, "so `b`, which shares it through a view"),
                                       (fancy_rows, r"write a\[i, j\] = v")], ids=lambda v: getattr(v, "__name__", ""))
def test_what_numpy_would_also_change_is_refused(fn: Any, match: str) -> None:
    with pytest.raises(TranspileError, match=match) as e:
        srcjax.jit(fn)(np.ones(3))
    assert "test_nested_writes.py" in str(e.value) and "][" in str(e.value)  # (at the user's write)


def _keyed_twice(x, k):
    out = {}
    out[k] = [x, 2.0 * x]  # (`k` keys a dict here and indexes an array below: it may repeat there, not here)
    y = np.zeros(3)
    y[k] = np.sum(x)
    return np.sum(out[k][0] * out[k][1]) + np.sum(y)


def test_grad_of_a_list_stored_into_a_dict_by_a_key_that_also_indexes_an_array() -> None:
    """Refused before ("np.where(): a list of traced values"): a key that also indexes an array is not known to
    name one element (writes47's rule), so the write's cotangent kept ``np.where(winning_writes(out, k), ...)``
    around the list stored; a write into a name that is always a dict or list lands whatever its key."""
    x = np.array([1.0, 2.0, -1.0])
    g = srcjax.grad(_keyed_twice)
    _agree(g(x, 1), 4.0 * x + 1.0, "grad vs the closed form")
    _agree(srcjax.numpy_function(g)(x, 1), g(x, 1), "grad's source run by NumPy")
