"""Programs written like user code for tests/test_vmap_unseen_more.py: vmap composed with derivatives
over control flow on batched data (their jax twins: the same source run with ``np`` as jax.numpy)."""

import numpy as np

from .unseen_programs import while_on_index  # noqa: F401  (one definition: test_vmap_unseen uses it too)


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


def rnn_dict(params, xs):
    h = np.zeros(params["wh"].shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(params["wh"] @ h + params["wx"] @ xs[t] + params["b"])
    return h


def solve_mix(a, b):
    m = a + 4.0 * np.eye(a.shape[0])
    return np.linalg.solve(m, b) * np.sum(b)


def pair_energy(x, w):
    return np.sum(np.tanh(x * w) ** 2) * np.sum(w) + np.sum(x[:-1] * x[1:])


def two_outputs(a, b):
    return {"s": np.sum(a * b), "p": a * np.exp(b)}


def top_k_values(x, k):
    idx = np.argsort(x, axis=-1)[..., -k:]
    return np.take_along_axis(x, idx, axis=-1)


def diff_energy(x):
    return np.diff(x) ** 2 + np.pad(np.diff(x, n=2), (1, 0)) * x[1:]


def gather_in_loop(x, rows):
    key = ()
    for k in range(x.ndim):
        key = key + ((rows + k) % x.shape[k],)
    return x[key] * 2.0


def even_steps(x, n):
    if n == 0:
        return np.sum(x)
    return odd_steps(np.sin(x) * 1.5, n - 1)


def odd_steps(x, n):
    if n == 0:
        return np.sum(x ** 2)
    return even_steps(x * np.cos(x), n - 1)


