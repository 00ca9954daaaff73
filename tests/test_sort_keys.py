"""``sorted(d.items(), key=lambda kv: kv[0])`` in differentiated and batched code (issue #15;
frontend/sort_keys.py): the pairs in key order, as ``sorted(d.items())``; jit, grad, vmap, vmap(grad) against jax
and NumPy running the user's function (was "cannot differentiate through the nested function `lambda_fn`" and
"vmap: cannot batch 'sorted(items, key=lambda_fn)'"). Other keys stay refused in derivatives, at the user's call."""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

from .twins import jax_twin

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def items_by_key(d):
    total = 0.0
    for k, v in sorted(d.items(), key=lambda kv: kv[0]):  # noqa: B007
        total = total * 0.5 + np.sum(v ** 3)
    return total


def items_by_key_reversed(d):
    total = 0.0
    for _, v in sorted(d.items(), key=lambda kv: kv[0], reverse=True):
        total = total * 0.5 + np.sum(np.sin(v))
    return total


def keys_by_length(d):
    total = 0.0
    for k in sorted(d, key=lambda k: len(k)):
        total = total * 0.5 + np.sum(np.sin(d[k]))
    return total


def _close(a, b):
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-12, atol=1e-14)


def _dict(shape):
    rng = np.random.default_rng(0)
    return {k: rng.normal(size=shape) for k in ("a", "bb", "ccc", "dd")}


@pytest.mark.parametrize("fn", [items_by_key])
def test_items_in_key_order(fn):
    d, db = _dict(3), _dict((4, 3))
    twin = jax_twin(fn)
    _close(srcjax.jit(fn)(d), fn(d))
    _close(srcjax.grad(fn)(d), jax.grad(twin)(d))
    _close(srcjax.vmap(fn)(db), jax.vmap(twin)(db))
    _close(srcjax.vmap(srcjax.grad(fn))(db), jax.vmap(jax.grad(twin))(db))


@pytest.mark.parametrize("fn", [keys_by_length, items_by_key_reversed])
def test_other_keys_run_compiled_and_are_refused_in_derivatives(fn):
    d = _dict(3)
    _close(srcjax.jit(fn)(d), fn(d))
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.grad(fn)(d)
    assert "test_sort_keys.py" in str(e.value).splitlines()[0]
