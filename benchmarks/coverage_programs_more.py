"""The NumPy coverage corpus, part two: statistics, signal processing, physics, optimization, ML,
images, interpolation, polynomials, distances and kernels, Monte Carlo, finance, more breadth and
control flow. See benchmarks/coverage_corpus.py for the conventions."""

from __future__ import annotations

import math  # noqa: F401  (the programs may use it)

import numpy as np
from coverage_corpus import f, pos, program, sorted_unique, spd, stochastic  # noqa: F401

from srcjax import lax  # noqa: F401  (rebound to jax.lax when the source text runs under jax)


# == statistics ==============================================================================
@program("stats", lambda r: (f(r, 8, 3),))
def standardize(X):
    return (X - X.mean(axis=0)) / X.std(axis=0)


@program("stats", lambda r: (f(r, 9), pos(r, 9)))
def weighted_variance(x, w):
    mu = np.average(x, weights=w)
    return np.average((x - mu) ** 2, weights=w)


@program("stats", lambda r: (pos(r, 5), pos(r, 5)))
def kl_divergence(p, q):
    p = p / p.sum()
    q = q / q.sum()
    return np.sum(p * np.log(p / q))


@program("stats", lambda r: (f(r, 12), r.integers(0, 12, (20, 12))))
def bootstrap_means(x, idx):
    return x[idx].mean(axis=1)


@program("stats", lambda r: (f(r, 10), f(r, 10)))
def pearson_r(x, y):
    xc = x - x.mean()
    yc = y - y.mean()
    return np.dot(xc, yc) / np.sqrt(np.dot(xc, xc) * np.dot(yc, yc))


@program("stats", lambda r: (f(r, 12, 3),))
def sample_covariance(X):
    return np.cov(X, rowvar=False)


@program("stats", lambda r: (f(r, 10), f(r), pos(r)))
def normal_log_likelihood(x, mu, sigma):
    return np.sum(-0.5 * ((x - mu) / sigma) ** 2 - np.log(sigma) - 0.5 * math.log(2 * math.pi))


# == signal processing =======================================================================
@program("signal", lambda r: (f(r, 16), 0.3))
def exponential_smoothing(x, alpha):
    s = x[0]
    out = []
    for t in range(x.shape[0]):
        s = alpha * x[t] + (1 - alpha) * s
        out.append(s)
    return np.array(out)


@program("signal", lambda r: (f(r, 12), f(r, 12)))
def cross_correlation_same(a, b):
    return np.correlate(a, b, mode="same")


@program("signal", lambda r: (f(r, 16),))
def hann_windowed_energy(x):
    w = np.hanning(x.shape[0])
    return np.sum((w * x) ** 2)


@program("signal", lambda r: (f(r, 20),))
def zero_crossing_rate(x):
    return np.mean(np.abs(np.diff(np.sign(x)))) / 2


# == physics =================================================================================
@program("physics", lambda r: (np.arange(15.0).reshape(5, 3) + 0.2 * f(r, 5, 3),))
def lennard_jones_energy(pos_):
    n = pos_.shape[0]
    d = pos_[:, None, :] - pos_[None, :, :]
    r2 = np.sum(d ** 2, axis=-1) + np.eye(n)
    inv6 = (1.0 / r2) ** 3
    e = 4 * (inv6 ** 2 - inv6)
    i, j = np.triu_indices(n, k=1)
    return np.sum(e[i, j])


@program("physics", lambda r: (f(r, 3), f(r, 3), 0.01))
def verlet_oscillator(x, v, dt):
    a = -x
    for _ in range(10):
        x = x + v * dt + 0.5 * a * dt ** 2
        a_new = -x
        v = v + 0.5 * (a + a_new) * dt
        a = a_new
    return 0.5 * np.sum(v ** 2) + 0.5 * np.sum(x ** 2)


@program("physics", lambda r: (f(r, 20),))
def heat_equation_steps(u):
    for _ in range(5):
        u = u + 0.1 * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
    return u


@program("physics", lambda r: (pos(r, 6), f(r, 6, 3)))
def center_of_mass(m, x):
    return np.average(x, axis=0, weights=m)


@program("physics", lambda r: (f(r, 4, 3), pos(r, 4)))
def moment_of_inertia(x, m):
    r2 = np.sum(x ** 2, axis=1)
    return np.einsum("n,nij->ij", m, r2[:, None, None] * np.eye(3) - x[:, :, None] * x[:, None, :])


# == optimization ===========================================================================
@program("optim", lambda r: (spd(r, 3), f(r, 3), f(r, 3)))
def gradient_descent_quadratic(A, b, x):
    for _ in range(5):
        x = x - 0.05 * (A @ x - b)
    return x


@program("optim", lambda r: (f(r, 3), spd(r, 3), f(r, 3)))
def newton_step(x, H, g):
    return x - np.linalg.solve(H, g)


@program("optim", lambda r: (0.5 * f(r, 6),))
def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


@program("optim", lambda r: (f(r, 6),))
def project_to_simplex(v):
    n = v.shape[0]
    u = np.sort(v)[::-1]
    css = np.cumsum(u)
    k = np.arange(1, n + 1)
    rho = np.max(np.where(u * k > css - 1, k, 0))
    theta = (css[rho - 1] - 1) / rho
    return np.maximum(v - theta, 0.0)


@program("optim", lambda r: (f(r, 5), f(r, 5), f(r, 5), 0.01))
def adam_update(param, grad, m, lr):
    m = 0.9 * m + 0.1 * grad
    v = 0.001 * grad ** 2
    return param - lr * m / (np.sqrt(v) + 1e-8)


# == ML layers and losses ===================================================================
@program("ml", lambda r: (f(r, 4, 6), pos(r, 6), f(r, 6)))
def layer_norm(x, gamma, beta):
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + 1e-5) + beta


@program("ml", lambda r: (f(r, 5, 4), r.integers(0, 4, 5)))
def cross_entropy(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(labels.shape[0]), labels].mean()


@program("ml", lambda r: (f(r, 2, 4, 8), f(r, 2, 4, 8), f(r, 2, 4, 8)))
def attention(q, k, v):
    s = np.einsum("bqd,bkd->bqk", q, k) / np.sqrt(q.shape[-1])
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    p = s / s.sum(axis=-1, keepdims=True)
    return np.einsum("bqk,bkd->bqd", p, v)


@program("ml", lambda r: (f(r, 6, 3), f(r, 4, 3)))
def kmeans_assign_inertia(X, centers):
    d2 = ((X[:, None, :] - centers[None, :, :]) ** 2).sum(-1)
    assign = np.argmin(d2, axis=1)
    return np.sum(d2[np.arange(X.shape[0]), assign])


@program("ml", lambda r: (f(r, 7), np.sign(f(r, 7))))
def hinge_loss(scores, y):
    return np.mean(np.maximum(0.0, 1.0 - y * scores))


@program("ml", lambda r: (f(r, 4, 5), f(r, 4, 5), f(r, 4, 5)))
def triplet_loss(a, p, n):
    dp = np.linalg.norm(a - p, axis=1)
    dn = np.linalg.norm(a - n, axis=1)
    return np.mean(np.maximum(dp - dn + 1.0, 0.0))


@program("ml", lambda r: (f(r, 3, 4), f(r, 5, 4)))
def cosine_similarity(A, B):
    An = A / np.linalg.norm(A, axis=1, keepdims=True)
    Bn = B / np.linalg.norm(B, axis=1, keepdims=True)
    return An @ Bn.T


@program("ml", lambda r: (f(r, 10, 4), r.integers(0, 10, (3, 5))))
def embedding_bag(table, tokens):
    return table[tokens].mean(axis=1)


@program("ml", lambda r: (f(r, 4, 6), r.random((4, 6)) < 0.8))
def inverted_dropout(x, keep):
    return np.where(keep, x / 0.8, 0.0)


@program("ml", lambda r: (f(r, 3), f(r, 4), f(r, 7, 8), f(r, 8)))
def gru_cell(x, h, W, b):
    xh = np.concatenate([x, h])
    gates = 1 / (1 + np.exp(-(xh @ W + b)))
    z, rgate = gates[:4], gates[4:]
    return (1 - z) * h + z * np.tanh(rgate * h)


@program("ml", lambda r: (r.random(8) * 0.9 + 0.05, (r.random(8) < 0.5).astype(np.float64)))
def focal_loss(p, y):
    pt = np.where(y == 1, p, 1 - p)
    return -np.mean((1 - pt) ** 2 * np.log(pt))


@program("ml", lambda r: (f(r, 6),))
def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


@program("ml", lambda r: (f(r, 3, 4), f(r, 6, 4)), diff=())
def nearest_neighbor_labels(Q, X):
    d = np.sum((Q[:, None, :] - X[None]) ** 2, axis=-1)
    return np.argsort(d, axis=1)[:, :2]


# == image operations =======================================================================
@program("image", lambda r: (r.random((4, 5, 3)),))
def rgb_to_gray(img):
    return img @ np.array([0.299, 0.587, 0.114])


@program("image", lambda r: (f(r, 5, 6),))
def total_variation(img):
    return np.sum(np.abs(np.diff(img, axis=0))) + np.sum(np.abs(np.diff(img, axis=1)))


@program("image", lambda r: (f(r, 4, 4),))
def nearest_upsample(img):
    return np.repeat(np.repeat(img, 2, axis=0), 2, axis=1)


@program("image", lambda r: (r.random((6, 6)),))
def gamma_contrast(img):
    lo, hi = img.min(), img.max()
    return ((img - lo) / (hi - lo) + 0.05) ** 0.8  # (the slope of t ** 0.8 is infinite at t = 0)


@program("image", lambda r: (f(r, 6, 6),))
def gaussian_blur_separable(img):
    k = np.array([0.25, 0.5, 0.25])
    rows = np.apply_along_axis(lambda row: np.convolve(row, k, mode="same"), 1, img)
    return np.apply_along_axis(lambda col: np.convolve(col, k, mode="same"), 0, rows)


@program("image", lambda r: (f(r, 6, 6),))
def positive_pixel_mean(img):
    return img[img > 0].mean()


# == interpolation ==========================================================================
@program("interp", lambda r: (f(r, 5, 5), r.random((4, 2)) * 3.9))
def bilinear_sample(img, pts):
    x, y = pts[:, 0], pts[:, 1]
    x0 = np.floor(x).astype(np.int64)
    y0 = np.floor(y).astype(np.int64)
    fx, fy = x - x0, y - y0
    top = img[y0, x0] * (1 - fx) + img[y0, x0 + 1] * fx
    bottom = img[y0 + 1, x0] * (1 - fx) + img[y0 + 1, x0 + 1] * fx
    return top * (1 - fy) + bottom * fy


@program("interp", lambda r: (f(r, 6), np.linspace(0, 1, 6), np.linspace(0.05, 0.95, 9)))
def resample_signal(y, t, t_new):
    return np.interp(t_new, t, y)


@program("interp", lambda r: (f(r, 8), r.random(5) * 7))
def linear_interp_indices(y, xq):
    i = np.clip(np.floor(xq).astype(np.int32), 0, y.shape[0] - 2)
    w = xq - i
    return (1 - w) * y[i] + w * y[i + 1]


# == polynomials ============================================================================
@program("poly", lambda r: (f(r, 4),))
def polynomial_roots_product(c):
    return np.polyval(np.polyder(c), 0.5)


@program("poly", lambda r: (np.linspace(0, 1, 12), f(r, 12)))
def fit_and_predict(x, y):
    coef = np.polyfit(x, y, 3)
    return np.polyval(coef, np.array([0.25, 0.5]))


@program("poly", lambda r: (f(r, 3), f(r, 4)))
def polynomial_product(a, b):
    return np.polymul(a, b)


@program("poly", lambda r: (f(r, 5), f(r, 6)))
def chebyshev_series(c, x):
    t_prev, t = np.ones_like(x), x
    total = c[0] * t_prev + c[1] * t
    for k in range(2, c.shape[0]):
        t_prev, t = t, 2 * x * t - t_prev
        total = total + c[k] * t
    return total


# == distances and kernels ==================================================================
@program("dist", lambda r: (f(r, 4, 3), f(r, 5, 3)))
def pairwise_euclidean(A, B):
    return np.sqrt(np.sum((A[:, None, :] - B[None, :, :]) ** 2, axis=-1) + 1e-12)


@program("dist", lambda r: (r.random((4, 2)), r.random((4, 2))))
def haversine(p1, p2):
    lat1, lon1 = np.radians(p1[:, 0] * 90), np.radians(p1[:, 1] * 180)
    lat2, lon2 = np.radians(p2[:, 0] * 90), np.radians(p2[:, 1] * 180)
    a = np.sin((lat2 - lat1) / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    return 2 * 6371.0 * np.arcsin(np.sqrt(a))


@program("dist", lambda r: (f(r, 5, 2), f(r, 6, 2)))
def hausdorff_distance(A, B):
    d = np.linalg.norm(A[:, None] - B[None], axis=-1)
    return np.maximum(d.min(axis=1).max(), d.min(axis=0).max())


@program("kernel", lambda r: (f(r, 5, 2), 0.7))
def rbf_gram(X, gamma):
    sq = np.sum(X ** 2, axis=1)
    d2 = sq[:, None] + sq[None, :] - 2 * X @ X.T
    return np.exp(-gamma * d2)


@program("kernel", lambda r: (f(r, 6, 2), f(r, 5, 2) + 0.5))
def mmd_rbf(X, Y):
    def k(a, b):
        return np.exp(-np.sum((a[:, None] - b[None]) ** 2, axis=-1))

    return k(X, X).mean() + k(Y, Y).mean() - 2 * k(X, Y).mean()


@program("kernel", lambda r: (f(r, 4, 3), f(r, 3, 3)))
def polynomial_kernel(X, Z):
    return (X @ Z.T + 1.0) ** 3


# == Monte Carlo with passed-in samples ======================================================
@program("mc", lambda r: (r.random((200, 2)),), diff=())
def estimate_pi(u):
    inside = u[:, 0] ** 2 + u[:, 1] ** 2 < 1.0
    return 4.0 * np.mean(inside)


@program("mc", lambda r: (f(r, 30), f(r), pos(r)))
def importance_weights_ess(z, mu, sigma):
    x = mu + sigma * z
    logw = -0.5 * x ** 2 + 0.5 * z ** 2 + np.log(sigma)
    w = np.exp(logw - logw.max())
    w = w / w.sum()
    return 1.0 / np.sum(w ** 2)


@program("mc", lambda r: (f(r, 50), pos(r)))
def mc_expectation(z, scale):
    return np.mean(np.cos(scale * z) * np.exp(-0.1 * z ** 2))


# == finance =================================================================================
@program("finance", lambda r: (f(r, 64), np.array(100.0), np.array(0.2)))
def mc_call_price(z, s0, sigma):
    r, t, strike = 0.01, 1.0, 100.0
    st = s0 * np.exp((r - 0.5 * sigma ** 2) * t + sigma * np.sqrt(t) * z)
    return np.exp(-r * t) * np.mean(np.maximum(st - strike, 0.0))


@program("finance", lambda r: (np.array(0.05), f(r, 6) + 1.0))
def net_present_value(rate, cashflows):
    t = np.arange(cashflows.shape[0])
    return np.sum(cashflows / (1 + rate) ** t)


@program("finance", lambda r: (pos(r, 3), spd(r, 3) / 10))
def portfolio_volatility(w, cov):
    w = w / w.sum()
    return np.sqrt(w @ cov @ w)


@program("finance", lambda r: (100 + np.cumsum(f(r, 20)),))
def sharpe_ratio(prices):
    returns = np.diff(np.log(prices))
    return np.sqrt(252) * returns.mean() / returns.std(ddof=1)


@program("finance", lambda r: (0.01 * f(r, 100),))
def value_at_risk(returns):
    return -np.percentile(returns, 5)


@program("finance", lambda r: (np.array(0.04), np.array(1000.0), 30))
def annuity_payment(rate, principal, n):
    return principal * rate / (1 - (1 + rate) ** (-n))


# == more NumPy breadth: reductions, ufuncs, indexing, dtypes ==================================
@program("ml", lambda r: (f(r, 6, 4), r.integers(0, 4, 6)))
def one_hot_accuracy_logits(logits, labels):
    onehot = np.eye(logits.shape[1])[labels]
    return np.sum(onehot * logits, axis=1) - np.max(logits, axis=1)


@program("ml", lambda r: (f(r, 5, 3), r.integers(0, 3, (5, 1))))
def gather_chosen_scores(scores, choice):
    return np.take_along_axis(scores, choice, axis=1)[:, 0]


@program("stats", lambda r: (f(r, 9), r.random(9) < 0.2))
def nan_median(x, missing):
    return np.nanmedian(np.where(missing, np.nan, x))


@program("stats", lambda r: (f(r, 25),), diff=())
def digitize_bins(x):
    return np.digitize(x, np.array([-1.0, 0.0, 1.0]))


@program("stats", lambda r: (f(r, 8, 3),))
def peak_to_peak(X):
    return np.ptp(X, axis=0)


@program("numerics", lambda r: (0.1 * f(r, 6),))
def stable_log1p_expm1(x):
    return np.log1p(np.expm1(x) + x ** 2)


@program("numerics", lambda r: (f(r, 6), f(r, 6)))
def polar_coordinates(x, y):
    return np.hypot(x, y), np.arctan2(y, x)


@program("numerics", lambda r: (3 * f(r, 8),))
def sinc_interpolation_weights(t):
    return np.sinc(t) * np.heaviside(t + 2, 0.5)


@program("numerics", lambda r: (f(r, 4, 6),))
def split_halves_product(x):
    a, b = np.split(x, 2, axis=1)
    return np.sum(a * b, axis=1)


@program("numerics", lambda r: (f(r, 7),))
def second_difference(x):
    return np.diff(x, n=2)


@program("numerics", lambda r: (f(r, 5), f(r, 5)))
def reversed_cumulative(x, w):
    return np.cumsum(x[::-1])[::-1] * w


@program("numerics", lambda r: (f(r, 4, 4),))
def ufunc_reductions(A):
    return np.add.reduce(A, axis=0) * np.maximum.reduce(A, axis=1)


@program("numerics", lambda r: (f(r, 3), f(r, 4)))
def ufunc_outer(a, b):
    return np.multiply.outer(a, b) - np.subtract.outer(a, b)


@program("linalg", lambda r: (f(r, 5, 5),))
def einsum_trace_and_diag(A):
    return np.einsum("ii->", A) * np.einsum("ii->i", A)


@program("linalg", lambda r: (f(r, 4, 3), f(r, 4, 3)))
def rowwise_dot(A, B):
    return np.einsum("ij,ij->i", A, B)


@program("linalg", lambda r: (f(r, 6, 3),))
def singular_values(X):
    return np.linalg.svd(X, compute_uv=False)


@program("linalg", lambda r: (f(r, 4, 4),))
def symmetric_spectrum(A):
    return np.linalg.eigvalsh(A @ A.T)


@program("linalg", lambda r: (f(r, 5, 3),))
def matrix_norms(A):
    return np.linalg.norm(A, 1) + np.linalg.norm(A, np.inf) + np.linalg.norm(A, "fro")


@program("linalg", lambda r: (f(r, 3, 4, 4) + 4 * np.eye(4), f(r, 3, 4)))
def batched_matvec_solve(A, b):
    return np.linalg.solve(A, b[..., None])[..., 0] + np.matmul(A, b[..., None])[..., 0]


@program("linalg", lambda r: (f(r, 3, 3),))
def general_eigenvalues_real_part(A):
    return np.sort(np.linalg.eigvals(A).real)


@program("construct", lambda r: (f(r, 4, 4),))
def banded_part(A):
    return np.triu(A, -1) - np.tril(A, -2) + np.diag(np.diag(A, k=1), k=1)


@program("construct", lambda r: (f(r), f(r)))
def linspace_dynamic_endpoints(a, b):
    return np.sin(np.linspace(a, b, 7))


@program("construct", lambda r: (f(r, 5),))
def geometric_weights(x):
    return np.sum(x * np.logspace(0, -2, 5))


@program("construct", lambda r: (f(r, 3, 1, 4),))
def squeeze_expand(x):
    y = np.squeeze(x, axis=1)
    return np.expand_dims(y.sum(axis=0), 0) + np.broadcast_to(y[:1], (2, 4))


@program("construct", lambda r: (f(r, 6),))
def array_split_means(x):
    return np.array([part.mean() for part in np.array_split(x, 3)])


@program("image", lambda r: (f(r, 5, 5),))
def flip_augment(img):
    return np.flipud(img) + np.fliplr(img) + np.full_like(img, 0.5)


@program("image", lambda r: (r.random((6, 6)),))
def threshold_fraction(img):
    return np.count_nonzero(img > 0.5) / img.size + np.mean(np.isfinite(img))


@program("dtypes", lambda r: (f(r, 6).astype(np.float32), f(r, 6).astype(np.float32)))
def float32_distance(a, b):
    return np.sqrt(np.sum((a - b) ** 2)).astype(np.float64)


@program("dtypes", lambda r: (r.integers(0, 255, (4, 4)).astype(np.uint8),), diff=())
def uint8_image_to_float(img):
    return img.astype(np.float64) / 255.0 - np.mean(img) / 255.0


@program("dtypes", lambda r: (r.integers(-50, 50, 10),), diff=())
def integer_floor_division(n):
    return np.floor_divide(n, 7) * 7 + np.mod(n, 7)


@program("dtypes", lambda r: (f(r, 5), 2))
def round_to_decimals(x, decimals):
    return np.round(x, decimals) + np.around(x * 10) / 10


@program("fft", lambda r: (f(r, 4, 6),))
def inverse_2d_real_fft(x):
    return np.fft.irfft2(np.fft.rfft2(x), s=x.shape)


@program("fft", lambda r: (f(r, 3, 4, 5),))
def fftn_last_two_axes(x):
    return np.abs(np.fft.fftn(x, axes=(1, 2))) ** 2


@program("sort", lambda r: (f(r, 5, 4),))
def argmax_keepdims_gather(X):
    i = np.argmax(X, axis=1, keepdims=True)
    return np.take_along_axis(X, i, axis=1)


@program("sort", lambda r: (f(r, 3, 7),))
def top_k_values(x):
    return -np.sort(-x, axis=1)[:, :3]


@program("optim", lambda r: (f(r, 4), f(r, 4)))
def soft_threshold(x, lam_raw):
    lam = np.abs(lam_raw) * 0.3
    return np.sign(x) * np.maximum(np.abs(x) - lam, 0.0)


@program("physics", lambda r: (f(r, 3), f(r, 3)))
def angle_between(u, v):
    c = np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v))
    return np.degrees(np.arccos(np.clip(c, -1.0, 1.0)))


@program("signal", lambda r: (f(r, 20),))
def in_place_normalize(x):
    x = x.copy()
    x -= x.mean()
    x /= x.std()
    return x


@program("signal", lambda r: (f(r, 10),))
def sorted_in_place(x):
    y = x.copy()
    y.sort()
    return y[-3:]


@program("physics", lambda r: (f(r, 3, 2),))
def triangle_area(pts):
    (x1, y1), (x2, y2), (x3, y3) = pts
    return 0.5 * np.abs((x2 - x1) * (y3 - y1) - (x3 - x1) * (y2 - y1))


@program("physics", lambda r: (f(r, 4, 2),))
def first_point_distance(path):
    x0, y0 = path[0]
    return np.sqrt((path[:, 0] - x0) ** 2 + (path[:, 1] - y0) ** 2 + 1e-9)


@program("stats", lambda r: (f(r, 12),))
def two_largest_gap(x):
    second, first = np.sort(x)[-2:]
    return first - second


# == control flow and updates users write in NumPy style ======================================
@program("control", lambda r: (pos(r, 4) * 4,))
def newton_sqrt(x):
    y = x
    while np.max(np.abs(y * y - x)) > 1e-12:
        y = 0.5 * (y + x / y)
    return y


@program("control", lambda r: (f(r, 6),))
def sign_dependent_scale(x):
    if np.mean(x) > 0:
        return x * 2.0
    return 0.1 * x


@program("control", lambda r: (f(r, 5), f(r, 5)))
def running_recurrence(x, w):
    out = np.zeros_like(x)
    h = 0.0
    for i in range(x.shape[0]):
        h = np.tanh(w[i] * h + x[i])
        out[i] = h
    return out


@program("control", lambda r: (r.integers(0, 5, 12),), diff=())
def fancy_increment_repeats(idx):
    h = np.zeros(5)
    h[idx] += 1.0  # NumPy: each distinct index once (repeats do not accumulate)
    return h


@program("linalg", lambda r: (f(r, 2, 3, 4), f(r, 2, 4, 5)))
def ellipsis_einsum(A, B):
    return np.einsum("...ij,...jk->...ik", A, B)


@program("linalg", lambda r: (f(r, 3, 4), f(r, 4, 2)))
def tensordot_axes(A, B):
    return np.tensordot(A, B, axes=([1], [0]))


@program("linalg", lambda r: (spd(r, 3, (2,)),))
def batched_inverse_trace(A):
    return np.trace(np.linalg.inv(A), axis1=1, axis2=2)


@program("numerics", lambda r: (f(r, 4, 5),))
def cumulative_with_prepend(x):
    return np.diff(np.cumsum(x, axis=1), axis=1, prepend=0.0)


@program("numerics", lambda r: (f(r, 7),))
def clip_one_sided(x):
    return np.clip(x, None, 0.5) + x.clip(0.0, None)


@program("stats", lambda r: (f(r, 6, 3),))
def sample_std_max_initial(X):
    return np.std(X, ddof=1, axis=0) + np.max(X, axis=0, initial=0.0)


@program("ml", lambda r: (f(r, 5),))
def per_element_list_comprehension(x):
    return np.array([np.tanh(v) * v for v in x])
