"""A helper's outputs without a cotangent are symbolic zeros (transforms/zero_cotangents.py). Silently wrong
before: ``d, y = f(x); return np.sum(y)`` passed ``f``'s backward half ``(zeros_like(d), y_bar)``, and the zeros
met ``d = np.sqrt(x ** 2)``'s derivative ``0.5 / d``: ``0 * inf`` gave a NaN gradient where JAX's (and the finite
differences') is 2 (found by hunt 24: npbench-style ``periodic_dist``'s ``jacrev`` of one of its outputs was NaN
everywhere). The backward half is written for the call's zero pattern: the pullback of a zero part never runs."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def _pair(x: Any) -> Any:
    d = np.sqrt(x ** 2)
    return d, x * 2.0


def _nested(x: Any) -> Any:
    return (np.sqrt(x ** 2), (np.log(np.abs(x)), np.sin(x))), x ** 3


def _record(x: Any) -> Any:
    return {"d": np.sqrt(x ** 2), "y": x * 2.0}


def _unpacked(x: Any) -> Any:
    d, y = _pair(x)
    return np.sum(y)


def _indexed(x: Any) -> Any:
    return np.sum(_pair(x)[1])


def _keyed(x: Any) -> Any:
    return np.sum(_record(x)["y"])


def _nested_parts(x: Any) -> Any:
    (d, (lg, s)), c = _nested(x)
    return np.sum(s * c) + np.sum(_nested(x)[0][1][1])


def _in_a_loop(x: Any) -> Any:
    total = 0.0
    for k in range(3):
        d, y = _pair(x * k)
        total = total + np.sum(y ** 2)
    return total


def _zero_weight(x: Any) -> Any:  # (a cotangent that is zero by value, not by structure: NaN, as JAX's)
    d, y = _pair(x)
    return np.sum(y) + 0.0 * np.sum(d)


def _twin(fn: Any) -> Any:
    """``fn`` and its helpers run with jax.numpy (the oracle)."""
    ns: dict[str, Any] = {"np": jnp, "Any": Any}
    for helper in (_pair, _nested, _record, fn):
        exec(inspect.getsource(helper), ns)  # noqa: S102
    return ns[fn.__name__]


X = np.array([0.0, 1.0, -2.0, 0.5])


@pytest.mark.parametrize("fn", [_unpacked, _indexed, _keyed, _nested_parts, _in_a_loop, _zero_weight],
                         ids=lambda f: f.__name__)
def test_a_helper_output_without_a_cotangent_is_a_symbolic_zero(fn: Any) -> None:
    x = np.where(X == 0.0, 0.0, X) if fn is not _nested_parts else X + 0.25
    want = np.asarray(jax.grad(_twin(fn))(x))
    np.testing.assert_allclose(np.asarray(srcjax.grad(fn)(x)), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.jacrev(fn)(x)), want, rtol=1e-12, atol=1e-12)
    xs = np.stack([x, 2.0 * x])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(fn))(xs)),
                               np.asarray(jax.vmap(jax.grad(_twin(fn)))(xs)), rtol=1e-12, atol=1e-12)
    if fn is _zero_weight:
        assert np.isnan(want[0])
    else:
        assert np.all(np.isfinite(want))


def test_the_backward_half_leaves_the_zero_output_out() -> None:
    src = srcjax.source(srcjax.grad(_unpacked))
    assert "0.5 / d" not in src and "np.sqrt(x ** 2)" in src
