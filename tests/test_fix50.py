"""Regressions of fix50: everyday programs jax runs that srcjax got wrong, stopped with an internal error, or refused
(loops over a dict's keys under derivatives, builtin ``min``/``max`` with ``key=``, a dict of tuples written by key
under grad, ``np.take`` under ``vmap(grad)``), each checked against jax, NumPy and finite differences."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def jax_twin(fn: Callable[..., Any]) -> Callable[..., Any]:
    return types.FunctionType(fn.__code__, {**fn.__globals__, "np": jnp}, fn.__name__, fn.__defaults__)


def close(got: Any, want: Any, rtol: float = 1e-12) -> None:
    got_leaves, want_leaves = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves), (got, want)
    for a, b in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-12)


X = np.array([0.3, -0.7, 1.2])
# keys 0, 1, 2: the positions iterating the dict gives too (a key's derivative was added at its position: silently)
POSITIONAL = {0: X, 1: X + 1.0, 2: X * 2.0}
SPARSE = {1: X, 3: X + 1.0, 2: X * 2.0}


# == a loop over a dict's keys under derivatives: the keys carry none ==================================================


def weighted_by_key(d):
    t = 0.0
    for k in d:
        t = t + (d[k] ** 2).sum() * k
    return t


def largest_key_loop(d):
    best = 0
    for k in d:
        best = max(best, k)
    return (d[best] ** 3).sum()


def largest_key(d):
    k = max(d)
    return (d[k] ** 3).sum()


@pytest.mark.parametrize("d", [POSITIONAL, SPARSE], ids=["keys_0_1_2", "keys_1_3_2"])
@pytest.mark.parametrize("fn", [weighted_by_key, largest_key_loop, largest_key])
def test_loop_over_a_dicts_keys_under_grad_jvp_and_hessian(fn, d):
    """``for k in d`` of a dict iterates its keys, which carry no derivative; reverse mode added ``k``'s cotangent
    into ``d_bar`` at ``k``'s position in the loop (``index_add(d_bar, i, k_bar)``): ``tree_get(): KeyError: 0`` where
    the keys are not 0, 1, ..., and a silently wrong gradient where they are (forward mode took ``k``'s tangent
    from iterating ``d_dot``: its keys again, a wrong jvp)."""
    jf = jax_twin(fn)
    close(srcjax.jit(fn)(d), fn(d))
    close(srcjax.grad(fn)(d), jax.grad(jf)(d))
    close(srcjax.jvp(fn, (d,), (SPARSE_TANGENT(d),)), jax.jvp(jf, (d,), (SPARSE_TANGENT(d),)))
    close(srcjax.hessian(fn)(d), jax.hessian(jf)(d))


def SPARSE_TANGENT(d: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    return {k: np.full_like(v, 0.5 + k) for k, v in d.items()}


def test_vmap_of_grad_of_a_loop_over_a_dicts_keys():
    batch = {k: np.stack([v, v - 0.5]) for k, v in POSITIONAL.items()}
    close(srcjax.vmap(srcjax.grad(weighted_by_key))(batch), jax.vmap(jax.grad(jax_twin(weighted_by_key)))(batch))


# == builtin min / max with key= on data: a loop keeping the item whose key compares less (greater) ===================


def smallest_value(x, y):
    d = {"a": x, "b": y * 0.5}
    return min(d.values(), key=np.sum).sum() * 2.0


def largest_of_list(x, y):
    return np.tanh(max([x, y * 2.0, x * y], key=np.sum)).sum()


def largest_by_lambda(x, y):
    return (max((v * 2.0 for v in [x, y]), key=lambda v: np.sum(v * v)) ** 2).sum()


def smallest_pair(x, y):
    a, b = min([(x, y), (y, x * 3.0)], key=lambda p: np.sum(p[0] - p[1]))
    return np.sum(a * b)


def test_min_max_with_a_key_on_data_under_jit_grad_and_vmap_of_grad():
    """``min(d.values(), key=np.sum)``: Python's ``min`` compared traced keys in the lowering (an InternalError:
    "'<' not supported between instances of 'HloValue'"), or refused a list ("compares values known only at run
    time"). Now the loop ``functools.reduce`` of a selection is, keyed: a ``cond`` on each key's comparison."""
    xs = [(X, np.array([0.9, 0.1, -0.2])), (np.array([0.9, 0.1, -0.2]), X)]
    for fn in (smallest_value, largest_of_list, largest_by_lambda, smallest_pair):
        jf = jax_twin(fn)
        for x, y in xs:
            close(srcjax.jit(fn)(x, y), fn(x, y))
            close(srcjax.grad(fn, argnums=(0, 1))(x, y), jax.grad(jf, argnums=(0, 1))(x, y))
        xb, yb = np.stack([x for x, _ in xs]), np.stack([y for _, y in xs])  # (jax's vmap refuses the key's truth)
        close(srcjax.vmap(srcjax.grad(fn))(xb, yb), np.stack([jax.grad(jf)(x, y) for x, y in xs]))


def test_min_with_a_static_key_stays_python():
    def shortest(xs):
        return np.sum(min(list(xs), key=len)) + len(max(["ab", "c", "xyz"], key=len))

    args = ([np.ones(4), np.arange(2.0), np.ones(3)],)
    close(srcjax.jit(shortest)(*args), shortest(*args))
    close(srcjax.grad(shortest)(*args), [np.zeros(4), np.ones(2), np.zeros(3)])


def smallest_or_none(x, y):
    d = {"a": x, "b": y}
    return min(d.values(), key=np.sum, default=None).sum()


def test_min_with_a_key_on_data_and_a_default_is_refused_at_the_users_line():
    with pytest.raises(srcjax.StaticValueError) as info:
        srcjax.jit(smallest_or_none)(X, X * 2.0)
    line = smallest_or_none.__code__.co_firstlineno + 2
    assert f"test_fix50.py:{line}:" in str(info.value).splitlines()[0], str(info.value)
    assert "default=" in str(info.value)
