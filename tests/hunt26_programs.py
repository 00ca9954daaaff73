"""Programs of domains and idioms no earlier hunt read (hunt 26): the corpus of tests/test_hunt26_programs.py.

Each program is written as a user writes NumPy (helpers, tuples and dicts of parameters, keyword arguments with
defaults, module constants, float32/float64/int32/bool mixes, in-place slice updates, loops to convergence):

- signal processing: an FIR filter by loops over taps with ``y[n:] += ...``, a leaky integrator reset by a boolean
  mask, autocorrelation by shifted slices, a windowed DFT power spectrum by cosine/sine matrices, a moving average
  by ``np.cumsum`` with ``np.concatenate`` of a zero, a DC-blocking IIR by a loop with a state tuple;
- statistics: weighted mean/variance/skewness with ``ddof``, an EM step of a 1-D Gaussian mixture returning a
  dict, a kernel density log-likelihood, L-BFGS's two-loop recursion over lists of histories on a logistic loss,
  ranks by ``argsort`` scattered back and a Spearman correlation, a histogram by ``searchsorted``/``bincount``;
- physics: leapfrog on a Kepler orbit with a ``(q, p)`` state, a spring network over a module constant of int32
  edges, the heat equation by slices with a chained boundary assignment, 2-D Jacobi relaxation to convergence
  (``while`` on data with a counter), Lennard-Jones forces by ``np.triu_indices`` and ``np.add.at``;
- finance: Black-Scholes greeks in a dict (a rational approximation of the normal CDF with ``np.where``), a
  shrinking binomial tree (European and American by a keyword), an amortization schedule written row by row;
- geometry: quaternion products by unpacking, rotation matrices from Euler angles by ``np.array`` of scalars,
  barycentric coordinates with an inside mask, polygon area/perimeter by ``np.roll``;
- ML layers: layer norm + causal masked attention with ``-np.inf``, a GRU over a sequence with a dict of weights,
  conv1d by strided slices of an ``np.pad``-ded input, softmax cross-entropy with label smoothing and int32 labels,
  top-k masking;
- optimizers: an Adam step over a dict of parameters with an integer step count, gradient clipping by global norm
  over a tuple;
- integers and masks: segment means by cumsum at boundaries, run lengths, a bool mask's count and mean, int32
  arithmetic with Python ints, Newton's square root to a tolerance with an iteration count, a first-crossing search
  by an early ``return`` in a loop.
"""

# ruff: noqa: B007, E741, F841, N803, N806, PLR2004 - (the users' style: `for t in range(n):`, `A`, `X`, names left
# unread)

from __future__ import annotations

import math

import numpy as np

import srcjax

lax = srcjax.lax

TWO_PI = 2.0 * np.pi
EPS = 1e-8
SPRING_EDGES = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 2]], dtype=np.int32)
REST = np.array([1.0, 1.0, 1.0, 1.0, 1.4142135623730951])
LOWPASS = (0.25, 0.5, 0.25)


# == signal processing ==============================================================================================


def fir_filter(x, taps):
    # y[n] = sum_k taps[k] x[n - k], zero initial state: one shifted slice per tap
    y = np.zeros_like(x)
    for k in range(taps.shape[0]):
        y[k:] += taps[k] * x[: x.shape[0] - k]
    return y


def smoothed_fir(x, taps=LOWPASS):
    # a module tuple of floats as default taps
    n = x.shape[0]
    out = np.zeros(n, dtype=x.dtype)
    for k, c in enumerate(taps):
        out[k:] = out[k:] + c * x[: n - k]
    return out


def leaky_integrator(x, reset, alpha=0.9):
    # state reset where a boolean mask is set
    y = np.empty_like(x)
    s = 0.0
    for t in range(x.shape[0]):
        s = np.where(reset[t], 0.0, alpha * s + x[t])
        y[t] = s
    return y


def autocorr(x, maxlag=4, normalize=True):
    x = x - x.mean()
    n = x.shape[0]
    r = np.array([np.dot(x[: n - k], x[k:]) for k in range(maxlag + 1)])
    if normalize:
        r = r / r[0]
    return r


def _hann(n):
    return 0.5 - 0.5 * np.cos(TWO_PI * np.arange(n) / (n - 1))


def windowed_power(x, window="hann"):
    n = x.shape[0]
    w = _hann(n) if window == "hann" else np.ones(n)
    xw = x * w
    k = np.arange(n // 2 + 1)[:, None]
    t = np.arange(n)[None, :]
    ang = TWO_PI * k * t / n
    re = np.cos(ang) @ xw
    im = -np.sin(ang) @ xw
    return (re**2 + im**2) / np.sum(w**2)


def moving_average(x, width=3):
    c = np.cumsum(np.concatenate([np.zeros(1, dtype=x.dtype), x]))
    return (c[width:] - c[:-width]) / width


def dc_blocker(x, r=0.95):
    # y[n] = x[n] - x[n-1] + r y[n-1] with the state as a tuple
    state = (0.0, 0.0)
    out = []
    for xn in x:
        x1, y1 = state
        yn = xn - x1 + r * y1
        out.append(yn)
        state = (xn, yn)
    return np.stack(out)


# == statistics =====================================================================================================


def weighted_moments(x, w, ddof=0):
    w = w / w.sum()
    mu = np.sum(w * x)
    d = x - mu
    var = np.sum(w * d**2) * x.shape[0] / (x.shape[0] - ddof)
    skew = np.sum(w * d**3) / var**1.5
    return mu, var, skew


def _log_normal(x, mu, log_var):
    return -0.5 * (math.log(TWO_PI) + log_var + (x - mu) ** 2 / np.exp(log_var))


def gmm_em_step(x, params):
    # one EM step of a 1-D Gaussian mixture; params: dict of (K,) arrays
    logits, mu, log_var = params["logits"], params["mu"], params["log_var"]
    log_pi = logits - np.log(np.sum(np.exp(logits)))
    lp = log_pi[None, :] + _log_normal(x[:, None], mu[None, :], log_var[None, :])
    m = lp.max(axis=1, keepdims=True)
    resp = np.exp(lp - m)
    resp /= resp.sum(axis=1, keepdims=True)
    nk = resp.sum(axis=0) + EPS
    new_mu = (resp * x[:, None]).sum(axis=0) / nk
    new_var = (resp * (x[:, None] - new_mu) ** 2).sum(axis=0) / nk
    loglik = np.sum(m[:, 0] + np.log(np.sum(np.exp(lp - m), axis=1)))
    return {"logits": np.log(nk / x.shape[0]), "mu": new_mu, "log_var": np.log(new_var + 1e-6)}, loglik


def kde_loglik(points, data, bw=0.5):
    d = (points[:, None] - data[None, :]) / bw
    logk = -0.5 * d**2 - 0.5 * math.log(TWO_PI) - np.log(bw)
    mx = np.max(logk, axis=1)
    return np.sum(mx + np.log(np.mean(np.exp(logk - mx[:, None]), axis=1)))


def _logreg_loss_grad(w, X, y, lam):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    loss = np.mean(np.logaddexp(0.0, z) - y * z) + 0.5 * lam * w @ w
    g = X.T @ (p - y) / X.shape[0] + lam * w
    return loss, g


def lbfgs_logreg(w, X, y, lam=0.1, iters=4, m=2, lr=1.0):
    s_hist, y_hist = [], []
    loss, g = _logreg_loss_grad(w, X, y, lam)
    for it in range(iters):
        q = g
        alphas = []
        for s, yv in zip(reversed(s_hist), reversed(y_hist)):
            rho = 1.0 / np.dot(yv, s)
            a = rho * np.dot(s, q)
            q = q - a * yv
            alphas.append((rho, a))
        if s_hist:
            gamma = np.dot(s_hist[-1], y_hist[-1]) / np.dot(y_hist[-1], y_hist[-1])
        else:
            gamma = 1.0
        r = gamma * q
        for (s, yv), (rho, a) in zip(zip(s_hist, y_hist), reversed(alphas)):
            b = rho * np.dot(yv, r)
            r = r + s * (a - b)
        w_new = w - lr * r
        loss, g_new = _logreg_loss_grad(w_new, X, y, lam)
        s_hist.append(w_new - w)
        y_hist.append(g_new - g)
        if len(s_hist) > m:
            s_hist.pop(0)
            y_hist.pop(0)
        w, g = w_new, g_new
    return w, loss


def lbfgs_sliced(w, X, y, lam=0.1, iters=4, m=2):
    # lbfgs_logreg with the histories trimmed by slicing (`s_hist = s_hist[1:]`, what the refusal of `.pop(0)`
    # under derivatives suggests), the first direction scaled by a test of the list
    s_hist, y_hist = [], []
    loss, g = _logreg_loss_grad(w, X, y, lam)
    for it in range(iters):
        q = g
        alphas = []
        for s, yv in zip(reversed(s_hist), reversed(y_hist)):
            rho = 1.0 / np.dot(yv, s)
            a = rho * np.dot(s, q)
            q = q - a * yv
            alphas.append((rho, a))
        gamma = np.dot(s_hist[-1], y_hist[-1]) / np.dot(y_hist[-1], y_hist[-1]) if s_hist else 1.0
        r = gamma * q
        for (s, yv), (rho, a) in zip(zip(s_hist, y_hist), reversed(alphas)):
            b = rho * np.dot(yv, r)
            r = r + s * (a - b)
        w_new = w - r
        loss, g_new = _logreg_loss_grad(w_new, X, y, lam)
        s_hist.append(w_new - w)
        y_hist.append(g_new - g)
        if len(s_hist) > m:
            s_hist = s_hist[1:]
            y_hist = y_hist[1:]
        w, g = w_new, g_new
    return w, loss


def spearman(x, y):
    def ranks(a):
        order = np.argsort(a)
        r = np.empty(a.shape[0], dtype=np.float64)
        r[order] = np.arange(a.shape[0])
        return r

    rx, ry = ranks(x), ranks(y)
    rx = rx - rx.mean()
    ry = ry - ry.mean()
    rho = np.sum(rx * ry) / np.sqrt(np.sum(rx**2) * np.sum(ry**2))
    return rho * np.sum(x * y)


def histogram_weights(x, w, edges):
    idx = np.searchsorted(edges, x, side="right") - 1
    idx = np.clip(idx, 0, edges.shape[0] - 2)
    counts = np.bincount(idx, weights=w, minlength=edges.shape[0] - 1)
    return counts / np.diff(edges)


def histogram_onehot(x, w, edges):
    # histogram_weights with a static number of bins: a one-hot of the bin indices
    nbins = edges.shape[0] - 1
    idx = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, nbins - 1)
    onehot = idx[:, None] == np.arange(nbins)[None, :]
    counts = np.sum(onehot * w[:, None], axis=0)
    return counts / np.diff(edges)


# == physics ========================================================================================================


def _kepler_force(q):
    r = np.sqrt(np.sum(q**2))
    return -q / r**3


def leapfrog_kepler(q, p, dt=0.05, steps=12):
    state = (q, p)
    for _ in range(steps):
        q, p = state
        p_half = p + 0.5 * dt * _kepler_force(q)
        q = q + dt * p_half
        p = p_half + 0.5 * dt * _kepler_force(q)
        state = (q, p)
    q, p = state
    energy = 0.5 * np.sum(p**2) - 1.0 / np.linalg.norm(q)
    return q, energy


def spring_network(pos, k=2.0):
    i, j = SPRING_EDGES[:, 0], SPRING_EDGES[:, 1]
    d = pos[i] - pos[j]
    length = np.linalg.norm(d, axis=1)
    energy = 0.5 * k * np.sum((length - REST) ** 2)
    f = (k * (length - REST) / length)[:, None] * d
    force = np.zeros_like(pos)
    np.add.at(force, i, -f)
    np.add.at(force, j, f)
    return energy, force


def heat_slices(u, alpha=0.2, steps=6):
    u = u.copy()
    for _ in range(steps):
        u[1:-1] = u[1:-1] + alpha * (u[2:] - 2 * u[1:-1] + u[:-2])
        u[0] = u[-1] = 0.0
    return u


def jacobi_relax(u, f, tol=1e-3, max_iter=50):
    u = u.copy()
    it = 0
    err = 1.0
    while err > tol and it < max_iter:
        new = u.copy()
        new[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - f[1:-1, 1:-1])
        err = np.max(np.abs(new - u))
        u = new
        it += 1
    return u, it


def lj_forces(pos, eps=1.0, sigma=1.0):
    n = pos.shape[0]
    i, j = np.triu_indices(n, k=1)
    d = pos[i] - pos[j]
    r2 = np.sum(d * d, axis=-1)
    sr6 = (sigma**2 / r2) ** 3
    e = 4 * eps * np.sum(sr6**2 - sr6)
    coef = 24 * eps * (2 * sr6**2 - sr6) / r2
    f = coef[:, None] * d
    forces = np.zeros_like(pos)
    np.add.at(forces, i, f)
    np.add.at(forces, j, -f)
    return e, forces


# == finance ========================================================================================================


def _ncdf(x):
    # Abramowitz-Stegun 26.2.17
    t = 1.0 / (1.0 + 0.2316419 * np.abs(x))
    poly = t * (0.319381530 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(TWO_PI)
    c = 1.0 - pdf * poly
    return np.where(x >= 0, c, 1.0 - c)


def bs_greeks(S, K, T, r=0.03, sigma=0.2):
    sq = sigma * np.sqrt(T)
    d1 = (np.log(S / K) + (r + 0.5 * sigma**2) * T) / sq
    d2 = d1 - sq
    disc = np.exp(-r * T)
    price = S * _ncdf(d1) - K * disc * _ncdf(d2)
    pdf = np.exp(-0.5 * d1**2) / np.sqrt(TWO_PI)
    return {"price": price, "delta": _ncdf(d1), "gamma": pdf / (S * sq), "vega": S * pdf * np.sqrt(T)}


def binomial_tree(S, K, r, sigma, T=1.0, n=6, american=False):
    dt = T / n
    u = np.exp(sigma * np.sqrt(dt))
    d = 1.0 / u
    p = (np.exp(r * dt) - d) / (u - d)
    disc = np.exp(-r * dt)
    j = np.arange(n + 1)
    prices = S * u ** (n - j) * d**j
    values = np.maximum(K - prices, 0.0)
    for step in range(n - 1, -1, -1):
        values = disc * (p * values[:-1] + (1 - p) * values[1:])
        if american:
            prices = prices[:-1] / u
            values = np.maximum(values, K - prices)
    return values[0]


def amortization(principal, rate, n=6):
    pay = principal * rate / (1 - (1 + rate) ** -n)
    sched = np.zeros((n, 3), dtype=principal.dtype)
    bal = principal
    for i in range(n):
        interest = bal * rate
        sched[i, 0] = interest
        sched[i, 1] = pay - interest
        bal = bal - sched[i, 1]
        sched[i, 2] = bal
    return sched


# == geometry =======================================================================================================


def _qmul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
                     w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def quat_rotate(q, v):
    q = q / np.linalg.norm(q)
    conj = q * np.array([1.0, -1.0, -1.0, -1.0])
    qv = np.concatenate([np.zeros(1, dtype=v.dtype), v])
    return _qmul(_qmul(q, qv), conj)[1:]


def euler_rotate(angles, pts):
    a, b, c = angles[0], angles[1], angles[2]
    Rx = np.array([[1.0, 0.0, 0.0], [0.0, np.cos(a), -np.sin(a)], [0.0, np.sin(a), np.cos(a)]])
    Ry = np.array([[np.cos(b), 0.0, np.sin(b)], [0.0, 1.0, 0.0], [-np.sin(b), 0.0, np.cos(b)]])
    Rz = np.array([[np.cos(c), -np.sin(c), 0.0], [np.sin(c), np.cos(c), 0.0], [0.0, 0.0, 1.0]])
    R = Rz @ Ry @ Rx
    return pts @ R.T


def barycentric(p, tri):
    a, b, c = tri[0], tri[1], tri[2]
    v0, v1, v2 = b - a, c - a, p - a
    d00, d01, d11 = v0 @ v0, v0 @ v1, v1 @ v1
    d20, d21 = v2 @ v0, v2 @ v1
    denom = d00 * d11 - d01 * d01
    v = (d11 * d20 - d01 * d21) / denom
    w = (d00 * d21 - d01 * d20) / denom
    u = 1.0 - v - w
    inside = (u >= 0) & (v >= 0) & (w >= 0)
    return np.stack([u, v, w]), inside


def polygon_area_perimeter(xy):
    x, y = xy[:, 0], xy[:, 1]
    area = 0.5 * np.abs(np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y))
    edges = np.diff(xy, axis=0, append=xy[:1])
    perim = np.sum(np.linalg.norm(edges, axis=1))
    return area, perim


# == ML layers ======================================================================================================


def _layer_norm(x, g, b, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return g * (x - mu) / np.sqrt(var + eps) + b


def masked_attention(x, p, causal=True):
    h = _layer_norm(x, p["g"], p["b"])
    q, k, v = h @ p["wq"], h @ p["wk"], h @ p["wv"]
    s = q @ k.T / np.sqrt(q.shape[-1])
    if causal:
        mask = np.triu(np.ones((x.shape[0], x.shape[0]), dtype=bool), k=1)
        s = np.where(mask, -np.inf, s)
    s = s - s.max(axis=-1, keepdims=True)
    a = np.exp(s)
    a = a / a.sum(axis=-1, keepdims=True)
    return x + a @ v


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def gru_sequence(xs, h, W):
    hs = []
    for x in xs:
        xh = np.concatenate([x, h])
        z = _sigmoid(W["z"] @ xh)
        r = _sigmoid(W["r"] @ xh)
        cand = np.tanh(W["h"] @ np.concatenate([x, r * h]))
        h = (1 - z) * h + z * cand
        hs.append(h)
    return np.array(hs)


def conv1d_strided(x, w, stride=2, padding=1):
    # x: (n, cin), w: (k, cin, cout)
    xp = np.pad(x, ((padding, padding), (0, 0)))
    k = w.shape[0]
    n_out = (xp.shape[0] - k) // stride + 1
    out = np.zeros((n_out, w.shape[2]), dtype=x.dtype)
    for t in range(k):
        out += xp[t : t + stride * (n_out - 1) + 1 : stride] @ w[t]
    return out


def smoothed_xent(logits, labels, eps=0.1):
    k = logits.shape[-1]
    lse = np.log(np.sum(np.exp(logits - logits.max(-1, keepdims=True)), -1)) + logits.max(-1)
    logp = logits - lse[:, None]
    nll = -np.take_along_axis(logp, labels[:, None].astype(np.int64), axis=1)[:, 0]
    smooth = -logp.mean(axis=-1)
    return np.mean((1 - eps) * nll + eps * smooth)


def topk_mask(x, k=3):
    idx = np.argsort(-x)[:k]
    mask = np.zeros(x.shape, dtype=bool)
    mask[idx] = True
    return np.where(mask, x, 0.0), mask.sum()


# == optimizers =====================================================================================================


def adam_dict(params, grads, state, lr=1e-2, b1=0.9, b2=0.999, eps=1e-8):
    t = state["t"] + 1
    new_p, m, v = {}, {}, {}
    for name in params:
        m[name] = b1 * state["m"][name] + (1 - b1) * grads[name]
        v[name] = b2 * state["v"][name] + (1 - b2) * grads[name] ** 2
        mhat = m[name] / (1 - b1**t)
        vhat = v[name] / (1 - b2**t)
        new_p[name] = params[name] - lr * mhat / (np.sqrt(vhat) + eps)
    return new_p, {"m": m, "v": v, "t": t}


def clip_global(grads, max_norm=1.0):
    norm = np.sqrt(sum(np.sum(g * g) for g in grads))
    scale = np.minimum(1.0, max_norm / (norm + 1e-6))
    return tuple(g * scale for g in grads), norm


# == integers and masks =============================================================================================


def segment_means(x, seg_ids):
    # seg_ids sorted, int32
    c = np.concatenate([np.zeros(1, dtype=x.dtype), np.cumsum(x)])
    starts = np.searchsorted(seg_ids, np.arange(4), side="left")
    ends = np.searchsorted(seg_ids, np.arange(4), side="right")
    counts = ends - starts
    return (c[ends] - c[starts]) / np.maximum(counts, 1)


def band_stats(x, lo=-0.5, hi=0.5):
    mask = (x > lo) & (x < hi)
    count = mask.sum()
    mean = np.sum(x * mask) / np.maximum(count, 1)
    outside = np.sum(np.where(mask, 0.0, x**2))
    return mean, outside, count


def int32_mix(x, k):
    # int32 k with Python ints and a float array
    idx = (k * 3 + 1) % x.shape[0]
    scale = k.astype(np.float32) / 2
    return x * scale + x[idx], idx


def newton_sqrt(a, tol=1e-10, max_iter=30):
    x = np.maximum(a, 1.0)
    it = 0
    while np.max(np.abs(x * x - a)) > tol and it < max_iter:
        x = 0.5 * (x + a / x)
        it = it + 1
    return x, it


def first_crossing(x, level):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i]
        if s > level:
            return s * i
    return s


def decay_clip_rows(M, decay=0.5):
    # an in-place update through a reversed view, rows renormalized where a mask is set
    M = M.copy()
    M[::-1][1:] *= decay
    big = np.abs(M).sum(axis=1) > 2.0
    return np.where(big[:, None], M / np.abs(M).sum(axis=1, keepdims=True), M)


def masked_rows_renorm(M, limit=2.0):
    # NumPy's masked rows written back (compiled code cannot have `M[big]`'s data-dependent shape)
    M = M.copy()
    big = np.abs(M).sum(axis=1) > limit
    M[big] = M[big] / np.abs(M[big]).sum(axis=1, keepdims=True)
    return M
