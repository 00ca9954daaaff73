"""Realistic user programs for tests/test_vmap_unseen.py (vmap and its compositions, checked against jax)."""

from typing import NamedTuple

import numpy as np

import srcjax

from . import unseen_helpers as H
from .unseen_helpers import softplus


class Linear(NamedTuple):
    w: np.ndarray
    b: np.ndarray


# -- models with container params --------------------------------------------------------------

def mlp_dict_loss(params, x, y):
    h = x
    for layer in params["layers"]:
        h = np.tanh(h @ layer["w"] + layer["b"])
    out = h @ params["head"]
    return np.mean((out - y) ** 2)


def mlp_list_loss(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = H.softplus(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    m = np.max(logits)
    lse = m + np.log(np.sum(np.exp(logits - m)))
    return lse - logits[y]


def namedtuple_loss(p, x, t):
    z = x @ p.w + p.b
    return np.sum(softplus(z) - t * z)


def helper_module_loss(p, x):
    return np.sum(H.dense(p, x) ** 2)


# -- control flow on batched data -------------------------------------------------------------------

def if_elif(x, t):
    s = np.sum(x)
    if s > t:
        y = x * 2.0
    elif s < -t:
        y = np.sin(x)
    else:
        y = x ** 3
    return y


def while_newton(a):
    x = a
    it = 0
    while np.abs(x * x - a) > 1e-10 and it < 50:
        x = 0.5 * (x + a / x)
        it += 1
    return x


def for_break_continue(x, w):
    acc = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        acc = acc + w * x[i]
        if acc > 2.0:
            break
    return acc


def for_with_batched_index_update(x, i, v):
    y = x.copy()
    y[i] = v
    y[i + 1] += 2.0 * v
    return y * x


def gather_by_batched_index(table, idx):
    return np.sum(table[idx] * table[idx + 1])


def lax_calls(x, k):
    y = srcjax.lax.cond(np.sum(x) > 0, lambda v: v * 2.0, lambda v: -v, x)
    y = srcjax.lax.fori_loop(0, 3, lambda i, c: c * 0.5 + np.sin(c), y)
    z = srcjax.lax.switch(k, [lambda v: v + 1.0, lambda v: v * v, lambda v: np.cos(v)], y)
    return z


def lax_scan(xs, h0):
    def step(h, x):
        h = np.tanh(h * 0.9 + x)
        return h, h * 2.0
    h, ys = srcjax.lax.scan(step, h0, xs)
    return h + np.sum(ys)


def lax_while(x):
    def cond(c):
        return c[0] < 5.0
    def body(c):
        return (c[0] + np.sum(np.abs(c[1])) + 0.5, c[1] * 1.1)
    return srcjax.lax.while_loop(cond, body, (0.0, x))[1]


def clip_via_helper(v, limit):
    return H.clipped_norm(v, limit)


def lambda_inside(x, w):
    act = lambda z: z * np.tanh(z)  # noqa: E731
    return np.sum(act(x * w))


def multi_out_dict(x, w):
    return {"y": x * w, "s": np.sum(x), "pair": (x[0], w)}


def negative_axes(x, y):
    return x @ y


def unbatched_out(x, w):
    return x * 0.0 + 1.0, w * 2.0


# -- custom rules -----------------------------------------------------------------------------------

@srcjax.custom_vjp
def safe_log(x):
    return np.log(x)


def _safe_log_fwd(x):
    return np.log(x), x


def _safe_log_bwd(x, g):
    return (g / np.maximum(x, 1e-3),)


safe_log.defvjp(_safe_log_fwd, _safe_log_bwd)


@srcjax.custom_jvp
def soft_relu(x):
    return np.log1p(np.exp(x))


@soft_relu.defjvp
def _soft_relu_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return soft_relu(x), t / (1.0 + np.exp(-x))


def uses_custom(x, w):
    return np.sum(safe_log(soft_relu(x * w) + 1.0))


# -- vmap inside functions --------------------------------------------------------------------------

def pairwise(a, b):
    return np.sum((a - b) ** 2)


def vmap_inside(xs, c):
    d = srcjax.vmap(pairwise, in_axes=(0, None))(xs, c)
    return np.sum(np.sqrt(d + 1.0))


def nested_vmap_inside(xs, ys):
    m = srcjax.vmap(srcjax.vmap(pairwise, in_axes=(None, 0)), in_axes=(0, None))(xs, ys)
    return np.sum(np.exp(-m))


def tanh_loss(w, x):
    return np.sum(np.tanh(w * x))


def vmap_grad_inside(w, xs):
    g = srcjax.vmap(srcjax.grad(tanh_loss), in_axes=(None, 0))(w, xs)
    return np.sum(g ** 2)


def vmap_grad_lambda_inside(w, xs):
    g = srcjax.vmap(srcjax.grad(lambda w, x: np.sum(np.tanh(w * x))), in_axes=(None, 0))(w, xs)
    return np.sum(g ** 2)


def jvp_inside(x, t, w):
    y, y_dot = srcjax.jvp(lambda x: np.sum(x * np.tanh(x * w)), (x,), (t,))
    return y + 2.0 * y_dot


def jvp_inside_named(x, t, w):
    y, y_dot = srcjax.jvp(tanh_loss, (w, x), (np.zeros_like(w), t))
    return y + 2.0 * y_dot


# -- round 2 ----------------------------------------------------------------------------------------

def scatter_in_loop(x, idx):
    y = np.zeros(5)
    for j in range(x.shape[0]):
        y[idx[j]] += x[j] * x[j]
    return y


def argmax_gather(x, w):
    k = np.argmax(x * w)
    return x[k] * w[k] + np.sum(x[:2])


def while_on_index(x, n):
    i = 0
    acc = 0.0
    while i < n:
        acc = acc + x[i] ** 2
        i += 1
    return acc


def cumulative_with_where(x, t):
    y = np.where(x > t, x, 0.5 * x)
    return np.cumsum(y) * np.max(np.abs(y))


def rnn(params, xs):
    h = np.zeros(params["wh"].shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(params["wh"] @ h + params["wx"] @ xs[t] + params["b"])
    return h


def rnn_loss(params, xs, y):
    return np.sum((rnn(params, xs) - y) ** 2)


def attention(q, k, v):
    s = q @ k.T / np.sqrt(q.shape[-1])
    s = s - np.max(s, axis=-1, keepdims=True)
    p = np.exp(s)
    p = p / np.sum(p, axis=-1, keepdims=True)
    return p @ v


def layer_norm(x, g, b):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return g * (x - mu) / np.sqrt(var + 1e-5) + b


def static_power(x, n):
    y = x
    for _ in range(n):
        y = y * x
    return np.sum(y)


def returns_tuple_of_dicts(x, w):
    return {"a": x * w}, [np.sum(x), x[::-1]]


def early_return(x, t):
    if t > 0:
        return np.sum(x * t)
    return np.sum(np.sin(x))


def nested_containers_out(p, x):
    return {"layer": Linear(p.w * x[0], p.b + x[1])}


def index_update_lax(x, i, v):
    return srcjax.lax.index_update(x, i, v * 2.0) * x


def clip_grad_step(w, x, y, lr):
    def loss(w):
        return np.mean((x @ w - y) ** 2)
    g = srcjax.grad(loss)(w)
    return w - lr * H.clipped_norm(g, 1.0)


def loss_step(w, x, y):
    return np.mean((x @ w - y) ** 2)


def sgd_steps(w, x, y):
    for _ in range(3):
        g = srcjax.grad(loss_step)(w, x, y)
        w = w - 0.1 * g
    return w


def reduce_max_pool(x):
    return srcjax.lax.reduce_window(x, -np.inf, srcjax.lax.max, (2,), (2,), "VALID")


def int_and_float(x, k):
    y = x * k
    return y.astype(np.float32), k + 1


def matrix_stats(m):
    return np.linalg.norm(m), np.trace(m @ m.T), np.linalg.det(m + 3.0 * np.eye(m.shape[0]))


def solve_sys(a, b):
    return np.linalg.solve(a + 4.0 * np.eye(a.shape[0]), b)


# -- round 3: shape-heavy code ----------------------------------------------------------------------

def ellipsis_einsum(a, b):
    return np.einsum("...ij,...jk->...ik", a, b)


def swap_and_expand(x):
    y = np.swapaxes(x, -1, -2)
    z = np.expand_dims(y, -1) * x[..., None, :, 0:1]
    return np.sum(z, axis=(-1, -3))


def none_index_and_ellipsis(x, v):
    return x[..., 0] + v[None, :] @ x[:, :, None][..., 0]


def concat_split(x, y):
    z = np.concatenate([x, y], axis=-1)
    a, b = np.split(z, 2, axis=-1)
    return np.stack([a * b, a - b], axis=-1)


def tensordot_last(x, w):
    return np.tensordot(x, w, axes=([-1], [0]))


def take_along(x, k):
    idx = np.argsort(x, axis=-1)[..., :k]
    return np.take_along_axis(x, idx, axis=-1)


def reshape_flat(x):
    y = x.reshape(-1)
    return y[::2] * y[1::2].sum()


def norms_and_means(x):
    return np.linalg.norm(x, axis=-1) + np.mean(x, axis=1) * np.max(x, axis=-1, keepdims=True).squeeze(-1)


def masked_update(x, t):
    y = x.copy()
    y[x < t] = 0.0
    return y * 2.0


def where_mixed(c, a, b):
    return np.where(c > 0, a, b) + np.where(a > b, 1.0, -1.0)


def cumprod_flip(x):
    return np.flip(np.cumprod(x[::-1]), axis=0) + np.roll(x, 1)


def outer_sum(x, y):
    return np.outer(x, y).sum(axis=1) + np.diag(np.outer(x, x))


def float32_model(w, x):
    h = np.tanh(x @ w)
    return np.sum(h * h) * np.float32(0.5)


def diff_pad(x):
    return np.diff(np.pad(x, (1, 2)), axis=0) * np.arange(x.shape[0] + 2)


def triu_matmul(m):
    return np.triu(m) @ np.tril(m, -1).T + np.trace(m)


def ellipsis_einsum2(a, b):
    return np.einsum("...ij,...jk->...ik", a, b)
