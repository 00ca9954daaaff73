"""vmap of batched source: the indexing helpers of :mod:`srcjax.batched` with a key batched again.

Batched source (a ``jacfwd``'s batched JVP, a vmap inside a vmap) calls ``batch_getitem(x, key)``,
``batch_index``, ``batch_index_update``, ``batch_index_add``, ``batch_index_cleared`` and
``batch_winning_writes``: per-example indexing whose plan (:func:`srcjax.batched._index_plan`) is Python
logic on the key's elements.
An outer ``vmap`` that batches an element of the key (a loop counter frozen per example by a
batched ``while``, an index argument mapped by the outer vmap) cannot batch that logic; it does
not need to (nor where it leaves the key alone: a body batched then hands a third vmap that logic).
Per outer example ``b`` and inner example ``c`` the call is the same per-example indexing, so the
two batch axes are merged into one (``batch_merge``: ``(B_outer * B_inner, ...)``, an operand
batched by one level only is broadcast along the other), the same helper runs once on the merged batch,
and its result is split again (``batch_split``: ``(B_outer, B_inner, ...)``)::

    getitem_dot = batch_getitem(x_dot, mod)          # inner: x_dot batched, mod a per-example int

becomes, with ``mod`` batched by the outer vmap::

    batch_merge_1 = batch_merge(x_dot, False, True, batch_size, np.shape(x_dot)[0])
    batch_merge_2 = batch_merge(mod, True, False, batch_size, np.shape(x_dot)[0])
    batch_index_1 = batch_index(batch_merge_1, (batch_merge_2,), True, (True,))
    getitem_dot = batch_split(batch_index_1, batch_size)

The result is again a ``batch_index``/``batch_index_*`` call, so a third vmap takes the same rule.
:func:`rule` gives the rule of a helper (None for every other function: its body is batched).
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import batched as batched_helpers
from ..frontend.names import text_names
from . import batch_leading
from .batch_state import State, Tree, any_batched, item, parts_of

if TYPE_CHECKING:
    from .batch import FunctionWriter

__all__ = ["called", "rule"]


class _Spec:
    """Where a helper's operands, key and flags are: ``operands`` (parameter, parameter of its inner
    ``batched`` flag, or True: always batched), ``size`` (the parameter holding the inner batch size),
    ``flags`` (the parameter of the key elements' flags); ``keyed``: False for a helper without a key
    (``batch_take``: its other parameters are static, passed on as they are); ``summed``: the operand a
    transpose's result is summed to over the batch where it is not batched (``batch_index_bar``'s ``x``):
    merged batched at both levels, the result summed over the inner level after the split where the inner
    vmap did not batch it."""

    def __init__(self, call: str, operands: tuple[tuple[str, str | bool], ...], size: str | None,
                 flags: str | None, keyed: bool = True, summed: str | None = None) -> None:
        self.call, self.operands, self.size, self.flags, self.keyed = call, operands, size, flags, keyed
        self.summed = summed


_SPECS: dict[Any, _Spec] = {
    batched_helpers.batch_getitem: _Spec("batch_index", (("x", True),), None, None),
    batched_helpers.batch_index: _Spec("batch_index", (("x", "bx"),), None, "flags"),
    batched_helpers.batch_index_update: _Spec("batch_index_update", (("x", "bx"), ("value", "bv")), "n", "flags"),
    batched_helpers.batch_index_add: _Spec("batch_index_add", (("z", "bz"), ("g", "bg")), "n", "flags"),
    batched_helpers.batch_index_cleared: _Spec("batch_index_update", (("g", "bg"),), "n", "flags"),
    # the writes of `x[key] = v` that land (reverse mode of an index update): a mask per example
    batched_helpers.batch_winning_writes: _Spec("batch_winning_writes", (("x", "bx"),), "n", "flags"),
    batched_helpers.batch_index_lands: _Spec("batch_index_lands", (("x", "bx"),), "n", "flags"),
    # gathers whose index plan is Python logic on the flags (``(slice(None),) * axis + (indices,)``)
    batched_helpers.batch_take: _Spec("batch_take", (("a", "ba"), ("indices", "bi")), None, None, False),
    # a product per example (its branches are Python logic on the operands' ranks and flags)
    batched_helpers.batch_matmul: _Spec("batch_matmul", (("x1", "b1"), ("x2", "b2")), None, None, False),
    batched_helpers.batch_take_along_axis: _Spec("batch_take_along_axis", (("arr", "ba"), ("indices", "bi")), None,
                                                 None, False),
    # per-example sums and their transpose (linear helpers: a derivative calls them again, never their bodies)
    batched_helpers.batch_unbroadcast: _Spec("batch_unbroadcast", (("g", "bg"), ("x", "bx")), None, None, False),
    batched_helpers.batch_unbroadcast_bar: _Spec("batch_unbroadcast_bar", (("c", True), ("g", "bg")), None, None,
                                                 False),
    batched_helpers.batch_broadcast_like: _Spec("batch_broadcast_like", (("t", "bt"), ("y", "by")), None, None, False),
    batched_helpers.batch_broadcast_like_bar: _Spec("batch_broadcast_like_bar", (("c", True), ("t", "bt")), None,
                                                    None, False),
    batched_helpers.batch_expand_reduced: _Spec("batch_expand_reduced", (("g", "bg"), ("a", "ba")), None, None,
                                                False),
    batched_helpers.batch_expand_reduced_bar: _Spec("batch_expand_reduced_bar", (("c", True), ("g", "bg")), None,
                                                    None, False),
    # the indexing helpers' transposes (reverse mode's rules for them: transforms/linear_calls.py)
    batched_helpers.batch_index_bar: _Spec("batch_index_bar", (("g", True), ("x", "bx")), None, "flags",
                                           summed="x"),
    batched_helpers.batch_index_add_bar: _Spec("batch_index_add_bar", (("g", True), ("v", "bv")), None, "flags",
                                               summed="v"),
    batched_helpers.batch_index_update_bar: _Spec("batch_index_update_bar", (("g", True), ("x", "bx"),
                                                                             ("value", "bv")), "n", "flags",
                                                  summed="value"),
}


def called(w: FunctionWriter, fn: Any, args: dict[str, str], states: dict[str, State],
           ind: int) -> tuple[str, State] | None:
    """The outer vmap's call of a helper of batched source and its result's state, by the helper's own rule
    (:mod:`.batch_leading`'s, then :func:`rule`'s); None for any other function, or where no rule applies."""
    leading = batch_leading.rule(fn)
    if leading is not None:
        out = leading(args, states)
        if out is not None:
            return out
    nested = rule(fn)
    merged = nested(w, args, states, ind) if nested is not None else None
    return (merged, True) if merged is not None else None


def rule(fn: Any) -> Callable[[FunctionWriter, dict[str, str], dict[str, State], int], str | None] | None:
    """The outer batching rule of a :mod:`srcjax.batched` indexing helper, None for any other function (the
    helpers taking their leading batch axes: :mod:`.batch_leading`). The rule gives the batched call's text, or
    None where it does not apply (a key that is not a tuple, a container operand): the helper's body is batched
    then, as any helper's."""
    spec = _SPECS.get(fn)
    if spec is None:
        return None

    def apply(w: FunctionWriter, args: dict[str, str], states: dict[str, State], ind: int) -> str | None:
        return _merged(w, spec, args, states, ind)

    return apply


def _literal(text: str | None) -> Any:
    try:
        return ast.literal_eval(text) if text is not None else None
    except (ValueError, SyntaxError, TypeError):
        return ...


def _key_elements(w: FunctionWriter, key: str) -> list[tuple[str, bool]] | None:
    """The key's elements with whether the outer vmap batches each (a tuple literal, a name holding a
    tuple, or one index)."""
    parts = parts_of(key)
    if parts is not None and key.lstrip().startswith("("):
        return [(e, any(any_batched(w.state(n)) for n in text_names(e))) for e in parts.values()]
    st = w.state(key) if key.isidentifier() else any(any_batched(w.state(n)) for n in text_names(key))
    if isinstance(st, Tree):
        if st.kind != "tuple":
            return None
        return [(item(key, k), any_batched(v)) for k, v in st.items]
    return [(key, any_batched(st))]


def _merged(w: FunctionWriter, spec: _Spec, args: dict[str, str], states: dict[str, State], ind: int) -> str | None:
    if not spec.keyed:
        return _merged_plain(w, spec, args, states, ind)
    key = args.get("key")
    if key is None:
        return None
    elems = _key_elements(w, key)
    if elems is None:  # (a key the outer vmap leaves alone is merged too: a body batched here would hand a third
        return None  # vmap its Python logic on the key, `item_key(key, flags)`, with the key batched then)
    if not any(b for _, b in elems) and not (key.lstrip().startswith("(") and parts_of(key) is not None):
        return None  # (unless it is a name that may hold a whole tuple of slices: `(key,)` would nest it)
    inner_flags = _literal(args.get(spec.flags)) if spec.flags is not None else None
    if inner_flags is ...:
        return None
    if inner_flags is None or isinstance(inner_flags, bool):
        inner_flags = (bool(inner_flags),) * len(elems)
    if len(inner_flags) != len(elems):
        return None
    operands: list[tuple[str, bool, bool]] = []  # (text, batched by the outer vmap, by the inner one)
    for p, flag in spec.operands:
        inner = flag if isinstance(flag, bool) else _literal(args.get(flag))
        if not isinstance(inner, bool) or isinstance(states.get(p), Tree):
            return None  # (a flag that is not a literal; a container operand: the helper's own body)
        operands.append((args[p], any_batched(states.get(p, False)), inner))
    outer = w.size
    inner_size = args.get(spec.size) if spec.size is not None else None
    if inner_size is None:  # the inner batch size from an operand (or key element) the inner vmap batches
        source = [(t, o) for t, o, i in operands if i] + [(e, o) for (e, o), i in zip(elems, inner_flags) if i]
        if not source:
            return None
        t, o = source[0]
        inner_size = w.names.fresh("inner_size")  # (of its first leaf: an operand may be a list, a cotangent)
        w.emit(f"{inner_size} = batch_size_of({t}{', 1' if o else ''})", ind)

    def merge(text: str, o: bool, i: bool) -> str:
        if not (o or i):
            return text
        st = w.state(text) if text.isidentifier() else None
        if isinstance(st, Tree) and st.kind == "tuple":  # a tuple key built in a loop, batched whole by the
            items = [merge(item(text, k), any_batched(v), i) for k, v in st.items]  # inner vmap: item by item
            name = w.names.fresh("batch_merge")
            w.emit(f"{name} = ({''.join(t + ', ' for t in items)})", ind)
            return name
        name = w.names.fresh("batch_merge")
        w.emit(f"{name} = batch_merge({text}, {o}, {i}, {outer}, {inner_size})", ind)
        return name

    def merged_operand(p: str, text: str, o: bool, i: bool) -> str:
        if p != spec.summed or o or i:
            return merge(text, o, i)
        name = w.names.fresh("batch_merge")  # (batched at neither level: broadcast along both, summed after)
        w.emit(f"{name} = batch_merge({text}, False, False, {outer}, {inner_size})", ind)
        return name

    new_ops = [merged_operand(p, t, o, i) for (p, _), (t, o, i) in zip(spec.operands, operands)]
    new_flags = [o or i or p == spec.summed for (p, _), (_, o, i) in zip(spec.operands, operands)]
    key_m = [merge(e, o, i) for (e, o), i in zip(elems, inner_flags)]
    key_flags = tuple(o or i for (_, o), i in zip(elems, inner_flags))
    key_text = "(" + ", ".join(key_m) + ",)"
    size_m = f"{outer} * {inner_size}"
    if spec.summed is not None:
        return _merged_transpose(w, spec, args, new_ops, new_flags, key_text, key_flags, size_m, operands, ind)
    if spec.call == "batch_index":
        call = f"batch_index({new_ops[0]}, {key_text}, {new_flags[0]}, {key_flags})"
    elif spec.call in ("batch_winning_writes", "batch_index_lands"):
        call = f"{spec.call}({new_ops[0]}, {key_text}, {size_m}, {new_flags[0]}, {key_flags})"
    elif len(new_ops) == 1:  # batch_index_cleared of an array: its zeros written in
        call = f"batch_index_update({new_ops[0]}, {key_text}, 0.0, {size_m}, {new_flags[0]}, False, {key_flags})"
    else:
        mode = args.get("mode", "'drop'")  # (batch_index_add's: a read's transpose clamps, "clip")
        call = f"{spec.call}({new_ops[0]}, {key_text}, {new_ops[1]}, {size_m}, {new_flags[0]}, {new_flags[1]}, " \
               f"{key_flags}{'' if mode.strip(chr(39) + chr(34)) == 'drop' else ', ' + mode})"
    out = w.names.fresh(spec.call)
    w.emit(f"{out} = {call}", ind)
    return f"batch_split({out}, {outer})"


def _merged_transpose(w: FunctionWriter, spec: _Spec, args: dict[str, str], new_ops: list[str], new_flags: list[bool],
                      key_text: str, key_flags: tuple[bool, ...], size_m: str, operands: list[tuple[str, bool, bool]],
                      ind: int) -> str:
    """A transpose (``spec.summed``) called once on the merged batch, its parameters in the signature's order; the
    result split again, and summed over the inner level where the inner vmap did not batch the operand."""
    fn = next(f for f, s in _SPECS.items() if s is spec)
    new = {"mode": "'drop'", **args}  # (batch_index_add_bar's mode, where the call leaves it out)
    for (p, flag), text, batched in zip(spec.operands, new_ops, new_flags):
        new[p] = text
        if isinstance(flag, str):
            new[flag] = str(batched)
    new["key"] = key_text
    if spec.flags is not None:
        new[spec.flags] = str(key_flags)
    if spec.size is not None:
        new[spec.size] = size_m
    out = w.names.fresh(spec.call)
    params = [p for p in inspect.signature(fn).parameters if p != "mode" or new[p].strip("'\"") != "drop"]
    w.emit(f"{out} = {spec.call}({', '.join(new[p] for p in params)})", ind)
    inner = next(i for (p, _), (_, _, i) in zip(spec.operands, operands) if p == spec.summed)
    return f"batch_split({out}, {w.size})" if inner else f"np.sum(batch_split({out}, {w.size}), axis=1)"


def _merged_plain(w: FunctionWriter, spec: _Spec, args: dict[str, str], states: dict[str, State],
                  ind: int) -> str | None:
    """A helper without a key (``batch_take(a, indices, axis, ba, bi)``) under an outer vmap: its array
    operands' batch axes merged, the helper called once on the merged batch with the same static
    arguments (None where the outer vmap batches one of those: the helper's body is batched then)."""
    fn = next(f for f, s in _SPECS.items() if s is spec)
    params = list(inspect.signature(fn).parameters)
    flag_params = {flag for _, flag in spec.operands if isinstance(flag, str)}
    operand_params = {p for p, _ in spec.operands}
    if any(p not in args for p in params if p not in flag_params):
        return None  # (a parameter left to its default)
    for p in params:
        if p in args and p not in operand_params and (isinstance(states.get(p), Tree) or
                                                       any_batched(states.get(p, False))):
            return None  # (a static argument batched by the outer vmap)
    operands: list[tuple[str, str, bool, bool]] = []  # (parameter, text, batched by the outer vmap, by the inner)
    for p, flag in spec.operands:
        inner = flag if isinstance(flag, bool) else _literal(args.get(flag))
        if p not in args or not isinstance(inner, bool) or isinstance(states.get(p), Tree):
            return None
        operands.append((p, args[p], any_batched(states.get(p, False)), inner))
    if not any(o for _, _, o, _ in operands):
        return None
    source = [(t, o) for _, t, o, i in operands if i]
    if not source:
        return None
    outer = w.size
    t, o = source[0]
    inner_size = w.names.fresh("inner_size")
    w.emit(f"{inner_size} = np.shape({t})[{1 if o else 0}]", ind)
    new = dict(args)
    for (p, flag), (_, text, o, i) in zip(spec.operands, operands):
        if o or i:
            name = w.names.fresh("batch_merge")
            w.emit(f"{name} = batch_merge({text}, {o}, {i}, {outer}, {inner_size})", ind)
            new[p] = name
        if isinstance(flag, str):
            new[flag] = str(o or i)
    out = w.names.fresh(spec.call)
    w.emit(f"{out} = {spec.call}({', '.join(new[p] for p in params)})", ind)
    return f"batch_split({out}, {outer})"
