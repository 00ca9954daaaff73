"""Helper functions that corpus programs import from another module.

They read this module's own globals (a constant, an alias of NumPy, another
helper), so the transpiler must resolve each helper's names against the
helper's module, not the caller's.
"""

import math

import numpy as xp

import srcjax

GELU_C = math.sqrt(2.0 / math.pi)
LEAK = 0.1


def gelu(x):
    """tanh approximation of GELU."""
    return 0.5 * x * (1.0 + xp.tanh(GELU_C * (x + 0.044715 * x ** 3)))


def leaky_relu(x, slope=LEAK):
    return xp.where(x > 0, x, slope * x)


def dense(x, w, b, activation="relu"):
    y = x @ w + b
    if activation == "relu":
        return xp.maximum(y, 0.0)
    if activation == "gelu":
        return gelu(y)
    return y


def normalize_rows(x, eps=1e-8):
    return x / (xp.sqrt(xp.sum(x * x, axis=-1, keepdims=True)) + eps)


def cube(x):
    return x * x * x


GAIN = 1.5


def scaled_gelu(x):
    """Reads this module's constant and calls another function of this module (their derivatives
    must be resolved in this module too)."""
    return GAIN * gelu(x) + leaky_relu(x)


# A custom derivative rule defined in another module: its jvp rule reads this module's constant,
# and so does the transpose srcjax generates from it for reverse mode.
TEMPERATURE = 2.0


@srcjax.custom_jvp
def soft_abs(x):
    return TEMPERATURE * xp.log(xp.cosh(x / TEMPERATURE))


@soft_abs.defjvp
def soft_abs_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return soft_abs(x), xp.tanh(x / TEMPERATURE) * t
