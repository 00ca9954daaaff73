"""``with np.errstate(...):``, ``with np.printoptions(...):`` and ``with warnings.catch_warnings():`` in a compiled
function (frontend/warning_contexts.py): they change only NumPy's warnings and printing, so the body is read as if
unwrapped, under jit, grad and vmap (scipy's logsumexp, hunt25). Any other ``with`` stays refused at its line.
Oracles: NumPy running the user's function, NumPy running the generated source, jax."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def _logsumexp(a: Any) -> Any:
    a_max = np.max(a)
    tmp = np.exp(a - a_max)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.sum(tmp)
        out = np.log(s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = out * 2.0
    with np.printoptions(precision=3): out = out + a_max  # noqa: E701 - (one line: a SimpleStatementSuite)
    return out


def _jax_logsumexp(a: Any) -> Any:
    a_max = jnp.max(a)
    return 2.0 * jnp.log(jnp.sum(jnp.exp(a - a_max))) + a_max


def _nested(a: Any) -> Any:
    y = a
    if a.shape[0] > 1:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.filterwarnings("ignore")
    for _ in range(2):
        with np.errstate(over="ignore"):
            y = np.tanh(y) * 1.5
    return y


def _other_with(a: Any) -> Any:
    with np.errstate(all="ignore") as state:
        a = a + 1.0 + 0.0 * len(str(state))
    return a


def _open_with(a: Any) -> Any:
    with open("x") as fh:  # noqa: F841
        a = a + 1.0
    return a


def _shadowed(a: Any, np: Any) -> Any:  # (`np` is the caller's argument here: never numpy's errstate)
    with np.errstate():
        a = a + 1.0
    return a


_A = np.array([0.5, -1.0, 2.0, 0.25])


def test_errstate_catch_warnings_and_printoptions_read_as_their_bodies() -> None:
    want = _logsumexp(_A)
    np.testing.assert_allclose(np.asarray(srcjax.jit(_logsumexp)(_A)), want, rtol=1e-12)
    np.testing.assert_allclose(float(_jax_logsumexp(_A)), want, rtol=1e-12)
    g = np.asarray(srcjax.grad(_logsumexp)(_A))
    np.testing.assert_allclose(g, np.asarray(jax.grad(_jax_logsumexp)(_A)), rtol=1e-10)
    b = np.stack([_A, 2.0 * _A, -_A])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(_logsumexp)(b)), [_logsumexp(r) for r in b], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(_logsumexp))(b)),
                               np.asarray(jax.vmap(jax.grad(_jax_logsumexp))(b)), rtol=1e-10)
    text = srcjax.source(srcjax.grad(_logsumexp))
    assert "with" not in text and "simplefilter" not in text and "errstate" not in text
    ns: dict[str, Any] = {}
    exec(compile(text, "<grad>", "exec"), ns)  # (the generated source, run by NumPy)
    np.testing.assert_allclose(ns["_logsumexp_grad"](_A), g, rtol=1e-12)


def test_a_with_of_only_warning_filters_and_one_in_a_loop() -> None:
    np.testing.assert_allclose(np.asarray(srcjax.jit(_nested)(_A)), _nested(_A), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.grad(lambda a: np.sum(_nested(a)))(_A)),
                               np.asarray(jax.grad(lambda a: jnp.sum(jnp.tanh(jnp.tanh(a) * 1.5) * 1.5))(_A)),
                               rtol=1e-10)


@pytest.mark.parametrize("fn, line", [(_other_with, "as state"), (_open_with, 'open("x")'),
                                      (_shadowed, "np.errstate()")])
def test_other_context_managers_stay_refused_at_their_line(fn: Any, line: str) -> None:
    args = (_A, np) if fn is _shadowed else (_A,)
    with pytest.raises(srcjax.TranspileError, match="with is not supported") as e:
        srcjax.jit(fn, static_argnums=(1,) if fn is _shadowed else ())(*args)
    assert line in str(e.value) and "test_warning_contexts.py" in str(e.value)
