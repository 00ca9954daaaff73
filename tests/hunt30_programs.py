"""Everyday NumPy programs (hunt 30): the corpus of tests/test_hunt30_programs.py.

Each program is written as a NumPy user writes a small script's function, none of them seen by an earlier corpus:

- parameters in small classes: a plain dataclass of weights built in the function, a NamedTuple state updated by
  ``_replace`` in a recurrence, a class with a ``@property`` and a ``@staticmethod``;
- recurrences written as loops over arrays: ``for x_t in xs:``, ``reversed(xs)``, ``enumerate`` over rewards,
  ``zip`` over two arrays' rows and over lists of layers, an early ``return`` out of a loop on a static test;
- ``np.linalg`` in losses: ridge by ``solve``, a Gaussian log-density by ``cholesky``, a Mahalanobis distance by
  ``inv``, a volume penalty by ``det``, gradient clipping by ``norm`` with ``axis`` and ``ord``;
- masks and cumulative operations: ``np.where`` masks, survival by ``cumprod``, ``cumsum`` of returns, ``diff``
  twice, top-k sums without sorting (repeated ``argmax`` and masking);
- losses: multiclass hinge with a one-hot from ``np.eye``, Huber by ``np.where``, a squared hinge by
  ``np.maximum``, a softmax along axis 0 with ``keepdims``, ``take_along_axis`` of log-probabilities;
- shapes: ``einsum`` bilinear forms and batch traces, ``x.T @ y`` covariances, reshape/transpose chains of
  patches and heads, ``swapaxes``/``moveaxis``, integer arithmetic on static shapes (halving trees, ceil division,
  parity masks), asserts on shapes, ``np.any``/``np.all``/``count_nonzero`` in arithmetic;
- static configuration: a string-keyed dict of settings as a default argument that picks activations and
  branches, a NamedTuple of settings as a default argument;
- refused where jax runs them (listed in the test file): a subclass's ``__call__`` through ``super()``, an early
  ``return`` out of a loop over ``enumerate(zip(xs, ys))``.
"""

# ruff: noqa: B006, B007, B008, E741, F841, N803, N806, PLR2004 - (the users' style: `for t in range(n):`, `A`, `X`, names left
# unread)

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

CONFIG = {"activation": "tanh", "depth": 2, "norm": "layer", "reg": 0.05}
ACTIVATIONS = {"tanh": np.tanh, "relu": lambda z: np.maximum(z, 0.0), "softplus": lambda z: np.log1p(np.exp(z))}


# == parameters in small classes ====================================================================================


@dataclasses.dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray

    def __call__(self, x):
        return x @ self.W + self.b


def dataclass_mlp(x, W1, W2):
    # layers kept as dataclasses built inside the loss
    layers = [Dense(W1, np.zeros(W1.shape[1])), Dense(W2, 0.1 * np.ones(W2.shape[1]))]
    h = x
    for i, layer in enumerate(layers):
        h = layer(h)
        if i < len(layers) - 1:
            h = np.tanh(h)
    return np.mean(h**2)


class LSTMState(NamedTuple):
    h: np.ndarray
    c: np.ndarray


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def lstm_namedtuple(xs, W, U):
    # a small LSTM whose state is a NamedTuple, updated with _replace, over `for x_t in xs:`
    n = U.shape[1]
    state = LSTMState(np.zeros(n), np.zeros(n))
    for x_t in xs:
        z = W @ x_t + U @ state.h
        i, f, o, g = z[:n], z[n : 2 * n], z[2 * n : 3 * n], z[3 * n :]
        c = _sigmoid(f) * state.c + _sigmoid(i) * np.tanh(g)
        state = state._replace(c=c)
        state = state._replace(h=_sigmoid(o) * np.tanh(state.c))
    return np.sum(state.h**2) + 0.1 * np.sum(state.c)


class Gaussian:
    def __init__(self, mu, log_sigma):
        self.mu = mu
        self.log_sigma = log_sigma

    @property
    def sigma(self):
        return np.exp(self.log_sigma)

    @staticmethod
    def standardize(x, mu, sigma):
        return (x - mu) / sigma

    def log_prob(self, x):
        z = self.standardize(x, self.mu, self.sigma)
        return -0.5 * z**2 - self.log_sigma - 0.5 * np.log(2 * np.pi)


def gaussian_class_nll(params, x):
    dist = Gaussian(params[0], params[1])
    return -np.sum(dist.log_prob(x))


# == recurrences as loops over arrays ===============================================================================


def elman_rows(xs, Wx, Wh):
    # `for x_t in xs:` collecting the hidden states in a list, then stacking them
    h = np.zeros(Wh.shape[0])
    hs = []
    for x_t in xs:
        h = np.tanh(Wx @ x_t + Wh @ h)
        hs.append(h)
    H = np.stack(hs)
    return np.sum(H[-1]) + 0.1 * np.sum(H**2)


def bidirectional_sum(xs, w):
    # a forward and a backward exponential filter over the rows (reversed(xs)), summed
    fwd = []
    s = np.zeros(xs.shape[1])
    for x_t in xs:
        s = 0.7 * s + w * x_t
        fwd.append(s)
    bwd = []
    s = np.zeros(xs.shape[1])
    for x_t in reversed(xs):
        s = 0.7 * s + w * x_t
        bwd.append(s)
    bwd = bwd[::-1]
    return np.sum((np.stack(fwd) + np.stack(bwd)) ** 2)


def discounted_enumerate(rewards, values, gamma=0.9):
    # returns by enumerate over an array of rewards, then a value loss
    G = 0.0
    loss = 0.0
    for t, r in enumerate(rewards):
        G = G + gamma**t * r
        loss = loss + (values[t] - G) ** 2
    return loss / len(rewards)


def zip_rows_cosine(X, Y):
    # cosine similarity of paired rows by zip over two arrays
    total = 0.0
    for a, b in zip(X, Y):
        total = total + np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-9)
    return total / X.shape[0]


def zip_layer_lists(x, W1, W2, W3):
    # weights and biases as two lists walked with zip and enumerate together
    Ws = [W1, W2, W3]
    bs = [np.zeros(W.shape[1]) for W in Ws]
    h = x
    for k, (W, b) in enumerate(zip(Ws, bs)):
        h = h @ W + b
        if k != len(Ws) - 1:
            h = np.maximum(h, 0.1 * h)
    return np.sum(h**2)


def first_block_over(x, limit=3):
    # early return out of a loop over a static shape: the first block (of 4 rows) past a static index
    n = x.shape[0]
    for start in range(0, n, 4):
        if start >= limit:
            return np.sum(x[start : start + 4] ** 2)
    return np.sum(x)


def scan_carry_tuple(xs, a):
    # a scan-like loop carrying a tuple (level, trend) over the rows; outputs collected
    level, trend = xs[0], np.zeros_like(xs[0])
    preds = []
    for x_t in xs[1:]:
        pred = level + trend
        preds.append(pred)
        new_level = a * x_t + (1 - a) * pred
        trend = 0.5 * (new_level - level) + 0.5 * trend
        level = new_level
    P = np.stack(preds)
    return np.mean((P - xs[1:]) ** 2)


# == np.linalg in losses ============================================================================================


def ridge_solve(w_init, X, y, lam=0.3):
    # closed-form ridge via solve, then a validation loss of a blend with the initial weights
    d = X.shape[1]
    A = X.T @ X + lam * np.eye(d)
    w = np.linalg.solve(A, X.T @ y)
    blend = 0.5 * (w + w_init)
    return np.sum((X @ blend - y) ** 2) + lam * blend @ blend


def cholesky_gauss_logpdf(L_raw, x):
    # a Gaussian log-density with covariance L L^T + I; log det from the Cholesky factor's diagonal
    d = x.shape[0]
    S = L_raw @ L_raw.T + np.eye(d)
    L = np.linalg.cholesky(S)
    z = np.linalg.solve(L, x)
    return -0.5 * z @ z - np.sum(np.log(np.diag(L))) - 0.5 * d * np.log(2 * np.pi)


def mahalanobis_inv(X, mu, A):
    # Mahalanobis distances with the inverse of an SPD matrix
    S = A @ A.T + 0.5 * np.eye(A.shape[0])
    P = np.linalg.inv(S)
    D = X - mu
    return np.mean(np.sum((D @ P) * D, axis=1))


def det_volume_penalty(M, X):
    # a fit plus a log-volume penalty from det of a 3x3 matrix
    fit = np.sum((X @ M - X) ** 2)
    vol = np.linalg.det(M @ M.T + np.eye(3))
    return fit + 0.1 * np.log(vol)


def clip_by_row_norm(G, max_norm=1.0):
    # per-row gradient clipping by norm(axis=1, keepdims=True), then a Frobenius norm
    norms = np.linalg.norm(G, axis=1, keepdims=True)
    scale = np.minimum(1.0, max_norm / (norms + 1e-6))
    clipped = G * scale
    return np.linalg.norm(clipped, ord="fro") + np.linalg.norm(clipped[0], ord=1)


# == masks and cumulative operations ================================================================================


def masked_leaky_where(x, w):
    # leaky ReLU and a dropout-like mask written with np.where
    z = x * w
    a = np.where(z > 0, z, 0.05 * z)
    keep = np.arange(x.shape[0]) % 3 != 0
    return np.sum(np.where(keep, a, 0.0) ** 2)


def survival_cumprod(hazard_logits, events):
    # discrete-time survival: S_t = prod(1 - h) by cumprod, the likelihood of observed events
    h = _sigmoid(hazard_logits)
    S = np.cumprod(1 - h)
    S_prev = np.concatenate([np.ones(1), S[:-1]])
    lik = np.where(events > 0, S_prev * h, S)
    return -np.sum(np.log(lik + 1e-12))


def cumsum_drawdown(returns):
    # the equity curve by cumsum; a smooth maximum drawdown by a running max in a loop
    equity = np.cumsum(returns)
    peak = equity[0]
    dd = 0.0
    for t in range(1, equity.shape[0]):
        peak = np.maximum(peak, equity[t])
        dd = dd + (peak - equity[t]) ** 2
    return dd + 0.01 * np.sum(equity**2)


def diff_second_order(x):
    # smoothness from diff(n=2) plus a first difference's absolute value (total variation)
    d2 = np.diff(x, n=2)
    d1 = np.diff(x)
    return np.sum(d2**2) + 0.1 * np.sum(np.sqrt(d1**2 + 1e-4))


def topk_by_repeated_argmax(x, k=3):
    # the sum of the k largest entries without sorting: take the max, mask it out, repeat
    n = x.shape[0]
    remaining = x
    total = 0.0
    for _ in range(k):
        j = np.argmax(remaining)
        total = total + remaining[j]
        remaining = np.where(np.arange(n) == j, -np.inf, remaining)
    return total


def topk_mask_threshold(scores, values, k=2):
    # keep the k largest scores per row by a threshold found by repeated max, then a masked softmax
    s = scores
    thresh = np.max(s, axis=1, keepdims=True)
    for _ in range(k - 1):
        s = np.where(s >= thresh, -1e9, s)
        thresh = np.max(s, axis=1, keepdims=True)
    masked = np.where(scores >= thresh, scores, -1e9)
    e = np.exp(masked - np.max(masked, axis=1, keepdims=True))
    p = e / np.sum(e, axis=1, keepdims=True)
    return np.sum(p @ values)


# == losses =========================================================================================================


def multiclass_hinge(W, X, labels, margin=1.0):
    # Crammer-Singer hinge with a one-hot from np.eye
    scores = X @ W
    k = W.shape[1]
    Y = np.eye(k)[labels]
    correct = np.sum(scores * Y, axis=1, keepdims=True)
    margins = np.maximum(0.0, scores - correct + margin) * (1 - Y)
    return np.mean(np.sum(margins, axis=1)) + 0.01 * np.sum(W * W)


def huber_where(w, X, y, delta=0.5):
    r = X @ w - y
    small = np.abs(r) <= delta
    loss = np.where(small, 0.5 * r**2, delta * (np.abs(r) - 0.5 * delta))
    return np.mean(loss)


def squared_hinge_svm(w, X, y01, C=2.0):
    # a squared-hinge SVM with labels in {0, 1} mapped to {-1, 1}
    y = 2.0 * y01 - 1.0
    m = np.maximum(0, 1 - y * (X @ w))
    return 0.5 * w @ w + C * np.sum(m**2)


def _softmax(z, axis=-1):
    z = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def softmax_axis0_pool(X, q):
    # attention pooling over the rows: softmax along axis 0 of a column of scores
    scores = (X @ q)[:, None]
    a = _softmax(scores, axis=0)
    pooled = np.sum(a * X, axis=0)
    return np.sum(pooled**2) + np.sum(_softmax(X, axis=1)[:, 0])


def nll_take_along_axis(logits, labels):
    # the log-probabilities of the labels picked by take_along_axis, and an accuracy term kept out of the grad
    z = logits - np.max(logits, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    picked = np.take_along_axis(logp, labels[:, None], axis=1)[:, 0]
    acc = np.mean(np.argmax(logits, axis=1) == labels)
    return -np.mean(picked) + 0.0 * acc


def soft_confusion(logits, labels):
    # a soft confusion matrix: one-hot(labels).T @ softmax(logits), its off-diagonal mass
    k = logits.shape[1]
    P = _softmax(logits)
    Y = np.eye(k)[labels]
    C = Y.T @ P
    return np.sum(C) - np.trace(C)


# == shapes: einsum, products, reshapes, static integers ============================================================


def einsum_bilinear(A, X, Y):
    # per-example bilinear forms x_b^T A y_b, and a batch trace of outer products
    s = np.einsum("bi,ij,bj->b", X, A, Y)
    outer = np.einsum("bi,bj->bij", X, Y)
    tr = np.einsum("bii->b", outer)
    return np.sum(np.tanh(s)) + 0.1 * np.sum(tr**2)


def centered_cross_cov(X, Y):
    # a cross-covariance by x.T @ y of centred data; its squared Frobenius norm
    Xc = X - X.mean(axis=0)
    Yc = Y - Y.mean(axis=0)
    C = Xc.T @ Yc / (X.shape[0] - 1)
    return np.sum(C**2)


def patchify_mix(img, W):
    # split a 4x4 image into 2x2 patches by reshape/transpose, mix the patches, put them back
    p = 2
    H, Wd = img.shape
    patches = img.reshape(H // p, p, Wd // p, p).transpose(0, 2, 1, 3).reshape(-1, p * p)
    mixed = np.tanh(patches @ W)
    back = mixed.reshape(H // p, Wd // p, p, p).transpose(0, 2, 1, 3).reshape(H, Wd)
    return np.sum((back - img) ** 2)


def heads_swapaxes(x, Wq, Wk):
    # multi-head scores: reshape to heads, swapaxes/moveaxis, batched matmul
    n, d = x.shape
    h = 2
    q = (x @ Wq).reshape(n, h, d // h).swapaxes(0, 1)
    k = np.moveaxis((x @ Wk).reshape(n, h, d // h), 1, 0)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(d // h)
    return np.sum(_softmax(s) ** 2)


def halving_tree_sum(x):
    # pairwise (tree) reduction while the static length is above 1; odd lengths carry the last entry
    n = x.shape[0]
    y = x
    while n > 1:
        half = n // 2
        nxt = y[0 : 2 * half : 2] * y[1 : 2 * half : 2]
        if n % 2 == 1:
            nxt = np.concatenate([nxt, y[-1:]])
        y = nxt
        n = y.shape[0]
    return y[0]


def ceil_div_chunks(x, chunk=3):
    # chunk means with ceil division and a padded last chunk
    n = x.shape[0]
    m = -(-n // chunk)
    padded = np.concatenate([x, np.zeros(m * chunk - n)])
    counts = np.array([min(chunk, n - i * chunk) for i in range(m)], dtype=float)
    means = padded.reshape(m, chunk).sum(axis=1) / counts
    even = np.arange(m) % 2 == 0
    return np.sum(np.where(even, means, -means) ** 2)


def asserted_shapes(X, w, b):
    # asserts on shapes (with messages), as a careful user writes them
    assert X.ndim == 2, "X must be a matrix"
    assert X.shape[1] == w.shape[0]
    n, d = X.shape
    assert n > d
    z = X @ w + b
    return np.sum(np.log1p(np.exp(-z))) / n


def boolean_reductions(x, y):
    # np.any / np.all / count_nonzero used as numbers and as static-free branches
    pos = x > 0
    frac = np.count_nonzero(pos) / x.size
    all_small = np.all(np.abs(y) < 3.0)
    any_big = np.any(x > 2.0)
    penalty = np.where(any_big, 1.0, 0.5)
    base = np.sum(x * y) * frac + penalty * np.sum(x**2)
    return np.where(all_small, base, base + 1.0)


# == static configuration ===========================================================================================


def _norm(h, kind):
    if kind == "layer":
        mu = h.mean(axis=-1, keepdims=True)
        var = h.var(axis=-1, keepdims=True)
        return (h - mu) / np.sqrt(var + 1e-5)
    return h


def config_dict_mlp(x, W_in, W_hid, cfg=CONFIG):
    # settings in a string-keyed dict: the activation looked up by name, a static depth and a norm kind
    act = ACTIVATIONS[cfg["activation"]]
    h = act(x @ W_in)
    for _ in range(cfg["depth"]):
        h = act(_norm(h @ W_hid, cfg["norm"]))
    return np.mean(h**2) + cfg["reg"] * (np.sum(W_in**2) + np.sum(W_hid**2))


def config_branches(w, X, y, cfg={"loss": "huber", "delta": 1.0, "l1": True}):
    # the loss's kind picked by a string in a dict given as a default argument
    r = X @ w - y
    if cfg["loss"] == "huber":
        d = cfg["delta"]
        base = np.mean(np.where(np.abs(r) < d, 0.5 * r**2, d * np.abs(r) - 0.5 * d**2))
    elif cfg["loss"] == "l2":
        base = np.mean(r**2)
    else:
        raise ValueError(cfg["loss"])
    if cfg["l1"]:
        base = base + 0.01 * np.sum(np.abs(w))
    return base


class Penalty(NamedTuple):
    lam: float = 0.1
    power: int = 4


def namedtuple_penalty_default(w, X, y, pen=Penalty()):
    # a NamedTuple of hyperparameters as a default argument, read by field
    r = X @ w - y
    return np.mean(r**2) + pen.lam * np.sum(w**pen.power)


# == refused where jax runs them (tests/test_hunt30_programs.py's KNOWN_REFUSALS) ===================================


class Affine:
    def __init__(self, W):
        self.W = W

    def __call__(self, x):
        return x @ self.W


class ScaledAffine(Affine):
    def __call__(self, x):
        return 2.0 * super().__call__(x)


def subclass_super_call(x, W):
    # a subclass of a plain class, its __call__ through super()
    m = ScaledAffine(W)
    return np.sum(np.tanh(m(x)) ** 2)


def early_return_in_zip(xs, ys):
    # an early return out of a loop over zip(xs, ys) at a static step
    total = 0.0
    for k, (a, b) in enumerate(zip(xs, ys)):
        if k == 2:
            return total + np.sum(a * b)
        total = total + np.sum((a - b) ** 2)
    return total
