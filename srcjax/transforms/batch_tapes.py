"""A derivative's tape batched as a whole keeps its unbatched values unbatched (issue #15).

vmap tracks a tape push by push (:class:`~.batch_state.Stack`) while it can. Where it cannot (a helper
called twice with different static arguments pushes different values: ``dense(..., "gelu")`` then
``dense(..., "none")``; a static ``if`` whose branches push different counts: ``np.diff(x, append=...)``
of srcjax's ``diff_operand``), the tape is batched as a whole (state ``True``, every pop batched). Broadcasting
every saved value then is not only wasteful (a weight copied per example) but loses what is static: a
flag the backward half tests in a Python ``if``, an axis a comprehension reads (``[sh[ax] for sh in shapes]``);
a second ``vmap`` (``vmap(vjp)``, ``vmap(jacrev)``, ``vmap(hessian)``) refused them or ran both branches.

The rule: a value pushed on a tape batched as a whole stays as it is where it is unbatched, slot by slot.
Derivative code pushes tuple literals (``_tape.append((eq, w, x))``) and pops them into as many names
(``eq_saved, w, x = _tape.pop()``), or a value saved before it is rebound whole, popped into one name
(``_tape.append(p)``, ``p = _tape.pop()``: :data:`SINGLE`), so a tuple's arity and a position in it (a
*slot*) match a pop to its pushes; the function's name, without its ``_fwd``/``_bwd`` and later suffixes
(:func:`family`), tells apart rows of one arity of different helpers. :class:`Slots` keeps, per such key,
the slots some push fills with a batched value, over the whole program (every helper, every tape): a push
broadcasts its unbatched values there only, a pop binds the other slots unbatched. Pushes and pops are
written in any order, so a pop reads what is known and a push that finds a slot batched that a pop read as
unbatched makes the program be written again (:class:`Relearn`), knowing it; the sets only grow, so this
ends; a key popped and never pushed (or pushed and never popped) makes it be written again keyed by arity
alone (:func:`paired`). Only pops of a list batched whole read the slots: a list followed push by push
gives each value its own state. Where a tape is used otherwise (a value pushed whole on a cotangent tape,
whose pops into one name pop tuples; the list broadcast whole) the rule is off for the program
(``opaque``): every value batched, as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from ..adjoint import is_saved_list_name
from ..frontend.names import code, walk
from . import batch_popped
from .batch_popped import single_kind
from .batch_state import Repeated, Stack, State, Tree, any_batched, join

if TYPE_CHECKING:  # pragma: no cover
    from .batch import FunctionWriter


Key = tuple[int, str]
"""A row's arity (or :data:`SINGLE`) and the family of the function pushing or popping it (:func:`family`)."""


@dataclass
class Slots:
    """Per key (a row's arity and its function's family), the slots some push onto a tape batched as a whole
    fills with a batched value."""

    batched: dict[Key, frozenset[int]] = field(default_factory=dict)
    read: set[Key] = field(default_factory=set)  # keys a pop has bound by these sets
    pushes: set[Key] = field(default_factory=set)  # (the keys pushed and popped in this writing: see paired)
    pops: set[Key] = field(default_factory=set)
    opaque: bool = False  # a tape used otherwise: every value batched
    # a push in this program left an unbatched value unbroadcast (written before the rule was turned off: a
    # tuple pushed on a cotangent tape and popped whole, `saved_bar = _tape_bar.pop()`, reads every slot batched)
    kept_unbatched: bool = False
    by_family: bool = True  # False: keyed by arity alone (a pop found in no family of a push: see paired)

    def again(self) -> None:
        """Before the program is written again: what a writing read is forgotten, what was learned kept."""
        self.read.clear()


SINGLE = -1
"""The "arity" of a value pushed whole (``_tape.append(y)``, a value saved before it is rebound) and popped
into one name (``y = _tape.pop()``): reverse mode saves and restores such a value in that form at both ends,
and pushes every other row of a tape as a tuple literal popped into as many names (``reverse_ad``), so on a
tape or a tangent tape (:func:`single_kind`) a pop into one name pops a value pushed whole."""


_HALF = re.compile(r"_(fwd|bwd|vmap|jvp)(?=_|$)|_\d+(?=_|$)")


def family(w: FunctionWriter, k: int, name: str | None = None) -> Key:
    """The key of a row of arity ``k`` pushed or popped in ``w``'s function: reverse mode pushes a helper's rows
    in its forward half (``prod_others_fwd``) and pops them in its backward half (``prod_others_bwd``), and
    later transformations name both halves alike (``_jvp``, ``_vmap``, numbered variants), so the function's
    name without its ``_fwd``/``_bwd``/number parts keeps rows of the same arity of different helpers apart
    (``cumprod_terms``' ``ax + 1`` and ``jacfwd_blocks``' batched array, both slot 1 of 8). Sound only if every
    pop's family has pushes of its arity and the other way round: :func:`paired` checks it.

    A value pushed whole is keyed by its name too (``name``: ``_tape.append(k)``, ``k = index_key(_tape.pop())``),
    as reverse mode saves and restores it under the name it is rebound to: a loop's counter pushed unbatched
    beside its batched array (``_tape.append(x)``) stays an integer, which a slice ``x[..., :k]`` needs."""
    slots: Slots = w.b.tape_slots
    if not slots.by_family:
        return (k, "")
    fam = _HALF.sub("", w.nf.fdef.name.value)
    return (k, f"{fam}:{name}" if k == SINGLE and name is not None else fam)


def paired(slots: Slots) -> None:
    """After the program is written: if a pop's key has no push or a push's key no pop (a helper's halves named
    otherwise than :func:`family` expects), the program is written again keyed by arity alone."""
    if slots.by_family and not slots.opaque and slots.pushes != slots.pops:
        slots.by_family = False
        slots.batched = {}
        raise Relearn(slots)


class Relearn(Exception):
    """A push found a slot batched that a pop read as unbatched (or the rule was turned off after a pop
    used it): the program is written again with what was learned."""

    def __init__(self, slots: Slots) -> None:
        super().__init__("tape slots learned")
        self.slots = slots


def _elements(value: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    if type(value) is cst.Tuple and not any(type(e) is cst.StarredElement for e in value.elements):
        return [e.value for e in value.elements]
    return None


def turn_off(slots: Slots) -> None:
    """The rule cannot be kept for this program (a tape used otherwise than push and pop by tuples)."""
    if not slots.opaque:
        slots.opaque = True
        if slots.read or slots.kept_unbatched:
            raise Relearn(slots)


def whole(w: FunctionWriter, expr: str, have: State = False) -> None:
    """A tape used whole (its values broadcast, popped into one name): the rule is off (not for a tape known
    to be empty: nothing broadcast)."""
    if is_saved_list_name(expr) and have != Stack(()):
        w.wholes.append(expr)  # (applied once the function's batched values settled: see settled)


def settled(w: FunctionWriter) -> None:
    """The function's body is written for good (not a try before its lists were found batched: a list
    parameter it needs batched, which the caller passes batched in the call written again): its tapes used
    whole turn the rule off."""
    again = any(p in w.forced and w.param_states.get(p) is not True for p in w.params)
    if w.wholes and not again:
        turn_off(w.b.tape_slots)


def pushed(w: FunctionWriter, lst: str, value: cst.BaseExpression, state: State) -> str:
    """The value ``lst.append(value)`` pushes on a tape batched as a whole: batched slot by slot."""
    slots: Slots = w.b.tape_slots
    elems = _elements(value) if is_saved_list_name(lst) else None
    single = elems is None and single_kind(lst)
    if (elems is None and not single) or slots.opaque:
        if is_saved_list_name(lst):
            turn_off(slots)
        if elems is not None and slots.opaque:  # (a flag or a size proved static stays as pushed: batch_popped)
            keep = batch_popped.static_positions(w, lst, len(elems))
            if keep:
                parts = [batch_popped.kept(w, e, keep[i]) if i in keep else w.convert(code(e), w.value_state(e), True)
                         for i, e in enumerate(elems)]
                return "(" + ", ".join(parts) + ("," if len(elems) == 1 else "") + ")"
        return w.convert(code(value), state, True)
    elems = [value] if elems is None else elems
    states = [state] if single else [w.value_state(e) for e in elems]
    k = family(w, SINGLE if single else len(elems), code(value) if single and type(value) is cst.Name else None)
    slots.pushes.add(k)
    have = slots.batched.get(k, frozenset())
    now = have | {i for i, s in enumerate(states) if any_batched(s)}
    if now != have:
        slots.batched[k] = frozenset(now)
        if k in slots.read:
            raise Relearn(slots)
    slots.kept_unbatched = slots.kept_unbatched or len(now) < len(elems)
    parts = [w.convert(code(e), s, True) if i in now else code(e) for i, (e, s) in enumerate(zip(elems, states))]
    return parts[0] if single else "(" + ", ".join(parts) + ("," if len(elems) == 1 else "") + ")"


def whole_pop(w: FunctionWriter, expr: str) -> bool:
    """Whether ``expr`` pops a list batched as a whole (its pushes batched slot by slot), not one followed push
    by push (a :class:`~.batch_state.Stack`: the value popped has its own state, exactly), nor a recursive
    function's tape in state ``False``; a recursive function's tape batched at every level
    (``Repeated((True,))``) is batched as a whole."""
    if not expr.endswith(".pop()"):
        return False
    have = w.state(expr[:-len(".pop()")])
    return have is True or (isinstance(have, Repeated) and have.entries[0] is True)


def popped(w: FunctionWriter, lst: str, names: list[str], single: bool = False) -> list[State] | None:
    """The states of ``names`` bound by ``names = lst.pop()`` of a tape batched as a whole (``single``: one
    name bound to a value pushed whole; None: every one batched, the rule is off)."""
    slots: Slots = w.b.tape_slots
    if slots.opaque and not single:  # (the rule off: the values the pushes prove static stay as pushed)
        keep = batch_popped.static_positions(w, lst, len(names))
        return [i not in keep for i in range(len(names))] if keep else None
    if not is_saved_list_name(lst) or slots.opaque or (single and not single_kind(lst)):
        return None
    k = family(w, SINGLE if single else len(names), restored_name(w, names[0]) if single else None)
    slots.read.add(k)
    slots.pops.add(k)
    have = slots.batched.get(k, frozenset())
    return [i in have for i in range(len(names))]


def restored_name(w: FunctionWriter, name: str) -> str:
    """The name a value popped whole into ``name`` is restored to: ``k`` of ``pop = _tape.pop()`` then
    ``k = index_key(pop)`` (an integer saved whole, normalized into two statements), else ``name``."""
    for node in walk(w.nf.fdef):
        if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name \
                and type(node.value) is cst.Call and code(node.value.func) == "index_key" and \
                len(node.value.args) == 1 and code(node.value.args[0].value) == name:
            return node.targets[0].target.value
    return name


def needs_size(params: list[str], states: tuple[State, ...]) -> bool:
    """Whether a batched helper's only batched parameters are tapes batched whole, which may be empty or
    hold unbatched values first, slot by slot (a recursive function's too, ``Repeated`` of ``True``; or a tape
    followed push by push whose last batched push is such a value, ``(out, destination, ...)``: seed 1343 of
    tests/test_transform_compose_random.py): the caller passes the batch size."""
    def whole(s: State) -> bool:
        if isinstance(s, Repeated):
            return bool(s.entries) and s.entries[0] is True
        if isinstance(s, Stack):
            return any_batched(s) and [e for e in s.entries if any_batched(e)][-1] is True
        return s is True
    return any(whole(s) and is_saved_list_name(p) for p, s in zip(params, states))


def sized(params: cst.Parameters, size: str, table: dict[str, str], name: str) -> str:
    """``params`` with the batch size as a keyword-only parameter (noted in ``table`` for the callers)."""
    table[name] = size
    star = params.star_arg if type(params.star_arg) is not cst.MaybeSentinel else cst.ParamStar()
    return code(params.with_changes(star_arg=star, kwonly_params=[*params.kwonly_params, cst.Param(cst.Name(size))]))


def append(w: FunctionWriter, s: cst.Expr, call: cst.Call, ind: int) -> None:
    """``lst.append(v)``: pushed as the list's state says (a recursive function's tape: one state; a list
    followed value by value: each value's own; a list batched whole: slot by slot, :func:`pushed`)."""
    assert type(call.func) is cst.Attribute and type(call.func.value) is cst.Name
    lst = call.func.value.value
    arg = code(call.args[0].value)
    ast_ = w.value_state(call.args[0].value)
    have = w.state(lst)
    if isinstance(have, Repeated):  # (a recursive function's tape: each value in one state)
        e = have.entries[0]  # (a value in state False has any structure: never packed to e's keys)
        if e is True and is_saved_list_name(lst):  # (a tape batched whole at every level: slot by slot)
            w.emit(f"{lst}.append({pushed(w, lst, call.args[0].value, ast_)})", ind)
            return
        need = True if ast_ is False and isinstance(e, Tree) and any_batched(e) else join(ast_, e)
        if need != e and (any_batched(need) or any_batched(e)):
            w.grown[lst] = join(w.grown.get(lst, e), need)
        w.emit(f"{lst}.append({w.convert(arg, ast_, e, items=ast_ is False)})", ind)
        return
    if isinstance(have, (Stack, Tree)) and (not isinstance(have, Tree) or have.kind == "list"):
        entries = have.entries if isinstance(have, Stack) else tuple(v for _, v in have.items)
        if lst in w.forced and ast_ is not True:  # a list used as a whole: every value batched
            w.emit(f"{lst}.append({pushed(w, lst, call.args[0].value, ast_)})", ind)
            ast_ = True
        else:
            w.emit(code(s), ind)  # each value keeps its own state (see batch_state.Stack)
        w.st[lst] = Stack((*entries, ast_))
        return
    if any_batched(ast_) or lst in w.forced or have is True:  # (a list of batched values)
        if lst not in w.forced:
            w.forced.add(lst)
        w.emit(f"{lst}.append({pushed(w, lst, call.args[0].value, ast_)})", ind)
        w.st[lst] = True
        return
    w.emit(code(s), ind)
