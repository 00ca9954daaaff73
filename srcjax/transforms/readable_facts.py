"""What the gradient's guard proves, and the exact rewrites it allows (before :mod:`.readable` folds).

A gradient checks its output: ``assert np.ndim(out) == 0 and is_float(out)``. Past that line two
facts hold in the shape- and dtype-generic program srcjax prints, for every input the guard lets
through:

- **0-d values** (:func:`scalars`): ``out``; both operands of an elementwise ``+ - * / ** // %``
  or the operand of a unary ``-``/``+`` whose result is 0-d (broadcasting never lowers the rank,
  and a list or tuple is never 0-d); a full reduction ``np.sum(v)``; ``ones_like``/``zeros_like``
  of a 0-d value; ``unbroadcast(g, s)`` of two 0-d values; arithmetic of 0-d values and numbers.
- **real floating values** (:func:`real_floats`): ``out``; ``v`` in ``np.sum(v)``, ``-v``,
  ``v ** k`` and ``k * v`` (``k`` an integer literal) when the result is real floating (each maps
  an integer, boolean or complex ``v`` to an integer, boolean or complex result).

The rewrites (ANF form: one primitive per statement; every name they read bound once):

- ``expand_reduced(unbroadcast(h, s), a, None, False)`` with ``h`` 0-d, ``s = np.sum(p)`` and
  ``p`` one of ``a``, ``a ** k`` (integer ``k``), ``-a`` -> ``expand_reduced(h, a, None, False)``.
  ``unbroadcast`` of a 0-d ``h`` to a 0-d ``s`` only casts ``h`` to ``s``'s dtype when both are
  floating; ``s`` has ``a``'s dtype whenever either is floating, and ``expand_reduced`` casts to
  ``a``'s dtype itself: one cast instead of the same cast twice. The reduction then reads only as
  the forward value it is, and folds.
- ``ones_like(a) * k * a`` -> ``k * a`` and ``ones_like(a) * a`` -> ``a`` for a real floating
  ``a`` (a number ``k``): ``ones_like`` has ``a``'s shape and dtype there, ``1 * k`` is ``k`` in
  that dtype, and ``1 * a`` is ``a``, bit for bit.
- ``ones_like(w)`` -> ``ones_like(r)`` for a real floating ``w`` computed from ``r`` alone by
  elementwise steps that keep ``r``'s shape and ``np.result_type(r, 0.0)`` (numbers, ``r ** 2``,
  ``0.5 * r``, ``np.abs(r) - 0.5``, ``np.where(np.abs(r) <= 1.0, a, b)``), at least one path
  keeping a complex ``r`` complex (then a complex ``r`` gives a complex ``w``, which the guard
  refused), ``r`` being read elsewhere anyway: ``w`` then folds into its one other use (huber's
  ``np.where(...)`` into its sum).

A definition nothing reads any more is removed. Functions with control flow or nested scopes are
left as they are. Tests: ``tests/test_readable_facts.py`` (each rewrite against the text before it,
run by NumPy, over dtypes from bool to complex and shapes, guard failures included).
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from itertools import islice

from ..frontend.ast_walk import exact_kinds, imported_names, walked
from ..frontend.parsed import parse
from .simplify import _Text  # (the simplifier's text positions: this pass edits the text it wrote)

_ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.FloorDiv, ast.Mod)
_HELPERS = ("ones_like", "zeros_like", "unbroadcast", "expand_reduced", "is_float")
_NESTED = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.Try, ast.With, ast.AsyncWith, ast.Match,
           ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp, ast.NamedExpr, ast.JoinedStr, ast.Global, ast.Nonlocal)
_NESTED_KINDS = exact_kinds(*_NESTED)


def guard_rewrites(text: str) -> str:
    """``text`` (a module of generated functions, ANF form) with the rewrites above applied."""
    if "is_float(" not in text or "from srcjax.adjoint import" not in text:
        return text
    tree = parse(text)
    imported = {a for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "srcjax.adjoint"
                for a in imported_names(n)} - {a.asname for n in tree.body if isinstance(n, ast.ImportFrom)
                                               for a in n.names if a.asname is not None}
    if not set(_HELPERS) <= imported:
        return text
    t = _Text(text)
    edits: list[tuple[int, int, str]] = []
    for node in tree.body:  # (a function without the guard's statement has nothing to rewrite: not read further)
        if isinstance(node, ast.FunctionDef) and next(_guard_shapes(node.body), None) is not None and \
                not _nested(node):
            _Function(node, t, edits).rewrite()
    return t.render(0, len(text), edits) if edits else text


def _guard_shapes(body: list[ast.stmt]) -> Iterator[tuple[int, str]]:
    """(index, checked name) of each statement of ``body`` written ``assert np.ndim(out) == 0 and is_float(out)``
    (the guard, where ``out`` is bound once: :meth:`_Function.guard`)."""
    for i, s in enumerate(body):
        if not isinstance(s, ast.Assert) or not isinstance(s.test, ast.BoolOp) or \
                not isinstance(s.test.op, ast.And) or len(s.test.values) != 2:
            continue
        first, second = s.test.values
        if isinstance(first, ast.Compare) and len(first.ops) == 1 and isinstance(first.ops[0], ast.Eq) \
                and _int(first.comparators[0]) and first.comparators[0].value == 0:  # type: ignore[attr-defined]
            nd, fl = _call(first.left, "np.ndim", 1), _call(second, "is_float", 1)
            if nd and fl and isinstance(nd.args[0], ast.Name) and isinstance(fl.args[0], ast.Name) \
                    and nd.args[0].id == fl.args[0].id:
                yield i, nd.args[0].id


def _nested(fdef: ast.FunctionDef) -> bool:
    """Whether a statement of ``fdef``'s body holds one of :data:`_NESTED`: looked for in the walk of the
    whole ``def`` (which :class:`_Function` reads next) first; only where that finds one (maybe in a
    default value or a decorator) are the body's statements walked."""
    if _NESTED_KINDS.isdisjoint(map(type, islice(walked(fdef), 1, None))):
        return False
    return any(not _NESTED_KINDS.isdisjoint(map(type, walked(f))) for f in fdef.body)


def _call(e: ast.AST, name: str, nargs: int) -> ast.Call | None:
    """``e`` when it is ``name(<nargs positional arguments>)`` (``np.sum`` for ``name == "np.sum"``)."""
    if not isinstance(e, ast.Call) or e.keywords or len(e.args) != nargs or \
            any(isinstance(a, ast.Starred) for a in e.args):
        return None
    f = e.func
    if "." in name:
        mod, attr = name.split(".")
        ok = isinstance(f, ast.Attribute) and f.attr == attr and isinstance(f.value, ast.Name) and f.value.id == mod
    else:
        ok = isinstance(f, ast.Name) and f.id == name
    return e if ok else None


def _int(e: ast.AST) -> bool:
    return isinstance(e, ast.Constant) and type(e.value) is int


def _number(e: ast.AST) -> bool:
    return isinstance(e, ast.Constant) and type(e.value) in (int, float)


class _Function:
    def __init__(self, fdef: ast.FunctionDef, t: _Text, edits: list[tuple[int, int, str]]) -> None:
        self.t, self.edits, self.body = t, edits, fdef.body
        self.stores: Counter[str] = Counter()
        self.loads: Counter[str] = Counter()
        a = fdef.args
        for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
            if p is not None:
                self.stores[p.arg] += 1
        name_t, load_t = ast.Name, ast.Load  # (exact types: no class derives from these)
        for n in walked(fdef):
            kind = type(n)
            if kind is name_t:
                (self.loads if type(n.ctx) is load_t else self.stores)[n.id] += 1  # type: ignore[attr-defined]
            elif kind is ast.AugAssign and type(n.target) is name_t:  # type: ignore[attr-defined]
                self.stores[n.target.id] += 2  # type: ignore[attr-defined]
            elif kind is ast.alias:
                self.stores[(n.asname or n.name).split(".")[0]] += 2  # type: ignore[attr-defined]
        # name -> (statement index, value) for the names bound once, by a plain `name = value`
        self.defs: dict[str, tuple[int, ast.expr]] = {}
        for i, s in enumerate(self.body):
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
                    and self.stores[s.targets[0].id] == 1:
                self.defs[s.targets[0].id] = (i, s.value)

    def once(self, e: ast.AST) -> bool:
        """Whether every name ``e`` reads is bound once (so it means the same value everywhere)."""
        return all(self.stores[n.id] == 1 for n in walked(e) if isinstance(n, ast.Name))

    def guard(self) -> tuple[int, str] | None:
        """(index, checked name) of ``assert np.ndim(out) == 0 and is_float(out)``."""
        return next(((i, out) for i, out in _guard_shapes(self.body) if self.stores[out] == 1), None)

    # -- facts ---------------------------------------------------------------------------------

    def scalars(self, out: str) -> set[str]:
        """The names known 0-d past the guard (see the module docstring)."""
        known = {out}
        spread: set[str] = set()  # (known names whose operands were added already: not read again each round)
        changed = True
        while changed:
            changed = False
            for name, (_, v) in self.defs.items():
                new: list[ast.expr] = []
                if name in known:
                    if name in spread:
                        continue
                    spread.add(name)
                    if isinstance(v, ast.BinOp) and isinstance(v.op, _ARITH):
                        new = [v.left, v.right]
                    elif isinstance(v, ast.UnaryOp) and isinstance(v.op, (ast.USub, ast.UAdd)):
                        new = [v.operand]
                elif self.scalar(v, known):
                    known.add(name)
                    changed = True
                for e in new:
                    if isinstance(e, ast.Name) and self.stores[e.id] == 1 and e.id not in known:
                        known.add(e.id)
                        changed = True
        return known

    def scalar(self, e: ast.AST, known: set[str]) -> bool:
        if isinstance(e, ast.Name):
            return e.id in known
        if _number(e):
            return True
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            return self.scalar(e.operand, known)
        if isinstance(e, ast.BinOp) and isinstance(e.op, _ARITH):
            return self.scalar(e.left, known) and self.scalar(e.right, known)
        if _call(e, "np.sum", 1):
            return True
        c = _call(e, "ones_like", 1) or _call(e, "zeros_like", 1) or _call(e, "unbroadcast", 2)
        return c is not None and all(self.scalar(a, known) for a in c.args)

    def real_floats(self, out: str) -> set[str]:
        """The names known real floating past the guard (see the module docstring)."""
        known = {out}
        todo = [out]
        while todo:
            name = todo.pop()
            if name not in self.defs:
                continue
            v = self.defs[name][1]
            p: ast.expr | None = None
            if (c := _call(v, "np.sum", 1)) is not None:
                p = c.args[0]
            elif isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub):
                p = v.operand
            elif isinstance(v, ast.BinOp) and isinstance(v.op, ast.Pow) and _int(v.right):
                p = v.left
            elif isinstance(v, ast.BinOp) and isinstance(v.op, ast.Mult):
                p = v.right if _int(v.left) else v.left if _int(v.right) else None
            if isinstance(p, ast.Name) and self.stores[p.id] == 1 and p.id not in known:
                known.add(p.id)
                todo.append(p.id)
        return known

    # -- rewrites ------------------------------------------------------------------------------

    def rewrite(self) -> None:
        g = self.guard()
        if g is None or any(self.stores[h] for h in (*_HELPERS, "np")):
            return
        start, out = g
        scalars, floats = self.scalars(out), self.real_floats(out)
        dropped: Counter[str] = Counter()
        ones: list[tuple[int, tuple[int, int, str]]] = []
        for i, s in enumerate(self.body[start + 1:], start + 1):
            for n in walked(s):
                if isinstance(n, ast.Call):
                    self.reduced_cast(n, scalars, dropped)
                    ones += [(i, e) for e in self.ones_root(n, floats)]
                elif isinstance(n, ast.BinOp):
                    self.ones_factor(n, floats, dropped)
        gone = set()
        for name, k in dropped.items():
            if self.loads[name] == k:
                i = self.defs[name][0]
                gone.add(i)
                s0, e0 = self.t.span(self.body[i])
                s0 = self.t.text.rfind("\n", 0, s0) + 1
                self.edits.append((s0, e0 + 1, ""))
        self.edits += [e for i, e in ones if i not in gone]

    def ones_root(self, n: ast.Call, floats: set[str]) -> list[tuple[int, int, str]]:
        """``ones_like(w)`` -> ``ones_like(r)`` for a real floating ``w`` computed from ``r`` alone
        by steps that keep its shape and ``np.result_type(r, 0.0)`` (:meth:`like`), ``r`` a name
        read elsewhere anyway (so ``w`` may fold into its one other use)."""
        o = _call(n, "ones_like", 1)
        if o is None or not isinstance(o.args[0], ast.Name) or o.args[0].id not in floats or \
                o.args[0].id not in self.defs:
            return []
        w = o.args[0].id
        for r in self.reach(self.defs[w][1], 8):
            if self.stores[r] == 1 and self.loads[r] > 1 and self.like(self.defs[w][1], r, 8) == (True, True):
                return [(*self.t.span(o.args[0]), r)]
        return []

    def reach(self, e: ast.expr, depth: int) -> dict[str, None]:
        """The names ``e`` is computed from, through definitions ``depth`` deep, nearest first."""
        out = dict.fromkeys(m.id for m in walked(e) if isinstance(m, ast.Name))
        for m in list(out) if depth > 0 else ():
            if m in self.defs:
                out.update(self.reach(self.defs[m][1], depth - 1))
        return out

    def like(self, e: ast.expr, r: str, depth: int) -> tuple[bool, bool] | None:
        """(True, keeps complex) when ``e`` has ``r``'s shape and ``np.result_type(e, 0.0)`` is
        ``np.result_type(r, 0.0)`` for every real ``r`` (its dtype, or float64 for integers and
        booleans: ``r ** 2``, ``0.5 * r``, ``abs(r) - 0.5``, ``np.where(r < 1, a, b)``); keeps complex:
        a complex ``r`` gives a complex ``e`` (``np.abs`` does not); None when not known."""
        if isinstance(e, ast.Name):
            if e.id == r:
                return True, True
            if e.id in self.defs and depth > 0:
                return self.like(self.defs[e.id][1], r, depth - 1)
            return None
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            return self.like(e.operand, r, depth)
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)):
            if _number(e.left) or _number(e.right):
                return self.like(e.right if _number(e.left) else e.left, r, depth)
            a, b = self.like(e.left, r, depth), self.like(e.right, r, depth)
            return (True, a[1] or b[1]) if a and b else None
        if (c := _call(e, "np.absolute", 1) or _call(e, "np.abs", 1)) is not None:
            return (True, False) if self.like(c.args[0], r, depth) else None
        if (c := _call(e, "np.where", 3)) is not None:
            cond = c.args[0]
            a_, b_ = self.like(c.args[1], r, depth), self.like(c.args[2], r, depth)
            shaped = self.like(cond, r, depth) is not None or isinstance(cond, ast.Compare) and \
                len(cond.ops) == 1 and _number(cond.comparators[0]) and self.like(cond.left, r, depth) is not None
            if not shaped and isinstance(cond, ast.Name) and cond.id in self.defs and depth > 0:
                d = self.defs[cond.id][1]
                shaped = isinstance(d, ast.Compare) and len(d.ops) == 1 and _number(d.comparators[0]) and \
                    self.like(d.left, r, depth - 1) is not None
            return (True, a_[1] or b_[1]) if a_ and b_ and shaped else None
        return None

    def reduced_cast(self, n: ast.Call, scalars: set[str], dropped: Counter[str]) -> None:
        e = _call(n, "expand_reduced", 4)
        if e is None or not isinstance(e.args[0], ast.Name) or not isinstance(e.args[1], ast.Name):
            return
        axis, keep = e.args[2], e.args[3]
        if not (isinstance(axis, ast.Constant) and axis.value is None and isinstance(keep, ast.Constant)
                and keep.value is False):
            return
        g, a = e.args[0].id, e.args[1].id
        u = _call(self.defs[g][1], "unbroadcast", 2) if g in self.defs else None
        if u is None or not isinstance(u.args[1], ast.Name) or self.stores[a] != 1:
            return
        h, s = u.args[0], u.args[1].id
        sum_ = _call(self.defs[s][1], "np.sum", 1) if s in self.defs else None
        if sum_ is None or not self.once(h) or not self.scalar(h, scalars) or \
                not self.linked(sum_.args[0], a):
            return
        self.edits.append((*self.t.span(e.args[0]), self.t.render(*self.t.span(h), [])))
        dropped[g] += 1

    def linked(self, p: ast.expr, a: str) -> bool:
        """Whether ``p`` is ``a`` (or a copy), ``a ** k`` or ``-a``: it has ``a``'s dtype when either
        is floating."""
        if isinstance(p, ast.Name) and p.id == a:
            return True
        if not isinstance(p, ast.Name) or p.id not in self.defs:
            return False
        v = self.defs[p.id][1]
        if isinstance(v, ast.Name):
            return v.id == a
        if isinstance(v, ast.BinOp) and isinstance(v.op, ast.Pow) and _int(v.right):
            return isinstance(v.left, ast.Name) and v.left.id == a
        return isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub) and \
            isinstance(v.operand, ast.Name) and v.operand.id == a

    def ones_factor(self, n: ast.BinOp, floats: set[str], dropped: Counter[str]) -> None:
        """``ones_like(a) * k * a`` -> ``k * a``; ``ones_like(a) * a`` -> ``a`` (``a`` real floating)."""
        if not isinstance(n.op, ast.Mult) or not isinstance(n.right, ast.Name) or n.right.id not in floats:
            return
        a, left = n.right.id, n.left
        k: ast.expr | None = None
        if isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mult) and _number(left.right):
            k = left.right
            left = left.left
        if not isinstance(left, ast.Name) or left.id not in self.defs:
            return
        o = _call(self.defs[left.id][1], "ones_like", 1)
        if o is None or not isinstance(o.args[0], ast.Name) or o.args[0].id != a:
            return
        span = self.t.span(n)
        self.edits.append((*span, a if k is None else f"{self.t.render(*self.t.span(k), [])} * {a}"))
        dropped[left.id] += 1
