"""The program printed for given argument shapes and dtypes: ``srcjax.source(f, *example_args)``.

Input: a :class:`~srcjax.frontend.program.Program`, what one specialization of it found
(:func:`record`) and the module ``srcjax.source(f)`` prints. Output: that module with each function
it shows rewritten for those shapes and dtypes, then folded like any generated source
(:mod:`.readable`): like JAX's ``make_jaxpr(f)(*args)``, the program for those shapes.

The shapes are not inferred again: the specializer (``lower/specialize.py``) runs once more with a
recorder (:class:`_Recorder`), which notes the abstract value (shape, dtype, weak typing) or the
static value (number, shape, dtype) of every name each program function binds at its top level,
and which way each ``if`` on a static value went, outside the regions it traces (branches and
loops on data: there, only an array's abstract value). A name seen with two values, or an ``if``
that went both ways, gets no fact. The
rewrites read the normalized functions (one primitive per statement: the program that lowers),
and each is exact for the recorded values: the same values, shape, dtype and weakness.

- an ``if`` that went one way is the block it took; an ``assert`` of a static true test goes (the
  guard that a gradient's output is a real scalar);
- a static number, shape or dtype is written as its literal (``reduced_size(sub, None)`` -> ``10``);
- ``unbroadcast(g, like)`` and ``expand_reduced(g, a, ...)`` of a ``g`` with the result's abstract
  value are ``g``; ``unbroadcast`` of a float ``g`` that drops leading axes, or sums axes kept
  as 1s, is ``np.sum(g, axis=..., keepdims=...)``; ``in_place(w, new)`` of a ``new`` with the
  result's abstract value (``w += v`` that changes no dtype or shape) is ``new``;
- ``-(-x)``, ``x * ones_like(..)``, ``x * 1.0`` and ``x / 1.0`` are ``x`` when ``x`` has the
  result's abstract value, and ``x * -1.0`` (a float ``x``) is ``-x`` (the checker below reads a
  product by -1 as a negation);
- a value known to be a smaller value broadcast (``ones_like(v)``; a reduction's cotangent
  ``expand_reduced(h, a, ...)`` of a 0-d ``h``, or with ``keepdims``, of ``a``'s dtype; numbers
  times them) is written as that smaller value where an elementwise operation meets an operand of
  the result's shape, which broadcasts it the same way. A float64 one, and numbers times it, is a
  Python float there when the other operand is float64 too (Python's float arithmetic is float64's,
  and a weak float64 meeting a float64 array gives float64); a float32 or float16 one a typed
  constant, ``np.float32(0.2)``, computed in its dtype;
- then statements whose names nothing reads any more are removed (pure right-hand sides only).

Inside loops, branches on data and nested functions each statement is rewritten as at the top
level, but a name bound there (or bound in a way the recorder does not note: ``for`` targets, a
nested function's parameters) is never an alias or a scalar form, and a name bound
while the specializer traced a region (a branch on data, a rolled loop) has only its abstract value
(shape, dtype, weak typing: the same at every binding, or no fact), never a static one: its value
there is not what was recorded. ``unbroadcast(g, x)`` and ``expand_reduced(g, ...)`` read ``g``'s
fact wherever ``g`` is bound (one value at every binding), so they go inside loops too.
Whether the rewritten module is the program that runs is checked before it is printed
(``srcjax.printing``): lowered for the same arguments it must give the same StableHLO, or XLA's
optimized HLO of both must be the same dataflow graph; otherwise the generic module is printed.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

import libcst as cst
import numpy as np

from ..frontend.names import Visitor, target_names
from ..lower.specialize import Specializer
from ..lower.values import is_dynamic
from . import specialized_batch

Fact = tuple[Any, ...]  # ("a", shape, dtype, weak) for an array; ("s", value) for a static number/bool

_F64 = np.dtype(np.float64)
_TYPED = (np.dtype(np.float32), np.dtype(np.float16))  # constants printed as np.float32(...)
_ARITH = {cst.Multiply: "*", cst.Add: "+", cst.Subtract: "-", cst.Divide: "/"}
_CODE = cst.Module(body=[])


class _Recorder(Specializer):
    """The specializer, noting the value of each name each program function binds at its top level,
    and which way each ``if`` on a static value went, outside the regions it traces (branches and
    loops on data). A name or an ``if`` seen with two values or two ways gets no fact."""

    def __init__(self, program: Any) -> None:
        super().__init__(program)
        self.facts: dict[str, dict[str, Fact | None]] = {}  # function name -> name -> value
        self.ways: dict[int, set[str]] = {}  # id of an `if` -> "body" / "orelse" (the ways it went)

    def _traced(self) -> bool:
        return bool(self.on_branch or self.row_contexts)

    def exec_stmt(self, s: cst.BaseStatement, env: dict[str, Any]) -> None:
        if isinstance(s, cst.If):
            from ..lower import regions

            test = self.eval(s.test, env)  # (a static test: Python values, evaluated once more)
            way = "data" if self._traced() or regions.is_data(self, test) else \
                "body" if self.truth(test, "an `if` condition") else "orelse"
            self.ways.setdefault(id(s), set()).add(way)
        super().exec_stmt(s, env)

    def run_body(self, nf: Any, body: Any, env: dict[str, Any]) -> Any:
        if not self._traced():  # (a nested function's parameters get no fact: see _bindings)
            for k, v in env.items():
                self._note(nf.name, k, v)
        return super().run_body(nf, body, env)

    def exec_small(self, s: cst.BaseSmallStatement, env: dict[str, Any]) -> None:
        super().exec_small(s, env)
        if isinstance(s, cst.Assign) and self.fn_stack:
            for t in s.targets:
                for name in target_names(t.target):  # (`a, b = ...`: each name's value once bound)
                    self._note(self.nf.name, name, env.get(name), self._traced())

    def _note(self, fn: str, name: str, v: Any, traced: bool = False) -> None:
        """A binding of ``name`` seen; one seen while tracing a region (a data branch, a rolled loop)
        is a value not known: the name gets no fact."""
        facts = self.facts.setdefault(fn, {})
        fact = _fact(v)
        if traced and (fact is None or fact[0] != "a"):  # (an array's abstract value is its value's everywhere)
            fact = None
        old = facts.get(name, fact)
        if old is not None and fact is not None and old[0] == fact[0] == "a" and old[:3] == fact[:3]:
            # (a loop's carry traced weakly typed, then as the loop's own type: the same array; what is
            # printed from it is checked against the program that runs, _same_program)
            fact = old = ("a", fact[1], fact[2], bool(old[3] and fact[3]))
        facts[name] = fact if old == fact else None


def _fact(v: Any) -> Fact | None:
    if is_dynamic(v):
        a = v.aval
        return ("a", tuple(a.shape), np.dtype(a.dtype), bool(a.weak_type))
    if isinstance(v, (bool, int, float)) and not isinstance(v, np.generic):
        return ("s", type(v), v)
    if isinstance(v, tuple) and all(type(d) is int for d in v):  # a shape
        return ("s", tuple, v)
    if isinstance(v, np.dtype) and v.kind in "biufc" and v.isnative:
        return ("s", np.dtype, v)
    return None


def _literal(f: Fact) -> str | None:
    """A static value as the literal that evaluates to it: a number, a shape, a dtype."""
    if f[1] in (int, float) and math.isfinite(f[2]):
        return repr(f[2]) if f[2] >= 0 else f"({f[2]!r})"
    if f[1] is tuple:
        return repr(f[2])
    if f[1] is np.dtype:
        return f"np.{'bool_' if f[2] == np.bool_ else f[2].name}"
    return None


class Record:
    """What one specialization found: per function, its names' values; the ways each ``if`` went."""

    def __init__(self, facts: dict[str, dict[str, Fact | None]], ways: dict[int, set[str]]) -> None:
        self.facts, self.ways = facts, ways


def record(program: Any, specs: list[Any]) -> Record:
    """What the specializer finds for these argument specs (:class:`Record`)."""
    r = _Recorder(program)
    r.lower(specs)
    return Record(r.facts, r.ways)


def _decided(stmts: list[Any], ways: dict[int, set[str]]) -> list[Any]:
    """``stmts`` with each ``if`` that went one way on a static value replaced by the block it took
    (nothing if none), and nothing after a ``return``."""
    out: list[Any] = []
    for s in stmts:
        way = ways.get(id(s), set()) if isinstance(s, cst.If) else set()
        if len(way) == 1 and "data" not in way:
            assert isinstance(s, cst.If)
            taken: list[Any] = list(s.body.body) if way == {"body"} else \
                list(s.orelse.body.body) if isinstance(s.orelse, cst.Else) else \
                [s.orelse] if isinstance(s.orelse, cst.If) else []
            out += _decided(taken, ways)
        else:
            out.append(s)
        if out and isinstance(out[-1], cst.SimpleStatementLine) and isinstance(out[-1].body[-1], cst.Return):
            return out
    return out


# -- the rewrite ---------------------------------------------------------------------------------


def _summed(g: tuple[int, ...], t: tuple[int, ...]) -> str | None:
    """The ``axis=`` (and ``keepdims=``) arguments of ``np.sum`` that take shape ``g`` to ``t`` as
    ``unbroadcast`` does: leading axes dropped, or axes of ``t``'s 1s kept; None for a mix of both."""
    def axes(ks: list[int]) -> str:
        return str(ks[0]) if len(ks) == 1 else "(" + ", ".join(map(str, ks)) + ")"

    if len(g) > len(t) and g[len(g) - len(t):] == t:
        return "axis=" + axes(list(range(len(g) - len(t))))
    if len(g) == len(t) and g != t and all(d == n or d == 1 for d, n in zip(t, g)):
        return "axis=" + axes([i for i, (d, n) in enumerate(zip(t, g)) if d != n]) + ", keepdims=True"
    return None


class _Unsupported(Exception):
    """A statement this pass does not read: the function is printed generic."""


class _Subst(cst.CSTTransformer):
    """Replace the names read (not attributes' or keywords' names) by their aliases."""

    def __init__(self, alias: dict[str, str]) -> None:
        self.alias = alias

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return False

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        return updated.with_changes(value=updated.value.visit(self))

    def visit_Arg(self, node: cst.Arg) -> bool:
        return False

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(value=updated.value.visit(self))

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp,
                             cst.NamedExpr)):
            raise _Unsupported  # (names bound inside)
        return super().on_visit(node)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        a = self.alias.get(updated.value)
        return cst.parse_expression(a) if a is not None else updated


class _Scalar:
    """A value that is a 0-d value broadcast to its shape: ``text``, a Python expression over numbers
    and 0-d names with the value's dtype and weakness; or, if ``stand_in``, over numbers only, a
    weak Python float standing in for a float64 value (Python's float arithmetic is float64's).
    ``const``: the number, where ``text`` reads no name."""

    def __init__(self, text: str, stand_in: bool = False, const: float | None = None) -> None:
        self.text, self.stand_in, self.const = text, stand_in, const

    def shown(self) -> str:
        """``text`` as an operand: a short number as itself, else parenthesized unless atomic."""
        if isinstance(self.const, np.floating):  # a typed constant: np.float32(0.2)
            return repr(self.const)
        if self.const is not None and len(repr(self.const)) <= 8:
            return repr(self.const) if self.const >= 0 else f"({self.const!r})"
        return self.text if re.fullmatch(r"[\w.]+", self.text) else f"({self.text})"


def _strong_f64(f: Fact | None) -> bool:
    return f is not None and f[0] == "a" and f[2] == _F64 and not f[3]


def _atom(e: cst.BaseExpression) -> str | None:
    if isinstance(e, cst.Name):
        return e.value
    return None


def _number(e: cst.BaseExpression) -> float | int | None:
    neg = False
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus):
        neg, e = True, e.expression
    if isinstance(e, (cst.Integer, cst.Float)):
        v = e.evaluated_value
        if isinstance(v, int) and abs(v) >= 2 ** 53:
            return None
        return -v if neg else v
    return None


class _Rewriter:
    def __init__(self, facts: dict[str, Fact | None], binds: Counter[str]) -> None:
        self.facts = facts
        self.binds = binds
        self.alias: dict[str, str] = {}
        self.neg: dict[str, str] = {}  # t -> x for t = -x
        self.ones: set[str] = set()
        self.scalar: dict[str, _Scalar] = {}
        self.single = True  # whether the name being bound is bound once

    def same_as(self, t: str, x: str) -> cst.BaseExpression | None:
        """``t`` is ``x``: an alias (None: the statement goes), or ``x`` as its value."""
        if self.single and self.once(x):
            self.alias[t] = x
            return None
        return cst.Name(x)

    def note(self, t: str, sc: _Scalar) -> None:
        if self.single:
            self.scalar[t] = sc

    def fact(self, name: str | None) -> Fact | None:
        return self.facts.get(name) if name is not None else None

    def once(self, name: str) -> bool:
        return self.binds[name] <= 1 and self.facts.get(name) is not None

    def statement(self, s: cst.BaseSmallStatement) -> cst.BaseSmallStatement | None:
        """``s`` rewritten (aliases read), or None when it goes."""
        if isinstance(s, cst.Assert):
            t = _atom(s.test)
            f = self.fact(t)
            if f is not None and f[0] == "s" and f[2] is True:
                return None
            return s.with_changes(test=s.test.visit(_Subst(self.alias)))
        if isinstance(s, (cst.Return, cst.Expr)):
            return s.visit(_Subst(self.alias))  # type: ignore[return-value]
        if not isinstance(s, cst.Assign):
            raise _Unsupported
        value = s.value.visit(_Subst(self.alias))
        assert isinstance(value, cst.BaseExpression)
        if len(s.targets) != 1 or not isinstance(s.targets[0].target, cst.Name):
            return s.with_changes(value=value)
        t = s.targets[0].target.value
        if self.facts.get(t) is None:
            return s.with_changes(value=value)
        self.single = self.once(t)  # (bound again later: no alias or fact noted for it, its value rewritten)
        new = self.assign(t, value)
        if new is None or (isinstance(new, cst.Name) and new.value == t):  # (`x = x` binds nothing new)
            return None
        return s.with_changes(value=new)

    def assign(self, t: str, e: cst.BaseExpression) -> cst.BaseExpression | None:
        ft = self.facts[t]
        assert ft is not None
        lit = _literal(ft) if ft[0] == "s" else None
        if lit is not None:  # a number, shape or dtype: read as itself
            if self.single:
                self.alias[t] = lit
            return e
        if isinstance(e, cst.Name) and self.single and self.once(e.value):  # a copy
            self.alias[t] = e.value
            return None
        if isinstance(e, cst.Call) and isinstance(e.func, cst.Name) and e.func.value == "in_place" and \
                len(e.args) > 1 and (new := _atom(e.args[1].value)) is not None and self.facts.get(new) == ft:
            return self.same_as(t, new)  # (`w += v` that keeps the new value's dtype and shape, batched or not)
        if isinstance(e, cst.Call) and isinstance(e.func, cst.Name) and all(a.keyword is None for a in e.args):
            return self.call(t, ft, e.func.value, [a.value for a in e.args], e)
        if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus):
            x = _atom(e.expression)
            if x is not None and self.once(x):
                y = self.neg.get(x)
                if y is not None and self.fact(y) == ft:
                    return self.same_as(t, y)
                if self.single:
                    self.neg[t] = x
                sc = self.scalar.get(x)
                if sc is not None:
                    self.note(t, _Scalar(f"-{sc.shown()}", sc.stand_in, None if sc.const is None else -sc.const))
            return e
        if isinstance(e, cst.BinaryOperation) and type(e.operator) in _ARITH:
            return self.binop(t, ft, _ARITH[type(e.operator)], e)
        return e

    def call(self, t: str, ft: Fact, fn: str, args: list[cst.BaseExpression], e: cst.Call) -> cst.BaseExpression | None:
        names = [_atom(a) for a in args]
        done = specialized_batch.rewrite_call(fn, args, ft, self.fact)
        if done is not None:
            kind, text = done
            return self.same_as(t, text) if kind == "same" and self.once(text) else cst.parse_expression(text)
        if fn == "ones_like" and len(args) == 1 and ft[0] == "a" and ft[2].kind == "f":
            if self.single:
                self.ones.add(t)
            if _strong_f64(ft):
                self.note(t, _Scalar("1.0", True, 1.0))
            elif ft[2] in _TYPED and not ft[3]:  # a float32 (float16) one: the typed constant
                one = ft[2].type(1)
                self.note(t, _Scalar(repr(one), False, one))
            return e
        if fn in ("unbroadcast", "expand_reduced") and names and names[0] is not None and \
                self.facts.get(names[0]) is not None:  # (every binding of g has this value: bound again or not)
            g = names[0]
            fg = self.facts[g]
            assert fg is not None
            if fg == ft:
                return self.same_as(t, g)
            kept = len(args) == 4 and isinstance(args[3], cst.Name) and args[3].value == "True" and \
                fg[0] == "a" and ft[0] == "a" and len(fg[1]) == len(ft[1]) and \
                all(d in (1, n) for d, n in zip(fg[1], ft[1]))  # (keepdims: it broadcasts as it is)
            if fn == "expand_reduced" and fg[0] == "a" and ft[0] == "a" and (fg[1] == () or kept) \
                    and fg[2:] == ft[2:]:
                self.note(t, self.scalar.get(g) or _Scalar(g))
                return e
            sg = self.scalar.get(g)
            if fn == "expand_reduced" and sg is not None and (sg.stand_in and _strong_f64(ft) or (
                    isinstance(sg.const, np.floating) and sg.const.dtype == ft[2] and not ft[3])):  # a constant
                self.note(t, sg)
                return e
            if fn == "unbroadcast" and fg[0] == "a" and ft[0] == "a" and fg[2:] == ft[2:] and not ft[3] \
                    and ft[2].kind == "f":
                summed = _summed(fg[1], ft[1])
                if summed is not None:
                    return cst.parse_expression(f"np.sum({g}, {summed})")
        return e

    def operand(self, e: cst.BaseExpression) -> tuple[str | None, Fact | None, _Scalar | None]:
        """(name, fact, scalar form) of an operand; a number is a scalar form with a static fact."""
        n = _number(e)
        if n is not None:
            return None, ("s", type(n), n), _Scalar(_CODE.code_for_node(e), False, n)
        name = _atom(e)
        return name, self.fact(name), self.scalar.get(name) if name is not None and self.once(name) else None

    def binop(self, t: str, ft: Fact, op: str, e: cst.BinaryOperation) -> cst.BaseExpression | None:
        a, fa, sa = self.operand(e.left)
        b, fb, sb = self.operand(e.right)
        if ft[0] != "a" or fa is None or fb is None:
            return e
        # x * ones, ones * x, x * 1.0, x / 1.0 (x with the result's value): x
        for x, fx, other, so in ((a, fa, b, sb), (b, fb, a, sa)):
            if x is None or fx != ft:
                continue
            if op == "*" and (other in self.ones or (so is not None and so.const == 1.0 and other is not None)):
                return self.same_as(t, x)
            if (op == "*" or (op == "/" and x == a)) and so is not None and so.const == 1.0 and other is None \
                    and ft[2].kind == "f":
                return self.same_as(t, x)
            if op == "*" and so is not None and so.const == -1.0 and ft[2].kind == "f" and \
                    (other is None or self.once(other)):  # x * -1.0: -x (negation is exact)
                return cst.parse_expression(f"-{x}")
        # both operands broadcast 0-d values: so is the result (the statement stays, its scalar form is noted)
        if sa is not None and sb is not None:
            both = self.combine(op, fa, sa, fb, sb, ft)
            if both is not None:
                self.note(t, both)
            return e
        # one broadcast 0-d value meets a full-shaped operand of the result's shape: the 0-d value
        for s, fs, x, fx, left in ((sa, fa, b, fb, True), (sb, fb, a, fa, False)):
            if s is None or x is None or fx is None or fx[0] != "a" or fx[1] != ft[1] or fs[0] != "a":
                continue
            if s.stand_in and not (_strong_f64(fx) and _strong_f64(ft)):
                continue
            lhs, rhs = (s.shown(), x) if left else (x, s.shown())
            return cst.parse_expression(f"{lhs} {op} {rhs}")
        return e

    def combine(self, op: str, fa: Fact, sa: _Scalar, fb: Fact, sb: _Scalar, ft: Fact) -> _Scalar | None:
        """The scalar form of ``a op b`` for two scalar forms, or None."""
        if op == "/" and sb.const == 0:
            return None
        text = f"{sa.shown()} {op} {sb.shown()}"
        if isinstance(sa.const, np.floating) or isinstance(sb.const, np.floating):  # a typed constant
            if sa.const is None or sb.const is None:
                return _Scalar(text)
            with np.errstate(all="ignore"):
                typed = {"*": lambda x, y: x * y, "+": lambda x, y: x + y, "-": lambda x, y: x - y,
                         "/": lambda x, y: x / y}[op](sa.const, sb.const)
            if not isinstance(typed, np.floating) or typed.dtype != ft[2] or ft[3] or not np.isfinite(typed):
                return None
            return _Scalar(repr(typed), False, typed)
        if sa.const is not None and sb.const is not None:  # numbers only: a stand-in and a number
            if not _strong_f64(ft):
                return None
            c = {"*": lambda x, y: x * y, "+": lambda x, y: x + y, "-": lambda x, y: x - y,
                 "/": lambda x, y: x / y}[op](float(sa.const), float(sb.const))
            return _Scalar(text, True, c)
        for s, other in ((sa, fb), (sb, fa)):  # a stand-in meets a float64 of its own dtype
            if s.stand_in and not (_strong_f64(other) and _strong_f64(ft)):
                return None
        return _Scalar(text)


class _Pure(Visitor):
    def __init__(self, pure_calls: set[str]) -> None:
        self.pure_calls, self.ok = pure_calls, True

    def visit_Call(self, node: cst.Call) -> None:
        f = node.func
        while isinstance(f, cst.Attribute):
            f = f.value
        root = f.value if isinstance(f, cst.Name) else None
        if not (isinstance(node.func, cst.Attribute) and root == "np") and \
                not (isinstance(node.func, cst.Name) and node.func.value in self.pure_calls):
            self.ok = False

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.ok = False


def _pure(e: cst.CSTNode, pure_calls: set[str]) -> bool:
    v = _Pure(pure_calls)
    v.walk(e)
    return v.ok


def _params(fdef: cst.FunctionDef) -> list[str]:
    p = fdef.params
    star = [a for a in (p.star_arg, p.star_kwarg) if isinstance(a, cst.Param)]
    return [a.name.value for a in [*p.posonly_params, *p.params, *p.kwonly_params, *star]]


def _reads(node: cst.CSTNode) -> set[str]:
    from ..frontend.names import names_in

    return set(names_in(node, skip_targets=True))


def _bindings(stmts: list[Any], binds: Counter[str], unrecorded: set[str], top: bool) -> None:
    """Count the bindings of each name in ``stmts`` (nested blocks and functions included) into
    ``binds``: a top-level ``name = ...`` once, any other binding twice (a name bound in a block
    may be bound again each time it runs, and is never an alias). ``unrecorded``: names bound in a
    way the recorder does not see (``for`` targets, parameters of nested functions, augmented
    assignments): their facts would not hold there."""
    v = _Bindings(binds, unrecorded, top)
    for st in stmts:
        v.walk(st)


class _Bindings(Visitor):
    """:func:`_bindings`' walk (read-only: libcst's own visitor rebuilt every node it passed)."""

    def __init__(self, binds: Counter[str], unrecorded: set[str], top: bool) -> None:
        self.binds, self.unrecorded, self.top = binds, unrecorded, top

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        if isinstance(node.target, cst.Name):
            return False
        for n in (node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]):
            t = n.value if isinstance(n, cst.Element) else n
            if isinstance(t, (cst.Name, cst.Tuple, cst.List, cst.StarredElement)):
                for m in target_names(t):  # (noted by the recorder once bound)
                    self.binds[m] += 1 if self.top and isinstance(t, cst.Name) else 2
            else:
                self.binds.update(_reads(t))
        return False

    def visit_For(self, node: cst.For) -> None:
        for m in target_names(node.target):
            self.binds[m] += 2
            self.unrecorded.add(m)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        for m in [node.name.value, *_params(node)]:
            self.binds[m] += 2
            self.unrecorded.add(m)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        for m in target_names(node.target):
            self.binds[m] += 2
            self.unrecorded.add(m)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        raise _Unsupported

    def visit_Global(self, node: cst.Global) -> None:
        raise _Unsupported

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        raise _Unsupported

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            if isinstance(t.target, cst.Name):
                self.binds[t.target.value] += 1 if self.top else 2


class _Block:
    """The statements of a function rewritten: its top level and, inside loops, branches on data
    and nested functions, each simple statement as at the top level. A name bound inside a block
    is bound twice for the rewriter (no alias, no scalar form: it may be bound again each time the
    block runs), so what crosses a block's boundary is only an alias or scalar form of top-level
    names bound once, which hold wherever those names are read after their binding."""

    def __init__(self, rw: _Rewriter) -> None:
        self.rw = rw

    def block(self, stmts: list[Any]) -> list[Any]:
        out: list[Any] = []
        for st in stmts:
            if isinstance(st, cst.SimpleStatementLine):
                if len(st.body) != 1:
                    raise _Unsupported
                small = st.body[0]
                if isinstance(small, (cst.Pass, cst.Break, cst.Continue)):
                    out.append(st)
                    continue
                new = self.rw.statement(small)
                if new is not None:
                    out.append(st.with_changes(body=[new]))
            else:
                out.append(self.compound(st))
        return out

    def body(self, b: Any) -> Any:
        stmts = self.block(list(b.body))
        return b.with_changes(body=stmts or [cst.SimpleStatementLine([cst.Pass()])])

    def expr(self, e: cst.BaseExpression) -> cst.BaseExpression:
        out = e.visit(_Subst(self.rw.alias))
        assert isinstance(out, cst.BaseExpression)
        return out

    def compound(self, st: Any) -> Any:
        if isinstance(st, cst.If):
            orelse = st.orelse
            if isinstance(orelse, cst.Else):
                orelse = orelse.with_changes(body=self.body(orelse.body))
            elif isinstance(orelse, cst.If):
                orelse = self.compound(orelse)
            return st.with_changes(test=self.expr(st.test), body=self.body(st.body), orelse=orelse)
        if isinstance(st, (cst.For, cst.While)):
            if st.orelse is not None:
                raise _Unsupported
            if isinstance(st, cst.For):
                if st.asynchronous is not None:
                    raise _Unsupported
                return st.with_changes(iter=self.expr(st.iter), body=self.body(st.body))
            return st.with_changes(test=self.expr(st.test), body=self.body(st.body))
        if isinstance(st, cst.FunctionDef):
            if st.decorators or st.asynchronous is not None or any(
                    p.default is not None for p in [*st.params.params, *st.params.kwonly_params]):
                raise _Unsupported
            return st.with_changes(body=self.body(st.body))
        raise _Unsupported


def _decided_deep(stmts: list[Any], ways: dict[int, set[str]]) -> list[Any]:
    """:func:`_decided` in every block too (loops, branches on data, nested functions)."""
    out = []
    for st in _decided(stmts, ways):
        if isinstance(st, (cst.For, cst.While, cst.FunctionDef)):
            st = st.with_changes(body=st.body.with_changes(body=_decided_deep(list(st.body.body), ways)))
        elif isinstance(st, cst.If):
            st = _if_decided(st, ways)
        out.append(st)
    return out


def _if_decided(st: cst.If, ways: dict[int, set[str]]) -> cst.If:
    orelse = st.orelse
    if isinstance(orelse, cst.Else):
        orelse = orelse.with_changes(body=orelse.body.with_changes(body=_decided_deep(list(orelse.body.body), ways)))
    elif isinstance(orelse, cst.If):
        orelse = _if_decided(orelse, ways)
    return st.with_changes(body=st.body.with_changes(body=_decided_deep(list(st.body.body), ways)), orelse=orelse)


def rewrite(fdef: cst.FunctionDef, facts: dict[str, Fact | None], ways: dict[int, set[str]],
            pure_calls: set[str]) -> cst.FunctionDef | None:
    """``fdef`` (a normalized function) rewritten for the values of its names (``facts``) and the
    ways its ``if``s went; None where it has a statement this pass does not read."""
    stmts = _decided_deep(list(fdef.body.body), ways)
    binds: Counter[str] = Counter(_params(fdef))  # (a parameter bound again is bound twice)
    unrecorded: set[str] = set()
    try:
        for st in stmts:
            if isinstance(st, cst.SimpleStatementLine):
                _bindings([st], binds, unrecorded, top=True)
            else:
                _bindings([st], binds, unrecorded, top=False)
        facts = {k: (None if k in unrecorded else v) for k, v in facts.items()}
        rw = _Rewriter(facts, binds)
        out = _Block(rw).block(stmts)
    except _Unsupported:
        return None
    # dead code: a pure top-level binding of a name nothing reads any more (what a block or a nested
    # function reads is live everywhere: a block may run again, a function may be called later)
    live: set[str] = set()
    for st in out:
        if not isinstance(st, cst.SimpleStatementLine):
            live |= _reads(st)
    kept: list[Any] = []
    for st in reversed(out):
        small = st.body[0] if isinstance(st, cst.SimpleStatementLine) else None
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
                and small.targets[0].target.value not in live and _pure(small.value, pure_calls):
            continue
        live |= _reads(st)
        kept.append(st)
    kept.reverse()
    return fdef.with_changes(body=fdef.body.with_changes(body=kept))


# -- the module printed -----------------------------------------------------------------------------


def modules_for(program: Any, rec: Record, generic: str, form: str) -> list[str]:
    """``generic`` (the module ``srcjax.source`` prints) with each function it shows rewritten for what
    ``rec`` found: for ``form="readable"`` folded and tidied, folded, then as rewritten (the first
    that lowers to the generic program's XLA program is the one shown); empty if none changes."""
    import ast

    from ..frontend.read import function_texts
    from . import readable
    from .anf import ADJOINT_IMPORTS
    from .batch import BATCHED_IMPORTS

    pure = set(ADJOINT_IMPORTS) | set(BATCHED_IMPORTS)
    pure |= specialized_batch.PURE_BUILTINS | specialized_batch.pure_functions(program, pure)
    shown = {n.name: n for n in ast.parse(generic).body if isinstance(n, ast.FunctionDef)}
    written: dict[str, str] = {}
    for nf in program.functions.values():
        if nf.name in shown and nf.fdef.name.value == nf.name:
            fdef = rewrite(nf.fdef, rec.facts.get(nf.name, {}), rec.ways, pure)
            if fdef is not None:
                written[nf.name] = _CODE.code_for_node(fdef.with_changes(leading_lines=[], decorators=[]))
    if not written:
        return []
    variants = [written]
    if form == "readable":
        keep = _user_names(program)
        folded = [function_texts(readable.readable_source(
            "import numpy as np\n\n\n" + "\n\n".join(written.values()), pure, keep, tidy)) for tidy in (True, False)]
        variants = [{k: f.get(k, v) for k, v in written.items()} for f in folded] + variants
    lines = generic.splitlines(True)
    out: list[str] = []
    for texts in variants:
        edits = sorted((shown[k].lineno - 1, shown[k].end_lineno or 0, v)  # (its decorators stay as shown)
                       for k, v in texts.items())
        parts, at = [], 0
        for start, end, text in edits:
            parts += ["".join(lines[at:start]), text.rstrip("\n") + "\n"]
            at = end
        module = _imports_used(specialized_batch.without_unused("".join(parts) + "".join(lines[at:]), generic))
        if module not in out:
            out.append(module)
    return out


def _user_names(program: Any) -> frozenset[str]:
    """The names the user wrote (kept as written by the folding): those of the differentiated function."""
    from ..frontend.names import names_in
    from ..frontend.program import Program
    from .readable import user_names

    derived = getattr(program.entry.fn, "__srcjax_derived__", None)
    if derived is not None:
        try:
            return user_names(Program(derived[1]))
        except Exception:  # (the names are for reading only: the parameters are enough)
            return frozenset(names_in(program.entry.fdef.params))
    return user_names(program)


def _imports_used(text: str) -> str:
    """``text`` without the names of its ``from srcjax... import`` lines that it no longer reads."""
    out = []
    for line in text.splitlines(True):
        m = re.match(r"from (srcjax\.\w+) import (.*)\n", line)
        if m:
            rest = text.replace(line, "")
            names = [n for n in m.group(2).split(", ")
                     if re.search(rf"(?<![\w.]){re.escape(n.split(' as ')[-1])}(?!\w)", rest)]
            if not names:
                continue
            line = f"from {m.group(1)} import {', '.join(names)}\n"
        m = re.match(r"import (srcjax|math)\n", line)
        if m and not re.search(rf"(?<![\w.]){m.group(1)}\.", text.replace(line, "")):
            continue
        out.append(line)
    text = "".join(out)
    for mod in ("srcjax", "math"):  # (the specialized body may call what the generic one did not:
        # `srcjax.lax.fori_loop` of a loop the lowering rewrote with an exit on data made a flag)
        if not re.search(rf"^import {mod}$", text, re.M) and \
                re.search(rf"(?<![\w.]){mod}\.", re.sub(r"^(from|import) .*$", "", text, flags=re.M)):
            at = m.end() if (m := re.search(r"^import numpy as np\n", text, re.M)) else 0
            text = text[:at] + f"import {mod}\n" + text[at:]
    return text
