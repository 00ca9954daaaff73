"""Loops inside ``if``s on data, for reverse mode: the ``if`` moves into the loop (:func:`hoist_branch_loops`).

Reverse mode saves each loop iteration's values on the tape, and a tape cannot be pushed inside a branch on data
(the branch is a generated function: ``srcjax.lax.cond``). So, before differentiating, every loop inside an ``if``
on data runs its whole trip count outside the ``if``, each step doing its work where the test held: the ``if``
becomes a flag tested inside the loop. The statements around the loop keep the same test, each run of them in an
``if`` of its own; an ``else`` branch tests ``np.logical_not`` of the flag, a nested ``if`` on data the two flags
joined by ``np.logical_and``::

    if np.max(x) > 1:                       gt = max_1 > 1
        y = 2 * y                           if gt:
        for i in range(n):         ->           y = 2 * y
            y = y * x + 1                   for i in range(n):
    else:                                       if gt:
        y = -y                                      y = y * x + 1
                                            not_gt = np.logical_not(gt)
                                            if not_gt:
                                                y = -y

What a step where the flag is off computes is nothing: its branch on data keeps every value as it was, and the
adjoint of that step passes every cotangent through, so the derivative is the one of the ``if`` (as jax's
``lax.cond`` around a ``fori_loop``). The loop's sequence must not depend on the branch (a ``for`` over a range, or
over values computed before the ``if``): Python evaluates it once, before the first step, and so does the flag
form; a ``while`` on data is a bounded ``for`` already (``transforms/bounded.py`` runs first), its ``break`` a
flag. A name first bound in one of the runs and read by a later one is bound on that path only: reverse mode
binds it to ``UNSET`` first, as for any name an ``if`` on data binds on one path (read under the same test only).

A step whose flag is off still runs (the branch not taken, doing nothing): a loop of ``n`` steps costs ``n``
tests whatever the data, as the bounded ``while`` costs ``max_iters`` iterations.

Loops over Python sequences of static length move too (jax unrolls them under ``lax.cond``): a list, tuple or
dict display, a name bound to one before the ``if`` or, to a static value, in it (``cs = (0.5, 2.0)``: it runs
before the loop, unmasked), ``zip``/``enumerate``/``reversed``/``.items()`` of those, a module's tuple. A list or
tuple display of arrays the branch computes is walked by position (:meth:`_Hoister.by_position`): ``ws = [y,
2 * y]`` stays under the flag, ``for w in ws:`` becomes ``for i_ws in range(2):`` with ``w = ws[i_ws]`` under it.
An ``if`` that changes a Python container (``items.append(v)``, ``d[k] = v``: ``tree_map`` inside an ``if`` on
data) or loops over another sequence it computes (a comprehension's list, a dict of arrays) is left as it is: a
flagged run cannot change a container made in another run, nor walk a sequence bound on one path only; the branch,
kept whole, runs where it saves nothing for the adjoint, and is refused at the user's ``if`` otherwise
(``frontend/functionalize.py`` says which of the two).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import libcst as cst

from ..core import Span
from ..frontend.binding_times import DYNAMIC, STATIC, BindingTimes
from ..frontend.functionalize import Functionalizer
from ..frontend.names import assigned_names, names_in, target_names
from ..frontend.normalize import NormalizedFunction
from ..frontend.restructure import walk
from ..frontend.syntax import dotted_call, orelse_stmts
from .anf import DifferentiationError

__all__ = ["hoist_branch_loops"]


def _bound(st: Any) -> list[str]:
    """The names a statement of :func:`walk` binds."""
    if isinstance(st, cst.Assign):
        return [n for t in st.targets for n in target_names(t.target)]
    if isinstance(st, (cst.AugAssign, cst.AnnAssign, cst.For)):
        return target_names(st.target)
    return []


def _has_loop(s: Any) -> bool:
    return any(isinstance(st, (cst.For, cst.While)) for st, _ in walk([s]))


_DISPLAYS = (cst.List, cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp,
             cst.BaseString)
_VIEWS = frozenset({"keys", "values", "items"})
_TAKES = frozenset({"pop", "popitem", "setdefault"})  # (a method whose result is kept that changes its receiver)


class _Hoister:
    def __init__(self, nf: NormalizedFunction, body: Sequence[Any], spans: dict[int, Span],
                 active: Sequence[str]) -> None:
        self.bta = BindingTimes(nf, nf.plain_fdef, body, dynamic=active)  # (differentiated: arrays)
        self.f = Functionalizer(nf, self.bta, set(names_in(nf.plain_fdef)) | set(names_in(cst.Module(body=body))))
        self.f.spans.update(spans)
        self.changed = False
        self.counts: Counter[str] = Counter(n for st, _ in walk(body) for n in _bound(st))
        self.statics: dict[str, int] = {}  # names bound to static values in a branch (static_line)
        self.region: set[str] = set()  # the names the `if` being rewritten binds
        self.runs: list[cst.If] = []  # its runs (masked)
        self.partials: set[str] = set()  # (note_partials)
        self.params = {p.name.value for p in nf.plain_fdef.params.params}
        self.nf = nf
        self.values: dict[str, list[Any]] = {}  # each name's values (None: bound otherwise, a loop's target)
        for st, _ in walk(body):
            for n in _bound(st):
                one = isinstance(st, cst.Assign) and len(st.targets) == 1 and isinstance(st.targets[0].target,
                                                                                         cst.Name)
                self.values.setdefault(n, []).append(st.value if one else None)
        self.where: cst.If | None = None  # the `if` being rewritten
        self.reads = Counter(names_in(cst.Module(body=list(body)), skip_targets=True))
        self.dropped: set[str] = set()  # (through)
        self.sequences: set[str] = set()  # names bound in a branch to sequences of values from before it (static_line)

    def data_if(self, s: Any) -> bool:
        """An ``if`` on data holding a loop, changing no Python container and looping over no Python sequence it
        computes (such an ``if`` is left whole: :meth:`computed`)."""
        return isinstance(s, cst.If) and self.bta.of(s.test) == DYNAMIC and self.moves(s) and \
            not any(self.changes_container(st) or isinstance(st, cst.For) and self.computed(st.iter, s) and
                    not self.walkable(st) for st, _ in walk([s]))

    def moves(self, s: Any) -> bool:
        """Whether ``s`` holds a loop reverse mode runs outside an ``if`` on data: any ``for`` (a bounded ``while`` is
        one), over a range, an array's rows or a Python sequence."""
        return any(isinstance(st, cst.For) for st, _ in walk([s]))

    def computed(self, e: cst.BaseExpression, region: cst.If) -> bool:
        """Whether ``e`` is a Python sequence that ``region`` computes: it reads a name a statement of the ``if`` binds
        (a loop's target aside), unless that name is bound once, to a static value (``cs = (1.0, 2.0)``) or to a
        sequence of values computed before the ``if`` (``reversed_1 = reversed(ws)``): it runs before the loop,
        unmasked (:meth:`static_line`). A loop over an array the branch computes is refused
        (:meth:`check_sequence`)."""
        if not self.sequence(e):
            return False
        bound = {n for st, _ in walk([region]) if not isinstance(st, cst.For) for n in _bound(st)}
        return not self.static_here(e, bound, frozenset())

    def positions(self, e: cst.BaseExpression, seen: frozenset[str] = frozenset()) -> tuple[int, Any] | None:
        """A sequence a loop can walk by position though the branch computes it: its length and its item at a position
        (a name, a ``name[k]``, or a tuple of items, for ``zip`` and ``enumerate``). A name bound once to a list or
        tuple display with no starred item (``ws = [y, 2 * y]``) or to a module's list or tuple, ``zip`` and
        ``enumerate`` of those (``zip_1 = zip(ws, cs)``: a name bound once to the call); None otherwise."""
        if isinstance(e, cst.Name):
            values = self.values.get(e.value, [])
            if e.value in seen or len(values) != 1 or self.counts.get(e.value) != 1 or values[0] is None:
                ok, value = self.bta.resolve(e)
                if e.value in self.bta.locals or not ok or not isinstance(value, (list, tuple)):
                    return None
                return len(value), lambda k, e=e: cst.Subscript(value=e, slice=[cst.SubscriptElement(cst.Index(k))])
            v = values[0]
            if isinstance(v, (cst.List, cst.Tuple)):
                if any(isinstance(el, cst.StarredElement) for el in v.elements):
                    return None
                return len(v.elements), lambda k, e=e: cst.Subscript(value=e,
                                                                     slice=[cst.SubscriptElement(cst.Index(k))])
            return self.positions(v, seen | {e.value})
        if isinstance(e, (cst.List, cst.Tuple)) and self.bta.of(e) == STATIC and \
                not any(isinstance(el, cst.StarredElement) for el in e.elements):  # (`zip(ws, (0.5, 2.0))`)
            return len(e.elements), lambda k, e=e: cst.Subscript(value=e, slice=[cst.SubscriptElement(cst.Index(k))])
        if not isinstance(e, cst.Call) or any(a.keyword or a.star for a in e.args):
            return None
        ok, fn = self.bta.resolve(e.func)
        parts = [self.positions(a.value, seen) for a in e.args]
        if not ok or not parts or any(p is None for p in parts) or fn is enumerate and len(parts) != 1:
            return None
        walks = [p for p in parts if p is not None]
        if fn is enumerate:
            return walks[0][0], lambda k: cst.Tuple([cst.Element(k), cst.Element(walks[0][1](k))])
        if fn is zip:
            return min(n for n, _ in walks), lambda k: cst.Tuple([cst.Element(item(k)) for _, item in walks])
        return None

    def walkable(self, s: cst.For) -> bool:
        """Whether :meth:`by_position` can walk ``s``'s sequence: known positions, a target it can unpack."""
        walk_ = self.positions(s.iter)
        return walk_ is not None and _unpacked(s.target, walk_[1](cst.Name("k"))) is not None

    def through(self, e: cst.BaseExpression) -> set[str]:
        """The names bound once to the calls :meth:`positions` reads through, read nowhere else (``zip_1`` of
        ``enumerate(zip_1)``): walked by position, the loop reads them no more, and their lines go."""
        out: set[str] = set()
        if isinstance(e, cst.Name):
            values = self.values.get(e.value, [])
            if len(values) == 1 and isinstance(values[0], cst.Call) and self.reads[e.value] == 1:
                out = {e.value} | self.through(values[0])
        elif isinstance(e, cst.Call):
            for a in e.args:
                out |= self.through(a.value)
        return out

    def by_position(self, s: cst.For) -> cst.For:
        """``for w in ws:`` over a display the branch computes as ``for i_ws in range(2): w = ws[i_ws]``: the range
        runs outside the ``if``, the reads of ``ws`` under its flag (:meth:`positions`; ``zip``, ``enumerate``: one
        line per name of the loop's target)."""
        assert self.where is not None
        walk_ = self.positions(s.iter)
        if walk_ is None or not self.computed(s.iter, self.where) or not self.walkable(s):
            return s
        n, item = walk_
        sp = self.f.span(s)
        k = self.f.fresh(f"i_{s.iter.value}" if isinstance(s.iter, cst.Name) else "i")
        self.bta.declare(k, STATIC)
        pairs = _unpacked(s.target, item(cst.Name(k)))
        assert pairs is not None, "walkable"
        reads = [self.f.line(name, value, sp) for name, value in pairs]
        return self.f.mark(s.with_changes(target=cst.Name(k), iter=cst.Call(func=cst.Name("range"),
                                                                             args=[cst.Arg(cst.Integer(str(n)))]),
                                          body=s.body.with_changes(body=[*reads, *s.body.body])), sp)

    def static_here(self, e: cst.BaseExpression, bound: set[str], seen: frozenset[str]) -> bool:
        """Whether ``e`` is static or a sequence where it is read, each name of ``bound`` (bound in the ``if``) it reads
        bound once, to such a value in turn (``zip_1 = zip(a, b)``, ``cs = (0.5, 1.5)``, ``reversed_1 =
        reversed(ws)``, ``ws`` bound before the ``if``)."""
        kinds: dict[str, int] = {}
        for n in set(names_in(e)) & bound:
            values = self.values.get(n, [])
            if n in seen or self.counts.get(n) != 1 or len(values) != 1 or values[0] is None or \
                    not self.static_here(values[0], bound, seen | {n}):
                return False
            kinds[n] = STATIC
        return self.bta.at(e, kinds) == STATIC or self.sequence(e)

    def sequence(self, e: cst.BaseExpression, seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``e`` is a Python sequence (a loop over it unrolls), not a range or an array."""
        if self.bta.range_call(e):
            return False
        if isinstance(e, _DISPLAYS) or isinstance(e, cst.Attribute) and e.attr.value == "shape":
            return True
        if isinstance(e, (cst.Name, cst.Attribute)):  # (a global: a list, tuple or dict, not an array)
            ok, value = self.bta.resolve(e)
            if ok:
                return isinstance(value, (list, tuple, dict, set, frozenset, str))
        if isinstance(e, cst.Name):
            values = self.values.get(e.value, [])
            return e.value in self.bta.dicts or e.value not in seen and bool(values) and all(
                v is not None and self.sequence(v, seen | {e.value}) for v in values)
        if not isinstance(e, cst.Call):
            return False
        if self.f.listed(e) or self.bta.keys_call(e) or \
                isinstance(e.func, cst.Attribute) and e.func.attr.value in _VIEWS and not e.args:
            return True
        ok, fn = self.bta.resolve(e.func)
        args = [a.value for a in e.args]
        if not ok or any(a.keyword or a.star for a in e.args):
            return False
        if fn in (list, tuple, sorted, dict):
            return True
        if fn in (enumerate, reversed) and args:
            return self.sequence(args[0], seen)
        return fn is zip and bool(args) and all(self.sequence(a, seen) for a in args)

    def changes_container(self, st: Any) -> bool:
        """``items.append(v)``, ``v = items.pop()``, ``d[k] = v`` (``d`` a dict or a list display's name)."""
        value = st.value if isinstance(st, (cst.Expr, cst.Assign, cst.AugAssign)) else None
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
                isinstance(value.func.value, cst.Name) and (value.func.value.value in self.bta.locals or
                                                            value.func.value.value in self.params) and \
                (isinstance(st, cst.Expr) or value.func.attr.value in _TAKES):
            return True
        targets = [t.target for t in st.targets] if isinstance(st, cst.Assign) else \
            [st.target] if isinstance(st, cst.AugAssign) else []
        return any(isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and (
            t.value.value in self.bta.dicts or all(isinstance(v, _DISPLAYS) for v in self.values.get(
                t.value.value, [None]))) for t in targets)

    def block(self, stmts: Sequence[Any]) -> list[Any]:
        """``stmts`` with every ``if`` on data that holds a loop rewritten (see the module docstring)."""
        out: list[Any] = []
        for s in stmts:
            if self.data_if(s):
                self.changed = True
                self.region = set(assigned_names([s]))
                self.runs = []
                self.where = s
                new = self.flagged_if(s, None)
                self.note_partials(new)
                out += new
            elif isinstance(s, (cst.For, cst.While)) and _has_loop_in_data_if(s, self):
                out.append(self.f.mark(s.with_changes(body=self.f.indented(self.block(s.body.body))),
                                       self.f.span(s)))
            elif isinstance(s, cst.If) and _has_loop_in_data_if(s, self):
                orelse: cst.If | cst.Else | None = s.orelse
                if isinstance(orelse, cst.If):
                    chain = self.block([orelse])
                    orelse = chain[0] if len(chain) == 1 and isinstance(chain[0], cst.If) else \
                        cst.Else(body=self.f.indented(chain))
                elif orelse is not None:
                    orelse = orelse.with_changes(body=self.f.indented(self.block(orelse.body.body)))
                out.append(self.f.mark(s.with_changes(body=self.f.indented(self.block(s.body.body)), orelse=orelse),
                                       self.f.span(s)))
            else:
                out.append(s)
        return out

    def flagged_if(self, s: cst.If, outer: str | None, joined: bool = False) -> list[Any]:
        """``if test: A else: B`` (on data, holding a loop) under the flag ``outer`` (None: none) as ``A`` under
        ``test`` and ``B`` under ``not test`` (each joined with ``outer``), loops outside the tests. ``joined``: the
        test is False already where ``outer`` is off (it is bound to False there: :meth:`masked`)."""
        sp = self.f.span(s)
        out: list[Any] = []
        test = self.f.atom(s.test, out, sp)
        assert isinstance(test, cst.Name)
        t = test.value
        if t in assigned_names(list(s.body.body) + orelse_stmts(s)):  # (the test as it is before the branch)
            keep = self.f.fresh(f"{t}_flag")
            self.bta.declare(keep, DYNAMIC)
            out.append(self.f.line(keep, cst.Name(t), sp))
            t = keep
        yes = t if outer is None or joined else \
            self.flag("and_", dotted_call("np.logical_and", cst.Name(outer), cst.Name(t)), out, sp)
        out += self.masked(list(s.body.body), yes, sp)
        other = orelse_stmts(s)
        if other:
            no = self.flag(f"not_{t}", dotted_call("np.logical_not", cst.Name(t)), out, sp)
            if outer is not None:
                no = self.flag("and_", dotted_call("np.logical_and", cst.Name(outer), cst.Name(no)), out, sp)
            out += self.masked(other, no, sp)
        return out

    def flag(self, hint: str, value: cst.BaseExpression, out: list[Any], sp: Span | None) -> str:
        name = self.f.fresh(hint)
        self.bta.declare(name, DYNAMIC)
        out.append(self.f.line(name, value, sp))
        return name

    def masked(self, stmts: Sequence[Any], flag: str, sp: Span | None) -> list[Any]:
        """``if flag: stmts`` with no loop inside the ``if``: runs of statements without loops each in an ``if
        flag:`` of their own, a loop's body masked in turn, an ``if`` on data holding a loop flagged again.

        Assignments of static values (``n = x.shape[0]``, bound nowhere else) run unmasked, before the run they are
        in: a loop's range may read them. The test of an ``if`` on data holding a loop, bound in a run (a loop
        body's ``gt = y[i] > 0``), is bound to ``False`` where ``flag`` is off: it is the joined flag then."""
        out: list[Any] = []
        run: list[Any] = []
        tests = {st.test.value for st in stmts if isinstance(st, cst.If) and self.moves(st) and isinstance(
            st.test, cst.Name) and self.bta.of(st.test) != STATIC and self.counts.get(st.test.value) == 1}
        falses: list[str] = []  # tests the run binds

        def flush() -> None:
            if run:
                orelse = None
                if falses:
                    orelse = cst.Else(body=self.f.indented([self.f.line(t, cst.Name("False"), sp) for t in falses]))
                out.append(self.f.mark(cst.If(test=cst.Name(flag), body=self.f.indented(list(run)), orelse=orelse),
                                       sp))
                self.runs.append(out[-1])
                run.clear()
                falses.clear()

        joined: set[str] = set()
        for s in stmts:
            if isinstance(s, cst.For) and self.where is not None and self.walkable(s) and \
                    self.computed(s.iter, self.where):
                self.dropped |= self.through(s.iter)
        for s in stmts:
            if _assigned_one(s) in self.dropped:  # (`zip_1 = zip(ws, cs)`: the loop walks ws and cs by position)
                continue
            if self.static_line(s):
                out.append(s)
                continue
            if not self.moves(s) or isinstance(s, cst.While):  # (a `while` left: on static values; refused later)
                run.append(s)
                bound = set(assigned_names([s]))
                falses += sorted(tests & bound)
                joined |= tests & bound
                continue
            flush()
            if isinstance(s, cst.For):
                walked = self.by_position(s)
                if walked is s:
                    self.check_sequence(s, stmts)
                s = walked
                out.append(self.f.mark(s.with_changes(body=self.f.indented(self.masked(s.body.body, flag, sp))),
                                       self.f.span(s)))
            elif self.bta.of(s.test) == STATIC:  # a static `if`: each branch masked (one the lowering decides is
                # on data here: under a test on data, a name its test reads may be)
                body = self.masked(s.body.body, flag, sp)
                other = orelse_stmts(s)
                orelse = cst.Else(body=self.f.indented(self.masked(other, flag, sp))) if other else None
                out.append(self.f.mark(s.with_changes(body=self.f.indented(body), orelse=orelse), self.f.span(s)))
            else:
                out += self.flagged_if(s, flag, isinstance(s.test, cst.Name) and s.test.value in joined)
        flush()
        return out

    def note_partials(self, region: list[Any]) -> None:
        """The names a run binds (on its flag's path only) that the region reads outside that run and that no
        statement outside the region binds: reverse mode binds them to ``UNSET`` first (``partials``), as a name an
        ``if`` on data binds on one path (a loop's `break` flag, ``stop = False`` before it)."""
        outside = self.counts.copy()
        outside.subtract(n for st, _ in walk(region) for n in _bound(st))
        everywhere = Counter(names_in(cst.Module(body=region), skip_targets=True))
        for run in self.runs:
            read = everywhere - Counter(names_in(run, skip_targets=True))  # (read outside the run)
            self.partials |= {n for n in assigned_names([run]) if read[n] > 0 and outside[n] <= 0
                              and n not in self.params}

    def static_line(self, s: Any) -> bool:
        """``n = <static>`` whose name no other statement binds (its value the same on every path), reading no name
        the branch computes (but other such static names); or ``n = <sequence>`` (``reversed_1 = reversed(ws)``,
        ``zip_1 = zip(cs, ws)``) reading no name the branch computes but such sequences and static names: a loop
        over it runs outside the ``if``."""
        if not (isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign)):
            return False
        a = s.body[0]
        names = [n for t in a.targets for n in target_names(t.target)]
        read = set(names_in(a.value))
        if not names or any(self.counts.get(n) != 1 for n in names) or \
                read & (self.region - set(self.statics) - self.sequences):
            return False
        if not read & self.sequences and self.bta.at(a.value, self.statics) == STATIC:
            self.statics.update(dict.fromkeys(names, STATIC))
            return True
        if isinstance(a.value, cst.Call) and self.sequence(a.value):
            self.sequences.update(names)
            return True
        return False

    def check_sequence(self, s: cst.For, branch: Sequence[Any]) -> None:
        """A loop's sequence must be the same on both paths: no array the branch computes before the loop."""
        before = branch[:list(map(id, branch)).index(id(s))]
        bound = set(assigned_names(before))
        made = [n for n in names_in(s.iter) if n in bound and n not in self.statics]
        if made:
            raise DifferentiationError(
                f"reverse mode through a loop over `{made[0]}` inside an `if` on array data, `{made[0]}` computed in "
                "the branch, is not supported yet", span=self.located(s),
                hint="loop over an index range instead (`for i in range(n):`), or compute the sequence before the "
                     "`if`")

    def located(self, loop: cst.For) -> Span | None:
        """Where to say something about ``loop``: its line, else (a helper's loop, written out in the branch, or the
        branch itself written anew: no span) the first line inside it, the ``if``'s, one inside the ``if``."""
        for node in (loop, self.where):
            sp = self.f.span(node) or _first_span(self.f.spans, node.body.body if node is not None else [])
            if sp is not None:
                return sp
        return self.f.span(self.nf.fdef)


def _first_span(spans: dict[int, Span], stmts: Sequence[Any]) -> Span | None:
    for st, _ in walk(stmts):
        sp = spans.get(id(st))
        if sp is not None:
            return sp
    for line in stmts:  # (spans of whole lines)
        sp = spans.get(id(line))
        if sp is not None:
            return sp
    return None


def _unpacked(target: cst.BaseExpression, item: cst.BaseExpression) -> list[tuple[str, Any]] | None:
    """``target = item`` as one binding per name (``i, (w, c) = (k, (ws[k], cs[k]))``: ``i = k``, ``w = ws[k]``,
    ``c = cs[k]``); None where the shapes differ (``t = (ws[k], cs[k])``: a tuple built, kept as the loop it is)."""
    if isinstance(target, cst.Name):
        return None if isinstance(item, cst.Tuple) else [(target.value, item)]
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(item, cst.Tuple) or \
            len(target.elements) != len(item.elements) or \
            any(isinstance(t, cst.StarredElement) for t in target.elements):
        return None
    out: list[tuple[str, Any]] = []
    for t, v in zip(target.elements, item.elements):
        part = _unpacked(t.value, v.value)
        if part is None:
            return None
        out += part
    return out


def _assigned_one(s: Any) -> str | None:
    """The name ``s`` binds, where it is a line ``name = value``."""
    if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign) and \
            len(s.body[0].targets) == 1 and isinstance(s.body[0].targets[0].target, cst.Name):
        return s.body[0].targets[0].target.value
    return None


def _has_loop_in_data_if(s: Any, h: _Hoister) -> bool:
    return any(h.data_if(st) for st, _ in walk([s]))


def hoist_branch_loops(nf: NormalizedFunction, body: list[Any], spans: dict[int, Span],
                       active: Sequence[str] = ()) -> tuple[list[Any], dict[int, Span], object]:
    """``body`` with every loop inside an ``if`` on data run outside it, under a flag (see the module docstring);
    the spans of the new nodes, and the rewriter (it keeps those nodes alive while the spans are used; its
    ``partials``: names bound on one path, to bind to ``UNSET`` first). The body itself
    when it has no such loop. ``active``: the parameters differentiated (a test on them is on data)."""
    if not any(isinstance(st, cst.If) and _has_loop(st) for st, _ in walk(body)):  # (most functions: no analysis)
        return body, spans, None
    h = _Hoister(nf, body, spans, active)
    if not any(h.data_if(st) for st, _ in walk(body)):
        return body, spans, None
    new = h.block(body)
    return new, h.f.spans, h
