"""Functionalize control flow on array data: ``if``/``while``/``for`` -> ``srcjax.lax`` calls.

Input: a :class:`NormalizedFunction` (ANF). Output: the same function in which
every ``if``, ``while`` and ``for`` whose control depends on array *data* is a
call to :mod:`srcjax.lax` with generated nested functions for its branches or
body. Everything else stays Python: the lowering evaluates static control flow
(shapes, Python ints, ``is None``) while it specializes.

What is DYNAMIC comes from the binding-time analysis
(:mod:`srcjax.frontend.binding_times`); which names a branch or a loop body must
return, from :mod:`srcjax.frontend.liveness`.

**Rewrites** (only what is DYNAMIC):

- ``if`` -> ``srcjax.lax.cond(pred, if_true, if_false, *operands)``. Outputs:
  names a branch assigns that are live after it. Operands: names a branch
  assigns (in Python, a nested function that assigns a name makes it local)
  that exist before the ``if`` and that a branch may read first or returns
  unchanged. Everything else is read by closure. ``elif`` chains nest. An
  early ``return`` under such an ``if`` is first moved to the end of the
  function (:func:`srcjax.frontend.restructure.single_exit`). An ``if`` one
  branch of which defines a name read later stays Python, and so do later
  ``if``s on the same predicate (derivative code re-tests it to read what
  that branch saved): the lowering tracks on which paths a name is defined.
- ``while`` -> ``srcjax.lax.while_loop(loop_cond, loop_body, carry)``; the carry
  is the names the body assigns that are live at the loop head. In tests on
  data, ``and``/``or``/``not`` become ``np.logical_*``, or a ``cond`` when the
  right side indexes or calls a helper (``i < n and y[i] > 0`` stays lazy).
- ``for i in range(...)`` / ``for row in X`` (``X`` DYNAMIC) ->
  ``srcjax.lax.fori_loop(lo, hi, loop_body, carry)``, kept as Python when the
  body appends to a list, returns, or defines a name used after the loop.
- ``break``/``continue`` under a DYNAMIC test become flags (``stop`` carried,
  ``skip`` per iteration) guarding the rest of the body
  (:mod:`srcjax.frontend.exits`); a ``for`` with such a ``break`` becomes a
  ``while_loop`` that carries its counter.

Original statement nodes are kept inside the generated bodies (spans are keyed
by ``id(node)``); every new statement gets the span of the construct it came from.
"""

from __future__ import annotations

import builtins
import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import libcst as cst

from ..adjoint import is_tape_name
from ..core import Span, UnsupportedSyntaxError
from ..primitives import registry
from . import closure_reads, data_bound_index, length_tests, loop_returns
from .binding_times import DYNAMIC, SHAPE_ATTRS, STATIC, STATIC_FUNCTIONS, UNKNOWN, BindingTimes
from .branch_checks import decided_here
from .dict_names import keyed_loop
from .exits import exit_flags, own_exits
from .liveness import Liveness, LoopExits
from .names import boolean_valued, children, code, names_in, target_names
from .names import walk as walk_nodes
from .normalize import BINOP_HINT, COMPARE_HINT, UNARY_HINT, NormalizedFunction, call_hint
from .read import is_generated
from .resolve import RESERVED
from .restructure import has_return, single_exit, walk
from .syntax import (
    LOOPS,
    assign_stmt,
    assigned_in,
    attr_chain,
    dotted_call,
    int_expr,
    int_literal,
    is_literal,
    is_pass,
    is_true,
    names_expr,
    orelse_stmts,
    params_of,
    stmt_line,
)

__all__ = ["Functionalizer", "functionalize"]


# ======================================================================================
# The rewrite
# ======================================================================================

_BLOCKS = frozenset({cst.If, cst.While, cst.For})  # statements with blocks that may branch or loop on data

@dataclass
class _Ctx:
    live: set[str]  # names live after the block
    defined: set[str]  # names bound before the block (parameters, earlier assignments)
    loop: LoopExits | None  # innermost Python loop: (live at its head, live after it)


class Functionalizer:
    """Rewrites the control flow of one function (see the module docstring); :mod:`srcjax.transforms.bounded`
    uses its builders (fresh names, spans, generated statements) and the flag rewrite with it."""

    def __init__(self, nf: NormalizedFunction, bta: BindingTimes, taken: Iterable[str]) -> None:
        self.nf = nf
        self.bta = bta
        self.spans: dict[int, Span] = dict(nf.spans)
        self.keep: list[cst.CSTNode] = []  # every node made here stays alive: ids are span keys
        self.used = set(names_in(nf.fdef)) | set(bta.locals) | set(taken) | {"np", "math", "srcjax"}
        self.counts: dict[str, int] = {}
        self.invented: set[str] = set()
        self.changed = False
        self.logical_tests: set[str] = set()
        self.retested: set[str] = set()  # predicates of `if`s left to the lowering (see if_stmt)
        self.decided: set[int] = set()  # `if`s in generated branches on tests decided there (branch_checks.py)
        self.live = Liveness(nf.fdef.body.body)

    # -- names, spans ------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        base = re.sub(r"\W", "_", hint) or "t"
        if base[0].isdigit():
            base = "t" + base
        name = base
        k = self.counts.get(base, 0)
        while name in self.used or name in RESERVED or hasattr(builtins, name):
            k += 1
            name = f"{base}_{k}"
        self.counts[base] = k
        self.used.add(name)
        self.invented.add(name)
        return name

    def span(self, node: cst.CSTNode | None) -> Span | None:
        return self.spans.get(id(node)) if node is not None else None

    def mark(self, node: Any, span: Span | None) -> Any:
        self.keep.append(node)
        if span is not None:
            self.spans[id(node)] = span
        return node

    def error(self, message: str, node: cst.CSTNode | None, hint: str) -> UnsupportedSyntaxError:
        return UnsupportedSyntaxError(message, span=self.span(node), hint=hint)

    # -- blocks ------------------------------------------------------------------------------
    def block(self, stmts: Sequence[Any], ctx: _Ctx) -> list[Any]:
        """Rewrite ``stmts``; the result reuses every statement that needs no change."""
        after = self.live.live_after(stmts, set(ctx.live) | self.live.pinned, ctx.loop)
        out: list[Any] = []
        defined = set(ctx.defined)
        for i, s in enumerate(stmts):
            out.extend(self.stmt(s, defined, after[i], ctx))
            defined |= set(assigned_in([s]))
        return out

    def stmt(self, s: Any, defined: set[str], after: set[str], ctx: _Ctx) -> list[Any]:
        if isinstance(s, cst.SimpleStatementLine):
            return self.simple(s)
        if isinstance(s, cst.If):
            return self.if_stmt(s, defined, after, ctx)
        if isinstance(s, cst.While):
            return self.while_stmt(s, defined, after, ctx)
        if isinstance(s, cst.For):
            return self.for_stmt(s, defined, after, ctx)
        return [s]

    def simple(self, s: cst.SimpleStatementLine) -> list[Any]:
        """``t = a and b`` where ``t`` is the test of an ``if`` on data -> ``np.logical_and``."""
        if len(s.body) != 1 or not isinstance(s.body[0], cst.Assign):
            return [s]
        a = s.body[0]
        if len(a.targets) != 1 or not isinstance(a.targets[0].target, cst.Name) or \
                a.targets[0].target.value not in self.logical_tests or not self.is_logical(a.value):
            return [s]
        self.changed = True
        lines: list[Any] = []
        flat, _ = self.flat(a.value, lines, self.span(s))
        lines.append(self.mark(s.with_changes(body=[a.with_changes(value=flat)]), self.span(s)))
        return lines

    @staticmethod
    def is_logical(e: cst.BaseExpression) -> bool:
        return isinstance(e, cst.BooleanOperation) or (
            isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Not)) or (
            isinstance(e, cst.Comparison) and len(e.comparisons) > 1)

    def same(self, old: Sequence[Any], new: Sequence[Any]) -> bool:
        return len(old) == len(new) and all(a is b for a, b in zip(old, new))

    def indented(self, stmts: list[Any]) -> cst.IndentedBlock:
        stmts = [s for s in stmts if not is_pass(s)] or [stmt_line(cst.Pass())]
        first = stmts[0]
        if getattr(first, "leading_lines", None):
            stmts[0] = self.mark(first.with_changes(leading_lines=[]), self.span(first))
        return cst.IndentedBlock(body=stmts)

    def python_if(self, s: cst.If, defined: set[str], after: set[str], ctx: _Ctx) -> list[Any]:
        """An ``if`` that stays Python: rewrite inside its branches."""
        inner = _Ctx(after, defined, ctx.loop)
        body = self.block(s.body.body, inner)
        other = orelse_stmts(s)
        new_other = self.block(other, inner)
        if self.same(s.body.body, body) and self.same(other, new_other):
            return [s]
        orelse: cst.If | cst.Else | None = s.orelse
        if isinstance(s.orelse, cst.If):
            orelse = new_other[0] if len(new_other) == 1 and isinstance(new_other[0], cst.If) else \
                cst.Else(body=self.indented(new_other))
        elif isinstance(s.orelse, cst.Else):
            orelse = s.orelse.with_changes(body=self.indented(new_other))
        return [self.mark(s.with_changes(body=self.indented(body), orelse=orelse), self.span(s))]

    # -- if ----------------------------------------------------------------------------------
    def if_stmt(self, s: cst.If, defined: set[str], after: set[str], ctx: _Ctx) -> list[Any]:
        if self.bta.of(s.test) != DYNAMIC or (isinstance(s.test, cst.Name) and s.test.value in self.retested) or \
                id(s) in self.decided:
            return self.python_if(s, defined, after, ctx)
        sp = self.span(s)
        tb, fb = list(s.body.body), orelse_stmts(s)
        at, af = assigned_in(tb), assigned_in(fb)
        names = list(dict.fromkeys(at + af))
        outputs = [n for n in names if n in after]
        if not outputs and _checks(tb + fb):  # (values dead after it, but a check of an in-place change in it)
            outputs = [n for n in names if n in defined]
        partial = [n for n in outputs if n not in defined and not (n in at and n in af)]
        if partial:
            # a name defined on one branch only and read later: valid Python only if every later read is
            # on a path where it is defined (derivative code re-tests the same condition). The lowering
            # tracks that exactly and refuses a read on a path where it is not; leave this `if` to it,
            # and every later `if` on the same predicate (the re-tests that read the name) too.
            if isinstance(s.test, cst.Name):
                self.retested.add(s.test.value)
            return self.python_if(s, defined, after, ctx)
        self.check_effects(tb + fb, defined, "an `if` on array data", s)
        if not outputs and _prints(tb + fb):  # only prints: the specializer lowers it as it stands
            return self.python_if(s, defined, after, ctx)
        self.changed = True
        if not outputs:
            return []
        flag = self.set_flag(s, tb, fb, outputs, defined, sp)
        if flag is not None:
            return flag
        # operands: what a branch assigns (so, in Python, a local of its function) but may read first,
        # or returns unchanged; everything else a branch reads comes by closure
        live_in = self.live.live_in(tb, set(outputs), None) | self.live.live_in(fb, set(outputs), None)
        operands = [n for n in names if n in defined and n in live_in]
        t_name, f_name = self.fresh("if_true"), self.fresh("if_false")
        defs = []
        for fname, branch, assigned in ((t_name, tb, at), (f_name, fb, af)):
            inner = _Ctx(set(outputs), (defined - set(assigned)) | set(operands), None)
            defs.append(self.function(fname, operands, self.block(branch, inner) + [self.ret(outputs, sp)], sp))
        true_def, false_def = defs
        call = dotted_call("srcjax.lax.cond", s.test, cst.Name(t_name), cst.Name(f_name),
                     *[cst.Name(n) for n in operands])
        return [true_def, false_def, self.blank(self.mark(assign_stmt(outputs, call), sp))]

    def set_flag(self, s: cst.If, tb: list[Any], fb: list[Any], outputs: list[str], defined: set[str],
                 sp: Span | None) -> list[Any] | None:
        """``if c: flag = True`` (how ``break`` is rewritten) as ``flag = np.logical_or(flag, c)``: no branches."""
        if fb or len(tb) != 1 or len(outputs) != 1:
            return None
        line = tb[0]
        if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1
                and isinstance(line.body[0], cst.Assign) and len(line.body[0].targets) == 1):
            return None
        a = line.body[0]
        target = a.targets[0].target
        if not (isinstance(target, cst.Name) and target.value == outputs[0] and target.value in defined
                and isinstance(a.value, cst.Name) and a.value.value == "True"):
            return None
        call = dotted_call("np.logical_or", cst.Name(target.value), s.test)
        return [self.mark(assign_stmt(target.value, call), sp)]

    def check_effects(self, stmts: Sequence[Any], outer: set[str], where: str, node: cst.CSTNode) -> None:
        """Refuse what a generated function cannot do for its caller: mutate, raise, return; or see (a nested
        function reading a name the body binds again: closure_reads.py)."""
        self.check_closures(stmts, where, node)
        decided: set[int] = set()
        if is_generated(self.nf.fn):  # (frontend/branch_checks.py)
            tests, decided = decided_here(self.bta, stmts)
            self.decided |= tests
        for st, _ in walk(stmts):
            recv = self.method_receiver(st)
            if recv is not None and recv in outer and is_tape_name(recv):  # (reverse-mode source: srcjax's tape)
                message, hint = _tape_in_branch(stmts, st, where)
                raise self.error(message, node, hint)
            if recv is not None and recv in outer:
                raise self.error(f"`{recv}.{st.value.func.attr.value}(...)` inside {where} changes `{recv}`, "
                                 "which a generated branch or loop body cannot do",
                                 node, "build the result with NumPy (np.where, np.concatenate, np.stack) instead")
            if isinstance(st, cst.Raise) and id(st) in decided:  # (a check of a structure srcjax wrote, decided
                continue  # while specializing the branch: frontend/branch_checks.py)
            if isinstance(st, cst.Raise) and is_generated(self.nf.fn):  # (the user's were refused in the user's code)
                raise self.error(f"reverse mode through {where} of a derivative srcjax wrote (a derivative of a "
                                 "derivative: a helper of the inner one checks values inside the branch) is not "
                                 "supported yet", node,
                                 "take one of the two derivatives in forward mode (srcjax.jacfwd or srcjax.jvp: "
                                 "grad(lambda x: np.sum(jacfwd(f)(x))) runs), or write the branch with np.where")
            if isinstance(st, cst.Raise):
                raise self.error(f"`raise` inside {where}", node,
                                 "check static values (shapes, arguments) instead, or return a flag array")

    def check_closures(self, stmts: Sequence[Any], where: str, node: cst.CSTNode) -> None:
        stale = None if is_generated(self.nf.fn) else closure_reads.stale_read(self.nf.fdef.body.body, stmts)
        if stale is not None:
            raise self.error(f"`{stale[0]}()` reads `{stale[1]}`, which {where} binds again: Python's function "
                             f"would see each new `{stale[1]}`, srcjax's generated body the one from before it",
                             node, f"pass `{stale[1]}` to {stale[0]} as an argument")

    def method_receiver(self, st: Any) -> str | None:
        value = st.value if isinstance(st, (cst.Expr, cst.Assign)) else None
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
                isinstance(value.func.value, cst.Name) and value.func.value.value in self.bta.locals:
            return value.func.value.value
        return None

    # -- generated pieces ----------------------------------------------------------------------
    def function(self, name: str, params: Sequence[str], body: list[Any], sp: Span | None) -> cst.FunctionDef:
        fdef = cst.FunctionDef(name=cst.Name(name),
                               params=cst.Parameters(params=[cst.Param(cst.Name(p)) for p in params]),
                               body=self.indented(body), leading_lines=[cst.EmptyLine(indent=False)])
        return self.mark(fdef, sp)  # type: ignore[no-any-return]

    def blank(self, line: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
        new = line.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        return self.mark(new, self.span(line))  # type: ignore[no-any-return]

    def ret(self, names: Sequence[str], sp: Span | None) -> cst.SimpleStatementLine:
        return self.mark(stmt_line(cst.Return(value=names_expr(names, parens=False))), sp)  # type: ignore[no-any-return]

    def line(self, target: str | Sequence[str], value: cst.BaseExpression, sp: Span | None) -> cst.SimpleStatementLine:
        return self.mark(assign_stmt(target, value), sp)  # type: ignore[no-any-return]

    def carry_params(self, carry: Sequence[str], sp: Span | None, name: str | None = None) -> tuple[str, list[Any]]:
        """The parameter that receives ``carry`` and the statement that unpacks it."""
        if len(carry) == 1:
            return carry[0], []
        name = name or self.fresh("carry")
        return name, [self.line(carry, cst.Name(name), sp)]

    # -- flattening (while tests, `and`/`or`/`not` tests) -------------------------------------
    def atom(self, e: cst.BaseExpression, out: list[Any], sp: Span | None) -> cst.BaseExpression:
        flat, hint = self.flat(e, out, sp)
        if hint is None:
            return flat
        name = self.fresh(hint)
        self.bta.declare(name, DYNAMIC)
        line = self.line(name, flat, sp)
        out.append(self.blank(line) if out and isinstance(out[-1], cst.FunctionDef) else line)
        return cst.Name(name)

    def truth(self, e: cst.BaseExpression, out: list[Any], sp: Span | None) -> cst.BaseExpression:
        """An operand of ``and``/``or``/``not`` on data as an atom; a name holding a Python list, tuple or dict as
        its length's test (``np.logical_not(hist)`` read the list as an array: `if not hist or x.sum() > t`)."""
        if not (isinstance(e, cst.Name) and e.value in self.bta.containers):
            return self.atom(e, out, sp)
        n, ne = self.fresh(f"len_{e.value}"), self.fresh("nonempty")
        self.bta.declare(n, STATIC)
        self.bta.declare(ne, STATIC)
        out.append(self.line(n, cst.Call(func=cst.Name("len"), args=[cst.Arg(e)]), sp))
        out.append(self.line(ne, cst.Comparison(left=cst.Name(n), comparisons=[
            cst.ComparisonTarget(operator=cst.GreaterThan(), comparator=cst.Integer("0"))]), sp))
        return cst.Name(ne)

    def flat(self, e: cst.BaseExpression, out: list[Any], sp: Span | None) -> tuple[cst.BaseExpression, str | None]:
        """One operation on atoms, ``and``/``or``/``not`` as ``np.logical_*``; a name hint (None: an atom)."""
        if getattr(e, "lpar", None) and not (isinstance(e, cst.Tuple) and not e.elements):
            e = e.with_changes(lpar=[], rpar=[])
        if isinstance(e, cst.Name) or is_literal(e):
            return e, None
        if isinstance(e, cst.BooleanOperation):
            is_and = isinstance(e.operator, cst.And)
            left = self.truth(e.left, out, sp)
            if self.may_raise(e.right):
                # `i < n and x[i] > 0`: the right side runs only when it decides, as in Python
                return self.lazy_side(left, e.right, is_and, out, sp), "and_" if is_and else "or_"
            right = self.truth(e.right, out, sp)
            both = dotted_call("np.logical_and" if is_and else "np.logical_or", left, right)
            return both, "and_" if is_and else "or_"
        if isinstance(e, cst.UnaryOperation):
            if isinstance(e.operator, cst.Not):
                return dotted_call("np.logical_not", self.truth(e.expression, out, sp)), "not_"
            return e.with_changes(expression=self.atom(e.expression, out, sp)), UNARY_HINT[type(e.operator).__name__]
        if isinstance(e, cst.Comparison):
            left = self.atom(e.left, out, sp)
            parts: list[cst.BaseExpression] = []
            for c in e.comparisons:
                right = self.atom(c.comparator, out, sp)
                one = cst.Comparison(left=left, comparisons=[c.with_changes(comparator=right)])
                parts.append(one)
                left = right
            if len(parts) == 1:
                return parts[0], COMPARE_HINT[type(e.comparisons[0].operator).__name__]
            acc = self.atom(parts[0], out, sp)
            for k, p in enumerate(parts[1:]):
                nxt = self.atom(p, out, sp)
                call = dotted_call("np.logical_and", acc, nxt)
                if k == len(parts) - 2:
                    return call, "and_"
                acc = self.atom(call, out, sp)
        if isinstance(e, cst.BinaryOperation):
            left = self.atom(e.left, out, sp)
            right = self.atom(e.right, out, sp)
            return e.with_changes(left=left, right=right), BINOP_HINT[type(e.operator).__name__]
        if isinstance(e, cst.Attribute):
            chain = attr_chain(e)
            if chain is not None and chain[0] not in self.bta.locals:
                return e, None  # np.float32, a module constant
            base = self.atom(e.value, out, sp)
            if e.attr.value in SHAPE_ATTRS:
                return e.with_changes(value=base), None
            hint = f"{base.value}_{e.attr.value}" if isinstance(base, cst.Name) else e.attr.value
            return e.with_changes(value=base), hint
        if isinstance(e, cst.Subscript):
            base = self.atom(e.value, out, sp)
            elems = []
            for el in e.slice:
                sl = el.slice
                if isinstance(sl, cst.Index):
                    sl = sl.with_changes(value=self.atom(sl.value, out, sp))
                elif isinstance(sl, cst.Slice):
                    sl = sl.with_changes(**{k: self.atom(getattr(sl, k), out, sp)
                                            for k in ("lower", "upper", "step") if getattr(sl, k) is not None})
                elems.append(el.with_changes(slice=sl))
            return e.with_changes(value=base, slice=elems), "getitem"
        if isinstance(e, cst.Call):
            func = e.func
            if isinstance(func, cst.Attribute) and (attr_chain(func) is None or
                                                    attr_chain(func)[0] in self.bta.locals):  # type: ignore[index]
                func = func.with_changes(value=self.atom(func.value, out, sp))
            args = [a.with_changes(value=self.atom(a.value, out, sp)) for a in e.args]
            return e.with_changes(func=func, args=args), call_hint(func)
        if isinstance(e, (cst.Tuple, cst.List)):
            items: list[cst.BaseElement] = [
                el.with_changes(value=self.atom(el.value, out, sp)) if isinstance(el, cst.Element) else el
                for el in e.elements]
            return e.with_changes(elements=items), None
        return e, "value"  # a comprehension or an f-string: kept whole

    def may_raise(self, e: cst.CSTNode) -> bool:
        """Indexing, or a call of a function that is not a NumPy primitive: may fail where Python skips it."""
        if isinstance(e, cst.Subscript):
            return True
        if isinstance(e, cst.Call):
            ok, v = self.bta.resolve(e.func)
            if not ok or not (registry.lookup(v) is not None or id(v) in STATIC_FUNCTIONS or
                              v in (abs, min, max, float, int, bool)):
                return True
        return any(self.may_raise(c) for c in children(e))

    def lazy_side(self, left: cst.BaseExpression, right: cst.BaseExpression, is_and: bool, out: list[Any],
                  sp: Span | None) -> cst.BaseExpression:
        """``left and right`` as a cond that evaluates ``right`` only when ``left`` does not decide."""
        rhs_name = self.fresh("and_rhs" if is_and else "or_rhs")
        short_name = self.fresh("and_short" if is_and else "or_short")
        rhs: list[Any] = []
        rhs.append(self.ret_expr(self.atom(right, rhs, sp), sp))
        rhs_def = self.function(rhs_name, [], rhs, sp)
        short_def = self.function(short_name, [], [self.ret_expr(left, sp)], sp)
        out.extend([rhs_def, short_def])
        first, second = (rhs_name, short_name) if is_and else (short_name, rhs_name)
        return dotted_call("srcjax.lax.cond", left, cst.Name(first), cst.Name(second))

    # -- loops ---------------------------------------------------------------------------------
    def python_loop(self, s: cst.For | cst.While, defined: set[str], after: set[str]) -> list[Any]:
        """A loop that stays Python: rewrite inside its body."""
        self.check_closures(s.body.body, "the loop", s)  # (unrolled, its calls read the closure's first values too)
        head = self.live.loop_head(s, after)
        tgt = set(target_names(s.target)) if isinstance(s, cst.For) else set()
        inner = _Ctx(head, defined | tgt | set(assigned_in(s.body.body)) & head, (head, set(after)))
        body = self.block(s.body.body, inner)
        if self.same(s.body.body, body):
            return [s]
        return [self.mark(s.with_changes(body=self.indented(body)), self.span(s))]

    def while_stmt(self, s: cst.While, defined: set[str], after: set[str], ctx: _Ctx) -> list[Any]:
        if id(s) not in self.bta.flagged:
            return self.python_loop(s, defined, after)
        self.changed = True
        sp = self.span(s)
        self.check_effects(s.body.body, defined, "a `while` loop on array data", s)
        body = list(s.body.body)
        head = self.live.loop_head(s, after)
        assigned = assigned_in(body)
        for n in assigned:
            if n not in defined and n in head:
                raise self.error(f"`{n}` is first assigned inside a `while` loop on array data, and used after it",
                                 s, f"assign {n} before the loop")
        # (a loop that prints carries all it changes: the prints read it on every iteration)
        carry = [n for n in assigned if (n in head or _prints(body)) and n in defined]
        pre: list[Any] = []
        test: cst.BaseExpression | None = None if is_true(s.test) else s.test
        body, stop = exit_flags(self, body, carry, pre, sp)
        if not [n for n in carry if n != stop]:
            return []  # nothing it computes is used: it can only end at once or never
        # in loop_body, a name the body assigns is a local: bound only once assigned (or carried)
        inner_defined = (defined - set(assigned_in(body))) | set(carry)
        return pre + self.while_loop(test, body, carry, stop, inner_defined, sp)

    def while_loop(self, test: cst.BaseExpression | None, body: list[Any], carry: list[str], stop: str | None,
                   defined: set[str], sp: Span | None) -> list[Any]:
        cond_name, body_name = self.fresh("loop_cond"), self.fresh("loop_body")
        cparam, cunpack = self.carry_params(carry, sp)
        cond: list[Any] = list(cunpack)
        pred = self.atom(test, cond, sp) if test is not None else None
        if stop is not None:
            go = self.fresh(f"not_{stop}")
            cond.append(self.line(go, dotted_call("np.logical_not", cst.Name(stop)), sp))
            pred = cst.Name(go) if pred is None else self.atom(
                cst.BooleanOperation(pred, cst.And(), cst.Name(go)), cond, sp)
        assert pred is not None
        cond.append(self.ret_expr(pred, sp))
        bparam, bunpack = self.carry_params(carry, sp, cparam)
        inner = _Ctx(set(carry), defined, None)
        body_stmts = bunpack + self.block(body, inner) + [self.ret(carry, sp)]
        call = dotted_call("srcjax.lax.while_loop", cst.Name(cond_name), cst.Name(body_name), names_expr(carry, True))
        return [self.function(cond_name, [cparam], cond, sp), self.function(body_name, [bparam], body_stmts, sp),
                self.blank(self.line(carry, call, sp))]

    def ret_expr(self, e: cst.BaseExpression, sp: Span | None) -> cst.SimpleStatementLine:
        return self.mark(stmt_line(cst.Return(value=e)), sp)  # type: ignore[no-any-return]

    def range_args(self, e: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression, int] | None:
        """(lower, upper, step) of ``range(...)`` with a literal step, else None."""
        if not self.bta.range_call(e) or not isinstance(e, cst.Call) or any(a.keyword or a.star for a in e.args):
            return None
        args = [a.value for a in e.args]
        if len(args) == 1:
            return cst.Integer("0"), args[0], 1
        if len(args) == 2:
            return args[0], args[1], 1
        if len(args) == 3:
            step = int_literal(args[2])
            if step is not None and step != 0:
                return args[0], args[1], step
        return None

    def zipped_rows(self, s: cst.For) -> list[tuple[str | None, cst.BaseExpression]] | None:
        """``[(v, x), (v_dot, x_dot)]`` of ``for v, v_dot in zip(x, x_dot)`` over names of arrays (forward mode's
        loop over an array's rows with their tangents' rows), else None."""
        it, t = s.iter, s.target
        if type(it) is not cst.Call or code(it.func) != "zip" or len(it.args) < 2 or \
                any(a.keyword or a.star for a in it.args) or type(t) not in (cst.Tuple, cst.List) or \
                len(t.elements) != len(it.args):  # type: ignore[attr-defined]
            return None
        names = [e.value.value if type(e.value) is cst.Name else None for e in t.elements]  # type: ignore[attr-defined]
        if None in names or len(set(names)) != len(names) or \
                not all(type(a.value) is cst.Name and self.bta.of(a.value) in (DYNAMIC, UNKNOWN) and
                        a.value.value not in self.bta.dicts for a in it.args):
            return None
        return [(n, a.value) for n, a in zip(names, it.args)]

    def listed(self, e: cst.BaseExpression) -> bool:
        """Whether ``e`` is a call that gives a Python list, never an array (``tree_leaves(mu)`` of a dict of data:
        its leaves, each data; walked by index as rows, ``tree_leaves(mu)[i]``, vmap refused it)."""
        if not isinstance(e, cst.Call):
            return False
        ok, fn = self.bta.resolve(e.func)
        return ok and getattr(fn, "__module__", None) in ("srcjax.tree_util", "srcjax.pytree") and \
            getattr(fn, "__name__", None) in ("tree_leaves", "leaves_like")

    def iterator_call(self, e: cst.BaseExpression) -> bool:
        """Whether ``e`` is a call of ``zip``, ``enumerate``, ``reversed``, ``map`` or ``filter`` (an iterator)."""
        if e.__class__ is not cst.Call:
            return False
        ok, fn = self.bta.resolve(e.func)  # type: ignore[attr-defined]
        return ok and fn in (zip, enumerate, reversed, map, filter)

    def for_stmt(self, s: cst.For, defined: set[str], after: set[str], ctx: _Ctx) -> list[Any]:
        sp = self.span(s)
        flagged = id(s) in self.bta.flagged
        rng = self.range_args(s.iter)
        # (a parameter iterated, `for v in x`, is UNKNOWN here: an array or a list; under a break on data it is
        # walked by index, which a list of arrays also allows)
        named = isinstance(s.iter, cst.Name)  # (a dict's name: its keys, never rows)
        view = isinstance(s.iter, cst.Call) and isinstance(s.iter.func, cst.Attribute) and not s.iter.args and \
            s.iter.func.attr.value == "keys"  # (a dict's keys: `{**a, ...}` read as a loop, `a` rebound later)
        view = view or self.bta.keys_call(s.iter)  # (vmap's `batch_keys(d)`: a mapped dict's keys)
        view = view or keyed_loop(s, self.bta.dicts.__contains__) is not None  # (`for k in ema: out[k] = ema[k]`)
        rows = rng is None and not (named and code(s.iter) in self.bta.dicts) and not view and \
            (self.bta.of(s.iter) == DYNAMIC or flagged and named and self.bta.of(s.iter) == UNKNOWN)
        zipped = self.zipped_rows(s) if flagged and rng is None else None  # (v, v_dot in zip(x, x_dot))
        # (`zip(...)`, `reversed(...)`: a Python iterator, never indexed by a loop counter: lbfgs's
        # `for (s, y), (rho, a) in zip(zip(s_hist, y_hist), reversed(alphas))` was `zip(...)[i]`, an internal error)
        rows = (rows and not self.iterator_call(s.iter) or zipped is not None) and not self.listed(s.iter)
        body = list(s.body.body)
        breaks, conts = own_exits(body)
        head = self.live.loop_head(s, after)
        target = s.target.value if isinstance(s.target, cst.Name) else None
        walked = [(target, s.iter)] if zipped is None else zipped  # (each loop variable, what it walks the rows of)
        if zipped is not None:
            target = zipped[0][0]
        assigned = [n for n in assigned_in(body) if all(n != t for t, _ in walked)]
        carry = [n for n in assigned if n in head and n in defined]
        receivers = {n for st, _ in walk(body) if (n := self.method_receiver(st)) is not None}
        dynamic_break = id(s) in self.bta.dynamic_break
        # a `for` that a test on data breaks out of becomes a while_loop, which can carry the loop variable
        keep_target = dynamic_break and rng is not None and target is not None and target in after
        why = None
        if rng is None and not rows:
            why = "it does not loop over range(...) or the rows of an array"
        elif target is None:
            why = "its target is not a single name"
        elif any(t in after for t, _ in walked) and not keep_target:
            why = f"the loop variable `{next(t for t, _ in walked if t in after)}` is used after the loop"
        elif has_return(body):
            why = "it returns from inside the loop"
        elif any(isinstance(st, (cst.Raise, cst.Assert)) for st, _ in walk(body)) and not flagged:
            why = "it checks something (raise/assert): kept Python, so the check sees each value of the loop variable"
        elif receivers & defined:
            name = sorted(receivers & defined)[0]
            why = f"it changes `{name}` (a method call)"
        elif any(n not in defined and n in head for n in assigned):
            name = next(n for n in assigned if n not in defined and n in head)
            why = f"`{name}`, which it first assigns, is used after the loop (assign `{name}` before the loop, or " \
                f"in a `for ... else:` clause: Python raises UnboundLocalError after no iteration binds it)"
        elif not carry and not keep_target:
            why = "it computes nothing used after it"
        elif (breaks or conts) and not flagged:
            why = "it has a static break/continue"
        elif not flagged and all(self.bta.kind(n) == STATIC for n in carry):
            why = "everything it computes is static"
        if why is not None:
            if flagged:
                raise self.error(f"`break`/`continue` under a condition on array data, in a loop srcjax cannot "
                                 f"rewrite: {why}", s,
                                 "loop with `for i in range(n)` over names assigned before the loop, or use a "
                                 "`while` loop with a flag")
            return self.python_loop(s, defined, after)
        assert target is not None
        if rng is not None and self.bta.of(rng[1]) == DYNAMIC:  # (x[i] past the end: clamped, NumPy raises)
            data_bound_index.check(body, target, lambda m, h: self.error(m, s, h))
        self.check_closures(body, "the loop", s)
        self.changed = True
        pre: list[Any] = []
        lo: cst.BaseExpression
        hi: cst.BaseExpression
        first: list[Any] = []  # statements at the top of the body
        if rows:
            walks = walked[0][1]
            n = self.fresh(f"len_{code(walks)}" if isinstance(walks, cst.Name) else "len")
            walked_names = [code(w) for _, w in walked]
            tangents = all(m == f"{walked_names[0]}_dot" for m in walked_names[1:])  # (forward mode's zip(x, x_dot))
            lens = [cst.Call(func=cst.Name("len"), args=[cst.Arg(w)]) for _, w in (walked[:1] if tangents else walked)]
            # (zip stops at the shortest: `for a, b in zip(ys, zs)` with zs shorter)
            pre.append(self.line(n, lens[0] if len(lens) == 1 else cst.Call(
                func=cst.Name("min"), args=[cst.Arg(x) for x in lens]), sp))
            lo, hi, step = cst.Integer("0"), cst.Name(n), 1
            index = self.fresh("i")
            self.bta.declare(index, UNKNOWN)
            for t, it in walked:
                assert t is not None
                first.append(self.line(t, cst.Subscript(value=it, slice=[cst.SubscriptElement(
                    cst.Index(cst.Name(index)))]), sp))
        else:
            assert rng is not None
            lo, hi, step = rng
            index = target
        if step != 1 and not dynamic_break:
            # fori_loop counts by one: i = lo + k * step
            r = self.fresh("range")
            trips = self.fresh("trips")
            pre += [self.line(r, s.iter, sp), self.line(trips, cst.Call(func=cst.Name("len"),
                                                                      args=[cst.Arg(cst.Name(r))]), sp)]
            k = self.fresh("k")
            self.bta.declare(k, UNKNOWN)
            offset = self.fresh("offset")
            first += [self.line(offset, cst.BinaryOperation(cst.Name(k), cst.Multiply(), int_expr(step)), sp),
                      self.line(target, cst.BinaryOperation(lo, cst.Add(), cst.Name(offset)), sp)]
            lo, hi, index = cst.Integer("0"), cst.Name(trips), k
        body, stop = exit_flags(self, body, carry, pre, sp)
        body = first + body
        inner_defined = (defined - set(assigned_in(body))) | set(carry) | {index}
        if dynamic_break:
            # a while_loop that carries the counter
            every = assigned_in(body)
            if isinstance(hi, cst.Name) and hi.value in every:  # range() read its bound once
                upper = self.fresh("upper")
                pre.append(self.line(upper, hi, sp))
                hi = cst.Name(upper)
            if index == target and (target in every or keep_target):  # count apart from the loop variable
                index = self.fresh("counter")
                body = [self.line(target, cst.Name(index), sp)] + body
                if keep_target:
                    if target not in defined:
                        pre.append(self.line(target, lo, sp))
                    carry.insert(len(carry) - 1, target)
            self.bta.declare(index, DYNAMIC)
            pre.append(self.line(index, lo, sp))
            carry.insert(len(carry) - 1, index)  # before the stop flag
            inner_defined = (defined - set(assigned_in(body))) | set(carry)
            op: cst.BaseCompOp = cst.LessThan() if step > 0 else cst.GreaterThan()
            test = cst.Comparison(left=cst.Name(index), comparisons=[cst.ComparisonTarget(op, hi)])
            step_expr = cst.BinaryOperation(cst.Name(index), cst.Add() if step > 0 else cst.Subtract(),
                                            int_expr(abs(step)))
            body = body + [self.line(index, step_expr, sp)]
            return pre + self.while_loop(test, body, carry, stop, inner_defined, sp)
        name = self.fresh("loop_body")
        bparam, bunpack = self.carry_params(carry, sp)
        inner = _Ctx(set(carry), inner_defined, None)
        body_stmts = bunpack + self.block(body, inner) + [self.ret(carry, sp)]
        call = dotted_call("srcjax.lax.fori_loop", lo, hi, cst.Name(name), names_expr(carry, True))
        return pre + [self.function(name, [index, bparam], body_stmts, sp), self.blank(self.line(carry, call, sp))]


# ======================================================================================
# Entry point
# ======================================================================================


def _return_checks(f: Functionalizer, body: Sequence[Any], loops: set[int] | None = None) -> bool:
    """True when a ``return`` sits under an ``if`` on data. A ``return`` in a loop on data adds the outermost
    loop around it to ``loops`` (to be rewritten by :mod:`srcjax.frontend.loop_returns`), or is refused."""
    bta = f.bta
    needs_exit = False

    def go(stmts: Sequence[Any], dyn_if: bool, loop: cst.CSTNode | None, dyn_in_loop: bool,
           outer: cst.CSTNode | None) -> None:
        nonlocal needs_exit
        for s in stmts:
            if isinstance(s, cst.SimpleStatementLine):
                if any(isinstance(x, cst.Return) for x in s.body):
                    if loop is not None and (dyn_in_loop or id(loop) in bta.flagged):
                        if loops is None or outer is None:
                            raise UnsupportedSyntaxError(
                                "`return` inside a loop that depends on array data is not supported",
                                span=f.span(s), hint="set a flag and `break` out of the loop, then return after it")
                        loops.add(id(outer))
                    if loop is None and dyn_if:
                        needs_exit = True
            elif isinstance(s, cst.If):
                d = bta.of(s.test) == DYNAMIC
                go(s.body.body, dyn_if or d, loop, dyn_in_loop or d, outer)
                go(orelse_stmts(s), dyn_if or d, loop, dyn_in_loop or d, outer)
            elif isinstance(s, LOOPS):
                go(s.body.body, dyn_if, s, False, outer or s)

    go(body, False, None, False, None)
    return needs_exit


def _only_tested(body: list[Any]) -> set[str]:
    """``if`` tests bound once, by a boolean-valued ``and``/``or`` or read only as tests (``and_ = a > 0
    and b < 1`` then ``if and_:``, as derivative code writes it): ``and``/``or`` may become
    ``np.logical_and``/``np.logical_or`` without changing what the program computes."""
    uses: dict[str, int] = {}
    for node in walk_nodes(cst.Module(body=body)):
        if isinstance(node, cst.Name):
            uses[node.value] = uses.get(node.value, 0) + 1
    tests: dict[str, int] = {}
    bound: dict[str, int] = {}
    for s, _ in walk(body):
        if isinstance(s, cst.If) and isinstance(s.test, cst.Name):
            tests[s.test.value] = tests.get(s.test.value, 0) + 1
        for t in _assigned_targets(s):
            bound[t] = bound.get(t, 0) + 1
    logical: dict[str, bool] = {}  # name -> every `and`/`or`/`not` bound to it is boolean-valued
    for s, _ in walk(body):
        if isinstance(s, cst.Assign) and len(s.targets) == 1 and isinstance(s.targets[0].target, cst.Name) \
                and Functionalizer.is_logical(s.value):
            n = s.targets[0].target.value
            logical[n] = logical.get(n, True) and boolean_valued(s.value)
    return {n for n, k in tests.items() if logical.get(n) or (bound.get(n) == 1 and uses.get(n) == k + 1)}


def _assigned_targets(s: Any) -> list[str]:
    if isinstance(s, cst.Assign):
        return [n for t in s.targets for n in target_names(t.target)]
    if isinstance(s, (cst.AugAssign, cst.AnnAssign)):
        return target_names(s.target)
    if isinstance(s, cst.For):
        return target_names(s.target)
    return []


def functionalize(nf: NormalizedFunction, taken: Iterable[str] = (), dynamic: Iterable[str] = ()) -> NormalizedFunction:
    """``nf`` with control flow on array data rewritten into :mod:`srcjax.lax` calls.

    Returns ``nf`` itself when there is nothing to rewrite. ``taken``: other
    names the generated module uses (helper functions), never invented here. ``dynamic``:
    names known to hold array data (vmap's batched tests; a test reading a parameter that may be a
    Python value is otherwise left to the lowering, which decides per call).
    """
    fdef = nf.fdef
    body = list(fdef.body.body)
    if not any(type(s) in _BLOCKS for s, _ in walk(body)):  # (exact types: no ABCMeta check per statement)
        return nf
    taken, dynamic = set(taken), tuple(dynamic)
    bta = BindingTimes(nf, fdef, body, helpers=taken, dynamic=dynamic)
    if (bta.length_tests or bta.containers) and nf.plain is None:  # `if hist:` of a list: `if len(hist) > 0`
        f = Functionalizer(nf, bta, taken)
        rewritten = length_tests.rewrite(body, bta.length_tests, bta.containers, f.fresh, f.spans, f.keep,
                                         _only_tested(body))
        if rewritten is not None:
            body = rewritten
            fdef = fdef.with_changes(body=fdef.body.with_changes(body=body))
            nf = dataclasses.replace(nf, fdef=fdef, spans=f.spans, temps=nf.temps | f.invented)
            bta = BindingTimes(nf, fdef, body, helpers=taken, dynamic=dynamic)
    if not bta.flagged and not any(isinstance(s, cst.If) and bta.of(s.test) == DYNAMIC for s, _ in walk(body)) \
            and not any(isinstance(s, cst.For) for s, _ in walk(body)):
        return nf
    f = Functionalizer(nf, bta, taken)
    loops: set[int] = set()
    _return_checks(f, body, loops)
    if loops:  # `return` in a loop on data: a flag and a carried result, the return after the loop
        body, made = loop_returns.rewrite(body, loops, f.fresh, f.spans, {p.name.value for p in params_of(fdef)},
                                          set(bta.locals))
        f.keep.extend(made)
        f.bta = bta = BindingTimes(nf, fdef, body, helpers=taken, dynamic=dynamic)
        f.changed = True
    if _return_checks(f, body):
        body = single_exit(body, f.fresh("result"), f.spans)
        f.keep.extend(body)
        f.bta = bta = BindingTimes(nf, fdef, body, helpers=taken, dynamic=dynamic)
        f.changed = True
    only_tested = _only_tested(body)
    for s, _ in walk(body):
        if isinstance(s, cst.If) and isinstance(s.test, cst.Name) and bta.of(s.test) == DYNAMIC and \
                (s.test.value in nf.temps or s.test.value in only_tested):
            f.logical_tests.add(s.test.value)
    params = {p.name.value for p in params_of(fdef)}
    new_body = f.block(body, _Ctx(set(), params, None))
    if not f.changed:
        return nf
    new = fdef.with_changes(body=fdef.body.with_changes(body=new_body))
    alive = {id(n) for n in walk_nodes(new)}
    spans = {k: v for k, v in f.spans.items() if k in alive or k in nf.spans}
    return dataclasses.replace(nf, fdef=new, plain=nf.plain_fdef, spans=spans, temps=nf.temps | f.invented)


def _checks(stmts: Sequence[Any]) -> bool:
    """Whether ``stmts`` check an in-place change while specializing (``in_place(x, new, alias=...)``: refused where
    NumPy's change reaches a value read later, frontend/item_views.py): a branch whose values are all dead after it
    still runs it."""
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == "in_place" and
               any(a.keyword is not None and a.keyword.value == "alias" for a in n.args)
               for st in stmts for n in walk_nodes(st))


def _prints(stmts: Sequence[Any]) -> bool:
    """Whether ``stmts`` call ``print`` (a run-time effect: the code around it is not dead)."""
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == "print"
               for st in stmts for n in walk_nodes(st))


def with_data_names(nf: NormalizedFunction, names: Iterable[str], taken: Iterable[str] = ()) -> NormalizedFunction:
    """``nf`` functionalized again knowing that ``names`` hold array data: vmap found a Python ``if`` or
    ``while`` (left to the lowering: its test read a parameter that might have been a Python value)
    testing a batched value, which makes it control flow on data."""
    return functionalize(dataclasses.replace(nf, fdef=nf.plain_fdef), taken, dynamic=names)


def _tape_in_branch(stmts: Sequence[Any], push: Any, where: str) -> tuple[str, str]:
    """The refusal of a tape written inside a branch or loop body on data (the message and its hint), told by the
    loop that writes it: a ``while`` (jax.grad refuses a while_loop too), or a ``for`` that reverse mode could not
    run outside the ``if`` (transforms/branch_loops.py): over a sequence the branch computes, or in a branch that
    changes a Python container."""
    head = f"reverse mode through a loop inside {where} is not supported yet: the loop's tape would be written in a " \
           "branch"
    loop = next((s for s, _ in walk(stmts) if isinstance(s, (cst.For, cst.While)) and
                 any(t is push for t, _ in walk(s.body.body))), None)
    if not isinstance(loop, cst.For):
        return (f"{head} (jax.grad refuses a while_loop too)",
                "use forward mode (srcjax.jvp, srcjax.jacfwd), or run the loop outside the `if` and choose its result "
                "with np.where; under vmap of vmap (a batched `while`), take the derivative inside the vmaps: "
                "vmap(vmap(grad(f, max_iters=...)))")
    values = {target_names(a.targets[0].target)[0]: a.value for a, _ in walk(stmts)
              if isinstance(a, cst.Assign) and len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name)}
    chain = [n for n in names_in(loop.iter) if n in values][:1]
    while chain:  # (loop_items = ws; ws = items: a comprehension's list)
        alias = values[chain[-1]]
        if not isinstance(alias, cst.Name) or alias.value not in values or alias.value in chain:
            break
        chain.append(alias.value)
    if chain:
        name = next((n for n in chain if not is_tape_name(n) and not n.startswith("loop_items")), chain[-1])
        display = "" if isinstance(values[name], cst.Dict) else \
            f", or bind it in the branch to a list or tuple display (`{name} = [a, b]`: the loop walks it by position)"
        return (f"{head} (the `for` walks `{name}`, which the branch computes: it cannot run outside the `if`)",
                f"compute `{name}` before the `if`{display}, or use forward mode (srcjax.jvp, srcjax.jacfwd)")
    return (f"{head} (the branch changes a Python list or dict, so the `for` cannot run outside the `if`)",
            "change the list or dict outside the `if` (or build the values with NumPy: np.stack, np.where), or use "
            "forward mode (srcjax.jvp, srcjax.jacfwd)")
