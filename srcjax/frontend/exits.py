"""``break``/``continue`` as flags: one rewrite for the functionalization and for reverse mode.

:func:`exit_flags` replaces a loop body's own ``break``/``continue`` statements
(:func:`own_exits`: not those of nested loops) by assignments of flags and
guards what follows them: ``stop`` (for ``break``) is set to ``False`` before
the loop and joins the loop's carry; ``skip`` (for ``continue``) is reset to
``False`` at the top of each iteration. After an ``if`` that may set a flag,
the rest of the body runs under ``if not_<flag>:``::

    for i in range(n):          stop = False
        x = step(x)             for i in range(n):
        d = done(x)                 x = step(x)
        if d:             ->        d = done(x)
            break                   if d:
        y = f(x)                        stop = True
                                    not_stop = np.logical_not(stop)
                                    if not_stop:
                                        y = f(x)

Both users share this rewrite and differ only in how the loop stops once
``stop`` is set:

- :mod:`srcjax.frontend.functionalize` makes the loop a ``srcjax.lax.while_loop``
  whose condition is ``<test> and np.logical_not(stop)``: no iteration runs
  after a ``break``;
- :mod:`srcjax.transforms.bounded` keeps a Python ``for`` over a bound (reverse
  mode needs a fixed trip count) and guards the whole iteration with
  ``if not_stop:``: the iterations after a ``break`` run and do nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import libcst as cst

from ..core import Span
from .binding_times import DYNAMIC
from .restructure import walk
from .syntax import dotted_call, orelse_stmts

if TYPE_CHECKING:
    from .functionalize import Functionalizer

__all__ = ["exit_flags", "own_exits"]


def own_exits(stmts: Sequence[Any]) -> tuple[list[cst.Break], list[cst.Continue]]:
    """The ``break``/``continue`` statements of the loop whose body is ``stmts`` (not of nested loops)."""
    breaks: list[cst.Break] = []
    conts: list[cst.Continue] = []
    for s, depth in walk(stmts):
        if depth == 0 and isinstance(s, cst.Break):
            breaks.append(s)
        elif depth == 0 and isinstance(s, cst.Continue):
            conts.append(s)
    return breaks, conts


def exit_flags(f: Functionalizer, body: list[Any], carry: list[str], pre: list[Any],
               sp: Span | None) -> tuple[list[Any], str | None]:
    """Replace ``break``/``continue`` by flags; ``stop`` joins the carry, ``skip`` is reset each iteration."""
    breaks, conts = own_exits(body)
    flags: dict[str, str] = {}
    stop = None
    if breaks:
        stop = flags["break"] = f.fresh("stop")
        f.bta.declare(stop, DYNAMIC)
        pre.append(f.line(stop, cst.Name("False"), f.span(breaks[0]) or sp))
        carry.append(stop)
    if conts:
        flags["continue"] = f.fresh("skip")
        f.bta.declare(flags["continue"], DYNAMIC)
    if flags:
        body = _guard(f, body, flags, sp)
    if conts:
        body = [f.line(flags["continue"], cst.Name("False"), sp)] + body
    return body, stop


def _guard(f: Functionalizer, stmts: Sequence[Any], flags: dict[str, str], sp: Span | None) -> list[Any]:
    """Replace this loop's ``break``/``continue`` by flags; guard what follows them."""
    out: list[Any] = []
    for i, s in enumerate(stmts):
        if isinstance(s, cst.SimpleStatementLine):
            kept: list[Any] = []
            for small in s.body:
                if isinstance(small, (cst.Break, cst.Continue)):
                    flag = flags["break" if isinstance(small, cst.Break) else "continue"]
                    if kept:
                        out.append(f.mark(s.with_changes(body=kept), f.span(s)))
                    out.append(f.line(flag, cst.Name("True"), f.span(s) or sp))
                    return out
                kept.append(small)
            out.append(s)
            continue
        if isinstance(s, cst.If):
            breaks, conts = own_exits([s])
            if not breaks and not conts:
                out.append(s)
                continue
            body = _guard(f, s.body.body, flags, sp)
            other = orelse_stmts(s)
            new_other = _guard(f, other, flags, sp)
            orelse: cst.If | cst.Else | None = None
            if s.orelse is not None:
                orelse = new_other[0] if isinstance(s.orelse, cst.If) and len(new_other) == 1 and \
                    isinstance(new_other[0], cst.If) else cst.Else(body=f.indented(new_other))
            out.append(f.mark(s.with_changes(body=f.indented(body), orelse=orelse), f.span(s)))
            rest = list(stmts[i + 1:])
            if rest:
                isp = f.span(s) or sp
                used = ([flags["break"]] if breaks else []) + ([flags["continue"]] if conts else [])
                if len(used) == 2:
                    done = f.fresh("done")
                    f.bta.declare(done, DYNAMIC)
                    out.append(f.line(done, dotted_call("np.logical_or", *map(cst.Name, used)), isp))
                    used = [done]
                go = f.fresh(f"not_{used[0]}")
                f.bta.declare(go, DYNAMIC)
                out.append(f.line(go, dotted_call("np.logical_not", cst.Name(used[0])), isp))
                out.append(f.mark(cst.If(test=cst.Name(go), body=f.indented(_guard(f, rest, flags, sp))),
                                     isp))
            return out
        out.append(s)  # a nested loop: its exits are its own
    return out
