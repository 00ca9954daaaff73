"""Regression tests for ``vmap`` bugs found in session 28 (issue #15), each checked against ``jax.vmap`` and a
Python loop over the examples:

- a tuple index built by tuple arithmetic holding a batched element (``(0,) * 1 + (i,) + (0,) * (np.ndim(x) - 2)``):
  the second ``+`` took the batched tuple from the first for an array and added element-wise (an internal error
  in NumPy's ``np.ndim`` of a ragged tuple); a name bound by a sum of sequences is now known as a sequence;
- ``lax.scan`` over a dict mixing a mapped and an unmapped leaf: every leaf's axes were moved for the batch axis
  (a ShapeError, "xs has leading dimensions 3 and 4"); the unmapped leaves are now repeated along the batch first;
- ``vmap(grad(f))`` of two helpers whose reverse mode saves a while loop's array and counter whole on one tape
  (``lax.cummax`` and ``lax.cumlogsumexp``): the tape batched as a whole keyed values pushed whole by helper only,
  so the counter ``k`` took the batched array's slot ("cannot batch 'slice(None, k, None)'"); such values are now
  keyed by the name they are restored to as well (``batch_tapes.family``);
- ``sorted(d)`` and ``sorted(d.items())`` of a mapped dict were refused ("cannot batch 'sorted(d)'"): a dict's
  keys are static (``batch_containers.builtin_call``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from srcjax import lax
from tests.twins import jitted

jax.config.update("jax_enable_x64", True)


def _loop(f: Any, in_axes: tuple[Any, ...], *args: Any) -> Any:
    n = next(np.shape(a)[0] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*(a if ax is None else a[k] for a, ax in zip(args, in_axes))) for k in range(n)]
    return np.stack([np.asarray(o) for o in outs])


def _check(f: Any, jf: Any, in_axes: tuple[Any, ...], *args: Any) -> None:
    got = np.asarray(srcjax.vmap(f, in_axes=in_axes)(*args))
    np.testing.assert_allclose(got, _loop(f, in_axes, *args), rtol=1e-12)
    np.testing.assert_allclose(got, np.asarray(jitted(jax.vmap(jf, in_axes=in_axes))(*args)), rtol=1e-12)


def tuple_index(x, i):
    s = (0,) * 1 + (i,) + (0,) * (np.ndim(x) - 2)
    return x[s]


def tuple_index_jax(x, i):
    s = (0,) * 1 + (i,) + (0,) * (jnp.ndim(x) - 2)
    return jnp.asarray(x)[s]


@pytest.mark.parametrize("shape", [(3, 4), (3, 4, 2)])
def test_vmap_of_an_index_built_by_tuple_arithmetic(shape: tuple[int, ...]) -> None:
    x = np.arange(float(np.prod(shape))).reshape(shape)
    _check(tuple_index, tuple_index_jax, (None, 0), x, np.array([0, 2, 3]))


def scan_mixed(x, w):
    return lax.scan(lambda c, p: (c + p["v"][0], p["u"] * np.sum(p["v"])), 0.0, {"u": x, "v": w})


def scan_mixed_jax(x, w):
    return jax.lax.scan(lambda c, p: (c + p["v"][0], p["u"] * jnp.sum(p["v"])), 0.0, {"u": x, "v": w})


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0)])
def test_vmap_of_a_scan_over_a_dict_of_mapped_and_unmapped_leaves(in_axes: tuple[Any, ...]) -> None:
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(3, 4)), rng.normal(size=(3, 2))
    x, w = (np.stack([x, 2 * x]) if in_axes[0] == 0 else x), (np.stack([w, -w, w + 1]) if in_axes[1] == 0 else w)
    _check(lambda a, b: scan_mixed(a, b)[0], lambda a, b: scan_mixed_jax(a, b)[0], in_axes, x, w)
    _check(lambda a, b: scan_mixed(a, b)[1], lambda a, b: scan_mixed_jax(a, b)[1], in_axes, x, w)


def cumulative_loop(x):
    k = 1
    while k < x.shape[0]:
        x = np.concatenate([x[:k], np.maximum(x[k:], x[:-k])])
        k = k * 2
    return x


def two_cumulative(x):
    return np.sum(np.sin(lax.cummax(x, 0))) + np.sum(lax.cumlogsumexp(x, 1))


def two_accumulate(x):
    return np.sum(np.sin(np.maximum.accumulate(x, 0))) + np.sum(lax.cumlogsumexp(x, 1)) + np.sum(lax.cummin(x, 1) ** 2)


def two_loops(x):
    return np.sum(np.sin(cumulative_loop(x))) + np.sum(lax.cumlogsumexp(x, 1))


def two_cumulative_jax(x):
    return jnp.sum(jnp.sin(jax.lax.cummax(x, 0))) + jnp.sum(jax.lax.cumlogsumexp(x, 1))


def two_accumulate_jax(x):
    return two_cumulative_jax(x) + jnp.sum(jax.lax.cummin(x, 1) ** 2)


@pytest.mark.parametrize("f, jf", [(two_cumulative, two_cumulative_jax), (two_accumulate, two_accumulate_jax),
                                   (two_loops, two_cumulative_jax)])
def test_vmap_of_grad_of_two_helpers_saving_loop_counters_on_one_tape(f: Any, jf: Any) -> None:
    x = np.random.default_rng(1).normal(size=(2, 5, 4))
    _check(srcjax.grad(f), jax.grad(jf), (0,), x)


DICT_PROGRAMS = {  # (each of m: numpy for srcjax and the loop, jax.numpy for jax)
    "sorted": lambda m: lambda d: m.stack([d[k] for k in sorted(d)]),
    "sorted_reverse": lambda m: lambda d: m.stack([d[k] * i for i, k in enumerate(sorted(d, reverse=True))]),
    "reversed_sorted": lambda m: lambda d: m.stack([d[k] for k in reversed(sorted(d))]),
    "sorted_items": lambda m: lambda d: m.stack([v * len(k) for k, v in sorted(d.items())]),
    "sorted_keys_len": lambda m: lambda d: m.stack([d[k] for k in sorted(d.keys())]) * len(d),
}


@pytest.mark.parametrize("name", sorted(DICT_PROGRAMS))
def test_vmap_of_sorted_keys_of_a_mapped_dict(name: str) -> None:
    rng = np.random.default_rng(2)
    d = {"bb": rng.normal(size=(3, 2)), "a": rng.normal(size=(3, 2)), "ccc": rng.normal(size=(3, 2))}
    f = DICT_PROGRAMS[name](np)
    got = np.asarray(srcjax.vmap(f)(d))
    np.testing.assert_allclose(got, np.stack([f({k: v[i] for k, v in d.items()}) for i in range(3)]), rtol=1e-12)
    np.testing.assert_allclose(got, np.asarray(jax.vmap(DICT_PROGRAMS[name](jnp))(d)), rtol=1e-12)
