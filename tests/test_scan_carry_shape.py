"""``srcjax.lax.scan`` whose ``f`` returns a carry of another shape than it is given: jax refuses it ("scan body
function carry input and carry output must have equal types"); srcjax ran it (the compiled scan peeled the steps,
each carry of a new shape, and the NumPy reference ran the Python loop). Refused now as jax does, at the user's
line, naming the carry and both shapes (compiled, vmapped, and the NumPy reference, a TypeError as jax's)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax


def outer_carry(x):
    def step(c, xi):
        return np.outer(c, xi), np.sum(xi)
    c, _ = srcjax.lax.scan(step, x, np.ones((2, 3)))
    return c


def dict_carry(x):
    def step(c, xi):
        return {"h": c["h"] * xi[:, None], "n": c["n"] + 1.0}, xi
    c, _ = srcjax.lax.scan(step, {"h": x, "n": 0.0}, np.ones((2, 3)))
    return c["h"]


def weak_carry(x):  # a Python number carried: its dtype taken from f's (JAX's weak-typed carry), its shape kept
    c, ys = srcjax.lax.scan(lambda c, xi: (c + np.sum(xi), c), 0.0, x)
    return c + np.sum(ys)


X = np.array([0.5, -1.0, 2.0])


@pytest.mark.parametrize("f, carry, shapes", [(outer_carry, "`c`", "(3,) and comes out with shape (3, 3)"),
                                              (dict_carry, "`c` (leaf 0 of 2)", "(3,) and comes out with shape (3, 3)")],
                         ids=["array", "dict"])
@pytest.mark.parametrize("how", ["jit", "vmap"])
def test_a_carry_that_changes_shape_is_refused_at_the_users_line(f: Any, carry: str, shapes: str, how: str) -> None:
    fn = srcjax.jit(f) if how == "jit" else srcjax.vmap(f)
    with pytest.raises(srcjax.TranspileError) as e:
        fn(X if how == "jit" else np.stack([X, X]))
    first = str(e.value).splitlines()[0]
    assert "test_scan_carry_shape.py:" in first and f"scan: the carry {carry} goes into f with shape {shapes}" \
        in first, str(e.value)
    assert "srcjax.lax.scan(" in str(e.value) and "keeps its shape" in str(e.value)
    with pytest.raises(TypeError, match="comes out with shape"):
        f(X)  # (the NumPy reference: jax raises a TypeError too)


def test_a_python_number_carry_keeps_working() -> None:
    want = weak_carry(X)
    np.testing.assert_allclose(np.asarray(srcjax.jit(weak_carry)(X)), want)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(weak_carry)(np.stack([X, -X]))), [want, weak_carry(-X)])
    x32 = X.astype(np.float32)
    assert np.asarray(srcjax.jit(weak_carry)(x32)).dtype == np.float32
