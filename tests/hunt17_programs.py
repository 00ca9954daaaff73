"""Programs from peers' test corpora (hunt 17): the corpus of tests/test_hunt17_programs.py.

The test functions of other projects that differentiate or batch Python/NumPy code, written again for srcjax
(the constructs and idioms those corpora check, in their style; each program is ours):

- google/tangent (Apache-2.0), ``tests/functions.py``: a source-to-source AD for Python, srcjax's approach. Small
  functions of scalars with ``if``/``elif`` on values, serial and nested ``for`` loops, ``while`` on data, names
  rebound (``a = a * a``), calls to module functions and nested defs, tuples and dicts packed and unpacked,
  subscript writes into arrays and arguments, augmented assignment, list literals and comprehensions summed,
  extended slices with ``np.newaxis``, names that look like generated ones (``da``, ``a_bar``), logistic
  regression, a bilinear layer and an RNN writing ``h[t + 1]``.
- HIPS/autograd (MIT), ``tests/test_numpy.py``, ``test_systematic.py``, ``test_scalar_ops.py``, ``test_linalg.py``,
  ``test_core.py``/``test_graphs.py`` and ``examples/``: indexing by ints, slices, lists and mixes, fan-out of one
  input, ``max`` with ties, ``prod``/``cumprod`` through zeros, ``mod``/``fmod``/``remainder``, ``trace``/``triu``
  with offsets, ``std``/``var`` with ``ddof``, stacking, ``roll``, ``tile``/``repeat``/``kron``, every unary
  scalar op of test_scalar_ops, ``hypot``/``logaddexp2``/``fmax``, norms with ``ord``, ``inv``/``det``/
  ``slogdet``/``solve``/``cholesky``/``eigh``/``pinv``/``matrix_power``; third derivatives by nested ``grad``,
  Hessian-vector products; the examples' neural net with log-sum-exp, RNN and LSTM over time steps, a Gaussian
  process's marginal likelihood, black-box SVI's entropy and samples, a mixture of Gaussians, an HMM's forward
  algorithm in log space, a flattened parameter vector unpacked into layers (bayesian_neural_net), and the fluid
  simulation's projection by ``np.roll`` and advection by ``floor``/``astype(int)`` indices.
- jax-ml/jax (Apache-2.0), ``tests/api_test.py`` and ``tests/lax_autodiff_test.py``, where the program is NumPy
  and ``srcjax.lax``: ``grad`` of closures and of functions with keyword defaults, ``argnums`` tuples,
  ``vmap`` of matrix-vector products with ``out_axes``, nested vmap, ``lax.fori_loop``/``while_loop``/``scan``/
  ``cond``/``switch`` under grad and vmap, ``grad`` inside the function (a Newton step), ``jvp`` of a
  ``grad`` (forward over reverse).
"""

# ruff: noqa: B007, E741, N803, N806 - (the authors' style: `for i in range(n):`, `l`, `A`, `W`, `U`)

from __future__ import annotations

import numpy as np

import srcjax

# -- tangent: scalars, control flow, calls, containers ------------------------------------------------------


def _mul(a, b):
    return a * b


def _add(a, b):
    return a + b


def saxpy_calls(a, b, c):
    return _add(_mul(a, b), c)


def saxpy_rebound(a, b, c):
    t = a * b
    t = t + c
    t = t * t
    return t


def names_like_generated(a):
    da = a * a
    a_bar = da * 3.0
    a_dot = a_bar - da
    _bar = a_dot / (1.0 + a * a)
    return _bar + a_bar


def binops_with_constants(a):
    return (a * 3.0 + 3.0 * a + a * a + a / 3.0 + 3.0 / (a + 4.0) + (a + 1.0) / (a + 2.0) + a - 3.0
            + (3.0 - a) + (a - a) + a + a)


def overwrite_if(a):
    if a > 0:
        a = a * 3.0
    else:
        a = a * 2.0
    return a


def nested_if(a):
    if a > 0:
        if a < 10:
            a = a * a
    else:
        a = 3.0 * a
    return a


def spammy_if(a):
    if a * a / 3.0 > 0:
        b = 3.0
    else:
        b = 4.0
    a = a * b
    if a < b - a * b:
        a = a * a
    elif a > b + 3.0 * a:
        if a / 2.0 < 0:
            a = a / b
        else:
            a = a * b
    else:
        a = -a
    return a


def serial_if(a):
    if a > 0:
        a = a * a
    a = a + a
    if a < 0:
        a = 3.0 * a
    return a


def multivar_if(a, b):
    if a > b:
        a = a * a
    else:
        a = a * b
    return a


def elif_zero_left(a):
    if a > 0:
        a = a * 3.0
    elif 0 > a:
        a = a * 2.0
    else:
        a = 1.0 * a
    return a


def serial_for(a, n):
    for i in range(n):
        a = a * a
    a = 2.0 * a
    for i in range(n + 1):
        a = a * 0.9
    return a


def if_then_for(a, n):
    if a > 0:
        a = a * a
    a = 2.0 * a
    for i in range(n):
        a = a * a
    return a


def for_then_if(a, n):
    for i in range(n):
        a = a * a
    a = 2.0 * a
    if a > 0.5:
        a = a * a
    return a


def power_from_int_one(a):
    out = 1  # (an int: out * a is a's dtype)
    for i in range(3):
        out = out * a
    return out


def cond_in_loop_power(a):
    for i in range(3):
        if a < 2:
            a = a * a + 0.5
    return a


def loop_in_cond_power(a):
    if a < 2:
        for i in range(3):
            a = a * a
    return a


def nested_loops_power(a):
    for i in range(2):
        for j in range(3):
            a = np.sin(a) * a
    return a


def if_call_swap(a, b):
    if a > b:
        o = _mul(a, b)
    else:
        o = _mul(b + 1.0, a)
    return o


def nested_def_in_loop(a, n):
    def _fn(a, n):
        return a * n

    for i in range(n):
        a = _fn(a, a)
    return a


def tuple_argument_unpacked(abc):
    a, b, c = abc
    return a * b + c


def _dict_saxpy(val):
    return val["a"] * val["b"] + val["c"]


def dict_built_by_keywords(abc):
    a, b, c = abc
    return _dict_saxpy(dict(a=a, b=b, c=c))


def tuple_pick(a, b, c, i):
    x = a, b, c
    return x[i] * x[-1]


def cart2polar(a, b):
    r = np.sqrt(a ** 2.0 + b ** 2.0)
    theta = np.arctan2(b, a)
    return r, theta


def listcomp_over_array(x):
    return np.sum([v * 3 for v in x]) + np.sum([x[i] * x[i + 1] for i in range(len(x) - 1)])


def halving_while(a):
    while np.abs(a) > 0.1:
        a = a * 0.5
    return a


def copy_by_subscript(x):
    y = np.zeros_like(x)
    for i in range(len(x)):
        y[i] = x[i] * i
    return np.sum(y * x)


def rows_from_vector(x):
    h = np.zeros((len(x), 3))
    for t in range(len(h)):
        h[t] = x[t] * np.arange(3.0)
    return np.sum(h ** 2)


def tangent_rnn(inputs, W):
    h = np.zeros((4, 3))
    for t in range(3):
        h[t + 1] = np.tanh(np.dot(inputs[t], W) + h[t])
    return np.sum(h[1:])


def augassign_square(a):
    x = a * a
    x *= x
    x -= a
    x /= 2.0
    return x


def bilinear(x, h, U, W, b):
    y = np.dot(x, W)
    y = y + np.dot(h, U)
    y = y + b
    y = np.tanh(y)
    return np.sum(y)


def logistic_regression(inputs, label, W, b):
    h1 = np.dot(inputs, W) + b
    prediction = 0.5 * (np.tanh(h1) + 1)
    label_probabilities = prediction * label + (1 - prediction) * (1 - label)
    loss = -np.sum(np.log(label_probabilities))
    return loss


def chain_of_mults(a):
    b = a  # (the name is bound twice)
    b = a * a
    c = b * b
    d = c * c
    return d + _mul(_mul(a, a), a)


def nested_dict_argument(p):
    return p["i"]["j"] * p["i"]["k"] + np.sum(p["w"] ** 2)


def extended_slice_newaxis(x):
    return np.sum(x[::2, np.newaxis] * x[np.newaxis, 1::2])


def write_into_argument(x):
    a = x[0]
    b = x[1]
    x[0] = a * b  # (NumPy changes the caller's array; the value read back is the new one)
    return np.sum(x * x)


def write_squares_into_argument(x):
    y = x ** 2.0
    x[0] = y[1] * y[2]
    return np.sum(x * y)


def list_literal_sum(a):
    b = [1, a * a, 2]
    c = [1.0, a, 3.0]
    return np.sum(b) * c[0] * c[1]


def overwrite_by_reduction(x):
    x = np.sum(x)
    x = x * x
    return x


def array_of_list_sum(x):
    return np.sum(np.array([x[0] * x[1], x[2], 2.0 * x[0]]))


def pow_of_two_scalars(a, b):
    a = a ** b
    return a


# -- autograd: test_numpy / test_systematic ------------------------------------------------------------------


def index_forms(A):
    return (np.sum(A[1] ** 2) + np.sum(A[1:3, 0]) + np.sum(A[[0, 2, 0]] * 2.0) + np.sum(A[1, [0, 2]])
            + np.sum(A[:, -1] * A[-1]) + A[2, 1] * A[0, 0])


def index_fanout(x):
    a = x[0]
    return a * a + x[0] * x[1] + np.sum(x[1:] * x[:-1]) + np.sum(x[::2]) * a


def max_with_ties(x):
    # (x's largest and smallest values are each there twice: the derivative is shared, as finite differences')
    return (np.max(x) + np.min(x) + np.sum(np.maximum(x, x[::-1])) + np.sum(np.minimum(x, x[::-1]) ** 2)
            + np.max(np.maximum(x, x)) + np.min(np.stack([x, x]), axis=0).sum())


def prod_through_zero(x):
    z = x * np.array([1.0, 0.0, 1.0, 1.0])  # (one factor is exactly zero)
    return np.prod(z) + np.prod(x) + np.sum(np.prod(z.reshape(2, 2), axis=1))


def cumprod_through_zero(x):
    z = x * np.array([1.0, 1.0, 0.0, 1.0])
    return np.sum(np.cumprod(z)) + np.sum(np.cumprod(x) ** 2)


def mod_family(x, y):
    return np.sum(np.mod(x, y) + np.fmod(x, y) + np.remainder(x, 1.5) + x % 2.0)


def trace_triu_tril(A):
    return np.trace(A) + np.trace(A, offset=1) + np.sum(np.triu(A, 1) ** 2) + np.sum(np.tril(A, -1) * A)


def std_var_ddof(x):
    return np.std(x) + np.var(x, ddof=1) + np.sum(np.std(x, axis=0, ddof=1)) + np.sum(np.var(x, axis=1))


def stacking(x, y):
    a = np.concatenate([x, y], axis=0)
    b = np.stack([x, y], axis=1)
    c = np.hstack([x, y])
    d = np.vstack([x, y])
    return np.sum(a ** 2) + np.sum(b[:, 0] * b[:, 1]) + np.sum(c) + np.sum(d * d)


def roll_tile_repeat(x):
    return (np.sum(np.roll(x, 1) * x) + np.sum(np.roll(x, -2, axis=1) ** 2) + np.sum(np.tile(x, (2, 1)) ** 3)
            + np.sum(np.repeat(x, 2, axis=0)[:4] * np.repeat(x, [1, 0, 3], axis=0)[:4])
            + np.sum(np.repeat(x[0], [2] + [1] * (x.shape[1] - 1)) ** 2))


def kron_inner_outer(x, y):
    return np.sum(np.kron(x, y) ** 2) + np.inner(x, x) + np.sum(np.outer(x, y[:3]) * np.outer(y[:3], x))


def diag_make_and_take(x):
    D = np.diag(x)
    return np.sum(np.diag(D @ D + np.outer(x, x))) + np.sum(np.diagonal(np.outer(x, x), offset=1))


def clip_where_sign(x):
    return np.sum(np.clip(x, -0.5, 0.5) + np.where(x > 0, x ** 2, -x) + np.sign(x) * x + np.abs(x) * x)


def reshape_transpose(x):
    A = x.reshape(2, 3, 4)
    B = np.transpose(A, (2, 0, 1))
    C = A.transpose(1, 0, 2).reshape(3, -1)
    return np.sum(B[1] * B[2]) + np.sum(C ** 2) + np.sum(np.swapaxes(A, 0, 2)[0] * np.moveaxis(A, 0, -1)[:, 0])


def squeeze_expand(x):
    y = np.expand_dims(x, 1)
    z = np.squeeze(y[:, :, None] * 2.0, axis=2)
    return np.sum(np.squeeze(z) * x) + np.sum(np.atleast_2d(x) ** 2)


def flips(x):
    return np.sum(np.flip(x, 0) * x) + np.sum(np.fliplr(x) ** 2 * x) + np.sum(np.rot90(x) ** 3)


def cumsum_diff(x):
    return np.sum(np.cumsum(x, axis=1) ** 2) + np.sum(np.diff(x, axis=0) ** 2) + np.sum(np.cumsum(x) * 0.1)


def sort_and_partition(x):
    s = np.sort(x)
    return np.sum(s * np.arange(len(x))) + np.sum(np.sort(x.reshape(2, -1), axis=1)[:, -1])


def einsum_tensordot(A, B):
    return (np.einsum("ij,jk->ik", A, B).sum() + np.einsum("ij,ij->", A, A) + np.trace(np.tensordot(A, B, 1))
            + np.sum(np.tensordot(A, A, axes=([0, 1], [0, 1]))) + np.einsum("ii", A @ B))


def matmul_broadcast(A, B):
    return np.sum(np.matmul(A, B) ** 2) + np.sum(A @ B[0])


def cross_and_norm(u, v):
    c = np.cross(u, v)
    return np.sum(c ** 2) + np.linalg.norm(u) * np.linalg.norm(v, 1) + np.linalg.norm(c, np.inf)


def norms_with_ord(A):
    return (np.linalg.norm(A) + np.linalg.norm(A, "fro") + np.sum(np.linalg.norm(A, axis=1))
            + np.sum(np.linalg.norm(A, ord=1, axis=0)) + np.linalg.norm(A[0], 3))


def mean_axes_keepdims(x):
    m = np.mean(x, axis=(0, 2), keepdims=True)
    return np.sum((x - m) ** 2) + np.sum(np.mean(x, axis=-1)) + np.average(x[0, 0], weights=np.arange(1.0, 5.0))


def nan_to_num_safe(x):
    y = np.where(x > 0, np.log(np.abs(x) + 1e-3), 0.0)
    return np.sum(np.nan_to_num(y) * x)


# -- autograd: test_scalar_ops -------------------------------------------------------------------------------


def unary_ops_open(x):
    # (x in (0.1, 0.9): every op's domain)
    return (np.exp2(x) + np.expm1(x) + np.log1p(x) + np.log2(x) + np.log10(x) + np.arcsin(x) + np.arccos(x)
            + np.arctan(x) + np.sinh(x) + np.cosh(x) + np.tanh(x) + np.arcsinh(x) + np.arctanh(x) + np.sqrt(x)
            + np.square(x) + np.reciprocal(x) + np.cbrt(x) + np.sinc(x) + np.deg2rad(x) + np.rad2deg(x)
            + np.radians(x) + np.degrees(x) + np.arccosh(1.0 + x) + np.tan(x) + np.log(x))


def binary_scalar_ops(x, y):
    # (x, y in (0.5, 1.5))
    return (np.power(x, y) + np.hypot(x, y) + np.logaddexp(x, y) + np.logaddexp2(x, y) + np.fmax(x, y)
            + np.fmin(x, y) + np.arctan2(x, y) + np.true_divide(x, y) + np.maximum(x, y) * np.minimum(x, y)
            + np.copysign(x, -y) + x ** 2.5)


def sinc_at_zero(x):
    # np.sinc(0) = 1 and its derivative 0: x has an exact zero
    return np.sum(np.sinc(x * np.array([0.0, 1.0, 1.0])) * x)


def abs_sqrt_at_zero(x):
    z = x * np.array([0.0, 1.0, 1.0])
    return np.sum(np.sqrt(z ** 2 + 1.0) + np.abs(z) * 0.0 + z * np.abs(x))


def integer_power_negative_base(x):
    return np.sum(x ** 3 + x ** 2 + np.power(x, 4) + (-x) ** 2.0 + x ** 0 + x ** 1)


def floor_divide_rounding(x):
    # the integer-valued ops' derivative is zero; the rest flows
    return np.sum(x * np.floor(x) + np.ceil(x) * x + np.round(x * 2.0) + np.trunc(x) * x ** 2 + x // 0.5 + np.rint(x))


# -- autograd: test_linalg -----------------------------------------------------------------------------------


def linalg_inv_det(A):
    return np.sum(np.linalg.inv(A) ** 2) + np.linalg.det(A) + np.linalg.slogdet(A)[1]


def linalg_solve_vec_mat(A, b):
    return np.sum(np.linalg.solve(A, b) ** 2) + np.sum(np.linalg.solve(A, np.outer(b, b)))


def linalg_cholesky_logdet(S):
    L = np.linalg.cholesky(S)
    return 2.0 * np.sum(np.log(np.diag(L))) + np.sum(L)


def linalg_eigh_values(S):
    w, V = np.linalg.eigh(S)
    return np.sum(w ** 2) + np.sum(w * np.abs(V[0]))


def linalg_pinv_matrix_power(A):
    return np.sum(np.linalg.pinv(A) ** 2) + np.sum(np.linalg.matrix_power(A, 3)) + np.sum(np.linalg.matrix_power(A, 0))


def linalg_batched_inv(A):
    return np.sum(np.linalg.inv(A)) + np.sum(np.linalg.det(A))


# -- autograd: test_core / test_graphs ---------------------------------------------------------------------


def third_derivative_tanh(x):
    g1 = srcjax.grad(np.tanh)
    g2 = srcjax.grad(g1)
    g3 = srcjax.grad(g2)
    return g3(x) + g2(x) * g1(x)


def hessian_vector_product(x, v):
    def f(x):
        return np.sum(np.sin(x) * x ** 2) + np.sum(x[:-1] * x[1:])

    def hvp(x, v):
        return srcjax.grad(lambda x: np.sum(srcjax.grad(f)(x) * v))(x)

    return hvp(x, v)


def enclosing_scope_reference(x):
    c = x * 2.0

    def inner(y):
        return np.sum(c * y)  # (c is the enclosing function's value: differentiated through)

    return inner(x) + srcjax.grad(inner)(x * 0.5).sum()


def fanout_reused(x):
    y = np.sin(x)
    z = y * y
    w = y + z
    return np.sum(w * y) + np.sum(z / (1.0 + w ** 2))


# -- autograd: examples ------------------------------------------------------------------------------------


def _logsumexp(X, axis=None, keepdims=False):
    m = np.max(X, axis=axis, keepdims=True)
    out = m + np.log(np.sum(np.exp(X - m), axis=axis, keepdims=True))
    return out if keepdims else np.squeeze(out, axis=axis)


def neural_net_log_posterior(W1, b1, W2, b2, X, T):
    params = [(W1, b1), (W2, b2)]
    inputs = X
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    logprobs = outputs - _logsumexp(outputs, axis=1, keepdims=True)
    log_prior = -0.1 * sum(np.sum(W ** 2) + np.sum(b ** 2) for W, b in params)
    return log_prior + np.sum(logprobs * T)


def _sigmoid(x):
    return 0.5 * (np.tanh(x) + 1.0)


def rnn_predictions(W_hid, W_out, inputs):
    # inputs: (T, batch, D); the hidden state concatenated with each step's input
    hiddens = np.zeros((inputs.shape[1], W_hid.shape[1]))
    logprob = 0.0
    for t in range(inputs.shape[0]):
        cat = np.concatenate((inputs[t], hiddens), axis=1)
        hiddens = np.tanh(np.dot(cat, W_hid))
        output = np.dot(hiddens, W_out)
        output = output - _logsumexp(output, axis=1, keepdims=True)
        logprob = logprob + np.sum(output * inputs[t][:, : output.shape[1]])
    return logprob


def lstm_loop(W, inputs):
    H = W.shape[1] // 4
    hiddens = np.zeros((inputs.shape[1], H))
    cells = np.zeros((inputs.shape[1], H))
    total = 0.0
    for x in inputs:
        z = np.dot(np.concatenate((x, hiddens), axis=1), W)
        change = np.tanh(z[:, :H])
        forget = _sigmoid(z[:, H: 2 * H])
        ingate = _sigmoid(z[:, 2 * H: 3 * H])
        outgate = _sigmoid(z[:, 3 * H:])
        cells = cells * forget + ingate * change
        hiddens = outgate * np.tanh(cells)
        total = total + np.sum(hiddens ** 2)
    return total


def gp_marginal_likelihood(params, X, y):
    mean, cov_params, noise_scale = params[0], params[1:3], np.exp(params[3]) + 1e-4
    output_scale = np.exp(cov_params[0])
    lengthscales = np.exp(cov_params[1])
    diffs = np.expand_dims(X / lengthscales, 1) - np.expand_dims(X / lengthscales, 0)
    K = output_scale * np.exp(-0.5 * np.sum(diffs ** 2, axis=2)) + noise_scale * np.eye(len(y))
    r = y - mean
    sign, logdet = np.linalg.slogdet(K)
    return -0.5 * np.dot(r, np.linalg.solve(K, r)) - 0.5 * logdet - 0.5 * len(y) * np.log(2 * np.pi)


def black_box_svi(params, eps):
    D = params.shape[0] // 2
    mean, log_std = params[:D], params[D:]
    samples = eps * np.exp(log_std) + mean
    log_density = -0.5 * np.sum(samples ** 2 + np.log(2 * np.pi), axis=1) - np.sum(
        np.abs(samples[:, :1]) ** 1.5, axis=1) * 0.1
    entropy = 0.5 * D * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)
    return -(entropy + np.mean(log_density))


def mixture_of_gaussians(params, X):
    means, log_stds, logits = params["means"], params["log_stds"], params["logits"]
    log_weights = logits - _logsumexp(logits)
    z = (X[:, None, :] - means[None, :, :]) / np.exp(log_stds)[None, :, :]
    comp = -0.5 * np.sum(z ** 2, axis=2) - np.sum(log_stds, axis=1)[None, :] - 0.5 * X.shape[1] * np.log(2 * np.pi)
    return np.sum(_logsumexp(comp + log_weights, axis=1))


def hmm_forward(log_pi, log_A, log_B):
    alpha = log_pi + log_B[0]
    for t in range(1, log_B.shape[0]):
        alpha = _logsumexp(alpha[:, None] + log_A, axis=0) + log_B[t]
    return _logsumexp(alpha)


def _unpack_layers(flat, sizes):
    out = []
    start = 0
    for m, n in zip(sizes[:-1], sizes[1:]):
        W = flat[start: start + m * n].reshape((m, n))
        b = flat[start + m * n: start + m * n + n]
        out.append((W, b))
        start = start + m * n + n
    return out


def flat_parameter_net(flat, X):
    sizes = [2, 3, 1]
    h = X
    for W, b in _unpack_layers(flat, sizes):
        h = np.tanh(h @ W + b)
    return np.mean(h ** 2)


def fluid_project(vx, vy):
    # fluidsim.py's projection: the divergence by np.roll, a Jacobi solve, its gradient taken away
    h = 1.0 / vx.shape[0]
    div = -0.5 * h * (np.roll(vx, -1, axis=0) - np.roll(vx, 1, axis=0) + np.roll(vy, -1, axis=1)
                      - np.roll(vy, 1, axis=1))
    p = np.zeros(vx.shape)
    for k in range(4):
        p = (div + np.roll(p, 1, axis=0) + np.roll(p, -1, axis=0) + np.roll(p, 1, axis=1) + np.roll(p, -1, axis=1)) / 4.0
    vx = vx - 0.5 * (np.roll(p, -1, axis=0) - np.roll(p, 1, axis=0)) / h
    vy = vy - 0.5 * (np.roll(p, -1, axis=1) - np.roll(p, 1, axis=1)) / h
    return np.sum(vx ** 2 + vy ** 2)


def fluid_advect(f, vx, vy):
    # fluidsim.py's semi-Lagrangian advection: bilinear interpolation at floor() cells, wrapped by %
    rows, cols = f.shape
    cell_ys, cell_xs = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    center_xs = (cell_xs - vx).ravel()
    center_ys = (cell_ys - vy).ravel()
    left_ix = np.floor(center_xs).astype(int)
    top_ix = np.floor(center_ys).astype(int)
    rw = center_xs - left_ix
    bw = center_ys - top_ix
    left_ix = np.mod(left_ix, cols)
    right_ix = np.mod(left_ix + 1, cols)
    top_ix = np.mod(top_ix, rows)
    bot_ix = np.mod(top_ix + 1, rows)
    flat_f = (1 - rw) * ((1 - bw) * f[top_ix, left_ix] + bw * f[bot_ix, left_ix]) + rw * (
        (1 - bw) * f[top_ix, right_ix] + bw * f[bot_ix, right_ix])
    return np.reshape(flat_f, (rows, cols))


def vae_diag_gaussian(mean, log_std, x, eps):
    z = mean + np.exp(log_std) * eps
    logp = -0.5 * np.sum((x - np.tanh(z)) ** 2)
    kl = 0.5 * np.sum(np.exp(2 * log_std) + mean ** 2 - 1.0 - 2 * log_std)
    return logp - kl


def ica_loglik(W, X):
    Y = X @ W.T
    return np.sum(-np.log(np.cosh(Y))) + X.shape[0] * np.linalg.slogdet(W)[1]


def sinusoid_fit(params, t):
    amp, phase, freq = params[0], params[1], params[2]
    pred = amp * np.sin(freq * t + phase)
    target = np.sin(1.3 * t + 0.2)
    return np.mean((pred - target) ** 2)


# -- jax: api_test / lax_autodiff_test (NumPy and srcjax.lax) ------------------------------------------------


def closure_over_argument(x, y):
    def g(z):
        return np.sin(z) * y  # (y: the outer argument, closed over)

    return np.sum(g(x) * g(2.0 * x))


def keyword_default(x, scale=2.0, shift=0.5):
    return np.sum(np.tanh(scale * x + shift))


def keyword_default_call(x, y):
    return keyword_default(x, shift=y) + keyword_default(y, scale=3.0)


def matvec(A, x):
    return A @ x


def nested_vmap_outer(x, y):
    return srcjax.vmap(lambda a: srcjax.vmap(lambda b: a * b + np.sin(a - b))(y))(x)


def vmap_out_axes_one(A, x):
    return srcjax.vmap(lambda row: row * x, out_axes=1)(A)


def fori_loop_power(x):
    return srcjax.lax.fori_loop(0, 3, lambda i, c: c * x + i, np.ones_like(x))


def while_loop_counter(x):
    def cond(c):
        return c[0] < 4

    def body(c):
        return (c[0] + 1, c[1] * 0.9 + np.sin(c[1]))

    return srcjax.lax.while_loop(cond, body, (0, x))[1]


def scan_cumulative(xs):
    def step(carry, x):
        carry = carry * 0.8 + x
        return carry, carry ** 2

    last, ys = srcjax.lax.scan(step, np.zeros(xs.shape[1:]), xs)
    return np.sum(ys) + np.sum(last)


def cond_on_data(x):
    return srcjax.lax.cond(np.sum(x) > 0, lambda v: np.sin(v) * 2.0, lambda v: np.cos(v) - v, x)


def switch_on_index(i, x):
    return srcjax.lax.switch(i, [lambda v: v ** 2, lambda v: np.exp(v), lambda v: -v], x)


def newton_step_inside(x):
    def f(z):
        return np.sum(z ** 4 - 2.0 * z ** 2) + np.sum(z[:-1] * z[1:])

    for _ in range(2):
        g = srcjax.grad(f)(x)
        H = srcjax.hessian(f)(x)
        x = x - np.linalg.solve(H + 5.0 * np.eye(len(x)), g)
    return x


def forward_over_reverse(x, v):
    def f(z):
        return np.sum(np.exp(np.sin(z)) * z)

    return srcjax.jvp(srcjax.grad(f), (x,), (v,))[1]


def grad_argnums_tuple(x, y, z):
    return np.sum(x * y ** 2 + np.sin(z) * x)


def stop_gradient_target(x):
    t = srcjax.lax.stop_gradient(x ** 2)
    return np.sum((x - t) ** 2)


def dynamic_index_by_argmax(x):
    i = np.argmax(x)
    return x[i] * 2.0 + np.take(x, i) + x[np.argmin(x)]


def int_pow_and_integer_argument(x, k):
    return np.sum(x ** k) + np.sum(x * k)


def select_chain(x):
    return np.sum(np.where(x > 0.5, 1.0, np.where(x < -0.5, -1.0, x)) * x)


def softplus_stable(x):
    return np.sum(np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x))))


def log_sum_exp_stable(x):
    return _logsumexp(x, axis=1) + _logsumexp(x * 2.0)
