"""Programs srcjax had not seen (hunt 16): the corpus of tests/test_hunt16_programs.py.

Real NumPy code ported to the function a user hands to srcjax, in its authors' style: dynamic programming on
arrays (Levenshtein with float costs, DTW with ``np.inf`` borders, soft-DTW's softmin, the CTC forward pass in log
space with ``np.logaddexp``, Smith-Waterman with ``max(0, ...)``, a 0/1 knapsack over integer weights); signal
processing (a biquad in direct form II transposed, Goertzel, Levinson-Durbin, autocorrelation by
``np.correlate(..., 'full')``, window functions, overlap-add of given frames, ``np.convolve`` modes, a
Savitzky-Golay fit by ``np.vander``); optimization routines (BFGS with its inverse-Hessian update, Nelder-Mead
from a given simplex, a dogleg trust-region step, Duchi's l1-ball projection by sort and cumsum, Newton with an
Armijo ``while``); robotics and graphics (quaternion slerp and matrices, Euler angles by ``arctan2``, a planar arm's
forward kinematics and damped least-squares IK, ray-sphere intersection by ``np.where``, barycentric coordinates,
Phong shading, a look-at camera with a perspective divide); differentiable physics (SPH density with the cubic
spline kernel, a lattice Boltzmann D2Q9 step by ``np.roll``, cloth springs on a grid, an XY model's energy,
Gray-Scott reaction-diffusion); economics (value function iteration with a max over a grid, a CES/Cobb-Douglas
consumer); Bayesian code (Metropolis with given uniforms, log-mean-exp importance weights, a leapfrog trajectory
with a Metropolis correction); hand-written linear algebra (Gaussian elimination with row swaps by fancy
indexing, Cholesky-Banachiewicz by loops, modified Gram-Schmidt, Lanczos, Jacobi eigenvalue rotations, inverse
iteration with a Rayleigh quotient); and NumPy idioms scripts use (``np.select``, ``np.piecewise``,
``np.digitize``, ``np.searchsorted(side=...)``, ``np.bincount(minlength=, weights=)``, ``np.histogram`` with fixed
bins, ``argsort``/``take_along_axis``/``put_along_axis``, ``np.lexsort``, ``cumprod``, ``np.diff(n=2)``,
``np.gradient`` with spacing, ``np.trapezoid``, ``np.polyval``/``np.polyder``, ``np.kron``, ``tril``/``triu``
with ``k=``, ``meshgrid(indexing='ij')``, ``broadcast_to``, ``split``/``array_split``, ``column_stack``/``dstack``,
``np.pad`` modes, ``clip`` with arrays, ``nan_to_num``, ``isclose``, fancy indexing with negative and repeated
indices, masks with ``&``/``|``/``~``, ``//`` and ``%`` on negative numbers, int/float mixes, ``keepdims``, axis
tuples and ``ddof``).
"""

# ruff: noqa: B007, E741, N803, N806 - (the authors' style: `for i in range(n):`, `l`, `A`, `K`, `F`)

from __future__ import annotations

import numpy as np

# -- dynamic programming on arrays --------------------------------------------------------------------------


def weighted_edit_distance(sub, ins_cost, del_cost):
    # Wagner-Fischer with a substitution-cost matrix sub[i, j] (float costs of a soft alignment)
    n, m = sub.shape
    D = np.zeros((n + 1, m + 1))
    for i in range(1, n + 1):
        D[i, 0] = D[i - 1, 0] + del_cost
    for j in range(1, m + 1):
        D[0, j] = D[0, j - 1] + ins_cost
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            D[i, j] = min(D[i - 1, j] + del_cost, D[i, j - 1] + ins_cost, D[i - 1, j - 1] + sub[i - 1, j - 1])
    return D[n, m]


def dtw_distance(x, y):
    # the textbook DTW: a cost matrix with an infinite border, three-way np.minimum
    n, m = len(x), len(y)
    dtw = np.full((n + 1, m + 1), np.inf)
    dtw[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = (x[i - 1] - y[j - 1]) ** 2
            dtw[i, j] = cost + np.minimum(np.minimum(dtw[i - 1, j], dtw[i, j - 1]), dtw[i - 1, j - 1])
    return np.sqrt(dtw[n, m])


def soft_dtw(X, Y, gamma=0.5):
    # Cuturi & Blondel's soft-DTW (the reference Python of mblondel/soft-dtw): R with an inf border, softmin
    D = np.sum((X[:, None, :] - Y[None, :, :]) ** 2, axis=-1)
    m, n = D.shape
    R = np.zeros((m + 2, n + 2))
    R[:, 0] = np.inf
    R[0, :] = np.inf
    R[0, 0] = 0.0
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            r0 = -R[i - 1, j - 1] / gamma
            r1 = -R[i - 1, j] / gamma
            r2 = -R[i, j - 1] / gamma
            rmax = max(max(r0, r1), r2)
            rsum = np.exp(r0 - rmax) + np.exp(r1 - rmax) + np.exp(r2 - rmax)
            softmin = -gamma * (np.log(rsum) + rmax)
            R[i, j] = D[i - 1, j - 1] + softmin
    return R[m, n]


def ctc_loss(log_probs, labels, blank=0):
    # awni/speech's ctc_fast in NumPy: alphas over the extended label sequence, in log space
    T = log_probs.shape[0]
    L = 2 * len(labels) + 1
    ext = np.full(L, blank)
    ext[1::2] = labels
    alphas = np.full((T, L), -np.inf)
    alphas[0, 0] = log_probs[0, blank]
    alphas[0, 1] = log_probs[0, ext[1]]
    for t in range(1, T):
        for s in range(L):
            a = alphas[t - 1, s]
            if s > 0:
                a = np.logaddexp(a, alphas[t - 1, s - 1])
            if s > 1 and ext[s] != blank and ext[s] != ext[s - 2]:
                a = np.logaddexp(a, alphas[t - 1, s - 2])
            alphas[t, s] = a + log_probs[t, ext[s]]
    return -np.logaddexp(alphas[T - 1, L - 1], alphas[T - 1, L - 2])


def smith_waterman(S, gap=0.6):
    # local alignment score: H[i, j] = max(0, diagonal + s, up - gap, left - gap)
    n, m = S.shape
    H = np.zeros((n + 1, m + 1))
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            H[i, j] = np.max(np.array([0.0, H[i - 1, j - 1] + S[i - 1, j - 1], H[i - 1, j] - gap, H[i, j - 1] - gap]))
    return H.max()


def knapsack(values, weights, capacity=6):
    # 0/1 knapsack over integer weights (static), float values: V[i, w] as a rolling row
    n = len(values)
    V = np.zeros(capacity + 1)
    for i in range(n):
        wt = weights[i]
        for w in range(capacity, wt - 1, -1):
            V[w] = max(V[w], V[w - wt] + values[i])
    return V[capacity]


# -- signal processing --------------------------------------------------------------------------------------


def biquad_df2t(x, b, a):
    # a biquad section in direct form II transposed, one sample at a time (a[0] == 1)
    y = np.zeros_like(x)
    z1 = 0.0
    z2 = 0.0
    for n in range(len(x)):
        xn = x[n]
        yn = b[0] * xn + z1
        z1 = b[1] * xn - a[1] * yn + z2
        z2 = b[2] * xn - a[2] * yn
        y[n] = yn
    return y


def goertzel_power(x, k):
    # the Goertzel recurrence for DFT bin k (k static)
    N = len(x)
    w = 2 * np.pi * k / N
    coeff = 2 * np.cos(w)
    s_prev, s_prev2 = 0.0, 0.0
    for n in range(N):
        s = x[n] + coeff * s_prev - s_prev2
        s_prev2 = s_prev
        s_prev = s
    return s_prev2 ** 2 + s_prev ** 2 - coeff * s_prev * s_prev2


def goertzel_bins(x):
    return np.array([goertzel_power(x, k) for k in range(1, 4)])


def levinson_durbin(r, order=3):
    # Levinson-Durbin: LPC coefficients and prediction error from autocorrelations r[0..order]
    a = np.zeros(order + 1)
    a[0] = 1.0
    e = r[0]
    for i in range(1, order + 1):
        acc = r[i]
        for j in range(1, i):
            acc = acc + a[j] * r[i - j]
        k = -acc / e
        a_prev = a.copy()
        for j in range(1, i):
            a[j] = a_prev[j] + k * a_prev[i - j]
        a[i] = k
        e = e * (1 - k * k)
    return a, e


def lpc_from_signal(x, order=3):
    n = len(x)
    r = np.correlate(x, x, mode="full")[n - 1:n + order] / n
    a, e = levinson_durbin(r, order)
    return a[1:], e


def windowed_spectrum(x):
    # window functions as scripts build them: hann, hamming, blackman by formula and NumPy's own
    N = len(x)
    n = np.arange(N)
    hann = 0.5 - 0.5 * np.cos(2 * np.pi * n / (N - 1))
    blackman = 0.42 - 0.5 * np.cos(2 * np.pi * n / (N - 1)) + 0.08 * np.cos(4 * np.pi * n / (N - 1))
    frames = np.stack([x * hann, x * np.hamming(N), x * blackman, x * np.bartlett(N), x * np.hanning(N)])
    return np.sum(frames ** 2, axis=1) / np.sum(np.hanning(N) ** 2)


def overlap_add(frames, hop=2):
    # overlap-add of given frames with a synthesis window, normalized by the summed window squared
    n_frames, frame_len = frames.shape
    win = np.sin(np.pi * (np.arange(frame_len) + 0.5) / frame_len)
    out = np.zeros(hop * (n_frames - 1) + frame_len)
    norm = np.zeros_like(out)
    for i in range(n_frames):
        start = i * hop
        out[start:start + frame_len] += frames[i] * win
        norm[start:start + frame_len] += win ** 2
    return out / np.maximum(norm, 1e-8)


def convolve_modes(x, h):
    full = np.convolve(x, h)
    same = np.convolve(x, h, mode="same")
    valid = np.convolve(x, h, mode="valid")
    xc = np.correlate(x, h, mode="valid")
    return full.sum() + 2 * same @ same + valid[0] * valid[-1] + xc.max()


def savgol_smooth(y, window=5, polyorder=2):
    # Savitzky-Golay coefficients by least squares on a Vandermonde matrix, then a 'valid' convolution
    half = window // 2
    t = np.arange(-half, half + 1)
    A = np.vander(t, polyorder + 1, increasing=True)
    coeffs = np.linalg.pinv(A)[0]
    return np.convolve(y, coeffs[::-1], mode="valid")


def autocorr_normalized(x, maxlag=3):
    x = x - x.mean()
    c = np.correlate(x, x, mode="full")
    mid = len(x) - 1
    c = c[mid:mid + maxlag + 1]
    return c / c[0]


# -- optimization routines ----------------------------------------------------------------------------------


def _rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _rosen_grad(x):
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return g


def bfgs_quadratic(A, b, x0, iters=2):
    # BFGS with the inverse-Hessian update and an exact line search on 0.5 x'Ax - b'x
    n = len(x0)
    x = x0
    Hk = np.eye(n)
    g = A @ x - b
    for k in range(iters):
        p = -Hk @ g
        alpha = -(g @ p) / (p @ A @ p)
        s = alpha * p
        x = x + s
        g_new = A @ x - b
        yk = g_new - g
        rho = 1.0 / (yk @ s)
        I = np.eye(n)
        Hk = (I - rho * np.outer(s, yk)) @ Hk @ (I - rho * np.outer(yk, s)) + rho * np.outer(s, s)
        g = g_new
    return x


def nelder_mead(simplex, iters=8):
    # Nelder-Mead on Rosenbrock from a given simplex (reflection, expansion, contraction, shrink)
    sim = simplex.copy()
    fs = np.array([_rosen(v) for v in sim])
    for it in range(iters):
        order = np.argsort(fs)
        sim = sim[order]
        fs = fs[order]
        centroid = sim[:-1].mean(axis=0)
        xr = centroid + (centroid - sim[-1])
        fr = _rosen(xr)
        if fr < fs[0]:
            xe = centroid + 2.0 * (xr - centroid)
            fe = _rosen(xe)
            if fe < fr:
                sim[-1] = xe
                fs[-1] = fe
            else:
                sim[-1] = xr
                fs[-1] = fr
        elif fr < fs[-2]:
            sim[-1] = xr
            fs[-1] = fr
        else:
            xc = centroid + 0.5 * (sim[-1] - centroid)
            fc = _rosen(xc)
            if fc < fs[-1]:
                sim[-1] = xc
                fs[-1] = fc
            else:
                sim[1:] = sim[0] + 0.5 * (sim[1:] - sim[0])
                fs[1:] = np.array([_rosen(v) for v in sim[1:]])
    return sim[np.argmin(fs)]


def dogleg_step(g, B, delta):
    # the dogleg step of a trust region of radius delta
    pB = -np.linalg.solve(B, g)
    if np.linalg.norm(pB) <= delta:
        return pB
    pU = -(g @ g) / (g @ B @ g) * g
    if np.linalg.norm(pU) >= delta:
        return delta * pU / np.linalg.norm(pU)
    d = pB - pU
    a = d @ d
    bq = 2 * pU @ d
    c = pU @ pU - delta ** 2
    tau = (-bq + np.sqrt(bq ** 2 - 4 * a * c)) / (2 * a)
    return pU + tau * d


def l1_ball_projection(v, z=1.0):
    # Duchi et al. 2008: project onto the l1 ball of radius z by sort, cumsum and a last index
    u = np.sort(np.abs(v))[::-1]
    cssv = np.cumsum(u)
    ks = np.arange(1, len(v) + 1)
    cond = u * ks > (cssv - z)
    rho = np.nonzero(cond)[0][-1] + 1
    theta = (cssv[rho - 1] - z) / rho
    w = np.maximum(np.abs(v) - theta, 0.0)
    return np.sign(v) * w


def newton_armijo(x0, c1=1e-4, iters=5):
    # damped Newton on a smooth convex function with a backtracking (Armijo) while
    def f(x):
        return np.sum(np.exp(x) - x) + 0.5 * np.sum(x ** 2) + x[0] * x[-1]

    x = x0
    for _ in range(iters):
        g = np.exp(x) - 1 + x
        g[0] += x[-1]
        g[-1] += x[0]
        H = np.diag(np.exp(x) + 1)
        H[0, -1] += 1
        H[-1, 0] += 1
        p = -np.linalg.solve(H, g)
        t = 1.0
        while f(x + t * p) > f(x) + c1 * t * (g @ p):
            t *= 0.5
        x = x + t * p
    return f(x)


# -- robotics and graphics ----------------------------------------------------------------------------------


def quat_slerp(q0, q1, t):
    q0 = q0 / np.linalg.norm(q0)
    q1 = q1 / np.linalg.norm(q1)
    dot = np.sum(q0 * q1)
    if dot < 0.0:
        q1 = -q1
        dot = -dot
    theta0 = np.arccos(np.clip(dot, -1.0, 1.0))
    theta = theta0 * t
    q2 = q1 - q0 * dot
    q2 = q2 / np.linalg.norm(q2)
    return q0 * np.cos(theta) + q2 * np.sin(theta)


def quat_to_matrix_euler(q):
    # a unit quaternion's rotation matrix, then its ZYX Euler angles by arctan2/arcsin
    w, x, y, z = q / np.linalg.norm(q)
    R = np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])
    yaw = np.arctan2(R[1, 0], R[0, 0])
    pitch = np.arcsin(-np.clip(R[2, 0], -1.0, 1.0))
    roll = np.arctan2(R[2, 1], R[2, 2])
    return R, np.array([yaw, pitch, roll])


def planar_arm_fk(thetas, lengths):
    # forward kinematics of a planar arm: joint angles accumulate, positions are cumulative sums
    phi = np.cumsum(thetas)
    xs = np.cumsum(lengths * np.cos(phi))
    ys = np.cumsum(lengths * np.sin(phi))
    return np.stack([np.concatenate([[0.0], xs]), np.concatenate([[0.0], ys])], axis=1)


def planar_ik_dls(thetas, target, lam=0.1, iters=4):
    # damped least-squares IK with the arm's analytic Jacobian
    lengths = np.array([1.0, 0.8, 0.5])
    th = thetas.copy()
    for _ in range(iters):
        phi = np.cumsum(th)
        end = np.array([np.sum(lengths * np.cos(phi)), np.sum(lengths * np.sin(phi))])
        J = np.zeros((2, 3))
        for i in range(3):
            J[0, i] = -np.sum(lengths[i:] * np.sin(phi[i:]))
            J[1, i] = np.sum(lengths[i:] * np.cos(phi[i:]))
        e = target - end
        th = th + J.T @ np.linalg.solve(J @ J.T + lam ** 2 * np.eye(2), e)
    return th


def ray_sphere(origins, dirs, center, radius):
    # nearest hit distance of each ray with a sphere (np.inf where it misses), as a ray tracer writes it
    d = dirs / np.linalg.norm(dirs, axis=1, keepdims=True)
    oc = origins - center
    b = 2.0 * np.sum(oc * d, axis=1)
    c = np.sum(oc * oc, axis=1) - radius ** 2
    disc = b * b - 4 * c
    sq = np.sqrt(np.maximum(disc, 0.0))
    t0 = (-b - sq) / 2.0
    t1 = (-b + sq) / 2.0
    t = np.where(t0 > 1e-6, t0, t1)
    hit = (disc > 0) & (t > 1e-6)
    return np.where(hit, t, np.inf)


def ray_sphere_shade(origins, dirs, center, radius):
    t = ray_sphere(origins, dirs, center, radius)
    return np.sum(np.where(np.isfinite(t), np.exp(-t), 0.0))


def barycentric(p, a, b, c):
    # barycentric coordinates of points p (n, 2) in the triangle abc (Ericson's Real-Time Collision Detection)
    v0, v1 = b - a, c - a
    v2 = p - a
    d00 = v0 @ v0
    d01 = v0 @ v1
    d11 = v1 @ v1
    d20 = v2 @ v0
    d21 = v2 @ v1
    denom = d00 * d11 - d01 * d01
    v = (d11 * d20 - d01 * d21) / denom
    w = (d00 * d21 - d01 * d20) / denom
    u = 1.0 - v - w
    return np.stack([u, v, w], axis=-1)


def phong_shading(normals, light_pos, points, shininess=8.0):
    n = normals / np.linalg.norm(normals, axis=-1, keepdims=True)
    l = light_pos - points
    l /= np.linalg.norm(l, axis=-1, keepdims=True)
    v = -points / np.linalg.norm(points, axis=-1, keepdims=True)
    ndotl = np.sum(n * l, axis=-1)
    r = 2 * ndotl[:, None] * n - l
    spec = np.maximum(np.sum(r * v, axis=-1), 0.0) ** shininess
    diffuse = np.clip(ndotl, 0.0, None)
    return 0.1 + 0.6 * diffuse + 0.3 * np.where(ndotl > 0, spec, 0.0)


def look_at_project(points, eye, f=1.5):
    # a look-at camera toward the origin, then a perspective divide
    target = np.zeros(3)
    up = np.array([0.0, 1.0, 0.0])
    zaxis = eye - target
    zaxis = zaxis / np.linalg.norm(zaxis)
    xaxis = np.cross(up, zaxis)
    xaxis = xaxis / np.linalg.norm(xaxis)
    yaxis = np.cross(zaxis, xaxis)
    view = np.eye(4)
    view[0, :3], view[1, :3], view[2, :3] = xaxis, yaxis, zaxis
    view[:3, 3] = -view[:3, :3] @ eye
    hom = np.hstack([points, np.ones((len(points), 1))])
    cam = hom @ view.T
    return f * cam[:, :2] / -cam[:, 2:3]


# -- differentiable physics ---------------------------------------------------------------------------------


def sph_density(pos, mass, h=1.0):
    # SPH density with Monaghan's cubic spline kernel (2D normalization), piecewise by np.where
    r = np.sqrt(np.sum((pos[:, None, :] - pos[None, :, :]) ** 2, axis=-1) + 1e-12)
    q = r / h
    sigma = 10.0 / (7.0 * np.pi * h ** 2)
    W = sigma * np.where(q < 1.0, 1 - 1.5 * q ** 2 + 0.75 * q ** 3,
                         np.where(q < 2.0, 0.25 * (2 - q) ** 3, 0.0))
    return W @ mass


def lbm_d2q9(F, tau=0.8, steps=2):
    # Philip Mocz's lattice Boltzmann: stream by np.roll per direction, then BGK collision
    cxs = np.array([0, 0, 1, 1, 1, 0, -1, -1, -1])
    cys = np.array([0, 1, 1, 0, -1, -1, -1, 0, 1])
    weights = np.array([4 / 9, 1 / 9, 1 / 36, 1 / 9, 1 / 36, 1 / 9, 1 / 36, 1 / 9, 1 / 36])
    for it in range(steps):
        for i, cx, cy in zip(range(9), cxs, cys):
            F[:, :, i] = np.roll(F[:, :, i], cx, axis=1)
            F[:, :, i] = np.roll(F[:, :, i], cy, axis=0)
        rho = np.sum(F, 2)
        ux = np.sum(F * cxs, 2) / rho
        uy = np.sum(F * cys, 2) / rho
        Feq = np.zeros(F.shape)
        for i, cx, cy, w in zip(range(9), cxs, cys, weights):
            Feq[:, :, i] = rho * w * (1 + 3 * (cx * ux + cy * uy) + 9 * (cx * ux + cy * uy) ** 2 / 2
                                      - 3 * (ux ** 2 + uy ** 2) / 2)
        F += -(1.0 / tau) * (F - Feq)
    return np.sum(ux ** 2 + uy ** 2) + np.sum(rho ** 2)


def cloth_energy(X, k=10.0, rest=0.5):
    # a cloth as a grid of particles (ny, nx, 3): structural springs by slices, shear springs by diagonals
    dx = X[:, 1:] - X[:, :-1]
    dy = X[1:, :] - X[:-1, :]
    dd = X[1:, 1:] - X[:-1, :-1]
    e = 0.0
    for d, L in ((dx, rest), (dy, rest), (dd, rest * np.sqrt(2))):
        length = np.linalg.norm(d, axis=-1)
        e += 0.5 * k * np.sum((length - L) ** 2)
    gravity = 9.81 * np.sum(X[..., 1])
    return e + gravity


def xy_model_energy(theta, J=1.0, h=0.3):
    # the XY model on a periodic lattice: neighbours by np.roll, a field along x
    right = np.roll(theta, -1, axis=1)
    down = np.roll(theta, -1, axis=0)
    return -J * np.sum(np.cos(theta - right) + np.cos(theta - down)) - h * np.sum(np.cos(theta))


def gray_scott(U, V, steps=3, Du=0.16, Dv=0.08, F=0.035, k=0.065):
    def laplacian(Z):
        return (np.roll(Z, 1, 0) + np.roll(Z, -1, 0) + np.roll(Z, 1, 1) + np.roll(Z, -1, 1) - 4 * Z)

    for _ in range(steps):
        UVV = U * V * V
        U = U + Du * laplacian(U) - UVV + F * (1 - U)
        V = V + Dv * laplacian(V) + UVV - (F + k) * V
    return U, V


# -- economics ----------------------------------------------------------------------------------------------


def value_function_iteration(beta, alpha=0.3, iters=6):
    # the growth model on a capital grid: max over next capital, infeasible consumption -inf
    k_grid = np.linspace(0.5, 2.0, 7)
    V = np.zeros(7)
    c = k_grid[:, None] ** alpha - k_grid[None, :] + 0.9 * k_grid[:, None]
    u = np.where(c > 0, np.log(np.maximum(c, 1e-10)), -np.inf)
    for _ in range(iters):
        V_new = np.max(u + beta * V[None, :], axis=1)
        V = V_new
    policy = np.argmax(u + beta * V[None, :], axis=1)
    return V, k_grid[policy]


def ces_demand(prices, income, shares, rho=0.5):
    # a CES consumer's Marshallian demand and indirect utility; the Cobb-Douglas limit for comparison
    sigma = 1.0 / (1.0 - rho)
    P = np.sum(shares ** sigma * prices ** (1 - sigma)) ** (1 / (1 - sigma))
    x = income * shares ** sigma * prices ** (-sigma) / P ** (1 - sigma)
    u = np.sum(shares * x ** rho) ** (1 / rho)
    cd = np.prod((shares / np.sum(shares) * income / prices) ** (shares / np.sum(shares)))
    return u + cd


def bellman_job_search(wages, beta=0.9, c=0.5, iters=8):
    # McCall's job search: the reservation wage by iterating the Bellman operator
    p = np.ones(len(wages)) / len(wages)
    v = wages / (1 - beta)
    for _ in range(iters):
        accept = wages / (1 - beta)
        reject = c + beta * np.sum(v * p)
        v = np.maximum(accept, reject)
    h = c + beta * np.sum(v * p)
    return (1 - beta) * h


# -- Bayesian computation -----------------------------------------------------------------------------------


def metropolis_chain(x0, props, uniforms, scale=0.8):
    # random-walk Metropolis on a banana density with given normal proposals and uniforms
    def logp(x):
        return -0.5 * (x[0] ** 2 / 4 + (x[1] - 0.5 * x[0] ** 2) ** 2)

    x = x0
    lp = logp(x)
    total = np.zeros_like(x0)
    accepted = 0
    for t in range(len(uniforms)):
        prop = x + scale * props[t]
        lp_prop = logp(prop)
        if np.log(uniforms[t]) < lp_prop - lp:
            x = prop
            lp = lp_prop
            accepted += 1
        total = total + x
    return total / len(uniforms), accepted


def log_mean_exp_weights(logw):
    # importance weights: log-mean-exp with the max trick, normalized weights and their ESS
    m = np.max(logw, axis=-1, keepdims=True)
    lme = m[..., 0] + np.log(np.mean(np.exp(logw - m), axis=-1))
    w = np.exp(logw - m)
    w /= w.sum(axis=-1, keepdims=True)
    ess = 1.0 / np.sum(w ** 2, axis=-1)
    return lme, ess


def hmc_step(q0, p0, u, eps=0.15, L=5):
    # one HMC transition on a correlated Gaussian: leapfrog, then accept by a given uniform
    prec = np.array([[2.0, 0.9], [0.9, 1.0]])

    def U(q):
        return 0.5 * q @ prec @ q

    def grad_U(q):
        return prec @ q

    q = q0
    p = p0 - 0.5 * eps * grad_U(q)
    for i in range(L):
        q = q + eps * p
        if i != L - 1:
            p = p - eps * grad_U(q)
    p = p - 0.5 * eps * grad_U(q)
    p = -p
    H0 = U(q0) + 0.5 * p0 @ p0
    H1 = U(q) + 0.5 * p @ p
    accept = np.log(u) < H0 - H1
    return np.where(accept, q, q0)


# -- hand-written linear algebra ----------------------------------------------------------------------------


def gauss_pivot_solve(A, b):
    # Gaussian elimination with partial pivoting: rows swapped by fancy indexing on A and b together
    A = A.astype(float)
    b = b.astype(float)
    n = len(b)
    for k in range(n - 1):
        maxindex = abs(A[k:, k]).argmax() + k
        if maxindex != k:
            A[[k, maxindex]] = A[[maxindex, k]]
            b[[k, maxindex]] = b[[maxindex, k]]
        for row in range(k + 1, n):
            frac = A[row][k] / A[k][k]
            A[row, k:] -= frac * A[k, k:]
            b[row] -= frac * b[k]
    x = np.zeros(n)
    for k in range(n - 1, -1, -1):
        x[k] = (b[k] - np.dot(A[k, k + 1:], x[k + 1:])) / A[k, k]
    return x


def cholesky_banachiewicz(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for i in range(n):
        for j in range(i + 1):
            s = sum(L[i][k] * L[j][k] for k in range(j))
            if i == j:
                L[i][j] = np.sqrt(A[i][i] - s)
            else:
                L[i][j] = (1.0 / L[j][j] * (A[i][j] - s))
    return L


def modified_gram_schmidt(A):
    m, n = A.shape
    Q = np.zeros((m, n))
    R = np.zeros((n, n))
    V = A.copy()
    for i in range(n):
        R[i, i] = np.linalg.norm(V[:, i])
        Q[:, i] = V[:, i] / R[i, i]
        for j in range(i + 1, n):
            R[i, j] = Q[:, i] @ V[:, j]
            V[:, j] = V[:, j] - R[i, j] * Q[:, i]
    return Q, R


def lanczos_tridiag(A, v0, m=3):
    # Lanczos: alpha/beta of the tridiagonal matrix, then its eigenvalues
    n = A.shape[0]
    V = np.zeros((m + 1, n))
    alpha = np.zeros(m)
    beta = np.zeros(m)
    V[0] = v0 / np.linalg.norm(v0)
    w = A @ V[0]
    alpha[0] = w @ V[0]
    w = w - alpha[0] * V[0]
    for j in range(1, m):
        beta[j] = np.linalg.norm(w)
        V[j] = w / beta[j]
        w = A @ V[j]
        alpha[j] = w @ V[j]
        w = w - alpha[j] * V[j] - beta[j] * V[j - 1]
    T = np.diag(alpha) + np.diag(beta[1:], k=1) + np.diag(beta[1:], k=-1)
    return np.linalg.eigvalsh(T)


def jacobi_eigenvalues(A, sweeps=3):
    # cyclic Jacobi rotations: each (p, q) zeroed by a Givens rotation built from its angle
    A = A.copy()
    n = A.shape[0]
    for sweep in range(sweeps):
        for p in range(n - 1):
            for q in range(p + 1, n):
                theta = 0.5 * np.arctan2(2 * A[p, q], A[q, q] - A[p, p])
                c, s = np.cos(theta), np.sin(theta)
                J = np.eye(n)
                J[p, p] = c
                J[q, q] = c
                J[p, q] = s
                J[q, p] = -s
                A = J.T @ A @ J
    return np.sort(np.diag(A))


def inverse_iteration(A, shift, iters=4):
    # inverse iteration with a Rayleigh quotient, from a fixed start
    n = A.shape[0]
    x = np.ones(n) / np.sqrt(n)
    M = A - shift * np.eye(n)
    lam = shift
    for _ in range(iters):
        y = np.linalg.solve(M, x)
        x = y / np.linalg.norm(y)
        lam = x @ A @ x
    return lam, np.abs(x)


# -- NumPy idioms -------------------------------------------------------------------------------------------


def tax_select(income):
    # a progressive tax by np.select over brackets, and a piecewise marginal-rate schedule
    conds = [income < 1.0, (income >= 1.0) & (income < 3.0), income >= 3.0]
    choices = [0.1 * income, 0.1 + 0.25 * (income - 1.0), 0.6 + 0.4 * (income - 3.0)]
    tax = np.select(conds, choices)
    rate = np.piecewise(income, [income < 1.0, income >= 3.0], [0.1, 0.4, 0.25])
    return tax, rate


def piecewise_callables(x):
    return np.piecewise(x, [x < 0, x >= 0], [lambda v: v ** 2, lambda v: np.sin(v)]) + 0.0


def digitize_lookup(x, table):
    # bin values by np.digitize, read a per-bin value and interpolate inside the bin
    edges = np.array([-1.0, -0.3, 0.2, 0.8])
    idx = np.digitize(x, edges)
    lo = np.concatenate([[-2.0], edges])[idx]
    return table[idx] * (x - lo)


def searchsorted_sides(x, grid_vals):
    grid = np.linspace(-1.0, 1.0, 5)
    left = np.searchsorted(grid, x, side="left")
    right = np.searchsorted(grid, x, side="right")
    return np.take(grid_vals, np.clip(left, 0, 4)) * x + right


def bincount_stats(x, groups):
    # per-group sums, counts and means with np.bincount(minlength=), an empty group guarded by np.maximum
    s = np.bincount(groups, weights=x, minlength=5)
    n = np.bincount(groups, minlength=5)
    mean = s / np.maximum(n, 1)
    return mean, n


def histogram_fixed(x):
    counts, edges = np.histogram(x, bins=6, range=(-2.0, 2.0))
    centers = 0.5 * (edges[1:] + edges[:-1])
    density, _ = np.histogram(x, bins=edges, density=True)
    return counts, np.sum(density * centers)


def topk_take_along(scores, k=2):
    # top-k per row by argsort and take_along_axis; the kept entries scattered back with put_along_axis
    idx = np.argsort(-scores, axis=1)[:, :k]
    top = np.take_along_axis(scores, idx, axis=1)
    sparse = np.zeros_like(scores)
    np.put_along_axis(sparse, idx, top, axis=1)
    return top, sparse


def lexsort_ranking(a, b):
    # rank rows by b, ties broken by a (np.lexsort sorts by its last key first)
    order = np.lexsort((a, np.round(b)))
    ranks = np.empty_like(order)
    ranks[order] = np.arange(len(a))
    return a[order], ranks


def survival_cumprod(hazard):
    # discrete survival curves by cumprod, the expected lifetime by its sum
    S = np.cumprod(1.0 - hazard, axis=-1)
    return S, np.sum(S, axis=-1)


def curvature_diff2(y, dx=0.5):
    d2 = np.diff(y, n=2) / dx ** 2
    d1 = np.diff(y, append=y[-1]) / dx
    return np.sum(d2 ** 2) + np.sum(d1 * np.abs(d1))


def gradient_spacing(f2d):
    # np.gradient on a 2D field with spacings per axis, and with edge_order=2 on a row
    gy, gx = np.gradient(f2d, 0.5, 0.25)
    g2 = np.gradient(f2d[0], 0.5, edge_order=2)
    return np.sum(gx * gy) + g2 @ g2


def trapezoid_moments(y):
    x = np.linspace(0.0, 2.0, len(y))
    m0 = np.trapezoid(y, x)
    m1 = np.trapezoid(y * x, x)
    m2 = np.trapezoid(y, dx=0.1)
    return m1 / m0 + m2


def polyval_polyder(c, x):
    p = np.polyval(c, x)
    dp = np.polyval(np.polyder(c), x)
    return p * dp


def kron_laplacian(u):
    # a 2D Laplacian as the Kronecker sum of 1D second differences, applied to a flattened field
    n = u.shape[0]
    D = -2 * np.eye(n) + np.eye(n, k=1) + np.eye(n, k=-1)
    I = np.eye(n)
    L = np.kron(D, I) + np.kron(I, D)
    return u.ravel() @ L @ u.ravel()


def banded_masks(A):
    # strictly lower, upper with an offset, and a band by tril/triu with k=
    lower = np.tril(A, k=-1)
    upper = np.triu(A, k=2)
    band = np.triu(np.tril(A, k=1), k=-1)
    return np.sum(lower ** 2) - np.sum(upper) + np.trace(band @ band.T)


def meshgrid_ij_field(a, b):
    x = np.linspace(0.0, 1.0, 4)
    y = np.linspace(-1.0, 1.0, 3)
    X, Y = np.meshgrid(x, y, indexing="ij")
    Z = np.exp(-a * X ** 2) * np.cos(b * Y)
    Xc, Yc = np.meshgrid(x, y)
    return Z, np.sum(Z * X) + np.sum(Xc.T * Z)


def broadcast_to_outer(v, w):
    V = np.broadcast_to(v[:, None], (len(v), len(w)))
    W = np.broadcast_to(w, (len(v), len(w)))
    return np.sum(V * W, axis=0) + np.max(V + W)


def split_array_split(x):
    a, b, c = np.split(x, 3)
    parts = np.array_split(x, 4)
    return a @ c + b.sum() + sum(p.max() for p in parts)


def stacks_columns(x, y):
    X = np.column_stack([x, y, x * y])
    H = np.hstack([x, y])
    D = np.dstack([X, X ** 2])
    V = np.vstack([x, y])
    return X.T @ X, H @ H + D.sum() + V.std()


def pad_modes(x):
    r = np.pad(x, 2, mode="reflect")
    s = np.pad(x, (1, 2), mode="symmetric")
    w = np.pad(x, 1, mode="wrap")
    e = np.pad(x, (2, 1), mode="edge")
    c = np.pad(x, 1, mode="constant", constant_values=0.5)
    return r[:6] * s[:6] + w[:6] - e[:6] + c[:6]


def clip_arrays(x, lo, hi):
    return np.clip(x, lo, hi) + x.clip(min=lo)


def nan_to_num_guard(x):
    # log of values that may be 0 or negative: NaN and -inf cleaned up, then compared with isclose
    y = np.log(x)
    y = np.nan_to_num(y, nan=0.0, neginf=-10.0, posinf=10.0)
    near = np.isclose(x, 1.0, atol=0.1)
    return np.where(near, 0.0, y)


def fancy_negative_repeated(x):
    idx = np.array([-1, 0, -1, 2, -3])
    y = x[idx]
    z = np.zeros(len(x))
    z[[0, 1, 1, -1]] = y[:4]
    z[np.array([-2, -2])] += 1.0
    return y * 2, z


def mask_logic(x, y):
    m = (x > 0) & ~(y < -0.5) | (np.abs(x) < 0.1)
    n_sel = np.count_nonzero(m)
    return np.sum(np.where(m, x * y, 0.0)) / np.maximum(n_sel, 1), n_sel


def negative_floordiv_mod(x):
    # Python's // and % on negative values (floats and ints): floor, and the sign of the divisor
    k = np.arange(-4, 4)
    q = k // 3
    r = k % 3
    fq = x // 0.75
    fr = x % 0.75
    fm = np.fmod(x, 0.75)
    return q * x[:8] + r, fq, fr * fm, np.remainder(x, -0.5)


def int_float_mix(x, n):
    # int arrays mixed with floats: true division of ints, mean of ints, int power
    counts = np.arange(1, len(x) + 1)
    frac = counts / counts.sum()
    half = counts // 2
    return x * frac + half ** 2 + np.mean(counts) + n * x


def axis_tuple_ddof(X):
    m = X.mean(axis=(0, 2), keepdims=True)
    s = X.std(axis=(0, 2), ddof=1, keepdims=True)
    Z = (X - m) / s
    v = np.var(X, axis=1, ddof=1)
    return Z.sum(axis=(1, 2)), v.max(axis=-1, keepdims=True)


def where_one_argument(x):
    # np.where(cond) as indices (data-dependent size): refused under jit as in jax
    idx = np.where(x > 0)[0]
    return x[idx].sum()


def argmax_nonzero_first(x, thresh=0.2):
    # the first index above a threshold by argmax of a mask (0 when none is), as scripts write it
    above = x > thresh
    first = np.argmax(above)
    found = above.any()
    return np.where(found, x[first], -1.0), first
