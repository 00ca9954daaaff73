"""Real code that uses ``jax.vmap``, ported to srcjax's names: the corpus of tests/test_vmap16_programs.py.

Ported from where JAX users meet vmap: JAX's autodiff cookbook (Hessian-vector products, per-example gradients,
Jacobians built by vmap over vjp/jvp), the "Automatic vectorization" tutorial (``convolve``) and "Training a
simple neural network" (``batched_predict``), empirical neural tangent kernels (contractions of Jacobians),
MAML on sinusoids (grad through an inner SGD step, vmapped over tasks), ensembles (vmap over stacked
parameters), Gaussian-process kernels made by nested vmap, batched ODE solvers (RK4 in ``fori_loop``/``while``),
batched Newton and bisection with per-example trip counts, ``lax.scan`` RNNs vmapped over a batch,
``lax.cond``/``switch`` under vmap, ``custom_vjp``/``custom_jvp`` functions (a safe log, a clipped gradient),
dict/NamedTuple parameters with in_axes prefixes, jax-md style pairwise energies (``vmap(vmap(displacement))``),
optax-style updates with ``tree_map`` inside vmap. Written with ``srcjax.vmap``, ``srcjax.lax``,
``srcjax.tree_util``; the test runs the same text with ``srcjax`` bound to jax (and ``np`` to jax.numpy), and
with ``srcjax`` bound to a NumPy stand-in (vmap as a loop over examples, derivatives by finite differences).
Nothing here knows about the test.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import srcjax

# -- the autodiff cookbook ------------------------------------------------------------------------------------


def cookbook_f(x):
    return np.sum(np.tanh(x) ** 2) + 0.5 * np.sum(x[:-1] * x[1:])


def hvp_fwd_over_rev(x, v):
    # cookbook: "forward-over-reverse" hvp(f, primals, tangents) = jvp(grad(f), primals, tangents)[1]
    return srcjax.jvp(srcjax.grad(cookbook_f), (x,), (v,))[1]


def hessian_by_vmapped_hvp(x):
    # cookbook: a Hessian is vmap of hvp over the standard basis
    def hvp(v):
        return srcjax.jvp(srcjax.grad(cookbook_f), (x,), (v,))[1]

    return srcjax.vmap(hvp)(np.eye(x.shape[0], dtype=x.dtype))


def logistic_predict(W, b, inputs):
    # cookbook's running example: logistic regression
    return 0.5 * (np.tanh((inputs @ W + b) / 2) + 1)


def logistic_loss(W, b, inputs, targets):
    preds = logistic_predict(W, b, inputs)
    label_probs = preds * targets + (1 - preds) * (1 - targets)
    return -np.sum(np.log(label_probs))


def per_example_logistic_grads(W, b, inputs, targets):
    # cookbook: per-example gradients, vmap(grad(loss), in_axes=(None, None, 0, 0)) of a one-example loss
    def one(W, b, x, t):
        return logistic_loss(W, b, x[None], t[None])

    gW, gb = srcjax.vmap(srcjax.grad(one, argnums=(0, 1)), in_axes=(None, None, 0, 0))(W, b, inputs, targets)
    return gW, gb


def jacobian_rows_by_vmapped_vjp(x):
    # cookbook: jacrev is vmap of a vjp over the rows of the identity
    def g(x):
        return np.sin(x) * np.cumsum(x)

    y, vjp_fun = srcjax.vjp(g, x)
    (J,) = srcjax.vmap(vjp_fun)(np.eye(y.shape[0], dtype=y.dtype))
    return J


def jacobian_columns_by_vmapped_jvp(x):
    # cookbook: jacfwd is vmap of a jvp over the standard basis, out_axes=(None, 1)
    def g(x):
        return np.exp(-x) * np.sum(x ** 2)

    def pushfwd(t):
        return srcjax.jvp(g, (x,), (t,))

    y, J = srcjax.vmap(pushfwd, out_axes=(None, 1))(np.eye(x.shape[0], dtype=x.dtype))
    return y, J


def directional_derivatives(x, vs):
    # many directional derivatives of one function at one point
    def f(x):
        return np.log(np.sum(np.exp(x))) + np.sum(x ** 3) / 3

    return srcjax.vmap(lambda v: srcjax.jvp(f, (x,), (v,))[1])(vs)


def predict_tanh_layer(W, x):
    return np.tanh(W @ x)


# -- the vmap tutorial, and "training a simple neural network" ------------------------------------------------


def convolve(x, w):
    # the "Automatic vectorization" tutorial, as written there
    output = []
    for i in range(1, len(x) - 1):
        output.append(np.dot(x[i - 1:i + 2], w))
    return np.array(output)


def relu(x):
    return np.maximum(0, x)


def logsumexp(x):
    c = np.max(x)
    return c + np.log(np.sum(np.exp(x - c)))


def predict_image(params, image):
    # per-example predictions: "Training a simple neural network, with tensorflow datasets"
    activations = image
    for w, b in params[:-1]:
        outputs = np.dot(w, activations) + b
        activations = relu(outputs)
    final_w, final_b = params[-1]
    logits = np.dot(final_w, activations) + final_b
    return logits - logsumexp(logits)


def mlp_batched_loss(params, images, targets):
    batched_predict = srcjax.vmap(predict_image, in_axes=(None, 0))
    preds = batched_predict(params, images)
    return -np.mean(preds * targets)


def mlp_sgd_update(params, images, targets):
    grads = srcjax.grad(mlp_batched_loss)(params, images, targets)
    return [(w - 0.01 * dw, b - 0.01 * db) for (w, b), (dw, db) in zip(params, grads)]


# -- neural tangent kernels -----------------------------------------------------------------------------------


def ntk_net(params, x):
    h = np.tanh(params["w1"] @ x + params["b1"])
    return params["w2"] @ h + params["b2"]


def empirical_ntk(params, x1, x2):
    # functorch/jax NTK tutorial: Jacobians per example, contracted over every parameter leaf
    jac1 = srcjax.vmap(srcjax.jacrev(ntk_net), (None, 0))(params, x1)
    jac2 = srcjax.vmap(srcjax.jacrev(ntk_net), (None, 0))(params, x2)
    jac1 = [j.reshape(j.shape[0], j.shape[1], -1) for j in srcjax.tree_util.tree_leaves(jac1)]
    jac2 = [j.reshape(j.shape[0], j.shape[1], -1) for j in srcjax.tree_util.tree_leaves(jac2)]
    result = 0.0
    for j1, j2 in zip(jac1, jac2):
        result = result + np.einsum("Naf,Mbf->NMab", j1, j2)
    return result


def scalar_net(params, x):
    return np.sum(ntk_net(params, x))


def ntk_by_nested_vmap_of_grads(params, x1, x2):
    # the kernel of a scalar network, one gradient dot product per pair, vmap(vmap(...))
    def pair(a, b):
        ga = srcjax.grad(scalar_net)(params, a)
        gb = srcjax.grad(scalar_net)(params, b)
        return sum(np.sum(u * v) for u, v in zip(srcjax.tree_util.tree_leaves(ga), srcjax.tree_util.tree_leaves(gb)))

    return srcjax.vmap(srcjax.vmap(pair, in_axes=(None, 0)), in_axes=(0, None))(x1, x2)


# -- MAML (Eric Jang's sinusoid example) ------------------------------------------------------------------------


def sine_net(params, inputs):
    h = np.tanh(inputs @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def sine_mse(params, inputs, targets):
    predictions = sine_net(params, inputs)
    return np.mean((targets - predictions) ** 2)


def inner_update(p, x1, y1, alpha=0.1):
    grads = srcjax.grad(sine_mse)(p, x1, y1)
    return srcjax.tree_util.tree_map(lambda p, g: p - alpha * g, p, grads)


def maml_loss(p, x1, y1, x2, y2):
    p2 = inner_update(p, x1, y1)
    return sine_mse(p2, x2, y2)


def batch_maml_loss(p, x1_b, y1_b, x2_b, y2_b):
    task_losses = srcjax.vmap(maml_loss, in_axes=(None, 0, 0, 0, 0))(p, x1_b, y1_b, x2_b, y2_b)
    return np.mean(task_losses)


def maml_meta_step(p, x1_b, y1_b, x2_b, y2_b):
    g = srcjax.grad(batch_maml_loss)(p, x1_b, y1_b, x2_b, y2_b)
    return srcjax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g)


# -- ensembles: vmap over stacked parameters -----------------------------------------------------------------


def member_predict(params, x):
    h = np.tanh(x @ params["w1"] + params["b1"])
    return h @ params["w2"]


def ensemble_mean_and_spread(stacked, x):
    preds = srcjax.vmap(member_predict, in_axes=(0, None))(stacked, x)
    return np.mean(preds, axis=0), np.std(preds, axis=0)


def member_sgd_step(params, x, y):
    def loss(p):
        return np.mean((member_predict(p, x) - y) ** 2)

    g = srcjax.grad(loss)(params)
    return srcjax.tree_util.tree_map(lambda p, d: p - 0.05 * d, params, g)


def ensemble_train(stacked, x, y):
    # each member takes three steps on the same data
    for _ in range(3):
        stacked = srcjax.vmap(member_sgd_step, in_axes=(0, None, None))(stacked, x, y)
    return stacked


# -- Gaussian processes: kernels by nested vmap ----------------------------------------------------------------


def rbf(a, b, log_ls):
    return np.exp(-0.5 * np.sum((a - b) ** 2) / np.exp(2 * log_ls))


def gram(x1, x2, log_ls):
    return srcjax.vmap(lambda a: srcjax.vmap(lambda b: rbf(a, b, log_ls))(x2))(x1)


def gp_posterior_mean(x, y, xs, log_ls, log_noise):
    K = gram(x, x, log_ls) + np.exp(2 * log_noise) * np.eye(x.shape[0])
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return gram(xs, x, log_ls) @ alpha


def gp_neg_log_marginal(log_ls, x, y):
    K = gram(x, x, log_ls) + 0.1 * np.eye(x.shape[0])
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L)))


def matern52(a, b, log_ls):
    r = np.sqrt(np.sum((a - b) ** 2) + 1e-12) / np.exp(log_ls)
    return (1 + np.sqrt(5.0) * r + 5.0 / 3.0 * r ** 2) * np.exp(-np.sqrt(5.0) * r)


def matern_gram_trace_norm(x, log_ls):
    K = srcjax.vmap(srcjax.vmap(matern52, (None, 0, None)), (0, None, None))(x, x, log_ls)
    return np.sum(K ** 2) / np.trace(K)


# -- batched ODE solvers --------------------------------------------------------------------------------------


def lotka_volterra(y, theta):
    a, b, c, d = theta[0], theta[1], theta[2], theta[3]
    prey, pred = y[0], y[1]
    return np.array([a * prey - b * prey * pred, c * prey * pred - d * pred])


def rk4_fori(y0, theta):
    dt = 0.05

    def step(i, y):
        k1 = lotka_volterra(y, theta)
        k2 = lotka_volterra(y + dt / 2 * k1, theta)
        k3 = lotka_volterra(y + dt / 2 * k2, theta)
        k4 = lotka_volterra(y + dt * k3, theta)
        return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

    return srcjax.lax.fori_loop(0, 20, step, y0)


def rk4_until_time(y0, h):
    # a fixed step h per example, integrated until t >= 1: each example its own number of steps
    def f(y):
        return np.array([y[1], -y[0] - 0.1 * y[1]])

    def cond(state):
        t, y = state
        return t < 1.0

    def body(state):
        t, y = state
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        return t + h, y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

    t, y = srcjax.lax.while_loop(cond, body, (0.0 * h, y0))
    return y, t


def damped_euler(x0, k):
    x, v = x0, 0.0 * x0
    for _ in range(25):
        a = -k * x - 0.3 * v
        v = v + 0.04 * a
        x = x + 0.04 * v
    return x


def pendulum_energy_after(theta0, omega0):
    # semi-implicit Euler in a Python loop, the energy at the end
    th, om = theta0, omega0
    for _ in range(30):
        om = om - 0.05 * 9.81 * np.sin(th)
        th = th + 0.05 * om
    return 0.5 * om ** 2 - 9.81 * np.cos(th)


# -- batched Newton and bisection -------------------------------------------------------------------------------


def newton_cbrt(a):
    # Newton for x**3 = a with a tolerance: per-example trip counts
    def cond(state):
        x, dx, i = state
        return (np.abs(dx) > 1e-5 * np.abs(x)) & (i < 50)

    def body(state):
        x, dx, i = state
        step = (x ** 3 - a) / (3 * x ** 2)
        return x - step, step, i + 1

    x, _, n = srcjax.lax.while_loop(cond, body, (np.maximum(a, 1.0), np.ones_like(a), 0))
    return x, n


def bisection_root(c):
    # bisection for x**3 + x = c written with a Python while on data
    lo, hi = -10.0 + 0.0 * c, 10.0 + 0.0 * c
    while hi - lo > 1e-6:
        mid = 0.5 * (lo + hi)
        if mid ** 3 + mid - c > 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def newton_break(a):
    # Newton for sqrt with an early break, in a Python for loop
    x = a
    for _ in range(40):
        step = 0.5 * (x - a / x)
        x = x - step
        if np.abs(step) < 1e-12:
            break
    return x


def kepler_newton(M, e):
    # Kepler's equation E - e sin E = M, Newton's iterations until converged
    E = M + e * np.sin(M)
    delta = 1.0 + 0.0 * M
    while np.abs(delta) > 1e-6:
        delta = (E - e * np.sin(E) - M) / (1 - e * np.cos(E))
        E = E - delta
    return E


# -- lax.scan RNNs, cond and switch under vmap -----------------------------------------------------------------


def rnn_final_state(params, xs, h0):
    def cell(h, x):
        h = np.tanh(params["Wh"] @ h + params["Wx"] @ x + params["b"])
        return h, params["Wo"] @ h

    h, ys = srcjax.lax.scan(cell, h0, xs)
    return h, ys


def rnn_sequence_loss(params, xs, targets):
    def cell(h, inputs):
        x, t = inputs
        h = np.tanh(params["Wh"] @ h + params["Wx"] @ x + params["b"])
        return h, np.sum((params["Wo"] @ h - t) ** 2)

    _, losses = srcjax.lax.scan(cell, np.zeros(params["b"].shape[0], dtype=xs.dtype), (xs, targets))
    return np.mean(losses)


def cumulative_ema(xs, decay):
    def step(m, x):
        m = decay * m + (1 - decay) * x
        return m, m

    _, ms = srcjax.lax.scan(step, xs[0], xs)
    return ms


def cond_piecewise(x, t):
    return srcjax.lax.cond(t > 0, lambda v: np.sin(v) * t, lambda v: np.cos(v) - t, x)


def switch_activation(i, x):
    branches = [lambda v: np.tanh(v), lambda v: np.maximum(v, 0.0), lambda v: v / (1 + np.exp(-v))]
    return srcjax.lax.switch(i, branches, x)


def python_if_regimes(x):
    s = np.sum(x)
    if s > 1.0:
        y = np.log1p(s) * x
    elif s < -1.0:
        y = x ** 2
    else:
        y = np.sin(x)
    return y


# -- custom rules under vmap -----------------------------------------------------------------------------------


@srcjax.custom_jvp
def safe_log(x):
    return np.log(x)


@safe_log.defjvp
def safe_log_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return np.log(x), t / np.maximum(x, 1e-6)


def safe_log_loss(x):
    return np.sum(safe_log(x ** 2 + 0.5))


@srcjax.custom_vjp
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, (lo, hi)


def clip_gradient_bwd(res, g):
    lo, hi = res
    return (None, None, np.clip(g, lo, hi))


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def clipped_loss(x):
    return np.sum(clip_gradient(-0.5, 0.5, x) ** 3)


@srcjax.custom_jvp
def log1pexp(x):
    return np.log1p(np.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    ans = log1pexp(x)
    return ans, x_dot * (1 - 1 / (1 + np.exp(x)))


def softplus_regression(w, x):
    return np.mean(log1pexp(x @ w))


# -- pytrees of parameters and in_axes prefixes ------------------------------------------------------------------


class Params(NamedTuple):
    w: np.ndarray
    b: np.ndarray


def namedtuple_affine(p, x):
    return np.tanh(x @ p.w + p.b)


def dict_affine(p, x):
    return np.sin(x @ p["w"]) + p["b"]


def two_layer_dict(params, x):
    h = np.tanh(x @ params["hidden"]["w"] + params["hidden"]["b"])
    return {"out": h @ params["out"], "norm": np.sum(params["out"] ** 2)}


def moments(x):
    m = np.mean(x)
    return m, x - m, np.array([1.0, 2.0])


def batch_of_inits(scale):
    # nothing mapped: every example the same, axis_size copies
    return scale * np.linspace(-1.0, 1.0, 4)


# -- jacobians, hessians and sums of vmaps ---------------------------------------------------------------------


def lorenz(u):
    x, y, z = u[0], u[1], u[2]
    return np.array([10.0 * (y - x), x * (28.0 - z) - y, x * y - 8.0 / 3.0 * z])


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def squared_error(w, x, y):
    return (np.dot(x, w) - y) ** 2


def summed_vmap_loss(w, X, Y):
    return np.sum(srcjax.vmap(squared_error, in_axes=(None, 0, 0))(w, X, Y))


def per_example_hessian_traces(w, X):
    def loss(w, x):
        return np.log(1 + np.exp(-np.dot(w, x) ** 2))

    H = srcjax.vmap(srcjax.hessian(loss), in_axes=(None, 0))(w, X)
    return np.trace(H, axis1=1, axis2=2)


def jitted_vmapped_inner(w, X):
    f = srcjax.jit(srcjax.vmap(lambda x: np.tanh(np.dot(w, x))))
    return np.mean(f(X) ** 2)


def repeated_rows(x, n):
    # n: a static argument (a shape)
    return np.tile(x, (n, 1)) * np.arange(n)[:, None]


def power_sum(x, n):
    total = 0.0 * x
    for k in range(1, n + 1):
        total = total + x ** k / k
    return total


# -- jax-md style energies ------------------------------------------------------------------------------------


def displacement(Ra, Rb):
    return Ra - Rb


def periodic_displacement(Ra, Rb):
    box = 3.0
    dR = Ra - Rb
    return dR - box * np.round(dR / box)


def lennard_jones_energy(R):
    dR = srcjax.vmap(srcjax.vmap(displacement, (0, None)), (None, 0))(R, R)
    dr2 = np.sum(dR ** 2, axis=-1)
    n = R.shape[0]
    dr2 = dr2 + np.eye(n)
    inv6 = (1.0 / dr2) ** 3
    e = 4.0 * (inv6 ** 2 - inv6)
    return 0.5 * np.sum(np.where(np.eye(n) > 0, 0.0, e))


def soft_sphere_periodic(R, sigma):
    dR = srcjax.vmap(srcjax.vmap(periodic_displacement, (None, 0)), (0, None))(R, R)
    dr = np.sqrt(np.sum(dR ** 2, axis=-1) + np.eye(R.shape[0]))
    e = np.where(dr < sigma, (1 - dr / sigma) ** 2 / 2, 0.0)
    return 0.5 * np.sum(e * (1 - np.eye(R.shape[0])))


def forces(R):
    return -srcjax.grad(lennard_jones_energy)(R)


# -- optax-style updates with tree_map inside vmap ---------------------------------------------------------------


class AdamState(NamedTuple):
    mu: dict
    nu: dict


def adam_step(params, state, grads, lr):
    b1, b2, eps = 0.9, 0.999, 1e-8
    mu = srcjax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, grads)
    nu = srcjax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g ** 2, state.nu, grads)
    new = srcjax.tree_util.tree_map(lambda p, m, v: p - lr * m / (np.sqrt(v) + eps), params, mu, nu)
    return new, AdamState(mu, nu)


def linreg(p, x, y):
    return np.mean((x @ p["w"] + p["b"] - y) ** 2)


def adam_fit_many_lrs(params, x, y, lrs):
    # one run per learning rate, vmapped over lrs (a hyperparameter sweep)
    def run(lr):
        p = params
        state = AdamState(srcjax.tree_util.tree_map(np.zeros_like, p), srcjax.tree_util.tree_map(np.zeros_like, p))
        for _ in range(3):
            g = srcjax.grad(linreg)(p, x, y)
            p, state = adam_step(p, state, g, lr)
        return linreg(p, x, y)

    return srcjax.vmap(run)(lrs)


def clip_by_global_norm_update(grads, max_norm):
    norm = np.sqrt(sum(np.sum(g ** 2) for g in srcjax.tree_util.tree_leaves(grads)))
    scale = np.minimum(1.0, max_norm / (norm + 1e-6))
    return srcjax.tree_util.tree_map(lambda g: g * scale, grads)


# -- loops with break/continue, scatters with batched indices -----------------------------------------------------


def rows_until_budget(X, budget):
    total = 0.0 * budget
    count = 0
    for i in range(X.shape[0]):
        r = np.sum(X[i] ** 2)
        if r > 2.0:
            continue
        if total + r > budget:
            break
        total = total + r
        count = count + 1
    return total, count


def scatter_add_batched(x, idx, v):
    return x.at[idx].add(v)


def one_hot_update(x, i, v):
    return np.where(np.arange(x.shape[0]) == i, v, x)


def gather_neighbors(x, idx):
    return np.sum(x[idx] * np.arange(1, idx.shape[0] + 1)[:, None], axis=0)


# -- helpers taking functions, lambdas, random keys ------------------------------------------------------------


def map_rows(fn, xs):
    return srcjax.vmap(fn)(xs)


def normalize_rows(X):
    return map_rows(lambda r: r / np.sqrt(np.sum(r ** 2) + 1e-9), X)


def dropout_per_example(key, x):
    keep = srcjax.random.bernoulli(key, 0.75, x.shape)
    return np.where(keep, x / 0.75, 0.0)


def noisy_features(keys, x):
    return srcjax.vmap(lambda k, v: v + 0.1 * srcjax.random.normal(k, v.shape))(keys, x)


def loss_with_aux(w, x, y):
    pred = np.tanh(x @ w)
    return np.sum((pred - y) ** 2), pred


def per_example_grads_with_aux(w, xs, ys):
    g, pred = srcjax.vmap(srcjax.grad(loss_with_aux, has_aux=True), in_axes=(None, 0, 0))(w, xs, ys)
    return g, pred


def value_and_grads_per_task(w, b, xs, ys):
    def loss(w, b, x, y):
        return np.mean((x @ w + b - y) ** 2)

    return srcjax.vmap(srcjax.value_and_grad(loss, argnums=(0, 1)), in_axes=(None, None, 0, 0))(w, b, xs, ys)


def hyper_grid(a, b):
    # a grid over two hyperparameters: vmap(vmap(f, (None, 0)), (0, None)), outer out_axes=1
    def f(a, b):
        return np.sin(a) * np.exp(-b ** 2) + a * b

    return srcjax.vmap(srcjax.vmap(f, in_axes=(None, 0)), in_axes=(0, None), out_axes=1)(a, b)


def time_series_features(x):
    # x: (channels, time); vmapped over time with in_axes=-1 by its user
    return np.array([np.mean(x), np.max(x) - np.min(x), np.sum(x[1:] * x[:-1])])


def fixed_point_sqrt(a):
    # Heron's iterations in a Python for loop; its derivative under jvp/vmap
    x = 1.0 + 0.0 * a
    for _ in range(20):
        x = 0.5 * (x + a / x)
    return x


def implicit_sqrt_grads(a):
    return srcjax.vmap(srcjax.grad(fixed_point_sqrt))(a)


def batched_cholesky_solve(A, b):
    def solve(A, b):
        L = np.linalg.cholesky(A @ A.T + np.eye(A.shape[0]))
        return np.linalg.solve(L.T, np.linalg.solve(L, b))

    return srcjax.vmap(solve, in_axes=(0, None))(A, b)


def attention_one_query(q, K, V):
    s = K @ q / np.sqrt(q.shape[0])
    w = np.exp(s - np.max(s))
    return (w / np.sum(w)) @ V


def hessian_of_vmapped_sum(x):
    return srcjax.hessian(lambda z: np.sum(srcjax.vmap(lambda r: np.sin(r) * r ** 2)(z)))(x)
