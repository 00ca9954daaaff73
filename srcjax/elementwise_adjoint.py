"""The derivative helpers of elementwise operations that choose or weigh (JAX's conventions at ties, at
zero and at infinities; records in primitives/elementwise.py).

They are :mod:`srcjax.adjoint` helpers in every respect (generated derivative source imports them from
there, srcjax transpiles them like user code): only the file is separate, to keep each module within the
line budget, as :mod:`srcjax.linalg_adjoint`. So their ``__module__`` is ``srcjax.adjoint`` (set at the
bottom). Plain NumPy with static decisions on dtypes only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .complex_adjoint import abs_complex_share

# -- selection: JAX's tie conventions ----------------------------------------------------------

def max_share(g: Any, a: Any, b: Any) -> Any:
    """The part of ``g`` that flows to ``a`` in ``np.maximum(a, b)``: all of it where ``a > b``,
    half of it where ``a == b`` (JAX splits ties equally), none where ``a < b``. Broadcast shape;
    keeps ``g``'s dtype (no float64 constants)."""
    return np.where(a > b, g, np.where(a == b, 0.5 * g, 0.0))


def abs_share(g: Any, x: Any) -> Any:
    """``g * d|x|/dx`` with JAX's convention at 0: the derivative of ``abs`` is 1 at ``x == 0``.
    A complex ``x``: ``abs_complex_share`` (a complex ``g`` is a tangent, a real one a cotangent)."""
    if np.result_type(x).kind == "c":
        return abs_complex_share(g, x, np.result_type(g).kind == "c")
    return np.where(x >= 0, g, -g)


def clip_share(g: Any, a: Any, a_min: Any, a_max: Any, which: int) -> Any:
    """The part of ``g`` flowing to operand ``which`` (0: a, 1: a_min, 2: a_max) of
    ``np.clip(a, a_min, a_max) == np.minimum(np.maximum(a, a_min), a_max)`` (JAX's
    definition: a value on a bound shares the gradient 0.5/0.5 with that bound)."""
    m = a
    if a_min is not None:
        m = np.maximum(a, a_min)
    if which == 2:
        return max_share(g, m, a_max)
    s = g
    if which == 0 and a_min is not None:
        s = max_share(g, a, a_min)
    if which == 1:
        s = max_share(g, a_min, a)
    if a_max is not None:
        s = max_share(s, a_max, m)
    return s


# -- elementwise --------------------------------------------------------------------------------

def logaddexp_weight(x: Any, out: Any, base: Any) -> Any:
    """``d out / d x`` for ``out = logaddexp(x, y)`` (``base`` 'e') or ``logaddexp2`` (``base`` 2):
    ``exp(x - out)`` (``exp2``), with ``+inf`` read as 0 on both sides as JAX does (so two infinite
    operands give 1, not nan)."""
    d = np.where(x == np.inf, 0.0, x) - np.where(out == np.inf, 0.0, out)
    if base == 2:
        return np.exp2(d)
    return np.exp(d)


def sinc_slope(x: Any, out: Any) -> Any:
    """``d sinc(x) / dx = (cos(pi x) - sinc(x)) / x``, and 0 at ``x == 0`` (JAX)."""
    nz = np.where(x == 0, 1.0, x)
    return np.where(x == 0, 0.0, (np.cos(np.pi * nz) - out) / nz)


ELEMENTWISE_HELPERS = ("max_share", "abs_share", "clip_share", "logaddexp_weight", "sinc_slope")
for _name in ELEMENTWISE_HELPERS:
    globals()[_name].__module__ = "srcjax.adjoint"
