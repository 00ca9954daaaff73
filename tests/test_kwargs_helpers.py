"""Helpers with ``**kwargs`` (and ``*args``) called with keywords (refuse47).

``def layer(x, **kw): return act(x, **kw)`` was refused ("**kwargs parameters is not supported") under every
transformation, and ``def _apply(fn, *args): return fn(*args)`` under derivatives and vmap ("cannot differentiate
through `fn(...)`": the star copy of the helper kept ``fn`` a parameter). Each call now reads a copy of the helper
per set of keywords (frontend/kwargs_params.py), the keywords passed on by name. Checked against jax running the
same text, under jit, grad, vmap, vmap(grad), hessian and jacfwd(grad); the printed source names the keywords.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import srcjax  # noqa: E402
from tests.twins import jax_twin  # noqa: E402

jax.config.update("jax_enable_x64", True)


def act(x, slope=0.1, scale=1.0):
    return scale * np.where(x > 0, x, slope * x)


def layer(x, **kw):
    return act(x, **kw)


def mix(x, *args, **kw):
    s = kw.get("gain", 1.0)
    return s * act(x, *args) + kw["bias"]


def apply_fn(fn, *args, **kwargs):
    return fn(*args, **kwargs)


def scaled_tanh(x, scale=1.0, shift=0.0):
    return np.tanh(scale * x + shift)


def net(x):
    h = layer(x, slope=0.2, scale=2.0)
    h = layer(np.tanh(h))
    h = mix(h, 0.3, bias=0.5)
    h = mix(h, 0.3, 2.0, bias=0.1, gain=3.0)
    h = apply_fn(scaled_tanh, h, scale=0.5, shift=-0.1)
    return np.sum(h ** 2)


HELPERS = (act, layer, mix, apply_fn, scaled_tanh)
TRANSFORMS: dict[str, Callable[[Any], Callable[..., Any]]] = {
    "jit": lambda m: m.jit(net), "grad": lambda m: m.grad(net), "vmap": lambda m: m.vmap(net),
    "vmap_grad": lambda m: m.vmap(m.grad(net)), "hessian": lambda m: m.hessian(net),
    "jacfwd_grad": lambda m: m.jacfwd(m.grad(net)),
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_kwargs_helpers_match_jax(name: str) -> None:
    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4) if name.startswith("vmap") else np.linspace(-1.0, 1.0, 5)
    want = np.asarray(_jax_transform(name, jax_twin(net, helpers=HELPERS))(x))
    np.testing.assert_allclose(np.asarray(TRANSFORMS[name](srcjax)(x)), want, rtol=1e-12, atol=1e-12)


def _jax_transform(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    return {"jit": jax.jit, "grad": jax.grad, "vmap": jax.vmap, "vmap_grad": lambda f: jax.vmap(jax.grad(f)),
            "hessian": jax.hessian, "jacfwd_grad": lambda f: jax.jacfwd(jax.grad(f))}[name](fn)


def test_kwargs_helper_source_names_the_keywords() -> None:
    text = srcjax.source(srcjax.jit(net))
    assert "def layer(x, *, slope, scale):" in text, text
    assert 'kw = {"slope": slope, "scale": scale}' in text, text
    assert "act(x, slope=slope, scale=scale)" in text, text
    assert "def layer_1(x):" in text and "act(x)" in text, text


def test_kwargs_name_used_in_body_still_refused() -> None:
    # a keyword whose name the helper reads as another value: the parameter would change what the name means
    def scaled(x, **kw):
        shift = 2.0
        return x * kw["shift"] + shift

    def f(x):
        return np.sum(scaled(x, shift=3.0))

    with pytest.raises(srcjax.TranspileError, match=r"\*\*kwargs parameters"):
        srcjax.jit(f)(np.ones(3))
