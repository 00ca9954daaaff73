"""Everyday NumPy programs (hunt 28): the corpus of tests/test_hunt28_programs.py.

Each program is written as a NumPy user writes a small script's function, none of them seen by an earlier corpus:

- simulations: harvested predator-prey by Euler steps with ``np.maximum``, particles bouncing in a box by
  ``np.where`` reflections, a metapopulation SIR by a mobility matrix, LWR traffic by a Godunov flux of
  ``np.minimum``, a chemostat by the midpoint rule, Fisher-KPP by ``np.roll``, overdamped Brownian dynamics with
  noise passed in, two-step Adams-Bashforth over a history list;
- statistics: a weighted mean with Kish's effective size, Ledoit-Wolf-style shrinkage by hand, running moments by
  ``np.cumsum``/``np.diff``, a rolling z-score by a difference of cumulative sums, partial correlations by
  ``np.linalg.inv``, jackknife leave-one-out ratios, a weighted median by ``np.argsort`` and ``np.searchsorted``,
  an Anderson-Darling statistic of the logistic law, an AR(p) fit by ``np.linalg.lstsq`` of stacked lags;
- images: a 3x3 convolution by summed slices with average pooling by ``reshape``, max pooling with its unpooling
  mask by ``np.repeat``, a percentile contrast stretch, depth-to-space by ``reshape``/``transpose``, per-patch
  normalization and back;
- data cleaning: NaN imputation by column means with ``np.isnan``/``np.nan_to_num``, forward fill of dropped
  sensor readings, a min-max scaler safe for constant columns, an IQR outlier mask;
- linear algebra: unshifted QR iteration, a polynomial fit by ``np.vander`` and ``lstsq``, Bratu's problem by
  Newton with ``np.diag(..., k)``, a total-least-squares line by ``eigh``, a ridge path scored by GCV, the
  Denman-Beavers matrix square root;
- sorting and ranking: NDCG@k, quantile binning with target encoding, a pairwise ranking hinge, interpolation of
  unsorted samples;
- Python control flow: gradient descent stopped early on data, a tax by brackets, a secant search kept in bounds,
  a ``for``/``else`` over candidate steps, ``elif`` chains of regimes, ``while`` with a counter and a tolerance.
"""

# ruff: noqa: B007, E741, F841, N803, N806, PLR2004 - (the users' style: `for t in range(n):`, `A`, `X`, names left
# unread)

from __future__ import annotations

import numpy as np

GRAV = 9.81
BRACKETS = ((0.0, 0.1), (1.0, 0.2), (3.0, 0.35), (6.0, 0.45))  # (lower edge, marginal rate)
SOBEL_X = np.array([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]) / 8.0


# == simulations ====================================================================================================


def predator_prey_harvest(state, params, dt=0.05, steps=40, quota=0.3):
    # Lotka-Volterra with a harvest of the prey above a reserve only while it is plentiful
    prey, pred = state[0], state[1]
    a, b, c, d = params[0], params[1], params[2], params[3]
    total_harvest = 0.0
    for _ in range(steps):
        harvest = np.where(prey > 1.0, quota * (prey - 1.0), 0.0)
        dprey = a * prey - b * prey * pred - harvest
        dpred = c * prey * pred - d * pred
        prey = np.maximum(prey + dt * dprey, 0.0)
        pred = np.maximum(pred + dt * dpred, 0.0)
        total_harvest = total_harvest + dt * harvest
    return total_harvest + 0.1 * (prey + pred)


def particles_in_box(pos, vel, box=1.0, dt=0.05, steps=25, restitution=0.9):
    # point particles reflected by the walls of [0, box]^2 (positions mirrored, velocities flipped and damped)
    for _ in range(steps):
        vel = vel - np.array([0.0, GRAV * 0.1]) * dt
        pos = pos + dt * vel
        low = pos < 0.0
        high = pos > box
        pos = np.where(low, -pos, pos)
        pos = np.where(high, 2 * box - pos, pos)
        vel = np.where(low | high, -restitution * vel, vel)
    kinetic = 0.5 * np.sum(vel**2)
    return kinetic + np.mean(pos[:, 1])


def sir_metapopulation(I0, mobility, beta=0.4, gamma=0.1, dt=0.5, days=20):
    # three patches; people mix by a row-stochastic mobility matrix
    M = np.abs(mobility)
    M = M / M.sum(axis=1, keepdims=True)
    S = 1.0 - I0
    I = I0
    R = np.zeros_like(I0)
    for day in range(days):
        force = beta * (M @ I)
        new_inf = dt * force * S
        new_rec = dt * gamma * I
        S = S - new_inf
        I = I + new_inf - new_rec
        R = R + new_rec
    return np.sum(R) + 0.5 * np.max(I)


def _greenshields_flux(rho, vmax=1.0, rho_max=1.0):
    return vmax * rho * (1.0 - rho / rho_max)


def traffic_lwr_godunov(rho0, dt=0.2, dx=1.0, steps=10):
    # Lighthill-Whitham-Richards traffic on a ring road, Godunov's flux by demand and supply
    rho = rho0
    rho_c = 0.5
    for _ in range(steps):
        demand = np.where(rho < rho_c, _greenshields_flux(rho), _greenshields_flux(rho_c))
        supply = np.where(rho > rho_c, _greenshields_flux(rho), _greenshields_flux(rho_c))
        flux = np.minimum(demand, np.roll(supply, -1))
        rho = rho - dt / dx * (flux - np.roll(flux, 1))
    return np.sum(rho * np.arange(rho.shape[0])) / np.sum(rho)


def chemostat_midpoint(x0, mu_max, ks=0.5, dilution=0.3, s_in=2.0, yield_=0.5, dt=0.1, steps=30):
    # biomass x and substrate s under Monod kinetics, explicit midpoint rule
    def rhs(x, s):
        mu = mu_max * s / (ks + s)
        return (mu - dilution) * x, dilution * (s_in - s) - mu * x / yield_

    x, s = x0[0], x0[1]
    for _ in range(steps):
        dx1, ds1 = rhs(x, s)
        dx2, ds2 = rhs(x + 0.5 * dt * dx1, s + 0.5 * dt * ds1)
        x, s = x + dt * dx2, s + dt * ds2
    return x * s


def fisher_kpp(u0, D=0.2, r=1.0, dt=0.1, steps=15):
    # u_t = D u_xx + r u (1 - u) on a periodic line
    u = u0
    for _ in range(steps):
        lap = np.roll(u, 1) - 2 * u + np.roll(u, -1)
        u = u + dt * (D * lap + r * u * (1 - u))
        u = np.clip(u, 0.0, 1.0)
    return np.sum(u**2)


def brownian_dynamics(x0, noise, kT=0.5, gamma=1.0, dt=0.01):
    # overdamped Langevin in a double well; noise (steps, particles) passed in
    x = x0
    trajectory = []
    for t in range(noise.shape[0]):
        force = -4.0 * x * (x**2 - 1.0)
        x = x + dt / gamma * force + np.sqrt(2 * kT * dt / gamma) * noise[t]
        trajectory.append(x)
    path = np.stack(trajectory)
    return np.mean(path[-3:] ** 2) + np.var(path[:, 0])


def adams_bashforth2(y0, omega, dt=0.05, steps=30):
    # a damped rotation y' = A y stepped by AB2; the first step by Euler; a history list of derivatives
    A = np.array([[-0.1, -omega], [omega, -0.1]])
    y = y0
    history = [A @ y]
    y = y + dt * history[-1]
    for n in range(1, steps):
        history.append(A @ y)
        y = y + dt * (1.5 * history[-1] - 0.5 * history[-2])
        if len(history) > 2:
            history.pop(0)
    return np.sum(y * y)


# == statistics =====================================================================================================


def weighted_mean_se(x, w):
    # weighted mean, its standard error by Kish's effective sample size
    w = np.abs(w) + 1e-3
    wn = w / w.sum()
    mean = np.sum(wn * x)
    var = np.sum(wn * (x - mean) ** 2)
    n_eff = w.sum() ** 2 / np.sum(w**2)
    se = np.sqrt(var / n_eff)
    return mean + 2.0 * se


def covariance_shrinkage(X):
    # Ledoit-Wolf-style shrinkage to a scaled identity, written out
    n, p = X.shape
    Xc = X - X.mean(axis=0)
    S = Xc.T @ Xc / n
    mu = np.trace(S) / p
    target = mu * np.eye(p)
    d2 = np.sum((S - target) ** 2)
    b2 = 0.0
    for i in range(n):
        xi = Xc[i][:, None]
        b2 = b2 + np.sum((xi @ xi.T - S) ** 2)
    b2 = min(b2 / n**2, d2)
    shrink = b2 / d2
    sigma = shrink * target + (1 - shrink) * S
    sign, logdet = np.linalg.slogdet(sigma)
    return logdet + np.trace(np.linalg.solve(sigma, S))


def running_moments(x):
    # running mean and variance from cumulative sums, then the change between consecutive means
    n = np.arange(1, x.shape[0] + 1)
    s1 = np.cumsum(x)
    s2 = np.cumsum(x * x)
    mean = s1 / n
    var = s2 / n - mean**2
    drift = np.diff(mean)
    return np.sum(var[1:]) + np.sum(np.abs(drift))


def rolling_zscore(x, window=3):
    # a trailing-window z-score by differences of cumulative sums (padded with a zero)
    c1 = np.concatenate([np.zeros(1), np.cumsum(x)])
    c2 = np.concatenate([np.zeros(1), np.cumsum(x**2)])
    s1 = c1[window:] - c1[:-window]
    s2 = c2[window:] - c2[:-window]
    m = s1 / window
    sd = np.sqrt(np.maximum(s2 / window - m**2, 1e-8))
    z = (x[window - 1:] - m) / sd
    return np.sum(np.tanh(z))


def partial_correlation(X):
    # partial correlations from the precision matrix
    C = np.cov(X, rowvar=False)
    P = np.linalg.inv(C)
    d = np.sqrt(np.diag(P))
    pcor = -P / np.outer(d, d)
    pcor = pcor + 2 * np.diag(np.diag(pcor))
    iu = np.triu_indices(X.shape[1], 1)
    return np.sum(pcor[iu] ** 2)


def jackknife_ratio(x, y):
    # jackknife bias-corrected estimate of mean(y) / mean(x) by leave-one-out sums
    n = x.shape[0]
    theta = y.sum() / x.sum()
    loo = (y.sum() - y) / (x.sum() - x)
    bias = (n - 1) * (loo.mean() - theta)
    var = (n - 1) / n * np.sum((loo - loo.mean()) ** 2)
    return theta - bias + var


def weighted_median(x, w):
    # the weighted median: the first sorted value whose cumulative weight passes half
    order = np.argsort(x)
    xs = x[order]
    ws = np.abs(w[order]) + 0.1
    cw = np.cumsum(ws)
    k = np.searchsorted(cw, 0.5 * cw[-1])
    return xs[k] * ws[k] + np.sum(ws * xs) / np.sum(ws)


def anderson_darling_logistic(x, loc, scale):
    # the A^2 statistic of a sample against a logistic distribution
    z = np.sort((x - loc) / scale)
    n = z.shape[0]
    log_cdf = -np.logaddexp(0.0, -z)
    log_sf = -np.logaddexp(0.0, z)
    i = np.arange(1, n + 1)
    s = np.sum((2 * i - 1) * (log_cdf + log_sf[::-1]))
    return -n - s / n


def ar_fit_lstsq(series, p=2):
    # AR(p) coefficients by least squares on stacked lags; returns the residual variance
    n = series.shape[0]
    lags = np.stack([series[p - k - 1:n - k - 1] for k in range(p)], axis=1)
    target = series[p:]
    coef, *_ = np.linalg.lstsq(lags, target, rcond=None)
    resid = target - lags @ coef
    return np.mean(resid**2) + 0.1 * np.sum(coef**2)


# == images =========================================================================================================


def conv_relu_pool(img, kernel):
    # a 'valid' 3x3 convolution by summed slices, ReLU, then 2x2 average pooling by reshape
    H, W = img.shape
    out = np.zeros((H - 2, W - 2))
    for di in range(3):
        for dj in range(3):
            out = out + kernel[di, dj] * img[di:di + H - 2, dj:dj + W - 2]
    act = np.maximum(out, 0.0)
    h, w = act.shape
    pooled = act.reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
    return np.sum(pooled**2)


def maxpool_unpool(img):
    # 2x2 max pooling and the mask of where each maximum came from (unpooling by np.repeat)
    H, W = img.shape
    blocks = img.reshape(H // 2, 2, W // 2, 2)
    pooled = blocks.max(axis=(1, 3))
    up = np.repeat(np.repeat(pooled, 2, axis=0), 2, axis=1)
    mask = img == up
    return np.sum(np.where(mask, img, 0.0) * np.arange(W)) + np.sum(pooled)


def contrast_stretch(img, low=5.0, high=95.0):
    # stretch intensities between two percentiles and clip, then a gamma curve
    lo = np.percentile(img, low)
    hi = np.percentile(img, high)
    out = (img - lo) / (hi - lo)
    out = np.clip(out, 0.0, 1.0)
    return np.sum(out**1.5)


def depth_to_space(x, r=2):
    # (C*r*r, H, W) -> (C, H*r, W*r), then horizontal Sobel-like differences
    C2, H, W = x.shape
    C = C2 // (r * r)
    y = x.reshape(C, r, r, H, W).transpose(0, 3, 1, 4, 2).reshape(C, H * r, W * r)
    gx = y[:, :, 2:] - y[:, :, :-2]
    return np.sum(gx**2) / C


def patch_normalize(img, p=2, eps=1e-3):
    # normalize each non-overlapping p x p patch to zero mean and unit variance, then put it back
    H, W = img.shape
    patches = img.reshape(H // p, p, W // p, p).transpose(0, 2, 1, 3).reshape(-1, p * p)
    mu = patches.mean(axis=1, keepdims=True)
    sd = patches.std(axis=1, keepdims=True)
    normed = (patches - mu) / (sd + eps)
    back = normed.reshape(H // p, W // p, p, p).transpose(0, 2, 1, 3).reshape(H, W)
    return np.sum(back * img)


def sobel_energy(img):
    # 3x3 Sobel filter by a double loop over the kernel's taps (a module constant)
    H, W = img.shape
    gx = np.zeros((H - 2, W - 2))
    gy = np.zeros((H - 2, W - 2))
    for i in range(3):
        for j in range(3):
            patch = img[i:i + H - 2, j:j + W - 2]
            gx += SOBEL_X[i, j] * patch
            gy += SOBEL_X[j, i] * patch
    return np.sum(np.sqrt(gx**2 + gy**2 + 1e-6))


# == data cleaning ==================================================================================================


def impute_column_means(X):
    # NaNs replaced by their column's mean over the observed entries
    missing = np.isnan(X)
    filled = np.nan_to_num(X, nan=0.0)
    counts = np.sum(~missing, axis=0)
    col_mean = filled.sum(axis=0) / np.maximum(counts, 1)
    X_imp = np.where(missing, col_mean[None, :], filled)
    Xc = X_imp - X_imp.mean(axis=0)
    return np.sum(Xc**2) / X.shape[0]


def forward_fill(readings, valid):
    # dropped readings replaced by the last valid one (the first row is assumed valid)
    last = readings[0]
    out = []
    for t in range(readings.shape[0]):
        last = np.where(valid[t], readings[t], last)
        out.append(last)
    filled = np.stack(out)
    return np.sum(np.diff(filled, axis=0) ** 2)


def minmax_scale_safe(X):
    # scale columns to [0, 1]; a constant column stays 0 instead of 0/0
    lo = X.min(axis=0)
    hi = X.max(axis=0)
    rng = hi - lo
    scaled = np.where(rng > 1e-12, (X - lo) / np.where(rng > 1e-12, rng, 1.0), 0.0)
    scaled = np.nan_to_num(scaled, posinf=1.0, neginf=0.0)
    return np.sum(scaled * np.arange(1, X.shape[1] + 1))


def iqr_outlier_mean(x, k=1.5):
    # the mean of the values inside Tukey's fences
    q1, q3 = np.percentile(x, [25.0, 75.0])
    iqr = q3 - q1
    inside = (x >= q1 - k * iqr) & (x <= q3 + k * iqr)
    return np.sum(np.where(inside, x, 0.0)) / np.sum(inside) + 0.1 * iqr


def clip_and_count(x, lo=-1.0, hi=1.0):
    # clipped values, how many were clipped, and a penalty for the clipped ones
    clipped = np.clip(x, lo, hi)
    n_clipped = np.count_nonzero(clipped != x)
    excess = np.sum(np.abs(x - clipped))
    return np.sum(clipped**2) + excess / (1 + n_clipped)


# == linear algebra =================================================================================================


def qr_iteration(A, iters=6):
    # unshifted QR algorithm on a symmetrized matrix: the diagonal tends to the eigenvalues
    A = 0.5 * (A + A.T)
    for _ in range(iters):
        Q, R = np.linalg.qr(A)
        A = R @ Q
    return np.sum(np.diag(A) ** 2) + np.sum(np.tril(A, -1) ** 2)


def poly_fit_vander(t, y, deg=2):
    # least-squares polynomial by np.vander, extrapolated one step further
    V = np.vander(t, deg + 1)
    coef = np.linalg.lstsq(V, y, rcond=None)[0]
    t_next = t[-1] + (t[-1] - t[-2])
    pred = np.polyval(coef, t_next)
    resid = y - V @ coef
    return pred + np.sum(resid**2)


def bratu_newton(lam, n=6, iters=4):
    # -u'' = lam exp(u) on (0, 1) with zero ends: Newton on the finite-difference system
    h = 1.0 / (n + 1)
    D2 = (np.diag(-2.0 * np.ones(n)) + np.diag(np.ones(n - 1), 1) + np.diag(np.ones(n - 1), -1)) / h**2
    u = np.zeros(n)
    for _ in range(iters):
        F = D2 @ u + lam * np.exp(u)
        J = D2 + np.diag(lam * np.exp(u))
        u = u - np.linalg.solve(J, F)
    return np.max(u) + np.sum(u) * h


def tls_line(points):
    # total least squares line through 2-D points: the smallest eigenvector of the scatter matrix
    c = points.mean(axis=0)
    D = points - c
    S = D.T @ D
    evals, evecs = np.linalg.eigh(S)
    normal = evecs[:, 0]
    dist = D @ normal
    return np.sum(dist**2) + evals[0]


def ridge_gcv_path(X, y, lams=(0.01, 0.1, 1.0)):
    # generalized cross-validation score along a small path of penalties; the best score
    n, p = X.shape
    best = np.inf
    scores = []
    for lam in lams:
        A = X.T @ X + lam * np.eye(p)
        Hat = X @ np.linalg.solve(A, X.T)
        resid = y - Hat @ y
        gcv = n * np.sum(resid**2) / (n - np.trace(Hat)) ** 2
        scores.append(gcv)
        best = np.minimum(best, gcv)
    return best + 0.01 * sum(scores)


def denman_beavers_sqrt(A, iters=6):
    # matrix square root of an SPD matrix by the Denman-Beavers iteration
    Y = A
    Z = np.eye(A.shape[0])
    for _ in range(iters):
        Y_next = 0.5 * (Y + np.linalg.inv(Z))
        Z = 0.5 * (Z + np.linalg.inv(Y))
        Y = Y_next
    return np.sum(Y) + np.trace(Z)


# == sorting and ranking ============================================================================================


def ndcg_at_k(scores, relevance, k=3):
    # normalized discounted cumulative gain of the top k by score
    order = np.argsort(-scores)
    gains = 2.0**relevance - 1.0
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    dcg = np.sum(gains[order[:k]] * disc)
    ideal = np.sort(gains)[::-1][:k]
    idcg = np.sum(ideal * disc)
    return dcg / idcg


def quantile_target_encoding(x, y, n_bins=3):
    # bins by quantiles of x; each sample encoded by the mean target of its bin
    edges = np.quantile(x, np.linspace(0, 1, n_bins + 1)[1:-1])
    bins = np.searchsorted(edges, x)
    onehot = (bins[:, None] == np.arange(n_bins)[None, :]).astype(y.dtype)
    means = (onehot.T @ y) / np.maximum(onehot.sum(axis=0), 1.0)
    encoded = means[bins]
    return np.sum((encoded - y) ** 2)


def pairwise_rank_hinge(scores, labels, margin=1.0):
    # every pair with a higher label should score higher by a margin
    diff = scores[:, None] - scores[None, :]
    should = labels[:, None] > labels[None, :]
    loss = np.where(should, np.maximum(0.0, margin - diff), 0.0)
    return loss.sum() / np.maximum(should.sum(), 1)


def interp_unsorted(xp, fp, xq):
    # np.interp needs increasing sample points: sort them (and their values) first
    order = np.argsort(xp)
    return np.sum(np.interp(xq, xp[order], fp[order]) ** 2)


def rank_gauss(x):
    # ranks by argsort of argsort, mapped into (-1, 1), scaled by the data's spread
    ranks = np.argsort(np.argsort(x))
    u = (ranks + 0.5) / x.shape[0]
    return np.sum(np.arctanh(2 * u - 1) * x) / np.std(x)


# == Python control flow ============================================================================================


def gd_early_stop(w0, X, y, lr=0.1, max_steps=30):
    # least-squares gradient descent stopped when the loss no longer falls
    w = w0
    loss = np.mean((X @ w - y) ** 2)
    for step in range(max_steps):
        g = 2.0 * X.T @ (X @ w - y) / X.shape[0]
        w_new = w - lr * g
        new_loss = np.mean((X @ w_new - y) ** 2)
        if new_loss > loss - 1e-6:
            break
        w, loss = w_new, new_loss
    return loss + 0.01 * np.sum(w**2)


def bracket_tax(incomes):
    # progressive tax by brackets: each bracket taxes the part of the income above its lower edge
    tax = np.zeros_like(incomes)
    for i, (edge, rate) in enumerate(BRACKETS):
        upper = BRACKETS[i + 1][0] if i + 1 < len(BRACKETS) else np.inf
        taxed = np.clip(incomes - edge, 0.0, upper - edge)
        tax = tax + rate * taxed
    return np.sum(tax * incomes) / np.sum(incomes**2)


def secant_bounded(c, lo=0.0, hi=3.0, tol=1e-10, max_iter=25):
    # the root of x^3 + x - c by secant steps kept inside [lo, hi]
    x0, x1 = lo, hi
    f0 = x0**3 + x0 - c
    f1 = x1**3 + x1 - c
    it = 0
    while np.abs(f1) > tol and it < max_iter:
        x2 = x1 - f1 * (x1 - x0) / (f1 - f0)
        x2 = np.clip(x2, lo, hi)
        x0, f0 = x1, f1
        x1 = x2
        f1 = x1**3 + x1 - c
        it += 1
    return x1


def line_search_for_else(x, d, steps=(1.0, 0.5, 0.25, 0.125)):
    # the first step size that decreases a Rosenbrock-like function; the smallest one otherwise
    def f(z):
        return np.sum(100.0 * (z[1:] - z[:-1] ** 2) ** 2 + (1 - z[:-1]) ** 2)

    f0 = f(x)
    for t in steps:
        if f(x + t * d) < f0:
            break
    else:
        t = steps[-1]
    return f(x + t * d)


def regime_switch(x, vol):
    # piecewise response by regimes of a data-dependent volatility
    level = np.mean(np.abs(x)) * vol
    if level < 0.5:
        out = np.sum(x**2)
    elif level < 1.5:
        out = np.sum(np.abs(x)) + level
    else:
        out = np.sum(np.sqrt(np.abs(x) + 1.0)) * level
    return out


def power_method_tol(A, tol=1e-8, max_iter=50):
    # dominant eigenvalue of A A^T by the power method with a Rayleigh-quotient tolerance
    M = A @ A.T
    v = np.ones(M.shape[0]) / np.sqrt(M.shape[0])
    lam = 0.0
    k = 0
    while k < max_iter:
        w = M @ v
        v = w / np.linalg.norm(w)
        lam_new = v @ M @ v
        if np.abs(lam_new - lam) < tol:
            lam = lam_new
            break
        lam = lam_new
        k += 1
    return lam
