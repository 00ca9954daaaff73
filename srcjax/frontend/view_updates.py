"""Updates into arrays that other names view (``r = m[0]; m[0, 1] = v``, read ``r`` after): refused, where NumPy's
view would see the change and srcjax's functional update would not. Read on the normalized body, whose updates
are calls (``index_update``, ``masked_write``, ``item_write``); aliasing.py follows containers and items before it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst

from ..core import Span, UnsupportedSyntaxError
from . import in_place_updates, item_views
from .names import Visitor, assigned_names, code, names_in
from .syntax import attr_chain

__all__ = ["check_views"]


# NumPy calls whose result may share memory with their first argument
_VIEW_CALLS = {"np.reshape", "np.transpose", "np.ravel", "np.squeeze", "np.expand_dims", "np.swapaxes",
               "np.moveaxis", "np.broadcast_to", "np.atleast_1d", "np.atleast_2d", "np.atleast_3d",
               "np.asarray", "np.diagonal", "np.real"}


def _view_of(value: cst.BaseExpression) -> str | None:
    """The variable ``value`` may be a NumPy view of (``y``, ``y[1:]``, ``y.T``, ``np.reshape(y, ...)``)."""
    if isinstance(value, cst.Name):
        return value.value
    if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name):  # (`y[[1, 0]]`: a list of indices
        fancy = any(isinstance(e.slice, cst.Index) and isinstance(e.slice.value, (cst.List, cst.ListComp))
                    for e in value.slice)  # copies the items: no view)
        return None if fancy else value.value.value
    if isinstance(value, cst.Attribute) and value.attr.value == "T" and isinstance(value.value, cst.Name):
        return value.value.value
    if isinstance(value, cst.Call) and value.args and isinstance(value.args[0].value, cst.Name):
        chain = attr_chain(value.func)
        if chain is not None and ".".join(chain) in _VIEW_CALLS:
            return value.args[0].value.value
    return None


def _pairs(target: cst.BaseExpression, value: cst.BaseExpression, before: Sequence[cst.SimpleStatementLine]) -> \
        list[tuple[str, cst.BaseExpression, bool]]:
    """(name, value, bound alone) of ``target = value``: one name, or the names of a tuple bound item by item from
    a tuple of names each bound just before to a slice (``item, item_1 = (getitem, getitem_1)`` of ``y[:, 0],
    y[:, 1] = y[:, 1], y[:, 0]``: NumPy's second value is a view of the column the first write changes, so both
    columns end up y[:, 1]; was swapped, silently). An integer index (``y[0], y[1] = y[1], y[0]``) is a view only
    of an array of two dimensions or more, a number of a 1-D one (bubble sort's swap): not decided here."""
    if isinstance(target, cst.Name):
        return [(target.value, value, True)]
    if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) and
            len(target.elements) == len(value.elements) and
            all(isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in target.elements) and
            all(isinstance(e, cst.Element) for e in value.elements)):
        return []
    sliced = {a.targets[0].target.value for line in before[-len(value.elements):] for a in line.body  # type: ignore[attr-defined]
              if isinstance(a, cst.Assign) and len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name)
              and isinstance(a.value, cst.Subscript) and any(isinstance(e.slice, cst.Slice) for e in a.value.slice)}
    return [(t.value.value, v.value, False) for t, v in zip(target.elements, value.elements)  # type: ignore[attr-defined]
            if isinstance(v.value, cst.Name) and v.value.value in sliced]


def check_views(body: Sequence[Any], updated: set[str], spans: dict[int, Span]) -> None:
    """Refuse ``y[k] = v`` where NumPy would also change another variable that shares ``y``'s memory
    (a view) and that is read afterwards: srcjax's update is functional, so the answers would differ. In a
    loop, afterwards is also the next iteration: a read from the loop's start up to the update, before the
    variable is bound again directly in the loop's body (``x = R[0]`` before ``for``, ``t += x.sum()`` then
    ``R[0] += 1`` in it: NumPy's ``x`` sees every update)."""
    order: list[cst.SimpleStatementLine] = []
    outer: list[tuple[int, ...]] = []  # per line: the enclosing compound statements' ids, innermost last
    stack: list[int] = []
    loops: dict[int, list[int]] = {}  # a loop's id -> [its first line, one past its last line]
    tests: dict[int, list[str]] = {}  # a while loop's id -> the names its test reads
    jumps: set[int] = set()  # the loops with a `break` or `continue` in them (a name bound in them may be skipped)

    class V(Visitor):
        def visit_SimpleStatementLine(self, n: cst.SimpleStatementLine) -> None:
            order.append(n)
            outer.append(tuple(stack))
            if any(isinstance(x, (cst.Break, cst.Continue)) for x in n.body):
                jumps.update(stack)

        def _enter(self, n: cst.CSTNode) -> None:
            stack.append(id(n))
            if isinstance(n, (cst.For, cst.While)):
                loops[id(n)] = [len(order), -1]
                if isinstance(n, cst.While):
                    tests[id(n)] = names_in(n.test)

        def _leave(self, n: cst.CSTNode) -> None:
            stack.pop()
            if id(n) in loops:
                loops[id(n)][1] = len(order)

        visit_For = visit_While = visit_If = visit_Else = visit_FunctionDef = _enter
        leave_For = leave_While = leave_If = leave_Else = leave_FunctionDef = _leave

    for st in body:
        V().walk(st)
    views: list[tuple[int, str, str, cst.BaseExpression]] = []  # (position, alias, base, the view as written)
    paired: set[str] = set()  # names a tuple assignment binds to slices (`y[:, 0], y[:, 1] = y[:, 1], y[:, 0]`)
    for pos, line in enumerate(order):
        for small in line.body:
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
                continue
            for target, value, whole in _pairs(small.targets[0].target, small.value, order[:pos]):
                base = _view_of(value)
                if base is not None and base != target:
                    views.append((pos, target, base, value))
                    if not whole:
                        paired.add(target)

    def scan(lines: range, other: str, loop: int) -> bool | None:
        """True: ``other`` is read in ``lines`` where no earlier line of them bound it on the way (a line directly
        in a statement around the read: in the same iteration, branch or body, before it); False: bound
        directly in ``loop``'s body first; None: neither."""
        kills: list[int] = []  # the compound statements a line binding `other` directly is in
        for k in lines:
            if other in names_in(order[k], skip_targets=True) and not any(c in outer[k] for c in kills):
                return True
            if other in assigned_names([order[k]]) and outer[k] and not jumps & set(outer[k]):
                kills.append(outer[k][-1])
                if outer[k][-1] == loop:
                    return False
        return None

    def read_stale(pos: int, other: str) -> bool:
        """Whether ``other`` is read after the update at ``pos`` before it is bound again: later in the
        function, and in a loop, in the next iteration too (from the loop's start up to the update)."""
        cur = pos
        for loop in [o for o in reversed(outer[pos]) if o in loops]:  # innermost first
            start, end = loops[loop]
            rest = scan(range(cur + 1, end), other, loop)
            if rest is not None:
                return rest
            if other in tests.get(loop, ()) or scan(range(start, pos), other, loop):
                return True
            cur = end - 1  # (the loop may also end here: what follows it reads what the update left)
        return any(other in names_in(ln, skip_targets=True) for ln in order[cur + 1:])

    def is_update(line: cst.SimpleStatementLine) -> bool:
        small = line.body[0]
        return isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) and (
            attr_chain(small.value.func) == ["srcjax", "lax", "index_update"] or
            isinstance(small.value.func, cst.Name) and
            small.value.func.value.startswith(("masked_write", "item_write")))

    def shared_until(vpos: int, pos: int, names: tuple[str, str], start: int, end: int) -> bool:
        """Whether a view made at ``vpos``, later in the loop ``[start, end)`` than the update at ``pos``, still
        shares its array at the update in the next iteration: neither name bound to another value on the way
        (``items = {}`` at the top of the iteration: a new array, not the view's)."""
        way = [*range(vpos + 1, end), *range(start, pos)]
        return not any(not is_update(order[k]) and set(names) & set(assigned_names([order[k]])) for k in way)

    def sharing(pos: int, y: str) -> list[tuple[str, str, int]]:
        """(another name, the alias to copy, the view's position) for each name sharing ``y``'s memory at the update
        at ``pos``: a view of it, what it views, and on through views (``a = m[0]; r = m[:2]``: ``a[0] = v`` changes
        ``r``; only the pair was followed, a silent wrong answer); two items of one base with other literal rows do
        not share."""
        in_loop = [loops[o] for o in outer[pos] if o in loops]
        # (a view made later in an enclosing loop exists at the update from the loop's second iteration on)
        live = [v for v in views if v[0] < pos or any(
            v[0] < end and shared_until(v[0], pos, (v[1], v[2]), start, end) for start, end in in_loop)]
        out: dict[str, tuple[str, str, int]] = {}  # a name reached -> (alias, base, line) of the view reaching it
        seen = {y}
        todo: list[tuple[str, cst.BaseExpression | None]] = [(y, None)]  # (a name, the view it was reached up by)
        while todo:
            n, up_from = todo.pop()
            for vpos, alias, base, value in live:
                if alias == n and base not in seen:  # (what `n` views)
                    seen.add(base)
                    out[base] = (alias, base, vpos)
                    todo.append((base, value))
                elif base == n and alias not in seen and (up_from is None or item_views.may_overlap(up_from, value)):
                    seen.add(alias)  # (a view of `n`; reached from a view of `n`, one that may overlap it)
                    out[alias] = (alias, base, vpos)
                    todo.append((alias, None))
        return [(o, a, vpos) for o, (a, _, vpos) in out.items()]

    def untouched(pos: int, vpos: int, y: str, other: str) -> bool:
        """Whether the item ``other = y[i]`` (integer indices, made at ``vpos``) cannot see the update at ``pos``:
        ``y`` is the same array there (bound on the way, and in the loops around the update, only by updates and
        ``in_place``) and the update writes other rows (``y[1] = v`` of ``b = y[0]``), or ``other`` is a number: the
        update's ``in_place(y, y, alias=..., rank=r)`` (aliasing.scan's) refuses a ``y`` of ``r`` dimensions or
        more, and ``r`` is at most one more than the indices ``y[i]`` takes."""
        value = next((v for p, a, b, v in views if (p, a, b) == (vpos, other, y)), None)
        if value is None or item_views.unsure_item(value) != y:
            return False
        way = [*range(vpos + 1, pos)] + [k for o in outer[pos] if o in loops for k in range(*loops[o])]
        if any(y in assigned_names([order[k]]) and not is_update(order[k]) and _in_place_of(order[k], y) is None
               for k in way if k != pos):
            return False
        update = order[pos].body[0].value  # type: ignore[attr-defined]
        if (attr_chain(update.func) or [""])[-1] == "index_update" and \
                not item_views.may_overlap(_element(y, update.args[1].value), value):
            return True
        guard = next((order[k] for k in range(pos - 1, -1, -1) if y in assigned_names([order[k]])), None)
        rank = _in_place_of(guard, y) if guard is not None else None
        return rank is not None and 0 < rank <= 1 + item_views.depth(code(value))

    for pos, line in enumerate(order):
        small = line.body[0]
        if not is_update(line):
            continue
        y = small.targets[0].target.value  # type: ignore[attr-defined]
        for other, alias, vpos in sharing(pos, y):
            if untouched(pos, vpos, y, other):
                continue
            later = read_stale(pos, other)
            if later and (named := _second_name(order, pos, vpos, y, spans)) is not None:
                raise UnsupportedSyntaxError(named[0], span=spans.get(id(line)), hint=named[1])
            if later and paired & {other, alias}:
                raise UnsupportedSyntaxError(
                    f"this writes into {y!r} what another value of the same assignment views: NumPy's values of a "
                    "tuple assignment are views, written in order, so a later value already holds what an earlier "
                    "write put there (`y[:, 0], y[:, 1] = y[:, 1], y[:, 0]` makes both columns y[:, 1]); srcjax "
                    "updates arrays functionally", span=spans.get(id(line)),
                    hint="copy the values (`y[:, 1].copy()`) or swap by fancy indexing, which copies: "
                         "`y[:, [0, 1]] = y[:, [1, 0]]`")
            if later:
                raise UnsupportedSyntaxError(
                    f"assigning into {y!r} would also change {other!r} in NumPy (one is a view of the other), "
                    f"and {other!r} is used afterwards; srcjax updates arrays functionally, so copy the view",
                    span=spans.get(id(line)),
                    hint=f"make {alias!r} an independent copy: append .copy() where it is created")


def _in_place_of(line: cst.SimpleStatementLine, y: str) -> int | None:
    """The rank of ``y = in_place(y, ..., alias=..., rank=r)`` (an in-place change of ``y``, the same array in NumPy;
    with ``alias``: refused where ``y`` has ``r`` dimensions or more, frontend/in_place_updates.checked_call); 0 for
    one without ``alias``; None for any other line."""
    st = line.body[0]
    if not (isinstance(st, cst.Assign) and len(line.body) == 1 and isinstance(v := st.value, cst.Call) and
            isinstance(v.func, cst.Name) and v.func.value == in_place_updates.IN_PLACE and v.args and
            isinstance(v.args[0].value, cst.Name) and v.args[0].value.value == y and
            any(isinstance(t.target, cst.Name) and t.target.value == y for t in st.targets)):
        return None
    kw = {a.keyword.value: a.value for a in v.args if a.keyword is not None}
    if "alias" not in kw:
        return 0
    rank = kw.get("rank")
    return int(rank.value) if isinstance(rank, cst.Integer) else 1 if rank is None else None


def _element(y: str, index: cst.BaseExpression) -> cst.Subscript:
    """``y[index]`` (a tuple index as several indices) for :func:`item_views.may_overlap`."""
    parts = [e.value for e in index.elements] if isinstance(index, cst.Tuple) else [index]
    return cst.Subscript(value=cst.Name(y), slice=[cst.SubscriptElement(slice=cst.Index(p)) for p in parts])


def _second_name(order: Sequence[cst.SimpleStatementLine], pos: int, vpos: int, y: str,
                 spans: dict[int, Span]) -> tuple[str, str] | None:
    """(message, hint) where the update at ``pos`` into ``y`` is seen through a second name that the line at
    ``vpos`` made by a plain ``m = d`` of a dict or list (its last binding a display, a comprehension, ``dict(...)``
    or ``list(...)``; a string key: a dict): that name and line are named, as the list refusals do (was: "one is a
    view of the other ... append .copy()", NumPy's words for arrays). None for arrays and views."""
    made = order[vpos].body[0]
    if not (isinstance(made, cst.Assign) and isinstance(made.value, cst.Name)):
        return None
    alias, base = made.targets[0].target.value, made.value.value  # type: ignore[attr-defined]
    update = order[pos].body[0].value  # type: ignore[attr-defined]
    kind = "dict" if len(update.args) > 1 and isinstance(update.args[1].value, cst.SimpleString) else None
    for line in order[:vpos]:
        st = line.body[0]
        if isinstance(st, cst.Assign) and [t.target for t in st.targets if isinstance(t.target, cst.Name) and
                                           t.target.value == base]:
            v = st.value
            call = attr_chain(v.func) if isinstance(v, cst.Call) else None
            kind = "dict" if isinstance(v, cst.Dict | cst.DictComp) or call == ["dict"] else \
                "list" if isinstance(v, cst.List | cst.ListComp) or call == ["list"] else kind
    if kind is None:
        return None
    sp = spans.get(id(order[vpos]))
    where = f"`{alias} = {base}`, line {sp.line}" if sp is not None else f"`{alias} = {base}`"
    other, changed = (alias, base) if base == y else (base, alias)
    return (f"this changes the {kind} {changed!r} in place, but {other!r} names the same {kind} ({where}) and is "
            f"read afterwards: Python sees the change through {other!r}, srcjax follows a {kind} by the name it is "
            "changed through",
            f"read and change the {kind} by one name ({base!r}): " + (
                f"read {base!r} where {alias!r} is read, or make {alias!r} after the {kind}'s last change" if
                changed == base else f"change it through {base!r} (`{base}[...] = ...`), not {alias!r}"))
