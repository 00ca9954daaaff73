"""``x.at[k].add(v)`` is one ``index_add`` (a scatter-add) again: repeated indices accumulate, a negative index
wraps, an index out of range known only at run time adds nothing (JAX's ``mode`` default, FILL_OR_DROP) and its
value gets a zero cotangent (``index_lands``), while ``x``'s cotangent passes through. Values, grad, jvp, vmap and
hessian against jax, for index arrays on the leading axis, pairs of index arrays, an index array after a slice, a
run-time integer and a run-time integer beside a slice; the compiled program and its generated source run by NumPy.
Was: routed through the ``at_add`` composite, whose printed gradient took ~140 lines."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import srcjax

from .written import examples

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def rows(x, k, v):  # noqa: ANN001, ANN201
    return x.at[k].add(v)


def pairs(x, k, v):  # noqa: ANN001, ANN201
    return x.at[k, k[::-1]].add(v)


def columns(x, k, v):  # noqa: ANN001, ANN201
    return x.at[:, k].add(v)


def row_tail(x, k, v):  # noqa: ANN001, ANN201
    return x.at[k, 1:].add(v)


def added_at(x, k, v):  # noqa: ANN001, ANN201  (NumPy's np.add.at: index_add itself)
    y = x.copy()
    np.add.at(y, k, v)
    return y


def loss(form, x, k, v):  # noqa: ANN001, ANN201
    y = form(x, k, v)
    return np.sum(np.sin(y) * y)


def scatter_loss(x, idx, v):  # noqa: ANN001, ANN201
    y = x.at[idx].add(v)
    return np.sum(y * y)


def _jax_loss(form: Callable[..., Any], x: Any, k: Any, v: Any) -> Any:
    y = form(x, k, v)
    return jnp.sum(jnp.sin(y) * y)


def _close(got: Any, want: Any, what: str) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12, err_msg=what)


def check(form: Callable[..., Any], x: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
    """Value (XLA and the generated source by NumPy), grad in (x, v), jvp and vmap over examples, against jax."""
    jx, jv = jnp.asarray(x), jnp.asarray(v)
    _close(srcjax.jit(form)(x, k, v), jax.jit(form)(jx, k, jv), f"value {k}")
    _close(srcjax.numpy_function(srcjax.jit(form))(x, k, v), form(jx, k, jv), f"numpy value {k}")
    got = srcjax.grad(loss, argnums=(1, 3))(form, x, k, v)
    want = jax.grad(_jax_loss, argnums=(1, 3))(form, jx, k, jv)
    for g, w in zip(got, want):
        _close(g, w, f"grad {k}")
    tx, tv = np.cos(x), np.cos(v)
    got = srcjax.jvp(lambda x, v: loss(form, x, k, v), (x, v), (tx, tv))
    want = jax.jvp(lambda x, v: _jax_loss(form, x, k, v), (jx, jv), (jnp.asarray(tx), jnp.asarray(tv)))
    for g, w in zip(got, want):
        _close(g, w, f"jvp {k}")
    xs, vs = np.stack([x, 2 * x]), np.stack([v, -v])
    _close(srcjax.vmap(form, in_axes=(0, None, 0))(xs, k, vs), jax.vmap(form, in_axes=(0, None, 0))(xs, k, vs),
           f"vmap {k}")


SHAPE = {rows: (5, 2), pairs: (4, 4), columns: (2, 5), row_tail: (4, 3), added_at: (5,)}


def _x(form: Callable[..., Any]) -> np.ndarray:
    shape = SHAPE[form]
    return np.linspace(-1.0, 1.5, int(np.prod(shape))).reshape(shape)


def _v(form: Callable[..., Any], k: np.ndarray) -> np.ndarray:
    x = _x(form)
    target = jnp.zeros(x.shape).at[:, k].get(mode="clip") if form is columns else \
        jnp.zeros(x.shape).at[k, 1:].get(mode="clip") if form is row_tail else \
        jnp.zeros(x.shape).at[k, k[::-1]].get(mode="clip") if form is pairs else jnp.zeros(x.shape)[k]
    return np.linspace(0.5, 2.0, target.size).reshape(target.shape)


KEYS = [[1, 3, 1], [-1, 7, 2, -9, -1], [9], [0, -4]]


@pytest.mark.parametrize("k", KEYS, ids=[",".join(map(str, k)) for k in KEYS])
@pytest.mark.parametrize("form", [rows, pairs, columns], ids=["rows", "pairs", "columns"])
def test_index_arrays_in_and_out_of_range_as_jax(form: Callable[..., Any], k: list[int]) -> None:
    key = np.asarray(k, dtype=np.int32)
    check(form, _x(form), key, _v(form, key))


@pytest.mark.parametrize("i", [0, 3, -1, -4, 4, 9, -5, -12])
@pytest.mark.parametrize("form", [rows, row_tail], ids=["rows", "row_tail"])
def test_a_run_time_integer_in_and_out_of_range_as_jax(form: Callable[..., Any], i: int) -> None:
    key = np.asarray(i, dtype=np.int32)
    check(form, _x(form), key, _v(form, key))


@examples(15, scale=20)
@given(st.sampled_from([rows, pairs, columns, row_tail]), st.data())
def test_random_shapes_and_indices_agree_with_jax(form: Callable[..., Any], data: Any) -> None:
    n = data.draw(st.integers(1, 4))
    shape = (n, 3) if form in (rows, row_tail) else (3, n) if form is columns else (n, n)
    SHAPE[form] = shape
    try:
        if form is row_tail or data.draw(st.booleans()) and form is rows:
            key = np.asarray(data.draw(st.integers(-2 * n - 1, 2 * n)), dtype=np.int64)
        else:
            key = np.asarray(data.draw(st.lists(st.integers(-2 * n - 1, 2 * n), min_size=1, max_size=5)),
                             dtype=np.int64)
        check(form, _x(form), key, _v(form, key))
    finally:
        SHAPE.update({rows: (5, 2), pairs: (4, 4), columns: (2, 5), row_tail: (4, 3)})


def test_hessian_in_the_values_and_the_array_as_jax() -> None:
    x, k, v = np.linspace(-1.0, 1.0, 5), np.array([1, 7, -1, 1, -9]), np.linspace(0.5, 1.5, 5)
    for argnums in (0, 1):
        got = srcjax.hessian(lambda x, v: loss(rows, x, k, v), argnums=argnums)(x, v)
        want = jax.hessian(lambda x, v: _jax_loss(rows, x, k, v), argnums=argnums)(jnp.asarray(x), jnp.asarray(v))
        _close(got, want, f"hessian {argnums}")


def test_vmap_over_the_indices_drops_per_example() -> None:
    x, v = np.linspace(-1.0, 1.0, 5), np.array([1.0, 2.0])
    ks = np.array([[1, 7], [-6, 4], [2, 2]])
    jx, jv = jnp.asarray(x), jnp.asarray(v)
    _close(srcjax.vmap(rows, in_axes=(None, 0, None))(x, ks, v), jax.vmap(rows, in_axes=(None, 0, None))(jx, ks, jv),
           "vmap of the key")
    got = srcjax.vmap(srcjax.grad(scatter_loss, argnums=2), in_axes=(None, 0, None))(x, ks, v)
    want = jax.vmap(jax.grad(scatter_loss, argnums=2), in_axes=(None, 0, None))(jx, ks, jv)
    _close(got, want, "vmap of grad")
    got = srcjax.grad(lambda v: np.sum(srcjax.vmap(rows, in_axes=(None, 0, None))(x, ks, v) ** 2))(v)
    want = jax.grad(lambda v: jnp.sum(jax.vmap(rows, in_axes=(None, 0, None))(jx, ks, v) ** 2))(jv)
    _close(got, want, "grad of vmap")


def test_np_add_at_a_run_time_integer_out_of_range_adds_nothing_on_every_path() -> None:
    """``np.add.at`` is ``index_add`` itself: its lowering drops an integer out of range (was: clamped onto the
    last element by ``dynamic_update_slice`` while the NumPy reference dropped it)."""
    x = np.arange(5.0)
    for i in (7, -8, -1):
        want = x + (np.arange(5) == i % 5) * 2.5 * (-5 <= i < 5)
        _close(srcjax.jit(added_at)(x, np.int32(i), 2.5), want, f"np.add.at {i}")
        _close(srcjax.numpy_function(srcjax.jit(added_at))(x, np.int32(i), 2.5), want, f"numpy np.add.at {i}")


def test_the_gradient_reads_as_one_scatter() -> None:
    text = srcjax.source(srcjax.grad(scatter_loss, argnums=(0, 2)))
    assert "index_add(x, idx, v)" in text and "at_add" not in text, text
    assert "np.where(index_lands(x, idx), update_bar[idx], 0.0)" in text, text
    assert len(text.splitlines()) <= 20, text  # (was 139 lines through the at_add composite)


def test_a_literal_key_prints_no_mask() -> None:
    def f(x, v):  # noqa: ANN001, ANN202
        return np.sum(x.at[1:3].add(v) ** 2)

    text = srcjax.source(srcjax.grad(f, argnums=1))
    assert "index_lands" not in text, text


def read(x, i):  # noqa: ANN001, ANN201
    return x[i] * 2.0


def test_the_gradient_of_a_read_at_a_run_time_integer_out_of_range_is_jaxs() -> None:
    x = np.arange(5.0)
    _close(srcjax.grad(read)(x, np.int32(7)), jax.grad(read)(jnp.asarray(x), np.int32(7)), "read")

