"""Readable generated source: fold single-use temporaries back into the expressions they feed,
and tidy constants, so a derivative reads like the math a person would write.

Input: the module text of generated functions after :mod:`.simplify` (one primitive per line,
"the ANF form"). Output: the same functions, fewer lines. What this pass writes is the text srcjax
registers, prints and reads again to lower, so what is printed is what runs (and it still runs
under NumPy). It is purely syntactic: :mod:`ast` positions, use counts, and edits of the text, so
statements that do not change keep their text exactly (the user's own lines stay as written).

Inlining. ``t = <e>`` is deleted and ``<e>`` written where ``t`` is read when all of these hold:

- ``t`` is a generated name (not one the user wrote: ``keep``; the derivative of a parameter,
  ``x_bar`` or ``x_dot``, folds only into ``return x_bar`` and into the next binding of
  ``x_bar``, where it still reads as itself), bound by this one statement and
  read exactly once in the whole function (nested scopes included), by a simple statement
  (assignment, ``return``, ``assert``, expression) later in the *same block*, outside any nested
  scope (nothing moves across a loop, branch or function boundary);
- ``<e>`` is pure (operators, subscripts, attributes, ``np.*`` and the pure helpers ``pure_calls``;
  no list/dict displays, lambdas or comprehensions) and fits on one line;
- no statement between the two has a side effect (a call of anything else: ``_tape.append``,
  ``items.append``, a forward half; an item or attribute assignment; ``x += ...``; a compound
  statement) and none rebinds a name ``<e>`` reads; in the using statement, every call with a side
  effect is one whose arguments contain ``t`` (so it still runs after ``<e>``);
- the using statement stays within :data:`MAX_LINE` characters.

A basic slice of a name bound once (``t = x[1:]``, a view in NumPy, one slice in XLA) is written
at each of its uses, however many, when every use meets the conditions above in a statement
without calls that have side effects (so no work is duplicated, and no ``t.append`` writes into a
copy of a list). Parentheses are added exactly where Python's precedence needs them (and around a
power or a negation under a unary minus, for the reader). A pure ``assert`` (the guard that the
output is a real scalar) is not a side effect here: a pure expression may move past it.

Functions with control flow (``if``, loops, ``try``) are left as they are: srcjax may
functionalize them into ``srcjax.lax`` calls, and then shows and lowers their normalized form.

Tidying (each exact for every dtype: the same values, dtype and weakness), except in statements
binding a name of the user's (their own lines stay as written):

- ``-(-e)`` -> ``e``;
- ``a * 3 * b`` -> ``3 * a * b`` for a name, call, subscript or power ``a`` (the first product of
  a chain only: multiplication commutes);
- ``2.5 * a * 2`` -> ``5.0 * a`` for a float literal times a power of two (scaling by ``2**k`` is
  exact, within float16's normal range; the one exception: where ``2.5 * a`` is subnormal, its
  rounding differs in the last bit, and XLA on CPU flushes it to zero anyway);
- ``-(2.5 * a)`` -> ``-2.5 * a`` for a float literal (rounding to nearest is symmetric);
- ``-(-e * b / c)`` -> ``e * b / c`` for an ``e`` that is surely a float or complex (a float
  literal in it, or a true division: an integer's negation may wrap).

Last, the temporaries that survive are renumbered (:mod:`.readable_names`: ``sub_1`` -> ``sub``
once ``sub`` was folded away, with ``sub_1_bar``).
"""

from __future__ import annotations

import ast
import bisect
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..adjoint import is_saved_list_name
from ..frontend import provenance
from ..frontend.ast_walk import exact_kinds, has_fstring, statements, walked
from ..frontend.parsed import parse

# the simplifier's own text positions and precedence table: this pass edits the same module text after it
from .readable_facts import guard_rewrites
from .readable_names import renumber
from .simplify import _BUILDS, TEXTS_KEPT, _prec, _Text
from .simplify_syntax import _SCOPE_KINDS  # (the nested scopes, as a set: the simplifier skips them too)

MAX_LINE = 90
_ONE_PER_LINE = frozenset({"index_add", "batch_select"})  # (a name bound again by these is not folded)

_STMTS = (ast.Assign, ast.Expr, ast.Return, ast.Assert, ast.AugAssign)
_ATOM = 100
# node kinds tested by exact type (``exact_kinds``: for a parsed node, the same as ``isinstance``)
_GLOBALS = exact_kinds(ast.Global, ast.Nonlocal)
_DEFS = exact_kinds(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_IMPURE = exact_kinds(*_BUILDS, ast.Starred)  # (never pure, besides calls of what is not known pure)


def readable_source(text: str, pure_calls: set[str], keep: frozenset[str] = frozenset(),
                    tidy_constants: bool = True) -> str:
    """``text`` (a module of generated functions) with single-use temporaries folded in and
    constants tidied (unless not ``tidy_constants``); names in ``keep`` (the user's) are never
    folded away. Remembered per arguments (as :func:`~.simplify.simplify_source`: a function of them)."""
    return _readable(text, frozenset(pure_calls), keep, tidy_constants)


@lru_cache(maxsize=TEXTS_KEPT)
def _readable(text: str, pure_calls: frozenset[str], keep: frozenset[str], tidy_constants: bool) -> str:
    try:
        text = guard_rewrites(text)
        tree = parse(text)
    except SyntaxError:  # pragma: no cover - generated text parses
        return text
    t = _Text(text)
    edits: list[tuple[int, int, str]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not _control_flow(node):
            try:
                _function(node, t, set(pure_calls), keep, edits)
            except _Unsafe:
                pass
    if edits:
        text = t.render(0, len(text), edits)
    return renumber(tidy(text, keep) if tidy_constants else text, keep)


def _control_flow(fdef: ast.FunctionDef) -> bool:
    """Whether ``fdef`` has an ``if``, a ``while`` or a ``try``: srcjax may functionalize it (control
    flow on data becomes ``srcjax.lax`` calls), and then shows and lowers its normalized form, not its
    text, which would name again what was folded: such functions are left one primitive per line
    (their names are the ones that show). A ``for`` loop over a static range is shown and lowered as
    written: inside its body, temporaries fold as anywhere (nothing moves across its boundary)."""
    return any(isinstance(n, (ast.If, ast.While, ast.Try, ast.With, ast.AsyncWith, ast.Match, ast.AsyncFor))
               for n in statements(fdef))


def for_program(text: str, pure_calls: set[str], prog: Any) -> str:
    """:func:`readable_source` of ``text``, written from ``prog`` (whose names the user wrote)."""
    return readable_source(text, pure_calls, user_names(prog))


def user_names(prog: Any) -> frozenset[str]:
    """The names the user wrote in the functions of ``prog`` (a :class:`~srcjax.frontend.program.Program`):
    never folded away, so the user's own variables keep their names in what srcjax writes."""
    return frozenset(n for nf in prog.functions.values() for n in nf.source.name_set())


def keep_anf(functions: dict[str, Any], anf_text: str, module_text: str) -> None:
    """Remember on each generated function the module text before this pass (``srcjax.source(f,
    form="anf")`` shows the function's part of it: :func:`~srcjax.frontend.read.anf_text`, split when asked)."""
    if anf_text == module_text:
        return
    for f in functions.values():
        try:
            f.__srcjax_anf__ = anf_text
        except AttributeError:  # pragma: no cover - not a plain function
            pass


class _Unsafe(Exception):
    """Positions this pass does not trust (inside f-strings): leave the function as it is."""


def _function(fdef: ast.FunctionDef | ast.AsyncFunctionDef, t: _Text, pure_calls: set[str],
              keep: frozenset[str], edits: list[tuple[int, int, str]]) -> None:
    stores: Counter[str] = Counter()
    loads: Counter[str] = Counter()
    a = fdef.args
    own = {*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg}
    name_t, load_t = ast.Name, ast.Load  # (exact types, :data:`_GLOBALS`, :data:`_DEFS`: no class derives from them)
    for n in walked(fdef):
        kind = type(n)
        if kind is name_t:
            (loads if type(n.ctx) is load_t else stores)[n.id] += 1  # type: ignore[attr-defined]
        elif kind is ast.arg:  # a parameter: bound once; a nested function's or lambda's: not this scope's
            stores[n.arg] += 1 if n in own else 2  # type: ignore[attr-defined]
        elif kind is ast.alias:
            stores[(n.asname or n.name).split(".")[0]] += 2  # type: ignore[attr-defined]
        elif kind in _GLOBALS:
            stores.update({k: 2 for k in n.names})  # type: ignore[attr-defined]
        elif kind in _DEFS and n is not fdef:
            stores[n.name] += 2  # type: ignore[attr-defined]
        elif kind is ast.AugAssign and type(n.target) is name_t:  # type: ignore[attr-defined]
            loads[n.target.id] += 1  # type: ignore[attr-defined]
        elif kind is ast.JoinedStr:
            raise _Unsafe
    params = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    results = {p + suffix for p in params for suffix in ("_bar", "_dot")} - keep  # a parameter's derivative
    scope = _Scope(fdef, t, pure_calls, keep | results, stores, loads, edits, frozenset(results))
    scope.block(fdef.body)


class _Def:
    """A definition ``name = <text>`` (statement ``index`` of its block) later statements may read."""
    __slots__ = ("name", "index", "text", "prec", "reads", "view", "stmt", "inlined", "result")

    def __init__(self, name: str, index: int, text: str, prec: int, reads: set[str], view: bool,
                 stmt: ast.stmt, result: bool = False) -> None:
        self.name, self.index, self.text, self.prec, self.reads = name, index, text, prec, reads
        self.view, self.stmt, self.inlined, self.result = view, stmt, 0, result


class _Scope:
    def __init__(self, fdef: ast.AST, t: _Text, pure_calls: set[str], keep: frozenset[str],
                 stores: Counter[str], loads: Counter[str], edits: list[tuple[int, int, str]],
                 results: frozenset[str] = frozenset()) -> None:
        self.t, self.keep, self.stores, self.loads, self.edits = t, keep, stores, loads, edits
        self.results = results
        self.helpers = {n for n in pure_calls if n not in stores or stores[n] == 0}  # (no __missing__ call each)
        self.np_ok = stores["np"] == 0

    # -- purity ------------------------------------------------------------------------------------

    def pure_call(self, call: ast.Call) -> bool:
        func = call.func
        if isinstance(func, ast.Name):
            return func.id in self.helpers
        parts = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        return isinstance(func, ast.Name) and func.id == "np" and self.np_ok and bool(parts) and \
            parts[-1] != "random"

    def pure(self, node: ast.AST) -> bool:
        call_t, impure = ast.Call, _IMPURE
        for n in walked(node):
            kind = type(n)
            if kind is call_t and not self.pure_call(n) or kind in impure:  # type: ignore[arg-type]
                return False
        return True

    def barrier(self, s: ast.stmt, pure: bool) -> bool:
        """Whether moving a pure expression across ``s`` could change what it computes or when (``pure``:
        :meth:`pure` of ``s``, which the block's walk of it found)."""
        if isinstance(s, ast.Assign):
            if all(type(tg) is ast.Name for tg in s.targets):  # (the statement's walk is its value's, a name and its
                return not pure  # context besides: none a call or a build)
            return not all(_names_only(tg) for tg in s.targets) or not self.pure(s.value)
        if isinstance(s, ast.Assert):
            return not pure
        return not isinstance(s, ast.Pass) and not _tape_push(s)

    # -- blocks ------------------------------------------------------------------------------------

    def block(self, body: list[ast.stmt]) -> None:
        t = self.t
        binds: dict[str, list[int]] = {}  # name -> indices of the block's statements that bind it
        barriers = [0]  # prefix counts of barriers
        uses: list[list[tuple[ast.Name, int, bool]]] = []
        pure: list[bool] = []  # per statement: a simple one whose calls are all pure
        name_t, load_t, call_t, named_t = ast.Name, ast.Load, ast.Call, ast.NamedExpr  # (exact types: no class
        builds = _IMPURE  # derives from these)
        for i, s in enumerate(body):
            simple = isinstance(s, _STMTS)
            impure = 0  # (a simple statement's calls with side effects; its builds and walrus: the block's one walk)
            built = named = False
            for n in walked(s):
                kind = type(n)
                if kind is name_t:
                    if type(n.ctx) is not load_t:  # type: ignore[attr-defined]
                        binds.setdefault(n.id, []).append(i)  # type: ignore[attr-defined]
                elif kind is call_t:
                    if simple and not self.pure_call(n):  # type: ignore[arg-type]
                        impure += 1
                elif kind is ast.AugAssign:
                    if type(n.target) is name_t:  # type: ignore[attr-defined]
                        binds.setdefault(n.target.id, []).append(i)  # type: ignore[attr-defined]
                elif kind in builds:
                    built = True
                    named = named or kind is named_t
            barriers.append(barriers[-1] + self.barrier(s, simple and not impure and not built))
            uses.append(self._uses(s, impure) if simple and not named else [])
            pure.append(simple and not impure)

        def movable(d: _Def, reads: set[str], i: int) -> bool:  # from statement d.index to statement i
            return barriers[i] == barriers[d.index + 1] and \
                not any(_bound_between(binds.get(r, ()), d.index, i) for r in reads)

        views = self._views(body, uses, pure, movable)
        reach = self._reaching_uses(body, uses)
        defs: dict[str, _Def] = {}
        written: list[_Def] = []
        stmt_edits: dict[int, list[tuple[int, int, str]]] = {}
        for i, s in enumerate(body):
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                _function(s, t, set(self.helpers), self.keep - self.results, self.edits)
                continue
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(s, field, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                    self.block(sub)
            for h in getattr(s, "handlers", ()):
                self.block(h.body)
            mine: list[tuple[int, int, str]] = []
            reads: set[str] = set()
            for name, need, ok in uses[i]:
                d = defs.get(name.id)
                if d is None or not ok or not movable(d, d.reads, i) or d.result and not _keeps_name(s, d.name):
                    reads.add(name.id)
                    continue
                text = d.text if d.prec >= need else "(" + d.text + ")"
                start, end = t.span(name)
                if t.text[start:end] != name.id:  # pragma: no cover - positions we do not trust
                    raise _Unsafe
                if not d.view and not self._fits(s, mine + [(start, end, text)]):
                    reads.add(name.id)
                    continue
                mine.append((start, end, text))
                d.inlined += 1
                reads |= d.reads
            stmt_edits[i] = mine
            d_new = self._definition(s, i, mine, reads, views, reach)
            if d_new is not None:
                defs[d_new.name] = d_new
                written.append(d_new)
            elif isinstance(s, ast.Assign):  # a rebinding that is not a definition: later reads are not of the old one
                for tg in s.targets:
                    for n in walked(tg):
                        if isinstance(n, ast.Name):
                            defs.pop(n.id, None)
        deleted = {d.index for d in written if d.inlined == (self.loads[d.name] if d.view else 1)}
        for i, s in enumerate(body):
            if i in deleted:
                self._delete(s)
            else:
                self.edits.extend(stmt_edits.get(i, ()))

    def _views(self, body: list[ast.stmt], uses: list[list[tuple[ast.Name, int, bool]]], pure: list[bool],
               movable: Any) -> set[str]:
        """Names of views (``t = x[1:]``) that every use of can read instead."""
        out: set[str] = set()
        for i, s in enumerate(body):
            if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and
                    _is_view(s.value)):
                continue
            name = s.targets[0].id
            base = s.value.value.id  # type: ignore[attr-defined]
            if name in self.keep or name.startswith("_") or self.stores[name] != 1 or self.stores[base] > 1 or \
                    self.loads[name] < 2 or not self._solo(s):
                continue
            d = _Def(name, i, "", _ATOM, {base}, True, s)
            # (in statements without calls with side effects: x[1:] of a list is a new list each time,
            # and t.append(...) must not append to a copy)
            n = sum(1 for j in range(i + 1, len(body)) for u, _, ok in uses[j]
                    if u.id == name and ok and pure[j] and movable(d, d.reads, j))
            if n == self.loads[name]:
                out.add(name)
        return out

    def _fits(self, s: ast.stmt, edits: list[tuple[int, int, str]]) -> bool:
        t = self.t
        ls = t.starts[s.lineno - 1]
        last = s.end_lineno or s.lineno
        le = t.starts[last] if last < len(t.starts) else len(t.text)
        text = t.render(ls, le, edits)
        return max(len(line) for line in provenance.strip(text).rstrip("\n").split("\n")) <= MAX_LINE

    def _reaching_uses(self, body: list[ast.stmt], uses: list[list[tuple[ast.Name, int, bool]]]) -> dict[int, int]:
        """For each statement ``t = <e>`` of the block binding a name every binding and read of which
        is in this block's simple statements: how many reads see this binding (those up to and
        including the statement binding ``t`` again)."""
        bindings: dict[str, list[int]] = {}
        for i, s in enumerate(body):
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
                bindings.setdefault(s.targets[0].id, []).append(i)
        reads: dict[str, list[int]] = {}
        for j, us in enumerate(uses):
            for u, _, _ in us:
                reads.setdefault(u.id, []).append(j)
        out: dict[int, int] = {}
        for name, idx in bindings.items():
            at = reads.get(name, [])
            if len(idx) != self.stores[name] or len(at) != self.loads[name]:
                continue
            for k, i in enumerate(idx):
                nxt = idx[k + 1] if k + 1 < len(idx) else len(body)
                out[i] = sum(1 for j in at if i < j <= nxt)
        return out

    def _definition(self, s: ast.stmt, i: int, mine: list[tuple[int, int, str]], reads: set[str],
                    views: set[str], reach: dict[int, int]) -> _Def | None:
        """``s`` as a definition that later statements may fold in, or None: its name is read once,
        or bound again in this block and this binding is read once (not an ``index_add`` chain:
        accumulations stay one per line; nor a ``batch_select`` of a name bound again: vmap's selection of
        each name per example stays one per line)."""
        if not isinstance(s, ast.Assign) or len(s.targets) != 1 or not isinstance(s.targets[0], ast.Name):
            return None
        name = s.targets[0].id
        if name in views:
            return _Def(name, i, self.t.render(*self.t.span(s.value), mine), _ATOM, reads, True, s)
        result = name in self.results
        if name in self.keep and not result or name.startswith("_") or not self._solo(s) or not self.pure(s):
            return None  # (pure(s): its value's, as in barrier)
        value = s.value
        once = self.stores[name] == 1 and self.loads[name] == 1 or self.stores[name] > 1 and reach.get(i) == 1 and \
            not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in _ONE_PER_LINE)
        if not once:
            return None
        vs, ve = self.t.span(value)
        text = self.t.render(vs, ve, [e for e in mine if vs <= e[0] and e[1] <= ve])
        if "\n" in text:
            return None
        prec = _prec(value) if not isinstance(value, ast.Name) else _ATOM
        if isinstance(value, ast.Name) and text != value.id:  # a copy of a definition folded in: its precedence
            folded = ast.parse(text, mode="eval").body
            prec = _prec(folded) if not isinstance(folded, ast.Name) else _ATOM
        if isinstance(value, ast.Constant) and isinstance(value.value, (int, float, complex)):
            prec = _ATOM - 1  # (1).real
        target = s.targets[0]  # (the statement's walk: the value's names, and the target)
        return _Def(name, i, text, prec, reads | {n.id for n in walked(s) if type(n) is ast.Name and n is not target},
                    False, s, result)

    def _solo(self, s: ast.stmt) -> bool:
        t = self.t
        start, end = t.span(s)
        ls = t.starts[s.lineno - 1]
        last = s.end_lineno or s.lineno
        le = t.starts[last] if last < len(t.starts) else len(t.text)
        return t.text[ls:start].strip() == "" and provenance.blank(t.text[end:le])

    def _delete(self, s: ast.stmt) -> None:
        t = self.t
        ls = t.starts[s.lineno - 1]
        last = s.end_lineno or s.lineno
        le = t.starts[last] if last < len(t.starts) else len(t.text)
        self.edits.append((ls, le, ""))

    def _uses(self, s: ast.stmt, impure: int) -> list[tuple[ast.Name, int, bool]]:
        """The names ``s`` reads outside nested scopes, in source order: (name, the precedence its
        place needs, whether every call with a side effect in ``s`` (``impure`` of them) runs after it)."""
        out: list[tuple[ast.Name, int, bool]] = []
        go = self._reads_in
        if isinstance(s, ast.Assign):
            go(s.value, 0, 0, impure, out)
            for tg in s.targets:
                go(tg, _ATOM, 0, impure, out)
        elif isinstance(s, ast.AugAssign):
            go(s.target, _ATOM, 0, impure, out)
            go(s.value, 0, 0, impure, out)
        elif isinstance(s, ast.Assert):
            go(s.test, 1, 0, impure, out)
            if s.msg is not None:
                go(s.msg, 1, 0, impure, out)
        elif isinstance(s, (ast.Expr, ast.Return)) and s.value is not None:
            go(s.value, 0, 0, impure, out)
        return out

    def _reads_in(self, node: ast.AST, need: int, above: int, impure: int,
                  out: list[tuple[ast.Name, int, bool]]) -> None:
        """:meth:`_uses` under ``node`` (the place needs precedence ``need``; ``above`` calls with side
        effects around it, of the statement's ``impure``)."""
        kind = node.__class__  # (exact types, as parsed: no isinstance call a node)
        if kind is ast.Name:
            if node.ctx.__class__ is ast.Load:  # type: ignore[attr-defined]
                out.append((node, need, above == impure))  # type: ignore[arg-type]
            return
        if kind in _SCOPE_KINDS:
            return
        if kind is ast.Call and not self.pure_call(node):  # type: ignore[arg-type]
            above += 1
        for child, child_need in _children(node):
            self._reads_in(child, child_need, above, impure, out)


def _tape_push(s: ast.stmt) -> bool:
    """``_tape.append(a)`` or ``_tape.append((a, b,))`` (names only): it changes nothing but the tape,
    which no pure expression reads, so a pure expression may move across it."""
    if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and not s.value.keywords and
            len(s.value.args) == 1):
        return False
    func, arg = s.value.func, s.value.args[0]
    items = arg.elts if isinstance(arg, ast.Tuple) else [arg]
    return isinstance(func, ast.Attribute) and func.attr == "append" and isinstance(func.value, ast.Name) and \
        is_saved_list_name(func.value.id) and all(isinstance(e, ast.Name) for e in items)


def _keeps_name(s: ast.stmt, name: str) -> bool:
    """Whether ``s`` is ``return name`` or binds ``name`` again (``x_bar = x_bar + ...``): where a
    derivative's result may be folded in and still read as what it is."""
    if isinstance(s, ast.Return):
        return isinstance(s.value, ast.Name) and s.value.id == name
    return isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and \
        s.targets[0].id == name


def _bound_between(indices: Any, lo: int, hi: int) -> bool:
    """Whether a statement strictly between ``lo`` and ``hi`` binds the name (sorted ``indices``)."""
    k = bisect.bisect_right(indices, lo)
    return k < len(indices) and indices[k] < hi


def _names_only(t: ast.expr) -> bool:
    if isinstance(t, ast.Name):
        return True
    if isinstance(t, (ast.Tuple, ast.List)):
        return all(_names_only(e) for e in t.elts)
    return isinstance(t, ast.Starred) and _names_only(t.value)


def _is_view(value: ast.expr) -> bool:
    """``x[1:]``, ``x[:, 0]``, ``x[None]``: a basic index of literals (a view in NumPy)."""
    if not isinstance(value, ast.Subscript) or not isinstance(value.value, ast.Name):
        return False
    parts = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
    for p in parts:
        items = [p.lower, p.upper, p.step] if isinstance(p, ast.Slice) else [p]
        for x in items:
            if x is None or isinstance(x, ast.Constant) and (x.value is None or x.value is Ellipsis or
                                                             type(x.value) is int):
                continue
            if isinstance(x, ast.UnaryOp) and isinstance(x.op, ast.USub) and isinstance(x.operand, ast.Constant) \
                    and type(x.operand.value) is int:
                continue
            return False
    return True


def _children(node: ast.AST) -> Sequence[tuple[ast.AST, int]]:
    """``node``'s child expressions with the precedence each place needs (an expression of lower
    precedence there is parenthesized). By the node's exact class (:data:`_CHILDREN`: a parsed node's
    class is one no other class derives from); any other class is asked in turn (:func:`_children_of`)."""
    kind = _CHILDREN.get(node.__class__)
    return kind(node) if kind is not None else _children_of(node)


def _children_of(node: ast.AST) -> Sequence[tuple[ast.AST, int]]:
    """:func:`_children`, asked of each kind in turn."""
    if isinstance(node, ast.BinOp):
        return _binop_children(node)
    if isinstance(node, ast.UnaryOp):
        return [(node.operand, 7 if isinstance(node.op, ast.Not) else 17)]
    if isinstance(node, ast.Compare):
        return [(node.left, 9)] + [(c, 9) for c in node.comparators]
    if isinstance(node, ast.BoolOp):
        return [(v, 7 if isinstance(node.op, ast.And) else 6) for v in node.values]
    if isinstance(node, ast.IfExp):
        return [(node.body, 5), (node.test, 5), (node.orelse, 4)]
    if isinstance(node, ast.Call):
        return [(node.func, _ATOM)] + [(a, _ATOM if isinstance(a, ast.Starred) else 1) for a in node.args] + \
            [(k.value, 1) for k in node.keywords]
    if isinstance(node, ast.Attribute):
        return [(node.value, _ATOM)]
    if isinstance(node, ast.Subscript):
        return [(node.value, _ATOM - 1), (node.slice, 0 if isinstance(node.slice, ast.Tuple) else 1)]
    if isinstance(node, ast.Slice):
        return [(x, 1) for x in (node.lower, node.upper, node.step) if x is not None]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [(e, _ATOM if isinstance(e, ast.Starred) else 1) for e in node.elts]
    if isinstance(node, ast.Dict):
        return [(x, 1) for x in [*node.keys, *node.values] if x is not None]
    if isinstance(node, ast.Starred):
        return [(node.value, _ATOM)]
    return [(c, _ATOM) for c in ast.iter_child_nodes(node)]


def _binop_children(node: ast.BinOp) -> Sequence[tuple[ast.AST, int]]:
    if node.op.__class__ is ast.Pow:
        return [(node.left, 17), (node.right, 15)]
    p = _prec(node)
    return [(node.left, p), (node.right, p + 1)]


_NO_CHILDREN: Sequence[tuple[ast.AST, int]] = ()
# a parsed node's exact class -> its children (what _children_of finds for it: a plain name's only child is its
# context, a constant has none, a context none)
_CHILDREN: dict[type, Any] = {
    ast.BinOp: _binop_children,
    ast.Call: lambda node: [(node.func, _ATOM)] + [(a, _ATOM if a.__class__ is ast.Starred else 1)
                                                   for a in node.args] + [(k.value, 1) for k in node.keywords],
    ast.Attribute: lambda node: [(node.value, _ATOM)],
    ast.Subscript: lambda node: [(node.value, _ATOM - 1), (node.slice, 0 if node.slice.__class__ is ast.Tuple else 1)],
    ast.UnaryOp: lambda node: [(node.operand, 7 if node.op.__class__ is ast.Not else 17)],
    ast.Tuple: lambda node: [(e, _ATOM if e.__class__ is ast.Starred else 1) for e in node.elts],
    ast.Name: lambda node: [(node.ctx, _ATOM)], ast.Constant: lambda node: _NO_CHILDREN,
    ast.Load: lambda node: _NO_CHILDREN, ast.Store: lambda node: _NO_CHILDREN}


# -- tidying -------------------------------------------------------------------------------------------


# A statement that :func:`_tidy` can change holds one of these: a negation of a negation or of a number (``-(-e``,
# ``-(2.5``) or a factor after ``*`` that is a number (``* 2``, ``* (-2``); or a comment or a backslash, which may
# sit between those tokens (such a statement is read as before). Any other has nothing to tidy.
_TIDIED = re.compile(r"-[\s(]*[-\d.]|\*[\s(]*-?[\s(]*[\d.]|[#\\]")


def tidy(text: str, keep: frozenset[str] = frozenset()) -> str:
    """Constants gathered and double negations removed (see the module docstring), in functions
    without control flow; a statement binding one of the user's names (``keep``) is the user's line,
    kept as written."""
    if "-(" not in text and "* " not in text:
        return text
    tree = parse(text)
    t = _Text(text)
    edits: list[tuple[int, int, str]] = []
    if has_fstring(text) and any(isinstance(st, ast.JoinedStr) for st in walked(tree)):
        return text
    for st in (n for f in tree.body if isinstance(f, ast.FunctionDef) and not _control_flow(f) for n in statements(f)):
        if isinstance(st, _STMTS) and _TIDIED.search(text, *t.span(st)) and not _binds_user_name(st, keep):
            for field, need in (("value", 0), ("test", 1), ("msg", 1)):
                v = getattr(st, field, None)
                if isinstance(v, ast.expr):
                    _tidy_under(v, need, t, edits)
    return t.render(0, len(text), edits) if edits else text


def _tidy_under(node: ast.AST, need: int, t: _Text, edits: list[tuple[int, int, str]]) -> None:
    """:func:`tidy`'s edits of ``node`` (its place needs precedence ``need``) added to ``edits``. (Module-level, as
    :func:`_text_under`: a nested function calling itself made a reference cycle per call, left to the collector.)"""
    new = _tidy(node, t)
    if new is not None:
        edits.append(_replace(node, new, need, t))
        return
    for child, child_need in _children(node):
        _tidy_under(child, child_need, t, edits)


def _binds_user_name(st: ast.stmt, keep: frozenset[str]) -> bool:
    targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(st, ast.AugAssign) else []
    return any(isinstance(n, ast.Name) and n.id in keep and not n.id.endswith(("_bar", "_dot"))
               for tg in targets for n in walked(tg))


def _number(node: ast.AST) -> int | float | None:
    """The value of a number literal (``2``, ``-2.5``), or None."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        sign, node = -1, node.operand
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        value: int | float = node.value  # type: ignore[assignment]
        return sign * value
    return None


def _chain(node: ast.expr) -> list[ast.expr]:
    """``a * b * c`` -> [a, b, c] (the left spine of ``*``)."""
    out = []
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        out.append(node.right)
        node = node.left
    out.append(node)
    return out[::-1]


def _tidy(node: ast.AST, t: _Text) -> tuple[str, int] | None:
    """The tidied text of ``node`` and its precedence, or None when nothing changes here."""
    kind = node.__class__  # (exact types, as parsed: no isinstance call a node)
    if kind is ast.UnaryOp and node.op.__class__ is ast.USub:  # type: ignore[attr-defined]
        inner = node.operand  # type: ignore[attr-defined]
        if isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.USub):  # -(-e)
            return _text(inner.operand, t), _prec(inner.operand)
        lead = _leading_negation(inner)
        if lead is not None:  # -(-e * b / c) -> e * b / c
            return _text(inner, t, {lead: lead.operand}), _prec(inner)
        if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Mult):
            fs, head, _ = _gather(inner)
            if type(head) is float:  # -(2.5 * a * b) -> -2.5 * a * b
                first = fs[0]
                spelled = isinstance(first, ast.Constant) and first.value == head
                return _product("-" + _text(first, t) if spelled else repr(-head), fs, t), 14
        return None
    if not (kind is ast.BinOp and node.op.__class__ is ast.Mult):  # type: ignore[attr-defined]
        return None
    fs, head, changed = _gather(node)  # type: ignore[arg-type]
    if not changed:
        return None
    return _product(repr(head) if head is not None and _number(fs[0]) != head else _text(fs[0], t), fs, t), 14


def _leading_negation(node: ast.expr) -> ast.UnaryOp | None:
    """The ``-e`` that leads the product or quotient ``node`` (``-e * b / c``) when ``e`` is surely
    a float or complex (then ``-(-e * b / c)`` is ``e * b / c`` exactly: negation is exact and
    rounding symmetric; an integer ``e`` may be the one whose negation wraps), or None."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div))):
        return None
    while isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        node = node.left
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _inexact(node.operand):
        return node
    return None


def _inexact(node: ast.expr) -> bool:
    """Whether ``node`` is surely a float or complex, whatever its names hold: a float or complex
    literal, a true division, or ``+ - *`` of one such (NumPy promotes the other operand to it)."""
    if isinstance(node, ast.Constant):
        return type(node.value) in (float, complex)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _inexact(node.operand)
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Div):
            return True
        return isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)) and (_inexact(node.left) or _inexact(node.right))
    return False


def _gather(node: ast.BinOp) -> tuple[list[ast.expr], int | float | None, bool]:
    """The factors of the product chain ``node`` with its constants gathered at the front: (the
    factors, the leading constant's value or None, whether anything moved)."""
    fs = _chain(node)
    changed = False
    if _number(fs[0]) is None and _number(fs[1]) is not None and _prec(fs[0]) >= 16:  # a * 3 * b -> 3 * a * b
        fs[0], fs[1] = fs[1], fs[0]
        changed = True
    head = _number(fs[0])
    while type(head) is float and len(fs) >= 3:  # 2.5 * a * 2 -> 5.0 * a
        c = _number(fs[2])
        if c is None or not _power_of_two(c) or not 2.0 ** -14 <= abs(head) or abs(head * c) > 65504:
            break
        head = head * c
        del fs[2]
        changed = True
    return fs, head, changed


def _power_of_two(c: int | float) -> bool:
    if c < 1 or c != int(c):
        return False
    n = int(c)
    return n & (n - 1) == 0


def _product(head: str, fs: list[ast.expr], t: _Text) -> str:
    """``head * fs[1] * fs[2] ...``, each factor parenthesized as its place (right of ``*``) needs."""
    parts = [head]
    for f in fs[1:]:
        text = _text(f, t)
        parts.append(text if _prec(f) >= 15 else "(" + text + ")")
    return " * ".join(parts)


def _text(node: ast.AST, t: _Text, instead: dict[ast.AST, ast.expr] | None = None) -> str:
    """The tidied text of a whole expression (tidying inside it too; a node of ``instead`` written
    as the expression it maps to)."""
    s, e = t.span(node)
    edits: list[tuple[int, int, str]] = []
    for child, need in _children(node):
        _text_under(child, need, t, instead, edits)
    return t.render(s, e, edits)


def _text_under(n: ast.AST, need: int, t: _Text, instead: dict[ast.AST, ast.expr] | None,
                edits: list[tuple[int, int, str]]) -> None:
    """:func:`_text`'s edits of ``n`` (its place needs precedence ``need``) added to ``edits``. (Module-level: a
    nested function calling itself made a reference cycle per call, left to the cyclic collector.)"""
    if instead and n in instead:
        edits.append(_replace(n, (_text(instead[n], t), _prec(instead[n])), need, t))
        return
    # (a node holding one of ``instead`` is not tidied as a whole: _tidy reads the original
    # factors, and would write ``-0.5 * a * 2`` as ``-1.0 * a`` where ``-0.5`` is to be ``0.5``)
    new = None if instead and any(m in instead for m in ast.walk(n)) else _tidy(n, t)
    if new is not None:
        edits.append(_replace(n, new, need, t))
        return
    for child, child_need in _children(n):
        _text_under(child, child_need, t, instead, edits)


def _replace(node: ast.AST, new: tuple[str, int], need: int, t: _Text) -> tuple[int, int, str]:
    """The edit writing ``new`` (text, precedence) for ``node``, parenthesized when its place needs it
    and the text does not already have parentheses around it."""
    s, e = t.span(node)
    text, prec = new
    if prec < need and not (t.text[:s].rstrip().endswith("(") and t.text[e:].lstrip().startswith(")")):
        text = "(" + text + ")"
    return (s, e, text)
