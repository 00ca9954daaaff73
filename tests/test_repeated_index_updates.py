"""Assignments through repeated indices (``y[idx] = v``, ``y.at[idx].set(v)``): one write wins, so the
derivative of ``v`` is zero at the overwritten writes (``srcjax.adjoint.winning_writes``, as JAX's
scatter JVP masks them). Against jax, central finite differences and the printed source run by NumPy,
in every mode (grad, vjp, jvp, jacfwd, jacrev, hessian, vmap)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from tests.fd import central_fd
from tests.twins import JAX

jax.config.update("jax_enable_x64", True)
X = np.linspace(0.3, 2.1, 6)
I1 = np.array([1, 1, 2, 4, 1])  # repeats: 1 three times (the last write wins)


def one_d(x):
    y = np.zeros(6)
    y[np.array([1, 1, 2, 4, 1])] = np.sin(x[:5])
    return np.sum(y * x) + np.sum(y ** 2)


def one_d_jax(x):
    y = jnp.zeros(6).at[jnp.array([1, 1, 2, 4, 1])].set(jnp.sin(x[:5]))
    return jnp.sum(y * x) + jnp.sum(y ** 2)


def index_argument(x, idx):
    y = np.zeros((3, 6)) + x
    y[0, idx] = x[:5] * 3.0  # (an integer index next to a repeated one)
    y[idx // 2] = x[1]  # a scalar broadcast over repeated rows
    return np.sum(y * np.cos(y))


def index_argument_jax(x, idx):
    y = (jnp.zeros((3, 6)) + x).at[0, idx].set(x[:5] * 3.0)
    y = y.at[idx // 2].set(x[1])
    return jnp.sum(y * jnp.cos(y))


def pairs(x):
    m = np.reshape(x, (2, 3)) * 1.0
    m[np.array([0, 1, 0, 0]), np.array([2, 1, 2, 2])] = x[2:] ** 2  # a tuple of arrays, (0, 2) three times
    m[np.array([[1], [1]]), np.array([0, 0])] = x[0]  # broadcast index arrays: (1, 0) four times
    return np.sum(m * m * x[:3])


def pairs_jax(x):
    m = jnp.reshape(x, (2, 3)) * 1.0
    m = m.at[jnp.array([0, 1, 0, 0]), jnp.array([2, 1, 2, 2])].set(x[2:] ** 2)
    m = m.at[jnp.array([[1], [1]]), jnp.array([0, 0])].set(x[0])
    return jnp.sum(m * m * x[:3])


def rows(x):
    y = np.tile(x, (4, 1))
    y[np.array([3, 0, 3])] = np.stack([x, 2 * x, 3 * x])  # whole rows, row 3 twice
    y[np.array([2, 2])] = x  # a broadcast row, twice
    return np.sum(np.tanh(y) * np.arange(24.0).reshape(4, 6))


def rows_jax(x):
    y = jnp.tile(x, (4, 1)).at[jnp.array([3, 0, 3])].set(jnp.stack([x, 2 * x, 3 * x]))
    y = y.at[jnp.array([2, 2])].set(x)
    return jnp.sum(jnp.tanh(y) * jnp.arange(24.0).reshape(4, 6))


def vector(x):  # (JAX's spelling, compiled by srcjax)
    y = np.ones(6).at[np.array([0, 5, 0])].set(x[:3] * x[3:])
    return y * x


def vector_jax(x):
    return jnp.ones(6).at[jnp.array([0, 5, 0])].set(x[:3] * x[3:]) * x


def added(x):  # NumPy's `y[idx] += v` is `y[idx] = y[idx] + v`: with repeats, the last write wins too
    y = np.zeros(6) + x
    y[np.array([1, 1, 2, 1])] += x[:4] ** 2
    return np.sum(y * x)


def at_added(x):  # `.at[idx].add(v)` (index_add): repeats accumulate, every occurrence gets the cotangent
    y = np.zeros(6).at[np.array([1, 1, 2, 1])].add(x[:4] ** 2)
    return np.sum(y * x)


def at_added_jax(x):
    return jnp.sum(jnp.zeros(6).at[jnp.array([1, 1, 2, 1])].add(x[:4] ** 2) * x)


SCALARS = [(one_d, one_d_jax), (pairs, pairs_jax), (rows, rows_jax), (at_added, at_added_jax)]


@pytest.mark.parametrize("fn, twin", SCALARS, ids=[f.__name__ for f, _ in SCALARS])
def test_grad_matches_jax_and_finite_differences(fn, twin):
    got = np.asarray(srcjax.grad(fn)(X))
    np.testing.assert_allclose(got, JAX.grad(twin)(X), rtol=1e-12, atol=1e-12)
    numpy_fn = (lambda x: float(twin(x))) if fn is at_added else fn  # (NumPy arrays have no .at)
    np.testing.assert_allclose(got, central_fd(numpy_fn, (X,), 0), rtol=1e-6, atol=1e-6)
    ns: dict = {}  # the printed gradient, run by NumPy
    exec(srcjax.source(srcjax.grad(fn)), ns)
    np.testing.assert_allclose(ns[f"{fn.__name__}_grad"](X), got, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn, twin", SCALARS, ids=[f.__name__ for f, _ in SCALARS])
def test_forward_mode_and_hessian_match_jax(fn, twin):
    t = np.cos(np.arange(6.0))
    out, tan = srcjax.jvp(fn, (X,), (t,))
    want_out, want_tan = JAX.jvp(twin, (X,), (t,))
    np.testing.assert_allclose(float(out), want_out, rtol=1e-12)
    np.testing.assert_allclose(float(tan), want_tan, rtol=1e-12)
    np.testing.assert_allclose(srcjax.hessian(fn)(X), JAX.hessian(twin)(X), rtol=1e-10, atol=1e-10)


def test_an_augmented_assignment_through_repeated_indices_is_numpys():
    def last_writes_jax(x):  # what NumPy computes: element 1 gets x[3] ** 2 added (the last write), 2 gets x[2] ** 2
        y = (jnp.zeros(6) + x).at[jnp.array([2, 1])].add(x[jnp.array([2, 3])] ** 2)
        return jnp.sum(y * x)

    np.testing.assert_allclose(srcjax.jit(added)(X), added(X), rtol=1e-12)
    np.testing.assert_allclose(added(X), last_writes_jax(X), rtol=1e-12)
    np.testing.assert_allclose(srcjax.grad(added)(X), JAX.grad(last_writes_jax)(X), rtol=1e-12)
    np.testing.assert_allclose(srcjax.grad(added)(X), central_fd(added, (X,), 0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(srcjax.hessian(added)(X), JAX.hessian(last_writes_jax)(X), rtol=1e-12, atol=1e-12)


def test_jacobians_and_vjp_of_a_vector_output():
    np.testing.assert_allclose(srcjax.jacrev(vector)(X), JAX.jacrev(vector_jax)(X), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(srcjax.jacfwd(vector)(X), JAX.jacfwd(vector_jax)(X), rtol=1e-12, atol=1e-12)
    u = np.arange(6.0) - 2.0
    _, pullback = srcjax.vjp(vector, X)
    np.testing.assert_allclose(pullback(u)[0], jax.vjp(vector_jax, X)[1](u)[0], rtol=1e-12)


def test_an_index_array_argument_and_a_scalar_value():
    got = srcjax.grad(index_argument)(X, I1)
    np.testing.assert_allclose(got, JAX.grad(index_argument_jax)(X, I1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, central_fd(index_argument, (X, I1), 0), rtol=1e-6, atol=1e-6)
    unique = np.array([0, 3, 5, 1, 2])  # the same compiled program, indices without repeats
    np.testing.assert_allclose(srcjax.grad(index_argument)(X, unique), JAX.grad(index_argument_jax)(X, unique),
                               rtol=1e-12, atol=1e-12)


def test_under_vmap_with_batched_and_unbatched_indices():
    xs = np.stack([X, X[::-1], 2 * X])
    idx = np.array([[1, 1, 2, 4, 1], [0, 5, 0, 5, 0], [3, 2, 1, 0, 4]])
    g = srcjax.vmap(srcjax.grad(index_argument))(xs, idx)
    np.testing.assert_allclose(g, JAX.vmap(jax.grad(index_argument_jax))(xs, idx), rtol=1e-12, atol=1e-12)
    g = srcjax.vmap(srcjax.grad(index_argument), in_axes=(0, None))(xs, I1)
    np.testing.assert_allclose(g, JAX.vmap(jax.grad(index_argument_jax), in_axes=(0, None))(xs, I1), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(srcjax.vmap(srcjax.grad(pairs))(xs), JAX.vmap(jax.grad(pairs_jax))(xs), rtol=1e-12,
                               atol=1e-12)


def test_the_mask_is_written_only_where_indices_can_repeat():
    def keys(x, i):
        y = np.zeros((4, 6))
        y[1:3] = x  # a slice
        y[2, ::2] = x[:3]  # an integer and a slice
        for k in range(2):
            y[k] = y[k] * x  # a loop counter
        j = 0
        while j < 2:  # a counter written as a while loop
            y[3, j] = x[j]
            j += 1
        y[i] = x  # an index argument: may be an array with repeats
        return np.sum(y ** 2)

    text = srcjax.source(srcjax.grad(keys))
    assert [line.strip() for line in text.splitlines() if "winning_writes(" in line] == [
        "x_bar = unbroadcast(np.where(winning_writes(y, i), y_bar_out[i], 0.0), x)"], text
    i = np.array([0, 3, 0])
    np.testing.assert_allclose(srcjax.grad(keys)(X, i), central_fd(keys, (X, i), 0), rtol=1e-6, atol=1e-6)


def _scatters(f, *args):
    """The scatters of ``f``'s StableHLO: (whether its region combines with ``maximum``, whether it replaces)."""
    text = srcjax.jit(f).lower(*args).as_text()
    found = []
    for part in text.split('"stablehlo.scatter"')[1:]:
        region = part.split("}) {", 1)[0]
        found.append(("stablehlo.maximum" in region, "stablehlo.add" not in region and "maximum" not in region))
    return found


@pytest.mark.parametrize("fn", [one_d, rows, pairs, lambda x: index_argument(x, I1)], ids=["one_d", "rows", "pairs", "arg"])
def test_writes_through_repeated_indices_do_not_depend_on_the_scatter_order(fn):
    """XLA leaves the order of a scatter's updates to one element unspecified (on the GPU it varies from
    run to run: `rows` returned other rows' values there). srcjax finds the landing write of each
    element with an order-free scatter (``maximum`` of the writes' ids) and gives every write to that
    element its value, so the replacing scatter writes one value per element whatever its order."""
    found = _scatters(fn, X)
    assert any(is_max for is_max, _ in found), found
    assert sum(rep for _, rep in found) <= sum(is_max for is_max, _ in found), found
    np.testing.assert_allclose(srcjax.jit(fn)(X), fn(X), rtol=1e-12)


def test_constant_distinct_indices_scatter_once():
    def distinct(x):
        y = np.zeros(6)
        y[np.array([4, 0, -1, 2])] = x[:4]  # -1 is 5: all distinct
        return y

    assert not any(is_max for is_max, _ in _scatters(distinct, X))
    np.testing.assert_array_equal(srcjax.jit(distinct)(X), distinct(X))
