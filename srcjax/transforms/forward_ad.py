"""Forward mode: :class:`JVP` writes ``def <name>(params..., <active>_dot...) -> (out, out_dot)``.

Forward mode (:func:`~.derivative_source.jvp_source`) interleaves a tangent statement after every
active statement: ``t_dot = <template>``. The template reads the statement's
operands as they were when it ran, and its result (``out``); between the two lines
only the statement's targets change. So a statement that rebinds a name it reads
(``y = e * y``, ``x = np.tanh(x)``, ``a, b = b, a``) first binds its result to a
fresh name: ``mul = e * y``, ``mul_dot = ...``, then ``y = mul``, ``y_dot = mul_dot``
(:meth:`JVP.rebinding`). Copies read only tangents, and helper and custom_jvp
calls bind the value and its tangent in one statement, so they need none.
Helpers get their own ``<helper>_jvp`` (:func:`jvp_helper`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst

from ..adjoint import is_saved_list_name
from ..core import UnsupportedSyntaxError
from ..frontend import provenance
from ..frontend.cst_expressions import parse_expression
from ..frontend.names import Names, RenameNames, assigned_names, code, names_in, target_names
from ..frontend.names import walk as walk_nodes
from ..frontend.normalize import BINOP_HINT, UNARY_HINT, NormalizedFunction, call_hint
from ..frontend.program import Program
from . import custom_rules, view_lists
from .activity import Activity, argument_reads, hoisted_body, unique_keys, upward_exposed
from .anf import (
    DifferentiationError,
    LoopSource,
    Op,
    active_loop,
    all_params,
    call_arguments,
    derivative_names,
    differentiable_params,
    inline_loop_iterables,
    literal_container,
    signature,
    tuple_target_code,
)
from .inline_lax import inline_lax
from .saved_constants import constant_names
from .templates import instantiate, paren

# -- forward mode ------------------------------------------------------------------------------

# Ops whose tangent line reads no primal that the statement itself rebinds: a copy reads the
# source's tangent; a helper or custom_jvp call computes the value and its tangent in one call
# (``h_out, h_out_dot = h_jvp(...)``) before the target is bound.
_OWN_TEMPORARIES = ("copy", "call", "custom")


def _temporary_hint(value: cst.BaseExpression) -> str:
    """A name for the value of ``value`` as A-normal form names it (``mul``, ``tanh``, ``getitem``)."""
    if isinstance(value, cst.BinaryOperation):
        return BINOP_HINT[type(value.operator).__name__]
    if isinstance(value, cst.UnaryOperation):
        return UNARY_HINT.get(type(value.operator).__name__, "value")
    if isinstance(value, cst.Call):
        return call_hint(value.func)
    if isinstance(value, cst.Subscript):
        return "getitem"
    if isinstance(value, (cst.Tuple, cst.List)):
        return "items"
    return "value"


class JVP:
    """Writes ``def <name>(params..., <active>_dot...) -> (out, out_dot)``."""

    def __init__(self, program: Program, nf: NormalizedFunction, active_params: Sequence[str],
                 name: str, helpers: dict[tuple[str, tuple[str, ...]], str], out_lines: list[str],
                 tangent_only: bool = False) -> None:
        self.program = program
        self.tangent_only = tangent_only  # (the entry returns its output's tangent alone: `return out_dot`)
        self.nf = nf
        self.name = name
        self.body = inline_lax(nf, list(nf.plain_fdef.body.body))  # user srcjax.lax calls -> if/for/while
        self.body = inline_loop_iterables(view_lists.as_appends(self.body))  # (reverse mode's `list(zip(...))`)
        self.names = derivative_names(program, nf, self.body)  # (after the passes: none of their names reused)
        self.act = Activity(program, nf, active_params, self.body)
        self.body, self.act = hoisted_body(program, nf, active_params, self.body, self.act, self.names)
        self.params = all_params(nf)
        self.unique_keys = unique_keys(self.body, self.params)  # (a container's keys: its item cleared to zeros)
        # integers, booleans and values computed from no parameter: no tangent (a symbolic zero), even as an
        # item of a container or a helper's result (`y ** n` gets no `n_dot * log(y)` term)
        self.act.active = self.act.active - constant_names(self.body, self.act, self.params, self.unique_keys)
        self.dot: dict[str, str] = {}
        self.helpers = helpers
        self.out_lines = out_lines
        self.active_params = list(active_params)
        self.synthesized: list[cst.Assign] = []

    def dname(self, v: str) -> str:
        d = self.dot.get(v)
        if d is None:
            d = self.dot[v] = self.names.fresh(f"{v}_dot")
        return d

    def build(self) -> str:
        lines: list[str] = []
        defined = set(self.active_params)
        for p in self.active_params:
            self.dname(p)
        self.block(self.body, lines, 1, defined, top=True)
        sig = signature(self.nf, [self.dot[p] for p in self.active_params])
        return f"def {self.name}({sig}):\n" + "\n".join(lines) + "\n"

    def tangent_of(self, atom: str, defined: set[str]) -> str | None:
        if atom in self.act.active and atom in defined:
            return self.dot[atom]
        return None

    def block(self, stmts: Sequence[Any], lines: list[str], ind: int, defined: set[str], top: bool = False,
              bound: set[str] | None = None) -> None:
        """``defined``: names whose tangent exists here; ``bound``: names definitely bound here."""
        if bound is None:
            bound = self.bound = set(self.params)
        pad = "    " * ind
        for s in stmts:
            if isinstance(s, cst.SimpleStatementLine):
                start = len(lines)
                for small in s.body:
                    self.small(small, lines, ind, defined)
                    if isinstance(small, cst.Assign):
                        bound.update(n for t in small.targets for n in target_names(t.target))
                provenance.mark_lines(lines, start, self.nf.spans.get(id(s)))  # (errors in them: located at s)
            elif isinstance(s, cst.FunctionDef):
                continue  # (a nested def no statement reads: lifted, `srcjax.hessian(f)(w)` of a def in the body is
                # a call of a module-level copy now; one that is read is refused by Activity.check)
            elif isinstance(s, cst.If):
                lines.append(f"{pad}if {code(s.test)}:")
                d1, k1 = set(defined), set(bound)
                b1: list[str] = []
                self.block(s.body.body, b1, ind + 1, d1, bound=k1)
                d2, k2 = set(defined), set(bound)
                b2: list[str] = []
                other_stmts: Sequence[Any] = ()
                if s.orelse is not None:
                    other = [s.orelse] if isinstance(s.orelse, cst.If) else s.orelse.body.body
                    other_stmts = other
                    self.block(other, b2, ind + 1, d2, bound=k2)
                # a tangent defined on one path only: zeros on the other paths where the primal is bound
                union = d1 | d2
                for bl, d, _k in ((b1, d1, k1), (b2, d2, k2)):
                    for v in sorted((union - d) & (k1 & k2)):
                        bl.append(f"{pad}    {self.dname(v)} = zeros_like({v})")
                        d.add(v)
                # a tangent defined on one path only, whose primal the other path never binds: a later read
                # of the primal (a second `if` on the same static test: grad's adjoint) is on that path
                only1 = {v for v in d1 - d2 if v not in k2} - set(assigned_names(other_stmts))
                only2 = {v for v in d2 - d1 if v not in k1} - set(assigned_names(s.body.body))
                defined.clear()
                defined |= (d1 & d2) | only1 | only2
                bound |= k1 & k2
                lines += b1 or [f"{pad}    pass"]
                if b2:
                    lines.append(f"{pad}else:")
                    lines += b2
            elif isinstance(s, (cst.For, cst.While)):
                header = f"for {code(s.target)} in {code(s.iter)}:" if isinstance(s, cst.For) \
                    else f"while {code(s.test)}:"
                taken = set(self.names.taken)
                late: set[str] = set()  # carried around the loop, first bound in it (see below)
                while True:
                    body_lines: list[str] = []
                    inner, kin = set(defined) | late, set(bound)
                    if isinstance(s, cst.For):
                        kin.update(target_names(s.target))
                        srcs = active_loop(s, self.act.active)
                        if srcs:  # the items' tangents come from the sequences' tangents, in step
                            header = self.loop_header(s, srcs, defined)
                            inner.update(n for src in srcs for n in target_names(src.target))
                    self.block(s.body.body, body_lines, ind + 1, inner, bound=kin)
                    # tangents carried around the loop must exist before it; if the body reads one before
                    # assigning it (x in `t.append(x); x = f(x)`), it is written again knowing that
                    carried = [v for v in sorted(inner - defined) if v in bound]
                    for v in carried:
                        lines.append(f"{pad}{self.dname(v)} = zeros_like({v})")
                        defined.add(v)
                    # a name first bound in the loop (`if i == 0: acc = np.zeros(n)`) and read at the next step
                    # before it is bound again carries its tangent too: written wherever the name is bound in
                    # the body (zeros where its value is a constant), never a symbolic zero that forgets the
                    # tangent the previous step left
                    exposed = set(upward_exposed(s.body.body))
                    more = {v for v in inner - defined - late if v not in bound and v in exposed}
                    if more:
                        late |= more
                    elif not carried or not set(carried) & exposed:
                        break
                    self.names.taken = set(taken) | set(self.dot.values())
                lines.append(pad + header)
                lines += body_lines or [f"{pad}    pass"]
                defined |= inner
            else:
                raise UnsupportedSyntaxError(f"cannot differentiate {type(s).__name__}")

    def small(self, s: Any, lines: list[str], ind: int, defined: set[str]) -> None:
        self._small(s, lines, ind, defined)
        if isinstance(s, cst.Assign) and len(s.targets) == 1 and isinstance(s.targets[0].target, cst.Name):
            name = s.targets[0].target.value
            if is_saved_list_name(name) and name in self.act.active and name not in defined:
                # `_tape_bar = zeros_like(_tape)` (reverse over reverse; batched: `batch_broadcast_items(...)`):
                # a list whose appends and pops move a tangent list in step; its items are zeros, so are theirs
                lines.append(f"{'    ' * ind}{self.dname(name)} = zeros_like({name})")
                defined.add(name)

    def _small(self, s: Any, lines: list[str], ind: int, defined: set[str]) -> None:
        pad = "    " * ind
        t: str | None
        if isinstance(s, cst.Return):
            val = code(s.value) if s.value is not None else "None"
            t = self.tangent_expr(s.value, defined)
            lines.append(f"{pad}return {t}" if self.tangent_only else f"{pad}return {val}, {t}")
            return
        if isinstance(s, cst.Expr):
            lines.append(pad + code(s))
            call = s.value
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "append":
                lst = code(call.func.value)
                if lst in self.act.active:
                    # (zeros for a value without a tangent, never None: the pop that takes it back may bind
                    # a name that is differentiated there, `w = _tape.pop()` of a rebound `w`)
                    t = self.tangent_expr(call.args[0].value, defined)
                    lines.append(f"{pad}{self.dname(lst)}.append({t})")
            elif isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and \
                    call.func.attr.value == "pop" and not call.args:
                # `_tape_dot.pop()`, its item unused: its tangent list keeps in step with it
                lst = code(call.func.value)
                if lst in self.act.active:
                    lines.append(f"{pad}{self.dname(lst)}.pop()")
            return
        if not isinstance(s, cst.Assign):
            lines.append(pad + code(s))
            return
        lines.append(pad + code(s))
        targets = [n for t in s.targets for n in target_names(t.target)]
        if not any(t in self.act.active for t in targets):
            op = self.act.op(s.value)
            if op.kind == "call" and self._moves_a_tape(op, defined):
                lines.pop()  # (a helper pushing to or popping from a tape with a tangent list: its JVP moves
                self.call(s, op, lines, ind, defined)  # both in step, though its result has no derivative)
                return
            if op.kind == "tape_pop" and op.callee in self.act.active and op.callee in defined:
                # the tangent list moves in step with its list (every append pushed a tangent, zeros for
                # values without one), so a pop whose values carry no derivative pops it too
                lines.append(f"{pad}{self.dname(op.callee)}.pop()")
            return
        target = s.targets[0].target
        op = self.act.op(s.value)
        if op.kind not in _OWN_TEMPORARIES and set(targets) & set(names_in(s.value)):
            lines.pop()
            self.rebinding(s, lines, ind, defined)
            return
        if op.kind == "prim" and not isinstance(target, cst.Name) and op.prim is not None and \
                op.prim.result_kind(op.args) == "array":
            # `lo, hi = np.quantile(x, qs)`: rows of one array, which a rule may read (`out`), not `lo, hi` (a
            # multi-result primitive's rule reads its tuple target: `u, s, vh = np.linalg.svd(a)`)
            lines.pop()
            self.rebinding(s, lines, ind, defined)
            return
        tname = code(target)
        if op.kind == "prim":
            t = self.prim_tangent(op, tname, defined)
        elif op.kind == "copy":
            t = self.tangent_of(op.operands["x"], defined)
        elif op.kind in ("pack", "dict"):
            t = self.tangent_expr(s.value, defined)
        elif op.kind == "record":  # State(a, b): the tangent is a State of the fields' tangents
            parts = [self.tangent_of(e, defined) if e.isidentifier() else None for e in op.elements]
            fields = [p if p is not None else f"zeros_like({e})" for p, e in zip(parts, op.elements)]
            t = f"{op.args['cls']}({', '.join(fields)})"
        elif op.kind in ("getattr", "tree_add", "pack_like"):
            t = self.container_tangent(op, defined)
        elif op.kind == "leaves":  # tree_leaves(p): the tangent's parts at p's leaves (linear in p)
            t = self.tangent_of(op.operands["x"], defined)
            form, like = op.args["form"], op.args.get("like", op.operands["x"])
            t = None if t is None else f"from_leaves({like}, {t})" if form == "from_leaves" else \
                f"leaves_like({t}, {like})"
        elif op.kind == "convert":
            t = self.tangent_of(op.operands["x"], defined)
            t = f"{op.args['kind']}({t})" if t is not None else None
        elif op.kind == "tape_pop":
            assert op.callee is not None
            t = f"{self.dname(op.callee)}.pop()" if op.callee in defined else None
        elif op.kind == "call":
            lines.pop()
            self.call(s, op, lines, ind, defined)
            return
        elif op.kind == "custom":
            lines.pop()
            custom_rules.jvp_call(self, s, op, lines, ind, defined)
            return
        else:
            t = None
        if isinstance(target, cst.Name):
            if t is None and tname not in defined:
                return  # a symbolic zero: no tangent statement; a read of it gets zeros where needed
            if t is None:
                t = f"zeros_like({tname})" if op.kind != "pack" else None
            if t is not None:
                if op.kind == "prim" and s.value is not None and code(s.value) == "[]":
                    t = "[]"
                lines.append(f"{pad}{self.dname(tname)} = {t}")
                defined.add(tname)
        else:  # tuple unpacking: unpack the tangent the same way
            names = target_names(target)
            dots = ", ".join(self.dname(n) for n in names)
            src = t if t is not None else f"zeros_like({code(s.value)})"
            if op.kind == "copy" and t is None:
                src = "(" + ", ".join(f"zeros_like({n})" for n in names) + ",)"
            if any(isinstance(e.value, (cst.Tuple, cst.List)) for e in target.elements):  # type: ignore[attr-defined]
                dots = tuple_target_code(target, self.dname)[1:-1]  # (a, b), c = ...: the same nesting
                src = t if t is not None else tuple_target_code(target, lambda n: f"zeros_like({n})")
            lines.append(f"{pad}{dots}, = {src}" if len(names) == 1 else f"{pad}{dots} = {src}")
            defined.update(names)

    def rebinding(self, s: cst.Assign, lines: list[str], ind: int, defined: set[str]) -> None:
        """``y = e * y`` (or ``lo, hi = np.quantile(x, qs)``): the tangent's rule reads the old ``y`` (or the
        result, an array), so the result gets a fresh name first, ``mul = e * y`` and its tangent, then
        ``y = mul`` and ``y_dot = mul_dot`` (see the module docstring: no tangent reads a name its own primal
        statement rebinds)."""
        tmp = self.names.fresh(_temporary_hint(s.value))
        self.act.active.add(tmp)
        first = cst.Assign(targets=[cst.AssignTarget(cst.Name(tmp))], value=s.value)
        then = cst.Assign(targets=s.targets, value=cst.Name(tmp))
        self.synthesized += [first, then]  # alive while Activity.op remembers them by id
        self.small(first, lines, ind, defined)
        self.small(then, lines, ind, defined)

    def tangent_expr(self, node: cst.BaseExpression | None, defined: set[str]) -> str:
        if node is None or isinstance(node, cst.Name) and node.value == "None":  # (`(None, y_bar)`: a zero part's)
            return "None"
        if isinstance(node, cst.Name):
            t = self.tangent_of(node.value, defined)
            if t is not None:
                return t
            return f"zeros_like({node.value})"
        if isinstance(node, (cst.Tuple, cst.List)):
            parts = [self.tangent_expr(e.value, defined) for e in node.elements]
            inner = ", ".join(parts) + ("," if len(parts) == 1 and isinstance(node, cst.Tuple) else "")
            return f"({inner})" if isinstance(node, cst.Tuple) else f"[{inner}]"
        if isinstance(node, cst.Dict) and all(isinstance(e, cst.DictElement) for e in node.elements):
            return "{" + ", ".join(f"{code(e.key)}: {self.tangent_expr(e.value, defined)}"  # type: ignore[attr-defined]
                                   for e in node.elements) + "}"
        return f"zeros_like({code(node)})"

    def container_tangent(self, op: Op, defined: set[str]) -> str | None:
        """The tangent of ``p.w``, ``tree_add(a, b)`` or ``pack_like(x, items)``."""
        if op.kind == "getattr":
            t = self.tangent_of(op.operands["x"], defined)
            return f"{t}.{op.args['attr']}" if t is not None else None
        if op.kind == "tree_add":
            ts = [t for t in (self.tangent_of(e, defined) for e in op.elements) if t is not None]
            return None if not ts else ts[0] if len(ts) == 1 else f"tree_add({ts[0]}, {ts[1]})"
        items = self.tangent_expr(parse_expression(op.elements[0]), defined)
        return f"pack_like({op.args['x']}, {items})"

    def loop_header(self, s: cst.For, srcs: list[LoopSource], defined: set[str]) -> str:
        """``for <target>, <its tangent> in zip(<iter>, <iter over the tangents>):``."""
        mapping: dict[str, cst.BaseExpression] = {}
        for src in srcs:
            if isinstance(src.seq, cst.Name):
                t = self.tangent_expr(src.seq, defined)
                if _dict_view_of(s.iter, src.seq.value) and t.isidentifier():
                    # (a dict's tangent in the dict's key order: `zip(d.items(), d_dot.items())` paired the
                    # wrong items, silently, where the tangent dict was built in another order)
                    t = f"from_leaves({src.seq.value}, leaves_like({t}, {src.seq.value}))"
                mapping[src.seq.value] = parse_expression(t)
        it_dot = code(s.iter.visit(RenameNames(mapping)))  # type: ignore[arg-type]
        values = {n for src in srcs for n in target_names(src.target)}

        def dot_target(t: cst.BaseExpression) -> str:
            if isinstance(t, (cst.Tuple, cst.List)):
                parts = [dot_target(e.value) for e in t.elements]
                return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
            assert isinstance(t, cst.Name)
            return self.dname(t.value) if t.value in values else self.names.fresh("_")

        target = tuple_target_code(s.target, str)
        return f"for {target}, {dot_target(s.target)} in zip({code(s.iter)}, {it_dot}):"

    def joint_tangent(self, op: Op, mapping: dict[str, str], defined: set[str]) -> str | None:
        """The record's ``jvp_joint`` template when every array operand has a tangent. An operand
        written as a literal (``index_add(params_bar, i, (w_bar, b_bar))``) has the literal of its
        elements' tangents, and then an operand without one gets zeros."""
        prim = op.prim
        assert prim is not None and prim.jvp_joint is not None
        dots: dict[str, str | None] = {p: self.tangent_of(op.operands.get(p, ""), defined) for p in prim.arrays}
        literal = False
        for p in prim.arrays:
            lit = parse_expression(op.args[p]) if isinstance(op.args.get(p), str) else None
            if isinstance(lit, (cst.Tuple, cst.List)):
                dots[p] = self.tangent_expr(lit, defined)
                literal = True
        if literal:
            dots = {p: d if d is not None else f"zeros_like({op.args[p]})" for p, d in dots.items()}
        filled = {f"{p}_dot": d for p, d in dots.items() if d is not None}
        if len(filled) < len(dots):
            return None
        return instantiate(prim.jvp_joint, {**mapping, **filled})

    def prim_tangent(self, op: Op, out: str, defined: set[str]) -> str | None:
        assert op.prim is not None
        prim = op.prim
        if not prim.differentiable(op.args):
            return None
        templates = prim.jvp
        if not templates:
            raise DifferentiationError(f"no derivative rule for {prim.path} yet", hint=(
                prim.no_rule_hint or "file an issue; or wrap it in srcjax.custom_jvp (issue #5)"))
        mapping = {k: v if isinstance(v, str) else "[" + ", ".join(v) + "]" for k, v in op.args.items()}
        mapping["out"] = paren(out)  # (a tuple target of a multi-result primitive: `(w, v)`)
        if prim.jvp_joint is not None:  # linear in its operands together (index_add: z may be a container)
            joint = self.joint_tangent(op, mapping, defined)
            if joint is not None:
                return joint
        contribs = []
        for p, tmpl in templates.items():
            if p in prim.array_seqs:
                seq = op.args.get(p)
                if isinstance(seq, str) and seq.isidentifier() and self.tangent_of(seq, defined):  # np.stack(xs)
                    mapping[f"{p}_dot"] = self.tangent_of(seq, defined)  # type: ignore[assignment]
                    contribs.append(instantiate(tmpl, mapping, self.unique_keys))
                    continue
                elems = seq if isinstance(seq, list) else None
                if elems is None or not any(isinstance(e, str) and self.tangent_of(e, defined) for e in elems):
                    continue
                mapping[f"{p}_dot"] = "[" + ", ".join(self.tangent_expr(parse_expression(e), defined)
                                                      for e in elems) + "]"
                contribs.append(instantiate(tmpl, mapping, self.unique_keys))
                continue
            a = op.operands.get(p)
            lit = literal_container(op.args.get(p)) if a is None else None
            if lit is not None and any(self.tangent_of(n, defined) for n in names_in(lit)):
                # `(a, b)` as an array: its tangent is the literal of the elements' tangents
                mapping[f"{p}_dot"] = self.tangent_expr(lit, defined)
                contribs.append(instantiate(tmpl, mapping, self.unique_keys))
                continue
            if a is None:
                continue
            t = self.tangent_of(a, defined)
            if t is None:
                continue
            mapping[f"{p}_dot"] = t
            contribs.append(instantiate(tmpl, mapping, self.unique_keys))
        if not contribs:
            return None
        if len(contribs) > 1 and (prim.result_kind(op.args) == "list" or prim.tree is not None):
            # lists of tangents, and containers a primitive also takes (index_update), add item by item
            total = contribs[0]
            for c in contribs[1:]:
                total = f"tree_add({total}, {c})"
            return total
        return " + ".join(paren(c) for c in contribs) if len(contribs) > 1 else contribs[0]

    def _moves_a_tape(self, op: Op, defined: set[str]) -> bool:
        """Whether the call ``op`` passes a program helper a tape that has a tangent list here."""
        if op.callee not in self.program.functions:
            return False
        return any(is_saved_list_name(a) and a in self.act.active and a in defined
                   for a in [*op.call_args, *op.call_kwargs.values()])

    def call(self, s: cst.Assign, op: Op, lines: list[str], ind: int, defined: set[str]) -> None:
        pad = "    " * ind
        callee = self.program.functions[op.callee]  # type: ignore[index]
        params = all_params(callee)
        bound = dict(zip(params, op.call_args))
        bound.update(op.call_kwargs)
        diff = differentiable_params(callee)
        active = tuple(p for p in params if p in bound and p in diff and any(
            n in self.act.active and n in defined for n in argument_reads(bound[p])))
        target = code(s.targets[0].target)
        if not active:
            lines.append(f"{pad}{target} = {code(s.value)}")
            names = target_names(s.targets[0].target)
            for n in names:
                if n in self.act.active and n in defined:  # (a name without a tangent yet: a symbolic zero)
                    lines.append(f"{pad}{self.dname(n)} = zeros_like({n})")
            return
        tgt = s.targets[0].target
        linear = getattr(callee.fn, "__srcjax_linear_params__", ())
        if set(active) <= set(linear) and isinstance(tgt, cst.Name):
            self.linear_call(s, op, linear, params, lines, ind, defined)
            return
        hname = jvp_helper(self.program, callee, active, self.helpers, self.out_lines)
        args = call_arguments(op, [self.tangent_expr(parse_expression(bound[p]), defined) for p in active])
        out = self.names.fresh(f"{op.callee}_out")
        out_dot = self.names.fresh(f"{op.callee}_out_dot")
        lines.append(f"{pad}{out}, {out_dot} = {hname}({', '.join(args)})")
        lines.append(f"{pad}{target} = {out}")
        names = target_names(s.targets[0].target)
        tgt = s.targets[0].target
        if isinstance(tgt, cst.Name):
            lines.append(f"{pad}{self.dname(tgt.value)} = {out_dot}")
        else:  # the tangents unpack like the target (`a, = h(x)` -> `a_dot, = h_out_dot`)
            dots: Any = tgt.visit(RenameNames({n: self.dname(n) for n in names}))
            lines.append(f"{pad}{code(dots)} = {out_dot}")
        defined.update(names)

    def linear_call(self, s: cst.Assign, op: Op, linear: tuple[str, ...], params: list[str], lines: list[str],
                    ind: int, defined: set[str]) -> None:
        """``y = h(a, key, b)`` of a helper linear in ``a`` and ``b`` together (:func:`srcjax.core.linear_params`):
        ``y_dot = h(a_dot, key, b_dot)``."""
        pad = "    " * ind
        target = code(s.targets[0].target)
        lines.append(f"{pad}{target} = {code(s.value)}")
        tangents = {p: self.tangent_expr(parse_expression(op.call_args[params.index(p)]
                                                          if params.index(p) < len(op.call_args) else
                                                          op.call_kwargs[p]), defined)
                    for p in linear if params.index(p) < len(op.call_args) or p in op.call_kwargs}
        pos = [tangents.get(params[j], a) if j < len(params) else a for j, a in enumerate(op.call_args)]
        kws = [f"{q}={tangents.get(q, v)}" for q, v in op.call_kwargs.items()]
        func = code(s.value.func) if isinstance(s.value, cst.Call) else op.callee
        lines.append(f"{pad}{self.dname(target)} = {func}({', '.join(pos + kws)})")
        defined.add(target)


def jvp_helper(program: Program, nf: NormalizedFunction, active: tuple[str, ...],
               helpers: dict[tuple[str, tuple[str, ...]], str], out_lines: list[str]) -> str:
    key = (nf.name, active)
    name = helpers.get(key)
    if name is None:
        taken = set(helpers.values()) | set(program.functions)
        name = Names(taken).fresh(f"{nf.name}_jvp")
        helpers[key] = name
        out_lines.append(JVP(program, nf, active, name, helpers, out_lines).build())
    return name


def _dict_view_of(it: cst.BaseExpression, name: str) -> bool:
    """Whether ``it`` reads ``name.items()`` or ``name.values()`` (a loop over a dict's view)."""
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and isinstance(n.func.value, cst.Name)
               and n.func.value.value == name and n.func.attr.value in ("items", "values") and not n.args
               for n in walk_nodes(it))
