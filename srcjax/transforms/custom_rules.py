"""Calls to custom_vjp / custom_jvp functions in forward and reverse mode.

Input: an ANF call ``y = f(a, n)`` whose callee is a custom function (anf.classify
gives it kind ``"custom"``; its ``reads`` are the names of the differentiable
arguments only). Output: source lines that call the user's rules, which
are added to the :class:`~srcjax.frontend.program.Program` like helpers
(``Program.add_rule``) so they are transpiled, and differentiated again
for higher orders:

- forward mode, custom_jvp: ``y, y_dot = f_jvp((a,), (a_dot,))``
  (nondiff arguments first; inactive arguments get ``zeros_like`` tangents);
  custom_vjp: a :class:`CustomRuleError`, as in JAX.
- reverse mode, custom_vjp: :func:`with_residuals` first rewrites the
  statement's target to ``y, f_res`` so the residuals are an ordinary local
  that the tape saves when a loop overwrites it; the primal sweep then reads
  ``y, f_res = f_fwd(a, n)`` and the adjoint ``a_bar, = f_bwd(n, f_res, y_bar)``.
- reverse mode, custom_jvp: the primal sweep calls ``f`` itself; the rule's
  tangent output is linear in the tangents, so its transpose is the
  reverse-mode derivative of the rule with respect to ``tangents`` (at zero
  tangents), written as one generated function with its own tape:
  ``a_bar, = f_jvp_transpose((a,), (zeros_like(a),), (None, y_bar))``.

Everything here is reached from one dispatch line per site in ``anf.py``, ``forward_ad.py``
and ``reverse_ad.py``, which import this module; it imports none of them, and sees the
derivative writers only through the hook interfaces :class:`ForwardWriter` and
:class:`ReverseWriter` (what forward_ad.JVP and reverse_ad.VJP offer a rule).
"""

from __future__ import annotations

import inspect
import itertools
import math
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import libcst as cst

from ..core import CustomRuleError

# _Custom: the common base of custom_jvp/custom_vjp (srcjax.custom is a public module; the base is not API)
from ..custom import _Custom, custom_jvp, custom_vjp, none_cotangents, owner_of, register_role
from ..frontend.names import Names, RenameNames, code, names_in, replaced, target_names
from ..frontend.program import Program
from ..lifetimes import PerFunction

if TYPE_CHECKING:
    from ..frontend.normalize import NormalizedFunction
    from .anf import Op  # (anf dispatches to this module: a type only)
    from .zero_cotangents import Halves


class _Activity(Protocol):
    active: set[str]

    def op(self, node: cst.BaseExpression) -> Op: ...


class ForwardWriter(Protocol):
    """What forward mode offers a custom rule (forward_ad.JVP)."""

    program: Program

    def tangent_expr(self, node: cst.BaseExpression | None, defined: set[str]) -> str:
        """The tangent of a name or literal (zeros where it has none)."""

    def dname(self, v: str) -> str:
        """The tangent's name of ``v``."""


class ReverseWriter(Protocol):
    """What reverse mode offers a custom rule (reverse_ad.VJP)."""

    program: Program
    names: Names  # fresh names for this function's derivative
    helpers: Halves  # derivatives written so far, by (helper, wrt[, pattern])
    out_lines: list[str]  # the source of the generated helpers
    tape: str  # the name of this derivative's tape
    no_bar: set[int]  # id() of the statements no cotangent reaches
    custom_res: dict[int, str]  # id() of a custom_vjp call -> its residuals' name (with_residuals)

    @property
    def act(self) -> _Activity:
        """Which names are active, and each statement's Op."""

    def bname(self, v: str) -> str:
        """The cotangent's name of ``v``."""

    def accumulate(self, v: str, contrib: str, lines: list[str], pad: str, defined: set[str]) -> None:
        """Add ``contrib`` into ``v``'s cotangent."""

    def sweeps(self, seed: str | None) -> tuple[list[str], list[str], str, set[str]]:
        """(primal sweep, adjoint sweep, result, the names with cotangents) of the whole function."""

    def writer_for(self, nf: NormalizedFunction, active: Sequence[str]) -> ReverseWriter:
        """A writer of ``nf``'s reverse mode w.r.t. ``active``, sharing this one's helpers."""


def custom_callee(program: Program, name: str) -> _Custom | None:
    nf = program.functions.get(name)
    return owner_of(nf.fn) if nf is not None else None


def classify_call(program: Program, node: cst.Call, op_cls: type[Op]) -> Op:
    """The Op of ``f(...)`` for a custom ``f``: reads only the differentiable arguments."""
    assert isinstance(node.func, cst.Name)
    name = node.func.value
    pos = [code(a.value) for a in node.args if a.keyword is None]
    kws = {a.keyword.value: code(a.value) for a in node.args if a.keyword is not None}
    op = op_cls("custom", callee=name, call_args=pos, call_kwargs=kws)
    owner = custom_callee(program, name)
    assert owner is not None
    bound = _bound(owner, op)
    op.reads = [n for p in owner.diff_params() if bound.get(p) for n in names_in(cst.parse_expression(bound[p]))]
    return op


_MISSING = "<missing>"
_TRAMPOLINE_FILES = itertools.count()  # (a file name each: two custom functions of one name, two texts)


def _bound(owner: _Custom, op: Op) -> dict[str, str]:
    """Parameter -> argument code (literal defaults written out; others ``_MISSING``)."""
    sig = inspect.signature(owner.fun)
    try:
        ba = sig.bind(*op.call_args, **op.call_kwargs)
    except TypeError as e:
        raise CustomRuleError(f"{owner.__name__}(): {e}", span=owner.span()) from None  # type: ignore[attr-defined]
    out = dict(ba.arguments)
    for p, prm in sig.parameters.items():
        if p not in out:
            out[p] = _literal(prm.default) if prm.default is not inspect.Parameter.empty else _MISSING
    return out


def _literal(v: Any) -> str:
    if v is None or isinstance(v, (bool, int, str)) or (isinstance(v, float) and math.isfinite(v)):
        return repr(v)
    return _MISSING


def _need(owner: _Custom, bound: dict[str, str], p: str) -> str:
    v = bound[p]
    if v == _MISSING:
        raise CustomRuleError(
            f"{owner.__name__}: argument {p!r} is not passed and its default is not a literal, so srcjax cannot "  # type: ignore[attr-defined]
            "pass it to the derivative rule", span=owner.span(), hint=f"pass {p}=... explicitly in the call")
    return v


def _tuple(items: list[str]) -> str:
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _target(node: cst.BaseExpression) -> str:
    """A target as it may appear inside a larger tuple target."""
    return f"({code(node)})" if isinstance(node, cst.Tuple) else code(node)


def _no_rule(owner: _Custom, what: str) -> CustomRuleError:
    name = owner.__name__  # type: ignore[attr-defined]
    call = f"{name}.defvjp({name}_fwd, {name}_bwd)" if isinstance(owner, custom_vjp) else \
        f"@{name}.defjvp above def {name}_jvp(primals, tangents)"
    return CustomRuleError(f"{name} is a srcjax.{owner.kind} function but {what} was never called, so it has no "
                           "derivative rule", span=owner.span(), hint=f"define the rule: {call}")


def add_rules(program: Program) -> None:
    """Add the rules of every custom function the program calls (and of those their rules call)."""
    done: set[str] = set()
    while True:
        todo = [nf for nf in program.functions.values() if nf.name not in done and owner_of(nf.fn) is not None]
        if not todo:
            return
        for nf in todo:
            done.add(nf.name)
            owner = owner_of(nf.fn)
            for role in ("fwd", "bwd", "jvp"):
                fn = getattr(owner, role, None)
                if fn is not None:
                    program.add_rule(fn)


def _rule(program: Program, owner: _Custom, role: str) -> str:
    fn = getattr(owner, role)
    if fn is None:
        raise _no_rule(owner, "defvjp" if role in ("fwd", "bwd") else "defjvp")
    return program.add_rule(fn)


# -- forward mode -----------------------------------------------------------------------------

def jvp_call(jv: ForwardWriter, s: cst.Assign, op: Op, lines: list[str], ind: int, defined: set[str]) -> None:
    """``y, y_dot = f_jvp(*nondiff, (a, b), (a_dot, b_dot))``."""
    owner = custom_callee(jv.program, op.callee or "")
    assert owner is not None
    name = owner.__name__  # type: ignore[attr-defined]
    if isinstance(owner, custom_vjp):
        raise CustomRuleError(
            f"cannot differentiate {name} in forward mode (jvp): it is a srcjax.custom_vjp function, whose rule "
            "only gives reverse-mode derivatives (as in JAX)", span=owner.span(),
            hint="use reverse mode (srcjax.grad / srcjax.vjp), or give it a forward rule with srcjax.custom_jvp")
    rule = _rule(jv.program, owner, "jvp")
    bound = _bound(owner, op)
    diff = [_need(owner, bound, p) for p in owner.diff_params()]
    nondiff = [_need(owner, bound, p) for p in owner.nondiff_params()]
    tangents = [jv.tangent_expr(cst.parse_expression(d), defined) for d in diff]
    target = s.targets[0].target
    names = target_names(target)
    dots: Any = target.visit(RenameNames({n: jv.dname(n) for n in names}))
    args = nondiff + [_tuple(diff), _tuple(tangents)]
    lines.append(f"{'    ' * ind}{_target(target)}, {_target(dots)} = {rule}({', '.join(args)})")
    defined.update(names)


# -- reverse mode -----------------------------------------------------------------------------

def with_residuals(v: ReverseWriter, body: list[Any]) -> tuple[list[Any], dict[int, str]]:
    """Give each active custom_vjp call a residual target: ``y = f(a)`` -> ``y, f_res = f(a)``.

    Returns the new body and ``id(Assign) -> residual name``.
    """
    res: dict[int, str] = {}

    def residual(original: cst.Assign) -> cst.Assign:
        op = v.act.op(original.value)
        if op.kind != "custom":
            return original
        owner = custom_callee(v.program, op.callee or "")
        names = [n for t in original.targets for n in target_names(t.target)]
        if not isinstance(owner, custom_vjp) or not any(n in v.act.active for n in names):
            return original
        if owner.fwd is None or owner.bwd is None:
            raise _no_rule(owner, "defvjp")
        r = v.names.fresh(f"{owner.__name__}_res")  # type: ignore[attr-defined]
        out = original.targets[0].target
        if isinstance(out, cst.Tuple):
            out = out.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        new = cst.Assign(targets=[cst.AssignTarget(cst.Tuple(
            [cst.Element(out), cst.Element(cst.Name(r))], lpar=[], rpar=[]))], value=original.value)
        res[id(new)] = r
        return new

    return [replaced(s, cst.Assign, residual) for s in body], res


_FLOWS: PerFunction[bool] = PerFunction("flows")  # jvp rule -> whether its tangent output depends on the tangents
_WRITING: set[tuple[int, tuple[str, tuple[str, ...]]]] = set()  # (id(helpers), key): transposes being written
# program -> generated transpose name -> its custom_jvp (errors inside a transpose are the rule's)
_TRANSPOSES: PerFunction[dict[str, custom_jvp]] = PerFunction("transposes")  # (on the program: dies with it)


def mark_transposes(program: Program, functions: dict[str, Any]) -> None:
    """Register the generated transposes among ``functions`` with :mod:`srcjax.custom`."""
    for name, owner in _TRANSPOSES.get(program, None, {}).items():
        fn = functions.get(name)
        if fn is not None:
            register_role(fn, "transpose", owner)


def _transpose(v: ReverseWriter, owner: custom_jvp) -> tuple[str, bool]:
    """``def <rule>_transpose(*nondiff, primals, tangents, out_bar) -> tangents_bar``: the rule's reverse
    mode with respect to the tangents; (its name, whether any cotangent reaches the tangents)."""
    rule = _rule(v.program, owner, "jvp")
    nf: NormalizedFunction = v.program.functions[rule]
    key = (nf.name, ("<transpose>",))
    hit = v.helpers.get(key)
    if hit is not None:
        if (id(v.helpers), key) in _WRITING:
            # the rule calls its own function (`softplus(x)` in softplus_jvp) and this is that call while
            # the rule is transposed: the transpose gets no cotangent for the primal output, so none flows
            return hit[0], False
        return hit[0], _FLOWS.get(nf.fn)
    params = [p.name.value for p in nf.plain_fdef.params.params]
    tangents = params[-1]
    name = Names({n for pair in v.helpers.values() for n in pair} | set(v.program.functions)).fresh(
        f"{rule}_transpose")
    v.helpers[key] = (name, name)
    found = _TRANSPOSES.get(v.program)
    if found is None:
        found = _TRANSPOSES.set(v.program, None, {})
    found[name] = owner
    t = v.writer_for(nf, (tangents,))
    out_bar = t.names.fresh("out_bar")
    _WRITING.add((id(v.helpers), key))
    try:
        primal, adj, _, defined = t.sweeps(out_bar)
    finally:
        _WRITING.discard((id(v.helpers), key))
    flows = _FLOWS.set(nf.fn, None, tangents in defined)
    lines = [f"def {name}({', '.join(params + [out_bar])}):"]
    if any(t.tape in ln for ln in primal + adj):
        lines.append(f"    {t.tape} = []")
    lines += primal + adj + [f"    return {t.bname(tangents) if flows else '()'}"]
    v.out_lines.append("\n".join(lines) + "\n")
    return name, flows


def primal_line(v: ReverseWriter, small: cst.Assign, op: Op, pad: str) -> str | None:
    """The primal-sweep line of an active custom call (None: the plain call)."""
    owner = custom_callee(v.program, op.callee or "")
    target = small.targets[0].target
    if id(small) in v.no_bar:  # no cotangent reaches it: the plain call
        if id(small) in v.custom_res and isinstance(target, cst.Tuple):
            return f"{pad}{_target(target.elements[0].value)} = {code(small.value)}"
        return None
    if id(small) in v.custom_res:
        fwd = _rule(v.program, owner, "fwd")  # type: ignore[arg-type]
        args = op.call_args + [f"{k}={a}" for k, a in op.call_kwargs.items()]
        return f"{pad}{code(target)} = {fwd}({', '.join(args)})"
    return None


def _bar_expr(v: ReverseWriter, node: cst.BaseExpression, defined: set[str]) -> str:
    if isinstance(node, cst.Name):
        return v.bname(node.value) if node.value in defined else f"zeros_like({node.value})"
    assert isinstance(node, (cst.Tuple, cst.List))
    return _tuple([_bar_expr(v, e.value, defined) for e in node.elements])


def adjoint(v: ReverseWriter, s: cst.Assign, op: Op, restore: list[tuple[str, str]], lines: list[str], pad: str,
            defined: set[str]) -> None:
    """Cotangents of the differentiable arguments from the user's rule, and the targets' old values
    given back (``restore``: (name, where its old value is), in that order). The rule runs where the
    arguments hold the values the call read: after the restore when a target is one of them
    (``x = f(x)``), with what it needs of the results (residuals, zeros) kept first."""
    owner = custom_callee(v.program, op.callee or "")
    assert owner is not None
    target = s.targets[0].target
    res = v.custom_res.get(id(s))
    out = target.elements[0].value if res is not None and isinstance(target, cst.Tuple) else target
    g = _bar_expr(v, out, defined)
    for n in target_names(target):
        defined.discard(n)
    bound = _bound(owner, op)
    nondiff = [_need(owner, bound, p) for p in owner.nondiff_params()]
    diff = [_need(owner, bound, p) for p in owner.diff_params()] if isinstance(owner, custom_jvp) else []
    restored = {n for n, _ in restore}
    if restored & {n for a in nondiff + diff for n in names_in(cst.parse_expression(a))}:
        if res is not None and res in restored:
            keep = v.names.fresh(f"{res}_out")
            lines.append(f"{pad}{keep} = {res}")
            res = keep
        if not g.isidentifier():  # zeros_like(y): the result's shape
            keep = v.names.fresh(f"{code(out) if isinstance(out, cst.Name) else 'out'}_bar_out")
            lines.append(f"{pad}{keep} = {g}")
            g = keep
        lines += [f"{pad}{n} = {src}" for n, src in restore]
        restore = []
    if isinstance(owner, custom_vjp):
        diff = [bound[p] for p in owner.diff_params()]
        call = f"{_rule(v.program, owner, 'bwd')}({', '.join(nondiff + [res or 'None', g])})"
    else:
        assert isinstance(owner, custom_jvp)
        transpose, flows = _transpose(v, owner)
        zeros = _tuple([f"zeros_like({d})" for d in diff])
        call = f"{transpose}({', '.join(nondiff + [_tuple(diff), zeros, f'(None, {g})'])})"
        if not flows:
            diff = []
    active = [d if d.isidentifier() and d in v.act.active else None for d in diff]
    if isinstance(owner, custom_vjp):  # None in the rule's result: no cotangent (zeros), as in JAX
        none = none_cotangents(owner)
        active = [None if k in none else a for k, a in enumerate(active)]
    if any(active):
        # unpack into the cotangents themselves where they start here, else into fresh names then added
        # (no tuple temporary: it could not be joined with the other branch of an `if` on data)
        unpack, first, more = [], set(), []
        for a in active:
            if a is None:
                unpack.append("_")
            elif a not in defined and a not in first:
                unpack.append(v.bname(a))
                first.add(a)
            else:
                t = v.names.fresh(f"{a}_bar")
                unpack.append(t)
                more.append((a, t))
        lines.append(f"{pad}{', '.join(unpack)}{',' if len(active) == 1 else ''} = {call}")
        defined.update(first)
        for a, t in more:
            v.accumulate(a, t, lines, pad, defined)
    lines += [f"{pad}{n} = {src}" for n, src in restore]


# -- differentiating a custom function itself --------------------------------------------------

_TRAMPOLINES: PerFunction[Any] = PerFunction("trampoline")


class _Ref:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


def forwarding_signature(sig: inspect.Signature, ns: dict[str, Any]) -> tuple[str, str]:
    """(``sig``'s parameter list as source, without annotations, each default a name ``_default_i`` bound in
    ``ns``; the arguments of a call passing every parameter on): a generated caller's ``def`` and its call."""
    params = []
    for i, p in enumerate(sig.parameters.values()):
        p = p.replace(annotation=inspect.Parameter.empty)
        if p.default is not inspect.Parameter.empty:
            ns[f"_default_{i}"] = p.default
            p = p.replace(default=_Ref(f"_default_{i}"))
        params.append(p)
    head = str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))
    return head, ", ".join(p.name if p.kind != p.KEYWORD_ONLY else f"{p.name}={p.name}" for p in params)


def trampoline(fn: Any) -> Any:
    """``def _call_f(x): y = f(x); return y``: a caller of the custom ``fn``, so that
    ``srcjax.grad(f)`` uses f's rule rather than differentiating its body."""
    hit = _TRAMPOLINES.get(fn)
    if hit is not None:
        return hit
    import linecache

    sig = inspect.signature(fn)
    ns: dict[str, Any] = {"_custom_function": owner_of(fn)}
    head, args = forwarding_signature(sig, ns)
    out = next(n for n in ("y", "out", "out_") if n not in sig.parameters)
    # named so that the custom function keeps its own name in the program
    text = f"def _call_{fn.__name__}{head}:\n    {out} = _custom_function({args})\n    return {out}\n"
    filename = f"<srcjax.custom call of {fn.__qualname__} #{next(_TRAMPOLINE_FILES)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    ns["__name__"] = fn.__module__
    exec(compile(text, filename, "exec"), ns)
    t = _TRAMPOLINES.set(fn, None, ns[f"_call_{fn.__name__}"])
    from ..generated import forget_module  # (generated.py reads programs: imported when a trampoline is made)

    weakref.finalize(t, forget_module, filename)  # (its text and what reading it noted die with it)
    return t
