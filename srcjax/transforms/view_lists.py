"""A list of a view of lists, ``pairs = list(zip(reversed(s_hist), reversed(y_hist)))``, as the loop of appends
that builds it, for forward mode.

Reverse mode saves a loop's items where the lists it walks change later (L-BFGS's two-loop recursion walks
``zip(reversed(s_hist), reversed(y_hist))`` and then appends to both): ``loop_items = list(zip(...))``, pushed on
the tape. Forward mode over that code (``hessian``, ``jacfwd(grad(f))``) refused the ``list(...)`` of active lists
("it builds a list or value ... that derivatives cannot follow") while it follows a loop over the same view and
the appends of tuples. So, before the forward pass reads the body: ``loop_items = []``, then ``for s_item, y_item
in zip(...): loop_items.append((s_item, y_item))`` (the view's names, ``reversed_1 = reversed(s_hist)``, put back
into the loop's iterable by :func:`.anf.inline_loop_iterables` where nothing else reads them).

Input: ANF statements (a derivative's body read again); output: the same, each such assignment replaced.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst

from ..frontend.names import names_in
from .anf import call_name

_VIEWS = ("zip", "reversed", "enumerate", "list", "tuple")


def as_appends(body: Sequence[Any]) -> list[Any]:
    """``body`` with each ``name = list(view)`` (a view: zip/reversed/enumerate of lists, at any depth, through
    the names ANF gave its parts) read elsewhere than by one loop (reverse mode's tape) written as ``name = []`` and
    a loop of appends."""
    defs: dict[str, cst.BaseExpression] = {}
    for node in _assignments(body):
        defs[node.targets[0].target.value] = node.value  # type: ignore[attr-defined]
    if not any(call_name(v) == "list" and _view(v.args[0].value, defs) for v in defs.values()  # type: ignore[attr-defined]
               if call_name(v) == "list" and len(v.args) == 1):  # type: ignore[attr-defined]
        return list(body)
    counts: dict[str, int] = {}
    for n in names_in(cst.Module(list(body))):
        counts[n] = counts.get(n, 0) + 1
    # (a list read once, by a loop: put back into the loop's iterable by inline_loop_iterables, as written)
    defs = {k: v for k, v in defs.items() if call_name(v) != "list" or counts.get(k, 0) > 2}
    return _block(body, defs, set(counts))


def _assignments(stmts: Sequence[Any]) -> list[cst.Assign]:
    out: list[cst.Assign] = []
    for st in stmts:
        if isinstance(st, cst.SimpleStatementLine):
            out += [s for s in st.body if isinstance(s, cst.Assign) and len(s.targets) == 1 and
                    isinstance(s.targets[0].target, cst.Name)]
        elif isinstance(st, cst.For | cst.While):
            out += _assignments(st.body.body)
        elif isinstance(st, cst.If):
            out += _assignments(st.body.body)
            if st.orelse is not None:
                out += _assignments([st.orelse] if isinstance(st.orelse, cst.If) else st.orelse.body.body)
    return out


def _view(e: cst.BaseExpression, defs: dict[str, cst.BaseExpression], depth: int = 0) -> bool:
    """Whether ``e`` is zip/reversed/enumerate of names (of lists), directly or through ANF's names."""
    if isinstance(e, cst.Name) and e.value in defs and depth < 8 and call_name(defs[e.value]) in _VIEWS:
        return _view(defs[e.value], defs, depth + 1)
    name = call_name(e)
    if name not in _VIEWS or name == "list" and depth == 0:
        return False
    args = e.args  # type: ignore[attr-defined]
    return bool(args) and all(a.keyword is None and not a.star and isinstance(a.value, cst.Name) and (
        a.value.value not in defs or call_name(defs[a.value.value]) not in ("range",) and
        (call_name(defs[a.value.value]) not in _VIEWS or _view(a.value, defs, depth + 1))) for a in args)


def _items(e: cst.BaseExpression, defs: dict[str, cst.BaseExpression], base: str, taken: set[str],
           depth: int = 0) -> cst.Name | cst.Tuple:
    """The target taking an element of the view ``e`` apart as the view nests it (``zip(zip(a, b), c)``: ``(a_item,
    b_item), c_item``: forward mode follows each part to its list), or one fresh name."""
    if isinstance(e, cst.Name) and e.value in defs and depth < 8 and call_name(defs[e.value]) in _VIEWS:
        return _items(defs[e.value], defs, base, taken, depth + 1)
    name = call_name(e)
    args = [a.value for a in e.args] if isinstance(e, cst.Call) else []
    if name == "zip":
        return cst.Tuple([cst.Element(_items(a, defs, base, taken, depth + 1)) for a in args])
    if name == "enumerate":
        return cst.Tuple([cst.Element(cst.Name(_fresh(f"{base}_index", taken))),
                          cst.Element(_items(args[0], defs, base, taken, depth + 1))])
    if name in ("reversed", "list", "tuple"):
        return _items(args[0], defs, base, taken, depth + 1)
    return cst.Name(_fresh(f"{base}_item", taken))


def _rewritten(st: Any, defs: dict[str, cst.BaseExpression], taken: set[str]) -> Any:
    if isinstance(st, cst.For | cst.While):
        return st.with_changes(body=st.body.with_changes(body=_block(st.body.body, defs, taken)))
    if isinstance(st, cst.If):
        orelse = st.orelse
        if isinstance(orelse, cst.If):
            orelse = _rewritten(orelse, defs, taken)
        elif orelse is not None:
            orelse = orelse.with_changes(body=orelse.body.with_changes(body=_block(orelse.body.body, defs, taken)))
        return st.with_changes(body=st.body.with_changes(body=_block(st.body.body, defs, taken)), orelse=orelse)
    if not (isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 and isinstance(s := st.body[0], cst.Assign)
            and len(s.targets) == 1 and isinstance(t := s.targets[0].target, cst.Name) and
            t.value in defs and isinstance(s.value, cst.Call) and call_name(s.value) == "list" and
            len(s.value.args) == 1 and _view(s.value.args[0].value, defs)):
        return st
    view = s.value.args[0].value  # type: ignore[attr-defined]
    target = _items(view, defs, t.value, taken)
    appended = target
    append = cst.SimpleStatementLine([cst.Expr(cst.Call(func=cst.Attribute(value=t, attr=cst.Name("append")),
                                                        args=[cst.Arg(appended)]))])
    return cst.FlattenSentinel([
        st.with_changes(body=[s.with_changes(value=cst.List([]))]),
        cst.For(target=target, iter=view, body=cst.IndentedBlock(body=[append]))])


def _block(stmts: Sequence[Any], defs: dict[str, cst.BaseExpression], taken: set[str]) -> list[Any]:
    out: list[Any] = []
    for st in stmts:
        r = _rewritten(st, defs, taken)
        out += list(r.nodes) if isinstance(r, cst.FlattenSentinel) else [r]
    return out


def _fresh(base: str, taken: set[str]) -> str:
    k, name = 0, base
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name
