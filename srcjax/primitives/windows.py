"""``srcjax.lax.conv_general_dilated`` and ``srcjax.lax.reduce_window``: JAX's windowed operations.

The NumPy references and the argument plans are in ``srcjax/windows.py``; the derivative and batching
helpers in ``srcjax/conv_adjoint.py`` (its docstring explains the rules). A convolution lowers to one
``stablehlo.convolution`` (floats at HIGHEST precision, as srcjax's matmuls), the dimension numbers
written as the call gives them (no transposes; operands of two dtypes promoted first, as NumPy
does, where JAX refuses them); a window reduction to one ``stablehlo.reduce_window``
whose body is the monoid (``add``/``maximum``/``minimum``/``multiply``; ``or``/``and`` for booleans).

Derivatives: a convolution is linear in each operand (its JVP is a convolution of the tangent) and its
VJP the two transposes (``conv_lhs_bar``, ``conv_rhs_bar``). A window sum is linear; a window max/min
passes the tangent of each window's first maximal element, a window product the product rule.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import lax
from ..core import ShapedArray
from ..lower.hlo import HloValue, aval_type, elem_type
from ..windows import conv_plan, window_plan
from . import batch_rules
from .registry import LowerCtx, defprim, set_fields


def _conv_stub(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,  # type: ignore[no-untyped-def]
               dimension_numbers=None, feature_group_count=1, batch_group_count=1, precision=None,
               preferred_element_type=None):
    ...


def _plan(lhs: Any, rhs: Any, args: Any) -> Any:
    """The plan of a call (``args``: its arguments after ``lhs`` and ``rhs``; ``precision`` is not read)."""
    strides, padding, ld, rd, dn, groups, batch_groups, _, preferred = args
    return conv_plan(lhs.shape, lhs.dtype, rhs.shape, rhs.dtype, strides, padding, ld, rd, dn, groups, batch_groups,
                     preferred)


def _conv_abstract(lhs: ShapedArray, rhs: ShapedArray, *args: Any) -> ShapedArray:
    p = _plan(lhs, rhs, args)
    return ShapedArray(p.shape, p.dtype)


def _dims(spec: Any, first: str, second: str) -> str:
    labels = [""] * len(spec)
    labels[spec[0]], labels[spec[1]] = first, second
    for k, i in enumerate(spec[2:]):
        labels[i] = str(k)
    return "[" + ", ".join(labels) + "]"


def _conv_lower(ctx: LowerCtx, lhs: HloValue, rhs: HloValue, *args: Any) -> HloValue:
    b = ctx.b
    out = ctx.avals_out[0]
    p = _plan(lhs, rhs, args)
    if out.size == 0:
        return b.full(0, out.shape, out.dtype)
    lspec, rspec, ospec = p.dn
    common = np.result_type(lhs.dtype, rhs.dtype)  # (operands of two dtypes: promoted, as NumPy)
    lhs, rhs = b.convert(lhs, common), b.convert(rhs, common)
    prec = ", precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]" \
        if lhs.dtype.kind == "f" else ""
    window = (f"stride = {list(p.strides)}, pad = {[list(q) for q in p.pads]}, lhs_dilate = {list(p.lhs_dilation)}, "
              f"rhs_dilate = {list(p.rhs_dilation)}")
    return b.emit(
        f"stablehlo.convolution({lhs.name}, {rhs.name}) dim_numbers = {_dims(lspec, 'b', 'f')}x"
        f"{_dims(rspec, 'o', 'i')}->{_dims(ospec, 'b', 'f')}, window = {{{window}}} "
        f"{{batch_group_count = {p.batch_group_count} : i64, feature_group_count = {p.feature_group_count} : i64"
        f"{prec}}} : ({aval_type(lhs.aval)}, {aval_type(rhs.aval)}) -> {aval_type(out)}", out)


_CONV_ARGS = ("window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers, feature_group_count, "
              "batch_group_count, precision")

defprim("conv_general_dilated", lax.conv_general_dilated, _conv_stub, abstract_eval=_conv_abstract,
        lower=_conv_lower, arrays=("lhs", "rhs"), path="srcjax.lax.conv_general_dilated",
        jvp={"lhs": f"conv_general_dilated(lhs_dot, rhs, {_CONV_ARGS}, preferred_element_type)",
             "rhs": f"conv_general_dilated(lhs, rhs_dot, {_CONV_ARGS}, preferred_element_type)"},
        vjp={"lhs": f"conv_lhs_bar(out_bar, lhs, rhs, {_CONV_ARGS})",
             "rhs": f"conv_rhs_bar(out_bar, lhs, rhs, {_CONV_ARGS})"})
set_fields("conv_general_dilated", batch=batch_rules.helper(
    "batch_conv", "lhs", "rhs", "window_strides", "padding", "lhs_dilation", "rhs_dilation", "dimension_numbers",
    "feature_group_count", "batch_group_count", "precision", "preferred_element_type"))


# -- reduce_window ---------------------------------------------------------------------------------------
def _window_stub(operand, init_value, computation, window_dimensions, window_strides=None,  # type: ignore[no-untyped-def]
                 padding="VALID", base_dilation=None, window_dilation=None):
    ...


def _window_abstract(operand: ShapedArray, *args: Any) -> ShapedArray:
    p = window_plan(operand.shape, operand.dtype, *args)
    return ShapedArray(p.shape, operand.dtype)


_BODY = {"add": "add", "max": "maximum", "min": "minimum", "mul": "multiply"}
_BOOL_BODY = {"add": "or", "max": "or", "min": "and", "mul": "and"}


def _window_lower(ctx: LowerCtx, operand: HloValue, init_value: Any, *args: Any) -> HloValue:
    b = ctx.b
    out = ctx.avals_out[0]
    p = window_plan(operand.shape, operand.dtype, init_value, *args)
    init = b.full(np.asarray(init_value).astype(out.dtype).item(), (), out.dtype)
    if out.size == 0:
        return b.full(np.asarray(init_value).astype(out.dtype).item(), out.shape, out.dtype)
    op = (_BOOL_BODY if out.dtype == np.bool_ else _BODY)[p.kind]
    if out.ndim == 0:  # (a window of the one element)
        return b.binary(op, init, operand)
    scalar = f"tensor<{elem_type(out.dtype)}>"
    acc, el, res, name = b.fresh(), b.fresh(), b.fresh(), b.fresh()

    def arr(v: Any) -> str:
        return f"array<i64{': ' if v else ''}{', '.join(map(str, v))}>"

    pads = ", ".join(f"[{lo}, {hi}]" for lo, hi in p.pads)
    b.lines += [
        f'{b.indent}{name} = "stablehlo.reduce_window"({operand.name}, {init.name}) ({{',
        f"{b.indent}  ^bb0({acc}: {scalar}, {el}: {scalar}):",
        f"{b.indent}    {res} = stablehlo.{op} {acc}, {el} : {scalar}",
        f"{b.indent}    stablehlo.return {res} : {scalar}",
        f"{b.indent}}}) {{base_dilations = {arr(p.base_dilation)}, padding = dense<[{pads}]> : "
        f"tensor<{out.ndim}x2xi64>, window_dilations = {arr(p.window_dilation)}, "
        f"window_dimensions = {arr(p.window)}, window_strides = {arr(p.strides)}}} : "
        f"({aval_type(operand.aval)}, {scalar}) -> {aval_type(out)}"]
    return HloValue(name, out)


_WINDOW_ARGS = "window_dimensions, window_strides, padding, base_dilation, window_dilation"

defprim("reduce_window", lax.reduce_window, _window_stub, abstract_eval=_window_abstract, lower=_window_lower,
        arrays=("operand",), path="srcjax.lax.reduce_window",
        jvp={"operand": f"window_dot(operand_dot, operand, out, init_value, computation, {_WINDOW_ARGS})"},
        vjp={"operand": f"window_bar(out_bar, operand, out, init_value, computation, {_WINDOW_ARGS})"})
set_fields("reduce_window", batch=batch_rules.helper(
    "batch_reduce_window", "operand", "init_value", "computation", "window_dimensions", "window_strides", "padding",
    "base_dilation", "window_dilation"))
