"""Programs of domains and idioms no earlier hunt read (hunt 27): the corpus of tests/test_hunt27_programs.py.

Each program is written as a scientific-Python user writes NumPy (pure functions, helpers, keyword arguments,
module constants, frozen dataclass and NamedTuple state, float32/int32/bool mixes, in-place updates):

- ODEs: Runge-Kutta-Fehlberg 4(5) with a ``while`` on the time and step rejection by ``np.where``, a Boris pusher
  with ``np.cross``, velocity Verlet over a frozen dataclass with ``dataclasses.replace``, a falling body stepped
  until it hits the ground (``while`` with ``and``);
- filters: an ensemble Kalman filter analysis with ``np.cov(..., rowvar=False)``, a Riccati iteration to a steady
  state gain, a bootstrap particle filter with resampling by ``np.searchsorted`` of a ``np.cumsum``;
- sequences: a linear-chain CRF's negative log-likelihood (logsumexp by max, gathers of int32 tags);
- solvers: BiCGSTAB with a ``break`` on the residual, restarted GMRES by Arnoldi over a list with
  ``np.linalg.lstsq``, Jacobi-preconditioned CG with a ``for``/``break``;
- clustering: fuzzy c-means, soft k-means annealed over a tuple of temperatures, hard k-means by one-hot labels;
- Gaussian processes: a Kronecker-structured GP by ``np.linalg.eigh`` of both factors and ``np.einsum``, type-II
  ML steps with ``srcjax.grad`` inside, a GP predictive by two triangular solves written as ``np.linalg.solve``;
- grids: minmod-limited advection by ``np.roll``, Poisson-Jacobi on ``np.pad(mode="edge")``, Perona-Malik
  diffusion by ``np.diff(..., append=...)``;
- images: a local variance map by integral images, HOG-like cell histograms by ``np.arctan2`` and a one-hot,
  local binary patterns by shifts and int32 bit weights, a separable Gaussian blur on ``np.pad(mode="reflect")``;
- finance: ulcer index / Sortino / drawdowns by ``np.maximum.accumulate``, MACD by EMA loops, Bollinger bands by a
  stack of windows, Kelly weights by Newton, a mean-variance frontier by KKT systems of ``np.block``;
- physics: softened N-body potential with ``np.fill_diagonal``, Lennard-Jones with a minimum image and a cutoff
  mask, an implicit spring-mass step, an int32 Ising lattice with float couplings;
- sorting statistics: the Gini coefficient, MAD and IQR by ``np.median``/``np.percentile``, a weighted quantile by
  ``np.interp``, a smoothed Mann-Whitney statistic;
- tensors: a CP-ALS step with a Khatri-Rao product, a tensor-train (MPS) contraction over a list of cores,
  four-index attention by ``np.einsum``, a Tucker reconstruction;
- masks, dtypes, keywords: reductions with ``where=``, ``np.copyto(..., where=)``, int32/float32/bool arithmetic,
  keyword-heavy calls, ``*args``/``**kwargs`` helpers, a class of static helpers, ``x[idx] += v`` with repeated
  indices (NumPy: applied once), ``np.add.at``/``np.maximum.at``, in-place row updates of an argument.
"""

# ruff: noqa: B007, E741, F841, N803, N806, PLR2004 - (the users' style: `for t in range(n):`, `A`, `X`, names left
# unread)

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

import srcjax

SQRT2PI = np.sqrt(2.0 * np.pi)
RKF_A = ((), (0.25,), (3 / 32, 9 / 32), (1932 / 2197, -7200 / 2197, 7296 / 2197),
         (439 / 216, -8.0, 3680 / 513, -845 / 4104), (-8 / 27, 2.0, -3544 / 2565, 1859 / 4104, -11 / 40))
RKF_C = (0.0, 0.25, 3 / 8, 12 / 13, 1.0, 0.5)
RKF_B4 = (25 / 216, 0.0, 1408 / 2565, 2197 / 4104, -0.2, 0.0)
RKF_B5 = (16 / 135, 0.0, 6656 / 12825, 28561 / 56430, -9 / 50, 2 / 55)
LBP_OFFSETS = ((-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1))


# == ODE integrators ================================================================================================


def _damped_rhs(t, y, k):
    # a damped oscillator with a time-dependent forcing
    return np.array([y[1], -k[0] * y[0] - k[1] * y[1] + np.sin(t)])


def rkf45_adaptive(y0, k, t_end=1.0, tol=1e-6):
    t = 0.0
    h = 0.1
    y = y0
    n_steps = 0
    while t < t_end:
        h = min(h, t_end - t)
        ks = []
        for i in range(6):
            yi = y
            for j, a in enumerate(RKF_A[i]):
                yi = yi + h * a * ks[j]
            ks.append(_damped_rhs(t + RKF_C[i] * h, yi, k))
        y4 = y + h * sum(b * kk for b, kk in zip(RKF_B4, ks))
        y5 = y + h * sum(b * kk for b, kk in zip(RKF_B5, ks))
        err = np.max(np.abs(y5 - y4)) + 1e-14
        accept = err <= tol
        t = np.where(accept, t + h, t)
        y = np.where(accept, y5, y)
        h = h * np.clip(0.84 * (tol / err) ** 0.25, 0.2, 4.0)
        n_steps += 1
    return y


def boris_pusher(x, v, b, e, q_over_m=1.0, dt=0.1, steps=8):
    # a charged particle in uniform fields: the Boris rotation
    for _ in range(steps):
        v_minus = v + 0.5 * dt * q_over_m * e
        t = 0.5 * dt * q_over_m * b
        s = 2.0 * t / (1.0 + np.dot(t, t))
        v_prime = v_minus + np.cross(v_minus, t)
        v_plus = v_minus + np.cross(v_prime, s)
        v = v_plus + 0.5 * dt * q_over_m * e
        x = x + dt * v
    return x, v


@dataclasses.dataclass(frozen=True)
class Particle:
    x: np.ndarray
    v: np.ndarray


def _anharmonic_force(x, k):
    return -k * x - 0.1 * x**3


def verlet_dataclass(x0, v0, k, dt=0.05, steps=10):
    state = Particle(x=x0, v=v0)
    a = _anharmonic_force(state.x, k)
    for _ in range(steps):
        x_new = state.x + dt * state.v + 0.5 * dt**2 * a
        a_new = _anharmonic_force(x_new, k)
        state = dataclasses.replace(state, x=x_new, v=state.v + 0.5 * dt * (a + a_new))
        a = a_new
    energy = 0.5 * np.sum(state.v**2) + np.sum(0.5 * k * state.x**2 + 0.025 * state.x**4)
    return energy


def drop_until_ground(h0, v0, drag, dt=0.02, max_steps=200):
    # a falling body with quadratic drag stepped until it touches the ground
    y, v, t = h0, v0, 0.0
    n = 0
    while y > 0.0 and n < max_steps:
        acc = -9.81 - drag * v * np.abs(v)
        v = v + dt * acc
        y = y + dt * v
        t = t + dt
        n += 1
    return t, v


# == filters ========================================================================================================


def enkf_update(ens, y_obs, H, r_var, perturb):
    # ensemble Kalman filter analysis: ens (members, state), perturbed observations
    m = ens.shape[0]
    P = np.cov(ens, rowvar=False)
    S = H @ P @ H.T + r_var * np.eye(H.shape[0])
    K = np.linalg.solve(S, H @ P).T
    innov = (y_obs[None, :] + np.sqrt(r_var) * perturb) - ens @ H.T
    analysed = ens + innov @ K.T
    return analysed.mean(axis=0), np.sum(analysed.var(axis=0, ddof=1))


def riccati_steady_gain(A, Q, r, tol=1e-9, max_iter=200):
    # a scalar observation of the first state: iterate the Riccati map until P stops changing
    n = A.shape[0]
    h = np.zeros(n)
    h[0] = 1.0
    P = np.eye(n)
    it = 0
    diff = np.inf
    while diff > tol and it < max_iter:
        Pp = A @ P @ A.T + Q
        s = h @ Pp @ h + r
        k = Pp @ h / s
        P_new = Pp - np.outer(k, h @ Pp)
        diff = np.max(np.abs(P_new - P))
        P = P_new
        it += 1
    return k


def particle_filter_loglik(obs, x0, noise, u, sigma_obs=0.5, phi=0.9):
    # bootstrap filter of x_t = phi x_{t-1} + noise; fixed draws passed in; systematic resampling
    n = x0.shape[0]
    x = x0
    loglik = 0.0
    for t in range(obs.shape[0]):
        x = phi * x + noise[t]
        logw = -0.5 * ((obs[t] - x) / sigma_obs) ** 2
        mx = np.max(logw)
        w = np.exp(logw - mx)
        loglik = loglik + mx + np.log(np.mean(w)) - np.log(sigma_obs * SQRT2PI)
        cdf = np.cumsum(w / np.sum(w))
        positions = (np.arange(n) + u[t]) / n
        idx = np.minimum(np.searchsorted(cdf, positions), n - 1)
        x = x[idx]
    return loglik


# == sequences ======================================================================================================


def _logsumexp(a, axis=None):
    m = np.max(a, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return np.squeeze(out, axis=axis)


def crf_nll(emissions, transitions, tags):
    # linear-chain CRF: emissions (T, K), transitions (K, K), tags int32 (T,)
    T = emissions.shape[0]
    score = emissions[0, tags[0]] + np.sum(emissions[np.arange(1, T), tags[1:]]) + np.sum(
        transitions[tags[:-1], tags[1:]])
    alpha = emissions[0]
    for t in range(1, T):
        alpha = _logsumexp(alpha[:, None] + transitions, axis=0) + emissions[t]
    return _logsumexp(alpha) - score


# == linear solvers =================================================================================================


def bicgstab(A, b, tol=1e-5, max_iter=30):
    x = np.zeros_like(b)
    r = b - A @ x
    r_hat = r.copy()
    rho = alpha = omega = 1.0
    v = np.zeros_like(b)
    p = np.zeros_like(b)
    for i in range(max_iter):
        rho_new = np.dot(r_hat, r)
        beta = (rho_new / rho) * (alpha / omega)
        p = r + beta * (p - omega * v)
        v = A @ p
        alpha = rho_new / np.dot(r_hat, v)
        s = r - alpha * v
        if np.linalg.norm(s) < tol:
            x = x + alpha * p
            break
        t = A @ s
        omega = np.dot(t, s) / np.dot(t, t)
        x = x + alpha * p + omega * s
        r = s - omega * t
        rho = rho_new
        if np.linalg.norm(r) < tol:
            break
    return x


def gmres_restarted(A, b, m=3, restarts=3):
    n = b.shape[0]
    x = np.zeros(n)
    for _ in range(restarts):
        r = b - A @ x
        beta = np.linalg.norm(r)
        Q = [r / beta]
        H = np.zeros((m + 1, m))
        for j in range(m):
            w = A @ Q[j]
            for i in range(j + 1):
                H[i, j] = np.dot(Q[i], w)
                w = w - H[i, j] * Q[i]
            H[j + 1, j] = np.linalg.norm(w)
            Q.append(w / H[j + 1, j])
        e1 = np.zeros(m + 1)
        e1[0] = beta
        y = np.linalg.lstsq(H, e1, rcond=None)[0]
        x = x + np.stack(Q[:m], axis=1) @ y
    return x


def pcg_jacobi(A, b, tol=1e-8, max_iter=20):
    A = 0.5 * (A + A.T)  # (CG assumes a symmetric matrix)
    d_inv = 1.0 / np.diag(A)
    x = np.zeros_like(b)
    r = b.copy()
    z = d_inv * r
    p = z.copy()
    rz = r @ z
    for k in range(max_iter):
        Ap = A @ p
        alpha = rz / (p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        if np.sqrt(r @ r) < tol:
            break
        z = d_inv * r
        rz_new = r @ z
        p = z + (rz_new / rz) * p
        rz = rz_new
    return x


# == clustering =====================================================================================================


def _sq_dists(X, C):
    return np.sum((X[:, None, :] - C[None, :, :]) ** 2, axis=-1)


def fuzzy_cmeans(X, C, m=2.0, iters=4):
    for _ in range(iters):
        d = _sq_dists(X, C) + 1e-9
        inv = d ** (-1.0 / (m - 1.0))
        U = inv / inv.sum(axis=1, keepdims=True)
        Um = U**m
        C = (Um.T @ X) / Um.sum(axis=0)[:, None]
    return C, np.sum(Um * _sq_dists(X, C))


def soft_kmeans_anneal(X, mu, betas=(1.0, 2.0, 4.0), inner=2):
    for beta in betas:
        for _ in range(inner):
            logits = -beta * _sq_dists(X, mu)
            logits -= logits.max(axis=1, keepdims=True)
            r = np.exp(logits)
            r /= r.sum(axis=1, keepdims=True)
            mu = (r.T @ X) / (r.sum(axis=0)[:, None] + 1e-8)
    return mu


def kmeans_onehot(X, C, iters=3):
    k = C.shape[0]
    for _ in range(iters):
        labels = np.argmin(_sq_dists(X, C), axis=1)
        onehot = (labels[:, None] == np.arange(k)[None, :]).astype(X.dtype)
        counts = onehot.sum(axis=0)
        sums = onehot.T @ X
        C = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1.0)[:, None], C)
    inertia = np.sum(np.min(_sq_dists(X, C), axis=1))
    return C, inertia


# == Gaussian processes =============================================================================================


def _rbf(x1, x2, ls):
    return np.exp(-0.5 * (x1[:, None] - x2[None, :]) ** 2 / ls**2)


def gp_kron_nll(Y, xs, ts, ls_x, ls_t, noise=0.1):
    # a separable kernel K = Kt (x) Kx on a grid: eigendecompositions of both factors
    lx, Ux = np.linalg.eigh(_rbf(xs, xs, ls_x) + 1e-6 * np.eye(xs.shape[0]))
    lt, Ut = np.linalg.eigh(_rbf(ts, ts, ls_t) + 1e-6 * np.eye(ts.shape[0]))
    lam = np.einsum("i,j->ij", lt, lx) + noise
    alpha_t = np.einsum("ti,tx,xj->ij", Ut, Y, Ux)
    quad = np.sum(alpha_t**2 / lam)
    return 0.5 * quad + 0.5 * np.sum(np.log(lam)) + 0.5 * Y.size * np.log(2 * np.pi)


def _gp_nll(log_hyp, x, y):
    ls, sf, sn = np.exp(log_hyp[0]), np.exp(log_hyp[1]), np.exp(log_hyp[2])
    K = sf**2 * _rbf(x, x, ls) + (sn**2 + 1e-6) * np.eye(x.shape[0])
    L = np.linalg.cholesky(K)
    a = np.linalg.solve(L, y)
    return 0.5 * a @ a + np.sum(np.log(np.diag(L)))


def gp_type2_steps(log_hyp, x, y, lr=0.05, steps=3):
    g = srcjax.grad(_gp_nll)
    for _ in range(steps):
        log_hyp = log_hyp - lr * g(log_hyp, x, y)
    return _gp_nll(log_hyp, x, y)


def gp_predict(x, y, xs, ls, noise=0.05):
    K = _rbf(x, x, ls) + noise * np.eye(x.shape[0])
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    Ks = _rbf(xs, x, ls)
    mean = Ks @ alpha
    V = np.linalg.solve(L, Ks.T)
    var = 1.0 - np.einsum("ij,ij->j", V, V)
    return mean, var


# == grids ==========================================================================================================


def _minmod(a, b):
    return np.where(a * b > 0, np.sign(a) * np.minimum(np.abs(a), np.abs(b)), 0.0)


def advection_minmod(u, c=0.4, steps=4):
    # second-order upwind with a minmod limiter on a periodic grid (c > 0)
    for _ in range(steps):
        du_l = u - np.roll(u, 1)
        du_r = np.roll(u, -1) - u
        slope = _minmod(du_l, du_r)
        u_face = u + 0.5 * (1 - c) * slope
        u = u - c * (u_face - np.roll(u_face, 1))
    return u


def poisson_pad_edge(f, iters=15, h=0.25):
    u = np.zeros_like(f)
    for _ in range(iters):
        up = np.pad(u, 1, mode="edge")
        u = 0.25 * (up[:-2, 1:-1] + up[2:, 1:-1] + up[1:-1, :-2] + up[1:-1, 2:] - h**2 * f)
    return u


def perona_malik(img, kappa, dt=0.15, steps=3):
    for _ in range(steps):
        gx = np.diff(img, axis=1, append=img[:, -1:])
        gy = np.diff(img, axis=0, append=img[-1:, :])
        cx = np.exp(-((gx / kappa) ** 2))
        cy = np.exp(-((gy / kappa) ** 2))
        fx = cx * gx
        fy = cy * gy
        div = fx - np.concatenate([np.zeros_like(fx[:, :1]), fx[:, :-1]], axis=1)
        div = div + fy - np.concatenate([np.zeros_like(fy[:1, :]), fy[:-1, :]], axis=0)
        img = img + dt * div
    return img


# == images =========================================================================================================


def local_variance(img, r=1):
    # box mean and variance by integral images with a zero row and column in front
    S1 = np.pad(np.cumsum(np.cumsum(img, axis=0), axis=1), ((1, 0), (1, 0)))
    S2 = np.pad(np.cumsum(np.cumsum(img**2, axis=0), axis=1), ((1, 0), (1, 0)))
    w = 2 * r + 1
    H, W = img.shape

    def box(S):
        return S[w:, w:] - S[:-w, w:] - S[w:, :-w] + S[:-w, :-w]

    n = w * w
    mean = box(S1) / n
    return box(S2) / n - mean**2


def hog_cells(img, nbins=4, cell=2):
    gx = np.zeros_like(img)
    gy = np.zeros_like(img)
    gx[:, 1:-1] = img[:, 2:] - img[:, :-2]
    gy[1:-1, :] = img[2:, :] - img[:-2, :]
    mag = np.sqrt(gx**2 + gy**2 + 1e-12)
    ang = np.arctan2(gy, gx) % np.pi
    b = np.minimum((ang / np.pi * nbins).astype(np.int32), nbins - 1)
    onehot = (b[..., None] == np.arange(nbins)).astype(img.dtype)
    votes = mag[..., None] * onehot
    H, W = img.shape
    cells = votes.reshape(H // cell, cell, W // cell, cell, nbins).sum(axis=(1, 3))
    return cells / (np.linalg.norm(cells, axis=-1, keepdims=True) + 1e-6)


def lbp_weighted(img):
    # local binary pattern codes (int32) of the interior and the mean intensity of each code's parity
    H, W = img.shape
    c = img[1:-1, 1:-1]
    code = np.zeros((H - 2, W - 2), dtype=np.int32)
    for bit, (dy, dx) in enumerate(LBP_OFFSETS):
        nb = img[1 + dy: H - 1 + dy, 1 + dx: W - 1 + dx]
        code += (nb >= c).astype(np.int32) << bit
    odd = (code % 2) == 1
    mean_odd = np.sum(np.where(odd, c, 0.0)) / np.maximum(np.sum(odd), 1)
    return code, mean_odd


def gaussian_blur_reflect(img, sigma, radius=2):
    t = np.arange(-radius, radius + 1)
    k = np.exp(-0.5 * (t / sigma) ** 2)
    k = k / k.sum()
    p = np.pad(img, radius, mode="reflect")
    H, W = img.shape
    rows = sum(k[i] * p[:, i: i + W] for i in range(2 * radius + 1))
    return sum(k[i] * rows[i: i + H, :] for i in range(2 * radius + 1))


# == finance ========================================================================================================


def drawdown_risk(returns, mar=0.0, periods=12):
    wealth = np.cumprod(1.0 + returns)
    peak = np.maximum.accumulate(wealth)
    dd = wealth / peak - 1.0
    ulcer = np.sqrt(np.mean(dd**2))
    downside = np.sqrt(np.mean(np.minimum(returns - mar, 0.0) ** 2))
    sortino = (np.mean(returns) - mar) / downside * np.sqrt(periods)
    return ulcer, sortino, dd.min()


def _ema(x, span):
    alpha = 2.0 / (span + 1.0)
    out = [x[0]]
    for t in range(1, x.shape[0]):
        out.append(alpha * x[t] + (1 - alpha) * out[-1])
    return np.array(out)


def macd(prices, fast=3, slow=6, signal=2):
    line = _ema(prices, fast) - _ema(prices, slow)
    sig = _ema(line, signal)
    return line - sig


def bollinger(prices, window=4, k=2.0):
    n = prices.shape[0]
    wins = np.stack([prices[i: i + window] for i in range(n - window + 1)])
    mid = wins.mean(axis=1)
    sd = wins.std(axis=1)
    upper, lower = mid + k * sd, mid - k * sd
    pos = (prices[window - 1:] - lower) / (upper - lower)
    return pos


def kelly_newton(R, w, iters=4, ridge=1e-3):
    # maximize mean(log(1 + R w)) by Newton steps with a ridge
    for _ in range(iters):
        g_ = 1.0 + R @ w
        grad = R.T @ (1.0 / g_) / R.shape[0] - ridge * w
        Hs = -(R.T * (1.0 / g_**2)) @ R / R.shape[0] - ridge * np.eye(w.shape[0])
        w = w - np.linalg.solve(Hs, grad)
    return w, np.mean(np.log(1.0 + R @ w))


def frontier(mu, cov, targets):
    # minimum-variance weights for each target return: the KKT system by np.block
    n = mu.shape[0]
    ones = np.ones(n)
    A = np.stack([ones, mu])
    kkt = np.block([[2.0 * cov, A.T], [A, np.zeros((2, 2))]])
    risks = []
    for t in targets:
        rhs = np.concatenate([np.zeros(n), np.array([1.0, t])])
        w = np.linalg.solve(kkt, rhs)[:n]
        risks.append(np.sqrt(w @ cov @ w))
    return np.array(risks)


# == physics ========================================================================================================


def nbody_potential(pos, mass, eps=0.1):
    d = pos[:, None, :] - pos[None, :, :]
    r = np.sqrt(np.sum(d**2, axis=-1) + eps**2)
    inv = 1.0 / r
    np.fill_diagonal(inv, 0.0)
    return -0.5 * np.sum(mass[:, None] * mass[None, :] * inv)


def lj_cutoff_box(pos, box, rc=1.6):
    n = pos.shape[0]
    d = pos[:, None, :] - pos[None, :, :]
    d -= box * np.round(d / box)
    r2 = np.sum(d**2, axis=-1)
    mask = (r2 < rc**2) & ~np.eye(n, dtype=bool)
    r2s = np.where(mask, r2, 1.0)
    inv6 = 1.0 / r2s**3
    e = np.where(mask, 4.0 * (inv6**2 - inv6), 0.0)
    return 0.5 * np.sum(e)


def implicit_springs(x, v, k, dt=0.1, steps=3):
    # backward Euler on a chain of unit masses joined by springs of stiffness k[i]
    n = x.shape[0]
    K = np.zeros((n, n))
    for i in range(n - 1):
        K[i, i] += k[i]
        K[i + 1, i + 1] += k[i]
        K[i, i + 1] -= k[i]
        K[i + 1, i] -= k[i]
    M = np.eye(n) + dt**2 * K
    for _ in range(steps):
        v = np.linalg.solve(M, v - dt * K @ x)
        x = x + dt * v
    return x


def ising_energy(spins, J, h):
    # spins: int32 of +-1 on a periodic lattice; J, h float couplings
    right = np.roll(spins, -1, axis=1)
    down = np.roll(spins, -1, axis=0)
    bonds = spins * right + spins * down
    m = spins.mean()
    return -J * np.sum(bonds) - h * np.sum(spins) + 0.1 * J * m**2


# == sorting statistics =============================================================================================


def gini(x):
    xs = np.sort(np.abs(x))
    n = xs.shape[0]
    i = np.arange(1, n + 1)
    return np.sum((2 * i - n - 1) * xs) / (n * np.sum(xs))


def robust_scale(x):
    med = np.median(x)
    mad = np.median(np.abs(x - med)) * 1.4826
    q1, q3 = np.percentile(x, [25, 75])
    return (x - med) / mad, q3 - q1


def weighted_quantile(x, w, q=0.5):
    order = np.argsort(x)
    xs, ws = x[order], w[order]
    cw = np.cumsum(ws) - 0.5 * ws
    cw = cw / np.sum(ws)
    return np.interp(q, cw, xs)


def soft_mann_whitney(x, y, temp=0.3):
    diff = x[:, None] - y[None, :]
    u_soft = np.sum(1.0 / (1.0 + np.exp(-diff / temp)))
    u_hard = np.sum(diff > 0) + 0.5 * np.sum(diff == 0)
    return u_soft / (x.shape[0] * y.shape[0]), u_hard


# == tensors ========================================================================================================


def cp_als_step(T, A, B, C, lam=1e-3):
    # one ALS update of A in a rank-R CP model T ~ sum_r a_r (x) b_r (x) c_r, then the fit
    R = A.shape[1]
    kr = np.einsum("jr,kr->jkr", B, C).reshape(-1, R)
    Tm = T.reshape(T.shape[0], -1)
    G = (B.T @ B) * (C.T @ C) + lam * np.eye(R)
    A = np.linalg.solve(G, (Tm @ kr).T).T
    approx = np.einsum("ir,jr,kr->ijk", A, B, C)
    return np.sum((T - approx) ** 2)


def mps_contract(cores, x):
    # a tensor train with feature map [1, x_i] at each site: cores[i] of shape (r, 2, r')
    v = np.ones(1)
    for i, G in enumerate(cores):
        phi = np.array([1.0, x[i]])
        v = np.einsum("a,abc,b->c", v, G, phi)
    return v.sum()


def einsum_attention(q, k, v, w_o):
    # (heads, queries, d), (heads, keys, d), (heads, keys, d), (heads, d, out)
    s = np.einsum("hqd,hkd->hqk", q, k) / np.sqrt(q.shape[-1])
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(axis=-1, keepdims=True)
    o = np.einsum("hqk,hkd->hqd", p, v)
    return np.einsum("hqd,hde->qe", o, w_o)


def tucker_residual(X, G, U1, U2, U3):
    approx = np.einsum("abc,ia,jb,kc->ijk", G, U1, U2, U3)
    core_back = np.einsum("ijk,ia,jb,kc->abc", X, U1, U2, U3)
    return np.linalg.norm(X - approx) + 0.1 * np.linalg.norm(core_back - G)


# == masks, dtypes, keywords ========================================================================================


def masked_where_reductions(x, m):
    s = np.sum(x, where=m)
    mu = np.mean(x, where=m)
    mx = np.max(x, where=m, initial=-1e9)
    cnt = np.count_nonzero(m)
    return s, mu, mx, cnt


def copyto_where(x, y, m):
    out = x.copy()
    np.copyto(out, y, where=m)
    out[out > 1.0] *= 0.5
    return out


def int_float_mix(counts, rates, flags):
    # counts int32, rates float32/64, flags bool
    frac = counts / counts.sum()
    scaled = counts * rates + flags * 0.5
    half = counts // 2 + (counts % 2)
    ratio = np.float32(0.25) * half + flags.astype(rates.dtype) * rates
    return np.sum(frac * scaled) + np.sum(ratio * rates)


def keyword_heavy(x, idx):
    grid = np.linspace(start=0.0, stop=1.0, num=x.shape[0], endpoint=False)
    y = np.clip(x, a_min=-1.5, a_max=1.5)
    z = np.concatenate((y, grid), axis=-1)
    t = np.take(x, idx, axis=0, mode="clip")
    sd = np.std(x, ddof=1, keepdims=True)
    c = np.cumsum(x, axis=0, dtype=x.dtype)
    r = np.roll(x, shift=-2, axis=0)
    return np.sum(z**2) + np.sum(t * sd) + np.dot(c, r) / np.linalg.norm(x, ord=2)


def _weighted_sum(*xs, weights=None):
    if weights is None:
        weights = [1.0] * len(xs)
    total = 0.0
    for w, x in zip(weights, xs):
        total = total + w * x
    return total


def _apply(fn, *args, **kwargs):
    return fn(*args, **kwargs)


def _scaled_tanh(x, scale=1.0, shift=0.0):
    return np.tanh(scale * x + shift)


def star_args(a, b, c):
    parts = [a, b]
    s = _weighted_sum(*parts, c, weights=(0.5, 0.3, 0.2))
    t = _apply(_scaled_tanh, s, scale=2.0, shift=-0.1)
    opts = {"scale": 0.5}
    u = _apply(_scaled_tanh, *[t], **opts)
    return np.sum(u * s) + np.sum(np.stack([*parts, c]) ** 2)


class Kernels:
    @staticmethod
    def rbf(r2, ls=1.0):
        return np.exp(-0.5 * r2 / ls**2)

    @staticmethod
    def rq(r2, ls=1.0, alpha=2.0):
        return (1.0 + r2 / (2 * alpha * ls**2)) ** (-alpha)

    @classmethod
    def mix(cls, r2, w):
        return w * cls.rbf(r2) + (1 - w) * cls.rq(r2, ls=0.7)


def kernel_class_mix(X, w):
    r2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    K = Kernels.mix(r2, w) + 1e-3 * np.eye(X.shape[0])
    sign, logdet = np.linalg.slogdet(K)
    return logdet


def repeated_index_updates(x, idx, vals):
    # `out[idx] += vals` applies each repeated index once (NumPy: buffered); np.add.at accumulates
    once = x.copy()
    once[idx] += vals
    acc = x.copy()
    np.add.at(acc, idx, vals)
    mx = x.copy()
    np.maximum.at(mx, idx, vals)
    return once, acc, mx


def row_updates_inplace(X, w):
    X = X.copy()
    X /= np.abs(X).sum(axis=1, keepdims=True) + 1.0
    X[:, 0] -= X[:, 1]
    X[X < -0.2] = -0.2
    X[::2] *= w
    return X @ w


class FitState(NamedTuple):
    theta: np.ndarray
    velocity: np.ndarray
    step: int


def momentum_namedtuple(theta, X, y, lr=0.1, beta=0.8, iters=5):
    state = FitState(theta, np.zeros_like(theta), 0)
    for _ in range(iters):
        resid = X @ state.theta - y
        g = X.T @ resid / y.shape[0]
        vel = beta * state.velocity + g
        state = state._replace(theta=state.theta - lr * vel, velocity=vel, step=state.step + 1)
    return 0.5 * np.mean((X @ state.theta - y) ** 2) + 0.0 * state.step
