"""The events of a function's body that :func:`aliasing.scan` reads, in program order: each small statement's reads,
then what it binds, copies (a name, a view, an item), changes in place, puts in a container or may share
(``read``, ``bind``, ``copy``, ``inplace``, ``holds``, ``may``, ``may_add``, ``may_u``, ``repeat``, ``helper``,
``jump``), with the loops and ifs around it. Read-only: it looks at the user's statements as written (libcst),
before normalization, and decides nothing."""

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

__all__ = ["CALLER", "VALUE", "Event", "Walk", "record", "user_view_of"]

# the second names frontend/changed_arguments.py gives a helper's parameters (the caller's, read after the helper):
# a helper call's change reaching one is the helper's change of its parameter, whatever else reads it
CALLER = "_srcjax_caller_"
# the names of the values of a tuple assignment to elements that are integer-indexed items (``y[0], y[1] = y[1],
# y[0]``: views of rows of a 2-D ``y``, written after the first target is): ``VALUE`` + the position + the index
VALUE = "_srcjax_value_"


@dataclass
class Event:
    """One thing a statement does to a name, at position ``pos`` (statements, ifs and loops in program order)."""
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
    # shared with ``source`` or a number/copy: known when the function is specialized: aliasing.scan's ``checked``)
    small: Any = None  # the small statement (an in-place ``w -= v``'s AugAssign)
    module: bool = False  # copy: of a module-level array (a callee's ``return TABLE``)
    sources: tuple[str, ...] = ()  # may/may_add: the names whose arrays the bound value may be or hold; helper: the
    # names the statement reads besides the call's (after it, in NumPy's order: `fill(b, x) + b`)
    key: str = ""  # inplace through an item: the item's key as written (``'a'``, ``0``); holds: the item's key
    item: bool = False  # inplace: through an item (``ys[0] += v``, ``ys[0][1] = v``: the array an item holds)
    items: tuple[tuple[str, str], ...] = ()  # may_u: (variable, item as written) of the integer-indexed items
    # (``m[0]``) the bound value may be or hold: views or copies, known when specializing (item_views.py)
    target: Any = None  # inplace: the element written, one of several (``y[0]`` of ``y[0], y[1] = v``, ``a[0] = b[0] =
    # v``): aliasing.scan's ``checked`` of it is by its ``id``


@dataclass
class Walk:
    """The events recorded so far, and where the walk is (the loops and ifs around it)."""
    events: list[Event] = field(default_factory=list)
    pos: Iterator[int] = field(default_factory=itertools.count)
    loops: list[list[int]] = field(default_factory=list)
    guards: list[int] = field(default_factory=list)
    containers: set[str] = field(default_factory=set)  # names bound to a list or dict display
    returned: Callable[[cst.Call], tuple[str, bool] | None] | None = None  # returned_alias.returned_source
    changed: Callable[[cst.Call], list[tuple[str, str, bool, bool, str]]] | None = None  # changed_arguments.py


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


def _item_of(value: cst.BaseExpression, w: Walk) -> str | None:
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


def _may_leaf(value: cst.BaseExpression, held: bool) -> list[str] | None:
    if isinstance(value, cst.Name):
        return [value.value] if held and value.value not in ("None", "True", "False") else []
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
            value.func.attr.value in _SHARING_METHODS and isinstance(value.func.value, cst.Name):
        return [value.func.value.value]
    if held and (base := _user_view_of(value)) is not None:  # (`y[i]`: a copy of a 1-D array's element)
        return [base]
    return None


def _may_sources(value: cst.BaseExpression, held: bool = False) -> list[str]:
    """The names whose arrays ``value`` may be, or hold as items, without a copy: a name (``held``: as an item of
    a container being made), the elements of a display, an item of a display (``[s][0]``), a branch of a
    conditional expression, the arguments of ``list(...)``/``dict(a=x)``/``max(...)``, a concatenation of lists
    (``[s] + [x]``), a container method's result (``d.get('a')``). Anything else is a new array (an operator's,
    a NumPy function's) or followed by the rest of this module (views, items of a name, a user function)."""
    return item_views.display_sources(value, held, _may_leaf, _SHARING_CALLS, True)


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


def _unsure_unpacked(ev: Callable[..., None], tgt: cst.BaseExpression, s: cst.Assign, p: int) -> dict[int, str]:
    """The events of ``tgt = s.value`` for integer-indexed items: an element of an unpacking of one length
    (``a, b = m[0], m[1]``) is a copy of an unsure item, as ``a = m[0]``; another unpacking or a name bound to a
    comprehension (``rows = [m[i] for i in range(2)]``) may be or hold those items. An item assigned to an element
    target (``y[0], y[1] = y[1], y[0]``) is a copy too, to a name of its own (:data:`VALUE`, ``p`` the statement's
    position): the result gives it by the target's ``id``, to be read where that target is written."""
    value = s.value
    values: dict[int, str] = {}
    if isinstance(tgt, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) and \
            len(value.elements) == len(tgt.elements) and \
            not any(isinstance(e, cst.StarredElement) for e in [*tgt.elements, *value.elements]):
        for j, (t, v) in enumerate(zip(tgt.elements, value.elements)):
            if isinstance(t.value, cst.Name) and (base := _unsure_item(v.value)) is not None:
                ev("copy", t.value.value, source=base, made=code(v.value), unsure=True)
            elif _one_level(t.value) and (base := _unsure_item(v.value)) is not None:
                values[id(t.value)] = f"{VALUE}{p}_{j}"
                ev("copy", values[id(t.value)], source=base, made=code(v.value), unsure=True)
            elif isinstance(t.value, (cst.Tuple, cst.List)) or isinstance(t.value, cst.Name):
                if (held := item_views.unsure_sources(v.value, isinstance(t.value, (cst.Tuple, cst.List)))):
                    for n in target_names(t.value):
                        ev("may_u", n, items=tuple(held), made=code(s))
        return values
    if (held := item_views.unsure_sources(value)):
        for n in target_names(tgt):
            ev("may_u", n, items=tuple(held), made=code(s))
    return values


def _one_level(t: cst.BaseExpression) -> bool:
    """Whether ``t`` is an element of a variable (``y[0]``) or of its item (``y[0][1]``: frontend/nested_writes.py)."""
    return isinstance(t, cst.Subscript) and (isinstance(t.value, cst.Name) or isinstance(t.value, cst.Subscript) and
                                             isinstance(t.value.value, cst.Name))


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


def _small(w: Walk, s: cst.BaseSmallStatement, node: cst.CSTNode) -> None:
    """The statement's reads, then what it binds or changes (``v = v + 1`` reads the old ``v``)."""
    p = next(w.pos)
    loops = tuple((lp[0], -1) for lp in w.loops)
    reads: list[str] = []
    effects: list[Event] = []

    def ev(kind: str, name: str, node: cst.CSTNode = node, **kw: Any) -> None:
        effects.append(Event(p, kind, name, node, loops=loops, guards=tuple(w.guards), small=s, **kw))

    if isinstance(s, (cst.Continue, cst.Break, cst.Return)):  # (a path that skips what follows: read_later)
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
                if base is not None and isinstance(tgt, cst.Subscript) and not slot:  # (`a[0] = b[0] = v`: each)
                    ev("inplace", base, item=isinstance(tgt.value, cst.Subscript), key=_key(tgt.value),
                       target=tgt if len(s.targets) > 1 else None)
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
            else:  # (NumPy evaluates every value, then assigns the targets in order: the values are bound first)
                for n in target_names(tgt):
                    ev("bind", n, literal=isinstance(tgt, cst.Name) and _is_literal(s.value))
                for n, srcs in _unpacked_sources(tgt, s.value):  # (`a, b = x, y`, `a, b = ys`, `t = [s][0]`)
                    if srcs:
                        ev("may", n, sources=tuple(srcs), made=code(s))
                values = _unsure_unpacked(ev, tgt, s, p)
                for sub in _element_targets(tgt):  # (`KE[0], PE[0] = v`: each element written in place)
                    base = _base_name(sub)
                    reads += [n for n in names_in(sub) if n != base]
                    if id(sub) in values:  # (its value, `y[1]` of `y[0], y[1] = y[1], y[0]`, is read as it is written)
                        ev("read", values[id(sub)])
                    if base is not None and not (base in w.containers and isinstance(sub.value, cst.Name)):
                        ev("inplace", base, item=isinstance(sub.value, cst.Subscript), key=_key(sub.value), target=sub)
                    elif base is not None:
                        ev("holds", base, source="", made=_key(sub))
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
    w.events += [Event(p, "read", n, node, loops=loops, guards=tuple(w.guards)) for n in reads] + effects


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


def _block(w: Walk, stmts: Sequence[Any]) -> None:
    for st in stmts:
        if isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                _small(w, small, small)
        elif isinstance(st, cst.If):
            p = next(w.pos)
            w.events += [Event(p, "read", n, st.test) for n in names_in(st.test)]
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
                w.events += [Event(p, "read", n, st.iter) for n in names_in(st.iter)]
                # (`for d in ds`: each item is ds's own array, changed in place by `d[0] = v` or `d -= v`; so are
                # `p` in `for p, g in zip(params, grads)`, `for i, p in enumerate(params)`, `for p in d.values()`)
                w.events += [Event(p, "copy", n, st.target, source=seq, made=f"{seq}[k]", guards=(p,)) if seq else
                             Event(p, "bind", n, st.target, guards=(p,)) for n, seq in _loop_items(st)]
                if (srcs := _may_sources(st.iter, True)) and not isinstance(st.iter, cst.Name):  # (for v in [x, y])
                    w.events += [Event(p, "may", n, st.target, sources=tuple(srcs), made=f"for ... in {code(st.iter)}",
                                        guards=(p,)) for n in target_names(st.target)]
                if (held := item_views.unsure_sources(st.iter, True)) and not isinstance(st.iter, cst.Name):
                    w.events += [Event(p, "may_u", n, st.target, items=tuple(held), made=f"for ... in {code(st.iter)}",
                                        guards=(p,)) for n in target_names(st.target)]
            else:
                w.events += [Event(p, "read", n, st.test) for n in names_in(st.test)]
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


def record(fdef: cst.FunctionDef, returned: Callable[[cst.Call], tuple[str, bool] | None] | None = None,
           changed: Callable[[cst.Call], list[tuple[str, str, bool, bool, str]]] | None = None) -> Walk:
    """The events of ``fdef``'s body (nested definitions are functions of their own), with the names it binds to
    containers."""
    w = Walk(containers=_containers(fdef), returned=returned, changed=changed)
    _block(w, fdef.body.body)
    return w

