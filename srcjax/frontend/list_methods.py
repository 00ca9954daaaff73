"""A list changed in place, or rebound to itself joined with more items, read as the rebindings and appends every
transformation follows: ``out.reverse()`` -> ``out = out[::-1]``; ``out.extend([a, b])``, ``out += [a, b]`` and
``out = out + [a, b]`` -> ``out.append(a)`` then ``out.append(b)`` (``out.extend(xs)``, ``out += xs``, ``out = out +
xs`` -> ``for item in xs: out.append(item)``); ``out.insert(0, v)`` and ``out = [v] + out`` -> ``out = out[::-1]``,
``out.append(v)``, ``out = out[::-1]``; ``out.insert(2, v)`` (a literal place) -> ``out_tail = out[2:]``, ``out =
out[:2]``, ``out.append(v)``, then ``out_tail``'s items appended; ``hs = [f(p) for p in ps] + [y]``, and ``cur =
[f(p) for p in ps]`` of a list the function changes in place later, -> ``hs = []`` and the comprehension's items
appended (derivatives build a comprehension in a temporary list: ``cur`` would have been its second name); ``ys =
[x, *ws, y]`` -> ``ys = [x]``, ``ws``'s items appended, then ``y`` (elsewhere a join of copies, ``[x] + [item for
item in ws] + [y]``, which derivatives refuse: ``frontend/starred_displays.py``).

Derivatives follow a list built by ``append`` and read by slices, but did not follow the other methods that change
it in place: the tangent (or cotangent) list kept the old order or length, a silently wrong Jacobian under
``jacfwd``/``jacrev``/``jvp`` (rlax's and torchbeast's returns, ``targets.append(g)`` in a reversed loop, then
``targets.reverse()``); vmap refused them, and refused the joins (``out += [y]``, ``bwd = [b] + bwd``, ``bwd.insert(0,
b)``: an HMM's backward pass), which jit did not run in a loop either. A statement is rewritten only where NumPy's
change could not be seen through another name: the list is a local or a parameter whose bare name is never stored
elsewhere (``m = out``, ``[out, x]``, ``d[k] = out``, ``outer.append(out)``, a call of the user's); it may be read as
``out[i]``, ``out.append(...)``, ``len(out)``, ``np.stack(out)``, joined (``out + [y]``: a copy), iterated or
returned. A join or ``+=`` is rewritten only for a name every binding of which is a list (a display, a comprehension,
``list(...)``, a join of lists: ``x += [y]`` of an array adds), and ``out = out + ...`` not inside a loop over ``out``
(Python's loop walks the old list). Values that read the list are named before it changes (``out.extend([out[-1],
out[-1] * 2])``: both items of the old list; was appended one by one, the second reading the first, a silent wrong
answer). What is left is refused under derivatives where it changes a list that carries them
(``transforms/activity.py``), at the user's line.
"""

from __future__ import annotations

import dataclasses
import dis
import itertools
from typing import Any

import libcst as cst

from .names import names_in, target_names, walk
from .read import FunctionSource, Located
from .syntax import attr_chain, params_of

_REWRITTEN = ("reverse", "extend", "insert")
_READING_CALLS = frozenset({"len", "sum", "max", "min", "sorted", "tuple", "list", "any", "all"})
_NUMPY = frozenset({"np", "numpy", "jnp", "math"})
_WALKING = frozenset({"zip", "reversed", "enumerate"})  # (the iterable of a loop: the list walked by it, not kept)


def rewrite(src: FunctionSource) -> FunctionSource:
    """``src`` with the ``reverse()``/``extend(...)``/``insert(0, ...)`` statements of its unaliased lists, and the
    joins of its lists with themselves (``out += [y]``, ``out = out + [y]``, ``out = [y] + out``), rewritten."""
    code = getattr(src.fn, "__code__", None)
    if code is not None and not may_change(code):  # (most functions: no walk of the body)
        return src
    lists = _list_names(src.fdef)
    # (a join into a name of its own only in the user's code: srcjax's helpers join static lists of strings, which
    # read better as they are)
    joins = not str(getattr(src.fn, "__module__", "") or "").startswith("srcjax.")
    users = joins and not src.filename.startswith("<srcjax")  # (a generated `_tape.pop()` is a tape's, kept)
    smalls = _small_statements(src.fdef.body)
    changed = _changed(smalls) & lists
    changes = [(c, small) for small in smalls if (c := _change(small, lists, changed)) is not None and
               (joins or c.kind != "join") and (users or not c.bare)]
    if not changes:
        return src
    fresh, shared = _bindings(src.fdef.body)
    local = ({p.name.value for p in params_of(src.fdef)} | fresh) - shared
    names = {c.name for c, _ in changes if c.name in (local if c.method else lists) and c.kind not in _NEW}
    safe = {n for n in names if not _stored(src.fdef.body, n)}
    if not safe and not any(c.kind in _NEW for c, _ in changes):  # (a join makes a list of its own: no alias)
        return src
    taken = {n.value for n in walk(src.fdef) if isinstance(n, cst.Name)}
    fdef = src.fdef.visit(_Rewrite(safe, lists, taken, src.positions, joins, changed))
    assert isinstance(fdef, cst.FunctionDef)
    return dataclasses.replace(src, fdef=fdef)


def may_change(code: Any) -> bool:
    """Whether ``code`` (or a function nested in it) names a rewritten method, or builds a list and adds (its
    opcodes read from the bytes: no disassembly; a false positive costs one walk of the body)."""
    import types

    if any(m in code.co_names for m in _REWRITTEN) or "pop" in code.co_names:
        return True
    ops = set(code.co_code[0::2])
    if _SLICE_STORE <= ops or _STORE_SLICE in ops:  # (`lst[:0] = [v]`)
        return True
    if ops & _BUILDS and ops & _ADDS:
        return True
    if _EXTEND in ops:  # (`[*ws, y]`; not `[1.0, 2.0, 3.0]`, a constant tuple's items)
        co, i = code.co_code, code.co_code.find(_EXTEND_BYTE)
        while i != -1:
            if i % 2 == 0 and i >= 2 and co[i - 2] != _CONST:
                return True
            i = co.find(_EXTEND_BYTE, i + 1)
    return any(isinstance(c, types.CodeType) and may_change(c) for c in code.co_consts)


_BUILDS = frozenset(dis.opmap[n] for n in ("BUILD_LIST", "LIST_EXTEND") if n in dis.opmap)
_ADDS = frozenset(dis.opmap[n] for n in ("BINARY_OP", "BINARY_ADD", "INPLACE_ADD") if n in dis.opmap)
_EXTEND, _CONST = dis.opmap.get("LIST_EXTEND", -1), dis.opmap["LOAD_CONST"]
_EXTEND_BYTE = bytes([_EXTEND % 256])
_SLICE_STORE = frozenset(dis.opmap[n] for n in ("BUILD_SLICE", "STORE_SUBSCR"))
_STORE_SLICE = dis.opmap.get("STORE_SLICE", -1)
_NEW = ("join", "starred")  # changes that bind a new list (no alias of the old one to mind)


@dataclasses.dataclass(frozen=True)
class _Change:
    """A statement changing the list ``name``: ``kind`` "reverse", "extend" (``items``: a display's elements, else
    ``seq`` appended item by item), "prepend" (the same, put in front), "join" (``name = first + seq``, a new list:
    ``first``, then ``seq``'s items appended) or "starred" (``name = [x, *ws, y]``, a new list: ``elements``, the
    starred ones' items appended) or "pop" (``first``: the literal place of the item taken out, bound to
    ``target``); ``method``: written as a method call (or an assignment into a slice of the list)."""

    name: str
    kind: str
    method: bool
    items: tuple[cst.BaseExpression, ...] | None = None
    seq: cst.BaseExpression | None = None
    first: cst.BaseExpression | None = None
    elements: tuple[cst.BaseElement, ...] | None = None
    target: cst.BaseAssignTargetExpression | None = None  # ("pop": what the item taken out is bound to)
    bare: bool = False  # ("pop": `lst.pop()`, no place written; rewritten in the user's code only)


def _elements(seq: cst.BaseExpression) -> tuple[cst.BaseExpression, ...] | None:
    if isinstance(seq, cst.List | cst.Tuple) and all(isinstance(e, cst.Element) for e in seq.elements):
        return tuple(e.value for e in seq.elements)
    return None


def _is_list(e: cst.BaseExpression, lists: set[str]) -> bool:
    """Whether ``e`` is a list whatever the program's values (a display, a comprehension, ``list(...)``, a join of
    lists, a slice of a list, a name of ``lists``)."""
    if isinstance(e, cst.List | cst.ListComp):
        return True
    if isinstance(e, cst.Name):
        return e.value in lists
    if isinstance(e, cst.Call):
        return isinstance(e.func, cst.Name) and e.func.value in ("list", "sorted")
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Add):
        return _is_list(e.left, lists) and _is_list(e.right, lists)
    if isinstance(e, cst.Subscript):
        return _is_list(e.value, lists) and all(isinstance(x.slice, cst.Slice) for x in e.slice)
    return False


# (by exact type, as libcst's node classes are final: isinstance goes through ABCMeta, each class's first check
# of a type in a process walks its subclasses)
_TARGETED = frozenset({cst.AnnAssign, cst.For, cst.CompFor, cst.WithItem, cst.NamedExpr, cst.Del})  # bind a target
_NAMING = frozenset({cst.FunctionDef, cst.Param, cst.Global, cst.Nonlocal, cst.ImportAlias, cst.ClassDef})  # a name


def _list_names(fdef: cst.FunctionDef) -> set[str]:
    """The names every binding of which is a list (:func:`_is_list`; ``+=`` of a list keeps one): not a parameter,
    a loop's target or anything else that may be another value."""
    binds: dict[str, list[cst.BaseExpression | None]] = {p.name.value: [None] for p in params_of(fdef)}
    n: Any
    for n in walk(fdef.body):
        kind = type(n)  # (exact types: libcst's node classes are final, and isinstance goes through ABCMeta)
        if kind is cst.SimpleStatementLine or kind is cst.Name or kind is cst.Call or kind is cst.Attribute:
            continue
        if kind is cst.Assign:
            for t in n.targets:
                for target, value in _unpacked(t.target, n.value):  # (`s_hist, y_hist = [], []`: item by item)
                    if type(target) is cst.Name:
                        binds.setdefault(target.value, []).append(value)
                    else:  # (`a, b = ...`; `out[0] = v`, `o.w = v` bind no name)
                        for bound in target_names(target):
                            binds.setdefault(bound, []).append(None)
        elif kind is cst.AugAssign:
            if type(n.target) is cst.Name:
                binds.setdefault(n.target.value, []).append(n.value if type(n.operator) is cst.AddAssign else None)
        elif kind in _TARGETED:
            target = n.asname if kind is cst.WithItem else n.target
            for x in walk(target) if target is not None else ():
                if type(x) is cst.Name:
                    binds.setdefault(x.value, []).append(None)
        elif kind in _NAMING:
            for x in walk(n.name if kind is not cst.Global and kind is not cst.Nonlocal else n):
                if type(x) is cst.Name:
                    binds.setdefault(x.value, []).append(None)
    lists = set(binds)
    while True:
        drop = {k for k in lists if not all(v is not None and _is_list(v, lists) for v in binds[k])}
        if not drop:
            return lists
        lists -= drop


def _change(small: cst.CSTNode, lists: set[str], changed: frozenset[str] | set[str] = frozenset()) -> _Change | None:
    """What ``small`` does to a list, when it is one of the forms rewritten (``changed``: the lists the function
    changes in place, :func:`_changed`)."""
    if (popped := _pop(small)) is not None:
        return popped
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(t := small.targets[0].target,
                                                                                cst.Subscript) and \
            isinstance(t.value, cst.Name) and _front(t) and t.value.value not in names_in(small.value):
        return _Change(t.value.value, "prepend", True, _elements(small.value), small.value)  # `lst[:0] = [v]`
    if isinstance(small, cst.Expr) and isinstance(call := small.value, cst.Call):
        f = call.func
        if not (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.attr.value in _REWRITTEN) or \
                any(a.keyword is not None or a.star for a in call.args):
            return None
        name, args = f.value.value, [a.value for a in call.args]
        if f.attr.value == "reverse" and not args:
            return _Change(name, "reverse", True)
        if f.attr.value == "extend" and len(args) == 1:
            return _Change(name, "extend", True, _elements(args[0]), args[0])
        if f.attr.value == "insert" and len(args) == 2 and isinstance(args[0], cst.Integer) and \
                args[0].value == "0":
            return _Change(name, "prepend", True, (args[1],))
        if f.attr.value == "insert" and len(args) == 2 and _literal_int(args[0]):  # `lst.insert(2, v)`
            return _Change(name, "insert", True, (args[1],), first=args[0])
        return None
    if isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign) and \
            isinstance(small.target, cst.Name) and small.target.value in lists and _is_list(small.value, lists):
        return _Change(small.target.value, "extend", False, _elements(small.value), small.value)
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
            isinstance(t := small.targets[0].target, cst.Name) and t.value in lists and \
            isinstance(v := small.value, cst.BinaryOperation) and isinstance(v.operator, cst.Add) and \
            _is_list(v.left, lists) and _is_list(v.right, lists):
        if isinstance(v.left, cst.Name) and v.left.value == t.value:
            return _Change(t.value, "extend", False, _elements(v.right), v.right)
        if isinstance(v.right, cst.Name) and v.right.value == t.value:
            return _Change(t.value, "prepend", False, _elements(v.left), v.left)
        if t.value not in names_in(v) and isinstance(v.left, cst.List | cst.ListComp | cst.Name | cst.Subscript):
            # `hs = [a, b] + [y]`, `hs = ws + [y]`: the first list (a copy of a name's: `ws[:]`), then the appends
            # (a comprehension's items appended to a new list: derivatives build it in a temporary list, which a
            # second name would hold: refused by list_aliases)
            first = cst.Subscript(value=v.left, slice=[cst.SubscriptElement(cst.Slice(lower=None, upper=None))]) \
                if isinstance(v.left, cst.Name) else v.left
            return _Change(t.value, "join", False, _elements(v.right), v.right, first)
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
            isinstance(t := small.targets[0].target, cst.Name) and t.value in lists and \
            isinstance(v := small.value, cst.List) and any(isinstance(e, cst.StarredElement) for e in v.elements) \
            and t.value not in names_in(v):
        # `ys = [*[f(t) for t in ts], y]`: `ys = []`, the starred operands' items and the other elements appended
        return _Change(t.value, "starred", False, elements=tuple(v.elements))
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
            isinstance(t := small.targets[0].target, cst.Name) and t.value in changed and \
            isinstance(small.value, cst.ListComp):
        # `cur = [p * 2.0 for p in prev]` then `cur.append(x)`: the comprehension's items appended to `cur`
        return _Change(t.value, "join", False, None, small.value, cst.List([]))
    return None


def _unpacked(target: cst.BaseExpression, value: Any) -> list[tuple[cst.BaseExpression, Any]]:
    """``(target, value)`` pairs of an assignment: item by item where both are displays of as many items and no star
    (``a, b = [], []``), else the pair itself (its value None where a tuple target takes it apart)."""
    if not isinstance(target, cst.Tuple | cst.List):
        return [(target, value)]
    if isinstance(value, cst.Tuple | cst.List) and len(value.elements) == len(target.elements) and not any(
            isinstance(e, cst.StarredElement) for e in (*value.elements, *target.elements)):
        return [(t.value, v.value) for t, v in zip(target.elements, value.elements)]
    return [(target, None)]


def _pop(small: cst.CSTNode) -> _Change | None:
    """``lst.pop(0)``, ``v = lst.pop(2)`` (a literal place), as a "pop" change; None: not such a statement."""
    target = None
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target, call = small.targets[0].target, small.value
    elif isinstance(small, cst.Expr):
        call = small.value
    else:
        return None
    if not (isinstance(call, cst.Call) and isinstance(f := call.func, cst.Attribute) and isinstance(f.value, cst.Name)
            and f.attr.value == "pop" and (not call.args or len(call.args) == 1 and call.args[0].keyword is None and
                                           not call.args[0].star and _literal_int(call.args[0].value))):
        return None
    if target is not None and f.value.value in names_in(target):
        return None
    if not call.args:  # `lst.pop()`, its item unused: `lst = lst[:-1]` (derivatives gave the item taken out no
        if target is not None:  # cotangent, a None later added: `v = lst.pop()` runs as it is)
            return None
        return _Change(f.value.value, "pop", True, first=cst.UnaryOperation(cst.Minus(), cst.Integer("1")), bare=True)
    return _Change(f.value.value, "pop", True, first=call.args[0].value, target=target)


def _front(t: cst.Subscript) -> bool:
    """``lst[:0]``, ``lst[0:0]``: the empty slice at the list's front."""
    if len(t.slice) != 1 or not isinstance(sl := t.slice[0].slice, cst.Slice) or sl.step is not None:
        return False
    zero = (lambda e: isinstance(e, cst.Integer) and e.evaluated_value == 0)  # noqa: E731
    return zero(sl.upper) and (sl.lower is None or zero(sl.lower))


def _literal_int(e: cst.BaseExpression) -> bool:
    """``2``, ``-1``: an int literal."""
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus):
        e = e.expression
    return isinstance(e, cst.Integer)


def _changed(smalls: list[cst.CSTNode]) -> set[str]:
    """The names of lists the statements change in place (``out.append(y)``, ``out += [y]``, ...)."""
    out: set[str] = set()
    for small in smalls:
        if isinstance(small, cst.Expr) and isinstance(call := small.value, cst.Call) and \
                isinstance(f := call.func, cst.Attribute) and isinstance(f.value, cst.Name) and \
                f.attr.value in ("append", "extend", "insert", "reverse", "pop", "remove", "sort", "clear"):
            out.add(f.value.value)
        elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
            out.add(small.target.value)
    return out


def _small_statements(body: cst.CSTNode) -> list[cst.CSTNode]:
    """The small statements of ``body`` (an indented block), not of a function or class nested in it (a closure's
    change to the enclosing function's list stays as it is); read through the blocks, not libcst's ``children``
    (a visitor per node)."""
    out: list[cst.CSTNode] = []
    todo: list[Any] = list(getattr(body, "body", ()))
    while todo:
        n = todo.pop()
        kind = type(n)
        if kind is cst.SimpleStatementLine:
            out += n.body
        elif kind is cst.FunctionDef or kind is cst.ClassDef:
            continue
        else:  # (if, for, while, with, try: their blocks, else, except and finally clauses)
            for part in ("body", "orelse", "handlers", "finalbody"):
                v = getattr(n, part, None)
                if isinstance(v, (list, tuple)):
                    todo.extend(v)
                elif v is not None:
                    todo.append(v)
    return out


def _bindings(body: cst.CSTNode) -> tuple[set[str], set[str]]:
    """The names ``body`` binds to a new list only (a display, a comprehension, a join, ``list(...)``, a slice),
    and those it binds otherwise too (another name, an item, a loop's target: a list that may be another's)."""
    fresh: set[str] = set()
    shared: set[str] = set()
    for n in walk(body):
        if isinstance(n, cst.Assign):
            for t in n.targets:
                for part, v in _unpacked(t.target, n.value):
                    new = isinstance(v, cst.List | cst.ListComp) or (
                        isinstance(v, cst.BinaryOperation) and isinstance(v.operator, cst.Add)) or (
                        isinstance(v, cst.Call) and isinstance(v.func, cst.Name) and
                        v.func.value in ("list", "sorted")) or (
                        isinstance(v, cst.Subscript) and all(isinstance(e.slice, cst.Slice) for e in v.slice))
                    if isinstance(part, cst.Name):
                        (fresh if new else shared).add(part.value)
                    elif not (isinstance(part, cst.Subscript) and _front(part)):  # (`lst[:0] = ...` binds none)
                        shared.update(x.value for x in walk(part) if isinstance(x, cst.Name))
        elif isinstance(n, cst.AnnAssign | cst.For | cst.CompFor | cst.WithItem | cst.NamedExpr):
            target = n.asname if isinstance(n, cst.WithItem) else n.target
            if target is not None:
                shared.update(x.value for x in walk(target) if isinstance(x, cst.Name))
    return fresh, shared


class _Uses(cst.CSTVisitor):
    """Whether the bare name ``name`` is read anywhere other than where NumPy's list could not be shared."""

    def __init__(self, name: str) -> None:
        self.name, self.stored = name, False
        self.fine: set[int] = set()

    def _is(self, e: cst.CSTNode) -> bool:
        return isinstance(e, cst.Name) and e.value == self.name

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self._is(node.value):
            self.fine.add(id(node.value))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if self._is(node.value):
            self.fine.add(id(node.value))

    def visit_For(self, node: cst.For) -> None:
        self.walked(node.iter)
        for t in walk(node.target):
            if self._is(t):
                self.fine.add(id(t))

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.walked(node.iter)

    def walked(self, it: cst.BaseExpression) -> None:
        """A loop's iterable: the list itself, or ``zip``/``reversed``/``enumerate`` of it, walked at once."""
        if self._is(it):
            self.fine.add(id(it))
        elif isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value in _WALKING:
            for a in it.args:
                if not a.star and a.keyword is None:
                    self.walked(a.value)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None and self._is(node.value):
            self.fine.add(id(node.value))

    def visit_Call(self, node: cst.Call) -> None:
        chain = attr_chain(node.func)
        reads = (isinstance(node.func, cst.Name) and node.func.value in _READING_CALLS) or (
            chain is not None and len(chain) > 1 and chain[0] in _NUMPY)
        if reads:
            self.fine.update(id(a.value) for a in node.args if self._is(a.value))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        for t in walk(node.target):
            if self._is(t):
                self.fine.add(id(t))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._is(node.target):
            self.fine.add(id(node.target))

    def visit_If(self, node: cst.If | cst.IfExp | cst.While) -> None:
        if self._is(node.test):  # (`if out:`, a length's test)
            self.fine.add(id(node.test))

    visit_IfExp = visit_While = visit_If

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Add):  # (`out + [y]`: a new list of out's items; of arrays, a new array)
            self.fine.update(id(e) for e in (node.left, node.right) if self._is(e))

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name and id(node) not in self.fine:
            self.stored = True


def _stored(body: cst.CSTNode, name: str) -> bool:
    """Whether ``name``'s list may be another name's too (a bare read that is not a plain read of its items)."""
    uses = _Uses(name)
    body.visit(uses)
    return uses.stored


class _Rewrite(Located):
    def __init__(self, names: set[str], lists: set[str], taken: set[str], positions: dict[Any, Any],
                 joins: bool = True, changed: set[str] | None = None) -> None:
        super().__init__(positions)
        self.names, self.lists, self.taken, self.joins = names, lists, set(taken), joins
        self.changed = changed or set()
        self.walked: list[set[str]] = []  # the names each enclosing `for` loop's sequence reads, innermost last

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth = getattr(self, "depth", 0) + 1
        return self.depth == 1  # (the function itself, not one nested in it)

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> Any:
        self.depth -= 1
        return updated

    def visit_For(self, node: cst.For) -> None:
        self.walked.append({x.value for x in walk(node.iter) if isinstance(x, cst.Name)})

    def leave_For(self, original: cst.For, updated: cst.For) -> Any:
        self.walked.pop()
        return updated

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def fresh(self, base: str) -> str:
        k, name = 1, base
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def change(self, s: cst.CSTNode) -> _Change | None:
        c = _change(s, self.lists, self.changed)
        if c is None or c.name not in self.names and c.kind not in _NEW or c.kind in _NEW and not self.joins:
            return None
        reads = {x.value for x in walk(c.seq) if isinstance(x, cst.Name)} if c.seq is not None else set()
        fill = isinstance(c.seq, cst.ListComp) and isinstance(c.first, cst.List) and not c.first.elements
        if c.items is None and c.kind != "reverse" and c.name in reads and not fill:
            return None  # (`out += out`, `out.extend(out[1:])` read item by item while it grows: left as written)
        if not c.method and any(c.name in w for w in self.walked):
            return None  # (`for v in out: out = out + [v]`: Python's loop walks the old list, appends would not end)
        return c

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine,
                                  updated: cst.SimpleStatementLine) -> Any:
        if not any(self.change(s) is not None for s in updated.body):
            return updated
        out: list[Any] = []
        run: list[cst.BaseSmallStatement] = []

        def flush() -> None:
            if run:
                out.append(self.located(original, cst.SimpleStatementLine(body=list(run))))
                run.clear()

        for s in updated.body:
            c = self.change(s)
            if c is None:
                run.append(s)
                continue
            name = cst.Name(c.name)
            at = (lambda made, s=s: self.located(s, made))  # noqa: E731 - (the user's line for each made node)

            def flip(name: cst.Name = name, at: Any = at) -> cst.Assign:  # out = out[::-1]
                return at(cst.Assign(targets=[cst.AssignTarget(name)], value=_reversed(name)))
            if c.kind == "reverse":
                run.append(flip())
                continue
            def append(v: cst.BaseExpression, name: cst.Name = name, at: Any = at) -> cst.Expr:
                return at(cst.Expr(cst.Call(func=cst.Attribute(value=name, attr=cst.Name("append")),
                                            args=[cst.Arg(v)])))

            def extend(seq: cst.BaseExpression, c: _Change = c, append: Any = append) -> None:  # a loop of appends
                flush()
                item = cst.Name(self.fresh(f"{c.name}_item"))
                body = cst.IndentedBlock(body=[self.located(original, cst.SimpleStatementLine(body=[append(item)]))])
                out.append(self.located(original, cst.For(target=item, iter=seq, body=body)))
            if c.kind == "starred":  # `ys = [x, *ws, y]`: `ys = [x]`, ws's items appended, then y
                assert c.elements is not None
                lead = list(itertools.takewhile(lambda e: not isinstance(e, cst.StarredElement), c.elements))
                run.append(at(cst.Assign(targets=[cst.AssignTarget(name)], value=cst.List(
                    [e.with_changes(comma=cst.MaybeSentinel.DEFAULT) for e in lead]))))
                for e in c.elements[len(lead):]:
                    if isinstance(e, cst.StarredElement):
                        extend(e.value)
                    else:
                        run.append(append(e.value))
                continue
            if c.kind == "join":
                assert c.first is not None
                comprehension = isinstance(c.first, cst.ListComp)
                run.append(at(cst.Assign(targets=[cst.AssignTarget(name)],
                                         value=cst.List([]) if comprehension else c.first)))
                if comprehension:  # (`ys = [f(t) for t in ts] + [y]`: `ys = []`, the comprehension's items appended)
                    extend(c.first)
                if c.items is None and isinstance(c.seq, cst.ListComp) and isinstance(c.first, cst.List) and \
                        not c.first.elements:  # `cur = [comprehension]` changed later: filled by appends
                    seq: cst.BaseExpression = c.seq
                    if c.name in names_in(seq):  # (`cur = [2 * c for c in cur]`: of the list as it was, made first)
                        seq = cst.Name(self.fresh(f"{c.name}_items"))
                        run.insert(len(run) - 1, at(cst.Assign(targets=[cst.AssignTarget(seq)], value=c.seq)))
                    extend(seq)
                    continue
            cut = (lambda lower, upper, name=name: cst.Subscript(value=name, slice=[  # noqa: E731
                cst.SubscriptElement(cst.Slice(lower=lower, upper=upper))]))
            if c.kind == "pop":  # `v = lst.pop(2)`: `v = lst[2]`, then the list without it (`lst = lst[1:]`, ...)
                assert c.first is not None
                i = int(cst.Module([]).code_for_node(c.first))
                if c.target is not None:
                    run.append(at(cst.Assign(targets=[cst.AssignTarget(c.target)], value=cst.Subscript(
                        value=name, slice=[cst.SubscriptElement(cst.Index(c.first))]))))
                if i in (0, -1):
                    run.append(at(cst.Assign(targets=[cst.AssignTarget(name)], value=cut(
                        cst.Integer("1"), None) if i == 0 else cut(None, c.first))))
                    continue
                tail = cst.Name(self.fresh(f"{c.name}_tail"))
                run += [at(cst.Assign(targets=[cst.AssignTarget(tail)], value=cut(_int(i + 1), None))),
                        at(cst.Assign(targets=[cst.AssignTarget(name)], value=cut(None, c.first)))]
                extend(tail)
                continue
            if c.kind == "insert":  # `lst.insert(2, v)`: the items from 2 put aside, v appended, they after it
                assert c.first is not None and c.items is not None
                v = c.items[0]
                if c.name in {x.value for x in walk(v) if isinstance(x, cst.Name)}:  # (of the list as it was)
                    temp = cst.Name(self.fresh(f"{c.name}_item"))
                    run.append(at(cst.Assign(targets=[cst.AssignTarget(temp)], value=v)))
                    v = temp
                tail = cst.Name(self.fresh(f"{c.name}_tail"))
                run += [at(cst.Assign(targets=[cst.AssignTarget(tail)], value=cut(c.first, None))),
                        at(cst.Assign(targets=[cst.AssignTarget(name)], value=cut(None, c.first))), append(v)]
                extend(tail)
                continue
            if c.items is not None:
                items = list(c.items)
                if any(c.name in {x.value for x in walk(v) if isinstance(x, cst.Name)} for v in items) and (
                        len(items) > 1 or c.kind == "prepend"):  # (values of the list as it was: named first)
                    for k, v in enumerate(items):
                        temp = cst.Name(self.fresh(f"{c.name}_item"))
                        run.append(at(cst.Assign(targets=[cst.AssignTarget(temp)], value=v)))
                        items[k] = temp
                if c.kind == "prepend":
                    run += [flip(), *[append(v) for v in reversed(items)], flip()]
                else:
                    run += [append(v) for v in items]
                continue
            assert c.seq is not None
            seq = c.seq
            if c.kind == "prepend":  # (`out = xs + out`: xs's items last to first, then the list turned back)
                run.append(flip())
                seq = _reversed(seq)
            extend(seq)
            if c.kind == "prepend":
                run.append(flip())
        flush()
        if out:
            out[0] = out[0].with_changes(leading_lines=updated.leading_lines)
        return cst.FlattenSentinel(out)


def _int(i: int) -> cst.BaseExpression:
    return cst.Integer(str(i)) if i >= 0 else cst.UnaryOperation(cst.Minus(), cst.Integer(str(-i)))


def _reversed(seq: cst.BaseExpression) -> cst.Subscript:
    """``seq[::-1]``."""
    return cst.Subscript(value=seq, slice=[cst.SubscriptElement(cst.Slice(
        lower=None, upper=None, step=cst.UnaryOperation(cst.Minus(), cst.Integer("1"))))])
