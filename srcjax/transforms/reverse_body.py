"""The body reverse mode differentiates: the user's function made ready for the tape.

One ``return`` at the end (a loop's by a flag and a result: frontend/loop_returns.py), ``srcjax.lax`` calls
written as ``if``/``for``/``while`` (transforms/inline_lax.py), ``while`` on data as a bounded ``for`` and
``break``/``continue`` as flags (transforms/bounded.py), helpers called in branches on data inlined, and loop
iterables as written. :class:`~.reverse_ad.VJP` reads what :func:`reverse_body` returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst

from ..core import Span, UnsupportedSyntaxError
from ..frontend import loop_returns
from ..frontend.names import Names
from ..frontend.normalize import NormalizedFunction
from ..frontend.program import Program
from ..frontend.restructure import single_exit as _single_exit
from ..frontend.restructure import walk as _walk
from .anf import DifferentiationError, derivative_names, function_names, inline_loop_iterables
from .bounded import bound_loops
from .branch_loops import hoist_branch_loops
from .inline_calls import inline_calls_in_data_branches
from .inline_lax import inline_lax


def single_exit(fdef: cst.FunctionDef, names: Names, spans: dict[int, Any]) -> list[Any]:
    """``fdef``'s body with one ``return`` at the end (a loop's via a flag and a result: frontend/loop_returns.py)."""
    stmts = loop_returns.every_loop(fdef, spans, names.fresh)
    try:
        return _single_exit(stmts, Names(function_names(fdef)).fresh("result"), spans)
    except UnsupportedSyntaxError as e:
        raise DifferentiationError("`return` inside a loop is not supported in reverse mode yet", span=e.span,
                                   hint="break out of the loop with a flag and return after it") from None


def reverse_body(program: Program, nf: NormalizedFunction, max_iters: int | None,
                 active: Sequence[str] = ()) -> tuple[list[Any], dict[int, Span], object, Names]:
    """``nf``'s body for reverse mode, the spans of the nodes the passes made, what keeps those nodes alive while
    their spans are used, and the names the derivative may take (none of the passes' reused). ``active``: the
    parameters differentiated (arrays: a test on them is on data)."""
    body = single_exit(nf.plain_fdef, derivative_names(program, nf, ()), nf.spans)  # (loop returns' flags)
    body = inline_lax(nf, body)  # user srcjax.lax calls -> if/for/while (see transforms/inline_lax.py)
    # while on data -> bounded for; break/continue -> flags (see transforms/bounded.py)
    body, spans, bounder = bound_loops(nf, body, max_iters)
    body = inline_calls_in_data_branches(program, nf, body)
    # loops inside ifs on data: the if as a flag tested inside the loop (see transforms/branch_loops.py)
    body, spans, hoister = hoist_branch_loops(nf, body, spans, active)
    spans = dict(spans)  # (the rebuilt loops' positions: never into nf's own, which outlives these nodes)
    body = inline_loop_iterables(body, spans)  # for i, p in reversed(list(enumerate(xs))): as written
    names = derivative_names(program, nf, body)  # (after the passes: none of their names reused)
    if not body or not isinstance(body[-1], cst.SimpleStatementLine) or \
            not isinstance(body[-1].body[-1], cst.Return):
        raise DifferentiationError(f"{nf.name}: reverse mode needs one `return` at the end of the function",
                                   hint="assign the result to a variable in each branch and return it once")
    for s, _ in _walk(body[:-1]):
        if isinstance(s, cst.Return):
            raise DifferentiationError(f"{nf.name}: `return` inside if/for is not supported in reverse mode "
                                       "yet", hint="assign the result in each branch and return it once")
        assert not isinstance(s, (cst.Break, cst.Continue)), "bound_loops leaves no loop exits"
    return body, spans, (bounder, hoister), names
