"""Refusals raised in the code srcjax writes (a derivative, a batched copy, a derivative of a derivative) are located
at the user's exact line and column, under every transformation and composition.

Generated lines carry the user's statement they are written from (frontend/provenance.py: vmap's batch writers and
the jvp/grad writers mark them), and a refusal of a sub-expression of a line that the readable form folded from
several statements is carried to the same sub-expression of the user's (frontend/columns.py). Each case names the
snippet the error must point at (its first occurrence in the function's source); ``print``-free, as the user's
NumPy run of each raises too.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import srcjax


def deep_broadcast(x):
    y = np.sin(x)
    z = np.sum(np.cos(y) * 2.0) + np.sum(np.tanh(y) + np.ones(4))
    return z


def deep_matmul(x):
    y = np.sin(x)
    z = np.sum(np.cos(y) * 2.0) + np.sum(np.tanh(y) @ np.ones((4, 2)))
    return z


def deep_reshape(x):
    y = np.sin(x)
    z = np.sum(np.cos(y) * 2.0) * np.sum(np.reshape(y, (2, 2)))
    return z


def deep_index(x):
    y = np.sin(x)
    w = np.cos(y) * 2.0
    z = np.sum(w * w) + np.sum(np.exp(w)[5])
    return z


def eigenvectors(x):
    y = np.sin(x)
    z = np.sum(y * 2.0 + np.real(np.linalg.eig(np.outer(y, y))[1][0]))
    return z


CASES = [(deep_broadcast, "np.tanh(y) + np.ones(4)"), (deep_matmul, "np.tanh(y) @ np.ones((4, 2))"),
         (deep_reshape, "np.reshape(y, (2, 2))"), (deep_index, "np.exp(w)[5]"),
         (eigenvectors, "np.linalg.eig(")]


def _tangent(f: Callable[..., Any]) -> Callable[..., Any]:
    return lambda x: srcjax.jvp(f, (x,), (np.ones_like(x),))[1]


TRANSFORMS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "jit": srcjax.jit, "grad": srcjax.grad, "jit_grad": lambda f: srcjax.jit(srcjax.grad(f)), "jvp": _tangent,
    "jit_jvp": lambda f: srcjax.jit(_tangent(f)), "vmap": srcjax.vmap,
    "jit_vmap_grad": lambda f: srcjax.jit(srcjax.vmap(srcjax.grad(f))), "vmap_jvp": lambda f: srcjax.vmap(_tangent(f)),
    "hessian": srcjax.hessian, "jacfwd": srcjax.jacfwd, "jacrev_grad": lambda f: srcjax.jacrev(srcjax.grad(f))}
X = np.array([1.5, -0.3, 2.0])


def locate(fn: Any, snippet: str) -> tuple[int, int]:
    """(1-based line, 0-based column) of ``snippet``'s first occurrence in ``fn``'s source."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if (col := line.find(snippet)) >= 0:
            return start + i, col
    raise AssertionError(f"{snippet!r} not in {fn.__name__}")


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("fn,snippet", CASES, ids=[c[0].__name__ for c in CASES])
def test_a_refusal_in_generated_code_is_at_the_users_line_and_column(fn, snippet, transform) -> None:
    if fn is eigenvectors and transform in ("jit", "vmap"):
        pytest.skip("eigenvectors are refused in derivatives only")
    with pytest.raises(srcjax.TranspileError) as info:
        TRANSFORMS[transform](fn)(np.stack([X, X + 0.5]) if "vmap" in transform else X)
    e = info.value
    assert e.span is not None and (e.span.filename, e.span.line, e.span.col) == \
        (inspect.getsourcefile(fn), *locate(fn, snippet)), str(e)
    assert "Traceback" not in str(e)
