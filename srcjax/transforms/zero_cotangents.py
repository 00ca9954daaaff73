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
element); a pattern the callee's one ``return`` display cannot place is no pattern (every part nonzero).

The same facts inside one adjoint: a container display's parts never read (``t = (a, b)`` read as ``t[1]``;
:func:`unread`), a nested unpacking's parts without a cotangent (:func:`pack_adjoint`), a loop-carried name no
cotangent reaches (:meth:`CallParts.may_get_one`: no zeros at the loop's entry), and, under reverse over reverse,
a derivative tape's elements that every pop gives a zero (:class:`TapeZeros`): none of them runs a rule."""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import libcst as cst

from .. import adjoint as _adjoint
from ..frontend.names import Visitor, code, names_in, target_names
from .anf import DifferentiationError, tuple_target_code

if TYPE_CHECKING:
    from ..frontend.normalize import NormalizedFunction
    from .reverse_ad import VJP

__all__ = ["CallParts", "Halves", "Parts", "TapeZeros", "call_cotangent", "is_zero", "live_names", "pack_adjoint",
           "resolve", "seed_parts", "unread"]

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


def _flows(body: Sequence[Any], out: list[tuple[set[str], set[str]]], pure: Callable[[cst.Call], bool]) -> bool:
    """``(targets, reads)`` of each statement: a cotangent of a target may flow to the reads. False where the body
    holds a statement this does not know (then no name is known to get no cotangent). ``pure``: whether a call
    changes none of its arguments (a primitive's)."""
    for s in body:
        if isinstance(s, cst.SimpleStatementLine):
            for small in s.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                        _paired(small.targets[0].target, small.value, out):
                    continue  # (`a, (b, c) = x, (y, z)`: each part's cotangent to its own only)
                if isinstance(small, cst.Assign):
                    targets = {n for t in small.targets for n in names_in(t.target)}
                    bound = {n for t in small.targets for n in target_names(t.target)}  # (`a[i] = v`: a read too)
                    reads = set(names_in(small.value))  # (a call may change a list it is given: `f_fwd(x, _tape)`)
                    changed = reads if isinstance(small.value, cst.Call) and not pure(small.value) else set()
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
            if not _flows(s.body.body, out, pure):  # (the test gets no cotangent)
                return False
            if s.orelse is not None and not _flows([s.orelse] if isinstance(s.orelse, cst.If) else
                                                   s.orelse.body.body, out, pure):
                return False
        elif isinstance(s, (cst.For, cst.While)) and s.orelse is None:
            if isinstance(s, cst.For):  # (an item's cotangent into its sequence's)
                out.append((set(target_names(s.target)), set(names_in(s.iter))))
            if not _flows(s.body.body, out, pure):
                return False
        else:
            return False
    return True


def _paired(target: cst.BaseExpression, value: cst.BaseExpression, out: list[tuple[set[str], set[str]]]) -> bool:
    """The flows of ``a, (b, c) = x, (y, z)``, part by part, into ``out``; False (none added) unless the target and
    the value are displays of one shape down to names (value leaves: names or literals)."""
    def pairs(t: cst.BaseExpression, e: cst.BaseExpression, acc: list[tuple[set[str], set[str]]]) -> bool:
        if isinstance(t, cst.Name):
            acc.append(({t.value}, set(names_in(e))))
            return isinstance(e, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)) or \
                isinstance(e, (cst.Tuple, cst.List)) and not names_in(e)
        if not isinstance(t, (cst.Tuple, cst.List)) or not isinstance(e, (cst.Tuple, cst.List)) or \
                len(t.elements) != len(e.elements) or \
                any(isinstance(x, cst.StarredElement) for x in (*t.elements, *e.elements)):
            return False
        return all(pairs(a.value, b.value, acc) for a, b in zip(t.elements, e.elements))

    if not isinstance(target, (cst.Tuple, cst.List)):
        return False
    acc: list[tuple[set[str], set[str]]] = []
    if not pairs(target, value, acc):
        return False
    out += acc
    return True


def live_names(body: Sequence[Any], active: set[str], seeds: set[str],
               pure: Callable[[cst.Call], bool] = lambda call: False) -> set[str] | None:
    """The active names of ``body`` whose cotangent may be nonzero somewhere, given the names ``seeds`` the output's
    cotangent reaches; None where the body holds a statement :func:`_flows` does not know."""
    flows: list[tuple[set[str], set[str]]] = []
    if not _flows(body, flows, pure):
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
                seen: frozenset[str] = frozenset(), zeros: bool = True) -> set[Path] | None:
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
                deeper = _read_parts(u.value, body, live, returned, seen | {t}, zeros) \
                    if len(s.targets) == 1 and isinstance(u, cst.Name) else None
                out |= {(k,)} if deeper is None else {(k, *p) for p in deeper}
                continue
        if t in _reads(s.value if isinstance(s, cst.Assign) else s, zeros):
            return None
    return out


def _reads(node: cst.CSTNode, zeros: bool) -> set[str]:
    """The names ``node`` reads, less those read only for a zero's shape (``index_add(zeros_like(r), "y", g)``, the
    adjoint of ``r["y"]``: no cotangent reaches ``r`` through it, so its other parts stay zeros) where ``zeros``
    (``zeros_like`` is srcjax's, not a user's function)."""
    if not zeros:
        return set(names_in(node))
    finder = _NotInZeros()
    node.visit(finder)
    return finder.names


class _NotInZeros(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Call(self, node: cst.Call) -> bool:
        return not (isinstance(node.func, cst.Name) and node.func.value == "zeros_like")

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


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
        self.v = weakref.proxy(v)  # (the writer holds this: a strong reference back made a cycle of every writer,
        # its analyses and their trees, left to the cyclic collector)
        self.by_op: dict[int, Parts | None] | None = None
        self.live: set[str] | None = None  # (the names whose cotangent may be nonzero; None: any name's may)

    def of(self, op: Any) -> Parts | None:
        if self.by_op is None:
            self.by_op = self._compute()
        return self.by_op.get(id(op))

    def may_get_one(self, name: str) -> bool:
        """Whether a nonzero cotangent may reach ``name`` anywhere in the function (:func:`live_names`)."""
        if self.by_op is None:
            self.by_op = self._compute()
        return self.live is None or name in self.live

    def _compute(self) -> dict[int, Parts | None]:
        v = self.v
        out: dict[int, Parts | None] = {}
        ret = v.ret.value
        seeds: set[str] = set()
        if ret is not None:
            _seed_names(ret, v.nonzero, (), seeds)
        self.live = live = live_names(v.body, v.act.active, seeds, lambda call: v.act.op(call).kind == "prim")
        if live is None:
            return out
        returned = set(names_in(ret)) if ret is not None else set()  # (a name returned: all of it)
        user = v.program.functions.get("zeros_like")  # (srcjax.adjoint's: no derivative; not a user's function)
        zeros = user is None or getattr(user, "fn", None) is _adjoint.zeros_like
        for s in _statements(v.body):
            if isinstance(s, cst.Assign) and len(s.targets) == 1 and isinstance(s.targets[0].target, cst.Name) and \
                    isinstance(s.value, (cst.Tuple, cst.List, cst.Dict)) and _elements(s.value):
                # `t = (a, b)`, `r = {"a": a, "b": b}` read as `t[1]`, `r["b"]`: a's part gets none (was `t_bar[0]`,
                # zeros, into `a = np.sqrt(...)`'s derivative: 0 * inf)
                name = s.targets[0].target.value
                found = _read_parts(name, v.body, live, returned, zeros=zeros) if name in live else set()
                out[id(v.act.op(s.value))] = None if found is None else _placed(s.value, found)
            if not isinstance(s, cst.Assign) or not isinstance(s.value, cst.Call) or len(s.targets) != 1:
                continue
            op = v.act.op(s.value)
            if op.kind != "call":
                continue
            target = s.targets[0].target
            parts: set[Path] | None = set()
            if isinstance(target, cst.Name):
                parts = _read_parts(target.value, v.body, live, returned, zeros=zeros) if target.value in live \
                    else set()
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
    out = _placed(ret, parts)
    return out if out is not None and any(is_zero(out, leaf) for leaf in _leaves(ret, ())) else None


def _placed(display: cst.BaseExpression, parts: Parts | set[Path]) -> Parts | None:
    """``parts`` placed on ``display`` (:func:`_place`); None where one cannot be."""
    placed = set()
    for p in parts:
        q = _place(display, p)
        if q is None:
            return None
        placed.add(q)
    return frozenset(placed)


def unread(v: VJP, op: Any, key: cst.BaseExpression | int) -> bool:
    """Whether no cotangent reaches the part ``key`` (an index, or a literal key) of the container display ``op``
    builds (``t = (a, b)`` read only as ``t[1]``: part 0)."""
    k = key if isinstance(key, int) else _key(key)
    return k is not None and is_zero(v.call_parts.of(op), (k,))


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


# -- symbolic zeros inside one adjoint: a tuple unpacked in part, a tape's elements ------------------------------

def pack_adjoint(v: VJP, s: cst.Assign, op: Any, target: cst.BaseExpression, g: str, had: set[str],
                 lines: list[str], pad: str, defined: set[str]) -> None:
    """The adjoint of ``t = a, b`` (``g``: ``t``'s cotangent) and of ``a, (b, c) = x, (y, z)`` (``had``: the targets
    that had a cotangent): each part's into its own (:func:`_pack_parts`); ``p, q = q, p``: every part read before
    any is replaced."""
    assert isinstance(s.value, (cst.Tuple, cst.List))
    if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == len(op.elements):
        if not set(op.elements) & set(target_names(target)):
            return _pack_parts(v, target, s.value, had, lines, pad, defined)
        saved = v.names.fresh("parts_bar")
        bars = [tuple_target_code(e.value, lambda n: v.bname(n) if n in had else f"zeros_like({n})")
                for e in target.elements]
        lines.append(f"{pad}{saved} = ({', '.join(bars)},)")
        g = saved
    elif set(op.elements) & set(target_names(target)):
        saved = v.names.fresh("parts_bar")
        lines.append(f"{pad}{saved} = {g}")
        g = saved
    swap = set(op.elements) & set(target_names(target))
    for k, el in enumerate(s.value.elements):
        if swap or not unread(v, op, k):
            v.element_adjoint(el.value, f"{g}[{k}]", lines, pad, defined)


def _pack_parts(v: VJP, target: cst.BaseExpression, value: cst.BaseExpression, had: set[str], lines: list[str],
                pad: str, defined: set[str]) -> None:
    """``(d, (lg, s)), c = ((sqrt, (log, sin)), pow_1)`` with cotangents for ``s`` and ``c`` only (``had``): each
    target part that has one into its value part (``sin``, ``pow_1``); the others give nothing, where writing
    ``(zeros_like(d), ...)[0]`` into ``sqrt`` met its derivative ``0.5 / sqrt``: ``0 * inf``, a NaN where JAX's
    symbolic zero gives none (a helper inlined, a user's nested unpacking). Parts that do not line up (a name
    bound to a display, a starred element): all of that part, a zero where no name in it has a cotangent."""
    if isinstance(target, cst.Name):
        if target.value in had:
            v.element_adjoint(value, v.bname(target.value), lines, pad, defined)
        elif isinstance(value, cst.Name) and value.value in v.act.active and v.call_parts.may_get_one(value.value):
            # (a name a cotangent may reach elsewhere, a loop's carry: its zeros here, shaped like the target, which
            # needs no old value restored, as before)
            v.element_adjoint(value, f"zeros_like({target.value})", lines, pad, defined)
        return
    if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) and \
            len(target.elements) == len(value.elements) and not any(
                isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
        for t, e in zip(target.elements, value.elements):
            _pack_parts(v, t.value, e.value, had, lines, pad, defined)
        return
    if had & set(target_names(target)):
        g = tuple_target_code(target, lambda n: v.bname(n) if n in had else f"zeros_like({n})")
        v.element_adjoint(value, g, lines, pad, defined)


def call_cotangent(v: VJP, op: Any, target: cst.BaseExpression, defined: set[str]) -> str | None:
    """``d, y = f(x)`` where no cotangent reaches ``d``: the cotangent ``(None, y_bar)`` for ``f``'s backward half,
    written for that pattern (it never reads a zero part), where ``(zeros_like(d), y_bar)`` read ``d`` for nothing:
    ``d`` was saved on the tape in a loop, and reverse over reverse differentiated ``d``'s derivative. None where
    the pattern is not placed (the half reads every part)."""
    callee, _, _ = v.call_bound(op)
    nonzero = resolve(callee, v.call_parts.of(op))
    if nonzero is None or any(isinstance(n, cst.StarredElement) for n in _tree(target)):
        return None

    def part(t: cst.BaseExpression, path: Path) -> str:
        if isinstance(t, (cst.Tuple, cst.List)):
            items = [part(e.value, (*path, k)) for k, e in enumerate(t.elements)]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        assert isinstance(t, cst.Name)
        return v.bname(t.value) if t.value in defined else "None" if is_zero(nonzero, path) else \
            f"zeros_like({t.value})"

    return part(target, ())


def _tree(target: cst.BaseExpression) -> list[cst.CSTNode]:
    """A tuple target's elements, nested ones too."""
    if not isinstance(target, (cst.Tuple, cst.List)):
        return []
    return [e for e in target.elements] + [n for e in target.elements for n in _tree(e.value)]


class TapeZeros:
    """Which elements of a derivative tape's appends get a zero cotangent, known statically (per tape element).

    Reverse over reverse: the outer adjoint of the inner backward pass's ``d, pow_1, y = _tape.pop()``, where only
    ``y`` gets a cotangent, appends ``(zeros_like(d), zeros_like(pow_1), y_bar)`` to ``_tape_bar``; the adjoint of
    the append ``_tape.append((d, pow_1, y,))`` that it undoes adds them into ``d_bar``: an array of zeros where JAX
    has a symbolic zero, and ``d = np.sqrt(...)``'s pullback made ``0 * inf``, a NaN. Which append a pop undoes is
    known only at run time, so an element is a zero when it is one at every pop of the list that could undo its
    append: each pop records, as its adjoint is written, which of its target's elements got ``zeros_like``; an
    append's adjoint, written after all the pops of its list (the adjoint sweep runs backwards; pops come after
    their appends), skips those elements. Only for lists bound to ``[]`` and otherwise only appended to and popped
    in this function (a list read any other way, passed to a call, or popped in a nested function: no zeros
    known)."""

    def __init__(self, body: Sequence[Any]) -> None:
        finder = _ListUses()
        for s in body:
            finder.walk(s)
        self.pops = {lst: n for lst, n in finder.pops.items() if lst not in finder.other}
        self.seen: dict[str, dict[int, tuple[bool, ...] | bool]] = {}

    def record(self, lst: str, stmt: cst.CSTNode, target: cst.BaseExpression | None, had: set[str]) -> None:
        """The pop ``stmt`` (``target = lst.pop()``, or ``lst.pop()`` without one) pushed a zero cotangent for the
        target's elements without a name in ``had``. Written twice (the sweeps' passes): a zero only both times."""
        if lst not in self.pops:
            return
        zero: tuple[bool, ...] | bool
        if target is None:
            zero = True
        elif isinstance(target, (cst.Tuple, cst.List)) and \
                not any(isinstance(e, cst.StarredElement) for e in target.elements):
            zero = tuple(not had & set(target_names(e.value)) for e in target.elements)
        else:
            zero = not had & set(target_names(target))
        seen = self.seen.setdefault(lst, {})
        old = seen.get(id(stmt), zero)
        if isinstance(old, tuple) and isinstance(zero, tuple):
            zero = tuple(a and b for a, b in zip(old, zero))
        elif old != zero:
            zero = False if isinstance(old, bool) or isinstance(zero, bool) else zero
        seen[id(stmt)] = zero

    def zero_items(self, lst: str, n: int) -> set[int]:
        """The elements of ``lst.append((e0, ..., e{n-1},))`` whose cotangent is a zero at every pop."""
        pops = self._pops(lst)  # (a tuple target of another length cannot undo this append: it would not unpack)
        return set() if pops is None else {k for k in range(n) if all(
            z is True or isinstance(z, tuple) and (len(z) != n or z[k]) for z in pops)}

    def all_zero(self, lst: str) -> bool:
        """Whether the cotangent of ``lst.append(v)`` is a zero at every pop (a tuple target: all its elements)."""
        pops = self._pops(lst)
        return pops is not None and all(z is True or isinstance(z, tuple) and all(z) for z in pops)

    def _pops(self, lst: str) -> list[tuple[bool, ...] | bool] | None:
        seen = self.seen.get(lst, {})
        return list(seen.values()) if lst in self.pops and len(seen) == self.pops[lst] else None


class _ListUses(Visitor):
    """Per list name: its pops (``t = lst.pop()``, ``lst.pop()``), and whether it is used any other way than
    those, ``lst.append(v)`` and ``lst = []`` (nested functions included: then no zeros are known for it).
    (A read-only :class:`~..frontend.names.Visitor`: libcst's rebuilt every statement of the body it visited.)"""

    def __init__(self) -> None:
        self.pops: dict[str, int] = {}
        self.other: set[str] = set()
        self.allowed: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        f = node.func
        if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and \
                (f.attr.value == "pop" and not node.args or f.attr.value == "append" and len(node.args) == 1):
            self.allowed.add(id(f.value))
            if f.attr.value == "pop":
                self.pops[f.value.value] = self.pops.get(f.value.value, 0) + 1

    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.List) and not node.value.elements:
            self.allowed |= {id(t.target) for t in node.targets if isinstance(t.target, cst.Name)}

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self.allowed:
            self.other.add(node.value)
