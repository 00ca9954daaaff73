"""The simplifier's statements and its dead code (:mod:`.simplify`'s, in a file of its own for length).

A :class:`Stmt` is one top-level statement of a function as :mod:`.simplify` reads it: its lines, the names it
reads and binds, whether it is pure and alone on its lines. :func:`dead_code` deletes the pure ones whose names
nothing reads: a name bound once and never read, or one binding of a name bound several times, each time by a
plain top-level ``name = <e>`` (:func:`rebound`), that nothing reads before the next binding or the end (the
``x_bar = index_add(x_bar, ...)`` chain of a primal output that a JVP's tangent-only form drops).
"""

from __future__ import annotations

import ast
from collections import Counter


class Stmt:
    __slots__ = ("node", "start", "end", "solo", "edits", "reads", "deleted", "pure", "targets", "text")

    def __init__(self, node: ast.stmt, start: int, end: int, solo: bool) -> None:
        self.node = node
        self.start = start  # the statement's whole lines
        self.end = end
        self.solo = solo  # alone on its lines: may be deleted
        self.edits: list[tuple[int, int, str]] = []
        self.reads: list[str] = []
        self.deleted = False
        self.pure = False
        self.targets: list[str] = []  # names a dead-code candidate binds
        self.text: str | None = None  # replacement text of the whole statement


def rebound(stmts: list[Stmt], binds: Counter[str], excluded: set[str]) -> dict[str, set[int]]:
    """The names bound more than once (``binds``), every time by a top-level ``name = <e>`` (no parameter,
    no binding in a block or a tuple target; none of ``excluded``): the indices of those statements."""
    if all(v <= 1 for v in binds.values()):
        return {}
    at: dict[str, set[int]] = {}
    for i, st in enumerate(stmts):
        s = st.node
        if s.__class__ is ast.Assign and len(s.targets) == 1 and s.targets[0].__class__ is ast.Name:  # type: ignore[attr-defined]
            n = s.targets[0].id  # type: ignore[attr-defined]
            if binds[n] > 1:
                at.setdefault(n, set()).add(i)
    return {n: ks for n, ks in at.items() if len(ks) == binds[n] and n not in excluded}


def dead_code(stmts: list[Stmt], binds: Counter[str], again: dict[str, set[int]]) -> None:
    """Mark deleted the pure statements whose names nothing reads: bound once (``binds``), or (``again``:
    :func:`rebound`'s) not read before the name's next binding or the end."""
    reads: Counter[str] = Counter()
    for st in stmts:
        if not st.deleted:
            reads.update(st.reads)
    changed = True
    while changed:
        changed = False
        for i in range(len(stmts) - 1, -1, -1):
            st = stmts[i]
            if st.deleted or not st.pure or not st.solo or not st.targets:
                continue
            if all(reads[n] == 0 and binds[n] == 1 for n in st.targets) or \
                    len(st.targets) == 1 and st.targets[0] in again and \
                    _unread_after(stmts, i, st.targets[0], again[st.targets[0]]):
                st.deleted = True
                reads.subtract(st.reads)
                changed = True


def _unread_after(stmts: list[Stmt], i: int, n: str, bindings: set[int]) -> bool:
    """Whether no statement after ``stmts[i]`` reads ``n`` before one binds it again (or the body ends)."""
    for k in range(i + 1, len(stmts)):
        st = stmts[k]
        if st.deleted:
            continue
        if n in st.reads:
            return False
        if k in bindings:
            return True
    return True
