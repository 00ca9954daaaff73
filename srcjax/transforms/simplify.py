"""Simplify generated source: copy propagation, common subexpressions, dead code, and folding
of helpers and ones/zeros that a symbolic shape/dtype analysis proves to be identities.

Input and output: the Python source of generated functions (a module text). The text is
read with :mod:`ast` (no libcst: this pass runs on every derivative written) and edited in
place by source positions, so statements that do not change keep their text exactly.

Only straight-line statements at the top level of a function are folded, deleted or used as
definitions, and only names bound once in the whole function are propagated or removed, so
control flow and the tape (``_tape.append``/``pop``) are never reordered:

- copy propagation: ``a = b`` (both names, each bound once) -> uses of ``a`` read ``b``;
- common subexpressions: a second ``b = <e>`` for the same pure ``<e>`` -> uses of ``b`` read ``a``;
- dead code: ``a = <pure expression>`` (or ``a = []``, a new list: never merged) whose ``a`` is never read is
  dropped (a straight-line VJP's ``_tape = []``); so is one binding of a name
  bound several times, each time by a top-level ``a = <e>`` (no nested scope in the function), that
  nothing reads before the next binding (a JVP's primal output its tangent-only form drops);
- folding (below) -> then the statement may become a copy, or dead.

A call is pure when it calls ``np.*`` or a :mod:`srcjax.adjoint` helper (``pure_calls``);
calls to other functions (forward halves that push on a tape) are kept. ``in_place`` is a check
made while specializing (``simplify_syntax.checks``): pure only without ``alias=`` and where the
new value provably has the array's shape and dtype.

Folding must hold for *every* shape and dtype the function accepts (no example arguments are
known), so each top-level value gets a symbolic description (:class:`Fact`), computed in one
forward pass over the statements:

- ``shape``: a set of atoms whose broadcast is the value's ``np.shape``. A parameter, or
  anything not understood, is a fresh atom; elementwise operators and ufuncs take the union
  of their operands' sets (broadcasting is associative, commutative and idempotent); a number
  and a full reduction (``np.sum(x)``) are the empty set (shape ``()``); ``np.max(x, 1,
  keepdims=True)`` is an atom that ``x``'s own shape absorbs (``x - m`` has ``x``'s shape);
  ``x[1:]`` and ``x[:-1]`` are the same atom (``x[np.s_[1:]]`` and ``x[getitem]`` of a name bound once
  to ``np.s_[1:]`` too); a tangent parameter ``alike`` its primal has the primal's shape and family.
  Equal sets prove equal shapes.
- ``dtype``: ``(id, inexact, strong)``; equal ids prove the same dtype *and* NEP 50 weakness
  (a Python float stays weak, ``np.tanh`` of it is a strong float64). Only rules that hold
  for every dtype keep an id: ``a * 2`` keeps ``a``'s for floating ``a`` (an integer ``a``
  times ``2.0`` is float64), ``np.sum`` keeps a strong floating dtype, ``ones_like(x)`` has
  ``x``'s dtype only for strong floating ``x`` (``np.result_type(x, 0.0)``).
- ``family``: values of one family have the same dtype *whenever both are floating point*
  (what ``unbroadcast`` needs: it casts a floating ``g`` to a floating ``x``'s dtype). A
  family holds at least the values of one dtype id, and grows only by rules that keep it
  for every dtype: ``a * 2.0``, ``a / 3``, ``-a``, ``a + b`` of one family, ``ones_like(a)``,
  ``np.sum(a)``, ``np.where(c, a, 0.0)`` (a floating ``a`` keeps its dtype; from an integer
  ``a`` every floating result is float64), ``np.tanh(a)`` for floating ``a``. ``np.tanh(a)``
  of any ``a`` is of the family ``("float_of", a's dtype id)``, which ``np.tanh(a) + a`` keeps.
- ``numeric``: an array or number (not a tuple: ``t + t`` concatenates), ``const``: every
  element is 0, 1 or -1 (``ones_like``, ``zeros_like``, ``expand_reduced`` of them, ``-``).

Rewrites (each returns exactly what the helper would return, or the same values with the
same shape, dtype and weakness):

- ``unbroadcast(g, x)``, ``broadcast_like(g, x)`` -> ``g`` when the shapes are provably equal
  and ``g`` is of ``x``'s family (the helpers return ``g`` itself then: no cast);
- ``g * ones``, ``ones * g`` -> ``g`` (``-g`` for minus ones), ``g + zeros``, ``zeros + g``,
  ``g - zeros`` -> ``g``: ``g`` a strong array of the same dtype id, ``ones`` of ``g``'s shape
  or of shape ``()``;
- ``expand_reduced(ones, x, ...)`` -> ``ones_like(x)`` (also minus ones and zeros), and
  ``unbroadcast(ones, x)`` for ``ones`` of ``x``'s shape, when both are floating point (the helper
  casts to ``x``'s dtype, ``ones_like(x)``'s; a cast of 1, -1 or 0 is exact);
- ``ones * k * b`` -> ``k * b`` for a number ``k`` and ``ones`` of ``b``'s dtype id (strong floating);
- shape sources: a helper's argument read only for its shape and dtype (``unbroadcast(g, t)``,
  ``broadcast_like``, ``expand_reduced``, ``ones_like``, ``zeros_like``) or only for its shape
  (``reduced_size(t, ...)``) is read from another name bound once to a value of the same shape set
  and dtype id (or, both floating point, the same family and weakness: the helpers cast to a
  floating argument's dtype), when ``t`` is read at most once for its value and the other name
  more than once (or is a parameter, or the user's): ``ones_like(pow_1)`` -> ``ones_like(sub)``
  for ``pow_1 = sub ** 2``, so ``pow_1`` has one use left and :mod:`.readable` folds it.

Everything else is left as it is. Facts are forgotten where a statement could change them
(compound statements rebind, calls to other functions may write into arrays).
"""

from __future__ import annotations

import ast
import itertools
from collections import Counter
from functools import cache, lru_cache
from typing import Any, NamedTuple

from ..frontend import provenance
from ..frontend.ast_walk import exact_kinds, target_names, walked
from ..frontend.parsed import parse
from ..primitives import registry
from .dead_nested import drop_dead_nested
from .simplify_dead import Stmt, dead_code, rebound
from .simplify_syntax import (  # (simplify's own syntax helpers, in their own file for length: private to the pair)
    _SCOPE_KINDS,
    SHAPE_ARGS,
    _binds,
    _container,
    _literal,
    _none_false,
    _np_s,
    _slice_delta,
    _slices_only,
    _value_reads,
    checks,
)

_ATOM = 100
_BINPREC: dict[type, int] = {ast.Pow: 16, ast.Mult: 14, ast.MatMult: 14, ast.Div: 14, ast.FloorDiv: 14,
                             ast.Mod: 14, ast.Add: 13, ast.Sub: 13, ast.LShift: 12, ast.RShift: 12,
                             ast.BitAnd: 11, ast.BitXor: 10, ast.BitOr: 9}
_NUMBERS = {int: ("pyint", False), float: ("pyfloat", True)}
_BUILDS = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp, ast.Lambda,
           ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr)
_SIMPLE = (ast.Assign, ast.Expr, ast.Return, ast.Assert, ast.AugAssign)
_BUILD_KINDS, _GLOBALS = exact_kinds(*_BUILDS), exact_kinds(ast.Global, ast.Nonlocal)  # (for exact-type tests)


def _empty_list(node: ast.expr) -> bool:
    return type(node) is ast.List and not node.elts  # type: ignore[attr-defined]

_ids = itertools.count()


class Fact(NamedTuple):
    """What is known of a value: see the module docstring."""
    shape: frozenset[Any]
    dtype: tuple[Any, bool, bool]  # (id, inexact, strong)
    numeric: bool = False
    const: int | None = None
    family: Any = None  # None: the dtype id (see the module docstring)
    scaled: str | None = None  # "k": a 0-d value k * ones (a number k times a 0-d all-ones value)


def _fam(f: Fact) -> Any:
    """``f``'s family: values of one family have one dtype whenever both are floating point."""
    return f.dtype[0] if f.family is None else f.family


def _fresh(numeric: bool = False, inexact: bool = False, strong: bool = False) -> Fact:
    n = next(_ids)
    return Fact(frozenset({n}), (n, inexact, strong), numeric)


def _fresh_dtype(inexact: bool, strong: bool) -> tuple[Any, bool, bool]:
    return (next(_ids), inexact, strong)


def _union(a: frozenset[Any], b: frozenset[Any]) -> frozenset[Any]:
    """The broadcast of two shapes: keepdims reductions of a shape in the set are absorbed."""
    if a == b or not b:
        return a
    if not a:
        return b
    s = a | b
    drop = [t for t in s if type(t) is tuple and t[0] == "keep" and t[1] <= s]
    return s.difference(drop) if drop else s


class R(NamedTuple):
    """An expression after renaming and folding."""
    fact: Fact
    edits: list[tuple[int, int, str]]  # (start, end, text) replacements inside the expression
    prec: int  # precedence of the (possibly replaced) expression
    reads: list[str]
    pure: bool
    name: str | None = None  # the expression is (now) just this name


class _Unsafe(Exception):
    """A function this pass does not edit."""


class _Text:
    """Offsets into the module text from ast positions (``col_offset`` counts UTF-8 bytes)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        i = text.find("\n")
        while i >= 0:
            self.starts.append(i + 1)
            i = text.find("\n", i + 1)
        self.ascii = text.isascii()

    def off(self, line: int, col: int) -> int:
        start = self.starts[line - 1]
        if self.ascii:
            return start + col
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        return start + len(self.text[start:end].encode()[:col].decode(errors="ignore"))

    def span(self, node: Any) -> tuple[int, int]:
        return self.off(node.lineno, node.col_offset), self.off(node.end_lineno, node.end_col_offset)

    def render(self, start: int, end: int, edits: list[tuple[int, int, str]]) -> str:
        if not edits:
            return self.text[start:end]
        out = []
        pos = start
        for s, e, t in sorted(edits):
            out.append(self.text[pos:s])
            out.append(t)
            pos = e
        out.append(self.text[pos:end])
        return "".join(out)


def _prec(node: ast.AST) -> int:
    kind = node.__class__  # (exact types, as parsed: no isinstance call a node)
    if kind is ast.BinOp:
        return _BINPREC[type(node.op)]  # type: ignore[attr-defined]
    if kind is ast.UnaryOp:
        return 7 if node.op.__class__ is ast.Not else 15  # type: ignore[attr-defined]
    if kind is ast.BoolOp:
        return 6 if node.op.__class__ is ast.And else 5  # type: ignore[attr-defined]
    return _PREC.get(kind, _ATOM)


_PREC = {ast.Compare: 8, ast.IfExp: 4, ast.Lambda: 0, ast.Tuple: 0, ast.Starred: 0, ast.NamedExpr: 0}


class _Function:
    def __init__(self, fdef: ast.FunctionDef, t: _Text, pure_calls: set[str],
                 floats: frozenset[str] = frozenset(), keep: frozenset[str] = frozenset(),
                 alike: tuple[tuple[str, str], ...] = ()) -> None:
        self.fdef = fdef
        self.keep = keep
        self.t = t
        self.binds = _binds(fdef)
        binds = self.binds  # (a Counter: `in` first, no __missing__ call for each helper never bound here)
        self.helpers = {n for n in pure_calls if n not in binds or binds[n] == 0}
        self.np_ok = self.binds["np"] == 0
        self.subst: dict[str, str] = {}
        self.facts: dict[str, Fact] = {}
        # names a nested function may rebind: nothing is known of them
        self.volatile = {n for s in walked(fdef) if type(s) in _GLOBALS for n in s.names}  # type: ignore[attr-defined]
        # (shape, dtype id) -> the names bound once to a value of that shape and dtype: a helper that
        # reads only an argument's shape (and dtype) reads it from one that stays alive anyway
        # (``ones_like(sub)`` rather than ``ones_like(pow_1)``), so the temporary can be folded
        self.shape_src: dict[tuple[Any, ...], list[str]] = {}
        self.value_reads = _value_reads(fdef)
        self.params = {p.arg for p in fdef.args.args}
        for p in fdef.args.args:
            self.facts[p.arg] = _fresh(inexact=p.arg in floats)
            self._shape_source(p.arg, True)
        self.slices: dict[str, ast.expr] = {}  # a name bound once to `np.s_[<index>]` -> that index
        for t_, p_ in alike:  # (a tangent of its primal's shape, of its dtype whenever both are floating point)
            if t_ in self.facts and p_ in self.facts:
                self.facts[t_] = Fact(self.facts[p_].shape, _fresh_dtype(True, True), family=_fam(self.facts[p_]))

    # -- names -------------------------------------------------------------------------------------

    def _name(self, n: str) -> str:
        return self.subst.get(n, n)

    def _rename(self, node: ast.Name, new: str) -> tuple[int, int, str]:
        s, e = self.t.span(node)
        if self.t.text[s:e] != node.id:  # positions inside an f-string may be off: leave the function
            raise _Unsafe
        return (s, e, new)

    def _shape_source(self, n: str, param: bool = False) -> None:
        f = self.facts[n]
        # (a parameter not known to be numeric is a fresh shape no other value has, except values
        # computed from it elementwise, which srcjax writes only for arrays and numbers)
        if (f.numeric or param) and self.binds[n] <= 1 and n not in self.volatile:
            for key in _shape_keys(f):
                self.shape_src.setdefault(key, []).append(n)

    def _shape_arg(self, r: R, node: ast.expr, shape_only: bool) -> R:
        """``r`` (an argument read only for its shape and dtype, or only its shape) as a name bound
        to a value of provably the same shape (and dtype, when it is read) that stays alive anyway."""
        if not isinstance(node, ast.Name) or r.name is None or not r.fact.numeric or self.value_reads[r.name] > 1 \
                or r.name in self.keep:
            return r  # (read twice for its value, or the user's: it stays)
        keys = _shape_keys(r.fact)[-1:] if shape_only else _shape_keys(r.fact)[:-1]
        src = next((n for k in keys for n in self.shape_src.get(k, [])
                    if self.value_reads[n] > 1 or n in self.keep or n in self.params), None)
        if src is None or src == r.name:
            return r
        return R(self.facts[src], [self._rename(node, src)], _ATOM, [src], True, src)

    def _fact(self, n: str) -> Fact:
        f = self.facts.get(n)
        if f is None or n in self.volatile:
            f = self.facts[n] = _fresh()
        return f

    def _generic(self, node: ast.AST) -> R:
        """Rename only: any expression (or the target of an augmented assignment)."""
        edits: list[tuple[int, int, str]] = []
        reads: list[str] = []
        pure = True
        for n in walked(node):  # (exact types: no class derives from these)
            kind = type(n)
            if kind is ast.Name:
                if type(n.ctx) is ast.Store and not isinstance(node, ast.Name):  # type: ignore[attr-defined]
                    continue
                new = self.subst.get(n.id)  # type: ignore[attr-defined]
                if new is not None:
                    edits.append(self._rename(n, new))  # type: ignore[arg-type]
                reads.append(new or n.id)  # type: ignore[attr-defined]
            elif kind is ast.AugAssign and type(n.target) is ast.Name:  # type: ignore[attr-defined]
                reads.append(self._name(n.target.id))  # type: ignore[attr-defined]
            elif kind is ast.Call:
                pure = pure and self._callee(n.func) is not None and not checks(n)  # type: ignore[attr-defined,arg-type]
            elif kind in _BUILD_KINDS:
                pure = False  # distinct objects each time: never merged or dropped
        name = node.id if isinstance(node, ast.Name) else None
        return R(_fresh(), edits, _prec(node), reads, pure, name and self._name(name))

    def _callee(self, func: ast.expr) -> str | None:
        """``np.<...>`` or a helper name, when the call is pure; else None."""
        if isinstance(func, ast.Name):
            return func.id if func.id in self.helpers else None
        parts = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if isinstance(func, ast.Name) and func.id == "np" and self.np_ok and parts and parts[-1] != "random":
            return "np." + ".".join(reversed(parts))
        return None

    # -- expressions ---------------------------------------------------------------------------------

    def expr(self, node: ast.expr, need: int) -> R:
        kind = node.__class__  # (exact types, as parsed: no isinstance call a node)
        if kind is ast.Name:
            n = self._name(node.id)  # type: ignore[attr-defined]
            edits = [] if n == node.id else [self._rename(node, n)]  # type: ignore[attr-defined,arg-type]
            return R(self._fact(n), edits, _ATOM, [n], True, n)
        if kind is ast.Constant:
            number = _NUMBERS.get(type(node.value))  # type: ignore[attr-defined]
            if number is None:
                return R(_fresh(), [], _ATOM, [], True)
            return R(Fact(frozenset(), (number[0], number[1], False), True), [], _ATOM, [], True)
        if kind is ast.BinOp:
            return self._binop(node, need)  # type: ignore[arg-type]
        if kind is ast.Call:
            return self._call(node, need)  # type: ignore[arg-type]
        if kind is ast.Subscript:
            return self._subscript(node)  # type: ignore[arg-type]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            r = self.expr(node.operand, 15)
            f = r.fact
            dt = f.dtype if f.dtype[1] else _fresh_dtype(False, f.dtype[2])
            const = f.const if f.const is None or isinstance(node.op, ast.UAdd) else -f.const
            return R(Fact(f.shape, dt, True, const, _fam(f)), r.edits, 15, r.reads, r.pure)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
                not isinstance(node.ops[0], (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
            a, b = self.expr(node.left, 9), self.expr(node.comparators[0], 9)
            fa, fb = a.fact, b.fact
            if isinstance(node.ops[0], (ast.Eq, ast.NotEq)):  # tuple == tuple is one bool
                ok = fa.dtype[2] or fb.dtype[2] or (fa.numeric and fb.numeric)
            else:  # a number and a tuple do not compare; tuples do, lexicographically
                ok = fa.numeric or fb.numeric
            strong = fa.dtype[2] or fb.dtype[2]
            f = Fact(_union(fa.shape, fb.shape), _fresh_dtype(False, strong), True) if ok else _fresh()
            return R(f, a.edits + b.edits, 8, a.reads + b.reads, a.pure and b.pure)
        return self._generic(node)

    def _binop(self, node: ast.BinOp, need: int) -> R:
        op = type(node.op)
        p = _BINPREC[op]
        a = self.expr(node.left, 17 if op is ast.Pow else p)
        b = self.expr(node.right, 15 if op is ast.Pow else p + 1)
        fa, fb = a.fact, b.fact
        edits, reads, pure = a.edits + b.edits, a.reads + b.reads, a.pure and b.pure
        da, db = fa.dtype, fb.dtype
        strong = da[2] or db[2]
        if _container(node.left) or _container(node.right):
            numeric = False
        elif op is ast.Add:  # tuple + tuple concatenates; a number + a tuple is an error
            numeric = fa.numeric or fb.numeric
        elif op in (ast.Mod, ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift):
            numeric = strong or (fa.numeric and fb.numeric)
        else:
            numeric = True  # srcjax refuses -, *, /, **, //, @ of containers
        if not numeric:
            return R(_fresh(), edits, p, reads, pure)
        # identities: g * ones, g + zeros, ...
        folded = None
        if op is ast.Mult:
            folded = self._identity(a, b, node.left, 1) or self._identity(b, a, node.right, 1) or \
                self._scaled_ones(node, b)
        elif op is ast.Add:
            folded = self._identity(a, b, node.left, 0) or self._identity(b, a, node.right, 0)
        elif op is ast.Sub:
            folded = self._identity(a, b, node.left, 0) or self._identity(b, a, node.right, 0, negate=True)
        if folded is not None:
            return self._fold(node, folded, need)
        if op is ast.MatMult:  # the same for operands of the same shapes (and dtypes)
            dt = _fresh_dtype(da[1] or db[1], True)
            return R(Fact(frozenset({("matmul", fa.shape, fb.shape)}), dt, True,
                          family=("matmul", frozenset((da[0], db[0])))), edits, p, reads, pure)
        dt = self._arith_dtype(op, da, db)
        f = Fact(_union(fa.shape, fb.shape), dt, True, family=self._arith_family(op, fa, fb))
        if op is ast.Mult:  # k * ones of shape (): what expand_reduced may write as k * ones_like(x)
            for k, o in ((node.left, fb), (node.right, fa)):
                if isinstance(k, ast.Constant) and type(k.value) in (int, float) and o.const == 1 and \
                        not o.shape and o.dtype[1]:
                    f = f._replace(scaled=self.t.render(*self.t.span(k), []))
        return R(f, edits, p, reads, pure)

    @staticmethod
    def _arith_family(op: type, fa: Fact, fb: Fact) -> Any:
        """The family of ``a <op> b`` (None: its own dtype id): ``a``'s with a Python number ``b``
        (or the other way round), or with ``b`` of the same family. A floating ``a`` keeps its
        dtype; from integers, every floating result (``a * 2.0``, ``a / 3``, ``a / b``) is float64."""
        if op not in (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow):
            return None
        if fb.dtype[0] in ("pyint", "pyfloat") or _fam(fa) == _fam(fb):
            return _fam(fa)
        if fa.dtype[0] in ("pyint", "pyfloat"):
            return _fam(fb)
        # np.tanh(x) + x: a float ufunc's result has a dtype that holds x's (float16 for int8)
        if fa.dtype[1] and _fam(fa) == ("float_of", fb.dtype[0]):
            return _fam(fa)
        if fb.dtype[1] and _fam(fb) == ("float_of", fa.dtype[0]):
            return _fam(fb)
        # else NumPy's promotion of the two dtypes: the same for every ``a <op> b`` of those dtype ids
        if op is ast.Pow:
            return ("pow", fa.dtype[0], fb.dtype[0])
        return ("div" if op is ast.Div else "arith", frozenset((fa.dtype[0], fb.dtype[0])))

    @staticmethod
    def _arith_dtype(op: type, da: tuple[Any, bool, bool], db: tuple[Any, bool, bool]) -> tuple[Any, bool, bool]:
        if op not in (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow):
            return _fresh_dtype(da[1] or db[1], da[2] or db[2])
        if da == db and da[1]:
            return da
        if op is ast.Pow:  # a Python float ** a float may be complex: only strong arrays, or ** int
            if da[1] and (da[2] or db[0] == "pyint"):
                return da
        elif da[1] and db[0] in ("pyint", "pyfloat"):
            return da
        elif db[1] and da[0] in ("pyint", "pyfloat"):
            return db
        return _fresh_dtype(da[1] or db[1] or op is ast.Div, da[2] or db[2])

    def _identity(self, keep: R, other: R, keep_node: ast.expr, unit: int, negate: bool = False) -> R | None:
        """``keep`` (as a replacement text) when ``other`` is all ``unit`` (``-keep`` for all
        ``-unit``, or with ``negate``) and the result provably has ``keep``'s shape, dtype and weakness."""
        fk, fo = keep.fact, other.fact
        c = fo.const
        if c is None or not fo.numeric or (unit == 1 and c not in (1, -1)) or (unit == 0 and c != 0):
            return None
        if not (fk.numeric and fk.dtype[2] and fk.dtype == fo.dtype and _union(fk.shape, fo.shape) == fk.shape):
            return None
        if not (negate or c == -1):
            return self._as_text(keep, keep_node)
        f = Fact(fk.shape, fk.dtype, True, None if fk.const is None else -fk.const, fk.family)
        return R(f, [(-1, -1, "-" + self._wrap(keep, keep_node, 15))], 15, keep.reads, keep.pure)

    def _scaled_ones(self, node: ast.BinOp, b: R) -> R | None:
        """``ones * k * b`` -> ``k * b`` for a number ``k`` and ``ones`` (a name) all ones of ``b``'s
        dtype (a strong floating or complex one) and of ``b``'s shape or fewer dimensions: ``ones * k``
        is ``k`` in ``b``'s dtype, as NumPy casts ``k`` in ``k * b``, so the product is the same."""
        inner = node.left
        if not (isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Mult) and isinstance(inner.left, ast.Name)
                and isinstance(inner.right, ast.Constant) and type(inner.right.value) in (int, float)):
            return None
        fo, fb = self._fact(self._name(inner.left.id)), b.fact
        if fo.const != 1 or not fo.numeric or not (fb.numeric and fb.dtype[1] and fb.dtype[2]) or \
                fo.dtype != fb.dtype or _union(fb.shape, fo.shape) != fb.shape:
            return None
        k = self.t.render(*self.t.span(inner.right), [])
        text = f"{k} * {self._wrap(b, node.right, 15)}"
        return R(Fact(fb.shape, fb.dtype, True, family=_fam(fb)), [(-1, -1, text)], 14, b.reads, b.pure)

    def _wrap(self, r: R, node: ast.expr, need: int) -> str:
        s, e = self.t.span(node)
        text = self.t.render(s, e, r.edits)
        return f"({text})" if r.prec < need else text

    def _as_text(self, r: R, node: ast.expr) -> R:
        """``node`` (read as ``r``) as a replacement text, for :meth:`_fold` to put elsewhere."""
        return R(r.fact, [(-1, -1, self._wrap(r, node, 0))], r.prec, r.reads, r.pure, r.name)

    def _fold(self, node: ast.expr, r: R, need: int) -> R:
        """Replace ``node`` by ``r`` (produced by :meth:`_as_text`): parenthesized when needed;
        grouping parentheses around ``node`` in the source are dropped when not needed."""
        text = r.edits[0][2]
        s, e = self.t.span(node)
        src = self.t.text
        i, j = s - 1, e
        while i >= 0 and src[i] in " \t":
            i -= 1
        while j < len(src) and src[j] in " \t":
            j += 1
        grouped = False
        if i >= 0 and src[i] == "(" and j < len(src) and src[j] == ")":
            k = i - 1
            while k >= 0 and src[k] in " \t":
                k -= 1
            grouped = k < 0 or not (src[k].isalnum() or src[k] in "_)]}'\"")
        multiline = "\n" in text  # a line break needs parentheses around it
        if grouped and r.prec >= need and not multiline:
            s, e = i, j + 1
        elif (r.prec < need or multiline) and not grouped:
            text = f"({text})"
        return R(r.fact, [(s, e, text)], r.prec if r.prec >= need else _ATOM, r.reads, r.pure, r.name)

    def _subscript(self, node: ast.Subscript) -> R:
        v = self.expr(node.value, _ATOM)
        sl = self._generic(node.slice)
        edits, reads, pure = v.edits + sl.edits, v.reads + sl.reads, v.pure and sl.pure
        f = v.fact
        # an array's elements have its dtype; slices of a container are containers (never floating)
        family = _fam(f) if f.numeric or _slices_only(self._index(node.slice)) else None
        delta = _slice_delta(self._index(node.slice))
        if delta is None or not f.shape:
            out = _fresh(f.dtype[2], f.dtype[1], f.dtype[2]) if f.dtype[2] else _fresh()
            return R(out._replace(family=family), edits, _ATOM, reads, pure)
        shape = f.shape if delta == 0 else frozenset({("slice", f.shape, delta)})
        dt = f.dtype if f.dtype[2] else _fresh_dtype(False, False)
        return R(Fact(shape, dt, f.dtype[2], family=family), edits, _ATOM, reads, pure)

    def _index(self, index: ast.expr) -> ast.expr:
        """``index`` with ``np.s_[i]`` (written there, or bound once to a name it reads) read as ``i``."""
        if type(index) is ast.Name:
            return self.slices.get(self._name(index.id), index)
        s = _np_s(index) if self.np_ok else None
        return index if s is None else s

    def _call(self, node: ast.Call, need: int) -> R:
        fname = self._callee(node.func)
        if fname is None or any(isinstance(a, ast.Starred) for a in node.args) or checks(node) == 2:
            fr = self._generic(node.func) if not isinstance(node.func, ast.Name) else self.expr(node.func, _ATOM)
            rs = [self.expr(a, 1) if not isinstance(a, ast.Starred) else self._generic(a) for a in node.args]
            rs += [self.expr(k.value, 1) for k in node.keywords]
            return R(_fresh(), fr.edits + [x for r in rs for x in r.edits], _ATOM,
                     fr.reads + [x for r in rs for x in r.reads], False)
        args = [self.expr(a, 1) for a in node.args]
        for k in SHAPE_ARGS.get(fname, ()):
            if k < len(args):
                args[k] = self._shape_arg(args[k], node.args[k], fname == "reduced_size")
        kwl = [self.expr(k.value, 1) for k in node.keywords]
        kws = {k.arg: r for k, r in zip(node.keywords, kwl) if k.arg is not None}
        edits = [x for r in [*args, *kwl] for x in r.edits]
        reads = [x for r in [*args, *kwl] for x in r.reads]
        if isinstance(node.func, ast.Name):
            reads.append(node.func.id)
        pure = all(r.pure for r in [*args, *kwl])
        if len(kws) != len(node.keywords):  # f(**kw)
            return R(_fresh(), edits, _ATOM, reads, pure)
        fact = _fresh()
        fs = [r.fact for r in args]
        short = fname[3:] if fname.startswith("np.") else None
        if fname == "in_place":  # (a check: pure where ``new`` provably has x's shape and dtype, so it passes)
            pure = pure and len(fs) == 2 and fs[0].shape == fs[1].shape and fs[0].dtype == fs[1].dtype
        if fname in ("unbroadcast", "broadcast_like") and len(args) == 2 and not kws:
            g, x = fs
            if g.shape == x.shape and self._uncast(g, x):  # returns g itself
                return self._fold(node, self._as_text(args[0], node.args[0]), need)
            const = self._const_like(g, args[1], node.args[1])
            if const is not None:
                return self._fold(node, const, need)
            if g.numeric:
                dt, numeric, family = self._cast_like(g, x)
                fact = Fact(x.shape, dt, numeric, family=family)
        elif fname in ("ones_like", "zeros_like") and len(args) == 1 and not kws:
            x = fs[0]
            if x.numeric or fname == "ones_like":
                dt = x.dtype if x.dtype[1] and x.dtype[2] else _fresh_dtype(True, True)
                fact = Fact(x.shape, dt, True, 1 if fname == "ones_like" else 0, _fam(x))
        elif fname == "expand_reduced" and len(args) == 4 and not kws:
            g, x = fs[0], fs[1]
            if g.numeric:
                dt, numeric, family = self._cast_like(g, x)
                fact = Fact(x.shape, dt, numeric, g.const, family)
                const = self._const_like(g, args[1], node.args[1], same_shape=False) if x.numeric else None
                if const is None and g.scaled is not None and self._array_like(args[1]) and x.dtype[1] and \
                        _fam(g) == _fam(x) and "ones_like" in self.helpers and _none_false(*node.args[2:]):
                    # k * ones, 0-d, of x's family (x's dtype whenever both are floating point: no cast)
                    text = f"{g.scaled} * ones_like({self._wrap(args[1], node.args[1], 1)})"
                    const = R(fact._replace(const=None), [(-1, -1, text)], 14, args[1].reads + ["ones_like"], True)
                if const is not None:
                    return self._fold(node, const, need)
        elif fname == "reduced_size" or short in ("ndim", "size"):
            fact = Fact(frozenset(), ("pyint", False, False), True)
        elif fname in ("matmul_lhs_bar", "matmul_rhs_bar") and len(args) == 3 and not kws:
            # the operand's shape (unbroadcast to it), except 1-D @ 1-D: g * x2, fine for a scalar g
            g, x1, x2 = fs
            if g.shape in (frozenset(), frozenset({("matmul", x1.shape, x2.shape)})):
                fact = Fact((x1 if fname == "matmul_lhs_bar" else x2).shape, _fresh_dtype(False, True), True)
        elif fname in ("max_share", "abs_share", "clip_share") and not kws:
            shape = frozenset().union(*[f.shape for f in fs]) if all(f.numeric for f in fs) else None
            g = fs[0]
            if shape is not None:
                dt = g.dtype if g.dtype[1] and g.dtype[2] else _fresh_dtype(g.dtype[1], True)
                fact = Fact(_union(shape, shape), dt, True, family=_fam(g))  # (np.where(.., g, 0.0))
        elif short is not None:
            fact = self._np_fact(short, fs, kws, node)
        return R(fact, edits, _ATOM, reads, pure)

    def _array_like(self, r: R) -> bool:
        """An array or a number: known numeric, or a parameter bound once (a container parameter is
        never reduced or computed with elementwise: srcjax refuses that)."""
        return r.fact.numeric or (r.name in self.params and self.binds[r.name] == 1)

    def _const_like(self, g: Fact, xr: R, x_node: ast.expr, same_shape: bool = True) -> R | None:
        """``unbroadcast(g, x)`` / ``broadcast_like(g, x)`` as ``ones_like(x)`` (``-ones_like(x)``,
        ``zeros_like(x)``: zeros only of ``x``'s dtype, as they may be -0.0) for ``g`` all ones (minus
        ones) of ``x``'s shape, ``g`` and ``x`` both floating point (or complex): the helper casts
        ``g`` to ``x``'s dtype, which is ``np.result_type(x, 0.0)``, ``ones_like``'s, and a cast of 1
        or -1 is exact (the real part of a complex one too); None otherwise. (``g`` is inexact
        whenever it is a ``ones_like``.) Not ``same_shape``: ``expand_reduced(g, x, ...)``, which
        broadcasts ``g`` to ``x``'s shape after the same cast."""
        x = xr.fact
        if g.const == 0 and (same_shape or g.dtype != x.dtype or not x.dtype[2]):
            return None  # (zeros may be -0.0: -zeros_like(a); only where no cast can happen, as it was)
        helper = {1: "ones_like", -1: "ones_like", 0: "zeros_like"}.get(g.const) if g.const is not None else None
        if helper not in self.helpers or not g.numeric or not g.dtype[1] or not x.dtype[1] or \
                (same_shape and g.shape != x.shape) \
                or not self._array_like(xr):
            return None
        text = helper + "(" + self._wrap(xr, x_node, 1) + ")"
        dt = x.dtype if x.dtype[2] else _fresh_dtype(True, True)
        fact = Fact(x.shape, dt, True, g.const, _fam(x))
        if g.const == -1:
            text = "-" + text
        return R(fact, [(-1, -1, text)], 15 if g.const == -1 else _ATOM, xr.reads + [helper], True)

    @staticmethod
    def _cast_like(g: Fact, x: Fact) -> tuple[tuple[Any, bool, bool], bool, Any]:
        """(dtype, numeric, family) of ``g`` cast like ``x`` (``unbroadcast``, ``broadcast_like``,
        ``expand_reduced``: ``x``'s dtype when both are floating point, else ``g``'s)."""
        same = _fam(g) == _fam(x) or (g.dtype[1] and x.dtype[1])  # then a floating result has x's dtype
        dt = g.dtype if g.dtype[2] and g.dtype == x.dtype else _fresh_dtype(g.dtype[1], True)
        return dt, True, _fam(x) if same else _fam(g) if _Function._uncast(g, x) else None

    @staticmethod
    def _uncast(g: Fact, x: Fact) -> bool:
        """Whether ``g`` cast like ``x`` is provably ``g`` itself: ``g`` is of ``x``'s family, or of
        ``np.tanh(x)``'s (a floating ``x``'s dtype; for another ``x`` there is no cast)."""
        return _fam(g) == _fam(x) or _fam(g) == ("float_of", x.dtype[0])

    def _np_fact(self, fn: str, fs: list[Fact], kws: dict[str, R], node: ast.Call) -> Fact:
        kind = _kinds().get(fn)
        if len(fs) == 1 and not kws and kind in ("float", "same", "shape", "shape_family"):
            x = fs[0]
            if kind in ("shape", "shape_family"):
                return Fact(x.shape, _fresh_dtype(False, True), True,
                            family=_fam(x) if kind == "shape_family" else None)  # (x's dtype)
            # np.sin of an integer array is float16, float32 or float64 by its width, the same for
            # every float ufunc: a family of its own ("float_of"), the operand's for a floating operand
            family = _fam(x) if kind == "same" or x.dtype[1] else ("float_of", x.dtype[0]) if kind == "float" else None
            if x.dtype[1] and x.dtype[2]:
                return Fact(x.shape, x.dtype, True, family=family)
            return Fact(x.shape, _fresh_dtype(kind == "float" or x.dtype[1], True), True, family=family)
        if kind in ("arith", "promote", "binary") and len(fs) == 2 and not kws:
            a, b = fs
            dt = self._arith_dtype(ast.Add, a.dtype, b.dtype) if kind == "promote" \
                else _fresh_dtype(a.dtype[1] or b.dtype[1], True)
            if not dt[2]:
                dt = _fresh_dtype(dt[1], True)
            family = self._arith_family(ast.Add, a, b) if kind != "binary" else None
            return Fact(_union(a.shape, b.shape), dt, True, family=family)
        if kind == "select" and len(fs) == 3 and not kws:
            c, a, b = fs
            dt = self._arith_dtype(ast.Add, a.dtype, b.dtype)
            if not dt[2]:
                dt = _fresh_dtype(dt[1], True)
            return Fact(_union(_union(c.shape, a.shape), b.shape), dt, True, family=self._arith_family(ast.Add, a, b))
        if kind in ("reduce", "reduce_keep", "reduce_float", "reduce_real") and 1 <= len(fs) <= 2 and \
                set(kws) <= {"axis", "keepdims"} and \
                not (len(fs) == 2 and "axis" in kws):
            x = fs[0]
            kw = {k.arg: k.value for k in node.keywords}
            axis_node = node.args[1] if len(fs) == 2 else kw.get("axis")
            keep = kw.get("keepdims")
            keep_v = keep.value if isinstance(keep, ast.Constant) else (False if keep is None else None)
            full = axis_node is None or isinstance(axis_node, ast.Constant) and axis_node.value is None
            axis_key = None if full else _literal(axis_node)  # type: ignore[arg-type]
            dt = _fresh_dtype(False, True) if kind == "reduce_real" else x.dtype if x.dtype[2] and \
                (x.dtype[1] or kind == "reduce_keep") else _fresh_dtype(x.dtype[1] or kind == "reduce_float", True)
            shape: frozenset[Any]
            if keep_v is None or (not full and axis_key is None):
                shape = frozenset({next(_ids)})
            elif full and not keep_v:
                shape = frozenset()
            else:
                shape = frozenset({("keep" if keep_v else "red", x.shape, axis_key)})
            return Fact(shape, dt, True, family=_fam(x))
        return _fresh()

    # -- statements -------------------------------------------------------------------------------

    def simplify(self) -> list[tuple[int, int, str]]:
        t = self.t
        body = self.fdef.body
        stmts: list[Stmt] = []
        lines_used: Counter[int] = Counter()
        for s in body:
            for ln in range(s.lineno, (s.end_lineno or s.lineno) + 1):
                lines_used[ln] += 1
        for s in body:
            start, end = t.span(s)
            last = s.end_lineno or s.lineno
            ls = t.starts[s.lineno - 1]
            le = t.starts[last] if last < len(t.starts) else len(t.text)
            solo = t.text[ls:start].strip() == "" and provenance.blank(t.text[end:le], ";") and \
                all(lines_used[ln] == 1 for ln in range(s.lineno, last + 1))
            stmts.append(Stmt(s, ls, le, solo))
        seen: dict[str, str] = {}
        later: list[Stmt] = []  # renamed after the pass (the final renaming is known then)
        scoped = False  # (a nested scope: a name it reads is read when it runs, not where it is)
        for st in stmts:
            s = st.node
            if not isinstance(s, _SIMPLE) or not _SCOPE_KINDS.isdisjoint(map(type, walked(s))):
                scoped = scoped or not _SCOPE_KINDS.isdisjoint(map(type, walked(s)))
                later.append(st)
                self._forget(s)
                continue
            if isinstance(s, ast.Assign):
                self._assign(st, s, seen)
            elif isinstance(s, ast.AugAssign):
                tr = self._generic(s.target)
                r = self.expr(s.value, 0)
                st.edits, st.reads = tr.edits + r.edits, tr.reads + r.reads
                self._forget(s)
            else:
                value = s.value if isinstance(s, (ast.Expr, ast.Return)) else s.test  # type: ignore[union-attr]
                rs = [self.expr(value, 0)] if value is not None else []
                if isinstance(s, ast.Assert) and s.msg is not None:
                    rs.append(self.expr(s.msg, 0))
                st.edits = [x for r in rs for x in r.edits]
                st.reads = [x for r in rs for x in r.reads]
                if not all(r.pure for r in rs):
                    self._forget_consts()
        for st in later:
            r = self._generic(st.node)
            st.edits, st.reads = r.edits, r.reads
        dead_code(stmts, self.binds, {} if scoped else rebound(stmts, self.binds, self.volatile | self.params))
        out: list[tuple[int, int, str]] = []
        kept = [st for st in stmts if not st.deleted]
        if not kept:  # pragma: no cover - a function always returns
            stmts[-1].deleted = False
        for st in stmts:
            if st.deleted:
                out.append((st.start, st.end, ""))
            elif st.edits:
                out.extend(st.edits)
        return out

    def _assign(self, st: Stmt, s: ast.Assign, seen: dict[str, str]) -> None:
        r = self.expr(s.value, 0)
        # (an empty list display builds a new list each time: never merged with another (r.pure), but dead where
        # nothing reads its name: a VJP's `_tape = []` that no statement pushes on)
        st.edits, st.reads, st.pure = list(r.edits), list(r.reads), r.pure or _empty_list(s.value)
        names = [tg.id for tg in s.targets if isinstance(tg, ast.Name)]
        if len(s.targets) == 1 and len(names) == 1:
            dst = names[0]
            if st.solo and self.binds[dst] == 1:
                if r.name is not None and self.binds[r.name] <= 1:  # copy
                    self.subst[dst] = r.name
                    st.deleted = True
                    return
                if r.pure and not isinstance(s.value, ast.Name) and all(self.binds[n] <= 1 for n in r.reads):
                    key = self.t.render(*self.t.span(s.value), r.edits)
                    if key in seen:
                        self.subst[dst] = seen[key]
                        st.deleted = True
                        return
                    seen[key] = dst
            st.targets = [dst]
            self.facts[dst] = r.fact
            index = _np_s(s.value) if self.np_ok and self.binds[dst] == 1 and dst not in self.volatile else None
            if index is not None:
                self.slices[dst] = index
            self._shape_source(dst)
            return
        # other targets: tuples of names, subscripts, attributes
        for tg in s.targets:
            if isinstance(tg, ast.Name):
                self.facts[tg.id] = _fresh()
                continue
            tr = self._generic(tg)
            st.edits += tr.edits
            st.reads += [n for n in tr.reads if not (isinstance(tg, (ast.Tuple, ast.List)) and
                                                    n in target_names(tg))]
            for n in walked(tg):
                if isinstance(n, ast.Name):
                    self.facts[n.id] = _fresh()
            if not isinstance(tg, (ast.Tuple, ast.List)):
                self._forget_consts()  # an item assignment may write into any array
        if all(isinstance(tg, (ast.Name, ast.Tuple, ast.List)) for tg in s.targets):
            st.targets = [n for tg in s.targets for n in target_names(tg)]
        if not r.pure:
            self._forget_consts()

    def _forget(self, s: ast.stmt) -> None:
        """After a statement that is not analysed: what it binds is unknown, values may change."""
        for n in walked(s):  # (exact types, as parsed: no isinstance call a node)
            if n.__class__ is ast.Name and n.ctx.__class__ is not ast.Load:  # type: ignore[attr-defined]
                self.facts[n.id] = _fresh()  # type: ignore[attr-defined]
        self._forget_consts()

    def _forget_consts(self) -> None:
        for k, f in self.facts.items():
            if f.const is not None:
                self.facts[k] = f._replace(const=None)


def _shape_keys(f: Fact) -> list[tuple[Any, ...]]:
    """Keys under which values of provably one shape and dtype meet (the last: one shape). The
    helpers that read a shape cast to the dtype of a floating argument (``np.result_type(x, 0.0)``
    for ``ones_like``), so floating values of one family and weakness are alike for them too."""
    keys: list[tuple[Any, ...]] = [(f.shape, "dtype", f.dtype)]
    if f.dtype[1]:
        keys.append((f.shape, "family", _fam(f), f.dtype[2]))
    return keys + [(f.shape,)]


def simplify_source(text: str, pure_calls: set[str], floats: dict[str, frozenset[str]] | None = None,
                    keep: frozenset[str] = frozenset(),
                    alike: dict[str, tuple[tuple[str, str], ...]] | None = None) -> str:
    """Simplify every function of a generated module; ``floats`` names, per function, parameters
    that are floating point (or containers) whenever it runs (differentiated arguments: checked);
    names in ``keep`` (the user's: they stay) are not replaced where only their shape is read;
    ``alike``, per function, pairs ``(t, x)`` of parameters where ``t`` has ``x``'s shape, and ``x``'s
    dtype whenever both are floating point, whenever it runs (a Jacobian's basis of ``x``'s tangents).

    Remembered per arguments for the last :data:`TEXTS_KEPT` texts: a function of them alone, and a
    Jacobian's wrapper (the same text for every function of the same name) or a batched helper is
    written again, the same, for every function transformed."""
    return _simplified(text, frozenset(pure_calls), tuple(sorted((floats or {}).items())), keep,
                       tuple(sorted((alike or {}).items())))


TEXTS_KEPT = 64


@lru_cache(maxsize=TEXTS_KEPT)
def _simplified(text: str, pure_calls: frozenset[str], float_items: tuple[tuple[str, frozenset[str]], ...],
                keep: frozenset[str], alike_items: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()) -> str:
    floats, alike = dict(float_items), dict(alike_items)
    tree = parse(text)
    t = _Text(text)
    dead = _unreachable(tree, t)
    if dead:  # (rare: read again without them, so the functions' edits below never overlap them)
        text = t.render(0, len(text), dead)
        tree, t = parse(text), _Text(text)
    edits: list[tuple[int, int, str]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            try:
                fn = _Function(node, t, set(pure_calls), floats.get(node.name, frozenset()), keep,
                               alike.get(node.name, ()))
                edits.extend(fn.simplify())
            except _Unsafe:
                pass
    return drop_dead_nested(t.render(0, len(text), edits), pure_calls)  # (nested functions' dead lines)


_EXITS = exact_kinds(ast.Return, ast.Raise)


def _unreachable(tree: ast.Module, t: _Text) -> list[tuple[int, int, str]]:
    """Deletions of the statements after a ``return`` or ``raise`` in the same block, which never run (the
    joins a writer puts at the end of a branch that returns: ``rows = rows`` after ``return (...)``), as
    whole lines: where they share a line with something else, nothing is deleted."""
    edits: list[tuple[int, int, str]] = []
    todo: list[Any] = [tree]
    while todo:
        node = todo.pop()
        d = node.__dict__  # (a parsed node's fields: no getattr and isinstance calls a field)
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = d[field] if field in d else None
            if block.__class__ is not list:
                continue
            end = next((i for i, s in enumerate(block) if s.__class__ in _EXITS), len(block) - 1)
            todo += block[:end + 1]
            if end + 1 < len(block):
                ret, first, last = block[end], block[end + 1], block[-1]
                start, stop = t.starts[first.lineno - 1], t.span(last)[1]
                line_end = t.text.find("\n", stop)
                line_end = len(t.text) if line_end < 0 else line_end + 1
                if first.lineno > (ret.end_lineno or ret.lineno) and t.text[start:t.span(first)[0]].strip() == "" \
                        and t.text[stop:line_end].strip()[:1] in ("", "#"):
                    edits.append((start, line_end, ""))
    return edits


@cache
def _kinds() -> dict[str, str]:
    """``"sin"`` -> what its primitive's record says the simplifier may assume (``"float"``), for
    every NumPy spelling of a primitive (``np.abs`` and ``np.absolute``); see registry.SIMPLIFY_KINDS."""
    return {k: p.simplify for k, p in registry.numpy_spellings().items() if p.simplify is not None}

