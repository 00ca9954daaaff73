"""A user function's normalized form shared by the programs that read it alike (srcjax/frontend/shared_forms.py):
read once where the text would be the same, read again where a name or a global it read differs."""

from __future__ import annotations

from typing import Any

import numpy as np

import srcjax
from srcjax.frontend import program


def layer(x, w):
    return np.tanh(w @ x) * x


def _inner(x):
    return np.sin(x)


def outer(x):
    return _inner(x) * 2.0


def outer_sum(x):
    return np.sum(outer(x))


def g(x):  # (outer_g's callee; another function named `g` may take that name first)
    return np.cos(x) * 3.0


def outer_g(x):
    return g(x) + 1.0


def _other_g(x):
    return x * 5.0


_other_g.__name__ = "g"  # (a second function named `g`: named `g` in a program that reads it first)


def first_other_then_outer(x):
    return _other_g(x) + outer_g(x)


def _reads_of(monkeypatch: Any) -> list[Any]:
    """The user functions ``program.normalize`` reads from now on (generated ones left out)."""
    read: list[Any] = []
    original = program.normalize

    def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        if not getattr(fn, "__code__", None) or not fn.__code__.co_filename.startswith("<srcjax"):
            read.append(fn)
        return original(fn, *args, **kwargs)

    monkeypatch.setattr(program, "normalize", counted)
    return read


def test_jacrev_reads_its_function_once(monkeypatch: Any) -> None:
    """jacrev's primal: its own program's entry and a helper of the Jacobian's program, normalized once."""
    read = _reads_of(monkeypatch)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(5), rng.standard_normal((5, 5))
    got = np.asarray(srcjax.jacrev(layer)(x, w))
    t = np.tanh(w @ x)
    want = np.diag(t) + (x * (1 - t * t))[:, None] * w
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert read.count(layer) == 1


def test_a_global_rebound_is_read_again(monkeypatch: Any) -> None:
    """A form read before a global it read was rebound is not reused: the new program calls the new function."""
    x = np.linspace(0.1, 1.0, 4)
    np.testing.assert_allclose(np.asarray(srcjax.jit(outer)(x)), np.sin(x) * 2.0, rtol=1e-12)
    monkeypatch.setitem(globals(), "_inner", np.cos)
    read = _reads_of(monkeypatch)
    got = np.asarray(srcjax.grad(outer_sum)(x))
    np.testing.assert_allclose(got, -np.sin(x) * 2.0, rtol=1e-12)
    assert outer in read


def test_a_callee_named_otherwise_is_read_again(monkeypatch: Any) -> None:
    """A program where the form's callee takes another name (``g_1``: a function read first took ``g``) reads
    the function again: the shared text would call the other ``g``."""
    x = np.linspace(0.1, 1.0, 4)
    np.testing.assert_allclose(np.asarray(srcjax.jit(outer_g)(x)), np.cos(x) * 3.0 + 1.0, rtol=1e-12)
    read = _reads_of(monkeypatch)
    got = np.asarray(srcjax.jit(first_other_then_outer)(x))
    np.testing.assert_allclose(got, x * 5.0 + np.cos(x) * 3.0 + 1.0, rtol=1e-12)
    assert outer_g in read
    text = srcjax.source(srcjax.jit(first_other_then_outer))
    assert "def g_1(" in text, text


def test_new_code_is_read_again() -> None:
    """The same function object with new code (``f.__code__ = g.__code__``): read again (a shared form of the
    old text ran the old code)."""
    def f(x):
        return x * 2.0

    def g(x):
        return x * 5.0

    def caller(x):
        return np.sum(f(x))

    x = np.linspace(0.1, 1.0, 3)
    np.testing.assert_allclose(np.asarray(srcjax.jit(f)(x)), x * 2.0)
    f.__code__ = g.__code__
    np.testing.assert_allclose(np.asarray(srcjax.grad(caller)(x)), np.full(3, 5.0))


def test_a_closure_variable_rebound_is_read_again() -> None:
    """A closure variable rebound after another program read the function: a program written after reads the
    new value (was: the first read's, silently; read.read_function's cache kept the closure's values)."""
    x = np.linspace(0.1, 1.0, 3)
    scale = np.sin

    def h(x):
        return scale(x)

    def h_caller(x):
        return np.sum(h(x))

    np.testing.assert_allclose(np.asarray(srcjax.jit(h)(x)), np.sin(x))
    scale = np.cos  # noqa: F841 - (read by h)
    np.testing.assert_allclose(np.asarray(srcjax.grad(h_caller)(x)), -np.sin(x), rtol=1e-12)
