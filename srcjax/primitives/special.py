"""Special functions of ``srcjax.lax`` (JAX's names): ``lgamma``, ``digamma``, ``polygamma``, ``erfc``,
``erf_inv``, one record each.

Their NumPy references are in ``srcjax/lax_special.py``; compiled, each is one CHLO op (``chlo.lgamma``,
``chlo.digamma``, ``chlo.polygamma``, ``chlo.erfc``, ``chlo.erf_inv``), as jax lowers them. A floating
operand keeps its dtype; an integer, boolean or Python number gives float64 (as ``srcjax.lax.erf``).
Derivatives are JAX's: ``lgamma' = digamma``, ``digamma' = polygamma(1, .)``, ``polygamma(m, .)' =
polygamma(m + 1, .)`` (none in ``m``), ``erfc' = -2/sqrt(pi) exp(-x^2)``, ``erf_inv' = sqrt(pi)/2
exp(erf_inv(x)^2)``. Batched elementwise.

XLA's ``chlo.polygamma`` (which jax runs) loses every digit below about -5 (``polygamma(2, -8.9)``: 1.66e5
for -1998.67, and so ``digamma``'s derivative there); for an order written as a Python integer (the
derivatives' own) the lowering takes the reflection formula below -4 instead (:func:`_polygamma_lower`).
"""

from __future__ import annotations

import numpy as np

from .. import lax
from ..core import DTypeError, ShapedArray
from ..lower.hlo import HloValue, aval_type, is_float
from . import batch_rules
from .common import broadcast_shapes
from .elementwise import _lift  # (the ufuncs' operand cast and broadcast, shared by these unary ops)
from .registry import LowerCtx, defprim, set_fields


def _x_stub(x, /):  # type: ignore[no-untyped-def]
    ...


def _polygamma_stub(m, x, /):  # type: ignore[no-untyped-def]
    ...


def _out(name: str, x: ShapedArray) -> ShapedArray:
    if x.dtype.kind not in "fiub":
        raise DTypeError(f"srcjax.lax.{name} does not support {x.dtype}", hint="give a real array")
    return ShapedArray(x.shape, x.dtype if is_float(x.dtype) and not x.weak_type else np.dtype(np.float64))


def _abstract(name: str):  # type: ignore[no-untyped-def]
    return lambda x: _out(name, x)


def _lower(op: str):  # type: ignore[no-untyped-def]
    def rule(ctx: LowerCtx, x: HloValue) -> HloValue:
        out = ctx.avals_out[0]
        return ctx.b.unary(op, _lift(ctx.b, x, out.dtype, out.shape), out)

    return rule


def _polygamma_abstract(m: ShapedArray, x: ShapedArray) -> ShapedArray:
    if m.dtype.kind not in "fiub":
        raise DTypeError(f"srcjax.lax.polygamma does not support an order of dtype {m.dtype}",
                         hint="give the order as an integer or a real array of integer values")
    out = _out("polygamma", x)
    return out.update(shape=broadcast_shapes(m.shape, x.shape))


def _polygamma_lower(ctx: LowerCtx, m: HloValue, x: HloValue) -> HloValue:
    """``chlo.polygamma``; for an order known here (a Python integer), below -4 the reflection
    ``psi_m(x) = (-1)^m psi_m(1 - x) - pi^(m+1) P_m(cot(pi x))`` (``P_0(c) = c``, ``P_(k+1) = -(1 + c^2) P_k'``):
    XLA's own loses every digit below about -5 (``polygamma(2, -8.9)``: 1.66e5 for -1998.67)."""
    out = ctx.avals_out[0]
    b = ctx.b
    mm, xx = _lift(b, m, out.dtype, out.shape), _lift(b, x, out.dtype, out.shape)
    t = aval_type(out)
    direct = b.emit(f"chlo.polygamma {mm.name}, {xx.name} : {t}, {t} -> {t}", out)
    order = m.literal
    if order is None or isinstance(order, bool) or order != int(order) or not 0 < order <= 30:
        return direct

    wide = out.update(dtype=np.dtype(np.float64))  # (float32's cot(pi x) near a pole loses digits: in float64)
    tw = aval_type(wide)
    mw, xw = b.convert(mm, wide.dtype), b.convert(xx, wide.dtype)

    def c(v: float) -> HloValue:
        return b.full(v, out.shape, wide.dtype)

    mirrored = b.emit(f"chlo.polygamma {mw.name}, {b.binary('subtract', c(1.0), xw).name} : {tw}, {tw} -> {tw}", wide)
    angle = b.binary("multiply", c(np.pi), xw)
    cot = b.binary("divide", b.unary("cosine", angle), b.unary("sine", angle))
    poly = c(0.0)
    for k in reversed(_cot_derivative(int(order))):  # (Horner, highest power first)
        poly = b.binary("add", b.binary("multiply", poly, cot), c(float(k)))
    reflected = b.convert(b.binary("subtract", b.binary("multiply", c((-1.0) ** int(order)), mirrored),
                                   b.binary("multiply", c(np.pi ** (int(order) + 1)), poly)), out.dtype)
    # (from -4 down: above, XLA's is accurate)
    use = b.binary("and", b.compare("LT", xw, c(-4.0)), b.compare("NE", xw, b.unary("floor", xw)))
    return b.select(use, reflected, direct)


def _cot_derivative(m: int) -> list[int]:
    """The coefficients (lowest power first) of ``P_m`` with ``d^m/dx^m cot(pi x) = pi^m P_m(cot(pi x))``."""
    p = [0, 1]
    for _ in range(m):
        dp = [k * p[k] for k in range(1, len(p))] + [0, 0]  # P'
        p = [-(dp[k] + (dp[k - 2] if k >= 2 else 0)) for k in range(len(dp))]  # -(1 + c^2) P'
    return p


_ROOT_PI_2 = "1.1283791670955126"  # 2 / sqrt(pi)
_HALF_ROOT_PI = "0.886226925452758"  # sqrt(pi) / 2
for _name, _fn, _deriv in (
        ("lgamma", lax.lgamma, "srcjax.lax.digamma(x)"),
        ("digamma", lax.digamma, "srcjax.lax.polygamma(1, x)"),
        ("erfc", lax.erfc, f"-{_ROOT_PI_2} * np.exp(-(x * x))"),
        ("erf_inv", lax.erf_inv, f"{_HALF_ROOT_PI} * np.exp(out * out)")):
    defprim(_name, _fn, _x_stub, abstract_eval=_abstract(_name), lower=_lower(f"chlo.{_name}"), arrays=("x",),
            path=f"srcjax.lax.{_name}", jvp={"x": f"x_dot * ({_deriv})"}, vjp={"x": f"out_bar * ({_deriv})"})
    set_fields(_name, batch=batch_rules.elementwise)

defprim("polygamma", lax.polygamma, _polygamma_stub, abstract_eval=_polygamma_abstract, lower=_polygamma_lower,
        arrays=("m", "x"), path="srcjax.lax.polygamma", nondiff_args=("m",),
        jvp={"x": "broadcast_like(x_dot * srcjax.lax.polygamma(m + 1, x), out)"},
        vjp={"x": "unbroadcast(out_bar * srcjax.lax.polygamma(m + 1, x), x)"})
set_fields("polygamma", batch=batch_rules.elementwise)
