"""Complex numbers: ``np.real``, ``np.imag``, ``np.conj``/``np.conjugate``, ``np.angle``, and the
complex cases of the elementwise records (``np.abs`` of a complex array is real; ordering is refused).

Lowering: ``stablehlo.real``/``imag``/``complex``; a conjugate is ``complex(real, -imag)``. A real
operand passes through ``np.real``/``np.conj`` unchanged and has zeros for ``np.imag`` (NumPy).
Derivatives follow JAX (``srcjax/complex_adjoint.py`` explains the convention and holds the helpers).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import DTypeError, ShapedArray
from ..lower.hlo import HloValue, real_dtype
from . import batch_rules, decomp, linalg, reductions, sorting  # noqa: F401  (records refusing complex, below)
from .elementwise import resolve
from .registry import PRIMITIVES, LowerCtx, defprim, set_fields


def _val_stub(val, /):  # type: ignore[no-untyped-def]
    ...


def _unary_stub(x, /):  # type: ignore[no-untyped-def]
    ...


def _angle_stub(z, /, deg=False):  # type: ignore[no-untyped-def]
    ...


def _part_abstract(val: ShapedArray) -> ShapedArray:
    return ShapedArray(val.shape, real_dtype(val.dtype), weak_type=val.weak_type)


def _real_lower(ctx: LowerCtx, val: HloValue) -> HloValue:
    return ctx.b.part("real", val) if val.dtype.kind == "c" else val


def _imag_lower(ctx: LowerCtx, val: HloValue) -> HloValue:
    if val.dtype.kind == "c":
        return ctx.b.part("imag", val)
    return ctx.b.full(0, val.shape, val.dtype)


def _conj_lower(ctx: LowerCtx, x: HloValue) -> HloValue:
    out = ctx.avals_out[0]
    if x.dtype.kind != "c":
        return ctx.b.convert(x, out.dtype)
    b = ctx.b
    return b.complex(b.part("real", x), b.unary("negate", b.part("imag", x)))


def _angle_abstract(z: ShapedArray, deg: Any = False) -> ShapedArray:
    if not isinstance(deg, bool):
        raise DTypeError("np.angle: deg must be a static bool")
    if z.dtype.kind == "c":
        return ShapedArray(z.shape, real_dtype(z.dtype))
    _, out = resolve(np.arctan2, [ShapedArray((), np.dtype(np.int64), weak_type=True), z])
    return ShapedArray(z.shape, out)


def _angle_lower(ctx: LowerCtx, z: HloValue, deg: Any = False) -> HloValue:
    b = ctx.b
    out = ctx.avals_out[0]
    if z.dtype.kind == "c":
        re, im = b.part("real", z), b.part("imag", z)
    else:
        re = b.convert(z, out.dtype)
        im = b.full(0, re.shape, re.dtype)
    r = b.binary("atan2", im, re)
    if deg:
        r = b.binary("multiply", r, b.full(180 / np.pi, r.shape, r.dtype))
    return r


defprim("real", np.real, _val_stub, abstract_eval=_part_abstract, lower=_real_lower, arrays=("val",),
        jvp={"val": "np.real(val_dot)"}, vjp={"val": "real_bar(out_bar, val)"})
defprim("imag", np.imag, _val_stub, abstract_eval=_part_abstract, lower=_imag_lower, arrays=("val",),
        jvp={"val": "np.imag(val_dot)"}, vjp={"val": "imag_bar(out_bar, val)"})
defprim("conjugate", np.conjugate, _unary_stub,
        abstract_eval=lambda x: ShapedArray(x.shape, resolve(np.conjugate, [x])[1]),
        lower=_conj_lower, arrays=("x",), jvp={"x": "np.conjugate(x_dot)"}, vjp={"x": "np.conjugate(out_bar)"},
        simplify="same")
defprim("angle", np.angle, _angle_stub, abstract_eval=_angle_abstract, lower=_angle_lower, arrays=("z",),
        jvp={"z": "angle_dot(z_dot, z) * (180 / np.pi if deg else 1.0)"},
        vjp={"z": "angle_bar(out_bar * (180 / np.pi if deg else 1.0), z)"})
for _name in ("real", "imag", "conjugate", "angle"):
    set_fields(_name, batch=batch_rules.unary)


# -- complex operands of other records ----------------------------------------------------------------
# NumPy 2 orders complex numbers lexicographically (comparisons, maximum, sort, argmax, median...); JAX
# refuses most of them, and so does srcjax, with a located DTypeError, rather than order them silently.
_ORDERED = ("less", "less_equal", "greater", "greater_equal", "maximum", "minimum", "fmax", "fmin", "clip", "max",
            "min", "argmax", "argmin", "sort", "argsort", "partition", "argpartition", "lexsort", "searchsorted",
            "median", "quantile", "percentile")
# Every other record takes complex operands where NumPy does: np.linalg (the c/z LAPACK kernels; JAX's
# rules, conjugate transposes where JAX has them), var/std (real: NumPy's mean of |a - mean|**2).


def _refuse_complex(name: str, rule: Any) -> Any:
    path = PRIMITIVES[name].path

    def checked(*avals: Any) -> Any:
        if any(isinstance(a, ShapedArray) and a.dtype.kind == "c" for a in avals):
            raise DTypeError(f"{path} does not order complex numbers in srcjax (as in JAX; NumPy orders "
                             "them lexicographically)", hint="compare np.real(...) or np.abs(...) instead")
        return rule(*avals)

    return checked


for _name in _ORDERED:
    PRIMITIVES[_name].abstract_eval = _refuse_complex(_name, PRIMITIVES[_name].abstract_eval)


def _round_parts(rule: Any) -> Any:
    """``np.round`` of a complex array rounds both parts (NumPy)."""

    def lower(ctx: LowerCtx, a: HloValue, *rest: Any) -> HloValue:
        if a.dtype.kind != "c":
            return rule(ctx, a, *rest)
        b = ctx.b
        parts = [b.part(p, a) for p in ("real", "imag")]
        sub = LowerCtx(b, [parts[0].aval])
        return b.complex(*(rule(sub, p, *rest) for p in parts))

    return lower


PRIMITIVES["round"].lower = _round_parts(PRIMITIVES["round"].lower)

__all__: list[str] = []
