"""Starred assignment targets (``a, *b, c = v``; issue #15): a tuple or list of arrays, or an array along
its leading axis, the starred name bound to a list as Python (and so jax) binds it; under jit, grad and
vmap, against jax and NumPy running the user's function."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

from .twins import JAX, jax_twin

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def unpack_rows(x):
    a, b = x
    first, *rest = list(b)
    return np.sum(a * first) + len(x) + np.sum(np.stack(rest))


def unpack_tuple(x, y):
    t = (x, np.sin(y), x * y, y)
    a, *b, c = t
    return np.sum(a * c) + np.sum(b[0] * b[1]) + len(b)


def unpack_array(x, y):
    *init, last = x
    return np.sum(np.stack(init) * last * y) + len(init)


def unpack_rebinds(x, y):
    rest = [x, 2.0 * y, x * y]
    head, *rest = rest  # (the value is read before the targets are bound)
    return np.sum(head * rest[1]) + np.sum(np.tanh(rest[0])) * len(rest)


def unpack_middle(x, y):
    a, *mid, b = [x[0], y, x[1], np.cos(y)]
    first, *empty = (a,)  # (an empty list)
    return np.sum(first * b) + np.sum(mid[0] * mid[1]) + len(empty)


CASES = [(unpack_rows, ((2, 3, 4),)), (unpack_tuple, ((3,), (3,))), (unpack_array, ((3, 4), (4,))),
         (unpack_rebinds, ((3,), (3,))), (unpack_middle, ((2, 3), (3,)))]


def _args(shapes: tuple[tuple[int, ...], ...], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


@pytest.mark.parametrize(("fn", "shapes"), CASES, ids=[f.__name__ for f, _ in CASES])
def test_starred_targets_under_jit_grad_and_vmap(fn: Any, shapes: Any) -> None:
    """(was "starred assignment targets (a, *b = ...) is not supported")"""
    args = _args(shapes)
    twin = jax_twin(fn)
    np.testing.assert_allclose(srcjax.jit(fn)(*args), fn(*args), rtol=1e-12)
    np.testing.assert_allclose(srcjax.jit(fn)(*args), jax.jit(twin)(*args), rtol=1e-12)
    for k in range(len(args)):
        np.testing.assert_allclose(srcjax.grad(fn, argnums=k)(*args), JAX.grad(twin, argnums=k)(*args), rtol=1e-10)
    batched = [np.stack([a, 1.5 * a - 0.2]) for a in args]
    got = srcjax.vmap(fn)(*batched)
    np.testing.assert_allclose(got, JAX.vmap(twin)(*batched), rtol=1e-12)
    np.testing.assert_allclose(srcjax.numpy_function(srcjax.vmap(fn))(*batched), got, rtol=1e-12)
    g = srcjax.vmap(srcjax.grad(fn))(*batched)
    np.testing.assert_allclose(g, JAX.vmap(jax.grad(twin))(*batched), rtol=1e-10)


def too_few(x):
    a, *b, c = (x,)  # noqa: F841
    return a + c


def unpack_dict(x):
    a, *b = {0: x, 1: 2.0 * x}
    return a


def star_in_loop_target(x):
    for a, *b in [(x, x, x)]:  # noqa: B007
        x = a
    return x


@pytest.mark.parametrize(("fn", "words", "line"), [
    (too_few, "not enough values to unpack (expected at least 2)", "a, *b, c = (x,)"),
    (unpack_dict, "unpacking a dict", "a, *b = {0: x"),  # (Python unpacks its keys: refused, not a silent x)
    (star_in_loop_target, "a starred target inside a nested or loop target", "for a, *b in"),
    # ((a, *b), c = v: unpacked level by level, tests/test_builtins_compose.py)
])
def test_starred_targets_refused_at_the_users_line(fn: Any, words: str, line: str) -> None:
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.jit(fn)(np.ones(3))
    text = str(e.value)
    assert words in text and "test_starred.py:" in text and line in text, text
