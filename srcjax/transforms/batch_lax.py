"""vmap of ``srcjax.lax`` control flow: a batched predicate selects, a batched loop condition freezes.

- ``cond``/``switch`` on a batched predicate or index run every branch and select per example
  (``batch_select``/``batch_choose``); on an unbatched one they stay one ``lax`` call;
- ``while_loop`` with a batched condition runs while any example runs; each step computes the
  body for every example and keeps the old carry of examples already done (JAX's batched
  while);
- ``fori_loop`` and ``scan`` carry batched values (the carry is batched from the start when the
  body makes it batched; ``scan`` maps over axis 1 of batched ``xs``).
"""

from __future__ import annotations

import keyword
import re
import weakref
from typing import TYPE_CHECKING, Any

import libcst as cst

from ..frontend.binding_times import STATIC, BindingTimes
from ..frontend.names import Names, assigned_names, code, names_in, renamed, syntax_children, target_names
from . import batch_errors, loop_counter
from .anf import classify
from .batch_containers import note_tree
from .batch_dict_keys import shown_dict
from .batch_moves import moved_only
from .batch_state import State, Tree, all_batched, any_batched, item, join, pack, parts_of

if TYPE_CHECKING:
    from .batch import FunctionWriter


def lax_call(w: FunctionWriter, value: cst.Call, ind: int, line: cst.CSTNode,
             target: cst.BaseExpression) -> tuple[str, State]:
    """``srcjax.lax.cond/switch/while_loop/fori_loop/scan`` with batched operands (see transforms/batch.py)."""
    f = code(value.func).rsplit(".", 1)[1]
    args = [a.with_changes(value=_shape_bound(w, a.value, ind, line)) for a in value.args if a.keyword is None]
    kw = {a.keyword.value: _shape_bound(w, a.value, ind, line) for a in value.args if a.keyword is not None}

    def fn(node: cst.BaseExpression) -> cst.FunctionDef:
        if type(node) is cst.Name and node.value in w.defs:
            return w.defs[node.value]
        if type(node) is cst.Name and node.value in w.program.functions:
            return calling(w, node.value)
        if type(node) is cst.Attribute and f in ("cond", "switch"):  # `lax.switch(i, [np.sin, np.cos], x)`
            return applying(w, node, len(args) - (3 if f == "cond" else 2))
        raise w.error(f"vmap: srcjax.lax.{f} needs a function defined in this function", line)

    if f == "cond":
        pred, tf, ff = args[0].value, args[1].value, args[2].value
        ops = [a.value for a in args[3:]]
        op_states = [w.value_state(o) for o in ops]
        opcode = [code(o) for o in ops]
        if not any_batched(w.value_state(pred)):  # one branch runs: a Python if (on data: functionalized again)
            out = code(target) if isinstance(target, (cst.Name, cst.Tuple)) else w.names.fresh("cond_out")
            # each branch written once, its lines kept aside until the join of both results is known (a
            # branch's state found by writing it beforehand made nested conds exponential in their depth)
            (e_t, st_t, lines_t), (e_f, st_f, lines_f) = (inline_aside(w, fn(b), opcode, op_states, ind + 1)
                                                            for b in (tf, ff))
            ret = join(st_t, st_f)
            w.emit(f"if {code(pred)}:", ind)
            w.lines += lines_t
            w.emit(f"{out} = {w.convert(e_t, st_t, ret)}", ind + 1)
            w.emit("else:", ind)
            w.lines += lines_f
            w.emit(f"{out} = {w.convert(e_f, st_f, ret)}", ind + 1)
            return out, ret
        # a batched predicate: both branches run, written out in line, and each example selects
        # (each batched operand a branch reads marked with the examples that take it: reverse mode sends
        # the others' cotangents, NaN where the branch is singular for them, nowhere: branch_guard.py)
        fdefs = [fn(tf), fn(ff)]
        reps = repeats(w, [(fd, opcode, op_states) for fd in fdefs], ind)  # (each broadcast once, both read it)
        # (a value one branch moves out unmarked is selected per example, unless the other leaves it UNSET)
        moves = not any(_passes_unset(w, fd, ops, line) for fd in fdefs)
        outs = [inline(w, fdefs[0], opcode, op_states, ind, (code(pred), True), reps, moves),
                inline(w, fdefs[1], opcode, op_states, ind, (code(pred), False), reps, moves)]
        full = all_batched(join(outs[0][1], outs[1][1]))
        names = [e.value.value for e in target.elements if type(e.value) is cst.Name] \
            if type(target) is cst.Tuple else []
        kept = _kept(w, fdefs, ops, outs, line, full, len(names))
        same = {k: j for k, j in _passes_same(fdefs, ops, full, len(names)).items() if k not in kept}
        if kept or same:  # (a value only one branch sets, UNSET in the other: that branch's, batched as it is
            assert isinstance(full, Tree)  # there; an operand both pass through unchanged: itself)
            full = Tree("tuple", tuple((k, _state_of(outs[kept[k]][1], k) if k in kept else op_states[same[k]]
                                        if k in same else v) for k, v in full.items))
        a, b = (w.convert(e, st, full) for e, st in outs)
        if not isinstance(full, Tree):
            return select(code(pred), a, b, full, may_be_tree(w, a, b)), full
        if full.kind == "tuple" and len(names) == len(full.items) == len(set(names)) and \
                _in_order(names, [code(pred)], [(opcode[same[k]],) * 2 if k in same else (item(a, k), item(b, k))
                                                for k, _ in full.items]):
            for n, (k, v) in zip(names, full.items):  # one line per name (was one tuple of selects)
                if k in kept or k in same:
                    w.emit(f"{n} = {opcode[same[k]] if k in same else item((a, b)[kept[k]], k)}", ind)
                    continue
                selected = select_each(w, code(pred), item(a, k), item(b, k), v, ind, set(), n)
                w.emit(f"{n} = {selected}", ind)
                note_tree(w, n, selected)
            return code(target), full
        assert not kept and not same
        base = target.value if type(target) is cst.Name else "selected"
        return select_each(w, code(pred), a, b, full, ind, set(), base), full
    if f == "switch":
        index, branches = args[0].value, args[1].value
        ops = [a.value for a in args[2:]]
        if type(branches) is cst.Name and w.fn_items.get(branches.value):  # a name bound to the list before
            branches = cst.List([cst.Element(cst.parse_expression(n)) for n in w.fn_items[branches.value] or ()])
        if not isinstance(branches, (cst.List, cst.Tuple)):
            raise w.error("vmap: srcjax.lax.switch needs a list of functions", line)
        op_states = [w.value_state(o) for o in ops]
        fdefs = [fn(e.value) for e in branches.elements]
        if not any_batched(w.value_state(index)):
            # each branch written once; again, brought to the join of their results, only where those differ
            # (their states found by writing them beforehand made nested switches exponential in their depth)
            start, taken = len(w.lines), set(w.names.taken)
            defs = [w.nested(fd, op_states, ind) for fd in fdefs]
            ret = False
            for _, b_st in defs:
                ret = join(ret, b_st)
            if any(b_st != ret for _, b_st in defs):
                del w.lines[start:]
                w.names.taken = taken
                defs = [w.nested(fd, op_states, ind, want_return=ret) for fd in fdefs]
            opargs = ", ".join(code(o) for o in ops)
            return (f"srcjax.lax.switch({code(index)}, [{', '.join(n for n, _ in defs)}]"
                    f"{', ' + opargs if opargs else ''})"), ret
        written = [inline(w, fd, [code(o) for o in ops], op_states, ind) for fd in fdefs]
        ret = False
        for _, b_st in written:
            ret = join(ret, b_st)
        full = all_batched(ret)
        return choose(code(index), [w.convert(e, b_st, full) for e, b_st in written], full), full
    if f == "while_loop":
        cf, bf, init = fn(args[0].value), fn(args[1].value), args[2].value
        at = w.at  # (the loop's statement: its body's lines are marked with theirs, the loop's line with it)
        carry = w.value_state(init)
        for _ in range(8):
            new = join(carry, w.nested_state(bf, [carry]))
            if new == carry:
                break
            carry = new
        batched_test = any_batched(w.nested_state(cf, [carry]))
        if batched_test:  # every example's carry batched: finished examples keep theirs (leaf by leaf, an
            # unbatched tuple written here too)
            carry = all_batched(join(carry, w.value_state(init, structured=True)))
        c = w.names.fresh("carry")
        running = w.names.fresh("running")
        # (items: a container carried, unmapped before the loop and mapped by it, is broadcast leaf by leaf;
        # batch_broadcast left it as it was, its leaves then read as mapped: a silent wrong answer)
        w.emit(f"{c} = {w.convert(code(init), w.value_state(init), carry, items=True)}", ind)
        w.bind(c, carry)
        if batched_test:  # JAX's batched while: the test per example is computed again at the top of the
            # body, not carried (one fused pass per step: test, step and select; the loop's test reduces it)
            ctr = counter(w, cf, bf, init)
            test, step, c_in = w.names.fresh("any_running"), w.names.fresh("step"), w.names.fresh("carry")
            trips = w.names.fresh("trips") if ctr is not None else ""
            param, t_in = (w.names.fresh("loop"), w.names.fresh("trips")) if ctr is not None else (c_in, "")
            if ctr is not None:  # a counted loop keeps its bound: one unbatched trip counter (loop_counter.py)
                w.emit(f"{trips} = {ctr[0]}", ind)
                w.bind(trips, False)

            def head() -> None:
                if ctr is not None:
                    w.emit(f"{c_in}, {t_in} = {param}", ind + 1)
                    w.bind(c_in, carry)
                    w.bind(t_in, False)
            reps = repeats(w, [(bf, [c_in], [carry])], ind)  # (broadcast once, not at each step)
            w.lines.append("")
            w.emit(f"def {test}({param}):", ind)
            head()
            e, _ = inline(w, cf, [c_in], [carry], ind + 1)
            if ctr is not None:
                below = w.names.fresh("below")
                w.emit(f"{below} = {t_in} {ctr[1]} {ctr[2]}", ind + 1)
                w.emit(f"return np.logical_and({below}, np.any({e}))", ind + 1)
            else:
                w.emit(f"return np.any({e})", ind + 1)
            w.lines.append("")
            w.emit(f"def {step}({param}):", ind)
            head()
            e, _ = inline(w, cf, [c_in], [carry], ind + 1)
            w.emit(f"{running} = {e}", ind + 1)
            known = set(w.st)
            # (the carry and what the body reads marked with the examples still running: an extra step of a
            # finished example sends no cotangent, NaN where the body is singular for it, back: branch_guard.py)
            stepped, st = inline(w, bf, [c_in], [carry], ind + 1, (running, True), reps)
            out = select_each(w, running, w.convert(stepped, st, carry), c_in, carry, ind + 1, set(w.st) - known)
            if ctr is not None:
                t_next = w.names.fresh("trips")
                w.emit(f"{t_next} = {t_in} + {ctr[3]}", ind + 1)
                out = f"({out}, {t_next})"
            w.emit(f"return {out}", ind + 1)
            w.lines.append("")
            # the loop's result bound to the user's names where they are a tuple of names (the line then
            # maps to the user's loop: an error about it, reverse mode's bound, names the user's line)
            out = c
            if type(target) is cst.Tuple and all(type(e.value) is cst.Name and e.value.value not in w.forced
                                                     for e in target.elements) and \
                    isinstance(carry, Tree) and len(carry.items) == len(target.elements):
                out = code(target)
            elif type(target) is cst.Name and target.value not in w.forced:
                out = target.value
            res = f"({out}), {trips}" if ctr is not None else out
            w.at = at  # (reverse mode's "needs a bound" is located at this line: the user's `while`)
            w.emit(f"{res} = srcjax.lax.while_loop({test}, {step}, {f'({c}, {trips})' if ctr is not None else c})",
                   ind)
            if out == c:
                w.bind(c, carry)
            for n in target_names(target) if out != c else []:  # (rebound here: no fact of the old value stays)
                w.packed.pop(n, None)
                w.zeros.discard(n)
            return out, carry
        e, _ = inline(w, cf, [c], [carry], ind)
        w.emit(f"{running} = {e}", ind)
        w.emit(f"while {running}:", ind)
        stepped, st = inline(w, bf, [c], [carry], ind + 1)
        w.emit(f"{c} = {w.convert(stepped, st, carry)}", ind + 1)
        e, _ = inline(w, cf, [c], [carry], ind + 1)
        w.emit(f"{running} = {e}", ind + 1)
        w.bind(c, carry)
        return c, carry
    if f == "fori_loop":
        lo, hi, bfn, init = args[0].value, args[1].value, fn(args[2].value), args[3].value
        if any(any_batched(w.state(n)) for n in names_in(lo) + names_in(hi)) and \
                not (w.only_shapes(lo) and w.only_shapes(hi)):  # (`range(x.ndim)`: per example, the same)
            return _fori_as_while(w, lo, hi, bfn, init, ind, line)
        lo, hi = (cst.parse_expression(w.static_expr(e, line)) for e in (lo, hi))
        carry = w.value_state(init)
        for _ in range(8):
            new = join(carry, w.nested_state(bfn, [False, carry]))
            if new == carry:
                break
            carry = new
        c = w.names.fresh("carry")
        i = w.names.fresh("i")
        w.emit(f"{c} = {w.convert(code(init), w.value_state(init), carry, items=True)}", ind)
        w.bind(c, carry)
        w.emit(f"for {i} in range({code(lo)}, {code(hi)}):", ind)
        stepped, st = inline(w, bfn, [i, c], [False, carry], ind + 1)
        w.emit(f"{c} = {w.convert(stepped, st, carry, items=True)}", ind + 1)
        w.bind(c, carry)
        return c, carry
    if f == "scan":
        sf = fn(args[0].value)
        init = args[1].value if len(args) > 1 else kw["init"]
        xs = args[2].value if len(args) > 2 else kw.get("xs")
        xs_state = w.value_state(xs) if xs is not None else False
        xb = any_batched(xs_state)
        carry = w.value_state(init)
        for _ in range(8):
            res_st = w.nested_state(sf, [carry, xb])
            if isinstance(res_st, Tree) and len(res_st.items) == 2:
                new = join(carry, res_st.items[0][1])
            else:
                new = join(carry, any_batched(res_st))
            if new == carry:
                break
            carry = new
        res_st = w.nested_state(sf, [carry, xb])
        ys = res_st.items[1][1] if isinstance(res_st, Tree) and len(res_st.items) == 2 else any_batched(res_st)
        # (rows with a batched leaf: every leaf batched, each row's batch axis then axis 1 of its stack; `(c, v)`
        # with `c` unbatched was stacked as it was, and moving axis 1 of its stack failed)
        ys = all_batched(ys) if any_batched(ys) else ys
        want = Tree("tuple", (("0", carry), ("1", ys)))
        bname, _ = w.nested(sf, [carry, xb], ind, want_return=want)
        init_code = w.convert(code(init), w.value_state(init), carry, items=True)  # (a dict: item by item)
        # (xs mixing mapped and unmapped leaves: the unmapped ones repeated along the batch axis first, as the
        # body reads every leaf of xs batched, and each leaf's steps are its axis 1 then)
        xs_code = f"batch_moveaxis({w.convert(code(xs), xs_state, True)}, 0, 1)" if xb and xs is not None else \
            (code(xs) if xs is not None else "None")
        extra = "".join(f", {k}={code(v)}" for k, v in kw.items() if k not in ("init", "xs"))
        res = w.names.fresh("scan_out")
        w.emit(f"{res} = srcjax.lax.scan({bname}, {init_code}, {xs_code}{extra})", ind)
        ys_code = f"batch_moveaxis({res}[1], 1, 0)" if any_batched(ys) else f"{res}[1]"
        return f"({res}[0], {ys_code})", Tree("tuple", (("0", carry), ("1", any_batched(ys))))
    raise w.error(f"vmap: cannot batch srcjax.lax.{f}", line)  # pragma: no cover




def _shape_bound(w: FunctionWriter, node: cst.BaseExpression, ind: int, line: cst.CSTNode) -> cst.BaseExpression:
    """An operand reading mapped values only through shape queries (``cond(p, f, g, x, x.size)``) bound to a
    name first, as the per-example query (unbatched); any other operand as it is."""
    if type(node) is cst.Name or not any(any_batched(w.state(n)) for n in names_in(node)) or \
            not w.only_shapes(node):
        return node
    name = w.names.fresh("shape")
    w.emit(f"{name} = {w.static_expr(node, line)}", ind)
    w.bind(name, False)
    return cst.Name(name)


def _fori_as_while(w: FunctionWriter, lo: cst.BaseExpression, hi: cst.BaseExpression, bfn: cst.FunctionDef,
                   init: cst.BaseExpression, ind: int, line: cst.CSTNode) -> tuple[str, State]:
    """``fori_loop(lo, hi, body, init)`` with a mapped bound, as JAX batches it: a ``while_loop`` over
    ``(i, carry)`` testing ``i < hi`` (each example runs its own count, finished ones kept); the body's
    statements are the step's, after its parameters are bound to the pair's items."""
    body = _checked_body(w, bfn)
    pi, pc = (p.name.value for p in bfn.params.params)
    test, step, c, i, go, i_next, out = (w.names.fresh(n) for n in (
        "fori_test", "fori_step", "c", "i", "go", "i_next", "fori_out"))
    w.defs[test] = cst.ensure_type(cst.parse_statement(
        f"def {test}({c}):\n    {i} = {c}[0]\n    {go} = {i} < {code(hi)}\n    return {go}\n"), cst.FunctionDef)
    ret = cst.ensure_type(cst.ensure_type(body[-1], cst.SimpleStatementLine).body[0], cst.Return).value
    assert ret is not None  # (_checked_body: one return of a value, at the end)
    head = [cst.parse_statement(t) for t in (f"{i} = {c}[0]", f"{pi} = {i}", f"{pc} = {c}[1]")]
    tail = [cst.parse_statement(t) for t in (f"{i_next} = {i} + 1", f"return ({i_next}, ({code(ret)}))")]
    w.defs[step] = bfn.with_changes(name=cst.Name(step), params=cst.Parameters(params=[cst.Param(cst.Name(c))]),
                                    body=cst.IndentedBlock(body=[*head, *body[:-1], *tail]))  # type: ignore[list-item]
    call = cst.parse_expression(f"srcjax.lax.while_loop({test}, {step}, ({code(lo)}, {code(init)}))")
    res, st = lax_call(w, cst.ensure_type(call, cst.Call), ind, line, cst.Name(out))
    w.bind(res, st)
    return f"{res}[1]", st.items[1][1] if isinstance(st, Tree) else st


def counter(w: FunctionWriter, cf: cst.FunctionDef, bf: cst.FunctionDef,
            init: cst.BaseExpression) -> tuple[str, str, str, int] | None:
    """(the start, ``<`` or ``<=``, the bound, the step) of the counter a ``while_loop`` tests against a
    bound (transforms/loop_counter.py), when the start and the bound are not batched; else None."""
    ctr = loop_counter.counter(cf, bf, init)
    if ctr is None:
        return None
    start = init.elements[ctr.index].value if type(init) is cst.Tuple and ctr.index is not None else init
    if any_batched(w.value_state(start)) or any_batched(w.value_state(cst.parse_expression(ctr.bound))):
        return None
    return code(start), "<=" if ctr.inclusive else "<", ctr.bound, ctr.step


def _kept(w: FunctionWriter, fdefs: list[cst.FunctionDef], ops: list[cst.BaseExpression],
          outs: list[tuple[str, State]], line: cst.CSTNode, full: State, n_names: int) -> dict[str, int]:
    """The items of a ``cond`` on batched data (a tuple bound to as many names) that are not selected per
    example, each with the branch (0, 1) whose value they take for every example: the other branch passes
    through an operand that is ``UNSET`` there (a name the function binds only to ``UNSET`` and by this
    ``cond``, not in a loop), or gives ``UNSET`` itself: a value, such as a helper's static ``axis`` or a
    value saved for the adjoint, that only one path computes and reads. Selecting it per example would
    batch a static value (reverse mode's ``expand_reduced(g, x, axis)``), or broadcast ``UNSET``."""
    if not isinstance(full, Tree) or full.kind != "tuple" or len(full.items) != n_names:
        return {}
    unset = [_passes_unset(w, fd, ops, line) for fd in fdefs]
    kept: dict[str, int] = {}
    for i, (k, _) in enumerate(full.items):
        if i in unset[0] or i in unset[1]:
            # (batched in the other branch: that branch's value too, for every example; the examples
            # that take the branch leaving it UNSET never read it, as the program it was written from)
            kept[k] = 1 if i in unset[0] else 0
    return kept


def _passes_same(fdefs: list[cst.FunctionDef], ops: list[cst.BaseExpression], full: State,
                 n_names: int) -> dict[str, int]:
    """The items of a ``cond`` on batched data (a tuple bound to as many names) that both branches return as
    the same operand, unchanged (through copies: ``y_before = y`` in one branch, ``y`` in the other), each with
    that operand's position: the operand itself, neither broadcast nor selected per example."""
    if not isinstance(full, Tree) or full.kind != "tuple" or len(full.items) != n_names:
        return {}
    found: list[list[int | None]] = []
    for fd in fdefs:
        last = fd.body.body[-1]
        if not (type(last) is cst.SimpleStatementLine and type(last.body[0]) is cst.Return and
                type(last.body[0].value) is cst.Tuple and len(last.body[0].value.elements) == n_names):
            return {}
        params = [p.name.value for p in fd.params.params]
        copied = _copies(list(fd.body.body[:-1]), params)
        srcs = [copied.get(e.value.value) if type(e.value) is cst.Name else None
                for e in last.body[0].value.elements]
        found.append([params.index(p) if p and params.index(p) < len(ops) else None for p in srcs])
    return {k: j for (k, _), j, j2 in zip(full.items, found[0], found[1]) if j is not None and j == j2}


def _state_of(st: State, k: str) -> State:
    """The state of item ``k`` of a branch's result whose state is ``st``."""
    return dict(st.items).get(k, True) if isinstance(st, Tree) else st


def _passes_unset(w: FunctionWriter, fdef: cst.FunctionDef, ops: list[cst.BaseExpression],
                  line: cst.CSTNode) -> set[int]:
    """The positions of ``fdef``'s returned tuple that pass through, unchanged, an operand that is ``UNSET``
    when the ``cond`` statement ``line`` runs, or hold ``UNSET`` itself."""
    last = fdef.body.body[-1]
    if not (type(last) is cst.SimpleStatementLine and type(last.body[0]) is cst.Return and
            type(last.body[0].value) is cst.Tuple):
        return set()
    params = [p.name.value for p in fdef.params.params]
    copied = _copies(list(fdef.body.body[:-1]), params)
    out: set[int] = set()
    for i, e in enumerate(last.body[0].value.elements):
        v = e.value
        src = copied.get(v.value) if type(v) is cst.Name else None
        if src == "":  # (UNSET itself: a value derivative code leaves unset on this path)
            out.add(i)
        elif src is not None:
            op = ops[params.index(src)] if params.index(src) < len(ops) else None
            if type(op) is cst.Name and _unset_at(w.nf.fdef, op.value, line):
                out.add(i)
    return out


def _copies(stmts: list[cst.CSTNode], params: list[str]) -> dict[str, str | None]:
    """The parameter each name holds unchanged after ``stmts`` ("": ``UNSET`` itself, None: another value),
    following copies (``axis_1 = axis``) and tuples of copies (``a, b = (a_1, b_1)``: a branch derivative
    code wrote)."""
    held: dict[str, str | None] = {"UNSET": "", **{p: p for p in params}}
    for st in stmts:
        if type(st) is not cst.SimpleStatementLine:
            for n in assigned_names([st]):
                held[n] = None
            continue
        for sm in st.body:
            pairs: list[tuple[cst.CSTNode, cst.CSTNode]] = []
            if type(sm) is cst.Assign and len(sm.targets) == 1:
                lhs, rhs = sm.targets[0].target, sm.value
                if type(lhs) is cst.Tuple and type(rhs) is cst.Tuple and len(lhs.elements) == len(rhs.elements):
                    pairs = [(a.value, b.value) for a, b in zip(lhs.elements, rhs.elements)]
                else:
                    pairs = [(lhs, rhs)]
            now = dict(held)
            for t, v in pairs:
                if type(t) is cst.Name:
                    now[t.value] = held.get(v.value) if type(v) is cst.Name else None
            for n in assigned_names([cst.SimpleStatementLine([sm])]):
                if not any(type(t) is cst.Name and t.value == n for t, _ in pairs):
                    now[n] = None
            held = now
    return held


def _unset_at(fdef: cst.FunctionDef, name: str, line: cst.CSTNode) -> bool:
    """Whether ``name`` is ``UNSET`` when the statement ``line`` runs (once, not in a loop): ``fdef`` binds it
    to ``UNSET`` at least once before ``line`` and to nothing else before it (a parameter, or a name only
    ``line`` binds, holds a value there); what binds it after ``line`` does not matter (a container a second
    ``if`` on batched data binds again: seed 59 of tests/test_vmap_container_flow_random.py)."""
    if name in {p.name.value for p in (*fdef.params.params, *fdef.params.kwonly_params)}:
        return False
    found = []
    unset = []

    def walk_body(stmts: list[cst.CSTNode], in_loop: bool) -> bool:
        for st in stmts:  # (after `line`, found once not in a loop, no binding reaches it: only `line` is looked for)
            if st is line or (type(st) is cst.SimpleStatementLine and code(st) == code(line)):
                found.append(in_loop)
                continue
            if type(st) is cst.FunctionDef:
                continue  # (a nested function's names are its own)
            if type(st) is cst.SimpleStatementLine:
                for sm in st.body:
                    if found or name not in assigned_names([cst.SimpleStatementLine([sm])]):
                        continue
                    if not (type(sm) is cst.Assign and len(sm.targets) == 1 and
                            type(sm.targets[0].target) is cst.Name and type(sm.value) is cst.Name and
                            sm.value.value == "UNSET"):
                        return False
                    unset.append(True)
                continue
            loop = isinstance(st, (cst.For, cst.While))
            if type(st) is cst.For and name in target_names(st.target) and not found:
                return False
            for part in syntax_children(st):
                if type(part) is cst.IndentedBlock and not walk_body(list(part.body), in_loop or loop):
                    return False
                if isinstance(part, (cst.Else, cst.If)):
                    inner: list[cst.CSTNode] = [part] if type(part) is cst.If else list(part.body.body)
                    if not walk_body(inner, in_loop or loop):
                        return False
        return True

    return walk_body(list(fdef.body.body), False) and found == [False] and bool(unset)


def select(c: str, a: str, b: str, st: State, items: bool = False) -> str:
    """Per example ``a`` where ``c`` holds, else ``b``: leaf by leaf for a known structure (``items``: a
    leaf that may be a container of unknown structure, selected leaf by leaf when run)."""
    if isinstance(st, Tree):
        return pack(st.kind, [(k, select(c, item(a, k), item(b, k), v)) for k, v in st.items], a)
    return f"batch_select{'_items' if items else ''}({c}, {a}, {b})"


def may_be_tree(w: FunctionWriter, a: str, b: str) -> bool:
    """Whether ``a`` or ``b`` may be a container the state does not describe: the cotangent of a
    container (zeros of it, or what is added into those), which the batched derivative selects whole."""
    def container(node: cst.BaseExpression) -> bool:  # (a literal, a name whose state shows a structure or that
        while type(node) is cst.Call and code(node.func) == "taken" and node.args:  # was bound to a container: a
            node = node.args[0].value  # loop's carried dict made batched whole, read by a branch)
        x = code(node)
        if type(node) is cst.Call and code(node.func) == "batch_getitem" and len(node.args) == 2 and \
                type(node.args[1].value) is cst.SimpleString:  # (a dict's item of a container: may be one itself)
            return container(node.args[0].value)
        if type(node) is cst.Name and (m := _COTANGENT.fullmatch(x)) is not None and container(cst.Name(m[1])):
            return True  # (the cotangent of a container: one too, `d_bar` of `d`)
        return x.startswith(("batch_broadcast_items(", "from_leaves(")) or x in w.zeros or parts_of(x) is not None or \
            isinstance(w.st.get(x), Tree) or x in w.trees and x not in w.arrays or \
            type(node) is cst.Name and x not in w.arrays and shown_dict(w, x)  # (`s = dict(state)` carried by a
    # loop, `if t[i] > 0: s["e"] = ...`: selected whole with batch_select, "cannot use a value of type dict")
    return any(container(cst.parse_expression(x)) for x in (a, b))


_COTANGENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*?)_bar(?:_[0-9]+)*")


def select_each(w: FunctionWriter, c: str, a: str, b: str, st: State, ind: int, local: set[str],
                base: str | None = None) -> str:
    """:func:`select` with each leaf's ``batch_select`` on its own line (a batched ``while``'s step:
    each carried value kept where its example stopped; a batched ``cond``'s container result): bound
    again to the leaf's own name where that is a name bound here (``local``) that no other leaf reads,
    else to a fresh name (after ``base``, or the leaf's name); the container of those names is returned
    (a leaf, not a container: the one ``batch_select``, in line)."""
    if not isinstance(st, Tree):
        return select(c, a, b, st, may_be_tree(w, a, b))
    leaves: list[tuple[str, str]] = []

    def collect(a: str, b: str, st: State) -> None:
        if isinstance(st, Tree):
            for k, v in st.items:
                collect(item(a, k), item(b, k), v)
        else:
            leaves.append((a, b))

    collect(a, b, st)
    reads = [n for x, y in leaves for n in names_in(cst.parse_expression(x)) + names_in(cst.parse_expression(y))]
    chosen: dict[tuple[str, str], str] = {}
    for x, y in leaves:
        own = x.isidentifier() and x in local and reads.count(x) == 1 and x not in names_in(cst.parse_expression(c))
        name = x if own else w.names.fresh(base or (x if x.isidentifier() else "carried"))
        selected = select(c, x, y, True, may_be_tree(w, x, y))
        w.emit(f"{name} = {selected}", ind)
        note_tree(w, name, selected)
        chosen[(x, y)] = name

    def build(a: str, b: str, st: State) -> str:
        if isinstance(st, Tree):
            return pack(st.kind, [(k, build(item(a, k), item(b, k), v)) for k, v in st.items], a)
        return chosen[(a, b)]

    return build(a, b, st)


def _in_order(names: list[str], first: list[str], pairs: list[tuple[str, str]]) -> bool:
    """Whether ``names[k] = <from pairs[k]>`` one by one reads no name bound before (``first`` read by all)."""
    bound: set[str] = set()
    for n, texts in zip(names, pairs):
        if any(set(names_in(cst.parse_expression(t))) & bound for t in (*first, *texts)):
            return False
        bound.add(n)
    return True


def choose(index: str, outs: list[str], st: State) -> str:
    """Per example ``outs[index]``: leaf by leaf for a known structure."""
    if isinstance(st, Tree):
        return pack(st.kind, [(k, choose(index, [item(o, k) for o in outs], v)) for k, v in st.items], outs[0])
    return f"batch_choose({index}, [{', '.join(outs)}])"


def inline(w: FunctionWriter, fdef: cst.FunctionDef, args: list[str], states: list[State],
           ind: int, taken: tuple[str, bool] | None = None,
           reps: dict[str, str] | None = None, moves: bool = True) -> tuple[str, State]:
    """The batched body of the nested function ``fdef`` called with ``args``, written in line (its
    names renamed fresh); the expression of its result and that result's state. ``taken``: the
    batched test and the branch (True: where it holds) of a branch on batched data; each batched
    argument is bound to ``taken(arg, test)`` (srcjax/branch_guard.py), each unmapped one it reads as
    an array operand (:func:`shared_reads`) to ``taken(<it broadcast>, test)``: ``reps[name]`` where
    :func:`repeats` broadcast it already. A name the body only moves into its result is not marked
    (:mod:`.batch_moves`; ``moves``: False where the result may be used unselected)."""
    body = _checked_body(w, fdef)
    params = [p.name.value for p in fdef.params.params]
    outer, unmapped_params = _unmapped_reads(w, fdef, args, states) if taken is not None else (set(), set())
    moved = moved_only(fdef) if taken is not None and moves else frozenset()
    assigned = assigned_names(body[:-1])
    # (a parameter only moved, never bound again, reads its argument's name: no copy `result_7 = result`)
    aliases = {p: a for p, a in zip(params, args) if p in moved and p not in unmapped_params and
               p not in assigned and a.isidentifier() and not keyword.iskeyword(a)}
    mapping = {n: cst.Name(aliases[n] if n in aliases else w.names.fresh(n)) for n in [*params, *assigned]}
    origins = _ORIGINS.setdefault(w.names, {})
    for n in _computed(body[:-1]) & set(mapping):  # (what binding times know a computed value's fresh name
        origins[mapping[n].value] = origins.get(n, n)  # by: _dynamic)
    reps = reps or {}
    if taken is not None:  # the batched names of the enclosing function it reads: marked too
        for n in dict.fromkeys(names_in(fdef.body)):
            if n not in mapping and n not in moved and (_guardable(w.st.get(n, False)) or n in outer):
                target = mapping.setdefault(n, cst.Name(w.names.fresh(n))).value
                st_n = w.st.get(n, False)
                value = guarded(reps[n], True, taken) if n in reps else guarded(n, st_n, taken, w.size)
                w.emit(f"{target} = {value}", ind)
                w.bind(target, True if st_n is False else st_n)
                w.guards[target] = w.guards.get(n, n)
                note_tree(w, target, n)
    for p, a, st in zip(params, args, states):
        if p in aliases:
            continue
        target = mapping[p].value
        if p in unmapped_params:  # (an unmapped operand: marked per example too)
            st, a = True, reps.get(a) or f"batch_broadcast({a}, {w.size})"
        w.emit(f"{target} = {guarded(a, st, taken) if taken is not None and p not in moved else a}", ind)
        w.bind(target, st)
        note_tree(w, target, a)
    shown = batch_errors.USER_NAMES.setdefault(w.names, {})
    for n, fresh in mapping.items():  # (a refusal in the body names the user's names, not the fresh ones)
        if n not in aliases:
            shown.setdefault(fresh.value, shown.get(n, n))
    w.block([_renamed_located(w, st, mapping) for st in body[:-1]], ind)
    last = body[-1]
    assert type(last) is cst.SimpleStatementLine and type(last.body[0]) is cst.Return and \
        last.body[0].value is not None
    ret = renamed(last.body[0].value, mapping)
    return code(ret), w.value_state(ret)


def _renamed_located(w: FunctionWriter, st: cst.CSTNode, mapping: dict[str, cst.Name]) -> cst.CSTNode:
    """``st`` with its names renamed, each rebuilt node at the user's position of the node it stands for (a
    refusal in a branch on batched data points at the statement, not at the function)."""
    spans = w.nf.spans
    found: dict[int, Any] = {}  # id(rebuilt node) -> the span of the node it stands for (the last one's, for a
    new = renamed(st, mapping, (spans, found))  # name of ``mapping`` that stands for several)
    for k, span in found.items():  # (not the span a statement before gave it)
        spans.setdefault(k, span)
    return new


def _computed(body: list[cst.CSTNode]) -> set[str]:
    """The names ``body`` binds (somewhere) to a computation: an operator's or a call's result, not a copy
    of a parameter or a loop index (``k = i``)."""
    out: set[str] = set()
    for node in _statements(cst.IndentedBlock(body=body)):  # type: ignore[arg-type]
        if type(node) is cst.Assign and isinstance(node.value, cst.Call | cst.BinaryOperation |
                                                       cst.UnaryOperation):
            out.update(n for t in node.targets for n in target_names(t.target))
    return out


def _checked_body(w: FunctionWriter, fdef: cst.FunctionDef) -> list[cst.CSTNode]:
    """The statements of ``fdef``, which ends with its one ``return``."""
    body = list(fdef.body.body)
    last = body[-1] if body else None
    if not (type(last) is cst.SimpleStatementLine and len(last.body) == 1 and
            type(last.body[0]) is cst.Return and last.body[0].value is not None) or \
            any(_returns(st) for st in body[:-1]):
        raise w.error(f"vmap: {fdef.name.value} needs one return at its end to run on batched data")
    return body


def _unmapped_reads(w: FunctionWriter, fdef: cst.FunctionDef, args: list[str],
                    states: list[State]) -> tuple[set[str], set[str]]:
    """(the unbatched names of the enclosing function, the parameters of ``fdef`` given an unbatched
    name) that a branch on batched data reads only as array operands and that hold data
    (:func:`shared_reads`): each is broadcast along the batch and marked."""
    shared = shared_reads(w, fdef)
    local = {p.name.value for p in fdef.params.params} | set(assigned_names(list(fdef.body.body)[:-1]))
    # (a dict is not an array operand: `s = dict(state)` returned by the branch that leaves it, `if x > 0:
    # s["e"] = ...`; it was broadcast whole, `batch_broadcast(s)`, "cannot use a value of type dict")
    outer = {n for n in names_in(fdef.body)
             if n not in local and n in shared and w.st.get(n) is False and _dynamic(w, n) and not _dict(w, n)}
    params = {p.name.value for p, a, st in zip(fdef.params.params, args, states)
              if p.name.value in shared and st is False and a.isidentifier() and _dynamic(w, a) and not _dict(w, a)}
    return outer, params


def _dict(w: FunctionWriter, name: str) -> bool:
    """Whether ``name`` holds a container: a dict the function shows, or a name a join selected item by item."""
    return name in w.trees or shown_dict(w, name)


def repeats(w: FunctionWriter, calls: list[tuple[cst.FunctionDef, list[str], list[State]]],
            ind: int) -> dict[str, str]:
    """Each unbatched name that the branches (or the loop step) ``calls`` of a test on batched data will
    broadcast along the batch (:func:`_unmapped_reads`) broadcast here, once: name -> its broadcast."""
    names: list[str] = []
    for fdef, args, states in calls:
        _checked_body(w, fdef)
        outer, params = _unmapped_reads(w, fdef, args, states)
        names += [n for n in names_in(fdef.body) if n in outer]
        names += [a for p, a in zip(fdef.params.params, args) if p.name.value in params]
    out = {}
    for n in dict.fromkeys(names):
        out[n] = w.names.fresh(n)
        w.emit(f"{out[n]} = batch_broadcast({n}, {w.size})", ind)
        w.bind(out[n], True)
    return out


def guarded(a: str, st: State, taken: tuple[str, bool], size: str | None = None) -> str:
    """``a`` (in state ``st``) with each batched leaf marked ``taken(leaf, test)`` (``test``'s examples
    take the branch that reads it; ``taken(leaf, test, False)``: those where it fails); with ``size``,
    an unbatched ``a`` broadcast first (:func:`shared_reads`)."""
    if isinstance(st, Tree) and _guardable(st):
        return pack(st.kind, [(k, guarded(item(a, k), v, taken)) for k, v in st.items], a)
    if st is False and size is not None:
        a, st = f"batch_broadcast({a}, {size})", True
    if st is not True:
        return a
    test, keep = taken
    return f"taken({a}, {test})" if keep else f"taken({a}, {test}, False)"


def shared_reads(w: FunctionWriter, fdef: cst.FunctionDef, _within: frozenset[str] = frozenset()) -> set[str]:
    """The names (of the enclosing function, or ``fdef``'s parameters) that a branch on batched data reads
    only as array operands of primitives: each unbatched one that holds data is broadcast and marked
    like a batched one (``taken(batch_broadcast(w, batch_size), test)``). Reverse mode then masks its
    cotangent per example before the broadcast's transpose sums it: a shared weight's gradient summed
    inside the consuming op had the untaken examples' NaN (``0 * inf``) in it (issue #15). A name read
    any other way (a shape, an index, a loop bound, a helper's argument it reads so) is left alone. Plain vmap pays
    nothing: elementwise ops fuse the broadcast, and a product reads the unrepeated matrix
    (``FuncBuilder.repeated``)."""
    uses: dict[str, int] = {}
    for n in names_in(fdef.body):
        uses[n] = uses.get(n, 0) + 1
    ok: dict[str, int] = {}
    for node in _statements(fdef.body):
        value = node.value if isinstance(node, (cst.Assign, cst.Return)) else None
        if type(value) is cst.Name:  # (a copy, a returned name)
            ok[value.value] = ok.get(value.value, 0) + 1
            continue
        stack: list[cst.CSTNode] = [value] if value is not None else []
        while stack:  # (a returned expression may be nested: `return np.sqrt(a * b)`)
            e = stack.pop()
            stack += [c for c in syntax_children(e) if isinstance(c, cst.BaseExpression | cst.Arg)]
            if not isinstance(e, cst.Call | cst.BinaryOperation | cst.UnaryOperation):
                continue
            op = classify(e, w.program, w.nf)
            if op.kind == "prim" and op.prim is not None and op.prim.tree is None:
                for p, n in op.operands.items():
                    if p in op.prim.arrays:
                        ok[n] = ok.get(n, 0) + 1
            elif op.kind == "call" and op.callee in w.program.functions and op.callee not in _within:
                # a helper's argument it reads only as array operands (a helper's copy for batched
                # arguments takes it batched: its cotangent masked per example there too)
                hdef = w.program.functions[op.callee].fdef
                inner = shared_reads(w, hdef, _within | {op.callee})
                names = [p.name.value for p in hdef.params.params]
                for p, n in [*zip(names, op.call_args), *op.call_kwargs.items()]:
                    if p in inner and n.isidentifier():
                        ok[n] = ok.get(n, 0) + 1
    return {n for n, k in ok.items() if uses.get(n) == k}


def _statements(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The small statements in ``node`` (nested blocks and functions too)."""
    out: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = [node]
    while stack:
        n = stack.pop()
        if type(n) is cst.SimpleStatementLine:
            out += n.body
        else:
            stack += syntax_children(n)
    return out


# the names :func:`inline` gives a nested function's names (in the writers sharing one ``Names``) -> those
_ORIGINS: weakref.WeakKeyDictionary[Names, dict[str, str]] = weakref.WeakKeyDictionary()


def _dynamic(w: FunctionWriter, name: str) -> bool:
    """Whether ``name`` may hold array data (not a constant, a shape, a Python int: binding times; a name
    :func:`inline` made, a loop's or a branch's, by the name it stands for: a value computed in a loop
    from unmapped values only, read by a branch on batched data, is marked too)."""
    if name in w.static_names or name in w.packed or name in w.zeros:
        return False
    if w.bta is None:
        w.bta = BindingTimes(w.nf, w.nf.fdef, helpers=w.program.functions)
    origin = _ORIGINS.get(w.names, {}).get(name)
    if origin is not None and origin not in w.bta.locals:
        return True  # (a value a nested function computes: data, not a shape, a Python int)
    name = origin or name
    return name in w.bta.locals and w.bta.kind(name) != STATIC  # (a name of the batcher's: a loop counter)


def _guardable(st: State) -> bool:
    """Whether a value in state ``st`` is batched data (an array, a container of arrays; not a tape)."""
    def plain(v: State) -> bool:
        return isinstance(v, bool) or isinstance(v, Tree) and all(plain(x) for _, x in v.items)
    return plain(st) and any_batched(st)


def inline_aside(w: FunctionWriter, fdef: cst.FunctionDef, args: list[str], states: list[State],
                 ind: int) -> tuple[str, State, list[str]]:
    """:func:`inline`, its lines taken out of ``w.lines`` (the caller puts them where they go)."""
    start = len(w.lines)
    e, st = inline(w, fdef, args, states, ind)
    lines = w.lines[start:]
    del w.lines[start:]
    return e, st, lines


def _returns(node: cst.CSTNode) -> bool:
    """Whether the statement ``node`` holds a ``return`` of its function (not of a function nested in it): its
    statements are walked, no expression (a ``return`` is a small statement; no expression holds one)."""
    t = type(node)
    if t is cst.SimpleStatementLine or t is cst.SimpleStatementSuite:  # (exact types: libcst's classes are final)
        return any(type(s) is cst.Return for s in node.body)  # type: ignore[attr-defined]
    if t is cst.FunctionDef:
        return False
    return any(_returns(c) for c in syntax_children(node) if isinstance(c, _HOLDERS))


_HOLDERS = (cst.BaseStatement, cst.BaseSuite, cst.Else, cst.ExceptHandler, cst.ExceptStarHandler,
            cst.Finally, cst.MatchCase)  # (what holds statements; a line and its small statements: above)


def calling(w: FunctionWriter, callee: str) -> cst.FunctionDef:
    """A local function that calls the program function ``callee`` (a module-level function passed to
    a ``lax`` call, ``lax.cond(p, helper_a, helper_b, x)``): batched like a nested function, its call
    becomes a call of ``callee``'s batched copy."""
    params = [p.name.value for p in w.program.functions[callee].fdef.params.params]
    return _local_def(w, f"{callee}_call", f"{callee}_out", callee, params)


def applying(w: FunctionWriter, func: cst.Attribute, count: int) -> cst.FunctionDef:
    """A local function applying the NumPy function ``func`` to ``count`` operands (a branch of ``lax.cond`` /
    ``lax.switch`` given as ``np.sin``): batched like a nested function."""
    params = [w.names.fresh("operand") for _ in range(count)]
    return _local_def(w, f"{func.attr.value}_branch", f"{func.attr.value}_out", code(func), params)


def _local_def(w: FunctionWriter, name: str, out: str, func: str, params: list[str]) -> cst.FunctionDef:
    """``def name(params): out = func(params); return out`` (``name`` and ``out`` made fresh), a local function
    of ``w``."""
    name, out = w.names.fresh(name), w.names.fresh(out)
    text = f"def {name}({', '.join(params)}):\n    {out} = {func}({', '.join(params)})\n    return {out}\n"
    fdef = cst.parse_module(text).body[0]
    assert type(fdef) is cst.FunctionDef
    w.defs[name] = fdef
    return fdef
