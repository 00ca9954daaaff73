"""Programs written the way JAX users write them (ported from the idioms of JAX's docs, tutorials and example
repositories): the corpus of tests/test_jax_style_programs.py.

Pytrees of parameters (dicts, lists of ``(w, b)`` tuples, NamedTuples, dataclasses), ``lax.scan`` /
``fori_loop`` / ``while_loop`` / ``cond`` / ``switch``, ``vmap`` and ``grad`` called inside functions
(per-example gradients, meta-learning, Newton steps, forces), ``custom_jvp`` / ``custom_vjp``, ``np.where``
masks, ``.at[].set/add``, einsum, random keys, linalg, losses, optimizers written by hand, training steps.
Spelled with srcjax's names; the test runs the same text with ``np`` bound to ``jax.numpy``, ``srcjax`` to
``jax`` and ``lax`` to ``jax.lax``. Nothing here knows about the test.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

import srcjax
from srcjax import lax

# -- networks with pytrees of parameters ------------------------------------------------------------------


def mlp_apply(params, x):
    # params: a list of (w, b) tuples, as in JAX's "MLP from scratch" tutorial
    *hidden, last = params
    h = x
    for w, b in hidden:
        h = np.tanh(h @ w + b)
    w, b = last
    return h @ w + b


def mlp_mse(params, x, y):
    pred = mlp_apply(params, x)
    return np.mean((pred - y) ** 2)


def mlp_sgd_step(params, x, y, lr):
    grads = srcjax.grad(mlp_mse)(params, x, y)
    return srcjax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


def per_example_grads(params, xs, ys):
    def loss_one(p, x, y):
        return mlp_mse(p, x[None], y[None])

    return srcjax.vmap(srcjax.grad(loss_one), in_axes=(None, 0, 0))(params, xs, ys)


def per_example_grad_norms(params, xs, ys):
    g = per_example_grads(params, xs, ys)
    sq = sum(np.sum(leaf.reshape(leaf.shape[0], -1) ** 2, axis=1) for leaf in srcjax.tree_util.tree_leaves(g))
    return np.sqrt(sq)


def dict_mlp_loss(params, x, labels):
    h = np.maximum(x @ params["layer1"]["w"] + params["layer1"]["b"], 0.0)
    logits = h @ params["out"]["w"] + params["out"]["b"]
    logp = logits - np.max(logits, axis=-1, keepdims=True)
    logp = logp - np.log(np.sum(np.exp(logp), axis=-1, keepdims=True))
    onehot = labels[:, None] == np.arange(logits.shape[-1])[None, :]
    return -np.mean(np.sum(np.where(onehot, logp, 0.0), axis=-1))


class Linear(NamedTuple):
    w: np.ndarray
    b: np.ndarray


def namedtuple_layers_loss(layers, x, y):
    h = x
    for layer in layers[:-1]:
        h = np.tanh(h @ layer.w + layer.b)
    out = h @ layers[-1].w + layers[-1].b
    return np.mean((out[:, 0] - y) ** 2)


@srcjax.tree_util.register_dataclass
@dataclasses.dataclass
class LinearModel:
    weight: np.ndarray
    bias: np.ndarray


def dataclass_model_loss(model, x, y):
    pred = x @ model.weight + model.bias
    return np.mean(np.log(np.cosh(pred - y)))


def ensemble_predict(stacked, x):
    # an ensemble as parameters stacked on a leading axis, vmapped over members
    def one(p):
        return np.tanh(x @ p["w1"]) @ p["w2"]

    return srcjax.vmap(one)(stacked)


def ensemble_disagreement(stacked, x):
    preds = ensemble_predict(stacked, x)
    return np.mean(np.var(preds, axis=0))


def layer_norm_residual(params, x):
    # a pre-norm residual block applied to each token with vmap
    def norm(v):
        mu = np.mean(v)
        var = np.mean((v - mu) ** 2)
        return (v - mu) / np.sqrt(var + 1e-5) * params["g"] + params["b"]

    h = srcjax.vmap(norm)(x)
    return x + np.tanh(h @ params["w"])


def attention_einsum(q, k, v, mask):
    scores = np.einsum("qd,kd->qk", q, k) / np.sqrt(q.shape[-1])
    scores = np.where(mask, scores, -1e9)
    w = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    w = w / np.sum(w, axis=-1, keepdims=True)
    return np.einsum("qk,kd->qd", w, v)


def causal_attention_loss(x, wq, wk, wv):
    t = x.shape[0]
    mask = np.tril(np.ones((t, t), dtype=bool))
    out = attention_einsum(x @ wq, x @ wk, x @ wv, mask)
    return np.sum(out ** 2)


def bilinear_einsum(x, w, y):
    return np.einsum("bi,oij,bj->bo", x, w, y)


def conv1d_lax(x, w):
    # x: (batch, channels, width), w: (out, in, k), JAX's NCW convention
    out = lax.conv_general_dilated(x, w, window_strides=(1,), padding="SAME")
    return np.sum(np.tanh(out) ** 2)


def masked_sequence_mean(x, lengths):
    t = x.shape[1]
    mask = np.arange(t)[None, :] < lengths[:, None]
    total = np.sum(np.where(mask[:, :, None], x, 0.0), axis=1)
    return total / np.maximum(lengths, 1).astype(x.dtype)[:, None]


# -- recurrences with lax.scan / fori_loop -------------------------------------------------------------------


def rnn_scan(params, xs, h0):
    def step(h, x):
        h = np.tanh(params["wh"] @ h + params["wx"] @ x + params["b"])
        return h, h

    h, hs = lax.scan(step, h0, xs)
    return np.sum(hs ** 2) + np.sum(h)


def lstm_scan(params, xs):
    n = params["wf"].shape[0]

    def cell(carry, x):
        h, c = carry
        z = np.concatenate([h, x])
        f = 1.0 / (1.0 + np.exp(-(params["wf"] @ z)))
        i = 1.0 / (1.0 + np.exp(-(params["wi"] @ z)))
        g = np.tanh(params["wg"] @ z)
        c = f * c + i * g
        h = np.tanh(c)
        return (h, c), h

    (h, c), hs = lax.scan(cell, (np.zeros(n, xs.dtype), np.zeros(n, xs.dtype)), xs)
    return np.mean(hs[-1] ** 2) + np.mean(c)


def discounted_returns(rewards, gamma):
    def back(g, r):
        g = r + gamma * g
        return g, g

    _, returns = lax.scan(back, np.zeros((), rewards.dtype), rewards, reverse=True)
    return returns


def ema_scan_tuple_xs(xs, ws, decay):
    def step(m, inp):
        x, w = inp
        m = decay * m + (1 - decay) * w * x
        return m, m * m

    m, sq = lax.scan(step, np.zeros_like(xs[0]), (xs, ws))
    return np.sum(sq) + np.sum(m)


def logistic_map_unroll(r, x0):
    def step(x, _):
        x = r * x * (1 - x)
        return x, x

    _, traj = lax.scan(step, x0, None, length=6)
    return traj


def crf_log_partition(emissions, transitions):
    def step(alpha, emit):
        scores = alpha[:, None] + transitions + emit[None, :]
        m = np.max(scores, axis=0)
        alpha = m + np.log(np.sum(np.exp(scores - m[None, :]), axis=0))
        return alpha, None

    alpha, _ = lax.scan(step, emissions[0], emissions[1:])
    m = np.max(alpha)
    return m + np.log(np.sum(np.exp(alpha - m)))


def power_iteration(a, v0):
    def body(i, v):
        v = a @ v
        return v / np.linalg.norm(v)

    v = lax.fori_loop(0, 8, body, v0)
    return v @ a @ v


def rk4_fori(theta, y0):
    def f(y):
        return np.stack([y[1], -theta[0] * np.sin(y[0]) - theta[1] * y[1]])

    def body(i, y):
        h = 0.05
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

    y = lax.fori_loop(0, 10, body, y0)
    return np.sum(y ** 2)


def euler_trajectory(k, y0):
    def step(y, t):
        dy = -k * y + np.sin(t)
        y = y + 0.1 * dy
        return y, y

    ts = np.arange(5).astype(y0.dtype) * 0.1
    _, ys = lax.scan(step, y0, ts)
    return ys


def kalman_filter_scan(obs, q, r):
    # a constant-velocity model's filter; the carry is (mean, covariance) and the log-likelihood
    a = np.array([[1.0, 1.0], [0.0, 1.0]])
    h = np.array([[1.0, 0.0]])

    def step(carry, y):
        m, p, ll = carry
        m = a @ m
        p = a @ p @ a.T + q * np.eye(2)
        s = h @ p @ h.T + r
        k = p @ h.T / s
        resid = y - h @ m
        m = m + (k @ resid)
        p = p - k @ h @ p
        ll = ll - 0.5 * (np.log(2 * np.pi * s[0, 0]) + resid[0] ** 2 / s[0, 0])
        return (m, p, ll), m[0]

    init = (np.zeros(2), np.eye(2), np.zeros(()))
    (m, p, ll), means = lax.scan(step, init, obs[:, None])
    return ll


# -- lax control flow ---------------------------------------------------------------------------------------


def cond_piecewise(x, a):
    return lax.cond(np.sum(x) > 0, lambda v: a * np.sin(v), lambda v: np.cos(v) / a, x)


def switch_activation(idx, x):
    branches = [lambda v: np.maximum(v, 0.0), lambda v: np.tanh(v), lambda v: v / (1.0 + np.exp(-v))]
    return np.sum(lax.switch(idx, branches, x) ** 2)


def while_bisection(c):
    # the root of x**3 - c on [0, 2] by bisection with a tolerance, a tuple carry
    def cond_fn(state):
        lo, hi, it = state
        return (np.max(hi - lo) > 1e-6) & (it < 60)

    def body_fn(state):
        lo, hi, it = state
        mid = 0.5 * (lo + hi)
        too_big = mid ** 3 > c
        return np.where(too_big, lo, mid), np.where(too_big, mid, hi), it + 1

    lo, hi, _ = lax.while_loop(cond_fn, body_fn, (np.zeros_like(c), 2.0 * np.ones_like(c), 0))
    return 0.5 * (lo + hi)


def newton_fixed_iters(a):
    # Newton's method for x**2 = a with grad inside the loop body (fixed trip count: differentiable)
    def total_residual(x):
        return np.sum(x * x - a)

    def body(i, x):
        return x - (x * x - a) / srcjax.grad(total_residual)(x)

    return lax.fori_loop(0, 6, body, np.ones_like(a) + a / 2)


def huber_cond(r, delta):
    def one(v):
        return lax.cond(np.abs(v) < delta, lambda u: 0.5 * u * u, lambda u: delta * (np.abs(u) - 0.5 * delta), v)

    return np.mean(srcjax.vmap(one)(r))


# -- custom derivatives -------------------------------------------------------------------------------------


@srcjax.custom_jvp
def log1pexp(x):
    return np.log1p(np.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * (1 - 1 / (1 + np.exp(x)))


def softplus_loss(w, x):
    return np.sum(log1pexp(x @ w))


@srcjax.custom_jvp
def safe_norm(x):
    return np.sqrt(np.sum(x ** 2))


@safe_norm.defjvp
def safe_norm_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    n = safe_norm(x)
    denom = np.where(n == 0.0, 1.0, n)
    return n, np.sum(x * t) / denom


def safe_norm_energy(xs):
    return np.sum(srcjax.vmap(safe_norm)(xs) ** 2) + safe_norm(xs[0])


@srcjax.custom_vjp
def grad_reverse(x, scale):
    return x


def grad_reverse_fwd(x, scale):
    return x, scale


def grad_reverse_bwd(scale, g):
    return -scale * g, np.zeros_like(scale)


grad_reverse.defvjp(grad_reverse_fwd, grad_reverse_bwd)


def domain_adversarial(w, x, scale):
    feat = np.tanh(x @ w)
    return np.sum(grad_reverse(feat, scale) ** 2) + np.sum(feat)


@srcjax.custom_vjp
def straight_through_round(x):
    return np.round(x)


def st_round_fwd(x):
    return np.round(x), None


def st_round_bwd(res, g):
    return (g,)


straight_through_round.defvjp(st_round_fwd, st_round_bwd)


def quantized_layer(w, x):
    wq = straight_through_round(w * 4.0) / 4.0
    return np.sum(np.tanh(x @ wq) ** 2)


# -- indexed updates ----------------------------------------------------------------------------------------


def tridiagonal_solve_loss(d, off, b):
    n = d.shape[0]
    a = np.zeros((n, n), d.dtype)
    a = a.at[np.arange(n), np.arange(n)].set(d)
    a = a.at[np.arange(n - 1), np.arange(1, n)].set(off)
    a = a.at[np.arange(1, n), np.arange(n - 1)].set(off)
    x = np.linalg.solve(a, b)
    return np.sum(x ** 2)


def segment_sum_at(values, segment_ids):
    out = np.zeros((3,) + values.shape[1:], values.dtype)
    return out.at[segment_ids].add(values)


def scatter_update_loss(x, idx, v):
    y = x.at[idx].set(v * 2.0)
    y = y.at[0].multiply(3.0)
    return np.sum(y ** 2) + y.at[1].get()


# -- random keys --------------------------------------------------------------------------------------------


def dropout_loss(params, key, x, rate=0.25):
    keep = srcjax.random.bernoulli(key, 1.0 - rate, x.shape)
    xd = np.where(keep, x / (1.0 - rate), 0.0)
    return np.mean((xd @ params["w"] + params["b"]) ** 2)


def reparam_elbo(mu, log_sigma, key, x):
    eps = srcjax.random.normal(key, (4,) + mu.shape)
    z = mu + np.exp(log_sigma) * eps
    log_lik = -0.5 * np.sum((x[None, :] - z) ** 2, axis=-1)
    kl = 0.5 * np.sum(np.exp(2 * log_sigma) + mu ** 2 - 1.0 - 2 * log_sigma)
    return np.mean(log_lik) - kl


def sgld_chain(theta, key):
    # stochastic gradient Langevin steps with the keys split up front and scanned over
    def potential(t):
        return 0.5 * np.sum(t ** 2) + 0.1 * np.sum(t ** 4)

    keys = srcjax.random.split(key, 5)

    def step(t, k):
        noise = srcjax.random.normal(k, t.shape, t.dtype)
        t = t - 0.01 * srcjax.grad(potential)(t) + 0.02 ** 0.5 * noise
        return t, potential(t)

    t, energies = lax.scan(step, theta, keys)
    return np.sum(energies) + np.sum(t)


def fold_in_noise(x, key):
    total = 0.0
    for i in range(3):
        k = srcjax.random.fold_in(key, i)
        total = total + np.sum(x * srcjax.random.uniform(k, x.shape))
    return total


# -- linalg, probabilistic models ---------------------------------------------------------------------------


def rbf(a, b, ls):
    return np.exp(-0.5 * np.sum((a - b) ** 2) / ls ** 2)


def gp_nll_vmap_kernel(log_ls, x, y):
    ls = np.exp(log_ls)
    k = srcjax.vmap(lambda a: srcjax.vmap(lambda b: rbf(a, b, ls))(x))(x)
    k = k + 0.1 * np.eye(x.shape[0])
    chol = np.linalg.cholesky(k)
    alpha = np.linalg.solve(k, y)
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(chol)))


def linear_flow_logdet(w, z):
    x = z @ w.T
    sign, logdet = np.linalg.slogdet(w)
    return np.mean(-0.5 * np.sum(x ** 2, axis=-1)) + logdet


def eigh_spectral_loss(a):
    s = 0.5 * (a + a.T)
    evals, evecs = np.linalg.eigh(s)
    return np.sum(evals ** 2) + evals[0] + np.sum(evecs[:, -1] ** 4)


def ridge_per_task(xs, ys, lam):
    def fit(x, y):
        a = x.T @ x + lam * np.eye(x.shape[1])
        return np.linalg.solve(a, x.T @ y)

    return srcjax.vmap(fit)(xs, ys)


def mvn_logpdf(x, mean, chol_factor):
    cov = chol_factor @ chol_factor.T + 0.5 * np.eye(mean.shape[0])
    diff = x - mean
    sol = np.linalg.solve(cov, diff)
    sign, logdet = np.linalg.slogdet(cov)
    return -0.5 * (diff @ sol + logdet + mean.shape[0] * np.log(2 * np.pi))


def mvn_batch_loglik(xs, mean, chol_factor):
    return np.sum(srcjax.vmap(mvn_logpdf, in_axes=(0, None, None))(xs, mean, chol_factor))


# -- MCMC, molecular dynamics -------------------------------------------------------------------------------


def neg_log_density(q):
    return 0.5 * np.sum(q ** 2) + 0.25 * np.sum(q ** 4)


def leapfrog_fori(q, p, eps):
    def body(i, state):
        q, p = state
        p = p - 0.5 * eps * srcjax.grad(neg_log_density)(q)
        q = q + eps * p
        p = p - 0.5 * eps * srcjax.grad(neg_log_density)(q)
        return q, p

    return lax.fori_loop(0, 5, body, (q, p))


def hmc_energy_error(q, p, eps):
    q1, p1 = leapfrog_fori(q, p, eps)
    h0 = neg_log_density(q) + 0.5 * np.sum(p ** 2)
    h1 = neg_log_density(q1) + 0.5 * np.sum(p1 ** 2)
    return h1 - h0


def soft_sphere_energy(pos, sigma):
    def disp(a, b):
        return a - b

    dr = srcjax.vmap(srcjax.vmap(disp, in_axes=(None, 0)), in_axes=(0, None))(pos, pos)
    r2 = np.sum(dr ** 2, axis=-1)
    n = pos.shape[0]
    off = ~np.eye(n, dtype=bool)
    safe = np.where(off, r2, 1.0)
    r = np.sqrt(safe)
    e = np.where(off & (r < sigma), (1.0 - r / sigma) ** 2, 0.0)
    return 0.5 * np.sum(e)


def velocity_verlet_md(pos, vel, sigma):
    def force(x):
        return -srcjax.grad(soft_sphere_energy)(x, sigma)

    def step(state, _):
        x, v, f = state
        x = x + 0.05 * v + 0.5 * 0.05 ** 2 * f
        f_new = force(x)
        v = v + 0.5 * 0.05 * (f + f_new)
        return (x, v, f_new), 0.5 * np.sum(v ** 2)

    (x, v, f), ke = lax.scan(step, (pos, vel, force(pos)), None, length=4)
    return ke[-1] + soft_sphere_energy(x, sigma)


# -- optimizers written by hand (optax's idioms) -------------------------------------------------------------


class AdamState(NamedTuple):
    count: np.ndarray
    mu: dict
    nu: dict


def adam_update(grads, state, lr=1e-2, b1=0.9, b2=0.999, eps=1e-8):
    mu = srcjax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, grads)
    nu = srcjax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, state.nu, grads)
    count = state.count + 1
    mu_hat = srcjax.tree_util.tree_map(lambda m: m / (1 - b1 ** count), mu)
    nu_hat = srcjax.tree_util.tree_map(lambda v: v / (1 - b2 ** count), nu)
    updates = srcjax.tree_util.tree_map(lambda m, v: -lr * m / (np.sqrt(v) + eps), mu_hat, nu_hat)
    return updates, AdamState(count, mu, nu)


def linreg_loss(params, x, y):
    return np.mean((x @ params["w"] + params["b"] - y) ** 2)


def adam_train_step(params, state, x, y):
    loss, grads = srcjax.value_and_grad(linreg_loss)(params, x, y)
    updates, state = adam_update(grads, state)
    params = srcjax.tree_util.tree_map(lambda p, u: p + u, params, updates)
    return params, state, loss


def global_norm(tree):
    return np.sqrt(sum(np.sum(x ** 2) for x in srcjax.tree_util.tree_leaves(tree)))


def clip_then_sgd(params, x, y, max_norm):
    grads = srcjax.grad(linreg_loss)(params, x, y)
    norm = global_norm(grads)
    scale = np.minimum(1.0, max_norm / (norm + 1e-6))
    return srcjax.tree_util.tree_map(lambda p, g: p - 0.1 * scale * g, params, grads)


def adamw_masked(params, grads, m, lr, wd):
    # weight decay on matrices only: a mask pytree, as optax.masked does
    mask = srcjax.tree_util.tree_map(lambda p: p.ndim > 1, params)
    m = srcjax.tree_util.tree_map(lambda a, g: 0.9 * a + 0.1 * g, m, grads)
    return srcjax.tree_util.tree_map(
        lambda p, a, k: p - lr * (a + (wd * p if k else 0.0)), params, m, mask)


def piecewise_lr(step, base):
    lr = np.where(step < 10, base * (step + 1) / 10.0, base)
    lr = np.where(step >= 50, lr * 0.1, lr)
    return lr


def train_loop_scan(params, xs, ys):
    # several SGD steps over minibatches with lax.scan (the carry is the parameter dict)
    def step(p, batch):
        x, y = batch
        loss, g = srcjax.value_and_grad(linreg_loss)(p, x, y)
        p = srcjax.tree_util.tree_map(lambda a, b: a - 0.05 * b, p, g)
        return p, loss

    params, losses = lax.scan(step, params, (xs, ys))
    return np.sum(losses) + linreg_loss(params, xs[0], ys[0])


# -- gradients inside functions: meta-learning, implicit layers, curvature ----------------------------------


def maml_multi_step(params, x_tr, y_tr, x_te, y_te):
    def inner(p):
        for _ in range(2):
            g = srcjax.grad(linreg_loss)(p, x_tr, y_tr)
            p = srcjax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)
        return p

    return linreg_loss(inner(params), x_te, y_te)


def learned_lr_hypergrad(log_lr, w, x, y):
    def loss(v):
        return np.mean((x @ v - y) ** 2)

    for _ in range(3):
        w = w - np.exp(log_lr) * srcjax.grad(loss)(w)
    return loss(w)


def gauss_newton_vp(w, x, v):
    def model(u):
        return np.tanh(x @ u)

    _, jv = srcjax.jvp(model, (w,), (v,))
    _, vjp_fn = srcjax.vjp(model, w)
    (gnv,) = vjp_fn(jv)
    return gnv


def fisher_from_per_example(w, xs):
    def logp(u, x):
        return -np.log1p(np.exp(-x @ u))

    g = srcjax.vmap(srcjax.grad(logp), in_axes=(None, 0))(w, xs)
    return np.einsum("ni,nj->ij", g, g) / xs.shape[0]


def implicit_fixed_point(a, x0):
    # z = tanh(a @ z + x) by plain iteration (a contraction for small a), differentiated through the loop
    z = np.zeros_like(x0)
    for _ in range(12):
        z = np.tanh(a @ z + x0)
    return np.sum(z ** 2)


def input_gradient_penalty(w, x):
    def critic(xi):
        return np.sum(np.tanh(xi @ w))

    g = srcjax.vmap(srcjax.grad(critic))(x)
    norms = np.sqrt(np.sum(g ** 2, axis=-1) + 1e-12)
    return np.mean((norms - 1.0) ** 2)


def hessian_trace_inside(w):
    def f(u):
        return np.sum(np.sin(u) * u ** 2)

    h = srcjax.hessian(f)(w)
    return np.trace(h) + np.sum(srcjax.jacfwd(srcjax.grad(f))(w))


# -- losses -------------------------------------------------------------------------------------------------


def focal_loss(logits, labels, gamma=2.0):
    p = 1.0 / (1.0 + np.exp(-logits))
    pt = np.where(labels == 1, p, 1.0 - p)
    return -np.mean((1.0 - pt) ** gamma * np.log(np.clip(pt, 1e-7, 1.0)))


def multiclass_hinge(scores, labels):
    correct = np.take_along_axis(scores, labels[:, None], axis=1)
    margins = np.maximum(0.0, scores - correct + 1.0)
    margins = np.where(np.arange(scores.shape[1])[None, :] == labels[:, None], 0.0, margins)
    return np.mean(np.sum(margins, axis=1))


def stable_softmax_xent(logits, labels):
    z = logits - lax.stop_gradient(np.max(logits, axis=-1, keepdims=True))
    logz = np.log(np.sum(np.exp(z), axis=-1))
    picked = np.take_along_axis(z, labels[:, None], axis=-1)[:, 0]
    return np.mean(logz - picked)


def cosine_contrastive(a, b, temp):
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    sims = a @ b.T / temp
    lse = np.log(np.sum(np.exp(sims), axis=1))
    return np.mean(lse - np.diag(sims))


def dict_in_axes_apply(params, x):
    # vmapped over examples with a dict of in_axes: the bias per example, the weight shared
    return np.tanh(x @ params["w"] + params["b"])


def vmap_dict_in_axes(params, xs):
    return srcjax.vmap(dict_in_axes_apply, in_axes=({"w": None, "b": 0}, 0))(params, xs)
