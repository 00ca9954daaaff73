"""Programs for tests/test_out_of_range_writes.py: writes at an index known only at run time, as JAX code and as
NumPy code (imported from a file: srcjax reads their source)."""

from __future__ import annotations

import numpy as np

import srcjax


def at_set(x, i, v):  # noqa: ANN001, ANN201
    return x.at[i].set(v)


def at_add(x, i, v):  # noqa: ANN001, ANN201
    return x.at[i].add(v)


def at_multiply(x, i, v):  # noqa: ANN001, ANN201
    return x.at[i].multiply(v)


def at_min(x, i, v):  # noqa: ANN001, ANN201
    return x.at[i].min(v)


def at_max(x, i, v):  # noqa: ANN001, ANN201
    return x.at[i].max(v)


def written(x, i, v):  # noqa: ANN001, ANN201
    x = x.copy()
    x[i] = v
    return x


def added(x, i, v):  # noqa: ANN001, ANN201
    x = x.copy()
    x[i] += v
    return x


def row_set(x, i, v):  # noqa: ANN001, ANN201
    return x.at[i, 1:3].set(v)


def strided_set(x, i, v):  # noqa: ANN001, ANN201
    return x.at[i, ::2].set(v)


def in_lambda(x, i, v):  # noqa: ANN001, ANN201
    f = lambda y: y.at[i].add(v)  # noqa: E731
    return f(x)


def window(x, i, v):  # noqa: ANN001, ANN201
    return srcjax.lax.dynamic_update_slice(x, v, (i,))


def squares(form, x, i, v):  # noqa: ANN001, ANN201
    return np.sum(form(x, i, v) ** 2)
