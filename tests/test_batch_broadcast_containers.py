"""vmap's ``batch_index_update`` of an unbatched container value: leaf by leaf (srcjax/batched.py).

It returned a non-empty container as it was, so an unbatched leaf whose first axis has the batch's length
was then read as batched: ``d["b"] = (W, 2 * W)`` into a dict of mapped values, or ``ys[1] = [W, W]`` into
a list of them, gave each example row ``i`` of ``W`` where NumPy's loop over the examples gives ``W``
itself (a silent wrong answer). Checked against the user's function run by NumPy per example, the generated
source run by NumPy and jax, under vmap, jit(vmap), vmap(grad) and jacrev.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from srcjax.batched import batch_broadcast, batch_broadcast_items, batch_index_update

W = np.arange(9.0).reshape(3, 3)  # (its first axis has the batch's length)
X = np.array([[2.0, -2.0, 3.0], [-1.0, 2.0, -3.0], [0.5, 0.5, -2.0]])


def dict_item_set_to_a_tuple(x):
    d = {"a": x, "b": x}
    d["b"] = (W, W * 2.0)
    return d["b"][0][0] * d["a"] + d["b"][1][2]


def list_item_set_to_a_list(x):
    ys = [x, x]
    ys[1] = [W, W * 3.0]
    return ys[1][0][1] * ys[0] + ys[1][1][0]


def _jax_twin(fn):
    g = dict(fn.__globals__, np=jnp)
    return type(fn)(fn.__code__, g, fn.__name__)


def _per_example(fn, xs):
    return np.stack([fn(x) for x in xs])


@pytest.mark.parametrize("fn", [dict_item_set_to_a_tuple, list_item_set_to_a_list])
def test_an_unbatched_container_put_into_a_batched_one_is_broadcast_leaf_by_leaf(fn):
    want = _per_example(fn, X)
    v = srcjax.vmap(fn)
    np.testing.assert_allclose(np.asarray(v(X)), want)
    np.testing.assert_allclose(np.asarray(srcjax.jit(v)(X)), want)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(v)(X)), want)
    np.testing.assert_allclose(np.asarray(v(X)), np.asarray(jax.vmap(_jax_twin(fn))(X)))


@pytest.mark.parametrize("fn", [dict_item_set_to_a_tuple, list_item_set_to_a_list])
def test_its_derivatives_agree_with_jax(fn):
    twin = _jax_twin(fn)
    def loss(x):
        return fn(x).sum()
    def loss_jax(x):
        return twin(x).sum()
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(loss))(X)),
                               np.asarray(jax.vmap(jax.grad(loss_jax))(X)))
    np.testing.assert_allclose(np.asarray(srcjax.jacrev(srcjax.vmap(fn))(X)),
                               np.asarray(jax.jacrev(jax.vmap(twin))(X)))


def test_a_container_value_put_into_a_container_is_repeated_leaf_by_leaf():
    # (batch_index_update's value: batch_broadcast_items; batch_broadcast itself stays array-only, a helper
    # reverse mode inlines in an `if` on data, tests/test_weak_counters.py)
    d = {"a": np.zeros((3, 2)), "b": np.zeros((3, 2))}
    out = batch_index_update(d, "b", {"w": W, "p": (W[0], 2.0)}, 3, True, False, None)
    assert np.shape(out["b"]["w"]) == (3, 3, 3) and np.shape(out["b"]["p"][0]) == (3, 3)
    assert np.shape(out["b"]["p"][1]) == (3,)
    np.testing.assert_array_equal(out["b"]["w"][1], W)
    np.testing.assert_array_equal(batch_broadcast_items((W,), 3)[0][2], W)
    assert batch_broadcast((), 3) == ()
