"""Loops whose trip count is mapped or whose carry grows, under vmap of derivatives (issue #15): against jax
one example at a time (jax.vmap refuses a traced ``range`` bound) and NumPy running the user's function."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

from .twins import jax_twin

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def fori_mapped(x, lo, hi):
    def body(i, c):
        return c + np.sin(i * c) / (i + 1)

    return srcjax.lax.fori_loop(lo, hi, body, x)


def user_named_loop_body(x, hi):
    def loop_body(i, c):  # (the name the front end gives the loops it writes)
        return c * 0.9 + np.sin(c) * i

    return srcjax.lax.fori_loop(0, hi, loop_body, x)


def python_range(x, n):
    total = 0.0
    for i in range(n):
        total = total + np.sin(x[i]) * x[i]
        if total > 1.0:
            break
    return total


def python_loop_rebind(x, w):
    h = x
    for _ in range(3):
        h = np.tanh(h @ w)  # (w of rank 3: h grows from (3,) to (4, 3) to (4, 4, 3))
    return h


def _per_example(fn: Any, args: tuple[Any, ...], axes: tuple[Any, ...]) -> np.ndarray:
    n = next(np.shape(a)[0] for a, ax in zip(args, axes) if ax is not None)
    return np.stack([np.asarray(fn(*[a if ax is None else a[k] for a, ax in zip(args, axes)])) for k in range(n)])


R = np.random.default_rng(0)
X, LO, HI = R.standard_normal((4, 5)), np.array([0, 2, 1, 3]), np.array([4, 2, 5, 3])


@pytest.mark.parametrize(("fn", "args", "how"), [
    (fori_mapped, (X, LO, HI), "jacfwd"),  # (was "the loop's `range` bound must be the same for every example":
    (user_named_loop_body, (X, HI), "jacfwd"),  # forward mode writes a Python `for`, read again as a loop_body)
    (user_named_loop_body, (X, HI), None),  # (was refused: the body's name taken for the front end's loop_body)
    (python_range, (X, HI), None),  # (jax refuses range(tracer); the loop runs per example as a batched while)
    (python_range, (X, HI), "jacfwd"),
])
def test_vmap_of_a_loop_with_a_mapped_bound(fn: Any, args: tuple[Any, ...], how: str | None) -> None:
    axes = (0,) * len(args)
    f = getattr(srcjax, how)(fn) if how else fn
    got = srcjax.vmap(f, in_axes=axes)(*args)
    twin = jax_twin(fn)
    want = _per_example(getattr(jax, how)(twin) if how else twin, args, axes)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    if how is None:
        np.testing.assert_allclose(got, _per_example(fn, args, axes), rtol=1e-12)


def test_reverse_mode_of_a_mapped_trip_count_is_refused_at_the_users_line() -> None:
    """(jax refuses it too: reverse mode of a while_loop)"""
    with pytest.raises(srcjax.TranspileError, match="runs a different number of times per example") as e:
        srcjax.vmap(srcjax.jacrev(user_named_loop_body))(X, HI)
    assert "test_fori_mapped_bounds.py:30" in str(e.value)


def test_a_loop_whose_carry_grows_is_unrolled() -> None:
    """``vmap(jacrev(f, argnums=1), in_axes=(0, None))`` of a ``for`` whose carry changes shape on its first two
    steps (jax unrolls the Python loop): the rolled loop was refused ("`h` changes shape in the loop")."""
    x, w = R.standard_normal((4, 3)), 0.5 * R.standard_normal((4, 3, 3))
    twin = jax_twin(python_loop_rebind)
    got = srcjax.vmap(srcjax.jacrev(python_loop_rebind, argnums=1), in_axes=(0, None))(x, w)
    want = jax.vmap(jax.jacrev(twin, argnums=1), in_axes=(0, None))(x, w)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(srcjax.jit(python_loop_rebind)(x[0], w), python_loop_rebind(x[0], w), rtol=1e-12)
