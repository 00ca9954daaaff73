"""Refusals and internal errors under composed transformations (issue #15, session 25): each agrees with jax
and with a Python loop over examples now.

A second ``vmap`` of batched source met srcjax's own per-example helpers (``batch_take``, and the JVP of
``batch_getitem``/``batch_index`` written from their bodies) and tried to batch the Python logic of their
index plans: "cannot batch 'not any(_is_array_index(e) for e in key) and not batched'", located inside
srcjax. Such a helper under an outer vmap now merges the two batch axes and runs once
(``transforms/batch_nested``), and forward mode keeps a helper that is linear in its array
(``core.linear_params``) as the helper, called on the tangent.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402

import srcjax  # noqa: E402

from .twins import jax_twin  # noqa: E402
from .unseen_oracle import agree  # noqa: E402

jax.config.update("jax_enable_x64", True)
RNG = np.random.default_rng(2506)


def take(x, y):
    return np.take(x, y)


def take_axis(x, y):
    return np.take(x, y, axis=1) * 2.0


def take_along(x, y):
    return np.take_along_axis(x, y, axis=0)


def _loop2(f, x, y, axes):
    """The oracle of ``vmap(vmap(f, axes), axes)``: a Python loop over both levels."""
    def pick(v, ax, k):
        return v if ax is None else v[k]
    return np.array([[f(pick(pick(x, axes[0], i), axes[0], j), pick(pick(y, axes[1], i), axes[1], j))
                      for j in range(3)] for i in range(2)])


def _jtake(a, i):
    return jnp.take(a, i)


def _jtake_axis(a, i):
    return jnp.take(a, i, axis=1) * 2.0


def _jtake_along(a, i):
    return jnp.take_along_axis(a, i, axis=0)


@pytest.mark.parametrize("f,twin,xe,ye,imax", [(take, _jtake, (4,), (), 4), (take_axis, _jtake_axis, (2, 3), (2,), 3),
                                                (take_along, _jtake_along, (2, 3), (1, 3), 2)])
def test_vmap_of_vmap_of_a_gather_with_batched_indices(f, twin, xe, ye, imax) -> None:
    """``vmap(vmap(lambda x, y: np.take(x, y)))``, x f64[2,3,4], y int[2,3] (was a BatchingError located in
    srcjax/batched.py); the operand and the indices mapped by both levels or unmapped, against jax and a
    Python loop."""
    for axes in [(0, 0), (None, 0), (0, None)]:
        x = RNG.standard_normal(xe if axes[0] is None else (2, 3) + xe)
        y = RNG.integers(0, imax, ye if axes[1] is None else (2, 3) + ye)
        ours = srcjax.vmap(srcjax.vmap(f, in_axes=axes), in_axes=axes)(x, y)
        agree(ours, _loop2(f, x, y, axes), rtol=1e-12, what=f"loop: vmap(vmap({f.__name__}), in_axes={axes})")
        theirs = jax.vmap(jax.vmap(twin, in_axes=axes), in_axes=axes)(x, y)
        agree(ours, theirs, rtol=1e-12, what=f"jax: vmap(vmap({f.__name__}), in_axes={axes})")


def sort_loss(x, w):
    return np.sum(np.sort(np.sin(x) + x, axis=1) * w) + np.sum(np.sort(x, axis=0)[0] ** 2)


def test_vmap_of_vmap_of_grad_of_a_sort() -> None:
    """``np.sort`` under two vmaps of its derivative (the gather of the sorting permutation's inverse, batched
    twice: was "cannot batch 'not any(_is_array_index(e) for e in key) and not batched'"); tests/test_tape_compose3
    checks the other compositions (all 8 cells with SRCJAX_HYPOTHESIS=thorough)."""
    x = RNG.standard_normal((2, 3, 3, 4))
    w = RNG.uniform(0.5, 1.5, (2, 4))
    ours = srcjax.vmap(srcjax.vmap(srcjax.grad(sort_loss), in_axes=(0, None)))(x, w)
    loop = np.array([[srcjax.grad(sort_loss)(x[i, j], w[i]) for j in range(3)] for i in range(2)])
    agree(ours, loop, rtol=1e-12, what="loop")
    jl = jax_twin(sort_loss)
    agree(ours, jax.vmap(jax.vmap(jax.grad(jl), in_axes=(0, None)))(x, w), rtol=1e-12, what="jax")


def diff_append(x, w):
    y = np.tanh(x) + x * w
    return np.sum(np.diff(y, axis=1, append=x[:, :1]) ** 2)


def test_vmap_of_jacrev_of_jacfwd_of_a_diff_with_append() -> None:
    """A tuple a branch join binds on one path only (UNSET on the other: ``np.diff``'s ``append=`` helper)
    pushed on a tape that vmap batches slot by slot was written ``(result[0], result[1])``: "TypeError: '_Unset'
    object is not subscriptable", an internal error at the user's line. A tuple whose items are batched already
    is pushed as it is, and one with unbatched items is broadcast by ``batch_broadcast_parts`` (UNSET stays)."""
    x = RNG.standard_normal((2, 3, 4))
    w = RNG.uniform(0.5, 1.5, (4,))
    ours = srcjax.vmap(srcjax.jacrev(srcjax.jacfwd(diff_append)), in_axes=(0, None))(x, w)
    theirs = jax.vmap(jax.jacrev(jax.jacfwd(jax_twin(diff_append))), in_axes=(0, None))(x, w)
    agree(ours, theirs, rtol=1e-9, what="vmap(jacrev(jacfwd))")


class Layer(NamedTuple):
    w: Any
    b: Any


def layer(p, x):
    return np.tanh(x @ p.w + p.b)


def batched_layer(p, xs):
    return srcjax.vmap(layer, in_axes=(Layer(None, 0), 0))(p, xs)


def test_numpy_function_of_a_program_calling_vmap_with_named_tuple_axes() -> None:
    """``srcjax.numpy_function(srcjax.jit(g))`` where ``g`` calls ``srcjax.vmap(f, in_axes=<a NamedTuple>)``: the
    generated ``g`` calls vmap of the generated ``f``, whose source was not registered ("cannot read the source
    of f: could not get source code", no location). Each module numpy_function runs is registered under a name
    of its own (two programs of one function no longer share one)."""
    p = Layer(RNG.standard_normal((3, 2)), RNG.standard_normal((4, 2)))
    xs = RNG.standard_normal((4, 3))
    want = np.stack([np.tanh(xs[i] @ p.w + p.b[i]) for i in range(4)])
    agree(srcjax.jit(batched_layer)(p, xs), want, rtol=1e-12, what="jit")
    agree(srcjax.numpy_function(srcjax.jit(batched_layer))(p, xs), want, rtol=1e-12, what="numpy_function")


def sin_times(x):
    return np.sin(x) * x


def vjp_indexed(x, v):
    r = srcjax.vjp(sin_times, x)
    return r[1](v)[0] + r[0]


def test_vmap_of_a_vjp_result_indexed_instead_of_unpacked() -> None:
    """``r = srcjax.vjp(f, x); r[1](v)`` under vmap: the nested ``vjp_fn`` reached through the tuple was not
    batched ("cannot batch 'getitem_1(v)'"); a name bound to a nested function through a tuple calls it."""
    x = RNG.standard_normal((3, 4))
    v = RNG.standard_normal((3, 4))
    want = (np.cos(x) * x + np.sin(x)) * v + np.sin(x) * x
    agree(srcjax.vmap(vjp_indexed)(x, v), want, rtol=1e-12, what="vmap")
    agree(srcjax.vmap(vjp_indexed, in_axes=(0, None))(x, v[0]), (np.cos(x) * x + np.sin(x)) * v[0] + np.sin(x) * x,
          rtol=1e-12, what="vmap, v unmapped")


def _diff_append(x, w):
    y = x
    for _ in range(2):
        y = np.tanh(y) + x * w
    return np.sum(np.diff(y, axis=1, append=x[:, :1]) ** 2)


def _scaled_sum(x, w):  # (a program whose derivatives are quick to write: the wrapper is what is checked)
    return np.sum(np.tanh(x) * w)


@pytest.mark.parametrize("fn", [_scaled_sum, _diff_append], ids=lambda f: f.__name__)
def test_a_jacobian_of_a_vmap_differentiates_the_vmap_not_the_examples_function(fn: Any) -> None:
    """The regression below without its run (the thorough tier runs it): the Jacobian's primal is the vmap,
    not the function of one example it maps, whatever the program (which primal a Jacobian takes is decided by
    the wrapper, ``srcjax/jacobian.py``): [_scaled_sum] in the default tier; [_diff_append], whose
    ``jacrev(vmap(jacfwd(...)))`` takes ~9 CPU s to write, in the thorough tier. test_compose_refusals7's
    test_jacrev_of_vmap_of_jacfwd_saves_inside_a_loop_in_an_if runs the same composition of _diff_append with
    ``y = x * w`` first, against jax."""
    for make in (srcjax.jacrev, srcjax.jacfwd):
        inner = srcjax.vmap(srcjax.jacfwd(fn))
        f = make(inner)
        assert f._primal is inner, (make.__name__, f._primal)


def test_an_error_of_a_jacobian_of_a_vmap_is_not_the_examples_function_run_on_whole_arguments() -> None:
    """Regression: jacrev(vmap(g)) took the vmap's own function ``g`` (one example's arguments) for the function
    it differentiates, so where the derivative failed, its error was ``g`` run on the whole batched arguments
    ("operands could not be broadcast together with shapes (2, 3, 4) and (2, 4)" at the user's line: a
    mistake the user did not make). Either it runs (then it must agree with jax) or its own error is shown."""
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4))
    f = srcjax.jacrev(srcjax.vmap(srcjax.jacfwd(_diff_append)))
    assert f._primal is not _diff_append
    try:
        got = f(x, w)
    except srcjax.TranspileError as e:
        assert "could not be broadcast" not in str(e), str(e)
        return
    want = jax.jit(jax.jacrev(jax.vmap(jax.jacfwd(jax_twin(_diff_append)))))(x, w)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-10)
