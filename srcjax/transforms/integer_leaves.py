"""Names that hold Python integers, also as leaves of tuples and dicts (activity per leaf).

A loop body's carry ``(n + 1, s * 0.5 + x[i] * n)`` is one active container, so activity alone makes its
counter ``n`` active too, and reverse mode would read ``n``'s cotangent from the carry's cotangent, which
holds None there (an integer leaf has no derivative: :func:`srcjax.adjoint.pack_like`). :func:`integer_names`
finds such names statically, so that activity leaves them out: an integer carries no derivative. The same
names are index keys that cannot repeat (:func:`unique_keys`, here).

A name is an integer when every binding of it is: an integer literal, ``len(...)``, a loop target over
``range(...)`` or ``reversed(range(...))``, ``+ - * // %`` of integers (``n += 1`` too), or an element of a
container every binding of which is a tuple, list or dict literal holding an integer at that position or key
(``n, s = carry``; ``c["n"]``; ``carry[0]``). The largest such set (a counter reads itself); parameters are
bound to anything, so never integers.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import libcst as cst

from .. import gc_pause
from ..adjoint import is_saved_list_name
from ..frontend.names import boolean_valued, code, target_names
from ..frontend.restructure import walk

_INT_OPS = frozenset({cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo})  # (by exact type)


def integer_names(body: Sequence[Any], params: Sequence[str]) -> frozenset[str]:
    """Names of ``body`` bound only to Python integers (see the module's docstring)."""
    return analysed(body, params)[1]


def analysed(body: Sequence[Any], params: Sequence[str]) -> tuple[dict[str, list[Any]], frozenset[str]]:
    """``(bindings(body, params), integers of them)``, remembered for the same statements (libcst's nodes never
    change) and parameters until the collector's pause ends: a derivative writer asks for both three times
    (activity, the constants, the index keys). The bindings are shared: read them, never change them."""
    key = (tuple(map(id, body)), tuple(params))
    hit = _ANALYSED.get(key)
    if hit is not None and len(hit[0]) == len(body) and all(map(operator.is_, hit[0], body)):
        return hit[1], hit[2]
    binds = bindings(body, params)
    ints = frozenset(integers(binds))
    if len(_ANALYSED) >= 64:
        _ANALYSED.clear()
    _ANALYSED[key] = (tuple(body), binds, ints)  # (the statements kept alive: their ids name no other node here)
    return binds, ints


_ANALYSED: dict[tuple[Any, ...], tuple[tuple[Any, ...], dict[str, list[Any]], frozenset[str]]] = {}
gc_pause.on_resume(_ANALYSED.clear)


def bindings(body: Sequence[Any], params: Sequence[str]) -> dict[str, list[Any]]:
    """Every name of ``body`` and what each of its bindings binds it to: an expression, ``("for", iter)`` (the
    target of a loop over ``iter``), ``("item", value, k)`` (position ``k`` of what ``value`` holds: ``n, s =
    carry``), or None (anything: a parameter, a starred or annotated target)."""
    binds: dict[str, list[Any]] = {p: [None] for p in params}
    statements = [st for st, _ in walk(body)]
    pushed = _tape_pushes(statements)
    for st in statements:
        if isinstance(st, cst.Assign):
            for t in st.targets:
                restored = _restored(t.target, st.value, pushed)
                if restored:  # (`c, k = _tape.pop()`: k gets back a value it had: no new binding)
                    for n in target_names(t.target):
                        if n not in restored:
                            binds.setdefault(n, []).append(None)
                    continue
                _bind(binds, t.target, st.value)
        elif isinstance(st, cst.For):
            _bind(binds, st.target, ("for", st.iter) if isinstance(st.target, cst.Name) else None)
        elif isinstance(st, cst.AugAssign) and isinstance(st.target, cst.Name):
            _bind(binds, st.target, cst.BinaryOperation(st.target, cst.Add(), st.value)
                  if isinstance(st.operator, cst.AddAssign) else None)
        elif isinstance(st, (cst.AnnAssign, cst.AugAssign)):
            for n in target_names(st.target):
                binds.setdefault(n, []).append(None)
    return binds


def _bind(binds: dict[str, list[Any]], target: cst.BaseExpression, value: Any) -> None:
    """:func:`bindings`' entries of ``target = value`` (module-level: a nested function calling itself made a
    reference cycle per call, left to the cyclic collector)."""
    if isinstance(target, cst.Name):
        binds.setdefault(target.value, []).append(value)
    elif isinstance(target, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement)
                                                               for e in target.elements):
        for k, e in enumerate(target.elements):  # `n, s = carry`: position k of what carry holds
            _bind(binds, e.value, ("item", value, k) if value is not None else None)
    else:
        for n in target_names(target):
            binds.setdefault(n, []).append(None)


def sometimes_integers(body: Sequence[Any]) -> set[str]:
    """Names some binding of which is a Python integer (others may not be: ``for i, w in items`` after ``for i, v
    in enumerate(x)``): the target of a loop over ``range(...)``, the index of ``enumerate``'s pairs, an integer
    literal. A cotangent of such a name taken out of a container's may be None (an integer leaf's)."""
    out: set[str] = set()
    for st, _ in walk(body):
        if isinstance(st, cst.For) and isinstance(st.iter, cst.Call) and isinstance(st.iter.func, cst.Name):
            if st.iter.func.value == "range" and isinstance(st.target, cst.Name):
                out.add(st.target.value)
            elif st.iter.func.value == "enumerate" and isinstance(st.target, cst.Tuple) and st.target.elements and \
                    isinstance(st.target.elements[0].value, cst.Name):
                out.add(st.target.elements[0].value.value)
        elif isinstance(st, cst.Assign) and isinstance(st.value, cst.Integer):
            out.update(n for t in st.targets for n in target_names(t.target))
    return out


def _tape_pushes(statements: Sequence[Any]) -> dict[str, set[tuple[int, int, str]]]:
    """What each of derivative code's saved lists (:func:`srcjax.adjoint.is_saved_list_name`) is pushed:
    ``(arity, position, name)`` for a name pushed at ``position`` of a tuple display of ``arity`` items, ``(0, 0,
    name)`` for a name pushed alone."""
    out: dict[str, set[tuple[int, int, str]]] = {}
    for st in statements:
        if type(st) is cst.Expr and type(call := st.value) is cst.Call and type(f := call.func) is cst.Attribute \
                and f.attr.value == "append" and type(f.value) is cst.Name and is_saved_list_name(f.value.value) \
                and len(call.args) == 1:
            v = call.args[0].value
            got = out.setdefault(f.value.value, set())
            if type(v) is cst.Name:
                got.add((0, 0, v.value))
            elif type(v) is cst.Tuple:
                got.update((len(v.elements), k, e.value.value) for k, e in enumerate(v.elements)
                           if type(e) is cst.Element and type(e.value) is cst.Name)
    return out


def _restored(target: Any, value: Any, pushed: dict[str, set[tuple[int, int, str]]]) -> frozenset[str]:
    """The names of ``target = value`` that take back a value they had: ``value`` pops one of derivative code's
    saved lists, which gives back what was pushed, in order (the writers push ``(c, k)`` and pop it into ``c, k``):
    a name pushed as itself at the same position of a display of as many items (or alone) restores its own value."""
    if not (type(value) is cst.Call and not value.args and type(f := value.func) is cst.Attribute and
            f.attr.value == "pop" and type(f.value) is cst.Name and f.value.value in pushed):
        return frozenset()
    saved = pushed[f.value.value]
    if type(target) is cst.Name:
        return frozenset({target.value}) if (0, 0, target.value) in saved else frozenset()
    if type(target) is cst.Tuple:
        n = len(target.elements)
        return frozenset(e.value.value for k, e in enumerate(target.elements)
                         if type(e) is cst.Element and type(e.value) is cst.Name and (n, k, e.value.value) in saved)
    return frozenset()


def integers(binds: dict[str, list[Any]]) -> set[str]:
    """The names of ``binds`` (:func:`bindings`) bound only to Python integers: the largest set closed under
    the module docstring's rules."""
    return _Integers(binds).closed()


class _Integers:
    """:func:`integers`' rules over ``binds``, ``ints`` the names still taken to be integers. (Methods, not nested
    functions calling each other: those made a reference cycle per call, left to the cyclic collector.)"""

    def __init__(self, binds: dict[str, list[Any]]) -> None:
        self.binds, self.ints = binds, set(binds)

    def ranged(self, e: Any, seen: frozenset[str] = frozenset()) -> bool:
        """``range(...)``, ``reversed(range(...))``, or a name bound only to such (or to names in ``seen``, those
        being asked about: ``a = b; b = a`` in a loop)."""
        if isinstance(e, cst.Call) and isinstance(e.func, cst.Name) and e.func.value in ("range", "reversed"):
            return e.func.value == "range" or len(e.args) == 1 and self.ranged(e.args[0].value, seen)
        if isinstance(e, cst.Name) and e.value in seen:
            return True
        return isinstance(e, cst.Name) and bool(self.binds.get(e.value)) and all(
            isinstance(b, cst.BaseExpression) and self.ranged(b, seen | {e.value}) for b in self.binds[e.value])

    def element(self, value: Any, key: Any, seen: frozenset[str]) -> list[Any] | None:
        """What position/key ``key`` of ``value`` is bound to, over every binding; None: not known."""
        if isinstance(value, cst.Name):
            if value.value in seen or not self.binds.get(value.value):
                return None if value.value not in seen else []
            out: list[Any] = []
            for b in self.binds[value.value]:
                got = self.element(b, key, seen | {value.value})
                if got is None:
                    return None
                out += got
            return out
        if isinstance(value, tuple) and value[0] == "item":  # (`carry, y = step`: an element of an element)
            outer = self.element(value[1], value[2], seen)
            if outer is None:
                return None
            out = []
            for e in outer:
                got = self.element(e, key, seen)
                if got is None:
                    return None
                out += got
            return out
        if isinstance(value, (cst.Tuple, cst.List)) and isinstance(key, int):
            if any(isinstance(e, cst.StarredElement) for e in value.elements) or key >= len(value.elements):
                return None
            return [value.elements[key].value]
        if isinstance(value, cst.Dict) and isinstance(key, str):
            for de in value.elements:
                if isinstance(de, cst.DictElement) and isinstance(de.key, cst.SimpleString) and \
                        de.key.evaluated_value == key:
                    return [de.value]
            return None
        return None

    def integral(self, b: Any, seen: frozenset[Any] = frozenset()) -> bool:
        """Whether ``b`` is an integer, the elements in ``seen`` (asked about further up: ``c = (c[0] + 1, s)``)
        taken to be (the largest set)."""
        if isinstance(b, tuple):
            if b[0] == "for":
                return self.ranged(b[1])
            return id(b) in seen or self._all_integral(self.element(b[1], b[2], frozenset()), seen | {id(b)})
        kind = type(b)  # (exact types: libcst has no subclasses of these; isinstance on one goes through ABCMeta)
        if kind is cst.Integer:
            return True
        if kind is cst.Name:
            return b.value in self.ints  # type: ignore[no-any-return]
        if kind is cst.UnaryOperation and type(b.operator) is cst.Minus:
            return self.integral(b.expression, seen)
        if kind is cst.BinaryOperation and type(b.operator) in _INT_OPS:
            return self.integral(b.left, seen) and self.integral(b.right, seen)
        if kind is cst.Subscript and len(b.slice) == 1 and type(b.slice[0].slice) is cst.Index:
            k = b.slice[0].slice.value  # `carry[0]`, `c["n"]`
            key = int(k.value) if isinstance(k, cst.Integer) else \
                k.evaluated_value if isinstance(k, cst.SimpleString) else None
            return id(b) in seen or key is not None and \
                self._all_integral(self.element(b.value, key, frozenset()), seen | {id(b)})
        if kind is cst.Call and code(b.func) == "np.asarray" and len(b.args) == 2 and \
                b.args[1].keyword is not None and b.args[1].keyword.value == "dtype":
            # (a scan's start, typed as its carry)
            return self.integral(b.args[0].value, seen) and self.int_dtype(b.args[1].value, seen)
        return kind is cst.Call and type(b.func) is cst.Name and b.func.value == "len"  # type: ignore[no-any-return]

    def _all_integral(self, got: list[Any] | None, seen: frozenset[Any]) -> bool:
        return got is not None and all(self.integral(e, seen) for e in got)

    def int_dtype(self, d: Any, seen: frozenset[Any] = frozenset()) -> bool:
        """Whether ``d`` is ``np.result_type`` of integers (or a name bound only to such, or to names in ``seen``)."""
        if isinstance(d, cst.Name):
            return d.value in seen or bool(self.binds.get(d.value)) and all(
                self.int_dtype(b, seen | {d.value}) for b in self.binds[d.value])
        return isinstance(d, cst.Call) and code(d.func) == "np.result_type" and bool(d.args) and \
            all(a.keyword is None and a.star == "" and self.integral(a.value, seen) for a in d.args)

    def closed(self) -> set[str]:
        binds, ints, integral = self.binds, self.ints, self.integral
        changed = True
        while changed:  # the largest set closed under the rules (a counter reads itself)
            changed = False
            for n in list(ints):
                if not all(b is not None and integral(b) for b in binds[n]):
                    ints.discard(n)
                    changed = True
        return ints


# libcst classes tested by exact type (``type(n) in ...``)
_LITERALS = frozenset({cst.Dict, cst.List, cst.Tuple, cst.DictComp, cst.ListComp})


def unique_keys(body: Sequence[Any], params: Sequence[str]) -> frozenset[str]:
    """Names bound only to Python integers in ``body`` (:func:`.integer_leaves.integers`: integer literals,
    ``len(...)``, sums and products of such, targets of loops over ``range(...)``, integer elements of tuples and
    dicts: a counter ``i = 0 ... i = i + 1``, a scan's step), or only to comparisons (boolean masks), and keys of
    dicts and lists. As index keys they cannot name an element twice (``winning_writes`` folds away). ``params``
    (the function's parameters, bound on entry to anything) are never such names, nor is what is computed from
    them: a parameter rebound in ``body`` (``y = 3 * y``) is not an integer for its rebinding's sake."""
    binds, ints = analysed(body, params)
    bools = {n for n, bs in binds.items() if all(isinstance(b, cst.BaseExpression) and boolean_valued(b) for b in bs)}
    keys, arrays = _container_keys(body, binds)  # (a key of a dict that also indexes an array may repeat there:
    # item_write's `inner`, `{**item, inner: v}` or `item[inner] = v`; winning_writes folded away, a wrong grad)
    return UniqueKeys(ints | bools | (keys - arrays), containers=frozenset(keys - ints - bools),
                      held=frozenset(_held(binds)))


class UniqueKeys(frozenset[str]):
    """:func:`unique_keys`' names, knowing which are keys of containers (``containers``): the cotangent of a
    container's item cleared by such a key keeps the container's structure (a dict's item: zeros of its shape);
    and which names are always lists or dicts (``held``: :func:`_held`), a write into which lands whatever its key
    (an item is written once: ``winning_writes(items, key)`` folds away for any ``key``)."""

    containers: frozenset[str]
    held: frozenset[str]

    def __new__(cls, names: Any, containers: frozenset[str] = frozenset(),
                held: frozenset[str] = frozenset()) -> UniqueKeys:
        made = super().__new__(cls, names)
        made.containers = containers
        made.held = held
        return made


def _held(binds: dict[str, list[Any]]) -> set[str]:
    """Names every binding of which is a list, tuple or dict literal (``items = {}``), or a write into the name's
    own container (``items = srcjax.lax.index_update(items, k, v)``): always a container."""
    held = {n for n, bs in binds.items() if bs and any(type(b) in _LITERALS for b in bs) and
            all(type(b) in _LITERALS or _own_update(b, n) for b in bs)}
    while True:  # (and names bound to those: `state = items` of a dict comprehension read as its loop)
        more = {n for n, bs in binds.items() if n not in held and bs and any(_held_name(b, held) for b in bs) and
                all(type(b) in _LITERALS or _own_update(b, n) or _held_name(b, held) for b in bs)}
        if not more:
            return held
        held |= more


def _held_name(b: Any, held: set[str]) -> bool:
    return b.__class__ is cst.Name and b.value in held


def _own_update(b: Any, name: str) -> bool:
    return b.__class__ is cst.Call and len(b.args) == 3 and b.func.__class__ is cst.Attribute and \
        b.func.attr.value == "index_update" and b.args[0].value.__class__ is cst.Name and \
        b.args[0].value.value == name and code(b.func) == "srcjax.lax.index_update"


def _container_keys(body: Sequence[Any], binds: dict[str, list[Any]]) -> tuple[set[str], set[str]]:
    """Names that index a dict or list literal's name in an assignment (``out[k] = v``): a key or a position; and
    those of them that index another value in an assignment too (an array's index, which may repeat)."""
    containers = {n for n, bs in binds.items() if any(type(b) in _LITERALS for b in bs)} | _held(binds)
    keys: set[str] = set()
    arrays: set[str] = set()
    for st, _ in walk(body):
        if st.__class__ is cst.Assign and st.value.__class__ is cst.Call and len(st.value.args) == 3 and \
                st.value.func.__class__ is cst.Attribute and st.value.func.attr.value == "index_update" and \
                code(st.value.func) == "srcjax.lax.index_update":
            x, key = st.value.args[0].value, st.value.args[1].value
            if isinstance(x, cst.Name) and x.value in containers and isinstance(key, cst.Name):
                keys.add(key.value)
            elif isinstance(key, cst.Name):
                arrays.add(key.value)
    made = {n for n, bs in binds.items() if bs and all(_item_key(b, binds) for b in bs)}
    looped = {n for n in made if all(b.__class__ is tuple for b in binds[n])}  # (`for k in item_keys(a)`: one key
    # each time, never an array's index; vmap's `item_key(key, flags)` is any key where the value is an array)
    return keys | made, (arrays & keys) - looped


def _item_key(b: Any, binds: dict[str, list[Any]]) -> bool:
    """Whether a binding is a container's key by construction: the target of a loop over a container's keys (``for k
    in item_keys(a)``, the list maybe named first: srcjax.batched's ``batch_select_items``) or vmap's item key
    (``item_key(key, flags)``: ``batch_index_cleared`` of a container)."""
    if b.__class__ is cst.Call:  # (exact: libcst's node classes are final; isinstance goes through ABCMeta)
        return code(b.func).rsplit(".", 1)[-1] == "item_key"  # type: ignore[attr-defined]
    if not (isinstance(b, tuple) and b[0] == "for"):
        return False
    seq = b[1]
    for _ in range(4):  # (through copies: `loop_items_1 = loop_items`)
        if isinstance(seq, cst.Name) and len(binds.get(seq.value, ())) == 1 and \
                isinstance(binds[seq.value][0], cst.BaseExpression):
            seq = binds[seq.value][0]
    return isinstance(seq, cst.Call) and code(seq.func).rsplit(".", 1)[-1] == "item_keys"
