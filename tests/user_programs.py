"""Programs written as JAX users write them (tutorials, research code), in NumPy: the corpus of
tests/test_user_programs.py.

Each function here is plain user code: module-level, NumPy API, small helpers, parameters in lists of tuples,
dicts, NamedTuples and a registered dataclass, ``srcjax.grad``/``vmap``/``jvp``/... called inside where a user
would call ``jax.grad``/... . The test runs the same text again with ``np`` bound to ``jax.numpy`` and
``srcjax`` to jax (its oracle); nothing here knows about the test.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

import srcjax

# -- helpers, as users write them ---------------------------------------------------------------------------


def relu(x):
    return np.maximum(x, 0.0)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x):
    return np.logaddexp(x, 0.0)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def logsumexp(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def log_softmax(z):
    z = z - np.max(z, axis=-1, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))


def softmax(z, axis=-1):
    z = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta


def pairwise_sq_dists(a, b):
    d = a[:, None, :] - b[None, :, :]
    return np.sum(d ** 2, axis=-1)


# -- classifiers ----------------------------------------------------------------------------------------------


def mlp_predict(params, x):
    for w, b in params[:-1]:
        x = relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def mlp_loss(params, x, y_onehot):
    logits = mlp_predict(params, x)
    return -np.mean(np.sum(y_onehot * log_softmax(logits), axis=-1))


def mlp_loss_labels(params, x, labels):
    logp = log_softmax(mlp_predict(params, x))
    return -np.mean(logp[np.arange(x.shape[0]), labels])


def accuracy(params, x, labels):
    pred = np.argmax(mlp_predict(params, x), axis=-1)
    return np.mean(pred == labels)


def cnn_loss(params, images, y_onehot):
    h = srcjax.lax.conv_general_dilated(images, params["conv"], window_strides=(1, 1), padding="SAME",
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"))
    h = relu(h + params["conv_b"][None, :, None, None])
    n, c, hh, ww = h.shape
    h = h.reshape(n, c, hh // 2, 2, ww // 2, 2).mean(axis=(3, 5))
    h = h.reshape(n, -1)
    logits = h @ params["dense"] + params["dense_b"]
    return -np.mean(np.sum(y_onehot * log_softmax(logits), axis=-1))


def logistic_loss(w, b, x, y, l2):
    z = x @ w + b
    p = sigmoid(z)
    nll = -np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))
    return nll + 0.5 * l2 * np.sum(w ** 2)


def logistic_loss_stable(w, x, y):
    z = x @ w
    return np.mean(softplus(z) - y * z)


def logistic_newton_step(w, x, y):
    g = srcjax.grad(logistic_loss_stable)(w, x, y)
    h = srcjax.hessian(logistic_loss_stable)(w, x, y)
    return w - np.linalg.solve(h + 1e-6 * np.eye(w.shape[0]), g)


def ridge_fit(lam, x, y):
    d = x.shape[1]
    return np.linalg.solve(x.T @ x + lam * np.eye(d), x.T @ y)


def ridge_validation_loss(log_lam, x_tr, y_tr, x_va, y_va):
    w = ridge_fit(np.exp(log_lam), x_tr, y_tr)
    r = x_va @ w - y_va
    return np.mean(r ** 2)


def poly_regression_loss(coef, t, y):
    deg = coef.shape[0]
    feats = t[:, None] ** np.arange(deg)
    return np.mean((feats @ coef - y) ** 2)


# -- recurrent and attention models ---------------------------------------------------------------------------


def lstm_loss(params, xs, target):
    hdim = params["wh"].shape[0]
    h = np.zeros(hdim, dtype=xs.dtype)
    c = np.zeros(hdim, dtype=xs.dtype)
    for t in range(xs.shape[0]):
        z = xs[t] @ params["wx"] + h @ params["wh"] + params["b"]
        i, f, o, g = np.split(z, 4)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
    return np.sum((h - target) ** 2)


class GRUParams(NamedTuple):
    wz: np.ndarray
    wr: np.ndarray
    wn: np.ndarray
    uz: np.ndarray
    ur: np.ndarray
    un: np.ndarray


def gru_cell(p, h, x):
    z = sigmoid(x @ p.wz + h @ p.uz)
    r = sigmoid(x @ p.wr + h @ p.ur)
    n = np.tanh(x @ p.wn + (r * h) @ p.un)
    return (1 - z) * n + z * h


def gru_encode(p, xs):
    h = np.zeros(p.uz.shape[0], dtype=xs.dtype)
    hs = []
    for t in range(xs.shape[0]):
        h = gru_cell(p, h, xs[t])
        hs.append(h)
    return np.stack(hs)


def rnn_scan_loss(w_h, w_x, xs):
    def step(h, x):
        h = np.tanh(h @ w_h + x @ w_x)
        return h, np.sum(h ** 2)
    h0 = np.zeros(w_h.shape[0], dtype=xs.dtype)
    h, energies = srcjax.lax.scan(step, h0, xs)
    return np.sum(energies) + np.sum(h)


def attention(q, k, v, causal):
    d = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)
    if causal:
        n = scores.shape[-1]
        mask = np.tril(np.ones((n, n), dtype=bool))
        scores = np.where(mask, scores, -1e9)
    return softmax(scores) @ v


def self_attention(params, x):
    q = x @ params["wq"]
    k = x @ params["wk"]
    v = x @ params["wv"]
    return attention(q, k, v, True) @ params["wo"]


def multi_head_attention(params, x, n_heads):
    t, d = x.shape
    hd = d // n_heads
    q = (x @ params["wq"]).reshape(t, n_heads, hd).transpose(1, 0, 2)
    k = (x @ params["wk"]).reshape(t, n_heads, hd).transpose(1, 0, 2)
    v = (x @ params["wv"]).reshape(t, n_heads, hd).transpose(1, 0, 2)
    out = attention(q, k, v, True)
    return out.transpose(1, 0, 2).reshape(t, d) @ params["wo"]


def transformer_block(params, x):
    h = x + multi_head_attention(params["attn"], layer_norm(x, params["ln1_g"], params["ln1_b"]), 2)
    m = layer_norm(h, params["ln2_g"], params["ln2_b"])
    m = gelu(m @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return h + m


def transformer_loss(params, x, target):
    return np.mean((transformer_block(params, x) - target) ** 2)


# -- probabilistic models -------------------------------------------------------------------------------------


def rbf_kernel(x1, x2, log_ls, log_sf):
    return np.exp(2 * log_sf) * np.exp(-0.5 * pairwise_sq_dists(x1, x2) / np.exp(2 * log_ls))


def gp_neg_log_likelihood(hyp, x, y):
    log_ls, log_sf, log_sn = hyp[0], hyp[1], hyp[2]
    n = x.shape[0]
    k = rbf_kernel(x, x, log_ls, log_sf) + (np.exp(2 * log_sn) + 1e-6) * np.eye(n)
    chol = np.linalg.cholesky(k)
    alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, y))
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(chol))) + 0.5 * n * np.log(2 * np.pi)


def gp_predict_mean(hyp, x, y, x_star):
    n = x.shape[0]
    k = rbf_kernel(x, x, hyp[0], hyp[1]) + np.exp(2 * hyp[2]) * np.eye(n)
    return rbf_kernel(x_star, x, hyp[0], hyp[1]) @ np.linalg.solve(k, y)


def gmm_log_likelihood(logits, means, log_scales, x):
    log_w = log_softmax(logits)
    z = (x[:, None] - means[None, :]) / np.exp(log_scales)[None, :]
    comp = -0.5 * z ** 2 - log_scales[None, :] - 0.5 * np.log(2 * np.pi)
    return np.sum(logsumexp(comp + log_w[None, :], axis=1))


def vae_elbo(params, x, eps):
    h = np.tanh(x @ params["enc_w"] + params["enc_b"])
    mu = h @ params["mu_w"]
    logvar = h @ params["lv_w"]
    z = mu + np.exp(0.5 * logvar) * eps
    x_logits = z @ params["dec_w"] + params["dec_b"]
    rec = np.sum(x * x_logits - softplus(x_logits), axis=-1)
    kl = -0.5 * np.sum(1 + logvar - mu ** 2 - np.exp(logvar), axis=-1)
    return np.mean(rec - kl)


def bayes_linreg_posterior(x, y, alpha, beta):
    d = x.shape[1]
    prec = alpha * np.eye(d) + beta * x.T @ x
    chol = np.linalg.cholesky(prec)
    cov = np.linalg.inv(prec)
    mean = beta * cov @ x.T @ y
    logdet = 2 * np.sum(np.log(np.diag(chol)))
    return mean, logdet


class KalmanParams(NamedTuple):
    a: np.ndarray
    c: np.ndarray
    log_q: np.ndarray
    log_r: np.ndarray


def kalman_filter_nll(p, ys, m0, p0):
    n = m0.shape[0]
    q = np.exp(p.log_q) * np.eye(n)
    r = np.exp(p.log_r) * np.eye(ys.shape[1])
    m, cov = m0, p0
    nll = 0.0
    for t in range(ys.shape[0]):
        m = p.a @ m
        cov = p.a @ cov @ p.a.T + q
        s = p.c @ cov @ p.c.T + r
        innov = ys[t] - p.c @ m
        gain = cov @ p.c.T @ np.linalg.inv(s)
        m = m + gain @ innov
        cov = cov - gain @ s @ gain.T
        sign, logdet = np.linalg.slogdet(s)
        nll = nll + 0.5 * (innov @ np.linalg.solve(s, innov) + logdet)
    return nll


def policy_gradient_loss(w, states, actions, returns):
    logp = log_softmax(states @ w)
    chosen = np.take_along_axis(logp, actions[:, None], axis=1)[:, 0]
    return -np.mean(chosen * (returns - np.mean(returns)))


def info_nce(za, zb, temperature):
    za = za / np.linalg.norm(za, axis=1, keepdims=True)
    zb = zb / np.linalg.norm(zb, axis=1, keepdims=True)
    logits = za @ zb.T / temperature
    return -np.mean(np.diag(log_softmax(logits)))


def batch_norm_train(x, gamma, beta):
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    return gamma * (x - mu) / np.sqrt(var + 1e-5) + beta


# -- clustering, transport, dynamic programming -------------------------------------------------------------


def kmeans_step(centroids, x):
    d2 = pairwise_sq_dists(x, centroids)
    assign = np.argmin(d2, axis=1)
    onehot = (assign[:, None] == np.arange(centroids.shape[0])[None, :]).astype(x.dtype)
    counts = onehot.sum(axis=0)
    new = (onehot.T @ x) / np.maximum(counts, 1.0)[:, None]
    return np.where(counts[:, None] > 0, new, centroids)


def kmeans_objective(centroids, x):
    return np.mean(np.min(pairwise_sq_dists(x, centroids), axis=1))


def kmeans(centroids, x, n_steps):
    for _ in range(n_steps):
        centroids = kmeans_step(centroids, x)
    return centroids


def sinkhorn(cost, a, b, eps):
    log_k = -cost / eps
    f = np.zeros_like(a)
    g = np.zeros_like(b)
    for _ in range(20):
        f = eps * (np.log(a) - logsumexp(log_k + g[None, :] / eps, axis=1))
        g = eps * (np.log(b) - logsumexp(log_k + f[:, None] / eps, axis=0))
    plan = np.exp(log_k + f[:, None] / eps + g[None, :] / eps)
    return np.sum(plan * cost)


def value_iteration(rewards, transitions, gamma):
    v = np.zeros(rewards.shape[0], dtype=rewards.dtype)
    for _ in range(30):
        q = rewards + gamma * np.einsum("sat,t->sa", transitions, v)
        v = np.max(q, axis=1)
    return v


# -- ODEs, solvers, physics -----------------------------------------------------------------------------------


def lotka_volterra(y, theta):
    prey, pred = y[0], y[1]
    a, b, c, d = theta[0], theta[1], theta[2], theta[3]
    return np.stack([a * prey - b * prey * pred, c * prey * pred - d * pred])


def rk4_step(y, theta, dt):
    k1 = lotka_volterra(y, theta)
    k2 = lotka_volterra(y + 0.5 * dt * k1, theta)
    k3 = lotka_volterra(y + 0.5 * dt * k2, theta)
    k4 = lotka_volterra(y + dt * k3, theta)
    return y + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


def rk4_fit_loss(theta, y0, observed):
    y = y0
    loss = 0.0
    for t in range(observed.shape[0]):
        y = rk4_step(y, theta, 0.1)
        loss = loss + np.sum((y - observed[t]) ** 2)
    return loss


def pendulum_euler(state, damping, n_steps):
    theta, omega = state[0], state[1]
    dt = 0.05
    for _ in range(n_steps):
        theta, omega = theta + dt * omega, omega - dt * (np.sin(theta) + damping * omega)
    return np.stack([theta, omega])


def neural_ode_loss(params, y0, target):
    y = y0
    dt = 0.1
    for _ in range(8):
        h = np.tanh(y @ params["w1"] + params["b1"])
        y = y + dt * (h @ params["w2"])
    return np.mean((y - target) ** 2)


def newton_kepler(mean_anomaly, ecc):
    e_anom = mean_anomaly
    k = 0
    residual = e_anom - ecc * np.sin(e_anom) - mean_anomaly
    while np.abs(residual) > 1e-12 and k < 50:
        e_anom = e_anom - residual / (1.0 - ecc * np.cos(e_anom))
        residual = e_anom - ecc * np.sin(e_anom) - mean_anomaly
        k += 1
    return e_anom


def bisection_root(target, lo, hi):
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        too_big = mid ** 3 + mid > target
        hi = np.where(too_big, mid, hi)
        lo = np.where(too_big, lo, mid)
    return 0.5 * (lo + hi)


def decay_residuals(p, t, y):
    return p[0] * np.exp(-p[1] * t) + p[2] - y


def gauss_newton_step(p, t, y):
    r = decay_residuals(p, t, y)
    jac = srcjax.jacfwd(decay_residuals)(p, t, y)
    return p - np.linalg.solve(jac.T @ jac, jac.T @ r)


def levenberg_marquardt(p, t, y, lam):
    for _ in range(3):
        r = decay_residuals(p, t, y)
        jac = srcjax.jacrev(decay_residuals)(p, t, y)
        jtj = jac.T @ jac
        p = p - np.linalg.solve(jtj + lam * np.diag(np.diag(jtj)), jac.T @ r)
    return p


def nbody_energy(pos, masses):
    diff = pos[:, None, :] - pos[None, :, :]
    r = np.sqrt(np.sum(diff ** 2, axis=-1) + 1e-2)
    n = pos.shape[0]
    pair = masses[:, None] * masses[None, :] / r
    pair = np.where(np.eye(n, dtype=bool), 0.0, pair)
    return -0.5 * np.sum(pair)


def nbody_forces(pos, masses):
    diff = pos[None, :, :] - pos[:, None, :]
    r2 = np.sum(diff ** 2, axis=-1) + 1e-2
    inv_r3 = r2 ** -1.5
    return np.sum(masses[None, :, None] * diff * inv_r3[:, :, None], axis=1) * masses[:, None]


def leapfrog(pos, vel, masses, n_steps):
    dt = 0.01
    for _ in range(n_steps):
        force = -srcjax.grad(nbody_energy)(pos, masses)
        vel = vel + 0.5 * dt * force / masses[:, None]
        pos = pos + dt * vel
        force = -srcjax.grad(nbody_energy)(pos, masses)
        vel = vel + 0.5 * dt * force / masses[:, None]
    return pos, vel


def heat_equation(u0, kappa, n_steps):
    u = u0
    for _ in range(n_steps):
        lap = np.roll(u, 1) - 2 * u + np.roll(u, -1)
        u = u + 0.1 * kappa * lap
    return np.sum(u ** 2)


# -- optimizers and meta-learning -----------------------------------------------------------------------------


def sgd_step(params, x, y, lr):
    grads = srcjax.grad(mlp_loss)(params, x, y)
    return srcjax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


class AdamState(NamedTuple):
    m: dict
    v: dict
    count: np.ndarray


def regression_loss(params, x, y):
    pred = np.tanh(x @ params["w"] + params["b"]) @ params["v"]
    return np.mean((pred - y) ** 2)


def adam_step(params, state, x, y):
    lr, b1, b2, eps = 1e-2, 0.9, 0.999, 1e-8
    loss, grads = srcjax.value_and_grad(regression_loss)(params, x, y)
    count = state.count + 1
    m = srcjax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.m, grads)
    v = srcjax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g ** 2, state.v, grads)
    bc1 = 1 - b1 ** count
    bc2 = 1 - b2 ** count
    new = srcjax.tree_util.tree_map(lambda p, m, v: p - lr * (m / bc1) / (np.sqrt(v / bc2) + eps), params, m, v)
    return new, AdamState(m, v, count), loss


def train_regression(params, x, y):
    for _ in range(4):
        g = srcjax.grad(regression_loss)(params, x, y)
        params = {k: params[k] - 0.1 * g[k] for k in params}
    return regression_loss(params, x, y)


def per_example_loss(params, x, y):
    pred = np.tanh(x @ params["w"] + params["b"]) @ params["v"]
    return (pred - y) ** 2


def dp_sgd_grads(params, xs, ys, clip):
    grads = srcjax.vmap(srcjax.grad(per_example_loss), in_axes=(None, 0, 0))(params, xs, ys)
    leaves = srcjax.tree_util.tree_leaves(grads)
    sq = sum(np.sum(g.reshape(g.shape[0], -1) ** 2, axis=1) for g in leaves)
    scale = np.minimum(1.0, clip / (np.sqrt(sq) + 1e-6))
    return srcjax.tree_util.tree_map(lambda g: np.mean(g * scale.reshape((-1,) + (1,) * (g.ndim - 1)), axis=0),
                                     grads)


def maml_inner(params, x, y, alpha):
    g = srcjax.grad(regression_loss)(params, x, y)
    return {k: params[k] - alpha * g[k] for k in params}


def maml_loss(params, x_support, y_support, x_query, y_query):
    adapted = maml_inner(params, x_support, y_support, 0.1)
    return regression_loss(adapted, x_query, y_query)


def maml_batch_loss(params, xs_s, ys_s, xs_q, ys_q):
    losses = srcjax.vmap(maml_loss, in_axes=(None, 0, 0, 0, 0))(params, xs_s, ys_s, xs_q, ys_q)
    return np.mean(losses)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def hvp(x, v):
    return srcjax.jvp(srcjax.grad(rosenbrock), (x,), (v,))[1]


def hvp_rev(x, v):
    _, vjp_fn = srcjax.vjp(srcjax.grad(rosenbrock), x)
    return vjp_fn(v)[0]


@dataclasses.dataclass
class Linear:
    w: np.ndarray
    b: np.ndarray


srcjax.tree_util.register_dataclass(Linear)


def ensemble_member(layer, x):
    return np.tanh(x @ layer.w + layer.b).sum(axis=-1)


def ensemble_mean(layers, x):
    return np.mean(srcjax.vmap(ensemble_member, in_axes=(Linear(0, 0), None))(layers, x), axis=0)


def ensemble_loss(layers, x, y):
    return np.mean((ensemble_mean(layers, x) - y) ** 2)


# -- batched matrix functions ---------------------------------------------------------------------------------


def spd_logdet_trace(a):
    spd = a @ a.T + a.shape[0] * np.eye(a.shape[0])
    sign, logdet = np.linalg.slogdet(spd)
    return logdet + np.trace(np.linalg.inv(spd))


def expm_taylor(a):
    out = np.eye(a.shape[-1], dtype=a.dtype)
    term = np.eye(a.shape[-1], dtype=a.dtype)
    for k in range(1, 12):
        term = term @ a / k
        out = out + term
    return out


def pca_reconstruction(x, k):
    xc = x - x.mean(axis=0)
    cov = xc.T @ xc / (x.shape[0] - 1)
    evals, evecs = np.linalg.eigh(cov)
    top = evecs[:, -k:]
    recon = xc @ top @ top.T
    return np.mean((xc - recon) ** 2)


# -- custom rules, lax control flow, data-dependent control ---------------------------------------------------


@srcjax.custom_jvp
def safe_log(x):
    return np.log(np.maximum(x, 1e-30))


@safe_log.defjvp
def safe_log_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return safe_log(x), t / np.maximum(x, 1e-30)


@srcjax.custom_vjp
def clip_gradient(x, bound):
    return x


def clip_gradient_fwd(x, bound):
    return x, bound


def clip_gradient_bwd(bound, g):
    return np.clip(g, -bound, bound), None


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def entropy_loss(logits, bound):
    p = softmax(clip_gradient(logits, bound))
    return -np.sum(p * safe_log(p))


def hyper_sgd(log_lr, params, x, y):
    lr = np.exp(log_lr)

    def body(i, p):
        g = srcjax.grad(regression_loss)(p, x, y)
        return srcjax.tree_util.tree_map(lambda a, b: a - lr * b, p, g)

    params = srcjax.lax.fori_loop(0, 4, body, params)
    return regression_loss(params, x, y)


def fixed_point_sqrt(a):
    def cond(state):
        x, k = state
        return (np.abs(x * x - a) > 1e-9) & (k < 100)

    def body(state):
        x, k = state
        return 0.5 * (x + a / x), k + 1

    x, _ = srcjax.lax.while_loop(cond, body, (a, 0))
    return x


def huber(r, delta):
    if np.abs(r) < delta:
        return 0.5 * r ** 2
    return delta * (np.abs(r) - 0.5 * delta)


def huber_regression(w, x, y, delta):
    r = x @ w - y
    losses = srcjax.vmap(huber, in_axes=(0, None))(r, delta)
    return np.mean(losses)


def clipped_grad_step(w, x, y, max_norm):
    g = srcjax.grad(logistic_loss_stable)(w, x, y)
    norm = np.linalg.norm(g)
    if norm > max_norm:
        g = g * (max_norm / norm)
    return w - 0.5 * g


def global_norm_clip(grads, max_norm):
    gnorm = np.sqrt(sum(np.sum(g ** 2) for g in srcjax.tree_util.tree_leaves(grads)))
    scale = np.minimum(1.0, max_norm / (gnorm + 1e-6))
    return srcjax.tree_util.tree_map(lambda g: g * scale, grads)


def clipped_train_step(params, x, y):
    grads = srcjax.grad(regression_loss)(params, x, y)
    grads = global_norm_clip(grads, 0.5)
    return srcjax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)


def sqrt_relu_safe(x):
    safe = np.where(x > 0, x, 1.0)
    return np.sum(np.where(x > 0, np.sqrt(safe), 0.0))


# -- indexing, scatter, gathers ------------------------------------------------------------------------------


def embedding_bag_loss(emb, tokens, target):
    vecs = emb[tokens]
    pooled = vecs.mean(axis=0)
    return np.sum((pooled - target) ** 2)


def segment_mean(values, segment_ids, n_segments):
    sums = np.zeros(n_segments, dtype=values.dtype).at[segment_ids].add(values)
    counts = np.zeros(n_segments, dtype=values.dtype).at[segment_ids].add(1.0)
    return sums / np.maximum(counts, 1.0)


def build_tridiagonal(diag, off):
    n = diag.shape[0]
    m = np.zeros((n, n), dtype=diag.dtype)
    for i in range(n):
        m[i, i] = diag[i]
        if i + 1 < n:
            m[i, i + 1] = off[i]
            m[i + 1, i] = off[i]
    return np.linalg.slogdet(m)[1]


def discounted_returns_loss(rewards, values, gamma):
    g = 0.0
    returns = []
    for t in range(rewards.shape[0] - 1, -1, -1):
        g = rewards[t] + gamma * g
        returns.append(g)
    returns = np.stack(returns[::-1])
    return np.mean((returns - values) ** 2)


def topk_mean(x, k):
    return np.mean(np.sort(x)[-k:])


def triplet_loss(anchor, positive, negative, margin):
    dp = np.sum((anchor - positive) ** 2, axis=-1)
    dn = np.sum((anchor - negative) ** 2, axis=-1)
    return np.mean(np.maximum(dp - dn + margin, 0.0))


def label_smoothing_ce(logits, labels, eps):
    k = logits.shape[-1]
    onehot = (labels[:, None] == np.arange(k)[None, :]).astype(logits.dtype)
    target = onehot * (1 - eps) + eps / k
    return -np.mean(np.sum(target * log_softmax(logits), axis=-1))


def gumbel_softmax_sample(logits, u, tau):
    g = -np.log(-np.log(np.clip(u, 1e-10, 1.0 - 1e-7)))
    return softmax((logits + g) / tau)


def hmm_log_likelihood(log_pi, log_a, log_b, obs):
    alpha = log_pi + log_b[:, obs[0]]
    for t in range(1, obs.shape[0]):
        alpha = logsumexp(alpha[:, None] + log_a, axis=0) + log_b[:, obs[t]]
    return logsumexp(alpha, axis=0)


def rotation_loss(angles, points, target):
    total = 0.0
    for i in range(angles.shape[0]):
        c, s = np.cos(angles[i]), np.sin(angles[i])
        rot = np.array([[c, -s], [s, c]])
        total = total + np.sum((points @ rot.T - target[i]) ** 2)
    return total


def langevin(x, noise, eta):
    for t in range(noise.shape[0]):
        x = x - eta * srcjax.grad(rosenbrock)(x) + np.sqrt(2 * eta) * noise[t]
    return x


def warmup_lr(step, base, warmup):
    return base * np.minimum(1.0, (step + 1) / warmup) / np.sqrt(np.maximum(step + 1, warmup))


def nuclear_norm_loss(w, target):
    s = np.linalg.svd(w - target, compute_uv=False)
    return np.sum(s)


def qr_orthogonality(w):
    q, r = np.linalg.qr(w)
    return np.sum(q[:, 0] * w[:, 1]) + np.sum(np.abs(np.diag(r)))


def spectrum_loss(signal, target_power):
    spec = np.fft.rfft(signal)
    power = np.abs(spec) ** 2 / signal.shape[0]
    return np.mean((np.log1p(power) - np.log1p(target_power)) ** 2)


def mlp_layers_predict(layers, x):
    for layer in layers[:-1]:
        x = np.tanh(x @ layer.w + layer.b)
    return x @ layers[-1].w + layers[-1].b


def mlp_layers_loss(layers, x, y):
    return np.mean((mlp_layers_predict(layers, x) - y) ** 2)


def ensemble_dict_predict(params, x):
    return np.tanh(x @ params["w"] + params["b"]) @ params["v"]


def ensemble_dict_loss(params, x, y):
    preds = srcjax.vmap(ensemble_dict_predict, in_axes=({"w": 0, "b": 0, "v": None}, None))(params, x)
    return np.mean((preds - y[None, :]) ** 2)


def loss_and_grad_norm(params, x, y):
    loss, grads = srcjax.value_and_grad(regression_loss)(params, x, y)
    return loss, np.sqrt(sum(np.sum(g ** 2) for g in grads.values()))


def input_saliency(params, x):
    return srcjax.grad(lambda xi: np.max(mlp_predict(params, xi)))(x)


def per_example_cnn(params, image):
    h = srcjax.lax.conv_general_dilated(image[None], params["conv"], window_strides=(1, 1), padding="VALID",
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"))
    h = relu(h)[0]
    return np.sum(h.mean(axis=(1, 2)) * params["head"])


# -- minimized from the corpus's failures (regression tests in tests/test_user_programs.py) -------------------


def two_layer_rebinding(w1, w2, x):
    w = w1
    x = np.tanh(x @ w)
    w = w2
    return np.sum(x @ w)


def saliency_of_rebinding(w1, w2, x):
    return srcjax.grad(lambda xi: two_layer_rebinding(w1, w2, xi))(x)


def stacked_rebinding(x):
    r = []
    for i in range(3):
        r.append(x[i] * x[i + 1])
    r = np.stack(r[::-1])
    return np.sum(r * x[:3])


def momentum_update(params, m):
    return srcjax.tree_util.tree_map(lambda m, g: 0.9 * m + g, m, params)


def sum_of_scaled(xs, m):
    return sum(np.sum(m * x) for m, x in zip([m, 2.0 * m], xs))


def alternating_potentials(cost, a, b):
    f = np.zeros_like(a)
    g = np.zeros_like(b)
    for _ in range(2):
        f = np.max(cost + g[None, :], axis=1)
        g = np.max(cost + f[:, None], axis=0)
    return np.sum(f[:, None] * g[None, :] * cost)


def loop_target_shadowing(x, ws):
    w = x * 2.0
    y = np.sum(w * x)
    for w in ws:
        y = y + np.sum(w * x)
    return y + np.sum(w)


def mlp_saliency(params, x):
    return srcjax.grad(lambda xi: np.sum(mlp_predict(params, xi)))(x)
