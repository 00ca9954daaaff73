"""Programs from sources no earlier hunt read (hunt 25): the corpus of tests/test_hunt25_programs.py.

Real NumPy code as its authors write it, written again for srcjax (each program is ours, in the style of the
original; nothing here is pasted) as functions of arrays with sizes and constants as keyword defaults:

- scikit-learn's pure-NumPy pieces: ``utils/extmath`` (softmax with ``np.exp(X, out=X)`` and in-place ``-=``/``/=``,
  log_logistic's masked halves, row_norms by ``einsum``, svd_flip's ``u[max_abs_cols, range(n)]``), the logistic
  regression loss and gradient (``_intercept_dot``'s ``if w.size == X.shape[1] + 1``), ``neural_network/_base``'s
  in-place activations picked from a dict of functions and its losses (``np.append(1 - p, p, axis=1)``,
  ``np.clip(..., eps, 1 - eps)`` with ``np.finfo(dtype).eps``), the MLP forward pass over lists of layers, the
  Gaussian-process kernels' ``__call__`` (RBF, Matern 1.5/2.5, RationalQuadratic, ExpSineSquared, DotProduct) and
  metrics.pairwise (euclidean_distances with ``np.maximum(D, 0, out=D)``, cosine, rbf/polynomial/sigmoid/laplacian/
  chi2 kernels with ``np.exp(K, K)``).
- scipy's pure-Python numerics: ``special.logsumexp`` (``a_max[~np.isfinite(a_max)] = 0``, ``with np.errstate``),
  ``optimize._linesearch``'s cubic and quadratic interpolation (``[A, B] = np.dot(d1, ...)``) and Armijo
  backtracking, ``signal.windows`` (general_cosine, gaussian, kaiser with ``np.i0``) with a periodogram, hand-written
  piecewise-cubic Hermite interpolation (``np.searchsorted``) and ``np.interp``, ``stats`` log densities.
- filterpy: the Kalman filter's predict/update run over measurements with its log-likelihood, the RTS smoother
  (in-place updates of stacked arrays, backwards), Merwe's scaled sigma points and the unscented transform,
  ``Q_discrete_white_noise`` (a list of lists of expressions), the g-h filter.
- statsmodels/pymc log-likelihoods: GARCH(1, 1), Holt's linear smoothing, AR(p) conditional likelihood, the logit
  log-likelihood, pymc's stick-breaking transform.
- NumPy's own: ``np.polyval``, Horner by hand, ``numpy.polynomial`` Clenshaw (hermval, chebval), numpy-financial's
  npv/pmt/fv.
- gym classic_control: cartpole's Euler step over a rollout (``force = f if action == 1 else -f``), pendulum
  (``angle_normalize`` by ``%``, ``np.clip``), acrobot's ``rk4`` over ``np.arange`` with ``np.asarray`` of a tuple of
  derivatives, mountain car (``if position == min_position and velocity < 0``).
- karpathy's min-char-rnn (dicts of states keyed from -1, one-hot ``xs[t][inputs[t]] = 1``, ``ps[t][targets[t], 0]``,
  and the hand-written backward pass with ``np.clip(dparam, -5, 5, out=dparam)`` over a list of arrays) and pg-pong
  (``h[h < 0] = 0``, discount_rewards' ``if r[t] != 0`` reset).
"""

# ruff: noqa: B007, B023, E741, F841, N803, N806, PLR2004 - (the authors' style: `for t in range(n):`, `I`, `A`,
# `X`, names left unread)

from __future__ import annotations

import math

import numpy as np

import srcjax

lax = srcjax.lax


# == scikit-learn ===================================================================================================


def sk_softmax(X, copy=True):
    # utils/extmath.softmax: in place on a copy
    if copy:
        X = np.copy(X)
    max_prob = np.max(X, axis=1).reshape((-1, 1))
    X -= max_prob
    np.exp(X, out=X)
    sum_prob = np.sum(X, axis=1).reshape((-1, 1))
    X /= sum_prob
    return X


def _log_logistic(X):
    # the old utils/extmath.log_logistic: log(1 / (1 + e ** -x)) in two halves by a mask
    out = np.empty_like(X)
    idx = X > 0
    out[idx] = -np.log1p(np.exp(-X[idx]))
    out[~idx] = X[~idx] - np.log1p(np.exp(X[~idx]))
    return out


def log_logistic(X):
    return _log_logistic(X)


def _intercept_dot(w, X, y):
    c = 0.0
    if w.size == X.shape[1] + 1:
        c = w[-1]
        w = w[:-1]
    z = np.dot(X, w) + c
    yz = y * z
    return w, c, yz


def _expit(x):
    return 1.0 / (1.0 + np.exp(-x))


def logistic_loss_and_grad(w, X, y, alpha=0.5):
    # linear_model/_logistic._logistic_loss_and_grad (sample weights of ones)
    n_samples, n_features = X.shape
    grad = np.empty_like(w)
    w, c, yz = _intercept_dot(w, X, y)
    sample_weight = np.ones(n_samples)
    out = -np.sum(sample_weight * _log_logistic_where(yz)) + 0.5 * alpha * np.dot(w, w)
    z = _expit(yz)
    z0 = sample_weight * (z - 1) * y
    grad[:n_features] = np.dot(X.T, z0) + alpha * w
    if grad.shape[0] > n_features:
        grad[-1] = z0.sum()
    return out, grad


def _log_logistic_where(X):
    return np.where(X > 0, -np.log1p(np.exp(-np.abs(X))), X - np.log1p(np.exp(X)))


def _inplace_identity(X):
    pass


def _inplace_logistic(X):
    X[:] = 1.0 / (1.0 + np.exp(-X))


def _inplace_tanh(X):
    np.tanh(X, out=X)


def _inplace_relu(X):
    np.maximum(X, 0, out=X)


def _inplace_softmax(X):
    tmp = X - X.max(axis=1)[:, np.newaxis]
    np.exp(tmp, out=X)
    X /= X.sum(axis=1)[:, np.newaxis]


ACTIVATIONS = {"identity": _inplace_identity, "tanh": _inplace_tanh, "logistic": _inplace_logistic,
               "relu": _inplace_relu, "softmax": _inplace_softmax}


def mlp_forward(X, W0, b0, W1, b1, W2, b2, activation="relu", out_activation="softmax"):
    # neural_network/_multilayer_perceptron._forward_pass over lists of coefficients
    coefs_ = [W0, W1, W2]
    intercepts_ = [b0, b1, b2]
    n_layers_ = len(coefs_) + 1
    activations = [X] + [None] * (n_layers_ - 1)
    hidden_activation = ACTIVATIONS[activation]
    for i in range(n_layers_ - 1):
        activations[i + 1] = np.dot(activations[i], coefs_[i])
        activations[i + 1] += intercepts_[i]
        if (i + 1) != (n_layers_ - 1):
            hidden_activation(activations[i + 1])
    output_activation = ACTIVATIONS[out_activation]
    output_activation(activations[i + 1])
    return activations[-1]


def mlp_tanh_logistic(X, W0, b0, W1, b1, W2, b2):
    return mlp_forward(X, W0, b0, W1, b1, W2, b2, activation="tanh", out_activation="logistic")


def _xlogy(x, y):
    return np.where(x == 0, 0.0, x * np.log(y))


def nn_log_loss(y_true, y_prob):
    # neural_network/_base.log_loss
    eps = np.finfo(y_prob.dtype).eps
    y_prob = np.clip(y_prob, eps, 1 - eps)
    if y_prob.shape[1] == 1:
        y_prob = np.append(1 - y_prob, y_prob, axis=1)
    if y_true.shape[1] == 1:
        y_true = np.append(1 - y_true, y_true, axis=1)
    return -_xlogy(y_true, y_prob).sum() / y_prob.shape[0]


def nn_binary_log_loss(y_true, y_prob):
    eps = np.finfo(y_prob.dtype).eps
    y_prob = np.clip(y_prob, eps, 1 - eps)
    return -(_xlogy(y_true, y_prob).sum() + _xlogy(1 - y_true, 1 - y_prob).sum()) / y_prob.shape[0]


def nn_squared_loss(y_true, y_pred):
    return ((y_true - y_pred) ** 2).mean() / 2


def nn_backprop_tanh(Z, delta):
    # inplace_tanh_derivative and inplace_relu_derivative, on copies
    delta = delta.copy()
    delta *= 1 - Z ** 2
    d2 = delta.copy()
    d2[Z <= 0] = 0
    return delta, d2


def _sqeuclidean(X, Y):
    return np.sum((X[:, np.newaxis, :] - Y[np.newaxis, :, :]) ** 2, axis=-1)


def gp_rbf(X, Y, length_scale):
    # gaussian_process/kernels.RBF.__call__ with Y given (anisotropic length scales)
    dists = _sqeuclidean(X / length_scale, Y / length_scale)
    K = np.exp(-0.5 * dists)
    return K


def gp_matern(X, Y, length_scale, nu=1.5):
    dists = np.sqrt(_sqeuclidean(X / length_scale, Y / length_scale))
    if nu == 0.5:
        K = np.exp(-dists)
    elif nu == 1.5:
        K = dists * math.sqrt(3)
        K = (1.0 + K) * np.exp(-K)
    elif nu == 2.5:
        K = dists * math.sqrt(5)
        K = (1.0 + K + K ** 2 / 3.0) * np.exp(-K)
    elif nu == np.inf:
        K = np.exp(-(dists ** 2) / 2.0)
    return K


def gp_matern52(X, Y, length_scale):
    return gp_matern(X, Y, length_scale, nu=2.5)


def gp_rational_quadratic(X, Y, length_scale, alpha):
    dists = _sqeuclidean(X, Y)
    K = (1 + dists / (2 * alpha * length_scale ** 2)) ** -alpha
    return K


def gp_exp_sine_squared(X, Y, length_scale, periodicity):
    dists = np.sqrt(_sqeuclidean(X, Y))
    arg = np.pi * dists / periodicity
    sin_of_arg = np.sin(arg)
    K = np.exp(-2 * (sin_of_arg / length_scale) ** 2)
    return K


def gp_sum_kernel(X, Y, sigma_0, length_scale, noise):
    # DotProduct() + RBF() * ConstantKernel(): the kernels summed and multiplied as the operator kernels do
    K = np.inner(X, Y) + sigma_0 ** 2
    K = K + 2.0 * gp_rbf(X, Y, length_scale)
    return K + noise * (X.shape[0] == Y.shape[0]) * np.eye(X.shape[0], Y.shape[0])


def _row_norms(X, squared=False):
    norms = np.einsum("ij,ij->i", X, X)
    if not squared:
        np.sqrt(norms, norms)
    return norms


def euclidean_self(X):
    # the same array twice: `X is Y` zeroes the diagonal
    return euclidean_distances(X, X, squared=True)


def euclidean_distances(X, Y, squared=False):
    # metrics/pairwise.euclidean_distances: the dot-product expansion, clipped at 0 in place
    XX = _row_norms(X, squared=True)[:, np.newaxis]
    YY = _row_norms(Y, squared=True)[np.newaxis, :]
    distances = -2 * np.dot(X, Y.T)
    distances += XX
    distances += YY
    np.maximum(distances, 0, out=distances)
    if X is Y:
        np.fill_diagonal(distances, 0)
    return distances if squared else np.sqrt(distances, out=distances)


def _normalize(X):
    norms = np.einsum("ij,ij->i", X, X)
    np.sqrt(norms, norms)
    norms[norms == 0.0] = 1.0
    X = X / norms[:, np.newaxis]
    return X


def cosine_similarity(X, Y):
    X_normalized = _normalize(X)
    Y_normalized = _normalize(Y)
    K = np.dot(X_normalized, Y_normalized.T)
    return K


def pairwise_kernels(X, Y, gamma=0.5, coef0=1.0, degree=3):
    # rbf_kernel, polynomial_kernel, sigmoid_kernel, laplacian_kernel with in-place `K *= ...`, `np.exp(K, K)`
    K = euclidean_distances(X, Y, squared=True)
    K *= -gamma
    np.exp(K, K)
    P = np.dot(X, Y.T)
    P *= gamma
    P += coef0
    P **= degree
    S = np.dot(X, Y.T)
    S *= gamma
    S += coef0
    np.tanh(S, S)
    L = -gamma * np.abs(X[:, np.newaxis, :] - Y[np.newaxis, :, :]).sum(axis=2)
    np.exp(L, L)
    return K, P, S, L


def chi2_kernel(X, Y, gamma=1.0):
    # additive_chi2_kernel: -sum((x - y) ** 2 / (x + y)) over features, then exp
    K = np.zeros((X.shape[0], Y.shape[0]), dtype=X.dtype)
    for i in range(X.shape[0]):
        x = X[i]
        nom = (x - Y) ** 2
        denom = x + Y
        K[i] = -np.sum(nom / denom, axis=1)
    K *= gamma
    return np.exp(K, K)


def svd_flip(u, v):
    # utils/extmath.svd_flip (u-based): each column's sign by its largest entry
    max_abs_cols = np.argmax(np.abs(u), axis=0)
    signs = np.sign(u[max_abs_cols, range(u.shape[1])])
    u *= signs
    v *= signs[:, np.newaxis]
    return u, v


def pca_transform(X, n_components=2):
    # PCA: centre, SVD, flip signs, project
    mean_ = np.mean(X, axis=0)
    X = X - mean_
    U, S, Vt = np.linalg.svd(X, full_matrices=False)
    U, Vt = svd_flip(U, Vt)
    components_ = Vt[:n_components]
    explained_variance_ = (S ** 2) / (X.shape[0] - 1)
    return np.dot(X, components_.T), explained_variance_[:n_components]


def incremental_mean_var(X, last_mean, last_variance, last_sample_count=4.0):
    # utils/extmath._incremental_mean_and_var (no NaNs)
    last_sum = last_mean * last_sample_count
    new_sum = np.sum(X, axis=0)
    new_sample_count = X.shape[0]
    updated_sample_count = last_sample_count + new_sample_count
    updated_mean = (last_sum + new_sum) / updated_sample_count
    T = new_sum / new_sample_count
    temp = X - T
    correction = temp.sum(axis=0)
    new_unnormalized_variance = (temp ** 2).sum(axis=0)
    new_unnormalized_variance -= correction ** 2 / new_sample_count
    last_unnormalized_variance = last_variance * last_sample_count
    last_over_new_count = last_sample_count / new_sample_count
    updated_unnormalized_variance = (last_unnormalized_variance + new_unnormalized_variance
                                     + last_over_new_count / updated_sample_count
                                     * (last_sum / last_over_new_count - new_sum) ** 2)
    updated_variance = updated_unnormalized_variance / updated_sample_count
    return updated_mean, updated_variance


# == scipy ==========================================================================================================


def sp_logsumexp(a, axis=1, keepdims=False):
    # special.logsumexp: shift by the finite maximum
    a_max = np.amax(a, axis=axis, keepdims=True)
    if a_max.ndim > 0:
        a_max[~np.isfinite(a_max)] = 0
    elif not np.isfinite(a_max):
        a_max = 0
    tmp = np.exp(a - a_max)
    with np.errstate(divide="ignore"):
        s = np.sum(tmp, axis=axis, keepdims=keepdims)
        out = np.log(s)
    if not keepdims:
        a_max = np.squeeze(a_max, axis=axis)
    out += a_max
    return out


def sp_logsumexp_b(a, b):
    # logsumexp with weights `b` (positive here)
    a_max = np.amax(a, axis=None, keepdims=True)
    tmp = b * np.exp(a - a_max)
    s = np.sum(tmp, axis=None, keepdims=False)
    out = np.log(s)
    a_max = np.squeeze(a_max)
    out += a_max
    return out


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    C = fpa
    db = b - a
    dc = c - a
    denom = (db * dc) ** 2 * (db - dc)
    d1 = np.empty((2, 2))
    d1[0, 0] = dc ** 2
    d1[0, 1] = -db ** 2
    d1[1, 0] = -dc ** 3
    d1[1, 1] = db ** 3
    [A, B] = np.dot(d1, np.asarray([fb - fa - C * db, fc - fa - C * dc]).flatten())
    A /= denom
    B /= denom
    radical = B * B - 3 * A * C
    xmin = a + (-B + np.sqrt(radical)) / (3 * A)
    return xmin


def _quadmin(a, fa, fpa, b, fb):
    D = fa
    C = fpa
    db = b - a * 1.0
    B = (fb - D - C * db) / (db * db)
    xmin = a - C / (2.0 * B)
    return xmin


def linesearch_interp(p):
    # optimize._linesearch's interpolation steps on phi(t) = sum((1 - t p) ** 4) + t
    phi = lambda t: np.sum((1.0 - t * p) ** 4) + t
    derphi0 = -4.0 * np.sum(p) + 1.0
    a, b, c = 0.0, 0.5, 0.9
    q = _quadmin(a, phi(a), derphi0, b, phi(b))
    cu = _cubicmin(a, phi(a), derphi0, b, phi(b), c, phi(c))
    return q, cu


def armijo(p, c1=1e-4, alpha0=1.0, amin=1e-3):
    # optimize._linesearch.scalar_search_armijo on phi(t) = sum((1 - t p) ** 2): returns inside a loop on data
    phi = lambda t: np.sum((1.0 - t * p) ** 2)
    phi0 = phi(0.0)
    derphi0 = -2.0 * np.sum(p)
    phi_a0 = phi(alpha0)
    if phi_a0 <= phi0 + c1 * alpha0 * derphi0:
        return alpha0, phi_a0
    alpha1 = -(derphi0) * alpha0 ** 2 / 2.0 / (phi_a0 - phi0 - derphi0 * alpha0)
    phi_a1 = phi(alpha1)
    if phi_a1 <= phi0 + c1 * alpha1 * derphi0:
        return alpha1, phi_a1
    while alpha1 > amin:
        factor = alpha0 ** 2 * alpha1 ** 2 * (alpha1 - alpha0)
        a = alpha0 ** 2 * (phi_a1 - phi0 - derphi0 * alpha1) - alpha1 ** 2 * (phi_a0 - phi0 - derphi0 * alpha0)
        a = a / factor
        b = -alpha0 ** 3 * (phi_a1 - phi0 - derphi0 * alpha1) + alpha1 ** 3 * (phi_a0 - phi0 - derphi0 * alpha0)
        b = b / factor
        alpha2 = (-b + np.sqrt(abs(b ** 2 - 3 * a * derphi0))) / (3.0 * a)
        phi_a2 = phi(alpha2)
        if phi_a2 <= phi0 + c1 * alpha2 * derphi0:
            return alpha2, phi_a2
        if (alpha1 - alpha2) > alpha1 / 2.0 or (1 - alpha2 / alpha1) < 0.96:
            alpha2 = alpha1 / 2.0
        alpha0 = alpha1
        alpha1 = alpha2
        phi_a0 = phi_a1
        phi_a1 = phi_a2
    return None, phi_a1


def _general_cosine(M, a):
    fac = np.linspace(-np.pi, np.pi, M)
    w = np.zeros(M)
    for k in range(len(a)):
        w += a[k] * np.cos(k * fac)
    return w


def _gaussian(M, std):
    n = np.arange(0, M) - (M - 1.0) / 2.0
    sig2 = 2 * std * std
    w = np.exp(-n ** 2 / sig2)
    return w


def _kaiser(M, beta):
    n = np.arange(0, M)
    alpha = (M - 1) / 2.0
    w = np.i0(beta * np.sqrt(1 - ((n - alpha) / alpha) ** 2.0)) / np.i0(beta)
    return w


def windowed_periodogram(x, a, std):
    # signal.windows then a periodogram of the windowed signal: |rfft(x w)| ** 2 / sum(w ** 2)
    M = x.shape[-1]
    w1 = _general_cosine(M, a)
    w2 = _gaussian(M, std)
    P1 = np.abs(np.fft.rfft(x * w1)) ** 2 / np.sum(w1 ** 2)
    P2 = np.abs(np.fft.rfft(x * w2)) ** 2 / np.sum(w2 ** 2)
    return P1, P2


def kaiser_window(x, beta):
    return x * _kaiser(x.shape[0], beta)


def pchip_eval(x, y, d, xnew):
    # a cubic Hermite spline (interpolate.CubicHermiteSpline's values) by searchsorted and the Hermite basis
    h = np.diff(x)
    i = np.searchsorted(x, xnew) - 1
    i = np.clip(i, 0, len(x) - 2)
    t = (xnew - x[i]) / h[i]
    t2 = t * t
    t3 = t2 * t
    h00 = 2 * t3 - 3 * t2 + 1
    h10 = t3 - 2 * t2 + t
    h01 = -2 * t3 + 3 * t2
    h11 = t3 - t2
    return h00 * y[i] + h10 * h[i] * d[i] + h01 * y[i + 1] + h11 * h[i] * d[i + 1]


def interp_resample(xp, fp, x):
    # np.interp of a table (its abscissae made increasing by a cumulative sum)
    xs = np.cumsum(np.abs(xp) + 0.1)
    return np.interp(x, xs, fp), np.interp(x, xs, fp, left=0.0, right=-1.0)


def stats_logpdfs(x, loc, scale, df=4.0):
    # stats' log densities written out: norm, cauchy, logistic, gumbel_r, laplace, t (df static)
    z = (x - loc) / scale
    norm = -z ** 2 / 2.0 - 0.5 * np.log(2 * np.pi) - np.log(scale)
    cauchy = -np.log(np.pi) - np.log1p(z ** 2) - np.log(scale)
    logistic = -z - 2.0 * np.log1p(np.exp(-z)) - np.log(scale)
    gumbel = -z - np.exp(-z) - np.log(scale)
    laplace = -np.log(2.0) - np.abs(z) - np.log(scale)
    lPx = math.lgamma((df + 1) / 2) - math.lgamma(df / 2)
    lPx -= 0.5 * math.log(df * np.pi)
    t = lPx - (df + 1) / 2 * np.log1p(z ** 2 / df) - np.log(scale)
    return np.sum(norm + cauchy) + np.sum(logistic * gumbel) + np.sum(laplace + t)


def huber(delta, r):
    # special.huber / pseudo_huber
    h = np.where(np.abs(r) <= delta, 0.5 * r ** 2, delta * (np.abs(r) - 0.5 * delta))
    ph = delta ** 2 * (np.sqrt(1 + (r / delta) ** 2) - 1)
    return h, ph


# == filterpy =======================================================================================================


def _kf_predict(x, P, F, Q):
    x = np.dot(F, x)
    P = np.dot(np.dot(F, P), F.T) + Q
    return x, P


def _kf_update(x, P, z, R, H):
    y = z - np.dot(H, x)
    PHT = np.dot(P, H.T)
    S = np.dot(H, PHT) + R
    SI = np.linalg.inv(S)
    K = np.dot(PHT, SI)
    x = x + np.dot(K, y)
    I_KH = np.eye(x.shape[0]) - np.dot(K, H)
    P = np.dot(np.dot(I_KH, P), I_KH.T) + np.dot(np.dot(K, R), K.T)
    sign, logdet = np.linalg.slogdet(S)
    log_likelihood = -0.5 * (np.dot(y, np.dot(SI, y)) + logdet + y.shape[0] * np.log(2 * np.pi))
    return x, P, log_likelihood


def kalman_filter(zs, x0, q, r, dt=0.5):
    # KalmanFilter.batch_filter for a constant-velocity model: the means and the total log-likelihood
    F = np.array([[1.0, dt], [0.0, 1.0]])
    H = np.array([[1.0, 0.0]])
    Q = q * np.array([[0.25 * dt ** 4, 0.5 * dt ** 3], [0.5 * dt ** 3, dt ** 2]])
    R = np.array([[r]])
    x = x0
    P = np.eye(2) * 10.0
    n = zs.shape[0]
    means = np.zeros((n, 2))
    covs = np.zeros((n, 2, 2))
    ll = 0.0
    for i, z in enumerate(zs):
        x, P = _kf_predict(x, P, F, Q)
        x, P, l = _kf_update(x, P, np.array([z]), R, H)
        means[i, :] = x
        covs[i, :, :] = P
        ll += l
    return means, covs, ll


def rts_smoother(Xs, Ps, Fs, Qs):
    # KalmanFilter.rts_smoother: backwards, in place on copies of the stacked filter outputs
    n, dim_x = Xs.shape
    K = np.zeros((n, dim_x, dim_x))
    x, P, Pp = Xs.copy(), Ps.copy(), Ps.copy()
    for k in range(n - 2, -1, -1):
        Pp[k] = np.dot(np.dot(Fs[k + 1], P[k]), Fs[k + 1].T) + Qs[k + 1]
        K[k] = np.dot(np.dot(P[k], Fs[k + 1].T), np.linalg.inv(Pp[k]))
        x[k] += np.dot(K[k], x[k + 1] - np.dot(Fs[k + 1], x[k]))
        P[k] += np.dot(np.dot(K[k], P[k + 1] - Pp[k]), K[k].T)
    return x, P


def _merwe_sigma_points(x, P, alpha=0.5, beta=2.0, kappa=0.0):
    n = x.shape[0]
    lambda_ = alpha ** 2 * (n + kappa) - n
    U = np.linalg.cholesky((lambda_ + n) * P).T
    sigmas = np.zeros((2 * n + 1, n))
    sigmas[0] = x
    for k in range(n):
        sigmas[k + 1] = x + U[k]
        sigmas[n + k + 1] = x - U[k]
    c = 0.5 / (n + lambda_)
    Wc = np.full(2 * n + 1, c)
    Wm = np.full(2 * n + 1, c)
    Wc[0] = lambda_ / (n + lambda_) + (1 - alpha ** 2 + beta)
    Wm[0] = lambda_ / (n + lambda_)
    return sigmas, Wm, Wc


def _unscented_transform(sigmas, Wm, Wc, noise_cov):
    x = np.dot(Wm, sigmas)
    y = sigmas - x[np.newaxis, :]
    P = np.dot(y.T, np.dot(np.diag(Wc), y))
    P += noise_cov
    return x, P


def _fx(x, dt):
    # a pendulum-like nonlinear transition
    return np.array([x[0] + dt * x[1], x[1] - dt * np.sin(x[0])])


def ukf_predict(x, P, Q, dt=0.1):
    sigmas, Wm, Wc = _merwe_sigma_points(x, P)
    sigmas_f = np.zeros_like(sigmas)
    for i, s in enumerate(sigmas):
        sigmas_f[i] = _fx(s, dt)
    return _unscented_transform(sigmas_f, Wm, Wc, Q)


def q_white_noise(dt, var):
    # common.Q_discrete_white_noise(dim=3): a list of lists of expressions of the data
    Q = [[0.25 * dt ** 4, 0.5 * dt ** 3, 0.5 * dt ** 2],
         [0.5 * dt ** 3, dt ** 2, dt],
         [0.5 * dt ** 2, dt, 1]]
    return np.array(Q) * var


def gh_filter(data, x0, dx, g, h, dt=1.0):
    # the g-h filter of filterpy's book: a list of estimates appended in a loop
    x_est = x0
    results = []
    for z in data:
        x_pred = x_est + (dx * dt)
        residual = z - x_pred
        dx = dx + h * residual / dt
        x_est = x_pred + g * residual
        results.append(x_est)
    return np.array(results)


# == statsmodels / pymc =============================================================================================


def garch11_loglike(params, resids):
    # arch's GARCH(1, 1) variance recursion and the normal log-likelihood
    omega, alpha, beta = params
    nobs = resids.shape[0]
    sigma2 = np.empty(nobs)
    sigma2[0] = np.mean(resids ** 2)
    for t in range(1, nobs):
        sigma2[t] = omega + alpha * resids[t - 1] ** 2 + beta * sigma2[t - 1]
    lls = -0.5 * (np.log(2 * np.pi) + np.log(sigma2) + resids ** 2 / sigma2)
    return np.sum(lls)


def holt_sse(y, alpha, beta):
    # tsa.holtwinters' Holt linear method: level and trend filled in place, the sum of squared errors
    n = y.shape[0]
    lvl = np.zeros(n)
    b = np.zeros(n)
    lvl[0] = y[0]
    b[0] = y[1] - y[0]
    for i in range(1, n):
        lvl[i] = alpha * y[i] + (1 - alpha) * (lvl[i - 1] + b[i - 1])
        b[i] = beta * (lvl[i] - lvl[i - 1]) + (1 - beta) * b[i - 1]
    fitted = lvl[:-1] + b[:-1]
    return np.sum((y[1:] - fitted) ** 2)


def ar_loglike(params, y, sigma2):
    # tsa.ar_model's conditional likelihood: lagged design by slices of the series
    p = params.shape[0]
    nobs = y.shape[0]
    X = np.column_stack([y[p - i - 1:nobs - i - 1] for i in range(p)])
    endog = y[p:]
    resid = endog - np.dot(X, params)
    ssr = np.dot(resid, resid)
    n = nobs - p
    return -n / 2.0 * np.log(2 * np.pi * sigma2) - ssr / (2 * sigma2)


def logit_loglike(params, exog, endog):
    # discrete_model.Logit.loglike and score
    q = 2 * endog - 1
    X = exog
    ll = np.sum(np.log(1 / (1 + np.exp(-q * np.dot(X, params)))))
    L = 1 / (1 + np.exp(-np.dot(X, params)))
    score = np.dot(endog - L, X)
    return ll, score


def stick_breaking(x):
    # pymc's StickBreaking backward transform and its log-Jacobian (written as NumPy)
    k = x.shape[-1] + 1
    Km1 = np.arange(k - 1, 0, -1)
    eq_share = -np.log(Km1)
    z = 1.0 / (1.0 + np.exp(-(x + eq_share)))
    yl = np.concatenate([z, np.ones(x.shape[:-1] + (1,))], axis=-1)
    yu = np.concatenate([np.ones(x.shape[:-1] + (1,)), 1 - z], axis=-1)
    S = np.cumprod(yu, axis=-1)
    y = S * yl
    log_jac = np.sum(np.log(y[..., :-1] * (1 - z)) - np.log(1 - np.cumsum(y[..., :-1], axis=-1) + y[..., :-1]),
                     axis=-1)
    return y, log_jac


def eight_schools_logp(mu, log_tau, theta, y, sigma):
    # pymc's eight schools (non-centred off) joint log density
    tau = np.exp(log_tau)
    lp = -0.5 * (mu / 5.0) ** 2
    lp += -0.5 * (tau / 5.0) ** 2 + log_tau
    lp += np.sum(-0.5 * ((theta - mu) / tau) ** 2 - np.log(tau))
    lp += np.sum(-0.5 * ((y - theta) / sigma) ** 2)
    return lp


# == NumPy's own ====================================================================================================


def horner(p, x):
    # np.polyval as numpy/lib/polynomial.py writes it
    y = np.zeros_like(x)
    for pv in p:
        y = y * x + pv
    return y


def polyval_np(p, x):
    return np.polyval(p, x) + np.polyval(np.polyder(p), x)


def hermval(x, c):
    # numpy/polynomial/hermite.hermval: Clenshaw's recursion
    x2 = x * 2
    if len(c) == 1:
        c0 = c[0]
        c1 = 0
    elif len(c) == 2:
        c0 = c[0]
        c1 = c[1]
    else:
        nd = len(c)
        c0 = c[-2]
        c1 = c[-1]
        for i in range(3, len(c) + 1):
            tmp = c0
            nd = nd - 1
            c0 = c[-i] - c1 * (2 * (nd - 1))
            c1 = tmp + c1 * x2
    return c0 + c1 * x2


def chebval(x, c):
    if len(c) == 1:
        c0 = c[0]
        c1 = 0
    elif len(c) == 2:
        c0 = c[0]
        c1 = c[1]
    else:
        x2 = 2 * x
        c0 = c[-2]
        c1 = c[-1]
        for i in range(3, len(c) + 1):
            tmp = c0
            c0 = c[-i] - c1
            c1 = tmp + c1 * x2
    return c0 + c1 * x


def npv_pmt_fv(rate, values, nper=5.0, pv=100.0):
    # numpy-financial: npv, pmt (when='end'), fv
    npv = (values / (1 + rate) ** np.arange(0, len(values))).sum(axis=0)
    temp = (1 + rate) ** nper
    mask = rate == 0
    masked_rate = np.where(mask, 1, rate)
    fact = np.where(mask != 0, nper, (1 + masked_rate * 0) * (temp - 1) / masked_rate)
    pmt = -(0.0 + pv * temp) / fact
    fv = -(pv * temp + pmt * (1 + rate * 0) / rate * (temp - 1))
    return npv, pmt, fv


# == gym classic_control ============================================================================================


def cartpole_rollout(state, actions, gravity=9.8, masscart=1.0, masspole=0.1, length=0.5, force_mag=10.0,
                     tau=0.02):
    total_mass = masspole + masscart
    polemass_length = masspole * length
    x, x_dot, theta, theta_dot = state
    states = []
    for action in actions:
        force = force_mag if action == 1 else -force_mag
        costheta = np.cos(theta)
        sintheta = np.sin(theta)
        temp = (force + polemass_length * theta_dot ** 2 * sintheta) / total_mass
        thetaacc = (gravity * sintheta - costheta * temp) / (
            length * (4.0 / 3.0 - masspole * costheta ** 2 / total_mass))
        xacc = temp - polemass_length * thetaacc * costheta / total_mass
        x = x + tau * x_dot
        x_dot = x_dot + tau * xacc
        theta = theta + tau * theta_dot
        theta_dot = theta_dot + tau * thetaacc
        states.append(np.array([x, x_dot, theta, theta_dot]))
    return np.stack(states)


def _angle_normalize(x):
    return ((x + np.pi) % (2 * np.pi)) - np.pi


def pendulum_rollout(th, thdot, us, g=10.0, m=1.0, l=1.0, dt=0.05, max_speed=8.0, max_torque=2.0):
    cost = 0.0
    for u in us:
        u = np.clip(u, -max_torque, max_torque)
        cost = cost + _angle_normalize(th) ** 2 + 0.1 * thdot ** 2 + 0.001 * (u ** 2)
        newthdot = thdot + (3 * g / (2 * l) * np.sin(th) + 3.0 / (m * l ** 2) * u) * dt
        newthdot = np.clip(newthdot, -max_speed, max_speed)
        th = th + newthdot * dt
        thdot = newthdot
    return cost, np.array([th, thdot])


def _acrobot_dsdt(s_augmented, m1=1.0, m2=1.0, l1=1.0, lc1=0.5, lc2=0.5, I1=1.0, I2=1.0, g=9.8):
    a = s_augmented[-1]
    s = s_augmented[:-1]
    theta1 = s[0]
    theta2 = s[1]
    dtheta1 = s[2]
    dtheta2 = s[3]
    d1 = m1 * lc1 ** 2 + m2 * (l1 ** 2 + lc2 ** 2 + 2 * l1 * lc2 * np.cos(theta2)) + I1 + I2
    d2 = m2 * (lc2 ** 2 + l1 * lc2 * np.cos(theta2)) + I2
    phi2 = m2 * lc2 * g * np.cos(theta1 + theta2 - np.pi / 2.0)
    phi1 = (-m2 * l1 * lc2 * dtheta2 ** 2 * np.sin(theta2) - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1
            * np.sin(theta2) + (m1 * lc1 + m2 * l1) * g * np.cos(theta1 - np.pi / 2) + phi2)
    ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1 ** 2 * np.sin(theta2) - phi2) / (
        m2 * lc2 ** 2 + I2 - d2 ** 2 / d1)
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return dtheta1, dtheta2, ddtheta1, ddtheta2, 0.0


def _rk4(derivs, y0, t):
    yout = np.zeros((len(t), *y0.shape), np.float64)
    yout[0] = y0
    for i in np.arange(len(t) - 1):
        this = t[i]
        dt = t[i + 1] - this
        dt2 = dt / 2.0
        y0 = yout[i]
        k1 = np.asarray(derivs(y0))
        k2 = np.asarray(derivs(y0 + dt2 * k1))
        k3 = np.asarray(derivs(y0 + dt2 * k2))
        k4 = np.asarray(derivs(y0 + dt * k3))
        yout[i + 1] = y0 + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return yout[-1][:4]


def acrobot_step(s, torque, dt=0.2):
    s_augmented = np.append(s, torque)
    ns = _rk4(_acrobot_dsdt, s_augmented, [0, dt])
    return ns


def mountain_car(position, velocity, actions, force=0.001, gravity=0.0025, min_position=-1.2, max_position=0.6,
                 max_speed=0.07):
    for action in actions:
        velocity = velocity + (action - 1) * force + np.cos(3 * position) * (-gravity)
        velocity = np.clip(velocity, -max_speed, max_speed)
        position = position + velocity
        position = np.clip(position, min_position, max_position)
        if position == min_position and velocity < 0:
            velocity = 0.0 * velocity
    return position, velocity


# == karpathy =======================================================================================================


def _rnn_forward(inputs, targets, hprev, Wxh, Whh, Why, bh, by, vocab_size):
    xs, hs, ys, ps = {}, {}, {}, {}
    hs[-1] = np.copy(hprev)
    loss = 0
    for t in range(len(inputs)):
        xs[t] = np.zeros((vocab_size, 1))
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t - 1]) + bh)
        ys[t] = np.dot(Why, hs[t]) + by
        ps[t] = np.exp(ys[t]) / np.sum(np.exp(ys[t]))
        loss += -np.log(ps[t][targets[t], 0])
    return xs, hs, ps, loss


def min_char_rnn_loss(hprev, Wxh, Whh, Why, bh, by, inputs, targets):
    # min-char-rnn's lossFun forward part (inputs and targets arrays of character indices)
    vocab_size = Wxh.shape[1]
    xs, hs, ps, loss = _rnn_forward(inputs, targets, hprev, Wxh, Whh, Why, bh, by, vocab_size)
    return loss, hs[len(inputs) - 1]


def min_char_rnn_grads(hprev, Wxh, Whh, Why, bh, by, inputs, targets):
    # lossFun's hand-written backward pass, clipped in place through a list of the gradients
    vocab_size = Wxh.shape[1]
    xs, hs, ps, loss = _rnn_forward(inputs, targets, hprev, Wxh, Whh, Why, bh, by, vocab_size)
    dWxh, dWhh, dWhy = np.zeros_like(Wxh), np.zeros_like(Whh), np.zeros_like(Why)
    dbh, dby = np.zeros_like(bh), np.zeros_like(by)
    dhnext = np.zeros_like(hs[0])
    for t in reversed(range(len(inputs))):
        dy = np.copy(ps[t])
        dy[targets[t]] -= 1
        dWhy += np.dot(dy, hs[t].T)
        dby += dy
        dh = np.dot(Why.T, dy) + dhnext
        dhraw = (1 - hs[t] * hs[t]) * dh
        dbh += dhraw
        dWxh += np.dot(dhraw, xs[t].T)
        dWhh += np.dot(dhraw, hs[t - 1].T)
        dhnext = np.dot(Whh.T, dhraw)
    for dparam in [dWxh, dWhh, dWhy, dbh, dby]:
        np.clip(dparam, -5, 5, out=dparam)
    return dWxh, dWhh, dWhy, dbh, dby


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def pg_policy(model, epx):
    # pg-pong's policy_forward over a batch of observations, then policy_backward with a fixed advantage
    h = np.dot(epx, model["W1"].T)
    h[h < 0] = 0
    logp = np.dot(h, model["W2"])
    p = _sigmoid(logp)
    epdlogp = 1.0 - p
    dW2 = np.dot(h.T, epdlogp).ravel()
    dh = np.outer(epdlogp, model["W2"])
    dh[h <= 0] = 0
    dW1 = np.dot(dh.T, epx)
    return p, {"W1": dW1, "W2": dW2}


def discount_rewards(r, gamma=0.99):
    discounted_r = np.zeros_like(r)
    running_add = 0
    for t in reversed(range(0, r.size)):
        if r[t] != 0:
            running_add = 0
        running_add = running_add * gamma + r[t]
        discounted_r[t] = running_add
    return discounted_r


# == a second batch: scikit-learn's Huber and multinomial losses, statsmodels' IRLS, filterpy's EKF, scipy.signal ===


def sk_huber_loss(w, X, y, epsilon=1.35, alpha=1e-4):
    # linear_model/_huber._huber_loss_and_gradient's loss (sample weights of ones): masked reductions
    _, n_features = X.shape
    fit_intercept = n_features + 2 == w.shape[0]
    if fit_intercept:
        intercept = w[-2]
    sigma = w[-1]
    w = w[:n_features]
    n_samples = np.sum(np.ones_like(y))
    linear_loss = y - np.dot(X, w)
    if fit_intercept:
        linear_loss -= intercept
    abs_linear_loss = np.abs(linear_loss)
    outliers_mask = abs_linear_loss > epsilon * sigma
    num_outliers = np.count_nonzero(outliers_mask)
    outlier_loss = 2.0 * epsilon * np.sum(abs_linear_loss[outliers_mask]) - sigma * num_outliers * epsilon ** 2
    squared_loss = np.sum(linear_loss[~outliers_mask] ** 2) / sigma
    return n_samples * sigma + squared_loss + outlier_loss + alpha * np.dot(w, w)


def _logsumexp_rows(a):
    a_max = np.max(a, axis=1, keepdims=True)
    return np.log(np.sum(np.exp(a - a_max), axis=1)) + a_max[:, 0]


def sk_multinomial_loss(w, X, Y, alpha=0.1):
    # linear_model/_logistic._multinomial_loss
    n_classes = Y.shape[1]
    n_features = X.shape[1]
    fit_intercept = w.size == (n_classes * (n_features + 1))
    w = w.reshape(n_classes, -1)
    sample_weight = np.ones(X.shape[0])
    if fit_intercept:
        intercept = w[:, -1]
        w = w[:, :-1]
    else:
        intercept = 0
    p = np.dot(X, w.T)
    p += intercept
    p -= _logsumexp_rows(p)[:, np.newaxis]
    loss = -(sample_weight[:, np.newaxis] * Y * p).sum()
    loss += 0.5 * alpha * np.dot(w.ravel(), w.ravel())
    p = np.exp(p)
    return loss, p


def poisson_irls(X, y, n_iter=4):
    # statsmodels' GLM fit by iteratively reweighted least squares (log link)
    beta = np.zeros(X.shape[1])
    for i in range(n_iter):
        eta = X @ beta
        mu = np.exp(eta)
        z = eta + (y - mu) / mu
        XtW = X.T * mu
        beta = np.linalg.solve(XtW @ X, XtW @ z)
    return beta


def _range_jacobian(x):
    d = np.sqrt(x[0] ** 2 + x[1] ** 2)
    return np.array([[x[0] / d, x[1] / d, 0.0]])


def _range_hx(x):
    return np.array([np.sqrt(x[0] ** 2 + x[1] ** 2)])


def _ekf_update(x, P, z, HJacobian, Hx, R):
    H = HJacobian(x)
    PHT = np.dot(P, H.T)
    S = np.dot(H, PHT) + R
    K = PHT.dot(np.linalg.inv(S))
    hx = Hx(x)
    y = z - hx
    x = x + np.dot(K, y)
    I_KH = np.eye(x.shape[0]) - np.dot(K, H)
    P = np.dot(I_KH, P).dot(I_KH.T) + np.dot(K, R).dot(K.T)
    return x, P


def ekf_track(zs, x0, r):
    # filterpy's ExtendedKalmanFilter.update with the Jacobian and measurement functions passed in
    x = x0
    P = np.eye(3)
    F = np.array([[1.0, 0.0, 0.1], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    R = np.array([[r]])
    for z in zs:
        x = F @ x
        P = F @ P @ F.T + 0.01 * np.eye(3)
        x, P = _ekf_update(x, P, np.array([z]), _range_jacobian, _range_hx, R)
    return x, np.trace(P)


def iir_filter(b, a, x):
    # signal.lfilter of a second-order section, written as the direct form's loop
    y = np.zeros_like(x)
    for n in range(x.shape[0]):
        y[n] = b[0] * x[n]
        if n >= 1:
            y[n] += b[1] * x[n - 1] - a[1] * y[n - 1]
        if n >= 2:
            y[n] += b[2] * x[n - 2] - a[2] * y[n - 2]
    return y / a[0]


def savgol_smooth(x, window_length=5, polyorder=2):
    # signal.savgol_coeffs (least squares on a window by the pseudo-inverse of its Vandermonde matrix), convolved
    halflen = window_length // 2
    pos = np.arange(-halflen, window_length - halflen, dtype=float)
    A = pos ** np.arange(polyorder + 1)[:, np.newaxis]
    y = np.zeros(polyorder + 1)
    y[0] = 1.0
    coeffs = np.linalg.lstsq(A, y, rcond=None)[0]
    return np.convolve(x, coeffs[::-1], mode="valid")
