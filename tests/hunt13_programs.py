"""Programs srcjax had not seen (hunt 13): the corpus of tests/test_hunt13_programs.py.

Plain NumPy scripts turned into functions, as a NumPy user writes them: ``np.where`` chains and boolean masks,
``np.clip``, ``np.pad``, ``np.roll``, ``np.cumsum``/``np.cumprod``, ``np.diff``, ``np.interp``, ``np.einsum``
in several spellings, ``np.take_along_axis`` and argsort ranks, ``np.linalg`` (solve, cholesky, slogdet, inv,
norm, qr, eigh, det) inside losses, ``np.polyval``, ``np.meshgrid``, ``keepdims`` reductions, integer, boolean
and float mixing, integer powers, negative steps in slices, ``x[mask]`` reads, ``x[idx] += v`` with repeated
indices (NumPy's buffered semantics) next to ``np.add.at``, in-place slice updates in loops, while loops with a
data-dependent stop, early returns, nested helpers with defaults, classes with methods, closures over module
constants, and float32 programs mixing float32 arrays with Python numbers. The test runs the same text with
``np`` as jax.numpy as its oracle (programs that write into arrays have a hand-written jax twin there).
"""

from __future__ import annotations

import math

import numpy as np

SOBEL = np.array([[1.0, 0.0, -1.0], [2.0, 0.0, -2.0], [1.0, 0.0, -1.0]])
KNOTS = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
N_BINS = 4
DECAY = 0.9
EPS = 1e-8

# -- np.where chains, masks, clip ----------------------------------------------------------------------------


def where_chain_piecewise(x):
    # a C1 piecewise polynomial written as a chain of np.where
    y = np.where(x < -1.0, -x - 0.5, np.where(x < 1.0, 0.5 * x ** 2, x - 0.5))
    y = np.where(np.abs(x) > 2.5, 2.0 * y, y)
    return np.sum(y * y)


def masked_huber(pred, target, valid):
    r = pred - target
    a = np.abs(r)
    loss = np.where(a <= 1.0, 0.5 * r ** 2, a - 0.5)
    loss = loss * valid
    return loss.sum() / np.maximum(valid.sum(), 1)


def clip_ratio_objective(logp_new, logp_old, adv, eps=0.2):
    ratio = np.exp(logp_new - logp_old)
    clipped = np.clip(ratio, 1.0 - eps, 1.0 + eps)
    return -np.mean(np.minimum(ratio * adv, clipped * adv))


def clip_array_bounds(x, lo, hi):
    return np.sum(np.clip(x, lo, hi) ** 2) + np.sum(x.clip(min=-0.5) * 0.1)


def relu_by_mask(x, w):
    h = x @ w
    h = h * (h > 0)
    pos = (h > 0).astype(x.dtype)
    return np.sum(h ** 2) + 0.1 * np.sum(pos)


# -- pad, roll, cumsum/cumprod, diff, interp -------------------------------------------------------------------


def pad_edge_laplacian(u):
    p = np.pad(u, ((1, 1), (1, 1)), mode="edge")
    lap = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * u
    return np.sum(lap ** 2)


def pad_constant_conv(x, k):
    n = k.shape[0] // 2
    p = np.pad(x, (n, n))
    out = np.zeros_like(x)
    for j in range(k.shape[0]):
        out = out + k[j] * p[j:j + x.shape[0]]
    return out


def roll_upwind(u, c, steps=4):
    for _ in range(steps):
        u = u - c * (u - np.roll(u, 1))
    return u


def roll_2d_shift_energy(img):
    dx = np.roll(img, -1, axis=1) - img
    dy = np.roll(img, shift=1, axis=0) - img
    both = np.roll(img, (1, -1), axis=(0, 1))
    return np.sum(dx ** 2 + dy ** 2) + 0.1 * np.sum(both * img)


def cumulative_trapezoid(y, dx):
    inc = 0.5 * (y[1:] + y[:-1]) * dx
    area = np.concatenate([np.zeros(1, dtype=y.dtype), np.cumsum(inc)])
    return area


def survival_nll(hazard_logits, event_time, observed):
    h = 1.0 / (1.0 + np.exp(-hazard_logits))
    surv = np.cumprod(1.0 - h)
    s_before = np.concatenate([np.ones(1, dtype=surv.dtype), surv[:-1]])
    ll_event = np.log(h[event_time] * s_before[event_time] + EPS)
    ll_cens = np.log(surv[event_time] + EPS)
    return -(observed * ll_event + (1 - observed) * ll_cens)


def second_difference_penalty(x, lam):
    d2 = np.diff(x, n=2)
    d1 = np.diff(x)
    return lam * np.sum(d2 ** 2) + np.sum(np.abs(d1)) * 0.01


def diff_2d_axis0(a):
    g = np.diff(a, axis=0)
    h = np.diff(a, axis=-1, prepend=0.0)
    return np.sum(g ** 2) + np.sum(h * a)


def interp_lookup(x, fp):
    y = np.interp(x, KNOTS, fp)
    return np.sum(y ** 2)


def interp_with_bounds(x, fp):
    return np.interp(x, KNOTS, fp, left=0.0, right=fp[-1] * 2.0)


# -- einsum, take_along_axis, argsort --------------------------------------------------------------------------


def einsum_zoo(a, b, v):
    tr = np.einsum("ii->", a)
    frob = np.einsum("ij,ij->", a, b)
    quad = np.einsum("i,ij,j->", v, a, v)
    diag = np.einsum("ii->i", b)
    outer = np.einsum("i,j->ij", v, diag)
    return tr + frob + quad + np.sum(outer * a)


def einsum_batched(xs, w):
    h = np.einsum("bij,jk->bik", xs, w)
    g = np.einsum("bik,bjk->bij", h, h)
    return np.einsum("bii->b", g)


def einsum_ellipsis(x, w):
    y = np.einsum("...i,ij->...j", x, w)
    return np.einsum("...j,...j->...", y, y)


def sort_rows_by_key(keys, vals):
    order = np.argsort(keys, axis=1)
    sorted_vals = np.take_along_axis(vals, order, axis=1)
    w = np.arange(1, keys.shape[1] + 1)
    return np.sum(sorted_vals * w, axis=1)


def argsort_ranks(x):
    ranks = np.argsort(np.argsort(x))
    w = (ranks + 1) / x.shape[0]
    return np.sum(w * x)


def argmax_gather(logits, values):
    best = np.argmax(logits, axis=1)
    picked = np.take_along_axis(values, best[:, None], axis=1)[:, 0]
    return np.sum(picked ** 2) + np.sum(values.max(axis=1, keepdims=True) * logits)


def descending_sort_weights(x):
    s = np.sort(x)[::-1]
    w = 0.5 ** np.arange(x.shape[0])
    return np.dot(s, w)


# -- np.linalg inside losses -----------------------------------------------------------------------------------


def ridge_solve_loss(a, y, lam):
    n = a.shape[1]
    w = np.linalg.solve(a.T @ a + lam * np.eye(n), a.T @ y)
    r = a @ w - y
    return np.mean(r ** 2) + lam * np.sum(w ** 2)


def gp_cholesky_nll(x, y, log_ell):
    ell = np.exp(log_ell)
    d2 = (x[:, None] - x[None, :]) ** 2
    k = np.exp(-0.5 * d2 / ell ** 2) + 0.1 * np.eye(x.shape[0])
    l_mat = np.linalg.cholesky(k)
    z = np.linalg.solve(l_mat, y)
    return 0.5 * np.dot(z, z) + np.sum(np.log(np.diag(l_mat))) + 0.5 * x.shape[0] * math.log(2 * math.pi)


def slogdet_barrier(m):
    s = m @ m.T + np.eye(m.shape[0])
    sign, logdet = np.linalg.slogdet(s)
    return sign * logdet - np.trace(s) * 0.1


def inverse_trace_loss(m):
    a = m @ m.T + 2.0 * np.eye(m.shape[0])
    ainv = np.linalg.inv(a)
    return np.trace(ainv) + np.sum(ainv[0] ** 2)


def norm_variants(x):
    n2 = np.linalg.norm(x)
    rows = np.linalg.norm(x, axis=1)
    l1 = np.linalg.norm(x, ord=1, axis=1)
    linf = np.linalg.norm(x[0], ord=np.inf)
    fro = np.linalg.norm(x, "fro")
    return n2 + np.sum(rows) + np.sum(l1) + linf + fro


def qr_projection_residual(a, y):
    q, r = np.linalg.qr(a)
    proj = q @ (q.T @ y)
    return np.sum((y - proj) ** 2) + 0.01 * np.sum(np.abs(np.diag(r)))


def eigh_spectrum_loss(m):
    s = 0.5 * (m + m.T)
    w, v = np.linalg.eigh(s)
    return w[0] ** 2 + np.sum(w[1:]) + np.sum(v[:, -1] ** 2 * np.arange(m.shape[0]))


def det_volume(m):
    return np.log(np.abs(np.linalg.det(m)) + 1.0)


def lstsq_by_normal_equations(x, y):
    xtx = x.T @ x
    coef = np.linalg.inv(xtx) @ (x.T @ y)
    return np.linalg.norm(x @ coef - y) ** 2


# -- polynomials, grids, keepdims ------------------------------------------------------------------------------


def polyval_fit(coefs, x, y):
    pred = np.polyval(coefs, x)
    return np.mean((pred - y) ** 2)


def meshgrid_potential(centers, width):
    g = np.linspace(-1.0, 1.0, 5)
    xx, yy = np.meshgrid(g, g)
    field = np.zeros_like(xx)
    for c in centers:
        field = field + np.exp(-((xx - c[0]) ** 2 + (yy - c[1]) ** 2) / width)
    return np.sum(field ** 2)


def meshgrid_ij_bilinear(w):
    i, j = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    return np.sum(w * (i + 2 * j)) + np.sum(w[i, j] ** 2)


def keepdims_standardize(x):
    mu = x.mean(axis=0, keepdims=True)
    sd = np.sqrt(((x - mu) ** 2).mean(axis=0, keepdims=True) + 1e-6)
    z = (x - mu) / sd
    return np.max(z, axis=1, keepdims=True) - np.min(z, axis=1, keepdims=True)


def softmax_keepdims(logits, labels):
    m = np.max(logits, axis=-1, keepdims=True)
    lse = m + np.log(np.sum(np.exp(logits - m), axis=-1, keepdims=True))
    logp = logits - lse
    return -np.mean(np.take_along_axis(logp, labels[:, None], axis=-1))


# -- int / bool / float mixing, powers, slices -----------------------------------------------------------------


def int_bool_float_mix(x, k):
    n_pos = np.sum(x > 0)
    frac = n_pos / x.shape[0]
    shifted = x + k
    half = k // 2
    return np.sum(shifted * frac) + half * np.mean(x) + (x > 0.5).any() * 1.0


def integer_powers(x):
    return np.sum(x ** 3 - 2 * x ** 2 + x ** 0) + np.sum((x ** 2 + 1.0) ** -1) + np.sum(x ** -2 * 0.01)


def int_array_scaling(x, counts):
    w = counts / counts.sum()
    return np.sum(w * x) + np.sum(counts ** 2) * 0.001 * np.mean(x)


def negative_step_slices(x):
    rev = x[::-1]
    tail = np.cumsum(x[::-1])[::-1]
    odd_back = x[-1::-2]
    mid = x[5:1:-1]
    return np.sum(rev * tail) + np.sum(odd_back ** 2) + np.sum(mid * x[1:5])


def reversed_cummax_like(x):
    acc = x[-1]
    outs = [acc]
    for i in range(x.shape[0] - 2, -1, -1):
        acc = np.maximum(acc * DECAY, x[i])
        outs.append(acc)
    return np.stack(outs[::-1])


# -- x[mask] reads, repeated-index updates, in-place updates in loops ------------------------------------------


def mask_read_sum(x):
    pos = x[x > 0]
    return pos.sum() + np.sum(x[x < -0.5] ** 2)


def mask_read_mean_2d(x, thresh):
    sel = x[np.abs(x) > thresh]
    return np.mean(sel ** 2)


def add_at_histogram(values, idx):
    out = np.zeros(N_BINS, dtype=values.dtype)
    np.add.at(out, idx, values)
    return out * np.arange(1, N_BINS + 1)


def fancy_iadd_repeated(base, idx, v):
    out = base.copy()
    out[idx] += v
    return out


def fancy_iadd_then_loss(base, idx, v):
    out = base * 1.0
    out[idx] += v * 2.0
    out[idx] *= 1.5
    return np.sum(out ** 2)


def iir_filter_inplace(x, a):
    y = np.zeros_like(x)
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        y[i] = a * y[i - 1] + (1 - a) * x[i]
    return y


def slice_update_smoother(u, steps=3):
    u = u.copy()
    for _ in range(steps):
        u[1:-1] = 0.25 * u[:-2] + 0.5 * u[1:-1] + 0.25 * u[2:]
        u[0] = u[1]
        u[-1] = u[-2]
    return np.sum(u ** 2)


def column_update_loop(a):
    a = a.copy()
    for j in range(1, a.shape[1]):
        a[:, j] -= 0.5 * a[:, j - 1]
    return a


def boolean_mask_assign(x):
    y = x.copy()
    y[y < 0] = 0.0
    y[y > 1.0] *= 0.5
    return np.sum(y * x)


# -- control flow: while on data, early returns ------------------------------------------------------------------


def gd_until_converged(w0, a, b):
    w = w0
    g = a @ w - b
    it = 0
    while np.linalg.norm(g) > 1e-3 and it < 50:
        w = w - 0.1 * g
        g = a @ w - b
        it += 1
    return w


def halving_until_small(x):
    n = 0
    while np.max(np.abs(x)) > 0.1:
        x = x * 0.5
        n = n + 1
    return x * n


def early_return_sign(x, w):
    s = np.sum(x * w)
    if s > 0:
        return s ** 2
    if s < -1.0:
        return -s
    return 0.5 * s


def early_return_in_loop(x):
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i] ** 2
        if acc > 2.0:
            return acc * (i + 1)
    return acc


def continue_skips(x):
    total = 0.0
    for v in x:
        if v < 0:
            continue
        total = total + np.sqrt(v + 1.0)
    return total


# -- helpers with defaults, classes, closures over module constants -----------------------------------------------


def _scaled_tanh(x, scale=2.0, shift=None):
    if shift is None:
        shift = 0.0
    return np.tanh(x / scale + shift)


def _layer(x, w, b=None, act=np.tanh):
    h = x @ w
    if b is not None:
        h = h + b
    return act(h)


def nested_helpers_defaults(x, w, b):
    h = _layer(x, w, b)
    h2 = _layer(h, w.T, act=_scaled_tanh)
    return np.sum(_scaled_tanh(h2, shift=0.5)) + np.sum(_scaled_tanh(h, 3.0))


class Affine:
    def __init__(self, w, b, scale=1.0):
        self.w = w
        self.b = b
        self.scale = scale

    def __call__(self, x):
        return self.scale * (x @ self.w + self.b)

    def penalty(self):
        return np.sum(self.w ** 2)


def class_with_methods(w, b, x, y):
    model = Affine(w, b, scale=0.5)
    pred = model(x)
    return np.mean((pred - y) ** 2) + 0.01 * model.penalty()


class RunningStats:
    def __init__(self, n):
        self.mean = np.zeros(n)
        self.count = 0

    def update(self, x):
        self.count += 1
        self.mean = self.mean + (x - self.mean) / self.count
        return self


def class_mutating_state(xs):
    st = RunningStats(xs.shape[1])
    for row in xs:
        st.update(row)
    return np.sum(st.mean ** 2)


def sobel_edges(img):
    h, w = img.shape
    out = np.zeros((h - 2, w - 2), dtype=img.dtype)
    for di in range(3):
        for dj in range(3):
            out = out + SOBEL[di, dj] * img[di:di + h - 2, dj:dj + w - 2]
    return np.sum(out ** 2)


def make_decayed_sum():
    weights = DECAY ** np.arange(5)

    def decayed(x):
        return np.sum(weights * x)

    return decayed


def closure_over_constants(x):
    f = make_decayed_sum()
    return f(x) + f(x ** 2) * EPS * 1e6


# -- float32 with Python numbers --------------------------------------------------------------------------------


def f32_python_scalars(x):
    y = 0.5 * x + 1
    y = y * math.pi - 2.5
    z = np.exp(-y ** 2) / 3
    return z.mean() + np.float32(0.25) * y.sum()


def f32_where_constants(x):
    y = np.where(x > 0, x, 0.01 * x)
    y = np.maximum(y, -1)
    return y * 2 + np.abs(x).max() * 1e-3


def f32_int_count(x):
    n = (x > 0).sum()
    return x / (n + 1) + x.shape[0]


def f32_astype_roundtrip(x):
    y = x.astype(np.float32) * 3.0
    k = np.floor(y)
    return np.sum((y - k) ** 2) + np.sum(k) * 0.0


# -- a few more shapes of user code ------------------------------------------------------------------------------


def triangle_pair_energy(pos):
    n = pos.shape[0]
    iu, ju = np.triu_indices(n, k=1)
    d = np.sqrt(np.sum((pos[iu] - pos[ju]) ** 2, axis=-1))
    return np.sum(1.0 / d)


def tril_masked_scores(q, k):
    s = q @ k.T / np.sqrt(q.shape[1])
    mask = np.tril(np.ones((q.shape[0], k.shape[0]), dtype=bool))
    s = np.where(mask, s, -1e9)
    s = s - s.max(axis=1, keepdims=True)
    p = np.exp(s)
    return p / p.sum(axis=1, keepdims=True)


def tile_repeat_features(x):
    t = np.tile(x, 2)
    r = np.repeat(x, 2)
    return np.sum(t * r) + np.sum(np.repeat(x[None, :], 3, axis=0) * np.arange(3)[:, None])


def angles_arctan2(p):
    ang = np.arctan2(p[:, 1], p[:, 0])
    r = np.hypot(p[:, 0], p[:, 1])
    return np.sum(np.cos(np.diff(ang)) * r[1:]) + np.sum(np.sin(ang) ** 2)


def searchsorted_bins(x, edges_shift):
    edges = np.linspace(-2.0, 2.0, 5)
    b = np.searchsorted(edges, x)
    w = np.array([0.5, 1.0, 2.0, 1.0, 0.5, 0.25])
    return np.sum(w[b] * x ** 2) + edges_shift * np.sum(b)


def cross_outer_inner(a, b):
    c = np.cross(a, b)
    o = np.outer(a[0], b[0])
    return np.sum(c ** 2) + np.trace(o) + np.inner(a[1], b[1])


def split_and_stack(x):
    a, b, c = np.split(x, 3)
    s = np.stack([a * b, b * c, c * a], axis=1)
    return np.sum(s, axis=1) + np.concatenate([a, c])[::2]


def moveaxis_reduce(x):
    y = np.moveaxis(x, 0, -1)
    z = np.swapaxes(y, 0, 1)
    return np.sum(z * np.arange(z.shape[-1]), axis=(0, 1))


def array_methods(x):
    s = x.cumsum(axis=0)
    v = x.std(axis=0, ddof=1)
    i = x.argmax()
    return s.ravel()[i] + v.sum() + x.prod(axis=1).sum() + x.var() + x.flatten()[-1]


def modular_indices(x):
    n = x.shape[0]
    idx = (np.arange(n) * 3) % n
    nxt = (idx + 1) % n
    return np.sum(x[idx] * x[nxt]) + np.sum(x[n // 2:] // 1.0)


def count_nonzero_sparsity(x, thresh):
    nz = np.count_nonzero(np.abs(x) > thresh)
    return np.sum(x ** 2) / (nz + 1) + np.all(x > -3.0) * np.sum(x)


def nan_guarded_log(x):
    y = np.log(np.where(x > 0, x, 1.0))
    y = np.where(x > 0, y, 0.0)
    return np.nan_to_num(np.sum(y)) + np.sum(np.isclose(x, 0.0)) * 1.0


def softplus_stable(x):
    return np.sum(np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))) + np.sum(np.expm1(x * 0.1))


def tuple_outputs(x, w):
    h = np.tanh(x @ w)
    return h.sum(axis=0), np.max(h), h[:, 0] * 2.0


def enumerate_rows_weighted(x):
    total = np.zeros(x.shape[1], dtype=x.dtype)
    for i, row in enumerate(x):
        total = total + row * (i + 1) ** 2
    return total
