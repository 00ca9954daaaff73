"""Starred elements in a list or tuple display, written as joins for the normalizer: ``[*ws]`` -> ``[item for
item in ws]``, ``[x, *ws, y]`` -> ``[x] + [item for item in ws] + [y]``, ``(x, *a)`` -> ``(x,) + tuple([item for
item in a])``.

As in Python, each starred operand is iterated (a list, a tuple, or an array's rows: its length is static); a
comprehension over it is what every transformation follows (a mapped list under vmap, a list of differentiated
arrays: ``frontend/list_copies.py`` reads ``list(ws)`` so too). Joins of displays holding differentiated values
are refused under derivatives where ``a + b`` of such lists is (``transforms/activity.py``), at the user's line.
"""

from __future__ import annotations

import libcst as cst

__all__ = ["joined"]


def joined(node: cst.List | cst.Tuple) -> cst.BaseExpression:
    """``node`` (a display with a starred element) as a join of copies of the starred operands and displays of
    the other elements, in order."""
    make = "list" if isinstance(node, cst.List) else "tuple"
    parts: list[cst.BaseExpression] = []
    run: list[cst.BaseElement] = []

    def flush() -> None:
        if run:
            elems = [e.with_changes(comma=cst.MaybeSentinel.DEFAULT) for e in run]
            if make == "tuple" and len(elems) == 1:
                elems = [elems[0].with_changes(comma=cst.Comma())]
            parts.append(cst.List(elems) if make == "list" else
                         cst.Tuple(elems, lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))
            run.clear()

    for e in node.elements:
        if isinstance(e, cst.StarredElement):
            flush()
            comp = cst.ListComp(elt=cst.Name("item"), for_in=cst.CompFor(target=cst.Name("item"), iter=e.value))
            parts.append(comp if make == "list" else cst.Call(func=cst.Name("tuple"), args=[cst.Arg(comp)]))
        else:
            run.append(e)
    flush()
    out = parts[0]
    for p in parts[1:]:
        out = cst.BinaryOperation(left=out, operator=cst.Add(), right=p)
    return out
