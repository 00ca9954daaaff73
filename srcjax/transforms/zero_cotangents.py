"""Symbolic zero cotangents of a helper's outputs, per call site and per output part.

``d, y = f(x); return np.sum(y)``: no cotangent reaches ``d``. Reverse mode used to pass ``f``'s backward half
``(zeros_like(d), y_bar)``, and the zeros, arrays at run time, met ``d = np.sqrt(...)``'s local derivative
``0.5 / d``: ``0 * inf`` made the gradient NaN where JAX's is finite (JAX's symbolic zeros never run the pullback
of an output without a cotangent). Here each call of a helper gets the parts of its result (the leaves of the
returned display: tuple and list elements, dict items, nested) whose cotangent may be nonzero, and the helper's
backward half is written for that pattern (:func:`~.reverse_ad.vjp_helper` keys its halves by it): the zero
parts seed no cotangent, so their pullbacks are never written.

Exact and conservative: a part is a zero only when provably no cotangent reaches it at that call. What may carry
a nonzero cotangent is a backward fixpoint over the whole function (:func:`live_names`, flow-insensitive: every
binding of a name together), from the returned names that get one, through every statement whose targets may
carry one, to the active names it reads. A part is then nonzero when one of its target names is (``d, y = f(x)``),
or, for a result bound to one name, when any read of that name is (``f(x)[1]``, ``f(x)["y"]``; any other read
of it, the whole result). Keys are compared as values (``'y'`` and ``"y"`` are one key, ``-1`` the last
element); a pattern the callee's one ``return`` display cannot place is no pattern (every part nonzero)."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import libcst as cst

from ..frontend.names import code, names_in, target_names
from .anf import DifferentiationError

if TYPE_CHECKING:
    from ..frontend.normalize import NormalizedFunction
    from .reverse_ad import VJP

__all__ = ["CallParts", "Halves", "Parts", "is_zero", "live_names", "resolve", "seed_parts"]

Key = int | str
Path = tuple[Key, ...]
Parts = frozenset[Path]  # the output parts (paths of keys, as values) whose cotangent may be nonzero
# a function's helpers' halves written so far: (helper, active params[, Parts]) -> (forward half, backward half)
Halves = dict[tuple[Any, ...], tuple[str, str]]


def _key(node: cst.BaseExpression) -> Key | None:
    """A literal int or str key's value (``1``, ``-1``, ``"y"``, ``'y'``), else None."""
    if not isinstance(node, (cst.Integer, cst.UnaryOperation, cst.SimpleString)):
        return None
    try:
        value = ast.literal_eval(code(node))
    except (ValueError, SyntaxError):
        return None
    return value if type(value) in (int, str) else None


def _flows(body: Sequence[Any], out: list[tuple[set[str], set[str]]]) -> bool:
    """``(targets, reads)`` of each statement: a cotangent of a target may flow to the reads. False where the body
    holds a statement this does not know (then no name is known to get no cotangent)."""
    for s in body:
        if isinstance(s, cst.SimpleStatementLine):
            for small in s.body:
                if isinstance(small, cst.Assign):
                    targets = {n for t in small.targets for n in names_in(t.target)}
                    bound = {n for t in small.targets for n in target_names(t.target)}  # (`a[i] = v`: a read too)
                    reads = set(names_in(small.value))  # (a call may change a list it is given: `f_fwd(x, _tape)`)
                    changed = reads if isinstance(small.value, cst.Call) else set()
                    out.append((targets | changed, (targets if targets != bound else set()) | reads))
                elif isinstance(small, (cst.Pass, cst.Break, cst.Continue)):
                    continue
                elif isinstance(small, (cst.Return, cst.Raise, cst.Global, cst.Nonlocal, cst.Import,
                                        cst.ImportFrom, cst.Del)):
                    return False
                else:  # (`items.append(v)`, `_tape.pop()`, an augmented assignment: every name both ways)
                    names = set(names_in(small))
                    out.append((names, names))
        elif isinstance(s, cst.If):
            if not _flows(s.body.body, out):  # (the test gets no cotangent)
                return False
            if s.orelse is not None and not _flows([s.orelse] if isinstance(s.orelse, cst.If) else
                                                   s.orelse.body.body, out):
                return False
        elif isinstance(s, (cst.For, cst.While)) and s.orelse is None:
            if isinstance(s, cst.For):  # (an item's cotangent into its sequence's)
                out.append((set(target_names(s.target)), set(names_in(s.iter))))
            if not _flows(s.body.body, out):
                return False
        else:
            return False
    return True


def live_names(body: Sequence[Any], active: set[str], seeds: set[str]) -> set[str] | None:
    """The active names of ``body`` whose cotangent may be nonzero somewhere, given the names ``seeds`` the output's
    cotangent reaches; None where the body holds a statement :func:`_flows` does not know."""
    flows: list[tuple[set[str], set[str]]] = []
    if not _flows(body, flows):
        return None
    live = seeds & active
    changed = True
    while changed:
        changed = False
        for targets, reads in flows:
            if not targets.isdisjoint(live) and (new := (reads & active) - live):
                live |= new
                changed = True
    return live


def _target_parts(target: cst.BaseExpression, live: set[str], path: Path, out: set[Path]) -> bool:
    """The paths of ``target``'s names that may get a cotangent into ``out``; False where a part is starred."""
    if isinstance(target, (cst.Tuple, cst.List)):
        for k, e in enumerate(target.elements):
            if isinstance(e, cst.StarredElement) or not _target_parts(e.value, live, (*path, k), out):
                return False
        return True
    if any(n in live for n in names_in(target)):
        out.add(path)
    return True


def _read_parts(t: str, body: Sequence[Any], live: set[str], returned: set[str],
                seen: frozenset[str] = frozenset()) -> set[Path] | None:
    """The paths ``K`` of the reads ``u = t[K]`` (u live) of the name ``t``, and deeper where ``u`` is read the same
    way (``t[0][1]``); None where ``t`` is returned or read any other way (then all of it may get a cotangent)."""
    if t in returned or t in seen:
        return None
    out: set[Path] = set()
    for s in _statements(body):
        if isinstance(s, (cst.If, cst.While)):
            continue  # (a test: no cotangent)
        if isinstance(s, cst.For):
            if t in names_in(s.iter):
                return None
            continue
        if isinstance(s, cst.Assign) and isinstance(s.value, cst.Subscript):
            v = s.value
            if isinstance(v.value, cst.Name) and v.value.value == t and len(v.slice) == 1 and \
                    isinstance(v.slice[0].slice, cst.Index) and (k := _key(v.slice[0].slice.value)) is not None:
                targets = [n for tg in s.targets for n in names_in(tg.target)]
                if not any(n in live for n in targets):
                    continue
                u = s.targets[0].target
                deeper = _read_parts(u.value, body, live, returned, seen | {t}) \
                    if len(s.targets) == 1 and isinstance(u, cst.Name) else None
                out |= {(k,)} if deeper is None else {(k, *p) for p in deeper}
                continue
        reads = names_in(s.value) if isinstance(s, cst.Assign) else names_in(s)
        if t in reads:
            return None
    return out


def _statements(body: Sequence[Any]) -> list[Any]:
    """Small statements and compound headers, nested ones too (:func:`_flows` has vouched for the kinds)."""
    out: list[Any] = []
    for s in body:
        if isinstance(s, cst.SimpleStatementLine):
            out += s.body
        elif isinstance(s, (cst.If, cst.For, cst.While)):
            out.append(s)
            out += _statements(s.body.body)
            if isinstance(s, cst.If) and s.orelse is not None:
                out += _statements([s.orelse] if isinstance(s.orelse, cst.If) else s.orelse.body.body)
    return out


class CallParts:
    """The helper calls of one function (a :class:`~.reverse_ad.VJP`'s) and, per call, the parts of the result that
    may get a nonzero cotangent (None: all of them). Computed on first use, from the function's return as the
    writer seeds it then (``grad(has_aux=True)`` seeds only the output) and the writer's own pattern."""

    def __init__(self, v: VJP) -> None:
        self.v = v
        self.by_op: dict[int, Parts | None] | None = None

    def of(self, op: Any) -> Parts | None:
        if self.by_op is None:
            self.by_op = self._compute()
        return self.by_op.get(id(op))

    def _compute(self) -> dict[int, Parts | None]:
        v = self.v
        out: dict[int, Parts | None] = {}
        ret = v.ret.value
        seeds: set[str] = set()
        if ret is not None:
            _seed_names(ret, v.nonzero, (), seeds)
        live = live_names(v.body, v.act.active, seeds)
        if live is None:
            return out
        returned = set(names_in(ret)) if ret is not None else set()  # (a name returned: all of it)
        for s in _statements(v.body):
            if not isinstance(s, cst.Assign) or not isinstance(s.value, cst.Call) or len(s.targets) != 1:
                continue
            op = v.act.op(s.value)
            if op.kind != "call":
                continue
            target = s.targets[0].target
            parts: set[Path] | None = set()
            if isinstance(target, cst.Name):
                parts = _read_parts(target.value, v.body, live, returned) if target.value in live else set()
            elif not _target_parts(target, live, (), parts):  # type: ignore[arg-type]
                parts = None
            out[id(op)] = None if parts is None else frozenset(parts)
        return out


def _seed_names(node: cst.BaseExpression, nonzero: Parts | None, path: Path, out: set[str]) -> None:
    """The names of a return value that get a part of its cotangent (none where the part is a zero)."""
    if is_zero(nonzero, path):
        return
    parts = _elements(node)
    for sub, key in parts:
        _seed_names(sub, nonzero, (*path, key), out)
    if not parts:  # (a leaf, or a display of starred items or computed keys: all of it)
        out.update(names_in(node))


def _elements(node: cst.BaseExpression) -> list[tuple[cst.BaseExpression, Key]]:
    """A display's parts with their keys (as values): a tuple or list (no starred element), a dict with literal
    keys; [] for anything else (a leaf)."""
    if isinstance(node, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in node.elements):
        return [(e.value, k) for k, e in enumerate(node.elements)]
    if isinstance(node, cst.Dict) and all(isinstance(e, cst.DictElement) for e in node.elements):
        keys = [_key(e.key) for e in node.elements]  # type: ignore[attr-defined]
        if all(k is not None for k in keys) and len(set(keys)) == len(keys):
            return [(e.value, k) for e, k in zip(node.elements, keys)]  # type: ignore[misc]
    return []


def _place(node: cst.BaseExpression, path: Path) -> Path | None:
    """``path`` on the display ``node`` (a negative index counted from the end), cut where a leaf holds it whole;
    None where no part of ``node`` has it."""
    if not path:
        return ()
    parts = _elements(node)
    if not parts:
        if isinstance(node, (cst.Tuple, cst.List, cst.Dict)):
            return None  # (a display of starred items or computed keys: not placed)
        return ()
    key = path[0]
    if isinstance(node, (cst.Tuple, cst.List)) and isinstance(key, int) and -len(parts) <= key < 0:
        key += len(parts)
    for sub, k in parts:
        if type(k) is type(key) and k == key:
            rest = _place(sub, path[1:])
            return None if rest is None else (k, *rest)
    return None


def _leaves(node: cst.BaseExpression, path: Path) -> list[Path]:
    parts = _elements(node)
    return [p for sub, k in parts for p in _leaves(sub, (*path, k))] if parts else [path]


def resolve(nf: NormalizedFunction, parts: Parts | None) -> Parts | None:
    """``parts`` placed on the one ``return`` display of ``nf``: the pattern its backward half is written for, or
    None (no part is a zero, or the pattern cannot be placed: every part nonzero)."""
    if parts is None:
        return None
    finder = _Returns()
    nf.plain_fdef.body.visit(finder)
    last = nf.plain_fdef.body.body[-1]
    if len(finder.found) != 1 or not isinstance(last, cst.SimpleStatementLine) or last.body[-1] is not \
            finder.found[0] or finder.found[0].value is None:
        return None  # (one return, the function's last statement)
    ret = finder.found[0].value
    placed = set()
    for p in parts:
        q = _place(ret, p)
        if q is None:
            return None
        placed.add(q)
    out = frozenset(placed)
    return out if any(is_zero(out, leaf) for leaf in _leaves(ret, ())) else None


class _Returns(cst.CSTVisitor):
    """The ``return`` statements of a function's body, not of the functions and lambdas nested in it."""

    def __init__(self) -> None:
        self.found: list[cst.Return] = []

    def visit_Return(self, node: cst.Return) -> None:
        self.found.append(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


def is_zero(nonzero: Parts | None, path: Path) -> bool:
    """Whether the output part at ``path`` has a zero cotangent under ``nonzero``."""
    return nonzero is not None and not any(q[:len(path)] == path or path[:len(q)] == q for q in nonzero)


def seed_parts(v: VJP, node: cst.BaseExpression, g: str, adj: list[str], defined: set[str],
               nonzero: Parts | None, path: Path = ()) -> None:
    """``return a, {"h": h, "pair": (s, m)}``: each returned name gets its part of ``g`` (none where the part is a
    zero under ``nonzero``, the backward half's pattern)."""
    if is_zero(nonzero, path):
        return
    if isinstance(node, cst.Name):
        if node.value in v.act.active:
            v.accumulate(node.value, g, adj, "    ", defined)
    elif isinstance(node, (cst.Tuple, cst.List)):
        for k, e in enumerate(node.elements):
            seed_parts(v, e.value, f"{g}[{k}]", adj, defined, nonzero, (*path, k))
    elif isinstance(node, cst.Dict) and all(isinstance(e, cst.DictElement) for e in node.elements):
        keyed = bool(_elements(node))  # (literal keys: a pattern can name its items; else all of them)
        for de in node.elements:
            key = _key(de.key) if keyed else ""  # type: ignore[attr-defined]
            seed_parts(v, de.value, f"{g}[{code(de.key)}]", adj, defined,  # type: ignore[attr-defined]
                       nonzero if keyed else None, (*path, key or ""))
    elif any(n in v.act.active for n in names_in(node)):
        raise DifferentiationError(f"cannot differentiate `return {code(node)}` yet",
                                   hint="assign the result to a variable and return that")
