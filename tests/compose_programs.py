"""Small programs that tests/test_compose_unseen.py transforms in many orders (issue #15: "composes with
everything, in any order"): containers in and out, static arguments, helpers from other modules, custom rules.
Their jax twins are the same source run with ``np`` as jax.numpy (tests/twins.py)."""

from typing import NamedTuple

import numpy as np

from . import unseen_custom as C
from . import unseen_helpers as H


class Layer(NamedTuple):
    w: np.ndarray
    b: np.ndarray


def vec_field(x):
    return np.tanh(x) * np.sum(x ** 2)


def outer_field(x):
    return np.outer(np.sin(x), x)


def dict_out(x):
    return {"u": np.sin(x) * x[0], "v": np.sum(x ** 3)}


def tuple_out(x):
    return np.cos(x) * 2.0, np.sum(np.exp(x) * x)


def pair_field(a, b):
    return np.sin(a) * np.cos(b) + a * b


def layer_apply(p, x):
    return np.tanh(x @ p.w + p.b)


def layer_loss(p, x):
    return np.sum(layer_apply(p, x) ** 2)


def dense_dict(p, x):
    return H.dense(p, x)


def dense_loss(p, x):
    return np.mean(H.softplus(H.dense(p, x)))


def list_params(ps, x):
    h = x
    for w in ps:
        h = np.tanh(h * w)
    return h


def scaled(x, k):
    return np.sin(x) ** k * 2.0


def scaled_sum(x, k):
    return np.sum(np.sin(x) ** k)


def custom_softplus(x):
    return C.softplus(x) * x


def custom_sum(x):
    return np.sum(C.softplus(x) * C.softplus(x * 0.5))


def max_energy(x):
    return np.max(x * np.sin(x)) + np.sum(x ** 2)


def vdot_energy(x):
    return np.vdot(x, np.tanh(x)) * np.vdot(x, x)


def interp_energy(x):
    xp = np.array([-2.0, -0.5, 0.0, 0.7, 2.0])
    fp = np.array([1.0, -1.0, 0.5, 2.0, 0.0])
    return np.sum(np.interp(x, xp, fp) * x ** 2)


def relu_energy(x):
    return np.sum(np.where(x > 0, x, 0) ** 3) + np.sum(np.maximum(x, 0.0) * x)


def masked_fill(x):
    y = np.where(x > 0.1, x ** 2, 0.0)
    return np.sum(y * np.sin(x))


def reshape_by_loop(x):
    shape = ()
    for d in x.shape:
        shape = shape + (d,)
    y = np.reshape(x, shape[::-1])
    return np.sum(np.sin(y) * np.arange(y.size).reshape(shape[::-1]))


def diff_prepend(x):
    return np.diff(x ** 2, prepend=0.0) * np.sin(x)


def diff_both_ends(x):
    return np.diff(np.tanh(x), prepend=np.zeros(1), append=x[-1:] * 2.0)
