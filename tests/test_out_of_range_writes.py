"""Writes at an index known only at run time that is out of range are dropped, reads clamp: JAX's rule
(srcjax/index_writes.py). ``x.at[i].set/add/multiply/min/max(v)``, ``x[i] = v`` and ``x[i] += v`` of NumPy code,
a number or an index array, negative indices, a row with slices beside it; under jit (the compiled program and the
generated source run by NumPy), grad (a dropped write's value gets no cotangent, the array keeps its own) and vmap
(indices per example); ``lax.dynamic_update_slice`` keeps clamping its start, as JAX's. Against jax."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import srcjax

from . import out_of_range_writes as P
from .written import examples

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

X = np.arange(5.0) * 1.5 - 2.0
FORMS = [P.at_set, P.at_add, P.at_multiply, P.at_min, P.at_max, P.written, P.added, P.in_lambda]
TWIN: dict[Callable[..., Any], Callable[..., Any]] = {P.written: P.at_set, P.added: P.at_add, P.in_lambda: P.at_add}
NUMPY_CODE = (P.written, P.added)  # (NumPy itself raises IndexError there: the generated source is NumPy's too)


def _twin(form: Callable[..., Any]) -> Callable[..., Any]:
    return TWIN.get(form, form)


def _values(i: np.ndarray) -> Any:
    return 0.75 if i.ndim == 0 else np.linspace(0.5, 1.5, i.size)


def check_jit(form: Callable[..., Any], x: np.ndarray, i: np.ndarray, v: Any) -> None:
    want = np.asarray(jax.jit(_twin(form))(jnp.asarray(x), i, v))
    np.testing.assert_allclose(np.asarray(srcjax.jit(form)(x, i, v)), want, rtol=1e-12, err_msg=f"{i}")
    if form not in NUMPY_CODE or np.all((i >= -len(x)) & (i < len(x))):
        np.testing.assert_allclose(np.asarray(srcjax.numpy_function(srcjax.jit(form))(x, i, v)), want, rtol=1e-12,
                                   err_msg=f"numpy_function {i}")


def check_grad(form: Callable[..., Any], x: np.ndarray, i: np.ndarray, v: Any) -> None:
    twin = _twin(form)
    want = jax.grad(lambda x, v: jnp.sum(twin(x, i, v) ** 2), argnums=(0, 1))(jnp.asarray(x), jnp.asarray(v))
    got = srcjax.grad(P.squares, argnums=(1, 3))(form, x, i, v)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-12, err_msg=f"grad {i}")


INDICES = [4, 5, 9, -1, -5, -6, [1, 7], [-1, -7, 9, 2]]


@pytest.mark.parametrize("i", INDICES, ids=[str(i) for i in INDICES])
@pytest.mark.parametrize("form", FORMS, ids=[f.__name__ for f in FORMS])
def test_a_write_out_of_range_is_dropped_as_jax_drops_it(form: Callable[..., Any], i: Any) -> None:
    i = np.asarray(i, dtype=np.int32)
    check_jit(form, X, i, _values(i))


@pytest.mark.parametrize("i", [5, -6, [1, 7], [-1, -7, 9, 2]], ids=["5", "-6", "1,7", "-1,-7,9,2"])
@pytest.mark.parametrize("form", [P.at_set, P.at_add, P.at_min, P.at_max, P.written, P.added],
                         ids=["at_set", "at_add", "at_min", "at_max", "written", "added"])
def test_a_dropped_write_has_no_derivative(form: Callable[..., Any], i: Any) -> None:
    i = np.asarray(i, dtype=np.int32)
    check_grad(form, X, i, _values(i))


@pytest.mark.parametrize("form", [P.at_set, P.at_add, P.at_max, P.written, P.added],
                         ids=["at_set", "at_add", "at_max", "written", "added"])
def test_vmap_drops_a_write_out_of_range_per_example(form: Callable[..., Any]) -> None:
    xs = np.stack([X + k for k in range(5)])
    for i in (np.array([1, 5, -6, -2, 9], dtype=np.int32), np.array([[1, 7], [5, 0], [-6, -1], [3, 2], [9, -9]])):
        want = np.asarray(jax.vmap(_twin(form), in_axes=(0, 0, None))(xs, i, 0.75))
        got = np.asarray(srcjax.vmap(form, in_axes=(0, 0, None))(xs, i, 0.75))
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{i}")


def test_a_row_and_a_strided_row_at_an_index_out_of_range_are_dropped() -> None:
    m = np.arange(12.0).reshape(3, 4)
    for form in (P.row_set, P.strided_set):
        for i in (1, 3, -4, -1):
            want = np.asarray(jax.jit(form)(jnp.asarray(m), np.int32(i), -1.0))
            np.testing.assert_array_equal(np.asarray(srcjax.jit(form)(m, np.int32(i), -1.0)), want)
            np.testing.assert_array_equal(
                np.asarray(srcjax.numpy_function(srcjax.jit(form))(m, np.int32(i), -1.0)), want)


def test_dynamic_update_slice_still_clamps_its_start() -> None:
    for i in (1, 4, 9, -3):
        want = np.asarray(jax.lax.dynamic_update_slice(jnp.asarray(X), jnp.ones(2), (np.int32(i),)))
        np.testing.assert_array_equal(np.asarray(srcjax.jit(P.window)(X, np.int32(i), np.ones(2))), want)


@examples(12, scale=20)
@given(st.sampled_from([P.at_set, P.at_add, P.at_max, P.written]),
       st.one_of(st.integers(-9, 9), st.lists(st.integers(-9, 9), min_size=1, max_size=3, unique=True)))
def test_random_indices_in_and_out_of_range_agree_with_jax(form: Callable[..., Any], i: Any) -> None:
    i = np.asarray(i, dtype=np.int32)
    v = _values(i)
    check_jit(form, X, i, v)
    check_grad(form, X, i, v)


def _empty_keys(x: Any) -> Any:
    y = x.copy()
    y[:, []] = 5.0
    y[:, ()] = 4.0
    return np.sum(y[:, ()]) + np.sum(y[:, []]) + np.sum(y ** 2)


def test_vmap_of_writes_at_empty_index_lists_and_tuples() -> None:
    """Refused before ("arrays used as indices must be of integer type, not float64"): vmap's write probed its
    target with ``np.zeros_like`` of each index, and that of ``[]`` or ``()`` is a float array; NumPy reads them
    as empty integer arrays (the write changes nothing)."""
    X = np.arange(6.0).reshape(3, 2)
    Xs = np.stack([X, -X])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(_empty_keys)(Xs)), [_empty_keys(X), _empty_keys(-X)])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(_empty_keys))(Xs)), 2 * Xs)
