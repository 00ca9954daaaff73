"""The in-place checks of a function's statements (frontend/aliasing.py's ``scan``), and the checks of its calls
of user helpers that change a parameter by ``p op= v`` (frontend/changed_arguments.py), decided by the argument's
type: ``scale(t, 3.0)`` of ``def scale(t, s): t *= s`` binds a Python number again inside the helper (the caller's
``t`` is unchanged) and changes an array in place, a 0-d ``ndarray`` too (the caller's ``t`` changes: srcjax's
immutable arrays cannot). Where the caller reads ``t`` after the call, the call is followed by
``t = in_place(t, t, alias="...", rank=0)``: a weakly typed number runs, any array is refused at the call
(``primitives/in_place.py``). Input: the user's function; output: the normalizer's statements after the call."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ..core import UnsupportedSyntaxError
from . import aliasing, returned_alias
from .in_place_updates import IN_PLACE
from .read import is_generated

if TYPE_CHECKING:
    from .normalize import Normalizer

__all__ = ["scan", "statement_checks"]

_TIGHT = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def scan(norm: Normalizer, fdef: cst.FunctionDef) -> tuple[dict[int, tuple[str, int]],
                                                           dict[int, list[tuple[str, str]]]]:
    """``aliasing.scan``'s checks of ``fdef`` and the calls whose helper's change its argument's type decides (id
    of the statement -> (the argument, the change)); an in-place change NumPy would see through another name is
    refused here. Source srcjax wrote was written from functions checked here already (in ANF): none."""
    if is_generated(norm.src.fn):
        return {}, {}
    deferred: dict[int, list[tuple[str, str]]] = {}
    alias, checked = aliasing.scan(fdef, *returned_alias.resolvers(norm.src, fdef), deferred=deferred)
    if alias is not None:
        what, hint = aliasing.describe(alias)
        raise UnsupportedSyntaxError(what, span=norm.span(alias.statement), hint=hint)
    return checked, deferred


def statement_checks(norm: Normalizer, s: cst.BaseSmallStatement) -> None:
    """After the statement ``s`` (normalized): ``t = in_place(t, t, alias="...", rank=0)`` for each argument ``t``
    a helper it calls changes by ``t op= v``, read after it."""
    for name, what in norm.helper_checks.get(id(s), ()):
        args = [cst.Arg(cst.Name(name)), cst.Arg(cst.Name(name)),
                cst.Arg(cst.SimpleString(repr(what)), keyword=cst.Name("alias"), equal=_TIGHT),
                cst.Arg(cst.Integer("0"), keyword=cst.Name("rank"), equal=_TIGHT)]
        norm.assign(cst.Name(name), cst.Call(func=cst.Name(IN_PLACE), args=args), s)
