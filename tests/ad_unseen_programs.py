"""Realistic NumPy programs srcjax's own tests did not cover (test_ad_unseen.py): rebinding and
augmented assignment in loops, early returns, whiles and breaks on data, kinks, reductions with axes,
linalg, sorting, cumsum, einsum, size-1 and 0-d broadcasting, mixed dtypes, integer and boolean data.

Each is checked against jax (the same source with ``np`` as jax.numpy), except those in
:data:`IN_PLACE` (``y[i] = v``, which jax.numpy cannot run: checked by finite differences).
"""

import numpy as np

SCALE = 0.5
W0 = np.array([0.3, -0.2, 0.1])


def rebind_loop(x):
    y = x
    e = np.exp(-x)
    for _ in range(3):
        y = e * y
        y = y + np.sin(y)
    return np.sum(y)


def aug_in_loop(x):
    acc = np.zeros_like(x)
    for i in range(4):
        acc += x ** 2 * (i + 1)
        acc *= 0.5
    return np.sum(acc * x)


def early_return_data(x):
    s = np.sum(x)
    if s > 0:
        return np.sum(x ** 3)
    return np.sum(np.cos(x))


def early_return_loop(x):
    y = x
    for _ in range(5):
        y = np.tanh(y * 1.3)
        if np.max(y) > 0.9:
            break
    return np.sum(y * x)


def while_data(x):
    y = x
    k = 0
    while np.sum(y ** 2) > 0.1 and k < 10:
        y = y * 0.7 + 0.01 * np.sin(y)
        k += 1
    return np.sum(y * x)


def continue_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        s = s + x[i] ** 2 * np.cos(x[i])
    return s


def kinks(x):
    a = np.where(x > 0.1, x ** 2, -x)
    b = np.clip(x, -0.5, 0.5)
    c = np.maximum(x, 0.2 * x)
    d = np.minimum(np.abs(x), 0.3)
    return np.sum(a * b + c * d)


def reductions_axes(x):
    m = x.reshape(2, 3)
    a = np.mean(m, axis=0, keepdims=True)
    b = np.max(m, axis=1, keepdims=True)
    c = np.sum(m * a - b, axis=-1)
    return np.prod(c + 3.0) + np.var(m) + np.std(m, axis=0).sum()


def logsumexp_like(x):
    m = x.reshape(2, 3)
    mx = np.max(m, axis=1, keepdims=True)
    lse = mx[:, 0] + np.log(np.sum(np.exp(m - mx), axis=1))
    return np.sum(lse ** 2)


def linalg_prog(x):
    a = x.reshape(2, 3)
    g = a @ a.T + np.eye(2)
    inv = np.linalg.inv(g)
    sol = np.linalg.solve(g, a[:, 0])
    return np.sum(inv) + np.sum(sol ** 2) + np.log(np.linalg.det(g))


def sort_cumsum(x):
    s = np.sort(x)
    c = np.cumsum(s * np.arange(1, x.shape[0] + 1))
    return np.sum(c * s) + np.cumprod(x[:3] + 1.0)[-1]


def einsum_prog(x):
    a = x.reshape(2, 3)
    b = np.einsum("ij,kj->ik", a, a)
    c = np.einsum("ij,j->i", a, W0)
    return np.einsum("ii->", b) + np.sum(c ** 2) + np.einsum("ij,ij->", a, a)


def size1_broadcast(x):
    a = x.reshape(1, 6)
    b = x.reshape(6, 1)
    c = a * b
    d = np.sum(c, axis=0, keepdims=True) * x[None, :]
    return np.sum(d) + np.sum(c[0:1, :] * SCALE)


def zero_d(x):
    s = np.sum(x)
    z = np.asarray(s) * np.float64(2.0)
    t = np.tanh(z) + x[2]
    return t * t + np.exp(x[0])


def mixed_dtype(x):
    x32 = x.astype(np.float32)
    d = np.arange(6) * 0.5
    y = x32 * d
    z = y.astype(np.float64) + x ** 2
    return np.sum(z)


def int_data(x):
    idx = np.array([2, 0, 1, 1])
    g = x[idx]
    k = np.argmax(x)
    return np.sum(g * g) + x[k] * 3.0


def bool_mask(x):
    m = x > 0
    y = np.where(m, x, 0.0)
    cnt = np.sum(m)
    return np.sum(y ** 2) / (cnt + 1.0) + np.sum(x * m)


def helpers_closure(x):
    k = 2.0

    def inner(v):
        return np.sin(v * k) + SCALE * v

    sq = lambda v: v * v
    return np.sum(sq(inner(x)))


def nested_branches(x):
    s = np.sum(x)
    if s > 0:
        if x[0] > 0:
            y = x * s
        else:
            y = x - s
    else:
        y = np.sin(x)
    return np.sum(y * y)


def loop_branch_rebind(x):
    y = x
    for _ in range(3):
        if np.sum(y) > 0.5:
            y = y * 0.9 - 0.1
        else:
            y = y + np.tanh(y)
        y = y * x
    return np.sum(y)


def fori_static_dyn(x):
    y = x
    n = 0
    for v in x:
        y = y + v * np.cos(y)
        n += 1
    return np.sum(y) / n


def norm_prog(x):
    a = x.reshape(2, 3)
    n1 = np.linalg.norm(a, axis=1)
    n2 = np.linalg.norm(x)
    return np.sum(n1 * n2) + np.sqrt(np.sum(a ** 2) + 1.0)


def power_ops(x):
    y = np.abs(x) + 0.5
    return np.sum(y ** x + x ** 2 / y - np.log1p(y) + np.expm1(x) + np.arctan2(x, y))


def concat_stack(x):
    a = np.concatenate([x[:2], x[3:] * 2.0, x[2:3] ** 2])
    b = np.stack([x, a], axis=1)
    c = np.hstack([b[:, 0], b[:, 1] ** 2])
    return np.sum(c * np.roll(c, 1)) + np.sum(np.flip(a) * x)


def triangle(x):
    a = np.outer(x[:3], x[3:])
    return np.sum(np.tril(a) ** 2) + np.trace(a) + np.sum(np.triu(a, 1) * 2)


def take_along(x):
    a = x.reshape(2, 3)
    order = np.argsort(a, axis=1)
    s = np.take_along_axis(a, order, axis=1)
    return np.sum(s * np.array([1.0, 2.0, 3.0]))


def swap_rebind(x):
    a, b = x[:3], x[3:]
    for _ in range(3):
        a, b = b * 0.5, a + np.sin(b)
    return np.sum(a * b)


def while_newton(x):
    y = np.ones_like(x)
    i = 0
    while i < 6:
        y = y - (y * y - (x * x + 1.0)) / (2.0 * y)
        i += 1
    return np.sum(y)


def empty_slice(x):
    e = x[4:2]
    return np.sum(x ** 2) + np.sum(e) + np.prod(e)


def keepdims_all(x):
    a = x.reshape(3, 2)
    m = np.mean(a, keepdims=True)
    return np.sum((a - m) ** 2 * a)


def bool_index_where(x):
    m = x > 0
    return np.sum(np.where(m, np.log(np.abs(x) + 1.0), x ** 3))


def int_power_loop(x):
    p = 1.0
    for k in range(1, 4):
        p = p * (x ** k).sum()
    return p


def softmax_xent(x):
    z = x.reshape(2, 3)
    z = z - np.max(z, axis=-1, keepdims=True)
    p = np.exp(z) / np.sum(np.exp(z), axis=-1, keepdims=True)
    labels = np.array([2, 0])
    return -np.mean(np.log(p[np.arange(2), labels]))


def scalar_loop_accum(x):
    tot = 0.0
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i]
        tot += d * d * (1.0 + x[i] ** 2)
    return tot


def cumsum_axis(x):
    a = x.reshape(2, 3)
    c = np.cumsum(a, axis=1)
    d = np.cumsum(a[::-1], axis=0)
    return np.sum(c * d) + np.sum(np.diff(x) ** 2)


def sort_median(x):
    s = np.sort(x.reshape(2, 3), axis=1)
    return np.sum(s[:, 1] ** 2) + np.median(x) * 2.0 + np.max(x) * np.min(x)


def poly_horner(x):
    coeffs = [1.0, -2.0, 0.5, 3.0]
    y = np.zeros_like(x)
    for c in coeffs:
        y = y * x + c
    return np.sum(y)


def tuple_return_unpack(x):
    def stats(v):
        return np.mean(v), np.var(v)
    m, var = stats(x)
    return m * var + m ** 2


def mixed_int_float(x):
    n = x.shape[0]
    i = np.arange(n)
    w = (i % 2 == 0)
    return np.sum(x * i) + np.sum(x[w] ** 2) + float(n) * np.mean(x)


def nested_while_for(x):
    y = x
    for j in range(2):
        k = 0
        while k < 3 and np.sum(y) > -5.0:
            y = y * 0.9 + j * 0.1
            k += 1
    return np.sum(y ** 2)


def kink_abs_sign(x):
    return np.sum(np.abs(x) * np.sign(x) + np.abs(x - 0.1) ** 3)


def float32_params(x):
    w = x.astype(np.float32)
    data = np.linspace(0.0, 1.0, 6)
    out = np.tanh(w * data)
    return np.sum(out)


def std_var_ddof(x):
    return np.var(x, ddof=1) + np.std(x[:4], ddof=1) ** 3


def sum_of_list(x):
    parts = [x[i] * (i + 1) for i in range(6)]
    return sum(parts) ** 2 + np.sum(np.array(parts) ** 2)


def expm_like(x):
    a = x.reshape(2, 3)
    m = a @ a.T * 0.1
    term = np.eye(2)
    acc = np.eye(2)
    for k in range(1, 6):
        term = term @ m / k
        acc = acc + term
    return np.sum(acc)


def inplace_index(x):
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] = x[i] * x[(i + 1) % x.shape[0]]
    y[0] += x[1] ** 3
    return np.sum(y ** 2)


def argnum_like(x):
    y = x.copy()
    y[1:3] = y[1:3] * 2.0
    y[::2] += np.sin(x[::2])
    return np.sum(y * y)


def neg_index_update(x):
    y = np.ones(6)
    y[-1] = x[0] * x[1]
    y[-2:] *= x[-2:]
    return np.sum(y * x)


def reversed_loop_index(x):
    y = np.zeros_like(x)
    y[-1] = x[-1]
    for i in range(x.shape[0] - 2, -1, -1):
        y[i] = x[i] + 0.5 * y[i + 1] ** 2
    return np.sum(y)


def tensordot_kron(x):
    a = x.reshape(2, 3)
    t = np.tensordot(a, a, axes=([1], [1]))
    k = np.kron(a[:, :2], np.eye(2))
    return np.sum(t * t) + np.sum(k ** 3)


def where_reduce(x):
    m = x > 0
    return np.sum(x ** 2, where=m) + np.max(x, where=m, initial=-10.0) + np.mean(x * 2.0)


def chol_slogdet(x):
    a = x.reshape(2, 3)
    s = a @ a.T + 2.0 * np.eye(2)
    low = np.linalg.cholesky(s)
    sign, ld = np.linalg.slogdet(s)
    return np.sum(low ** 2) + np.sum(np.log(np.diag(low))) + ld * sign


IN_PLACE = ('inplace_index', 'argnum_like', 'neg_index_update', 'reversed_loop_index')


def _repeated_index_set(x):  # (not in PROGRAMS: test_ad_unseen's test_repeated_indices_in_an_assignment)
    y = np.zeros(6)
    y[np.array([1, 1, 2])] = x[:3]  # NumPy: the last write wins, x[0] is overwritten
    return np.sum(y * x)
