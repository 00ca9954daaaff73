"""Programs over containers differentiated by tests/test_containers.py; each has a jax.numpy twin
built from the same source (``np`` bound to jax.numpy)."""

import dataclasses
from typing import NamedTuple

import numpy as np


class Linear(NamedTuple):
    w: np.ndarray
    b: np.ndarray


def dense(p, x):
    return np.tanh(x @ p["w"] + p["b"])


def mlp(params, x):
    for p in params[:-1]:  # a static loop over a Python list
        x = dense(p, x)
    return x @ params[-1]["w"]


def mlp_loss(params, x, y):
    return np.mean((mlp(params, x) - y) ** 2)


def unpack_pair(p, x):
    w, b = p  # tuple unpacking of a container argument
    return np.sum(np.sin(x @ w + b))


def make_dict(w, x):
    return {"a": w * 2.0, "b": np.cos(w) * x}


def dict_from_helper(p, x):
    d = make_dict(p["w"], x)  # a container returned from a helper
    return np.sum(d["a"] * d["b"]) + np.sum(p["w"] * x)


def named_tuple(p, x):
    return np.sum(np.tanh(x @ p.w + p.b) ** 2)


def enumerate_zip(params, xs):
    s = 0.0
    for i, p in enumerate(params):
        s = s + (i + 1.0) * np.sum(p ** 2)
    for a, b in zip(params, xs):
        s = s + np.sum(a * b)
    return s


def dict_loops(d):
    s = 0.0
    for k, v in d.items():
        s = s + np.sum(v ** 3) * len(k)
    for k in d:
        s = s + np.sum(np.sin(d[k]))
    for v in d.values():
        s = s + np.sum(v) ** 2
    return s


def reversed_layers(ws, x):
    for w in reversed(ws):
        x = np.tanh(x @ w)
    return np.sum(x)


def pairs_of_layers(params, x):
    for w, b in params:  # a list of (w, b) pairs
        x = np.tanh(x @ w + b)
    return np.sum(x ** 2)


def nested_unpack(t):
    (a, b), c = t[0], t[1]
    return np.sum(a * b) + np.sum(c["z"] ** 2)


def aliased(p):
    q = p  # two names for one container: their cotangents add up
    return np.sum(q[0] * p[1]) + np.sum(q[1] ** 2)


def int_leaf(p, x):
    return np.sum(p["w"] * x) * p["scale"]  # scale: a Python int, no derivative


def string_leaf(p, x):
    y = x @ p["w"]
    if p["act"] == "relu":  # a string leaf: static, decided while specializing
        return np.sum(np.maximum(y, 0.0) ** 2)
    return np.sum(np.tanh(y))


def none_leaf(p, x):
    if p["b"] is None:
        return np.sum(np.tanh(x @ p["w"]))
    return np.sum(np.tanh(x @ p["w"] + p["b"]))


def slices(params, x):
    first = params[:2][0]
    return np.sum(first * x) + np.sum(params[1:][0] ** 2) + np.sum(params[-1] * params[0])


def tree_sum(t):
    """A recursive helper over any nesting of tuples, lists and dicts of arrays."""
    if isinstance(t, dict):
        s = 0.0
        for k in t:
            s = s + tree_sum(t[k])
        return s
    if isinstance(t, (tuple, list)):
        s = 0.0
        for v in t:
            s = s + tree_sum(v)
        return s
    return np.sum(np.sin(t) * t)


def scaled_loss(params, x, y=None, scale=2.0):
    out = mlp(params, x)
    if y is None:
        return scale * np.mean(out ** 2)
    return scale * np.mean((out - y) ** 2)


def with_aux(params, x):
    h = dense(params[0], x)
    return np.sum(h ** 2), {"h": h, "n": h.shape[0]}


def outputs_tree(p, x):
    h = np.tanh(x @ p["w"])
    return {"h": h, "pair": (np.sum(h), p["w"] * 2.0)}


@dataclasses.dataclass
class Affine:
    w: np.ndarray
    b: np.ndarray
    scale: float = 2.0


def dataclass_loss(p, x):
    return np.sum(np.tanh(x @ p.w + p.b) * p.scale)


def dataclass_loss_split(w, b, scale, x):  # the same, with the fields passed apart (the jax oracle)
    return np.sum(np.tanh(x @ w + b) * scale)
