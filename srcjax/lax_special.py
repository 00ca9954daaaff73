"""JAX's special functions of ``lax`` (``lgamma``, ``digamma``, ``polygamma``, ``erfc``, ``erf_inv``): the
NumPy references of their primitive records (``primitives/special.py``), re-exported by ``srcjax.lax``.

Each computes elementwise in float64 with the standard library (``math.lgamma``, ``math.erfc``) or a short
series, and returns a floating array's dtype (anything else: float64), as ``srcjax.lax.erf`` does. Compiled,
the records lower to CHLO's ops of the same names (``chlo.lgamma``, ...), as jax's lowering does; these
run the generated source under NumPy and are the tests' reference.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["MATH_ON_ARRAYS", "digamma", "erf_inv", "erfc", "lgamma", "polygamma"]

MATH_ON_ARRAYS = {fn: f"on arrays, use srcjax.scipy.special.{name}(...) (jax.scipy.special.{name}'s)"
                  for fn, name in ((math.lgamma, "gammaln"), (math.erf, "erf"), (math.erfc, "erfc"))}
"""The standard library's special functions, and what takes arrays instead (the hint where compiled code
calls one on an array)."""

# Bernoulli numbers B_2k (k = 1..7): the asymptotic series of digamma and polygamma
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)


def _float_dtype(a: np.ndarray) -> np.dtype:
    return a.dtype if a.dtype.kind == "f" else np.dtype(np.float64)


def _each(fn: Any, x: Any) -> Any:
    """``fn`` (a Python float function) per element of ``x``, in ``x``'s floating dtype."""
    a = np.asarray(x)
    out = np.vectorize(fn, otypes=[np.float64])(a.astype(np.float64))
    return np.asarray(out, dtype=_float_dtype(a))


def _lgamma1(v: float) -> float:
    if math.isnan(v):
        return v
    try:
        return math.lgamma(v)
    except ValueError:  # a pole (0, -1, -2, ...): log|Gamma| is +inf there (XLA's)
        return math.inf


def _is_pole(v: float) -> bool:
    return v <= 0 and math.isfinite(v) and v == math.floor(v)


def _digamma1(v: float) -> float:
    if math.isnan(v) or v == -math.inf:
        return math.nan
    if v == math.inf:
        return math.inf
    if _is_pole(v):
        return math.nan
    acc = 0.0
    if v < 0.5:  # reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
        acc = -math.pi / math.tan(math.pi * v)
        v = 1.0 - v
    while v < 10.0:  # psi(x) = psi(x + 1) - 1 / x
        acc -= 1.0 / v
        v += 1.0
    f = 1.0 / (v * v)
    series = sum(b / (2 * k) * f ** k for k, b in enumerate(_BERNOULLI, 1))
    return acc + math.log(v) - 0.5 / v - series


def _polygamma1(n: float, v: float) -> float:
    if math.isnan(n) or math.isnan(v) or n < 0 or n != math.floor(n):
        return math.nan
    m = int(n)
    if m == 0:
        return _digamma1(v)
    if _is_pole(v):
        return math.inf if m % 2 else math.nan
    if math.isinf(v):  # (XLA's values, which compiled code gives: NaN at +inf, +-inf's sign at -inf)
        return math.inf if v < 0 and m % 2 else math.nan
    sign = 1.0 if m % 2 else -1.0  # (-1)^(m + 1)
    acc = 0.0
    while v < 20.0:  # psi_m(x) = psi_m(x + 1) + (-1)^(m + 1) m! / x^(m + 1)
        power = v ** (m + 1)
        if power == 0.0:  # (|x| ~ 1e-300: the first term overflows, as it does in float64)
            return math.copysign(math.inf, sign * power) if m % 2 == 0 else math.copysign(math.inf, sign)
        acc += 1.0 / power
        v += 1.0
    # psi_m(x) ~ (-1)^(m + 1) [(m - 1)! / x^m + m! / (2 x^(m + 1)) + sum_k B_2k (2k + m - 1)! / ((2k)! x^(2k + m))]
    tail = math.factorial(m - 1) / v ** m + math.factorial(m) / (2 * v ** (m + 1))
    tail += sum(b * math.factorial(2 * k + m - 1) / (math.factorial(2 * k) * v ** (2 * k + m))
                for k, b in enumerate(_BERNOULLI, 1))
    return sign * (math.factorial(m) * acc + tail)


def _erf_inv1(p: float) -> float:
    if math.isnan(p) or abs(p) > 1:
        return math.nan
    if abs(p) == 1:
        return math.copysign(math.inf, p)
    q = abs(p)
    # a first guess (S. Winitzki's closed form, ~2e-3 relative), then Newton's steps on erf, or on erfc
    # near 1 (1 - q is exact there; erf's own values would lose the digits)
    ln = math.log1p(-q * q)
    t = 2 / (math.pi * 0.147) + ln / 2
    y = math.sqrt(math.sqrt(t * t - ln / 0.147) - t)
    for _ in range(4):
        slope = 1.1283791670955126 * math.exp(-y * y)
        if slope == 0.0:
            break
        y -= (math.erf(y) - q) / slope if q < 0.5 else (1.0 - q - math.erfc(y)) / slope
    return math.copysign(y, p)


def lgamma(x: Any) -> Any:
    """JAX's ``lax.lgamma``: ``log |Gamma(x)|`` elementwise (``+inf`` at the poles 0, -1, -2, ...)."""
    return _each(_lgamma1, x)


def digamma(x: Any) -> Any:
    """JAX's ``lax.digamma``: ``psi(x) = d/dx log Gamma(x)`` elementwise (NaN at the poles 0, -1, ...)."""
    return _each(_digamma1, x)


def polygamma(m: Any, x: Any) -> Any:
    """JAX's ``lax.polygamma``: the ``m``-th derivative of ``digamma`` at ``x`` (``m`` a non-negative
    integer value, elementwise with ``x``; NaN for another ``m``), in ``x``'s floating dtype."""
    a = np.asarray(x)
    out = np.vectorize(_polygamma1, otypes=[np.float64])(np.asarray(m, dtype=np.float64), a.astype(np.float64))
    return np.asarray(out, dtype=_float_dtype(a))


def erfc(x: Any) -> Any:
    """JAX's ``lax.erfc``: ``1 - erf(x)`` without the cancellation for large ``x``."""
    return _each(math.erfc, x)


def erf_inv(x: Any) -> Any:
    """JAX's ``lax.erf_inv``: the inverse of ``erf`` on ``[-1, 1]`` (``+-inf`` at ``+-1``, NaN outside)."""
    return _each(_erf_inv1, x)
