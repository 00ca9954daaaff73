"""Liveness of variables in a normalized function, for the functionalization of its control flow.

:class:`Liveness` answers which names are live (may be read before being bound
again) before a block, after each statement of a block, and at the head of a
loop (a fixed point over the body, ``break`` live-out being the names live
after the loop and ``continue`` live-out those live at its head). What a
nested ``def`` of the user's reads is *pinned*: live everywhere, since a call
may come anywhere. Reads skip a comprehension's own variables
(:func:`free_reads`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst

from .names import names_in, target_names
from .names import walk as walk_nodes
from .syntax import LOOPS, assigned_in, orelse_stmts, params_of, statements_in

__all__ = ["Liveness", "free_names", "free_reads", "read_outside"]

LoopExits = tuple[set[str], set[str]]  # the innermost Python loop: (live at its head, live after it)


def free_names(fdef: cst.FunctionDef) -> set[str]:
    """Names a nested ``def`` reads from the enclosing function (when it is called)."""
    own = {p.name.value for p in params_of(fdef)} | set(assigned_in(fdef.body.body))
    return set(names_in(fdef.body, skip_targets=True)) - own


class Liveness:
    """Live names in one function body (``body``: the function's statements, searched for nested ``def``s).

    Results are memoized by ``id()`` of statement and expression nodes; every node
    asked about is kept alive here so that no id is reused while this object lives.
    """

    def __init__(self, body: Sequence[Any]) -> None:
        self.keep: list[cst.CSTNode] = []
        self._reads: dict[int, set[str]] = {}
        self._heads: dict[tuple[int, frozenset[str]], frozenset[str]] = {}
        # names a nested `def` of the user's reads when called: live at every point (calls may come anywhere)
        self.pinned: set[str] = set()
        for st in statements_in(body):
            if isinstance(st, cst.FunctionDef):
                self.pinned |= free_names(st)

    def reads(self, node: cst.CSTNode) -> set[str]:
        r = self._reads.get(id(node))
        if r is None:
            r = self._reads[id(node)] = free_reads(node)
            self.keep.append(node)
        return r

    def live_in(self, stmts: Sequence[Any], out: set[str], loop: LoopExits | None) -> set[str]:
        """Names live before ``stmts``, given ``out`` live after them."""
        return self.backward(stmts, out, loop)[0]

    def live_after(self, stmts: Sequence[Any], out: set[str], loop: LoopExits | None) -> list[set[str]]:
        """For each statement of ``stmts``, the names live after it, given ``out`` live after them all."""
        return self.backward(stmts, out, loop)[1]

    def backward(self, stmts: Sequence[Any], out: set[str],
                 loop: LoopExits | None) -> tuple[set[str], list[set[str]]]:
        after: list[set[str]] = [set()] * len(stmts)
        live = set(out)
        for i in range(len(stmts) - 1, -1, -1):
            after[i] = live
            live = self.live_stmt(stmts[i], live, loop) | self.pinned
        return live, after

    def live_stmt(self, s: Any, out: set[str], loop: LoopExits | None) -> set[str]:
        if isinstance(s, cst.SimpleStatementLine):
            live = set(out)
            for small in reversed(s.body):
                if isinstance(small, cst.Assign):
                    for t in small.targets:
                        live -= set(target_names(t.target))
                    live |= self.reads(small)
                elif isinstance(small, (cst.Return, cst.Raise)):
                    live = set(self.reads(small))
                elif isinstance(small, cst.Break):
                    live = set(loop[1]) if loop is not None else live
                elif isinstance(small, cst.Continue):
                    live = set(loop[0]) if loop is not None else live
                else:
                    live |= self.reads(small)
            return live
        if isinstance(s, cst.If):
            return (self.reads(s.test) | self.live_in(s.body.body, out, loop)
                    | self.live_in(orelse_stmts(s), out, loop))
        if isinstance(s, LOOPS):
            head = self.loop_head(s, out)
            return head | self.reads(s.iter) if isinstance(s, cst.For) else head
        if isinstance(s, cst.FunctionDef):  # what it reads is pinned live everywhere (see __init__)
            return set(out) - {s.name.value}
        return set(out) | self.reads(s)

    def after(self, stmts: Sequence[Any], target: Any, out: set[str], loop: LoopExits | None) -> set[str] | None:
        """Names live after the statement ``target`` (somewhere in ``stmts``), given ``out`` live after
        ``stmts``; None: ``target`` is not in them."""
        for st, live in zip(stmts, self.live_after(stmts, out, loop)):
            if st is target:
                return live
            if isinstance(st, cst.If):
                found = self.after(st.body.body, target, live, loop)
                found = found if found is not None else self.after(orelse_stmts(st), target, live, loop)
            elif isinstance(st, LOOPS):
                head = self.loop_head(st, live)
                found = self.after(st.body.body, target, head, (head, live))
            else:
                found = None
            if found is not None:
                return found
        return None

    def loop_head(self, s: cst.For | cst.While, out: set[str]) -> set[str]:
        """Names live at the head of a loop (before a ``for`` binds its target)."""
        key = (id(s), frozenset(out))
        hit = self._heads.get(key)
        if hit is not None:
            return set(hit)
        test = self.reads(s.test) if isinstance(s, cst.While) else set()
        tgt = set(target_names(s.target)) if isinstance(s, cst.For) else set()
        head = set(out) | test
        while True:
            body = self.live_in(s.body.body, head, (head, set(out)))
            new = set(out) | test | (body - tgt)
            if new == head:
                self._heads[key] = frozenset(head)
                self.keep.append(s)
                return head
            head = new


def read_outside(body: Sequence[Any], loop: cst.For | cst.While) -> set[str]:
    """Names ``loop``'s body binds that are live after ``loop`` in the function whose statements are ``body``:
    read after it, or at the head of an enclosing loop, before being bound again (the last iteration's binding)."""
    out = Liveness(body).after(body, loop, set(), None)
    return set(assigned_in(loop.body.body)) & (out or set())


_COMPREHENSIONS = (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)
_COMPREHENSION_TYPES = frozenset(_COMPREHENSIONS)  # (libcst's node classes are final)


def free_reads(node: cst.CSTNode) -> set[str]:
    """The names ``node`` reads from its scope: not a comprehension's own variables (``k`` in
    ``[f(k) for k in range(3)]`` is not the ``k`` of an enclosing loop)."""
    found = set(names_in(node, skip_targets=True))
    comps: list[Any] = [n for n in walk_nodes(node) if type(n) in _COMPREHENSION_TYPES]  # (exact types)
    if not comps:
        return found
    bound: set[str] = set()
    for c in comps:
        f: Any = c.for_in
        while f is not None:
            bound |= set(target_names(f.target))
            f = f.inner_for_in
    cut: Any = node.visit(_OuterParts())  # comprehensions cut to their iterables
    outside = set(names_in(cut, skip_targets=True))
    return (found - bound) | (found & outside)


class _OuterParts(cst.CSTTransformer):
    """Each comprehension replaced by its first iterable (the only part evaluated in the enclosing scope)."""

    def on_leave(self, original: Any, updated: Any) -> Any:
        if isinstance(updated, _COMPREHENSIONS):
            return updated.for_in.iter
        return updated
