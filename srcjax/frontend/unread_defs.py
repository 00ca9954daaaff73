"""Nested ``def``\\ s nothing reads, left out of a normalized function's body.

The front end writes a nested ``def`` for the function ``srcjax.vjp`` returns (``y, vjp_fun = srcjax.vjp(g, x)``)
and keeps a user's nested ``def`` that a transformation inside takes (``srcjax.vmap(vjp_fun)(cts)``,
``srcjax.grad(loss)(w)``): both are lifted to functions of their own (:mod:`.closures`), which the calls name,
so the ``def`` in the caller's body may be read by nothing. Such a ``def`` at the top level of the body goes:
the generated source shows what runs (a ``def`` with decorators, or one whose name any other statement or its
own body reads, stays).
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from .names import names_in

__all__ = ["without_unread_defs"]


def without_unread_defs(body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """``body`` less the undecorated nested ``def``\\ s at its top level whose names nothing reads."""
    defs = [k for k, s in enumerate(body) if s.__class__ is cst.FunctionDef and not s.decorators]  # type: ignore[attr-defined]
    if not defs:
        return list(body)
    read: set[str] = set()
    for k, s in enumerate(body):
        if isinstance(s, cst.FunctionDef) and k in defs:
            read.update(names_in(s.body))
        else:
            read.update(names_in(s, skip_targets=True))
    return [s for k, s in enumerate(body) if k not in defs or s.name.value in read]  # type: ignore[attr-defined]
