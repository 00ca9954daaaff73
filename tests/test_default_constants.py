"""A float parameter a call leaves at its default is a constant of the program where its value is needed
(``math.lgamma(df)``), as in JAX, which traces no default; one the call passes stays data (JAX's error
there). Was: "lgamma() needs values known at transpile time" (only Python ints were made static)."""

from __future__ import annotations

import importlib
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import srcjax


def student(x, df=4.0):
    return x * math.lgamma(df)


def smooth(x, df=4.0, scale=0.5):
    return np.sum(np.sin(x) * math.lgamma(df) * scale)


def scaled(x, s=2.5):
    return x * s


X = np.array([0.5, -1.25, 2.0])


def test_default_float_is_a_constant_on_every_call_path() -> None:
    f = srcjax.jit(student)
    for _ in range(6):  # (the Python path, then the dispatchers' paths filling the default)
        np.testing.assert_allclose(f(X), student(X), rtol=1e-12)
    g = srcjax.jit(smooth)
    for _ in range(3):
        np.testing.assert_allclose(g(X), smooth(X), rtol=1e-12)
        np.testing.assert_allclose(g(X, scale=2.0), smooth(X, scale=2.0), rtol=1e-12)


def test_passed_float_stays_data() -> None:
    f = srcjax.jit(student)
    np.testing.assert_allclose(f(X), student(X), rtol=1e-12)
    with pytest.raises(srcjax.TranspileError, match="lgamma"):
        f(X, 5.0)  # (traced, as jax traces it)
    np.testing.assert_allclose(f(X), student(X), rtol=1e-12)
    h = srcjax.jit(scaled)
    np.testing.assert_allclose(h(X), scaled(X))
    np.testing.assert_allclose(h(X, 3.0), scaled(X, 3.0))
    assert "s" not in h.auto_static  # (a default that needs no value stays data: one program for both)


def test_grad_and_vmap_of_a_default_constant() -> None:
    np.testing.assert_allclose(srcjax.grad(smooth)(X), np.cos(X) * math.lgamma(4.0) * 0.5, rtol=1e-12)
    np.testing.assert_allclose(srcjax.jit(srcjax.grad(smooth))(X), np.cos(X) * math.lgamma(4.0) * 0.5, rtol=1e-12)
    xs = np.stack([X, X * 2.0])
    np.testing.assert_allclose(srcjax.vmap(student)(xs), xs * math.lgamma(4.0), rtol=1e-12)


def test_an_edited_default_is_not_served_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mod = tmp_path / "edited_default_mod.py"
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # (no .pyc of the first text served after the edit)
    text = "import math\n\n\ndef f(x, df={}):\n    return x * math.lgamma(df)\n"
    mod.write_text(text.format("4.0"))
    m = importlib.import_module("edited_default_mod")
    try:
        np.testing.assert_allclose(srcjax.jit(m.f)(X), X * math.lgamma(4.0), rtol=1e-12)
        mod.write_text(text.format("7.0"))
        importlib.invalidate_caches()
        m = importlib.reload(m)
        np.testing.assert_allclose(srcjax.jit(m.f)(X), X * math.lgamma(7.0), rtol=1e-12)
    finally:
        sys.modules.pop("edited_default_mod", None)
