"""Binding-time analysis: which variables of a normalized function hold array *data*.

:class:`BindingTimes` (source level, flow-insensitive, a fixed point) gives each
variable STATIC < UNKNOWN < DYNAMIC, the join over its assignments. Parameters
are UNKNOWN (an array or a Python number: the lowering finds out) unless their
default is a literal; shapes, dtypes, ``len()``, ``range()`` (vmap's size helpers, ``batch_len``), ``is``
tests and module globals are STATIC; a NumPy primitive of anything not STATIC is DYNAMIC;
everything else joins its operands. A name assigned under a DYNAMIC test, in a
loop that a DYNAMIC test breaks out of, or after a DYNAMIC ``continue`` is
DYNAMIC too; one assigned under an UNKNOWN test is at least UNKNOWN.
The test of ``if hist:`` (``while stack:``, ``not hist``) on a name that only ever holds a Python list, tuple or
dict (every binding a display, a comprehension or ``list(...)``) asks for its length: STATIC, whatever its
items hold (L-BFGS's ``if s_hist:`` over a list of arrays became a ``lax.cond`` on the list).
A tape pop in derivative code (``i = _tape.pop()``) gives a name back a value
it had, so it adds nothing to the name's other assignments (a ``while`` counter
stays an integer in the gradient).

Used by :mod:`srcjax.frontend.functionalize` (what to rewrite into
:mod:`srcjax.lax` calls), :mod:`srcjax.transforms.bounded` (which loops need a
bound) and the AD transforms.
"""

from __future__ import annotations

import builtins
import math
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from types import FunctionType
from typing import Any

import libcst as cst
import numpy as np

from .. import warm_cache
from ..adjoint import SAVED_LIST_NAME
from ..batch_keys import batch_keys
from ..primitives import registry
from ..pytree import by_leaves, is_tree, item_keys  # (a value's structure: static whatever its data)
from .callees import STATIC_NUMPY
from .dict_names import dict_names
from .names import names_in, syntax_children, target_names
from .normalize import NormalizedFunction
from .restructure import walk as walk_statements
from .syntax import LITERAL_TYPES, assigned_in, attr_chain, is_literal, orelse_stmts, params_of

__all__ = ["DYNAMIC", "STATIC", "UNKNOWN", "BindingTimes"]

STATIC, UNKNOWN, DYNAMIC = 0, 1, 2
_TAPE = SAVED_LIST_NAME  # (the lists derivative code saves on)

SHAPE_ATTRS = {"shape", "ndim", "dtype", "size"}
STATIC_FUNCTIONS: set[int] = {id(f) for f in (len, range, isinstance, type, np.shape, np.ndim, np.size,
                                               np.result_type, np.dtype, np.iscomplexobj, np.isrealobj,
                                               is_tree, by_leaves, item_keys)} | {id(f) for f in STATIC_NUMPY}


def _static_default(e: cst.BaseExpression) -> bool:
    """A parameter default that makes the parameter STATIC: None, a bool, an int, a string, a tuple."""
    if isinstance(e, cst.Tuple):
        return all(is_literal(el.value) for el in e.elements)
    if isinstance(e, (cst.Float, cst.Imaginary)) or (isinstance(e, cst.UnaryOperation) and
                                                      isinstance(e.expression, cst.Float)):
        return False  # a Python float is a weakly typed dynamic value
    return is_literal(e)


def _tape_pop(e: cst.BaseExpression) -> bool:
    """``_tape.pop()``: derivative code restoring saved values (``srcjax.adjoint.SAVED_LIST_NAME``)."""
    f = e.func if e.__class__ is cst.Call and not e.args else None  # type: ignore[attr-defined]
    # (exact classes: libcst's node classes are final, and `isinstance` on them goes through ABCMeta)
    return f.__class__ is cst.Attribute and f.attr.value == "pop" and f.value.__class__ is cst.Name and \
        _TAPE.match(f.value.value) is not None


def _bound_unless_popped(body: Sequence[Any]) -> set[str]:
    """The names some statement of ``body`` other than a tape pop binds."""
    out: set[str] = set()
    for st, _ in walk_statements(body):
        if isinstance(st, cst.Assign) and not _tape_pop(st.value):
            out.update(n for t in st.targets for n in target_names(t.target))
        elif isinstance(st, (cst.AugAssign, cst.AnnAssign, cst.For)):
            out.update(target_names(st.target))
    return out


class BindingTimes:
    """STATIC / UNKNOWN / DYNAMIC for every variable of a normalized function (see the module docstring).

    ``flagged`` holds ``id()`` of the loops whose ``break``/``continue`` must
    become flags: a ``while`` on a DYNAMIC test, and any loop with an exit
    under a DYNAMIC test; ``dynamic_break`` the loops an exit under a DYNAMIC
    test breaks out of.
    """

    def __init__(self, nf: NormalizedFunction, fdef: cst.FunctionDef, body: Sequence[Any] | None = None,
                 helpers: Iterable[str] = (), dynamic: Iterable[str] = ()) -> None:
        self.nf = nf
        self.helpers = set(helpers)
        body = list(fdef.body.body) if body is None else list(body)
        self.kinds: dict[str, int] = {}
        self.locals: set[str] = set(assigned_in(body))
        for p in params_of(fdef):
            name = p.name.value
            self.locals.add(name)
            self.kinds[name] = STATIC if p.default is not None and _static_default(p.default) else UNKNOWN
        for name in dynamic:  # names known to hold array data (vmap: tests on batched values)
            if name in self.locals:
                self.kinds[name] = DYNAMIC
        # names a statement other than a tape pop binds: `v = _tape.pop()` gives ``v`` back a value it
        # had (derivative code saves a name before it is overwritten), so it keeps that binding time
        self.restored = {p.name.value for p in params_of(fdef)} | _bound_unless_popped(body)
        self.flagged: set[int] = set()
        self.dynamic_break: set[int] = set()
        # names bound to a dict, or used as one: a loop over one walks its keys (never rows by position, as over an
        # array whose items may be batched or data)
        self.dicts = dict_names(body, lambda f: self.resolve(f) == (True, dict))
        self.params = {p.name.value for p in params_of(fdef)}
        self.containers = _container_names(body, self.params, self.resolve)
        # the tests of `if hist:` / `while stack:` on such a name (by node: the name elsewhere holds its items' kind)
        self.length_tests = {id(st.test) for st, _ in walk_statements(body) if st.__class__ in (cst.If, cst.While)
                             and st.test.__class__ is cst.Name and st.test.value in self.containers}
        self._body = body
        self._counts: tuple[Counter[str], Counter[str]] | None = None  # (see occurrences)
        self._own: dict[int, set[str]] = {}
        self._inside: dict[int, Counter[str]] = {}
        self.changed = True
        while self.changed:
            self.changed = False
            self.block(body, STATIC, STATIC, None)

    # -- variables ---------------------------------------------------------------------
    def kind(self, name: str) -> int:
        return self.kinds.get(name, STATIC) if name in self.locals else STATIC

    def declare(self, name: str, kind: int) -> None:
        """A name invented by a rewrite."""
        self.locals.add(name)
        self.kinds[name] = max(kind, self.kinds.get(name, STATIC))

    def _set(self, name: str, kind: int) -> None:
        if kind > self.kinds.get(name, STATIC):
            self.kinds[name] = kind
            self.changed = True

    def _flag(self, table: set[int], loop: cst.CSTNode) -> None:
        if id(loop) not in table:
            table.add(id(loop))
            self.changed = True

    # -- statements ----------------------------------------------------------------------
    def block(self, stmts: Sequence[Any], ctl: int, lctl: int, loop: cst.CSTNode | None) -> bool:
        """Walk ``stmts`` with control kind ``ctl`` (``lctl``: relative to the innermost loop).

        True when ``stmts`` hold an exit of ``loop`` that becomes a flag: what follows it is
        control dependent on that flag.
        """
        exits = False
        for s in stmts:
            if self.stmt(s, DYNAMIC if exits else ctl, DYNAMIC if exits else lctl, loop):
                exits = True
        return exits

    def stmt(self, s: Any, ctl: int, lctl: int, loop: cst.CSTNode | None) -> bool:
        if isinstance(s, cst.SimpleStatementLine):
            exits = False
            for small in s.body:
                if isinstance(small, cst.Assign):
                    popped = _tape_pop(small.value)
                    k = max(self.of(small.value), ctl)
                    if k > self.of(small.value) and lctl == STATIC and self.loop_own(s, small, loop):
                        k = self.of(small.value)  # (the same value at every pass: `getitem = DP_A[i]` in a while on
                        # data, read in that pass only)
                    for t in small.targets:
                        for n in target_names(t.target):
                            self._set(n, ctl if popped and n in self.restored else k)
                elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and \
                        isinstance(small.value.func, cst.Attribute) and \
                        isinstance(small.value.func.value, cst.Name) and small.value.func.value.value in self.locals:
                    # `items.append(v)`: the list holds what is put in it (and is built under the control)
                    call = small.value
                    k = max([self.of(a.value) for a in call.args] + [ctl])
                    self._set(call.func.value.value, k)  # type: ignore[attr-defined]
                elif isinstance(small, (cst.Break, cst.Continue)) and loop is not None:
                    if lctl == DYNAMIC:
                        self._flag(self.flagged, loop)
                        if isinstance(small, cst.Break):
                            self._flag(self.dynamic_break, loop)
                    exits = exits or id(loop) in self.flagged
            return exits
        if isinstance(s, cst.If):
            test = self.of(s.test)
            # (a name bound under a test that may be data may be data: `stop = True` under `if x[i] > thr:`
            # with x an array argument not differentiated, UNKNOWN, read by a later `if not stop:`)
            c, lc = (DYNAMIC, DYNAMIC) if test == DYNAMIC else (max(ctl, test), lctl)
            a = self.block(s.body.body, c, lc, loop)
            b = self.block(orelse_stmts(s), c, lc, loop)
            return a or b
        if isinstance(s, cst.While):
            if self.of(s.test) == DYNAMIC:
                self._flag(self.flagged, s)
                self._flag(self.dynamic_break, s)
            c = DYNAMIC if id(s) in self.dynamic_break else ctl
            self.block(s.body.body, c, STATIC, s)
            return False
        if isinstance(s, cst.For):
            c = DYNAMIC if id(s) in self.dynamic_break else ctl
            targets = self.loop_targets(s)
            own = self.own_targets(s) if id(s) not in self.dynamic_break and any(c > tk for _, tk in targets) \
                else set()
            for n, tk in targets:
                # (a target bound by this loop alone and read in its body alone is an item of the sequence at
                # every read, whatever the control around the loop: `for i in range(7)` in a `while` on data,
                # `len(DP_A[i])` a static bound)
                self._set(n, tk if n in own else max(tk, c))
            self.block(s.body.body, c, STATIC, s)
            return False
        return False

    def occurrences(self) -> tuple[Counter[str], Counter[str]]:
        """Each name's occurrences in the function, and its bindings (made when a loop under control on data
        first asks: most functions have none)."""
        if self._counts is None:
            self._counts = (Counter(n for st in self._body for n in names_in(st)),
                            Counter(n for st, _ in walk_statements(self._body) for n in _bound_names(st)))
        return self._counts

    def loop_own(self, line: cst.SimpleStatementLine, small: cst.Assign, loop: cst.CSTNode | None) -> bool:
        """Whether ``small`` (of ``line``, a statement of ``loop``'s own body) binds names that nothing else binds
        and nothing outside the loop's body reads: each read sees the value this pass made."""
        if not isinstance(loop, (cst.For, cst.While)) or not any(x is line for x in loop.body.body):
            return False
        names = [n for t in small.targets for n in target_names(t.target)]
        inside = self._inside.get(id(loop))
        if inside is None:
            inside = self._inside[id(loop)] = Counter(names_in(loop.body))
        counts, bound = self.occurrences()
        return bool(names) and all(bound.get(n, 0) == 1 and n not in self.params and
                                   counts.get(n, 0) == inside.get(n, 0) for n in names)

    def own_targets(self, s: cst.For) -> set[str]:
        """The names of ``s``'s target that nothing but it binds and nothing outside its body reads."""
        hit = self._own.get(id(s))
        if hit is None:
            inside = names_in(s.body)
            assigned = set(assigned_in(s.body.body))
            counts = self.occurrences()[0]
            hit = self._own[id(s)] = {n for n in target_names(s.target) if n not in assigned and n not in
                                      self.params and counts.get(n, 0) == 1 + inside.count(n)}
        return hit

    def loop_targets(self, s: cst.For) -> list[tuple[str, int]]:
        """The names a ``for`` binds and their binding times: a ``range`` counter is UNKNOWN (the
        lowering may roll the loop); ``enumerate(xs)``'s counter too, its items as ``xs``; ``zip``'s
        items each as their sequence; anything else as the iterable."""
        it, target = s.iter, s.target
        if isinstance(it, cst.Call) and isinstance(target, (cst.Tuple, cst.List)) and \
                all(isinstance(e.value, cst.Name) for e in target.elements) and not any(a.star for a in it.args):
            ok, fn = self.resolve(it.func)
            names = [e.value.value for e in target.elements]  # type: ignore[attr-defined]
            if ok and fn is enumerate and len(it.args) == 1 and len(names) == 2:
                return [(names[0], UNKNOWN), (names[1], self.of(it.args[0].value))]
            if ok and fn is zip and len(it.args) == len(names) and not any(a.keyword for a in it.args):
                return [(n, self.of(a.value)) for n, a in zip(names, it.args)]
        tk = UNKNOWN if self.range_call(it) else STATIC if self.keys_call(it) else self.of(it)
        return [(n, tk) for n in target_names(target)]

    def keys_call(self, e: cst.BaseExpression) -> bool:
        """``batch_keys(d)``: a dict's keys (vmap's ``for k in d`` of a mapped dict), the same in every example."""
        if not isinstance(e, cst.Call) or not isinstance(e.func, cst.Name) or e.func.value in self.locals:
            return False
        return self.nf.source.globals.get(e.func.value) is batch_keys  # (a library helper: not `resolve`d)

    def range_call(self, e: cst.BaseExpression) -> bool:
        if not isinstance(e, cst.Call):
            return False
        ok, v = self.resolve(e.func)
        return ok and v is range

    # -- expressions -----------------------------------------------------------------------
    def resolve(self, e: cst.BaseExpression) -> tuple[bool, Any]:
        """The value of a global name chain (``np.float32``, ``range``), if it has one."""
        chain = attr_chain(e)
        if chain is None or chain[0] in self.locals or chain[0] in self.helpers:
            return False, None
        head = chain[0]
        src = self.nf.source
        if head == "np":
            v: Any = np
        elif head == "math":
            v = math
        elif head == "srcjax":  # the package as a value (loaded: it is what runs this), not an import
            v = sys.modules["srcjax"]
        elif head in src.closure:
            v = src.closure[head]
            warm_cache.note_closure(head, v)
        elif head in src.globals:
            v = src.globals[head]
            warm_cache.note_global(src.globals, head, v)
        elif hasattr(builtins, head):
            v = getattr(builtins, head)
        else:
            return False, None
        for part in chain[1:]:
            try:
                base, v = v, getattr(v, part)
            except Exception:  # noqa: BLE001 - a user's property may raise anything: not static here, and the
                # program's own read of it raises again where it runs (MemoryError, a bug, included)
                return False, None
            warm_cache.note_attr(base, part, v)
        return True, v

    def of(self, e: cst.CSTNode) -> int:
        """The binding time of an expression."""
        t = type(e)  # (exact types: libcst's node classes are final, and isinstance goes through ABCMeta)
        if t is cst.Name:
            return STATIC if id(e) in self.length_tests else self.kind(e.value)  # type: ignore[attr-defined]
        if t is cst.UnaryOperation and _not_of(e, self.containers):
            return STATIC  # (`not hist` of a list: its length)
        if t in LITERAL_TYPES:
            return STATIC
        if t is cst.Attribute:
            if e.attr.value in SHAPE_ATTRS:  # type: ignore[attr-defined]
                return STATIC
            chain = attr_chain(e)  # type: ignore[arg-type]
            if chain is not None and chain[0] not in self.locals:
                return STATIC
            return self.of(e.value)  # type: ignore[attr-defined]
        if t is cst.Call:
            return self.call(e)  # type: ignore[arg-type]
        if t is cst.Comparison and all(
                isinstance(c.operator, (cst.Is, cst.IsNot)) for c in e.comparisons):  # type: ignore[attr-defined]
            return STATIC
        if t is cst.Comparison and _keys_test(e, self.dicts):  # (`k in cache` of a dict: its keys, static)
            return self.of(e.left)  # type: ignore[attr-defined]
        if t is cst.Arg:
            return self.of(e.value)  # type: ignore[attr-defined]
        # (the code children: whitespace, operators and punctuation hold no name; all children were ~3x the calls)
        return max((self.of(child) for child in syntax_children(e)), default=STATIC)

    def at(self, e: cst.CSTNode, kinds: dict[str, int]) -> int:
        """The binding time of ``e`` where each name of ``kinds`` holds a value of that kind (flow-sensitive: the
        definition that reaches a point, not the join of all of a name's definitions)."""
        saved = {n: self.kinds.get(n) for n in kinds}
        self.kinds.update(kinds)
        try:
            return self.of(e)
        finally:
            for n, k in saved.items():
                if k is None:
                    del self.kinds[n]
                else:
                    self.kinds[n] = k

    def call(self, e: cst.Call) -> int:
        args = max((self.of(a.value) for a in e.args), default=STATIC)
        ok, v = self.resolve(e.func)
        if ok:
            if id(v) in STATIC_FUNCTIONS or _sizes(v):
                return STATIC
            prim = registry.lookup(v) if callable(v) else None
            if prim is not None:
                return STATIC if args == STATIC and prim.static_eval else DYNAMIC
            return args
        if isinstance(e.func, cst.Attribute):  # a method of a local value
            return max(args, self.of(e.func.value))
        if isinstance(e.func, cst.Name) and e.func.value in self.helpers:
            return STATIC if _sizes(self.nf.source.globals.get(e.func.value)) else args
        return max(args, self.of(e.func))


def _sizes(v: Any) -> bool:
    """Whether ``v`` is a library helper whose result is a size, a shape or axes (Python ints: vmap's ``batch_len``
    of a list it batched, read by ``if batch_len(history) > 2:`` in batched derivative source)."""
    return type(v) is FunctionType and getattr(v, "__srcjax_static_result__", False) is True


def _keys_test(e: Any, dicts: Any) -> bool:
    """Whether ``e`` (a comparison) is ``k in d`` / ``k not in d`` of a dict's name."""
    return len(e.comparisons) == 1 and e.comparisons[0].operator.__class__ in (cst.In, cst.NotIn) and \
        e.comparisons[0].comparator.__class__ is cst.Name and e.comparisons[0].comparator.value in dicts


def _not_of(e: Any, names: set[str]) -> bool:
    """Whether ``e`` (a unary operation) is ``not name`` of one of ``names``."""
    return e.operator.__class__ is cst.Not and e.expression.__class__ is cst.Name and e.expression.value in names


_CONTAINER_DISPLAYS = (cst.List, cst.Tuple, cst.Dict, cst.ListComp, cst.DictComp)


def _container_names(body: Sequence[Any], params: set[str], resolve: Any) -> set[str]:
    """The names of ``body`` every binding of which makes a Python list, tuple or dict (a display, a
    comprehension, ``list(...)``, ``tuple(...)``, ``dict(...)``, ``sorted(...)``, a slice of such a name or a join
    of them: ``hist = hist[1:]``, ``hist = hist + (out,)``); not a parameter."""
    made: set[str] = set()
    other: set[str] = set(params)
    sliced: list[tuple[str, str]] = []  # (name, the name it is a slice of)
    for st, _ in walk_statements(body):
        if st.__class__ is cst.Assign:
            for t in st.targets:
                _pair(t.target, st.value, resolve, made, other, sliced)
        else:
            other.update(_bound_names(st))
    out = made - other  # (less the slices of other names, to a fixed point)
    while True:
        bad = {n for n, base in sliced if base not in out}
        if not bad & out:
            return out
        out -= bad


def _pair(target: Any, value: Any, resolve: Any, made: set[str], other: set[str],
          sliced: list[tuple[str, str]]) -> None:
    """:func:`_container_names` of ``target = value`` (module-level: a nested function calling itself made a
    reference cycle per call, which held the binding-time analysis for the cyclic collector)."""
    if target.__class__ is cst.Name:
        call = value.__class__ is cst.Call and resolve(value.func) in (
            (True, list), (True, tuple), (True, dict), (True, sorted))
        if value.__class__ is cst.Subscript and value.value.__class__ is cst.Name and len(value.slice) == 1 \
                and value.slice[0].slice.__class__ is cst.Slice:
            sliced.append((target.value, value.value.value))
        elif value.__class__ is cst.BinaryOperation and value.operator.__class__ is cst.Add and all(
                v.__class__ is cst.Name or v.__class__ in _CONTAINER_DISPLAYS for v in (value.left, value.right)):
            # (`hist = hist + (out,)`: a container if what it joins is)
            sliced.extend((target.value, v.value) for v in (value.left, value.right) if v.__class__ is cst.Name)
        else:
            (made if value.__class__ in _CONTAINER_DISPLAYS or call else other).add(target.value)
    elif target.__class__ in (cst.Tuple, cst.List) and value.__class__ in (cst.Tuple, cst.List) and \
            len(target.elements) == len(value.elements) and \
            not any(e.__class__ is cst.StarredElement for e in (*target.elements, *value.elements)):
        for t, v in zip(target.elements, value.elements):
            _pair(t.value, v.value, resolve, made, other, sliced)
    else:
        other.update(target_names(target))


def _bound_names(st: Any) -> list[str]:
    """The names a statement (of :func:`walk_statements`) binds: assignment, augmented assignment and ``for``
    targets."""
    if isinstance(st, cst.Assign):
        return [n for t in st.targets for n in target_names(t.target)]
    if isinstance(st, (cst.AugAssign, cst.AnnAssign, cst.For)):
        return target_names(st.target)
    return []
