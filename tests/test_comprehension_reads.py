"""A call of the user's function kept inside a comprehension or generator expression reads its arguments.

Derivatives follow comprehensions by writing them as loops (``frontend/comprehension_loops.py``) when the
activity analysis finds one reading a differentiated value. Its reader skipped the arguments of any call that
is not a primitive (meant for ``np.shape(a)``), also of the user's own functions: ``sum(g(x) * k for k in
range(3))``, ``sum(np.sum(v) for v in helpers.seq(x))`` and ``srcjax.tree_util.tree_leaves(f(x))`` (a dotted
``tree_leaves``) read nothing, and their derivative was zero, silently. Checked against jax.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

from . import comprehension_helpers as H

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def g(x):
    return np.sum(x * x)


def pair(x):
    return {"u": x * 1.5, "v": x * x}


def scaled_calls(x):
    return sum(g(x) * k for k in range(3))


def module_helper_items(x):
    return sum(np.sum(v) for v in H.seq(x))


def module_helper_values(x):
    return sum(np.sum(v) for v in H.pair(x).values())


def dotted_tree_leaves(x):
    return sum(np.sum(v) for v in srcjax.tree_util.tree_leaves(pair(x)))


def dotted_tree_leaves_list(x):
    return sum([np.sum(v) for v in srcjax.tree_util.tree_leaves(H.pair(x))])


def method_of_a_result(x):
    return sum(H.seq(x)[1].sum() * k for k in range(3))


def _twin(f: Any) -> Any:
    """``f`` written with jax.numpy (the same sums, in the same order)."""
    def jpair(x):
        return {"u": x * 1.5, "v": x * x}

    def jseq(x):
        return [x * 1.5, jnp.sin(x)]

    return {
        "scaled_calls": lambda x: sum(jnp.sum(x * x) * k for k in range(3)),
        "module_helper_items": lambda x: sum(jnp.sum(v) for v in jseq(x)),
        "module_helper_values": lambda x: sum(jnp.sum(v) for v in jpair(x).values()),
        "dotted_tree_leaves": lambda x: sum(jnp.sum(v) for v in jax.tree_util.tree_leaves(jpair(x))),
        "dotted_tree_leaves_list": lambda x: sum([jnp.sum(v) for v in jax.tree_util.tree_leaves(jpair(x))]),
        "method_of_a_result": lambda x: sum(jseq(x)[1].sum() * k for k in range(3)),
    }[f.__name__]


CASES = [scaled_calls, module_helper_items, module_helper_values, dotted_tree_leaves, dotted_tree_leaves_list,
         method_of_a_result]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_a_call_inside_a_comprehension_is_differentiated(f: Any) -> None:
    x = np.array([0.7, -1.3, 2.1])
    want = np.asarray(jax.grad(_twin(f))(x))
    assert np.abs(want).min() > 0.1
    np.testing.assert_allclose(np.asarray(srcjax.grad(f)(x)), want, rtol=1e-12)
    X = np.stack([x, -0.5 * x])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(f))(X)),
                               np.stack([np.asarray(jax.grad(_twin(f))(v)) for v in X]), rtol=1e-12)
