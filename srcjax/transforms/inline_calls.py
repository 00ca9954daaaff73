"""Reverse mode's pre-pass for helper calls inside ``if``s on data (:func:`inline_calls_in_data_branches`).

A helper's forward half pushes its saved values on the tape, which a branch on data cannot
do; so :class:`~.reverse_ad.VJP` first writes such calls out in place (with
:class:`~.inline_lax.Inliner`), and their statements save values like the branch's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst

from ..frontend.names import assigned_names, code, names_in
from ..frontend.normalize import NormalizedFunction
from ..frontend.program import Program
from ..frontend.resolve import LIBRARY_MODULES
from ..frontend.restructure import walk as _walk
from . import custom_rules, linear_calls
from .activity import find_nested_def, result_active
from .anf import DifferentiationError, all_params, classify, differentiable_params
from .inline_lax import Inliner


def inline_calls_in_data_branches(program: Program, nf: NormalizedFunction, body: list[Any],
                                   depth: int = 0, within: int | None = None,
                                   written: dict[tuple[Any, ...], list[Any]] | None = None) -> list[Any]:
    """Helper calls inside ``if``s on data, written out in place (reverse mode).

    A helper's forward half pushes its saved values on the tape, which a branch
    on data cannot do; its statements in the branch save them like the
    branch's own (in names both branches bind). ``within``: the binding time of the
    tests around ``body`` (a helper's body written out in a branch on data: its own
    calls are in that branch too, and are written out as well). ``written``: the helpers' bodies
    already written out this way, by (helper, flags, binding time, depth), for every function of the
    program reverse mode writes (``program.inlined``, while its functions stay the same): a helper
    called at several places is written out once (it was once per call, its own helpers again inside
    each: a vmapped Jacobian's library helpers made 145 inlinings for grad(vmap(jacfwd(f)))).
    """
    from ..frontend.binding_times import DYNAMIC, STATIC, UNKNOWN, BindingTimes

    def inlinable(v: cst.BaseExpression) -> bool:  # a helper call; custom rules and linear_calls' keep their call
        return isinstance(v, cst.Call) and isinstance(v.func, cst.Name) and v.func.value in program.functions \
            and custom_rules.custom_callee(program, v.func.value) is None and \
            not linear_calls.callee_has_rules(program, v)

    calls = [st for st, _ in _walk(body) if isinstance(st, cst.Assign) and inlinable(st.value)]
    if not calls:
        return body
    forced = within is None and getattr(nf.fn, "__srcjax_aux_output__", False)
    if forced:
        # `f_output` (aux_output.output_of: `return f(x)[0]`) writes f's body out in place, so that its
        # derivative is one function with no tape between halves: one that is differentiated again
        # (grad of a function calling srcjax.vjp(f, x, has_aux=True)) as the derivative of f itself is.
        # f's body is then at f_output's top level, not in a branch: its own calls are written out only
        # where they are in a branch on data (a loop on data in them keeps its tape, as in f)
        within = UNKNOWN
    if written is None:  # (the program's: shared by every function reverse mode writes for it)
        now = list(program.functions.values())
        kept, written = program.inlined
        if len(kept) != len(now) or any(a is not b for a, b in zip(kept, now)):
            written = {}
            program.inlined = (now, written)
    bta = BindingTimes(nf, nf.plain_fdef, body)
    inl = Inliner(nf, set(names_in(nf.plain_fdef)) | set(names_in(cst.Module(body=body))))
    changed = False

    def block(stmts: Sequence[Any], data: int) -> list[Any]:  # data: the binding time of the tests around
        nonlocal changed
        out: list[Any] = []
        for st in stmts:
            if isinstance(st, cst.If):
                d = max(data, bta.of(st.test))
                orelse = st.orelse
                if isinstance(orelse, cst.If):
                    orelse = block([orelse], d)[0]
                elif orelse is not None:
                    orelse = orelse.with_changes(body=orelse.body.with_changes(body=block(orelse.body.body, d)))
                out.append(st.with_changes(body=st.body.with_changes(body=block(st.body.body, d)), orelse=orelse))
            elif isinstance(st, (cst.For, cst.While)):
                out.append(st.with_changes(body=st.body.with_changes(body=block(st.body.body, data))))
            elif data != STATIC and isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 and \
                    isinstance(st.body[0], cst.Assign) and inlinable(st.body[0].value):
                inlined = inline_one(st.body[0], st, data)
                out += inlined if inlined is not None else [st]
                changed = changed or inlined is not None
            else:
                out.append(st)
        return out

    def inline_one(a: cst.Assign, line: Any, data: int) -> list[Any] | None:
        op = classify(a.value, program, nf)
        if op.kind != "call":  # a srcjax.adjoint helper in derivative code (zeros_like, tree_add, ...)
            return None
        callee = program.functions[op.callee]  # type: ignore[index]
        diff = differentiable_params(callee)
        if not diff or not _result_active(program, callee, tuple(p for p in all_params(callee) if p in diff)):
            return None  # (index_key, batch_size_of: no derivative flows out, nothing saved: called as it is)
        where = f"a call of `{callee.name}` inside an `if` on array data"
        if not _reads_same_globals(program, callee, nf) or callee.source.closure or depth > 8 or \
                callee is nf or find_nested_def(callee.plain_fdef.body) is not None:
            if data != DYNAMIC:
                return None  # the test may turn out static (recursion on a Python int): call it as usual
            if getattr(callee.fn, "__module__", "") in LIBRARY_MODULES:  # (srcjax's batched code: not the user's)
                raise DifferentiationError(
                    f"reverse mode through {where} of the batched program srcjax wrote is not supported yet",
                    span=nf.spans.get(id(line)),
                    hint="use forward mode (srcjax.jvp, srcjax.jacfwd); under vmap of vmap (a batched `while`), "
                         "take the derivative inside the vmaps: vmap(vmap(grad(f, max_iters=...)))")
            raise DifferentiationError(f"reverse mode through {where} (a helper from another module, a closure, "
                                       "or recursion) is not supported yet", span=nf.spans.get(id(line)),
                                       hint=f"call {callee.name} before the `if` and select the result with "
                                            "np.where, or move the `if` into the helper")
        ps = callee.plain_fdef.params
        params = [*ps.params, *ps.kwonly_params]  # inlined: every parameter bound by position
        npos = len(ps.params)
        args: list[str] = []
        for k, p in enumerate(params):
            name = p.name.value
            if k < min(len(op.call_args), npos):
                args.append(op.call_args[k])
            elif name in op.call_kwargs:
                args.append(op.call_kwargs[name])
            elif p.default is not None:
                args.append(code(p.default))
            else:
                raise DifferentiationError(f"{callee.name}() is missing the argument `{name}`",
                                           span=nf.spans.get(id(line)))
            if name not in diff:  # an index parameter stays an index written out (no derivative flows in)
                args[-1] = f"index_key({args[-1]})"
        known = {p.name.value: literal_flag(a) for p, a in zip(params, args)}
        flags = {p: v for p, v in known.items() if v is not None}
        key = (id(callee), tuple(sorted(flags.items())), data, depth)
        inner = written.get(key)
        if inner is None:
            body = with_flags_decided(list(callee.plain_fdef.body.body), flags)
            inner = written[key] = inline_calls_in_data_branches(program, callee, body, depth + 1,
                                                                 STATIC if forced else data, written)
        fdef = callee.plain_fdef.with_changes(body=callee.plain_fdef.body.with_changes(body=inner),
                                              params=ps.with_changes(params=params, kwonly_params=[],
                                                                     star_arg=cst.MaybeSentinel.DEFAULT))
        return inl.inline(fdef, args, code(a.targets[0].target), line)

    new = block(body, STATIC if within is None else within)
    return new if changed else body


def _reads_same_globals(program: Program, callee: NormalizedFunction, nf: NormalizedFunction) -> bool:
    """Whether ``callee``'s body, written out inside ``nf``, reads the same globals there: one module, or
    a helper of :mod:`srcjax.adjoint` (``unbroadcast``) called by derivative code, which imports what it reads."""
    if callee.source.globals is nf.source.globals:
        return True
    fdef = callee.plain_fdef
    local = {p.name.value for p in fdef.params.params} | set(assigned_names(fdef.body.body)) | set(program.functions)
    mine, theirs = callee.source.globals, nf.source.globals
    return all(theirs.get(n) is mine[n] for n in set(names_in(fdef.body)) - local if n in mine)


def literal_flag(text: str) -> bool | None:
    """The value of an argument written ``True`` or ``False`` (``index_key(True)``: an index parameter's), else None."""
    text = text[len("index_key("):-1] if text.startswith("index_key(") else text
    return {"True": True, "False": False}.get(text.strip())


def with_flags_decided(body: list[Any], flags: dict[str, bool]) -> list[Any]:
    """A helper's body for arguments passed as literal flags (``batch_broadcast_like(t, y, True, False)``):
    each ``if`` on a flag (or ``not`` a flag, in a name of its own) reduced to the branch it takes. The branch
    not taken is never written out in a branch on data (a call there may recurse on a static structure
    and loop over it: ``batch_broadcast_items``, which reverse mode could not write out there)."""
    flags = {n: v for n, v in flags.items() if n not in assigned_names(body)}
    if not flags:
        return body

    def block(stmts: Sequence[Any]) -> list[Any]:
        out: list[Any] = []
        for st in stmts:
            if isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 and isinstance(st.body[0], cst.Assign) \
                    and isinstance(st.body[0].value, cst.UnaryOperation) and isinstance(st.body[0].value.operator,
                                                                                        cst.Not):
                a = st.body[0]
                operand, targets = a.value.expression, a.targets  # type: ignore[attr-defined]
                if isinstance(operand, cst.Name) and operand.value in flags and len(targets) == 1 and \
                        isinstance(targets[0].target, cst.Name):
                    flags[targets[0].target.value] = not flags[operand.value]
            if not isinstance(st, cst.If):
                out.append(st)
                continue
            test = st.test.value if isinstance(st.test, cst.Name) else None
            if test not in flags:
                orelse = st.orelse
                if isinstance(orelse, cst.Else):
                    orelse = orelse.with_changes(body=orelse.body.with_changes(body=block(orelse.body.body)))
                elif orelse is not None:
                    orelse = block([orelse])[0]
                out.append(st.with_changes(body=st.body.with_changes(body=block(st.body.body)), orelse=orelse))
                continue
            taken: list[Any] = list(st.body.body) if flags[test] else [] if st.orelse is None else \
                list(st.orelse.body.body) if isinstance(st.orelse, cst.Else) else [st.orelse]
            taken = block(taken)
            if any(isinstance(s, cst.Return) for s, _ in _walk(taken)):  # (a return inside: kept in an `if`)
                out.append(st.with_changes(test=cst.Name("True"), body=st.body.with_changes(body=taken or
                                                                                          [cst.SimpleStatementLine(
                                                                                              [cst.Pass()])]),
                                           orelse=None))
            else:
                out += taken
        return out

    return block(body)


def _result_active(program: Program, callee: NormalizedFunction, pattern: tuple[str, ...]) -> bool:
    """:func:`~.activity.result_active`, True where that analysis refuses the callee (a helper whose body
    derivatives cannot follow, e.g. ``lax_slicing._windows``' tuple joins: written out as before, its refusal
    raised where it is differentiated, not here for every parameter at once)."""
    try:
        return result_active(program, callee, pattern)
    except DifferentiationError:
        return True

