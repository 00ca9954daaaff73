"""Elementwise primitives: NumPy ufuncs, ``where`` and ``clip``.

Shapes broadcast as in NumPy; dtypes come from the ufunc's own type resolution
(``ufunc.resolve_dtypes``), which implements NumPy 2's rules including weak
Python scalars (NEP 50). Lowering casts each operand to the loop's input dtype,
broadcasts it, and applies one StableHLO (or CHLO) op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import lax
from ..core import DTypeError, ShapedArray
from ..lower.hlo import FuncBuilder, HloValue, is_float
from . import batch_rules
from .common import broadcast_shapes, weak_key
from .registry import PRIMITIVES, LowerCtx, alias, defjvp, deflinear, defprim, defvjp, nondiff, set_fields


def resolve(ufunc: np.ufunc, avals: list[ShapedArray]) -> tuple[tuple[np.dtype, ...], np.dtype]:
    """The ufunc's loop (input dtypes, output dtype) for these operands. When every operand is a
    weak Python scalar, NumPy converts each to its default dtype (int64, float64) first."""
    if all(a.weak_type for a in avals):
        keys: tuple[Any, ...] = tuple(a.dtype for a in avals)
    else:
        keys = tuple(weak_key(a) for a in avals)
    found = _LOOPS.get((ufunc, keys))
    if found is not None:
        return found
    try:
        loop = ufunc.resolve_dtypes(keys + (None,) * ufunc.nout)
    except (TypeError, np.exceptions.DTypePromotionError) as e:
        names = ", ".join(a.dtype.name + (" (weak)" if a.weak_type else "") for a in avals)
        raise DTypeError(f"np.{ufunc.__name__} does not support operands of dtype {names}",
                         hint="NumPy refuses these too: convert an operand first (x.astype(np.int32) for bitwise "
                              "functions and shifts, np.real/np.abs for complex values)") from e
    found = _LOOPS[(ufunc, keys)] = (tuple(loop[: ufunc.nin]), loop[ufunc.nin])
    return found


_LOOPS: dict[tuple[np.ufunc, tuple[Any, ...]], tuple[tuple[np.dtype, ...], np.dtype]] = {}
"""(ufunc, its operands' keys) -> :func:`resolve`'s loop: NumPy's resolution (~10 us a call) asked once per key
(an elementwise primitive resolves at its abstract evaluation and again at its lowering; a first gradient of an MLP,
~40 times for a handful of keys). Refusals are not kept: asked again, NumPy refuses again."""


def _lift(b: FuncBuilder, x: HloValue, dtype: np.dtype, shape: tuple[int, ...]) -> HloValue:
    if x.literal is not None:
        v = x.literal
        if dtype.kind in "iu" and not isinstance(v, bool):
            info = np.iinfo(dtype)
            if not info.min <= int(v) <= info.max:
                raise DTypeError(f"Python integer {v} out of bounds for {dtype.name}")
        return b.full(v, shape, dtype)
    return b.broadcast_to(b.convert(x, dtype), shape)


def _ufunc_abstract(ufunc: np.ufunc) -> Callable[..., ShapedArray]:
    def rule(*avals: ShapedArray) -> ShapedArray:
        shape = broadcast_shapes(*(a.shape for a in avals))
        _, out = resolve(ufunc, list(avals))
        return ShapedArray(shape, out)

    return rule


Emit = Callable[[FuncBuilder, list[HloValue], ShapedArray], HloValue]


def _ufunc_lower(ufunc: np.ufunc, emit: Emit) -> Callable[..., HloValue]:
    def rule(ctx: LowerCtx, *args: HloValue) -> HloValue:
        out = ctx.avals_out[0]
        ins, _ = resolve(ufunc, [a.aval for a in args])
        xs = [_lift(ctx.b, a, d, out.shape) for a, d in zip(args, ins)]
        return emit(ctx.b, xs, out)

    return rule


def _unary_stub(x, /):  # type: ignore[no-untyped-def]
    ...


def _binary_stub(x1, x2, /):  # type: ignore[no-untyped-def]
    ...


def op(name: str) -> Emit:
    """Apply one StableHLO/CHLO op (unary or binary) to same-typed operands."""

    def emit(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
        if len(xs) == 1:
            return b.unary(name, xs[0], out.update(weak_type=False))
        return b.binary(name, xs[0], xs[1])

    return emit


def by_kind(on_float: Emit, on_int: Emit, on_bool: Emit | None = None) -> Emit:
    def emit(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
        d = xs[0].dtype
        if d == np.bool_ and on_bool is not None:
            return on_bool(b, xs, out)
        return (on_float if is_float(d) else on_int)(b, xs, out)

    return emit


def identity(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
    return xs[0]


def compare(direction: str) -> Emit:
    return lambda b, xs, out: b.compare(direction, xs[0], xs[1])


def _square(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
    return b.binary("multiply", xs[0], xs[0])


def _reciprocal(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
    return b.binary("divide", b.full(1, xs[0].shape, xs[0].dtype), xs[0])


def _int_by_zero(b: FuncBuilder, y: HloValue, r: HloValue) -> HloValue:
    """NumPy's integer ``x // 0`` and ``x % 0`` are 0 (XLA's are -1 and x)."""
    if is_float(y.dtype):
        return r
    zero = b.full(0, y.shape, y.dtype)
    return b.select(b.compare("EQ", y, zero), zero, r)


def _remainder(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
    """Python/NumPy modulo: the result takes the sign of the divisor."""
    x, y = xs
    zero = b.full(0, x.shape, x.dtype)
    r = b.binary("remainder", x, y)
    r_nonzero = b.compare("NE", r, zero)
    signs_differ = b.compare("NE", b.compare("LT", r, zero), b.compare("LT", y, zero))
    fix = b.binary("and", r_nonzero, signs_differ)
    return _int_by_zero(b, y, b.select(fix, b.binary("add", r, y), r))


def _fmod(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
    """C's fmod (NumPy's ``np.fmod``): the result takes the sign of the dividend (XLA's remainder)."""
    return _int_by_zero(b, xs[1], b.binary("remainder", xs[0], xs[1]))


def _floor_divide(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
    x, y = xs
    zero = b.full(0, x.shape, x.dtype)
    one = b.full(1, x.shape, x.dtype)
    if not is_float(x.dtype):
        q = b.binary("divide", x, y)
        r = b.binary("remainder", x, y)
        inexact = b.compare("NE", r, zero)
        signs_differ = b.compare("NE", b.compare("LT", x, zero), b.compare("LT", y, zero))
        return _int_by_zero(b, y, b.select(b.binary("and", inexact, signs_differ), b.binary("subtract", q, one), q))
    # NumPy's algorithm (npy_divmod): exact multiple first, then round.
    mod = b.binary("remainder", x, y)
    div = b.binary("divide", b.binary("subtract", x, mod), y)
    mod_nonzero = b.compare("NE", mod, zero)
    signs_differ = b.compare("NE", b.compare("LT", y, zero), b.compare("LT", mod, zero))
    div = b.select(b.binary("and", mod_nonzero, signs_differ), b.binary("subtract", div, one), div)
    fl = b.unary("floor", div)
    half = b.full(0.5, x.shape, x.dtype)
    fl = b.select(b.compare("GT", b.binary("subtract", div, fl), half), b.binary("add", fl, one), fl)
    return b.select(b.compare("EQ", y, zero), b.binary("divide", x, y), fl)


def _power(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
    return b.binary("power", xs[0], xs[1])


def _logical(name: str) -> Emit:
    def emit(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
        bs = [b.convert(x, np.dtype(bool)) for x in xs]
        if name == "not":
            return b.unary("not", bs[0])
        return b.binary(name, bs[0], bs[1])

    return emit


def _log_base(base: float) -> Emit:
    def emit(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
        return b.binary("divide", b.unary("log", xs[0]), b.full(np.log(base), xs[0].shape, xs[0].dtype))

    return emit


def _exp2(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
    return b.binary("power", b.full(2, xs[0].shape, xs[0].dtype), xs[0])


def _isnan(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
    if not is_float(xs[0].dtype):
        return b.full(False, xs[0].shape, np.dtype(bool))
    return b.compare("NE", xs[0], xs[0])


def _isinf(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
    if not is_float(xs[0].dtype):
        return b.full(False, xs[0].shape, np.dtype(bool))
    a = b.unary("abs", xs[0])
    return b.compare("EQ", a, b.full(np.inf, a.shape, a.dtype))


def _isfinite(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
    if not is_float(xs[0].dtype):
        return b.full(True, xs[0].shape, np.dtype(bool))
    return b.unary("is_finite", xs[0], out)


def _abs(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
    if xs[0].dtype.kind in "bu":
        return xs[0]
    return b.unary("abs", xs[0], out.update(weak_type=False))  # (complex: a real result)


def _sign(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
    if xs[0].dtype.kind == "u":
        return b.convert(b.compare("NE", xs[0], b.full(0, xs[0].shape, xs[0].dtype)), xs[0].dtype)
    return b.unary("sign", xs[0])


def _c(b: FuncBuilder, v: Any, like: HloValue) -> HloValue:
    """The constant ``v`` shaped and typed like ``like``."""
    return b.full(v, like.shape, like.dtype)


def _logaddexp(base2: bool) -> Emit:
    """``max + log1p(exp(-|x - y|))`` (base 2: ``exp2``, scaled by 1/ln 2), numerically stable; where
    ``x - y`` is nan (a nan operand, or infinities of one sign) the result is ``x + y``, as in JAX."""

    def emit(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
        x, y = xs
        d = b.binary("subtract", x, y)
        e = b.unary("negate", b.unary("abs", d))
        e = _exp2(b, [e], out) if base2 else b.unary("exponential", e)
        t = b.unary("log_plus_one", e)
        if base2:
            t = b.binary("multiply", t, _c(b, 1 / np.log(2.0), t))
        r = b.binary("add", b.binary("maximum", x, y), t)
        return b.select(b.compare("NE", d, d), b.binary("add", x, y), r)

    return emit


def _hypot(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
    """``hi * sqrt(1 + (lo / hi)**2)`` with ``hi, lo`` the larger and smaller magnitude (no overflow);
    0 where both are 0, inf where either is infinite (even if the other is nan), as NumPy."""
    a, c = (b.unary("abs", x) for x in xs)
    hi, lo = b.binary("maximum", a, c), b.binary("minimum", a, c)
    zero, one, inf = _c(b, 0, hi), _c(b, 1, hi), _c(b, np.inf, hi)
    hi_zero = b.compare("EQ", hi, zero)
    q = b.binary("divide", lo, b.select(hi_zero, one, hi))
    r = b.binary("multiply", hi, b.unary("sqrt", b.binary("add", one, b.binary("multiply", q, q))))
    r = b.select(hi_zero, zero, r)
    return b.select(b.binary("or", b.compare("EQ", a, inf), b.compare("EQ", c, inf)), inf, r)


def _heaviside(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
    x, y = xs
    zero = _c(b, 0, x)
    r = b.select(b.compare("NE", x, x), x, y)
    r = b.select(b.compare("GT", x, zero), _c(b, 1, x), r)
    return b.select(b.compare("LT", x, zero), zero, r)


def _scale(factor: float) -> Emit:
    return lambda b, xs, out: b.binary("multiply", xs[0], _c(b, factor, xs[0]))


def _fminmax(op: str) -> Emit:
    """``fmax``/``fmin``: a nan operand is ignored (nan only when both are)."""

    def emit(b: FuncBuilder, xs: list[HloValue], out: ShapedArray) -> HloValue:
        x, y = xs
        r = b.binary(op, x, y)
        if not is_float(x.dtype):
            return r
        r = b.select(b.compare("NE", x, x), y, r)
        return b.select(b.compare("NE", y, y), x, r)

    return emit


UFUNCS: dict[str, tuple[np.ufunc, Emit]] = {
    # arithmetic
    "add": (np.add, by_kind(op("add"), op("add"), op("or"))),
    "subtract": (np.subtract, op("subtract")),
    "multiply": (np.multiply, by_kind(op("multiply"), op("multiply"), op("and"))),
    "true_divide": (np.true_divide, op("divide")),
    "floor_divide": (np.floor_divide, _floor_divide),
    "remainder": (np.remainder, _remainder),
    "fmod": (np.fmod, _fmod),
    "power": (np.power, _power),
    "maximum": (np.maximum, by_kind(op("maximum"), op("maximum"), op("or"))),
    "minimum": (np.minimum, by_kind(op("minimum"), op("minimum"), op("and"))),
    "arctan2": (np.arctan2, op("atan2")),
    "float_power": (np.float_power, _power),
    "fmax": (np.fmax, by_kind(_fminmax("maximum"), op("maximum"), op("or"))),
    "fmin": (np.fmin, by_kind(_fminmax("minimum"), op("minimum"), op("and"))),
    "hypot": (np.hypot, _hypot),
    "logaddexp": (np.logaddexp, _logaddexp(base2=False)),
    "logaddexp2": (np.logaddexp2, _logaddexp(base2=True)),
    "heaviside": (np.heaviside, _heaviside),
    "negative": (np.negative, op("negate")),
    "positive": (np.positive, identity),
    "absolute": (np.absolute, _abs),
    "sign": (np.sign, _sign),
    "square": (np.square, by_kind(_square, _square, op("and"))),
    "reciprocal": (np.reciprocal, _reciprocal),
    # transcendental
    "exp": (np.exp, op("exponential")),
    "exp2": (np.exp2, _exp2),
    "expm1": (np.expm1, op("exponential_minus_one")),
    "log": (np.log, op("log")),
    "log2": (np.log2, _log_base(2.0)),
    "log10": (np.log10, _log_base(10.0)),
    "log1p": (np.log1p, op("log_plus_one")),
    "sqrt": (np.sqrt, op("sqrt")),
    "cbrt": (np.cbrt, op("cbrt")),
    "sin": (np.sin, op("sine")),
    "cos": (np.cos, op("cosine")),
    "tan": (np.tan, op("tan")),
    "tanh": (np.tanh, op("tanh")),
    "arcsin": (np.arcsin, op("chlo.asin")),
    "arccos": (np.arccos, op("chlo.acos")),
    "arctan": (np.arctan, op("chlo.atan")),
    "sinh": (np.sinh, op("chlo.sinh")),
    "cosh": (np.cosh, op("chlo.cosh")),
    "arcsinh": (np.arcsinh, op("chlo.asinh")),
    "arccosh": (np.arccosh, op("chlo.acosh")),
    "arctanh": (np.arctanh, op("chlo.atanh")),
    "deg2rad": (np.deg2rad, _scale(np.pi / 180)),
    "rad2deg": (np.rad2deg, _scale(180 / np.pi)),
    # rounding
    "floor": (np.floor, by_kind(op("floor"), identity)),
    "ceil": (np.ceil, by_kind(op("ceil"), identity)),
    "rint": (np.rint, by_kind(op("round_nearest_even"), identity)),
    "trunc": (np.trunc, by_kind(lambda b, xs, out: b.select(
        b.compare("LT", xs[0], b.full(0, xs[0].shape, xs[0].dtype)),
        b.unary("ceil", xs[0]), b.unary("floor", xs[0])), identity)),
    # predicates and logic
    "isfinite": (np.isfinite, _isfinite),
    "isnan": (np.isnan, _isnan),
    "isinf": (np.isinf, _isinf),
    "equal": (np.equal, compare("EQ")),
    "not_equal": (np.not_equal, compare("NE")),
    "less": (np.less, compare("LT")),
    "less_equal": (np.less_equal, compare("LE")),
    "greater": (np.greater, compare("GT")),
    "greater_equal": (np.greater_equal, compare("GE")),
    "logical_and": (np.logical_and, _logical("and")),
    "logical_or": (np.logical_or, _logical("or")),
    "logical_xor": (np.logical_xor, _logical("xor")),
    "logical_not": (np.logical_not, _logical("not")),
    "bitwise_and": (np.bitwise_and, op("and")),
    "bitwise_or": (np.bitwise_or, op("or")),
    "bitwise_xor": (np.bitwise_xor, op("xor")),
    "invert": (np.invert, op("not")),
    # shifts (NumPy and XLA agree past the bit width: 0, or the sign for a signed right shift)
    "left_shift": (np.left_shift, op("shift_left")),
    "right_shift": (np.right_shift, lambda b, xs, out: b.binary(
        "shift_right_logical" if xs[0].dtype.kind == "u" else "shift_right_arithmetic", xs[0], xs[1])),
}

for _name, (_uf, _emit) in UFUNCS.items():
    defprim(
        _name, _uf, _unary_stub if _uf.nin == 1 else _binary_stub,
        abstract_eval=_ufunc_abstract(_uf), lower=_ufunc_lower(_uf, _emit),
        arrays=("x",) if _uf.nin == 1 else ("x1", "x2"),
    )
alias(np.abs, "absolute")
alias(np.divide, "true_divide")
alias(np.mod, "remainder")
alias(np.bitwise_not, "invert")
alias(np.radians, "deg2rad")
alias(np.degrees, "rad2deg")

# Operators in source -> primitives (libcst operator node class names).
OPERATOR_PRIMS = {
    "Add": "add", "Subtract": "subtract", "Multiply": "multiply", "Divide": "true_divide",
    "FloorDivide": "floor_divide", "Modulo": "remainder", "Power": "power",
    "MatrixMultiply": "matmul", "BitAnd": "bitwise_and", "BitOr": "bitwise_or",
    "BitXor": "bitwise_xor", "LeftShift": "left_shift", "RightShift": "right_shift", "Minus": "negative",
    "Plus": "positive", "BitInvert": "invert",
    "LessThan": "less", "LessThanEqual": "less_equal", "GreaterThan": "greater",
    "GreaterThanEqual": "greater_equal", "Equal": "equal", "NotEqual": "not_equal",
}


# -- round(x, decimals) ---------------------------------------------------------
def _round_stub(a, /, decimals=0, out=None):  # type: ignore[no-untyped-def]
    ...


def _round_abstract(a: ShapedArray, decimals: int = 0, out: Any = None) -> ShapedArray:
    if not isinstance(decimals, int) or isinstance(decimals, bool):
        raise DTypeError("np.round: decimals must be a static int")
    if out is not None:
        raise DTypeError("np.round: out= is not supported", hint="use the returned array")
    if a.dtype == np.bool_:  # NumPy rounds booleans as float16 (and refuses decimals != 0)
        if decimals != 0:
            raise DTypeError(f"np.round: cannot round a boolean array to decimals={decimals}")
        return ShapedArray(a.shape, np.dtype(np.float16))
    return ShapedArray(a.shape, a.dtype)


def _round_lower(ctx: LowerCtx, a: HloValue, decimals: int = 0, out: Any = None) -> HloValue:
    b = ctx.b
    if a.dtype == np.bool_:
        return b.convert(a, ctx.avals_out[0].dtype)
    if not is_float(a.dtype):
        if decimals >= 0:
            return a
        # NumPy: in float64, a / 10**-decimals, rounded half to even, times 10**-decimals, cast back.
        f = b.convert(a, np.dtype(np.float64))
        scale = b.full(10.0 ** (-decimals), a.shape, np.dtype(np.float64))
        r = b.binary("multiply", b.unary("round_nearest_even", b.binary("divide", f, scale)), scale)
        return b.convert(r, a.dtype)
    if decimals == 0:
        return b.unary("round_nearest_even", a)
    scale = b.full(10.0 ** abs(decimals), a.shape, a.dtype)
    if decimals > 0:
        return b.binary("divide", b.unary("round_nearest_even", b.binary("multiply", a, scale)), scale)
    return b.binary("multiply", b.unary("round_nearest_even", b.binary("divide", a, scale)), scale)


defprim("round", np.round, _round_stub, abstract_eval=_round_abstract, lower=_round_lower,
        arrays=("a",), path="np.round", nondiff=True)
alias(np.around, "round")


# -- erf(x): srcjax.lax.erf (NumPy has none) ----------------------------------------
def _erf_abstract(x: ShapedArray) -> ShapedArray:
    if x.dtype.kind not in "fiub":
        raise DTypeError(f"srcjax.lax.erf does not support {x.dtype}", hint="give a real array")
    return ShapedArray(x.shape, x.dtype if is_float(x.dtype) and not x.weak_type else np.dtype(np.float64))


def _erf_lower(ctx: LowerCtx, x: HloValue) -> HloValue:
    out = ctx.avals_out[0]
    return ctx.b.unary("chlo.erf", _lift(ctx.b, x, out.dtype, out.shape), out)


defprim("erf", lax.erf, _unary_stub, abstract_eval=_erf_abstract, lower=_erf_lower, arrays=("x",),
        path="srcjax.lax.erf")


# -- sinc(x) --------------------------------------------------------------------
def _sinc_dtype(x: ShapedArray) -> np.dtype:
    """``np.sinc`` computes in ``pi * x``'s dtype: a float array keeps its dtype, anything else is float64."""
    return x.dtype if is_float(x.dtype) and not x.weak_type else np.dtype(np.float64)


def _sinc_lower(ctx: LowerCtx, x: HloValue) -> HloValue:
    """NumPy's definition: ``y = pi * x``, replaced by the dtype's eps where 0; ``sin(y) / y``."""
    b = ctx.b
    out = ctx.avals_out[0]
    y = _lift(b, x, out.dtype, out.shape)
    y = b.binary("multiply", y, _c(b, np.pi, y))
    eps = np.finfo(out.dtype).eps if out.dtype.kind == "f" else 1e-20
    y = b.select(b.compare("NE", y, _c(b, 0, y)), y, _c(b, eps, y))
    return b.binary("divide", b.unary("sine", y), y)


defprim("sinc", np.sinc, _unary_stub, abstract_eval=lambda x: ShapedArray(x.shape, _sinc_dtype(x)),
        lower=_sinc_lower, arrays=("x",))


# -- where(condition, x, y) -----------------------------------------------------
def _where_stub(condition, x, y, /):  # type: ignore[no-untyped-def]
    ...


def result_dtype(*avals: ShapedArray) -> np.dtype:
    keys = [weak_key(a) for a in avals]
    dummies = [k(0) if isinstance(k, type) else np.zeros((), k) for k in keys]
    try:
        return np.result_type(*dummies)
    except (TypeError, np.exceptions.DTypePromotionError) as e:
        raise DTypeError("no common dtype for " + ", ".join(a.dtype.name for a in avals)) from e


def _where_abstract(condition: ShapedArray, x: ShapedArray, y: ShapedArray) -> ShapedArray:
    shape = broadcast_shapes(condition.shape, x.shape, y.shape)
    # two weak arrays of one axis or more are Python numbers per example (``batch_select`` joining two
    # ``batch_broadcast`` numbers under vmap): the choice stays weak, as it does per example
    weak = x.weak_type and y.weak_type and x.ndim > 0 and y.ndim > 0
    return ShapedArray(shape, result_dtype(x, y), weak_type=weak)


def _where_lower(ctx: LowerCtx, condition: HloValue, x: HloValue, y: HloValue) -> HloValue:
    out = ctx.avals_out[0]
    b = ctx.b
    c = b.broadcast_to(b.convert(condition, np.dtype(bool)), out.shape)
    return b.select(c, _lift(b, x, out.dtype, out.shape), _lift(b, y, out.dtype, out.shape))


defprim("where", np.where, _where_stub, abstract_eval=_where_abstract, lower=_where_lower,
        arrays=("condition", "x", "y"), nondiff_args=("condition",), simplify="select")


# -- clip(a, a_min, a_max) ------------------------------------------------------
def _clip_stub(a, /, a_min=None, a_max=None):  # type: ignore[no-untyped-def]
    ...


def _clip_abstract(a: ShapedArray, a_min: ShapedArray | None = None,
                   a_max: ShapedArray | None = None) -> ShapedArray:
    ops = [v for v in (a, a_min, a_max) if v is not None]
    shape = broadcast_shapes(*(v.shape for v in ops))
    return ShapedArray(shape, result_dtype(*ops))


def _clip_lower(ctx: LowerCtx, a: HloValue, a_min: HloValue | None = None,
                a_max: HloValue | None = None) -> HloValue:
    out = ctx.avals_out[0]
    b = ctx.b
    r = _lift(b, a, out.dtype, out.shape)
    if a_min is not None:
        r = b.binary("maximum", r, _lift(b, a_min, out.dtype, out.shape))
    if a_max is not None:
        r = b.binary("minimum", r, _lift(b, a_max, out.dtype, out.shape))
    return r


defprim("clip", np.clip, _clip_stub, abstract_eval=_clip_abstract, lower=_clip_lower,
        arrays=("a", "a_min", "a_max"), positional=3)


# -- elementwise arithmetic ------------------------------------------------------------
deflinear("add", {"x1": "broadcast_like(x1_dot, out)", "x2": "broadcast_like(x2_dot, out)"},
          {"x1": "unbroadcast(out_bar, x1)", "x2": "unbroadcast(out_bar, x2)"})
deflinear("subtract", {"x1": "broadcast_like(x1_dot, out)", "x2": "broadcast_like(-x2_dot, out)"},
          {"x1": "unbroadcast(out_bar, x1)", "x2": "unbroadcast(-out_bar, x2)"})
defjvp("multiply", x1="x1_dot * x2", x2="x1 * x2_dot")
defvjp("multiply", x1="unbroadcast(out_bar * x2, x1)", x2="unbroadcast(x1 * out_bar, x2)")
defjvp("true_divide", x1="x1_dot / x2", x2="-out * x2_dot / x2")
defvjp("true_divide", x1="unbroadcast(out_bar / x2, x1)", x2="unbroadcast(-out_bar * out / x2, x2)")


def _one_over(args: Any) -> dict[str, str]:
    """``1 / x``'s cotangent from its result alone, as ``np.reciprocal``'s (``-g / x**2`` is
    ``-g * out * out``): ``x`` need not stay alive for the backward pass (``1.0 / (1.0 + e)``)."""
    x1 = args.get("x1")
    if not isinstance(x1, str) or x1.strip() not in ("1", "1.0", "1.", "(1)", "(1.0)"):
        return {}
    return {"x2": "unbroadcast(-out_bar * out * out, x2)"}


set_fields("true_divide", vjp_when=_one_over)
# JAX convention for d(x1 ** x2)/dx2 = log(x1) * out: log(x1) is taken as 0 where x1 == 0 (so the
# derivative is 0 there, not 0 * -inf = nan), and is nan for x1 < 0 (log of a negative number).
# d/dx1 = x2 * x1 ** (x2 - 1) is 0 where x2 == 0 (x1 ** 0 is the constant 1; JAX gives 0 for an
# integer exponent but nan at x1 == 0 for 0.0: the base is replaced by 1 there, so no 0 * inf) and inf
# at x1 == 0 for 0 < x2 < 1, as in JAX.
defjvp("power", x1="x1_dot * x2 * np.where(x2 == 0, 1.0, x1) ** (x2 - 1)",
       x2="x2_dot * np.log(np.where(x1 == 0, 1.0, x1)) * out")
defvjp("power", x1="unbroadcast(out_bar * x2 * np.where(x2 == 0, 1.0, x1) ** (x2 - 1), x1)",
       x2="unbroadcast(out_bar * np.log(np.where(x1 == 0, 1.0, x1)) * out, x2)")
defjvp("remainder", x1="broadcast_like(x1_dot, out)", x2="-x2_dot * np.floor(x1 / x2)")
defvjp("remainder", x1="unbroadcast(out_bar, x1)", x2="unbroadcast(-out_bar * np.floor(x1 / x2), x2)")
defjvp("fmod", x1="broadcast_like(x1_dot, out)", x2="-x2_dot * np.trunc(x1 / x2)")
defvjp("fmod", x1="unbroadcast(out_bar, x1)", x2="unbroadcast(-out_bar * np.trunc(x1 / x2), x2)")
# JAX convention: at a tie (x1 == x2) each operand gets half of the gradient (0.5/0.5).
# max_share selects on the tangent itself, so float32 stays float32.
defjvp("maximum", x1="broadcast_like(max_share(x1_dot, x1, x2), out)",
       x2="broadcast_like(max_share(x2_dot, x2, x1), out)")
defvjp("maximum", x1="unbroadcast(max_share(out_bar, x1, x2), x1)", x2="unbroadcast(max_share(out_bar, x2, x1), x2)")
defjvp("minimum", x1="broadcast_like(max_share(x1_dot, x2, x1), out)",
       x2="broadcast_like(max_share(x2_dot, x1, x2), out)")
defvjp("minimum", x1="unbroadcast(max_share(out_bar, x2, x1), x1)", x2="unbroadcast(max_share(out_bar, x1, x2), x2)")
defjvp("arctan2", x1="x1_dot * x2 / (x1 ** 2 + x2 ** 2)", x2="-x2_dot * x1 / (x1 ** 2 + x2 ** 2)")
defvjp("arctan2", x1="unbroadcast(out_bar * x2 / (x1 ** 2 + x2 ** 2), x1)",
       x2="unbroadcast(-out_bar * x1 / (x1 ** 2 + x2 ** 2), x2)")
defjvp("float_power", **PRIMITIVES["power"].jvp)
defvjp("float_power", **PRIMITIVES["power"].vjp)
# log(exp(x1) + exp(x2)): each operand's softmax weight exp(x - out), with +inf read as 0 (JAX's rule).
defjvp("logaddexp", x1="x1_dot * logaddexp_weight(x1, out, 'e')", x2="x2_dot * logaddexp_weight(x2, out, 'e')")
defvjp("logaddexp", x1="unbroadcast(out_bar * logaddexp_weight(x1, out, 'e'), x1)",
       x2="unbroadcast(out_bar * logaddexp_weight(x2, out, 'e'), x2)")
defjvp("logaddexp2", x1="x1_dot * logaddexp_weight(x1, out, 2)", x2="x2_dot * logaddexp_weight(x2, out, 2)")
defvjp("logaddexp2", x1="unbroadcast(out_bar * logaddexp_weight(x1, out, 2), x1)",
       x2="unbroadcast(out_bar * logaddexp_weight(x2, out, 2), x2)")
# d hypot / d x1 = x1 / out; 0.5 at the origin, as JAX (jnp.hypot is max(|x1|, |x2|) there: abs' = 1 at 0, the
# tie shared), a subgradient (linalg.norm's 2-norm gradient at 0 is 0: JAX's is NaN, docs/limitations.md).
defjvp("hypot", x1="x1_dot * np.where(out == 0, 0.5, x1 / np.where(out == 0, 1.0, out))",
       x2="x2_dot * np.where(out == 0, 0.5, x2 / np.where(out == 0, 1.0, out))")
defvjp("hypot", x1="unbroadcast(out_bar * np.where(out == 0, 0.5, x1 / np.where(out == 0, 1.0, out)), x1)",
       x2="unbroadcast(out_bar * np.where(out == 0, 0.5, x2 / np.where(out == 0, 1.0, out)), x2)")
# JAX: fmax(x1, x2) = where((x1 > x2) | isnan(x2), x1, x2), so a tie goes to x2 (fmin: x1 < x2).
defjvp("fmax", x1="broadcast_like(np.where((x1 > x2) | np.isnan(x2), x1_dot, 0.0), out)",
       x2="broadcast_like(np.where((x1 > x2) | np.isnan(x2), 0.0, x2_dot), out)")
defvjp("fmax", x1="unbroadcast(np.where((x1 > x2) | np.isnan(x2), out_bar, 0.0), x1)",
       x2="unbroadcast(np.where((x1 > x2) | np.isnan(x2), 0.0, out_bar), x2)")
defjvp("fmin", x1="broadcast_like(np.where((x1 < x2) | np.isnan(x2), x1_dot, 0.0), out)",
       x2="broadcast_like(np.where((x1 < x2) | np.isnan(x2), 0.0, x2_dot), out)")
defvjp("fmin", x1="unbroadcast(np.where((x1 < x2) | np.isnan(x2), out_bar, 0.0), x1)",
       x2="unbroadcast(np.where((x1 < x2) | np.isnan(x2), 0.0, out_bar), x2)")
# a step in x1 (zero derivative, as JAX); x2 passes through where x1 == 0
defjvp("heaviside", x2="broadcast_like(np.where(x1 == 0, x2_dot, 0.0), out)")
defvjp("heaviside", x2="unbroadcast(np.where(x1 == 0, out_bar, 0.0), x2)")

deflinear("negative", {"x": "-x_dot"}, {"x": "-out_bar"})
deflinear("positive", {"x": "x_dot"}, {"x": "out_bar"})
# JAX convention: d|x|/dx = 1 at x == 0 (JAX selects on x >= 0; not sign(x), which is 0 there).
defjvp("absolute", x="abs_share(x_dot, x)")
defvjp("absolute", x="abs_share(out_bar, x)")
defjvp("square", x="2 * x * x_dot")
defvjp("square", x="2 * x * out_bar")
defjvp("reciprocal", x="-x_dot * out * out")
defvjp("reciprocal", x="-out_bar * out * out")

# -- transcendental ------------------------------------------------------------------
_UNARY = {
    # (log 2 and log 10 as Python floats: np.log(2.0) is a float64 scalar, which would upcast float32)
    "exp": "out", "exp2": "out * 0.6931471805599453", "expm1": "out + 1", "log": "1 / x",
    "log2": "1 / (x * 0.6931471805599453)", "log10": "1 / (x * 2.302585092994046)", "log1p": "1 / (1 + x)",
    "sqrt": "0.5 / out", "cbrt": "1 / (3 * out * out)",
    "sin": "np.cos(x)", "cos": "-np.sin(x)", "tan": "1 + out * out", "tanh": "1 - out * out",
    "arcsin": "1 / np.sqrt(1 - x * x)", "arccos": "-1 / np.sqrt(1 - x * x)", "arctan": "1 / (1 + x * x)",
    "sinh": "np.cosh(x)", "cosh": "np.sinh(x)", "arcsinh": "1 / np.sqrt(x * x + 1)",
    "arccosh": "1 / np.sqrt(x * x - 1)", "arctanh": "1 / (1 - x * x)",
    "deg2rad": "np.pi / 180", "rad2deg": "180 / np.pi",
    # JAX: d sinc / dx = 0 at x == 0 (sinc is even); elsewhere (cos(pi x) - sinc(x)) / x
    "sinc": "sinc_slope(x, out)",
    "erf": "1.1283791670955126 * np.exp(-(x * x))",  # 2 / sqrt(pi) exp(-x^2)
}
for _name, _deriv in _UNARY.items():
    if _deriv.startswith("1 / "):  # a division, not times a reciprocal: one rounding (JAX's log: g / x)
        defjvp(_name, x=f"x_dot / {_deriv[4:]}")
        defvjp(_name, x=f"out_bar / {_deriv[4:]}")
        continue
    defjvp(_name, x=f"x_dot * ({_deriv})")
    defvjp(_name, x=f"out_bar * ({_deriv})")

# -- selection -------------------------------------------------------------------------
defjvp("where", x="broadcast_like(np.where(condition, x_dot, 0.0), out)",
       y="broadcast_like(np.where(condition, 0.0, y_dot), out)")
defvjp("where", x="unbroadcast(np.where(condition, out_bar, 0.0), x)",
       y="unbroadcast(np.where(condition, 0.0, out_bar), y)")
# JAX convention: clip(a, lo, hi) == minimum(maximum(a, lo), hi), so a value on a bound shares the
# gradient 0.5/0.5 with that bound (JAX gives 0.5 at a == lo, not 1). The bounds are differentiable.
defjvp("clip", a="broadcast_like(clip_share(a_dot, a, a_min, a_max, 0), out)",
       a_min="broadcast_like(clip_share(a_min_dot, a, a_min, a_max, 1), out)",
       a_max="broadcast_like(clip_share(a_max_dot, a, a_min, a_max, 2), out)")
defvjp("clip", a="unbroadcast(clip_share(out_bar, a, a_min, a_max, 0), a)",
       a_min="unbroadcast(clip_share(out_bar, a, a_min, a_max, 1), a_min)",
       a_max="unbroadcast(clip_share(out_bar, a, a_min, a_max, 2), a_max)")


# zero derivatives, as in JAX: comparisons, logic, integer results, rounding
nondiff("equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
        "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
        "invert", "left_shift", "right_shift", "isfinite", "isnan", "isinf", "sign", "floor", "ceil", "rint", "trunc",
        "floor_divide")
set_fields("heaviside", nondiff_args=frozenset({"x1"}))  # a step in x1


def _false_and(values: list[Any]) -> Any:
    """``False and x``: False of the broadcast shape, ``x`` pure (a loop's test known False on entry:
    ``lower/loops.never_entered``); None where no operand is a static False."""
    from ..lower.values import is_dynamic
    if len(values) == 2 and any(not is_dynamic(v) and np.ndim(v) == 0 and not v for v in values):
        return np.zeros(np.broadcast_shapes(*(v.aval.shape if is_dynamic(v) else np.shape(v) for v in values)), bool)
    return None


set_fields("logical_and", fold=_false_and)

# what the simplifier of generated source may assume (registry.SIMPLIFY_KINDS)
for _kind, _names in {
    "float": "sin cos tan tanh sinh cosh arcsin arccos arctan arcsinh arccosh arctanh exp exp2 expm1 log log2 "
             "log10 log1p sqrt cbrt",
    "same": "negative positive square",
    "shape": "floor ceil rint trunc isnan isfinite isinf logical_not",
    "shape_family": "absolute sign",
    "arith": "add subtract multiply true_divide power",
    "promote": "maximum minimum fmax fmin",
    "binary": "arctan2 hypot",
}.items():
    for _name in _names.split():
        set_fields(_name, simplify=_kind)

__all__ = ["OPERATOR_PRIMS", "PRIMITIVES", "resolve"]



# -- batching (vmap): each batched operand gets the others' per-example rank, then NumPy broadcasts -----
for _name in [*UFUNCS, "round", "sinc", "erf", "where", "clip"]:
    set_fields(_name, batch=batch_rules.elementwise)
