"""Chained and tuple targets that write array elements (frontend/element_targets.py): npbench's polybench
``correlation``/``covariance`` (``cov[i:M, i] = cov[i, i:M] = v``) and ``nbody`` (``KE[0], PE[0] = energy(...)``)
were refused ("assignment to an array element inside a tuple target or chained assignment") where jax runs the
same program written with ``.at[]``. Each is run by NumPy, srcjax (jit, grad, vmap) and jax."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def _cov(data: Any) -> Any:
    M = data.shape[1]
    cov = np.zeros((M, M))
    for i in range(M):
        cov[i:M, i] = cov[i, i:M] = data[:, i] @ data[:, i:M]
    return cov


def _cov_jax(data: Any) -> Any:
    M = data.shape[1]
    cov = jnp.zeros((M, M))
    for i in range(M):
        row = data[:, i] @ data[:, i:M]
        cov = cov.at[i:M, i].set(row).at[i, i:M].set(row)
    return cov


def _energy(x: Any) -> Any:
    return np.sum(x ** 2), np.sum(np.sin(x))


def _history(x: Any) -> Any:
    KE = np.zeros(3)
    PE = np.zeros(3)
    for i in range(3):
        KE[i], PE[i] = _energy(x * (i + 1))
    m = np.zeros((2, 2))
    (m[0, 0], c), m[1] = (x[0], x[1] * 2.0), x[2:4]
    return KE, PE, m, c


def _history_jax(x: Any) -> Any:
    KE = jnp.stack([jnp.sum((x * (i + 1)) ** 2) for i in range(3)])
    PE = jnp.stack([jnp.sum(jnp.sin(x * (i + 1))) for i in range(3)])
    m = jnp.zeros((2, 2)).at[0, 0].set(x[0]).at[1].set(x[2:4])
    return KE, PE, m, x[1] * 2.0


def _leaves_agree(got: Any, want: Any) -> None:
    gl, wl = srcjax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(gl) == len(wl)
    for a, b in zip(gl, wl, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)


def test_a_chained_assignment_into_two_slices() -> None:
    data = np.random.default_rng(0).standard_normal((5, 3))
    _leaves_agree(srcjax.jit(_cov)(data), _cov(data))
    loss = lambda d: np.sum(_cov(d) * np.arange(9.0).reshape(3, 3))  # noqa: E731
    loss_jax = lambda d: jnp.sum(_cov_jax(d) * jnp.arange(9.0).reshape(3, 3))  # noqa: E731
    _leaves_agree(srcjax.grad(loss)(data), jax.grad(loss_jax)(data))
    batch = np.stack([data, 2.0 * data])
    _leaves_agree(srcjax.vmap(_cov)(batch), jax.vmap(_cov_jax)(batch))


def test_a_tuple_target_of_elements() -> None:
    x = np.array([0.5, -1.0, 2.0, 0.3])
    _leaves_agree(srcjax.jit(_history)(x), _history(x))
    loss = lambda x: np.sum(_history(x)[0]) + np.sum(_history(x)[1] * _history(x)[2][1, 0])  # noqa: E731
    loss_jax = lambda x: jnp.sum(_history_jax(x)[0]) + jnp.sum(_history_jax(x)[1] * _history_jax(x)[2][1, 0])  # noqa: E731
    _leaves_agree(srcjax.grad(loss)(x), jax.grad(loss_jax)(x))
    batch = np.stack([x, -x])
    _leaves_agree(srcjax.vmap(_history)(batch), jax.vmap(_history_jax)(batch))
    src = srcjax.source(_history)
    assert "item, item_1 = " in src and "KE = srcjax.lax.index_update(KE, i, item)" in src


def _view_then_tuple_write(m: Any, x: Any) -> Any:
    m = m.copy()
    r = m[0]
    m[0, 0], b = x[0] * 3.0, x[1]
    return r * b


def test_a_tuple_target_writing_through_a_view_read_later_is_refused() -> None:
    """NumPy changes ``r`` (a view of ``m``'s row) through ``m[0, 0]``: refused as a single write is."""
    with pytest.raises(srcjax.TranspileError, match="its item `m\\[0\\]` is read after it") as e:
        srcjax.jit(_view_then_tuple_write)(np.ones((2, 3)), np.array([2.0, 5.0]))
    assert "test_element_targets.py" in str(e.value).splitlines()[0]


def _plucked(cpos: Any, plunk: Any) -> Any:
    # (hunt24's wave_physics) a literal written into two rows, then a row's element changed in place
    force = np.outer(cpos, np.ones(2))
    force[0] = force[-1] = 0, 0
    force[2][1] += plunk
    return force * cpos[:, None]


def _plucked_jax(cpos: Any, plunk: Any) -> Any:
    force = jnp.outer(cpos, jnp.ones(2)).at[0].set(0.0).at[-1].set(0.0)
    force = force.at[2, 1].add(plunk)
    return force * cpos[:, None]


def test_a_chained_assignment_of_a_literal_then_a_rows_element_changed_runs() -> None:
    """Refused before, naming srcjax's own temporary (``would also change 'chained' in NumPy``): the literal is
    written into each row as it is (no object two rows could share)."""
    cpos, plunk = np.array([0.3, -1.2, 0.7, 2.0]), 1.5
    _leaves_agree(srcjax.jit(_plucked)(cpos, plunk), _plucked(cpos, plunk))
    loss = lambda c, p: np.sum(_plucked(c, p) ** 2)  # noqa: E731
    loss_jax = lambda c, p: jnp.sum(_plucked_jax(c, p) ** 2)  # noqa: E731
    _leaves_agree(srcjax.grad(loss, argnums=(0, 1))(cpos, plunk), jax.grad(loss_jax, argnums=(0, 1))(cpos, plunk))
    assert "chained" not in srcjax.source(_plucked)
