"""Regression tests of what hunt 27 (tests/hunt27_programs.py) found, each against NumPy or jax:

- ``x.at[i, j].max(v)`` (and ``.min``/``.multiply``/``.divide``/``.power``) with a repeated position ``(i, j)``
  kept only the last value there (``x[key] = max(x[key], v)``), where JAX combines every value: a silent wrong
  answer for any key but a 1-D index array on the leading axis (a tuple of index arrays, a 2-D index array, an
  index array after a slice);
- ``np.maximum.at``/``np.minimum.at``/``np.multiply.at``/``np.subtract.at``/``np.divide.at``/``np.power.at`` were
  refused (only ``np.add.at`` ran);
- ``np.copyto(a, b, where=m)`` was refused (``np.copyto(a, b)`` ran);
- ``np.take(a, indices, axis, mode="clip"/"wrap")`` was refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

from .twins import JAX, jitted

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

_RNG = np.random.default_rng(27)
X = _RNG.standard_normal((3, 4))
I = np.array([0, 0, 2, 1, 0])  # noqa: E741 - (row indices, (0, 1) three times)
J_ = np.array([1, 1, 3, 0, 1])
V = np.array([2.0, -3.0, -1.0, 0.5, 1.0])  # (at (0, 1): neither the largest nor the smallest last)
K2 = np.array([[0, 2], [0, 0]])  # a 2-D index array of rows, row 0 three times
V2 = _RNG.standard_normal((2, 2, 4))
V2[1, 1] = -5.0  # (row 0's last value: the smallest)


def _fd(fn: Any, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of ``fn`` along each element of ``x``, stacked on the last axes."""
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        cols.append((np.asarray(fn(x + e.reshape(x.shape))) - np.asarray(fn(x - e.reshape(x.shape)))) / (2 * eps))
    return np.stack(cols, axis=-1).reshape(np.shape(fn(x)) + x.shape)


_AT_TUPLE = {
    "max": lambda x, i, j, v: x.at[i, j].max(v), "min": lambda x, i, j, v: x.at[i, j].min(v),
    "multiply": lambda x, i, j, v: x.at[i, j].multiply(v), "divide": lambda x, i, j, v: x.at[i, j].divide(v),
    "power": lambda x, i, j, v: x.at[i, j].power(v)}


@pytest.mark.parametrize("method", sorted(_AT_TUPLE))
def test_at_combine_repeated_tuple_positions(method: str) -> None:
    """Every value at a repeated ``(i, j)`` combines, as jax's: was the last one only (silently)."""
    f = _AT_TUPLE[method]
    x = np.abs(X) + 0.5 if method == "power" else X
    v = np.abs(V) + 0.5 if method in ("divide", "power") else V
    want = jitted(f)(jnp.asarray(x), I, J_, v)
    np.testing.assert_allclose(srcjax.jit(f)(x, I, J_, v), want, rtol=1e-12)


def _rows_max(x, k, v):  # type: ignore[no-untyped-def]
    return x.at[k].max(v)


def _rows_multiply(x, k, v):  # type: ignore[no-untyped-def]
    return x.at[k].multiply(v)


def _cols_max(x, j, v):  # type: ignore[no-untyped-def]
    return x.at[:, j].max(v)


def _cols_multiply(x, j, v):  # type: ignore[no-untyped-def]
    return x.at[:, j].multiply(v)


@pytest.mark.parametrize(("rows", "cols"), [(_rows_max, _cols_max), (_rows_multiply, _cols_multiply)])
def test_at_combine_repeated_2d_and_sliced_keys(rows: Any, cols: Any) -> None:
    """A 2-D index array of rows, and an index array after a slice (``x.at[:, j]``), combine too."""
    np.testing.assert_allclose(srcjax.jit(rows)(X, K2, V2), jitted(rows)(jnp.asarray(X), K2, V2), rtol=1e-12)
    vc = V[None, :].repeat(3, axis=0)
    np.testing.assert_allclose(srcjax.jit(cols)(X, J_, vc), jitted(cols)(jnp.asarray(X), J_, vc), rtol=1e-12)


def test_at_max_repeated_positions_grad_and_vmap() -> None:
    def loss(x, i, j, v):  # type: ignore[no-untyped-def]
        return np.sum(x.at[i, j].max(v) ** 2)

    def loss_j(x, i, j, v):  # type: ignore[no-untyped-def]
        return jnp.sum(jnp.asarray(x).at[i, j].max(v) ** 2)

    v = V + 1.0  # (above x at every position it writes)
    for argnums in (0, 3):
        np.testing.assert_allclose(srcjax.grad(loss, argnums=argnums)(X, I, J_, v),
                                   JAX.grad(loss_j, argnums=argnums)(X, I, J_, v), rtol=1e-10)
    xs = np.stack([X, 2 * X, -X])
    np.testing.assert_allclose(srcjax.vmap(loss, in_axes=(0, None, None, None))(xs, I, J_, v),
                               JAX.vmap(loss_j, in_axes=(0, None, None, None))(xs, I, J_, v), rtol=1e-12)


def _ufunc_at(x, i, j, v):  # type: ignore[no-untyped-def]
    y = x.copy()
    np.maximum.at(y, (i, j), v)
    np.multiply.at(y, i, 1.5)
    np.subtract.at(y, (i, j), v)
    np.minimum.at(y, (j % 3, i), -v)
    return y


def _ufunc_at_rows(x, k, v):  # type: ignore[no-untyped-def]
    y = x.copy()
    np.divide.at(y, k, v)
    np.power.at(y, k, 2.0)
    return y


def test_ufunc_at_forms_match_numpy() -> None:
    """NumPy's unbuffered ufunc.at: every value at a repeated index applies (np.add.at's siblings were refused)."""
    np.testing.assert_allclose(srcjax.jit(_ufunc_at)(X, I, J_, V), _ufunc_at(X, I, J_, V), rtol=1e-12)
    x, v = np.abs(X) + 0.5, np.abs(V[:4]) + 0.5
    k = np.array([0, 2, 0])
    np.testing.assert_allclose(srcjax.jit(_ufunc_at_rows)(x, k, v), _ufunc_at_rows(x, k, v), rtol=1e-12)
    got = srcjax.jacrev(_ufunc_at, argnums=3)(X, I, J_, V)
    np.testing.assert_allclose(got, _fd(lambda v: _ufunc_at(X, I, J_, v), V), atol=1e-7)
    got = srcjax.jacfwd(_ufunc_at_rows, argnums=0)(x, k, v)
    np.testing.assert_allclose(got, _fd(lambda a: _ufunc_at_rows(a, k, v), x), atol=1e-6)


def test_other_ufunc_at_refused_at_the_line() -> None:
    def f(x, i, v):  # type: ignore[no-untyped-def]
        y = x.copy()
        np.logaddexp.at(y, i, v)
        return y

    with pytest.raises(srcjax.TranspileError, match=r"np.logaddexp.at(.|\n)*np.maximum.at") as e:
        srcjax.jit(f)(X[0], I, V)
    assert f"{__file__}:{f.__code__.co_firstlineno + 2}:" in str(e.value)


def _copy_where(x, y, m):  # type: ignore[no-untyped-def]
    out = x.copy()
    np.copyto(out, y, where=m)
    return out * out


def test_copyto_where() -> None:
    m = np.array([True, False, True, True, False])
    np.testing.assert_allclose(srcjax.jit(_copy_where)(V, 2 * V, m), _copy_where(V, 2 * V, m), rtol=1e-12)
    np.testing.assert_allclose(srcjax.jacrev(_copy_where, argnums=1)(V, 2 * V, m),
                               _fd(lambda y: _copy_where(V, y, m), 2 * V), atol=1e-7)


def _take_modes(x, idx):  # type: ignore[no-untyped-def]
    return (np.take(x, idx, axis=0, mode="clip"), np.take(x, idx, mode="wrap"), np.take(x, idx, 1, mode="clip"),
            np.take(x, idx % 4, axis=1, mode="raise"))


def test_take_modes() -> None:
    idx = np.array([0, 5, 3, -1, 2, 13])  # (NumPy's clip: -1 is 0, not the last; wrap: 13 % 12)
    for got, want in zip(srcjax.jit(_take_modes)(X, idx), _take_modes(X, idx)):
        np.testing.assert_array_equal(got, want)

    def loss(x, idx):  # type: ignore[no-untyped-def]
        return np.sum(np.take(x, idx, axis=1, mode="wrap") ** 2)

    np.testing.assert_allclose(srcjax.grad(loss)(X, idx), _fd(lambda x: loss(x, idx), X), atol=1e-6)
