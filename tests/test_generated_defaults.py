"""A default of the entry or a helper that names a function or constant of the user's module (hunt24's
``def local_maxima(data, mode=wrap)``): the generated source run by NumPy (``srcjax.numpy_function``) executes the
printed module once per namespace of its functions, and under vmap that includes ``srcjax.batched``'s, where the
``def`` line's ``mode=wrap`` raised ``NameError: name 'wrap' is not defined`` (srcjax's own run was right). Each
namespace now takes only its own functions where a ``def`` line reads a name it lacks (generated.exec_functions)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

SCALE = 3.0


def _wrap(p: int, o: int, n: int) -> int:
    return (p + o) % n


def _rolled_max(data: Any, mode: Any = _wrap, k: float = SCALE) -> Any:
    n = data.shape[0]
    out = data
    for i in range(n):
        out = np.maximum(out, np.roll(data, mode(i, 1, n) - i)) * 1.0
    return out * k


def _helper(x: Any, mode: Any = _wrap, s: Any = (SCALE, 1.0)) -> Any:
    return x[mode(0, 1, x.shape[0])] * s[0] + s[1]


def _calls_helper(x: Any) -> Any:
    return _helper(np.tanh(x)) + np.sum(x)


def _jax_calls_helper(x: Any) -> Any:
    return jnp.tanh(x)[1] * SCALE + 1.0 + jnp.sum(x)


_X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])


def test_a_function_default_of_the_entry_under_vmap_runs_in_numpy() -> None:
    want = np.stack([_rolled_max(r) for r in _X])
    vf = srcjax.vmap(_rolled_max)
    np.testing.assert_allclose(np.asarray(vf(_X)), want, rtol=1e-12)
    np.testing.assert_allclose(srcjax.numpy_function(vf)(_X), want, rtol=1e-12)


@pytest.mark.parametrize("transform", ["vmap", "vmap_grad", "grad"])
def test_a_function_default_of_a_helper_runs_in_numpy(transform: Any) -> None:
    if transform == "grad":
        f, jf, x = srcjax.grad(_calls_helper), jax.grad(_jax_calls_helper), _X[0]
    elif transform == "vmap":
        f, jf, x = srcjax.vmap(_calls_helper), jax.vmap(_jax_calls_helper), _X
    else:
        f, jf, x = srcjax.vmap(srcjax.grad(_calls_helper)), jax.vmap(jax.grad(_jax_calls_helper)), _X
    want = np.asarray(jf(x))
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-12)
    np.testing.assert_allclose(srcjax.numpy_function(f)(x), want, rtol=1e-12)
