"""List and tuple literals of Python floats (or of traced scalars) beside traced arrays in a join,
``np.concatenate(([0.0], x, [0.0]))`` (hunt15's spring_chain_verlet), ``np.stack([x, [1.0, ...]])``,
``np.hstack``/``np.vstack``, a name bound to a list (``pad = [0.0]``), ``np.append(x, [1.0, 2.0])``.

vmap(grad) refused them ("unbroadcast(): a list of traced values where an array goes": the reverse pass's
join_bars got the literal, which vmap broadcast item by item), jacrev's generated source run by NumPy failed
("cannot reshape array of size 1"), a literal holding a traced scalar was refused even by grad, np.append of a
literal failed inside vmap (an internal error). Each item NumPy makes an array is made one first now
(``asarray = np.asarray([0.0])``, ``stack = np.stack([y[0], 1.0])``: ``frontend/literal_arrays.py``).
Oracles: jax (its joins take no lists: the twin makes each an array, as NumPy does) and the generated source
run by NumPy.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

import srcjax

from .twins import jax_twin, jitted

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)


def _arrays(seq: Any) -> Any:
    return [jnp.asarray(a) if isinstance(a, (list, tuple)) else a for a in seq]


# jax.numpy whose joins take list items, as NumPy's do
JNP_LISTS = types.SimpleNamespace(**{k: getattr(jnp, k) for k in dir(jnp) if not k.startswith("_")})


def _joining(join: Any) -> Any:
    return lambda seq, *a, **k: join(_arrays(seq), *a, **k)


for _join in ("concatenate", "stack", "hstack", "vstack"):
    setattr(JNP_LISTS, _join, _joining(getattr(jnp, _join)))
JNP_LISTS.append = lambda arr, values, *a, **k: jnp.append(*_arrays([arr, values]), *a, **k)
JNP_LISTS.power = lambda x, y: jnp.power(*_arrays([x, y]))


def spring_forces(x):
    stretch = np.diff(np.concatenate(([0.0], x, [0.0])))
    return np.sum(stretch ** 2 * x[0])


def mixed_items(x):
    return np.sum(np.concatenate([[1.0, 2.0], x * x, (3.0,)]) * np.arange(8.0))


def traced_item(x):
    return np.sum(np.concatenate(([x[0] * x[1], 1.0], x)) ** 2)


def stacked_row(x):
    return np.sum(np.stack([x, [1.0, 2.0, 3.0, 4.0, 5.0]]) ** 2 * x[2])


def hstacked(x):
    return np.sum(np.hstack([0.5, x, [1.0, 2.0]]) ** 2 * x[0])


def vstacked(x):
    return np.sum(np.vstack([[0.5, 1.0, 2.0, 3.0, 4.0], x]) ** 2 * x[0])


def named_list(x):
    pad = [0.0]
    return np.sum(np.concatenate((pad, x, pad)) ** 2 * x[1])


def appended(x):
    return np.sum(np.append(x, [1.0, 2.0]) ** 2 * x[0])


def appended_traced(x):
    return np.sum(np.append([x[1], 1.0], x) ** 2 * x[0])


PROGRAMS = [spring_forces, mixed_items, traced_item, stacked_row, hstacked, vstacked, named_list, appended,
            appended_traced]
X = np.linspace(0.3, 1.7, 10).reshape(2, 5)


def _check(got: Any, want: Any, generated: Any) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(generated), np.asarray(want), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_vmap_grad_of_join_with_literals(f):
    g = srcjax.vmap(srcjax.grad(f))
    want = jitted(jax.vmap(jax.grad(jax_twin(f, np_module=JNP_LISTS))))(X)
    _check(g(X), want, srcjax.numpy_function(g)(X))


@pytest.mark.parametrize("f", [spring_forces, mixed_items, traced_item, appended], ids=lambda f: f.__name__)
def test_jacobians_of_join_with_literals(f):
    twin = jax_twin(f, np_module=JNP_LISTS)
    for ours, theirs, x in ((srcjax.jacrev(srcjax.grad(f)), jax.jacrev(jax.grad(twin)), X[0]),
                            (srcjax.vmap(srcjax.jacfwd(f)), jax.vmap(jax.jacfwd(twin)), X)):
        _check(ours(x), jitted(theirs)(x), srcjax.numpy_function(ours)(x))


def test_literal_of_numbers_is_float64_beside_float32():
    """NumPy makes ``[0.0]`` a float64 array: the join of it and float32 ``x`` is float64, as the user's function
    run by NumPy gives."""
    x = X[0].astype(np.float32)

    def padded(x):
        return np.concatenate(([0.0], x, [0.0]))

    assert padded(x).dtype == np.float64
    assert srcjax.jit(padded)(x).dtype == np.float64
    assert srcjax.vmap(padded)(X.astype(np.float32)).dtype == np.float64


def test_join_literal_printed_as_array():
    text = srcjax.source(srcjax.grad(spring_forces))
    assert "asarray = np.asarray([0.0])" in text
    assert "join_bars(concatenate_bar, [asarray, x, asarray_1]" in text


def powers(x):
    return np.sum(np.power(x, [1.0, 2.0, 3.0, 0.5, 2.0]))


def test_list_of_numbers_for_a_differentiable_operand():
    """``np.power(x, [1.0, 2.0, ...])``: grad was refused "unsupported operand type(s) for -: 'list' and 'int'" (the
    rule computes ``y - 1`` with the operand); the list is ``np.asarray([...])`` first, as NumPy makes it."""
    f = powers
    twin = jax_twin(f, np_module=JNP_LISTS)
    for ours, theirs, x in ((srcjax.grad(f), jax.grad(twin), X[0]), (srcjax.hessian(f), jax.hessian(twin), X[0]),
                            (srcjax.vmap(srcjax.grad(f)), jax.vmap(jax.grad(twin)), X)):
        _check(ours(x), jitted(theirs)(x), srcjax.numpy_function(ours)(x))
