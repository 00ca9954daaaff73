"""A read at an index out of range clamps (XLA's ``dynamic_slice`` and gather, as jax), so its gradient adds the
cotangent at the clamped place: getitem's transpose is ``index_add(zeros_like(x), key, g, mode="clip")`` (was the
default ``mode="drop"`` of a write, ``x.at[i].add(v)``: zeros where jax puts the cotangent on ``x[-1]``).

Against jax for run-time integers (``x[i]``, ``x[i, 1:]``, ``x[:, i]``, ``x[..., i]``, ``x[i, ::-1]``: jax's
``dynamic_slice``, whose transpose clamps) under grad, jvp, jacrev, hessian, vmap(grad) and grad(vmap); for index
arrays, strided slices and ``np.take`` against jax's ``mode="clip"`` reads (jax's default for those is a gather that
*promises* its indices in range, whose gradient drops an index out of range while its value clamps it: srcjax's
gradient is the derivative of the value it computes, finite differences agree). Writes keep dropping: the value of a
dropped write ``x[i] = v`` gets a zero cotangent, in loops over ``range`` too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import srcjax
from srcjax.adjoint import index_add

from .written import examples

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def _close(got: Any, want: Any, what: str) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12, err_msg=what)


# -- run-time integers: jax reads them with dynamic_slice (its transpose: a clamped dynamic_update_slice) --------
def row(x, i):  # noqa: ANN001, ANN201
    return np.sin(x[i]) * 2.0


def row_tail(x, i):  # noqa: ANN001, ANN201
    return np.sin(x[i, 1:]) * 2.0


def column(x, i):  # noqa: ANN001, ANN201
    return np.sin(x[:, i]) * np.arange(1.0, 1.0 + x.shape[0])


def last_axis(x, i):  # noqa: ANN001, ANN201
    return np.sin(x[..., i])


def row_reversed(x, i):  # noqa: ANN001, ANN201
    return np.sin(x[i, ::-1]) * np.arange(1.0, 1.0 + x.shape[1])


def element(x, i):  # noqa: ANN001, ANN201
    return np.sin(x[i, i]) * 3.0


INTEGER_READS = [row, row_tail, column, last_axis, row_reversed, element]


def _in_jnp(form: Callable[..., Any], x: Any, i: Any) -> Any:
    """``form`` run on jax arrays: its ``np.sin``/``np.arange`` as jnp's (the forms read only those)."""
    return type(form)(form.__code__, {**form.__globals__, "np": jnp})(x, i)


def _loss(form: Callable[..., Any]) -> Callable[..., Any]:
    def loss(x, i):  # noqa: ANN001, ANN202
        return np.sum(form(x, i) ** 2)

    return loss


def _jax_loss(form: Callable[..., Any]) -> Callable[..., Any]:
    return lambda x, i: jnp.sum(_in_jnp(form, x, i) ** 2)


def check_integer(form: Callable[..., Any], x: np.ndarray, i: int) -> None:
    """Value, grad, jvp, jacrev and hessian at ``i`` against jax's."""
    k = np.int32(i)
    jf = _jax_loss(form)
    _close(srcjax.jit(form)(x, k), _in_jnp(form, jnp.asarray(x), k), f"value {form.__name__} {i}")
    _close(srcjax.grad(_loss(form))(x, k), jax.grad(jf)(x, k), f"grad {form.__name__} {i}")
    t = np.cos(x)
    got = srcjax.jvp(_loss(form), (x, k), (t, np.int32(0)))[1]
    _close(got, jax.jvp(lambda x: jf(x, k), (x,), (t,))[1], f"jvp {form.__name__} {i}")
    _close(srcjax.jacrev(form)(x, k), jax.jacrev(lambda x: _in_jnp(form, x, k))(x), f"jacrev {form.__name__} {i}")
    _close(srcjax.hessian(_loss(form))(x, k), jax.hessian(jf)(x, k), f"hessian {form.__name__} {i}")


@pytest.mark.parametrize("i", [7, -9, 4, -5, 2, -1])
@pytest.mark.parametrize("form", INTEGER_READS, ids=[f.__name__ for f in INTEGER_READS])
def test_a_read_at_a_run_time_integer_clamps_and_so_does_its_gradient(form: Callable[..., Any], i: int) -> None:
    check_integer(form, np.linspace(-1.0, 1.5, 20).reshape(4, 5), i)


@examples(15, scale=20)
@given(st.sampled_from(INTEGER_READS), st.integers(1, 4), st.integers(1, 4), st.data())
def test_random_shapes_and_integers_agree_with_jax(form: Callable[..., Any], n: int, m: int, data: Any) -> None:
    x = np.linspace(-1.0, 1.5, n * m).reshape(n, m)
    d = n if form in (row, row_tail, row_reversed, element) else m
    i = data.draw(st.integers(-2 * d - 1, 2 * d + 1))
    check_integer(form, x, i)


@pytest.mark.parametrize("form", INTEGER_READS, ids=[f.__name__ for f in INTEGER_READS])
def test_vmap_of_grad_and_grad_of_vmap_over_indices_in_and_out_of_range(form: Callable[..., Any]) -> None:
    x = np.linspace(-1.0, 1.5, 20).reshape(4, 5)
    ks = np.array([7, -9, 2, -1, 5], dtype=np.int32)
    jl = _jax_loss(form)
    got = srcjax.vmap(srcjax.grad(_loss(form)), in_axes=(None, 0))(x, ks)
    _close(got, jax.vmap(jax.grad(jl), in_axes=(None, 0))(x, ks), "vmap of grad, the index mapped")
    xs = np.stack([x, 2 * x, -x, x + 1, x * x])
    _close(srcjax.vmap(srcjax.grad(_loss(form)))(xs, ks), jax.vmap(jax.grad(jl))(xs, ks), "vmap of grad, both")
    want = jax.grad(lambda x: jnp.sum(jax.vmap(lambda x, i: _in_jnp(form, x, i), in_axes=(None, 0))(x, ks) ** 2))(x)
    _close(srcjax.grad(_summed_vmap(form))(x, ks), want, "grad of vmap")


def _summed_vmap(form: Callable[..., Any]) -> Callable[..., Any]:
    def summed(x, ks):  # noqa: ANN001, ANN202
        return np.sum(srcjax.vmap(form, in_axes=(None, 0))(x, ks) ** 2)

    return summed


def test_the_gradient_of_a_dynamic_slice_out_of_range_is_jaxs() -> None:
    """``lax.dynamic_slice`` clamps its start so the window fits; its transpose at the same place."""
    def f(x, i):  # noqa: ANN001, ANN202
        return np.sum(np.sin(srcjax.lax.dynamic_slice(x, (i, 1), (2, 3))) ** 2)

    def jf(x, i):  # noqa: ANN001, ANN202
        return jnp.sum(jnp.sin(jax.lax.dynamic_slice(x, (i, i * 0 + 1), (2, 3))) ** 2)

    x = np.linspace(-1.0, 1.5, 20).reshape(4, 5)
    for i in (7, -9, 3, -1):
        _close(srcjax.grad(f)(x, np.int32(i)), jax.grad(jf)(x, np.int32(i)), f"dynamic_slice {i}")


# -- index arrays, strided slices, np.take: jax's mode="clip" reads (its default gathers promise in-range indices) --
def rows(x, k):  # noqa: ANN001, ANN201
    return np.sin(x[k]) * 2.0


def strided(x, k):  # noqa: ANN001, ANN201
    return np.sin(x[k, ::2]) * 2.0


def taken(x, k):  # noqa: ANN001, ANN201
    return np.sin(np.take(x, k, axis=1)) * 2.0


def taken_along(x, k):  # noqa: ANN001, ANN201
    return np.sin(np.take_along_axis(x, k, axis=1)) * 2.0


CLIPPED_TWINS: dict[Any, Callable[..., Any]] = {
    rows: lambda x, k: jnp.sin(x.at[k].get(mode="clip")) * 2.0,
    strided: lambda x, k: jnp.sin(x.at[k, ::2].get(mode="clip")) * 2.0,
    taken: lambda x, k: jnp.sin(x.at[:, k].get(mode="clip")) * 2.0,  # (jnp.take's clip: -1 to 0, NumPy's "clip")
    taken_along: lambda x, k: jnp.sin(jnp.take_along_axis(x, k, axis=1, mode="clip")) * 2.0,
}


def check_clipped(form: Callable[..., Any], x: np.ndarray, k: np.ndarray) -> None:
    twin = CLIPPED_TWINS[form]
    _close(srcjax.jit(form)(x, k), twin(jnp.asarray(x), k), f"value {form.__name__} {k}")
    got = srcjax.grad(_loss(form))(x, k)
    want = jax.grad(lambda x: jnp.sum(twin(x, k) ** 2))(x)
    _close(got, want, f"grad {form.__name__} {k}")
    if form in (taken, taken_along):  # (vmap of take_bar over the indices: refused before this change too)
        return
    ks = np.stack([k, k[::-1] if k.ndim == 1 else k[:, ::-1]])
    got = srcjax.vmap(srcjax.grad(_loss(form)), in_axes=(None, 0))(x, ks)
    want = jax.vmap(jax.grad(lambda x, k: jnp.sum(twin(x, k) ** 2)), in_axes=(None, 0))(x, ks)
    _close(got, want, f"vmap of grad {form.__name__} {k}")


@pytest.mark.parametrize("form", [rows, strided, taken], ids=["rows", "strided", "taken"])
def test_index_arrays_out_of_range_clamp_in_the_gradient_too(form: Callable[..., Any]) -> None:
    x = np.linspace(-1.0, 1.5, 20).reshape(4, 5)
    k = np.array([1, 7, -9, -1, 3, 4], dtype=np.int64) if form is taken else np.array([1, 7, -9, -1], dtype=np.int64)
    if form is strided:
        k = np.int64(7)
        check_clipped(form, x, np.asarray([7, -9]))
        _close(srcjax.grad(_loss(form))(x, k), jax.grad(lambda x: jnp.sum(CLIPPED_TWINS[form](x, k) ** 2))(x),
               "strided, an integer")
        return
    check_clipped(form, x, k)


def test_take_along_axis_out_of_range_clamps_in_the_gradient_too() -> None:
    x = np.linspace(-1.0, 1.5, 20).reshape(4, 5)
    check_clipped(taken_along, x, np.array([[0, 7, -9]] * 4, dtype=np.int64))


@examples(10, scale=20)
@given(st.integers(1, 4), st.data())
def test_random_index_arrays_agree_with_jaxs_clipped_reads(n: int, data: Any) -> None:
    x = np.linspace(-1.0, 1.5, n * 3).reshape(n, 3)
    k = np.asarray(data.draw(st.lists(st.integers(-2 * n - 1, 2 * n), min_size=1, max_size=5)), dtype=np.int64)
    check_clipped(rows, x, k)


def test_finite_differences_agree_at_a_clamped_read() -> None:
    x, k = np.linspace(-1.0, 1.5, 5), np.array([7, -9, 2])
    f = _loss(lambda x, k: np.sin(x[np.clip(k, -5, 4)]))
    g = np.asarray(srcjax.grad(_loss(rows))(x, k))
    eps = 1e-6
    fd = [(f(x + eps * e, k) - f(x - eps * e, k)) / (2 * eps) for e in np.eye(5)]
    np.testing.assert_allclose(g, np.asarray(fd) * 4.0, rtol=1e-6, atol=1e-8)


# -- index_add's mode: the one primitive, every path ---------------------------------------------------------------
def added_at(z, g, k):  # noqa: ANN001, ANN201
    return index_add(z, k, g, mode="clip"), index_add(z, k, g)


def added_in_a_column(z, g, k):  # noqa: ANN001, ANN201
    return index_add(z, (slice(None), k), g, mode="clip"), index_add(z, (slice(None), k), g)


def added_in_a_row_tail(z, g, k):  # noqa: ANN001, ANN201
    return index_add(z, (k, slice(1, None)), g, mode="clip"), index_add(z, (k, slice(1, None)), g)


@pytest.mark.parametrize("form,k,key", [
    (added_at, 7, 7), (added_at, -9, -9), (added_at, np.array([1, 7, -9, 1]), np.array([1, 7, -9, 1])),
    (added_in_a_column, 9, (slice(None), 9)), (added_in_a_row_tail, 7, (7, slice(1, None))),
    (added_in_a_row_tail, -6, (-6, slice(1, None)))])
def test_index_add_mode_clip_adds_at_the_clamped_place_on_every_path(form: Callable[..., Any], k: Any,
                                                                     key: Any) -> None:
    """The NumPy reference, the lowering (a run-time key) and jax's clipped scatter-add agree; mode="drop" (the
    default) adds nothing there."""
    z = np.arange(20.0).reshape(4, 5)
    g = np.ones(np.shape(jnp.asarray(z).at[key].get(mode="clip")))
    want = jnp.asarray(z).at[key].add(g, mode="clip")
    _close(index_add(z, key, g, "clip"), want, f"reference {key}")
    clipped, dropped = srcjax.jit(form)(z, g, np.asarray(k))
    _close(clipped, want, f"lowered clip {key}")
    _close(dropped, jnp.asarray(z).at[key].add(g), f"lowered drop {key}")
    clipped, dropped = srcjax.numpy_function(srcjax.jit(form))(z, g, np.asarray(k))
    _close(clipped, want, f"numpy clip {key}")
    _close(dropped, jnp.asarray(z).at[key].add(g), f"numpy drop {key}")


def test_the_gradient_prints_the_mode_only_where_it_matters() -> None:
    def named(x, i):  # noqa: ANN001, ANN202
        return np.sum(x[i] * 2.0)

    def literal(x, v):  # noqa: ANN001, ANN202
        return np.sum(x[1:3] * x[0]) + np.sum(x.at[2].add(v) ** 2)

    text = srcjax.source(srcjax.grad(named))
    assert 'index_add(zeros_like(x), i, 2.0 * ones_like(mul), "clip")' in text, text
    text = srcjax.source(srcjax.grad(literal, argnums=(0, 1)))
    assert '"clip"' not in text and "index_add" in text, text


# -- writes keep dropping: a dropped write's value gets no cotangent ----------------------------------------------
def written_in_a_loop(x, v):  # noqa: ANN001, ANN201
    y = x.copy()
    for i in range(7):
        y[i] = v * i
    return np.sum(y ** 2)


def set_in_a_loop(x, v):  # noqa: ANN001, ANN201
    y = x
    for i in range(7):
        y = y.at[i].set(v * i)
    return np.sum(y ** 2)


def written_at(x, v, i):  # noqa: ANN001, ANN201
    y = x.copy()
    y[i] = v
    return np.sum(y ** 2)


def _jax_set_in_a_loop(x: Any, v: Any) -> Any:
    y = x
    for i in range(7):
        y = y.at[i].set(v * i)
    return jnp.sum(y ** 2)


@pytest.mark.parametrize("form", [written_in_a_loop, set_in_a_loop], ids=["assigned", "at_set"])
def test_a_write_past_the_end_in_a_loop_gives_its_value_no_cotangent(form: Callable[..., Any]) -> None:
    x, v = np.linspace(-1.0, 1.0, 5), 2.0
    _close(srcjax.jit(form)(x, v), _jax_set_in_a_loop(jnp.asarray(x), v), "value")
    got = srcjax.grad(form, argnums=(0, 1))(x, v)
    want = jax.grad(_jax_set_in_a_loop, argnums=(0, 1))(jnp.asarray(x), v)
    for g, w in zip(got, want):
        _close(g, w, "grad")
    _close(srcjax.jvp(form, (x, v), (np.cos(x), 1.0))[1],
           jax.jvp(_jax_set_in_a_loop, (jnp.asarray(x), v), (jnp.cos(x), 1.0))[1], "jvp")
    _close(srcjax.jacrev(form, argnums=1)(x, v), jax.jacrev(_jax_set_in_a_loop, argnums=1)(jnp.asarray(x), v),
           "jacrev")


@pytest.mark.parametrize("i", [7, -9, 2, -1])
def test_a_dropped_write_at_a_run_time_integer_as_jax(i: int) -> None:
    def jw(x: Any, v: Any, i: Any) -> Any:
        return jnp.sum(jnp.asarray(x).at[i].set(v) ** 2)

    x, v, k = np.linspace(-1.0, 1.0, 5), 2.0, np.int32(i)
    for a, b in zip(srcjax.grad(written_at, argnums=(0, 1))(x, v, k), jax.grad(jw, argnums=(0, 1))(x, v, k)):
        _close(a, b, f"grad {i}")
    ks = np.array([7, -9, 2, -1], dtype=np.int32)
    got = srcjax.vmap(srcjax.grad(written_at, argnums=1), in_axes=(None, None, 0))(x, v, ks)
    _close(got, jax.vmap(jax.grad(jw, argnums=1), in_axes=(None, None, 0))(x, v, ks), "vmap of grad")
