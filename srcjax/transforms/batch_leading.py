"""vmap of batched source: the helpers that take the number of batch axes in front, called again with one more.

Batched source (a vmap's program, a ``jacfwd``'s batched JVP) calls helpers of :mod:`srcjax.batched` whose
effect depends only on ranks: ``batch_align(x, y)`` gives the batched ``x`` as many per-example axes as ``y``
has, ``batch_axes(x)`` names every per-example axis of ``x``, ``batch_size_of(x)`` reads the batch size. An
outer vmap that batches their operands need not batch their bodies (a ``batch_align_vmap`` written out,
normalized, simplified, lowered): per outer example ``b`` the call is the same helper on ``x[b]``, which is the
helper on ``x`` told that one more batch axis stands in front. Each has a leading form taking those axes
(``batch_align_at``, ``batch_axes_at``, ``batch_axis_at``, ``batch_squeeze_at``: helpers of their own, so that the
plain helpers, which every batched program calls, keep their signatures and their lowering's cost), so the outer
vmap writes one call::

    pow_1 = (x - batch_align(y, x)) ** 2              # inner: y batched, x not
    s = np.sum(pow_1, axis=batch_axes(pow_1))

becomes, with ``x`` batched by the outer vmap (and not ``y``)::

    batch_align_1 = batch_align_at(y, x, 0, 1)        # y's rank is known per example: not batched
    pow_1 = (batch_align(x, batch_align_1) - batch_align_1) ** 2
    s = np.sum(pow_1, axis=batch_axis(batch_axes_at(pow_1, 1), pow_1))

The result is again a call of the leading form, so a third vmap takes the same rule. A call whose lead is not a
literal, or whose operand is a container batched leaf by leaf, keeps the general road (its body batched).
A Jacobian's reshapes of its batched JVPs and VJPs
(:mod:`srcjax.jacobian_adjoint`) take the same rule for their ``lead`` (``jacobian_rows``: ``lead_out`` too, for
an ``out`` the outer vmap batches). The helpers whose effect is not a rank's (``batch_matmul``, the indexing
helpers) merge the two batch axes instead (:mod:`.batch_nested`). :func:`rule` gives the rule of a helper (None
for every other function).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from .. import batched, jacobian_adjoint
from .batch_state import State, any_batched, fully_batched

__all__ = ["rule"]

Rule = Callable[[dict[str, str], dict[str, State]], tuple[str, State] | None]


def _literal(text: str | None, default: Any) -> Any:
    if text is None:
        return default
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return ...


def _plain(st: State) -> bool | None:
    """A state that is one flag for the whole value (an array; a container batched whole), None otherwise."""
    if isinstance(st, bool):
        return st
    return True if fully_batched(st) else None if any_batched(st) else False


def _align(b: int) -> Rule:
    """``batch_align_at(x, y, lead_x, lead_y)`` (of ``batch_align``: leads 0, 0; of ``batch_align_b``, whose ``y``
    the inner vmap batches: 0, ``b`` = 1): each lead grown by the outer vmap's axis where it batches the operand.
    The result is batched where ``x`` is (``y`` is read for its rank only)."""
    def apply(args: dict[str, str], states: dict[str, State]) -> tuple[str, State] | None:
        bx, by = _plain(states.get("x", False)), _plain(states.get("y", False))
        lx, ly = _literal(args.get("lead_x"), 0), _literal(args.get("lead_y"), b)
        if bx is None or by is None or type(lx) is not int or type(ly) is not int or "x" not in args or \
                "y" not in args:
            return None
        return f"batch_align_at({args['x']}, {args['y']}, {lx + bx}, {ly + by})", bx
    return apply


def _counted(name: str, operand: str, extra: tuple[str, ...], param: str) -> Rule:
    """``name(*extra, operand, param + 1)`` for a helper whose result (static: axes, a size) reads ``operand`` for
    its shape only: where the outer vmap batches the operand, one more of its axes stands in front (``param``
    absent: 0, the helper without leading axes)."""
    def apply(args: dict[str, str], states: dict[str, State]) -> tuple[str, State] | None:
        st = _plain(states.get(operand, False))
        n = _literal(args.get(param), 0)
        if not st or type(n) is not int or operand not in args or \
                any(p not in args or any_batched(states.get(p, False)) for p in extra):
            return None
        return f"{name}({', '.join(args[p] for p in (*extra, operand))}, {n + 1})", False
    return apply


def _rows(fn: Any) -> Rule:
    """``fn(bars, out, lead, lead_out)`` (a reverse-mode Jacobian's reshape of its batched VJP's cotangents):
    each lead grown where the outer vmap batches its operand (every leaf); batched where ``bars`` is."""
    def apply(args: dict[str, str], states: dict[str, State]) -> tuple[str, State] | None:
        b, o = _plain(states.get("bars", False)), _plain(states.get("out", False))
        lead, lead_out = _literal(args.get("lead"), 0), _literal(args.get("lead_out"), 0)
        if b is None or o is None or type(lead) is not int or type(lead_out) is not int or "bars" not in args or \
                "out" not in args:
            return None
        return f"{fn.__name__}({args['bars']}, {args['out']}, {lead + b}, {lead_out + o})", b
    return apply


def _leading(name: str, operand: str, refs: tuple[str, ...]) -> Rule:
    """``name(operand, *refs, lead + 1)`` where the operand is batched, every leaf, and the references (shapes,
    static arguments) are not (``batch_squeeze(a, axis)``; a hessian's jacfwd over its jacrev's JVP)."""
    def apply(args: dict[str, str], states: dict[str, State]) -> tuple[str, State] | None:
        lead = _literal(args.get("lead"), 0)
        if operand not in args or any(r not in args for r in refs) or type(lead) is not int or \
                not fully_batched(states.get(operand, False)) or any(any_batched(states.get(r, False)) for r in refs):
            return None
        return f"{name}({', '.join(args[p] for p in (operand, *refs))}, {lead + 1})", True
    return apply


_RULES: dict[Any, Rule] = {
    # (the rank helpers: their leading form, a helper of its own, called again with one more)
    batched.batch_align: _align(0),
    batched.batch_align_b: _align(1),
    batched.batch_align_at: _align(0),
    batched.batch_axes: _counted("batch_axes_at", "x", (), "lead"),
    batched.batch_axes_at: _counted("batch_axes_at", "x", (), "lead"),
    batched.batch_axis: _counted("batch_axis_at", "x", ("axis",), "lead"),
    batched.batch_axis_at: _counted("batch_axis_at", "x", ("axis",), "lead"),
    batched.batch_squeeze: _leading("batch_squeeze_at", "a", ("axis",)),
    batched.batch_squeeze_at: _leading("batch_squeeze_at", "a", ("axis",)),
    # (the size is the operand's axis `axis`: the outer vmap's axis in front moves it by one)
    batched.batch_size_of: _counted("batch_size_of", "x", (), "axis"),
    jacobian_adjoint.jacobian_rows: _rows(jacobian_adjoint.jacobian_rows),
    jacobian_adjoint.jacrev_blocks: _rows(jacobian_adjoint.jacrev_blocks),
    jacobian_adjoint.jacfwd_blocks: _leading("jacfwd_blocks", "ts", ("out", "x")),
    jacobian_adjoint.jacfwd_blocks_bar: _leading("jacfwd_blocks_bar", "c", ("ts", "out", "x")),
}


def rule(fn: Any) -> Rule | None:
    """The outer batching rule of a helper taking its leading batch axes, None for any other function. The rule
    (of the call's argument texts and states, by parameter) gives the batched call's text and its result's state,
    or None where it does not apply (the helper's body is batched then, as any helper's)."""
    return _RULES.get(fn)
