"""``srcjax.random``: JAX's random numbers: explicit, splittable, counter-based keys.

A key is a ``uint32[2]`` array (JAX's raw ``PRNGKey`` form; ``key(seed)`` returns the same raw array,
not a typed key as ``jax.random.key`` does). Every draw is a pure function of its key, computed with
the Threefry-2x32 hash written in ordinary uint32 operations (add, shift, or, xor), in JAX's
``jax_threefry_partitionable=True`` mode: the same key gives the same bits as ``jax.random`` on every
device, in the compiled program and in the NumPy run of its generated source. ``key``, ``split``,
``fold_in``, ``bits``, ``uniform`` on [0, 1), ``randint``, ``bernoulli``, ``permutation`` and
``choice`` give jax's values bit for bit (``categorical`` too, unless two scores tie within an ulp);
compiled, ``normal``, ``truncated_normal`` (XLA's inverse error function, written here in NumPy) and
a ``uniform`` over a range do too, and NumPy (eagerly, or running the generated source) is within a
few ulp of them (XLA fuses multiply-adds, FMA).

These functions are written in NumPy terms and srcjax transpiles them like the user's own helpers
(``srcjax.source`` shows them imported from ``srcjax.random``): they run eagerly on NumPy arrays, and
inside compiled, differentiated (a sample is differentiable in ``minval``/``maxval``/``mu``/``sigma``,
never in its key) and batched code (``vmap`` over split keys). Shapes and dtypes are static.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .core import TranspileError
from .lax import bitcast_convert_type, erf

__all__ = ["PRNGKey", "RandomArgumentError", "bernoulli", "bits", "categorical", "choice", "fold_in", "key",
           "normal", "permutation", "randint", "split", "threefry2x32", "truncated_normal", "uniform"]


class RandomArgumentError(TranspileError, TypeError):
    """A ``srcjax.random`` function was given something it cannot use (a float as a key, a shape that
    depends on data, a dtype it does not draw)."""


# -- checks (static: they run while transpiling, and eagerly) ------------------------------------

# (each function checks its key in its own body, reading only the key's shape and dtype: vmap runs
# such a check per example)
def _key_message(fn: str, dtype: Any, shape: Any) -> str:
    return (f"srcjax.random.{fn}: the key must be a uint32[2] array from srcjax.random.key(seed) or split(), "
            f"not a {dtype} value of shape {shape}; make one with srcjax.random.key(0), split it with "
            "srcjax.random.split(key), and vmap over split keys for a batch")


def _shape(shape: Any, fn: str) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, int) else shape
    if not isinstance(dims, (tuple, list)):
        raise RandomArgumentError(f"srcjax.random.{fn}: the shape must be a tuple of Python ints known while "
                                  "compiling (e.g. x.shape, or (3, 4)), not an array")
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool) or d < 0:
            raise RandomArgumentError(f"srcjax.random.{fn}: the shape must be a tuple of Python ints known while "
                                      "compiling (e.g. x.shape, or (3, 4)), not a value computed from data; "
                                      "draw a static maximal shape and mask it with np.where instead")
    return tuple(dims)


def _float_dtype(dtype: Any, fn: str) -> Any:
    d = np.dtype(np.float64 if dtype is None else dtype)
    if d != np.float32 and d != np.float64:
        raise RandomArgumentError(f"srcjax.random.{fn}: dtype must be np.float32 or np.float64, not {d}")
    return d


# -- Threefry-2x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", 2011) -------------

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _mix(x0: Any, x1: Any, r: int) -> Any:
    """One Threefry round: add, rotate left by ``r``, xor."""
    x0 = x0 + x1
    x1 = (x1 << r) | (x1 >> (32 - r))
    return x0, x0 ^ x1


def _rounds(x0: Any, x1: Any, rotations: Any) -> Any:
    x0, x1 = _mix(x0, x1, rotations[0])
    x0, x1 = _mix(x0, x1, rotations[1])
    x0, x1 = _mix(x0, x1, rotations[2])
    return _mix(x0, x1, rotations[3])


def threefry2x32(k0: Any, k1: Any, x0: Any, x1: Any) -> Any:
    """The Threefry-2x32 hash (20 rounds) of the counter pairs ``(x0, x1)`` under the key ``(k0, k1)``:
    uint32 arrays (the key words broadcast against the counters). Returns two uint32 arrays."""
    k2 = k0 ^ k1 ^ 0x1BD11BDA
    x0, x1 = _rounds(x0 + k0, x1 + k1, _ROTATIONS[0])
    x0, x1 = _rounds(x0 + k1, x1 + k2 + 1, _ROTATIONS[1])
    x0, x1 = _rounds(x0 + k2, x1 + k0 + 2, _ROTATIONS[0])
    x0, x1 = _rounds(x0 + k0, x1 + k1 + 3, _ROTATIONS[1])
    x0, x1 = _rounds(x0 + k1, x1 + k2 + 4, _ROTATIONS[0])
    return x0 + k2, x1 + k0 + 5


def _hash(k: Any, n: int) -> Any:
    """Threefry of the counters 0 .. n-1 (as 64-bit numbers: high word 0) under key ``k``: two flat
    uint32[n] arrays, as JAX's partitionable mode draws them."""
    if n >= 2 ** 32:
        raise RandomArgumentError(f"srcjax.random: cannot draw {n} numbers from one key (at most 2**32 - 1)")
    return threefry2x32(k[0:1], k[1:2], np.zeros(n, dtype=np.uint32), np.arange(n, dtype=np.uint32))


def _bits(k: Any, shape: tuple[int, ...], width: int) -> Any:
    """``width``-bit random words (32 or 64) of ``shape``, flat."""
    b0, b1 = _hash(k, math.prod(shape))
    if width == 64:
        return (b0.astype(np.uint64) << 32) | b1.astype(np.uint64)
    return b0 ^ b1


# -- keys ---------------------------------------------------------------------------------------

def PRNGKey(seed: Any) -> Any:  # noqa: N802 (JAX's name)
    """A key from an integer seed: ``uint32[2]`` = the seed's high and low 32-bit words (a 32-bit seed
    array has high word 0), as ``jax.random.PRNGKey``."""
    if isinstance(seed, int) and not isinstance(seed, bool):
        return np.array([(seed >> 32) & 0xFFFFFFFF, seed & 0xFFFFFFFF], dtype=np.uint32)
    if np.shape(seed) != () or np.result_type(seed).kind not in "iu":
        raise RandomArgumentError(f"srcjax.random.key: the seed must be an integer scalar, not a "
                                  f"{np.result_type(seed)} value of shape {np.shape(seed)}")
    s = np.asarray(seed)
    lo = np.reshape(s.astype(np.uint32), (1,))
    if np.result_type(seed).itemsize == 8:
        return np.concatenate([np.reshape((s >> 32).astype(np.uint32), (1,)), lo])
    return np.concatenate([np.zeros(1, dtype=np.uint32), lo])


def key(seed: Any) -> Any:
    """``PRNGKey(seed)``: srcjax keys are raw ``uint32[2]`` arrays (JAX's ``key`` returns a typed key)."""
    return PRNGKey(seed)


def split(key: Any, num: Any = 2) -> Any:
    """``num`` new keys from ``key`` (``num`` an int, or a shape): a ``uint32[num, 2]`` array."""
    if np.shape(key) != (2,) or np.result_type(key) != np.uint32:
        raise RandomArgumentError(_key_message("split", np.result_type(key), np.shape(key)))
    shape = _shape(num, "split")
    b0, b1 = _hash(key, math.prod(shape))
    return np.reshape(np.stack([b0, b1], axis=1), shape + (2,))


def fold_in(key: Any, data: Any) -> Any:
    """A new key from ``key`` and an integer ``data`` (a step number, a device index): JAX's ``fold_in``."""
    if np.shape(key) != (2,) or np.result_type(key) != np.uint32:
        raise RandomArgumentError(_key_message("fold_in", np.result_type(key), np.shape(key)))
    if isinstance(data, int) and not isinstance(data, bool):
        count = np.array([data & 0xFFFFFFFF], dtype=np.uint32)
    else:
        count = np.reshape(np.asarray(data).astype(np.uint32), (1,))
    b0, b1 = threefry2x32(key[0:1], key[1:2], np.zeros(1, dtype=np.uint32), count)
    return np.concatenate([b0, b1])


def bits(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Random unsigned words (``np.uint32`` or ``np.uint64``) of ``shape``: ``jax.random.bits``."""
    if np.shape(key) != (2,) or np.result_type(key) != np.uint32:
        raise RandomArgumentError(_key_message("bits", np.result_type(key), np.shape(key)))
    shape = _shape(shape, "bits")
    d = np.dtype(np.uint32 if dtype is None else dtype)
    if d != np.uint32 and d != np.uint64:
        raise RandomArgumentError(f"srcjax.random.bits: dtype must be np.uint32 or np.uint64, not {d}")
    return np.reshape(_bits(key, shape, 8 * d.itemsize), shape)


# -- continuous distributions -------------------------------------------------------------------

def uniform(key: Any, shape: Any = (), dtype: Any = None, minval: Any = 0.0, maxval: Any = 1.0) -> Any:
    """Uniform in ``[minval, maxval)``: the random bits fill the mantissa of a float in [1, 2), minus 1.
    ``dtype`` defaults to float64 (NumPy's default, and jax's with ``jax_enable_x64``; the other
    functions' too)."""
    if np.shape(key) != (2,) or np.result_type(key) != np.uint32:
        raise RandomArgumentError(_key_message("uniform", np.result_type(key), np.shape(key)))
    shape = _shape(shape, "uniform")
    d = _float_dtype(dtype, "uniform")
    lo = np.asarray(minval).astype(d)
    hi = np.asarray(maxval).astype(d)
    if d == np.float32:
        one = bitcast_convert_type((_bits(key, shape, 32) >> 9) | 0x3F800000, np.float32)
    else:
        one = bitcast_convert_type((_bits(key, shape, 64) >> 12) | 0x3FF0000000000000, np.float64)
    floats = np.reshape(one - 1.0, shape)
    return np.maximum(lo, floats * (hi - lo) + lo)


# XLA's inverse error function (M. Giles, "Approximating the erfinv function", 2010), for |x| < 1:
# with w = -log1p(-x^2), a polynomial in w - 2.5 (w < 5) or sqrt(w) - 3 (float32); in w - 3.125
# (w < 6.25), sqrt(w) - 3.25 (w < 16) or sqrt(w) - 5 (float64). Coefficients highest power first.
_ERFINV32 = ((2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
              -0.00417768164, 0.246640727, 1.50140941),
             (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682))
_ERFINV64 = (
    (-3.64441206401782e-21, -1.6850591381820166e-19, 1.28584807152564e-18, 1.1157877678025181e-17,
     -1.333171662854621e-16, 2.0972767875968562e-17, 6.637638134358324e-15, -4.054566272975207e-14,
     -8.151934197605472e-14, 2.6335093153082323e-12, -1.2975133253453532e-11, -5.415412054294628e-11,
     1.0512122733215323e-09, -4.112633980346984e-09, -2.9070369957882005e-08, 4.2347877827932404e-07,
     -1.3654692000834679e-06, -1.3882523362786469e-05, 0.00018673420803405714, -0.000740702534166267,
     -0.006033670871430149, 0.24015818242558962, 1.6536545626831027),
    (2.2137376921775787e-09, 9.075656193888539e-08, -2.7517406297064545e-07, 1.8239629214389228e-08,
     1.5027403968909828e-06, -4.013867526981546e-06, 2.9234449089955446e-06, 1.2475304481671779e-05,
     -4.7318229009055734e-05, 6.828485145957318e-05, 2.4031110387097894e-05, -0.0003550375203628475,
     0.0009532893797373805, -0.0016882755560235047, 0.002491442096107851, -0.003751208507569241,
     0.005370914553590064, 1.0052589676941592, 3.0838856104922208),
    (-2.7109920616438573e-11, -2.555641816996525e-10, 1.5076572693500548e-09, -3.789465440126737e-09,
     7.61570120807834e-09, -1.496002662714924e-08, 2.914795345090108e-08, -6.771199775845234e-08,
     2.2900482228026655e-07, -9.9298272942317e-07, 4.526062597223154e-06, -1.968177810553167e-05,
     7.599527703001776e-05, -0.00021503011930044477, -0.00013871931833623122, 1.0103004648645344,
     4.849906401408584),
)


def _horner(coefficients: Any, t: Any) -> Any:
    p = coefficients[0]
    for c in coefficients[1:]:
        p = c + p * t
    return p


def _erfinv(x: Any) -> Any:
    """The inverse error function for ``|x| < 1`` (no infinities at +-1: ``normal`` never asks)."""
    w = -np.log1p(-x * x)
    if np.result_type(x) == np.float32:
        p = np.where(w < 5.0, _horner(_ERFINV32[0], w - 2.5), _horner(_ERFINV32[1], np.sqrt(w) - 3.0))
    else:
        p = np.where(w < 16.0, _horner(_ERFINV64[1], np.sqrt(w) - 3.25), _horner(_ERFINV64[2], np.sqrt(w) - 5.0))
        p = np.where(w < 6.25, _horner(_ERFINV64[0], w - 3.125), p)
    return p * x


def normal(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard normal samples: ``sqrt(2) * erfinv(u)``, ``u`` uniform in (-1, 1), as ``jax.random.normal``."""
    if np.shape(key) != (2,) or np.result_type(key) != np.uint32:
        raise RandomArgumentError(_key_message("normal", np.result_type(key), np.shape(key)))
    shape = _shape(shape, "normal")
    d = _float_dtype(dtype, "normal")
    lo = -(1.0 - 2.0 ** -24) if d == np.float32 else -(1.0 - 2.0 ** -53)  # the float after -1
    u = uniform(key, shape, d, lo, 1.0)
    return 1.4142135623730951 * _erfinv(u)


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Standard normal samples conditioned on ``lower < x < upper`` (inverse CDF: ``u`` uniform between
    ``erf(lower / sqrt 2)`` and ``erf(upper / sqrt 2)``), as ``jax.random.truncated_normal``; kept in
    ``[lower, upper]`` against rounding (jax: the open interval). ``shape``: default the bounds'."""
    if np.shape(key) != (2,) or np.result_type(key) != np.uint32:
        raise RandomArgumentError(_key_message("truncated_normal", np.result_type(key), np.shape(key)))
    d = _float_dtype(dtype, "truncated_normal")
    lo = np.asarray(lower).astype(d)
    hi = np.asarray(upper).astype(d)
    shape = np.shape(lo + hi) if shape is None else _shape(shape, "truncated_normal")
    a = erf(lo / 1.4142135623730951)
    b = erf(hi / 1.4142135623730951)
    out = 1.4142135623730951 * _erfinv(uniform(key, shape, d, a, b))
    return np.clip(out, lo, hi)


def _gumbel(key: Any, shape: tuple[int, ...], d: Any) -> Any:
    tiny = float(np.finfo(d).tiny)
    return -np.log(-np.log(uniform(key, shape, d, tiny, 1.0)))


# -- discrete distributions ---------------------------------------------------------------------

def bernoulli(key: Any, p: Any = 0.5, shape: Any = None) -> Any:
    """``True`` with probability ``p`` (boolean array of ``shape``, default ``p``'s shape)."""
    if np.shape(key) != (2,) or np.result_type(key) != np.uint32:
        raise RandomArgumentError(_key_message("bernoulli", np.result_type(key), np.shape(key)))
    shape = np.shape(p) if shape is None else _shape(shape, "bernoulli")
    d = np.float64 if isinstance(p, (int, float)) else np.result_type(p)
    return uniform(key, shape, d) < p


def randint(key: Any, shape: Any, minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Integers in ``[minval, maxval)`` of ``shape`` (``minval``/``maxval`` within ``dtype``'s range), as
    ``jax.random.randint``: two words per draw, reduced modulo the span."""
    if np.shape(key) != (2,) or np.result_type(key) != np.uint32:
        raise RandomArgumentError(_key_message("randint", np.result_type(key), np.shape(key)))
    shape = _shape(shape, "randint")
    d = np.dtype(np.int64 if dtype is None else dtype)
    if d.kind not in "iu" or d.itemsize not in (4, 8):
        raise RandomArgumentError(f"srcjax.random.randint: dtype must be a 32- or 64-bit integer type, not {d}")
    width = 8 * d.itemsize
    u = np.uint32 if width == 32 else np.uint64
    lo = np.asarray(minval).astype(d)
    hi = np.asarray(maxval).astype(d)
    keys = split(key)
    higher = _bits(keys[0], shape, width)
    lower = _bits(keys[1], shape, width)
    # (flat arrays: NumPy wraps uint arithmetic silently on arrays, with a warning on scalars)
    span = np.reshape(np.broadcast_to(np.where(hi <= lo, 1, (hi - lo).astype(u)), shape), (-1,))
    multiplier = (2 ** (width // 2)) % span
    multiplier = (multiplier * multiplier) % span
    offset = ((higher % span) * multiplier + lower % span) % span
    return np.reshape(np.reshape(np.broadcast_to(lo, shape), (-1,)) + offset.astype(d), shape)


def categorical(key: Any, logits: Any, axis: int = -1, shape: Any = None) -> Any:
    """Indices drawn with probabilities ``softmax(logits)`` along ``axis`` (the Gumbel-max trick)."""
    if np.shape(key) != (2,) or np.result_type(key) != np.uint32:
        raise RandomArgumentError(_key_message("categorical", np.result_type(key), np.shape(key)))
    d = _float_dtype(np.result_type(logits), "categorical")
    nd = np.ndim(logits)
    ax = axis % nd
    batch = np.shape(logits)[:ax] + np.shape(logits)[ax + 1:]
    if shape is None:
        shape = batch
    shape = _shape(shape, "categorical")
    prefix = shape[:len(shape) - len(batch)]
    rest = shape[len(shape) - len(batch):]
    full = prefix + rest[:ax] + (np.shape(logits)[ax],) + rest[ax:]
    g = _gumbel(key, full, d) + np.reshape(logits, (1,) * len(prefix) + np.shape(logits))
    return np.argmax(g, axis=len(prefix) + ax)


def _shuffle(key: Any, x: Any) -> Any:
    """``x`` (1-D) reordered by sorting on random words, as JAX does (enough rounds that ties are rare)."""
    n = np.shape(x)[0]
    rounds = math.ceil(3 * math.log(max(1, n)) / math.log(2 ** 32 - 1))
    for _ in range(rounds):
        keys = split(key)
        key = keys[0]
        order = np.argsort(np.reshape(_bits(keys[1], (n,), 32), (n,)), kind="stable")
        x = np.take(x, order)
    return x


def permutation(key: Any, x: Any, axis: int = 0) -> Any:
    """A random permutation of ``range(x)`` (an int ``x``) or of ``x``'s entries along ``axis``."""
    if np.shape(key) != (2,) or np.result_type(key) != np.uint32:
        raise RandomArgumentError(_key_message("permutation", np.result_type(key), np.shape(key)))
    if isinstance(x, int) and not isinstance(x, bool):
        return _shuffle(key, np.arange(x))
    order = _shuffle(key, np.arange(np.shape(x)[axis]))
    return np.take(x, order, axis=axis)


def choice(key: Any, a: Any, shape: Any = (), replace: bool = True, p: Any = None, axis: int = 0) -> Any:
    """Entries of ``a`` (or of ``range(a)`` for an int) along ``axis``: uniformly or with probabilities
    ``p``, with replacement, or without (``replace=False``: a prefix of a permutation, uniform ``p`` only)."""
    if np.shape(key) != (2,) or np.result_type(key) != np.uint32:
        raise RandomArgumentError(_key_message("choice", np.result_type(key), np.shape(key)))
    shape = _shape(shape, "choice")
    scalar = isinstance(a, int) and not isinstance(a, bool)
    n = a if scalar else np.shape(a)[axis]
    if not replace:
        if p is not None:
            raise RandomArgumentError("srcjax.random.choice: replace=False with probabilities p is not "
                                      "supported; use replace=True or drop p")
        k = math.prod(shape)
        if k > n:
            raise RandomArgumentError(f"srcjax.random.choice: cannot take {k} of {n} entries without replacement")
        ind = np.reshape(_shuffle(key, np.arange(n))[:k], shape)
    elif p is None:
        ind = randint(key, shape, 0, n)
    else:
        cuml = np.cumsum(p)
        r = cuml[-1] * (1 - uniform(key, shape, np.result_type(cuml)))
        ind = np.searchsorted(cuml, r).astype(np.int64)
    if scalar:
        return ind
    return np.take(a, ind, axis=axis)
