"""A tuple pushed on a cotangent tape and popped whole (``saved_bar = _tape_bar.pop()``) under vmap.

``jit(jacrev(g))`` of ``g`` computing per-example gradients ``vmap(grad(one), in_axes=(None, None, 0, 0))``
(the autodiff cookbook's logistic regression): jacrev's batched VJP pushed the tuple of cotangents slot by slot
(an unbatched zero cotangent left unbroadcast, ``issue #15``'s rule) while the pop into one name reads every slot
batched; the zero was then taken for a batched value ("operands could not be broadcast together with shapes
(3, 5, 1) and (5, 5, 1)" located in srcjax's lifted copy, and in the generated source run by NumPy). The rule
turned off for the program after such a push now writes the program again (``transforms/batch_tapes.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import srcjax  # noqa: E402

from .twins import jax_twin, jitted  # noqa: E402

jax.config.update("jax_enable_x64", True)


def logistic_loss(W: Any, b: Any, inputs: Any, targets: Any) -> Any:
    preds = 0.5 * (np.tanh((inputs @ W + b) / 2) + 1)
    return -np.sum(np.log(preds * targets + (1 - preds) * (1 - targets)))


def per_example_grads(W: Any, b: Any, inputs: Any, targets: Any) -> Any:
    def one(W: Any, b: Any, x: Any, t: Any) -> Any:
        return logistic_loss(W, b, x[None], t[None])

    gW, gb = srcjax.vmap(srcjax.grad(one, argnums=(0, 1)), in_axes=(None, None, 0, 0))(W, b, inputs, targets)
    return gW, gb


def summed_weight_grads(W: Any, b: Any, inputs: Any, targets: Any) -> Any:
    return per_example_grads(W, b, inputs, targets)[0].sum(0)


R = np.random.default_rng(0)
ARGS = (R.normal(size=3), 0.1 * R.normal(), R.normal(size=(5, 3)), (R.random(5) < 0.5).astype(float))


def test_jit_jacrev_of_per_example_gradients_matches_jax() -> None:
    twin = jax_twin(summed_weight_grads, helpers=(logistic_loss, per_example_grads))
    want = jitted(jax.jacrev(twin))(*ARGS)
    got = srcjax.jit(srcjax.jacrev(summed_weight_grads))(*ARGS)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)
    by_numpy = srcjax.numpy_function(srcjax.jacrev(summed_weight_grads))(*ARGS)
    np.testing.assert_allclose(np.asarray(by_numpy), np.asarray(want), rtol=1e-10, atol=1e-12)
