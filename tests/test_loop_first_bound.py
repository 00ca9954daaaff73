"""A name a loop carries that is first bound inside the loop (``if i == 0: acc = np.zeros(n)``, the lazy
``if self.m is None: self.m = np.zeros(...)`` of ML-From-Scratch's optimizers, hunt14's ``adadelta_steps``).

Silently wrong before: forward mode wrote no tangent for the constant first binding and then read it as a
symbolic zero at every later step (jacfwd dropped the derivative carried from the previous step); reverse mode
saved only the end-of-step value (the adjoint of ``np.sin(acc)`` read the new ``acc``, not the one it was
called with) and bound the name to UNSET on the path that does not bind it (``acc * 0.5`` of UNSET: an error,
or zeros compiled); vmap took the name for unbatched at the top of every step (its rows were misaligned: a
(3, 3, 3) result for (3, 3)). Checked against jax, finite differences and the generated source run by NumPy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax
from tests import corpus_harness

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def zeros_first(x: Any) -> Any:
    for i in range(3):
        if i == 0:
            acc = np.zeros(3)
        acc = 0.5 * acc + x * x
    return np.sum(acc)


def flag_first(x: Any) -> Any:
    state = None
    for _ in range(3):
        if state is None:
            state = 1
            acc = np.ones(3)
        acc = np.sin(acc) * x
    return np.sum(acc)


def scalar_then_array(x: Any) -> Any:
    for i in range(3):
        if i == 0:
            acc = 0.0
        acc = acc * np.cos(x) + x
    return np.sum(acc)


def data_branch_after(x: Any) -> Any:
    for i in range(3):
        if i == 0:
            acc = np.ones(3)
        if np.sum(acc * x) > 0:
            acc = np.sin(acc) * x
        else:
            acc = acc * x * 0.5
    return np.sum(acc ** 2)


FNS = (zeros_first, flag_first, scalar_then_array, data_branch_after)
X = np.array([0.7, -1.3, 0.4])
XS = np.stack([X, -0.5 * X, X[::-1]])


def _twin(fn: Any) -> Any:
    import inspect
    ns: dict[str, Any] = {"np": jnp, "Any": Any}
    exec(inspect.getsource(fn), ns)  # noqa: S102
    return ns[fn.__name__]


def _agree(got: Any, want: Any, what: str) -> None:
    corpus_harness.agree(got, want, what, 1e-9, dtypes=False, jax_leaves=False)


@pytest.mark.parametrize("fn", FNS, ids=lambda f: f.__name__)
def test_derivatives_carry_the_last_steps_value(fn: Any) -> None:
    twin = _twin(fn)
    want = jax.grad(twin)(X)
    _agree(corpus_harness.fd_reference(corpus_harness.Case("f", fn, lambda r, d: (X,), ()), "grad(f)", (X,)),
           want, "finite differences vs jax")
    for t in ("grad", "jacfwd", "jacrev"):
        g = getattr(srcjax, t)(fn)
        _agree(g(X), want, f"{t} vs jax")
        _agree(srcjax.numpy_function(g)(X), want, f"{t}'s source run by NumPy")
    _agree(srcjax.hessian(fn)(X), jax.hessian(twin)(X), "hessian vs jax")


@pytest.mark.parametrize("fn", FNS, ids=lambda f: f.__name__)
def test_vmap_batches_it_from_its_first_binding(fn: Any) -> None:
    twin = _twin(fn)
    _agree(srcjax.vmap(fn)(XS), np.array([fn(x) for x in XS]), "vmap vs NumPy")
    _agree(srcjax.vmap(srcjax.grad(fn))(XS), np.stack([jax.grad(twin)(x) for x in XS]), "vmap(grad) vs jax")
