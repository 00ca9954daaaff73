"""The NumPy coverage corpus, part one: the issue's seven categories (linear algebra, order
statistics, complex numbers, FFT, construction, numerics, convolution and pooling). See
benchmarks/coverage_corpus.py for the conventions."""

from __future__ import annotations

import math  # noqa: F401  (the programs may use it)

import numpy as np
from coverage_corpus import f, pos, program, sorted_unique, spd, stochastic  # noqa: F401

from srcjax import lax  # noqa: F401  (rebound to jax.lax when the source text runs under jax)


# == 1. linear algebra ======================================================================
@program("linalg", lambda r: (f(r, 4), f(r, 4), f(r, 4, 4)))
def gaussian_logpdf(x, mu, factor):
    n = x.shape[0]
    cov = factor @ factor.T + n * np.eye(n)  # NumPy's cholesky reads one triangle: differentiate a factor
    chol = np.linalg.cholesky(cov)
    z = np.linalg.solve(chol, x - mu)
    logdet = 2.0 * np.sum(np.log(np.diag(chol)))
    return -0.5 * (z @ z) - 0.5 * logdet - 0.5 * n * np.log(2 * np.pi)


@program("linalg", lambda r: (f(r, 10, 3), f(r, 10), 0.5))
def ridge_regression(X, y, lam):
    d = X.shape[1]
    return np.linalg.solve(X.T @ X + lam * np.eye(d), X.T @ y)


@program("linalg", lambda r: (f(r, 3), f(r, 3), spd(r, 3)))
def mahalanobis(x, mu, cov):
    d = x - mu
    return np.sqrt(d @ np.linalg.inv(cov) @ d)


@program("linalg", lambda r: (f(r, 6, 2), f(r, 6), f(r, 3, 2)))
def gp_posterior_mean(X, y, Xs):
    def rbf(a, b):
        d2 = np.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1)
        return np.exp(-0.5 * d2)

    K = rbf(X, X) + 1e-2 * np.eye(X.shape[0])
    alpha = np.linalg.solve(K, y)
    return rbf(Xs, X) @ alpha


@program("linalg", lambda r: (spd(r, 4),))
def log_determinant(A):
    sign, logdet = np.linalg.slogdet(A)
    return sign * logdet


@program("linalg", lambda r: (f(r, 5, 3),))
def spectral_norm(W):
    return np.linalg.norm(W, 2)


@program("linalg", lambda r: (f(r, 8, 4),))
def pca_reconstruction(X):
    Xc = X - X.mean(axis=0)
    U, S, Vt = np.linalg.svd(Xc, full_matrices=False)
    V2 = Vt[:2]
    return Xc @ V2.T @ V2


@program("linalg", lambda r: (f(r, 4, 4),))
def largest_eigenvalue(A):
    S = 0.5 * (A + A.T)
    w, V = np.linalg.eigh(S)
    return w[-1]


@program("linalg", lambda r: (f(r, 7, 3), f(r, 7)))
def qr_least_squares(A, b):
    Q, R = np.linalg.qr(A)
    return np.linalg.solve(R, Q.T @ b)


@program("linalg", lambda r: (f(r, 9, 3), f(r, 9)))
def lstsq_coefficients(A, b):
    coef, residuals, rank, sv = np.linalg.lstsq(A, b, rcond=None)
    return coef


@program("linalg", lambda r: (f(r, 6, 3), f(r, 6)))
def pinv_solution(A, b):
    return np.linalg.pinv(A) @ b


@program("linalg", lambda r: (stochastic(r, 3), pos(r, 3)))
def markov_five_steps(P, v):
    return v @ np.linalg.matrix_power(P, 5)


@program("linalg", lambda r: (f(r, 3, 4), f(r, 4, 5), f(r, 5, 2)))
def chained_product(A, B, C):
    return np.linalg.multi_dot([A, B, C])


@program("linalg", lambda r: (spd(r, 3),))
def condition_number(A):
    return np.linalg.cond(A)


@program("linalg", lambda r: (f(r, 4, 3),))
def nuclear_norm(W):
    return np.linalg.norm(W, "nuc")


@program("linalg", lambda r: (f(r, 5, 2, 2) + 2 * np.eye(2),))
def log_abs_jacobian_det(J):
    return np.sum(np.log(np.abs(np.linalg.det(J))))


@program("linalg", lambda r: (spd(r, 3, (4,)), f(r, 4, 3, 1)))
def batched_solve(A, b):
    return np.linalg.solve(A, b)[..., 0]


@program("linalg", lambda r: (spd(r, 4),))
def trace_of_inverse(A):
    return np.trace(np.linalg.inv(A))


# == 2. sorting and order statistics ========================================================
@program("sort", lambda r: (f(r, 12),))
def trimmed_mean(x):
    s = np.sort(x)
    return s[2:-2].mean()


@program("sort", lambda r: (f(r, 11),))
def median_abs_deviation(x):
    med = np.median(x)
    return np.median(np.abs(x - med))


@program("sort", lambda r: (f(r, 40),))
def winsorize(x):
    lo, hi = np.percentile(x, [5, 95])
    return np.clip(x, lo, hi)


@program("sort", lambda r: (f(r, 4, 9),))
def top3_mean(scores):
    return np.sort(scores, axis=-1)[:, -3:].mean(axis=-1)


@program("sort", lambda r: (f(r, 10),), diff=())
def rank_transform(x):
    ranks = np.argsort(np.argsort(x))
    return ranks / (x.shape[0] - 1)


@program("sort", lambda r: (f(r, 20), f(r, 5)), diff=())
def empirical_cdf(samples, t):
    return np.searchsorted(np.sort(samples), t, side="right") / samples.shape[0]


@program("sort", lambda r: (f(r, 15, 3),))
def quartiles(X):
    return np.quantile(X, [0.25, 0.5, 0.75], axis=0)


@program("sort", lambda r: (f(r, 30),))
def interquartile_range(x):
    q75, q25 = np.percentile(x, [75, 25])
    return q75 - q25


@program("sort", lambda r: (r.integers(0, 3, 8), r.integers(0, 3, 8), f(r, 8)))
def sort_by_two_keys(primary, secondary, values):
    order = np.lexsort((secondary, primary))
    return values[order]


@program("sort", lambda r: (f(r, 9),))
def fourth_smallest(x):
    return np.partition(x, 3)[3]


@program("sort", lambda r: (f(r, 6), f(r, 6, 2)))
def sort_rows_by_key(keys, X):
    order = np.argsort(keys)
    return X[order]


@program("sort", lambda r: (r.integers(0, 5, 20),), diff=())
def number_of_classes(labels):
    return len(np.unique(labels))


@program("sort", lambda r: (f(r, 8, 3), f(r, 3), 3))
def knn_mean_distance(X, q, k):
    d = np.linalg.norm(X - q, axis=1)
    idx = np.argsort(d)[:k]
    return d[idx].mean()


# == 3. complex numbers ====================================================================
@program("complex", lambda r: (pos(r, 6), f(r, 6)))
def phasor_magnitude(amp, phase):
    return np.abs(np.sum(amp * np.exp(1j * phase)))


@program("complex", lambda r: (pos(r, 5), pos(r, 5), pos(r, 5), 2.0))
def rlc_impedance(R, L, C, omega):
    Z = R + 1j * omega * L + 1 / (1j * omega * C)
    return np.abs(Z), np.angle(Z)


@program("complex", lambda r: (f(r, 5, 2), f(r)))
def rotate_points(xy, theta):
    z = xy[:, 0] + 1j * xy[:, 1]
    z = z * np.exp(1j * theta)
    return np.stack([z.real, z.imag], axis=1)


@program("complex", lambda r: (f(r, 8),))
def dft_power(x):
    n = x.shape[0]
    k = np.arange(n)
    W = np.exp(-2j * np.pi * np.outer(k, k) / n)
    return np.abs(W @ x) ** 2


@program("complex", lambda r: (f(r, 3), f(r, 3), spd(r, 3)))
def quantum_expectation(psi_re, psi_im, H):
    psi = psi_re + 1j * psi_im
    psi = psi / np.linalg.norm(psi)
    return np.real(np.conj(psi) @ H @ psi)


@program("complex", lambda r: (0.3 * f(r, 6), 0.3 * f(r, 6)))
def mandelbrot_escape(x, y):
    c = x + 1j * y
    z = c
    for _ in range(4):
        z = z * z + c
    return np.abs(z)


# == 4. FFT =================================================================================
@program("fft", lambda r: (f(r, 32),))
def power_spectrum(x):
    return np.abs(np.fft.rfft(x)) ** 2 / x.shape[0]


@program("fft", lambda r: (f(r, 32),))
def lowpass_filter(x):
    n = x.shape[0]
    X = np.fft.rfft(x)
    freqs = np.fft.rfftfreq(n, d=1.0)
    X = np.where(freqs < 0.2, X, 0)
    return np.fft.irfft(X, n)


@program("fft", lambda r: (f(r, 10), f(r, 5)))
def fft_convolution(a, b):
    n = a.shape[0] + b.shape[0] - 1
    return np.fft.irfft(np.fft.rfft(a, n) * np.fft.rfft(b, n), n)


@program("fft", lambda r: (f(r, 16),))
def spectral_derivative(u):
    n = u.shape[0]
    k = 2 * np.pi * np.fft.fftfreq(n, d=2 * np.pi / n)
    return np.real(np.fft.ifft(1j * k * np.fft.fft(u)))


@program("fft", lambda r: (f(r, 6, 8),))
def centered_magnitude(img):
    return np.abs(np.fft.fftshift(np.fft.fft2(img)))


@program("fft", lambda r: (f(r, 12),))
def autocorrelation(x):
    n = x.shape[0]
    F = np.fft.fft(x - x.mean(), 2 * n)
    acf = np.fft.ifft(F * np.conj(F)).real[:n]
    return acf / acf[0]


@program("fft", lambda r: (f(r, 64),), diff=())
def dominant_frequency(x):
    spectrum = np.abs(np.fft.rfft(x))
    return np.fft.rfftfreq(x.shape[0])[np.argmax(spectrum[1:]) + 1]


# == 5. construction and shape utilities ====================================================
@program("construct", lambda r: (f(r, 7), f(r, 4)))
def polynomial_features(x, w):
    return np.vander(x, 4) @ w


@program("construct", lambda r: (f(r, 5), f(r, 4)))
def grid_kernel(x, y):
    X, Y = np.meshgrid(x, y)
    return np.exp(-((X - Y) ** 2))


@program("construct", lambda r: (f(r, 10),))
def edge_padded_smoothing(x):
    p = np.pad(x, 1, mode="edge")
    return (p[:-2] + p[1:-1] + p[2:]) / 3


@program("construct", lambda r: (f(r, 5, 5),))
def upper_triangle_features(C):
    iu = np.triu_indices(5, k=1)
    return C[iu]


@program("construct", lambda r: (f(r, 2, 2), f(r, 2, 2)))
def saddle_point_matrix(A, B):
    K = np.block([[A @ A.T + np.eye(2), B], [B.T, np.zeros((2, 2))]])
    return np.linalg.det(K)


@program("construct", lambda r: (f(r, 2, 2), f(r, 3, 3), f(r, 6)))
def kronecker_operator(A, B, x):
    return np.kron(A, B) @ x


@program("construct", lambda r: (f(r, 5, 3), f(r, 5, 3)))
def torques(r_, F):
    return np.cross(r_, F)


@program("construct", lambda r: (f(r, 6, 3), f(r, 4)))
def linear_with_bias_column(X, w):
    Xb = np.hstack([X, np.ones((X.shape[0], 1))])
    return Xb @ w


@program("construct", lambda r: (f(r, 4, 4),))
def diagonal_dominance(A):
    d = np.abs(np.diagonal(A))
    return d - (np.abs(A).sum(axis=1) - d)


@program("construct", lambda r: (f(r, 8),))
def interior_differences(x):
    inner = np.delete(x, [0, x.shape[0] - 1])
    return np.append(inner, 0.0) - np.insert(inner, 0, 0.0)


@program("construct", lambda r: (f(r, 12),))
def periodic_laplacian(u):
    return np.roll(u, 1) - 2 * u + np.roll(u, -1)


@program("construct", lambda r: (f(r, 4, 4),))
def dihedral_average(img):
    return (img + np.rot90(img) + np.flip(img, axis=0) + img.T) / 4


@program("construct", lambda r: (f(r, 5, 5),))
def causal_softmax(scores):
    n = scores.shape[0]
    masked = scores + np.triu(np.full((n, n), -1e9), k=1)
    e = np.exp(masked - masked.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@program("construct", lambda r: (f(r, 3), f(r, 3)))
def outer_features(a, b):
    return np.concatenate([np.atleast_1d(a.sum()), np.outer(a, b).ravel(), np.tile(a, 2)])


@program("construct", lambda r: (f(r),))
def rotation_matrix_apply(theta):
    c, s = np.cos(theta), np.sin(theta)
    R = np.array([[c, -s], [s, c]])
    return R @ np.array([1.0, 2.0])


# == 6. numerics ============================================================================
@program("numerics", lambda r: (f(r, 6, 3), r.random((6, 3)) < 0.3))
def nan_robust_column_mean(X, missing):
    Xn = np.where(missing, np.nan, X)
    return np.nanmean(Xn, axis=0)


@program("numerics", lambda r: (f(r, 9), sorted_unique(r, 9)))
def trapezoid_integral(y, x):
    return np.trapezoid(y, x)


@program("numerics", lambda r: (f(r, 10),))
def finite_difference_slope(y):
    return np.gradient(y, 0.1)


@program("numerics", lambda r: (r.random(6) * 9, sorted_unique(r, 8), f(r, 8)))
def table_lookup(xq, xp, fp):
    return np.interp(xq, xp, fp)


@program("numerics", lambda r: (f(r, 4), f(r, 7)))
def horner_polynomial(c, x):
    return np.polyval(c, x)


@program("numerics", lambda r: (np.linspace(-1, 1, 10), f(r, 10)))
def quadratic_fit(x, y):
    return np.polyfit(x, y, 2)


@program("numerics", lambda r: (f(r, 12, 3),))
def correlation_matrix(X):
    return np.corrcoef(X.T)


@program("numerics", lambda r: (f(r, 10),))
def leaky_piecewise(x):
    return np.piecewise(x, [x < 0, x >= 0], [lambda v: 0.1 * v, lambda v: v])


@program("numerics", lambda r: (2 * f(r, 10),))
def soft_sign_select(x):
    return np.select([x < -1, x > 1], [-1 - 0.1 * (x + 1), 1 + 0.1 * (x - 1)], default=x)


@program("numerics", lambda r: (f(r, 50),), diff=())
def binned_counts(x):
    counts, edges = np.histogram(x, bins=8, range=(-3, 3))
    return counts


@program("numerics", lambda r: (f(r, 20),))
def moving_average(x):
    return np.convolve(x, np.ones(5) / 5, mode="valid")


@program("numerics", lambda r: (100 + np.cumsum(f(r, 15)),))
def max_drawdown(prices):
    peak = np.maximum.accumulate(prices)
    return np.max((peak - prices) / peak)


@program("numerics", lambda r: (f(r, 10), r.integers(0, 4, 10)))
def segment_sums(values, segment):
    out = np.zeros(4)
    np.add.at(out, segment, values)
    return out


@program("numerics", lambda r: (f(r, 6), f(r, 6)), diff=())
def converged(x, y):
    return np.allclose(x, x + 1e-9 * y) & np.all(np.isclose(y, y))


@program("numerics", lambda r: (f(r, 8), 1.0))
def clip_by_global_norm(g, max_norm):
    norm = np.linalg.norm(g)
    return g * np.minimum(1.0, max_norm / norm)


@program("numerics", lambda r: (10 * f(r, 7),))
def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


@program("numerics", lambda r: (5 * f(r, 8),))
def softplus(x):
    return np.logaddexp(0.0, x)


@program("numerics", lambda r: (f(r, 5, 4),))
def column_sum_where_positive(X):
    return np.sum(X, axis=0, where=X > 0)


# == 7. convolution and pooling ============================================================
@program("conv", lambda r: (f(r, 6, 7), f(r, 3, 3)))
def conv2d_windows(img, kernel):
    windows = np.lib.stride_tricks.sliding_window_view(img, (3, 3))
    return np.einsum("ijkl,kl->ij", windows, kernel)


@program("conv", lambda r: (f(r, 6, 8),))
def max_pool_reshape(x):
    H, W = x.shape
    return x.reshape(H // 2, 2, W // 2, 2).max(axis=(1, 3))


@program("conv", lambda r: (f(r, 2, 3, 6, 6), f(r, 4, 3, 3, 3)))
def conv_layer_nchw(x, w):
    y = lax.conv_general_dilated(x, w, (1, 1), "SAME")
    return np.maximum(y, 0.0)


@program("conv", lambda r: (f(r, 1, 6, 6, 2),))
def average_pool_nhwc(x):
    return lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4


@program("conv", lambda r: (f(r, 15),))
def moving_median(x):
    return np.median(np.lib.stride_tricks.sliding_window_view(x, 5), axis=-1)


@program("conv", lambda r: (f(r, 6, 6),))
def sobel_magnitude(img):
    gx = img[1:-1, 2:] - img[1:-1, :-2]
    gy = img[2:, 1:-1] - img[:-2, 1:-1]
    return np.sqrt(gx ** 2 + gy ** 2 + 1e-6)


@program("conv", lambda r: (f(r, 2, 10, 3), f(r, 3, 3, 4)))
def conv1d_nwc(x, w):
    return lax.conv_general_dilated(x, w, (1,), "VALID", dimension_numbers=("NWC", "WIO", "NWC"))


@program("conv", lambda r: (f(r, 1, 7, 7, 3),))
def max_pool_same(x):
    return lax.reduce_window(x, -np.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
