"""Programs written as JAX users write them to be vmapped: the corpus of tests/test_vmap_user_programs.py.

Plain user code, NumPy API, helpers, a helper module (``tests/vmap_user_helpers.py``), module constants,
NamedTuple and dataclass parameters, control flow on data, in-place index updates, ``srcjax.lax`` and
transformations called inside. The test runs the same text again with ``np`` bound to ``jax.numpy`` and
``srcjax`` to jax (its oracle); nothing here knows about the test. A program jax cannot run as written
(``x[i] = v``) has a hand-written twin in the test.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

import srcjax

from . import vmap_user_helpers as helpers

SCALE = np.array([0.5, -1.0, 2.0])
OFFSET = 0.25


class Params(NamedTuple):
    w: np.ndarray
    b: np.ndarray


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: np.ndarray


# -- in_axes / out_axes ------------------------------------------------------------------------------------


def affine(w, b, x):
    return np.tanh(x @ w + b)


def column_norms(x, p):
    return np.sum(np.abs(x) ** p, axis=0) ** (1.0 / p)


def outer_feature(x, y):
    return np.outer(x, y) + 1.0


def scaled_and_total(x, w):
    return x * w, np.sum(w * w)


def broadcast_only(w):
    return 2.0 * w + 1.0


def dict_params(p, x):
    return np.dot(x, p["w"]) + p["b"]


def list_params(ps, x):
    return np.tanh(x * ps[0]) + ps[1]


def tuple_params_model(p, x):
    return np.sin(x @ p.w) * p.b


def dataclass_model(layer, x):
    return np.maximum(x @ layer.w + layer.b, 0.0)


def keyword_scale(x, scale=1.0):
    return x * scale + 1.0


def pairwise_distance(a, b):
    return np.sqrt(np.sum((a - b) ** 2) + 1e-12)


def all_pairs(xs, ys):
    return srcjax.vmap(srcjax.vmap(pairwise_distance, in_axes=(None, 1)), in_axes=(1, None))(xs, ys)


def mixed_tree(x, w):
    h = x @ w
    return {"h": h, "norm": np.sum(w * w), "pair": (h.sum(), w[0])}


def stats_tuple(x):
    return np.mean(x), np.std(x), x - np.mean(x)


# -- control flow on batched data ----------------------------------------------------------------------------


def sign_branch(x):
    if np.sum(x) > 0:
        y = x * 2.0
    else:
        y = -x + 1.0
    return y


def collatz_steps(x):
    n = 0
    while x > 1.0:
        x = x / 2.0
        n = n + 1
    return x, n


def first_crossing(x, t):
    s = 0.0
    k = 0
    for i in range(x.shape[0]):
        if s > t:
            break
        s = s + x[i]
        k = i
    return s, k


def skip_negatives(x):
    total = 0.0
    i = 0
    while i < x.shape[0]:
        v = x[i]
        i = i + 1
        if v < 0:
            continue
        total = total + v * v
    return total


def early_return(x):
    if x[0] > 0:
        return x * 2.0
    y = x - 1.0
    return y * y


def set_at_index(x, i, v):
    x = x.copy()
    x[i] = v
    return x


def add_at_indices(x, idx, v):
    x = x.copy()
    x[idx] += v
    return x


def at_updates(x, idx, v):
    a = x.at[idx].add(v)
    b = x.at[idx].set(v)
    c = x.at[idx].min(v)
    return a, b, c


def lax_cond(x, t):
    return srcjax.lax.cond(np.sum(x) > t, lambda z: z * 2.0, lambda z: z - 1.0, x)


def lax_switch(i, x):
    return srcjax.lax.switch(i, [lambda z: z + 1.0, lambda z: z * z, lambda z: -z], x)


def lax_while(x, limit):
    def cond(c):
        return c[0] < limit

    def body(c):
        return c[0] * 1.5 + 0.1, c[1] + 1

    return srcjax.lax.while_loop(cond, body, (x, 0))


def lax_fori(x, n):
    return srcjax.lax.fori_loop(0, n, lambda i, c: c * 0.9 + x, x)


def lax_fori_index(x, lo, hi):
    def body(i, c):
        return c + np.sin(i * c) / (i + 1)

    return srcjax.lax.fori_loop(lo, hi, body, x)


def lax_fori_static(x):
    return srcjax.lax.fori_loop(0, 4, lambda i, c: c * 0.5 + np.sin(c) * i, x)


def lax_scan_cumulative(h0, xs):
    def step(h, x):
        h = np.tanh(h + x)
        return h, h * 2.0

    return srcjax.lax.scan(step, h0, xs)


def python_loop_rebind(x, w):
    h = x
    for _ in range(3):
        h = np.tanh(h @ w)
    return h


# -- reductions and indexing with batched indices ------------------------------------------------------------


def argmax_pick(x, y):
    i = np.argmax(x)
    return y[i], i


def take_along(x, idx):
    return np.take_along_axis(x, idx, axis=0)


def fancy_index(x, idx):
    return x[idx] * 2.0


def masked_mean(x, mask):
    return np.sum(np.where(mask, x, 0.0)) / np.maximum(np.sum(mask), 1)


def sort_stats(x):
    s = np.sort(x)
    order = np.argsort(x)
    return s[-1] - s[0], order


def running_sum(x):
    return np.cumsum(x, axis=-1) / np.arange(1, x.shape[-1] + 1)


def einsum_bilinear(x, a, y):
    return np.einsum("i,ij,j->", x, a, y)


def einsum_rows(a, b, c):
    return np.einsum("ij,jk,ik->i", a, b, c)


def vector_matrix(v, m):
    return v @ m, m @ v[: m.shape[1]]


def linalg_all(a, b):
    spd = a @ a.T + 3.0 * np.eye(a.shape[0])
    x = np.linalg.solve(spd, b)
    chol = np.linalg.cholesky(spd)
    inv = np.linalg.inv(spd)
    sign, logdet = np.linalg.slogdet(spd)
    return x, chol, inv, np.linalg.det(spd), sign * logdet, np.linalg.norm(a), np.linalg.norm(b, ord=1)


# -- compositions ----------------------------------------------------------------------------------------------


def huber_loss(w, x, y):
    r = x @ w - y
    a = np.abs(r)
    return np.where(a < 1.0, 0.5 * r * r, a - 0.5)


def branchy_loss(w, x):
    z = np.dot(w, x)
    if z > 0:
        return z * z
    return np.exp(z) - 1.0


def summed_vmap_loss(w, xs):
    return np.sum(srcjax.vmap(helpers.predict, in_axes=(None, 0))(w, xs) ** 2)


def vector_field(x):
    return np.sin(x) * np.roll(x, 1)


def energy(x):
    return np.sum(np.cos(x) * x ** 2)


def jvp_directional(x, v):
    return srcjax.jvp(energy, (x,), (v,))


def vjp_pullback(x, ct):
    y, pull = srcjax.vjp(vector_field, x)
    return y, pull(ct)[0]


@srcjax.custom_jvp
def safe_log1p(x):
    return np.log1p(np.exp(x))


@safe_log1p.defjvp
def _safe_log1p_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return safe_log1p(x), t / (1.0 + np.exp(-x))


@srcjax.custom_vjp
def clipped_identity(x):
    return x


def _clip_fwd(x):
    return x, None


def _clip_bwd(_, g):
    return (np.clip(g, -0.5, 0.5),)


clipped_identity.defvjp(_clip_fwd, _clip_bwd)


def custom_loss(x):
    return np.sum(safe_log1p(clipped_identity(x) * 3.0))


def jitted_batch_mean(w, xs):
    return np.mean(srcjax.vmap(helpers.predict, in_axes=(None, 0))(w, xs), axis=0)


def other_module_step(w, x):
    return helpers.gelu(x @ w) + helpers.bias_of(w)


def module_constant(x):
    return x * SCALE + OFFSET


def resize_repeat(x, n):
    return np.tile(x, n)[: 2 * n] * np.arange(2 * n)


def promote_int_float32(i, x):
    return i * x + 2.0, (i > 1) & (x > 0.0)


def bool_float(mask, x):
    return np.where(mask, x, -x) * mask + 1


def weak_scalar(x):
    return x * 2 + 1.5, x / 2, x ** 2


def scalar_in_scalar_out(x, y):
    return np.sin(x) * y + x ** 2


def lambda_caller(x):
    return srcjax.vmap(lambda r: np.sum(r * r) + OFFSET)(x)


def closure_over_local(x, s):
    def inner(r):
        return np.dot(r, s) * OFFSET

    return srcjax.vmap(inner)(x)


# -- shapes, slicing and layout under non-zero axes ---------------------------------------------------------------


def reshape_and_transpose(x):
    y = x.reshape(2, -1).T
    return y @ y.T, x.reshape(-1)[::-1], x.T[..., 0]


def slices_and_new_axes(x):
    return x[1:-1] * x[None, :-2], x[::2], x[..., None] * x[None]


def keepdims_normalize(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


def concat_with_shared(x, w):
    h = np.concatenate([x, w, x * w], axis=0)
    return np.stack([h, h[::-1]], axis=-1)


def unpack_rows(x):
    a, b = x
    first, *rest = list(b)
    return a * first + len(x) + np.sum(np.stack(rest))


def iterate_rows(x, w):
    out = []
    for row in x:
        out.append(np.dot(row, w))
    return np.array(out)


def integer_ops(i, j):
    return i // 3 + j % 4, np.right_shift(i, 1) & j, np.round(i / 3.0), np.abs(i - j)


def clip_by_data(x, lo, hi):
    return np.clip(x, lo, hi), np.minimum(np.maximum(x, lo), hi).astype(np.int32)


def identity_moved(x):
    return x


def constant_output(x):
    return 3.0, np.ones(2)


def default_parameter(x, power=2):
    return x ** power + 1.0


# -- more control flow on data ---------------------------------------------------------------------------------


def update_where_positive(x):
    x = x.copy()
    for i in range(x.shape[0]):
        if x[i] > 0:
            x[i] = x[i] * 10.0
        else:
            x[i] = 0.0
    return x


def return_inside_loop(x):
    for i in range(x.shape[0]):
        if x[i] > 1.0:
            return x[i] * i
    return -1.0


def nested_break_continue(x):
    total = 0.0
    for i in range(x.shape[0]):
        if x[i, 0] < -1.0:
            break
        for j in range(x.shape[1]):
            if x[i, j] < 0:
                continue
            total = total + x[i, j]
    return total


def while_with_counter_carry(x, tol):
    err = np.abs(x)
    k = 0
    while np.max(err) > tol and k < 50:
        x = x * 0.5
        err = np.abs(x)
        k += 1
    return x, k


def searchsorted_interp(x, grid, values):
    i = np.searchsorted(grid, x)
    return i, np.interp(x, grid, values)


def random_normal_by_key(key):
    return srcjax.random.normal(key, (3,))


def diff_and_cumprod(x):
    return np.diff(x), np.cumprod(1.0 + 0.1 * x), np.cumsum(x[::-1])[::-1]


def eigh_smallest(a):
    s = a + a.T
    w, v = np.linalg.eigh(s)
    return w[0], np.abs(v[:, 0])


def outer_vmap_reads_closure(x, ys):
    def dist(y):
        return np.sum((x - y) ** 2)

    return srcjax.vmap(dist)(ys)


# -- operations that flatten or reorder a whole example ----------------------------------------------------------


def flattening_reductions(x):
    return np.argmax(x), np.cumsum(x), np.roll(x, 2), np.take(x, np.array([0, 5, -1])), np.vdot(x, x + 1.0)


def flattening_more(x):
    return np.max(x), np.sort(x, axis=None), x.flatten()[1::2], np.ravel(x.T), np.argmin(x, axis=None)


def axis_tuples(x):
    return np.sum(x, axis=(0, 2)), np.mean(x, axis=(-1, -2), keepdims=True), np.linalg.norm(x, axis=-1), \
        np.any(x > 1.0), np.count_nonzero(x > 0, axis=1)


def transposes(x):
    return np.transpose(x, (2, 0, 1)), np.swapaxes(x, 0, -1), np.moveaxis(x, 0, -1), x.transpose()


def builders(v, m):
    return np.diag(v), np.diag(m), np.trace(m), np.triu(m, 1), np.kron(v[:2], m[0]), \
        np.broadcast_to(v, (2,) + v.shape), np.repeat(v, 2), np.pad(v, (1, 2))


def shape_concatenations(v):
    return np.broadcast_to(v, (2,) + v.shape) + np.zeros((1,) + v.shape), \
        np.reshape(v, v.shape[:1] + (1,) + v.shape[1:]), np.zeros(v.shape + (2,)) + v[..., None]


def ellipsis_einsum(a, b):
    return np.einsum("...ij,...jk->...ik", a, b), a @ b, np.tensordot(a, b, axes=([1, 2], [2, 1]))


def order_statistics(x):
    return np.median(x), np.percentile(x, 25.0), np.quantile(x, np.array([0.1, 0.9]), axis=0)


def duplicate_set(x, idx, v):
    x = x.copy()
    x[idx] = v
    return x


def negative_batched_index(x, i):
    return x[i] + x[-1 - i], x[:, i]


def unbatched_passthrough(x, w):
    return w, x * 2.0, np.float64(3.0)


def branch_dtypes(x):
    if x.sum() > 0:
        y = x * 2
    else:
        y = x - 1
    return y, np.where(x > 0, x, 0)


# -- pytrees, aux outputs, collectives -----------------------------------------------------------------------------


def nested_dict_model(p, x):
    h = np.tanh(x @ p["enc"]["w"] + p["enc"]["b"])
    return {"out": h @ p["dec"], "l2": srcjax.tree_util.tree_map(lambda a: np.sum(a * a), p)}


def list_of_layers(layers, x):
    for layer in layers:
        x = np.tanh(x @ layer["w"] + layer["b"])
    return x


class Stats(NamedTuple):
    mean: np.ndarray
    var: np.ndarray


def namedtuple_out(x):
    m = np.mean(x, axis=0)
    return Stats(m, np.mean((x - m) ** 2, axis=0))


def loss_with_aux(w, x, y):
    pred = x @ w
    return np.mean((pred - y) ** 2), {"pred": pred, "max": np.max(np.abs(pred))}


def per_example_grads_with_aux(w, xs, ys):
    return srcjax.vmap(srcjax.value_and_grad(loss_with_aux, has_aux=True), in_axes=(None, 0, 0))(w, xs, ys)


def batch_normalize(x):
    mean = srcjax.lax.pmean(x, axis_name="batch")
    var = srcjax.lax.pmean((x - mean) ** 2, axis_name="batch")
    return (x - mean) / np.sqrt(var + 1e-5)


def jitted_inner(x, w):
    return helpers.predict(w, x) + srcjax.jit(helpers.gelu)(x @ w)


def folded_noise(key, i, x):
    k = srcjax.random.fold_in(key, i)
    return x + 0.1 * srcjax.random.normal(k, x.shape)


def scale_by(x, n):
    return x / n


def size_normalized(x):
    return scale_by(x, x.size) + scale_by(x, len(x)), scale_by(x, x.shape[-1]), scale_by(x.sum(), np.size(x))


def noise_like(key, x):
    return x + srcjax.random.normal(key, x.shape)


def size_in_tuple(x):
    t = (x.size, 2)
    return x / t[0] + t[1]


def shape_containers(x):
    t = (x.size, 2)
    d = {"n": len(x), "shape": x.shape}

    def per_size(v, n):
        return v / n

    return x / t[0] + t[1], x * d["n"] + np.zeros(d["shape"]), per_size(x, x.size)


def lax_with_sizes(x, p):
    a = srcjax.lax.cond(p > 0, lambda v, n: v / n, lambda v, n: v * n, x, x.size)
    b = srcjax.lax.switch(1, [lambda v, n: v + n, lambda v, n: v / n], x, len(x))
    return a, b


# -- not batchable (a mapped value where a static one is needed) -----------------------------------------------


def batched_shape(x, n):
    return x * np.ones(n)


def batched_range(x, n):
    total = 0.0
    for i in range(n):
        total = total + x[i]
    return total


def batched_list_index(x, i):
    options = [x, 2.0 * x, 3.0 * x]
    return options[i]
