"""What ``srcjax.grad`` refuses in a function's output (not a real scalar), located at its ``return``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst

from . import pytree
from .api import _as_compiled  # (api's shared helper: the function's one Compiled)
from .core import DTypeError, ShapeDtypeStruct, Span, TranspileError, dtype_short_name, not_scalar_output
from .frontend.names import Visitor
from .frontend.read import read_function

__all__ = ["grad_output_error", "real_output_error", "return_span", "scalar_shaped", "surely_scalar"]


def scalar_shaped(out: Any) -> bool:
    """Whether ``out`` (an ``eval_shape`` result) has the shape grad's check asks for: one value of no
    dimensions (its dtype is checked next: :func:`grad_output_error`). Not so: an array with dimensions
    or a container (``srcjax.hessian`` of such a function is ``jacfwd(jacrev(f))``)."""
    return isinstance(out, ShapeDtypeStruct) and out.shape == () or type(out) in (float, int, bool)


# Calls whose result is 0-d whatever their one argument's shape (no axis: a full reduction)
_TO_SCALAR = {"np.sum", "np.mean", "np.max", "np.min", "np.prod", "np.amax", "np.amin", "np.linalg.norm",
              "np.vdot", "float"}
_ARITH = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power)


def surely_scalar(fn: Callable[..., Any]) -> bool:
    """Whether ``fn``'s output is 0-d whatever its arguments' shapes, as its normalized text shows without
    shapes: straight-line code returning a full reduction (``np.sum(x)``, no axis), a number, or arithmetic
    of such values (a loss). False: not known so (``srcjax.hessian`` called in compiled code then also
    writes ``jacfwd(jacrev(fn))`` for an output that is not a scalar: jacobian._hessian_switch)."""
    try:
        body = _as_compiled(fn).program.entry.fdef.body.body
    except TranspileError:
        return False
    defs: dict[str, cst.BaseExpression] = {}
    for stmt in body:
        small = stmt.body if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else [None]
        line = small[0]
        if isinstance(line, cst.Return):
            return line.value is not None and _scalar(line.value, defs, 0)
        if not isinstance(line, cst.Assign) or len(line.targets) != 1 or \
                not isinstance(line.targets[0].target, cst.Name) or line.targets[0].target.value in defs:
            return False  # (control flow, a name bound twice, a store into a container: not read here)
        defs[line.targets[0].target.value] = line.value
    return False


def _scalar(e: cst.BaseExpression, defs: dict[str, cst.BaseExpression], depth: int) -> bool:
    if depth > 64:
        return False
    if isinstance(e, cst.Name):
        return e.value in defs and _scalar(defs[e.value], defs, depth + 1)
    if isinstance(e, (cst.Integer, cst.Float)):
        return True
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, (cst.Minus, cst.Plus)):
        return _scalar(e.expression, defs, depth + 1)
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, _ARITH):
        return _scalar(e.left, defs, depth + 1) and _scalar(e.right, defs, depth + 1)
    if isinstance(e, cst.Call) and all(a.keyword is None and not a.star for a in e.args):
        name = cst.Module([]).code_for_node(e.func)
        return name in _TO_SCALAR and len(e.args) == (2 if name == "np.vdot" else 1)
    return False


def grad_output_error(fn: Callable[..., Any], out: Any, has_aux: bool, what: str,
                      describe: Callable[[Any], str] | None = None) -> TranspileError | None:
    """What ``what`` (``srcjax.grad``, ``--grad``) refuses in ``out``, ``fn``'s output (from
    ``eval_shape``; with ``has_aux`` the first of the pair): not a scalar (a ShapeError), not
    floating point (a DTypeError, as JAX: "grad requires real-valued outputs"). Located at
    ``fn``'s ``return`` (the function's name where it has several); None when ``out`` is fine."""
    show = describe or _describe_output
    name = getattr(fn, "__name__", "the function")
    main = out[0] if has_aux and isinstance(out, (tuple, list)) and len(out) == 2 else out
    if isinstance(main, ShapeDtypeStruct) and main.shape == () and \
            (main.dtype.kind == "f" or main.dtype.name == "bfloat16") or type(main) is float:
        return None
    span = return_span(fn, has_aux)
    part = " as its output (the first of the pair)" if has_aux and main is not out else ""
    if scalar_shaped(main):
        return DTypeError(f"{what} requires a real-valued (floating-point) output, but {name} returns "
                          f"{show(main)}{part}", span=span,
                          hint="a complex output has no gradient (as in JAX): return np.real(...), np.abs(...) "
                               "** 2, or use srcjax.vjp" if isinstance(main, ShapeDtypeStruct) and
                          main.dtype.kind == "c" else
                          "an integer or boolean output has no gradient: compute the output in floating point "
                          "(x.astype(np.float32)), or use srcjax.vjp")
    return not_scalar_output(f"{what} needs a scalar output, but {name} returns {show(main)}{part}", span=span,
                      hint="reduce it to a scalar (np.sum, np.mean), or use srcjax.jacrev or srcjax.vjp for a "
                           "non-scalar output")


def real_output_error(fn: Callable[..., Any], out: Any, what: str) -> TranspileError | None:
    """What reverse mode of a Jacobian (``srcjax.jacrev``, ``srcjax.hessian``) refuses in ``out``, ``fn``'s
    output (from ``eval_shape``): an integer or boolean leaf, as JAX ("jacrev requires real-valued
    outputs"), located at ``fn``'s ``return``; None when every leaf is floating point (or complex)."""
    leaves = pytree.flatten(out)[0]
    if not any(isinstance(v, ShapeDtypeStruct) and v.dtype.kind in "iub" or type(v) in (int, bool) for v in leaves):
        return None
    name = getattr(fn, "__name__", "the function")
    return DTypeError(f"{what} requires real-valued (floating-point) outputs, but {name} returns "
                      f"{_describe_output(out)}", span=return_span(fn, False),
                      hint="an integer or boolean output has no derivative: compute the output in floating point "
                           "(x.astype(np.float32))")


def _describe_output(out: Any) -> str:
    """``f32[3]``, ``(f32[3], f32[])``, or the type of a non-array."""
    if isinstance(out, ShapeDtypeStruct):
        return f"{dtype_short_name(out.dtype)}[{','.join(map(str, out.shape))}]"
    if isinstance(out, (tuple, list)) and not pytree.is_record(out):
        inner = ", ".join(_describe_output(o) for o in out)
        return f"({inner},)" if isinstance(out, tuple) and len(out) == 1 else \
            f"({inner})" if isinstance(out, tuple) else f"[{inner}]"
    return pytree.describe(out)


def return_span(fn: Callable[..., Any], has_aux: bool) -> Span | None:
    """Where ``fn`` returns its output: the value of its only ``return`` (the first element of a
    returned pair with ``has_aux``), else its name in the ``def``."""
    try:
        src = read_function(_as_compiled(fn).fn)
    except TranspileError:
        return None
    returns: list[cst.Return] = []

    class V(Visitor):
        def visit_Return(self, n: cst.Return) -> None:
            returns.append(n)

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is src.fdef  # not a nested function's return

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

    V().walk(src.fdef)
    if len(returns) == 1 and returns[0].value is not None:
        v = returns[0].value
        if has_aux and isinstance(v, (cst.Tuple, cst.List)) and len(v.elements) == 2:
            v = v.elements[0].value
        return src.span(v) or src.span(returns[0])
    return src.span(src.fdef.name)
