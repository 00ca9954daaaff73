"""vmap of recursive helpers: what the batcher assumes of a call it is still writing.

A helper is batched once per (function, argument states) (:meth:`batch.Batcher.function`). A call of a
helper that is being written (recursion, direct or through other helpers) cannot wait for its result:

- **its result's state** is an assumption, refined to a fixed point: first nothing batched, then the
  join of the assumption and what the function returned, written again until the two agree (the
  states are a finite lattice), so each call sees what the function really returns, neither less
  (a batched value read as one example's) nor more (an unmapped derivative output found mapped);
- **the parameters it needs batched on entry** (lists it appends batched values to) are refined alike;
- **lists it pushes to or pops from** (a derivative's tape) cannot be followed value by value
  (:class:`batch_state.Stack`): how many values a recursion pushes depends on its depth. A function on a
  cycle of the call graph takes its list parameters as one state for every value (``False``: none
  batched, ``True``: all batched, the caller batching the list from the start when it holds values of
  both kinds), and leaves them so for its caller.

Helpers written while an assumption was too small are dropped before the next attempt
(:class:`Snapshot`), so nothing written from a wrong assumption is reused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import libcst as cst

from ..adjoint import is_saved_list_name
from ..frontend.names import names_in, walk
from . import batch_control, batch_copies
from .batch_errors import BatchingError
from .batch_state import (
    Repeated,
    Stack,
    State,
    Tree,
    any_batched,
    batched_leaf,
    batched_leaves,
    element,
    fully_batched,
    item,
    join,
)

if TYPE_CHECKING:
    from ..frontend.normalize import NormalizedFunction
    from ..frontend.program import Program
    from .batch import Batcher

__all__ = ["Grown", "Snapshot", "batch_size_expr", "fixed_point", "list_states", "list_uses",
           "on_cycle"]

MAX_ROUNDS = 8


def on_cycle(program: Program, name: str, cache: dict[str, bool]) -> bool:
    """Whether program function ``name`` can reach itself through calls (any name of a program function
    its source mentions counts as a call: a function passed as an argument may be called)."""
    hit = cache.get(name)
    if hit is not None:
        return hit
    functions = program.functions

    def callees(n: str) -> set[str]:
        nf = functions.get(n)
        return set() if nf is None else {m for m in names_in(nf.fdef.body) if m in functions}

    seen: set[str] = set()
    todo = list(callees(name))
    found = False
    while todo:
        n = todo.pop()
        if n == name:
            found = True
            break
        if n not in seen:
            seen.add(n)
            todo.extend(callees(n))
    cache[name] = found
    return found


def list_uses(program: Program, name: str, cache: dict[str, tuple[bool, bool]]) -> tuple[bool, bool]:
    """Whether ``name`` or a program function it reaches appends to (pops from) a list it was given."""
    hit = cache.get(name)
    if hit is not None:
        return hit
    functions = program.functions
    push = pop = False
    seen: set[str] = set()
    todo = [name]
    while todo:
        n = todo.pop()
        nf = functions.get(n)
        if n in seen or nf is None:
            continue
        seen.add(n)
        params = {p.name.value for p in nf.fdef.params.params}
        for node in walk(nf.fdef.body):
            if type(node) is cst.Call and type(node.func) is cst.Attribute and \
                    type(node.func.value) is cst.Name and node.func.value.value in params:
                push = push or node.func.attr.value == "append"
                pop = pop or node.func.attr.value == "pop" and not node.args
        todo.extend(m for m in names_in(nf.fdef.body) if m in functions)
    cache[name] = (push, pop)
    return push, pop


def list_states(params: list[str], states: tuple[State, ...], tapes: dict[tuple[str, str], State],
                function: str, uses: tuple[bool, bool]) -> tuple[tuple[State, ...], set[str], set[str],
                                                                 dict[str, State]]:
    """The argument states of a recursive function with each list (:class:`Stack`) as one state for all
    the values it pushes or pops (:class:`Repeated`); the list parameters; those the caller must batch
    whole first (values in different states); the lists' states after the call.

    A function that pushes (a forward half) starts a segment of its own on top of the list, in the state
    learned for the parameter (``tapes``), left on the caller's list as one entry; one that pops (a
    backward half) takes the segment on top. Otherwise the list is one state for every value."""
    out: list[State] = []
    lists: set[str] = set()
    mixed: set[str] = set()
    after: dict[str, State] = {}
    push, pop = uses
    for p, s in zip(params, states):
        if isinstance(s, Stack) and not isinstance(s, Repeated):
            lists.add(p)
            if push and not pop:
                seg = Repeated((tapes.get((function, p), False),))
                s, after[p] = seg, s.push(seg)
            elif pop and not push and s.entries and isinstance(s.entries[-1], Repeated):
                s, after[p] = s.entries[-1], Stack(s.entries[:-1])
            else:
                e = element(s)
                if s.entries and all(v == e for v in s.entries):
                    s = after[p] = Repeated((e,))
                else:
                    if any_batched(s) and not fully_batched(s):
                        mixed.add(p)
                    s = after[p] = any_batched(s)
        elif isinstance(s, Repeated):
            lists.add(p)
        out.append(s)
    return tuple(out), lists, mixed, after


class Grown(BatchingError):
    """A recursive function pushed to a list parameter values more batched than the list's state: the
    function that made the list (empty) learns the state (:meth:`learn`) and is written again."""

    def __init__(self, function: str, grown: dict[str, State]) -> None:
        super().__init__(f"vmap: the recursive function {function} pushes values batched differently to a list "
                         "it was given (a derivative's tape: batched at some depths, not at others)",
                         hint="pass in_axes=None for the arguments that need not be mapped, or loop over the "
                              "examples in Python")
        self.function, self.grown = function, grown

    def learn(self, tapes: dict[tuple[str, str], State], params: list[str], given: tuple[State, ...]) -> bool:
        """Whether the lists grown started their segment here (then their states are learned)."""
        st = dict(zip(params, given))
        if not all(isinstance(st.get(p), Stack) and not isinstance(st[p], Repeated) for p in self.grown):
            return False
        new = False
        for p, e in self.grown.items():
            j = join(tapes.get((self.function, p), False), e)
            new = new or j != tapes.get((self.function, p), False)
            tapes[(self.function, p)] = j
        return new  # (nothing new: refused, not written again)


class Snapshot:
    """What the batcher had written before a function was first tried: restored to drop what an attempt
    wrote (the helpers written from a wrong assumption, or before an error)."""

    def __init__(self, b: Batcher) -> None:
        self.b = b
        self.written = set(b.written)
        self.texts = set(b.texts)
        self.customs = set(b.customs)
        self.taken = set(b.names.taken)

    def restore(self, keep: Any = None, name: str | None = None) -> None:
        """Forget what was written since (but the entry ``keep``, and the name ``name``)."""
        b = self.b
        for k in [k for k in b.written if k not in self.written and k != keep]:
            del b.written[k]
        for n in [n for n in b.texts if n not in self.texts]:
            del b.texts[n]
            b.origins.pop(n, None)
        for n in [n for n in b.customs if n not in self.customs]:
            del b.customs[n]
        b.names.taken &= self.taken | ({name} if name else set())


Written = tuple[str, State, set[str], dict[str, State]]  # (see Batcher.function)


def fixed_point(b: Batcher, nf: NormalizedFunction, params: list[str], states: tuple[State, ...], key: Any,
                want_return: State | None, lists: set[str]) -> Written | None:
    """Write the batched function (``b.written[key]``); while its own calls (recursion) assumed another
    result state, or other parameters needed batched, than it turned out to have: again, with the join
    of both as the assumption and as the least state its result is brought to. None: it did not settle."""
    reused = batch_copies.reuse(b, nf, key, lists)  # (a library helper's copy, written by an earlier program)
    if reused is not None:
        return reused  # type: ignore[no-any-return]
    outside = batch_copies.outside_names(b, nf, lists)
    snap = Snapshot(b)
    name = b.names.fresh(f"{nf.name}_vmap")
    ret: State = False
    needs: set[str] = set()
    floor = want_return
    for _ in range(MAX_ROUNDS):
        b.written[key] = (name, ret, set(needs), {})
        b.recursed[key] = False
        try:
            out = b.write_function(nf, params, states, name, floor, lists)
        except batch_control.DataTest as e:
            snap.restore()
            b.recursed.pop(key, None)
            if e.function != nf.name:
                raise
            b.data_names.setdefault(nf.name, set()).update(e.names)
            return b.function(nf, states, want_return=want_return)
        except BaseException:
            snap.restore()
            b.recursed.pop(key, None)
            raise
        if not b.recursed.pop(key) or (out[1], out[2]) == (ret, needs):
            b.written[key] = out
            batch_copies.keep(b, nf, key, outside, snap.written, snap.texts, snap.customs, out)
            return out
        ret, needs = join(ret, out[1]), needs | out[2]
        floor = ret if want_return is None else join(want_return, ret)
        snap.restore(name=name)
    snap.restore()
    return None


def _sized(expr: str, st: State) -> str:
    """A path to a part of a value in state ``st`` whose leaves are all batched: the first batched leaf, or a container
    of batched leaves whole (``batch_size_of`` skips the leaves that are None there: the cotangent of an integer
    item, ``(None, g)`` of ``(i, y)``; its first leaf gave None for the batch size)."""
    while isinstance(st, Tree) and not fully_batched(st):
        k, st = next((k, v) for k, v in st.items if any_batched(v))
        expr = item(expr, k)
    return expr


def batch_size_expr(params: list[str], states: tuple[State, ...], lists: set[str]) -> str | None:
    """The batch size in a batched helper: from its first batched parameter that is not a list; else from
    lists (tapes): a recursive function's (:class:`Repeated`, maybe empty on entry: the first non-empty
    one), or the topmost batched value of a list followed value by value."""
    first = next((i for i, (p, s) in enumerate(zip(params, states))  # (a tape batched whole: see batch_tapes)
                  if any_batched(s) and not isinstance(s, Stack) and p not in lists and
                  not (s is True and is_saved_list_name(p))), None)
    if first is not None:
        return f"batch_size_of({_sized(params[first], states[first])})"
    whole = [(p, e) for p, e in ((p, s.entries[0] if isinstance(s, Repeated) else s) for p, s in zip(params, states)
                                 if p in lists and any_batched(s))
             if not (e is True and is_saved_list_name(p))]  # (a tape batched whole, slot by slot: needs_size)
    size = None
    for p, e in reversed(whole):
        z = f"batch_size_of_any(({', '.join(batched_leaves(f'{p}[0]', e))},))"
        size = z if size is None else f"{z} if len({p}) else {size}"
    if size is not None:
        return size
    for p, s in zip(params, states):
        if isinstance(s, Stack) and any_batched(s):
            i = max(k for k, e in enumerate(s.entries) if any_batched(e))
            if s.entries[i] is True and is_saved_list_name(p):
                continue  # (a value pushed batched whole may hold unbatched slots: `destination`; needs_size)
            leaves = batched_leaves(f"{p}[{i - len(s.entries)}]", s.entries[i])
            if len(leaves) > 1:  # (the first may be UNSET: the tangent of a value a branch on data did not compute)
                return f"batch_size_of_any(({', '.join(leaves)},))"
            return f"batch_size_of({batched_leaf(f'{p}[{i - len(s.entries)}]', s.entries[i])})"
    return None
