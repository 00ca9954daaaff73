"""Values a loop binds on some iterations only, read after the loop (refuse47).

A search that breaks on data (``if x[i] > t: val = ...; break``, with or without ``else:``) and a name bound
under an ``if`` on data in a loop (``if x[i] > 0.5: y = x[i] * 2``) keep, after the loop, the value of the last
iteration that bound them. Reverse mode bound such a name to ``UNSET`` on every iteration whose branch did not
bind it, and joined ``UNSET`` as zeros: ``grad`` and ``hessian`` were silently wrong (the gradient through the
value read after the loop was lost). Checked against jax running the same text eagerly (Python control flow on
values) and central finite differences.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import srcjax  # noqa: E402
from tests.twins import jax_twin  # noqa: E402

jax.config.update("jax_enable_x64", True)


def kept_from_first(x):
    s = 0.0
    for i in range(5):
        if x[i] > 0.5:
            y = x[i] * 2
        s = s + x[i]
    return s * y


def search_no_else(x):
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            val = x[i] * 2.0
            break
    return val * x[1]


def search_else(x):
    for i in range(5):
        if x[i] > 0.5:
            val = x[i] * 2.0
            break
    else:
        val = x[0]
    return val * x[1]


X = {kept_from_first: np.array([0.9, 0.1, 0.2, 0.3, 0.1]), search_no_else: np.array([0.1, 0.3, 0.9, 0.2, 0.7]),
     search_else: np.array([0.1, 0.3, 0.9, 0.2, 0.7])}


def _fd(f: Callable[..., Any], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    out = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = eps
        out[k] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


@pytest.mark.parametrize("fn", list(X), ids=lambda f: f.__name__)
def test_grad_of_value_bound_on_some_iterations(fn: Callable[..., Any]) -> None:
    x = X[fn]
    twin = jax_twin(fn)
    want = np.asarray(jax.grad(twin)(x))
    np.testing.assert_allclose(np.asarray(srcjax.grad(fn)(x)), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(want, _fd(fn, x), rtol=1e-6, atol=1e-8)
    value, g = srcjax.value_and_grad(fn)(x)
    np.testing.assert_allclose(float(value), fn(x), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-12, atol=1e-12)


def test_hessian_of_value_bound_on_some_iterations() -> None:
    x = X[kept_from_first]
    want = np.asarray(jax.hessian(jax_twin(kept_from_first))(x))
    np.testing.assert_allclose(np.asarray(srcjax.hessian(kept_from_first)(x)), want, rtol=1e-12, atol=1e-12)


def first_above(x, t):
    for i in range(x.shape[0]):
        if x[i] > t:
            idx = i
            break
    else:
        idx = -1
    return idx


def test_for_else_search_runs_under_jit_and_vmap() -> None:
    # `idx` bound only in the loop (before its break) and in the `else:` clause: refused ("`idx`, which it first
    # assigns, is used after the loop"); the clause's `idx = -1` binds it before the loop too (loop_else.py)
    for x in (np.array([0.1, 0.3, 0.9, 0.2]), np.array([0.1, 0.3, 0.2, 0.2]), np.array([0.9, 0.1, 0.2, 0.2])):
        assert int(srcjax.jit(first_above)(x, 0.5)) == first_above(x, 0.5)
        assert float(srcjax.jit(search_else)(np.r_[x, 0.0])) == pytest.approx(search_else(np.r_[x, 0.0]))
    xs = np.random.default_rng(0).uniform(0.0, 0.7, (6, 4))
    got = np.asarray(srcjax.vmap(first_above, in_axes=(0, None))(xs, 0.5))
    np.testing.assert_array_equal(got, [first_above(r, 0.5) for r in xs])
    assert "    idx = -1\n    no_break = True\n" in srcjax.source(srcjax.jit(first_above))


def test_search_without_else_refused_at_the_loop() -> None:
    # Python raises UnboundLocalError after no break: refused, naming the name and the `else:` clause
    def first(x):
        for i in range(x.shape[0]):
            if x[i] > 0.5:
                idx = i
                break
        return idx

    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.jit(first)(np.ones(3))
    msg = str(e.value)
    assert "`idx`, which it first assigns, is used after the loop" in msg and "UnboundLocalError" in msg, msg
    assert "test_loop_results.py" in msg and "for i in range(x.shape[0]):" in msg, msg
