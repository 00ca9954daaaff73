"""Python numbers carried by loops on data stay weakly typed under every transformation (float32 work stays float32).

Two silent float64 results and one refusal, found by tests/test_hunt13_programs.py at float32:

- a counter ``n = 0`` carried by a ``while`` on data under ``vmap`` (a per-example trip count): ``batch_select``
  joined integers by bitwise functions, whose results are strongly typed, so ``x32 * n`` was float64 (NumPy and
  jax per example: float32). It is now ``np.where`` of the two (under ``stop_gradient``: no cotangent is read),
  which keeps two weak operands weak, by XLA and by NumPy running the generated source (``WeakArray``);
- ``acc = 0.0`` then ``acc = acc + x32[i] ** 2`` (a Python-float accumulator, float32 after one step) under
  ``grad``/``hessian`` with ``continue`` on data, and under ``vmap`` with an early return: "output 1 is float32
  and float64 on different paths" (the cotangent of the weak ``0.0`` was cast to float64 by ``unbroadcast``). A
  weakly typed primal now takes its cotangent's (tangent's) precision, as in JAX.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

from .twins import JAX, jax_twin

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def halving_until_small(x):
    n = 0
    while np.max(np.abs(x)) > 0.1:
        x = x * 0.5
        n = n + 1
    return x * n


def counted_halving(x):
    n = 0
    while n < 6 and np.sum(x * x) > 0.5:
        x = x * 0.5
        n = n + 1
    return np.sum(x * x) * n


def continue_skips(x):
    total = 0.0
    for v in x:
        if v < 0:
            continue
        total = total + np.sqrt(v + 1.0)
    return total


def early_return_in_loop(x):
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i] ** 2
        if acc > 2.0:
            return acc * (i + 1)
    return acc


def _batch() -> np.ndarray:
    return (np.random.default_rng(0).normal(size=(3, 4)) * 2.0).astype(np.float32)


def _per_example(f, xs):  # type: ignore[no-untyped-def]
    return np.stack([np.asarray(f(r)) for r in xs])


def test_vmapped_while_counter_keeps_float32() -> None:
    xs = _batch()
    v = srcjax.vmap(halving_until_small)
    want = _per_example(halving_until_small, xs)
    assert want.dtype == np.float32
    for got in (v(xs), srcjax.jit(v)(xs), srcjax.numpy_function(v)(xs)):
        assert np.asarray(got).dtype == np.float32
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_vmapped_grad_of_counted_while_keeps_float32() -> None:
    xs = _batch()
    got = srcjax.vmap(srcjax.grad(counted_halving))(xs)
    g = JAX.grad(jax_twin(counted_halving))
    want = np.stack([np.asarray(g(jnp.asarray(r))) for r in xs])
    assert np.asarray(got).dtype == want.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)


@pytest.mark.parametrize("transform", ["grad", "hessian"])
def test_float_accumulator_with_continue_on_data(transform: str) -> None:
    x = np.array([0.5, -1.0, 2.0, 0.3], np.float32)
    d = getattr(srcjax, transform)(continue_skips)
    want = np.asarray(getattr(jax, transform)(jax_twin(continue_skips))(jnp.asarray(x)))
    for got in (d(x), srcjax.numpy_function(d)(x)):
        assert np.asarray(got).dtype == want.dtype == np.float32
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def test_vmapped_float_accumulator_with_early_return() -> None:
    xs = _batch() * 0.4
    v = srcjax.vmap(early_return_in_loop)
    want = _per_example(early_return_in_loop, xs)
    assert want.dtype == np.float32
    for got in (v(xs), srcjax.numpy_function(v)(xs)):
        assert np.asarray(got).dtype == np.float32
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    gv = srcjax.grad(lambda b: np.sum(srcjax.vmap(early_return_in_loop)(b)))(xs)
    g = JAX.grad(jax_twin(early_return_in_loop))
    want_g = np.stack([np.asarray(g(jnp.asarray(r))) for r in xs])
    assert np.asarray(gv).dtype == np.float32
    np.testing.assert_allclose(np.asarray(gv), want_g, rtol=1e-5)
