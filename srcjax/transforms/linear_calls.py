"""Reverse mode's rules for the linear helpers of batched source (:mod:`srcjax.batched`).

A helper call ``y = h(a, ...)`` in source reverse mode differentiates is written as the helper's forward half
(pushing what its backward half needs on the tape) and, in the adjoint, its backward half; inside an ``if`` on
data, where no tape can be written, the helper's body is written out in place instead
(:mod:`.inline_calls`). Two helpers of batched source can take neither road: ``batch_broadcast_items``
recurses on a container's structure, which a body written out in place cannot follow, and
``batch_index_add``'s body is Python logic on index keys. Both are linear in their array operands, so their
cotangents are written directly, as a primitive's are, from the rules below: the primal calls the helper
as it is (nothing saved), and the adjoint reads::

    x_bar = batch_summed_items(y_bar, x, False)          # y = batch_broadcast_items(x, n)
    z_bar = batch_summed_items(y_bar, z, bz)             # y = batch_index_add(z, key, g, n, bz, bg, flags)
    g_bar = batch_index_add_bar(y_bar, key, g, bg, flags)

(``z_bar = y_bar`` where ``bz`` is written ``True``: ``z`` batched already, nothing to sum.)

Each rule is a template in the helper's parameter names and ``out_bar`` (the result's cotangent); what it
reads the adjoint keeps like any value an adjoint reads (the tape, where the primal binds it again).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import libcst as cst

from .. import batched, jacobian_adjoint
from ..frontend.names import code, parse_expression
from .templates import instantiate

if TYPE_CHECKING:
    from ..frontend.program import Program
    from .anf import Op

_CLEARED = "batch_index_cleared(out_bar, key, x, n, True, bx, flags)"  # (the result's cotangent, written slots zero)

# helper -> {parameter: the template of its cotangent}
RULES: dict[Any, dict[str, str]] = {
    batched.batch_broadcast_items: {"x": "batch_summed_items(out_bar, x, False)"},
    # a container's items that flags mark repeated along the batch (its body's tape met an integer item)
    batched.batch_broadcast_parts: {"x": "batch_broadcast_parts_bar(out_bar, x, flags, n)"},
    batched.batch_broadcast_parts_bar: {"c": "batch_broadcast_parts(out_bar, flags, n)"},
    batched.batch_index_add: {"z": "batch_summed_items(out_bar, z, bz)",
                              "g": "batch_index_add_bar(out_bar, key, g, bg, flags, mode)"},
    # gathers and writes at a key (per example): their transposes (srcjax/batched.py), which an outer vmap batches
    # with the rules of transforms/batch_nested.py (their bodies' key logic it cannot)
    batched.batch_index: {"x": "batch_index_bar(out_bar, key, x, bx, flags)"},
    batched.batch_index_bar: {"g": "batch_index(out_bar, key, bx, flags)"},
    batched.batch_index_update: {"x": f"batch_summed_items({_CLEARED}, x, bx)",
                                 "value": "batch_index_update_bar(out_bar, key, x, value, n, bx, bv, flags)"},
    batched.batch_index_cleared: {"g": f"batch_summed_items({_CLEARED}, g, bg)"},  # (its own transpose)
    # per-example sums and broadcasts, each pair the other's transpose (a `_bar` helper reads the result `c` of
    # the helper it transposes for its shape: batched like it; srcjax/batch_sums.py)
    batched.batch_unbroadcast: {"g": "batch_unbroadcast_bar(out_bar, g, bg)"},
    batched.batch_unbroadcast_bar: {"c": "batch_unbroadcast(out_bar, c, bg, True)"},
    batched.batch_broadcast_like: {"t": "batch_broadcast_like_bar(out_bar, t, bt)"},
    batched.batch_broadcast_like_bar: {"c": "batch_broadcast_like(out_bar, c, bt, True)"},
    batched.batch_expand_reduced: {"g": "batch_expand_reduced_bar(out_bar, g, axis, keepdims, bg)"},
    batched.batch_expand_reduced_bar: {"c": "batch_expand_reduced(out_bar, c, axis, keepdims, bg, True)"},
    batched.batch_align: {"x": "np.reshape(out_bar, np.shape(x))"},  # (new length-1 axes, or x itself)
    batched.batch_align_b: {"x": "np.reshape(out_bar, np.shape(x))"},
    batched.batch_align_at: {"x": "np.reshape(out_bar, np.shape(x))"},
    batched.batch_reshape: {"a": "np.reshape(out_bar, np.shape(a))"},
    batched.batch_broadcast: {"x": "batch_summed_items(out_bar, x, False)"},  # (a repeat along a new batch axis)
    # a vmap of batched source: its two batch axes merged into one (broadcast along a level not batched), split again
    batched.batch_merge: {"v": "batch_merge_bar(out_bar, v, outer_batched, inner_batched, outer, inner)"},
    batched.batch_merge_bar: {"c": "batch_merge(out_bar, outer_batched, inner_batched, outer, inner)"},
    batched.batch_split: {"v": "np.reshape(out_bar, np.shape(v))"},
}

# a per-example item (cotangent: a per-example scatter-add into zeros) and the Jacobians' reshapes of their batched
# VJPs and JVPs (each `_bar` the transpose of the helper beside it: srcjax/jacobian_adjoint.py)
RULES.update({
    batched.batch_getitem: {"x": 'batch_index_add(zeros_like(x), key, out_bar, batch_size_of(x), True, True, None, '
                                 '"clip")'},  # (a read's transpose: an index out of range clamped, as the read)
    jacobian_adjoint.jacobian_rows: {"bars": "reshape_like(out_bar, bars)"},
    jacobian_adjoint.reshape_like: {"c": "reshape_like(out_bar, c)"},
    jacobian_adjoint.jacrev_blocks: {"bars": "jacrev_blocks_bar(out_bar, bars, out)"},
    jacobian_adjoint.jacrev_blocks_bar: {"c": "jacrev_blocks(out_bar, out)"},
    jacobian_adjoint.jacfwd_blocks: {"ts": "jacfwd_blocks_bar(out_bar, ts, out, x, lead)"},
    jacobian_adjoint.jacfwd_blocks_bar: {"c": "jacfwd_blocks(out_bar, out, x, lead)"},
})

# the helpers the rules call, by name: every derivative's namespace has them (a derivative of batched source
# written in the user's function, jacrev inside a grad, runs in the user's module, which does not import them)
# (srcjax's own names only: `zeros_like` comes with the adjoint's imports, and a user's own would be shadowed)
CALLED: dict[str, Any] = {n: getattr(batched, n, None) or getattr(jacobian_adjoint, n) for t in RULES.values()
                          for text in t.values() for n in re.findall(r"(?<![\w.])(\w+)\(", text)
                          if n.startswith("batch_") or n in jacobian_adjoint.JACOBIAN_HELPERS}


def rules(program: Program, op: Op) -> dict[str, str] | None:
    """The cotangent rules of the helper a ``call`` Op calls, None for any other call."""
    nf = program.functions.get(op.callee) if op.kind == "call" and op.callee is not None else None
    return RULES.get(getattr(nf, "fn", None)) if nf is not None else None


def callee_has_rules(program: Program, node: cst.BaseExpression) -> bool:
    """Whether ``node`` calls one of these helpers by name (:mod:`.inline_calls` keeps such a call)."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name)):
        return False
    nf = program.functions.get(node.func.value)
    return nf is not None and nf.fn in RULES


def bound_arguments(program: Program, op: Op) -> dict[str, str]:
    """Each parameter of the callee -> the argument's text (defaults written out)."""
    assert op.callee is not None
    fdef = program.functions[op.callee].plain_fdef
    params = [*fdef.params.params, *fdef.params.kwonly_params]
    out = {p.name.value: code(p.default) for p in params if p.default is not None}
    out.update(zip([p.name.value for p in fdef.params.params], op.call_args))
    out.update(op.call_kwargs)
    return out


def adjoint(w: Any, op: Op, g: str, lines: list[str], pad: str, defined: set[str]) -> None:
    """The cotangent ``g`` of the call's result into its active arguments (``w``: reverse_ad.VJP)."""
    templates = rules(w.program, op)
    assert templates is not None
    bound = bound_arguments(w.program, op)
    mapping = {**bound, "out_bar": g}
    for p in w.call_active(op):
        if p in templates:
            text = instantiate(templates[p], mapping)
            if text.startswith(f"batch_summed_items({g}, ") and text.endswith(", True)"):  # (batched: its own)
                text = g
            w.argument_parts(parse_expression(bound[p]), text, lines, pad, defined)
