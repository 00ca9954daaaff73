"""Programs written like user code for tests/test_vmap_unseen_more.py: vmap composed with derivatives
over control flow on batched data (their jax twins: the same source run with ``np`` as jax.numpy)."""

import numpy as np


def counted_le(x, n):
    i = 1
    while i <= n and np.sum(x) < 100.0:
        x = x * 1.5
        i = i + 1
    return np.sum(x)


def count_up(x, n):
    i = 2
    acc = 0.0
    while i < n:
        acc = acc + np.sin(x[i]) * i
        i += 2
    return acc
