"""A corpus of NumPy programs for the three-oracle test (tests/test_corpus.py).

Every module-level function decorated with ``@program(...)`` is one case: the
decorator records how to build its arguments from a ``numpy.random.Generator``
(``args``, and optionally ``kwargs``) and, rarely, looser tolerances. The
functions are plain NumPy: the user's function run by NumPy is oracle (1).

Keep the programs realistic and varied; each one should exercise something
the others do not (a construct, a dtype rule, a primitive, a static decision).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy as onp
from numpy import newaxis, tanh

from tests.corpus_helpers import dense, gelu, leaky_relu, normalize_rows


@dataclass
class Case:
    name: str
    fn: Callable[..., Any]
    args: Callable[[np.random.Generator], tuple[Any, ...]]
    kwargs: Callable[[np.random.Generator], dict[str, Any]] | None = None
    rtol: float | None = None
    atol: float | None = None
    xfail: str | None = None  # a known bug in srcjax (reported); the tests in xfail_in fail until it is fixed
    xfail_in: tuple[str, ...] = ("oracles", "eval_shape")
    static_argnames: tuple[str, ...] = ()  # passed to srcjax.compile


CORPUS: list[Case] = []

# Reported bug (srcjax/api.py, numpy_function): the generated module is executed in the entry
# function's globals only, so a helper imported from another module cannot see that module's
# globals (corpus_helpers.GELU_C, LEAK): NameError in oracle (2).


def program(args, kwargs=None, rtol=None, atol=None, xfail=None, xfail_in=("oracles", "eval_shape"),
            static_argnames=()):
    def register(fn):
        CORPUS.append(Case(fn.__name__, fn, args, kwargs, rtol, atol, xfail, xfail_in, tuple(static_argnames)))
        return fn

    return register


# -- argument builders ---------------------------------------------------------------
def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def f64(rng, *shape):
    return rng.standard_normal(shape)


def i32(rng, *shape, lo=-20, hi=20):
    return rng.integers(lo, hi, size=shape).astype(np.int32)


def i64(rng, *shape, lo=-20, hi=20):
    return rng.integers(lo, hi, size=shape).astype(np.int64)


def boolean(rng, *shape):
    return rng.random(shape) < 0.5


def pos32(rng, *shape):
    return (rng.random(shape) + 0.5).astype(np.float32)


def one_hot(rng, n, k):
    return np.eye(k, dtype=np.float32)[rng.integers(0, k, size=n)]


# -- module-level constants the programs read ------------------------------------------
EPS = 1e-5
SCALE = 0.5
COEFFS = (1.0, -0.5, 0.25, -0.125)  # a static tuple of Python floats
W_FIXED = np.array([[1.0, -1.0], [0.5, 2.0], [-0.25, 0.75]], dtype=np.float32)
OFFSET_F64 = np.linspace(-1.0, 1.0, 5)
N_STEPS = 3


# ======================================================================================
# Neural-network building blocks
# ======================================================================================
@program(lambda r: (f32(r, 8, 5), f32(r, 5, 16), f32(r, 16)))
def mlp_layer(x, w, b):
    return np.maximum(x @ w + b, 0.0)


@program(lambda r: (f32(r, 6, 4), f32(r, 4, 32), f32(r, 32), f32(r, 32, 3), f32(r, 3)))
def mlp_two_layers(x, w1, b1, w2, b2):
    h = dense(x, w1, b1, activation="gelu")  # helper imported from another module
    return dense(h, w2, b2, activation="none")


def _softmax(x, axis=-1):
    z = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


@program(lambda r: (f32(r, 4, 10) * 10,))
def softmax(x):
    return _softmax(x)


@program(lambda r: (f64(r, 3, 7) * 50,))
def logsumexp(x):
    m = x.max(axis=-1, keepdims=True)
    return m[..., 0] + np.log(np.sum(np.exp(x - m), axis=-1))


@program(lambda r: (f32(r, 4, 8), pos32(r, 8), f32(r, 8)))
def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gamma + beta


@program(lambda r: (f32(r, 4, 8), pos32(r, 8)), kwargs=lambda r: {"eps": 1e-3})
def rms_norm(x, weight, *, eps=1e-6):
    ms = np.mean(np.square(x), axis=-1, keepdims=True)
    return x * (1.0 / np.sqrt(ms + eps)) * weight


@program(lambda r: (f32(r, 5, 8), f32(r, 7, 8), f32(r, 7, 4)))
def attention(q, k, v):
    d = q.shape[-1]
    scores = q @ k.T / math.sqrt(d)
    return _softmax(scores, axis=-1) @ v


@program(lambda r: (f32(r, 2, 3, 5, 4), f32(r, 2, 3, 6, 4), f32(r, 2, 3, 6, 4)))
def multihead_attention(q, k, v):
    scale = 1.0 / np.sqrt(q.shape[-1])
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    p = _softmax(s)
    return np.einsum("bhqk,bhkd->bhqd", p, v)


@program(lambda r: (f32(r, 6, 8), f32(r, 8, 8), f32(r, 8)))
def residual_block(x, w, b):
    h = x
    h = h @ w
    h += b
    h = gelu(h)
    return x + h


@program(lambda r: (f32(r, 10, 4),))
def batch_norm_train(x):
    mean = x.mean(axis=0)
    var = x.var(axis=0)
    return (x - mean) / np.sqrt(var + EPS), mean, var


@program(lambda r: (f32(r, 8, 5), one_hot(r, 8, 5)))
def cross_entropy(logits, labels):
    m = np.max(logits, axis=1, keepdims=True)
    logp = logits - m - np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True))
    return -np.mean(np.sum(labels * logp, axis=1))


@program(lambda r: (f32(r, 100) * 30,))
def softplus_sigmoid(x):
    softplus = np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))
    sigmoid = 1 / (1 + np.exp(-x))
    return softplus, sigmoid


@program(lambda r: (f32(r, 3, 4), 0.2))
def leaky_relu_weak_scalar(x, alpha):
    # alpha is a Python float: a weak dynamic scalar, so the result stays float32
    return np.where(x >= 0, x, alpha * x)


@program(lambda r: (f32(r, 3, 4),))
def imported_helper_with_default(x):
    return leaky_relu(x) + leaky_relu(x, slope=0.3) + leaky_relu(x, 0.01)


# ======================================================================================
# Similarity and distances
# ======================================================================================
@program(lambda r: (f32(r, 5, 6), f32(r, 7, 6)))
def cosine_similarity(a, b):
    an = normalize_rows(a)
    bn = normalize_rows(b)
    return an @ bn.T


@program(lambda r: (f64(r, 5, 3), f64(r, 4, 3)))
def pairwise_sq_dist_broadcast(x, y):
    diff = x[:, None, :] - y[None, :, :]
    return (diff ** 2).sum(axis=-1)


@program(lambda r: (f64(r, 5, 3), f64(r, 4, 3)))
def pairwise_sq_dist_expansion(x, y):
    x2 = np.sum(x * x, axis=1)[:, np.newaxis]
    y2 = np.sum(y * y, axis=1)[newaxis, :]
    return np.maximum(x2 + y2 - 2 * x @ y.T, 0.0)


@program(lambda r: (f32(r, 6, 3), f32(r, 4, 3)))
def nearest_neighbour(x, centers):
    d = np.sum((x[:, None] - centers[None]) ** 2, axis=2)
    return np.argmax(-d, axis=1), np.min(d, axis=1)


@program(lambda r: (f64(r, 4, 3),))
def vector_norms(x):
    return np.linalg.norm(x, axis=1), np.linalg.norm(x), np.sqrt(np.inner(x[0], x[0]))


# ======================================================================================
# Static control flow, loops, helpers, recursion
# ======================================================================================
@program(lambda r: (f64(r, 10),))
def horner_static_loop(x):
    acc = x * 0.0
    for c in COEFFS[::-1]:
        acc = acc * x + c
    return acc


@program(lambda r: (f64(r, 10) * 0.5, 6))
def exp_taylor_int_static(x, n):
    # n is a Python int used as a range bound: made static automatically
    term = x * 0.0 + 1.0
    total = term
    for k in range(1, n):
        term = term * x / k
        total = total + term
    return total


@program(lambda r: (f64(r, 8),))
def series_with_math_factorial(x):
    return sum(x ** k / math.factorial(k) for k in range(5))


@program(lambda r: (f32(r, 3, 4),))
def static_if_on_ndim_2d(x):
    if x.ndim == 2:
        x = x.reshape(-1)
    elif x.ndim > 2:
        raise ValueError(f"expected at most 2 dims, got {x.ndim}")
    return x * 2


@program(lambda r: (f32(r, 4, 3),))
def static_if_on_shape(x):
    if x.shape[0] > x.shape[1]:
        return x.T @ x
    else:
        return x @ x.T


@program(lambda r: (f32(r, 3, 5),))
def static_validation(x):
    if x.ndim != 2:
        raise ValueError(f"need a matrix, got shape {x.shape}")
    assert x.shape[0] == 3, "need exactly three rows"
    assert 0 < x.shape[1] <= 8
    return x.sum(axis=1)


@program(lambda r: (f32(r, 4, 4),))
def conditional_expression_static(x):
    y = x.sum(axis=0) if x.shape[0] == x.shape[1] else x
    z = x[0] if x.ndim == 1 else x[:, 0]
    return y + z


def _apply_n(x, n):
    if n == 0:
        return x
    return _apply_n(np.tanh(x) + 0.1 * x, n - 1)


@program(lambda r: (f32(r, 5),))
def recursion_static_depth(x):
    return _apply_n(x, N_STEPS)


def _one_line_helper(x, k=2):
    if x.ndim == 2: return x.sum(axis=0) * k  # noqa: E701
    return x * k


@program(lambda r: (f32(r, 3, 4),))
def one_line_bodies(x): return _one_line_helper(x) + _one_line_helper(x[0], k=3)  # noqa: E704


def _tree_sum(parts):
    if len(parts) == 1:
        return parts[0]
    mid = len(parts) // 2
    return _tree_sum(parts[:mid]) + _tree_sum(parts[mid:])


@program(lambda r: (f64(r, 6, 3),))
def recursion_over_tuple(x):
    return _tree_sum(tuple(x[i] for i in range(x.shape[0])))


@program(lambda r: (f32(r, 5, 3),))
def for_over_array_rows(x):
    acc = 0.0
    for row in x:
        acc = acc + row * row
    return acc


@program(lambda r: (f32(r, 4, 3),))
def enumerate_zip_static(x):
    out = x[0] * 0
    for i, (row, w) in enumerate(zip(x, (1.0, 2.0, 3.0, 4.0))):
        out = out + (i + 1) * w * row
    return out


@program(lambda r: (f64(r, 6),))
def while_static_bound(x):
    n = x.shape[0]
    total = x[0]
    i = 1
    while i < n:
        total = total + x[i] * i
        i += 1
    return total


@program(lambda r: (f64(r, 5),))
def break_and_continue_static(x):
    acc = x * 0
    for k in range(10):
        if k % 2 == 1:
            continue
        if k > 6:
            break
        acc = acc + x ** k
    return acc


@program(lambda r: (f32(r, 4, 6),))
def chained_comparison_static(x):
    rows, cols = x.shape
    if 0 < rows < cols <= 10:
        return x[:, :rows]
    return x


@program(lambda r: (f32(r, 3, 4), True))
def bool_flag_static(x, transpose):
    if transpose is True and x is not None:
        x = x.T
    return x


@program(lambda r: (f32(r, 2, 3), None))
def none_default_argument(x, bias=None):
    if bias is None:
        bias = 1.0
    return x + bias


def _stats(x):
    return x.mean(), x.std(), x.max() - x.min()


@program(lambda r: (f64(r, 20),))
def tuple_return_and_unpacking(x):
    mean, std, span = _stats(x)
    lo, hi = x.min(), x.max()
    return (x - mean) / std, (lo, hi), span


@program(lambda r: (f32(r, 6),))
def dict_return(x):
    return {"sum": x.sum(), "prod": np.prod(x), "sq": x * x}


@program(lambda r: (f32(r, 3, 3),))
def augmented_assignment(x):
    y = x.copy()
    y += 1
    y *= 2.0
    y -= x
    y /= 4
    y **= 2
    return y


@program(lambda r: (f32(r, 4, 5),), kwargs=lambda r: {"axis": 0, "scale": 3.0})
def keyword_arguments(x, axis=1, scale=1.0):
    return np.sum(x, axis=axis, keepdims=False) * scale


@program(lambda r: (f32(r, 4),))
def keyword_helper_call(x):
    return _scaled(x, shift=1.0) + _scaled(x, 2.0) + _scaled(scale=0.5, x=x)


def _scaled(x, scale=3.0, shift=0.0):
    return x * scale + shift


@program(lambda r: (f32(r, 3, 4), False))
def not_flag_static(x, normalize):
    if not normalize:
        return x
    return x / np.sum(x)


@program(lambda r: (f32(r, 3, 4), 2.0, 3))
def isinstance_checks(x, scale, n):
    if isinstance(x, np.ndarray) and isinstance(scale, float) and not isinstance(n, float):
        return x * scale + n
    return x


@program(lambda r: (f32(r, 3, 4), "gelu"), static_argnames=("activation",))
def activation_by_name(x, activation):
    if activation in ("relu", "leaky_relu"):
        return np.maximum(x, 0.0)
    elif activation == "gelu":
        return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
    raise ValueError(f"unknown activation {activation!r}")


def make_scaler(scale, power):
    def scaler(x):
        return (x * scale) ** power  # `scale` and `power` come from the closure

    return scaler


scale_closure = make_scaler(1.5, 2)
program(lambda r: (f32(r, 5),))(scale_closure)


@program(lambda r: ({"w1": f32(r, 3, 8), "b1": f32(r, 8), "w2": f32(r, 8, 2)}, f32(r, 4, 3)))
def mlp_params_dict(params, x):
    h = np.tanh(x @ params["w1"] + params["b1"])
    return h @ params["w2"]


@program(lambda r: ([f64(r, 3), f64(r, 3), f64(r, 3)], (f64(r, 3), f64(r, 3), f64(r, 3))))
def lists_of_arrays(xs, ys):
    prods = [a * b for a, b in zip(xs, ys)]
    return sum(prods), len(xs), np.stack(prods, axis=1)


@program(lambda r: (f32(r, 4, 6), (3, 8)))
def reshape_tuple_argument(x, shape):
    return x.reshape(shape), x.reshape(shape[::-1])


# ======================================================================================
# Module constants, aliases, imports
# ======================================================================================
@program(lambda r: (f32(r, 4, 3),))
def module_constant_array(x):
    return x @ W_FIXED * SCALE


@program(lambda r: (f64(r, 5),))
def module_constant_float64_array(x):
    return x + OFFSET_F64


@program(lambda r: (f32(r, 7),))
def math_pi_and_from_import(x):
    return tanh(x) * math.pi + onp.cos(x / math.e)


@program(lambda r: (f32(r, 7),))
def numpy_alias(x):
    return onp.sqrt(onp.abs(x)) + onp.exp(-x * x)


# ======================================================================================
# Array methods, attributes, indexing
# ======================================================================================
@program(lambda r: (f32(r, 3, 4, 2),))
def methods_and_attributes(x):
    n = x.shape[0] * x.ndim
    y = x.reshape(-1, 2).T
    return y.sum(axis=1) + n, x.mean(axis=(0, 2), keepdims=True), x.size


@program(lambda r: (f32(r, 6, 4), 3))
def reshape_int_argument_static(x, n):
    return x.reshape(n, -1)


@program(lambda r: (f32(r, 6, 4), 2))
def int_argument_as_index_and_axis(x, k):
    return x[k] + x[:, k].sum() + x.sum(axis=k - 2)


@program(lambda r: (f32(r, 8, 9),))
def slicing_steps_negative(x):
    return x[::2, 1::3], x[-1], x[:, -2:], x[-3:-1, ::-2], x[::-1, 2]


@program(lambda r: (f32(r, 2, 3, 4),))
def ellipsis_and_newaxis(x):
    a = x[..., None]
    b = x[None, ..., 1]
    c = x[:, np.newaxis, :, -1]
    return a.shape[-1] * a, b, c


@program(lambda r: (f32(r, 5, 4), 3))
def dynamic_row_index_from_static(x, i):
    return x[i - 1, :] + x[-i]


@program(lambda r: (f32(r, 3, 4, 5),))
def transposes(x):
    return x.T, np.transpose(x, (1, 0, 2)), x.transpose(2, 0, 1), x.T.T


@program(lambda r: (f32(r, 4, 3) * 5,))
def astype_roundtrip(x):
    i = x.astype(np.int32)
    f = i.astype(np.float64)
    return i, f + 0.5, x.astype("float64") - f


# ======================================================================================
# Dtypes and promotion (NEP 50)
# ======================================================================================
@program(lambda r: (f32(r, 4),))
def weak_float_keeps_float32(x):
    return x * 2.0, x + 1, x / 3, 2.5 - x


@program(lambda r: (i32(r, 5),))
def int32_plus_float_is_float64(x):
    return x + 1.5, x * 2, x // 3, x % 4, -x, x / 2


@program(lambda r: (i64(r, 3, 4), i64(r, 3, 4, lo=1, hi=7)))
def integer_arithmetic(a, b):
    return a // b, a % b, a * b - a, np.abs(a), np.sign(a), np.maximum(a, b), a ** 2


@program(lambda r: (f32(r, 5), f64(r, 5)))
def mixed_precision_promotion(a, b):
    return a + b, a * np.float32(2), a.astype(np.float64) - b


@program(lambda r: (boolean(r, 3, 4), boolean(r, 3, 4)))
def boolean_logic(p, q):
    both = p & q
    either = np.logical_or(p, q)
    x = p ^ q
    return both, either, ~x, both.sum(), either.any(axis=0), np.all(p | q, axis=1)


@program(lambda r: (rng_uint8(r, 4, 4),))
def uint8_arithmetic(x):
    return x + 1, x.astype(np.int32) - 200, x // 3, x.max(), x.sum()


def rng_uint8(rng, *shape):
    return rng.integers(0, 255, size=shape).astype(np.uint8)


@program(lambda r: (i32(r, 6),))
def int_mean_is_float64(x):
    return x.mean(), x.sum(), np.prod(x[:3]), x.var(), x.std()


@program(lambda r: (f32(r, 4, 4),))
def dtype_attribute_use(x):
    two = x.dtype.type(2)
    return x * two, x.astype(x.dtype)


# ======================================================================================
# Comparisons, where, clip, argmax, var/std, einsum
# ======================================================================================
@program(lambda r: (f32(r, 5, 5), f32(r, 5, 5)))
def comparisons_and_where(a, b):
    mask = (a > b) & (a > 0)
    return np.where(mask, a, b), np.where(a <= 0, 0.0, a), a == b, a != b, mask


@program(lambda r: (f64(r, 10) * 3,))
def clip_variants(x):
    return np.clip(x, -1.0, 1.0), x.clip(-0.5, 2), np.clip(x, 0, None)


@program(lambda r: (f32(r, 4, 6),))
def argmax_argmin(x):
    return np.argmax(x, axis=1), np.argmin(x, axis=0), x.argmax(), np.argmax(x, axis=-1, keepdims=True)


@program(lambda r: (f64(r, 6, 5),))
def var_std_ddof(x):
    return x.var(axis=0), x.std(axis=1, ddof=1), np.var(x, keepdims=True), np.std(x, axis=(0, 1))


@program(lambda r: (f64(r, 3, 4), f64(r, 4, 5), f64(r, 3, 5)))
def einsum_variants(a, b, c):
    return (np.einsum("ij,jk->ik", a, b), np.einsum("ij,ik->jk", a, c), np.einsum("ij,ij->", a, a),
            np.einsum("ij,j->i", a, b[:, 0]), np.einsum("ij->ji", a))


@program(lambda r: (f64(r, 3, 4), f64(r, 4, 5), f64(r, 3, 5)))
def einsum_three_operands(a, b, c):
    return np.einsum("ij,jk,ik->i", a, b, c)


@program(lambda r: (f64(r, 3, 4),))
def einsum_single_operand_reduction(a):
    return np.einsum("ij->j", a), np.einsum("ij->", a)


@program(lambda r: (f64(r, 4, 4),))
def einsum_trace_and_diagonal(sq):
    return np.einsum("ii->", sq), np.einsum("ii->i", sq) * 2


@program(lambda r: (f64(r, 3, 4), f64(r, 4), f64(r, 3)))
def dot_outer_tensordot(a, v, u):
    return np.dot(a, v), np.outer(u, v), np.tensordot(a, a, axes=([1], [1])), a.dot(v), u @ a


@program(lambda r: (f32(r, 2, 3, 4), f32(r, 2, 4, 5)))
def batched_matmul_broadcast(a, b):
    return a @ b, a @ b[0], np.matmul(a[0], b)


@program(lambda r: (f64(r, 5) * 4,))
def rounding_family(x):
    return np.floor(x), np.ceil(x), np.round(x), np.trunc(x), np.round(x, 2), np.rint(x)


@program(lambda r: (pos32(r, 6),))
def transcendental(x):
    return np.log(x), np.log2(x), np.log10(x), np.sqrt(x), np.exp2(x), np.expm1(x), np.arctan2(x, 1 - x)


@program(lambda r: (f64(r, 5),))
def power_forms(x):
    return x ** 2, np.abs(x) ** 0.5, x ** 3, np.power(np.abs(x), 1.5), 2.0 ** x


@program(lambda r: (f32(r, 4, 5),))
def reductions_various(x):
    return (x.max(axis=0), x.min(axis=1, keepdims=True), np.sum(x, axis=(0, 1)), x.prod(axis=0),
            np.mean(x, axis=-1), np.any(x > 1), (x > 0).all(axis=1))


@program(lambda r: (f64(r, 6),))
def isnan_isfinite(x):
    y = np.log(x)  # NaN for negative entries
    return np.isnan(y), np.isfinite(y), np.where(np.isnan(y), 0.0, y)


# ======================================================================================
# Comprehensions and array construction (shape_ops / creation primitives)
# ======================================================================================
@program(lambda r: (f32(r, 4, 3),))
def list_comprehension_stack(x):
    rows = [x[i] * (i + 1) for i in range(x.shape[0])]
    return np.stack(rows), np.stack([r.sum() for r in rows])


@program(lambda r: (f32(r, 2, 3), f32(r, 4, 3)))
def concatenate_axis0(a, b):
    return np.concatenate([a, b], axis=0), np.concatenate((a.T, b.T), axis=1)


@program(lambda r: (f32(r, 3, 4),))
def zeros_ones_like(x):
    z = np.zeros((x.shape[0], 2), dtype=x.dtype)
    o = np.ones_like(x)
    return np.concatenate([x, z], axis=1), o * x, np.zeros_like(x) + 1


@program(lambda r: (f64(r, 5),))
def arange_linspace(x):
    t = np.arange(x.shape[0])
    u = np.linspace(0.0, 1.0, 5)
    return x * t, x + u, np.arange(1, 10, 2)


@program(lambda r: (f32(r, 4, 4),))
def eye_identity(x):
    return x + np.eye(4, dtype=np.float32), np.eye(x.shape[0]) * 2


@program(lambda r: (f32(r, 3, 4),))
def expand_squeeze(x):
    e = np.expand_dims(x, axis=1)
    return e, np.squeeze(e, axis=1), e.squeeze()


@program(lambda r: (f32(r, 3, 4),))
def flip_tile_repeat(x):
    return np.flip(x, axis=0), np.tile(x, (2, 1)), np.repeat(x, 2, axis=1)


@program(lambda r: (f32(r, 6, 4),))
def split_and_recombine(x):
    a, b, c = np.split(x, 3, axis=0)
    return a + b + c


@program(lambda r: (f32(r, 5, 3),))
def one_hot_via_arange(x):
    idx = np.argmax(x, axis=1)
    return (idx[:, None] == np.arange(x.shape[1])[None, :]).astype(np.float32)


@program(lambda r: (f32(r, 3, 4),))
def comprehension_with_helpers_and_methods(x):
    # kept nested in the generated source, yet helpers, aliases and methods are resolved inside
    normed = [_softmax(row * k) for k, row in enumerate(x) if k != 1]
    sums = tuple(tanh(r).sum(axis=0) for r in normed)
    return np.stack(normed), onp.stack(sums), [r.reshape(2, -1).T for r in x[::2]]


@program(lambda r: (f32(r, 6),))
def running_sum_unrolled(x):
    outs = []
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i]
        outs.append(acc)
    return np.stack(outs)


# An imported function used directly as the entry: its default `activation="relu"` is a string.
program(lambda r: (f32(r, 4, 3), f32(r, 3, 5), f32(r, 5)))(dense)
