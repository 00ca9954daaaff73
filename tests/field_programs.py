"""Programs as scientists and engineers write them in NumPy (simulations, hand-written optimizers, likelihoods,
filters, geometry, tables, control flow with tolerances): the corpus of tests/test_field_programs.py.

Plain user code: module-level functions over the NumPy API, small helpers, parameters in dicts, lists and
NamedTuples (with methods), defaults and keyword-only arguments, closures, ``while`` loops with tolerances,
early returns and breaks on data. The test runs the same text with ``np`` bound to ``jax.numpy`` (and
``srcjax`` to jax) as its oracle, and the functions themselves with NumPy; nothing here knows about the test.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

import srcjax

# -- physics ------------------------------------------------------------------------------------------------


def nbody_accel(pos, mass, eps=0.1):
    d = pos[None, :, :] - pos[:, None, :]
    r2 = np.sum(d * d, axis=-1) + eps ** 2
    inv3 = r2 ** -1.5
    return np.sum(d * (mass[None, :] * inv3)[:, :, None], axis=1)


def nbody_step(pos, vel, mass, dt=0.01):
    a = nbody_accel(pos, mass)
    vel = vel + dt * a
    pos = pos + dt * vel
    return pos, vel


def nbody_kinetic_after(pos, vel, mass):
    for _ in range(4):
        pos, vel = nbody_step(pos, vel, mass, dt=0.02)
    return 0.5 * np.sum(mass[:, None] * vel ** 2)


def heat_periodic(u, alpha):
    for _ in range(6):
        lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
        u = u + alpha * lap
    return u


def heat_periodic_energy(u, alpha):
    return np.sum(heat_periodic(u, alpha) ** 2)


def heat_dirichlet(u, alpha, left=0.0, right=0.0):
    for _ in range(5):
        inner = u[1:-1] + alpha * (u[2:] - 2 * u[1:-1] + u[:-2])
        u = np.concatenate([np.array([left]), inner, np.array([right])])
    return u


def heat_2d(u, kappa):
    for _ in range(3):
        lap = (np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) + np.roll(u, 1, axis=1) + np.roll(u, -1, axis=1)
               - 4 * u)
        u = u + kappa * lap
    return u.mean() + (u[1:-1, 1:-1] ** 2).sum()


def verlet_oscillator(k, x0, v0, dt=0.05, n=25):
    x, v = x0, v0
    a = -k * x
    for _ in range(n):
        x = x + v * dt + 0.5 * a * dt ** 2
        a_new = -k * x
        v = v + 0.5 * (a + a_new) * dt
        a = a_new
    return x


def pendulum_until(theta, omega, t_end, dt=0.05):
    t = 0.0 * t_end
    while t < t_end:
        omega = omega - dt * np.sin(theta)
        theta = theta + dt * omega
        t = t + dt
    return theta


def spring_energy(pos, edges, rest, k):
    d = pos[edges[:, 0]] - pos[edges[:, 1]]
    length = np.sqrt(np.sum(d ** 2, axis=1))
    return 0.5 * np.sum(k * (length - rest) ** 2)


def coulomb_energy(pos, q):
    n = pos.shape[0]
    i, j = np.triu_indices(n, k=1)
    r = np.linalg.norm(pos[i] - pos[j], axis=-1)
    return np.sum(q[i] * q[j] / r)


def lennard_jones(pos, sigma=1.0, epsilon=1.0):
    d = pos[:, None, :] - pos[None, :, :]
    r2 = np.sum(d ** 2, -1) + np.eye(pos.shape[0])
    s6 = (sigma ** 2 / r2) ** 3
    e = 4 * epsilon * (s6 ** 2 - s6)
    return np.sum(np.triu(e, 1))


def projectile_range(v0, angle, drag):
    x = np.zeros_like(v0)
    y = np.zeros_like(v0)
    vx = v0 * np.cos(angle)
    vy = v0 * np.sin(angle)
    dt = 0.02
    for _ in range(40):
        speed = np.sqrt(vx ** 2 + vy ** 2)
        vx = vx - dt * drag * speed * vx
        vy = vy - dt * (9.81 + drag * speed * vy)
        x = x + dt * vx
        y = y + dt * vy
    return x, y


# -- optimizers written by hand -----------------------------------------------------------------------------


def adam_update(params, grads, m, v, step, lr=1e-2, b1=0.9, b2=0.999, eps=1e-8):
    t = step + 1
    new_p, new_m, new_v = {}, {}, {}
    for k in params:
        new_m[k] = b1 * m[k] + (1 - b1) * grads[k]
        new_v[k] = b2 * v[k] + (1 - b2) * grads[k] ** 2
        mhat = new_m[k] / (1 - b1 ** t)
        vhat = new_v[k] / (1 - b2 ** t)
        new_p[k] = params[k] - lr * mhat / (np.sqrt(vhat) + eps)
    return new_p, new_m, new_v


def rmsprop_update(params, grads, sq, lr=1e-2, decay=0.9):
    out, new_sq = [], []
    for p, g, s in zip(params, grads, sq):
        s = decay * s + (1 - decay) * g * g
        out.append(p - lr * g / np.sqrt(s + 1e-6))
        new_sq.append(s)
    return out, new_sq


def quad_loss(w, x, y):
    r = x @ w - y
    return np.mean(r ** 2) + 0.01 * np.sum(w ** 2)


def momentum_descent(w, x, y, lr=0.1, beta=0.9):
    vel = np.zeros_like(w)
    for _ in range(5):
        g = srcjax.grad(quad_loss)(w, x, y)
        vel = beta * vel + g
        w = w - lr * vel
    return quad_loss(w, x, y)


def warmup_cosine(step, base_lr, warmup=10, total=100):
    if step < warmup:
        lr = base_lr * (step + 1) / warmup
    else:
        frac = (step - warmup) / (total - warmup)
        lr = 0.5 * base_lr * (1 + np.cos(np.pi * np.minimum(frac, 1.0)))
    return lr


def clip_global_norm(grads, max_norm):
    total = np.sqrt(sum(np.sum(g ** 2) for g in grads.values()))
    scale = np.minimum(1.0, max_norm / (total + 1e-6))
    return {k: g * scale for k, g in grads.items()}


def adagrad_steps(w, x, y, *, lr=0.5, eps=1e-8, steps=4):
    acc = np.zeros_like(w)
    for _ in range(steps):
        g = srcjax.grad(quad_loss)(w, x, y)
        acc = acc + g ** 2
        w = w - lr * g / (np.sqrt(acc) + eps)
    return w


def nesterov_rosenbrock(xy, lr=1e-3, mu=0.9):
    v = np.zeros_like(xy)
    for _ in range(6):
        look = xy + mu * v
        g = srcjax.grad(rosen)(look)
        v = mu * v - lr * g
        xy = xy + v
    return rosen(xy)


def rosen(p):
    return (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2


# -- probabilistic --------------------------------------------------------------------------------------------


def lse(x, axis=-1, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        out = np.squeeze(out, axis=axis)
    return out


def lse_rows_cols(x):
    return lse(x, axis=0).sum() + lse(x, axis=1, keepdims=True).mean()


def gauss_loglik_chol(x, mu, l_raw):
    d = mu.shape[0]
    cov = l_raw @ l_raw.T + 0.5 * np.eye(d)
    chol = np.linalg.cholesky(cov)
    diff = x - mu
    z = np.linalg.solve(chol, diff.T)
    maha = np.sum(z ** 2, axis=0)
    logdet = 2.0 * np.sum(np.log(np.diag(chol)))
    return np.sum(-0.5 * (maha + logdet + d * np.log(2 * np.pi)))


def gauss_loglik_slogdet(x, mu, cov_raw):
    cov = cov_raw @ cov_raw.T + np.eye(cov_raw.shape[0])
    sign, logdet = np.linalg.slogdet(cov)
    diff = x - mu
    sol = np.linalg.solve(cov, diff.T).T
    return -0.5 * np.mean(np.sum(diff * sol, axis=1)) - 0.5 * sign * logdet


def gmm_em_step(x, means, log_w, log_var):
    var = np.exp(log_var)
    d2 = (x[:, None, :] - means[None, :, :]) ** 2
    ll = -0.5 * np.sum(d2 / var + log_var + np.log(2 * np.pi), axis=-1) + log_w
    resp = np.exp(ll - lse(ll, axis=1, keepdims=True))
    nk = resp.sum(axis=0) + 1e-8
    new_means = (resp.T @ x) / nk[:, None]
    new_log_w = np.log(nk / x.shape[0])
    return new_means, new_log_w, lse(ll, axis=1).sum()


def softmax_xent_int(logits, labels):
    logp = logits - lse(logits, axis=-1, keepdims=True)
    picked = np.take_along_axis(logp, labels[:, None], axis=1)
    return -np.mean(picked)


def kl_diag_gauss(mu1, logs1, mu2, logs2):
    v1, v2 = np.exp(2 * logs1), np.exp(2 * logs2)
    return np.sum(logs2 - logs1 + (v1 + (mu1 - mu2) ** 2) / (2 * v2) - 0.5)


def kl_categorical(p_logits, q_logits):
    p = np.exp(p_logits - lse(p_logits, keepdims=True))
    return np.sum(p * (p_logits - q_logits), axis=-1) - lse(p_logits) + lse(q_logits)


def binary_xent_clipped(p, y):
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))


def student_t_loglik(x, loc, log_scale, df=4.0):
    s = np.exp(log_scale)
    z = (x - loc) / s
    c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return np.sum(c - log_scale - (df + 1) / 2 * np.log1p(z ** 2 / df))


def effective_sample_size(log_w):
    w = np.exp(log_w - np.max(log_w))
    return np.sum(w) ** 2 / np.sum(w ** 2)


def poisson_glm_nll(beta, x, counts):
    eta = x @ beta
    return np.sum(np.exp(eta) - counts * eta)


def entropy_of_probs(p):
    return -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=-1)


# -- signal ------------------------------------------------------------------------------------------------------


def smooth_convolve(x, kernel):
    k = kernel / np.sum(kernel)
    return np.convolve(x, k, mode="same")


def lagged_correlation(a, b):
    c = np.correlate(a - a.mean(), b - b.mean(), mode="full")
    return c / (np.std(a) * np.std(b) * a.shape[0])


def moving_average(x, w=3):
    c = np.cumsum(np.concatenate([np.zeros(1, dtype=x.dtype), x]))
    return (c[w:] - c[:-w]) / w


def ema_filter(x, alpha):
    y = x[0]
    out = [y]
    for t in range(1, x.shape[0]):
        y = alpha * y + (1 - alpha) * x[t]
        out.append(y)
    return np.stack(out)


def biquad(x, b, a):
    y = np.zeros_like(x)
    for i in range(x.shape[0]):
        acc = b[0] * x[i]
        if i >= 1:
            acc = acc + b[1] * x[i - 1] - a[0] * y[i - 1]
        if i >= 2:
            acc = acc + b[2] * x[i - 2] - a[1] * y[i - 2]
        y[i] = acc
    return y


def total_variation(x, h):
    dx = np.gradient(x, h)
    return np.sum(np.abs(np.diff(x))) + np.mean(dx ** 2)


def curvature_penalty(y):
    return np.sum(np.diff(y, n=2) ** 2) + np.sum(np.diff(y, axis=0, prepend=0.0) ** 2)


def detrend(t, y):
    a = np.stack([t, np.ones_like(t)], axis=1)
    coef = np.linalg.solve(a.T @ a, a.T @ y)
    return y - a @ coef


def spectral_power(x):
    win = np.hanning(x.shape[-1])
    f = np.fft.rfft(x * win)
    return np.abs(f) ** 2


# -- geometry -----------------------------------------------------------------------------------------------------


def rotate_2d(points, theta):
    c, s = np.cos(theta), np.sin(theta)
    r = np.array([[c, -s], [s, c]])
    return points @ r.T


def quat_mul(q, r):
    w1, x1, y1, z1 = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    w2, x2, y2, z2 = r[..., 0], r[..., 1], r[..., 2], r[..., 3]
    return np.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
                     w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2], axis=-1)


def quat_rotate(q, v):
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    qv = np.concatenate([np.zeros(v.shape[:-1] + (1,), dtype=v.dtype), v], axis=-1)
    conj = q * np.array([1.0, -1.0, -1.0, -1.0])
    return quat_mul(quat_mul(q, qv), conj)[..., 1:]


def rodrigues(axis_angle, v):
    theta = np.linalg.norm(axis_angle)
    k = axis_angle / theta
    return v * np.cos(theta) + np.cross(k, v) * np.sin(theta) + k * np.dot(k, v) * (1 - np.cos(theta))


def pairwise_distances(x, y):
    d2 = np.sum(x ** 2, 1)[:, None] + np.sum(y ** 2, 1)[None, :] - 2 * x @ y.T
    return np.sqrt(np.maximum(d2, 1e-12))


def chamfer(a, b):
    d = pairwise_distances(a, b)
    return np.mean(np.min(d, axis=1)) + np.mean(np.min(d, axis=0))


def norm_zoo(x):
    return (np.linalg.norm(x, axis=1, keepdims=True).sum() + np.linalg.norm(x, ord=1, axis=0).sum()
            + np.linalg.norm(x, ord=np.inf, axis=1).sum() + np.linalg.norm(x) + np.linalg.norm(x, "fro")
            + np.linalg.norm(x[0], ord=3))


def polygon_area(xy):
    x, y = xy[:, 0], xy[:, 1]
    return 0.5 * np.abs(np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y))


def triangle_normals(verts, faces):
    a, b, c = verts[faces[:, 0]], verts[faces[:, 1]], verts[faces[:, 2]]
    n = np.cross(b - a, c - a)
    return n / np.linalg.norm(n, axis=-1, keepdims=True)


def procrustes_residual(a, b):
    m = b.T @ a
    u, _, vt = np.linalg.svd(m)
    r = u @ vt
    return np.sum((a @ r.T - b) ** 2)


# -- tabular ------------------------------------------------------------------------------------------------------


def masked_mean(x, mask):
    return np.where(mask, x, 0.0).sum(axis=0) / np.maximum(mask.sum(axis=0), 1)


def nanmean_by_hand(x):
    ok = ~np.isnan(x)
    filled = np.where(ok, x, 0.0)
    return filled.sum(axis=0) / ok.sum(axis=0) + np.nanmean(x, axis=1).sum()


def rank_transform(x):
    ranks = np.argsort(np.argsort(x, axis=0), axis=0)
    return ranks / (x.shape[0] - 1)


def histogram_add_at(x, lo, hi, nbins=5):
    idx = np.clip(((x - lo) / (hi - lo) * nbins).astype(np.int64), 0, nbins - 1)
    counts = np.zeros(nbins)
    np.add.at(counts, idx, 1.0)
    return counts


def weighted_bincount(idx, w):
    return np.bincount(idx, weights=w, minlength=4)


def standardize(x):
    mu = x.mean(axis=0)
    sd = x.std(axis=0, ddof=1)
    return (x - mu) / sd


def group_means(x, labels, k=3):
    onehot = (labels[:, None] == np.arange(k)).astype(x.dtype)
    return (onehot.T @ x) / np.maximum(onehot.sum(axis=0), 1.0)[:, None]


def winsorize(x):
    lo, hi = np.percentile(x, 10), np.percentile(x, 90)
    return np.clip(x, lo, hi)


def robust_zscore(x):
    med = np.median(x, axis=0)
    mad = np.median(np.abs(x - med), axis=0)
    return (x - med) / (1.4826 * mad + 1e-9)


def int_table_stats(counts):
    total = counts.sum()
    share = counts / total
    return share, counts.mean(), counts.max() - counts.min()


# -- control flow, closures, parameters -----------------------------------------------------------------------


def newton_sqrt(a, tol=1e-6):
    x = a
    while np.abs(x * x - a) > tol * a:
        x = 0.5 * (x + a / x)
    return x


def bisect_root(c, lo=0.0, hi=4.0):
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        val = mid ** 3 - c
        if np.abs(val) < 1e-9:
            return mid
        if val > 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def first_above(x, thresh):
    idx = -1
    for i in range(x.shape[0]):
        if x[i] > thresh:
            idx = i
            break
    return idx


def sum_until_negative(x):
    total = 0.0 * x[0]
    for v in x:
        if v < 0:
            break
        total = total + v
    return total


def make_and_use_closure(w, x, scale):
    def loss(v):
        return scale * np.sum(np.tanh(x @ v) ** 2)

    return loss(w) + loss(2.0 * w)


def penalized(x, *, power=2, eps=1e-6, weight=0.1):
    return np.sum(np.abs(x) ** power + eps) * weight


def call_penalized(x):
    return penalized(x, power=3) + penalized(x, weight=0.5)


def sum_of_all(*xs):
    total = 0.0
    for x in xs:
        total = total + np.sum(x ** 2)
    return total


def sum_star_caller(a, b):
    return sum_of_all(a, b, a * b)


class Spring(NamedTuple):
    k: np.ndarray
    rest: np.ndarray

    def energy(self, x):
        return 0.5 * np.sum(self.k * (x - self.rest) ** 2)

    def force(self, x):
        return -self.k * (x - self.rest)


def spring_system(params, x):
    return params.energy(x) + 0.1 * np.sum(params.force(x) ** 2)


class Layer(NamedTuple):
    w: np.ndarray
    b: np.ndarray


def two_layer(layers, x):
    h = np.tanh(x @ layers[0].w + layers[0].b)
    out = h @ layers[1].w + layers[1].b
    return np.mean(out ** 2)


def horner(coeffs, x):
    if len(coeffs) == 1:
        return coeffs[0] * np.ones_like(x)
    return coeffs[0] + x * horner(coeffs[1:], x)


def horner_poly(x, c):
    return horner([c[0], c[1], c[2], c[3]], x)


def fixed_point_cos(x0):
    x = x0
    delta = np.ones_like(x0)
    i = 0
    while np.max(np.abs(delta)) > 1e-5 and i < 200:
        x_new = np.cos(x)
        delta = x_new - x
        x = x_new
        i = i + 1
    return x, i


def piecewise_by_branch(x, a):
    y = a * x if x > 0 else -a * x * x
    if y > 1.0:
        y = np.log(y) + 1.0
    return y


def weak_scalar_mix(x, s=2.0, n=3):
    return (x * s + n) / (n + 1) - np.float32(0.5) * x


def int_input_features(k):
    f = k.astype(np.float64)
    return np.sqrt(f + 1.0) * (k % 3) + (k // 2)


def accumulate_list_of_arrays(xs):
    out = []
    acc = np.zeros_like(xs[0])
    for x in xs:
        acc = acc + x
        out.append(acc * acc)
    return out[-1].sum() + out[0].sum()


def loop_over_rows_with_state(m, v):
    state = v
    trace = 0.0
    for row in m:
        state = np.tanh(row * state + 0.1)
        trace = trace + state.sum()
    return trace


def enumerate_weights(x, ws):
    total = 0.0
    for i, w in enumerate(ws):
        total = total + (i + 1) * np.sum(w * x)
    return total


def tolerance_gd(w, x, y, lr=0.05):
    loss = quad_loss(w, x, y)
    prev = loss + 1.0
    while prev - loss > 1e-3:
        prev = loss
        w = w - lr * srcjax.grad(quad_loss)(w, x, y)
        loss = quad_loss(w, x, y)
    return w
