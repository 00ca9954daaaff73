"""Programs from libraries no earlier hunt read (hunt 20): the corpus of tests/test_hunt20_programs.py.

What the code of seven other projects computes, written again for srcjax with NumPy and ``srcjax``'s names, as a
user of those libraries writes it without them (each program is ours; nothing here is pasted):

- google-deepmind/rlax (Apache-2.0): discounted and lambda returns (reversed Python loops, a reverse ``scan``),
  generalized advantage estimation with in-place writes, V-trace's clipped importance weights, TD, Q-learning,
  double Q-learning and SARSA with integer actions gathered by ``take_along_axis`` and fancy indexing, PPO's
  clipped surrogate, an entropy-regularised policy gradient with ``stop_gradient``, n-step returns by slices,
  the categorical (C51) projection written as rlax writes it (a triangular kernel), Retrace's traces by
  ``cumprod``.
- google-deepmind/jraph (Apache-2.0): graphs as (nodes, senders, receivers) with segment sums by ``.at[].add``
  and ``np.add.at``, a GCN with symmetric degree normalisation, GAT's segment softmax (``.at[].max``), an
  interaction network's edge and node updates, per-graph readouts by graph ids, PageRank over an edge list.
- ott-jax (Apache-2.0): Sinkhorn in the log domain (``fori_loop``) and by scalings (a Python loop), the
  Sinkhorn divergence, 1D Wasserstein by sorting, a soft sort by a temperature.
- patrick-kidger/diffrax and optimistix (Apache-2.0): an explicit Runge-Kutta step from a Butcher tableau held in
  module lists, Bogacki-Shampine with its error estimate, Euler-Maruyama over given Brownian increments
  (``scan``), an implicit Euler step by Newton iterations with a hand-built Jacobian, a neural ODE with dict
  parameters; Gauss-Newton and Levenberg-Marquardt steps using ``jacfwd`` inside, a damped fixed point by
  ``while_loop``, a bisection on data.
- google/jaxopt (Apache-2.0): proximal gradient for the lasso (soft thresholding), projections (box, l2 ball,
  hyperplane), mirror descent on the simplex, Polyak step sizes.
- distrax / TensorFlow Probability (Apache-2.0): log densities written by hand (Beta and Dirichlet-multinomial
  through ``lax.lgamma``, Student-t, Laplace, logistic, Gumbel, Weibull, Cauchy, a truncated normal through
  ``lax.erf``, a von Mises through a series, a mixture by logsumexp, a multivariate normal through its Cholesky
  factor), bijector chains with their log-determinants, a planar flow and a RealNVP coupling with masks.
- numpyro / blackjax (Apache-2.0): HMC, MALA and SGLD steps with fixed keys (``random.split``, ``normal``,
  ``uniform``) and ``grad`` of the log density inside, an importance-weighted ELBO.
- flax / haiku (Apache-2.0) modules as pure functions over nested dict parameters (``{"dense1": {"kernel": ...,
  "bias": ...}}``): layer norm, multi-head attention with a causal mask, GRU and LSTM cells over time, a
  strided and dilated 1D convolution by slicing, embeddings, batch norm returning its new state, dropout with a
  key, a pre-LN transformer block, a mixture of experts with top-1 routing, rotary embeddings, spectral norm by
  power iteration; and classic losses (NT-Xent, triplet with hardest negatives, multi-class focal, Dice,
  ArcFace's angular margin, Poisson NLL, pinball, label smoothing with an ignore index).
- physics, signal processing, finance and SciPy-style numerics: heat steps by ``np.roll``, Burgers' upwind
  scheme, a wave equation by slices, n-body leapfrog with forces by ``grad``, spring networks over edges,
  multi-channel valid convolution, a biquad IIR filter by ``scan``, a DFT by cos/sin matrices, Asian and
  barrier options over given normals, bond duration, GARCH(1,1)'s likelihood, CVaR by sorting, Gauss-Legendre
  quadrature with module nodes, the secant method, cubic Hermite interpolation with ``searchsorted``,
  cumulative trapezoids.
"""

# ruff: noqa: B007, B023, E741, N803, N806 - (the authors' style: `for i in range(n):`, `l`, `W`, `X`; a lambda
# called in the loop that made it)

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

import srcjax

lax = srcjax.lax
random = srcjax.random
tree_map = srcjax.tree_util.tree_map
tree_leaves = srcjax.tree_util.tree_leaves

GAMMA = 0.9
LAMBDA = 0.8
SENDERS = np.array([0, 1, 2, 3, 0, 2, 4, 1])
RECEIVERS = np.array([1, 2, 3, 4, 2, 0, 0, 3])
N_NODES = 5
GRAPH_IDS = np.array([0, 0, 0, 1, 1])
ATOMS = np.linspace(-2.0, 2.0, 5)


def _lse(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def _log_softmax(x, axis=-1):
    return x - np.expand_dims(_lse(x, axis), axis)


def _softplus(x):
    return np.logaddexp(x, 0.0)


# == rlax =========================================================================================================


def discounted_returns(r, v_last):
    # G_t = r_t + gamma * G_{t+1}, written as a reversed Python loop of appends
    g = v_last
    out = []
    for t in reversed(range(r.shape[0])):
        g = r[t] + GAMMA * g
        out.append(g)
    out.reverse()
    return np.stack(out)


def lambda_returns_scan(r, discount, v):
    # rlax.lambda_returns: G_t = r_t + d_t * ((1 - l) * v_t + l * G_{t+1}) by a reverse scan
    def step(g, xs):
        r_t, d_t, v_t = xs
        g = r_t + d_t * ((1.0 - LAMBDA) * v_t + LAMBDA * g)
        return g, g

    _, gs = lax.scan(step, v[-1], (r, discount, v), reverse=True)
    return gs


def gae_advantages(r, values, dones):
    T = r.shape[0]
    adv = np.zeros(T)
    last = 0.0
    for t in range(T - 1, -1, -1):
        nonterminal = 1.0 - dones[t]
        delta = r[t] + GAMMA * values[t + 1] * nonterminal - values[t]
        last = delta + GAMMA * LAMBDA * nonterminal * last
        adv[t] = last
    return np.sum(adv ** 2) + np.sum(adv * values[:-1])


def vtrace_targets(log_rhos, r, v, bootstrap):
    rhos = np.exp(log_rhos)
    clipped_rhos = np.minimum(1.0, rhos)
    cs = LAMBDA * np.minimum(1.0, rhos)
    v_next = np.concatenate([v[1:], bootstrap[None]])
    deltas = clipped_rhos * (r + GAMMA * v_next - v)

    def step(acc, xs):
        d, c = xs
        acc = d + GAMMA * c * acc
        return acc, acc

    _, corr = lax.scan(step, 0.0 * bootstrap, (deltas, cs), reverse=True)
    vs = v + corr
    vs_next = np.concatenate([vs[1:], bootstrap[None]])
    pg_adv = clipped_rhos * (r + GAMMA * vs_next - v)
    return np.sum(lax.stop_gradient(pg_adv) * log_rhos) + 0.5 * np.sum((lax.stop_gradient(vs) - v) ** 2)


def q_learning_loss(q_tm1, a_tm1, r_t, q_t):
    n = q_tm1.shape[0]
    target = r_t + GAMMA * np.max(q_t, axis=-1)
    q_a = q_tm1[np.arange(n), a_tm1]
    td = lax.stop_gradient(target) - q_a
    return 0.5 * np.mean(td ** 2)


def double_q_learning(q_tm1, a_tm1, r_t, q_t_value, q_t_selector):
    best = np.argmax(q_t_selector, axis=-1)
    q_next = np.take_along_axis(q_t_value, best[:, None], axis=-1)[:, 0]
    q_a = np.take_along_axis(q_tm1, a_tm1[:, None], axis=-1)[:, 0]
    td = r_t + GAMMA * q_next - q_a
    return np.sum(np.where(np.abs(td) < 1.0, 0.5 * td ** 2, np.abs(td) - 0.5))


def expected_sarsa(q_tm1, a_tm1, r_t, q_t, probs_logits):
    probs = np.exp(_log_softmax(probs_logits))
    target = r_t + GAMMA * np.sum(probs * q_t, axis=-1)
    onehot = (np.arange(q_tm1.shape[-1])[None, :] == a_tm1[:, None]).astype(q_tm1.dtype)
    q_a = np.sum(q_tm1 * onehot, axis=-1)
    return np.mean((target - q_a) ** 2)


def ppo_clipped_surrogate(logits, old_logp, actions, adv):
    logp_all = _log_softmax(logits)
    logp = np.take_along_axis(logp_all, actions[:, None], axis=1)[:, 0]
    ratio = np.exp(logp - old_logp)
    clipped = np.clip(ratio, 0.8, 1.2)
    adv_n = (adv - np.mean(adv)) / (np.std(adv) + 1e-8)
    return -np.mean(np.minimum(ratio * adv_n, clipped * adv_n))


def entropy_pg_loss(logits, actions, returns, baseline):
    logp = _log_softmax(logits)
    p = np.exp(logp)
    entropy = -np.sum(p * logp, axis=-1)
    chosen = logp[np.arange(actions.shape[0]), actions]
    adv = lax.stop_gradient(returns - baseline)
    return -np.mean(chosen * adv) - 0.01 * np.mean(entropy) + 0.5 * np.mean((returns - baseline) ** 2)


def n_step_returns(r, v, n=3):
    T = r.shape[0]
    out = v[n:]
    for k in reversed(range(n)):
        out = r[k:T - n + k + 1] + GAMMA * np.concatenate([out, v[T:]])[: T - n + 1]
    return out


def categorical_projection(p_logits, r, discount):
    # rlax's C51 projection: target atoms clipped to the support, mass spread by a triangular kernel
    probs = np.exp(_log_softmax(p_logits))
    z_t = np.clip(r + discount * ATOMS, ATOMS[0], ATOMS[-1])
    dz = ATOMS[1] - ATOMS[0]
    w = np.clip(1.0 - np.abs(z_t[None, :] - ATOMS[:, None]) / dz, 0.0, 1.0)
    return w @ probs


def retrace_traces(log_pi, log_mu, q, r):
    c = LAMBDA * np.minimum(1.0, np.exp(log_pi - log_mu))
    traces = np.cumprod(GAMMA * c)
    deltas = r + GAMMA * q[1:] - q[:-1]
    return np.sum(traces * deltas)


def td_lambda_masked(v, r, done):
    # a TD(lambda) target with a Python loop that resets on terminal steps (a branch on data)
    T = r.shape[0]
    g = v[T]
    targets = []
    for t in range(T - 1, -1, -1):
        if done[t] > 0.5:
            g = r[t]
        else:
            g = r[t] + GAMMA * ((1 - LAMBDA) * v[t + 1] + LAMBDA * g)
        targets.append(g)
    return np.sum((np.array(targets[::-1]) - v[:T]) ** 2)


# == jraph ========================================================================================================


def _segment_sum(data, ids, n):
    return np.zeros((n,) + data.shape[1:], dtype=data.dtype).at[ids].add(data)


def gcn_layer(x, w):
    ones = np.ones(SENDERS.shape[0])
    deg = _segment_sum(ones, RECEIVERS, N_NODES) + 1.0
    norm = 1.0 / np.sqrt(deg)
    h = x @ w
    msgs = h[SENDERS] * (norm[SENDERS] * norm[RECEIVERS])[:, None]
    agg = _segment_sum(msgs, RECEIVERS, N_NODES) + h / deg[:, None]
    return np.maximum(agg, 0.0)


def gcn_loss(x, w, y):
    return np.mean((gcn_layer(x, w) - y) ** 2)


def gat_layer(x, w, a_src, a_dst):
    h = x @ w
    logits = h[SENDERS] @ a_src + h[RECEIVERS] @ a_dst
    logits = np.where(logits > 0, logits, 0.2 * logits)
    seg_max = np.full(N_NODES, -np.inf).at[RECEIVERS].max(logits)
    e = np.exp(logits - seg_max[RECEIVERS])
    denom = np.zeros(N_NODES).at[RECEIVERS].add(e)
    alpha = e / denom[RECEIVERS]
    out = np.zeros((N_NODES, h.shape[1])).at[RECEIVERS].add(alpha[:, None] * h[SENDERS])
    return np.tanh(out)


def interaction_network(nodes, edges, params):
    sender_f, receiver_f = nodes[SENDERS], nodes[RECEIVERS]
    edge_in = np.concatenate([edges, sender_f, receiver_f], axis=1)
    new_edges = np.tanh(edge_in @ params["edge_w"] + params["edge_b"])
    agg = np.zeros((nodes.shape[0], new_edges.shape[1]))
    np.add.at(agg, RECEIVERS, new_edges)
    node_in = np.concatenate([nodes, agg], axis=1)
    new_nodes = np.tanh(node_in @ params["node_w"])
    return np.sum(new_nodes ** 2) + np.sum(new_edges)


def graph_readout(nodes, w):
    n_graphs = 2
    h = np.tanh(nodes @ w)
    sums = np.zeros((n_graphs, h.shape[1])).at[GRAPH_IDS].add(h)
    counts = np.zeros(n_graphs).at[GRAPH_IDS].add(1.0)
    means = sums / counts[:, None]
    maxes = np.full((n_graphs, h.shape[1]), -np.inf).at[GRAPH_IDS].max(h)
    return np.concatenate([means, maxes], axis=1)


def pagerank_edges(edge_w, damping):
    out_w = np.zeros(N_NODES).at[SENDERS].add(edge_w)
    p = np.full(N_NODES, 1.0 / N_NODES)

    def body(i, p):
        flow = p[SENDERS] * edge_w / out_w[SENDERS]
        return (1.0 - damping) / N_NODES + damping * np.zeros(N_NODES).at[RECEIVERS].add(flow)

    return lax.fori_loop(0, 10, body, p)


def edge_length_energy(pos, rest):
    d = pos[SENDERS] - pos[RECEIVERS]
    length = np.sqrt(np.sum(d * d, axis=1) + 1e-12)
    return 0.5 * np.sum((length - rest) ** 2)


# == ott-jax ======================================================================================================


def _cost(x, y):
    return np.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=-1)


def sinkhorn_log(x, y, eps=0.5):
    C = _cost(x, y)
    n, m = C.shape
    log_a, log_b = np.full(n, -math.log(n)), np.full(m, -math.log(m))

    def body(i, fg):
        f, g = fg
        f = eps * log_a - eps * _lse((g[None, :] - C) / eps, axis=1)
        g = eps * log_b - eps * _lse((f[:, None] - C) / eps, axis=0)
        return f, g

    f, g = lax.fori_loop(0, 20, body, (np.zeros(n), np.zeros(m)))
    P = np.exp((f[:, None] + g[None, :] - C) / eps)
    return np.sum(P * C)


def sinkhorn_scaling(C, a, b):
    K = np.exp(-C / 0.7)
    u = np.ones_like(a)
    for _ in range(15):
        v = b / (K.T @ u)
        u = a / (K @ v)
    P = u[:, None] * K * v[None, :]
    return np.sum(P * C)


def _reg_ot(x, y):
    C = _cost(x, y)
    f = np.zeros(x.shape[0])
    g = np.zeros(y.shape[0])
    for _ in range(10):
        f = -0.5 * _lse((g[None, :] - C) / 0.5, axis=1) - 0.5 * math.log(y.shape[0])
        g = -0.5 * _lse((f[:, None] - C) / 0.5, axis=0) - 0.5 * math.log(x.shape[0])
    return np.mean(f) + np.mean(g)


def sinkhorn_divergence(x, y):
    return _reg_ot(x, y) - 0.5 * _reg_ot(x, x) - 0.5 * _reg_ot(y, y)


def wasserstein_1d(u, v):
    return np.mean(np.abs(np.sort(u) - np.sort(v)) ** 2)


def soft_sort(x, tau=0.3):
    # a softmax relaxation of the sorting permutation (NeuralSort's P_hat)
    n = x.shape[0]
    A = np.abs(x[:, None] - x[None, :])
    B = A @ np.ones(n)
    scaling = (n + 1 - 2 * (np.arange(n) + 1)).astype(x.dtype)
    C = x[None, :] * scaling[:, None]
    P = np.exp(_log_softmax((C - B[None, :]) / tau, axis=-1))
    return P @ x


# == diffrax / optimistix =========================================================================================

DOPRI_A = [[], [1 / 5], [3 / 40, 9 / 40], [44 / 45, -56 / 15, 32 / 9]]
DOPRI_B = [0.2, 0.3, 0.3, 0.2]
DOPRI_C = [0.0, 0.2, 0.3, 0.8]


def _vf(t, y, k):
    return np.stack([y[1], -k * np.sin(y[0]) - 0.1 * y[1] + 0.05 * np.cos(t)])


def tableau_rk_steps(y0, k):
    h, t, y = 0.1, 0.0, y0
    for _ in range(4):
        ks = []
        for i, row in enumerate(DOPRI_A):
            yi = y
            for a, kj in zip(row, ks):
                yi = yi + h * a * kj
            ks.append(_vf(t + DOPRI_C[i] * h, yi, k))
        y = y + h * sum(b * kk for b, kk in zip(DOPRI_B, ks))
        t = t + h
    return y


def bogacki_shampine(y0, p):
    def f(y):
        return np.array([p[0] * y[0] - p[1] * y[0] * y[1], -p[2] * y[1] + p[1] * y[0] * y[1]])

    h, y, err_total = 0.05, y0, 0.0
    for _ in range(5):
        k1 = f(y)
        k2 = f(y + 0.5 * h * k1)
        k3 = f(y + 0.75 * h * k2)
        y_new = y + h * (2 * k1 + 3 * k2 + 4 * k3) / 9
        k4 = f(y_new)
        err = h * (-5 * k1 / 72 + k2 / 12 + k3 / 9 - k4 / 8)
        err_total = err_total + np.sqrt(np.mean(err ** 2))
        y = y_new
    return y, err_total


def euler_maruyama(x0, theta, dW):
    def step(x, dw):
        x = x + theta * (1.0 - x) * 0.1 + 0.3 * x * dw
        return x, x * x

    x, sq = lax.scan(step, x0, dW)
    return np.mean(sq) + x


def implicit_euler_newton(y0, lam):
    # y' = -lam * y ** 3 + sin(y), one implicit Euler step of h by three Newton iterations per step
    h, y = 0.2, y0
    for _ in range(3):
        z = y
        for _ in range(3):
            F = z - y - h * (-lam * z ** 3 + np.sin(z))
            J = np.diag(1.0 - h * (-3 * lam * z ** 2 + np.cos(z)))
            z = z - np.linalg.solve(J, F)
        y = z
    return np.sum(y ** 2)


def neural_ode(params, y0):
    def f(y):
        h = np.tanh(params["w1"] @ y + params["b1"])
        return params["w2"] @ h

    y, h = y0, 0.25
    for _ in range(3):
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def gauss_newton(theta, t, y):
    def residual(th):
        return th[0] * np.exp(-th[1] * t) - y

    for _ in range(3):
        J = srcjax.jacfwd(residual)(theta)
        r = residual(theta)
        theta = theta - np.linalg.solve(J.T @ J + 1e-6 * np.eye(2), J.T @ r)
    return np.sum(residual(theta) ** 2)


def levenberg_marquardt(theta, t, y):
    def residual(th):
        return th[0] * np.sin(th[1] * t) - y

    mu = 1.0
    for _ in range(3):
        J = srcjax.jacfwd(residual)(theta)
        r = residual(theta)
        step = np.linalg.solve(J.T @ J + mu * np.eye(2), J.T @ r)
        cand = theta - step
        better = np.sum(residual(cand) ** 2) < np.sum(r ** 2)
        theta = np.where(better, cand, theta)
        mu = np.where(better, mu * 0.5, mu * 2.0)
    return theta


def damped_fixed_point(x):
    def body(c):
        z, k = c
        return 0.5 * z + 0.5 * np.cos(z) * x, k + 1

    z, _ = lax.while_loop(lambda c: c[1] < 12, body, (np.zeros_like(x), 0))
    return z


def bisection_on_data(c):
    # the root of t**3 + t - c in [-3, 3]: a Python while whose stop reads the data
    lo, hi = -3.0, 3.0
    while hi - lo > 1e-3:
        mid = 0.5 * (lo + hi)
        if mid ** 3 + mid - c < 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


# == jaxopt =======================================================================================================


def _soft_threshold(x, t):
    return np.sign(x) * np.maximum(np.abs(x) - t, 0.0)


def ista_lasso(w, X, y, lam):
    L = np.linalg.norm(X, ord=2) ** 2 / X.shape[0]

    def body(i, w):
        g = X.T @ (X @ w - y) / X.shape[0]
        return _soft_threshold(w - g / L, lam / L)

    w = lax.fori_loop(0, 8, body, w)
    return 0.5 * np.mean((X @ w - y) ** 2) + lam * np.sum(np.abs(w))


def projections(x, a, b):
    box = np.clip(x, -0.5, 0.5)
    ball = x / np.maximum(1.0, np.linalg.norm(x))
    hyper = x - (np.dot(a, x) - b) / np.dot(a, a) * a
    return box + 2.0 * ball + 3.0 * hyper


def mirror_descent_simplex(logits, A):
    p = np.exp(_log_softmax(logits))
    for _ in range(4):
        g = srcjax.grad(lambda q: q @ A @ q + np.sum(q ** 3))(p)
        p = p * np.exp(-0.5 * g)
        p = p / np.sum(p)
    return p


def polyak_sgd(w, X, y):
    def loss(w):
        return np.mean((X @ w - y) ** 2)

    for _ in range(3):
        val, g = srcjax.value_and_grad(loss)(w)
        step = val / (np.sum(g * g) + 1e-12)
        w = w - np.minimum(step, 1.0) * g
    return loss(w)


# == distrax / tfp ================================================================================================


def beta_logpdf(a, b, x):
    return np.sum((a - 1) * np.log(x) + (b - 1) * np.log1p(-x)
                  - (lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b)))


def dirichlet_multinomial(alpha, counts):
    n = np.sum(counts)
    a0 = np.sum(alpha)
    return (lax.lgamma(a0) - lax.lgamma(n + a0) + np.sum(lax.lgamma(counts + alpha) - lax.lgamma(alpha))
            + lax.lgamma(n + 1.0) - np.sum(lax.lgamma(counts + 1.0)))


def heavy_tails_logpdf(x, loc, log_scale):
    s = np.exp(log_scale)
    z = (x - loc) / s
    df = 4.0
    student = (lax.lgamma((df + 1) / 2) - lax.lgamma(df / 2) - 0.5 * math.log(df * math.pi) - log_scale
               - (df + 1) / 2 * np.log1p(z ** 2 / df))
    laplace = -np.abs(z) - log_scale - math.log(2.0)
    logistic = -z - log_scale - 2.0 * _softplus(-z)
    gumbel = -(z + np.exp(-z)) - log_scale
    cauchy = -math.log(math.pi) - log_scale - np.log1p(z ** 2)
    return np.sum(student + laplace + logistic + gumbel + cauchy)


def weibull_logpdf(k, lam, x):
    return np.sum(np.log(k / lam) + (k - 1) * np.log(x / lam) - (x / lam) ** k)


def truncated_normal_logpdf(x, mu, sigma):
    lo, hi = -1.0, 2.0

    def cdf(z):
        return 0.5 * (1.0 + lax.erf(z / math.sqrt(2.0)))

    z = (x - mu) / sigma
    Z = cdf((hi - mu) / sigma) - cdf((lo - mu) / sigma)
    return np.sum(-0.5 * z ** 2 - 0.5 * math.log(2 * math.pi) - np.log(sigma) - np.log(Z))


def von_mises_logpdf(x, mu, kappa):
    # log I0 by its power series (ten terms)
    half = kappa / 2.0
    i0 = 1.0
    term = 1.0
    for k in range(1, 10):
        term = term * half * half / (k * k)
        i0 = i0 + term
    return np.sum(kappa * np.cos(x - mu) - math.log(2 * math.pi) - np.log(i0))


def mixture_logprob(x, logits, means, log_scales):
    log_w = _log_softmax(logits)
    z = (x[:, None] - means[None, :]) / np.exp(log_scales)[None, :]
    comp = -0.5 * z ** 2 - log_scales[None, :] - 0.5 * math.log(2 * math.pi)
    return np.sum(_lse(comp + log_w[None, :], axis=1))


def mvn_tril_logpdf(x, mu, L_raw):
    L = np.tril(L_raw, -1) + np.diag(np.exp(np.diag(L_raw)))
    d = x - mu
    z = np.linalg.solve(L, d.T).T
    logdet = np.sum(np.log(np.diag(L)))
    return np.sum(-0.5 * np.sum(z ** 2, axis=1) - logdet - 0.5 * x.shape[1] * math.log(2 * math.pi))


def bijector_chain(x, shift, log_scale):
    # Chain([Affine, Softplus, Tanh-free sigmoid]) forward with its log-det-Jacobian
    y1 = shift + np.exp(log_scale) * x
    ldj = log_scale * np.ones_like(x)
    y2 = _softplus(y1)
    ldj = ldj - _softplus(-y1)
    y3 = 1.0 / (1.0 + np.exp(-y2))
    ldj = ldj + np.log(y3) + np.log1p(-y3)
    return np.sum(y3) + np.sum(ldj)


def planar_flow(z, u, w, b):
    lin = z @ w + b
    h = np.tanh(lin)
    out = z + h[:, None] * u[None, :]
    psi = (1.0 - h ** 2)[:, None] * w[None, :]
    logdet = np.log(np.abs(1.0 + psi @ u))
    return np.sum(-0.5 * out ** 2) + np.sum(logdet)


def realnvp_coupling(x, params):
    mask = np.array([1.0, 0.0, 1.0, 0.0])
    xm = x * mask
    h = np.tanh(xm @ params["w"] + params["b"])
    s = np.tanh(h @ params["ws"]) * (1.0 - mask)
    t = (h @ params["wt"]) * (1.0 - mask)
    y = xm + (1.0 - mask) * (x * np.exp(s) + t)
    return np.sum(-0.5 * y ** 2) + np.sum(s)


# == numpyro / blackjax ===========================================================================================


def _logdensity(q):
    return -0.5 * np.sum(q ** 2 * np.array([1.0, 4.0])) - 0.25 * np.sum(q ** 4)


def hmc_step(key, q0):
    k_mom, k_acc = random.split(key)
    p0 = random.normal(k_mom, q0.shape)
    eps = 0.1
    q, p = q0, p0 + 0.5 * eps * srcjax.grad(_logdensity)(q0)
    for i in range(5):
        q = q + eps * p
        if i < 4:
            p = p + eps * srcjax.grad(_logdensity)(q)
    p = p + 0.5 * eps * srcjax.grad(_logdensity)(q)
    log_accept = _logdensity(q) - 0.5 * np.sum(p ** 2) - _logdensity(q0) + 0.5 * np.sum(p0 ** 2)
    u = random.uniform(k_acc)
    return np.where(np.log(u) < log_accept, q, q0)


def mala_chain(key, q):
    eps = 0.2
    for k in random.split(key, 3):
        k1, k2 = random.split(k)
        g = srcjax.grad(_logdensity)(q)
        prop = q + 0.5 * eps ** 2 * g + eps * random.normal(k1, q.shape)
        g_prop = srcjax.grad(_logdensity)(prop)
        fwd = -np.sum((prop - q - 0.5 * eps ** 2 * g) ** 2) / (2 * eps ** 2)
        bwd = -np.sum((q - prop - 0.5 * eps ** 2 * g_prop) ** 2) / (2 * eps ** 2)
        log_a = _logdensity(prop) - _logdensity(q) + bwd - fwd
        q = np.where(np.log(random.uniform(k2)) < log_a, prop, q)
    return q


def sgld_steps(key, w, X, y):
    def loglik(w):
        return -0.5 * np.sum((X @ w - y) ** 2) - 0.5 * np.sum(w ** 2)

    for _ in range(3):
        key, sub = random.split(key)
        w = w + 0.01 * srcjax.grad(loglik)(w) + math.sqrt(0.02) * random.normal(sub, w.shape)
    return loglik(w)


def iwae_bound(key, mu, log_sigma, x):
    eps = random.normal(key, (6, mu.shape[0]))
    z = mu + np.exp(log_sigma) * eps
    log_q = np.sum(-0.5 * eps ** 2 - log_sigma - 0.5 * math.log(2 * math.pi), axis=1)
    log_prior = np.sum(-0.5 * z ** 2, axis=1)
    log_lik = np.sum(-0.5 * (x[None, :] - np.tanh(z)) ** 2, axis=1)
    log_w = log_prior + log_lik - log_q
    return _lse(log_w, axis=0) - math.log(6)


# == flax / haiku modules as functions of dict parameters ========================================================


def _dense(p, x):
    return x @ p["kernel"] + p["bias"]


def _layer_norm(p, x, eps=1e-5):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * p["scale"] + p["offset"]


def mlp_block(params, x):
    h = _layer_norm(params["ln"], x)
    h = _dense(params["dense1"], h)
    h = h * 0.5 * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))
    return x + _dense(params["dense2"], h)


def mha_causal(params, x, n_heads=2):
    T, D = x.shape
    hd = D // n_heads
    q = (x @ params["wq"]).reshape(T, n_heads, hd).transpose(1, 0, 2)
    k = (x @ params["wk"]).reshape(T, n_heads, hd).transpose(1, 0, 2)
    v = (x @ params["wv"]).reshape(T, n_heads, hd).transpose(1, 0, 2)
    s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
    mask = np.tril(np.ones((T, T), dtype=bool))
    s = np.where(mask[None], s, -1e9)
    a = np.exp(_log_softmax(s))
    o = (a @ v).transpose(1, 0, 2).reshape(T, D)
    return o @ params["wo"]


def gru_scan(params, h0, xs):
    def cell(h, x):
        z = 1.0 / (1.0 + np.exp(-(x @ params["wz"] + h @ params["uz"])))
        r = 1.0 / (1.0 + np.exp(-(x @ params["wr"] + h @ params["ur"])))
        n = np.tanh(x @ params["wn"] + (r * h) @ params["un"])
        h = (1.0 - z) * n + z * h
        return h, np.sum(h)

    h, ys = lax.scan(cell, h0, xs)
    return np.sum(h ** 2) + np.sum(ys)


def lstm_unrolled(params, xs):
    H = params["w_hh"].shape[0]
    h, c = np.zeros(H), np.zeros(H)
    outs = []
    for t in range(xs.shape[0]):
        gates = xs[t] @ params["w_ih"] + h @ params["w_hh"] + params["b"]
        i, f, g, o = np.split(gates, 4)
        i, f, o = [1.0 / (1.0 + np.exp(-u)) for u in (i, f + 1.0, o)]
        c = f * c + i * np.tanh(g)
        h = o * np.tanh(c)
        outs.append(h)
    return np.stack(outs).sum(axis=0) @ params["w_out"]


def conv1d_strided(x, w, stride=2, dilation=2):
    # x (T, C_in), w (K, C_in, C_out): 'VALID' with stride and dilation, by slicing
    K = w.shape[0]
    span = (K - 1) * dilation + 1
    T_out = (x.shape[0] - span) // stride + 1
    out = 0.0
    for k in range(K):
        start = k * dilation
        xs = x[start: start + stride * (T_out - 1) + 1: stride]
        out = out + xs @ w[k]
    return np.maximum(out, 0.0)


def embed_mean_pool(table, ids, w):
    e = table[ids]
    mask = (ids > 0).astype(table.dtype)
    pooled = np.sum(e * mask[..., None], axis=1) / np.maximum(np.sum(mask, axis=1, keepdims=True), 1.0)
    return np.sum(np.tanh(pooled @ w))


def batch_norm_train(params, state, x):
    mean = np.mean(x, axis=0)
    var = np.var(x, axis=0)
    y = (x - mean) / np.sqrt(var + 1e-5) * params["scale"] + params["bias"]
    new_state = {"mean": 0.9 * state["mean"] + 0.1 * mean, "var": 0.9 * state["var"] + 0.1 * var}
    return np.sum(np.tanh(y)), new_state


def dropout_mlp(key, params, x, deterministic=False):
    h = np.maximum(x @ params["w1"], 0.0)
    if not deterministic:
        keep = random.bernoulli(key, 0.75, h.shape)
        h = np.where(keep, h / 0.75, 0.0)
    return np.sum((h @ params["w2"]) ** 2)


def transformer_block(params, x):
    h = x + mha_causal(params["attn"], _layer_norm(params["ln1"], x))
    return mlp_block({"ln": params["ln2"], "dense1": params["mlp1"], "dense2": params["mlp2"]}, h)


def moe_top1(params, x):
    gate_logits = x @ params["gate"]
    probs = np.exp(_log_softmax(gate_logits))
    top = np.argmax(probs, axis=-1)
    onehot = np.eye(params["experts"].shape[0])[top]
    expert_out = np.einsum("td,edh->teh", x, params["experts"])
    chosen = np.einsum("teh,te->th", expert_out, onehot)
    weight = np.max(probs, axis=-1, keepdims=True)
    aux = np.sum(np.mean(onehot, axis=0) * np.mean(probs, axis=0)) * probs.shape[1]
    return np.sum(np.tanh(chosen * weight)) + 0.01 * aux


def rotary_attention_scores(q, k):
    T, D = q.shape
    half = D // 2
    freqs = 1.0 / (10000.0 ** (np.arange(half) / half))
    ang = np.arange(T)[:, None] * freqs[None, :]
    cos, sin = np.cos(ang), np.sin(ang)

    def rot(x):
        x1, x2 = x[:, :half], x[:, half:]
        return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)

    return rot(q) @ rot(k).T


def spectral_norm_dense(W, x, u0):
    u = u0
    for _ in range(3):
        v = W.T @ u
        v = v / np.linalg.norm(v)
        u = W @ v
        u = u / np.linalg.norm(u)
    sigma = lax.stop_gradient(u) @ W @ lax.stop_gradient(v)
    return np.sum(np.tanh(x @ (W / sigma).T))


# == losses =======================================================================================================


def nt_xent(z1, z2, tau=0.5):
    z = np.concatenate([z1, z2], axis=0)
    z = z / np.linalg.norm(z, axis=1, keepdims=True)
    n = z1.shape[0]
    sim = z @ z.T / tau
    sim = sim - 1e9 * np.eye(2 * n)
    pos = np.concatenate([np.arange(n, 2 * n), np.arange(n)])
    logp = _log_softmax(sim, axis=1)
    return -np.mean(logp[np.arange(2 * n), pos])


def triplet_hardest(emb, labels):
    d = np.sqrt(np.sum((emb[:, None] - emb[None, :]) ** 2, axis=-1) + 1e-9)
    same = labels[:, None] == labels[None, :]
    hardest_pos = np.max(np.where(same, d, 0.0), axis=1)
    hardest_neg = np.min(np.where(same, 1e6, d), axis=1)
    return np.mean(np.maximum(hardest_pos - hardest_neg + 0.3, 0.0))


def focal_multiclass(logits, labels, gamma=2.0):
    logp = _log_softmax(logits)
    logp_t = np.take_along_axis(logp, labels[:, None], axis=1)[:, 0]
    p_t = np.exp(logp_t)
    alpha = np.array([0.25, 0.5, 0.25])[labels]
    return -np.mean(alpha * (1.0 - p_t) ** gamma * logp_t)


def dice_loss(logits, target):
    p = 1.0 / (1.0 + np.exp(-logits))
    inter = np.sum(p * target, axis=(1, 2))
    union = np.sum(p, axis=(1, 2)) + np.sum(target, axis=(1, 2))
    return 1.0 - np.mean((2.0 * inter + 1.0) / (union + 1.0))


def arcface(emb, W, labels, s=8.0, m=0.3):
    e = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    w = W / np.linalg.norm(W, axis=0, keepdims=True)
    cos = np.clip(e @ w, -1.0 + 1e-6, 1.0 - 1e-6)
    theta = np.arccos(cos)
    onehot = np.eye(W.shape[1])[labels]
    logits = s * np.where(onehot > 0, np.cos(theta + m), cos)
    return -np.mean(np.sum(onehot * _log_softmax(logits), axis=1))


def poisson_pinball(log_rate, counts, pred, y):
    poisson = np.mean(np.exp(log_rate) - counts * log_rate + lax.lgamma(counts + 1.0))
    losses = []
    for q in (0.1, 0.5, 0.9):
        e = y - pred
        losses.append(np.mean(np.maximum(q * e, (q - 1) * e)))
    return poisson + sum(losses)


def smoothed_xent_ignore(logits, labels, eps=0.1):
    C = logits.shape[-1]
    valid = labels >= 0
    safe = np.where(valid, labels, 0)
    target = (1.0 - eps) * np.eye(C)[safe] + eps / C
    nll = -np.sum(target * _log_softmax(logits), axis=-1)
    return np.sum(np.where(valid, nll, 0.0)) / np.maximum(np.sum(valid), 1)


# == physics ======================================================================================================


def heat_2d_roll(u, kappa):
    for _ in range(4):
        lap = (np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) + np.roll(u, 1, axis=1) + np.roll(u, -1, axis=1)
               - 4.0 * u)
        u = u + 0.1 * kappa * lap
    return np.sum(u ** 2)


def burgers_upwind(u, nu):
    dx, dt = 0.1, 0.02
    for _ in range(5):
        back = (u - np.roll(u, 1)) / dx
        fwd = (np.roll(u, -1) - u) / dx
        adv = np.where(u > 0, u * back, u * fwd)
        diff = nu * (np.roll(u, -1) - 2 * u + np.roll(u, 1)) / dx ** 2
        u = u + dt * (diff - adv)
    return u


def wave_slices(u0, c):
    u_prev, u = u0, u0
    r2 = (0.5 * c) ** 2
    for _ in range(4):
        interior = 2 * u[1:-1] - u_prev[1:-1] + r2 * (u[2:] - 2 * u[1:-1] + u[:-2])
        u_prev, u = u, np.concatenate([np.zeros(1), interior, np.zeros(1)])
    return np.sum(u ** 2) + np.sum(u * u_prev)


def _potential(pos, masses):
    d = pos[:, None, :] - pos[None, :, :]
    r = np.sqrt(np.sum(d ** 2, axis=-1) + 0.1)
    mm = masses[:, None] * masses[None, :]
    return -0.5 * np.sum(np.where(np.eye(pos.shape[0]) > 0, 0.0, mm / r))


def nbody_leapfrog(pos, vel, masses):
    dt = 0.05
    acc = -srcjax.grad(_potential)(pos, masses) / masses[:, None]
    for _ in range(3):
        vel = vel + 0.5 * dt * acc
        pos = pos + dt * vel
        acc = -srcjax.grad(_potential)(pos, masses) / masses[:, None]
        vel = vel + 0.5 * dt * acc
    kinetic = 0.5 * np.sum(masses[:, None] * vel ** 2)
    return kinetic + _potential(pos, masses)


def spring_network_step(pos, vel, k):
    def forces(p):
        d = p[SENDERS] - p[RECEIVERS]
        length = np.sqrt(np.sum(d ** 2, axis=1))
        f = (-k * (length - 1.0) / length)[:, None] * d
        return np.zeros_like(p).at[SENDERS].add(f).at[RECEIVERS].add(-f)

    for _ in range(3):
        vel = 0.95 * vel + 0.05 * forces(pos)
        pos = pos + 0.05 * vel
    return np.sum(pos ** 2) + np.sum(vel)


def advection_diffusion_fori(u, a):
    def body(i, u):
        up = np.pad(u, 1, mode="edge")
        return u - 0.1 * a * (up[2:] - up[:-2]) / 2 + 0.05 * (up[2:] - 2 * u + up[:-2])

    return lax.fori_loop(0, 5, body, u)


# == signal processing ============================================================================================


def conv_valid_multichannel(x, w, b):
    # x (C_in, T), w (C_out, C_in, K)
    K = w.shape[2]
    T_out = x.shape[1] - K + 1
    out = np.zeros((w.shape[0], T_out)) + b[:, None]
    for k in range(K):
        out = out + w[:, :, k] @ x[:, k: k + T_out]
    return np.sum(np.tanh(out))


def biquad_scan(x, coeffs):
    b0, b1, b2, a1, a2 = coeffs[0], coeffs[1], coeffs[2], coeffs[3], coeffs[4]

    def step(state, xn):
        z1, z2 = state
        y = b0 * xn + z1
        z1 = b1 * xn - a1 * y + z2
        z2 = b2 * xn - a2 * y
        return (z1, z2), y

    _, y = lax.scan(step, (0.0 * b0, 0.0 * b0), x)
    return y


def dft_power(x):
    N = x.shape[0]
    n = np.arange(N)
    ang = 2 * np.pi * np.outer(n, n) / N
    re = np.cos(ang) @ x
    im = -np.sin(ang) @ x
    power = re ** 2 + im ** 2
    return power[: N // 2 + 1] / N


def ema_and_cma(x, alpha):
    cma = np.cumsum(x) / np.arange(1, x.shape[0] + 1)

    def step(m, xi):
        m = alpha * xi + (1.0 - alpha) * m
        return m, m

    _, ema = lax.scan(step, x[0], x)
    return np.sum((ema - cma) ** 2)


# == finance ======================================================================================================


def asian_option(s0, sigma, Z):
    r, T = 0.02, 1.0
    n = Z.shape[1]
    dt = T / n
    log_inc = (r - 0.5 * sigma ** 2) * dt + sigma * math.sqrt(dt) * Z
    paths = s0 * np.exp(np.cumsum(log_inc, axis=1))
    avg = np.mean(paths, axis=1)
    return math.exp(-r * T) * np.mean(np.maximum(avg - 1.0, 0.0))


def barrier_option(s0, sigma, Z):
    dt = 0.25
    growth = np.exp(-0.5 * sigma ** 2 * dt + sigma * math.sqrt(dt) * Z)
    paths = s0 * np.cumprod(growth, axis=1)
    alive = np.all(paths < 1.4, axis=1)
    payoff = np.where(alive, np.maximum(paths[:, -1] - 1.0, 0.0), 0.0)
    return np.mean(payoff)


def bond_duration(rates, coupon):
    disc = np.cumprod(1.0 / (1.0 + rates))
    cash = np.full(rates.shape[0], coupon).at[-1].add(1.0)
    pv = cash * disc
    price = np.sum(pv)
    duration = np.sum(np.arange(1, rates.shape[0] + 1) * pv) / price
    return price, duration


def garch_loglik(params, r):
    omega, alpha, beta = np.exp(params[0]), 1.0 / (1.0 + np.exp(-params[1])), 1.0 / (1.0 + np.exp(-params[2]))
    s2 = np.var(r)
    ll = 0.0
    for t in range(r.shape[0]):
        ll = ll - 0.5 * (np.log(2 * np.pi * s2) + r[t] ** 2 / s2)
        s2 = omega + 0.5 * alpha * r[t] ** 2 + 0.5 * beta * s2
    return ll


def cvar_sorted(w, returns):
    port = returns @ w
    losses = np.sort(-port)
    k = losses.shape[0] // 4
    var = losses[-k - 1]
    return np.mean(losses[-k:]) + 0.1 * var


# == SciPy-style numerics =========================================================================================

GL_NODES = np.array([-0.906179845938664, -0.538469310105683, 0.0, 0.538469310105683, 0.906179845938664])
GL_WEIGHTS = np.array([0.236926885056189, 0.478628670499366, 0.568888888888889, 0.478628670499366,
                       0.236926885056189])


def gauss_legendre(a, b, k):
    t = 0.5 * (b - a) * GL_NODES[:, None] + 0.5 * (b + a)
    vals = np.exp(-k[None, :] * t ** 2) * np.cos(t)
    return 0.5 * (b - a) * GL_WEIGHTS @ vals


def secant_root(c):
    x0, x1 = np.zeros_like(c), np.ones_like(c)
    for _ in range(6):
        f0 = x0 ** 3 + 2 * x0 - c
        f1 = x1 ** 3 + 2 * x1 - c
        x0, x1 = x1, x1 - f1 * (x1 - x0) / (f1 - f0)
    return x1


def hermite_interp(xq, ys, ds):
    xs = np.linspace(0.0, 1.0, ys.shape[0])
    i = np.clip(np.searchsorted(xs, xq, side="right") - 1, 0, xs.shape[0] - 2)
    h = xs[i + 1] - xs[i]
    t = (xq - xs[i]) / h
    h00, h10 = 2 * t ** 3 - 3 * t ** 2 + 1, t ** 3 - 2 * t ** 2 + t
    h01, h11 = -2 * t ** 3 + 3 * t ** 2, t ** 3 - t ** 2
    return h00 * ys[i] + h10 * h * ds[i] + h01 * ys[i + 1] + h11 * h * ds[i + 1]


def cumulative_trapezoid(y, dx):
    inc = 0.5 * dx * (y[1:] + y[:-1])
    return np.concatenate([np.zeros(1), np.cumsum(inc)])


class State(NamedTuple):
    x: np.ndarray
    v: np.ndarray


def verlet_namedtuple(s, k):
    def acc(x):
        return -k * x - 0.1 * x ** 3

    for _ in range(4):
        v_half = s.v + 0.05 * acc(s.x)
        x = s.x + 0.1 * v_half
        s = State(x, v_half + 0.05 * acc(x))
    return 0.5 * np.sum(s.v ** 2) + 0.5 * k * np.sum(s.x ** 2)
