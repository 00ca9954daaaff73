"""Regressions of hunt 29 (tests/test_hunt29_programs.py): each a program jax runs that srcjax refused or got
wrong, checked against jax (eager: Python's min/max of traced values runs under jax.grad, not jax.jit) and NumPy."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def jax_twin(fn: Callable[..., Any]) -> Callable[..., Any]:
    return types.FunctionType(fn.__code__, {**fn.__globals__, "np": jnp}, fn.__name__, fn.__defaults__)


def close(got: Any, want: Any, rtol: float = 1e-12) -> None:
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-12)


X = np.array([0.3, -0.7, 1.2])
XS = np.array([[0.3, -0.7, 1.2], [1.0, 0.2, -0.4], [-0.5, 0.8, 0.1]])


# == reverse mode's saves of a list in a branch: a copy, which vmap batches ============================================


def window_by_step(y0, omega, dt=0.05, steps=5):
    A = np.array([[-0.1, -omega], [omega, -0.1]])
    y = y0
    history = []
    for n in range(steps):
        history.append(A @ y)
        if n >= 2:
            history.pop(0)
        y = y + dt * sum(history)
    return np.sum(y * y)


def test_vmap_of_grad_of_a_list_popped_under_a_test_of_the_step():
    """``if n >= 2: history.pop(0)`` (``n`` a loop's counter): reverse mode saved ``history_before = history`` in
    both branches, the same list under a second name, which ``history.append`` changed at the next step; vmap
    refused it naming ``history_before``, a name the user never wrote. The save is a copy (``history[:]``)."""
    y0 = XS[:, :2]
    g = srcjax.grad(window_by_step, argnums=(0, 1))
    jg = jax.grad(jax_twin(window_by_step), argnums=(0, 1))
    close(srcjax.vmap(g, in_axes=(0, None))(y0, 1.3), jax.vmap(jg, in_axes=(0, None))(y0, 1.3))
    omegas = np.array([1.3, 0.9, 1.1])
    close(srcjax.vmap(g, in_axes=(None, 0))(y0[0], omegas), jax.vmap(jg, in_axes=(None, 0))(y0[0], omegas))
    assert "history_before = history[:]" in srcjax.source(g)


def window_of_a_list_argument(y0, omega, history, dt=0.05, steps=5):
    A = np.array([[-0.1, -omega], [omega, -0.1]])
    y = y0
    for n in range(steps):
        history.append(A @ y)
        if n >= 2:
            history.pop(0)
        y = y + dt * sum(history)
    return np.sum(y * y)


def test_vmap_of_grad_of_a_list_argument_popped_under_a_test_of_the_step():
    """The same with the list passed in (not made here): it is known a list by its ``append``."""
    y0 = XS[:, :2]
    got = srcjax.vmap(srcjax.grad(window_of_a_list_argument), in_axes=(0, None, None))(y0, 1.3, [np.ones(2)])
    eps = 1e-6
    for b in range(3):
        fd = [(window_of_a_list_argument(y0[b] + eps * e, 1.3, [np.ones(2)]) -
               window_of_a_list_argument(y0[b] - eps * e, 1.3, [np.ones(2)])) / (2 * eps) for e in np.eye(2)]
        close(got[b], np.array(fd), rtol=1e-6)


# == builtin min/max of a list, a tuple, a comprehension or a generator of single values ===============================


def min_of_list(x):
    vals = [x[0] * 2.0, x[1], np.sin(x[2])]
    return min(vals) + max(vals) ** 2


def max_of_tuple(x):
    t = (x[0], x[1] ** 2, x[2])
    return max(t) * min(t)


def min_of_generator(x):
    return min(x[i] * (i + 1) for i in range(3)) + max(np.cos(v) for v in x)


def max_of_comprehension(x):
    return max([np.sum(x[: k + 1]) for k in range(3)])


def min_of_appended(x):
    losses = []
    for k in range(3):
        losses.append(np.sum((x - k) ** 2))
    return min(losses) + 0.1 * max(losses)


def min_of_vector(x):
    return min(x) * max(x * 2.0) + max(x[1:])


def max_of_dict_values(x):
    d = {"p": x[0], "q": x[1] * 3.0}
    return max(d.values()) + min(reversed([x[0], x[2]]))


@pytest.mark.parametrize("fn", [min_of_list, max_of_tuple, min_of_generator, max_of_comprehension, min_of_appended,
                                min_of_vector, max_of_dict_values], ids=lambda f: f.__name__)
def test_builtin_min_max_of_an_iterable_of_single_values(fn):
    """Refused before ("the builtin min() compares values known only at run time"; ``min(x[i] for i in range(3))``
    under grad once the lowering ran it: a silent zero gradient): ``min(xs)`` of one iterable is the loop
    ``functools.reduce(min, xs)`` is, each step ``min`` of two values (derivatives: the first of equal values)."""
    twin = jax_twin(fn)
    close(srcjax.jit(fn)(X), fn(X))
    close(srcjax.grad(fn)(X), jax.grad(twin)(X))
    close(srcjax.jacrev(fn)(X), jax.jacrev(twin)(X))
    g = jax.grad(twin)
    close(srcjax.vmap(srcjax.grad(fn))(XS), np.stack([g(x) for x in XS]))
    close(srcjax.vmap(fn)(XS), np.array([fn(x) for x in XS]))
    eps = 1e-6
    fd = [(fn(X + eps * e) - fn(X - eps * e)) / (2 * eps) for e in np.eye(3)]
    close(srcjax.grad(fn)(X), np.array(fd), rtol=1e-6)


def sizes_and_keys(x):
    d = {"a": x[0], "b": x[1]}
    dims = x.shape
    return d[max(d)] * min(x.shape) + max(len(r) for r in [x, x[:2]]) + min(dims) + min(range(2, 4))


def test_min_max_of_sizes_and_keys_stay_python():
    """Sizes (``min(x.shape)``, ``max(len(r) for r in rows)``, ``range``) are not written as loops, and a dict's
    keys (``max(d)``) are compared as Python compares them."""
    close(srcjax.jit(sizes_and_keys)(X), sizes_and_keys(X))
    close(srcjax.grad(sizes_and_keys)(X), jax.grad(jax_twin(sizes_and_keys))(X))
    text = srcjax.source(srcjax.jit(sizes_and_keys))
    assert "min(x.shape)" in text or "min(shape" in text, text
    assert "max(d)" in text, text


def largest_key_of_a_dict_parameter(d, x):
    k = max(d)
    return np.sum(d[k] * x)


def test_max_of_a_dict_parameter_compares_its_keys():
    """A parameter may be a dict: ``max(d)`` iterates its keys (the fold listed ``d[0]`` first: "KeyError: 0" under
    jit). Its items are listed first, as ``min`` iterates them."""
    d = {"a": np.array([1.0, 2.0, 3.0]), "b": np.array([2.0, 0.5, -1.0])}
    close(srcjax.jit(largest_key_of_a_dict_parameter)(d, X), largest_key_of_a_dict_parameter(d, X))
    close(srcjax.grad(largest_key_of_a_dict_parameter, argnums=1)(d, X),
          jax.grad(jax_twin(largest_key_of_a_dict_parameter), argnums=1)(d, X))


def empty_min(x):
    vals = [x[k] for k in range(0)]
    return min(vals)


def test_min_of_an_empty_list_is_refused_at_the_users_line():
    with pytest.raises(ValueError, match="empty"):
        empty_min(X)
    with pytest.raises(srcjax.TranspileError, match="min\\(\\) iterable argument is empty") as e:
        srcjax.jit(empty_min)(X)
    assert "test_hunt29_fixes.py" in str(e.value)


# == a nested def called in a comprehension, under derivatives =========================================================


def candidates_by_nested_loss(x, d):
    def loss(z):
        return np.sum((z - 1.0) ** 2) + 0.1 * np.sum(z**4)

    c = [loss(x + t * d) for t in (0.0, 0.25, 0.5)]
    return c[0] + 2.0 * c[1] + c[2]


def test_nested_def_called_in_a_comprehension_differentiates():
    """Refused before ("cannot differentiate through the nested function `loss`"), where the same calls in a ``for``
    loop of appends ran: the comprehension is read again as that loop."""
    d = np.array([0.5, -0.25, 1.0])
    twin = jax_twin(candidates_by_nested_loss)
    close(srcjax.grad(candidates_by_nested_loss, argnums=(0, 1))(X, d), jax.grad(twin, argnums=(0, 1))(X, d))
    close(srcjax.vmap(srcjax.grad(candidates_by_nested_loss), in_axes=(0, None))(XS, d),
          jax.vmap(jax.grad(twin), in_axes=(0, None))(XS, d))


# == a dict made by a comprehension, its items tuples written by key ===================================================


def adam_state_by_key(w, x):
    p = {"a": w, "b": 2.0 * w}
    state = {k: (np.zeros_like(v), np.zeros_like(v)) for k, v in p.items()}
    for _ in range(2):
        grads = {"a": p["a"] * x, "b": p["b"] * p["a"]}
        for k in p:
            m, v = state[k]
            m = 0.9 * m + grads[k]
            v = 0.9 * v + grads[k] ** 2
            state[k] = (m, v)
            p[k] = p[k] - m / np.sqrt(v + 1.0)
    return np.sum(p["a"] ** 2 + p["b"])


def test_tuples_written_by_key_into_a_dict_made_by_a_comprehension():
    """Refused before ("np.where(): a tuple of traced values where an array goes"): ``state = {k: (...) for ...}``,
    read as ``items = {}`` and its writes then ``state = items``, was not known to be a dict, so the cotangent of
    ``state[k] = (m, v)`` was taken as an array write's (``np.where(winning_writes(...), ...)``)."""
    twin = jax_twin(adam_state_by_key)
    close(srcjax.grad(adam_state_by_key)(X, X), jax.grad(twin)(X, X))
    close(srcjax.vmap(srcjax.grad(adam_state_by_key), in_axes=(0, None))(XS, X),
          jax.vmap(jax.grad(twin), in_axes=(0, None))(XS, X))


def adam_state_of_a_dict_copy(params, x):
    p = dict(params)
    state = {k: (np.zeros_like(v), np.zeros_like(v)) for k, v in params.items()}
    for _ in range(2):
        grads = {"a": p["a"] * x, "b": p["b"] * p["a"]}
        for k in p:
            m, v = state[k]
            m = 0.9 * m + grads[k]
            v = 0.9 * v + grads[k] ** 2
            state[k] = (m, v)
            p[k] = p[k] - m / np.sqrt(v + 1.0)
    return np.sum(p["a"] ** 2 + p["b"])


def test_tuples_written_by_a_key_of_a_dict_copy():
    """Refused before ("unsupported operand type(s) for +: 'float' and 'tuple'"): with ``p = dict(params)`` (read
    as a comprehension too) ``k`` indexes no literal dict, so it was not known a dict's key and ``state[k]``'s
    cotangent was cleared to the number 0.0, not the zeros of its tuple."""
    params = {"a": X, "b": 2.0 * X}
    twin = jax_twin(adam_state_of_a_dict_copy)
    close(srcjax.grad(adam_state_of_a_dict_copy)(params, X), jax.grad(twin)(params, X))
