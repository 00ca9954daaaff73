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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
import numpy as np

from . import item_views
from .names import code, names_in, target_names, walk
from .syntax import attr_chain


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


@dataclass
class _Event:
    pos: int
    kind: str  # read | bind | copy | inplace | jump (continue, break, return) | holds | may | may_add | may_u
    name: str
    node: cst.CSTNode
    source: str = ""  # copy: the name copied
    loops: tuple[tuple[int, int], ...] = ()  # the enclosing loops' position ranges
    literal: bool = False  # bind: from an immutable literal
    made: str = ""  # copy: the view expression (``y.reshape(-1)``), when not a plain name
    guards: tuple[int, ...] = ()  # the positions of the enclosing ifs and loops, innermost last
    rebinds: bool = False  # helper: the change is ``p op= v`` (a number is bound again: changed_arguments.Change)
    unsure: bool = False  # copy: an item of an argument's container or an integer index of an array (an array
    # shared with ``source`` or a number/copy: known when the function is specialized, :func:`checked_in_place`)
    small: Any = None  # the small statement (an in-place ``w -= v``'s AugAssign)
    module: bool = False  # copy: of a module-level array (a callee's ``return TABLE``)
    sources: tuple[str, ...] = ()  # may/may_add: the names whose arrays the bound value may be or hold; helper: the
    # names the statement reads besides the call's (after it, in NumPy's order: `fill(b, x) + b`)
    key: str = ""  # inplace through an item: the item's key as written (``'a'``, ``0``); holds: the item's key
    item: bool = False  # inplace: through an item (``ys[0] += v``, ``ys[0][1] = v``: the array an item holds)
    items: tuple[tuple[str, str], ...] = ()  # may_u: (variable, item as written) of the integer-indexed items
    # (``m[0]``) the bound value may be or hold: views or copies, known when specializing (item_views.py)


@dataclass
class _Walk:
    events: list[_Event] = field(default_factory=list)
    pos: Iterator[int] = field(default_factory=itertools.count)
    loops: list[list[int]] = field(default_factory=list)
    guards: list[int] = field(default_factory=list)
    containers: set[str] = field(default_factory=set)  # names bound to a list or dict display
    returned: Callable[[cst.Call], tuple[str, bool] | None] | None = None  # returned_alias.returned_source
    changed: Callable[[cst.Call], list[tuple[str, str, bool, bool, str]]] | None = None  # changed_arguments.py


# the second names frontend/changed_arguments.py gives a helper's parameters (the caller's, read after the helper):
# a helper call's change reaching one is the helper's change of its parameter, whatever else reads it
CALLER = "_srcjax_caller_"

_WRITES_FIRST = ("at", "fill_diagonal", "copyto", "put_along_axis")  # (np.add.at(a, ...), ...: change a in place)


def _containers(fdef: cst.FunctionDef) -> set[str]:
    """The names the function binds to a list or dict of values that may be arrays (a display with an item other
    than a literal, a comprehension, ``list(...)``, ``dict(...)``), and the plain second names of those (``m = d``:
    ``m["b"] = v`` writes a slot of the same dict, not into an array; view_updates.py names the second name):
    ``cfg = {"lr": 0.1}``'s items are numbers."""
    out: set[str] = set()
    copies: list[tuple[str, str]] = []
    for n in walk(fdef.body):
        if type(n) is not cst.Assign:  # (exact type: libcst's node classes are final)
            continue
        v = n.value
        items = [e.value for e in v.elements] if isinstance(v, (cst.List, cst.Dict)) else None
        if isinstance(v, (cst.ListComp, cst.DictComp)) or items is not None and not all(map(_is_literal, items)) or \
                isinstance(v, cst.Call) and isinstance(v.func, cst.Name) and v.func.value in ("list", "dict"):
            out.update(t.target.value for t in n.targets if isinstance(t.target, cst.Name))
        elif isinstance(v, cst.Name):
            copies += [(t.target.value, v.value) for t in n.targets if isinstance(t.target, cst.Name)]
    while grown := {a for a, b in copies if b in out and a not in out}:
        out |= grown
    return out


def _item_of(value: cst.BaseExpression, w: _Walk) -> str | None:
    """The list or dict the function made whose own item ``value`` is (``params["w"]``, ``params[0]``): an in-place
    change of it changes the container's item. (An argument's item may be a number, which ``+=`` binds again, and an
    array's integer index is a view or a copy by its rank: neither is known here.)"""
    if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) and len(value.slice) == 1 and \
            isinstance(value.slice[0].slice, cst.Index) and value.value.value in w.containers:
        return value.value.value
    return None


_unsure_item = item_views.unsure_item


def _base_name(t: cst.BaseExpression) -> str | None:
    while isinstance(t, (cst.Subscript, cst.Attribute)):
        t = t.value
    return t.value if isinstance(t, cst.Name) else None


def _is_literal(v: cst.BaseExpression) -> bool:
    if isinstance(v, cst.UnaryOperation):
        v = v.expression
    return isinstance(v, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)) or (
        isinstance(v, cst.Name) and v.value in ("True", "False", "None"))


# what may return a view of its array (the user's spelling, before normalization)
_VIEW_METHODS = {"reshape", "ravel", "squeeze", "transpose", "swapaxes", "view", "diagonal"}
_VIEW_FUNCTIONS = {"reshape", "transpose", "ravel", "squeeze", "expand_dims", "swapaxes", "moveaxis", "broadcast_to",
                   "atleast_1d", "atleast_2d", "atleast_3d", "asarray", "diagonal", "real", "flip", "fliplr", "flipud",
                   "rot90"}


_NAMED = cst.Name("_view")  # (the inner view of a view of a view, as a name: :func:`_user_view_of`)


def _user_view_of(value: cst.BaseExpression) -> str | None:
    """The variable whose array ``value`` may be a NumPy view of: ``y.T``, ``y.reshape(-1)``,
    ``np.reshape(y, s)``, ``y[1:]``, ``y[:, None]`` (an integer index of a 1-D array is a copy, so a
    subscript counts only with a slice, ``None`` or ``...``); a view of a view too (``y.reshape(2, 2)[:, 0]``)."""
    if isinstance(value, cst.Attribute) and value.attr.value == "T" and isinstance(value.value, cst.Name):
        return value.value.value
    if isinstance(value, cst.Attribute) and value.attr.value == "T":
        return _user_view_of(value.value)
    if isinstance(value, cst.Subscript) and not isinstance(value.value, cst.Name):  # (a view's view: `y.T[1:]`)
        base = _user_view_of(value.value)
        return base if base is not None and _user_view_of(value.with_changes(value=_NAMED)) else None
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
            not isinstance(value.func.value, cst.Name) and value.func.attr.value in _VIEW_METHODS:
        return _user_view_of(value.func.value)  # (`y[1:].reshape(2, 2)`)
    if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) and any(
            isinstance(e.slice, cst.Slice) or isinstance(e.slice, cst.Index) and (
                isinstance(e.slice.value, cst.Ellipsis) or
                isinstance(e.slice.value, cst.Name) and e.slice.value.value == "None")
            for e in value.slice):
        return value.value.value
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        f = value.func
        if f.attr.value in _VIEW_METHODS and isinstance(f.value, cst.Name) and f.value.value not in ("np", "numpy"):
            return f.value.value
        chain = attr_chain(f)
        if chain is not None and chain[0] in ("np", "numpy") and chain[-1] in _VIEW_FUNCTIONS and value.args \
                and isinstance(value.args[0].value, cst.Name):
            return value.args[0].value.value
    return None


user_view_of = _user_view_of


def _branch_source(value: cst.BaseExpression) -> str | None:
    """The variable whose array ``value``, a conditional expression, may be: a branch that is a name or a view of
    one (``s if c else s * 2``: NumPy's ``t`` is ``s`` itself where ``c`` holds); the first of
    :func:`_branch_sources`."""
    found = _branch_sources(value)
    return found[0] if found else None


def _branch_sources(value: cst.BaseExpression) -> list[str]:
    """Every variable whose array the conditional expression ``value`` may be (``v0 if c else x``: ``v0`` or
    ``x``), in order."""
    if not isinstance(value, cst.IfExp):
        return []
    out: list[str] = []
    for b in (value.body, value.orelse):
        if isinstance(b, cst.Name) and b.value not in ("None", "True", "False"):
            out.append(b.value)
        elif (base := _user_view_of(b)) is not None:
            out.append(base)
        else:
            out += _branch_sources(b)
    return list(dict.fromkeys(out))


def _key(t: cst.BaseExpression) -> str:
    """The key of the item ``t`` (``d['a']``, ``ys[0]``) as written; ``""`` where it is not one index."""
    if isinstance(t, cst.Subscript) and len(t.slice) == 1 and isinstance(t.slice[0].slice, cst.Index):
        return code(t.slice[0].slice.value).replace('"', "'")
    return ""


def _held(e: cst.BaseExpression) -> str | None:
    """The variable whose array the container item ``e`` is (a name, or a view of one)."""
    if isinstance(e, cst.Name) and e.value not in ("None", "True", "False"):
        return e.value
    return _user_view_of(e)


def _display_items(value: cst.List | cst.Dict | cst.Tuple) -> list[tuple[str, cst.BaseExpression]]:
    if isinstance(value, cst.Dict):
        return [(code(e.key).replace('"', "'"), e.value) for e in value.elements if isinstance(e, cst.DictElement)]
    return [(str(k), e.value) for k, e in enumerate(value.elements)]


_ADDING = {"append", "extend", "insert", "update", "setdefault", "add"}
_SHARING_CALLS = {"list", "tuple", "dict", "reversed", "sorted", "max", "min", "next", "iter", "zip", "enumerate"}
_SHARING_METHODS = {"get", "pop", "values", "items", "setdefault", "popitem"}


def _may_sources(value: cst.BaseExpression, held: bool = False) -> list[str]:
    """The names whose arrays ``value`` may be, or hold as items, without a copy: a name (``held``: as an item of
    a container being made), the elements of a display, an item of a display (``[s][0]``), a branch of a
    conditional expression, the arguments of ``list(...)``/``dict(a=x)``/``max(...)``, a concatenation of lists
    (``[s] + [x]``), a container method's result (``d.get('a')``). Anything else is a new array (an operator's,
    a NumPy function's) or followed by the rest of this module (views, items of a name, a user function)."""
    if isinstance(value, cst.Name):
        return [value.value] if held and value.value not in ("None", "True", "False") else []
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return [n for e in value.elements for n in _may_sources(e.value, True)]
    if isinstance(value, cst.Dict):
        return [n for e in value.elements if isinstance(e, cst.DictElement) for n in _may_sources(e.value, True)]
    if isinstance(value, cst.Subscript) and isinstance(value.value, (cst.List, cst.Tuple, cst.Dict)):
        return _may_sources(value.value, True)
    if isinstance(value, cst.IfExp):
        return _may_sources(value.body, True) + _may_sources(value.orelse, True)
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add) and \
            any(isinstance(x, (cst.List, cst.Tuple)) for x in (value.left, value.right)):
        return _may_sources(value.left, True) + _may_sources(value.right, True)
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in _SHARING_CALLS:
        return [n for a in value.args for n in _may_sources(a.value, True)]
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
            value.func.attr.value in _SHARING_METHODS and isinstance(value.func.value, cst.Name):
        return [value.func.value.value]
    if held and (base := _user_view_of(value)) is not None:  # (`y[i]`: a copy of a 1-D array's element)
        return [base]
    return []


def _unpacked_sources(tgt: cst.BaseExpression, value: cst.BaseExpression,
                      element: bool = False) -> list[tuple[str, list[str]]]:
    """Each name ``tgt = value`` binds, with the names whose arrays it may be (:func:`_may_sources`): element by
    element where both sides are displays of one length (``x, y, it = a, b, 0``)."""
    if isinstance(tgt, (cst.Tuple, cst.List)):
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(tgt.elements) and \
                not any(isinstance(e, cst.StarredElement) for e in [*tgt.elements, *value.elements]):
            return [p for t, v in zip(tgt.elements, value.elements) for p in _unpacked_sources(t.value, v.value, True)]
        whole = [value.value] if isinstance(value, cst.Name) else _may_sources(value)
        return [(n, whole) for n in target_names(tgt)]
    if isinstance(tgt, cst.Name):  # (an element of an unpacking: a name or a view of one is the same array)
        return [(tgt.value, _may_sources(value, element))]
    return []


def _unsure_unpacked(ev: Callable[..., None], tgt: cst.BaseExpression, s: cst.Assign) -> None:
    """The events of ``tgt = s.value`` for integer-indexed items: an element of an unpacking of one length
    (``a, b = m[0], m[1]``) is a copy of an unsure item, as ``a = m[0]``; another unpacking or a name bound to a
    comprehension (``rows = [m[i] for i in range(2)]``) may be or hold those items."""
    value = s.value
    if isinstance(tgt, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) and \
            len(value.elements) == len(tgt.elements) and \
            not any(isinstance(e, cst.StarredElement) for e in [*tgt.elements, *value.elements]):
        for t, v in zip(tgt.elements, value.elements):
            if isinstance(t.value, cst.Name) and (base := _unsure_item(v.value)) is not None:
                ev("copy", t.value.value, source=base, made=code(v.value), unsure=True)
            elif isinstance(t.value, (cst.Tuple, cst.List)) or isinstance(t.value, cst.Name):
                if (held := item_views.unsure_sources(v.value, isinstance(t.value, (cst.Tuple, cst.List)))):
                    for n in target_names(t.value):
                        ev("may_u", n, items=tuple(held), made=code(s))
        return
    if (held := item_views.unsure_sources(value)):
        for n in target_names(tgt):
            ev("may_u", n, items=tuple(held), made=code(s))


def _repeated(value: cst.BaseExpression) -> str | None:
    """``[e] * n`` (or ``n * [e]``) of an ``e`` that may be an array: every item is the same object in NumPy.
    The name ``e`` is (``""`` for another expression, ``np.zeros(3)``), else None."""
    if not isinstance(value, cst.BinaryOperation) or not isinstance(value.operator, cst.Multiply):
        return None
    lst = value.left if isinstance(value.left, cst.List) else value.right if isinstance(value.right, cst.List) \
        else None
    if lst is None or len(lst.elements) != 1 or _is_literal(lst.elements[0].value):
        return None
    e = lst.elements[0].value
    return e.value if isinstance(e, cst.Name) else ""


def _element_targets(t: cst.BaseExpression) -> list[cst.Subscript]:
    """The array elements among the targets of the tuple target ``t`` (``a[0], (b, c[1]) = v``: a[0], c[1])."""
    if isinstance(t, (cst.Tuple, cst.List)):
        return [sub for e in t.elements for sub in _element_targets(e.value)]
    return [t] if isinstance(t, cst.Subscript) else []


def _small(w: _Walk, s: cst.BaseSmallStatement, node: cst.CSTNode) -> None:
    """The statement's reads, then what it binds or changes (``v = v + 1`` reads the old ``v``)."""
    p = next(w.pos)
    loops = tuple((lp[0], -1) for lp in w.loops)
    reads: list[str] = []
    effects: list[_Event] = []

    def ev(kind: str, name: str, node: cst.CSTNode = node, **kw: Any) -> None:
        effects.append(_Event(p, kind, name, node, loops=loops, guards=tuple(w.guards), small=s, **kw))

    if isinstance(s, (cst.Continue, cst.Break, cst.Return)):  # (a path that skips what follows: _read_later)
        ev("jump", "")
    calls = [n for n in walk(s) if isinstance(n, cst.Call)] if w.changed is not None else []
    for made, (name, what, rebinds, item, param) in ((c, x) for c in calls for x in w.changed(c)):  # type: ignore[misc]
        rest = names_in(s, skip_targets=True)  # (`fill(b, x) + b`: b read after the call, in the statement itself)
        for n in names_in(made):
            rest.remove(n)
        whole = getattr(s, "value", None) is made and (isinstance(s, cst.Expr) or isinstance(s, cst.Assign) and
                                                       len(s.targets) == 1 and isinstance(s.targets[0].target, cst.Name)
                                                       and s.targets[0].target.value != name)
        arg = next((code(a.value) for a in made.args if type(a.value) is not cst.Name and
                    _base_name(a.value) == name), "")  # (`_relu_out(X[0])`: the hint binds `X[0]`)
        ev("helper", name, made=f"`{code(made)}` runs {what}", rebinds=rebinds, sources=tuple(rest),
           key=param if whole and not rebinds else "", source=arg)  # (`fill(b, x)`: returned: helper_checks)
        if item:  # (`fill(box[0], x)`: the array the container holds changes, as by `box[0][...] = v`)
            ev("inplace", name, item=True, key=next((_key(a.value) for a in made.args
                                                     if _base_name(a.value) == name), ""))
    if isinstance(s, cst.Assign):
        reads = names_in(s.value)
        first = ""  # (`a = b = np.zeros(3)`: one array, two names)
        for t in s.targets:
            tgt = t.target
            if isinstance(tgt, cst.Name) and first:
                ev("copy", tgt.value, source=first)
            elif isinstance(tgt, (cst.Subscript, cst.Attribute)):
                base = _base_name(tgt)
                reads += [n for n in names_in(tgt) if n != base]
                slot = base in w.containers and isinstance(tgt.value, cst.Name)  # (xs[i] = v: a slot, not its item)
                if base is not None and isinstance(tgt, cst.Subscript) and not slot:
                    ev("inplace", base, item=isinstance(tgt.value, cst.Subscript), key=_key(tgt.value))
                elif slot and isinstance(tgt, cst.Subscript) and base is not None:
                    ev("holds", base, source=_held(s.value) or "", made=_key(tgt))  # (the slot holds a new value)
            elif isinstance(tgt, cst.Name) and isinstance(s.value, cst.Name):
                ev("copy", tgt.value, source=s.value.value)
            elif isinstance(tgt, cst.Name) and (base := _branch_source(s.value)) is not None:
                ev("copy", tgt.value, source=base, made=f"({code(s.value)})")  # (t = s if c else 2 * s: s's array)
                if others := [n for n in _branch_sources(s.value) if n != base]:  # (`v0 if c else x`: x's too; was
                    ev("may", tgt.value, sources=tuple(others), made=code(s))  # v0's only, a silent wrong answer)
            elif isinstance(tgt, cst.Name) and isinstance(s.value, (cst.List, cst.Dict, cst.Tuple)) and \
                    not any(isinstance(e, (cst.StarredElement, cst.StarredDictElement)) for e in s.value.elements):
                ev("bind", tgt.value)
                for key, elem in _display_items(s.value):  # (`d = {'a': v}`: d['a'] is v's own array)
                    if (src := _held(elem)) is not None:
                        ev("holds", tgt.value, source=src, made=key, node=elem)
                if (srcs := _may_sources(s.value)):  # (`ys = [s, x]`; `a, b = ys`: a may be s's array)
                    ev("may", tgt.value, sources=tuple(srcs), made=code(s))
                if (held := item_views.unsure_sources(s.value)):  # (`rows = [m[0], m[1]]`: views of m's rows?)
                    ev("may_u", tgt.value, items=tuple(held), made=code(s))
            elif isinstance(tgt, cst.Name) and (rep := _repeated(s.value)) is not None:
                ev("bind", tgt.value)
                ev("repeat", tgt.value, source=rep, made=code(s.value))
            elif isinstance(tgt, cst.Name) and isinstance(s.value, cst.Call) and \
                    (out := _written_name(s.value)) is not None:
                ev("copy", tgt.value, source=out, made=code(s.value))  # (`q = np.exp(p, p)`: q is p's array)
            elif isinstance(tgt, cst.Name) and isinstance(s.value, cst.Call) and w.returned is not None and \
                    (got := w.returned(s.value)) is not None:
                ev("copy", tgt.value, source=got[0], made=code(s.value), module=got[1])  # (ident(s), get_table())
            elif isinstance(tgt, cst.Name) and (base := _user_view_of(s.value) or _item_of(s.value, w)) is not None:
                ev("copy", tgt.value, source=base, made=code(s.value))  # a view shares the array
            elif isinstance(tgt, cst.Name) and (base := _unsure_item(s.value)) is not None:
                ev("copy", tgt.value, source=base, made=code(s.value), unsure=True)
            elif isinstance(tgt, cst.Name) and (item := item_views.branch_item(s.value)) is not None:
                ev("copy", tgt.value, source=item[0], made=item[1], unsure=True)  # (`r = m[0] if c else m[1]`)
            else:
                for n in target_names(tgt):
                    ev("bind", n, literal=isinstance(tgt, cst.Name) and _is_literal(s.value))
                for sub in _element_targets(tgt):  # (`KE[0], PE[0] = v`: each element written in place)
                    base = _base_name(sub)
                    reads += [n for n in names_in(sub) if n != base]
                    if base is not None and not (base in w.containers and isinstance(sub.value, cst.Name)):
                        ev("inplace", base, item=isinstance(sub.value, cst.Subscript), key=_key(sub.value))
                    elif base is not None:
                        ev("holds", base, source="", made=_key(sub))
                for n, srcs in _unpacked_sources(tgt, s.value):  # (`a, b = x, y`, `a, b = ys`, `t = [s][0]`)
                    if srcs:
                        ev("may", n, sources=tuple(srcs), made=code(s))
                _unsure_unpacked(ev, tgt, s)
            first = first or (tgt.value if isinstance(tgt, cst.Name) else "")
    elif isinstance(s, cst.AugAssign) and isinstance(s.target, cst.Name) and s.target.value in w.containers and \
            isinstance(s.operator, cst.AddAssign) and isinstance(s.value, (cst.List, cst.Tuple)):
        # `out += [y]` of a list: extends it (it holds y's array, as `out.append(y)`), changes no array (was refused)
        reads = names_in(s.value) + [s.target.value]
        if (srcs := [n for e in s.value.elements for n in _may_sources(e.value, True)]):
            ev("may_add", s.target.value, sources=tuple(srcs), made=code(s))
        if (held := [p for e in s.value.elements for p in item_views.unsure_sources(e.value, True)]):
            ev("may_u", s.target.value, items=tuple(held), made=code(s), key="add")
    elif isinstance(s, cst.AugAssign):
        reads = names_in(s.value)
        base = _base_name(s.target)
        if isinstance(s.target, cst.Subscript):
            reads += [n for n in names_in(s.target) if n != base]
        if base is not None and isinstance(s.target, (cst.Name, cst.Subscript)):
            ev("inplace", base, item=isinstance(s.target, cst.Subscript) and isinstance(s.target.value, cst.Name),
               key=_key(s.target))
    elif isinstance(s, cst.AnnAssign) and s.value is not None:
        reads = names_in(s.value)
        for n in target_names(s.target):
            ev("bind", n, literal=_is_literal(s.value))
    else:
        reads = names_in(s)
        call = s.value if isinstance(s, cst.Expr) else None
        chain = attr_chain(call.func) if isinstance(call, cst.Call) else None
        if isinstance(call, cst.Call) and chain is not None and chain[-1] in _WRITES_FIRST and \
                call.args and isinstance(call.args[0].value, cst.Name):  # np.add.at(a, i, b) changes a in place
            ev("inplace", call.args[0].value.value)
        if isinstance(call, cst.Call) and chain is not None and len(chain) == 2 and chain[1] == "fill":
            ev("inplace", chain[0])  # (a.fill(v))
        if isinstance(call, cst.Call) and chain is not None and len(chain) == 2 and chain[1] == "update" and \
                chain[0] not in w.containers:  # (a parameter's `d.update(b=v)` is `d["b"] = v`: dict_methods.py)
            ev("inplace", chain[0])
        if isinstance(call, cst.Call) and chain is not None and len(chain) == 2 and chain[1] in _ADDING and \
                chain[0] not in ("np", "numpy", "jnp", "math") and \
                (srcs := [n for a in call.args for n in _may_sources(a.value, True)]):
            ev("may_add", chain[0], sources=tuple(srcs), made=code(s))  # (ys.append(x): ys holds x's array)
        if isinstance(call, cst.Call) and chain is not None and len(chain) == 2 and chain[1] in _ADDING and \
                chain[0] not in ("np", "numpy", "jnp", "math") and \
                (held := [p for a in call.args for p in item_views.unsure_sources(a.value, True)]):
            ev("may_u", chain[0], items=tuple(held), made=code(s), key="add")  # (ys.append(m[0]))
        for a in call.args if isinstance(call, cst.Call) else ():  # np.clip(d, -5, 5, out=d) too
            if a.keyword is not None and a.keyword.value == "out" and isinstance(a.value, cst.Name):
                ev("inplace", a.value.value)
        if isinstance(call, cst.Call) and (out := _positional_out(call)) is not None:
            ev("inplace", out)  # (np.exp(K, K))
    w.events += [_Event(p, "read", n, node, loops=loops, guards=tuple(w.guards)) for n in reads] + effects


def _positional_out(call: cst.Call) -> str | None:
    """The array a NumPy ufunc's positional output names (``np.exp(K, K)``: ``K``), None if none."""
    chain = attr_chain(call.func)
    fv = getattr(np, chain[1], None) if chain is not None and len(chain) == 2 and chain[0] in ("np", "numpy") \
        else None
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    if isinstance(fv, np.ufunc) and fv.nout == 1 and len(positional) == fv.nin + 1 and \
            isinstance(positional[-1], cst.Name):
        return positional[-1].value
    return None


def _written_name(call: cst.Call) -> str | None:
    """The array a NumPy call writes its result into and returns (``out=p`` or ``np.exp(p, p)``: ``p``)."""
    out = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "out"), None)
    if isinstance(out, cst.Name):
        return out.value
    return _positional_out(call)


def _loop_items(st: cst.For) -> list[tuple[str, str]]:
    """Each name a ``for`` binds and the sequence whose item it is (``""``: none of a local name's)."""
    it, t = st.iter, st.target
    if isinstance(it, cst.Name):
        return [(n, it.value) for n in target_names(t)]
    f = it.func if isinstance(it, cst.Call) else None
    args = [a.value.value if isinstance(a.value, cst.Name) and a.keyword is None and not a.star else ""
            for a in it.args] if isinstance(it, cst.Call) else []
    parts = t.elements if isinstance(t, (cst.Tuple, cst.List)) else None
    if isinstance(f, cst.Name) and f.value == "zip" and parts is not None and len(parts) == len(args):
        return [(n, seq) for e, seq in zip(parts, args) for n in target_names(e.value)]
    if isinstance(f, cst.Name) and f.value == "enumerate" and parts is not None and len(parts) == 2 and args:
        return [(n, "") for n in target_names(parts[0].value)] + [(n, args[0]) for n in target_names(parts[1].value)]
    if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.attr.value in ("values", "items") and \
            not args:  # (`for k, v in d.items()`: v is d's item)
        item = t if f.attr.value == "values" else parts[1].value if parts is not None and len(parts) == 2 else None
        keys = [] if item is None or item is t else target_names(parts[0].value)  # type: ignore[index]
        return [(n, "") for n in keys] + [(n, f.value.value) for n in (target_names(item) if item is not None else [])]
    return [(n, "") for n in target_names(t)]


def _block(w: _Walk, stmts: Sequence[Any]) -> None:
    for st in stmts:
        if isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                _small(w, small, small)
        elif isinstance(st, cst.If):
            p = next(w.pos)
            w.events += [_Event(p, "read", n, st.test) for n in names_in(st.test)]
            w.guards.append(p)
            _block(w, st.body.body)
            orelse = st.orelse
            if isinstance(orelse, cst.If):
                _block(w, [orelse])
            elif orelse is not None:
                _block(w, orelse.body.body)
            w.guards.pop()
        elif isinstance(st, (cst.For, cst.While)):
            p = next(w.pos)
            w.loops.append([p])
            w.guards.append(p)
            start = len(w.events)
            if isinstance(st, cst.For):
                w.events += [_Event(p, "read", n, st.iter) for n in names_in(st.iter)]
                # (`for d in ds`: each item is ds's own array, changed in place by `d[0] = v` or `d -= v`; so are
                # `p` in `for p, g in zip(params, grads)`, `for i, p in enumerate(params)`, `for p in d.values()`)
                w.events += [_Event(p, "copy", n, st.target, source=seq, made=f"{seq}[k]", guards=(p,)) if seq else
                             _Event(p, "bind", n, st.target, guards=(p,)) for n, seq in _loop_items(st)]
                if (srcs := _may_sources(st.iter, True)) and not isinstance(st.iter, cst.Name):  # (for v in [x, y])
                    w.events += [_Event(p, "may", n, st.target, sources=tuple(srcs), made=f"for ... in {code(st.iter)}",
                                        guards=(p,)) for n in target_names(st.target)]
                if (held := item_views.unsure_sources(st.iter, True)) and not isinstance(st.iter, cst.Name):
                    w.events += [_Event(p, "may_u", n, st.target, items=tuple(held), made=f"for ... in {code(st.iter)}",
                                        guards=(p,)) for n in target_names(st.target)]
            else:
                w.events += [_Event(p, "read", n, st.test) for n in names_in(st.test)]
            _block(w, st.body.body)
            if st.orelse is not None:
                _block(w, st.orelse.body.body)
            end = next(w.pos)
            w.loops.pop()
            w.guards.pop()
            for e in w.events[start:]:  # close this loop's range in its events
                e.loops = tuple((a, end) if a == p and b == -1 else (a, b) for a, b in e.loops) + (
                    ((p, end),) if not any(a == p for a, _ in e.loops) else ())
        elif isinstance(st, (cst.With, cst.Try)):
            _block(w, st.body.body)
        # nested defs are separate functions


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
    w = _Walk(containers=_containers(fdef), returned=returned, changed=changed)
    _block(w, fdef.body.body)
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
        elif e.kind == "bind" and e.name in obj and not set(_ifs(e)) <= bound_ifs.get(e.name, set()):
            pass  # (bound again under an `if` the old binding is not under: on the other path it is the old array)
        elif e.kind == "bind":
            may.pop(e.name, None)
            may_u.pop(e.name, None)
            obj[e.name] = next(fresh)
            bound_ifs[e.name] = set(_ifs(e))
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
            bound_ifs[e.name] = set(_ifs(e))
            copied_at.setdefault((e.source, obj[e.name]), (e.name, e.made or e.source))
        elif e.kind == "helper":  # (the helper's change is its own copy's in srcjax: the caller's keeps the old)
            same = [e.name] + sorted(n for n, o in obj.items() if e.name in obj and o == obj[e.name] and n != e.name)
            same += [m for m, _ in _may_reach(may, obj, e.name) if m not in same]  # (`v = [b][0]; put(v, 1)`)
            same.sort(key=lambda n: not n.startswith(CALLER))  # (a caller's name first: changed_arguments.py)
            if e.rebinds and e.name in obj and obj[e.name] in immutable:
                continue  # (`t = 2.0; scale(t)`: a number is bound again in the helper, the caller's t stays)
            for m in same:
                if m not in e.sources and not _read_later(events, k, m, e):
                    continue
                if e.rebinds and deferred is not None and m not in e.sources and e.name not in w.containers:
                    # (its type decides: an array changes; a list or dict display's `+=` always does)
                    deferred.setdefault(id(e.small), []).append((e.name, e.made))
                    break
                if e.key and returns is not None and m not in e.sources and \
                        not any(_read_later(events, k, n, e) or n in e.sources for n in same if n != e.name):
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
            for m, via in [] if nested and not item_write else _may_reach(may, obj, e.name):  # (`a, b = x, y; a += 1`)
                if _read_later(events, k, m, e):
                    return InPlaceAlias(e.node, e.name, m, None, binding=may_at.get(via, "")), checked
            found = _unsure_change(events, k, e, obj, may, may_u, unsure, checked, w.containers)
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
                    if _read_later(events, k, m, e):
                        holder = next((code(x.small) for x in events[:k] if obj.get(x.name) == c and
                                       isinstance(x.small, cst.Assign) and ((x.kind, x.made) == ("holds", key) or
                                                                            (x.kind, key) == ("repeat", "*"))), "")
                        return InPlaceAlias(e.node, e.name, m, None, holder=holder or key), checked
            if e.item and v in repeated:  # (`ys = [x] * 2; ys[0] += 1`: every item is that one array)
                elem, held, made = repeated[v]
                others = [e.name] + ([elem] if elem and obj.get(elem) == held else [])
                if any(_read_later(events, k, m, e) for m in others):
                    return InPlaceAlias(e.node, e.name, e.name, (e.name, made), repeated=made), checked
            for m in sorted(n for n, o in obj.items() if o == v and n != e.name):
                if _read_later(events, k, m, e):
                    return InPlaceAlias(e.node, e.name, m, copied_at.get((m, v)) or copied_at.get((e.name, v))), \
                        checked
            src = unsure.get(e.name)
            if src is not None and obj.get(src[0]) == src[1] and isinstance(e.small, cst.AugAssign) and \
                    isinstance(e.small.target, cst.Name) and not _written_back(events, k, src[0], src[2]) and \
                    any(_read_later(events, k, m, e) for m in obj if obj[m] == src[1]):  # (`t = m[1:]; r = t[0]`)
                checked[id(e.small)] = (src[2], 1)  # (other changes through an unsure copy: not followed)
    return None, checked


def _items_held(events: list[_Event], k: int, holder: str, source: str, made: str) -> int:
    """How many times the container ``holder`` was given the item ``made`` of ``source`` (``m[0]``, as written)
    before event ``k`` (since it was last bound to a new container)."""
    n = 0
    for e in events[:k]:
        if e.name == holder and e.kind == "may_u":
            n = (n if e.key == "add" else 0) + sum(1 for v, w in e.items if v == source and w == made)
    return n


def _unsure_change(events: list[_Event], k: int, e: _Event, obj: dict[str, int], may: dict[str, set[tuple[str, int]]],
                   may_u: dict[str, set[tuple[str, int, str]]], unsure: dict[str, tuple[str, int, str]],
                   checked: dict[int, tuple[str, int]], containers: set[str]) -> tuple[str, str] | None:
    """An in-place change (event ``k``) that reaches, or is reached by, an integer-indexed item (``m[0]``: a view of
    a row of a 2-D ``m`` in NumPy, a number of a 1-D one) read after it (item_views.py). ``x op= v`` (``x`` a name
    or a container's item) is decided when specializing: ``checked`` gets (the item, the rank from which ``x``
    shares it); any other change is refused: (the name read after it, the statement binding the item)."""
    links = {(a, b) for a, pairs in may.items() for b, o in pairs if obj.get(b) == o}
    items = {(a, b, made) for a, trios in may_u.items() for b, o, made in trios if obj.get(b) == o}
    if not items and not unsure:
        return None
    aug = isinstance(e.small, cst.AugAssign) and (isinstance(e.small.target, cst.Name) and e.name not in containers
                                                  or isinstance(e.small.target, cst.Subscript) and
                                                  isinstance(e.small.target.value, cst.Name))
    small = e.small
    write = isinstance(small, cst.Assign) and not e.item and any(  # (`m[0, 0] = v`: decided when specializing)
        isinstance(t.target, cst.Subscript) and isinstance(t.target.value, cst.Name) for t in small.targets)
    same = {n for n, o in obj.items() if o == obj.get(e.name)}
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
        if (reader := next((r for r in readers if _read_later(events, k, r, e)), None)) is not None:
            if aug or write and rank > 1:
                checked[id(e.small)] = (made, rank)
                return None
            return reader, next((x.made for x in events if x.kind == "may_u" and x.name == a), made)
    for n, (src, value, made) in sorted(unsure.items()):  # (`a, b = m[0], m[1]`, then `m += 1`, `a` read)
        single = any(x.kind == "copy" and x.unsure and x.name == n and isinstance(x.small, cst.Assign) and
                     isinstance(x.small.targets[0].target, cst.Name) for x in events[:k])
        if value == obj.get(e.name) and n not in same and _read_later(events, k, n, e):
            if aug and isinstance(small.target, cst.Name) or write and not single:  # type: ignore[union-attr]
                checked[id(small)] = (made, 1 + item_views.depth(made))
                return None
            if not (single and isinstance(small, cst.Assign)):  # (`m[0, 0] = v` of `r = m[0]`: check_views')
                return n, f"{n} = {made}"
        elif n in same and obj.get(src) == value:  # (a change through `r = m[0]`: of m's row, where m is 2-D)
            holders = sorted(a for a, b, _ in items if obj.get(b) == value)  # (`d = {'q': m[1]}`: its rows too)
            names = [] if single else [m for m in obj if obj[m] == value]  # (`r = m[0]`'s names: check_views')
            names += _siblings(unsure, src, value, made, same)  # (`a, r = m[0], m[0]; a[0] = v`: r is that row)
            reader = next((m for m in holders + names if _read_later(events, k, m, e)), None)
            if reader is None:
                continue
            if aug and isinstance(small.target, cst.Name):  # type: ignore[union-attr]
                checked[id(small)] = (made, 1)  # (`r += v`: an array r is m's row)
                return None
            if isinstance(small, cst.Assign) or isinstance(small, cst.AugAssign) and \
                    isinstance(small.target, cst.Subscript):  # (`a, b = m[0], m[1]; a[0] = v`: a is an array)
                return reader, f"{n} = {made}"
    return None


def _siblings(unsure: dict[str, tuple[str, int, str]], source: str, value: int | None, made: str,
              but: set[str]) -> list[str]:
    """The names bound through an unsure copy of an item of ``source``'s current array (``r = m[0]``) that may
    share elements with its item ``made``: a row of a 2-D ``m`` that a change through ``made`` changes too (`ys =
    [m[0]]; r = m[0]; ys[0][0] = v`: NumPy's ``r`` changes; was not seen, a silent wrong answer)."""
    return sorted(n for n, (src, val, item) in unsure.items()
                  if src == source and val == value and n not in but and item_views.may_overlap(made, item))


def _may_reach(may: dict[str, set[tuple[str, int]]], obj: dict[str, int], name: str) -> list[tuple[str, str]]:
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


def _ifs(e: _Event) -> tuple[int, ...]:
    """The positions of the ``if`` statements around ``e`` (its guards that are not loops)."""
    return tuple(g for g in e.guards if all(g != a for a, _ in e.loops))


def _written_back(events: list[_Event], k: int, name: str, made: str) -> bool:
    """Whether ``made`` (``params["w"]``) is written (``params["w"] = w``) after event ``k`` before ``name`` is
    read: NumPy's and srcjax's values then agree."""
    for e in events[k + 1:]:
        if e.name != name:
            continue
        if e.kind == "inplace":
            return isinstance(e.small, cst.Assign) and any(code(t.target) == made for t in e.small.targets)
        return False
    return False


def _read_later(events: list[_Event], k: int, name: str, at: _Event) -> bool:
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
             and not found.copy[1].startswith("(") and (_user_view_of(cst.parse_expression(found.copy[1])) or
                                                         "[" in found.copy[1]) else
             f"which may be that same array (`{found.copy[0]} = {found.copy[1]}` is not a copy)" if view and found.copy
             else "bound to the same array")
    return (f"`{what}` changes `{found.name}`'s array in place in NumPy, so `{found.alias}`, {bound}, would "
            f"change too; srcjax arrays are immutable (as JAX's) and `{found.alias}` would keep the old value",
            (f"to keep the old value in both, copy where the alias is made: `{found.copy[0]} = "
             + (f"np.copy({found.copy[1]})`" if found.copy[1].isidentifier() else f"{found.copy[1]}.copy()`")
             if found.copy else "copy the array before changing it (np.copy)")
            + f"; to see the change, compute `{found.alias}` again after it")
