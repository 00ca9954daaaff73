"""`lst.pop()` with its item unused, under derivatives (session 46): reverse mode gave the item taken out a
`None` cotangent, which a later read of that place or the append that made it added (`v_bar + None`: a
TypeError shown as an internal or a static-value error at the list's line). The statement is now read as
`lst = lst[:-1]` in the user's code (frontend/list_methods.py), as `lst.pop(0)` already was; `v = lst.pop()`
runs as it is. Checked against jax, the user's function run by NumPy, and finite differences."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest

import srcjax

from .twins import jax_twin

jax.config.update("jax_enable_x64", True)


def read_last_then_pop(w):
    lst = [w, 2 * w]
    x = lst[-1]
    lst.pop()
    return np.sum(x * lst[0])


def window_in_loop(w):
    lst = [w]
    for _ in range(3):
        lst.append(np.sin(lst[-1]) * 1.5)
        y = lst[-1]
        if len(lst) > 2:
            lst.pop()
        w = w + y
    return np.sum(w * lst[0])


def momentum_history(w):
    vel_hist = []
    v = np.zeros_like(w)
    for _ in range(4):
        g = np.tanh(w) + 0.2 * w
        v = 0.8 * v + g
        vel_hist.insert(0, v)
        if len(vel_hist) > 2:
            vel_hist.pop()
        w = w - 0.1 * (vel_hist[0] + 0.5 * vel_hist[-1])
    return np.sum(w ** 2)


def popped_item_bound(w):
    lst = [w]
    for _ in range(3):
        lst.append(np.sin(lst[-1]) * 1.5)
        y = lst.pop()
        w = w + y
    return np.sum(w * lst[0])


def stack_of_pops(w):
    st = [w, w * w, np.cos(w)]
    st.pop()
    st.append(st[-1] * 3.0)
    st.pop()
    st.pop()
    return np.sum(st[-1] ** 3) + len(st)


PROGRAMS = [read_last_then_pop, window_in_loop, momentum_history, popped_item_bound, stack_of_pops]


def fd_grad(f: Callable[..., Any], w: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    out = np.zeros_like(w)
    for i in range(w.size):
        e = np.zeros_like(w)
        e.flat[i] = eps
        out.flat[i] = (f(w + e) - f(w - e)) / (2 * eps)
    return out


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_pop_of_an_unused_item_under_derivatives_agrees_with_jax(fn: Callable[..., Any]) -> None:
    w = np.linspace(-1.0, 1.0, 4)
    twin = jax_twin(fn)
    np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(w)), fn(w), rtol=1e-12)
    g = np.asarray(srcjax.grad(fn)(w))
    np.testing.assert_allclose(g, np.asarray(jax.grad(twin)(w)), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(g, fd_grad(fn, w), rtol=1e-5, atol=1e-7)
    t = np.cos(np.arange(4.0))
    _, dy = srcjax.jvp(fn, (w,), (t,))
    np.testing.assert_allclose(np.asarray(dy), g @ t, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.hessian(fn)(w)), np.asarray(jax.hessian(twin)(w)),
                               rtol=1e-8, atol=1e-10)


def test_the_pop_reads_as_a_slice_in_the_printed_gradient() -> None:
    text = srcjax.source(srcjax.grad(read_last_then_pop))
    assert "lst[:-1]" in text, text
