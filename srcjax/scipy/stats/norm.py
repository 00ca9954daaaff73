"""``srcjax.scipy.stats.norm``: JAX's ``jax.scipy.stats.norm`` (``logpdf``, ``pdf``, ``cdf``, ``logcdf``,
``ppf``, ``sf``, ``logsf``, ``isf``) of a normal distribution with mean ``loc`` and standard deviation
``scale``, in NumPy terms (transpiled like the user's own helpers: compiled, differentiated, batched)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..special import log_ndtr, ndtr, ndtri

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``-((x - loc) / scale)^2 / 2 - log(scale) - log(2 pi) / 2`` (as JAX writes it:
    ``-(log(2 pi scale^2) + (x - loc)^2 / scale^2) / 2``)."""
    scale_sqrd = np.asarray(scale * scale, dtype=_inexact(x, loc, scale))  # (a Python number's log stays weak)
    return (np.log(6.283185307179586 * scale_sqrd) + (x - loc) * (x - loc) / scale_sqrd) / -2


def _inexact(x: Any, loc: Any, scale: Any) -> Any:
    """The floating dtype JAX computes in (``promote_args_inexact``): NumPy's promotion, Python numbers
    weak, an integer result float64."""
    return np.result_type(x, loc, scale, 1.0)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``exp(logpdf(x, loc, scale))``."""
    return np.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``ndtr((x - loc) / scale)``."""
    return ndtr((x - loc) / scale)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log_ndtr((x - loc) / scale)``: accurate far in the tails."""
    return log_ndtr((x - loc) / scale)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function ``1 - cdf``: ``ndtr(-(x - loc) / scale)``."""
    return ndtr((loc - x) / scale)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(sf(x))``: ``log_ndtr(-(x - loc) / scale)``."""
    return log_ndtr((loc - x) / scale)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile function, the inverse of :func:`cdf`: ``ndtri(q) * scale + loc``, float64 (JAX's
    ``jnp.float_``)."""
    return np.asarray(ndtri(q) * scale + loc, dtype=np.float64)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The inverse of :func:`sf`: ``ppf(1 - q)``."""
    return ppf(1 - q, loc, scale)
