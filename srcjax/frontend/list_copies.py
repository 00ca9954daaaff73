"""``list(xs)`` and ``tuple(xs)`` of a parameter read as the comprehensions they are: ``[item for item in xs]``,
``tuple([item for item in xs])``.

Derivatives follow a comprehension over a list item by item, but refused the builtin call ("cannot differentiate
through `list(ws)` yet"), where jax runs it: ``grad`` and ``vmap(grad)`` of ``u = list(ws)`` (``ws`` a list of
arrays, the argument differentiated or mapped) now match jax. Only a parameter of the function itself is rewritten
(not a name a nested scope binds again), and only where ``list`` / ``tuple`` are Python's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import libcst as cst

from .names import assigned_names, walk
from .read import FunctionSource, Located
from .syntax import params_of

_COPIES = ("list", "tuple")


def rewrite(src: FunctionSource) -> FunctionSource:
    """``src`` with its copies of parameters written as comprehensions (``src`` itself where there are none)."""
    if src.filename.startswith("<srcjax.") or (getattr(src.fn, "__module__", None) or "").startswith("srcjax."):
        return src  # (srcjax's output, or its own helpers: the user's copies are read where the user wrote them)
    params = {p.name.value for p in params_of(src.fdef)} - set(assigned_names([src.fdef.body]))
    if not params or any(n in params or n in src.globals for n in _COPIES) or not _has_copy(src.fdef, params):
        return src
    fdef = src.fdef.visit(_Copies(params, src.positions))
    assert isinstance(fdef, cst.FunctionDef)
    return dataclasses.replace(src, fdef=fdef)


def _copy_of(node: cst.CSTNode, params: set[str]) -> str | None:
    """The parameter ``node`` copies (``list(ws)``), or None."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in _COPIES and \
            len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star and \
            isinstance(node.args[0].value, cst.Name) and node.args[0].value.value in params:
        return node.args[0].value.value
    return None


def _has_copy(fdef: cst.FunctionDef, params: set[str]) -> bool:
    """Whether ``fdef`` copies a parameter (one walk: no visitor class made per call)."""
    return any(n.__class__ is cst.Call and _copy_of(n, params) is not None for n in walk(fdef.body))


class _Copies(Located):
    def __init__(self, params: set[str], positions: dict[Any, Any]) -> None:
        super().__init__(positions)
        self.params = params
        self.depth = 0  # (inside a nested scope: a lambda, a def, a comprehension, whose names may differ)

    def visit_FunctionDef(self, n: cst.FunctionDef) -> None:
        self.depth += 1

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        self.depth -= 1
        return self.located(original, updated)  # type: ignore[no-any-return]

    def visit_Lambda(self, n: cst.Lambda) -> None:
        self.depth += 1

    def leave_Lambda(self, original: cst.Lambda, updated: cst.Lambda) -> cst.Lambda:
        self.depth -= 1
        return self.located(original, updated)  # type: ignore[no-any-return]

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        name = _copy_of(original, self.params)
        if name is None or self.depth > 1:  # (depth 1: the function itself)
            return self.located(original, updated)  # type: ignore[no-any-return]
        comp = cst.ListComp(elt=cst.Name("item"), for_in=cst.CompFor(target=cst.Name("item"), iter=cst.Name(name)))
        self.located(original, comp)
        out = comp if original.func.value == "list" else updated.with_changes(  # type: ignore[attr-defined]
            args=[cst.Arg(comp)])
        return self.located(original, out)  # type: ignore[no-any-return]

