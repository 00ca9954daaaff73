"""eval_shape's result kept per signature of arrays (a Compiled's ``_shapes``): asked again, no new
specialization; a global it read rebound since, or a Python scalar argument, specialized again."""

from __future__ import annotations

from typing import Any

import numpy as np

import srcjax
from srcjax.lower import specialize

SHIFT = np.ones(3)


def shifted(x):
    return x + SHIFT


def layer(x, w):
    return np.tanh(w @ x) * x


def tiled(x, n):
    return np.zeros(n) + np.sum(x)


def _lowered(monkeypatch: Any) -> list[str]:
    """The entry functions specialized from now on."""
    names: list[str] = []
    original = specialize.Specializer.lower

    def counted(self: Any, specs: Any) -> Any:
        names.append(self.program.entry.name)
        return original(self, specs)

    monkeypatch.setattr(specialize.Specializer, "lower", counted)
    return names


def test_jacrev_specializes_its_function_once(monkeypatch: Any) -> None:
    """jacrev's first call asks its function's output twice (its dtype, its structure): specialized once."""
    lowered = _lowered(monkeypatch)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(4), rng.standard_normal((4, 4))
    got = np.asarray(srcjax.jacrev(layer)(x, w))
    t = np.tanh(w @ x)
    np.testing.assert_allclose(got, np.diag(t) + (x * (1 - t * t))[:, None] * w, rtol=1e-12, atol=1e-12)
    assert lowered.count("layer") == 1, lowered


def test_a_global_rebound_is_specialized_again(monkeypatch: Any) -> None:
    x = np.zeros(3)
    assert srcjax.eval_shape(shifted, x).shape == (3,)
    assert srcjax.eval_shape(shifted, x).shape == (3,)
    monkeypatch.setitem(globals(), "SHIFT", np.ones((2, 3)))
    assert srcjax.eval_shape(shifted, x).shape == (2, 3)


def test_a_python_scalar_is_not_kept() -> None:
    """A Python int's value may set the output's shape: each call asks again."""
    x = np.ones(2)
    assert srcjax.eval_shape(tiled, x, 3).shape == (3,)
    assert srcjax.eval_shape(tiled, x, 5).shape == (5,)


def test_kept_static_leaves_are_the_callers_own() -> None:
    out = srcjax.eval_shape(shifted, np.zeros(3))
    again = srcjax.eval_shape(shifted, np.zeros(3))
    assert out is not again and out.shape == again.shape and out.dtype == again.dtype
