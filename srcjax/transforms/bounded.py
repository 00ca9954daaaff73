"""Loops for reverse mode: ``while`` on data gets a bound, ``break``/``continue`` become flags.

Reverse mode saves what each iteration computes and replays the iterations
backwards, so it needs loops whose structure does not depend on a decision
made by array data in the middle of the loop. Before differentiating, this
pass rewrites the ANF of a function (``nf.plain``) into that form:

* ``break``/``continue`` (on data or not) become flags by the rewrite the
  forward functionalization uses (:func:`srcjax.frontend.exits.exit_flags`),
  and the rest of the iteration is guarded by ``if not_stop:``; an iteration
  after the loop has stopped does nothing. ::

      for i in range(n):                 stop = False
          x = step(x)                    for i in range(n):
          if done(x):           ->           not_stop = np.logical_not(stop)
              break                          if not_stop:
                                                 x = step(x)
                                                 gt = done(x)
                                                 if gt:
                                                     stop = True

* ``while test:`` whose test (or an exit) depends on data becomes a ``for``
  over a bound, with ``if not test: break`` first::

      while it < 100 and err > tol:      ->  for _ in range(0, 100, 1):  # it = 0; it = it + 1
      while err > tol:  (max_iters=50)   ->  for _ in range(50):

  The bound is read from the test when it has a counter (``i < n`` or
  ``i <= n`` with ``i`` set to an integer literal just before the loop and
  increased by a positive literal once per iteration in the body), else it
  is the ``max_iters`` given to the transformation, else the loop is
  refused with an error that says how to give one. A counted bound that is
  not a literal, with ``max_iters`` given, is written ``trip_bound(n,
  i0 + c * max_iters)``: ``n`` itself, except under vmap where ``n`` is per
  example and the loop runs ``max_iters`` times (iterations past an example's own
  count do nothing: its test failed). A loop still running
  after ``max_iters`` iterations stops there: the derivative is that of the
  first ``max_iters`` iterations.

Everything here is plain ANF again, so the rest of reverse mode (tapes
stacked per iteration, ``if``s on data re-tested by the adjoint) applies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst

from ..core import Span, TranspileError
from ..frontend.binding_times import DYNAMIC, STATIC, BindingTimes
from ..frontend.exits import exit_flags, own_exits
from ..frontend.functionalize import Functionalizer
from ..frontend.names import assigned_names, names_in, target_names
from ..frontend.normalize import NormalizedFunction
from ..frontend.restructure import walk
from ..frontend.syntax import dotted_call, int_literal, is_true, orelse_stmts


class LoopBoundError(TranspileError):
    """Reverse mode through a loop whose trip count is decided by data, without a bound."""


def _hint(sp: Span | None = None) -> str:
    fixed = "srcjax.lax.fori_loop(lower, upper, body, init) where the number of steps is known (jax refuses " \
        "reverse mode through lax.while_loop whatever its test), or "
    called = sp is not None and "while_loop(" in sp.source_line()[sp.col:]  # (srcjax.lax.while_loop: its carry)
    return ((fixed if called else "") + "give an upper bound on its iterations: srcjax.grad(f, max_iters=100) (also "
            "value_and_grad, vjp, jacrev, hessian), or count in the test: `while it < 100 and ...:` with `it = 0` "
            "before the loop and `it += 1` in it; forward mode (srcjax.jvp) needs no bound")


class Bounder:
    """Rewrites one function body; ``changed`` tells whether it did anything."""

    def __init__(self, nf: NormalizedFunction, body: Sequence[Any], max_iters: int | None) -> None:
        self.nf = nf
        self.max_iters = max_iters
        self.bta = BindingTimes(nf, nf.plain_fdef, body)
        self.f = Functionalizer(nf, self.bta, names_in(nf.plain_fdef))
        self.changed = False

    @property
    def spans(self) -> dict[int, Span]:
        return self.f.spans

    def block(self, stmts: Sequence[Any]) -> list[Any]:
        out: list[Any] = []
        for s in stmts:
            if isinstance(s, cst.If):
                out.append(self.if_(s))
            elif isinstance(s, cst.For):
                out += self.for_(s, s.body.body)
            elif isinstance(s, cst.While):
                out += self.while_(s, out)
            else:
                out.append(s)
        return out

    def if_(self, s: cst.If) -> cst.If:
        body = self.block(s.body.body)
        orelse = s.orelse
        if isinstance(orelse, cst.If):
            orelse = self.if_(orelse)
        elif orelse is not None:
            orelse = orelse.with_changes(body=self.f.indented(self.block(orelse_stmts(s))))
        new = s.with_changes(body=self.f.indented(body), orelse=orelse)
        return self.f.mark(new, self.f.span(s))  # type: ignore[no-any-return]

    def for_(self, s: cst.For, body_stmts: Sequence[Any]) -> list[Any]:
        sp = self.f.span(s)
        if s.orelse is not None:
            raise LoopBoundError("reverse mode through a `for ... else:` loop is not supported", span=sp,
                                 hint="set a flag before `break` and test it after the loop")
        body = self.block(body_stmts)
        pre: list[Any] = []
        breaks, conts = own_exits(body)
        if breaks or conts:
            self.changed = True
            body, stop = exit_flags(self.f, body, [], pre, sp)
            if stop is not None:
                go = self.f.fresh(f"not_{stop}")
                self.bta.declare(go, DYNAMIC)
                body = [self.f.line(go, dotted_call("np.logical_not", cst.Name(stop)), sp),
                        self.f.mark(cst.If(test=cst.Name(go), body=self.f.indented(body)), sp)]
        new = s.with_changes(body=self.f.indented(body))
        return pre + [self.f.mark(new, sp)]

    def while_(self, s: cst.While, before: list[Any]) -> list[Any]:
        sp = self.f.span(s)
        if s.orelse is not None:
            raise LoopBoundError("reverse mode through a `while ... else:` loop is not supported", span=sp,
                                 hint="set a flag before `break` and test it after the loop")
        on_data = self.bta.of(s.test) != STATIC or id(s) in self.bta.flagged
        if not on_data:
            breaks, conts = own_exits(s.body.body)
            if not breaks and not conts:
                return [self.f.mark(s.with_changes(body=self.f.indented(self.block(s.body.body))), sp)]
        rng = self.counted(s, before)
        if rng is None:
            if self.max_iters is None:
                what = "on array data" if on_data else "with break/continue"
                raise LoopBoundError(f"reverse mode through a `while` loop {what} needs a bound on its "
                                     "iterations", span=sp, hint=_hint(sp))
            rng = dotted_call("range", cst.Integer(str(self.max_iters)))
        self.changed = True
        test: list[Any] = []
        if is_true(s.test):  # `while True:` ends by its breaks alone
            loop = cst.For(target=cst.Name(self.f.fresh("_")), iter=rng, body=s.body)
            self.f.mark(loop, sp)
            return self.for_(loop, list(loop.body.body))
        # `while k < n and x[k] < v:` (a right side that may fail where the left decides): each side its own `if
        # not ...: break`, in order, so the right one runs only where the left holds (as in Python)
        lazy = any(self.f.may_raise(c) for c in _conjuncts(s.test)[1:])
        for conj in _conjuncts(s.test) if lazy else [s.test]:
            t = self.f.atom(conj, test, sp)
            if any(isinstance(x, cst.FunctionDef) for x in test):
                raise LoopBoundError("reverse mode through this `while` test (an `or` whose right side may fail "
                                     "when the left decides) is not supported", span=sp,
                                     hint="compute both sides first and combine them with np.logical_or")
            nt = self.f.fresh(f"not_{t.value}" if isinstance(t, cst.Name) else "not_test")
            self.bta.declare(nt, DYNAMIC)
            test.append(self.f.line(nt, dotted_call("np.logical_not", t), sp))
            test.append(self.f.mark(cst.If(test=cst.Name(nt), body=self.f.indented(
                [cst.SimpleStatementLine(body=[cst.Break()])])), sp))
        target = self.f.fresh("_")
        loop = cst.For(target=cst.Name(target), iter=rng, body=self.f.indented(test + list(s.body.body)))
        self.f.mark(loop, sp)
        return self.for_(loop, list(loop.body.body))

    def counted(self, s: cst.While, before: Sequence[Any]) -> cst.BaseExpression | None:
        """``range(i0, n, c)`` when the test has a conjunct ``i < n`` (or ``<=``) on a counter."""
        for e in _conjuncts(s.test):
            if not isinstance(e, cst.Comparison) or len(e.comparisons) != 1:
                continue
            op = e.comparisons[0].operator
            left, right = e.left, e.comparisons[0].comparator
            if isinstance(op, (cst.GreaterThan, cst.GreaterThanEqual)):
                left, right = right, left
                op = cst.LessThan() if isinstance(op, cst.GreaterThan) else cst.LessThanEqual()
            if not isinstance(op, (cst.LessThan, cst.LessThanEqual)) or not isinstance(left, cst.Name):
                continue
            i = left.value
            if self.bta.of(right) == DYNAMIC or i in names_in(right):
                continue
            start = self.initial(i, before)
            step = self.step(i, s.body.body)
            if start is None or step is None:
                continue
            hi: cst.BaseExpression = right
            if isinstance(op, cst.LessThanEqual):
                hi = cst.BinaryOperation(right, cst.Add(), cst.Integer("1"))
            if self.max_iters is not None and int_literal(hi) is None:  # (vmap: `n` per example, max_iters for all)
                hi = dotted_call("trip_bound", hi, cst.Integer(str(start + step * self.max_iters)))
            return dotted_call("range", cst.Integer(str(start)), hi, cst.Integer(str(step)))
        return None

    @staticmethod
    def initial(i: str, before: Sequence[Any]) -> int | None:
        """The integer literal ``i`` is set to by the last statement before the loop that binds it (through
        copies: ``i = start`` after ``start = 0``, as vmap writes its trip counter)."""
        for k in range(len(before) - 1, -1, -1):
            st = before[k]
            if isinstance(st, cst.SimpleStatementLine):
                for small in reversed(st.body):
                    if isinstance(small, cst.Assign) and any(i in target_names(t.target) for t in small.targets):
                        if len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                            v = small.value
                            if isinstance(v, cst.Name) and v.value != i and len(st.body) == 1:
                                return Bounder.initial(v.value, before[:k])
                            return int_literal(v)
                        return None
            elif i in names_in(st):
                return None
        return None

    @staticmethod
    def step(i: str, body: Sequence[Any]) -> int | None:
        """``c`` when the body's only binding of ``i`` is ``i = i + c`` at its top level (c > 0)."""
        found: int | None = None
        for st in body:
            if isinstance(st, cst.SimpleStatementLine):
                for small in st.body:
                    if isinstance(small, cst.Assign) and any(i in target_names(t.target) for t in small.targets):
                        v = small.value
                        ok = (found is None and len(small.targets) == 1 and isinstance(v, cst.BinaryOperation)
                              and isinstance(v.operator, cst.Add) and isinstance(v.left, cst.Name)
                              and v.left.value == i)
                        c = int_literal(v.right) if ok else None  # type: ignore[attr-defined]
                        if c is None or c <= 0:
                            return None
                        found = c
            elif i in assigned_names([st]):
                return None
        return found


_LOOP_EXITS = frozenset({cst.While, cst.Break, cst.Continue})


def bound_loops(nf: NormalizedFunction, body: Sequence[Any],
                max_iters: int | None) -> tuple[list[Any], dict[int, Span], Bounder | None]:
    """``body`` with loops rewritten for reverse mode, the spans of new nodes, and the rewriter
    (which keeps the new nodes alive while their spans are used); the body itself when nothing changed."""
    if not any(s.__class__ in _LOOP_EXITS for s, _ in walk(body)):  # (exact: libcst's node classes are final)
        return list(body), nf.spans, None
    b = Bounder(nf, body, max_iters)
    new = b.block(body)
    if not b.changed:
        return list(body), nf.spans, None
    return new, b.spans, b


def _conjuncts(e: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The sides of ``a and b and c`` in order (``[e]``: not an ``and``)."""
    if isinstance(e, cst.BooleanOperation) and isinstance(e.operator, cst.And):
        return _conjuncts(e.left) + _conjuncts(e.right)
    return [e]
