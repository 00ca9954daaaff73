"""Programs from projects no earlier hunt read (hunt 21): the corpus of tests/test_hunt21_programs.py.

What the code of these projects computes, written again for srcjax with NumPy and ``srcjax``'s names, as their
users write it without them (each program is ours; nothing here is pasted):

- scikit-learn (BSD-3): a Gaussian mixture's E and M steps (diagonal covariances, log responsibilities by
  logsumexp), lasso by coordinate descent (in-place ``w[j]`` updates and a residual kept up to date), NMF's
  multiplicative updates, isotonic regression by adjacent-violator passes (a branch on data in a loop), t-SNE's
  per-row binary search for a perplexity (``if`` on data in a fixed loop, rows written in place), the Huber
  regressor's loss with its scale, LDA's pooled covariance, ridge's leave-one-out errors through ``eigh``, kernel
  PCA's centred kernel, a squared-hinge linear SVM, logistic regression's Newton steps, mini-batch k-means' counts
  by ``np.add.at``, the silhouette score, standard scaling with polynomial features.
- statsmodels (BSD-3): Holt-Winters' additive level/trend/season recursion, ARMA(1, 1)'s conditional sum of
  squares, Yule-Walker through a Toeplitz matrix built by fancy indexing, one LOWESS pass (tricube weights, a
  weighted line per point), the Hodrick-Prescott filter by ``solve``, the Ljung-Box statistic, the ACF by FFT,
  the Theil-Sen slope (median of pairwise slopes over ``triu_indices``), Huber's IRLS with the MAD scale.
- filterpy (MIT): Merwe's scaled sigma points and the unscented transform, an alpha-beta filter, systematic
  resampling by ``cumsum`` and ``searchsorted``, an EKF update with its Jacobian by ``jacfwd`` inside.
- hmmlearn (BSD-3): one Baum-Welch step with scaled forward-backward passes and Gaussian emissions, posterior
  decoding.
- librosa (ISC): Slaney's mel scale with ``np.where``, a mel filterbank applied to a power spectrogram of
  pre-emphasised, Hann-windowed frames, the spectral centroid and roll-off, zero crossings beside RMS energy,
  onset strength, PCEN's IIR smoothing over time, MFCCs by a DCT-II matrix.
- scikit-image (BSD-3): ``rgb2gray`` with gamma and sigmoid contrast, an unsharp mask, Harris' corner response
  from Sobel gradients by slices, grey erosion/dilation/opening by shifted slices, bilinear ``map_coordinates``
  by floor/clip gathers, Chambolle's total-variation denoising, PSNR and a uniform-window SSIM.
- lifelines (MIT): Kaplan-Meier by ``cumprod`` over sorted times, Cox's partial likelihood (Breslow) by a
  reversed ``cumsum``, a Weibull AFT likelihood with censoring, Nelson-Aalen, Harrell's concordance index.
- arviz / PyMC (Apache-2.0): the effective sample size with Geyer's truncation (a ``break`` on data), split
  R-hat, the highest-density interval by sorting, WAIC, a non-centred hierarchical log density with the log
  transform's Jacobian.
- GPflow / GPy (Apache-2.0, BSD-3): SGPR's collapsed bound with inducing points, a sum of ARD and periodic
  kernels, GP classification's Laplace approximation by Newton steps.
- equinox (Apache-2.0): modules as pure functions over tuples of layers with the activation passed in, a
  depthwise Conv1d with padding, RMSNorm and LayerNorm without affine parameters, an embedding with PReLU, a
  frozen/trainable split by a mask dict and ``stop_gradient``.
- SciPy-style routines (BSD-3): ``filtfilt`` of a first-order IIR, golden-section search, RK4 over a time grid,
  Akima and PCHIP slopes, barycentric Lagrange interpolation, Spearman's rho by double ``argsort``, Kendall's tau,
  the two-sample KS statistic, ``linregress``, Welch's t, ``logsumexp`` with ``b=`` and ``return_sign``, a
  find-peaks mask, Welch's periodogram, the Hilbert envelope by FFT, ``cdist`` metrics, ``whiten`` + ``vq``,
  ``least_squares``' soft-l1 loss.
- epidemiology, pharmacology and other sciences: SIR by Euler steps, SEIR by RK4 under ``scan``, multiple-dose
  oral pharmacokinetics, Michaelis-Menten under ``fori_loop``, FitzHugh-Nagumo with spike counting, haversine
  nearest neighbours, degree days and a piecewise heat index, projectile with drag until it lands (``while`` on
  data), Elo updates over a match list, Bradley-Terry, Nelson-Siegel, risk parity, a KKT solve for a
  minimum-variance portfolio.
"""

# ruff: noqa: B007, E741, F841, N803, N806 - (the authors' style: `for i in range(n):`, `l`, `W`, `X`, unpacked names
# left unread)

from __future__ import annotations

import math

import numpy as np

import srcjax

lax = srcjax.lax


def _lse(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis))


# == scikit-learn =================================================================================================


def gmm_em_step(X, means, log_vars, log_w):
    # sklearn.mixture.GaussianMixture(covariance_type="diag"): _estimate_log_prob, then _m_step
    n, d = X.shape
    var = np.exp(log_vars)
    prec = 1.0 / var
    log_det = -0.5 * np.sum(log_vars, axis=1)
    diff = X[:, None, :] - means[None, :, :]
    log_prob = -0.5 * (d * np.log(2 * np.pi) + np.sum(diff ** 2 * prec[None], axis=2)) + log_det
    weighted = log_prob + log_w - _lse(log_w, axis=0)
    log_norm = _lse(weighted, axis=1)
    resp = np.exp(weighted - log_norm[:, None])
    nk = resp.sum(axis=0) + 10 * np.finfo(resp.dtype).eps
    new_means = resp.T @ X / nk[:, None]
    avg_X2 = resp.T @ (X * X) / nk[:, None]
    new_var = avg_X2 - 2 * new_means * (resp.T @ X) / nk[:, None] + new_means ** 2 + 1e-6
    return np.mean(log_norm), new_means, new_var, nk / n


def lasso_cd(X, y, alpha, n_sweeps=3):
    # sklearn's cd_fast.enet_coordinate_descent (l1_ratio=1): w[j] updated in place, the residual kept current
    n, p = X.shape
    w = np.zeros(p)
    R = y - X @ w
    norm_cols = np.sum(X ** 2, axis=0)
    for sweep in range(n_sweeps):
        for j in range(p):
            w_j = w[j]
            if w_j != 0.0:
                R = R + X[:, j] * w_j
            tmp = X[:, j] @ R
            w[j] = np.sign(tmp) * np.maximum(abs(tmp) - alpha * n, 0.0) / norm_cols[j]
            if w[j] != 0.0:
                R = R - X[:, j] * w[j]
    return w, 0.5 * np.sum(R ** 2) / n + alpha * np.sum(np.abs(w))


def nmf_multiplicative(V, W, H, n_iter=4):
    # sklearn.decomposition.NMF(solver="mu", beta_loss="frobenius")
    eps = 1e-10
    for it in range(n_iter):
        H = H * (W.T @ V) / (W.T @ W @ H + eps)
        W *= (V @ H.T) / (W @ (H @ H.T) + eps)
    return 0.5 * np.linalg.norm(V - W @ H, "fro") ** 2


def isotonic_passes(y, w):
    # adjacent violators pooled by repeated left-to-right passes (a branch on data inside the loop)
    y = y.copy()
    w = w.copy()
    n = y.shape[0]
    for _ in range(n):
        for i in range(n - 1):
            if y[i] > y[i + 1]:
                m = (w[i] * y[i] + w[i + 1] * y[i + 1]) / (w[i] + w[i + 1])
                y[i] = m
                y[i + 1] = m
    return y


def tsne_joint_p(D, perplexity=2.0, n_steps=8):
    # sklearn.manifold._utils._binary_search_perplexity, per row: beta bisected on the entropy
    n = D.shape[0]
    P = np.zeros((n, n))
    target = np.log(perplexity)
    for i in range(n):
        beta, lo, hi = 1.0, 0.0, np.inf
        d = np.concatenate([D[i, :i], D[i, i + 1:]])
        for _ in range(n_steps):
            p = np.exp(-d * beta)
            s = np.sum(p)
            H = np.log(s) + beta * np.sum(d * p) / s
            if H > target:
                lo = beta
                beta = beta * 2.0 if hi == np.inf else (beta + hi) / 2.0
            else:
                hi = beta
                beta = (beta + lo) / 2.0
        p = np.exp(-d * beta)
        row = p / np.sum(p)
        P[i, :i] = row[:i]
        P[i, i + 1:] = row[i:]
    return (P + P.T) / (2.0 * n)


def huber_regressor_loss(w, X, y, epsilon=1.35, alpha=1e-3):
    # sklearn.linear_model._huber._huber_loss_and_gradient: w = [coef..., intercept, sigma]
    coef, intercept, sigma = w[:-2], w[-2], w[-1]
    n = X.shape[0]
    linear = X @ coef + intercept
    abs_res = np.abs(y - linear)
    outliers = abs_res > epsilon * sigma
    n_out = np.count_nonzero(outliers)
    out_loss = 2.0 * epsilon * np.sum(np.where(outliers, abs_res, 0.0)) - sigma * n_out * epsilon ** 2
    sq = np.sum(np.where(outliers, 0.0, (y - linear) ** 2)) / sigma
    return n * sigma + sq + out_loss + alpha * np.dot(coef, coef)


def lda_scores(X, y_onehot, x_new):
    # sklearn's LinearDiscriminantAnalysis(solver="lsqr"): class means, pooled covariance, solve
    counts = y_onehot.sum(axis=0)
    means = (y_onehot.T @ X) / counts[:, None]
    centered = X - y_onehot @ means
    cov = centered.T @ centered / (X.shape[0] - means.shape[0]) + 1e-3 * np.eye(X.shape[1])
    coef = np.linalg.solve(cov, means.T).T
    intercept = -0.5 * np.sum(coef * means, axis=1) + np.log(counts / counts.sum())
    return x_new @ coef.T + intercept


def ridge_loo_errors(X, y, alpha):
    # sklearn's _RidgeGCV (gram mode): eigendecomposition of X X^T, leave-one-out residuals
    K = X @ X.T  # (X wider than tall: distinct eigenvalues)
    s, Q = np.linalg.eigh(K)
    w = 1.0 / (s + alpha)
    c = Q @ (w * (Q.T @ y))
    G_diag = np.sum(Q ** 2 * w, axis=1)
    return np.mean((c / G_diag) ** 2)


def kernel_pca(X, gamma=0.5, k=2):
    n = X.shape[0]
    sq = np.sum(X ** 2, axis=1)
    K = np.exp(-gamma * (sq[:, None] + sq[None, :] - 2 * X @ X.T))
    one = np.full((n, n), 1.0 / n)
    Kc = K - one @ K - K @ one + one @ K @ one
    vals, vecs = np.linalg.eigh(Kc)
    vals, vecs = vals[::-1][:k], vecs[:, ::-1][:, :k]
    return np.sum(vals), np.abs(vecs * np.sqrt(vals))


def squared_hinge_svm(w, b, X, y, C=1.0):
    margins = np.maximum(0.0, 1.0 - y * (X @ w + b))
    return 0.5 * w @ w + C * np.sum(margins ** 2)


def logistic_newton(X, y, w0, n_steps=3, l2=0.1):
    w = w0
    for _ in range(n_steps):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        g = X.T @ (p - y) + l2 * w
        H = (X.T * (p * (1 - p))) @ X + l2 * np.eye(X.shape[1])
        w = w - np.linalg.solve(H, g)
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p) + (1 - y) * np.log1p(-p))


def minibatch_kmeans(centers, counts, X):
    # sklearn's _mini_batch_step: nearest centres, per-centre counts by np.add.at, learning rate 1/count
    d2 = np.sum((X[:, None, :] - centers[None]) ** 2, axis=-1)
    labels = np.argmin(d2, axis=1)
    centers = centers.copy()
    counts = counts.copy()
    for i in range(X.shape[0]):
        c = labels[i]
        counts[c] += 1.0
        lr = 1.0 / counts[c]
        centers[c] = centers[c] * (1.0 - lr) + X[i] * lr
    inertia = np.sum(np.min(d2, axis=1))
    return centers, inertia


def silhouette(X, labels, n_clusters=3):
    D = np.sqrt(np.sum((X[:, None] - X[None]) ** 2, axis=-1) + 1e-12)
    onehot = (labels[:, None] == np.arange(n_clusters)[None]).astype(X.dtype)
    sums = D @ onehot
    sizes = onehot.sum(axis=0)
    own = np.sum(sums * onehot, axis=1) / np.maximum(np.sum(onehot * sizes, axis=1) - 1.0, 1.0)
    other = np.where(onehot > 0, np.inf, sums / sizes)
    nearest = np.min(other, axis=1)
    return np.mean((nearest - own) / np.maximum(own, nearest))


def scaled_poly_features(X, w):
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    Z = (X - mean) / std
    cols = [np.ones(X.shape[0])]
    for i in range(Z.shape[1]):
        cols.append(Z[:, i])
    for i in range(Z.shape[1]):
        for j in range(i, Z.shape[1]):
            cols.append(Z[:, i] * Z[:, j])
    F = np.stack(cols, axis=1)
    return F @ w


# == statsmodels ==================================================================================================


def holt_winters_sse(params, y, m=3):
    # ExponentialSmoothing(trend="add", seasonal="add"): level, trend, season recursions; in-place season array
    alpha, beta, gamma = 1 / (1 + np.exp(-params))
    n = y.shape[0]
    level = y[0]
    trend = y[1] - y[0]
    season = np.zeros(n + m)
    season[:m] = y[:m] - np.mean(y[:m])
    sse = 0.0
    for t in range(n):
        fc = level + trend + season[t]
        err = y[t] - fc
        sse = sse + err ** 2
        new_level = alpha * (y[t] - season[t]) + (1 - alpha) * (level + trend)
        trend = beta * (new_level - level) + (1 - beta) * trend
        season[t + m] = gamma * (y[t] - new_level) + (1 - gamma) * season[t]
        level = new_level
    return sse


def arma_css(phi, theta, y):
    # statsmodels' ARIMA(method="css") for ARMA(1, 1): e_t = y_t - phi y_{t-1} - theta e_{t-1}
    e_prev = 0.0
    total = 0.0
    for t in range(1, y.shape[0]):
        e = y[t] - phi * y[t - 1] - theta * e_prev
        total += e * e
        e_prev = e
    return total / (y.shape[0] - 1)


def yule_walker(x, order=3):
    n = x.shape[0]
    x = x - x.mean()
    r = np.array([np.sum(x[: n - k] * x[k:]) / n for k in range(order + 1)])
    idx = np.abs(np.arange(order)[:, None] - np.arange(order)[None, :])
    R = r[idx]
    rho = np.linalg.solve(R, r[1:])
    sigma = np.sqrt(r[0] - r[1:] @ rho)
    return rho, sigma


def lowess_pass(x, y, frac=0.6):
    # statsmodels' lowess, one pass: for each point the k nearest by a sort, tricube weights, a weighted line
    n = x.shape[0]
    k = int(np.ceil(frac * n))
    out = []
    for i in range(n):
        dist = np.abs(x - x[i])
        h = np.sort(dist)[k - 1]
        u = np.clip(dist / h, 0.0, 1.0)
        w = (1 - u ** 3) ** 3
        sw = np.sum(w)
        xm = np.sum(w * x) / sw
        ym = np.sum(w * y) / sw
        b = np.sum(w * (x - xm) * (y - ym)) / np.sum(w * (x - xm) ** 2)
        out.append(ym + b * (x[i] - xm))
    return np.array(out)


def hp_filter(y, lamb=10.0):
    n = y.shape[0]
    D = np.zeros((n - 2, n))
    for i in range(n - 2):
        D[i, i] = 1.0
        D[i, i + 1] = -2.0
        D[i, i + 2] = 1.0
    trend = np.linalg.solve(np.eye(n) + lamb * D.T @ D, y)
    return trend, y - trend


def ljung_box(x, lags=3):
    n = x.shape[0]
    xc = x - np.mean(x)
    denom = np.sum(xc ** 2)
    q = 0.0
    for k in range(1, lags + 1):
        acf = np.sum(xc[k:] * xc[:-k]) / denom
        q += acf ** 2 / (n - k)
    return n * (n + 2) * q


def acf_fft(x, nlags=4):
    n = x.shape[0]
    xc = x - x.mean()
    F = np.fft.rfft(xc, n=2 * n)
    ac = np.fft.irfft(F * np.conj(F), n=2 * n)[:n]
    return ac[: nlags + 1] / ac[0]


def theil_sen(x, y):
    i, j = np.triu_indices(x.shape[0], k=1)
    slopes = (y[j] - y[i]) / (x[j] - x[i])
    slope = np.median(slopes)
    intercept = np.median(y - slope * x)
    return slope, intercept


def huber_irls(X, y, n_iter=4, c=1.345):
    # statsmodels' RLM(M=HuberT()): weights min(1, c / |r / s|), scale by the normalised MAD
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    for _ in range(n_iter):
        r = y - X @ beta
        s = np.median(np.abs(r - np.median(r))) / 0.6745
        a = np.abs(r / s)
        w = np.where(a <= c, 1.0, c / a)
        Xw = X * w[:, None]
        beta = np.linalg.solve(X.T @ Xw, Xw.T @ y)
    return beta


# == filterpy =====================================================================================================


def merwe_unscented(mean, P_raw, alpha=0.5, beta=2.0, kappa=0.0):
    # MerweScaledSigmaPoints + unscented_transform of fx(x) = [sin(x0) + x1, x0 * x1]
    n = mean.shape[0]
    P = P_raw @ P_raw.T + 0.5 * np.eye(n)
    lambda_ = alpha ** 2 * (n + kappa) - n
    U = np.linalg.cholesky((lambda_ + n) * P).T
    sigmas = np.zeros((2 * n + 1, n))
    sigmas[0] = mean
    for k in range(n):
        sigmas[k + 1] = mean + U[k]
        sigmas[n + k + 1] = mean - U[k]
    c = 0.5 / (n + lambda_)
    Wm = np.full(2 * n + 1, c)
    Wc = np.full(2 * n + 1, c)
    Wm[0] = lambda_ / (n + lambda_)
    Wc[0] = lambda_ / (n + lambda_) + (1 - alpha ** 2 + beta)
    Y = np.stack([np.sin(sigmas[:, 0]) + sigmas[:, 1], sigmas[:, 0] * sigmas[:, 1]], axis=1)
    x = Wm @ Y
    y = Y - x
    cov = y.T @ (Wc[:, None] * y)
    return x, cov


def alpha_beta_filter(z, x0, dx0, dt=1.0, a=0.85, b=0.005):
    x, dx = x0, dx0
    est = []
    for t in range(z.shape[0]):
        x_pred = x + dx * dt
        r = z[t] - x_pred
        x = x_pred + a * r
        dx = dx + b / dt * r
        est.append(x)
    return np.array(est), dx


def systematic_resample(weights, particles, u0):
    # filterpy.monte_carlo.systematic_resample: positions (u0 + k) / N against the cumulative sum
    n = weights.shape[0]
    w = np.exp(weights - _lse(weights, axis=0))
    positions = (u0 + np.arange(n)) / n
    cs = np.cumsum(w)
    cs[-1] = 1.0
    idx = np.searchsorted(cs, positions)
    new = particles[idx]
    return np.mean(new, axis=0), np.sum(w[:, None] * particles, axis=0)


def _hx(x):
    return np.array([np.sqrt(x[0] ** 2 + x[1] ** 2), np.arctan2(x[1], x[0])])


def ekf_update(x, P_raw, z):
    P = P_raw @ P_raw.T + np.eye(x.shape[0])
    H = srcjax.jacfwd(_hx)(x)
    R = np.diag(np.array([0.1, 0.01]))
    S = H @ P @ H.T + R
    K = P @ H.T @ np.linalg.inv(S)
    y = z - _hx(x)
    x_new = x + K @ y
    P_new = (np.eye(x.shape[0]) - K @ H) @ P
    return x_new, np.trace(P_new)


# == hmmlearn =====================================================================================================


def baum_welch_step(log_A, means, obs, start_logits):
    # hmmlearn's GaussianHMM: scaled forward-backward (normalised each step), then the new transition matrix
    A = np.exp(log_A - _lse(log_A, axis=1)[:, None])
    pi = np.exp(start_logits - _lse(start_logits, axis=0))
    B = np.exp(-0.5 * (obs[:, None] - means[None, :]) ** 2) / np.sqrt(2 * np.pi)
    T, K = B.shape
    alpha = np.zeros((T, K))
    scale = np.zeros(T)
    a = pi * B[0]
    scale[0] = a.sum()
    alpha[0] = a / scale[0]
    for t in range(1, T):
        a = (alpha[t - 1] @ A) * B[t]
        scale[t] = a.sum()
        alpha[t] = a / scale[t]
    beta = np.ones((T, K))
    for t in range(T - 2, -1, -1):
        beta[t] = (A @ (B[t + 1] * beta[t + 1])) / scale[t + 1]
    xi_sum = np.zeros((K, K))
    for t in range(T - 1):
        xi_sum += A * np.outer(alpha[t], B[t + 1] * beta[t + 1]) / scale[t + 1]
    new_A = xi_sum / xi_sum.sum(axis=1, keepdims=True)
    return np.sum(np.log(scale)), new_A


def posterior_decode(log_A, means, obs):
    K = means.shape[0]
    logA = log_A - _lse(log_A, axis=1)[:, None]
    logB = -0.5 * (obs[:, None] - means[None, :]) ** 2
    T = obs.shape[0]
    fwd = [logB[0] - np.log(K)]
    for t in range(1, T):
        fwd.append(_lse(fwd[-1][:, None] + logA, axis=0) + logB[t])
    bwd = [np.zeros(K)]
    for t in range(T - 2, -1, -1):
        bwd.insert(0, _lse(logA + (logB[t + 1] + bwd[0])[None, :], axis=1))
    post = np.stack(fwd) + np.stack(bwd)
    post = post - _lse(post, axis=1)[:, None]
    return np.exp(post), np.argmax(post, axis=1)


# == librosa ======================================================================================================

SR = 800.0
N_FFT = 16
HOP = 4


def _hz_to_mel(f):
    # Slaney's scale: linear below 1 kHz, logarithmic above
    f_sp = 200.0 / 3
    min_log_hz = 1000.0
    logstep = np.log(6.4) / 27.0
    mels = f / f_sp
    return np.where(f >= min_log_hz, min_log_hz / f_sp + np.log(np.maximum(f, 1e-10) / min_log_hz) / logstep, mels)


def _mel_to_hz(m):
    f_sp = 200.0 / 3
    min_log_mel = 1000.0 / f_sp
    logstep = np.log(6.4) / 27.0
    return np.where(m >= min_log_mel, 1000.0 * np.exp(logstep * (m - min_log_mel)), f_sp * m)


def mel_filterbank(n_mels=4, fmax=400.0):
    fftfreqs = np.linspace(0, SR / 2, N_FFT // 2 + 1)
    mel_f = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(fmax), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fftfreqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0, np.minimum(lower, upper))
    enorm = 2.0 / (mel_f[2: n_mels + 2] - mel_f[:n_mels])
    return weights * enorm[:, None]


def log_mel_spectrogram(y, coef=0.97):
    y = np.concatenate([y[:1], y[1:] - coef * y[:-1]])
    n_frames = 1 + (y.shape[0] - N_FFT) // HOP
    idx = np.arange(N_FFT)[None, :] + HOP * np.arange(n_frames)[:, None]
    frames = y[idx] * np.hanning(N_FFT)
    power = np.abs(np.fft.rfft(frames, axis=-1)) ** 2
    mel = power @ mel_filterbank().T
    return 10.0 * np.log10(np.maximum(mel, 1e-10))


def centroid_rolloff(S, roll_percent=0.85):
    freqs = np.linspace(0, SR / 2, S.shape[0])
    S = np.abs(S)
    centroid = np.sum(freqs[:, None] * S, axis=0) / np.sum(S, axis=0)
    total = np.cumsum(S, axis=0)
    threshold = roll_percent * total[-1]
    ind = np.where(total < threshold[None, :], np.nan, 1)
    rolloff = np.nanmin(ind * freqs[:, None], axis=0)
    return centroid, rolloff


def zcr_rms(y, frame=6, hop=3):
    n = 1 + (y.shape[0] - frame) // hop
    zc = []
    rms = []
    for i in range(n):
        seg = y[i * hop: i * hop + frame]
        crossings = np.abs(np.diff(np.signbit(seg).astype(float)))
        zc.append(np.mean(crossings))
        rms.append(np.sqrt(np.mean(seg ** 2)))
    return np.array(zc), np.stack(rms)


def onset_strength(S, lag=1):
    logS = np.log1p(10.0 * np.abs(S))
    diff = logS[:, lag:] - logS[:, :-lag]
    onset = np.mean(np.maximum(0.0, diff), axis=0)
    return np.pad(onset, (lag, 0))


def pcen(E, s=0.25, alpha=0.98, delta=2.0, r=0.5, eps=1e-6):
    # librosa.pcen: M[t] = (1 - s) M[t-1] + s E[t], a loop over frames
    M = np.zeros_like(E)
    M[:, 0] = E[:, 0]
    for t in range(1, E.shape[1]):
        M[:, t] = (1 - s) * M[:, t - 1] + s * E[:, t]
    smooth = np.exp(-alpha * (np.log(eps) + np.log1p(M / eps)))
    return (E * smooth + delta) ** r - delta ** r


def _dct_matrix(n, k):
    m = np.arange(n)
    basis = np.cos(np.pi / n * (m[None, :] + 0.5) * np.arange(k)[:, None])
    basis[0] *= 1.0 / np.sqrt(2.0)
    return basis * np.sqrt(2.0 / n)


def mfcc(log_mel, n_mfcc=3):
    return _dct_matrix(log_mel.shape[0], n_mfcc) @ log_mel


# == scikit-image =================================================================================================


def gray_contrast(rgb, gain=10.0, cutoff=0.5, gamma=0.8):
    gray = rgb @ np.array([0.2125, 0.7154, 0.0721])
    g = np.clip(gray, 0.0, 1.0) ** gamma
    return 1.0 / (1.0 + np.exp(gain * (cutoff - g)))


def _blur3(img):
    p = np.pad(img, 1, mode="reflect")
    k = np.array([0.25, 0.5, 0.25])
    rows = k[0] * p[:-2, :] + k[1] * p[1:-1, :] + k[2] * p[2:, :]
    return k[0] * rows[:, :-2] + k[1] * rows[:, 1:-1] + k[2] * rows[:, 2:]


def unsharp_mask(img, amount=1.5):
    return np.clip(img + amount * (img - _blur3(img)), -1.0, 1.0)


def harris_response(img, k=0.05):
    p = np.pad(img, 1, mode="edge")
    gx = (p[:-2, 2:] + 2 * p[1:-1, 2:] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[1:-1, :-2] + p[2:, :-2])
    gy = (p[2:, :-2] + 2 * p[2:, 1:-1] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[:-2, 1:-1] + p[:-2, 2:])
    Axx, Axy, Ayy = _blur3(gx * gx), _blur3(gx * gy), _blur3(gy * gy)
    det = Axx * Ayy - Axy ** 2
    trace = Axx + Ayy
    return det - k * trace ** 2


def _shifts(img, fill):
    p = np.pad(img, 1, constant_values=fill)
    h, w = img.shape
    return [p[i:i + h, j:j + w] for i in range(3) for j in range(3)]


def grey_opening(img):
    eroded = np.min(np.stack(_shifts(img, np.inf)), axis=0)
    return np.max(np.stack(_shifts(eroded, -np.inf)), axis=0)


def map_coordinates_bilinear(img, rows, cols):
    # scipy.ndimage.map_coordinates(order=1, mode="nearest")
    h, w = img.shape
    r0 = np.floor(rows).astype(int)
    c0 = np.floor(cols).astype(int)
    fr = rows - r0
    fc = cols - c0
    r0c = np.clip(r0, 0, h - 1)
    r1c = np.clip(r0 + 1, 0, h - 1)
    c0c = np.clip(c0, 0, w - 1)
    c1c = np.clip(c0 + 1, 0, w - 1)
    top = img[r0c, c0c] * (1 - fc) + img[r0c, c1c] * fc
    bot = img[r1c, c0c] * (1 - fc) + img[r1c, c1c] * fc
    return top * (1 - fr) + bot * fr


def rotate_bilinear(img, angle):
    h, w = img.shape
    yy, xx = np.meshgrid(np.arange(h) - (h - 1) / 2, np.arange(w) - (w - 1) / 2, indexing="ij")
    c, s = np.cos(angle), np.sin(angle)
    rows = c * yy - s * xx + (h - 1) / 2
    cols = s * yy + c * xx + (w - 1) / 2
    return map_coordinates_bilinear(img, rows, cols)


def tv_chambolle(img, weight=0.2, n_iter=5, tau=0.125):
    # skimage.restoration.denoise_tv_chambolle (2-D): projections of the dual field p
    px = np.zeros_like(img)
    py = np.zeros_like(img)
    out = img
    for _ in range(n_iter):
        d = -px - py
        d[:, 1:] += px[:, :-1]
        d[1:, :] += py[:-1, :]
        out = img + d
        gx = np.zeros_like(img)
        gy = np.zeros_like(img)
        gx[:, :-1] = out[:, 1:] - out[:, :-1]
        gy[:-1, :] = out[1:, :] - out[:-1, :]
        norm = np.sqrt(gx ** 2 + gy ** 2 + 1e-12)
        factor = 1.0 + tau / weight * norm
        px = (px - tau * gx) / factor
        py = (py - tau * gy) / factor
    return out


def psnr_ssim(a, b, data_range=2.0):
    mse = np.mean((a - b) ** 2)
    psnr = 10 * np.log10(data_range ** 2 / mse)
    K1, K2 = 0.01, 0.03
    C1, C2 = (K1 * data_range) ** 2, (K2 * data_range) ** 2

    def uf(x):
        return np.mean(np.stack(_shifts(x, 0.0)), axis=0)

    ua, ub = uf(a), uf(b)
    vaa = uf(a * a) - ua ** 2
    vbb = uf(b * b) - ub ** 2
    vab = uf(a * b) - ua * ub
    S = (2 * ua * ub + C1) * (2 * vab + C2) / ((ua ** 2 + ub ** 2 + C1) * (vaa + vbb + C2))
    return psnr, np.mean(S[1:-1, 1:-1])


# == lifelines ====================================================================================================


def kaplan_meier(times, events, at):
    order = np.argsort(times)
    t = times[order]
    e = events[order]
    n = t.shape[0]
    at_risk = n - np.arange(n)
    surv = np.cumprod(1.0 - e / at_risk)
    idx = np.searchsorted(t, at, side="right") - 1
    return np.where(idx < 0, 1.0, surv[np.maximum(idx, 0)])


def cox_partial_loglik(beta, X, times, events):
    # CoxPHFitter (Breslow): risk sets by sorting times in decreasing order, a cumulative sum of exp(x b)
    order = np.argsort(-times)
    Xs, es = X[order], events[order]
    xb = Xs @ beta
    log_risk = np.log(np.cumsum(np.exp(xb)))
    return np.sum(es * (xb - log_risk))


def weibull_aft_loglik(params, X, T, E):
    coef = params[:-1]
    log_rho = params[-1]
    lam = np.exp(X @ coef)
    rho = np.exp(log_rho)
    z = (T / lam) ** rho
    log_h = log_rho - np.log(lam) + (rho - 1) * (np.log(T) - np.log(lam))
    return np.sum(E * log_h - z)


def nelson_aalen(times, events, grid):
    t_sorted = np.sort(times)
    e_sorted = events[np.argsort(times)]
    at_risk = times.shape[0] - np.arange(times.shape[0])
    increments = e_sorted / at_risk
    H = np.zeros(grid.shape[0])
    for i in range(grid.shape[0]):
        H[i] = np.sum(np.where(t_sorted <= grid[i], increments, 0.0))
    return H


def concordance_index(times, preds, events):
    T_i, T_j = times[:, None], times[None, :]
    valid = (T_i < T_j) & (events[:, None] > 0)
    concordant = np.where(valid & (preds[:, None] < preds[None, :]), 1.0, 0.0)
    ties = np.where(valid & (preds[:, None] == preds[None, :]), 0.5, 0.0)
    return (np.sum(concordant) + np.sum(ties)) / np.sum(valid)


# == arviz / PyMC =================================================================================================


def ess_geyer(x):
    # arviz's _ess: autocorrelation, Geyer's initial positive sequence, stopping at the first negative pair
    n = x.shape[0]
    xc = x - np.mean(x)
    acov = np.array([np.sum(xc[: n - k] * xc[k:]) / n for k in range(n)])
    rho = acov / acov[0]
    tau = -1.0
    for t in range(0, n - 1, 2):
        pair = rho[t] + rho[t + 1]
        if pair < 0.0:
            break
        tau = tau + 2.0 * pair
    return n / tau


def split_rhat(chains):
    m, n = chains.shape
    half = n // 2
    split = np.concatenate([chains[:, :half], chains[:, half: 2 * half]], axis=0)
    means = split.mean(axis=1)
    W = np.mean(split.var(axis=1, ddof=1))
    B = half * np.var(means, ddof=1)
    var_hat = (half - 1) / half * W + B / half
    return np.sqrt(var_hat / W)


def hdi(x, prob=0.6):
    s = np.sort(x)
    n = s.shape[0]
    k = int(np.floor(prob * n))
    widths = s[k:] - s[: n - k]
    i = np.argmin(widths)
    return s[i], s[i + k]


def waic(log_lik):
    # log_lik: (draws, observations)
    lppd = _lse(log_lik, axis=0) - np.log(log_lik.shape[0])
    p_waic = np.var(log_lik, axis=0, ddof=1)
    return -2.0 * (np.sum(lppd) - np.sum(p_waic))


def noncentered_eight_schools(mu, log_tau, theta_tilde, y, sigma):
    tau = np.exp(log_tau)
    theta = mu + tau * theta_tilde
    lp = -0.5 * mu ** 2 / 25.0
    lp += math.log(2.0) - 0.5 * tau ** 2 / 25.0 + log_tau
    lp += np.sum(-0.5 * theta_tilde ** 2)
    lp += np.sum(-0.5 * ((y - theta) / sigma) ** 2 - np.log(sigma))
    return lp


# == GPflow / GPy =================================================================================================


def _rbf(A, B, ls, var):
    d = (A[:, None, :] - B[None, :, :]) / ls
    return var * np.exp(-0.5 * np.sum(d ** 2, axis=-1))


def sgpr_bound(X, y, Z, log_ls, log_noise):
    # gpflow.models.SGPR.elbo: Titsias' collapsed bound with the inducing points Z
    ls = np.exp(log_ls)
    noise = np.exp(log_noise)
    n, m = X.shape[0], Z.shape[0]
    Kuu = _rbf(Z, Z, ls, 1.0) + 1e-6 * np.eye(m)
    Kuf = _rbf(Z, X, ls, 1.0)
    L = np.linalg.cholesky(Kuu)
    A = np.linalg.solve(L, Kuf) / np.sqrt(noise)
    AAT = A @ A.T
    Bm = AAT + np.eye(m)
    LB = np.linalg.cholesky(Bm)
    c = np.linalg.solve(LB, A @ y) / np.sqrt(noise)
    bound = -0.5 * n * np.log(2 * np.pi) - np.sum(np.log(np.diag(LB))) - 0.5 * n * np.log(noise)
    bound -= 0.5 * np.sum(y ** 2) / noise
    bound += 0.5 * np.sum(c ** 2)
    bound -= 0.5 * n / noise - 0.5 * np.trace(AAT)
    return bound


def ard_plus_periodic(X, params):
    ls = np.exp(params["log_ls"])
    K1 = _rbf(X, X, ls, np.exp(params["log_var"]))
    r = np.abs(X[:, None, 0] - X[None, :, 0])
    K2 = np.exp(-2.0 * np.sin(np.pi * r / params["period"]) ** 2 / params["ls_p"] ** 2)
    K = K1 + K2 + 0.1 * np.eye(X.shape[0])
    sign, logdet = np.linalg.slogdet(K)
    return logdet


def gpc_laplace(X, y, log_ls, n_newton=4):
    # GPy's Laplace inference for a Bernoulli-logit likelihood (Rasmussen & Williams, Algorithm 3.1)
    K = _rbf(X, X, np.exp(log_ls), 1.0)
    n = X.shape[0]
    f = np.zeros(n)
    for _ in range(n_newton):
        pi = 1 / (1 + np.exp(-f))
        W = pi * (1 - pi)
        sW = np.sqrt(W)
        B = np.eye(n) + sW[:, None] * K * sW[None, :]
        L = np.linalg.cholesky(B)
        b = W * f + (y + 1) / 2 - pi
        a = b - sW * np.linalg.solve(L.T, np.linalg.solve(L, sW * (K @ b)))
        f = K @ a
    log_lik = -np.sum(np.log1p(np.exp(-y * f)))
    return -0.5 * a @ f + log_lik - np.sum(np.log(np.diag(L)))


# == equinox ======================================================================================================


def _linear(layer, x):
    w, b = layer
    return w @ x + b


def eqx_mlp(layers, x, activation=np.tanh, final_activation=lambda z: z):
    # equinox.nn.MLP.__call__: layers a tuple of (weight, bias), the activation a function passed in
    for layer in layers[:-1]:
        x = activation(_linear(layer, x))
    return final_activation(_linear(layers[-1], x))


def eqx_mlp_loss(layers, xs, ys):
    preds = srcjax.vmap(lambda x: eqx_mlp(layers, x, final_activation=np.sin))(xs)
    return np.mean((preds - ys) ** 2)


def depthwise_conv1d(x, w, padding=1):
    # equinox.nn.Conv1d(groups=in_channels): x (channels, length), w (channels, 1, kernel)
    C, L = x.shape
    k = w.shape[-1]
    xp = np.pad(x, ((0, 0), (padding, padding)))
    out_len = L + 2 * padding - k + 1
    out = np.zeros((C, out_len))
    for j in range(k):
        out = out + w[:, 0, j][:, None] * xp[:, j: j + out_len]
    return out


def rms_layer_norms(x, weight, eps=1e-5):
    rms = x / np.sqrt(np.mean(x ** 2, axis=-1, keepdims=True) + eps) * weight
    mean = np.mean(rms, axis=-1, keepdims=True)
    var = np.var(rms, axis=-1, keepdims=True)
    return (rms - mean) / np.sqrt(var + eps)


def embed_prelu(table, ids, alpha):
    e = table[ids]
    return np.sum(np.where(e >= 0, e, alpha * e) * np.arange(1.0, 4.0))


def partitioned_loss(params, x, frozen=("b1",)):
    # eqx.partition/combine by a filter: frozen leaves behind stop_gradient
    p = {k: (lax.stop_gradient(v) if k in frozen else v) for k, v in params.items()}
    h = np.tanh(x @ p["w1"] + p["b1"])
    return np.sum((h @ p["w2"]) ** 2)


# == SciPy-style routines =========================================================================================


def _lfilter1(b0, b1, a1, x):
    # y[n] = b0 x[n] + b1 x[n-1] - a1 y[n-1]
    y = []
    xp, yp = 0.0, 0.0
    for n in range(x.shape[0]):
        yn = b0 * x[n] + b1 * xp - a1 * yp
        y.append(yn)
        xp, yp = x[n], yn
    return np.stack(y)


def filtfilt(x, a1):
    b0 = (1 + a1) / 2
    fwd = _lfilter1(b0, b0, a1, x)
    back = _lfilter1(b0, b0, a1, fwd[::-1])
    return back[::-1]


def golden_section(c, n_iter=30):
    # scipy.optimize.golden on f(x) = (x - c)^2 + sin(3 x) over [-1, 2]: a fixed number of steps, a branch on data
    def fun(x):
        return (x - c) ** 2 + 0.3 * np.sin(3 * x)

    invphi = (math.sqrt(5) - 1) / 2
    a, b = -1.0, 2.0
    x1 = b - invphi * (b - a)
    x2 = a + invphi * (b - a)
    f1, f2 = fun(x1), fun(x2)
    for _ in range(n_iter):
        if f1 < f2:
            b, x2, f2 = x2, x1, f1
            x1 = b - invphi * (b - a)
            f1 = fun(x1)
        else:
            a, x1, f1 = x1, x2, f2
            x2 = a + invphi * (b - a)
            f2 = fun(x2)
    return (a + b) / 2


def rk4_time_grid(y0, k, t):
    # scipy.integrate.odeint-style: the solution at the times t (a module of the user's), RK4 between them
    def rhs(y, tt):
        return np.array([y[1], -k * y[0] - 0.1 * y[1] + np.cos(tt)])

    ys = [y0]
    y = y0
    for i in range(t.shape[0] - 1):
        h = t[i + 1] - t[i]
        k1 = rhs(y, t[i])
        k2 = rhs(y + h / 2 * k1, t[i] + h / 2)
        k3 = rhs(y + h / 2 * k2, t[i] + h / 2)
        k4 = rhs(y + h * k3, t[i + 1])
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys.append(y)
    return np.stack(ys)


def akima_slopes(x, y):
    # scipy.interpolate.Akima1DInterpolator: weights |m_{i+1} - m_i|, the mean where both are zero
    m = np.diff(y) / np.diff(x)
    mm = 2.0 * m[0] - m[1]
    mmm = 2.0 * mm - m[0]
    mp = 2.0 * m[-1] - m[-2]
    mpp = 2.0 * mp - m[-1]
    m1 = np.concatenate([np.array([mmm, mm]), m, np.array([mp, mpp])])
    dm = np.abs(np.diff(m1))
    f1 = dm[2:]
    f2 = dm[:-2]
    f12 = f1 + f2
    ok = f12 > 1e-9 * np.max(f12)
    return np.where(ok, (f1 * m1[1:-2] + f2 * m1[2:-1]) / np.where(ok, f12, 1.0), 0.5 * (m1[1:-2] + m1[2:-1]))


def pchip_slopes(x, y):
    h = np.diff(x)
    m = np.diff(y) / h
    w1 = 2 * h[1:] + h[:-1]
    w2 = h[1:] + 2 * h[:-1]
    same = (np.sign(m[1:]) * np.sign(m[:-1])) > 0
    whmean = (w1 / np.where(same, m[:-1], 1.0) + w2 / np.where(same, m[1:], 1.0)) / (w1 + w2)
    inner = np.where(same, 1.0 / whmean, 0.0)
    d0 = ((2 * h[0] + h[1]) * m[0] - h[0] * m[1]) / (h[0] + h[1])
    dn = ((2 * h[-1] + h[-2]) * m[-1] - h[-1] * m[-2]) / (h[-1] + h[-2])
    return np.concatenate([d0[None], inner, dn[None]])


def barycentric_lagrange(xi, yi, x):
    n = xi.shape[0]
    w = np.ones(n)
    for j in range(n):
        for k in range(n):
            if k != j:
                w[j] = w[j] / (xi[j] - xi[k])
    diff = x[:, None] - xi[None, :]
    c = w / diff
    return (c @ yi) / np.sum(c, axis=1)


def _rank(a):
    return np.argsort(np.argsort(a)).astype(a.dtype)


def spearman_kendall(a, b):
    ra, rb = _rank(a), _rank(b)
    rho = np.corrcoef(ra, rb)[0, 1]
    sa = np.sign(a[:, None] - a[None, :])
    sb = np.sign(b[:, None] - b[None, :])
    n = a.shape[0]
    tau = np.sum(np.triu(sa * sb, k=1)) / (n * (n - 1) / 2)
    return rho, tau


def ks_2samp(a, b):
    data = np.concatenate([a, b])
    cdf_a = np.searchsorted(np.sort(a), data, side="right").astype(float) / a.shape[0]
    cdf_b = np.searchsorted(np.sort(b), data, side="right").astype(float) / b.shape[0]
    return np.max(np.abs(cdf_a - cdf_b))


def linregress(x, y):
    xm, ym = x.mean(), y.mean()
    ssxm = np.mean((x - xm) ** 2)
    ssxym = np.mean((x - xm) * (y - ym))
    ssym = np.mean((y - ym) ** 2)
    r = ssxym / np.sqrt(ssxm * ssym)
    slope = ssxym / ssxm
    intercept = ym - slope * xm
    n = x.shape[0]
    stderr = np.sqrt((1 - r ** 2) * ssym / ssxm / (n - 2))
    return slope, intercept, r, stderr


def welch_t(a, b):
    va = np.var(a, ddof=1) / a.shape[0]
    vb = np.var(b, ddof=1) / b.shape[0]
    t = (np.mean(a) - np.mean(b)) / np.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va ** 2 / (a.shape[0] - 1) + vb ** 2 / (b.shape[0] - 1))
    return t, dof


def weighted_logsumexp(a, b):
    # scipy.special.logsumexp(a, b=b, return_sign=True)
    a_max = np.max(a)
    s = np.sum(b * np.exp(a - a_max))
    sgn = np.sign(s)
    return np.log(np.abs(s)) + a_max, sgn


def find_peaks_heights(x, height=0.0):
    left = x[1:-1] > x[:-2]
    right = x[1:-1] >= x[2:]
    peaks = left & right & (x[1:-1] > height)
    return np.sum(np.where(peaks, x[1:-1], 0.0)), np.sum(peaks)


def welch_psd(x, nperseg=8):
    step = nperseg // 2
    n_seg = (x.shape[0] - nperseg) // step + 1
    win = np.hanning(nperseg + 2)[1:-1]
    scale = 1.0 / np.sum(win ** 2)
    acc = np.zeros(nperseg // 2 + 1)
    for s in range(n_seg):
        seg = x[s * step: s * step + nperseg]
        seg = seg - np.mean(seg)
        acc = acc + np.abs(np.fft.rfft(seg * win)) ** 2
    psd = acc * scale / n_seg
    psd[1:-1] *= 2.0
    return psd


def hilbert_envelope(x):
    n = x.shape[0]
    X = np.fft.fft(x)
    h = np.zeros(n)
    h[0] = 1.0
    h[1: n // 2] = 2.0
    h[n // 2] = 1.0
    analytic = np.fft.ifft(X * h)
    return np.abs(analytic)


def cdist_metrics(A, B, VI_raw):
    d = A[:, None, :] - B[None, :, :]
    cityblock = np.sum(np.abs(d), axis=-1)
    cheb = np.max(np.abs(d), axis=-1)
    cosine = 1.0 - (A @ B.T) / np.outer(np.linalg.norm(A, axis=1), np.linalg.norm(B, axis=1))
    VI = VI_raw @ VI_raw.T + np.eye(A.shape[1])
    maha = np.sqrt(np.einsum("ijk,kl,ijl->ij", d, VI, d))
    return cityblock + cheb + cosine + maha


def whiten_vq(obs, code_book):
    std = np.std(obs, axis=0)
    w = obs / std
    cb = code_book / std
    d = np.sqrt(np.sum((w[:, None, :] - cb[None]) ** 2, axis=-1))
    code = np.argmin(d, axis=1)
    return code, np.min(d, axis=1)


def soft_l1_fit(p, t, y, f_scale=0.5):
    # scipy.optimize.least_squares(loss="soft_l1"): rho(z) = 2 (sqrt(1 + z) - 1) on z = (r / f_scale)^2
    r = p[0] * np.exp(-p[1] * t) + p[2] - y
    z = (r / f_scale) ** 2
    rho = 2 * (np.sqrt(1 + z) - 1)
    return 0.5 * f_scale ** 2 * np.sum(rho)


# == epidemiology, pharmacology and other sciences ================================================================


def sir_euler_fit(log_beta, log_gamma, observed, dt=0.5):
    beta, gamma = np.exp(log_beta), np.exp(log_gamma)
    S, I, R = 0.99, 0.01, 0.0
    loss = 0.0
    for t in range(observed.shape[0]):
        for _ in range(2):
            new_inf = beta * S * I * dt
            new_rec = gamma * I * dt
            S, I, R = S - new_inf, I + new_inf - new_rec, R + new_rec
        loss = loss + (I - observed[t]) ** 2
    return loss


def seir_rk4_scan(params, y0, n_steps=6, dt=0.5):
    beta, sigma, gamma = params[0], params[1], params[2]

    def rhs(y):
        S, E, I, R = y[0], y[1], y[2], y[3]
        return np.stack([-beta * S * I, beta * S * I - sigma * E, sigma * E - gamma * I, gamma * I])

    def step(y, _):
        k1 = rhs(y)
        k2 = rhs(y + dt / 2 * k1)
        k3 = rhs(y + dt / 2 * k2)
        k4 = rhs(y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return y, y[2]

    _, infected = lax.scan(step, y0, None, length=n_steps)
    return infected


DOSE_TIMES = (0.0, 2.0, 4.0)


def pk_multiple_doses(ka, ke, V, t):
    # one-compartment oral model, superposition over doses, zero before each dose
    c = np.zeros_like(t)
    for td in DOSE_TIMES:
        dt = np.maximum(t - td, 0.0)
        c = c + np.where(t >= td, 100.0 * ka / (V * (ka - ke)) * (np.exp(-ke * dt) - np.exp(-ka * dt)), 0.0)
    return c


def michaelis_menten_fori(S0, Vmax, Km, dt=0.1):
    def body(i, s):
        return s - dt * Vmax * s / (Km + s)

    S = lax.fori_loop(0, 10, body, S0)
    return S


def fitzhugh_nagumo(I_ext, a, b=0.8, tau=12.5, dt=0.2, n=40):
    v, w = -1.0, 1.0
    spikes = 0
    above = False
    vs = []
    for _ in range(n):
        dv = v - v ** 3 / 3 - w + I_ext
        dw = (v + a - b * w) / tau
        v = v + dt * dv
        w = w + dt * dw
        if v > 1.0 and not above:
            spikes += 1
        above = v > 1.0
        vs.append(v)
    return np.stack(vs), spikes


def haversine_nearest(lat1, lon1, lat2, lon2, R=6371.0):
    p1, p2 = np.radians(lat1)[:, None], np.radians(lat2)[None, :]
    dphi = p2 - p1
    dlam = np.radians(lon2)[None, :] - np.radians(lon1)[:, None]
    a = np.sin(dphi / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(dlam / 2) ** 2
    d = 2 * R * np.arcsin(np.sqrt(a))
    return np.min(d, axis=1), np.argmin(d, axis=1)


def degree_days_heat_index(T, RH, base=18.0):
    hdd = np.sum(np.maximum(base - T, 0.0))
    cdd = np.sum(np.maximum(T - base, 0.0))
    Tf = T * 9 / 5 + 32
    simple = 0.5 * (Tf + 61.0 + (Tf - 68.0) * 1.2 + RH * 0.094)
    full = (-42.379 + 2.04901523 * Tf + 10.14333127 * RH - 0.22475541 * Tf * RH - 6.83783e-3 * Tf ** 2
            - 5.481717e-2 * RH ** 2 + 1.22874e-3 * Tf ** 2 * RH + 8.5282e-4 * Tf * RH ** 2
            - 1.99e-6 * Tf ** 2 * RH ** 2)
    hi = np.where((simple + Tf) / 2 < 80.0, simple, full)
    return hdd, cdd, (hi - 32) * 5 / 9


def projectile_drag(v0, angle, k, dt=0.05, max_steps=200):
    x, y = 0.0, 0.0
    vx, vy = v0 * np.cos(angle), v0 * np.sin(angle)
    steps = 0
    while y >= 0.0 and steps < max_steps:
        speed = np.sqrt(vx ** 2 + vy ** 2)
        vx = vx - k * speed * vx * dt
        vy = vy - (9.81 + k * speed * vy) * dt
        x = x + vx * dt
        y = y + vy * dt
        steps += 1
    return x


MATCHES = ((0, 1), (1, 2), (2, 0), (0, 3), (3, 1), (2, 3))


def elo_updates(ratings, results, K=20.0):
    r = ratings.copy()
    for m, (i, j) in enumerate(MATCHES):
        expected = 1.0 / (1.0 + 10.0 ** ((r[j] - r[i]) / 400.0))
        delta = K * (results[m] - expected)
        r[i] += delta
        r[j] -= delta
    return r


def bradley_terry_nll(skills, wins_i, wins_j):
    diff = skills[wins_i] - skills[wins_j]
    return np.sum(np.logaddexp(0.0, -diff)) + 0.01 * np.sum(skills ** 2)


def nelson_siegel(params, tau):
    b0, b1, b2, lam = params[0], params[1], params[2], params[3]
    x = tau / lam
    f1 = (1 - np.exp(-x)) / x
    return b0 + b1 * f1 + b2 * (f1 - np.exp(-x))


def risk_parity(cov_raw, n_iter=20):
    cov = cov_raw @ cov_raw.T + 0.1 * np.eye(cov_raw.shape[0])
    w = np.ones(cov.shape[0]) / cov.shape[0]
    for _ in range(n_iter):
        mrc = cov @ w
        w = 1.0 / mrc
        w = w / np.sum(w)
    rc = w * (cov @ w)
    return w, rc / np.sum(rc)


def min_variance_kkt(cov_raw, mu, target):
    n = cov_raw.shape[0]
    cov = cov_raw @ cov_raw.T + 0.1 * np.eye(n)
    K = np.zeros((n + 2, n + 2))
    K[:n, :n] = 2 * cov
    K[:n, n] = mu
    K[n, :n] = mu
    K[:n, n + 1] = 1.0
    K[n + 1, :n] = 1.0
    rhs = np.concatenate([np.zeros(n), np.array([target, 1.0])])
    sol = np.linalg.solve(K, rhs)
    w = sol[:n]
    return w, w @ cov @ w
