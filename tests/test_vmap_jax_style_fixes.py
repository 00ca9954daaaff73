"""Regression tests for the ``vmap`` bugs hunt10's JAX-style programs found (issue #15), each checked against
``jax.vmap`` and a loop over the examples:

- a Python number reaching batched data through a loop carry, a branch join or a container carry came out
  float64 under ``vmap`` (``vmap(horner)`` of float32 rows, ``p = C[0]`` then ``p = c + p * t``), while each
  example and jax keep the data's float32: ``batch_broadcast_items`` repeated the number as a strong array
  (``np.broadcast_to``), and ``batch_select``'s ``np.where`` of two such numbers was strong; both now stay weak
  (a weak array of one axis or more is a Python number per example);
- an unmapped dict carried by ``lax.scan`` under ``vmap`` was broadcast by ``batch_broadcast``, which returns a
  container as it is (now ``batch_broadcast_items``, item by item): its first leaf was read for the batch size, a silent wrong answer where that leaf had the batch's length
  (a vector of 3 read as 3 examples of a scalar), "IndexError: tuple index out of range" where it was a scalar;
- a flag computed from a batched value's shape only (``p.ndim > 1`` in a mask tree) was taken for a batched
  comparison: ``wd * p if k else 0.0`` selected per example, a ShapeError;
- ``lax.switch(i, branches, x)`` with ``branches`` a list or tuple bound to a name before was refused under vmap.
"""

from __future__ import annotations

import types
from typing import Any

import jax
import numpy as np
import pytest

import srcjax
from srcjax import lax

from .twins import JAX, jax_twin

jax.config.update("jax_enable_x64", True)

C = (0.5, 1.5, 2.5)


def horner(t):
    p = C[0]
    for c in C[1:]:
        p = c + p * t
    return p


def literal_carry(t):
    p = 0.5
    for _ in range(3):
        p = p * t + 1.0
    return p


def while_carry(t):
    p = 0.5
    k = 0
    while k < 3:
        p = p * t + 1.0
        k = k + 1
    return p


def tuple_carry(t):
    s = (0.5, 1.0)
    for _ in range(2):
        s = (s[0] * t, s[1] + t)
    return s[0] + s[1]


def fori_carry(t):
    s = np.sum(t)
    return lax.fori_loop(0, 3, lambda i, p: p * s + 1.0, 0.5) * t


def joined_numbers(t):
    p = 0.5
    if np.sum(t) > 4:
        p = 2.0
    return p * t


def joined_number_and_data(t):
    s = np.sum(t)
    if s > 4:
        p = 2.0
    else:
        p = s * 3.0
    return p * t


def running_max(t):
    m = 0.0
    for c in C:
        m = np.maximum(m, t * c)
    return m


# jax cannot branch in Python on a traced value: the branch joins' twins, written with jax.lax.cond
JAX_TWINS = {
    "joined_numbers": lambda t: jax.lax.cond(jax.numpy.sum(t) > 4, lambda: 2.0, lambda: 0.5) * t,
    "joined_number_and_data": lambda t: jax.lax.cond(jax.numpy.sum(t) > 4, lambda s: 2.0 + 0 * s,
                                                     lambda s: s * 3.0, jax.numpy.sum(t)) * t,
}


def _twin(f: Any) -> Any:
    return JAX_TWINS.get(f.__name__) or jax_twin(f, C=C, lax=jax.lax)


WEAK_PROGRAMS = [horner, literal_carry, while_carry, tuple_carry, fori_carry, joined_numbers,
                 joined_number_and_data, running_max]


def _rows(dtype: Any) -> np.ndarray:
    return (np.array([[1.0, 2.0, 0.5], [0.25, 1.0, 1.5], [1.0, 0.5, 0.5]]) * (4 if dtype == np.int32 else 1)
            ).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("f", WEAK_PROGRAMS, ids=lambda f: f.__name__)
def test_vmap_keeps_a_python_number_weak(f: Any, dtype: Any) -> None:
    x = _rows(dtype)
    got = np.asarray(srcjax.vmap(f)(x))
    loop = np.stack([np.asarray(f(r)) for r in x])  # NumPy per example (NEP 50: the number is weak)
    one = np.asarray(srcjax.jit(f)(x[0]))
    want = np.asarray(JAX.vmap(_twin(f))(x))
    assert got.dtype == loop.dtype == one.dtype == want.dtype, (got.dtype, loop.dtype, one.dtype, want.dtype)
    tol = 2e-3 if dtype == np.float16 else 1e-6
    np.testing.assert_allclose(got, loop, rtol=tol)
    np.testing.assert_allclose(got, want, rtol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("f", [horner, tuple_carry, joined_numbers, joined_number_and_data],
                         ids=lambda f: f.__name__)
def test_vmap_of_grad_keeps_a_python_number_weak(f: Any, dtype: Any) -> None:
    x = _rows(dtype)
    g = srcjax.grad(lambda t: np.sum(f(t)))
    got = np.asarray(srcjax.vmap(g)(x))
    loop = np.stack([np.asarray(g(r)) for r in x])
    jf = _twin(f)
    want = np.asarray(JAX.vmap(jax.grad(lambda t: jax.numpy.sum(jf(t))))(x))
    assert got.dtype == loop.dtype == want.dtype == dtype, (got.dtype, loop.dtype, want.dtype)
    tol = 2e-3 if dtype == np.float16 else 1e-6
    np.testing.assert_allclose(got, loop, rtol=tol)
    np.testing.assert_allclose(got, want, rtol=tol)


# -- a lax.scan carrying a dict, under vmap with the carry unmapped: it was not broadcast --------------------

JAX_SRCJAX = types.SimpleNamespace(value_and_grad=jax.value_and_grad, grad=jax.grad, tree_util=jax.tree_util)


def scaled_loss(params, x):
    return np.mean((x * params["a"]) ** 2)


def train_scaled(params, xs):
    def step(p, x):
        loss, g = srcjax.value_and_grad(scaled_loss)(p, x)
        return srcjax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), loss

    params, losses = lax.scan(step, params, xs)
    return np.sum(losses) + np.sum(params["a"])


def linreg_loss(params, x, y):
    return np.mean((x @ params["w"] + params["b"] - y) ** 2)


def train_linreg(params, xs, ys):
    def step(p, batch):
        x, y = batch
        loss, g = srcjax.value_and_grad(linreg_loss)(p, x, y)
        return srcjax.tree_util.tree_map(lambda a, b: a - 0.05 * b, p, g), loss

    params, losses = lax.scan(step, params, (xs, ys))
    return np.sum(losses) + linreg_loss(params, xs[0], ys[0])


def _loop_over(f: Any, in_axes: tuple[Any, ...], *args: Any) -> Any:
    n = next(jax.tree_util.tree_leaves(a)[0].shape[0] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*(a if ax is None else jax.tree_util.tree_map(lambda v, k=k: v[k], a) for a, ax in zip(args, in_axes)))
            for k in range(n)]
    return jax.tree_util.tree_map(lambda *v: np.stack([np.asarray(e) for e in v]), *outs)


def _agree(f: Any, jf: Any, in_axes: tuple[Any, ...], *args: Any) -> None:
    got = srcjax.vmap(f, in_axes=in_axes)(*args)
    for want in (_loop_over(f, in_axes, *args), JAX.vmap(jf, in_axes=in_axes)(*args)):
        assert jax.tree_util.tree_structure(dict(want) if isinstance(want, dict) else want) == \
            jax.tree_util.tree_structure(dict(got) if isinstance(got, dict) else got)
        for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9)


def test_vmap_of_a_scan_carrying_an_unmapped_dict_whose_leaf_has_the_batch_length() -> None:
    # was a silent wrong answer: the carry's vector of 3 read as 3 examples of a scalar
    r = np.random.default_rng(0)
    jf = jax_twin(train_scaled, helpers=[scaled_loss], lax=jax.lax, srcjax=JAX_SRCJAX)
    _agree(train_scaled, jf, (None, 0), {"a": r.normal(size=3)}, r.normal(size=(3, 4, 5, 3)))


def test_vmap_of_a_scan_whose_body_takes_value_and_grad_of_a_dict() -> None:
    # train_loop_scan: was "IndexError: tuple index out of range" (the carry's first leaf, a scalar, read for
    # the batch size)
    r = np.random.default_rng(1)
    jf = jax_twin(train_linreg, helpers=[linreg_loss], lax=jax.lax, srcjax=JAX_SRCJAX)
    _agree(train_linreg, jf, (None, 0, 0), {"w": r.normal(size=3), "b": r.normal(size=())},
           r.normal(size=(2, 4, 5, 3)), r.normal(size=(2, 4, 5)))


# -- a static flag computed from a batched value's shape (`p.ndim > 1`) was taken for a batched one -------------

def masked_decay(params, grads, lr, wd):
    mask = srcjax.tree_util.tree_map(lambda p: p.ndim > 1, params)
    return srcjax.tree_util.tree_map(lambda p, g, k: p - lr * (g + (wd * p if k else 0.0)), params, grads, mask)


def test_vmap_of_a_mask_tree_from_shapes() -> None:
    # adamw_masked: was a ShapeError ("operands could not be broadcast together with shapes (1, 1) and (3, 2)")
    r = np.random.default_rng(2)
    params = {"w": r.normal(size=(4, 3, 2)), "b": r.normal(size=(4, 2))}
    grads = {"w": r.normal(size=(4, 3, 2)), "b": r.normal(size=(4, 2))}
    jf = jax_twin(masked_decay, srcjax=JAX_SRCJAX)
    _agree(masked_decay, jf, (0, 0, None, None), params, grads, 0.1, 0.01)


# -- lax.switch's branches bound to a name before the call ---------------------------------------------------

def switch_named_list(idx, x):
    branches = [lambda v: np.maximum(v, 0.0), lambda v: np.tanh(v), lambda v: v / (1.0 + np.exp(-v))]
    return np.sum(lax.switch(idx, branches, x) ** 2)


def switch_named_tuple(idx, x):
    branches = (lambda v: np.sin(v) * x[0], lambda v: np.cos(v))
    return lax.switch(idx, branches, x)


@pytest.mark.parametrize("in_axes", [(0, 0), (None, 0), (0, None)], ids=str)
@pytest.mark.parametrize("f", [switch_named_list, switch_named_tuple], ids=lambda f: f.__name__)
def test_vmap_of_switch_over_a_named_list_of_branches(f: Any, in_axes: tuple[Any, ...]) -> None:
    # switch_activation: was "vmap: srcjax.lax.switch needs a list of functions"
    r = np.random.default_rng(3)
    idx = np.array([0, 1, 2, 5, -1]) if in_axes[0] == 0 else 1
    x = r.normal(size=(5, 3)) if in_axes[1] == 0 else r.normal(size=3)
    _agree(f, jax_twin(f, lax=jax.lax), in_axes, idx, x)
    g = srcjax.grad(lambda i, v: np.sum(f(i, v)), argnums=1)
    jg = jax.grad(lambda i, v: jax.numpy.sum(jax_twin(f, lax=jax.lax)(i, v)), argnums=1)
    _agree(g, jg, in_axes, idx, x)
