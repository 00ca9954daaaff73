"""Special functions of ``srcjax.lax`` (JAX's names): ``lgamma``, ``digamma``, ``polygamma``, ``erfc``,
``erf_inv``, one record each.

Their NumPy references are in ``srcjax/lax_special.py``; compiled, each is one CHLO op (``chlo.lgamma``,
``chlo.digamma``, ``chlo.polygamma``, ``chlo.erfc``, ``chlo.erf_inv``), as jax lowers them. A floating
operand keeps its dtype; an integer, boolean or Python number gives float64 (as ``srcjax.lax.erf``).
Derivatives are JAX's: ``lgamma' = digamma``, ``digamma' = polygamma(1, .)``, ``polygamma(m, .)' =
polygamma(m + 1, .)`` (none in ``m``), ``erfc' = -2/sqrt(pi) exp(-x^2)``, ``erf_inv' = sqrt(pi)/2
exp(erf_inv(x)^2)``. Batched elementwise.

Known: XLA's ``chlo.polygamma`` (jax's too) loses every digit below about -5 (``polygamma(2, -8.9)``:
1.66e5 compiled, -1998.67 by the NumPy reference and the series), so compiled ``digamma``'s derivative is
wrong there; srcjax inherits it from XLA.
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
    out = ctx.avals_out[0]
    b = ctx.b
    mm, xx = _lift(b, m, out.dtype, out.shape), _lift(b, x, out.dtype, out.shape)
    t = aval_type(out)
    return b.emit(f"chlo.polygamma {mm.name}, {xx.name} : {t}, {t} -> {t}", out)


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
