"""Everyday NumPy programs (hunt 29): the corpus of tests/test_hunt29_programs.py.

Each program is written as a NumPy user writes a small script's function, none of them seen by an earlier corpus:

- optimizer steps: RMSprop over a list of parameter arrays, Nesterov momentum on a quadratic bowl, AdaGrad with a
  clipped gradient norm, Adam with bias correction over a dict of parameters, a step size picked by ``min`` of a
  list of candidates;
- filters: an alpha-beta tracker, a median of three by ``min``/``max``, exponential smoothing with a warm-up
  average, a biquad IIR section, a history window trimmed by ``pop(0)`` under a test of the step counter;
- recurrences: a damped logistic map, a Hawkes intensity with an exponential kernel, a three-term linear
  recurrence over a list, an SIS epidemic with a ``max`` over a tuple of states;
- losses with masking: a masked MSE over padded targets, a focal loss, a triplet loss with a margin, label
  smoothing cross-entropy ignoring a padding label, a Huber loss per row weighted by a validity mask;
- ragged data with static lengths: mean-pooling of sequences of different lengths, a segment softmax over static
  boundaries, padding to the longest sequence with ``np.pad``, the ``max`` over a generator of per-sequence norms;
- parameters in containers: an MLP as a list of dicts, layer norm with a dict of gain and bias, a small RNN
  cell whose weights are a tuple;
- helpers and small classes: a ``Linear`` class with ``__call__``, a polynomial feature helper called in a loop,
  a ``Scaler`` class keeping mean and scale, a closure made by a factory.
"""

# ruff: noqa: B007, E741, F841, N803, N806, PLR2004 - (the users' style: `for t in range(n):`, `A`, `X`, names left
# unread)

from __future__ import annotations

import numpy as np

SEGMENTS = ((0, 3), (3, 4), (4, 8))  # static segment boundaries (start, stop)
LENGTHS = (2, 5, 3)  # static lengths of ragged sequences
PAD_LABEL = -1


# == optimizer steps ================================================================================================


def rmsprop_list(w, X, y, lr=0.05, rho=0.9, eps=1e-6, steps=6):
    # a two-layer linear model whose parameters are a list; RMSprop keeps a list of running squares
    params = [w, 0.5 * np.ones(3)]
    sq = [np.zeros_like(p) for p in params]
    for _ in range(steps):
        h = np.tanh(X @ params[0])
        pred = h * params[1][0] + params[1][1]
        r = pred - y
        g_out = 2.0 * r / len(y)
        g1 = np.array([np.sum(g_out * h), np.sum(g_out), 0.0])
        g0 = X.T @ (g_out * params[1][0] * (1.0 - h**2))
        grads = [g0, g1]
        for k in range(len(params)):
            sq[k] = rho * sq[k] + (1.0 - rho) * grads[k] ** 2
            params[k] = params[k] - lr * grads[k] / (np.sqrt(sq[k]) + eps)
    return np.mean((np.tanh(X @ params[0]) * params[1][0] + params[1][1] - y) ** 2)


def nesterov_bowl(x0, scales, lr=0.1, mu=0.8, steps=8):
    # Nesterov momentum on an ill-conditioned quadratic bowl
    x = x0
    v = np.zeros_like(x0)
    for _ in range(steps):
        look = x + mu * v
        g = scales * look
        v = mu * v - lr * g
        x = x + v
    return 0.5 * np.sum(scales * x**2)


def adagrad_clipped(w, X, y, lr=0.3, clip=1.0, steps=5):
    # AdaGrad on logistic regression with the gradient's norm clipped
    acc = np.full_like(w, 1e-8)
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        g = X.T @ (p - y) / X.shape[0]
        norm = np.sqrt(np.sum(g**2))
        g = g * np.minimum(1.0, clip / (norm + 1e-12))
        acc = acc + g**2
        w = w - lr * g / np.sqrt(acc)
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p + 1e-9) + (1 - y) * np.log(1 - p + 1e-9))


def adam_bias_corrected(params, X, lr=0.05, b1=0.9, b2=0.99, steps=4):
    # Adam over a dict of parameters with bias correction; the loss is a small autoencoder's reconstruction
    state = {k: (np.zeros_like(v), np.zeros_like(v)) for k, v in params.items()}
    p = dict(params)
    for t in range(1, steps + 1):
        code = np.tanh(X @ p["enc"])
        rec = code @ p["dec"]
        err = rec - X
        g_dec = code.T @ err / X.shape[0]
        g_enc = X.T @ ((err @ p["dec"].T) * (1 - code**2)) / X.shape[0]
        grads = {"enc": g_enc, "dec": g_dec}
        for k in p:
            m, v = state[k]
            m = b1 * m + (1 - b1) * grads[k]
            v = b2 * v + (1 - b2) * grads[k] ** 2
            state[k] = (m, v)
            mhat = m / (1 - b1**t)
            vhat = v / (1 - b2**t)
            p[k] = p[k] - lr * mhat / (np.sqrt(vhat) + 1e-8)
    return np.mean((np.tanh(X @ p["enc"]) @ p["dec"] - X) ** 2)


def best_of_candidate_steps(x, d):
    # try a few step sizes along d and keep the lowest loss (builtin min of a list of losses)
    def loss(z):
        return np.sum((z - 1.0) ** 2) + 0.1 * np.sum(z**4)

    candidates = [loss(x + t * d) for t in (0.0, 0.25, 0.5, 1.0)]
    return min(candidates) + 0.01 * max(candidates)


# == filters ========================================================================================================


def alpha_beta_tracker(z, alpha=0.5, beta=0.1, dt=1.0):
    # alpha-beta filter over noisy positions; returns the squared residuals
    x, v = z[0], 0.0
    sse = 0.0
    for k in range(1, z.shape[0]):
        x_pred = x + dt * v
        r = z[k] - x_pred
        x = x_pred + alpha * r
        v = v + beta * r / dt
        sse = sse + r * r
    return sse + 0.1 * v**2


def median_of_three(x):
    # a running median of three by builtin min/max of scalars, then its roughness
    out = [x[0]]
    for k in range(1, x.shape[0] - 1):
        a, b, c = x[k - 1], x[k], x[k + 1]
        out.append(max(min(a, b), min(max(a, b), c)))
    out.append(x[-1])
    m = np.stack(out)
    return np.sum(np.diff(m) ** 2) + np.sum(m)


def smoothing_with_warmup(x, alpha=0.3, warm=3):
    # exponential smoothing started from the mean of the first `warm` samples
    s = np.mean(x[:warm])
    total = 0.0
    for k in range(warm, x.shape[0]):
        s = alpha * x[k] + (1 - alpha) * s
        total = total + (x[k] - s) ** 2
    return total + s


def biquad_section(x, coeffs):
    # a direct form I biquad: coeffs = (b0, b1, b2, a1, a2)
    b0, b1, b2, a1, a2 = coeffs[0], coeffs[1], coeffs[2], coeffs[3], coeffs[4]
    x1 = x2 = y1 = y2 = 0.0
    ys = []
    for k in range(x.shape[0]):
        yk = b0 * x[k] + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
        x2, x1 = x1, x[k]
        y2, y1 = y1, yk
        ys.append(yk)
    return np.sum(np.stack(ys) ** 2)


def window_trimmed_by_step(y0, omega, dt=0.05, steps=5):
    # a moving window of the last derivatives, trimmed once the step counter passes 2
    A = np.array([[-0.1, -omega], [omega, -0.1]])
    y = y0
    history = []
    for n in range(steps):
        history.append(A @ y)
        if n >= 2:
            history.pop(0)
        y = y + dt * sum(history) / len(history)
    return np.sum(y * y)


# == recurrences ====================================================================================================


def damped_logistic(x0, r, damping=0.3, steps=12):
    # a logistic map with damping toward the previous value
    x = x0
    for _ in range(steps):
        x = (1 - damping) * r * x * (1 - x) + damping * x
    return np.sum(x)


def hawkes_intensity(times, mu, alpha=0.5, beta=1.2):
    # the intensity of a Hawkes process at each event, exponential kernel, summed log-likelihood part
    n = times.shape[0]
    ll = 0.0
    for i in range(n):
        lam = mu
        for j in range(i):
            lam = lam + alpha * np.exp(-beta * (times[i] - times[j]))
        ll = ll + np.log(lam)
    return ll - mu * times[-1]


def three_term_recurrence(c, x, n=6):
    # Legendre-like three-term recurrence kept in a list, then a weighted sum of its terms
    P = [np.ones_like(x), x]
    for k in range(1, n):
        P.append(((2 * k + 1) * x * P[k] - k * P[k - 1]) / (k + 1))
    return np.sum(sum(c[k] * P[k] for k in range(c.shape[0])))


def sis_peak(i0, beta, gamma=0.25, dt=0.5, days=12):
    # SIS epidemic in two groups; the peak prevalence over the states by builtin max of a tuple
    i = i0
    peak = np.sum(i0)
    for _ in range(days):
        i = i + dt * (beta * i * (1 - i) - gamma * i)
        states = (peak, np.sum(i))
        peak = max(states)
    return peak


# == losses with masking ============================================================================================


def masked_mse(pred, target):
    # targets padded with NaN; the mask keeps the observed entries
    mask = ~np.isnan(target)
    t = np.where(mask, target, 0.0)
    err = np.where(mask, pred - t, 0.0)
    return np.sum(err**2) / np.maximum(np.sum(mask), 1)


def focal_loss(logits, labels, gamma=2.0, alpha=0.25):
    p = 1.0 / (1.0 + np.exp(-logits))
    pt = np.where(labels == 1, p, 1 - p)
    at = np.where(labels == 1, alpha, 1 - alpha)
    return -np.mean(at * (1 - pt) ** gamma * np.log(np.clip(pt, 1e-7, 1.0)))


def triplet_margin(anchor, positive, negative, margin=0.5):
    d_pos = np.sum((anchor - positive) ** 2, axis=1)
    d_neg = np.sum((anchor - negative) ** 2, axis=1)
    losses = np.maximum(d_pos - d_neg + margin, 0.0)
    active = losses > 0
    return np.sum(losses) / max(anchor.shape[0], 1) + 0.01 * np.sum(active)


def smoothed_xent_ignore(logits, labels, eps=0.1):
    # label smoothing cross-entropy; rows labelled PAD_LABEL are ignored
    n, k = logits.shape
    z = logits - np.max(logits, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    valid = labels != PAD_LABEL
    safe = np.where(valid, labels, 0).astype(int)
    onehot = np.eye(k)[safe]
    target = (1 - eps) * onehot + eps / k
    per_row = -np.sum(target * logp, axis=1)
    return np.sum(np.where(valid, per_row, 0.0)) / np.maximum(np.sum(valid), 1)


def weighted_huber_rows(pred, target, valid, delta=0.5):
    r = np.abs(pred - target)
    quad = np.minimum(r, delta)
    lin = r - quad
    per_row = np.sum(0.5 * quad**2 + delta * lin, axis=1)
    w = valid.astype(pred.dtype)
    return np.sum(w * per_row) / (np.sum(w) + 1e-12)


# == ragged data with static lengths ================================================================================


def ragged_mean_pool(flat, W):
    # sequences of LENGTHS packed one after another; each mean-pooled, projected, then a softmax over them
    pooled = []
    start = 0
    for L in LENGTHS:
        pooled.append(np.mean(flat[start:start + L], axis=0))
        start += L
    H = np.tanh(np.stack(pooled) @ W)
    s = H.sum(axis=1)
    e = np.exp(s - np.max(s))
    return np.sum(e / np.sum(e) * s)


def segment_softmax(scores, values):
    # a softmax within each static segment, then the weighted sums
    out = []
    for a, b in SEGMENTS:
        s = scores[a:b]
        w = np.exp(s - np.max(s))
        w = w / np.sum(w)
        out.append(np.sum(w * values[a:b]))
    return np.sum(np.array(out) ** 2)


def pad_to_longest(flat, w):
    # split into ragged pieces, pad each to the longest with np.pad, then a masked weighted sum
    pieces = []
    start = 0
    for L in LENGTHS:
        pieces.append(flat[start:start + L])
        start += L
    longest = max(LENGTHS)
    padded = np.stack([np.pad(p, (0, longest - p.shape[0])) for p in pieces])
    mask = np.stack([np.arange(longest) < L for L in LENGTHS])
    return np.sum(np.where(mask, padded * w[:longest], 0.0) ** 2)


def largest_piece_norm(flat):
    # the largest norm over ragged pieces (builtin max over a generator), and the smallest over a list comprehension
    pieces = []
    start = 0
    for L in LENGTHS:
        pieces.append(flat[start:start + L])
        start += L
    big = max(np.sqrt(np.sum(p**2)) for p in pieces)
    small = min([np.sum(np.abs(p)) / p.shape[0] for p in pieces])
    return big + 0.5 * small


# == parameters in containers =======================================================================================


def mlp_list_of_dicts(x, W1, W2):
    layers = [{"W": W1, "b": 0.1 * np.ones(W1.shape[1])}, {"W": W2, "b": np.zeros(W2.shape[1])}]
    h = x
    for i, layer in enumerate(layers):
        h = h @ layer["W"] + layer["b"]
        if i < len(layers) - 1:
            h = np.maximum(h, 0.0) + 0.01 * np.minimum(h, 0.0)
    return np.sum(h**2)


def layer_norm_dict(X, params):
    mu = X.mean(axis=-1, keepdims=True)
    var = ((X - mu) ** 2).mean(axis=-1, keepdims=True)
    Y = (X - mu) / np.sqrt(var + 1e-5) * params["gain"] + params["bias"]
    return np.sum(np.tanh(Y))


def rnn_tuple_weights(xs, Wx, Wh):
    weights = (Wx, Wh, 0.05)
    h = np.zeros(Wh.shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(weights[0] @ xs[t] + weights[1] @ h + weights[2])
    return np.sum(h**2)


# == helpers and small classes ======================================================================================


class Linear:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def __call__(self, x):
        return x @ self.W + self.b


def linear_class_two_layers(x, W1, W2):
    l1 = Linear(W1, np.zeros(W1.shape[1]))
    l2 = Linear(W2, 0.5)
    return np.sum(l2(np.tanh(l1(x))) ** 2)


def _poly_features(x, degree):
    return np.stack([x**k for k in range(degree + 1)], axis=-1)


def poly_features_in_loop(t, coef):
    total = 0.0
    for d in (1, 2, 3):
        F = _poly_features(t, d)
        total = total + np.sum((F @ coef[: d + 1]) ** 2) / d
    return total


class Scaler:
    def __init__(self, X):
        self.mean = X.mean(axis=0)
        self.scale = X.std(axis=0) + 1e-6

    def transform(self, X):
        return (X - self.mean) / self.scale


def scaler_then_ridge(X, w):
    s = Scaler(X)
    Z = s.transform(X)
    return np.sum((Z @ w) ** 2) + 0.1 * np.sum(w**2)


def _make_penalty(strength):
    def penalty(w):
        return strength * np.sum(np.abs(w) ** 1.5)

    return penalty


def closure_factory_penalty(w, X):
    pen = _make_penalty(0.2)
    return np.mean(np.log1p(np.exp(X @ w))) + pen(w)
