"""Reverse mode over derivative code (grad of grad) that it cannot follow yet: refused at the user's
function, never a zero derivative."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import libcst as cst

from . import adjoint
from .custom import rule_role
from .frontend.names import Visitor, code
from .frontend.program import Program
from .frontend.read import is_generated, read_function
from .transforms import ad

__all__ = ["refuse_tapes_across_calls"]


def _refused(base: Callable[..., Any], why: str, instead: str) -> ad.DifferentiationError:
    """Reverse mode over ``base`` (a generated derivative) refused, at the user's function."""
    user = base.__srcjax_derived__[1]  # type: ignore[attr-defined]
    src = read_function(user) if isinstance(user, types.FunctionType) else None
    return ad.DifferentiationError(
        f"reverse mode over the derivative of {getattr(user, '__name__', user)!r}: {why}",
        span=src.span(src.fdef.name) if src is not None else None,
        hint=f"use srcjax.hessian or srcjax.jacfwd(srcjax.grad(f)) (forward over reverse), {instead}")


def refuse_tapes_across_calls(base: Callable[..., Any], prog: Program) -> None:
    """Reverse mode over derivative code whose helpers hand saved values to each other through the
    tape (``th_1 = th_fwd(w, _tape)`` ... ``th_bwd(th_1_bar, _tape)``) would lose the derivative
    that flows through those saved values (the cotangent tape does not cross calls yet): refused,
    not a wrong answer."""
    calls: list[cst.Call] = []

    class V(Visitor):
        def visit_Call(self, n: cst.Call) -> None:
            calls.append(n)

    for nf in prog.functions.values():
        if is_generated(nf.fn):  # derivative code (helpers srcjax wrote for it included)
            V().walk(nf.plain_fdef)
    for call in calls:
        callee = code(call.func)
        role = rule_role(prog.functions[callee].fn) if callee in prog.functions else None
        if role is not None and role[0] == "transpose":
            # the transposed custom_jvp rule is differentiated in its tangents only: reverse mode over it
            # dropped the derivative in the primals (jacrev(grad(f)) gave zeros)
            raise _refused(
                base, f"it calls the custom_jvp function {getattr(role[1], '__name__', 'f')!r}, whose rule's "
                "transpose reverse mode cannot differentiate in the primals yet",
                "which apply the custom_jvp rule itself")
        if callee in prog.functions and any(isinstance(a.value, cst.Name) and adjoint.TAPE_NAME.match(a.value.value)
                                            for a in call.args):
            why = f"`{callee}` hands values saved for the adjoint through the tape; reverse mode does not follow " \
                "derivatives through them yet"
            if getattr(base, "__srcjax_derived__", None) is not None:
                raise _refused(base, why, "or write the helper's body into the function")
            # base calls a derivative written inline (srcjax.grad(g)(w) in its body): refused, not zeros
            src = read_function(base) if isinstance(base, types.FunctionType) else None
            raise ad.DifferentiationError(
                f"reverse mode through the derivative {getattr(base, '__name__', 'f')!r} computes inside it "
                f"(grad of grad): {why}", span=src.span(src.fdef.name) if src is not None else None,
                hint="differentiate it in forward mode (srcjax.jvp, srcjax.jacfwd), or write the helpers the "
                     "inner function calls into its body")
