"""A builtin passed to a helper as a function argument (``_apply(print, x)``, ``_red(len, x)``) is bound
like a user function (frontend/bound_helpers.py): calls through the parameter are calls of the builtin.
They were refused with "name 'act' is not defined" at the helper's line."""

from __future__ import annotations

import numpy as np
import pytest

import srcjax


def _apply(act, x):
    act("s", np.sum(x))
    return x * 2.0


def printing(x):
    return np.sum(_apply(print, x))


def _red(fn, x):
    return fn(x) * 2.0


def _pick(fn, a, b, x):
    return x * fn(a, b)


def reducing(x):
    return np.sum(_red(len, x) + _red(sum, x) + _pick(max, 2, 3, x) + _pick(min, 2, 3, x))


def absolute(x):
    return np.sum(_red(abs, x) + x)


X = np.array([0.5, -1.25, 2.0])


def test_print_passed_to_a_helper(capsys: pytest.CaptureFixture[str]) -> None:
    assert float(srcjax.compile(printing)(X)) == printing(X)
    assert float(srcjax.jit(printing)(X)) == printing(X)
    np.testing.assert_allclose(srcjax.grad(printing)(X), np.full(3, 2.0))
    out = capsys.readouterr().out
    assert out.count("s 1.25") >= 4, out  # (NumPy's, compile's, jit's and grad's prints)
    assert "print(" in srcjax.source(printing)


@pytest.mark.parametrize("f", [reducing, absolute], ids=lambda f: f.__name__)
def test_builtins_passed_to_a_helper(f) -> None:
    np.testing.assert_allclose(srcjax.jit(f)(X), f(X), rtol=1e-12)
    np.testing.assert_allclose(srcjax.compile(f)(X), f(X), rtol=1e-12)


def test_grad_of_builtins_passed_to_a_helper() -> None:
    # d/dx sum(3 * len(x) * 2 + 2 * sum(x) + 3x + 2x) = 2 * 3 + 5
    np.testing.assert_allclose(srcjax.grad(reducing)(X), np.full(3, 11.0))


def test_vmap_of_builtins_passed_to_a_helper() -> None:
    xs = np.stack([X, X[::-1] * 2.0])
    for f in (printing, reducing, absolute):
        np.testing.assert_allclose(srcjax.vmap(f)(xs), [f(x) for x in xs], rtol=1e-12)
    np.testing.assert_allclose(srcjax.vmap(srcjax.grad(reducing))(xs), np.full((2, 3), 11.0))
