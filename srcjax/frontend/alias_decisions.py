"""The decisions of :func:`aliasing.scan` over the events of a function (frontend/alias_events.py): which names an
in-place change reaches (``may`` links, integer-indexed items that are views or copies by rank), and whether a name
is read after a change (in a loop: in the next iteration too) or written back before."""

from __future__ import annotations

import libcst as cst

from . import item_views
from .alias_events import VALUE, Event
from .names import code

__all__ = ["ifs", "may_reach", "read_later", "unsure_change", "written_back"]


def _items_held(events: list[Event], k: int, holder: str, source: str, made: str) -> int:
    """How many times the container ``holder`` was given the item ``made`` of ``source`` (``m[0]``, as written)
    before event ``k`` (since it was last bound to a new container)."""
    n = 0
    for e in events[:k]:
        if e.name == holder and e.kind == "may_u":
            n = (n if e.key == "add" else 0) + sum(1 for v, w in e.items if v == source and w == made)
    return n


def unsure_change(events: list[Event], k: int, e: Event, obj: dict[str, int], may: dict[str, set[tuple[str, int]]],
                  may_u: dict[str, set[tuple[str, int, str]]], unsure: dict[str, tuple[str, int, str]],
                  checked: dict[int, tuple[str, int]], containers: set[str]) -> tuple[str, str] | None:
    """An in-place change (event ``k``) that reaches, or is reached by, an integer-indexed item (``m[0]``: a view of
    a row of a 2-D ``m`` in NumPy, a number of a 1-D one) read after it (item_views.py). ``x op= v`` (``x`` a name
    or a container's item) and a write of an element (``m[0, 0] = v``, ``m[1] += v``, ``y[0], y[1] = y[1], y[0]``)
    are decided when specializing: ``checked`` gets, by the statement's ``id`` (the element's, for one of a tuple
    target), (the item, the rank from which ``x`` shares it: the lowest of the items it reaches; the statement, for
    a value of the tuple assignment itself); any other change is refused: (the name read after it, the statement
    binding the item)."""
    links = {(a, b) for a, pairs in may.items() for b, o in pairs if obj.get(b) == o}
    items = {(a, b, made) for a, trios in may_u.items() for b, o, made in trios if obj.get(b) == o}
    if not items and not unsure:
        return None
    small = e.small
    aug = isinstance(small, cst.AugAssign) and (isinstance(small.target, cst.Name) and e.name not in containers
                                                or isinstance(small.target, cst.Subscript) and
                                                isinstance(small.target.value, cst.Name))
    written = _written(e)
    write = not e.item and written is not None  # (`m[0, 0] = v`, `y[0], y[1] = y[1], y[0]`: an element of an array
    # or a list's slot, which keeps the old item; not `xs[0] += v` of a list, which changes that item's array)
    same = {n for n, o in obj.items() if o == obj.get(e.name)}
    checks: list[tuple[int, str]] = []  # (rank, item) of each item decided when specializing
    # names whose value the changed one may be or hold (through sure links), and the items those hold
    reach = set(same)
    todo = list(same)
    while todo:
        n = todo.pop()
        for a, b in links:
            for m in (b, a) if n in (a, b) else ():
                if m not in reach:
                    reach.add(m)
                    todo.append(m)
    for a, b, made in sorted(items):
        if a in reach and b not in reach:  # (the change goes through a holder of `b`'s item)
            readers = sorted(n for n, o in obj.items() if o == obj.get(b))
            readers += _siblings(unsure, b, obj.get(b), made, reach)
            if e.item and _items_held(events, k, a, b, made) > 1:  # (`ys = [m[0], m[0]]`, `ys[1] += v`: ys[0] is the
                readers.append(a)  # same row of m in NumPy, changed too; was not seen, a silent wrong answer)
            rank = 1
        elif b in same and a not in reach:  # (`b` itself changes: the holder `a` of its item is read after it)
            readers = [a]
            rank = 1 + item_views.depth(made)
        else:
            continue
        if (reader := next((r for r in readers if read_later(events, k, r, e)), None)) is not None:
            if aug or write and rank > 1:
                checks.append((rank, made))
                continue
            return reader, next((x.made for x in events if x.kind == "may_u" and x.name == a), made)
    for n, (src, value, made) in sorted(unsure.items()):  # (`a, b = m[0], m[1]`, then `m += 1`, `a` read)
        single = any(x.kind == "copy" and x.unsure and x.name == n and isinstance(x.small, cst.Assign) and
                     isinstance(x.small.targets[0].target, cst.Name) for x in events[:k])
        if value == obj.get(e.name) and n not in same and read_later(events, k, n, e):
            target = written if written is not None and write else e.target if n.startswith(VALUE) else None
            if target is not None and src == e.name and not item_views.may_overlap(target, made) and \
                    _bound_since(events, k, n, e.name, e) is False:
                continue  # (`r = m[0]; m[1] = v`: other rows, whatever m's rank)
            if aug and isinstance(small.target, cst.Name) or write or n.startswith(VALUE) and e.target is not None:
                # (`y[0][1], y[1][0] = y[1][0], y[0][1]`: an item's element, the check of `y` an array's; a list's
                # items' ranks are not checked)
                checks.append((1 + item_views.depth(made), code(small) if n.startswith(VALUE) else made))
                continue
            if not (single and isinstance(small, cst.Assign)):  # (`xs[0][1] = v` of `r = xs[0]`: check_views')
                return n, f"{n} = {made}"
        elif n in same and obj.get(src) == value:  # (a change through `r = m[0]`: of m's row, where m is 2-D)
            holders = sorted(a for a, b, _ in items if obj.get(b) == value)  # (`d = {'q': m[1]}`: its rows too)
            names = [] if single else [m for m in obj if obj[m] == value]  # (`r = m[0]`'s names: check_views')
            names += _siblings(unsure, src, value, made, same)  # (`a, r = m[0], m[0]; a[0] = v`: r is that row)
            reader = next((m for m in holders + names if read_later(events, k, m, e)), None)
            if reader is None:
                continue
            if aug and isinstance(small.target, cst.Name):  # type: ignore[union-attr]
                checks.append((1, made))  # (`r += v`: an array r is m's row)
                continue
            if isinstance(small, cst.Assign) or isinstance(small, cst.AugAssign) and \
                    isinstance(small.target, cst.Subscript):  # (`a, b = m[0], m[1]; a[0] = v`: a is an array)
                return reader, f"{n} = {made}"
    if checks:
        rank, made = min(checks)
        checked[id(e.target) if e.target is not None else id(small)] = (made, rank)
    return None


def _bound_since(events: list[Event], k: int, n: str, name: str, at: Event) -> bool | None:
    """Whether ``name`` is bound again (``m = m[::-1]``: the same array in NumPy, other rows by the same index) between
    the copy that last bound ``n`` and event ``k``, or anywhere in a loop around ``k``; None where no such copy is
    found."""
    start = next((j for j in range(k - 1, -1, -1) if events[j].name == n and events[j].kind == "copy"), None)
    if start is None:
        return None
    return any(x.name == name and x.kind in ("bind", "copy") and
               (start < j < k or any(a <= x.pos < b for a, b in at.loops)) for j, x in enumerate(events))


def _written(e: Event) -> cst.Subscript | None:
    """The element of a variable that the assignment ``e`` writes (``m[0, 1]`` of ``m[0, 1] = v``, ``y[0]`` of ``y[0],
    y[1] = y[1], y[0]``), None for any other change."""
    if not isinstance(e.small, cst.Assign):
        return None
    t = e.target if e.target is not None else e.small.targets[0].target
    return t if isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and t.value.value == e.name else None


def _siblings(unsure: dict[str, tuple[str, int, str]], source: str, value: int | None, made: str,
              but: set[str]) -> list[str]:
    """The names bound through an unsure copy of an item of ``source``'s current array (``r = m[0]``) that may
    share elements with its item ``made``: a row of a 2-D ``m`` that a change through ``made`` changes too (`ys =
    [m[0]]; r = m[0]; ys[0][0] = v`: NumPy's ``r`` changes; was not seen, a silent wrong answer)."""
    return sorted(n for n, (src, val, item) in unsure.items()
                  if src == source and val == value and n not in but and item_views.may_overlap(made, item))


def may_reach(may: dict[str, set[tuple[str, int]]], obj: dict[str, int], name: str) -> list[tuple[str, str]]:
    """The names (with the name whose ``may`` links them) whose arrays ``name``'s may be or hold, and the names
    whose may be or hold ``name``'s, through chains of ``may`` whose values are still current."""
    links = {(a, b) for a, pairs in may.items() for b, o in pairs if obj.get(b) == o}
    out: dict[str, str] = {}
    todo = [name] + [n for n, o in obj.items() if o == obj.get(name) and n != name]  # (w = d['a']: d's value)
    while todo:
        n = todo.pop()
        for a, b in links:
            for m, via in ((b, a), (a, a)) if a == n or b == n else ():
                if m != name and m not in out:
                    out[m] = via
                    todo.append(m)
                    for o in [o for o, v in obj.items() if v == obj.get(m) and o != name and o not in out]:
                        out[o] = via  # (`for r in m: out.append(r)`: r is m's row, so out holds m's array)
                        todo.append(o)
    return sorted(out.items())


def ifs(e: Event) -> tuple[int, ...]:
    """The positions of the ``if`` statements around ``e`` (its guards that are not loops)."""
    return tuple(g for g in e.guards if all(g != a for a, _ in e.loops))


def written_back(events: list[Event], k: int, name: str, made: str) -> bool:
    """Whether ``made`` (``params["w"]``) is written (``params["w"] = w``) after event ``k`` before ``name`` is
    read: NumPy's and srcjax's values then agree."""
    for e in events[k + 1:]:
        if e.name != name:
            continue
        if e.kind == "inplace":
            return isinstance(e.small, cst.Assign) and any(code(t.target) == made for t in e.small.targets)
        return False
    return False


def read_later(events: list[Event], k: int, name: str, at: Event) -> bool:
    """Whether ``name`` is read after event ``k`` before it is bound again (in a loop around ``k``: also
    from the loop's start, in the next iteration, before it is bound again there, unless every path from ``k`` to
    the next iteration binds it again: a binding in the innermost loop's own body, no ``continue``, ``break`` or
    ``return`` between)."""
    jumped = False
    for e in events[k + 1:]:
        if e.kind == "jump":
            jumped = True
            continue
        if e.name != name:
            continue
        if e.kind == "read":
            return True
        if e.kind in ("bind", "copy"):
            inner = at.loops[-1] if at.loops else None
            if inner is not None and not jumped and e.guards[-1:] == (inner[0],) and e.pos < inner[1]:
                return False  # (`R[0] += 1; x = R[1]`: x is bound again before any later read of it)
            break
    for a, _b in at.loops:  # the next iteration, up to the change: a read before the name is bound again
        for e in events[:k]:  # (a read in the changing statement itself, `out += x * i`, comes before it)
            if e.name != name or e.pos < a:
                continue
            if e.kind == "read":
                return True
            if e.kind in ("bind", "copy") and e.guards[-1:] == (a,):
                break  # (`x = R[k:, k]` at the top of the loop, not in an `if`: the old alias is not read again)
    return False
