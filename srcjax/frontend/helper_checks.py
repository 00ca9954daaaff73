"""The in-place checks of a function's statements (frontend/aliasing.py's ``scan``), and the checks of its calls
of user helpers that change a parameter by ``p op= v`` (frontend/changed_arguments.py), decided by the argument's
type: ``scale(t, 3.0)`` of ``def scale(t, s): t *= s`` binds a Python number again inside the helper (the caller's
``t`` is unchanged) and changes an array in place, a 0-d ``ndarray`` too (the caller's ``t`` changes: srcjax's
immutable arrays cannot). Where the caller reads ``t`` after the call, the call is followed by
``t = in_place(t, t, alias="...", rank=0)``: a weakly typed number runs, any array is refused at the call
(``primitives/in_place.py``). Input: the user's function; output: the normalizer's statements after the call."""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import libcst as cst

from ..core import UnsupportedSyntaxError
from . import aliasing, changed_arguments
from .function_copies import copy_function
from .in_place_updates import IN_PLACE
from .names import walk
from .read import FunctionSource, is_generated

if TYPE_CHECKING:
    from .normalize import Normalizer

__all__ = ["HelperCalls", "returned_call", "returning", "scan", "statement_checks"]

RETURNS = "__srcjax_returns__"  # (a helper's variant: the parameters it returns after its own value)
_VARIANTS: dict[tuple[Any, tuple[str, ...]], types.FunctionType] = {}  # (helper, parameters) -> its variant

_TIGHT = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


@dataclass
class HelperCalls:
    """A function's calls of helpers that change an argument read after the call (by id of the statement): the
    checks of ``t op= v`` by the argument's type, (the argument, the change); the calls written ``b = fill'(b, x)``,
    (the argument, the helper's parameter)."""
    checks: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    returns: dict[int, list[tuple[str, str]]] = field(default_factory=dict)


def scan(norm: Normalizer, fdef: cst.FunctionDef) -> tuple[dict[int, tuple[str, int]], HelperCalls]:
    """``aliasing.scan``'s checks of ``fdef`` and its calls of helpers changing an argument read after the call; an
    in-place change NumPy would see through another name is refused here. Source srcjax wrote was written from
    functions checked here already (in ANF): none."""
    calls = HelperCalls()
    if is_generated(norm.src.fn):
        return {}, calls
    alias, checked = aliasing.scan(fdef, *changed_arguments.resolvers(norm.src, fdef), deferred=calls.checks,
                                   returns=calls.returns)
    if alias is not None:
        what, hint = aliasing.describe(alias)
        raise UnsupportedSyntaxError(what, span=norm.span(alias.statement), hint=hint)
    if calls.returns:  # (a helper called only through its variants is not one of the program's functions)
        funcs = [n.value.func for n in walk(fdef.body) if id(n) in calls.returns]  # type: ignore[attr-defined]
        uses = [n for n in walk(fdef.body) if isinstance(n, cst.Name)]
        norm.unreserved |= {f.value for f in funcs if isinstance(f, cst.Name) and
                            sum(u.value == f.value for u in uses) == sum(g.value == f.value for g in funcs)}
    return checked, calls


def returning(src: FunctionSource) -> cst.FunctionDef:
    """The function's definition, where it is a helper's variant that returns the parameters it changes too
    (:func:`returned_call`): each ``return v`` as ``return (v, b)``, and ``return (None, b)`` at the end."""
    fdef = src.fdef
    params = getattr(src.fn, RETURNS, ())
    if not params:
        return fdef
    names = [cst.Element(cst.Name(p)) for p in params]

    class Returns(cst.CSTTransformer):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fdef  # (a nested def's returns are its own)

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def leave_Return(self, original: cst.Return, updated: cst.Return) -> cst.Return:
            value = updated.value if updated.value is not None else cst.Name("None")
            made = updated.with_changes(value=cst.Tuple(elements=[cst.Element(value), *names]))
            if original in src.positions:
                src.positions[made] = src.positions[original]
            return made

    out = fdef.visit(Returns())
    assert isinstance(out, cst.FunctionDef)
    _same_positions(fdef, out, src.positions)
    body = list(out.body.body)
    last = body[-1] if body else None
    if not (isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return)):
        body.append(cst.SimpleStatementLine(body=[cst.Return(value=cst.Tuple(
            elements=[cst.Element(cst.Name("None")), *names]))]))
    return out.with_changes(body=out.body.with_changes(body=body))


def _same_positions(a: cst.CSTNode, b: cst.CSTNode, positions: dict[cst.CSTNode, Any]) -> None:
    """Give the nodes of ``b`` (``a`` rebuilt, its returns changed) the positions of ``a``'s (errors are located)."""
    todo = [(a, b)]
    while todo:
        x, y = todo.pop()
        if x in positions:
            positions[y] = positions[x]
        if not isinstance(x, cst.Return):
            todo += zip(x.children, y.children)


def returned_call(norm: Normalizer, s: cst.BaseSmallStatement) -> bool:
    """``fill(b, x)`` (or ``y = fill(b, x)``) of a helper that changes ``b`` in place, read after the call under
    that name only: ``fill_1, b = fill'(b, x)``, ``fill'`` the helper's variant that returns ``b`` too (NumPy's
    change, which srcjax's immutable arrays bind again). False for any other statement."""
    pairs = norm.helper_calls.returns.get(id(s))
    if not pairs:
        return False
    call = s.value  # type: ignore[attr-defined]
    fn = {**norm.src.fn.__globals__, **norm.src.closure}[call.func.value]  # (the helper as the scan found it)
    params = tuple(p for _, p in pairs)
    key = (fn, params)
    variant = _VARIANTS.get(key)
    if variant is None:
        variant = _VARIANTS[key] = copy_function(fn)
        setattr(variant, RETURNS, params)
    name = norm.fresh(f"{fn.__name__}_changes")
    norm.bindings[name] = variant
    value = call.with_changes(func=cst.Name(name))
    if call in norm.src.positions:
        norm.src.positions[value] = norm.src.positions[call]
    flat, _ = norm.flat(value)  # (first: the helper's name is taken before a temporary is named)
    first = s.targets[0].target if isinstance(s, cst.Assign) else cst.Name(norm.fresh(f"{fn.__name__}_result"))
    target = cst.Tuple(elements=[cst.Element(first), *[cst.Element(cst.Name(n)) for n, _ in pairs]])
    norm.assign(norm.target(target), flat, s)  # type: ignore[arg-type]
    return True


def statement_checks(norm: Normalizer, s: cst.BaseSmallStatement) -> None:
    """After the statement ``s`` (normalized): ``t = in_place(t, t, alias="...", rank=0)`` for each argument ``t``
    a helper it calls changes by ``t op= v``, read after it."""
    for name, what in norm.helper_calls.checks.get(id(s), ()):
        args = [cst.Arg(cst.Name(name)), cst.Arg(cst.Name(name)),
                cst.Arg(cst.SimpleString(repr(what)), keyword=cst.Name("alias"), equal=_TIGHT),
                cst.Arg(cst.Integer("0"), keyword=cst.Name("rank"), equal=_TIGHT)]
        norm.assign(cst.Name(name), cst.Call(func=cst.Name(IN_PLACE), args=args), s)
