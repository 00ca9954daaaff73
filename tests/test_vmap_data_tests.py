"""vmap of control flow whose test reads a parameter by index (`if x[0] > 0`, `while x[0] < 10`).

The front end cannot tell whether such a test is on data (``x`` may be a Python list or number),
so it leaves the ``if``/``while`` to the lowering; under ``vmap`` the test is batched, and the
batcher functionalizes the function again knowing it (``transforms/batch.py``: ``DataTest``).
Regression tests for "an `if` condition on array data must be a scalar" under ``vmap`` and
``vmap(grad(...))`` (session 12's note), checked against a Python loop over examples calling
the same srcjax transformation, and against jax where jax can express the program.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from srcjax import lax as jl
from tests.twins import JAX

jax.config.update("jax_enable_x64", True)


def _t(v: Any) -> Any:
    return np.sum(np.sin(v) * 2.0)


def _e(v: Any) -> Any:
    return np.sum(v ** 3)


def if_on_index(x):
    if x[0] > 0.0:
        r = _t(x)
    else:
        r = _e(x)
    return r + 1.0


def if_via_name(x):
    s = x[1]
    if s > 0.0:
        r = np.sum(np.sin(x))
    else:
        r = np.sum(x ** 3)
    return r


def cond_on_index(x):
    return srcjax.lax.cond(x[0] > 0.0, _t, _e, x)


def cond_on_alias(x):
    return jl.cond(x[2] < 0.2, lambda v: np.sum(v * v), lambda v: np.sum(np.exp(v)), x)


def cond_on_second_arg(x, s):
    y = x * s
    return srcjax.lax.cond(s > 0.0, lambda a: np.sum(a ** 2), lambda a: np.sum(np.exp(a)), y)


def while_on_index(x):
    while x[0] * x[0] < 100.0:  # (|x[0]| >= 0.05: at most 8 doublings)
        x = x * 2.0
    return np.sum(x)


def break_on_index(x):
    s = 0.0
    for i in range(4):
        if x[i % 3] > 0.5:
            break
        s = s + x[i % 3] ** 2
    return s


CASES = [if_on_index, if_via_name, cond_on_index, cond_on_alias, while_on_index, break_on_index]


def _xs(seed: int) -> np.ndarray:
    r = np.random.default_rng(seed)
    return np.abs(r.normal(size=(7, 3))) * np.where(r.random((7, 1)) < 0.5, -1.0, 1.0) + 0.05


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_vmap_matches_loop(fn: Any) -> None:
    xs = _xs(1)
    got = np.asarray(srcjax.vmap(fn)(xs))
    want = np.stack([np.asarray(fn(x)) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # the generated source, run by NumPy, agrees too
    np.testing.assert_allclose(srcjax.numpy_function(srcjax.vmap(fn))(xs), want, rtol=1e-12)


DERIVATIVE_CASES = [(f, how) for f in CASES if f is not while_on_index for how in ("grad", "jacfwd", "hessian")]
# (vmap of forward mode through a `break` on data was refused, "cannot batch" a srcjax.batched helper: the
# jacobian's own batched JVP indexes the tangents by the loop counter, which the outer vmap batches;
# transforms/batch_nested.py)


@pytest.mark.parametrize(("fn", "how"), DERIVATIVE_CASES, ids=lambda v: getattr(v, "__name__", v))
def test_vmap_of_derivative_matches_loop(fn: Any, how: str) -> None:
    xs = _xs(2)
    d = getattr(srcjax, how)(fn)
    got = np.asarray(srcjax.vmap(d)(xs))
    want = np.stack([np.asarray(d(x)) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert np.any(want != 0)


def test_grad_of_break_on_index_against_jax() -> None:
    def jfn(x: Any) -> Any:
        s = 0.0
        done = False
        for i in range(4):
            done = jnp.logical_or(done, x[i % 3] > 0.5)
            s = s + jnp.where(done, 0.0, x[i % 3] ** 2)
        return s

    xs = np.abs(_xs(3))
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(break_on_index))(xs)),
                               np.asarray(JAX.vmap(jax.grad(jfn))(xs)), rtol=1e-12)


def test_vmap_grad_of_cond_on_second_argument_against_jax() -> None:
    r = np.random.default_rng(4)
    xs, ss = r.normal(size=(6, 3)), np.array([1.0, -2.0, 3.0, -1.0, 0.5, -0.1])

    def jfn(x: Any, s: Any) -> Any:
        y = x * s
        return jax.lax.cond(s > 0.0, lambda a: jnp.sum(a ** 2), lambda a: jnp.sum(jnp.exp(a)), y)

    for argnums in (0, 1):
        got = srcjax.vmap(srcjax.grad(cond_on_second_arg, argnums=argnums))(xs, ss)
        want = JAX.vmap(jax.grad(jfn, argnums=argnums))(xs, ss)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


def test_batched_source_selects_per_example() -> None:
    text = srcjax.source(srcjax.vmap(if_on_index))
    assert "batch_select(" in text and "if gt" not in text


def rec(x, n):
    if n == 0:
        return x
    return rec(np.sin(x) * 1.5, n - 1)


def rec_entry(x, n=3):
    return np.sum(rec(x, n))


def test_defaulted_parameter_left_out_is_not_mapped() -> None:
    """One in_axes maps the arguments passed (JAX's meaning): a parameter left to its default is the
    same for every example (was an internal IndexError located in srcjax/batched.py)."""
    xs = _xs(5)
    got = np.asarray(srcjax.vmap(rec_entry)(xs))
    np.testing.assert_allclose(got, [rec_entry(x) for x in xs], rtol=1e-12)
    got2 = np.asarray(srcjax.vmap(rec_entry, in_axes=(0, None))(xs, 2))
    np.testing.assert_allclose(got2, [rec_entry(x, 2) for x in xs], rtol=1e-12)


def test_recursion_on_a_batched_depth_is_a_located_error() -> None:
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.vmap(rec_entry)(_xs(6), np.array([1, 2, 0, 1, 2, 0, 1]))
    assert __file__ in str(e.value)


def test_source_with_an_array_prints_the_program_for_its_shape() -> None:
    """An array after the function is an example argument (it was taken for ``form`` and refused):
    the program for its shape and dtype (tests/test_specialized_print.py)."""
    text = srcjax.source(if_on_index, np.zeros(3))
    assert "def if_on_index(x" in text
    with pytest.raises(srcjax.ArgumentError, match="form must be"):
        srcjax.source(if_on_index, np.zeros(3), form=np.zeros(3))  # type: ignore[arg-type]
