"""NumPy's integer and bit-level functions written in NumPy terms, like :mod:`srcjax.numpy_extras` (which
:mod:`srcjax.composites` merges with :data:`BITS_IMPLEMENTS` into its table): ``np.gcd``/``np.lcm`` (Euclid's
loop, a ``while`` on data), ``np.nextafter``/``np.spacing`` (the float's bits read as an integer, stepped by
one), ``np.packbits``/``np.unpackbits`` (bits as ``uint8`` weights) and ``np.bitwise_count``. Transpiled like
the user's own helpers: batched through the primitives they use; none of them has a derivative (integers, or a
float's step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .core import ArgumentError
from .lax import bitcast_convert_type

__all__ = ["BITS_IMPLEMENTS", "bitwise_count", "gcd", "lcm", "nextafter", "packbits", "spacing", "unpackbits"]

BITS_IMPLEMENTS: dict[Any, Callable[..., Any]] = {}


def _implements(target: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        BITS_IMPLEMENTS[target] = fn
        return fn
    return register


# -- greatest common divisor, least common multiple -------------------------------------------------------

def _integer_operands(name: str, x1: Any, x2: Any) -> Any:
    """The integer dtype NumPy's ``gcd``/``lcm`` give (booleans as int8); floats refused."""
    dt = np.result_type(x1, x2)
    if dt == np.bool_:
        return np.int8
    if not np.issubdtype(dt, np.integer):
        raise ArgumentError(f"np.{name} is defined for integers only, not {np.dtype(dt).name}",
                            hint=f"round and cast first: np.{name}(np.round(x).astype(np.int64), ...)")
    return dt


@_implements(np.gcd)
def gcd(x1: Any, x2: Any, /) -> Any:
    """The greatest common divisor of ``|x1|`` and ``|x2|`` (0 for two zeros), broadcast: Euclid's steps,
    each element stopping when its remainder is 0."""
    dt = _integer_operands("gcd", x1, x2)
    a = np.abs(np.asarray(x1).astype(dt)) + np.zeros_like(np.asarray(x2), dtype=dt)
    b = np.abs(np.asarray(x2).astype(dt)) + np.zeros_like(np.asarray(x1), dtype=dt)
    while np.any(b != 0):
        going = b != 0
        r = np.where(going, a % np.where(going, b, 1), 0)
        a = np.where(going, b, a)
        b = r
    return a


@_implements(np.lcm)
def lcm(x1: Any, x2: Any, /) -> Any:
    """The least common multiple ``|x1 // gcd * x2|`` (0 where either is 0), broadcast."""
    dt = _integer_operands("lcm", x1, x2)
    a, b = np.asarray(x1).astype(dt), np.asarray(x2).astype(dt)
    g = gcd(a, b)
    return np.where(g == 0, 0, np.abs(a // np.where(g == 0, 1, g) * b)).astype(dt)


# -- a float's neighbours ------------------------------------------------------------------------------------

def _float_of(dt: Any) -> Any:
    """The float dtype NumPy's ``nextafter``/``spacing`` loops give for ``dt``: a float stays, 1-byte
    integers and booleans give float16, 2-byte ones float32, the others float64."""
    if np.issubdtype(dt, np.floating):
        return dt
    if np.issubdtype(dt, np.complexfloating):
        raise ArgumentError(f"np.nextafter and np.spacing are not defined for {np.dtype(dt).name}",
                            hint="apply them to the real and imaginary parts (x.real, x.imag)")
    width = np.dtype(dt).itemsize
    return np.float16 if width == 1 else np.float32 if width == 2 else np.float64


def _bits_of(dt: Any) -> Any:
    width = np.dtype(dt).itemsize
    return np.int64 if width == 8 else np.int32 if width == 4 else np.int16


@_implements(np.nextafter)
def nextafter(x1: Any, x2: Any, /) -> Any:
    """The float next to ``x1`` in the direction of ``x2`` (``x2`` where they are equal, NaN where either
    is): ``x1``'s bits as a signed integer, one step away from or towards zero (XLA's ``NextAfter``)."""
    dt = _float_of(np.result_type(x1, x2))
    bt = _bits_of(dt)
    x = np.asarray(x1).astype(dt)
    y = np.asarray(x2).astype(dt)
    xb = bitcast_convert_type(x, bt)
    yb = bitcast_convert_type(y, bt)
    sign = np.iinfo(bt).min  # (the sign bit alone)
    xa, ya = xb & ~sign, yb & ~sign
    toward_zero = np.logical_or(xa > ya, (xb < 0) != (yb < 0))
    stepped = xb + np.where(toward_zero, -1, 1).astype(bt)
    stepped = np.where(xa == 0, (yb & sign) | 1, stepped)
    same = np.logical_or(xb == yb, np.logical_and(xa == 0, ya == 0))
    r = bitcast_convert_type(np.where(same, yb, stepped), dt)
    return np.where(np.logical_or(np.isnan(x), np.isnan(y)), np.nan, r).astype(dt)


@_implements(np.spacing)
def spacing(x: Any, /) -> Any:
    """The distance from ``x`` to the next float away from zero (negative for a negative ``x``; NaN for an
    infinity or NaN), as NumPy: the next float's bits minus ``x``'s, read as a float."""
    dt = _float_of(np.result_type(x))
    bt = _bits_of(dt)
    v = np.asarray(x).astype(dt)
    vb = bitcast_convert_type(v, bt)
    sign = np.iinfo(bt).min
    mant = np.finfo(dt).nmant
    va = vb & ~sign
    expo = np.right_shift(va, mant)  # (biased exponent)
    # the unit in the last place, from the exponent alone: 2 ** (e - mant) as a float's bits, a subnormal
    # step below 2 ** (1 + mant); the largest finite float's next float is infinity (NumPy: its spacing is inf)
    normal = np.left_shift(np.maximum(expo - mant, 1), mant)
    tiny = np.left_shift(np.ones_like(va), np.maximum(expo - 1, 0))
    ulp = bitcast_convert_type(np.where(expo > mant, normal, tiny), dt)
    top = va == bitcast_convert_type(np.asarray(np.finfo(dt).max).astype(dt), bt)
    ulp = np.where(top, np.inf, ulp)
    r = np.where(np.logical_and(vb < 0, va != 0), -ulp, ulp)  # (the sign bit: XLA reads a subnormal as 0)
    return np.where(np.isfinite(v), r, np.nan).astype(dt)


# -- bits packed into bytes ------------------------------------------------------------------------------------

def _bit_weights(bitorder: str) -> Any:
    if bitorder not in ("big", "little"):
        raise ArgumentError(f"np.packbits/np.unpackbits: bitorder must be 'big' or 'little', not {bitorder!r}")
    w = np.left_shift(np.ones(8, dtype=np.uint8), np.arange(8, dtype=np.uint8))
    return w[::-1] if bitorder == "big" else w


@_implements(np.packbits)
def packbits(a: Any, /, axis: Any = None, bitorder: str = "big") -> Any:
    """Each run of 8 elements along ``axis`` (nonzero: a 1 bit; the last run padded with zeros) as one
    ``uint8`` (the first element the highest bit for ``bitorder='big'``); ``axis`` None: the flattened array."""
    if not (np.issubdtype(np.result_type(a), np.integer) or np.result_type(a) == np.bool_):
        raise ArgumentError("np.packbits: expected an array of integer or boolean data type",
                            hint="pack a comparison: np.packbits(x > 0)")
    w = _bit_weights(bitorder)
    v = np.ravel(a) if axis is None else np.moveaxis(a, axis, -1)
    n = np.shape(v)[-1]
    pad = (-n) % 8
    bits = (v != 0).astype(np.uint8)
    if pad:
        bits = np.concatenate((bits, np.zeros(np.shape(v)[:-1] + (pad,), dtype=np.uint8)), axis=-1)
    groups = np.reshape(bits, np.shape(v)[:-1] + ((n + pad) // 8, 8))
    packed: Any = np.sum(groups * w, axis=-1, dtype=np.uint8)
    return packed if axis is None else np.moveaxis(packed, -1, axis)


@_implements(np.unpackbits)
def unpackbits(a: Any, /, axis: Any = None, count: Any = None, bitorder: str = "big") -> Any:
    """The 8 bits of each ``uint8`` along ``axis`` as ``uint8`` zeros and ones (``axis`` None: of the flattened
    array); ``count`` keeps the first ``count`` bits (negative: drops ``-count`` at the end; more than there
    are: zeros added)."""
    if np.result_type(a) != np.uint8:
        raise ArgumentError(f"np.unpackbits: expected an input array of unsigned byte data type, not "
                            f"{np.dtype(np.result_type(a)).name}", hint="cast first: np.unpackbits(a.astype(np.uint8))")
    w = _bit_weights(bitorder)
    v = np.ravel(a) if axis is None else np.moveaxis(a, axis, -1)
    bits = (np.expand_dims(v, -1) & w != 0).astype(np.uint8)
    n = 8 * np.shape(v)[-1]
    flat = np.reshape(bits, np.shape(v)[:-1] + (n,))
    if count is not None:
        keep = count if count >= 0 else max(n + count, 0)
        if keep <= n:
            flat = flat[..., :keep]
        else:
            flat = np.concatenate((flat, np.zeros(np.shape(v)[:-1] + (keep - n,), dtype=np.uint8)), axis=-1)
    return flat if axis is None else np.moveaxis(flat, -1, axis)


@_implements(np.bitwise_count)
def bitwise_count(x: Any, /) -> Any:
    """The number of 1 bits of ``|x|`` (``uint8``), elementwise: each bit shifted down and added."""
    dt = np.result_type(x)
    if dt == np.bool_:
        return np.asarray(x).astype(np.uint8)
    if not np.issubdtype(dt, np.integer):
        raise ArgumentError(f"np.bitwise_count is defined for integers only, not {np.dtype(dt).name}",
                            hint="view a float's bits first: srcjax.lax.bitcast_convert_type(x, np.int64)")
    width = np.dtype(dt).itemsize
    ut = np.uint64 if width == 8 else np.uint32 if width == 4 else np.uint16 if width == 2 else np.uint8
    u = np.abs(np.asarray(x)).astype(ut)
    bits = np.right_shift(np.expand_dims(u, -1), np.arange(8 * width, dtype=ut)) & np.ones(1, dtype=ut)
    return np.sum(bits, axis=-1).astype(np.uint8)
