"""Nested functions whose free names a generated loop or branch body binds again (checked by functionalize.py).

Python's closures read a name's current binding when they run: ``def h(): return a.sum()`` before ``for i in
range(3): a = a * 2; out += h()`` reads each new ``a``. A loop or an ``if`` on data becomes a generated function
(``loop_body``) whose ``a`` is its own local, so ``h``, still closed over the caller's ``a``, would read the value
from before the loop: a different answer. :func:`stale_read` finds that case so it is refused, not silently
different. A ``def`` inside the body is made again with the body's names and is not concerned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst

from .names import names_in
from .names import walk as walk_nodes
from .syntax import assigned_in

__all__ = ["stale_read"]


def _params(fd: cst.FunctionDef | cst.Lambda) -> set[str]:
    ps = fd.params
    return {p.name.value for p in [*ps.posonly_params, *ps.params, *ps.kwonly_params]} | {
        p.name.value for p in (ps.star_arg, ps.star_kwarg) if isinstance(p, cst.Param)}


def _local_functions(body: Sequence[Any], inside: set[int]) -> dict[str, set[str]]:
    """Each ``def`` (or ``name = lambda ...``) of ``body`` outside the nodes ``inside``: its free names."""
    out: dict[str, set[str]] = {}
    for st in body:
        for n in walk_nodes(st):
            if id(n) in inside:
                continue
            if type(n) is cst.FunctionDef:  # (exact types: libcst's node classes are final)
                free = set(names_in(n.body)) - _params(n) - set(assigned_in(n.body.body))
                out[n.name.value] = free
            elif type(n) is cst.Assign and isinstance(n.value, cst.Lambda) and len(n.targets) == 1 and \
                    isinstance(n.targets[0].target, cst.Name):
                out[n.targets[0].target.value] = set(names_in(n.value.body)) - _params(n.value)
    return out


def stale_read(function_body: Sequence[Any], stmts: Sequence[Any]) -> tuple[str, str] | None:
    """``(function, name)``: a local function defined outside ``stmts`` (a loop's or branch's body), called in
    them, reading ``name``, which ``stmts`` bind again; None if there is none."""
    inside = {id(n) for st in stmts for n in walk_nodes(st)}
    functions = _local_functions(function_body, inside)
    if not functions:
        return None
    bound = set(assigned_in(stmts))
    called = {n.func.value for st in stmts for n in walk_nodes(st)
              if isinstance(n, cst.Call) and isinstance(n.func, cst.Name)}
    for name in sorted(called & set(functions)):
        both = sorted(functions[name] & bound)
        if both:
            return name, both[0]
    return None
