"""The registry of the NumPy coverage sweep (benchmarks/numpy_coverage.py); the programs are in
coverage_programs.py and coverage_programs_more.py (small realistic scientific and ML functions).

Each ``@program(category, args)`` is one function a scientist or an ML engineer would write, using
one or two NumPy features, with a builder of its arguments from a ``numpy.random.Generator``. The
functions are plain NumPy (the user's code run by NumPy is the reference) and use only ``np``,
``math`` and ``lax`` (``srcjax.lax``; rebound to ``jax.lax`` when the same source text runs under
jax), so their source text also runs with ``np`` bound to ``jax.numpy``.

``diff``: the positions of the arguments to differentiate (default: every float64 array argument;
``()`` where the result is not a differentiable function of them, e.g. an index or a count).
Arguments that are Python ints, strings or tuples are static (``jax.jit``'s ``static_argnums``).
Nothing here is copied from tests/corpus_programs.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Program:
    name: str
    category: str
    fn: Callable[..., Any]
    args: Callable[[np.random.Generator], tuple[Any, ...]]
    diff: tuple[int, ...] | None = None
    rtol: float = 1e-6
    atol: float = 1e-9


PROGRAMS: list[Program] = []


def program(category: str, args: Callable[[np.random.Generator], tuple[Any, ...]],
            diff: tuple[int, ...] | None = None, rtol: float = 1e-6, atol: float = 1e-9):
    def register(fn):
        PROGRAMS.append(Program(fn.__name__, category, fn, args, diff, rtol, atol))
        return fn

    return register


# -- argument builders ---------------------------------------------------------------
def f(r, *shape):
    return r.standard_normal(shape)


def pos(r, *shape):
    return r.random(shape) + 0.5


def spd(r, n, batch=()):
    a = r.standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def sorted_unique(r, n):
    return np.sort(r.random(n) * 10) + np.arange(n) * 1e-3


def stochastic(r, n):
    p = r.random((n, n)) + 0.1
    return p / p.sum(axis=1, keepdims=True)
