"""Reverse mode: :class:`VJP` writes the primal sweep and the adjoint sweep of one function.

Reverse mode (:func:`~.derivative_source.vjp_source`, :func:`~.derivative_source.grad_source`) writes the primal
sweep, then the adjoint sweep in reverse statement order, accumulating ``v_bar`` cotangents. Values the adjoint
needs but that the primal overwrites (variables assigned in loops or more than once) are saved on a tape
(``_tape.append(v)`` before the assignment) and restored in the adjoint (``v = _tape.pop()``), which makes static
``if``/``for``/``while`` and helper calls uniform; a loop's adjoint runs over ``reversed(<the saved iterable>)``.
Tapes are plain Python lists: under NumPy they are lists of arrays, under specialization lists of SSA values.
Helpers get a forward and a backward half sharing the tape (:func:`vjp_helper`).

Invariants: the output is valid for every shape the primal accepts (shape work is done by :mod:`srcjax.adjoint`
helpers); only names of the primal are read by the adjoint at points where they hold their primal values. The
adjoint of a statement reads its operands as they were before it and its results as they are after it: when the
statement rebinds an operand (``y = e * y``), what the rule needs of the results (``out``, zero cotangents of
results without one, custom_vjp residuals) is kept in fresh names, then the old values come back (from the tape, or
from names an ``if`` on data saved them in), then the rule runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst

from ..adjoint import TAPE_PREFIX
from ..core import TranspileError
from ..frontend import provenance
from ..frontend.list_aliases import lists_of_rows
from ..frontend.liveness import read_outside
from ..frontend.names import Names, code, names_in, parse_expression, target_names
from ..frontend.normalize import NormalizedFunction
from ..frontend.program import Program
from ..frontend.restructure import walk as _walk
from . import custom_rules, key_items, linear_calls, loop_resets, zero_cotangents
from .activity import (
    Activity,
    argument_reads,
    array_names,
    hoisted_body,
    is_append,
    unique_keys,
    upward_exposed,
)
from .anf import (
    INDEX,
    DifferentiationError,
    LoopSource,
    Op,
    active_loop,
    all_params,
    array_result,
    call_arguments,
    differentiable_params,
    indexing_items,
    lines_free_of_loop_targets,
    lines_read_of,
    literal_container,
    loop_key,
    signature,
    stacked_target_code,
    tuple_target_code,
)
from .integer_leaves import sometimes_integers
from .reverse_body import reverse_body
from .reverse_tables import BodyTables
from .saved_constants import bound_values, constant, constant_names, overwritten, restored, saved_iterable, snapshot
from .templates import expr, instantiate, paren, summand


class VJP:
    """Writes the primal sweep and the adjoint sweep of one function.

    ``mode``: ``"grad"`` -> ``def name(params...)`` returning the cotangents of
    the active params (seeded with ones); ``"vjp"`` -> ``def name(params..., out_bar)``
    returning ``(out, cotangents)``; ``"fwd"``/``"bwd"`` -> helper halves sharing a tape.
    """

    def __init__(self, program: Program, nf: NormalizedFunction, active_params: Sequence[str],
                 helpers: zero_cotangents.Halves, out_lines: list[str], max_iters: int | None = None,
                 nonzero: zero_cotangents.Parts | None = None) -> None:
        self.program = program
        self.nonzero = nonzero  # (a helper's backward half: the parts of its output whose cotangent may be nonzero)
        self.nf = nf
        self.max_iters = max_iters
        self.active_params = list(active_params)
        self.bar: dict[str, str] = {}
        self.helpers = helpers
        self.out_lines = out_lines
        self.params = all_params(nf)
        body, self.spans, self._bounder, self.names = reverse_body(program, nf, max_iters, self.active_params)
        # names bound on one path of a loop's `if` run outside it: UNSET first (transforms/branch_loops.py)
        self.branch_partials: set[str] = getattr(self._bounder[1], "partials", set())  # type: ignore[index]
        self.tape = self.names.fresh(TAPE_PREFIX)
        unhoisted = body
        self.ret: cst.Return = body[-1].body[-1]
        self.act = Activity(program, nf, active_params, body)
        body, self.act = hoisted_body(program, nf, active_params, body, self.act, self.names, self.spans)
        keys = unique_keys(body, self.params)  # (index keys that cannot repeat: `y[i] = v`)
        self.act.active = self.act.active - constant_names(body, self.act, self.params, keys)  # (no cotangent)
        self.body = list(body[:-1]) + ([cst.SimpleStatementLine(body=list(body[-1].body[:-1]))]
                                       if len(body[-1].body) > 1 else [])
        self.body, self.custom_res = custom_rules.with_residuals(self, self.body)
        self.no_bar: set[int] = set()  # calls whose result gets no cotangent: primal calls them plainly
        self.call_parts = zero_cotangents.CallParts(self)  # per helper call: its result's parts with a cotangent
        # (binding times, tape tables, program order: made when a statement first asks, none in straight lines)
        self.tables = BodyTables(nf, unhoisted, self.body, self.params, self.active_params)
        self.bound_values = bound_values(self.body)  # (loops over a name bound to an iterator: saved_iterable)
        self.saved = overwritten(self.body, self.params)
        self.arrays = array_names(self.body, self.act)
        # (self.body's: body's less its return, which binds nothing, unless a custom_vjp's call got a residual)
        self.unique_keys = unique_keys(self.body, self.params) if self.custom_res else keys
        self.loop_index: dict[int, str] = {}
        self.loop_iters: dict[int, str] = {}
        self.static_iters: set[str] = set()  # saved iterables of loops that carry no derivatives
        self.counters: dict[int, str] = {}
        self.loop_locals: dict[int, list[str]] = {}
        # (statement id, name) -> where the adjoint gets the old value back: the tape, or a name saved in a data `if`
        self.pushed: dict[tuple[int, str], str] = {}
        self.branch_saves: list[list[tuple[str, str]]] = []  # per open data `if`: (saved name, variable)
        self.loop_saves: list[list[str]] = []  # per open loop: saved names first bound in its body
        self.enclosing: list[Any] = []  # the open loops
        self.carried: list[set[str]] = []  # per open loop: names its body reads before it binds them
        self.restore: set[str] = set(self.saved)
        self.constants: set[str] = set()  # (a backward half's: saved values popped as constants)
        self.seed_expr: str | None = None  # grad seeds the output's cotangent with this expression
        self.seeded: set[str] = set()  # out_bar as a caller passes it (a tuple where it unpacks), and copies of it
        # cotangents that may be None: an element of a container's cotangent (an integer leaf's, `S(count, mu)`)
        self.maybe_none: set[str] = set()

    def writer_for(self, nf: NormalizedFunction, active: Sequence[str]) -> VJP:
        """The reverse mode of ``nf`` w.r.t. ``active``, sharing this writer's helpers (custom_rules' hook)."""
        return VJP(self.program, nf, tuple(active), self.helpers, self.out_lines)

    def bname(self, v: str) -> str:
        return self.bar.get(v) or self.bar.setdefault(v, self.names.fresh(f"{v}_bar"))  # (fresh: once per name)

    # -- primal sweep -------------------------------------------------------------------------
    def primal(self, stmts: Sequence[Any], ind: int, lines: list[str], bound: set[str]) -> None:
        """Emit the primal; save a value on the tape before it is overwritten, if the adjoint reads it.
        ``bound`` holds the names definitely bound here (a push needs a value)."""
        pad = "    " * ind
        for s in stmts:
            if isinstance(s, cst.SimpleStatementLine):
                first = len(lines)
                for small in s.body:
                    if isinstance(small, cst.Assign):
                        targets = [n for t in small.targets for n in target_names(t.target)]
                        op = self.act.op(small.value)
                        for n in targets:
                            carried = any(n in c for c in self.carried)  # (first bound in a loop carrying it)
                            if n in self.restore and n not in bound and carried:
                                self.declared.add(n)  # (UNSET at the top: a push needs a value)
                            if n in self.restore and (n in bound or carried):
                                if self.branch_saves:
                                    sv = self.names.fresh(f"{n}_before")
                                    lines.append(f"{pad}{sv} = {snapshot(self, n)}")
                                    self.pushed[(id(small), n)] = sv
                                    self.branch_saves[-1].append((sv, n))
                                    bound.add(sv)  # (bound on this path: a save in a loop is not, outside it)
                                    if self.loop_saves:
                                        self.loop_saves[-1].append(sv)
                                else:
                                    lines.append(f"{pad}{self.tape}.append({n})")
                                    self.pushed[(id(small), n)] = f"{self.tape}.pop()"
                        bound.update(targets)
                        if op.kind == "custom" and (line := custom_rules.primal_line(self, small, op, pad)) is not None:
                            lines.append(line)
                            continue
                        if op.kind == "call" and self.call_active(op) and id(small) not in self.no_bar and \
                                linear_calls.rules(self.program, op) is None:
                            fwd, _ = self.call_names(op)
                            lines.append(f"{pad}{code(small.targets[0].target)} = {fwd}"
                                         f"({', '.join(call_arguments(op, [self.tape]))})")
                            continue
                    lines.append(pad + code(small))
                provenance.mark_lines(lines, first, self.nf.spans.get(id(s)))  # (errors in them: located at s)
            elif isinstance(s, cst.If):
                self.primal_if(s, ind, lines, bound)
            elif isinstance(s, (cst.For, cst.While)):
                body_lines: list[str] = []
                inner = set(bound)
                if isinstance(s, cst.For):
                    inner.update(target_names(s.target))
                self.loop_saves.append([])
                self.carried.append(upward_exposed(s.body.body) | read_outside(self.body, s))  # (or read after it)
                self.enclosing.append(s)
                self.primal(s.body.body, ind + 1, body_lines, inner)
                self.enclosing.pop()
                self.carried.pop()
                in_branches = self.loop_saves.pop()
                # names first bound inside the body: saved at the end of every iteration
                local = sorted(n for n in self.assigned_in(s.body.body) - bound if n in self.restore) + in_branches
                self.loop_locals[id(s)] = local
                # bound only by a nested loop, which may run no iterations (`for k in range(j)`): declared
                # at the top of the function, so the save has a value (read only where it was bound)
                self.declared.update(n for n in local if n not in inner)
                if local:
                    body_lines.append(f"{pad}    {self.tape}.append(({', '.join(local)},))")
                if isinstance(s, cst.For):
                    it = self.loop_iters.get(id(s))
                    # an active loop's sequences are names the loop (or an enclosing loop, in place: `hist.append(y)`
                    # after `for h in hist`) does not change: its adjoint iterates over them again (forward mode too)
                    changed = set(names_in(s.iter)) & set().union(*(self.changed_in(lp) for lp in self.enclosing))
                    reuse = (bool(active_loop(s, self.act.active)) or type(s.iter) is cst.Name and  # (`for k in d`
                             s.iter.value in self.act.active and indexing_items(s)) and not changed and \
                        not set(names_in(s.iter)) & self.assigned_in(s.body.body)
                    if it is None:
                        it = self.loop_iters[id(s)] = code(s.iter) if reuse else self.names.fresh("loop_items")
                        if not reuse and not active_loop(s, self.act.active):  # items without derivatives
                            self.static_iters.add(it)
                        if not reuse and self.spans.get(id(s)) is not None:
                            self.nf.loop_names[it] = self.spans[id(s)]
                    if not reuse:  # an iterator (enumerate, zip, ...) is saved as a list: the adjoint reverses it
                        saved = saved_iterable(s.iter, self.bound_values)
                        lines.append(f"{pad}{it} = {f'list({saved})' if changed and saved == code(s.iter) else saved}")
                        bound.add(it)
                        if self.loop_saves and it not in self.loop_saves[-1]:
                            self.loop_saves[-1].append(it)  # per iteration of the enclosing loop (range(j, n))
                    lines.append(f"{pad}for {code(s.target)} in {it}:")
                else:
                    c = self.counters.get(id(s))
                    if c is None:
                        c = self.counters[id(s)] = self.names.fresh("loop_count")
                    if self.loop_saves and c not in self.loop_saves[-1]:
                        self.loop_saves[-1].append(c)  # the trip count of each run of a nested while
                    lines.append(f"{pad}{c} = 0")
                    bound.add(c)
                    lines.append(f"{pad}while {code(s.test)}:")
                    body_lines.append(f"{pad}    {c} = {c} + 1")
                lines += body_lines or [f"{pad}    pass"]

    def primal_if(self, s: cst.If, ind: int, lines: list[str], bound: set[str]) -> None:
        """An ``if``; on data, values the adjoint restores are saved in names both branches bind."""
        from ..frontend.binding_times import STATIC

        pad = "    " * ind
        data = self.tables.bta.of(s.test) != STATIC
        if data:
            self.branch_saves.append([])
        lines.append(f"{pad}if {code(s.test)}:")
        b1 = set(bound)
        first: list[str] = []
        self.primal(s.body.body, ind + 1, first, b1)
        saves1 = self.branch_saves[-1][:] if data else []
        b2 = set(bound)
        second: list[str] = []
        if s.orelse is not None:
            self.primal([s.orelse] if isinstance(s.orelse, cst.If) else s.orelse.body.body, ind + 1, second, b2)
        if data:
            saves = self.branch_saves.pop()
            saves2 = saves[len(saves1):]
            for mine, other in ((first, saves2 + [p for p in saves1 if p[0] not in b1]),  # saved names it may not bind
                                (second, saves1 + [p for p in saves2 if p[0] not in b2])):  # (the other's, its own
                mine[:0] = [f"{pad}    {sv} = {snapshot(self, n, bound)}" for sv, n in other]  # in a loop) first
            if self.branch_saves:
                self.branch_saves[-1] += saves
            bound.update(sv for sv, _ in saves)  # both branches bind every saved name
        if self.loop_saves:
            # a loop saves what its body binds at the end of every iteration: a name the adjoint needs that one
            # branch binds is UNSET on the others (read only under the same test, static or on data: `if j != k`
            # in a comprehension's loops), unless the loop carries it (`if i == 0: acc = ...`: the last step's)
            for mine, b_mine, b_other in ((first, b1, b2), (second, b2, b1)):
                for n in sorted((b_other - b_mine - bound - set().union(*self.carried)) & self.restore):
                    mine.append(f"{pad}    {n} = UNSET")
                    b_mine.add(n)
        elif data:
            # bound on one path only (outside loops): the adjoint's zero cotangent for such a name on
            # the other path reads it, so the function binds it to UNSET first (zeros_like(UNSET) is UNSET)
            self.partial |= (b1 ^ b2) - bound
        if not data and not self.loop_saves:  # (the adjoint's join of a static if reads these: `adjoint`)
            self.static_ifs[id(s)] = (set(bound), set(b1), set(b2))
        lines += first or [f"{pad}    pass"]
        if second:
            lines.append(f"{pad}else:")
            lines += second
        bound |= b1 & b2

    def assigned_in(self, stmts: Sequence[Any]) -> set[str]:
        return {n for st, _ in _walk(stmts) if isinstance(st, cst.Assign)
                for t in st.targets for n in target_names(t.target)}

    # -- adjoint sweep ------------------------------------------------------------------------
    def accumulate(self, v: str, contrib: str, lines: list[str], pad: str, defined: set[str],
                   maybe_none: bool = False) -> None:
        """``contrib`` added into ``v``'s cotangent (``maybe_none``: it is a record's field's cotangent, None where
        the field is an integer: added by ``tree_add``, as is what is added to it later)."""
        b = self.bname(v)
        scatter = f"index_add(zeros_like({v}), "
        if v in defined and contrib.startswith(scatter):  # add into the accumulator in place
            lines.append(f"{pad}{b} = index_add({b}, {contrib[len(scatter):]}")
        elif v in defined and (v not in self.arrays or maybe_none or b in self.maybe_none):
            # (may be a container: `+` would concatenate lists; or None: a record's field's)
            lines.append(f"{pad}{b} = tree_add({b}, {contrib})")
        elif v in defined:
            lines.append(f"{pad}{b} = {b} + {summand(contrib)}")
        else:  # (a list built by appends, its adjoint pops the cotangent: gx, gy = np.gradient(x) passed a tuple)
            pack = v in self.act.pushed and contrib in self.seeded
            lines.append(f"{pad}{b} = {f'pack_like({v}, {contrib})' if pack else contrib}")
            self.seeded |= {b} if contrib in self.seeded else set()
            self.maybe_none |= {b} if maybe_none else set()
            defined.add(v)

    def adjoint(self, stmts: Sequence[Any], ind: int, lines: list[str], defined: set[str]) -> None:
        pad = "    " * ind
        for s in reversed(stmts):
            if isinstance(s, cst.SimpleStatementLine):
                first = len(lines)
                for small in reversed(s.body):
                    self.adjoint_small(small, ind, lines, defined)
                provenance.mark_lines(lines, first, self.nf.spans.get(id(s)))  # (the statement it transposes)
            elif isinstance(s, cst.If):
                b1: list[str] = []
                d1 = set(defined)
                self.adjoint(s.body.body, ind + 1, b1, d1)
                b2: list[str] = []
                d2 = set(defined)
                if s.orelse is not None:
                    self.adjoint([s.orelse] if isinstance(s.orelse, cst.If) else s.orelse.body.body, ind + 1, b2, d2)
                union = d1 | d2
                paths = self.static_ifs.get(id(s))
                for k, (bl, d) in enumerate(((b1, d1), (b2, d2))):
                    for v in sorted(union - d):
                        if paths is not None and v not in paths[0] and v not in paths[k + 1]:
                            # a static if, v unbound on this path unless an earlier branch bound it: with
                            # no binding before this `if`, no adjoint reads the zeros; else v may be unbound
                            # here (its zeros read only on paths that bind it): UNSET until it is bound
                            if v not in self.tables.bound_before(s):
                                continue
                            self.maybe_unbound.add(v)
                        bl.append(f"{pad}    {self.bname(v)} = zeros_like({v})")
                defined.clear()
                defined |= union
                lines.append(f"{pad}if {code(s.test)}:")
                lines += b1 or [f"{pad}    pass"]
                if b2:
                    lines.append(f"{pad}else:")
                    lines += b2
            elif isinstance(s, (cst.For, cst.While)):
                body: list[str] = []
                inner = set(defined)
                # cotangents the body accumulates into outer variables must exist before the loop
                touched = self.contributed(s.body.body)
                srcs = active_loop(s, self.act.active) if isinstance(s, cst.For) else []
                values_key = None
                if isinstance(s, cst.For) and isinstance(s.iter, cst.Call) and isinstance(s.iter.func, cst.Attribute) \
                        and s.iter.func.attr.value == "values" and not s.iter.args and len(srcs) == 1:
                    # `for v in d.values()`: the adjoint walks d.items(), so it has each key at hand
                    values_key = self.loop_index.setdefault(id(s), self.names.fresh("key"))
                    srcs = [LoopSource(srcs[0].target, srcs[0].seq, values_key)]
                touched |= {code(src.seq) for src in srcs if code(src.seq) in self.act.active}
                touched |= {lst for lst in self.appended_in(s.body.body) if self.tables.read_before(lst, s)}
                local = self.assigned_in(s.body.body) | {  # (an inner loop's items too: rebound there)
                    n for st, _ in _walk(s.body.body) if isinstance(st, cst.For) for n in target_names(st.target)}
                items = set(target_names(s.target)) if srcs else set()  # type: ignore[union-attr]
                pre: list[str] = []
                carried = upward_exposed(s.body.body)  # read before the body assigns them: loop-carried
                for v in sorted(touched - defined - items):  # (items: rebound every iteration; no bar: 0 * inf)
                    if (v not in local or v in self.params or v in carried) and self.call_parts.may_get_one(v):
                        pre.append(f"{pad}{self.bname(v)} = zeros_like({v})")
                        inner.add(v)
                start = set(inner)
                saved = self.loop_locals.get(id(s), [])
                if saved:
                    popped, consts = restored(saved, self.constants, self.names.fresh)
                    body.append(f"{pad}    {', '.join(popped)}{',' if len(saved) == 1 else ''} = {self.tape}.pop()")
                    body += [f"{pad}    {c}" for c in consts]
                top = len(body)
                self.adjoint(s.body.body, ind + 1, body, inner)
                body[top:top] = loop_resets.reshaped(self, s, sorted(start - inner), saved, pad)  # (layers' shapes)
                index = None
                if srcs:  # the items' cotangents into their sequences' (at position INDEX, if needed)
                    items_lines: list[str] = []
                    self.item_cotangents(srcs, INDEX, items_lines, pad + "    ", inner, s.body.body)
                    if any(INDEX in ln for ln in items_lines):
                        index = self.loop_index.setdefault(id(s), self.names.fresh("i"))
                    body += [ln.replace(INDEX, index or INDEX) for ln in items_lines]
                for v in sorted(start - inner):
                    body.append(f"{pad}    {self.bname(v)} = zeros_like({v})")
                lines += pre
                if isinstance(s, cst.For) and index is not None:
                    lines.append(f"{pad}for {index}, {tuple_target_code(s.target, str)} in "
                                 f"reversed(list(enumerate({self.loop_iters[id(s)]}))):")
                elif isinstance(s, cst.For) and values_key is not None:
                    lines.append(f"{pad}for {values_key}, {tuple_target_code(s.target, str)} in "
                                 f"reversed(list({code(s.iter.func.value)}.items())):")  # type: ignore[attr-defined]
                elif isinstance(s, cst.For) and srcs:
                    lines.append(f"{pad}for {code(s.target)} in reversed(list({self.loop_iters[id(s)]})):")
                elif isinstance(s, cst.For):
                    lines.append(f"{pad}for {code(s.target)} in reversed({self.loop_iters[id(s)]}):")
                else:
                    lines.append(f"{pad}for _ in range({self.counters[id(s)]}):")
                lines += body or [f"{pad}    pass"]
                defined.clear()
                defined |= start

    def item_cotangents(self, srcs: list[LoopSource], index: str, lines: list[str], pad: str,
                        defined: set[str], body: Sequence[Any] = ()) -> None:
        """At the end of an adjoint loop iteration: the loop items' cotangents into their sequences' (``body``: the
        loop's, where an item compared by ``max``/``min`` may be a dict's key)."""
        for src in srcs:
            names = target_names(src.target)
            seq = code(src.seq)
            if any(n in defined for n in names) and seq in self.act.active:
                bar = tuple_target_code(src.target, lambda n: self.bname(n) if n in defined else f"zeros_like({n})")
                keyed = key_items.may_be_keys(src, self.arrays, self.bound_values, body)
                if keyed:  # (`for k in d` of a dict yields its keys, which carry no derivative: fix50's wrong
                    # d_bar[position] += k_bar; the test is static: the lowering keeps one branch)
                    lines.append(f"{pad}if not isinstance({seq}, dict):")
                self.accumulate(seq, f"index_add(zeros_like({seq}), {loop_key(src, index)}, {bar})", lines,
                                pad + "    " * keyed, defined)
            for n in names:
                defined.discard(n)

    def changed_in(self, loop: Any) -> set[str]:
        """Names ``loop``'s body changes by a method call (``hist.append(y)``, ``v = hist.pop()``)."""
        calls = (st.value for st, _ in _walk(loop.body.body) if st.__class__ in (cst.Expr, cst.Assign))
        return {code(c.func.value) for c in calls if c.__class__ is cst.Call and c.func.__class__ is cst.Attribute
                and c.func.value.__class__ is cst.Name}

    def appended_in(self, stmts: Sequence[Any]) -> set[str]:
        """Active lists the statements append to."""
        return {code(st.value.func.value) for st, _ in _walk(stmts) if is_append(st)} & self.act.active

    def contributed(self, stmts: Sequence[Any]) -> set[str]:
        out: set[str] = set()
        for s, _ in _walk(stmts):
            if isinstance(s, cst.Assign):
                out |= {n for n in self.act.op(s.value).reads if n in self.act.active}
            elif isinstance(s, cst.For):  # (a loop inside over `pairs` made before: its adjoint adds into pairs_bar
                out |= {code(c.seq) for c in active_loop(s, self.act.active)} & self.act.active  # at every pass)
            elif isinstance(s, cst.Expr) and isinstance(s.value, cst.Call) and not s.value.args and \
                    isinstance(s.value.func, cst.Attribute) and s.value.func.attr.value == "pop":
                # `_tape_dot.pop()`, item unused: its adjoint appends to `_tape_dot_bar`, which must exist before the
                # loop (was: made again at each pass and after it: "pop from empty list" in vjp(jvp(grad(f))))
                out |= {code(s.value.func.value)} & self.act.active
            elif isinstance(s, cst.Expr) and isinstance(s.value, cst.Call) and len(s.value.args) == 1 and \
                    isinstance(s.value.func, cst.Attribute) and s.value.func.attr.value == "append":  # out.append(x)
                out |= set(names_in(s.value.args[0].value)) & self.act.active  # (x made before: was a zero x_bar)
        return out

    def adjoint_small(self, s: Any, ind: int, lines: list[str], defined: set[str]) -> None:
        pad = "    " * ind
        if isinstance(s, cst.Expr):
            call = s.value
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and \
                    call.func.attr.value == "pop" and not call.args:
                # `_tape_dot.pop()`, item unused: the append it undoes pops a cotangent for it, kept in step
                if (lst := code(call.func.value)) in self.act.active:
                    self.cotangent_list(lst, lines, pad, defined)
                    lines.append(f"{pad}{self.bname(lst)}.append(None)")
                    self.tables.tape_zeros.record(lst, s, None, set())
                return
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "append":
                lst = code(call.func.value)
                node = call.args[0].value
                arg = code(node)
                if lst not in defined and lst in self.act.active and self.tables.read_before(lst, s):
                    # the list's last append, read before it (`b = items[0]`, then appends): its cotangent
                    # starts here, as long as the list is now; what this append added gets none
                    lines.append(f"{pad}{self.bname(lst)} = zeros_like({lst}[:-1])")
                    defined.add(lst)
                    return
                if lst not in defined:  # no cotangent reached this binding of the list (a result not used)
                    return
                if lst not in self.act.active:
                    return
                lb = self.bname(lst)
                if isinstance(node, (cst.Tuple, cst.List, cst.Dict)) and \
                        all(isinstance(e, (cst.Element, cst.DictElement)) for e in node.elements):
                    # `_tape.append((a, b,))` (derivative code), `items.append([v, w])`, `items.append((v, (w, u)))`:
                    # the popped cotangent's items into each element, nested displays too
                    skip = self.tables.tape_zeros.zero_items(lst, len(node.elements)) \
                        if not isinstance(node, cst.Dict) else ()
                    node = node.with_changes(elements=[e.with_changes(value=cst.Name("None")) if k in skip else e
                                                       for k, e in enumerate(node.elements)])  # (zeros: none)
                    if not set(names_in(node)) & self.act.active:
                        lines.append(f"{pad}{lb}.pop()")
                    elif len(node.elements) == 1 and isinstance(node.elements[0].value, cst.Name):
                        self.accumulate(code(node.elements[0].value), f"{lb}.pop()[0]", lines, pad, defined)
                    else:
                        row = self.names.fresh("saved_bar")
                        lines.append(f"{pad}{row} = {lb}.pop()")
                        ints = sometimes_integers(self.body)  # (`items.append((i, y))`: i's cotangent None)
                        self.element_adjoint(node, row, lines, pad, defined, bool(set(names_in(node)) & ints))
                elif arg in self.act.active and not self.tables.tape_zeros.all_zero(lst):  # (a zero at every pop: none)
                    self.accumulate(arg, f"{lb}.pop()", lines, pad, defined)
                elif set(names_in(node)) & self.act.active and arg not in self.act.active:  # (ANF names it: unmet)
                    raise DifferentiationError(f"cannot differentiate through `{lst}.append({arg})` yet",
                                               hint=f"name the appended value first: item = {arg}; "
                                                    f"{lst}.append(item)")
                else:
                    lines.append(f"{pad}{lb}.pop()")
            return
        if not isinstance(s, cst.Assign):
            return
        target = s.targets[0].target
        names = target_names(target)
        op = self.act.op(s.value)
        restore = [n for n in names if (id(s), n) in self.pushed]
        old = {n: constant(self.pushed[(id(s), n)], n in self.constants) for n in restore}
        has_bar = any(n in defined and n in self.act.active for n in names)
        if not has_bar:
            if op.kind in ("call", "custom"):
                self.no_bar.add(id(s))  # its forward half would leave residuals on the tape: not used
            if op.kind == "tape_pop" and op.callee in self.act.active:
                # a zero cotangent for what was popped: the append this pop undoes adds it (a stack, in step)
                self.cotangent_list(op.callee, lines, pad, defined)
                zeros = tuple_target_code(target, lambda n: f"zeros_like({n})")
                lines.append(f"{pad}{self.bname(op.callee)}.append({zeros})")
                self.tables.tape_zeros.record(op.callee, s, target, set())
            for n in reversed(restore):  # the last pushed comes off the tape first
                lines.append(f"{pad}{n} = {old[n]}")
            defined -= set(names)
            return
        if op.kind == "custom":
            custom_rules.adjoint(self, s, op, [(n, old[n]) for n in reversed(restore)], lines, pad, defined)
            return
        reads_target = any(n in op.operands.values() or n in op.reads for n in names)
        taped = op.kind == "call" and linear_calls.rules(self.program, op) is None  # (else a rule, as a primitive's)
        if restore and reads_target and not taped and not isinstance(target, cst.Name):
            # the old values come back before the rule runs (below): a result without a cotangent gets
            # its zeros now, shaped like the result (`a, b = b, a`: the old `b` may have another shape)
            for n in names:
                if n not in defined:
                    lines.append(f"{pad}{self.bname(n)} = zeros_like({n})")
                    defined.add(n)
        tcode = code(target)
        if isinstance(target, cst.Name):  # the result's cotangent, consumed by this statement
            gexpr = self.bname(tcode)
        elif any(isinstance(e.value, (cst.Tuple, cst.List)) for e in target.elements):  # type: ignore[attr-defined]
            gexpr = tuple_target_code(target, lambda n: self.bname(n) if n in defined else f"zeros_like({n})")
        else:
            gexpr = "(" + ", ".join(self.bname(n) if n in defined else f"zeros_like({n})" for n in names) + ",)"
        if taped and not isinstance(target, cst.Name):  # `d, y = f(x)`: `(None, y_bar)` where f's half reads no d
            gexpr = zero_cotangents.call_cotangent(self, op, target, defined) or gexpr
        rows = not isinstance(target, cst.Name) and array_result(op, self.program)
        if rows:  # `lo, hi = np.percentile(x, [5, 95])`: rows of one array
            gexpr = stacked_target_code(target, lambda n: self.bname(n) if n in defined else f"zeros_like({n})")
        elif op.kind == "prim" and isinstance(target, (cst.Tuple, cst.List)) and op.prim is not None and \
                op.prim.result_kind(op.args) == "any":  # `x0, y0 = p[0]`: an array's rows, or a tuple's items
            gexpr = f"pack_like({code(s.value)}, {gexpr})"
        out_ref = stacked_target_code(target, str) if rows else tcode  # (`w, x = q / s`: `out` is one array)
        if restore:
            if not taped and reads_target:
                # the operands are the old values: restore them first, keeping what the rule needs
                if op.kind == "prim" and self.uses_out(op):
                    out_ref, rule_out = self.names.fresh(f"{tcode}_out" if "," not in tcode else "out"), out_ref
                    lines.append(f"{pad}{out_ref} = {rule_out}")
                if isinstance(target, cst.Name):
                    gsave = self.names.fresh(f"{tcode}_bar_out")
                    lines.append(f"{pad}{gsave} = {gexpr}")
                    gexpr = gsave
                for n in reversed(restore):
                    lines.append(f"{pad}{n} = {old[n]}")
                restore = []
        elif (op.kind in ("prim", "copy", "pack", "record") or op.kind == "call" and not taped) and \
                isinstance(target, cst.Name) and (tcode in op.operands.values() or tcode in op.elements or
                                                  op.kind == "call" and tcode in op.reads):
            # `y = f(y, ...)`: the rule accumulates into y's cotangent, which it also reads
            gsave = self.names.fresh(f"{tcode}_bar_out")
            lines.append(f"{pad}{gsave} = {gexpr}")
            gexpr = gsave
        had = {n for n in names if n in defined}  # (what the targets had: a tape pop's zeros, a pack's parts)
        defined -= set(names)
        if op.kind == "prim":
            self.prim_adjoint(op, out_ref, gexpr, lines, pad, defined)
        elif op.kind == "copy":
            src = op.operands["x"]
            if src in self.act.active:  # `a, b = x`: the cotangents packed like x (a list, an array, ...)
                self.accumulate(src, gexpr if isinstance(target, cst.Name) else f"pack_like({src}, {gexpr})",
                                lines, pad, defined)
        elif op.kind in ("dict", "getattr", "tree_add", "pack_like"):
            self.container_adjoint(op, gexpr, lines, pad, defined)
        elif op.kind == "record":  # State(a, b): each field's cotangent into what it was built of
            for e, f in zip(op.elements, op.args["fields"]):  # (a field may be an integer: its cotangent None)
                self.element_adjoint(parse_expression(e), f'tree_get({gexpr}, "{f}")', lines, pad, defined, True)
        elif op.kind == "leaves" and op.operands["x"] in self.act.active:  # tree_leaves(p) (and its transposes)
            src = op.operands["x"]
            form, like = op.args["form"], op.args.get("like", src)
            self.accumulate(src, f"leaves_like({gexpr}, {like})" if form == "from_leaves" else
                            f"from_leaves({like}, {gexpr})", lines, pad, defined)
        elif op.kind == "convert" and op.operands["x"] in self.act.active:  # tuple(items)
            src = op.operands["x"]
            self.accumulate(src, f"pack_like({src}, {gexpr})", lines, pad, defined)
        elif op.kind == "pack":  # (each part its own cotangent, none where a target has none)
            zero_cotangents.pack_adjoint(self, s, op, target, gexpr, had, lines, pad, defined)
        elif op.kind == "tape_pop":
            self.cotangent_list(op.callee, lines, pad, defined)  # type: ignore[arg-type]
            lines.append(f"{pad}{self.bname(op.callee)}.append({gexpr})")  # type: ignore[arg-type]
            self.tables.tape_zeros.record(op.callee, s, target, had)  # type: ignore[arg-type]
        elif op.kind == "call":
            self.call_adjoint(op, gexpr, lines, pad, defined)
        for n in reversed(restore):
            lines.append(f"{pad}{n} = {old[n]}")

    def element_adjoint(self, node: cst.BaseExpression, g: str, lines: list[str], pad: str,
                        defined: set[str], maybe_none: bool = False) -> None:
        """The cotangent ``g`` of one element of a tuple or list literal into what it reads: a name, or each element
        of a nested literal (``(y, (x, c))``: ``g[1][0]`` into x; ``({"h": h}, s)``: ``g[0]["h"]`` into h)
        (``maybe_none``: a record's field, ``State(count, mu)``, None where it is an integer)."""
        if isinstance(node, cst.Name):
            if node.value in self.act.active:
                self.accumulate(node.value, g, lines, pad, defined, maybe_none)
        elif isinstance(node, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement)
                                                                 for e in node.elements):
            for k, el in enumerate(node.elements):
                self.element_adjoint(el.value, f"{g}[{k}]", lines, pad, defined, maybe_none)
        elif isinstance(node, cst.Dict) and all(isinstance(e, cst.DictElement) for e in node.elements):
            for de in node.elements:
                self.element_adjoint(de.value, f"{g}[{code(de.key)}]", lines, pad, defined,  # type: ignore[attr-defined]
                                     maybe_none)

    def cotangent_list(self, lst: str, lines: list[str], pad: str, defined: set[str]) -> None:
        """``lst_bar`` exists before the adjoint of ``v = lst.pop()`` appends to it: one zero per item
        left in ``lst`` (none, for a derivative's tape, which the primal empties)."""
        if lst not in defined:
            lines.append(f"{pad}{self.bname(lst)} = zeros_like({lst})")
            defined.add(lst)

    def container_adjoint(self, op: Op, g: str, lines: list[str], pad: str, defined: set[str]) -> None:
        """Cotangents of a dict literal's values, of ``p`` in ``p.w``, of tree_add's and pack_like's operands."""
        if op.kind == "dict":  # (a value whose key is never read: none)
            for k, e in zip(op.keys, op.elements):
                if not zero_cotangents.unread(self, op, parse_expression(k)):
                    self.element_adjoint(parse_expression(e), f"{g}[{k}]", lines, pad, defined)
        elif op.kind == "getattr":
            x = op.operands["x"]
            if x in self.act.active:
                self.accumulate(x, f'index_add(zeros_like({x}), "{op.args["attr"]}", {g})', lines, pad, defined)
        elif op.kind == "tree_add":
            for e in op.elements:
                if e in self.act.active:
                    self.accumulate(e, g, lines, pad, defined)
        elif op.elements and op.elements[0] in self.act.active:  # pack_like(x, items)
            self.accumulate(op.elements[0], f"tuple({g})", lines, pad, defined)
        elif op.elements:  # pack_like(x, (a_bar, (b_bar, c_bar))): each item's cotangent into its name
            items = parse_expression(op.elements[0])
            if isinstance(items, (cst.Tuple, cst.List)):
                self.element_adjoint(items, g, lines, pad, defined)

    def uses_out(self, op: Op) -> bool:
        assert op.prim is not None
        return any("out" in names_in(expr(t)) for t in op.prim.vjp_for(op.args).values())

    def prim_adjoint(self, op: Op, out: str, g: str, lines: list[str], pad: str, defined: set[str]) -> None:
        prim = op.prim
        assert prim is not None
        if not prim.differentiable(op.args):
            return
        templates = prim.vjp_for(op.args)
        if not templates:
            raise DifferentiationError(f"no derivative rule for {prim.path} yet", hint=(
                prim.no_rule_hint or "file an issue; or wrap it in srcjax.custom_vjp (issue #5)"))
        mapping = {k: v if isinstance(v, str) else "[" + ", ".join(v) + "]" for k, v in op.args.items()}
        mapping["out"] = paren(out)  # (a tuple target of a multi-result primitive: `(w, v)`)
        mapping["out_bar"] = g
        for p, tmpl in templates.items():
            if p in prim.array_seqs:
                seq = op.args.get(p)
                if isinstance(seq, str) and seq.isidentifier() and seq in self.act.active:  # np.stack(xs)
                    tmp = self.names.fresh(f"{p}_bars")
                    bars = instantiate(tmpl, mapping, self.unique_keys)  # (rows that are lists: rows_bars)
                    if bars.startswith("join_bars(") and seq in lists_of_rows(self.body):  # (`items.append((v, w))`)
                        bars = "rows_bars(" + bars[len("join_bars("):]
                    lines.append(f"{pad}{tmp} = {bars}")
                    self.accumulate(seq, f"pack_like({seq}, {tmp})", lines, pad, defined)
                if not isinstance(seq, list):
                    continue
                parts = instantiate(tmpl, mapping, self.unique_keys)
                tmp = self.names.fresh(f"{p}_bars")
                lines.append(f"{pad}{tmp} = {parts}")
                for k, e in enumerate(seq):  # a name, or a nested literal (`np.array([[a, b], [c, d]])`)
                    self.element_adjoint(parse_expression(e), f"{tmp}[{k}]", lines, pad, defined)
                continue
            a = op.operands.get(p)
            lit = literal_container(op.args.get(p)) if a is None else None
            if lit is not None and any(n in self.act.active for n in names_in(lit)):
                # `(a, b)` as an array: element k of its cotangent into the k-th name
                tmp = self.names.fresh(f"{p}_bar")
                lines.append(f"{pad}{tmp} = {instantiate(tmpl, mapping, self.unique_keys)}")
                self.element_adjoint(lit, tmp, lines, pad, defined)
                continue
            if a is None or a not in self.act.active:
                continue
            self.accumulate(a, instantiate(tmpl, mapping, self.unique_keys), lines, pad, defined)

    # -- helper calls ---------------------------------------------------------------------------
    def call_bound(self, op: Op) -> tuple[NormalizedFunction, list[str], dict[str, str]]:
        callee = self.program.functions[op.callee]  # type: ignore[index]
        params = all_params(callee)
        bound = dict(zip(params, op.call_args))
        bound.update(op.call_kwargs)
        return callee, params, bound

    def call_active(self, op: Op) -> tuple[str, ...]:
        """The callee's params that receive active values, if any cotangent flows back through them."""
        callee, params, bound = self.call_bound(op)
        diff = differentiable_params(callee)
        active = tuple(p for p in params if p in bound and p in diff and any(
            n in self.act.active for n in argument_reads(bound[p])))
        if not active or linear_calls.rules(self.program, op) is not None:
            return active
        pair = vjp_helper(self.program, callee, active, self.helpers, self.out_lines, self.max_iters,
                          self.call_parts.of(op))
        if set(HELPER_ZEROS.get(pair, ())) >= set(active):
            return ()  # nothing flows back (e.g. ones_like(x)): call the plain function
        return active

    def call_names(self, op: Op) -> tuple[str, str]:
        callee, _, _ = self.call_bound(op)
        return vjp_helper(self.program, callee, self.call_active(op), self.helpers, self.out_lines, self.max_iters,
                          self.call_parts.of(op))

    def call_adjoint(self, op: Op, g: str, lines: list[str], pad: str, defined: set[str]) -> None:
        active = self.call_active(op)
        if active and linear_calls.rules(self.program, op) is not None:
            return linear_calls.adjoint(self, op, g, lines, pad, defined)
        if not active:
            return
        _, bwd = self.call_names(op)
        callee, params, bound = self.call_bound(op)
        zeros = HELPER_ZEROS.get(self.call_names(op), ())
        nonzero = [p for p in active if p not in zeros]
        if not nonzero:
            lines.append(f"{pad}{bwd}({g}, {self.tape})")
            return
        tmp = self.names.fresh(f"{op.callee}_bars")
        lines.append(f"{pad}{tmp} = {bwd}({g}, {self.tape})")
        for k, p in enumerate(nonzero):
            self.argument_parts(parse_expression(bound[p]), f"{tmp}[{k}]", lines, pad, defined)

    def argument_parts(self, node: cst.BaseExpression, g: str, lines: list[str], pad: str, defined: set[str]) -> None:
        """A helper's argument gets its cotangent ``g``: a name all of it, a (nested) tuple, list or
        dict literal each element its part (``h([[x, y]])``: ``x`` gets ``g[0][0]``)."""
        if isinstance(node, cst.Name):
            if node.value in self.act.active:
                self.accumulate(node.value, g, lines, pad, defined)
        elif isinstance(node, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement)
                                                                 for e in node.elements):
            for j, e in enumerate(node.elements):
                self.argument_parts(e.value, f"{g}[{j}]", lines, pad, defined)
        elif isinstance(node, cst.Dict) and all(isinstance(e, cst.DictElement) for e in node.elements):
            for de in node.elements:
                self.argument_parts(de.value, f"{g}[{code(de.key)}]", lines, pad, defined)  # type: ignore[attr-defined]
        elif any(v in self.act.active for v in names_in(node)):  # never drop a cotangent silently
            raise DifferentiationError(f"cannot differentiate a call with the argument `{code(node)}` yet",
                                       hint="assign the argument to a variable and pass that")

    # -- assembling ---------------------------------------------------------------------------
    def sweeps(self, seed: str | None) -> tuple[list[str], list[str], str, set[str]]:
        """(primal lines, adjoint lines, output atom, defined cotangents after)."""
        # pass 1 finds which saved names the adjoint reads and which calls get no cotangent; pass 2 saves only
        # those, and calls those plainly (unless pass 1 changed nothing it reads: the same lines again)
        taken, before = set(self.names.taken), None
        for _ in range(2):
            if before == (self.restore, self._state()):
                break
            before = (set(self.restore), self._state())
            self.bar = {}
            self.names.taken = set(taken)
            self.pushed = {}
            primal: list[str] = []
            self.final_bound: set[str] = set(self.params)
            self.declared: set[str] = set()
            self.partial: set[str] = set()
            # a static if outside loops: the names bound before it, and at the end of each branch
            self.static_ifs: dict[int, tuple[set[str], set[str], set[str]]] = {}
            self.maybe_unbound: set[str] = set()  # names whose zeros an adjoint reads where they may be unbound
            self.seeded, self.maybe_none = ({seed} if seed is not None else set()), set()
            self.primal(self.body, 1, primal, self.final_bound)
            primal[:0] = [f"    {n} = UNSET" for n in sorted(self.declared - set(self.params))]
            out = code(self.ret.value) if self.ret.value is not None else "None"
            adj: list[str] = []
            defined: set[str] = set()
            if seed is not None:
                self.seed(out, seed, adj, defined)
            self.adjoint(self.body, 1, adj, defined)
            # finish_bars reads a parameter that got no cotangent (zeros_like(p)): its value on entry
            needed = lines_read_of(adj, self.partial | self.saved) | {p for p in self.active_params if p not in defined}
            unset = sorted(((self.partial & needed) | self.maybe_unbound | self.branch_partials) - self.final_bound
                           - self.declared)
            primal[:0] = [f"    {n} = UNSET" for n in unset]
            self.final_bound.update(unset)
            self.restore = {n for n in self.saved if n in needed}
        return primal, adj, out, defined

    def _state(self) -> dict[str, tuple[int, int]]:
        """What a pass of :meth:`sweeps` may change for the next: each attribute's object and size (less those
        every pass sets afresh, and ``restore``, which it computes)."""
        fresh = ("bar", "pushed", "final_bound", "declared", "partial", "static_ifs", "maybe_unbound", "restore",
                 "seeded", "maybe_none")  # (those two new objects each pass made the second pass run every time)
        return {k: (id(v), len(v) if isinstance(v, (dict, set, list)) else -1) for k, v in vars(self).items()
                if k not in fresh}

    def seed(self, out: str, g: str, adj: list[str], defined: set[str]) -> None:
        node = parse_expression(out)
        if isinstance(node, cst.Name):
            if out in self.act.active and not zero_cotangents.is_zero(self.nonzero, ()):
                self.accumulate(out, self.seed_expr or g, adj, "    ", defined)
        else:  # (each returned name its part of g: none for a zero part of a helper's output)
            zero_cotangents.seed_parts(self, node, g, adj, defined, self.nonzero)

    def finish_bars(self, adj: list[str], defined: set[str], skip_zeros: bool = False) -> list[str]:
        """Cotangent names of the active params (zeros where nothing flowed back). With ``skip_zeros`` (helpers),
        params without any cotangent are left out and recorded in ``self.zero_params`` so callers skip them."""
        outs = []
        self.zero_params = [p for p in self.active_params if p not in defined]
        for p in self.active_params:
            if p not in defined:
                if skip_zeros:
                    continue
                adj.append(f"    {self.bname(p)} = zeros_like({p})")
            outs.append(self.bname(p))
        return outs


HELPER_ZEROS: dict[tuple[str, str], tuple[str, ...]] = {}


def vjp_helper(program: Program, nf: NormalizedFunction, active: tuple[str, ...], helpers: zero_cotangents.Halves,
               out_lines: list[str], max_iters: int | None = None,
               parts: zero_cotangents.Parts | None = None) -> tuple[str, str]:
    """The forward and backward halves of ``nf`` w.r.t. ``active``, for a call whose result's cotangent may be
    nonzero only in ``parts`` (None: all of it; zero_cotangents.py), written once per key."""
    nonzero = zero_cotangents.resolve(nf, parts)
    key: tuple[Any, ...] = (nf.name, active) if nonzero is None else (nf.name, active, nonzero)
    names = helpers.get(key)
    if names is not None:
        return names
    taken = {n for pair in helpers.values() for n in pair} | set(program.functions)
    nm = Names(taken)
    fwd, bwd = nm.fresh(f"{nf.name}_fwd"), nm.fresh(f"{nf.name}_bwd")
    helpers[key] = (fwd, bwd)
    try:
        v = VJP(program, nf, active, helpers, out_lines, max_iters, nonzero)
        v.constants = constant_names(v.body, v.act, v.params, v.unique_keys)
        out_bar = v.names.fresh("out_bar")
        primal, adj, out, defined = v.sweeps(out_bar)
    except TranspileError as e:  # (in a helper: the calls that lead there, so it is shown at the user's)
        raise program.locate(e, nf.fn) from None
    bars = v.finish_bars(adj, defined, skip_zeros=True)
    HELPER_ZEROS[(fwd, bwd)] = tuple(v.zero_params)
    # values the adjoint reads that the caller does not have: saved at the end of the forward half
    adj_reads = lines_free_of_loop_targets(adj)
    assigned = {n for s, _ in _walk(v.body) if isinstance(s, cst.Assign)
                for t in s.targets for n in target_names(t.target)}
    assigned |= {n for s, _ in _walk(v.body) if isinstance(s, cst.For) for n in target_names(s.target)}
    assigned |= set(v.loop_iters.values()) | set(v.counters.values())
    # and the names the primal half binds for the adjoint: a value saved inside an `if` on data (`g_before`)
    assigned |= {sv for sv in v.pushed.values() if not sv.endswith(".pop()")}
    # the forward half saves everything the backward half reads, parameters included: the
    # caller restores its own variables only after the backward half has popped these
    residuals = sorted(n for n in adj_reads if (n in assigned or n in v.params) and n not in v.bar.values()
                       and n != out_bar and n != v.tape)
    tape = v.tape
    res = ", ".join(residuals)
    unbound = [n for n in residuals if n not in v.final_bound]
    fwd_lines = [f"def {fwd}({signature(nf, [tape])}):"]
    fwd_lines += [f"    {n} = UNSET" for n in unbound]  # bound on some paths only (read under the same test)
    fwd_lines += primal
    if residuals:
        fwd_lines.append(f"    {tape}.append(({res},))")
    fwd_lines.append(f"    return {out}")
    bwd_lines = [f"def {bwd}({out_bar}, {tape}):"]
    if residuals:
        # a saved iterable without derivatives, and a constant (saved_constants.py), come back through
        # index_key: forward mode gives them no tangent
        targets, consts = restored(residuals, v.static_iters | v.constants, v.names.fresh)
        popped = ", ".join(targets)
        bwd_lines.append(f"    {popped}, = {tape}.pop()" if len(residuals) == 1 else f"    {popped} = {tape}.pop()")
        bwd_lines += [f"    {c}" for c in consts]
    bwd_lines += adj
    bwd_lines.append(f"    return ({', '.join(bars)},)" if bars else "    return ()")
    out_lines += ["\n".join(fwd_lines) + "\n", "\n".join(bwd_lines) + "\n"]
    return fwd, bwd
