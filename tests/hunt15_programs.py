"""Programs srcjax had not seen (hunt 15): the corpus of tests/test_hunt15_programs.py.

Real NumPy code ported to the function a user hands to srcjax, in its authors' style: Numerical Recipes-style
routines (``tridag`` with its ``gam`` work array, ``spline``/``splint`` with the bisection ``while khi - klo > 1``,
``gauleg``'s Newton iteration for Legendre nodes, composite Simpson by strided slices, Richardson's table,
``ludcmp`` with partial pivoting and row swaps, Horner with the derivative, direct convolution by loops, a
Householder QR); computational finance (Black-Scholes with the Abramowitz-Stegun normal CDF and its Greeks,
American and European binomial trees as loops and as shrinking slices, Monte Carlo Asian and Heston paths with
given normals, Newton's implied volatility with a break, mean-variance portfolios); physics and engineering
(explicit heat steps by slices, Crank-Nicolson with ``np.diag``, 1D finite-element assembly ``K[e:e+2, e:e+2] +=``,
spring-mass chains with velocity Verlet, n-body energies with softening, a pendulum by RK4 over a tuple state, a
wave equation's rolling names, Lennard-Jones over ``np.triu_indices``, Jacobi sweeps of Laplace's equation);
statistics (EM for a 1D Gaussian mixture, a Kalman filter with its log-likelihood and the RTS smoother, HMM
forward and forward-backward in log space, Viterbi, exponentially weighted moments, bootstrap with given indices,
IRLS logistic regression, Gaussian naive Bayes); image processing (Sobel, a separable Gaussian blur with its
``sigma`` differentiated, histogram equalization with fixed bins, bilinear resize by gathers, box filters by
integral images, a 3x3 median, Otsu's threshold); graphs on dense matrices (PageRank with dangling nodes and a
``while`` on convergence, Floyd-Warshall with ``np.minimum``, label propagation clamped by a mask, random walk
with restart, a spectral embedding); classic ML (k-means steps with given centers, PCA by power iteration with
deflation, ridge's closed form differentiated in its penalty, a perceptron, kNN regression by argsort); and
JAX-ecosystem code written with NumPy (jax-md's periodic displacement and soft-sphere energy, Morse pairs with a
smooth cutoff, optax's AdamW with a weight-decay mask, Lion, clip-by-global-norm with a generator, warmup-cosine
schedules, a flax-free residual MLP with layer norm, a neural ODE's right-hand side integrated by RK4).
"""

# ruff: noqa: B007, E741, N803, N806 - (the authors' style: `for i in range(n):`, `l`, `A`, `K`, `F`)

from __future__ import annotations

import math

import numpy as np

# -- Numerical Recipes style --------------------------------------------------------------------------------


def tridag(a, b, c, r):
    # Numerical Recipes' tridag: a sub-, b main, c super-diagonal
    n = len(b)
    gam = np.zeros(n)
    u = np.zeros(n)
    bet = b[0]
    u[0] = r[0] / bet
    for j in range(1, n):
        gam[j] = c[j - 1] / bet
        bet = b[j] - a[j] * gam[j]
        u[j] = (r[j] - a[j] * u[j - 1]) / bet
    for j in range(n - 2, -1, -1):
        u[j] -= gam[j + 1] * u[j + 1]
    return u


def spline_coefficients(x, y, yp1, ypn):
    # Numerical Recipes' spline: second derivatives with clamped end slopes
    n = len(x)
    y2 = np.zeros(n)
    u = np.zeros(n)
    y2[0] = -0.5
    u[0] = (3.0 / (x[1] - x[0])) * ((y[1] - y[0]) / (x[1] - x[0]) - yp1)
    for i in range(1, n - 1):
        sig = (x[i] - x[i - 1]) / (x[i + 1] - x[i - 1])
        p = sig * y2[i - 1] + 2.0
        y2[i] = (sig - 1.0) / p
        u[i] = (y[i + 1] - y[i]) / (x[i + 1] - x[i]) - (y[i] - y[i - 1]) / (x[i] - x[i - 1])
        u[i] = (6.0 * u[i] / (x[i + 1] - x[i - 1]) - sig * u[i - 1]) / p
    qn = 0.5
    un = (3.0 / (x[n - 1] - x[n - 2])) * (ypn - (y[n - 1] - y[n - 2]) / (x[n - 1] - x[n - 2]))
    y2[n - 1] = (un - qn * u[n - 2]) / (qn * y2[n - 2] + 1.0)
    for k in range(n - 2, -1, -1):
        y2[k] = y2[k] * y2[k + 1] + u[k]
    return y2


def splint(xa, ya, y2a, x):
    klo = 0
    khi = len(xa) - 1
    while khi - klo > 1:
        k = (khi + klo) >> 1
        if xa[k] > x:
            khi = k
        else:
            klo = k
    h = xa[khi] - xa[klo]
    a = (xa[khi] - x) / h
    b = (x - xa[klo]) / h
    return a * ya[klo] + b * ya[khi] + ((a ** 3 - a) * y2a[klo] + (b ** 3 - b) * y2a[khi]) * (h ** 2) / 6.0


def clamped_spline_at(y, x):
    xa = np.linspace(0.0, 2.0, len(y))
    y2 = spline_coefficients(xa, y, 0.0, 1.0)
    return splint(xa, y, y2, x)


def gauleg(n, x1=-1.0, x2=1.0, eps=3.0e-14):
    # Numerical Recipes' gauleg: Newton on P_n from Chebyshev guesses, roots symmetric
    x = np.zeros(n)
    w = np.zeros(n)
    m = (n + 1) // 2
    xm = 0.5 * (x2 + x1)
    xl = 0.5 * (x2 - x1)
    for i in range(m):
        z = math.cos(math.pi * (i + 0.75) / (n + 0.5))
        z1 = z + 1.0
        while abs(z - z1) > eps:
            p1 = 1.0
            p2 = 0.0
            for j in range(n):
                p3 = p2
                p2 = p1
                p1 = ((2.0 * j + 1.0) * z * p2 - j * p3) / (j + 1)
            pp = n * (z * p1 - p2) / (z * z - 1.0)
            z1 = z
            z = z1 - p1 / pp
        x[i] = xm - xl * z
        x[n - 1 - i] = xm + xl * z
        w[i] = 2.0 * xl / ((1.0 - z * z) * pp * pp)
        w[n - 1 - i] = w[i]
    return x, w


def gauss_legendre_moment(k):
    # \int_0^1 exp(-k t^2) dt by 6-point Gauss-Legendre
    x, w = gauleg(6, 0.0, 1.0)
    return np.sum(w * np.exp(-k * x ** 2))


def simpson_strided(a, n=8):
    x = np.linspace(0.0, 1.0, n + 1)
    y = np.sin(a * x) / (1.0 + x ** 2)
    h = 1.0 / n
    return h / 3 * (y[0] + 4 * np.sum(y[1:-1:2]) + 2 * np.sum(y[2:-1:2]) + y[-1])


def richardson_derivative(c, h=0.4, levels=4):
    # the derivative of sin(c x) * exp(x) at x = 0.3 by Richardson's table
    f = lambda x: np.sin(c * x) * np.exp(x)
    D = np.zeros((levels, levels))
    x0 = 0.3
    for i in range(levels):
        D[i, 0] = (f(x0 + h) - f(x0 - h)) / (2 * h)
        for j in range(1, i + 1):
            D[i, j] = D[i, j - 1] + (D[i, j - 1] - D[i - 1, j - 1]) / (4 ** j - 1)
        h = h / 2
    return D[levels - 1, levels - 1]


def ludcmp_solve(a, b):
    # ludcmp with partial pivoting (row swaps recorded in indx), then lubksb
    a = a.copy()
    n = a.shape[0]
    indx = np.arange(n)
    for k in range(n - 1):
        p = k + np.argmax(np.abs(a[k:, k]))
        if p != k:
            a[[k, p]] = a[[p, k]]
            indx[[k, p]] = indx[[p, k]]
        for i in range(k + 1, n):
            a[i, k] = a[i, k] / a[k, k]
            a[i, k + 1:] -= a[i, k] * a[k, k + 1:]
    x = b[indx].copy()
    for i in range(1, n):
        x[i] -= np.dot(a[i, :i], x[:i])
    for i in range(n - 1, -1, -1):
        x[i] = (x[i] - np.dot(a[i, i + 1:], x[i + 1:])) / a[i, i]
    return x


def horner_with_derivative(c, x):
    # ddpoly: p(x) and p'(x) together
    p = c[-1] * np.ones_like(x)
    dp = np.zeros_like(x)
    for j in range(len(c) - 2, -1, -1):
        dp = dp * x + p
        p = p * x + c[j]
    return p, dp


def direct_convolution(x, h):
    n, m = len(x), len(h)
    out = np.zeros(n + m - 1)
    for i in range(n):
        for j in range(m):
            out[i + j] += x[i] * h[j]
    return out


def householder_qr_r(A):
    m, n = A.shape
    R = A.copy()
    for k in range(n):
        x = R[k:, k]
        v = x.copy()
        v[0] += np.sign(x[0]) * np.linalg.norm(x)
        v = v / np.linalg.norm(v)
        R[k:, k:] -= 2.0 * np.outer(v, v @ R[k:, k:])
    return np.abs(np.diag(R))


# -- computational finance ----------------------------------------------------------------------------------


def cnd(d):
    # Abramowitz & Stegun 26.2.17, as the classic Black-Scholes benchmarks write it
    A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
    RSQRT2PI = 0.39894228040143267794
    K = 1.0 / (1.0 + 0.2316419 * np.abs(d))
    ret_val = RSQRT2PI * np.exp(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))))
    return np.where(d > 0, 1.0 - ret_val, ret_val)


def black_scholes(S, X, T, r, v):
    sqrtT = np.sqrt(T)
    d1 = (np.log(S / X) + (r + 0.5 * v * v) * T) / (v * sqrtT)
    d2 = d1 - v * sqrtT
    cndd1 = cnd(d1)
    cndd2 = cnd(d2)
    expRT = np.exp(-r * T)
    call = S * cndd1 - X * expRT * cndd2
    put = X * expRT * (1.0 - cndd2) - S * (1.0 - cndd1)
    return call, put


def bs_call_price(S, v):
    call, put = black_scholes(S, 1.0, 0.75, 0.02, v)
    return np.sum(call)


def cnd_scalar(d):
    # the scalar version with an if (one option at a time)
    K = 1.0 / (1.0 + 0.2316419 * abs(d))
    w = 1.0 - 0.3989422804014327 * math.exp(-d * d / 2.0) * K * (
        0.319381530 + K * (-0.356563782 + K * (1.781477937 + K * (-1.821255978 + K * 1.330274429))))
    if d < 0:
        w = 1.0 - w
    return w


def bs_put_scalar(S, sigma, K=1.0, r=0.03, T=0.5):
    d1 = (np.log(S / K) + (r + sigma ** 2 / 2) * T) / (sigma * np.sqrt(T))
    d2 = d1 - sigma * np.sqrt(T)
    return K * np.exp(-r * T) * cnd_scalar(-d2) - S * cnd_scalar(-d1)


def american_binomial_put(S, sigma, X=1.0, r=0.05, T=1.0, N=6):
    H = T / N
    u = np.exp(sigma * np.sqrt(H))
    d = 1.0 / u
    pu = (np.exp(r * H) - d) / (u - d)
    pd = 1 - pu
    discount = np.exp(-r * H)
    spot = np.zeros(N + 1)
    value = np.zeros(N + 1)
    for i in range(N + 1):
        spot[i] = S * (u ** (N - i)) * (d ** i)
        value[i] = np.maximum(X - spot[i], 0.0)
    for i in range(N - 1, -1, -1):
        for j in range(i + 1):
            value[j] = discount * (pu * value[j] + pd * value[j + 1])
            spot[j] = spot[j] / u
            value[j] = np.maximum(value[j], X - spot[j])
    return value[0]


def european_binomial_fast(S0, K, sigma, T=1.0, r=0.06, N=8):
    dt = T / N
    u = np.exp(sigma * np.sqrt(dt))
    d = 1 / u
    q = (np.exp(r * dt) - d) / (u - d)
    disc = np.exp(-r * dt)
    C = S0 * d ** (np.arange(N, -1, -1)) * u ** (np.arange(0, N + 1, 1))
    C = np.maximum(C - K, np.zeros(N + 1))
    for i in np.arange(N, 0, -1):
        C = disc * (q * C[1:i + 1] + (1 - q) * C[0:i])
    return C[0]


def asian_mc(S0, sigma, Z, K=1.0, r=0.02, T=1.0):
    n_paths, n_steps = Z.shape
    dt = T / n_steps
    increments = (r - 0.5 * sigma ** 2) * dt + sigma * np.sqrt(dt) * Z
    log_paths = np.log(S0) + np.cumsum(increments, axis=1)
    paths = np.exp(log_paths)
    payoff = np.maximum(paths.mean(axis=1) - K, 0.0)
    return np.exp(-r * T) * payoff.mean()


def heston_euler(params, Z1, Z2, S0=1.0, T=1.0):
    kappa, theta, xi, rho, v0 = params["kappa"], params["theta"], params["xi"], params["rho"], params["v0"]
    n_paths, n_steps = Z1.shape
    dt = T / n_steps
    S = np.full(n_paths, S0)
    v = np.full(n_paths, v0)
    for t in range(n_steps):
        vp = np.maximum(v, 0.0)
        W2 = rho * Z1[:, t] + np.sqrt(1 - rho ** 2) * Z2[:, t]
        S = S * np.exp(-0.5 * vp * dt + np.sqrt(vp * dt) * Z1[:, t])
        v = v + kappa * (theta - vp) * dt + xi * np.sqrt(vp * dt) * W2
    return np.mean(np.maximum(S - 1.0, 0.0))


def implied_vol_newton(price, S=1.0, K=1.0, T=0.5, r=0.01):
    sigma = 0.3
    for i in range(30):
        d1 = (np.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * np.sqrt(T))
        d2 = d1 - sigma * np.sqrt(T)
        model = S * cnd(d1) - K * np.exp(-r * T) * cnd(d2)
        vega = S * np.sqrt(T) * np.exp(-0.5 * d1 ** 2) / np.sqrt(2 * np.pi)
        diff = model - price
        if abs(diff) < 1e-10:
            break
        sigma = sigma - diff / vega
    return sigma


def portfolio_sharpe(w, mu, cov, rf=0.01):
    w = w / np.sum(w)
    ret = w @ mu
    vol = np.sqrt(w @ cov @ w)
    return (ret - rf) / vol


# -- physics and engineering --------------------------------------------------------------------------------


def heat_explicit(u0, alpha, steps=10):
    u = u0.copy()
    nx = len(u)
    dx = 1.0 / (nx - 1)
    dt = 0.4 * dx ** 2
    r = alpha * dt / dx ** 2
    for n in range(steps):
        un = u.copy()
        u[1:-1] = un[1:-1] + r * (un[2:] - 2 * un[1:-1] + un[:-2])
        u[0] = 0.0
        u[-1] = 0.0
    return u


def crank_nicolson(u0, kappa, steps=4):
    n = len(u0)
    dx = 1.0 / (n + 1)
    dt = 0.01
    r = kappa * dt / (2 * dx ** 2)
    main = (1 + 2 * r) * np.ones(n)
    off = -r * np.ones(n - 1)
    A = np.diag(main) + np.diag(off, k=1) + np.diag(off, k=-1)
    B = np.diag((1 - 2 * r) * np.ones(n)) + np.diag(-off, 1) + np.diag(-off, -1)
    u = u0
    for _ in range(steps):
        u = np.linalg.solve(A, B @ u)
    return u


def fem_1d_poisson(k_elem, f):
    # -(k u')' = f on [0, 1], u(0) = u(1) = 0, linear elements
    n_el = len(k_elem)
    h = 1.0 / n_el
    K = np.zeros((n_el + 1, n_el + 1))
    F = np.zeros(n_el + 1)
    for e in range(n_el):
        ke = k_elem[e] / h * np.array([[1.0, -1.0], [-1.0, 1.0]])
        fe = f[e] * h / 2 * np.ones(2)
        K[e:e + 2, e:e + 2] += ke
        F[e:e + 2] += fe
    u = np.zeros(n_el + 1)
    u[1:-1] = np.linalg.solve(K[1:-1, 1:-1], F[1:-1])
    return u


def spring_chain_verlet(x0, k, m=1.0, dt=0.05, steps=12):
    # a chain of masses with springs between neighbours, fixed walls at both ends
    x = x0.copy()
    v = np.zeros_like(x)

    def forces(x):
        stretch = np.diff(np.concatenate(([0.0], x, [0.0])))
        return k[1:] * stretch[1:] - k[:-1] * stretch[:-1]

    a = forces(x) / m
    for _ in range(steps):
        x = x + v * dt + 0.5 * a * dt ** 2
        a_new = forces(x) / m
        v = v + 0.5 * (a + a_new) * dt
        a = a_new
    return 0.5 * m * np.sum(v ** 2) + 0.5 * np.sum(k * np.diff(np.concatenate(([0.0], x, [0.0]))) ** 2)


def nbody_energy(pos, masses, G=1.0, softening=0.1):
    x = pos[:, 0:1]
    y = pos[:, 1:2]
    z = pos[:, 2:3]
    dx = x.T - x
    dy = y.T - y
    dz = z.T - z
    inv_r = np.sqrt(dx ** 2 + dy ** 2 + dz ** 2 + softening ** 2)
    inv_r[inv_r > 0] = 1.0 / inv_r[inv_r > 0]
    PE = G * np.sum(np.sum(np.triu(-(masses * masses.T) * inv_r, 1)))
    return PE


def nbody_leapfrog(pos, vel, mass, dt=0.05, steps=3, softening=0.1):
    def acc(pos):
        dx = pos[None, :, :] - pos[:, None, :]
        inv_r3 = (np.sum(dx ** 2, axis=-1) + softening ** 2) ** (-1.5)
        return np.einsum("ijk,ij,j->ik", dx, inv_r3, mass)

    pos = pos.copy()
    vel = vel.copy()
    a = acc(pos)
    for _ in range(steps):
        vel += a * dt / 2.0
        pos += vel * dt
        a = acc(pos)
        vel += a * dt / 2.0
    return pos, vel


def pendulum_rhs(state, g_over_l, damping):
    theta, omega = state
    return omega, -g_over_l * np.sin(theta) - damping * omega


def pendulum_rk4(theta0, g_over_l, damping=0.1, dt=0.1, steps=8):
    state = (theta0, 0.0)
    for _ in range(steps):
        k1 = pendulum_rhs(state, g_over_l, damping)
        k2 = pendulum_rhs((state[0] + dt / 2 * k1[0], state[1] + dt / 2 * k1[1]), g_over_l, damping)
        k3 = pendulum_rhs((state[0] + dt / 2 * k2[0], state[1] + dt / 2 * k2[1]), g_over_l, damping)
        k4 = pendulum_rhs((state[0] + dt * k3[0], state[1] + dt * k3[1]), g_over_l, damping)
        state = (state[0] + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]),
                 state[1] + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]))
    return state[0]


def wave_1d(u0, c, steps=6):
    n = len(u0)
    dx = 1.0 / (n - 1)
    dt = 0.5 * dx
    C2 = (c * dt / dx) ** 2
    u_prev = u0.copy()
    u = u0.copy()
    u[1:-1] = u0[1:-1] + 0.5 * C2 * (u0[2:] - 2 * u0[1:-1] + u0[:-2])
    for _ in range(steps):
        u_next = np.zeros(n)
        u_next[1:-1] = 2 * u[1:-1] - u_prev[1:-1] + C2 * (u[2:] - 2 * u[1:-1] + u[:-2])
        u_prev, u = u, u_next
    return u


def lennard_jones_energy(R, sigma=1.0, epsilon=1.0):
    n = R.shape[0]
    i, j = np.triu_indices(n, k=1)
    d = R[i] - R[j]
    r2 = np.sum(d * d, axis=1)
    sr6 = (sigma ** 2 / r2) ** 3
    return np.sum(4 * epsilon * (sr6 ** 2 - sr6))


def laplace_jacobi(boundary_top, iters=15):
    n = len(boundary_top)
    phi = np.zeros((n, n))
    phi[0, :] = boundary_top
    for it in range(iters):
        new = phi.copy()
        new[1:-1, 1:-1] = 0.25 * (phi[2:, 1:-1] + phi[:-2, 1:-1] + phi[1:-1, 2:] + phi[1:-1, :-2])
        phi = new
    return phi[n // 2, :]


# -- statistics ---------------------------------------------------------------------------------------------


def em_gmm_1d(x, mu, iters=5):
    K = len(mu)
    pi = np.ones(K) / K
    var = np.ones(K)
    for it in range(iters):
        # E step
        dens = np.exp(-0.5 * (x[:, None] - mu[None, :]) ** 2 / var) / np.sqrt(2 * np.pi * var)
        resp = pi * dens
        resp = resp / resp.sum(axis=1, keepdims=True)
        # M step
        Nk = resp.sum(axis=0)
        mu = (resp * x[:, None]).sum(axis=0) / Nk
        var = (resp * (x[:, None] - mu) ** 2).sum(axis=0) / Nk + 1e-3
        pi = Nk / len(x)
    return np.sum(np.log(np.sum(pi * np.exp(-0.5 * (x[:, None] - mu) ** 2 / var) / np.sqrt(2 * np.pi * var),
                                axis=1)))


def kf_predict(x, P, F, Q):
    x = F @ x
    P = F @ P @ F.T + Q
    return x, P


def kf_update(x, P, z, H, R):
    y = z - H @ x
    S = H @ P @ H.T + R
    K = P @ H.T @ np.linalg.inv(S)
    x = x + K @ y
    I = np.eye(P.shape[0])
    P = (I - K @ H) @ P
    sign, logdet = np.linalg.slogdet(S)
    ll = -0.5 * (y @ np.linalg.solve(S, y) + logdet + len(z) * np.log(2 * np.pi))
    return x, P, ll


def kalman_loglik(log_q, log_r, zs):
    dt = 1.0
    F = np.array([[1.0, dt], [0.0, 1.0]])
    H = np.array([[1.0, 0.0]])
    Q = np.exp(log_q) * np.array([[dt ** 3 / 3, dt ** 2 / 2], [dt ** 2 / 2, dt]])
    R = np.exp(log_r) * np.eye(1)
    x = np.zeros(2)
    P = np.eye(2) * 10.0
    total = 0.0
    for z in zs:
        x, P = kf_predict(x, P, F, Q)
        x, P, ll = kf_update(x, P, z, H, R)
        total += ll
    return total


def rts_smoother(zs, q, r=0.5):
    F = np.array([[1.0, 1.0], [0.0, 1.0]])
    H = np.array([[1.0, 0.0]])
    Q = q * np.eye(2)
    R = np.array([[r]])
    n = len(zs)
    xs = np.zeros((n, 2))
    Ps = np.zeros((n, 2, 2))
    x = np.zeros(2)
    P = np.eye(2)
    for k in range(n):
        x = F @ x
        P = F @ P @ F.T + Q
        S = H @ P @ H.T + R
        K = P @ H.T / S[0, 0]
        x = x + (K * (zs[k] - H @ x)).ravel()
        P = P - K @ H @ P
        xs[k] = x
        Ps[k] = P
    # Rauch-Tung-Striebel, in place over copies
    xs_s, Ps_s = xs.copy(), Ps.copy()
    for k in range(n - 2, -1, -1):
        Pp = F @ Ps[k] @ F.T + Q
        C = Ps[k] @ F.T @ np.linalg.inv(Pp)
        xs_s[k] += C @ (xs_s[k + 1] - F @ xs[k])
        Ps_s[k] += C @ (Ps_s[k + 1] - Pp) @ C.T
    return xs_s[:, 0]


def sum_log(a, axis=0):
    # m + log(sum_i exp(a_i - m)), for a vector or along an axis of a matrix
    if a.ndim == 1:
        m = max(a)
        return m + np.log(sum(np.exp(a - m)))
    else:
        m = np.max(a, axis=axis)
        diff = a - m[:, np.newaxis] if axis == 1 else a - m
        return m + np.log(np.sum(np.exp(diff), axis=axis))


def hmm_forward_log(log_pi, log_A, log_B):
    T, N = log_B.shape
    log_alpha = np.zeros((T, N))
    log_alpha[0] = log_pi + log_B[0]
    for t in range(1, T):
        for j in range(N):
            log_alpha[t, j] = sum_log(log_alpha[t - 1] + log_A[:, j]) + log_B[t, j]
    return sum_log(log_alpha[T - 1])


def logsumexp_rows(a, axis=-1):
    m = np.max(a, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(a - m), axis=axis))


def hmm_posteriors(log_pi, log_A, log_B):
    T, N = log_B.shape
    la = np.empty((T, N))
    lb = np.zeros((T, N))
    la[0] = log_pi + log_B[0]
    for t in range(1, T):
        la[t] = logsumexp_rows(la[t - 1][:, None] + log_A, axis=0) + log_B[t]
    for t in range(T - 2, -1, -1):
        lb[t] = logsumexp_rows(log_A + (log_B[t + 1] + lb[t + 1])[None, :], axis=1)
    log_gamma = la + lb
    log_gamma -= logsumexp_rows(log_gamma, axis=1)[:, None]
    return np.exp(log_gamma)


def viterbi(log_pi, log_A, log_B):
    T, N = log_B.shape
    delta = log_pi + log_B[0]
    psi = np.zeros((T, N), dtype=int)
    for t in range(1, T):
        scores = delta[:, None] + log_A
        psi[t] = np.argmax(scores, axis=0)
        delta = np.max(scores, axis=0) + log_B[t]
    path = np.zeros(T, dtype=int)
    path[T - 1] = np.argmax(delta)
    for t in range(T - 2, -1, -1):
        path[t] = psi[t + 1, path[t + 1]]
    return np.max(delta), path


def ewm_moments(x, alpha=0.3):
    mean = x[0]
    var = 0.0
    out = np.zeros((len(x), 2))
    for i in range(1, len(x)):
        delta = x[i] - mean
        incr = alpha * delta
        mean = mean + incr
        var = (1 - alpha) * (var + delta * incr)
        out[i, 0] = mean
        out[i, 1] = var
    return out


def bootstrap_ci(x, idx, alpha=0.1):
    samples = x[idx]
    means = samples.mean(axis=1)
    means = np.sort(means)
    B = len(means)
    lo = means[int(np.floor(alpha / 2 * B))]
    hi = means[int(np.ceil((1 - alpha / 2) * B)) - 1]
    return np.array([lo, np.mean(means), hi])


def irls_logistic(X, y, iters=4, lam=1e-2):
    n, d = X.shape
    w = np.zeros(d)
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-X @ w))
        W = p * (1 - p)
        H = X.T @ (W[:, None] * X) + lam * np.eye(d)
        g = X.T @ (p - y) + lam * w
        w = w - np.linalg.solve(H, g)
    return w


def gaussian_nb_logpost(X, y, Xtest, n_classes=2):
    out = []
    for c in range(n_classes):
        mask = (y == c).astype(X.dtype)
        nc = mask.sum()
        mean = (mask[:, None] * X).sum(axis=0) / nc
        var = (mask[:, None] * (X - mean) ** 2).sum(axis=0) / nc + 1e-2
        prior = np.log(nc / len(y))
        ll = -0.5 * np.sum(np.log(2.0 * np.pi * var)) - 0.5 * np.sum((Xtest - mean) ** 2 / var, axis=1)
        out.append(prior + ll)
    return np.stack(out, axis=1)


# -- image processing ---------------------------------------------------------------------------------------


def sobel_magnitude(img):
    gx = (img[:-2, 2:] + 2 * img[1:-1, 2:] + img[2:, 2:]) - (img[:-2, :-2] + 2 * img[1:-1, :-2] + img[2:, :-2])
    gy = (img[2:, :-2] + 2 * img[2:, 1:-1] + img[2:, 2:]) - (img[:-2, :-2] + 2 * img[:-2, 1:-1] + img[:-2, 2:])
    return np.sqrt(gx ** 2 + gy ** 2 + 1e-6)


def gaussian_blur(img, sigma, radius=2):
    x = np.arange(-radius, radius + 1)
    k = np.exp(-x ** 2 / (2 * sigma ** 2))
    k /= k.sum()
    padded = np.pad(img, radius, mode="edge")
    h, w = img.shape
    tmp = np.zeros((h + 2 * radius, w))
    for i in range(2 * radius + 1):
        tmp += k[i] * padded[:, i:i + w]
    out = np.zeros((h, w))
    for i in range(2 * radius + 1):
        out += k[i] * tmp[i:i + h, :]
    return out


def histogram_equalize(img, nbins=8):
    idx = np.floor(img * nbins).astype(int)
    idx = np.clip(idx, 0, nbins - 1)
    hist = np.bincount(idx.ravel(), minlength=nbins)
    cdf = np.cumsum(hist).astype(float)
    cdf = (cdf - cdf.min()) / (cdf.max() - cdf.min())
    return cdf[idx] * img


def bilinear_resize(img, out_h=5, out_w=7):
    in_h, in_w = img.shape
    ys = np.linspace(0, in_h - 1, out_h)
    xs = np.linspace(0, in_w - 1, out_w)
    y0 = np.floor(ys).astype(int)
    x0 = np.floor(xs).astype(int)
    y1 = np.minimum(y0 + 1, in_h - 1)
    x1 = np.minimum(x0 + 1, in_w - 1)
    wy = (ys - y0)[:, None]
    wx = (xs - x0)[None, :]
    Ia = img[y0[:, None], x0[None, :]]
    Ib = img[y1[:, None], x0[None, :]]
    Ic = img[y0[:, None], x1[None, :]]
    Id = img[y1[:, None], x1[None, :]]
    return (Ia * (1 - wy) * (1 - wx) + Ib * wy * (1 - wx) + Ic * (1 - wy) * wx + Id * wy * wx)


def box_filter_integral(img, k=3):
    S = np.cumsum(np.cumsum(img, axis=0), axis=1)
    S = np.pad(S, ((1, 0), (1, 0)))
    return (S[k:, k:] - S[:-k, k:] - S[k:, :-k] + S[:-k, :-k]) / (k * k)


def median3x3(img):
    h, w = img.shape
    p = np.pad(img, 1, mode="reflect")
    stack = []
    for di in range(3):
        for dj in range(3):
            stack.append(p[di:di + h, dj:dj + w])
    return np.median(np.stack(stack), axis=0)


def otsu_threshold(img, nbins=16):
    hist = np.histogram(img, bins=nbins, range=(0.0, 1.0))[0].astype(float)
    centers = (np.arange(nbins) + 0.5) / nbins
    best, best_t = -1.0, 0
    for t in range(1, nbins):
        w0 = hist[:t].sum()
        w1 = hist[t:].sum()
        if w0 == 0 or w1 == 0:
            continue
        m0 = (hist[:t] * centers[:t]).sum() / w0
        m1 = (hist[t:] * centers[t:]).sum() / w1
        between = w0 * w1 * (m0 - m1) ** 2
        if between > best:
            best = between
            best_t = t
    return best_t / nbins


# -- graphs on dense matrices -------------------------------------------------------------------------------


def pagerank(A, d=0.85, tol=1e-10, max_iter=100):
    n = A.shape[0]
    out_deg = A.sum(axis=1)
    dangling = out_deg == 0
    M = np.where(dangling[:, None], 1.0 / n, A / np.where(dangling, 1.0, out_deg)[:, None])
    r = np.ones(n) / n
    it = 0
    err = 1.0
    while err > tol and it < max_iter:
        r_new = (1 - d) / n + d * (M.T @ r)
        err = np.abs(r_new - r).sum()
        r = r_new
        it += 1
    return r


def floyd_warshall(W):
    n = W.shape[0]
    D = W.copy()
    D[np.arange(n), np.arange(n)] = 0.0
    for k in range(n):
        D = np.minimum(D, D[:, k, None] + D[None, k, :])
    return D


def label_propagation(W, Y0, labeled, alpha=0.9, iters=10):
    d = W.sum(axis=1)
    Dinv = 1.0 / np.sqrt(d)
    S = Dinv[:, None] * W * Dinv[None, :]
    F = Y0.copy()
    for _ in range(iters):
        F = alpha * S @ F + (1 - alpha) * Y0
        F[labeled] = Y0[labeled]
    return F


def random_walk_restart(W, restart, c=0.15):
    P = W / W.sum(axis=0, keepdims=True)
    n = W.shape[0]
    return c * np.linalg.solve(np.eye(n) - (1 - c) * P, restart)


def spectral_embedding(W, k=2):
    d = W.sum(axis=1)
    L = np.diag(d) - W
    Dm = np.diag(1.0 / np.sqrt(d))
    Ln = Dm @ L @ Dm
    vals, vecs = np.linalg.eigh(Ln)
    return vals[1:k + 1]


# -- classic ML ---------------------------------------------------------------------------------------------


def kmeans_steps(X, centers, iters=3):
    k = centers.shape[0]
    for _ in range(iters):
        d2 = ((X[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2)
        labels = np.argmin(d2, axis=1)
        onehot = np.eye(k)[labels]
        counts = onehot.sum(axis=0)
        new = onehot.T @ X / np.maximum(counts, 1)[:, None]
        centers = np.where(counts[:, None] > 0, new, centers)
    inertia = np.sum(np.min(((X[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2), axis=1))
    return inertia


def pca_power_deflation(X, n_components=2, iters=20):
    Xc = X - X.mean(axis=0)
    C = Xc.T @ Xc / (len(X) - 1)
    eigvals = []
    for c in range(n_components):
        v = np.ones(C.shape[0]) / np.sqrt(C.shape[0])
        for _ in range(iters):
            v = C @ v
            v = v / np.linalg.norm(v)
        lam = v @ C @ v
        eigvals.append(lam)
        C = C - lam * np.outer(v, v)
    return np.array(eigvals)


def ridge_validation(lam, X, y, Xv, yv):
    d = X.shape[1]
    w = np.linalg.solve(X.T @ X + lam * np.eye(d), X.T @ y)
    r = Xv @ w - yv
    return r @ r / len(yv)


def perceptron(X, y, epochs=2, lr=0.5):
    n, d = X.shape
    w = np.zeros(d)
    b = 0.0
    for epoch in range(epochs):
        for i in range(n):
            if y[i] * (np.dot(w, X[i]) + b) <= 0:
                w = w + lr * y[i] * X[i]
                b = b + lr * y[i]
    return np.append(w, b)


def knn_regress(Xtr, ytr, Xte, k=3):
    preds = np.zeros(len(Xte))
    for i in range(len(Xte)):
        dist = np.sqrt(np.sum((Xtr - Xte[i]) ** 2, axis=1))
        nn = np.argsort(dist)[:k]
        wts = 1.0 / (dist[nn] + 1e-3)
        preds[i] = np.sum(wts * ytr[nn]) / np.sum(wts)
    return preds


# -- JAX ecosystem code written with NumPy ------------------------------------------------------------------


def periodic_displacement(box, dR):
    return np.mod(dR + box * 0.5, box) - 0.5 * box


def soft_sphere_energy(R, box=3.0, sigma=1.0, epsilon=1.0, alpha=2.0):
    dR = R[:, None, :] - R[None, :, :]
    dR = periodic_displacement(box, dR)
    dr = np.sqrt(np.sum(dR ** 2, axis=-1) + 1e-12)
    n = R.shape[0]
    mask = 1.0 - np.eye(n)
    e = np.where(dr < sigma, epsilon / alpha * (1.0 - dr / sigma) ** alpha, 0.0)
    return 0.5 * np.sum(e * mask)


def morse_smooth_cutoff(R, D0=1.0, a=1.5, r0=1.1, r_on=1.5, r_cut=2.0):
    n = R.shape[0]
    E = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            r = np.linalg.norm(R[i] - R[j])
            e = D0 * (np.exp(-2 * a * (r - r0)) - 2 * np.exp(-a * (r - r0)))
            if r < r_on:
                s = 1.0
            elif r < r_cut:
                x = (r - r_on) / (r_cut - r_on)
                s = 1 - 3 * x ** 2 + 2 * x ** 3
            else:
                s = 0.0
            E = E + e * s
    return E


def adamw_steps(params, X, y, lr=0.05, b1=0.9, b2=0.999, eps=1e-8, wd=0.01, steps=3):
    mu = {k: np.zeros_like(v) for k, v in params.items()}
    nu = {k: np.zeros_like(v) for k, v in params.items()}
    decay_mask = {"w": True, "b": False}
    for count in range(1, steps + 1):
        err = X @ params["w"] + params["b"] - y
        grads = {"w": X.T @ err / len(y), "b": np.mean(err)}
        for k in params:
            mu[k] = b1 * mu[k] + (1 - b1) * grads[k]
            nu[k] = b2 * nu[k] + (1 - b2) * grads[k] ** 2
            mu_hat = mu[k] / (1 - b1 ** count)
            nu_hat = nu[k] / (1 - b2 ** count)
            update = mu_hat / (np.sqrt(nu_hat) + eps)
            if decay_mask[k]:
                update = update + wd * params[k]
            params = {**params, k: params[k] - lr * update}
    err = X @ params["w"] + params["b"] - y
    return np.mean(err ** 2)


def lion_steps(w, X, y, lr=0.02, b1=0.9, b2=0.99, steps=3):
    m = np.zeros_like(w)
    for _ in range(steps):
        g = X.T @ np.tanh(X @ w - y) / len(y)
        update = np.sign(b1 * m + (1 - b1) * g)
        w = w - lr * (update + 0.1 * w)
        m = b2 * m + (1 - b2) * g
    return np.sum((X @ w - y) ** 2)


def clip_by_global_norm(grads, max_norm=1.0):
    g_norm = np.sqrt(sum(np.sum(g ** 2) for g in grads))
    trigger = g_norm < max_norm
    return [np.where(trigger, g, g * max_norm / g_norm) for g in grads]


def clipped_sgd_loss(w1, w2, x):
    g1 = np.tanh(x @ w1)
    g2 = g1 @ w2
    grads = clip_by_global_norm([w1 * np.sum(g2), w2 * np.sum(g1)], max_norm=1.5)
    w1 = w1 - 0.1 * grads[0]
    w2 = w2 - 0.1 * grads[1]
    return np.sum(np.tanh(x @ w1) @ w2)


def warmup_cosine(step, peak=1.0, warmup=4, total=20, end=0.1):
    if step < warmup:
        return peak * step / warmup
    progress = (step - warmup) / (total - warmup)
    cos = 0.5 * (1 + np.cos(np.pi * min(progress, 1.0)))
    return end + (peak - end) * cos


def scheduled_sgd(w, X, y, steps=6):
    for step in range(steps):
        lr = 0.1 * warmup_cosine(step, total=steps)
        g = X.T @ (X @ w - y) / len(y)
        w = w - lr * g
    return np.sum((X @ w - y) ** 2)


def layer_norm(x, scale, bias, eps=1e-6):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * scale + bias


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def residual_mlp(params, x):
    h = x @ params[0]["kernel"] + params[0]["bias"]
    for layer in params[1:]:
        y = layer_norm(h, layer["scale"], layer["shift"])
        y = gelu(y @ layer["kernel"] + layer["bias"])
        h = h + y
    return np.mean(h ** 2)


def node_rhs(z, t, W1, b1, W2):
    h = np.tanh(W1 @ z + t * b1)
    return np.tanh(W2 @ h) - 0.1 * z


def neural_ode(z0, W1, b1, W2, t1=1.0, n=4):
    h = t1 / n
    z = z0
    t = 0.0
    for i in range(n):
        k1 = node_rhs(z, t, W1, b1, W2)
        k2 = node_rhs(z + h / 2 * k1, t + h / 2, W1, b1, W2)
        k3 = node_rhs(z + h / 2 * k2, t + h / 2, W1, b1, W2)
        k4 = node_rhs(z + h * k3, t + h, W1, b1, W2)
        z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t = t + h
    return z
