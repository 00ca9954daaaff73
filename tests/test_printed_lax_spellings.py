"""The printed module of a function calling ``srcjax.lax``'s control flow by the user's own spelling
(``from srcjax import lax``, ``import srcjax.lax as L``, ``from srcjax.lax import scan``, ``fori_loop as
fl``) runs by itself: executed under NumPy in an empty namespace, for the function, its ``grad`` and its
``vmap``, it gives what the compiled program gives. It printed ``lax.scan(...)``/``fl(...)`` with no import
of ``lax``/``fl`` (and ``vmap`` of a bare ``scan(...)`` failed inside srcjax: an IndexError)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as onp
import pytest

import srcjax
import srcjax.lax as L
from srcjax import lax
from srcjax.lax import cond, scan
from srcjax.lax import fori_loop as fl


def by_module(x):
    def body(c, xi):
        return c + xi, c * xi
    c, ys = lax.scan(body, 0.0, x)
    return c + onp.sum(ys)


def by_module_alias(x):
    def pos(v):
        return v * 2.0

    def neg(v):
        return onp.sin(v)
    return onp.sum(L.cond(onp.sum(x) > 0, pos, neg, x))


def by_names(x):
    def body(c, xi):
        return c + xi, c * xi
    c, ys = scan(body, 0.0, x)
    s = fl(0, 3, lambda i, a: a * 1.5, c)
    return cond(s > 0, lambda v: v * 2.0, lambda v: v, s) + onp.sum(ys)


def by_alias_loop(x):
    def step(i, a):
        return a * 0.5 + x[i]
    return fl(0, 3, step, 0.0)


FUNCTIONS = [by_module, by_module_alias, by_names, by_alias_loop]
X = onp.array([0.5, -1.25, 2.0])


def _run_alone(text: str, name: str, *args: Any) -> Any:
    ns: dict[str, Any] = {}
    exec(compile(text, "<printed>", "exec"), ns)  # noqa: S102 - the printed module, run by NumPy alone
    return ns[name](*args)


def _check(t: Callable[..., Any], name: str, *args: Any) -> None:
    want = onp.asarray(t(*args))
    for text in (srcjax.source(t), srcjax.source(t, *args)):
        onp.testing.assert_allclose(_run_alone(text, name, *args), want, rtol=1e-12, err_msg=text)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_printed_module_imports_what_it_calls(f: Callable[..., Any]) -> None:
    onp.testing.assert_allclose(srcjax.jit(f)(X), f(X), rtol=1e-12)
    _check(f, f.__name__, X)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_vmap_of_user_spellings(f: Callable[..., Any]) -> None:
    xs = onp.stack([X, X[::-1] * 0.5])
    v = srcjax.vmap(f)
    onp.testing.assert_allclose(v(xs), [f(x) for x in xs], rtol=1e-12)
    _check(v, f"{f.__name__}_vmap", xs)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_grad_of_user_spellings(f: Callable[..., Any]) -> None:
    g = srcjax.grad(f)
    eps = 1e-6
    fd = [(f(X + eps * e) - f(X - eps * e)) / (2 * eps) for e in onp.eye(3)]
    onp.testing.assert_allclose(g(X), fd, rtol=1e-6, atol=1e-8)
    _check(g, f"{f.__name__}_grad", X)
