"""Reverse mode over derivative code (grad of grad): the helper halves that take the tape written out
in place first (:func:`inline_tape_calls`), so reverse mode follows their pushes and pops; what it
cannot follow yet is refused at the user's function (:func:`refuse_tapes_across_calls`), never a zero
derivative."""

from __future__ import annotations

import copy
import dataclasses
import types
from collections.abc import Callable
from typing import Any

import libcst as cst

from . import adjoint
from .core import TranspileError
from .custom import rule_role
from .frontend.names import RenameNames, code, names_in, walk
from .frontend.program import Program
from .frontend.read import is_generated, read_function
from .transforms import ad
from .transforms.inline_lax import Inliner

__all__ = ["inline_tape_calls", "refuse_tapes_across_calls"]


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
    for nf in prog.functions.values():
        if is_generated(nf.fn):  # derivative code (helpers srcjax wrote for it included)
            # (a walk, not a visitor class made per call: each class was garbage the cyclic collector freed)
            calls += [n for n in walk(nf.plain_fdef) if n.__class__ is cst.Call]
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


def _tape_callee(st: Any, prog: Program, nf: Any) -> tuple[Any, list[str], str] | None:
    """``y = h_fwd(a, _tape)`` (a generated helper half handed the tape) whose callee can be written out
    in ``nf``: (the callee, its arguments, the target); else None."""
    if not (isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 and isinstance(st.body[0], cst.Assign)):
        return None
    a = st.body[0]
    call = a.value
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in prog.functions):
        return None
    if not any(isinstance(x.value, cst.Name) and adjoint.is_tape_name(x.value.value) for x in call.args):
        return None
    callee = prog.functions[call.func.value]
    ps = callee.plain_fdef.params
    if callee is nf or not is_generated(callee.fn) or rule_role(callee.fn) is not None or \
            getattr(callee.fn, "__globals__", None) is not getattr(nf.fn, "__globals__", None) or \
            callee.source.closure or ps.kwonly_params or ps.star_kwarg is not None or \
            ps.star_arg not in (cst.MaybeSentinel.DEFAULT, None) or len(ps.params) != len(call.args) or \
            any(x.keyword is not None or x.star for x in call.args) or \
            any(isinstance(s, cst.FunctionDef) for s in callee.plain_fdef.body.body):
        return None
    return callee, [code(x.value) for x in call.args], code(a.targets[0].target)


def inline_tape_calls(prog: Program) -> Program:
    """``prog`` with the calls of derivative code that hand the tape to a helper half
    (``h_1 = h_fwd(z, _tape)`` ... ``h_bars = h_bwd(h_1_bar, _tape)``) written out in place, so that
    the pushes and pops are the function's own and reverse mode over it follows them (``_tape_bar``);
    the tape keeps its name (no alias). A copy: the compiled function's own program is left as it is."""
    todo = [nf for nf in prog.functions.values() if is_generated(nf.fn) and
            any(_tape_callee(s, prog, nf) is not None for s in _statements(nf.plain_fdef.body.body))]
    if not todo:
        return prog
    out = copy.copy(prog)
    out.functions = dict(prog.functions)
    for nf in todo:
        inl = Inliner(nf, set(names_in(nf.plain_fdef)) | set(prog.functions))
        body = list(nf.plain_fdef.body.body)
        for _ in range(8):  # (helpers handing the tape on to their own helpers: written out in turn)
            body, changed = _written_out(body, prog, nf, inl)
            if not changed:
                break
        out.functions[nf.name] = dataclasses.replace(
            nf, plain=nf.plain_fdef.with_changes(body=nf.plain_fdef.body.with_changes(body=body)))
        if prog.entry is nf:
            out.entry = out.functions[nf.name]
    return out


def _statements(body: Any) -> list[Any]:
    stmts: list[Any] = []
    for s in body:
        stmts.append(s)
        if isinstance(s, (cst.If, cst.For, cst.While)):
            stmts += _statements(s.body.body)
            orelse = s.orelse
            while orelse is not None:
                if isinstance(orelse, cst.If):
                    stmts += _statements(orelse.body.body)
                    orelse = orelse.orelse
                else:
                    stmts += _statements(orelse.body.body)
                    orelse = None
    return stmts


def _written_out(body: Any, prog: Program, nf: Any, inl: Inliner) -> tuple[list[Any], bool]:
    changed = False
    new: list[Any] = []
    for s in body:
        if isinstance(s, (cst.If, cst.For, cst.While)):
            inner, c = _written_out(s.body.body, prog, nf, inl)
            orelse = s.orelse
            if isinstance(orelse, cst.If):
                ol, c2 = _written_out([orelse], prog, nf, inl)
                orelse = ol[0]
                c = c or c2
            elif orelse is not None:
                ob, c2 = _written_out(orelse.body.body, prog, nf, inl)
                orelse = orelse.with_changes(body=orelse.body.with_changes(body=ob))
                c = c or c2
            changed = changed or c
            new.append(s.with_changes(body=s.body.with_changes(body=inner), orelse=orelse)
                       if not isinstance(s, cst.While) else s.with_changes(body=s.body.with_changes(body=inner)))
            continue
        hit = _tape_callee(s, prog, nf)
        if hit is None:
            new.append(s)
            continue
        callee, args, target = hit
        fdef = callee.plain_fdef
        params = [p.name.value for p in fdef.params.params]
        # the tape and its tangent tape (`_tape_dot`: forward over reverse, a Hessian) themselves, not a copy
        # bound to a fresh name: activity does not follow appends through an alias (`_tape_dot_1 = _tape_dot`),
        # so reverse mode took what the helper's halves pass through the tangent tape as constants (wrong)
        tapes = {p: a for p, a in zip(params, args) if adjoint.is_saved_list_name(a)}
        fdef = fdef.visit(RenameNames(tapes))
        fdef = fdef.with_changes(params=fdef.params.with_changes(
            params=[p for p in fdef.params.params if p.name.value not in tapes.values()]))
        try:
            new += inl.inline(fdef, [a for a in args if not adjoint.is_saved_list_name(a)], target, s)
        except TranspileError:  # (not written out: refuse_tapes_across_calls refuses the call)
            new.append(s)
            continue
        changed = True
    return new, changed
