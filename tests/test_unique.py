"""``np.unique(x, size=...)`` with JAX's semantics (``jnp.unique``): sorted unique values padded with
``fill_value`` (default the smallest), ``return_index``/``return_inverse``/``return_counts``, NaNs equal;
against jax, run by XLA and as generated source by NumPy; batched; without ``size=`` a located error."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcjax
from tests import written

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

from tests.twins import jitted  # noqa: E402

_SCALE = 10 if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" else 1
rng = np.random.default_rng(0)


def pair(body: str) -> tuple[Any, Any]:
    return (written.define(body, "x", np, tag="test_unique"), written.define(body, "x", jnp, tag="test_unique"))


def same(got: Any, want: Any) -> None:
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
    np.testing.assert_array_equal(g, w)


CALLS = [
    "np.unique(x, size=4)",
    "np.unique(x, size=9)",
    "np.unique(x, size=9, fill_value=-1)",
    "np.unique(x, size=3, return_counts=True)",
    "np.unique(x, size=12, return_index=True, return_inverse=True, return_counts=True)",
    "np.unique(x, return_inverse=True, size=2, fill_value=0)",
    "np.unique(x * 2, size=5)[1:] + 1",
]


@pytest.mark.parametrize("data", [np.array([[3, 4, 1], [3, 1, 7]]), np.array([2.5, np.nan, 1.0, 2.5, np.nan, -0.0]),
                                  np.array([5.0]), np.array([[1, 1], [1, 1]], np.int32)])
def test_against_jax(data: np.ndarray) -> None:
    f, fj = pair("(" + ", ".join(CALLS) + ")")
    want = jitted(fj)(data)  # (one XLA program, not one per primitive jax dispatches eagerly)
    same(srcjax.compile(f)(data), want)
    same(srcjax.compile(f, device="numpy")(data), want)


def test_vmap_against_jax() -> None:
    f, fj = pair("np.unique(x, size=4, return_counts=True, return_index=True)")
    xs = rng.integers(0, 4, size=(5, 6))
    same(srcjax.vmap(f)(xs), jax.vmap(fj)(xs))


def test_gradient_of_unique_values() -> None:
    f, fj = pair("np.sum(np.unique(x, size=4) ** 2)")
    x = np.array([1.5, -2.0, 1.5, 3.0, 0.5])
    np.testing.assert_allclose(srcjax.grad(f)(x), jax.grad(fj)(x))


@settings(max_examples=50 if _SCALE > 1 else 3, deadline=None, derandomize=_SCALE == 1, database=None)
@given(n=st.integers(1, 12), hi=st.integers(0, 6), size=st.integers(1, 10))
def test_hypothesis(n: int, hi: int, size: int) -> None:
    f, fj = pair(f"np.unique(x, size={size}, return_index=True, return_inverse=True, return_counts=True)")
    x = rng.integers(0, hi + 1, size=n)
    same(srcjax.compile(f)(x), fj(x))


def test_without_size_a_located_error_names_size() -> None:
    f = written.define("np.unique(x)", "x", np, tag="test_unique")
    with pytest.raises(srcjax.TranspileError, match="size depends on the data") as e:
        srcjax.compile(f)(np.arange(3))
    assert e.value.span is not None and e.value.span.line == 2
    assert e.value.hint is not None and "size=" in e.value.hint


def test_axis_is_refused() -> None:
    f = written.define("np.unique(x, axis=0, size=2)", "x", np, tag="test_unique")
    with pytest.raises(srcjax.TranspileError, match="axis") as e:
        srcjax.compile(f)(np.arange(6).reshape(2, 3))
    assert e.value.span is not None and e.value.span.line == 2
    g = written.define("np.unique(x, axis=None, size=2)", "x", np, tag="test_unique")
    same(srcjax.compile(g)(np.arange(6)), np.arange(2))
