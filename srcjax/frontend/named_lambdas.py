"""Lambdas bound to a name in a function: ``loss = lambda w: np.mean((X @ w - y) ** 2)`` as the ``def`` it is.

A lambda bound once to a local name and called or transformed through it (``srcjax.grad(loss)(w)``, optax's and
example_libraries' idiom) is the nested function ``def loss(w): return np.mean((X @ w - y) ** 2)``: the same
parameters, the same closure (both read the enclosing function's locals when called), so the normalizer and
the transformations take it as they take a nested ``def`` (it was "cannot transform <function loss>: it is of
type LocalFunction" under jit, "cannot differentiate through the nested function `loss`" under grad). Only a
statement of its own (``name = lambda ...:`` alone on its line, positional parameters, with defaults or not)
whose name has no other binding in the function is rewritten; anything else is left as it is. Positions stay the
user's (:class:`.read.Located`).
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any

import libcst as cst

from . import nested_defaults
from .names import body_bindings
from .read import FunctionSource, Located


def rewrite(src: FunctionSource) -> FunctionSource:
    """``src`` with each lambda bound once to a name, on a line of its own, written as a ``def``."""
    code = getattr(src.fn, "__code__", None)
    if code is not None and not _makes_lambda(code):  # (most functions: no walk of the body)
        return src
    bound = body_bindings(src.fdef.body)
    once = {n for n, vs in bound.values.items()
            if len(vs) == 1 and isinstance(vs[0], cst.Lambda) and _plain(vs[0]) and n not in bound.rebound and
            n not in bound.defs}
    if not once:
        return src
    fdef = src.fdef.visit(_AsDefs(once, src.positions))
    assert isinstance(fdef, cst.FunctionDef)
    made = dataclasses.replace(src, fdef=fdef)
    defaults = any(p.default is not None for n in once for p in bound.values[n][0].params.params)  # type: ignore[attr-defined]
    return nested_defaults.rewrite(made) if defaults else made  # (the defaults kept in names before the `def`)


def _makes_lambda(code: types.CodeType) -> bool:
    """Whether the code (or a function nested in it) makes a lambda."""
    return any(isinstance(c, types.CodeType) and (c.co_name == "<lambda>" or _makes_lambda(c)) for c in code.co_consts)


def _plain(lam: cst.Lambda) -> bool:
    """Positional parameters only (a lambda with others is refused as before, at them); with defaults too
    (``f = lambda v, k=3: v ** k``, ``lambda v, s=c: v * s``: the ``def`` nested_defaults.py then reads)."""
    p = lam.params
    return not p.posonly_params and not p.kwonly_params and not isinstance(p.star_arg, cst.Param) and \
        p.star_kwarg is None


class _AsDefs(Located):
    def __init__(self, names: set[str], positions: dict[Any, Any]) -> None:
        super().__init__(positions)
        self.names = names

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine,
                                  updated: cst.SimpleStatementLine) -> Any:
        if len(updated.body) != 1 or not isinstance(s := updated.body[0], cst.Assign) or len(s.targets) != 1:
            return updated
        target, lam = s.targets[0].target, s.value
        if not (isinstance(target, cst.Name) and target.value in self.names and isinstance(lam, cst.Lambda)):
            return updated
        ret = self.located(original, cst.SimpleStatementLine(body=[cst.Return(value=lam.body)]))
        params = lam.params.with_changes(params=[p.with_changes(comma=cst.MaybeSentinel.DEFAULT)
                                                 for p in lam.params.params])
        return self.located(original, cst.FunctionDef(name=target, params=params,
                                                      body=cst.IndentedBlock(body=[ret]),
                                                      leading_lines=updated.leading_lines))
