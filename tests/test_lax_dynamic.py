"""``srcjax.lax.dynamic_slice`` / ``dynamic_update_slice`` and their ``_in_dim`` forms, and
``srcjax.lax.stop_gradient``, against jax: values (compiled, the NumPy reference, the generated source
run by NumPy), derivatives (grad, jvp, vjp, jacfwd, jacrev, hessian) and batches (vmap with batched
operands and/or batched start indices, vmap of grad, vmap of vmap).

JAX's semantics are the point: a start index counts from the end when negative, then is clamped so that
the window fits (``dynamic_slice(x, (7,), (4,))`` of 8 elements starts at 4): plain slicing would be a
silent wrong answer. Hypothesis draws out-of-range and negative starts of several integer dtypes.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import srcjax
from srcjax import lax
from tests import twins, written
from tests.twins import JAX

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)


def slice_window(x, starts, sizes):
    return srcjax.lax.dynamic_slice(x, starts, sizes) * 2.0


def update_window(x, u, starts):
    return srcjax.lax.dynamic_update_slice(x, u, starts)


def _close(actual: Any, expected: Any, who: str) -> None:
    for a, e in zip(jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected), strict=True):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape, f"{who}: shape {a.shape} != {e.shape}"
        np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-12, err_msg=who)


@st.composite
def windows(draw: Any) -> tuple[tuple[int, ...], tuple[int, ...], Any]:
    """An operand shape, a window's sizes and start indices: negative, in range and past the end, of
    one integer dtype (unsigned ones non-negative)."""
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    sizes = tuple(draw(st.integers(1, d)) for d in shape)
    dtype = draw(st.sampled_from([np.int32, np.int64, np.uint32]))
    lo = 0 if dtype == np.uint32 else -2 * max(shape) - 1
    starts = tuple(draw(st.integers(lo, 2 * d + 1)) for d in shape)
    return shape, sizes, np.array(starts, dtype=dtype)


@written.examples(6)
@given(windows(), st.booleans())
def test_dynamic_slice_clamps_like_jax(window: Any, as_tuple: bool) -> None:
    shape, sizes, starts = window
    x = np.arange(float(np.prod(shape))).reshape(shape)
    s = tuple(starts) if as_tuple else starts  # (a tuple of integer scalars, or one 1-D array: both data)
    expected = np.asarray(jax.jit(twins.jax_twin(slice_window), static_argnames="sizes")(x, s, sizes))
    _close(slice_window(x, s, sizes), expected, "the NumPy reference")
    _close(srcjax.jit(slice_window, static_argnames="sizes")(x, s, sizes), expected, "compiled")
    _close(srcjax.numpy_function(slice_window)(x, s, sizes), expected, "generated source run by NumPy")


@written.examples(6)
@given(windows(), st.booleans())
def test_dynamic_update_slice_clamps_like_jax(window: Any, as_tuple: bool) -> None:
    shape, sizes, starts = window
    x = np.arange(float(np.prod(shape))).reshape(shape)
    u = -1.0 - np.arange(float(np.prod(sizes))).reshape(sizes)
    s = tuple(starts) if as_tuple else starts
    expected = np.asarray(jax.jit(twins.jax_twin(update_window))(x, u, s))
    _close(update_window(x, u, s), expected, "the NumPy reference")
    _close(srcjax.jit(update_window)(x, u, s), expected, "compiled")
    _close(srcjax.numpy_function(update_window)(x, u, s), expected, "generated source run by NumPy")


@written.examples(4)
@given(windows(), st.booleans())
def test_vmap_over_start_indices_matches_jax(window: Any, operand_batched: bool) -> None:
    """Every example's own starts (in range, negative, past the end): a gather (scatter) of every window;
    the operand (and the update) batched or shared."""
    shape, sizes, starts = window
    batch = np.stack([starts, starts[::-1], (starts * 3) // 2]).astype(starts.dtype)
    x = np.arange(float(np.prod(shape))).reshape(shape)
    xs = np.stack([x, -x, x * 2.0]) if operand_batched else x
    axis = 0 if operand_batched else None
    u = -1.0 - np.arange(float(np.prod(sizes))).reshape(sizes)
    _close(srcjax.vmap(lambda a, s: srcjax.lax.dynamic_slice(a, s, sizes), in_axes=(axis, 0))(xs, batch),
           JAX.vmap(lambda a, s: jax.lax.dynamic_slice(a, s, sizes), in_axes=(axis, 0))(xs, batch), "dynamic_slice")
    _close(srcjax.vmap(update_window, in_axes=(axis, None, 0))(xs, u, batch),
           JAX.vmap(twins.jax_twin(update_window), in_axes=(axis, None, 0))(xs, u, batch), "dynamic_update_slice")


def crop(x, i):
    return srcjax.lax.dynamic_slice(x, (i, 1), (2, 3))


def crops_loss(x, starts):
    return np.sum(np.sin(srcjax.vmap(crop, in_axes=(None, 0))(x, starts)) ** 2)


def test_derivatives_of_windows_gathered_over_start_indices():
    """vmap of dynamic_slice over starts of a shared operand is one gather of the windows
    (``window_gather``, transposed by ``window_scatter_add``): grad, hessian, jacrev and jacfwd through it,
    and vmap of it over operands or over batches of starts, against jax."""
    x = np.random.default_rng(0).normal(size=(5, 6))
    starts = np.array([0, 4, -1, 9, 2, 2])  # (overlapping windows: their cotangents add)
    twin, jcrop = twins.jax_twin(crops_loss, helpers=[crop], srcjax=types.SimpleNamespace(
        lax=jax.lax, vmap=jax.vmap)), twins.jax_twin(crop)
    _close(srcjax.grad(crops_loss)(x, starts), JAX.grad(twin)(x, starts), "grad")
    _close(srcjax.hessian(crops_loss)(x, starts), JAX.hessian(twin)(x, starts), "hessian")
    crops, jcrops = srcjax.vmap(crop, in_axes=(None, 0)), jax.vmap(jcrop, in_axes=(None, 0))
    _close(srcjax.jacrev(crops)(x, starts), JAX.jacrev(jcrops)(x, starts), "jacrev")
    _close(srcjax.jacfwd(crops)(x, starts), JAX.jacfwd(jcrops)(x, starts), "jacfwd")
    _close(srcjax.vmap(crops, in_axes=(0, None))(np.stack([x, -x]), starts),
           JAX.vmap(jcrops, in_axes=(0, None))(np.stack([x, -x]), starts), "vmap over operands")
    _close(srcjax.vmap(crops, in_axes=(None, 0))(x, np.stack([starts, starts[::-1]])),
           JAX.vmap(jcrops, in_axes=(None, 0))(x, np.stack([starts, starts[::-1]])), "vmap over starts")


def past_the_end(x, i):
    return srcjax.lax.dynamic_slice(x, (i,), (4,))


def test_a_start_past_the_end_is_clamped_so_the_window_fits():
    """JAX's ``dynamic_slice(x, (7,), (4,))`` of 8 elements is ``x[4:8]`` (not ``x[7:11]``, which NumPy
    cuts to one element); a negative start counts from the end first (-2 -> 6 -> 4; -20 -> -12 -> 0)."""
    x = np.arange(8.0)
    for i, first in ((7, 4), (3, 3), (-2, 4), (-7, 1), (-20, 0)):
        want = np.arange(first, first + 4.0)
        np.testing.assert_array_equal(np.asarray(srcjax.jit(past_the_end)(x, i)), want)
        np.testing.assert_array_equal(past_the_end(x, i), want)
        np.testing.assert_array_equal(np.asarray(jax.lax.dynamic_slice(x, (i,), (4,))), want)


def in_dim_forms(x, u, i):
    a = srcjax.lax.dynamic_slice_in_dim(x, i, 2, axis=-1)
    b = srcjax.lax.dynamic_index_in_dim(x, i, axis=0, keepdims=False)
    c = srcjax.lax.dynamic_index_in_dim(x, i + 1, axis=1)
    d = srcjax.lax.dynamic_update_slice_in_dim(x, u, i, axis=1)
    e = srcjax.lax.dynamic_update_index_in_dim(x, u[:, 0] * 3.0, i, 1)
    return a, b, c, d, e


def test_in_dim_forms_match_jax():
    x = np.arange(20.0).reshape(4, 5)
    u = -np.ones((4, 2))
    twin = jax.jit(twins.jax_twin(in_dim_forms))
    for i in (0, 2, 4, -1, -9, 11):
        want = twin(x, u, i)
        _close(srcjax.jit(in_dim_forms)(x, u, i), want, f"compiled, i={i}")
        _close(in_dim_forms(x, u, i), want, f"the NumPy reference, i={i}")
    _close(srcjax.numpy_function(in_dim_forms)(x, u, -1), twin(x, u, -1), "generated source run by NumPy")


def window_loss(x, u, i, j):
    y = srcjax.lax.dynamic_update_slice(np.sin(x), u * x[0, 0], (i, j))
    w = srcjax.lax.dynamic_slice(y * x, (j, i), (2, 3))
    return np.sum(w ** 2) + np.sum(srcjax.lax.dynamic_index_in_dim(y, j, axis=1, keepdims=False) ** 3)


def windows_of(x, i):
    return srcjax.lax.dynamic_slice(np.tanh(x), (i, i), (2, 3))


def test_derivatives_match_jax():
    """grad, jvp, vjp, jacfwd, jacrev and hessian of a program slicing and updating at data starts
    (in range, negative, past the end): the start indices carry no derivative."""
    x = np.linspace(-1.0, 1.0, 20).reshape(4, 5)
    u = np.linspace(0.5, 2.0, 4).reshape(2, 2)
    twin = twins.jax_twin(window_loss)
    grad = srcjax.grad(window_loss, argnums=(0, 1))
    jgrad = twins.JAX.grad(twin, argnums=(0, 1))
    hess = srcjax.hessian(window_loss)
    jhess = twins.JAX.hessian(twin)
    for i, j in ((1, 2), (3, 4), (-1, -7), (9, -2)):
        _close(grad(x, u, i, j), jgrad(x, u, i, j), f"grad at {(i, j)}")
        _close(hess(x, u, i, j), jhess(x, u, i, j), f"hessian at {(i, j)}")
    i, j = -1, 3
    tx, tu = np.cos(x), np.ones((2, 2))
    _close(srcjax.jvp(window_loss, (x, u, i, j), (tx, tu, 0, 0)),
           JAX.jvp(lambda a, b: twin(a, b, i, j), (x, u), (tx, tu)), "jvp")
    out, back = srcjax.vjp(lambda a, b: window_loss(a, b, i, j), x, u)
    jout, jback = jax.vjp(lambda a, b: twin(a, b, i, j), x, u)
    _close((out, back(2.0)), (jout, jback(2.0)), "vjp")
    jwindows = twins.jax_twin(windows_of)
    for jac in ("jacfwd", "jacrev"):
        _close(getattr(srcjax, jac)(windows_of)(x, 3), getattr(jax, jac)(jwindows)(x, 3), jac)


def test_vmap_matches_jax():
    """Batched operand, update and start indices in every mix; vmap of grad; vmap of vmap."""
    x = np.linspace(-1.0, 1.0, 20).reshape(4, 5)
    u = np.linspace(0.5, 2.0, 4).reshape(2, 2)
    xs, us = np.stack([x + k for k in range(4)]), np.stack([u * k for k in range(4)])
    ii, jj = np.array([0, 3, -1, 9]), np.array([0, 4, -7, -2])
    twin = twins.jax_twin(window_loss)
    for axes in ((None, None, 0, 0), (0, None, None, 0), (0, 0, 0, None), (None, 0, None, None), (0, 0, 0, 0)):
        args = [xs if axes[0] == 0 else x, us if axes[1] == 0 else u, ii if axes[2] == 0 else 2,
                jj if axes[3] == 0 else -1]
        _close(srcjax.vmap(window_loss, in_axes=axes)(*args), twins.JAX.vmap(twin, in_axes=axes)(*args),
               f"vmap {axes}")
        _close(srcjax.vmap(srcjax.grad(window_loss, argnums=(0, 1)), in_axes=axes)(*args),
               twins.JAX.vmap(jax.grad(twin, argnums=(0, 1)), in_axes=axes)(*args), f"vmap(grad) {axes}")
    nested = srcjax.vmap(srcjax.vmap(window_loss, in_axes=(None, None, 0, None)), in_axes=(None, None, None, 0))
    jnested = JAX.vmap(jax.vmap(twin, in_axes=(None, None, 0, None)), in_axes=(None, None, None, 0))
    _close(nested(x, u, ii, jj), jnested(x, u, ii, jj), "vmap(vmap)")
    starts = np.array([[0, 1], [3, 9], [-1, -2], [2, -9]])  # one 1-D array of starts per example
    _close(srcjax.vmap(slice_window, in_axes=(None, 0, None))(x, starts, (2, 3)),
           JAX.vmap(twins.jax_twin(slice_window), in_axes=(None, 0, None))(x, starts, (2, 3)), "array starts")
    _close(srcjax.vmap(update_window, in_axes=(0, 0, 0))(xs, us, starts),
           JAX.vmap(twins.jax_twin(update_window))(xs, us, starts), "array starts, update")


def sliding_dot(x, w):
    n = x.shape[0] - w.shape[0] + 1

    def body(i, out):
        window = srcjax.lax.dynamic_slice(x, (i,), (w.shape[0],))
        return srcjax.lax.dynamic_update_slice(out, np.reshape(np.sum(window * w), (1,)), (i,))

    return np.sum(srcjax.lax.fori_loop(0, n, body, np.zeros(n)) ** 2)


def indexed_rnn(xs, h):
    def step(h, t):
        h = np.tanh(h * 0.5 + srcjax.lax.dynamic_index_in_dim(xs, t, keepdims=False))
        return h, h

    h, hs = srcjax.lax.scan(step, h, np.arange(xs.shape[0]))
    return np.sum(hs ** 2) + np.sum(h)


def test_inside_loops_with_the_loop_counter_as_start():
    """The JAX idiom: a ``fori_loop``/``scan`` body slicing at its counter (a window per step, an output
    written per step): compiled, grad, hessian and vmap of grad against jax."""
    rng = np.random.default_rng(0)
    for f, args in ((sliding_dot, (rng.normal(size=12), rng.normal(size=3))),
                    (indexed_rnn, (rng.normal(size=(5, 3)), rng.normal(size=3)))):
        twin = twins.jax_twin(f)
        _close(srcjax.jit(f)(*args), jax.jit(twin)(*args), f"{f.__name__}: value")
        _close(srcjax.grad(f, argnums=(0, 1))(*args), twins.JAX.grad(twin, argnums=(0, 1))(*args), f"{f.__name__}: grad")
        _close(srcjax.hessian(f)(*args), twins.JAX.hessian(twin)(*args), f"{f.__name__}: hessian")
        batch = np.stack([args[0], args[0] * 0.5])
        _close(srcjax.vmap(srcjax.grad(f), in_axes=(0, None))(batch, args[1]),
               twins.JAX.vmap(jax.grad(twin), in_axes=(0, None))(batch, args[1]), f"{f.__name__}: vmap(grad)")


def no_negatives(x, i):
    return srcjax.lax.dynamic_slice(x, (i,), (3,), allow_negative_indices=False)


def test_allow_negative_indices_false_clamps_a_negative_start_to_zero():
    x = np.arange(8.0)
    want = jax.lax.dynamic_slice(x, (jnp.asarray(-2),), (3,), allow_negative_indices=False)
    np.testing.assert_array_equal(np.asarray(srcjax.jit(no_negatives)(x, np.int64(-2))), want)
    np.testing.assert_array_equal(no_negatives(x, np.int64(-2)), want)


def sized_by_data(x):
    return srcjax.lax.dynamic_slice(x, (0,), (np.sum(x > 3),))


def too_many_starts(x, i):
    return srcjax.lax.dynamic_slice(x, (i, i), (2,))


def float_start(x):
    return srcjax.lax.dynamic_slice(x, (x[0],), (2,))


def mixed_dtypes(x, u):
    return srcjax.lax.dynamic_update_slice(x, u, (1,))


@pytest.mark.parametrize("fn, args, error, words", [
    (sized_by_data, (np.arange(8.0),), srcjax.TranspileError, "slice_sizes"),
    (too_many_starts, (np.arange(8.0), 1), srcjax.TranspileError, "needs 1 start indices"),
    (float_start, (np.arange(8.0),), srcjax.TranspileError, "integer scalar"),
    (mixed_dtypes, (np.arange(8.0), np.ones(2, np.float32)), srcjax.TranspileError, "same dtype"),
])
def test_errors_are_at_the_users_line(fn: Any, args: Any, error: Any, words: str) -> None:
    with pytest.raises(error, match=words) as e:
        srcjax.jit(fn)(*args)
    assert f"{__file__}:" in str(e.value).replace(".pyc", ".py") and "srcjax/" not in str(e.value).split("\n")[0]


def test_source_reads_as_written():
    text = srcjax.source(srcjax.grad(window_loss))
    assert "srcjax.lax.dynamic_update_slice(" in text and "srcjax.lax.dynamic_slice(" in text, text
    assert "from srcjax.lax import dynamic_index_in_dim" in srcjax.source(srcjax.jit(window_loss))
    batched = srcjax.source(srcjax.vmap(window_loss, in_axes=(None, None, 0, 0)))
    assert "batch_dynamic_slice(" in batched and "from srcjax.batched import" in batched, batched
    # the batched helpers' flags are printed with their names (were positional: `..., True, 2, False, True)`)
    assert "operand_batched=True, starts_batched=True)" in batched and "size=batch_size" in batched, batched
    updated = srcjax.source(srcjax.vmap(update_window, in_axes=(0, None, 0)))
    assert "operand_batched=True, update_batched=False, starts_batched=True)" in updated, updated


# -- stop_gradient ---------------------------------------------------------------------------------------

def target_loss(w, x, y):
    target = srcjax.lax.stop_gradient(np.tanh(x @ w))
    return np.sum((x @ w - target * y) ** 2)


def straight_through(x):
    return np.sum((x + srcjax.lax.stop_gradient(np.round(x) - x)) ** 3)


def frozen_tree(p, x):
    q = srcjax.lax.stop_gradient(p)
    return np.sum(q["a"] * np.sin(p["a"] * x) + p["b"] * q["b"] * x ** 2)


def test_stop_gradient_matches_jax():
    """A target network, a straight-through estimator and a frozen copy of a dict: values, grad,
    hessian, jacfwd of grad, jvp, vmap of grad (jax's ``lax.stop_gradient``)."""
    w = np.linspace(-1.0, 1.0, 6).reshape(3, 2)
    x = np.linspace(0.0, 1.0, 12).reshape(4, 3)
    y = np.ones((4, 2))
    v = np.linspace(-2.0, 2.0, 7)
    p = {"a": np.linspace(0.1, 0.3, 3), "b": np.linspace(1.0, 2.0, 3)}
    for f, args in ((target_loss, (w, x, y)), (straight_through, (v,)), (frozen_tree, (p, v[:3]))):
        twin = twins.jax_twin(f)
        _close(srcjax.jit(f)(*args), jax.jit(twin)(*args), f"{f.__name__}: value")
        _close(srcjax.grad(f)(*args), twins.JAX.grad(twin)(*args), f"{f.__name__}: grad")
        _close(srcjax.hessian(f)(*args), twins.JAX.hessian(twin)(*args), f"{f.__name__}: hessian")
    _close(srcjax.jacfwd(srcjax.grad(target_loss))(w, x, y), JAX.jacfwd(jax.grad(twins.jax_twin(target_loss)))(w, x, y),
           "jacfwd(grad)")
    _close(srcjax.jvp(straight_through, (v,), (np.ones(7),)),
           JAX.jvp(twins.jax_twin(straight_through), (v,), (np.ones(7),)), "jvp")
    vs = np.stack([v, v * 0.5])
    _close(srcjax.vmap(srcjax.grad(straight_through))(vs), JAX.vmap(jax.grad(twins.jax_twin(straight_through)))(vs),
           "vmap(grad)")
    assert "srcjax.lax.stop_gradient(np.tanh(" in srcjax.source(srcjax.grad(target_loss))


def test_stop_gradient_is_the_identity_in_numpy():
    x = np.arange(3.0)
    assert lax.stop_gradient(x) is x
    np.testing.assert_array_equal(srcjax.numpy_function(straight_through)(x), straight_through(x))
