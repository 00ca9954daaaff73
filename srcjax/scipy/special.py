"""``srcjax.scipy.special``: JAX's ``jax.scipy.special`` functions that models and likelihoods call, with its
names, signatures and semantics: ``logsumexp`` (``b=``, ``keepdims=``, ``return_sign=``, ``where=``),
``gammaln``, ``betaln``, ``digamma``, ``polygamma``, ``erf``, ``erfc``, ``erfinv``, ``expit``, ``logit``,
``xlogy``, ``xlog1py``, ``entr``, ``ndtr``, ``log_ndtr``, ``ndtri`` (``softmax``/``log_softmax``: ``srcjax.nn``).

Written in NumPy terms over ``srcjax.lax``'s special-function primitives (``lgamma``, ``digamma``,
``polygamma``, ``erf``, ``erfc``, ``erf_inv``) and transpiled like the user's own helpers
(``frontend/resolve.LIBRARY_MODULES``): they compile, differentiate and batch through the primitives they
use, ``srcjax.source`` shows them imported from here, and each is its own NumPy reference.

Where JAX's derivatives are custom rules, these give the same values, except where JAX's are not finite:
``xlogy(0, y)``/``xlog1py(0, y)`` with ``y`` outside the logarithm's domain (``y <= 0``, ``inf``) have
the value 0 and a zero derivative (JAX: ``-inf``/NaN), and so ``entr``'s derivative at 0 is 0 (JAX: inf).
``ndtri`` is Newton's method on ``log_ndtr`` from Abramowitz and Stegun's 26.2.23 (JAX: Cephes'
rational approximations): the two agree to a few ulps of float64, tails included.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..lax import digamma, erf, erf_inv, erfc, lgamma, polygamma
from ..lax_numpy import logistic
from ..lax_stop import stop_gradient

__all__ = ["betaln", "digamma", "entr", "erf", "erfc", "erfinv", "expit", "gammaln", "log_ndtr", "logit",
           "logsumexp", "ndtr", "ndtri", "polygamma", "xlog1py", "xlogy"]

# scipy's names for srcjax.lax's functions (generated source shows those: srcjax.lax.lgamma(x))
erfinv = erf_inv
gammaln = lgamma
expit = logistic


def betaln(a: Any, b: Any) -> Any:
    """``log |B(a, b)|``: ``gammaln(a) + gammaln(b) - gammaln(a + b)`` (JAX's is more accurate when ``a`` or
    ``b`` is large: these agree to about 1e-9 relative there)."""
    d = np.result_type(a, b, 1.0)  # (JAX's promote_args_inexact: a Python number takes the array's dtype)
    a, b = np.asarray(a, dtype=d), np.asarray(b, dtype=d)
    return lgamma(a) + lgamma(b) - lgamma(a + b)


def logit(x: Any) -> Any:
    """``log(x / (1 - x))``, the inverse of :func:`expit`."""
    return np.log(x / (1 - x))


def xlogy(x: Any, y: Any) -> Any:
    """``x * log(y)``, 0 where ``x == 0`` (unless ``y`` is NaN); the derivative JAX's custom rule gives
    (``log(y)`` and ``x / y``), except 0 where ``x == 0`` and ``log(y)`` is not finite (JAX: -inf/NaN)."""
    keep = (x != 0) | np.isnan(y) | ((y > 0) & (y < np.inf))  # where x * log(y) is the value
    return np.where(keep, x * np.log(np.where(keep, y, 1)), 0)


def xlog1py(x: Any, y: Any) -> Any:
    """``x * log1p(y)``, 0 where ``x == 0`` (unless ``y`` is NaN); derivatives as :func:`xlogy`'s."""
    keep = (x != 0) | np.isnan(y) | ((y > -1) & (y < np.inf))
    return np.where(keep, x * np.log1p(np.where(keep, y, 0)), 0)


def entr(x: Any) -> Any:
    """The elementwise entropy ``-x log(x)`` (0 at 0, ``-inf`` below 0)."""
    return np.where(x < 0, -np.inf, -xlogy(x, x))


def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False,
              where: Any = None) -> Any:
    """``log(sum(b * exp(a)))`` over ``axis`` without overflow, as JAX's: the maximum it shifts by is a
    constant of the derivative (``stop_gradient``; 0 where it is not finite, so a slice of ``-inf`` gives
    ``-inf``); ``b`` weighs the terms (a negative sum gives NaN, or with ``return_sign=True`` the pair
    ``(log|sum|, sign)``); ``where`` leaves elements out."""
    if where is not None:
        a = np.where(where, a, 0)
    if b is not None:
        a = np.where(b != 0, a, -np.inf)
    masked = a if where is None else np.where(where, a, -np.inf)
    amax = np.max(masked, axis=axis, keepdims=True)
    amax = stop_gradient(np.where(np.isfinite(amax), amax, 0))
    exp_a = np.exp(a - amax)
    if b is not None:
        exp_a = exp_a * b
    if where is not None:
        exp_a = np.where(where, exp_a, 0)
    sumexp = np.sum(exp_a, axis=axis, keepdims=keepdims)
    sign = np.sign(sumexp)
    shift = amax if keepdims else np.squeeze(amax, axis=axis)
    out = np.log(np.abs(sumexp)) + shift
    if return_sign:
        return out, sign
    if b is not None:
        out = np.where(sign < 0, np.nan, out)
    return out


def ndtr(x: Any) -> Any:
    """The standard normal CDF, ``erf``-based near 0 and ``erfc``-based in the tails (JAX's)."""
    w = x * 0.7071067811865476
    z = np.abs(w)
    y = np.where(z < 0.7071067811865476, 1.0 + erf(w), np.where(w > 0, 2.0 - erfc(z), erfc(z)))
    return 0.5 * y


def log_ndtr(x: Any, series_order: int = 3) -> Any:
    """``log(ndtr(x))`` accurate far in both tails (JAX's: ``-ndtr(-x)`` above 8 (float32: 5), an
    asymptotic series of ``series_order`` terms below -20 (float32: -10))."""
    if np.result_type(x) == np.float32:
        lower, upper = -10.0, 5.0
    else:
        lower, upper = -20.0, 8.0
    above = x > upper
    t = ndtr(np.where(above, -x, np.maximum(x, lower)))
    tail = _log_ndtr_lower(np.minimum(x, lower), series_order)
    return np.where(above, -t, np.where(x > lower, np.log(t), tail))


def _log_ndtr_lower(x: Any, series_order: int) -> Any:
    """``log(ndtr(x))`` for ``x`` far below 0: ``-x^2 / 2 - log(-x) - log(2 pi) / 2`` plus the log of
    the asymptotic series ``1 - 1/x^2 + 3/x^4 - 15/x^6 ...``."""
    x_2 = x * x
    log_scale = -0.5 * x_2 - np.log(-x) - 0.9189385332046727
    series = np.ones_like(x)
    x_2n = x_2
    double_factorial = 1
    for n in range(1, series_order + 1):
        double_factorial = double_factorial * (2 * n - 1)
        term = double_factorial / x_2n
        series = series - term if n % 2 else series + term
        x_2n = x_2n * x_2
    return log_scale + np.log(series)


def ndtri(p: Any) -> Any:
    """The inverse of :func:`ndtr` (the standard normal quantile): ``-inf`` at 0, ``inf`` at 1, NaN
    outside ``[0, 1]``. Abramowitz and Stegun's 26.2.23 (4.5e-4) refined by three Newton steps on
    ``log_ndtr`` of the lower tail (``1 - p`` for ``p > 1/2``: exact there)."""
    upper = p > 0.5
    q = np.where(upper, 1 - p, p)
    inside = (q > 0) & (q <= 0.5)
    q_safe = np.where(inside, q, 0.25)
    t = np.sqrt(-2.0 * np.log(q_safe))
    x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))))
    log_q = np.log(q_safe)
    for _ in range(3):
        log_cdf = log_ndtr(x)
        x = x - (log_cdf - log_q) * np.exp(log_cdf + 0.5 * x * x + 0.9189385332046727)
    x = np.where(inside, x, np.where(q == 0, -np.inf, q + np.nan))  # (q's dtype: float32 stays)
    return np.where(upper, -x, x)
