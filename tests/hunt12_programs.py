"""Programs srcjax had not seen (hunt 12): the corpus of tests/test_hunt12_programs.py.

Styles no other corpus covers: log-densities as probabilistic programs write them (hierarchical models,
mixtures by logsumexp, stick-breaking, Student-t and Dirichlet through ``gammaln``, ordinal and negative binomial
likelihoods), ODE/SDE integrators (RK4 under ``lax.scan``, Heun on given noise, an adaptive step on data,
symplectic Euler under ``fori_loop``), lattices and pair potentials with masks and a reciprocal-space sum over
complex structure factors, signal processing (``np.fft``, windows, framing by index arithmetic), the inner loops
of optimizers (L-BFGS two-loop recursion, Armijo backtracking on data, projection on the simplex, conjugate
gradients), kernels (Matern, ARD, kernel ridge), attention masks (causal, banded, padding, ALiBi), normalizations
(group, batch with running statistics, instance, RMS), segment sums (``np.add.at``, ``.at[].add``), sorting
(top-k, ranks, trimmed means, quantiles), integer and boolean arithmetic, float32 with Python numbers, complex
numbers. Plain user code: the test runs the same text with ``np`` as jax.numpy as its oracle.
"""

from __future__ import annotations

import math

import numpy as np

from srcjax import lax
from srcjax.scipy.special import gammaln, logsumexp

LOG_2PI = math.log(2.0 * math.pi)

# -- probabilistic programs: log-densities ---------------------------------------------------------------------


def normal_logpdf(x, loc, scale):
    z = (x - loc) / scale
    return -0.5 * z * z - np.log(scale) - 0.5 * LOG_2PI


def eight_schools(mu, log_tau, theta, y, sigma):
    tau = np.exp(log_tau)
    lp = normal_logpdf(mu, 0.0, 5.0) + normal_logpdf(log_tau, 0.0, 1.0)
    lp = lp + np.sum(normal_logpdf(theta, mu, tau))
    lp = lp + np.sum(normal_logpdf(y, theta, sigma))
    return lp


def mixture_loglik(x, logits, means, log_scales):
    log_w = logits - logsumexp(logits)
    comp = normal_logpdf(x[:, None], means[None, :], np.exp(log_scales)[None, :])
    return np.sum(logsumexp(comp + log_w, axis=1))


def mixture_loglik_by_hand(x, logits, means, log_scales):
    log_w = logits - np.max(logits)
    log_w = log_w - np.log(np.sum(np.exp(log_w)))
    s = np.exp(log_scales)
    comp = -0.5 * ((x[:, None] - means) / s) ** 2 - log_scales - 0.5 * np.log(2 * np.pi) + log_w
    m = comp.max(axis=1, keepdims=True)
    return np.sum(m[:, 0] + np.log(np.exp(comp - m).sum(axis=1)))


def stick_breaking(v_logit):
    v = 1.0 / (1.0 + np.exp(-v_logit))
    rest = np.cumprod(1.0 - v)
    w = v * np.concatenate([np.ones(1, dtype=v.dtype), rest[:-1]])
    return np.concatenate([w, rest[-1:]])


def dp_mixture_weights_entropy(v_logit):
    w = stick_breaking(v_logit)
    return -np.sum(w * np.log(w))


def student_t_logpdf(x, df, loc, log_scale):
    scale = np.exp(log_scale)
    z = (x - loc) / scale
    c = gammaln((df + 1.0) / 2.0) - gammaln(df / 2.0) - 0.5 * np.log(df * np.pi) - log_scale
    return np.sum(c - (df + 1.0) / 2.0 * np.log1p(z ** 2 / df))


def dirichlet_logpdf(p_logits, log_alpha):
    p = np.exp(p_logits - logsumexp(p_logits))
    alpha = np.exp(log_alpha)
    norm = np.sum(gammaln(alpha)) - gammaln(np.sum(alpha))
    return np.sum((alpha - 1.0) * np.log(p)) - norm


def ordinal_logit(eta, cut_raw, labels):
    cuts = np.cumsum(np.concatenate([cut_raw[:1], np.exp(cut_raw[1:])]))
    cdf = 1.0 / (1.0 + np.exp(-(cuts[None, :] - eta[:, None])))
    ones = np.ones((eta.shape[0], 1), dtype=cdf.dtype)
    zeros = np.zeros((eta.shape[0], 1), dtype=cdf.dtype)
    probs = np.diff(np.concatenate([zeros, cdf, ones], axis=1), axis=1)
    picked = np.take_along_axis(probs, labels[:, None], axis=1)
    return np.sum(np.log(picked))


def negbin_loglik(log_mu, log_r, counts):
    r = np.exp(log_r)
    ll = (gammaln(counts + r) - gammaln(r) - gammaln(counts + 1.0)
          + r * (log_r - np.logaddexp(log_r, log_mu)) + counts * (log_mu - np.logaddexp(log_r, log_mu)))
    return ll.sum()


def categorical_onehot_loglik(logits, labels):
    k = logits.shape[-1]
    onehot = np.eye(k)[labels]
    logp = logits - logsumexp(logits, axis=-1, keepdims=True)
    return np.sum(onehot * logp) / labels.shape[0]


def hierarchical_regression(beta_mu, beta_raw, log_sigma, x, y, group):
    beta = beta_mu + np.exp(log_sigma) * beta_raw
    pred = np.sum(x * beta[group], axis=1)
    lp = -0.5 * np.sum(beta_raw ** 2)
    return lp - 0.5 * np.sum((y - pred) ** 2)


# -- ODE / SDE integrators -------------------------------------------------------------------------------------


def _oscillator(y, a_mat):
    return a_mat @ y - 0.1 * y ** 3


def rk4_scan(y0, a_mat, dt=0.05, steps=8):
    def step(y, _):
        k1 = _oscillator(y, a_mat)
        k2 = _oscillator(y + 0.5 * dt * k1, a_mat)
        k3 = _oscillator(y + 0.5 * dt * k2, a_mat)
        k4 = _oscillator(y + dt * k3, a_mat)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        return y, y

    y_end, ys = lax.scan(step, y0, None, length=steps)
    return np.sum(ys ** 2) + np.sum(y_end)


def heun_sde(x0, theta, dw):
    x = x0
    dt = 0.1
    for i in range(dw.shape[0]):
        drift = -theta * x
        pred = x + drift * dt + 0.3 * dw[i]
        x = x + 0.5 * (drift + (-theta * pred)) * dt + 0.3 * dw[i]
    return np.mean(x ** 2)


def adaptive_euler(y0, k):
    t = 0.0
    h = 0.1
    y = y0
    n = 0
    while t < 1.0 and n < 40:
        f0 = -k * y
        y_e = y + h * f0
        y_h = y + 0.5 * h * (f0 - k * y_e)
        err = np.max(np.abs(y_h - y_e))
        if err < 1e-3:
            y = y_h
            t = t + h
        h = h * np.clip(0.9 * np.sqrt(1e-3 / (err + 1e-12)), 0.3, 2.0)
        n = n + 1
    return y


def symplectic_euler(q0, p0, k):
    def body(i, carry):
        q, p = carry
        p = p - 0.05 * k * np.sin(q)
        q = q + 0.05 * p
        return (q, p)

    q, p = lax.fori_loop(0, 10, body, (q0, p0))
    return 0.5 * np.sum(p ** 2) + np.sum(k * (1.0 - np.cos(q)))


def logistic_growth_trajectory(r, n0, steps=6):
    traj = [n0]
    n = n0
    for _ in range(steps):
        n = n + 0.2 * r * n * (1.0 - n)
        traj.append(n)
    return np.stack(traj)


# -- physics ---------------------------------------------------------------------------------------------------


def lj_masked(pos, sigma, cutoff=2.5):
    n = pos.shape[0]
    d = pos[:, None, :] - pos[None, :, :]
    eye = np.eye(n, dtype=bool)
    r2 = np.sum(d ** 2, axis=-1) + eye.astype(pos.dtype)
    inside = (r2 < cutoff ** 2) & ~eye
    sr6 = (sigma ** 2 / r2) ** 3
    e = np.where(inside, 4.0 * (sr6 ** 2 - sr6), 0.0)
    return 0.5 * np.sum(e)


def ewald_reciprocal(pos, charge, alpha=1.0):
    ks = 2.0 * np.pi * np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, -1.0]])
    k2 = np.sum(ks ** 2, axis=1)
    phase = pos @ ks.T
    s = np.sum(charge[:, None] * np.exp(1j * phase), axis=0)
    return np.sum(np.exp(-k2 / (4 * alpha ** 2)) / k2 * np.abs(s) ** 2)


def ising_soft_energy(h, coupling):
    s = np.tanh(h)
    right = np.roll(s, -1, axis=1)
    down = np.roll(s, -1, axis=0)
    return -coupling * np.sum(s * right + s * down) + 0.1 * np.sum(s ** 2)


def morse_bonds(pos, bonds, d_e, r_e):
    delta = pos[bonds[:, 0]] - pos[bonds[:, 1]]
    r = np.sqrt(np.sum(delta * delta, axis=1))
    return np.sum(d_e * (1.0 - np.exp(-1.5 * (r - r_e))) ** 2)


def harmonic_chain_modes(x, k):
    lap = 2.0 * x - np.roll(x, 1) - np.roll(x, -1)
    fx = np.fft.rfft(x)
    return 0.5 * k * np.sum(x * lap) + 0.01 * np.sum(np.abs(fx) ** 2)


# -- signal processing -----------------------------------------------------------------------------------------


def hann_power_spectrum(x):
    n = x.shape[-1]
    w = np.hanning(n)
    spec = np.fft.rfft((x - x.mean()) * w)
    return np.abs(spec) ** 2 / np.sum(w ** 2)


def gaussian_smooth_same(x, width):
    t = np.arange(-3, 4)
    kern = np.exp(-0.5 * (t / width) ** 2)
    kern = kern / kern.sum()
    return np.convolve(x, kern, mode="same")


def fft_circular_conv(x, k):
    n = x.shape[0]
    return np.fft.irfft(np.fft.rfft(x) * np.fft.rfft(k, n), n)


def autocorr_fft(x):
    n = x.shape[0]
    xc = x - np.mean(x)
    f = np.fft.fft(xc, 2 * n)
    ac = np.fft.ifft(f * np.conj(f)).real[:n]
    return ac / ac[0]


def framed_energy(x, frame=4, hop=2):
    nf = (x.shape[0] - frame) // hop + 1
    idx = np.arange(frame)[None, :] + hop * np.arange(nf)[:, None]
    frames = x[idx] * np.hamming(frame)
    return np.log(np.sum(frames ** 2, axis=1) + 1e-6)


def preemphasis_rms(x, coef):
    y = np.concatenate([x[:1], x[1:] - coef * x[:-1]])
    return np.sqrt(np.mean(y ** 2))


# -- optimization inner loops ----------------------------------------------------------------------------------


def lbfgs_direction(g, s_hist, y_hist):
    q = g
    alphas = []
    rhos = []
    for s, y in zip(reversed(s_hist), reversed(y_hist)):
        rho = 1.0 / np.dot(y, s)
        a = rho * np.dot(s, q)
        q = q - a * y
        alphas.append(a)
        rhos.append(rho)
    gamma = np.dot(s_hist[-1], y_hist[-1]) / np.dot(y_hist[-1], y_hist[-1])
    r = gamma * q
    for s, y, a, rho in zip(s_hist, y_hist, reversed(alphas), reversed(rhos)):
        b = rho * np.dot(y, r)
        r = r + s * (a - b)
    return -r


def _quad(x, a_mat, b):
    return 0.5 * x @ a_mat @ x - b @ x


def armijo_step(x, a_mat, b):
    g = a_mat @ x - b
    t = 1.0
    f0 = _quad(x, a_mat, b)
    while _quad(x - t * g, a_mat, b) > f0 - 0.5 * t * np.dot(g, g):
        t = 0.5 * t
    return x - t * g


def project_simplex(v):
    n = v.shape[0]
    u = np.sort(v)[::-1]
    css = np.cumsum(u)
    ks = np.arange(1, n + 1)
    cond = u - (css - 1.0) / ks > 0
    rho = np.max(np.where(cond, ks, 0))
    tau = (css[rho - 1] - 1.0) / rho
    return np.maximum(v - tau, 0.0)


def projected_gradient(x0, target, lr=0.3):
    x = project_simplex(x0)
    for _ in range(5):
        x = project_simplex(x - lr * (x - target))
    return np.sum(x * target)


def conjugate_gradient(a_mat, b, iters=2):
    def body(i, st):
        x, r, p, rs = st["x"], st["r"], st["p"], st["rs"]
        ap = a_mat @ p
        alpha = rs / (p @ ap)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = r @ r
        p = r + rs_new / rs * p
        return {"x": x, "r": r, "p": p, "rs": rs_new}

    x0 = np.zeros_like(b)
    st = lax.fori_loop(0, iters, body, {"x": x0, "r": b, "p": b, "rs": b @ b})
    return st["x"]


def box_projected_gd(x, lo, hi, target):
    for _ in range(4):
        g = 2.0 * (x - target) + 0.1 * np.sign(x)
        x = np.clip(x - 0.2 * g, lo, hi)
    return np.sum((x - target) ** 2)


# -- kernels and Gaussian processes ----------------------------------------------------------------------------


def matern52(x1, x2, log_ls, log_amp):
    d2 = np.sum((x1[:, None, :] - x2[None, :, :]) ** 2, axis=-1)
    r = np.sqrt(d2 + 1e-12) / np.exp(log_ls)
    s5 = math.sqrt(5.0) * r
    return np.exp(2.0 * log_amp) * (1.0 + s5 + 5.0 / 3.0 * r ** 2) * np.exp(-s5)


def gp_matern_nll(log_ls, log_amp, log_noise, x, y):
    n = x.shape[0]
    k = matern52(x, x, log_ls, log_amp) + np.exp(2.0 * log_noise) * np.eye(n)
    chol = np.linalg.cholesky(k)
    alpha = np.linalg.solve(k, y)
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(chol))) + 0.5 * n * LOG_2PI


def ard_rbf_slogdet(log_ls, x):
    z = x / np.exp(log_ls)
    sq = np.sum(z ** 2, axis=1)
    d2 = sq[:, None] + sq[None, :] - 2.0 * z @ z.T
    k = np.exp(-0.5 * np.maximum(d2, 0.0)) + 0.1 * np.eye(x.shape[0])
    sign, logdet = np.linalg.slogdet(k)
    return sign * logdet


def kernel_ridge_loo(log_lam, x, y):
    k = np.exp(-np.sum((x[:, None] - x[None]) ** 2, -1))
    h = k @ np.linalg.inv(k + np.exp(log_lam) * np.eye(x.shape[0]))
    resid = (y - h @ y) / (1.0 - np.diag(h))
    return np.mean(resid ** 2)


def gp_posterior_var(xs, x, log_ls):
    ls = np.exp(log_ls)
    kxx = np.exp(-0.5 * np.sum((x[:, None] - x[None]) ** 2, -1) / ls ** 2) + 1e-2 * np.eye(x.shape[0])
    ksx = np.exp(-0.5 * np.sum((xs[:, None] - x[None]) ** 2, -1) / ls ** 2)
    l_mat = np.linalg.cholesky(kxx)
    v = np.linalg.solve(l_mat, ksx.T)
    return 1.0 - np.sum(v ** 2, axis=0)


# -- attention with masks --------------------------------------------------------------------------------------


def _softmax_last(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def causal_mha(x, wq, wk, wv, heads=2):
    t, d = x.shape
    hd = d // heads
    q = (x @ wq).reshape(t, heads, hd).transpose(1, 0, 2)
    k = (x @ wk).reshape(t, heads, hd).transpose(1, 0, 2)
    v = (x @ wv).reshape(t, heads, hd).transpose(1, 0, 2)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
    mask = np.tril(np.ones((t, t), dtype=bool))
    s = np.where(mask, s, -1e9)
    o = _softmax_last(s) @ v
    return o.transpose(1, 0, 2).reshape(t, d)


def banded_attention(q, k, v, width=1):
    t = q.shape[0]
    i = np.arange(t)
    band = np.abs(i[:, None] - i[None, :]) <= width
    s = np.where(band, q @ k.T, -np.inf)
    return _softmax_last(s) @ v


def padded_attention(q, k, v, length):
    valid = np.arange(k.shape[0]) < length
    s = q @ k.T / math.sqrt(q.shape[-1])
    s = np.where(valid[None, :], s, -1e30)
    p = _softmax_last(s)
    return np.sum(p @ v)


def alibi_attention(x, slope):
    t = x.shape[0]
    pos = np.arange(t)
    bias = slope * (pos[None, :] - pos[:, None]).astype(x.dtype)
    s = x @ x.T + np.triu(np.full((t, t), -1e4, dtype=x.dtype), k=1) + bias
    return _softmax_last(s) @ x


# -- normalizations --------------------------------------------------------------------------------------------


def group_norm(x, gamma, beta, groups=2, eps=1e-5):
    n, c, length = x.shape
    xg = x.reshape(n, groups, c // groups, length)
    mu = xg.mean(axis=(2, 3), keepdims=True)
    var = xg.var(axis=(2, 3), keepdims=True)
    xn = ((xg - mu) / np.sqrt(var + eps)).reshape(n, c, length)
    return xn * gamma[None, :, None] + beta[None, :, None]


def batch_norm_running(x, gamma, beta, run_mean, run_var, momentum=0.9):
    mu = x.mean(0)
    var = x.var(0)
    y = gamma * (x - mu) / np.sqrt(var + 1e-5) + beta
    new_mean = momentum * run_mean + (1 - momentum) * mu
    new_var = momentum * run_var + (1 - momentum) * var * x.shape[0] / (x.shape[0] - 1)
    return y, new_mean, new_var


def instance_norm_loss(x, w):
    mu = np.mean(x, axis=-1, keepdims=True)
    sd = np.std(x, axis=-1, keepdims=True)
    y = (x - mu) / (sd + 1e-5)
    return np.sum(np.tanh(y) * w[:, None])


def rms_norm_weight_std(x, w, g):
    w_std = (w - w.mean(axis=0)) / (w.std(axis=0) + 1e-5)
    h = x @ w_std
    rms = np.sqrt(np.mean(h ** 2, axis=-1, keepdims=True) + 1e-6)
    return h / rms * g


# -- segment sums ----------------------------------------------------------------------------------------------


def segment_sum_add_at(values, seg, num=4):
    out = np.zeros((num,) + values.shape[1:], dtype=values.dtype)
    np.add.at(out, seg, values)
    return out


def message_passing(h, w, src, dst):
    msg = np.tanh(h[src] @ w)
    agg = np.zeros_like(h)
    agg = agg.at[dst].add(msg)
    return np.sum((h + agg) ** 2)


def segment_mean_softmax(scores, seg, num=3):
    e = np.exp(scores - scores.max())
    den = np.zeros(num, dtype=scores.dtype)
    np.add.at(den, seg, e)
    return e / den[seg]


# -- sorting ---------------------------------------------------------------------------------------------------


def topk_mean(x, k=3):
    idx = np.argsort(x)[-k:]
    return np.mean(x[idx])


def spearman_like(x, y):
    rx = np.argsort(np.argsort(x)).astype(x.dtype)
    ry = np.argsort(np.argsort(y)).astype(y.dtype)
    rx = rx - rx.mean()
    ry = ry - ry.mean()
    return np.sum(rx * ry) / np.sqrt(np.sum(rx ** 2) * np.sum(ry ** 2)) + 0.0 * np.sum(x * y)


def trimmed_mean(x, trim=1):
    s = np.sort(x, axis=-1)
    return s[..., trim:-trim].mean(axis=-1)


def pinball_at_median(x, q):
    m = np.median(x)
    r = x - m
    return np.mean(np.maximum(q * r, (q - 1.0) * r))


def quantile_spread(x):
    lo, hi = np.quantile(x, np.array([0.25, 0.75]))
    return hi - lo


# -- integers, booleans, float32 with Python numbers, complex numbers -------------------------------------------


def int_mixing(a, b):
    q = a // 3
    r = a % 3
    m = (a * b) ^ (b >> 1)
    return q + r * 2 + (m & 7) - np.abs(a - b)


def bool_weights(x, thresh):
    pos = x > thresh
    odd = np.logical_xor(pos, np.roll(pos, 1))
    both = np.logical_and(np.any(pos), ~np.all(pos))
    cnt = np.count_nonzero(odd)
    return np.where(both, np.sum(x * odd) / (cnt + 1), 0.5 * np.sum(x))


def f32_python_numbers(x):
    y = x * 0.5 + 2 ** -3
    z = y / 3 - np.float32(1e-3) * y ** 2
    return np.sum(z * math.pi) + 1


def f32_int_index_scale(x, k):
    scale = 1.0 / (k + 1)
    return x[k] * scale + x.sum() / x.shape[0]


def complex_map_energy(x, y, c):
    z = x + 1j * y
    for _ in range(3):
        z = z * z * 0.5 + c
    return np.sum(np.abs(z) ** 2)


def complex_rotate(points, theta):
    z = points[:, 0] + 1j * points[:, 1]
    w = z * np.exp(1j * theta)
    return np.stack([w.real, w.imag], axis=1)


def complex_polyval(coefs, x):
    z = np.exp(1j * x)
    acc = np.zeros_like(z)
    for c in coefs:
        acc = acc * z + c
    return np.real(acc * np.conj(acc))



# -- more: spectral methods, reverse scans, interpolation, online statistics, lax loops on data -----------------


def spectral_derivative(u):
    n = u.shape[0]
    k = 2.0 * np.pi * np.fft.fftfreq(n, d=1.0 / n)
    du = np.fft.ifft(1j * k * np.fft.fft(u)).real
    return np.sum(du ** 2) / n


def fft2_blur(img, sigma):
    h, w = img.shape
    fy = np.fft.fftfreq(h)[:, None]
    fx = np.fft.rfftfreq(w)[None, :]
    gain = np.exp(-2.0 * (np.pi * sigma) ** 2 * (fx ** 2 + fy ** 2))
    return np.fft.irfft2(np.fft.rfft2(img) * gain, s=(h, w))


def gae_scan_reverse(rewards, values, gamma=0.99, lam=0.95):
    deltas = rewards + gamma * values[1:] - values[:-1]

    def step(adv, delta):
        adv = delta + gamma * lam * adv
        return adv, adv

    _, advs = lax.scan(step, np.zeros((), dtype=rewards.dtype), deltas, reverse=True)
    return np.sum(advs ** 2)


def hmm_backward(log_trans, log_emit):
    def step(beta, le):
        beta = logsumexp(log_trans + le[None, :] + beta[None, :], axis=1)
        return beta, beta

    beta0 = np.zeros(log_trans.shape[0], dtype=log_trans.dtype)
    beta, betas = lax.scan(step, beta0, log_emit[1:], reverse=True)
    return logsumexp(beta + log_emit[0]) + 0.01 * np.sum(betas)


def inverse_cdf_interp(u, knots, logits):
    p = np.exp(logits - logsumexp(logits))
    cdf = np.concatenate([np.zeros(1, dtype=p.dtype), np.cumsum(p)])
    return np.interp(u, cdf, knots)


def welford_rows(x):
    mean = np.zeros(x.shape[1], dtype=x.dtype)
    m2 = np.zeros(x.shape[1], dtype=x.dtype)
    for i in range(x.shape[0]):
        delta = x[i] - mean
        mean = mean + delta / (i + 1)
        m2 = m2 + delta * (x[i] - mean)
    return mean, m2 / (x.shape[0] - 1)


def newton_while_dict(a):
    def cond(st):
        return (st["n"] < 20) & (np.abs(st["x"] ** 3 - a) > 1e-10)

    def body(st):
        x = st["x"]
        return {"x": x - (x ** 3 - a) / (3.0 * x ** 2), "n": st["n"] + 1}

    out = lax.while_loop(cond, body, {"x": np.ones_like(a), "n": 0})
    return out["x"]


def bouncing_ball(h0, v0, restitution):
    def body(i, st):
        h, v = st
        v = v - 9.81 * 0.02
        h = h + 0.02 * v
        h, v = lax.cond(h < 0.0, lambda hv: (-hv[0], -restitution * hv[1]), lambda hv: hv, (h, v))
        return (h, v)

    h, v = lax.fori_loop(0, 40, body, (h0, v0))
    return h + 0.1 * v
