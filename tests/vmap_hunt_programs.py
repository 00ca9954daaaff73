"""Small programs with control flow on batched data for tests/test_vmap_unseen_more.py's hunt (vmap composed
with grad/jacrev/jvp/vmap against jax twins and loops over examples)."""

import numpy as np

import srcjax


def clipped_relu_if(x, t):
    if np.sum(x) > t:
        y = np.maximum(x, 0.0)
    else:
        y = np.tanh(x) * t
    return np.sum(y ** 2)


def newton_sqrt(a):
    x = a
    i = 0
    while np.abs(x * x - a) > 1e-10 and i < 50:
        x = 0.5 * (x + a / x)
        i += 1
    return x


def first_negative(x):
    out = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0:
            out = x[i] * (i + 1.0)
            break
    return out


def scatter_batched_idx(x, i, v):
    y = x.copy()
    y[i] = v * 2.0
    y[(i + 1) % x.shape[0]] += v
    return np.sum(y * x)


def lax_cond_fn(x, p):
    return srcjax.lax.cond(p > 0, lambda x: np.sin(x) * p, lambda x: np.cos(x) - p, x)


def lax_switch_fn(x, k):
    return srcjax.lax.switch(k, [lambda x: x * 2.0, lambda x: np.sin(x), lambda x: x ** 2], x)


def lax_fori_fn(x, n):
    return srcjax.lax.fori_loop(0, 4, lambda i, c: c * 0.9 + np.sin(c) * n, x)


def lax_scan_fn(xs, h):
    def step(h, x):
        h = np.tanh(h * 0.5 + x)
        return h, h * 2.0
    h, ys = srcjax.lax.scan(step, h, xs)
    return np.sum(ys) + np.sum(h)


def lax_while_fn(x):
    def cond(c):
        return np.sum(c[0] ** 2) < 10.0
    def body(c):
        return c[0] * 1.3 + 0.1, c[1] + 1
    y, k = srcjax.lax.while_loop(cond, body, (x, 0))
    return y, k


@srcjax.custom_vjp
def safe_log(x):
    return np.log(np.maximum(x, 1e-6))


def _safe_log_fwd(x):
    return safe_log(x), x


def _safe_log_bwd(x, g):
    return (g / np.maximum(x, 1e-6),)


safe_log.defvjp(_safe_log_fwd, _safe_log_bwd)


def uses_safe_log(x, w):
    return np.sum(safe_log(np.abs(x) + w) * w)


@srcjax.custom_jvp
def soft_clip(x):
    return np.tanh(x) * 2.0


@soft_clip.defjvp
def _soft_clip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return soft_clip(x), t * 2.0 * (1.0 - np.tanh(x) ** 2)


def uses_soft_clip(x):
    return np.sum(soft_clip(x * 3.0) ** 2)


def masked_mean(x, m):
    s = 0.0
    c = 0.0
    for i in range(x.shape[0]):
        if m[i] > 0.5:
            s = s + x[i]
            c = c + 1.0
    return s / np.maximum(c, 1.0)


def running_max_update(x):
    best = x[0]
    for i in range(1, x.shape[0]):
        if x[i] > best:
            best = x[i]
    return best * 2.0


def piecewise(x):
    return np.where(x > 1.0, x ** 2, np.where(x < -1.0, -x, np.sin(x)))


def early_exit_sum(x, lim):
    total = 0.0
    for v in x:
        total = total + v
        if total > lim:
            return total * 0.5
    return total


def bubble_pass(x):
    y = x.copy()
    for i in range(x.shape[0] - 1):
        a, b = y[i], y[i + 1]
        if a > b:
            y[i] = b
            y[i + 1] = a
    return y


def normalize_rows(m):
    n = np.linalg.norm(m, axis=-1, keepdims=True)
    return m / n


def poly_eval(c, x):
    acc = np.zeros_like(x)
    for k in range(c.shape[0]):
        acc = acc * x + c[k]
    return acc


def dict_state_update(state, x):
    new = {"m": 0.9 * state["m"] + 0.1 * x, "v": 0.99 * state["v"] + 0.01 * x ** 2}
    return new["m"] / np.sqrt(new["v"] + 1e-8)


def fixed_point(a):
    x = np.zeros_like(a)
    for _ in range(20):
        x = np.cos(x) * a
    return x


def index_by_argmax(x, w):
    k = np.argmax(x)
    return x[k] * w[k] + np.sum(x * w)


def cumulative_clip(x, c):
    y = np.cumsum(x)
    return np.clip(y, -c, c)


def sort_top(x):
    s = np.sort(x)
    return s[-1] - s[0] + np.mean(s[1:-1])
