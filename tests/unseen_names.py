"""User functions and variables with the names of srcjax's own helpers (test_ad_unseen.py).

Generated derivative code calls ``ones_like``, ``unbroadcast``, ``is_float``, ... by their bare names, and
``unbroadcast``, ``expand_reduced``, ``index_add``, ``broadcast_like`` and ``index_cleared`` are also the
names of primitives: a user's function or local variable of such a name must not be taken for them.
"""

import numpy as np


def zeros_like(x):
    return x * 0.0 + 1.0


def ones_like(x):
    return x * 2.0


def unbroadcast(g, x):  # the primitive's arity: was silently run as the primitive
    return g * x + 1.0


def expand_reduced(x):
    return np.sin(x) + x


def index_add(x):
    return x * x


def broadcast_like(x):
    return np.cos(x)


def index_cleared(x):
    return x - 0.5


def is_float(x):
    return x + 3.0


def zero_leaf(x):
    return x * 0.5


def helpers_named_like_srcjax(x):
    a = zeros_like(x) * ones_like(x) + unbroadcast(x, np.tanh(x))
    b = expand_reduced(x) * index_add(x) - broadcast_like(x) * index_cleared(x)
    return np.sum(a * b * is_float(x) + zero_leaf(x) ** 2)


def tree_with_helper_names(p):
    return np.sum(zeros_like(p["w"]) * np.sin(p["w"]) * p["w"]) + np.sum(unbroadcast(p["w"], p["w"]))


def locals_named_like_srcjax(x):
    ones_like = x * 2.0
    unbroadcast = np.sin(ones_like)
    zeros_like = unbroadcast * x
    is_float = np.sum(zeros_like)
    expand_reduced = is_float * 2.0 + np.sum(x ** 3)
    return expand_reduced


def loop_locals_named_like_srcjax(x):
    index_add = x
    for i in range(3):
        reduce_axes = np.tanh(index_add) * x
        index_add = reduce_axes + 0.1 * i
    return np.sum(index_add ** 2)


def parameter_named_like_srcjax(x, ones_like):
    return np.sum(x * ones_like)
