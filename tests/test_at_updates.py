"""JAX's ``x.at[key].set/add/multiply/divide/power/min/max/get(...)`` inside compiled code (written as
srcjax's functional updates) and on returned ``srcjax.Array`` values, against jax and NumPy."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcjax
from tests import written

jax.config.update("jax_enable_x64", True)
THOROUGH = os.environ.get("SRCJAX_HYPOTHESIS") == "thorough"
HYPOTHESIS = settings(max_examples=60 if THOROUGH else 12, deadline=None, derandomize=not THOROUGH,
                      database=None)
X = np.arange(12.0).reshape(4, 3) - 5.0


def every_update(x, i, v):
    y = x.at[i].set(v)
    y = y.at[1:3].add(2.0)
    y = y.at[0, 1].multiply(v)
    y = y.at[:, i].max(0.5)
    y = y.at[-1].min(v)
    y = y.at[2, ::2].divide(v + 4.0)
    y = y.at[3, 0].power(2)
    return np.sum(y.at[2].get() * y[1]) + np.sum(y.at[np.array([0, 0, 2])].add(v) ** 2)


@pytest.mark.parametrize("device", ["cpu", "numpy"])
def test_every_update_matches_jax_and_its_gradient(device):
    want = jax.jit(every_update)(jnp.asarray(X), 1, 3.0)
    got = srcjax.compile(every_update, device=device)(X, 1, 3.0)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    g, gv = srcjax.grad(every_update, argnums=(0, 2))(X, 1, 3.0)
    jg, jgv = jax.grad(every_update, argnums=(0, 2))(jnp.asarray(X), 1, 3.0)
    np.testing.assert_allclose(np.asarray(g), jg, rtol=1e-12)
    np.testing.assert_allclose(float(gv), float(jgv), rtol=1e-12)


def test_the_generated_source_is_srcjax_functional_updates():
    text = srcjax.source(srcjax.compile(every_update))
    assert ".at[" not in text
    assert "srcjax.lax.index_update(x, i, v)" in text
    assert "index_add(y, slice(1, 3), 2.0)" in text  # (one scatter-add, which drops a write out of range)


def scatter_add(x, idx, v):
    return x.at[idx].add(v)


def test_repeated_indices_accumulate_as_in_jax_and_keep_the_dtype():
    x = np.zeros(5, np.float32)
    idx = np.array([1, 1, 3, 1])
    v = np.arange(4.0)  # float64 values into a float32 array: cast, as in JAX
    got = srcjax.compile(scatter_add)(x, idx, v)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), jax.jit(scatter_add)(x, idx, v.astype(np.float32)))


def rows_set(x, v):
    return x.at[0].set(v)


def test_vmap_of_updates_matches_jax():
    xs = np.arange(24.0).reshape(2, 4, 3)
    vs = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    got = srcjax.vmap(rows_set)(xs, vs)
    np.testing.assert_allclose(np.asarray(got), jax.vmap(rows_set)(xs, vs))
    got = srcjax.vmap(scatter_add, in_axes=(None, 0, 0))(np.zeros(4), np.array([[0, 0], [1, 3]]),
                                                        np.array([[1.0, 2.0], [3.0, 4.0]]))
    want = jax.vmap(scatter_add, in_axes=(None, 0, 0))(jnp.zeros(4), jnp.array([[0, 0], [1, 3]]),
                                                      jnp.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_allclose(np.asarray(got), want)


METHODS = ["set", "add", "multiply", "divide", "power", "min", "max"]
KEYS = [0, -1, slice(1, 3), slice(None, None, 2), (1, 2), (slice(None), 0), (-2, slice(0, 2))]


@HYPOTHESIS
@given(st.sampled_from(METHODS), st.sampled_from(KEYS), st.floats(0.5, 3.0))
def test_random_updates_match_jax(method, key, v):
    fn = written.define(f"x.at[{_spell(key)}].{method}(v)", "x, v", tag="test_at_updates")
    want = fn(jnp.asarray(X), v)
    got = srcjax.compile(fn)(X, v)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.compile(fn, device="numpy")(X, v)), want, rtol=1e-12)


def _spell(k: object) -> str:
    if isinstance(k, tuple):
        return ", ".join(_spell(e) for e in k)
    if isinstance(k, slice):
        parts = ["" if p is None else str(p) for p in (k.start, k.stop, k.step)]
        return ":".join(parts[:2]) + (f":{parts[2]}" if k.step is not None else "")
    return str(k)


def test_unsupported_updates_are_refused_at_the_users_line():
    def drop(x):
        return x.at[7].set(1.0, mode="drop")

    with pytest.raises(srcjax.TranspileError, match="mode=") as e:
        srcjax.compile(drop)(np.zeros(3))
    assert "test_at_updates.py" in str(e.value)

    def other(x):
        return x.at[0].apply(np.sin)

    with pytest.raises(srcjax.TranspileError, match="apply") as e:
        srcjax.compile(other)(np.zeros(3))
    assert "set/add/multiply" in str(e.value)


def double(x):
    return 2.0 * x


def test_returned_arrays_have_numpy_methods_and_at():
    a = srcjax.compile(double)(np.arange(6.0).reshape(2, 3))
    ref = 2.0 * np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(a.T, ref.T)
    assert a.sum() == ref.sum()
    np.testing.assert_array_equal(a.reshape(3, 2), ref.reshape(3, 2))
    assert a.astype(np.int32).dtype == np.int32
    np.testing.assert_array_equal(a.mean(axis=0), ref.mean(axis=0))
    np.testing.assert_array_equal(a.at[0, 1].set(9.0), jnp.asarray(ref).at[0, 1].set(9.0))
    np.testing.assert_array_equal(a.at[np.array([0, 0])].add(1.0), jnp.asarray(ref).at[np.array([0, 0])].add(1.0))
    np.testing.assert_array_equal(a.at[:, 0].max(5.0), jnp.asarray(ref).at[:, 0].max(5.0))
    assert a.at[1].get()[2] == ref[1, 2]
    np.testing.assert_array_equal(np.asarray(a), ref)  # the updates made copies
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        a.nonsense  # noqa: B018


def combined(x, i, v, p):
    return (x.at[i].multiply(v), x.at[i].divide(v), x.at[i].max(v), x.at[i].min(v), x.at[i].power(p),
            x.at[1:].max(4.0), x.at[0].multiply(3.0))


def combined_loss(x, v):
    return np.sum(x.at[np.array([0, 0, 2])].multiply(v) ** 2) + np.sum(x.at[np.array([1, 1])].max(v[:2]))


def test_repeated_indices_combine_for_multiply_divide_power_min_max_as_in_jax():
    x, i = np.array([2.0, 3.0, 5.0]), np.array([0, 0, 2])
    v, p = np.array([4.0, 10.0, 1.5]), np.array([2.0, 3.0, 2.0])
    for got, want in zip(srcjax.compile(combined)(x, i, v, p), jax.jit(combined)(x, i, v, p)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
    # (jax cannot differentiate scatter_mul with repeated indices: finite differences instead)
    gx, gv = srcjax.grad(combined_loss, argnums=(0, 1))(x, v)
    f = srcjax.compile(combined_loss)
    h = 1e-6
    fx = [(float(f(x + h * e, v)) - float(f(x - h * e, v))) / (2 * h) for e in np.eye(3)]
    fv = [(float(f(x, v + h * e)) - float(f(x, v - h * e))) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(np.asarray(gx), fx, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gv), fv, rtol=1e-6)
