"""``np.array(Q)`` of a list variable holding batched and unbatched values, under vmap (hunt25: filterpy's
``Q_discrete_white_noise``: ``Q = [[.25 * dt ** 4, .5 * dt ** 3], [.5 * dt ** 3, dt ** 2]]`` with a constant entry,
then ``np.array(Q) * var``). Silently wrong before: vmap broadcast the unbatched items (a list display) and
``np.array`` of it kept the examples last (``(3, 3, B)`` read as ``(B, 3, 3)``: wrong numbers where the batch had
the rows' size, a shape error elsewhere); lists three deep were stacked wrong even when every item was batched.
Oracles: the function run by NumPy on each example; jax for the derivatives."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def white_noise(dt, var):
    Q = [[0.25 * dt ** 4, 0.5 * dt ** 3, 0.5 * dt ** 2],
         [0.5 * dt ** 3, dt ** 2, dt],
         [0.5 * dt ** 2, dt, 1]]
    return np.array(Q) * var


def three_deep(dt, var):
    Q = [[[dt, 2 * dt], [3 * dt, 4.0]], [[dt, var], [dt, dt]]]
    return np.array(Q)


def tuple_rows(dt, var):
    Q = ((dt, 1.0), (2.0, dt * var))
    return np.asarray(Q)


@pytest.mark.parametrize("fn", [white_noise, three_deep, tuple_rows])
@pytest.mark.parametrize("axes", [(0, 0), (0, None)])
def test_vmap_of_array_of_a_mixed_list_matches_a_loop(fn: Any, axes: tuple[Any, ...]) -> None:
    dt, var = np.array([0.5, 0.7, 0.9]), np.array([1.5, 2.0, 2.5])
    args = (dt, var if axes[1] == 0 else var[0])
    got = np.asarray(srcjax.vmap(fn, in_axes=axes)(*args))
    want = np.stack([fn(dt[k], var[k] if axes[1] == 0 else var[0]) for k in range(3)])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_jacfwd_of_the_vmap_agrees_with_jax() -> None:
    dt, var = np.array([0.5, 0.7, 0.9]), np.array([1.5, 2.0, 2.5])
    got = srcjax.jacfwd(srcjax.vmap(white_noise), argnums=(0, 1))(dt, var)
    src = "def white_noise(dt, var):\n" + "\n".join(
        __import__("inspect").getsource(white_noise).splitlines()[1:])
    ns: dict[str, Any] = {"np": jax.numpy}
    exec(src, ns)  # noqa: S102 - (the same function with jax.numpy)
    want = jax.jacfwd(jax.vmap(ns["white_noise"]), argnums=(0, 1))(dt, var)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10)
