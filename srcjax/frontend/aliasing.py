"""In-place changes NumPy makes through another name: refused, not silently different.

NumPy's ``a += b``, ``a[i] = v`` and ``a[i] += v`` change the array ``a`` names, so every other
name bound to the same array (``b = a`` earlier) sees the change. srcjax's arrays are immutable,
as JAX's: those statements rebind ``a`` to a new array and ``b`` keeps the old value. Where a
function reads such a second name after the change, the two semantics give different numbers;
:func:`check_in_place_aliasing` refuses that at the changing statement, with the name and the
line that made it an alias.

The analysis is local and conservative about what it accepts: names are followed through plain
copies (``b = a``) in program order; any other binding gives a name a new value; a value bound
from a number, string or boolean literal is immutable in NumPy too (``+=`` rebinds it) and is
never reported. Inside a loop, a read anywhere in the loop counts as later.

``view_updates.check_views`` refuses the same difference through NumPy *views*, after normalization:
``y[k] = v`` (a functional ``srcjax.lax.index_update`` in srcjax) where another variable that
may share ``y``'s memory (``b = y[1:]``, ``b = y.T``, ``b = np.reshape(y, ...)``) is read
afterwards, anywhere later in the function.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from .alias_decisions import ifs, may_reach, read_later, unsure_change, written_back
from .alias_events import CALLER, user_view_of
from .alias_events import record as _record
from .names import code

__all__ = ["CALLER", "InPlaceAlias", "check_in_place_aliasing", "describe", "scan", "user_view_of"]


@dataclass
class InPlaceAlias:
    """``statement`` changes ``name``'s array in place; ``alias`` (bound to it by ``copy``) is read after."""
    statement: cst.CSTNode
    name: str
    alias: str
    copy: tuple[str, str] | None  # (target, source) of the copy that made the alias
    binding: str = ""  # the statement after which ``name`` may be (or hold) ``alias``'s array (``a, b = x, y``)
    holder: str = ""  # the container display (``d = {'a': v}``) whose item is ``alias``'s array, changed in place
    repeated: str = ""  # the list display repeated (``[x] * 2``) whose items are all the array changed
    module: bool = False  # ``alias`` is a module-level (or closure) array: NumPy's change outlives the call
    helper: str = ""  # the change a user's helper called by ``statement`` makes to its argument ``name``
    argument: str = ""  # that argument as written (``acts[1]``: an item of ``name``), where not ``name``
    rebinds: bool = False  # helper: ``p op= v`` on its parameter's name (a number is bound again, an array changed)


def check_in_place_aliasing(fdef: cst.FunctionDef) -> InPlaceAlias | None:
    """The first in-place change of an array that another name, read after it, also holds."""
    return scan(fdef)[0]


def scan(fdef: cst.FunctionDef, returned: Callable[[cst.Call], tuple[str, bool] | None] | None = None,
         module_array: Callable[[str], bool] = lambda n: False,
         changed: Callable[[cst.Call], list[tuple[str, str, bool, bool, str]]] | None = None,
         deferred: dict[int, list[tuple[str, str]]] | None = None,
         returns: dict[int, list[tuple[str, str]]] | None = None
         ) -> tuple[InPlaceAlias | None, dict[int, tuple[str, int]]]:
    """:func:`check_in_place_aliasing`'s answer, and the ``w op= v`` statements (by ``id``) whose ``w`` is bound
    to ``made`` (``params["w"]``, ``W[i]``) whose variable is read after the change, each with ``made``: whether
    ``w`` is that variable's own array is known only when the function is specialized, where
    ``in_place(..., alias=made)`` refuses an array ``w``. ``returned``: the name whose array a call's result may
    be (:func:`returned_alias.returned_source`); ``module_array``: whether a name the function does not bind is
    a module-level or closure array (changed in place, NumPy's change outlives the call); ``changed``: the
    arguments (written as names) a call of a user's helper changes in place, read after the call: refused, but
    where the helper's change is ``p op= v`` (a number is bound again): a name bound to a literal runs, any other
    goes to ``deferred`` (id of the calling statement -> (the name, the change)), decided by its type when the
    function is specialized (frontend/helper_checks.py); a call that is its statement's whole value (``fill(b, x)``,
    ``y = fill(b, x)``) whose changed argument is read after it under that name only goes to ``returns`` (id of the
    statement -> (the argument, the helper's parameter)): the helper returns that array too, and the caller binds it
    (frontend/helper_checks.py)."""
    w = _record(fdef, returned, changed)
    events = w.events
    obj: dict[str, int] = {}  # name -> the value it holds (an id per binding)
    immutable: set[int] = set()
    copied_at: dict[tuple[str, int], tuple[str, str]] = {}
    fresh = itertools.count()
    # a name bound through an unsure copy (or a plain copy of one) -> (the variable, the value it held, `made`)
    unsure: dict[str, tuple[str, int, str]] = {}
    checked: dict[int, tuple[str, int]] = {}
    for p in [*fdef.params.params, *fdef.params.kwonly_params, *fdef.params.posonly_params]:
        obj[p.name.value] = next(fresh)
    repeated: dict[int, tuple[str, int | None, str]] = {}  # a `[x] * n` list's value -> (x, x's value, made)
    module: dict[int, str] = {}  # a module-level array's value -> its name
    items: dict[tuple[int, str], tuple[int, cst.CSTNode]] = {}  # (a container's value, key) -> its item's value
    bound_ifs: dict[str, set[int]] = {}  # a name -> the `if`s its binding is under
    may: dict[str, set[tuple[str, int]]] = {}  # a name -> (name, value) pairs whose arrays it may be or hold
    may_at: dict[str, str] = {}  # a name -> the statement that made `may` of it
    # a name -> (variable, its value, the item as written) of the integer-indexed items (`m[0]`) it may be or hold
    may_u: dict[str, set[tuple[str, int, str]]] = {}
    for k, e in enumerate(events):
        if e.kind == "may_u":
            new_u = {(n, obj.setdefault(n, next(fresh)), made) for n, made in e.items}
            may_u[e.name] = (may_u.get(e.name, set()) if e.key == "add" else set()) | new_u
            may_at.setdefault(e.name, e.made)
        elif e.kind in ("may", "may_add"):  # (a value that may be, or hold, these names' arrays)
            new = {(n, obj.setdefault(n, next(fresh))) for n in e.sources if n != e.name or e.kind == "may_add"}
            may[e.name] = (may.get(e.name, set()) if e.kind == "may_add" else set()) | new
            may_at[e.name] = e.made
        elif e.kind == "holds":  # (a container display's item, or a slot written again)
            if e.name in obj:
                items.pop((obj[e.name], e.made), None)
                if e.source:
                    if e.source not in obj:
                        obj[e.source] = next(fresh)
                    items[(obj[e.name], e.made)] = (obj[e.source], e.node)
        elif e.kind == "repeat":
            repeated[obj[e.name]] = (e.source, obj.get(e.source) if e.source else None, e.made)
            if e.source in obj:  # (`ys = [v] * 2; v += 1`: every item changes)
                items[(obj[e.name], "*")] = (obj[e.source], e.node)
        elif e.kind == "bind" and e.name in obj and not set(ifs(e)) <= bound_ifs.get(e.name, set()):
            pass  # (bound again under an `if` the old binding is not under: on the other path it is the old array)
        elif e.kind == "bind":
            may.pop(e.name, None)
            may_u.pop(e.name, None)
            obj[e.name] = next(fresh)
            bound_ifs[e.name] = set(ifs(e))
            unsure.pop(e.name, None)
            if e.literal:
                immutable.add(obj[e.name])
        elif e.kind == "copy" and e.unsure:  # (a value of its own here; its variable's array or not: checked later)
            if e.source not in obj:
                obj[e.source] = next(fresh)
            obj[e.name] = next(fresh)
            unsure[e.name] = (e.source, obj[e.source], e.made)
        elif e.kind == "copy":
            if e.source not in obj:
                obj[e.source] = next(fresh)  # a global or closure value
                if e.module or module_array(e.source):
                    module[obj[e.source]] = e.source
            obj[e.name] = obj[e.source]
            if e.source in unsure:
                unsure[e.name] = unsure[e.source]
            else:
                unsure.pop(e.name, None)
            copied_at[(e.name, obj[e.name])] = (e.name, e.made or e.source)
            bound_ifs[e.name] = set(ifs(e))
            copied_at.setdefault((e.source, obj[e.name]), (e.name, e.made or e.source))
        elif e.kind == "helper":  # (the helper's change is its own copy's in srcjax: the caller's keeps the old)
            same = [e.name] + sorted(n for n, o in obj.items() if e.name in obj and o == obj[e.name] and n != e.name)
            same += [m for m, _ in may_reach(may, obj, e.name) if m not in same]  # (`v = [b][0]; put(v, 1)`)
            same.sort(key=lambda n: not n.startswith(CALLER))  # (a caller's name first: changed_arguments.py)
            if e.rebinds and e.name in obj and obj[e.name] in immutable:
                continue  # (`t = 2.0; scale(t)`: a number is bound again in the helper, the caller's t stays)
            for m in same:
                if m not in e.sources and not read_later(events, k, m, e):
                    continue
                if e.rebinds and deferred is not None and m not in e.sources and e.name not in w.containers:
                    # (its type decides: an array changes; a list or dict display's `+=` always does)
                    deferred.setdefault(id(e.small), []).append((e.name, e.made))
                    break
                if e.key and returns is not None and m not in e.sources and \
                        not any(read_later(events, k, n, e) or n in e.sources for n in same if n != e.name):
                    returns.setdefault(id(e.small), []).append((e.name, e.key))  # (`b = fill'(b, x)`)
                    break
                return InPlaceAlias(e.node, e.name, m, None, helper=e.made, rebinds=e.rebinds,
                                    argument=e.source), checked
        elif e.kind == "inplace" and e.name in obj and obj[e.name] not in immutable:
            v = obj[e.name]
            nested = e.item and isinstance(e.small, cst.Assign) or (  # (`xs[0][1] = v`: nested_writes.py's;
                isinstance(e.small, cst.AugAssign) and isinstance(e.small.target, cst.Name) and
                e.name in w.containers)  # `xs += [v]` extends the list, not an array)
            item_write = e.item and isinstance(e.small, cst.Assign)  # (`ys = [m.T]; ys[0][1] = v`: m changes)
            for m, via in [] if nested and not item_write else may_reach(may, obj, e.name):  # (`a, b = x, y; a += 1`)
                if read_later(events, k, m, e):
                    return InPlaceAlias(e.node, e.name, m, None, binding=may_at.get(via, "")), checked
            found = unsure_change(events, k, e, obj, may, may_u, unsure, checked, w.containers)
            if found is not None:  # (`rows = [m[0], m[1]]; rows[0][1] = v`, `m[0, 0] = v`: views of a 2-D m)
                return InPlaceAlias(e.node, e.name, found[0], None, binding=found[1]), checked
            if v in module:  # (`t = TABLE; t += x`: NumPy changes the module's array, for every later call too)
                return InPlaceAlias(e.node, e.name, module[v], copied_at.get((e.name, v)), module=True), checked
            through = e.item and isinstance(e.small, cst.AugAssign)  # (`xs[0][1] = v`: nested_writes.py's)
            reached = [(c, key, t) for (c, key), (t, _) in items.items()
                       if through and c == v and (key in (e.key, "*") or not e.key) or t == v]
            for c, key, t in reached:  # (`d = {'a': v}; d['a'] += 1`: v changes; `v += 1`: d['a'] changes)
                via_item = c == v and through
                for m in sorted(n for n, o in obj.items() if o == (t if via_item else c) and n != e.name):
                    if read_later(events, k, m, e):
                        holder = next((code(x.small) for x in events[:k] if obj.get(x.name) == c and
                                       isinstance(x.small, cst.Assign) and ((x.kind, x.made) == ("holds", key) or
                                                                            (x.kind, key) == ("repeat", "*"))), "")
                        return InPlaceAlias(e.node, e.name, m, None, holder=holder or key), checked
            if e.item and v in repeated:  # (`ys = [x] * 2; ys[0] += 1`: every item is that one array)
                elem, held, made = repeated[v]
                others = [e.name] + ([elem] if elem and obj.get(elem) == held else [])
                if any(read_later(events, k, m, e) for m in others):
                    return InPlaceAlias(e.node, e.name, e.name, (e.name, made), repeated=made), checked
            for m in sorted(n for n, o in obj.items() if o == v and n != e.name):
                if read_later(events, k, m, e):
                    return InPlaceAlias(e.node, e.name, m, copied_at.get((m, v)) or copied_at.get((e.name, v))), \
                        checked
            src = unsure.get(e.name)
            if src is not None and obj.get(src[0]) == src[1] and isinstance(e.small, cst.AugAssign) and \
                    isinstance(e.small.target, cst.Name) and not written_back(events, k, src[0], src[2]) and \
                    any(read_later(events, k, m, e) for m in obj if obj[m] == src[1]):  # (`t = m[1:]; r = t[0]`)
                checked[id(e.small)] = (src[2], 1)  # (other changes through an unsure copy: not followed)
    return None, checked


def describe(found: InPlaceAlias) -> tuple[str, str]:
    """The message and hint for ``found``."""
    what = code(found.statement)
    if found.helper:
        read = f"`{found.alias}`" + ("" if found.alias == found.name else f" (bound to `{found.name}`'s array)")
        return (f"{found.helper}: in NumPy that changes the caller's array `{found.name}` in place, and {read} is "
                f"read after the call; srcjax arrays are immutable (as JAX's): the helper's change would not reach "
                f"the caller",
                f"return the new array from the helper and bind it in the caller (`return` the changed parameter at "
                f"the helper's end, `{found.argument or found.name} = {found.helper.split('`')[1]}` here)")
    if found.binding:
        return (f"`{what}` changes `{found.name}`'s array in place in NumPy, and `{found.alias}` may be or hold that "
                f"same array (`{found.binding}` does not copy), so NumPy's `{found.alias}` changes too; srcjax arrays "
                f"are immutable (as JAX's) and `{found.alias}` would keep the old value",
                "copy where the value is bound (`np.copy(x)` of each array put in the container or unpacked), or "
                f"rebind instead of changing in place (`{found.name} = {found.name} + v`)")
    if found.holder:
        return (f"`{what}` changes in place an array that both `{found.name}` and `{found.alias}` reach "
                f"(`{found.holder}` holds the array itself, not a copy), so NumPy's `{found.alias}` changes too; "
                f"srcjax arrays are immutable (as JAX's) and `{found.alias}` would keep the old value",
                "copy the array where the container is made (`np.copy(v)` in the display), or rebind instead of "
                "changing in place (`d[k] = d[k] + v`, `v = v + 1`)")
    if found.repeated:
        return (f"`{what}` changes in place the one array that every item of `{found.name} = {found.repeated}` "
                f"holds (a repeated list repeats the reference), so NumPy's other items change too; srcjax arrays "
                f"are immutable (as JAX's) and they would keep the old value",
                f"make the items separate arrays: `{found.name} = [... for _ in range(n)]` with a copy each "
                f"(`np.copy(x)`, `np.zeros(3)`), or rebind the item: `{found.name}[i] = {found.name}[i] + v`")
    if found.module:
        return (f"`{what}` changes in place the module-level array `{found.alias}` (bound to `{found.name}`"
                + (f" by `{found.copy[0]} = {found.copy[1]}`" if found.copy and found.copy[1] != found.alias else "")
                + "): NumPy keeps the change for every later call; srcjax arrays are immutable (as JAX's)",
                f"copy it first (`{found.name} = np.copy({found.alias})`), or pass the array as an argument and "
                f"return the new value")
    view = found.copy is not None and not found.copy[1].isidentifier()
    bound = (f"which shares it through a view (`{found.copy[0]} = {found.copy[1]}`: not a copy)" if view and found.copy
             and not found.copy[1].startswith("(") and (user_view_of(cst.parse_expression(found.copy[1])) or
                                                         "[" in found.copy[1]) else
             f"which may be that same array (`{found.copy[0]} = {found.copy[1]}` is not a copy)" if view and found.copy
             else "bound to the same array")
    return (f"`{what}` changes `{found.name}`'s array in place in NumPy, so `{found.alias}`, {bound}, would "
            f"change too; srcjax arrays are immutable (as JAX's) and `{found.alias}` would keep the old value",
            (f"to keep the old value in both, copy where the alias is made: `{found.copy[0]} = "
             + (f"np.copy({found.copy[1]})`" if found.copy[1].isidentifier() else f"{found.copy[1]}.copy()`")
             if found.copy else "copy the array before changing it (np.copy)")
            + f"; to see the change, compute `{found.alias}` again after it")
