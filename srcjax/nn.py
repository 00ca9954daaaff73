"""``srcjax.nn``: JAX's ``jax.nn`` activations and normalizations, with its names, signatures and
semantics: ``relu``, ``relu6``, ``sigmoid``, ``log_sigmoid``, ``softplus``, ``soft_sign``, ``silu``/``swish``,
``gelu`` (``approximate=True`` by default), ``elu``, ``leaky_relu``, ``celu``, ``selu``, ``glu``,
``hard_tanh``, ``hard_sigmoid``, ``hard_silu``/``hard_swish``, ``sparse_plus``, ``sparse_sigmoid``,
``squareplus``, ``mish``, ``softmax``/``log_softmax`` (``axis=-1``, ``where=``), ``logsumexp``,
``standardize``, ``one_hot``.

Written in NumPy terms and transpiled like the user's own helpers (``frontend/resolve.LIBRARY_MODULES``):
they compile, differentiate and batch through NumPy's primitives, ``srcjax.source`` shows them imported
from here, and each is its own NumPy reference. JAX's conventions at kinks hold: ``relu'(0) = 0``,
``relu6``'s derivative is 0 at 0 and 6 (JAX's custom rules), ``softmax``/``log_softmax`` shift by their
maximum as a constant of the derivative. ``one_hot`` gives float64 by default (NumPy's default float;
jax's ``jnp.float_``) and zeros for an index outside ``[0, num_classes)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .lax_numpy import logistic, rsqrt
from .lax_special import erfc
from .lax_stop import stop_gradient
from .scipy.special import logsumexp

__all__ = ["celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "identity",
           "leaky_relu", "log_sigmoid", "log_softmax", "logsumexp", "mish", "one_hot", "relu", "relu6", "selu",
           "sigmoid", "silu", "soft_sign", "softmax", "softplus", "sparse_plus", "sparse_sigmoid", "squareplus",
           "standardize", "swish"]

sigmoid = logistic  # (JAX's sigmoid is lax.logistic; generated source shows that)


def identity(x: Any) -> Any:
    """``x`` itself."""
    return x


def relu(x: Any) -> Any:
    """``max(x, 0)``; the derivative at 0 is 0 (JAX's)."""
    return np.where(x <= 0, 0, x)


def relu6(x: Any) -> Any:
    """``min(max(x, 0), 6)``; the derivative is 0 at 0 and at 6 (JAX's)."""
    return np.where(x <= 0, 0.0, np.where(x >= 6, 6.0, x))


def softplus(x: Any) -> Any:
    """``log(1 + exp(x))`` (``np.logaddexp(x, 0)``)."""
    return np.logaddexp(x, 0)


def sparse_plus(x: Any) -> Any:
    """0 below -1, ``x`` above 1, ``(x + 1)^2 / 4`` between."""
    return np.where(x <= -1.0, 0.0, np.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def squareplus(x: Any, b: Any = 4) -> Any:
    """``(x + sqrt(x^2 + b)) / 2``."""
    return (x + np.sqrt(np.square(x) + b)) / 2


def soft_sign(x: Any) -> Any:
    """``x / (|x| + 1)``."""
    return x / (np.abs(x) + 1)


def sparse_sigmoid(x: Any) -> Any:
    """``clip(x + 1, 0, 2) / 2``."""
    return 0.5 * np.clip(x + 1.0, 0.0, 2.0)


def silu(x: Any) -> Any:
    """``x * sigmoid(x)``."""
    return x * logistic(x)


swish = silu


def mish(x: Any) -> Any:
    """``x * tanh(softplus(x))``."""
    return x * np.tanh(softplus(x))


def log_sigmoid(x: Any) -> Any:
    """``log(sigmoid(x))``: ``-softplus(-x)``."""
    return -softplus(-x)


def elu(x: Any, alpha: Any = 1.0) -> Any:
    """``x`` above 0, ``alpha * (exp(x) - 1)`` at and below."""
    return np.where(x > 0, x, alpha * np.expm1(np.where(x > 0, 0.0, x)))


def leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
    """``x`` at and above 0, ``negative_slope * x`` below."""
    return np.where(x >= 0, x, negative_slope * x)


def hard_tanh(x: Any) -> Any:
    """``x`` clipped to ``[-1, 1]`` (derivative 0 outside)."""
    return np.where(x > 1, 1, np.where(x < -1, -1, x))


def celu(x: Any, alpha: Any = 1.0) -> Any:
    """``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``."""
    return np.maximum(x, 0.0) + alpha * np.expm1(np.minimum(x, 0.0) / alpha)


def selu(x: Any) -> Any:
    """``scale * elu(x, alpha)`` with the self-normalizing constants."""
    return 1.0507009873554804934193349852946 * elu(x, 1.6732632423543772848170429916717)


def gelu(x: Any, approximate: bool = True) -> Any:
    """The Gaussian error linear unit: with ``approximate=True`` (JAX's default) the tanh form
    ``x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``, else ``x/2 erfc(-x / sqrt 2)``."""
    if approximate:
        cdf = 0.5 * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * (x ** 3))))
        return x * cdf
    return 0.5 * x * erfc(-x * 0.7071067811865476)


def glu(x: Any, axis: int = -1) -> Any:
    """The gated linear unit: ``x``'s halves along ``axis``, the first times ``sigmoid`` of the second."""
    x1, x2 = np.split(x, 2, axis)
    return x1 * logistic(x2)


def hard_sigmoid(x: Any) -> Any:
    """``relu6(x + 3) / 6``."""
    return relu6(x + 3.0) / 6.0


def hard_silu(x: Any) -> Any:
    """``x * hard_sigmoid(x)``."""
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def softmax(x: Any, axis: Any = -1, where: Any = None) -> Any:
    """``exp(x) / sum(exp(x))`` along ``axis``, shifted by the maximum (a constant of the derivative);
    with ``where``, the elements left out are 0 and take no part."""
    if where is None:
        unnormalized = np.exp(x - stop_gradient(np.max(x, axis=axis, keepdims=True)))
        return unnormalized / np.sum(unnormalized, axis=axis, keepdims=True)
    x_safe = np.where(where, x, -np.inf)
    unnormalized = np.exp(x_safe - stop_gradient(np.max(x_safe, axis=axis, keepdims=True)))
    result = unnormalized / np.sum(np.where(where, unnormalized, 0), axis=axis, keepdims=True)
    return np.where(where, result, 0)


def log_softmax(x: Any, axis: Any = -1, where: Any = None) -> Any:
    """``x - log(sum(exp(x)))`` along ``axis``, shifted by the maximum (a constant of the derivative);
    with ``where``, the elements left out are ``-inf`` and take no part."""
    x_safe = x if where is None else np.where(where, x, -np.inf)
    shifted = x_safe - stop_gradient(np.max(x_safe, axis=axis, keepdims=True))
    e = np.exp(shifted)
    if where is not None:
        e = np.where(where, e, 0)
    result = shifted - np.log(np.sum(e, axis=axis, keepdims=True))
    if where is not None:
        return np.where(where, result, -np.inf)
    return result


def _mean(v: Any, axis: Any, where: Any) -> Any:
    if where is None:
        return np.mean(v, axis=axis, keepdims=True)
    return np.sum(np.where(where, v, 0), axis=axis, keepdims=True) / np.sum(
        np.where(where, np.ones_like(v), 0), axis=axis, keepdims=True)


def standardize(x: Any, axis: Any = -1, mean: Any = None, variance: Any = None, epsilon: Any = 1e-5,
                where: Any = None, *, algorithm: str = "fast") -> Any:
    """``(x - mean) / sqrt(variance + epsilon)`` along ``axis`` (the mean and variance of ``x`` where not
    given; ``algorithm="fast"``, JAX's default: ``mean(x^2) - mean^2`` clipped at 0; ``"stable"``:
    ``mean((x - mean)^2)``)."""
    if mean is None:
        mean = _mean(x, axis, where)
    if variance is None:
        if algorithm == "stable":
            variance = _mean(np.square(x - mean), axis, where)
        else:
            variance = np.maximum(_mean(np.square(x), axis, where) - np.square(mean), 0)
    return (x - mean) * rsqrt(variance + epsilon)


def one_hot(x: Any, num_classes: int, *, dtype: Any = None, axis: int = -1) -> Any:
    """``x``'s integers as one-hot vectors of ``num_classes`` along a new ``axis`` (-1: last); an index
    outside ``[0, num_classes)`` gives zeros. ``dtype``: float64 unless given."""
    ndim = np.ndim(x)
    at = axis if axis >= 0 else axis + ndim + 1
    classes = np.reshape(np.arange(num_classes), (1,) * at + (num_classes,) + (1,) * (ndim - at))
    hot = np.expand_dims(x, at) == classes
    return hot.astype(np.float64 if dtype is None else dtype)
