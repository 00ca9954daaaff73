"""Programs from sources no earlier hunt read (hunt 23): the corpus of tests/test_hunt23_programs.py.

Scientific NumPy code as scientists and engineers write it, written again for srcjax with NumPy and ``srcjax``'s
names in the style of these books, courses and repositories (each program is ours; nothing here is pasted):

- Mark Newman's *Computational Physics* and Kiusalaas' *Numerical Methods in Engineering with Python*: Givens QR
  by loops, Arnoldi's Krylov basis, SOR sweeps with in-place ``x[i]``, Gauss-Seidel and conjugate gradients with a
  ``while`` on the residual, power iteration with a ``while`` on the eigenvalue's change, forward/back
  substitution after a Cholesky factor, a cyclic tridiagonal system by Sherman-Morrison over a Thomas solver,
  Newton/bisection/secant/regula falsi/Halley root finders (``while`` on ``abs(f) > tol``, ``if`` on signs),
  Newton for a 2x2 system with ``jacfwd`` inside, composite Simpson and trapezoid rules by loops, Gauss-Legendre
  nodes mapped to ``[a, b]``, Lagrange and linear interpolation by ``searchsorted``, a natural cubic spline built
  by ``solve`` and evaluated by ``searchsorted``, bilinear grid interpolation, the shooting method (RK4 inside
  secant iterations).
- *Python Programming and Numerical Methods* (Berkeley) and SciPy Lecture Notes-style engineering: a 5-point
  Laplacian by slices, upwind advection with ``np.where`` on the velocity's sign, Jacobi relaxation of Poisson's
  equation, implicit heat steps through a Thomas solver in a time loop, a leapfrog wave equation, Allen-Cahn,
  a damped pendulum and Lorenz by RK4, a projectile with drag until it lands (``while y > 0``), velocity Verlet
  for an anharmonic chain, torque-free rigid bodies by Euler's equations, quaternion kinematics and Rodrigues'
  rotations, Kuramoto oscillators, a mean-field Ising fixed point.
- DSP and image processing courses (Downey's *Think DSP*, Labbe's *Kalman and Bayesian Filters in Python*,
  PythonRobotics): FIR filters by nested loops, one-pole and DC-blocking IIR filters by loops, decimation, a DFT by
  loops, an envelope follower, 2D valid convolution by slicing, gradient magnitude with quantized directions, max
  and average pooling by ``reshape``, moving averages by ``np.convolve``, a constant-velocity Kalman filter with
  its log-likelihood, a particle filter step with resampling by ``searchsorted`` on given uniforms, EKF
  localization, a 1D bilateral filter, Lucas-Kanade's 2x2 solve.
- statistics and ML from scratch (Raschka's and Géron's books' NumPy chapters, *ML From Scratch* was hunt 14's):
  a Gaussian process posterior by ``cholesky``/``solve``, Poisson regression by IRLS, k-means with ``argmin`` and
  empty-cluster guards, PCA by ``eigh`` and ``svd`` (sign-free quantities), EM for a 2D Gaussian mixture with
  full covariances, softmax regression by hand-written gradient steps, ADALINE, kernel density with Silverman's
  bandwidth, Hotelling's T^2, ridge with k-fold cross-validation by slicing, kNN by ``argsort`` voting.
- Sutton and Barto's *Reinforcement Learning*: value iteration over ``P[s, a, s']``, policy evaluation with a
  ``while`` on ``delta``, TD(lambda) with eligibility traces at integer states, Q-learning over a given episode,
  GAE by ``reversed(range(T))`` with done masks, REINFORCE's returns.
- QuantEcon lectures and finance textbooks (Hull, Luenberger): Black-Scholes with ``lax.erf``, a trinomial tree,
  discount factors by ``cumprod`` with duration and convexity, Nelson-Siegel's curve, Vasicek short-rate paths on
  given normals, a mortgage schedule, Solow growth, McCall's job search by a ``while`` on the error, a Markov
  chain's stationary distribution by power iteration, an Euler-equation residual with CRRA utility.
"""

# ruff: noqa: B007, B023, E741, F841, N803, N806 - (the authors' style: `for i in range(n):`, `l`, `A`, `X`, unpacked
# names left unread)

from __future__ import annotations

import numpy as np

import srcjax

lax = srcjax.lax

GL3_X = np.array([-0.7745966692414834, 0.0, 0.7745966692414834])
GL3_W = np.array([5.0 / 9.0, 8.0 / 9.0, 5.0 / 9.0])


# == hand-written linear algebra ====================================================================================


def givens_qr(A):
    # Givens rotations zeroing the subdiagonal column by column, rows updated in place; Q accumulated
    m, n = A.shape
    R = A.copy()
    Q = np.eye(m)
    for j in range(n):
        for i in range(m - 1, j, -1):
            a = R[i - 1, j]
            b = R[i, j]
            r = np.sqrt(a * a + b * b)
            c = a / r
            s = -b / r
            G = np.array([[c, -s], [s, c]])
            R[i - 1:i + 1, :] = G.T @ R[i - 1:i + 1, :]
            Q[:, i - 1:i + 1] = Q[:, i - 1:i + 1] @ G
    return np.sum(np.diag(R) ** 2), Q @ R


def arnoldi(A, b, k=3):
    # Arnoldi's iteration: an orthonormal Krylov basis Q and the upper Hessenberg H
    n = A.shape[0]
    Q = np.zeros((n, k + 1))
    H = np.zeros((k + 1, k))
    Q[:, 0] = b / np.linalg.norm(b)
    for j in range(k):
        v = A @ Q[:, j]
        for i in range(j + 1):
            H[i, j] = Q[:, i] @ v
            v = v - H[i, j] * Q[:, i]
        H[j + 1, j] = np.linalg.norm(v)
        Q[:, j + 1] = v / H[j + 1, j]
    return H


def sor_sweeps(A, b, omega=1.2, sweeps=6):
    n = b.shape[0]
    x = np.zeros_like(b)
    for it in range(sweeps):
        for i in range(n):
            sigma = 0.0
            for j in range(n):
                if j != i:
                    sigma = sigma + A[i, j] * x[j]
            x[i] = (1 - omega) * x[i] + omega * (b[i] - sigma) / A[i, i]
    return x


def gauss_seidel_while(A, b, tol=1e-8, max_iter=60):
    n = b.shape[0]
    x = np.zeros_like(b)
    res = np.linalg.norm(b)
    k = 0
    while res > tol and k < max_iter:
        for i in range(n):
            x[i] = (b[i] - A[i, :i] @ x[:i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
        res = np.linalg.norm(b - A @ x)
        k += 1
    return x


def cg_while(A, b, tol=1e-10, max_iter=3):
    x = np.zeros_like(b)
    r = b - A @ x
    p = r.copy()
    rs = r @ r
    it = 0
    while np.sqrt(rs) > tol and it < max_iter:
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = r @ r
        p = r + (rs_new / rs) * p
        rs = rs_new
        it = it + 1
    return x


def power_iteration_while(A, tol=1e-9):
    v = np.ones(A.shape[0]) / np.sqrt(A.shape[0])
    lam = 0.0
    lam_old = 1e10
    n_iter = 0
    while np.abs(lam - lam_old) > tol and n_iter < 200:
        w = A @ v
        v = w / np.linalg.norm(w)
        lam_old = lam
        lam = v @ A @ v
        n_iter += 1
    return lam, v * np.sign(v[0])


def cholesky_substitution(A, b):
    # Cholesky factor of the symmetric part, then forward and back substitution by loops
    L = np.linalg.cholesky(0.5 * (A + A.T))
    n = b.shape[0]
    y = np.zeros(n)
    for i in range(n):
        y[i] = (b[i] - L[i, :i] @ y[:i]) / L[i, i]
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - L[i + 1:, i] @ x[i + 1:]) / L[i, i]
    return x


def _thomas(a, b, c, d):
    n = d.shape[0]
    cp = np.zeros(n)
    dp = np.zeros(n)
    cp[0] = c[0] / b[0]
    dp[0] = d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x = np.zeros(n)
    x[-1] = dp[-1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return x


def cyclic_tridiagonal(a, b, c, d):
    # periodic tridiagonal system: Sherman-Morrison on top of two Thomas solves
    n = d.shape[0]
    alpha = c[-1]
    beta = a[0]
    gamma = -b[0]
    bb = b.copy()
    bb[0] = b[0] - gamma
    bb[-1] = b[-1] - alpha * beta / gamma
    x = _thomas(a, bb, c, d)
    u = np.zeros(n)
    u[0] = gamma
    u[-1] = alpha
    z = _thomas(a, bb, c, u)
    fact = (x[0] + beta * x[-1] / gamma) / (1.0 + z[0] + beta * z[-1] / gamma)
    return x - fact * z


# == root finders ===================================================================================================


def newton_cubic_while(c, x0=2.0, tol=1e-6):
    # Newman's Newton iteration: x^3 - c x - 1 = 0, until |delta| < tol
    x = x0
    delta = 1.0
    while np.abs(delta) > tol:
        f = x ** 3 - c * x - 1.0
        fp = 3 * x ** 2 - c
        delta = f / fp
        x = x - delta
    return x


def bisection_loop(a, lo=0.0, hi=3.0):
    # fixed 50 halvings of cos(x) - a x, branching on the sign at the midpoint
    for i in range(50):
        mid = 0.5 * (lo + hi)
        if (np.cos(lo) - a * lo) * (np.cos(mid) - a * mid) <= 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def secant_while(k):
    # x e^x = k by the secant method
    x0, x1 = 0.5, 1.0
    f0 = x0 * np.exp(x0) - k
    f1 = x1 * np.exp(x1) - k
    n = 0
    while np.abs(f1) > 1e-6 and n < 50:
        x2 = x1 - f1 * (x1 - x0) / (f1 - f0)
        x0, f0 = x1, f1
        x1 = x2
        f1 = x1 * np.exp(x1) - k
        n += 1
    return x1


def regula_falsi(p):
    # regula falsi for x^3 + p x - 2 = 0 on [0, 2], fixed iterations, bracket kept by np.where
    a = np.zeros_like(p)
    b = 2.0 * np.ones_like(p)
    for _ in range(30):
        fa = a ** 3 + p * a - 2.0
        fb = b ** 3 + p * b - 2.0
        c = b - fb * (b - a) / (fb - fa)
        fc = c ** 3 + p * c - 2.0
        left = fa * fc < 0
        b = np.where(left, c, b)
        a = np.where(left, a, c)
    return c


def halley_lambert(z):
    # Lambert W by Halley's method from log1p(z), while the step is large
    w = np.log1p(z)
    step = np.ones_like(z)
    i = 0
    while np.max(np.abs(step)) > 1e-13 and i < 30:
        ew = np.exp(w)
        f = w * ew - z
        step = f / (ew * (w + 1) - (w + 2) * f / (2 * w + 2))
        w = w - step
        i += 1
    return w


def _circle_line(v, r):
    x, y = v[0], v[1]
    return np.array([x ** 2 + y ** 2 - r ** 2, x - y ** 3])


def newton_system(r):
    # Newton for a 2x2 nonlinear system, the Jacobian by jacfwd inside
    v = np.array([1.0, 0.8])
    for _ in range(8):
        F = _circle_line(v, r)
        J = srcjax.jacfwd(_circle_line)(v, r)
        v = v - np.linalg.solve(J, F)
    return v


# == quadrature =====================================================================================================


def simpson_gauss(a, b=1.5, n=10):
    # composite Simpson of exp(-a x^2) cos(x) by a loop over the interior points
    h = b / n
    s = 1.0 + np.exp(-a * b * b) * np.cos(b)
    for i in range(1, n):
        x = i * h
        if i % 2 == 1:
            s += 4 * np.exp(-a * x * x) * np.cos(x)
        else:
            s += 2 * np.exp(-a * x * x) * np.cos(x)
    return s * h / 3


def gauss_legendre_mapped(lo, hi, k):
    # 3-point Gauss-Legendre on 4 panels of [lo, hi]; integrand sin(k x) / (1 + x^2)
    panels = 4
    edges = np.linspace(lo, hi, panels + 1)
    total = 0.0
    for p in range(panels):
        a, b = edges[p], edges[p + 1]
        xm = 0.5 * (b + a)
        xr = 0.5 * (b - a)
        x = xm + xr * GL3_X
        total = total + xr * np.sum(GL3_W * np.sin(k * x) / (1 + x ** 2))
    return total


def gauss_legendre_unit(lo, hi, k):
    # the same on panels from np.linspace(0, 1, n) scaled to [lo, hi]
    panels = 4
    edges = lo + (hi - lo) * np.linspace(0.0, 1.0, panels + 1)
    total = 0.0
    for p in range(panels):
        xm = 0.5 * (edges[p + 1] + edges[p])
        xr = 0.5 * (edges[p + 1] - edges[p])
        x = xm + xr * GL3_X
        total = total + xr * np.sum(GL3_W * np.sin(k * x) / (1 + x ** 2))
    return total


def trapezoid_nonuniform(x, y):
    s = 0.0
    for i in range(len(x) - 1):
        s = s + 0.5 * (x[i + 1] - x[i]) * (y[i + 1] + y[i])
    return s


def mc_integrate(theta, u):
    # Monte Carlo of a 2D integral on given uniforms with importance weights
    x = u[:, 0] * 2.0
    y = u[:, 1]
    vals = np.exp(-theta[0] * x ** 2 - theta[1] * y) * (x + y)
    est = 2.0 * np.mean(vals)
    err = 2.0 * np.std(vals) / np.sqrt(len(vals))
    return est, err


# == interpolation ==================================================================================================


def linear_interp(xp, fp, x):
    # np.interp written by hand: searchsorted, clip, weights
    idx = np.searchsorted(xp, x) - 1
    idx = np.clip(idx, 0, len(xp) - 2)
    t = (x - xp[idx]) / (xp[idx + 1] - xp[idx])
    return (1 - t) * fp[idx] + t * fp[idx + 1]


def cubic_spline_eval(x, y, xq):
    # a natural cubic spline: second derivatives by solve, evaluated by searchsorted
    n = len(x)
    h = np.diff(x)
    A = np.zeros((n, n))
    rhs = np.zeros(n)
    A[0, 0] = 1.0
    A[-1, -1] = 1.0
    for i in range(1, n - 1):
        A[i, i - 1] = h[i - 1]
        A[i, i] = 2 * (h[i - 1] + h[i])
        A[i, i + 1] = h[i]
        rhs[i] = 6 * ((y[i + 1] - y[i]) / h[i] - (y[i] - y[i - 1]) / h[i - 1])
    M = np.linalg.solve(A, rhs)
    k = np.clip(np.searchsorted(x, xq) - 1, 0, n - 2)
    hk = h[k]
    a = (x[k + 1] - xq) / hk
    b = (xq - x[k]) / hk
    return (a * y[k] + b * y[k + 1] + ((a ** 3 - a) * M[k] + (b ** 3 - b) * M[k + 1]) * hk ** 2 / 6)


def lagrange_interp(xs, ys, x):
    total = 0.0
    n = len(xs)
    for i in range(n):
        L = 1.0
        for j in range(n):
            if i != j:
                L = L * (x - xs[j]) / (xs[i] - xs[j])
        total = total + ys[i] * L
    return total


def bilinear_grid(Z, px, py):
    # a field on the unit grid, sampled at points by floor and weights
    ny, nx = Z.shape
    i0 = np.clip(np.floor(py).astype(int), 0, ny - 2)
    j0 = np.clip(np.floor(px).astype(int), 0, nx - 2)
    ty = py - i0
    tx = px - j0
    z00 = Z[i0, j0]
    z01 = Z[i0, j0 + 1]
    z10 = Z[i0 + 1, j0]
    z11 = Z[i0 + 1, j0 + 1]
    return (1 - ty) * ((1 - tx) * z00 + tx * z01) + ty * ((1 - tx) * z10 + tx * z11)


# == finite differences, PDEs =======================================================================================


def laplacian_5pt(u, h=0.25):
    lap = np.zeros_like(u)
    lap[1:-1, 1:-1] = (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4 * u[1:-1, 1:-1]) / h ** 2
    return np.sum(lap * u), lap


def upwind_advection(u0, c, dt=0.05, dx=0.2, steps=8):
    u = u0.copy()
    for n in range(steps):
        dminus = (u - np.roll(u, 1)) / dx
        dplus = (np.roll(u, -1) - u) / dx
        u = u - dt * np.where(c > 0, c * dminus, c * dplus)
    return u


def poisson_jacobi(f, sweeps=20, h=0.25):
    u = np.zeros_like(f)
    for k in range(sweeps):
        u_new = u.copy()
        u_new[1:-1, 1:-1] = 0.25 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] + h * h * f[1:-1, 1:-1])
        u = u_new
    return u


def heat_implicit(u0, kappa, steps=4, dt=0.1, dx=0.25):
    # backward Euler: a tridiagonal solve per step
    n = u0.shape[0]
    r = kappa * dt / dx ** 2
    a = -r * np.ones(n)
    b = (1 + 2 * r) * np.ones(n)
    c = -r * np.ones(n)
    u = u0
    for s in range(steps):
        u = _thomas(a, b, c, u)
    return u


def wave_leapfrog(u0, v0, c=1.0, dt=0.1, dx=0.25, steps=10):
    C2 = (c * dt / dx) ** 2
    u_prev = u0.copy()
    u = u0 + dt * v0
    u[0] = 0.0
    u[-1] = 0.0
    for n in range(steps):
        u_next = np.zeros_like(u)
        u_next[1:-1] = 2 * u[1:-1] - u_prev[1:-1] + C2 * (u[2:] - 2 * u[1:-1] + u[:-2])
        u_prev = u
        u = u_next
    return u


def allen_cahn(u0, eps, dt=0.01, dx=0.5, steps=10):
    u = u0
    for n in range(steps):
        lap = (np.roll(u, 1) - 2 * u + np.roll(u, -1)) / dx ** 2
        u = u + dt * (eps ** 2 * lap + u - u ** 3)
    return u


# == ODEs and mechanics =============================================================================================


def _pend(state, b, g_over_l):
    theta, omega = state
    return omega, -b * omega - g_over_l * np.sin(theta)


def pendulum_rk4(theta0, omega0, b, dt=0.1, steps=15):
    state = (theta0, omega0)
    thetas = []
    for i in range(steps):
        k1 = _pend(state, b, 9.81)
        k2 = _pend((state[0] + dt / 2 * k1[0], state[1] + dt / 2 * k1[1]), b, 9.81)
        k3 = _pend((state[0] + dt / 2 * k2[0], state[1] + dt / 2 * k2[1]), b, 9.81)
        k4 = _pend((state[0] + dt * k3[0], state[1] + dt * k3[1]), b, 9.81)
        state = (state[0] + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]),
                 state[1] + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]))
        thetas.append(state[0])
    return np.array(thetas)


def _lorenz(u, p):
    sigma, rho, beta = p[0], p[1], p[2]
    x, y, z = u[0], u[1], u[2]
    return np.array([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])


def lorenz_rk4(u0, p, dt=0.01, steps=20):
    u = u0
    for i in range(steps):
        k1 = _lorenz(u, p)
        k2 = _lorenz(u + 0.5 * dt * k1, p)
        k3 = _lorenz(u + 0.5 * dt * k2, p)
        k4 = _lorenz(u + dt * k3, p)
        u = u + dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6
    return u


def projectile_drag(v0, angle, k=0.1, dt=0.02):
    # Euler steps until the projectile lands; the range, by linear interpolation of the last step
    x, y = 0.0, 0.0
    vx = v0 * np.cos(angle)
    vy = v0 * np.sin(angle)
    x_prev, y_prev = x, y
    while y >= 0.0:
        x_prev, y_prev = x, y
        v = np.sqrt(vx ** 2 + vy ** 2)
        vx = vx - k * v * vx * dt
        vy = vy - (9.81 + k * v * vy) * dt
        x = x + vx * dt
        y = y + vy * dt
    return x_prev + (x - x_prev) * y_prev / (y_prev - y)


def verlet_chain(x0, v0, k, alpha=0.3, dt=0.05, steps=12):
    # an anharmonic chain (FPU-alpha) with fixed ends by velocity Verlet
    def force(x):
        xp = np.concatenate([np.zeros(1), x, np.zeros(1)])
        d = np.diff(xp)
        f_bond = k * d + alpha * d ** 2
        return f_bond[1:] - f_bond[:-1]

    x, v = x0, v0
    a = force(x)
    for s in range(steps):
        x = x + v * dt + 0.5 * a * dt ** 2
        a_new = force(x)
        v = v + 0.5 * (a + a_new) * dt
        a = a_new
    energy = 0.5 * np.sum(v ** 2)
    return x, energy


def euler_rigid_body(w0, I, dt=0.02, steps=15):
    # torque-free Euler equations by RK4
    def rhs(w):
        return np.array([(I[1] - I[2]) / I[0] * w[1] * w[2],
                         (I[2] - I[0]) / I[1] * w[2] * w[0],
                         (I[0] - I[1]) / I[2] * w[0] * w[1]])

    w = w0
    for s in range(steps):
        k1 = rhs(w)
        k2 = rhs(w + dt / 2 * k1)
        k3 = rhs(w + dt / 2 * k2)
        k4 = rhs(w + dt * k3)
        w = w + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return w, 0.5 * np.sum(I * w ** 2)


def _qmul(q, r):
    w0, x0, y0, z0 = q[0], q[1], q[2], q[3]
    w1, x1, y1, z1 = r[0], r[1], r[2], r[3]
    return np.array([w0 * w1 - x0 * x1 - y0 * y1 - z0 * z1,
                     w0 * x1 + x0 * w1 + y0 * z1 - z0 * y1,
                     w0 * y1 - x0 * z1 + y0 * w1 + z0 * x1,
                     w0 * z1 + x0 * y1 - y0 * x1 + z0 * w1])


def quaternion_integrate(omega, v, dt=0.1, steps=8):
    # attitude kinematics q' = q (0, w) / 2, renormalized each step; a body vector rotated by the result
    q = np.array([1.0, 0.0, 0.0, 0.0])
    for s in range(steps):
        dq = 0.5 * _qmul(q, np.concatenate([np.zeros(1), omega]))
        q = q + dt * dq
        q = q / np.linalg.norm(q)
    qv = np.concatenate([np.zeros(1), v])
    qc = q * np.array([1.0, -1.0, -1.0, -1.0])
    return _qmul(_qmul(q, qv), qc)[1:]


def rodrigues_rotate(axis, theta, pts):
    k = axis / np.linalg.norm(axis)
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    R = np.eye(3) + np.sin(theta) * K + (1 - np.cos(theta)) * (K @ K)
    return pts @ R.T


def kuramoto(theta0, omega, K=1.5, dt=0.05, steps=10):
    theta = theta0
    N = theta.shape[0]
    for s in range(steps):
        diff = theta[None, :] - theta[:, None]
        theta = theta + dt * (omega + K / N * np.sum(np.sin(diff), axis=1))
    r = np.abs(np.mean(np.cos(theta))) + np.abs(np.mean(np.sin(theta)))
    return theta, r


def ising_mean_field(J, h, beta):
    # self-consistent magnetizations m = tanh(beta (J m + h)) by damped iteration
    m = np.zeros_like(h)
    for it in range(40):
        m = 0.5 * m + 0.5 * np.tanh(beta * (J @ m + h))
    return m


def shooting_secant(alpha):
    # y'' = -alpha (1 + y^2), y(0) = 0, y(1) = 1: secant on the initial slope, RK4 inside
    def endpoint(s):
        y, yp = 0.0, s
        h = 0.1
        for i in range(10):
            k1y, k1p = yp, -alpha * (1 + y ** 2)
            k2y, k2p = yp + h / 2 * k1p, -alpha * (1 + (y + h / 2 * k1y) ** 2)
            k3y, k3p = yp + h / 2 * k2p, -alpha * (1 + (y + h / 2 * k2y) ** 2)
            k4y, k4p = yp + h * k3p, -alpha * (1 + (y + h * k3y) ** 2)
            y = y + h / 6 * (k1y + 2 * k2y + 2 * k3y + k4y)
            yp = yp + h / 6 * (k1p + 2 * k2p + 2 * k3p + k4p)
        return y - 1.0

    s0, s1 = 0.5, 2.0
    f0, f1 = endpoint(s0), endpoint(s1)
    for it in range(6):
        s2 = s1 - f1 * (s1 - s0) / (f1 - f0)
        s0, f0 = s1, f1
        s1, f1 = s2, endpoint(s2)
    return s1


def lotka_volterra(x0, p, dt=0.05, steps=20):
    a, b, c, d = p["a"], p["b"], p["c"], p["d"]
    prey, pred = x0[0], x0[1]
    traj = np.zeros((steps, 2))
    for i in range(steps):
        dprey = a * prey - b * prey * pred
        dpred = d * prey * pred - c * pred
        prey = prey + dt * dprey
        pred = pred + dt * dpred
        traj[i, 0] = prey
        traj[i, 1] = pred
    return traj


# == signal and image processing ====================================================================================


def fir_loops(b, x):
    N = x.shape[0]
    M = b.shape[0]
    y = np.zeros(N)
    for n in range(N):
        acc = 0.0
        for k in range(M):
            if n - k >= 0:
                acc += b[k] * x[n - k]
        y[n] = acc
    return y


def one_pole_dc_block(x, a, R=0.95):
    # a one-pole lowpass y[n] = (1 - a) x[n] + a y[n-1], then a DC blocker
    y = np.zeros_like(x)
    prev = 0.0
    for n in range(x.shape[0]):
        prev = (1 - a) * x[n] + a * prev
        y[n] = prev
    z = np.zeros_like(y)
    for n in range(1, y.shape[0]):
        z[n] = y[n] - y[n - 1] + R * z[n - 1]
    return z


def decimate_fir(x, h, q=2):
    y = np.convolve(x, h, mode="same")
    return y[::q]


def dft_loops(x):
    N = x.shape[0]
    re = np.zeros(N)
    im = np.zeros(N)
    for k in range(N):
        for n in range(N):
            re[k] += x[n] * np.cos(2 * np.pi * k * n / N)
            im[k] -= x[n] * np.sin(2 * np.pi * k * n / N)
    return np.sqrt(re ** 2 + im ** 2 + 1e-12)


def envelope_follower(x, attack, release=0.9):
    env = 0.0
    out = []
    for n in range(x.shape[0]):
        level = np.abs(x[n])
        if level > env:
            env = attack * env + (1 - attack) * level
        else:
            env = release * env + (1 - release) * level
        out.append(env)
    return np.stack(out)


def conv2d_slices(img, k):
    # valid 2D correlation by summing shifted slices
    H, W = img.shape
    kh, kw = k.shape
    out = np.zeros((H - kh + 1, W - kw + 1))
    for i in range(kh):
        for j in range(kw):
            out = out + k[i, j] * img[i:i + H - kh + 1, j:j + W - kw + 1]
    return out


def gradient_direction(img):
    gx = (img[1:-1, 2:] - img[1:-1, :-2]) * 0.5
    gy = (img[2:, 1:-1] - img[:-2, 1:-1]) * 0.5
    mag = np.sqrt(gx ** 2 + gy ** 2 + 1e-8)
    ang = np.arctan2(gy, gx)
    sector = np.round(ang / (np.pi / 4)) % 4
    return np.sum(mag * (sector == 0)) + 0.5 * np.sum(mag * (sector == 2)), mag


def pool_max_avg(x):
    H, W = x.shape
    blocks = x.reshape(H // 2, 2, W // 2, 2)
    mx = blocks.max(axis=(1, 3))
    av = blocks.mean(axis=(1, 3))
    return mx, av


def moving_average_conv(x, w=3):
    kernel = np.ones(w) / w
    sma = np.convolve(x, kernel, mode="valid")
    cs = np.cumsum(np.insert(x, 0, 0.0))
    sma2 = (cs[w:] - cs[:-w]) / w
    return sma + sma2


def kalman_cv(zs, q, r=0.5, dt=1.0):
    # a constant-velocity Kalman filter over scalar positions with its log-likelihood
    F = np.array([[1.0, dt], [0.0, 1.0]])
    Hm = np.array([[1.0, 0.0]])
    Q = q * np.array([[dt ** 3 / 3, dt ** 2 / 2], [dt ** 2 / 2, dt]])
    x = np.array([zs[0], 0.0])
    P = np.eye(2)
    ll = 0.0
    xs = []
    for t in range(1, zs.shape[0]):
        x = F @ x
        P = F @ P @ F.T + Q
        y = zs[t] - Hm @ x
        S = Hm @ P @ Hm.T + r
        K = P @ Hm.T / S
        x = x + (K * y).ravel()
        P = (np.eye(2) - K @ Hm) @ P
        ll = ll - 0.5 * (np.log(2 * np.pi * S[0, 0]) + y[0] ** 2 / S[0, 0])
        xs.append(x[0])
    return np.array(xs), ll


def particle_filter_step(particles, weights, z, noise, u):
    # propagate on given noise, reweight by a Gaussian likelihood, systematic resampling on a given uniform
    N = particles.shape[0]
    particles = particles + 0.1 + 0.2 * noise
    w = weights * np.exp(-0.5 * (z - particles) ** 2 / 0.25)
    w = w / np.sum(w)
    n_eff = 1.0 / np.sum(w ** 2)
    positions = (np.arange(N) + u) / N
    idx = np.searchsorted(np.cumsum(w), positions)
    idx = np.minimum(idx, N - 1)
    return particles[idx], np.sum(w * particles), n_eff


def ekf_localization(x, P, u, z, landmarks, dt=0.1):
    # PythonRobotics' EKF: unicycle motion, range observations to known landmarks
    th = x[2]
    xp = x + dt * np.array([u[0] * np.cos(th), u[0] * np.sin(th), u[1]])
    Fj = np.array([[1.0, 0.0, -dt * u[0] * np.sin(th)],
                   [0.0, 1.0, dt * u[0] * np.cos(th)],
                   [0.0, 0.0, 1.0]])
    P = Fj @ P @ Fj.T + 0.01 * np.eye(3)
    for i in range(landmarks.shape[0]):
        dx = landmarks[i, 0] - xp[0]
        dy = landmarks[i, 1] - xp[1]
        rng = np.sqrt(dx ** 2 + dy ** 2)
        Hj = np.array([[-dx / rng, -dy / rng, 0.0]])
        S = Hj @ P @ Hj.T + 0.04
        K = P @ Hj.T / S
        xp = xp + K[:, 0] * (z[i] - rng)
        P = (np.eye(3) - K @ Hj) @ P
    return xp, np.trace(P)


def bilateral_1d(x, sigma_r, sigma_s=1.5, radius=2):
    N = x.shape[0]
    out = np.zeros(N)
    for i in range(N):
        num = 0.0
        den = 0.0
        for d in range(-radius, radius + 1):
            j = i + d
            if 0 <= j < N:
                w = np.exp(-d ** 2 / (2 * sigma_s ** 2) - (x[j] - x[i]) ** 2 / (2 * sigma_r ** 2))
                num = num + w * x[j]
                den = den + w
        out[i] = num / den
    return out


def lucas_kanade(I0, I1):
    Ix = 0.5 * (I0[1:-1, 2:] - I0[1:-1, :-2])
    Iy = 0.5 * (I0[2:, 1:-1] - I0[:-2, 1:-1])
    It = I1[1:-1, 1:-1] - I0[1:-1, 1:-1]
    A = np.array([[np.sum(Ix * Ix), np.sum(Ix * Iy)], [np.sum(Ix * Iy), np.sum(Iy * Iy)]])
    b = -np.array([np.sum(Ix * It), np.sum(Iy * It)])
    return np.linalg.solve(A + 1e-3 * np.eye(2), b)


# == statistics and ML from scratch =================================================================================


def _rbf(A, B, ell, sf):
    d2 = np.sum(A ** 2, 1)[:, None] + np.sum(B ** 2, 1)[None, :] - 2 * A @ B.T
    return sf ** 2 * np.exp(-0.5 * d2 / ell ** 2)


def gp_posterior(X, y, Xs, ell, noise=0.1):
    K = _rbf(X, X, ell, 1.0) + noise ** 2 * np.eye(X.shape[0])
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    Ks = _rbf(X, Xs, ell, 1.0)
    mu = Ks.T @ alpha
    v = np.linalg.solve(L, Ks)
    var = 1.0 - np.sum(v ** 2, axis=0)
    nlml = 0.5 * y @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * X.shape[0] * np.log(2 * np.pi)
    return mu, var, nlml


def poisson_irls(X, y, iters=5):
    w = np.zeros(X.shape[1])
    for it in range(iters):
        eta = X @ w
        mu = np.exp(eta)
        H = X.T @ (mu[:, None] * X) + 1e-3 * np.eye(X.shape[1])
        g = X.T @ (y - mu)
        w = w + np.linalg.solve(H, g)
    return w


def kmeans_guarded(X, C, steps=3):
    K = C.shape[0]
    for s in range(steps):
        d = np.sum((X[:, None, :] - C[None, :, :]) ** 2, axis=-1)
        labels = np.argmin(d, axis=1)
        newC = np.zeros_like(C)
        for k in range(K):
            mask = labels == k
            count = np.sum(mask)
            if count > 0:
                newC[k] = np.sum(X * mask[:, None], axis=0) / count
            else:
                newC[k] = C[k]
        C = newC
    inertia = np.sum(np.min(np.sum((X[:, None, :] - C[None, :, :]) ** 2, axis=-1), axis=1))
    return C, inertia


def pca_eigh(X, k=2):
    Xc = X - X.mean(axis=0)
    cov = Xc.T @ Xc / (X.shape[0] - 1)
    vals, vecs = np.linalg.eigh(cov)
    order = np.argsort(vals)[::-1]
    W = vecs[:, order[:k]]
    recon = Xc @ W @ W.T
    return np.sum((Xc - recon) ** 2), vals[order] / np.sum(vals)


def pca_svd(X):
    Xc = X - np.mean(X, axis=0, keepdims=True)
    U, S, Vt = np.linalg.svd(Xc, full_matrices=False)
    explained = S ** 2 / np.sum(S ** 2)
    proj = Xc @ Vt[:1].T @ Vt[:1]
    return explained, np.sum(proj ** 2)


def gmm_em_2d(X, mu, steps=3):
    # EM for a 2-component 2D Gaussian mixture with full covariances (det and inv by hand)
    N = X.shape[0]
    K = mu.shape[0]
    pi = np.ones(K) / K
    cov = np.stack([np.eye(2), np.eye(2)])
    for s in range(steps):
        logp = np.zeros((N, K))
        for k in range(K):
            S = cov[k]
            det = S[0, 0] * S[1, 1] - S[0, 1] * S[1, 0]
            inv = np.array([[S[1, 1], -S[0, 1]], [-S[1, 0], S[0, 0]]]) / det
            d = X - mu[k]
            maha = np.sum((d @ inv) * d, axis=1)
            logp[:, k] = np.log(pi[k]) - 0.5 * maha - 0.5 * np.log(det) - np.log(2 * np.pi)
        m = np.max(logp, axis=1, keepdims=True)
        r = np.exp(logp - m)
        r = r / np.sum(r, axis=1, keepdims=True)
        Nk = np.sum(r, axis=0)
        pi = Nk / N
        mu = (r.T @ X) / Nk[:, None]
        covs = []
        for k in range(K):
            d = X - mu[k]
            covs.append((r[:, k, None] * d).T @ d / Nk[k] + 1e-3 * np.eye(2))
        cov = np.stack(covs)
    return mu, pi


def softmax_regression_gd(W, X, y, lr=0.5, steps=4):
    N, C = X.shape[0], W.shape[1]
    Y = np.eye(C)[y]
    for s in range(steps):
        logits = X @ W
        logits = logits - logits.max(axis=1, keepdims=True)
        P = np.exp(logits)
        P /= P.sum(axis=1, keepdims=True)
        grad_W = X.T @ (P - Y) / N
        W = W - lr * grad_W
    logits = X @ W
    lse = np.log(np.sum(np.exp(logits - logits.max(1, keepdims=True)), 1)) + logits.max(1)
    return np.mean(lse - logits[np.arange(N), y])


def adaline(X, y, w0, eta=0.05, epochs=5):
    w = w0.copy()
    costs = []
    for e in range(epochs):
        output = X @ w[1:] + w[0]
        errors = y - output
        w[1:] += eta * X.T @ errors
        w[0] += eta * errors.sum()
        costs.append((errors ** 2).sum() / 2.0)
    return w, np.array(costs)


def kde_silverman(data, x):
    n = data.shape[0]
    h = 1.06 * np.std(data) * n ** (-1 / 5)
    u = (x[:, None] - data[None, :]) / h
    return np.sum(np.exp(-0.5 * u ** 2), axis=1) / (n * h * np.sqrt(2 * np.pi))


def hotelling_t2(X, mu0):
    n = X.shape[0]
    xbar = X.mean(axis=0)
    S = np.cov(X, rowvar=False)
    d = xbar - mu0
    return n * d @ np.linalg.solve(S, d)


def ridge_kfold(X, y, lam, folds=3):
    n = X.shape[0]
    m = n // folds
    err = 0.0
    for f in range(folds):
        te = slice(f * m, (f + 1) * m)
        Xtr = np.concatenate([X[:f * m], X[(f + 1) * m:]])
        ytr = np.concatenate([y[:f * m], y[(f + 1) * m:]])
        w = np.linalg.solve(Xtr.T @ Xtr + lam * np.eye(X.shape[1]), Xtr.T @ ytr)
        err = err + np.mean((X[te] @ w - y[te]) ** 2)
    return err / folds


def knn_soft_vote(Xtr, ytr, Xq, k=3, n_classes=3):
    d = np.sqrt(np.sum((Xq[:, None, :] - Xtr[None, :, :]) ** 2, axis=-1))
    idx = np.argsort(d, axis=1)[:, :k]
    dk = np.take_along_axis(d, idx, axis=1)
    w = 1.0 / (dk + 1e-3)
    votes = np.zeros((Xq.shape[0], n_classes))
    for j in range(k):
        votes[np.arange(Xq.shape[0]), ytr[idx[:, j]]] += w[:, j]
    return votes / np.sum(votes, axis=1, keepdims=True)


def logistic_newton_while(X, y, tol=1e-8):
    w = np.zeros(X.shape[1])
    step = np.ones(X.shape[1])
    it = 0
    while np.linalg.norm(step) > tol and it < 15:
        p = 1.0 / (1.0 + np.exp(-X @ w))
        g = X.T @ (p - y) + 0.1 * w
        Hs = X.T @ (X * (p * (1 - p))[:, None]) + 0.1 * np.eye(X.shape[1])
        step = np.linalg.solve(Hs, g)
        w = w - step
        it += 1
    return w


# == reinforcement learning (Sutton and Barto) ======================================================================


def value_iteration(P, R, gamma=0.9, sweeps=25):
    # P[s, a, s'], R[s, a]
    S, A = R.shape
    V = np.zeros(S)
    for k in range(sweeps):
        Qsa = R + gamma * np.einsum("ijk,k->ij", P, V)
        V = np.max(Qsa, axis=1)
    policy = np.argmax(R + gamma * P @ V, axis=1)
    return V, policy


def policy_evaluation_while(P_pi, r_pi, gamma=0.9, theta=1e-5):
    V = np.zeros_like(r_pi)
    delta = 1.0
    while delta > theta:
        V_new = r_pi + gamma * P_pi @ V
        delta = np.max(np.abs(V_new - V))
        V = V_new
    return V


def td_lambda(V0, states, rewards, alpha, gamma=0.9, lam=0.8):
    V = V0.copy()
    z = np.zeros_like(V)
    for t in range(len(rewards)):
        s, s1 = states[t], states[t + 1]
        delta = rewards[t] + gamma * V[s1] - V[s]
        z = gamma * lam * z
        z[s] += 1.0
        V = V + alpha * delta * z
    return V


def q_learning_episode(Q0, states, actions, rewards, alpha=0.5, gamma=0.95):
    Q = Q0.copy()
    for t in range(len(actions)):
        s, a, s1 = states[t], actions[t], states[t + 1]
        target = rewards[t] + gamma * np.max(Q[s1])
        Q[s, a] += alpha * (target - Q[s, a])
    return Q


def gae_reversed(rewards, values, dones, gamma=0.99, lam=0.95):
    T = rewards.shape[0]
    adv = np.zeros(T)
    last = 0.0
    for t in reversed(range(T)):
        nonterminal = 1.0 - dones[t]
        delta = rewards[t] + gamma * values[t + 1] * nonterminal - values[t]
        last = delta + gamma * lam * nonterminal * last
        adv[t] = last
    returns = adv + values[:-1]
    return adv, returns


def reinforce_loss(theta, feats, actions, rewards, gamma=0.9):
    # softmax policy over given features; returns-to-go by a reversed loop, normalized
    T = rewards.shape[0]
    G = np.zeros(T)
    running = 0.0
    for t in range(T - 1, -1, -1):
        running = rewards[t] + gamma * running
        G[t] = running
    G = (G - G.mean()) / (G.std() + 1e-8)
    logits = feats @ theta
    logp = logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
    return -np.sum(logp[np.arange(T), actions] * G)


# == finance and economics ==========================================================================================


def _ncdf(x):
    return 0.5 * (1.0 + lax.erf(x / np.sqrt(2.0)))


def black_scholes(S, K, T, r, sigma):
    d1 = (np.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * np.sqrt(T))
    d2 = d1 - sigma * np.sqrt(T)
    call = S * _ncdf(d1) - K * np.exp(-r * T) * _ncdf(d2)
    put = call - S + K * np.exp(-r * T)
    return call, put


def trinomial_tree(S0, sigma, K=1.0, T=1.0, r=0.03, N=6):
    dt = T / N
    u = np.exp(sigma * np.sqrt(2 * dt))
    a = np.exp(r * dt / 2)
    b = np.exp(sigma * np.sqrt(dt / 2))
    pu = ((a - 1 / b) / (b - 1 / b)) ** 2
    pd = ((b - a) / (b - 1 / b)) ** 2
    pm = 1 - pu - pd
    j = np.arange(-N, N + 1)
    V = np.maximum(S0 * u ** j - K, 0.0)
    disc = np.exp(-r * dt)
    for i in range(N):
        V = disc * (pu * V[2:] + pm * V[1:-1] + pd * V[:-2])
    return V[0]


def bond_analytics(fwd, cf):
    # discount factors from forward rates by cumprod; price, Macaulay duration, convexity
    t = np.arange(1, fwd.shape[0] + 1)
    df = np.cumprod(1.0 / (1.0 + fwd))
    pv = cf * df
    price = np.sum(pv)
    duration = np.sum(t * pv) / price
    convexity = np.sum(t * (t + 1) * pv) / price
    return price, duration, convexity


def nelson_siegel_loss(beta, tau, mats, yields):
    x = mats / tau
    f1 = (1 - np.exp(-x)) / x
    f2 = f1 - np.exp(-x)
    model = beta[0] + beta[1] * f1 + beta[2] * f2
    return np.mean((model - yields) ** 2)


def vasicek_paths(r0, kappa, theta, Z, sigma=0.02, dt=0.25):
    n_paths, n_steps = Z.shape
    r = r0 * np.ones(n_paths)
    integral = np.zeros(n_paths)
    for t in range(n_steps):
        integral = integral + r * dt
        r = r + kappa * (theta - r) * dt + sigma * np.sqrt(dt) * Z[:, t]
    return np.mean(np.exp(-integral))


def mortgage_schedule(principal, rate, n=6, extra=0.0):
    pmt = principal * rate / (1 - (1 + rate) ** (-n))
    balance = principal
    interest_paid = 0.0
    bal = np.zeros(n)
    for k in range(n):
        interest = balance * rate
        interest_paid = interest_paid + interest
        balance = balance - (pmt - interest) - extra
        bal[k] = balance
    return bal, interest_paid


def solow(k0, s, alpha=0.33, delta=0.1, n_growth=0.01, T=20):
    k = k0
    path = np.zeros(T)
    for t in range(T):
        k = (s * k ** alpha + (1 - delta) * k) / (1 + n_growth)
        path[t] = k
    k_star = (s / (delta + n_growth)) ** (1 / (1 - alpha))
    return path, k_star


def mccall_vfi(w, q, c=25.0, beta=0.99, tol=1e-6):
    # QuantEcon's McCall job search: v = max(w / (1 - beta), c + beta sum(v q)), until the error is small
    v = w / (1 - beta)
    error = tol + 1
    i = 0
    while error > tol and i < 2000:
        accept = w / (1 - beta)
        reject = c + beta * np.sum(v * q)
        v_new = np.maximum(accept, reject)
        error = np.max(np.abs(v_new - v))
        v = v_new
        i += 1
    return (1 - beta) * (c + beta * np.sum(v * q))


def stationary_power(P, tol=1e-6):
    psi = np.ones(P.shape[0]) / P.shape[0]
    diff = 1.0
    while diff > tol:
        new = psi @ P
        diff = np.sum(np.abs(new - psi))
        psi = new
    return psi


def euler_residual(c, R, gamma, beta=0.96):
    # CRRA consumption Euler equation residuals over a consumption path
    mu = c ** (-gamma)
    res = beta * R * mu[1:] / mu[:-1] - 1.0
    return np.sum(res ** 2), res


# == more: dict hyperparameters, fori_loop bodies, online statistics, spectral methods, risk ========================


def gp_dict_hyper(hyp, X, y):
    # a GP's negative log marginal likelihood over a dict of log hyperparameters
    ell = np.exp(hyp["log_ell"])
    sf = np.exp(hyp["log_sf"])
    sn = np.exp(hyp["log_sn"])
    K = _rbf(X, X, ell, sf) + sn ** 2 * np.eye(X.shape[0])
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L)))


def heat_fori(u0, kappa, steps=6):
    def body(i, u):
        u_new = u.copy()
        u_new[1:-1] = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
        return u_new

    return lax.fori_loop(0, steps, body, u0)


def welford_stats(x):
    # Welford's online mean and variance, one sample at a time
    n = 0
    mean = 0.0
    M2 = 0.0
    for i in range(x.shape[0]):
        n += 1
        delta = x[i] - mean
        mean += delta / n
        M2 += delta * (x[i] - mean)
    return mean, M2 / (n - 1)


def spectral_derivative(u, L=2 * np.pi):
    N = u.shape[0]
    k = 2 * np.pi / L * np.fft.rfftfreq(N, d=1.0 / N)
    du = np.fft.irfft(1j * k * np.fft.rfft(u), n=N)
    return du


def cheb_diff(f_vals):
    # Trefethen's cheb: the Chebyshev differentiation matrix, applied to samples at the Chebyshev points
    N = f_vals.shape[0] - 1
    x = np.cos(np.pi * np.arange(N + 1) / N)
    c = np.hstack([2.0, np.ones(N - 1), 2.0]) * (-1.0) ** np.arange(N + 1)
    X = np.tile(x, (N + 1, 1)).T
    dX = X - X.T
    D = np.outer(c, 1.0 / c) / (dX + np.eye(N + 1))
    D = D - np.diag(np.sum(D, axis=1))
    return D @ f_vals


def gbm_lookback(S0, sigma, Z, r=0.02, dt=0.1):
    # geometric Brownian motion on given normals; a floating-strike lookback call by a running minimum
    incr = (r - 0.5 * sigma ** 2) * dt + sigma * np.sqrt(dt) * Z
    paths = S0 * np.exp(np.cumsum(incr, axis=1))
    running_min = np.minimum.accumulate(paths, axis=1)
    payoff = paths[:, -1] - running_min[:, -1]
    return np.exp(-r * dt * Z.shape[1]) * np.mean(payoff)


def max_drawdown(returns):
    wealth = np.cumprod(1.0 + returns)
    peak = np.maximum.accumulate(wealth)
    dd = (peak - wealth) / peak
    return np.max(dd), wealth


def ewma_vol(returns, lam=0.94):
    # RiskMetrics' exponentially weighted variance by a loop, annualized
    var = returns[0] ** 2
    out = np.zeros_like(returns)
    out[0] = var
    for t in range(1, returns.shape[0]):
        var = lam * var + (1 - lam) * returns[t - 1] ** 2
        out[t] = var
    return np.sqrt(252 * out)


def sor_until_converged(A, b, omega=1.1, tol=1e-5):
    # SOR sweeps by index until the residual is small (no iteration cap: a `while` on data around a static loop)
    x = np.zeros_like(b)
    res = np.linalg.norm(b)
    while res > tol:
        for i in range(b.shape[0]):
            x[i] = x[i] + omega * (b[i] - A[i] @ x) / A[i, i]
        res = np.linalg.norm(b - A @ x)
    return x


def bisect_tol_break(a):
    # bisection for sqrt(a) that stops when the midpoint is good enough (the midpoint first bound in the loop)
    lo, hi = 0.0, 2.0
    for i in range(60):
        mid = 0.5 * (lo + hi)
        fm = mid * mid - a
        if np.abs(fm) < 1e-9:
            break
        if fm > 0:
            hi = mid
        else:
            lo = mid
    return mid


def rk4_rate_keyword(y0, k, dt=0.1, n_steps=5):
    # a nested right-hand side with a default rate, called with the rate by keyword
    def rhs(y, k=1.0):
        return -k * y + np.sin(y)

    y = y0
    for i in range(n_steps):
        k1 = rhs(y, k=k)
        k2 = rhs(y + dt / 2 * k1, k=k)
        k3 = rhs(y + dt / 2 * k2, k=k)
        k4 = rhs(y + dt * k3, k=k)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y
