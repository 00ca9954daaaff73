"""Programs for tests/test_vmap_hunt46.py (issue #15 audited again, session 46): control flow on batched
data and compositions, written as a demanding JAX user writes them and unlike the earlier vmap corpora.

Plain NumPy functions (``srcjax.lax`` runs them too with NumPy): the loop oracle runs each on one example.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import srcjax

# ---------------------------------------------------------------------------------------------------------------
# `while` on batched data: per-example trip counts, nested in `for`, break/continue, containers, early return
# ---------------------------------------------------------------------------------------------------------------


def grow_each_entry(x):
    steps = 0.0
    for i in range(x.shape[0]):
        v = np.abs(x[i]) + 0.1
        while v < 4.0:
            v = v * 1.7
            steps = steps + 1.0
    return steps


def tuple_state_break(x):
    state = (x, 0.0, 0)
    while state[2] < 20:
        v, acc, k = state
        v = np.cos(v) + 0.1 * v
        acc = acc + np.sum(v)
        if acc > 3.0:
            break
        state = (v, acc, k + 1)
    return state


def dict_state_halving(x):
    s = {"v": x, "n": 0}
    while np.max(np.abs(s["v"])) > 0.1:
        s = {"v": s["v"] * 0.5, "n": s["n"] + 1}
    return s


def list_state_grow(x, y):
    parts = [x, y]
    k = 0
    while np.sum(parts[0] ** 2) < 10.0 and k < 12:
        parts = [parts[0] * 1.3 + parts[1], parts[1] * 0.9]
        k += 1
    return parts[0], parts[1], k


def return_from_while(x):
    k = 0
    v = x
    while k < 8:
        v = v * v - 0.5
        if np.abs(v) > 3.0:
            return v, k
        k += 1
    return v, -1


def while_skip_odd(x):
    i = 0
    total = 0.0
    n_used = 0
    while total < 5.0 and i < 30:
        i += 1
        v = np.sin(x * i)
        if v < 0.0:
            continue
        total = total + v
        n_used += 1
    return total, n_used, i


def while_in_while(a):
    outer = 0
    x = a
    while x > 1.0:
        x = x / 3.0
        y = x
        while y < 2.0:
            y = y + 0.5 + 0.1 * outer
        x = x + 0.01 * y
        outer += 1
    return x, outer


def break_after_write(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0
        if x[i] > 0.5:
            break
    return out


def collatz_like(n):
    k = 0
    while n != 1 and k < 50:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        k += 1
    return k


def for_continue_accumulate(x, w):
    acc = np.zeros(w.shape[1])
    for i in range(x.shape[0]):
        if x[i] < 0.0:
            continue
        acc = acc + x[i] * w[i]
    return acc


# ---------------------------------------------------------------------------------------------------------------
# in-place updates with batched indices, scatters, gathers, dynamic slices
# ---------------------------------------------------------------------------------------------------------------


def accumulate_at(x, idx):
    out = np.zeros(4)
    for k in range(idx.shape[0]):
        out[idx[k]] += x[k]
    return out


def set_row_at(m, i, row):
    y = m.copy()
    y[i, :] = row
    return y


def add_to_column(m, j):
    y = m.copy()
    y[:, j] += 1.0
    return y


def set_entry_mixed(m, i, v):
    y = m.copy()
    y[i, 1] = v
    y[0, i] = -v
    return y


def negative_index_write(x, i):
    y = x.copy()
    y[-i - 1] = 100.0
    return y


def window_sum(x, s):
    w = srcjax.lax.dynamic_slice(x, (s,), (3,))
    return np.sum(w), w


def paste_patch(img, patch, r0, c0):
    return srcjax.lax.dynamic_update_slice(img, patch, (r0, c0))


def scatter_2d(idx, w):
    h = np.zeros((3, 4))
    np.add.at(h, (idx[0], idx[1]), w)
    return h


def gather_rows(table, idx):
    picked = table[idx]
    return picked.sum(axis=0), table[idx, 1:]


def take_columns(table, idx):
    return np.take(table, idx, axis=1)


def write_into_shared(base, i, v):
    y = base.copy()
    y[i] = v
    return y


def swap_entries(x, i, j):
    y = x.copy()
    a = y[i]
    y[i] = y[j]
    y[j] = a
    return y


def scatter_max_loop(x, idx):
    best = np.full(3, -np.inf)
    for k in range(x.shape[0]):
        best[idx[k]] = np.maximum(best[idx[k]], x[k])
    return best


def at_chain(x, i, v):
    return x.at[i].add(v).at[0].multiply(2.0)


# ---------------------------------------------------------------------------------------------------------------
# srcjax.lax control flow with batched and unbatched operands, predicates and indices
# ---------------------------------------------------------------------------------------------------------------


def fori_batched_lower(lo, x):
    def body(i, c):
        s, p = c
        return s + x[i], p * (1.0 + 0.1 * x[i])
    return srcjax.lax.fori_loop(lo, x.shape[0], body, (0.0, 1.0))


def while_loop_counter(x, limit):
    def cond(c):
        v, k = c
        return (np.sum(v) < limit) & (k < 25)

    def body(c):
        v, k = c
        return v * 1.25 + 0.1, k + 1
    return srcjax.lax.while_loop(cond, body, (x, 0))


def scan_dict_out(c0, xs):
    def step(c, x):
        c = 0.8 * c + x
        return c, {"c": c, "sq": x * x}
    return srcjax.lax.scan(step, c0, xs)


def scan_no_xs(x):
    def step(c, _):
        c = np.cos(c) + 0.5 * x
        return c, c * 2.0
    return srcjax.lax.scan(step, x, None, length=4)


def cond_dict_branches(p, a, b):
    return srcjax.lax.cond(p > 0, lambda o: {"y": o[0] * o[1], "z": o[1]},
                           lambda o: {"y": o[0] - o[1], "z": 2.0 * o[1]}, (a, b))


def switch_unbatched_operand(k, x):
    return srcjax.lax.switch(k, [lambda v: v + 1.0, lambda v: v * v, lambda v: -v], x)


def cond_inside_scan(xs, t):
    def step(c, x):
        c = srcjax.lax.cond(x > t, lambda u: u + x, lambda u: u * 0.5, c)
        return c, c
    return srcjax.lax.scan(step, 0.0, xs)


def fori_in_while(x):
    def inner(i, v):
        return v * 0.9 + 0.01 * i

    def cond(c):
        return c[0] > 0.2

    def body(c):
        return srcjax.lax.fori_loop(0, 3, inner, c[0]), c[1] + 1
    return srcjax.lax.while_loop(cond, body, (x, 0))


def scan_int_carry(xs):
    def step(c, x):
        n, s = c
        hit = x > 0
        return (n + hit.astype(np.int32), s + np.where(hit, x, 0.0)), n
    return srcjax.lax.scan(step, (np.int32(0), 0.0), xs)


def switch_in_fori(ks, x):
    def body(i, v):
        return srcjax.lax.switch(ks[i], [np.sin, np.cos, lambda u: u * 0.5], v)
    return srcjax.lax.fori_loop(0, ks.shape[0], body, x)


# ---------------------------------------------------------------------------------------------------------------
# programs for compositions (derivatives of control flow, custom rules)
# ---------------------------------------------------------------------------------------------------------------


def branchy_energy(x, w):
    e = 0.0
    for i in range(x.shape[0]):
        if x[i] * w > 0.0:
            e = e + np.sin(x[i] * w) ** 2
        else:
            e = e + 0.5 * (x[i] * w) ** 2
    return e


def cond_energy(x):
    return srcjax.lax.cond(np.sum(x) > 0, lambda v: np.sum(v ** 3), lambda v: np.sum(np.cos(v)), x)


def update_then_reduce(x):
    y = x * 1.0
    y[0] = y[0] * y[-1]
    y[1] += np.sin(y[2])
    return np.sum(y * y)


def vec_update(x):
    y = np.tanh(x)
    y[1] = y[0] * x[2]
    return y


def scan_loss(w, xs):
    def step(h, x):
        h = np.tanh(w * h + x)
        return h, h
    h, hs = srcjax.lax.scan(step, 0.0, xs)
    return np.sum(hs ** 2) + h


def aux_loss(w, x):
    z = np.tanh(x @ w)
    return np.sum(z ** 2), {"z": z, "big": np.max(z) > 0.5}


def pair_score(a, b):
    return np.sum(a * b) / (1.0 + np.sum(b * b))


@srcjax.custom_vjp
def clip_grad(x, c):
    return x


def clip_grad_fwd(x, c):
    return x, c


def clip_grad_bwd(c, g):
    return (np.clip(g, -c, c), 0.0 * c)


clip_grad.defvjp(clip_grad_fwd, clip_grad_bwd)


def clipped_loss(x, c):
    return np.sum(clip_grad(x, c) ** 3)


@srcjax.custom_jvp
def softplus2(x):
    return np.log1p(np.exp(x))


@softplus2.defjvp
def softplus2_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus2(x), t / (1.0 + np.exp(-x))


def softplus_sum(x):
    return np.sum(softplus2(x) * x)


class Pt(NamedTuple):
    x: Any
    y: Any


def pt_norm(p, s):
    return {"r": np.sqrt(p.x ** 2 + p.y ** 2) * s, "t": np.arctan2(p.y, p.x)}


def inner_vmapped(x, w):
    return srcjax.vmap(lambda r: np.sum(np.tanh(r * w)))(x)


def jit_of_vmap_inside(x, w):
    return srcjax.jit(srcjax.vmap(pair_score, in_axes=(0, None)))(x, w)


# ---------------------------------------------------------------------------------------------------------------
# dtype mixtures, 0-d examples
# ---------------------------------------------------------------------------------------------------------------


def masked_int_sum(x, mask, k):
    s = np.sum(np.where(mask, x, 0))
    return s * k, np.sum(mask)


def f32_f64_mix(a, b):
    c = a.astype(np.float32) * b
    return c, c.dtype == np.float64


def scalar_newton(a):
    x = a + 1.0
    while np.abs(x * x * x - a) > 1e-10:
        x = x - (x * x * x - a) / (3.0 * x * x)
    return x


def bool_flip(m, i):
    y = m.copy()
    y[i] = ~y[i]
    return y, np.sum(y)


def int_state_loop(x, n):
    acc = np.int64(0)
    for i in range(x.shape[0]):
        if x[i] > n:
            acc = acc + x[i] * (i + 1)
    return acc


# ---------------------------------------------------------------------------------------------------------------
# indices out of range in examples the batched program masks (done, or on the other side of an `if`)
# ---------------------------------------------------------------------------------------------------------------


def sum_first_n(x, n):
    i = 0
    s = 0.0
    while i < n:
        s = s + x[i]
        i += 1
    return s


def guarded_read(x, i):
    if i < x.shape[0]:
        v = x[i] * 2.0
    else:
        v = -1.0
    return v


def guarded_write(x, i):
    y = x * 1.0
    if i >= 0:
        y[i] = 0.0
    return y


# ---------------------------------------------------------------------------------------------------------------
# second round: for/while `else`, carries whose dtype changes, writes inside `while`, nested vmaps of loops
# ---------------------------------------------------------------------------------------------------------------


def static_for_else(x):
    for i in range(3):
        x = x + i
        if i == 5:
            break
    else:
        x = -x
    return x


def find_or_default(x, t):
    found = 0.0
    for i in range(x.shape[0]):
        if x[i] > t:
            found = x[i] * 10.0
            break
    else:
        found = -1.0
    return found


def first_index_for_else(x, t):
    for i in range(x.shape[0]):
        if x[i] > t:
            idx = i
            break
    else:
        idx = -1
    return idx


def while_else(x):
    k = 0
    while k < 6:
        if x * k > 2.0:
            break
        k += 1
    else:
        k = 100
    return k


def nested_break_inner(m):
    total = 0.0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if m[i, j] < 0.0:
                break
            total = total + m[i, j]
    return total


def promote_in_loop(x):
    s = 0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s = s + x[i]
    return s


def f32_while(x):
    acc = 0.0
    v = x
    while np.sum(v * v) > 0.01:
        v = v * np.float32(0.5)
        acc = acc + 1.0
    return v, acc


def write_in_while(x, v):
    y = np.zeros(x.shape[0] + 2)
    k = 0
    while k < x.shape[0] and x[k] < v:
        y[k + 1] = x[k] * 2.0
        k += 1
    return y, k


def add_at_batched_target(h, idx, w):
    h = h.copy()
    np.add.at(h, idx, w)
    return h


def double_index_accumulate(m, ii, jj):
    y = np.zeros_like(m)
    for k in range(ii.shape[0]):
        y[ii[k], jj[k]] += m[ii[k], jj[k]]
    return y


def scan_reverse_dict_carry(xs, c):
    def step(carry, x):
        carry = {"s": carry["s"] * 0.9 + x, "m": np.maximum(carry["m"], x)}
        return carry, carry["s"] - carry["m"]
    return srcjax.lax.scan(step, {"s": c, "m": -np.inf + 0.0 * c}, xs, reverse=True)


def switch_closures(k, x, w):
    return srcjax.lax.switch(k, [lambda: x * w, lambda: x + w, lambda: x - w])


def cond_no_operands(p, x):
    a = srcjax.lax.cond(p > 0.0, lambda: 1.5, lambda: -2.0)
    return a * x


def fori_at_update(n, x):
    def body(i, y):
        return y.at[i].set(y[i] * 2.0 + 1.0)
    return srcjax.lax.fori_loop(0, n, body, x)


def while_closure_limit(x, lim):
    return srcjax.lax.while_loop(lambda c: np.abs(c[0]) < lim, lambda c: (c[0] * 1.5 + 0.1, c[1] + 1), (x, 0))


def scan_loss_jac(xs):
    def step(c, x):
        c = np.sin(c) * x + c
        return c, c * c
    return srcjax.lax.scan(step, 0.3, xs)[1]


def counts_by_row(m, t):
    counts = np.zeros(m.shape[0], dtype=np.int64)
    for i in range(m.shape[0]):
        j = 0
        while j < m.shape[1] and m[i, j] < t:
            j += 1
        counts[i] = j
    return counts


def unbatched_leaf_becomes_batched(x, y):
    s = {"a": x, "b": 0.0}
    while s["b"] < 3.0:
        s = {"a": s["a"] * 0.5, "b": s["b"] + np.abs(np.sum(y)) + 0.5}
    return s


def int_bool_mix(x, m):
    c = np.where(m, x, -x)
    n = np.sum(m)
    return c * n, (c > 0).astype(np.int32) + m


def grid_energy(m):
    total = 0.0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            total = total + np.sin(m[i, j]) * m[i, 0]
    return total


def calls_grid_energy(m):
    return 2.0 * grid_energy(m)


def dict_param_loop(p, x):
    h = x * p["w"]
    k = 0
    while np.sum(h * h) < 4.0 and k < 10:
        h = h * 1.5 + p["b"]
        k += 1
    if k > 3:
        h = -h
    return {"h": h, "k": k}


# ---------------------------------------------------------------------------------------------------------------
# third round: max_iters derivatives, keyword arguments, list arguments, scan over a tuple of sequences
# ---------------------------------------------------------------------------------------------------------------


def damped_sqrt(a):
    x = a
    while np.abs(x * x - a) > 1e-8:
        x = 0.5 * (x + a / x)
    return x


def scaled_softplus(x, scale=1.0):
    return np.log1p(np.exp(x * scale)) / scale


def list_arg_mix(layers, x):
    h = x
    for w in layers:
        h = np.tanh(h @ w)
        if np.sum(h) > 0:
            h = h * 0.5
    return h


def scan_pair_seq(c0, xs, ys):
    def step(c, xy):
        x, y = xy
        c = c * 0.9 + x * y
        return c, c - y
    return srcjax.lax.scan(step, c0, (xs, ys))


def break_with_add_at(idx, w):
    h = np.zeros(4)
    for k in range(idx.shape[0]):
        if w[k] < 0:
            break
        np.add.at(h, idx[k], w[k])
    return h


def nested_grad_pair(a, b):
    return np.sum(np.sin(a * b)) + np.sum(a * a) * b[0]


# ---------------------------------------------------------------------------------------------------------------
# fourth round: derivatives of updates at data indices and of lax control flow, under vmap in both orders
# ---------------------------------------------------------------------------------------------------------------


def scatter_loss(x, idx):
    h = np.zeros(3)
    for k in range(idx.shape[0]):
        h[idx[k]] += x[k] ** 2
    return np.sum(np.sin(h)), h


def switch_loss(k, x):
    y = srcjax.lax.switch(k, [lambda v: v ** 3, lambda v: np.sin(v) * v, lambda v: np.exp(-v)], x)
    return np.sum(y * y)


def while_loss(x):
    def cond(c):
        return c[1] < 3

    def body(c):
        return np.tanh(c[0]) * 1.5 + x, c[1] + 1
    return np.sum(srcjax.lax.while_loop(cond, body, (x, 0))[0])


def nested_else(m, t):
    found = 0.0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if m[i, j] > t:
                found = found + m[i, j]
                break
        else:
            found = found - 1.0
            continue
        if found > 2 * t:
            break
    else:
        found = found * 10.0
    return found
