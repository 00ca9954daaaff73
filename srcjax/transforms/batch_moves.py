"""The names a branch on batched data only moves into its result: no ``taken`` mark is written for them.

A branch (or a batched ``while``'s step) reads each batched value through ``taken(x, test)``
(srcjax/branch_guard.py): reverse mode masks the cotangent of ``x`` to the examples that take the branch, so
that a branch singular for the others (``a / x`` at ``x == 0``) sends them no ``0 * inf``. A value the branch
only moves, returned as it is or as an item of its returned tuple (``return result, returned, stop``; ``result
= (v, k)`` returned), is selected per example where it leaves the branch (``batch_select``), whose cotangent
is already exactly zero for the examples that do not take it: its mark masks nothing, and is not written
(``stop_3 = taken(stop, gt, False)`` then ``stop = batch_select(gt, True, stop_3)`` read as noise).

Input: a nested function of the functionalized program (a branch of ``srcjax.lax.cond``). Output: the names
its body reads only in such moves. A name read any other way (an operand, a subscript, an unpacking, an
augmented assignment, a nested function's read), or moved into a name that is itself read another way, is
not one.
"""

from __future__ import annotations

import libcst as cst

from ..frontend.names import names_in

__all__ = ["moved_only"]


def moved_only(fdef: cst.FunctionDef) -> frozenset[str]:
    """The names ``fdef``'s body reads only to move them, unchanged, into its returned value (see the module
    docstring): each read is the returned value, an item of a returned tuple, or the value (or an item of the
    tuple) assigned to a single name that is itself only moved."""
    reads: dict[str, int] = {}
    for n in names_in(fdef.body, skip_targets=True):
        reads[n] = reads.get(n, 0) + 1
    into: dict[str, list[str | None]] = {}  # name -> where each of its moves puts it (None: the result)
    for line in fdef.body.body:
        if type(line) is not cst.SimpleStatementLine or len(line.body) != 1:
            continue
        s = line.body[0]
        if type(s) is cst.Return and s.value is not None:
            dest, value = None, s.value
        elif type(s) is cst.Assign and len(s.targets) == 1 and type(s.targets[0].target) is cst.Name:
            dest, value = s.targets[0].target.value, s.value
        else:
            continue
        for n in _moved(value):
            into.setdefault(n, []).append(dest)
    found = {n for n, dests in into.items() if len(dests) == reads.get(n, 0)}
    changed = True
    while changed:  # (a move into a name read another way is no move)
        changed = False
        for n in list(found):
            if any(d is not None and d not in found for d in into[n]):
                found.discard(n)
                changed = True
    return frozenset(found)


def _moved(value: cst.BaseExpression) -> list[str]:
    """The names ``value`` is, or holds as items of a tuple display."""
    if type(value) is cst.Name:
        return [value.value]
    if type(value) is cst.Tuple:
        return [e.value.value for e in value.elements if type(e) is cst.Element and type(e.value) is cst.Name]
    return []
