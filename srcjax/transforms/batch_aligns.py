"""Drop the ``batch_align(x, y)`` and ``batch_align_b(x, y)`` calls of vmap's source that change nothing.

Input: the module text vmap writes, one primitive per line (after :mod:`.simplify`, before
:mod:`.readable`). An elementwise call on a batched operand gives it at least as many per-example axes as each
other operand (``batch_align_b(add, b) - batch_align_b(b, add)``): shape-generic source does not know ranks. But
the text says some: a value computed elementwise from ``x`` and ``y`` (``add = mul + sin``) has at least as
many per-example axes as each of them, and ``np.sin(a)`` or ``a * 2.0`` as many as ``a`` (one operand). Where
such a fact says ``x`` has at least ``y``'s axes, ``batch_align_b(x, y)`` and ``batch_align(x, y)`` return
``x`` itself (:mod:`srcjax.batched`), and are written ``x``. A reduction over every per-example axis
(``np.max(logits, axis=batch_axes(logits))``) has none where it is batched, nor what is computed elementwise
from one such value and numbers (or from several that ``batch_align_b`` calls show batched): every batched value
has at least its axes (``z = logits - batch_align_b(max_1, logits)``, not ``batch_align_b(logits, max_1) - ...``).
Only ``batch_align_b(x, y)`` is dropped so (``y`` batched there); an unbatched such ``y`` of ``batch_align`` may
be a reduction of an outer vmap's values, with that vmap's batch axis left. Output: the same module, those calls
replaced.

Facts come from straight-line assignments of each function body (nested functions: their own facts); a name
bound again forgets its facts, and a compound statement (loop, branch, ``with``, ``try``, a nested ``def``)
forgets those of every name it binds, as does a walrus; a statement with a lambda or a comprehension (whose
parameters may shadow the names) is left as it is. Ranks are per example for a batched value and the value's
own for an unbatched one: both ``batch_align`` calls compare exactly these. A program whose broadcasting is
right makes every fact true (an elementwise result has the largest rank of its operands), so this pass keeps
values, shapes and dtypes; tests/test_batch_aligns.py runs the before and after, and
tests/test_batch_aligns_random.py random programs of full reductions under vmap, nested vmap and derivatives.

The invariant every rule keeps: a fact is about ``np.ndim`` of the values as the vmap that wrote the text sees
them, never about shapes some helper states in another vmap's terms. Batched source is batched again (nested
vmap, ``jacfwd`` of a ``jacrev``: its batched JVP): a line whose operands this vmap does not batch is the inner
program's line, copied, and its values carry the inner vmap's batch axis in front. NumPy's elementwise rule
(rank: the largest of the operands', for every value, batched or not) and a full reduction over
``batch_axes(x)`` (written by the vmap that batches ``x``: an inner one's is rewritten ``batch_axes_at``) hold in
every such frame. A helper that states its result's shape per example of its own vmap does not: the withdrawn
rule's half that ``batch_unbroadcast(x, y, bx, by)``/``batch_expand_reduced`` has ``y``'s axes was off by the
inner batch axis (its other half, ``ones_like``/``zeros_like`` with their operand's, holds in every frame).
``hessian(lambda v: np.sin(v) * 2.0)`` first runs forward over the gradient's source, whose scalar-output
``assert`` refuses the vector output as it should (dropping its ``batch_align(mul_2, mul_1)`` there changed
nothing); the Hessian then takes ``jacfwd(jacrev(f))``, where ``jacrev``'s VJP, batched over its basis,
writes ``unbroadcast_1 = batch_unbroadcast(mul, sin, True, False)`` (the basis axis in front of ``sin``'s), and
``jacfwd`` batches that source again over its own basis, leaving that line as it is (not batched there). The
rule took ``unbroadcast_1`` to have ``sin``'s rank, 1, where it has 2, and dropped ``batch_align(mul_1,
unbroadcast_1)`` of the ``jacfwd``-batched ``mul_1``: ``(4, 4) * (4, 4)`` multiplied elementwise where ``(4, 1,
4) * (4, 4)`` broadcast, the diagonal of the answer, f64[4, 4] for jax's f64[4, 4, 4].
"""

from __future__ import annotations

import ast
from functools import lru_cache

from ..frontend.ast_walk import statements, walked
from ..frontend.parsed import parse

__all__ = ["drop_trivial_aligns"]

_ALIGNS = ("batch_align", "batch_align_b")
_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.BitAnd, ast.BitOr, ast.BitXor,
        ast.LShift, ast.RShift)
_COMPARE = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


@lru_cache(maxsize=1)
def _elementwise_paths() -> frozenset[str]:
    """``np.sin``, ``np.where``, ...: the calls whose vmap rule is elementwise (their result broadcasts the
    operands)."""
    from ..primitives import batch_rules
    from ..primitives.registry import PRIMITIVES

    return frozenset(p.path for p in PRIMITIVES.values() if p.batch is batch_rules.elementwise)


def drop_trivial_aligns(text: str) -> str:
    """``text`` with every ``batch_align(x, y)``/``batch_align_b(x, y)`` whose ``x`` surely has at least
    ``y``'s per-example axes written ``x``."""
    if "batch_align" not in text:
        return text
    try:
        tree = parse(text)  # (shared, read-only: the readable pass reads the same text next when nothing changes)
    except SyntaxError:  # pragma: no cover - generated text parses
        return text
    edits: list[tuple[int, int, int, int, str]] = []
    scoped = "global " in text or "nonlocal " in text  # (else no function need be walked for them)
    lines = text.splitlines(keepends=True)
    for node in statements(tree):  # (a function is a statement: no expression walked to find them)
        # (a function with no align call in its lines has nothing to rewrite: its facts are its own)
        if isinstance(node, ast.FunctionDef) and \
                "batch_align" in "".join(lines[node.lineno - 1:node.end_lineno or node.lineno]):
            _function(node, edits, lines, scoped)
    if not edits:
        return text
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    for l0, c0, l1, c1, new in sorted(edits, reverse=True):
        a, b = starts[l0 - 1] + _offset(lines[l0 - 1], c0), starts[l1 - 1] + _offset(lines[l1 - 1], c1)
        text = text[:a] + new + text[b:]
    return text


def _offset(line: str, col: int) -> int:
    """The character index of ``ast``'s byte offset ``col`` in ``line``."""
    return len(line.encode("utf-8")[:col].decode("utf-8", errors="ignore"))


def _function(fdef: ast.FunctionDef, edits: list[tuple[int, int, int, int, str]], lines: list[str],
              scoped: bool = True) -> None:
    nodes = walked(fdef)  # (each statement's walk remembered from this one)
    if scoped and any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in nodes):
        return
    below: dict[str, set[str]] = {}  # name -> names with at most its per-example rank
    reduced: set[str] = set()  # names with no per-example axis where batched
    for s in fdef.body:
        own = "".join(lines[s.lineno - 1:s.end_lineno or s.lineno])  # (the statement's lines)
        if isinstance(s, (ast.Assign, ast.Return, ast.Expr, ast.Assert)) and "batch_align" in own:  # (else none
            _rewrite(s, below, edits, reduced)  # to drop)
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            name = s.targets[0].id
            ops = _operands(s.value)
            # (the operands with axes: one alone gives the result exactly its axes, `logp = z - log` of a
            # batched `log` with none; a call of batch_align_b is named in the statement's lines)
            aligned = _aligned_b(s.value) if "batch_align_b" in own else set()
            wide = list(dict.fromkeys(n for n in ops if n not in reduced or n not in aligned)) if ops else []
            if _full_reduction(s.value) or ops and all(n in reduced for n in ops) and \
                    (len(set(ops)) == 1 or set(ops) <= aligned):
                reduced.add(name)
            else:
                reduced.discard(name)
            known: set[str] = set()
            if ops is not None:
                for n in ops:
                    known |= {n} | below.get(n, set())
            if ":=" in "".join(lines[s.lineno - 1:s.end_lineno or s.lineno]):  # (a walrus in the value)
                for n in _bound(s) - {name}:
                    _forget(below, n)
                    reduced.discard(n)
            _forget(below, name)
            if ops is None:
                continue
            below[name] = known - {name}
            if len(wide) == 1 and wide[0] != name:  # (as many axes as its one operand: below that operand
                below.setdefault(wide[0], set()).add(name)  # and what that operand is below)
                for names in below.values():
                    if wide[0] in names:
                        names.add(name)
        else:
            for n in _bound(s):
                _forget(below, n)
                reduced.discard(n)


def _forget(below: dict[str, set[str]], name: str) -> None:
    below.pop(name, None)
    for names in below.values():
        names.discard(name)


def _bound(s: ast.stmt) -> set[str]:
    """Every name a statement binds, nested statements included."""
    out: set[str] = set()
    for n in walked(s):  # (exact types, as parsed: no call a node)
        t = n.__class__
        if t is ast.Name:
            if n.ctx.__class__ is ast.Store:  # type: ignore[attr-defined]
                out.add(n.id)  # type: ignore[attr-defined]
        elif t in _DEFS:
            out.add(n.name)  # type: ignore[attr-defined]
        elif t is ast.alias:
            out.add((n.asname or n.name).split(".")[0])  # type: ignore[attr-defined]
        elif t in _NAMED and n.name:  # type: ignore[attr-defined]
            out.add(n.name)  # type: ignore[attr-defined]
    return out


_DEFS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
_NAMED = frozenset({ast.ExceptHandler, ast.MatchAs, ast.MatchStar})  # (a name held as a string)
_SCOPES = frozenset({ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp})


def _align(node: ast.AST) -> tuple[str, str] | None:
    """``(x, y)`` of a ``batch_align(x, y)``/``batch_align_b(x, y)`` call of two names."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ALIGNS and \
            len(node.args) == 2 and not node.keywords and all(isinstance(a, ast.Name) for a in node.args):
        x, y = node.args
        assert isinstance(x, ast.Name) and isinstance(y, ast.Name)
        return x.id, y.id
    return None


def _rewrite(s: ast.stmt, below: dict[str, set[str]], edits: list[tuple[int, int, int, int, str]],
             reduced: set[str]) -> None:
    nodes = walked(s)  # (the shared tree's: the readable pass walks the same statements)
    for node in nodes:
        if node.__class__ in _SCOPES:
            return  # (a lambda's parameters, a comprehension's targets, may shadow the names)
    for node in nodes:
        pair = _align(node) if node.__class__ is ast.Call else None
        if pair is not None and (pair[1] == pair[0] or pair[1] in below.get(pair[0], ()) or
                                 pair[1] in reduced and node.func.id == "batch_align_b"):  # type: ignore[attr-defined]
            assert isinstance(node, ast.Call) and node.end_lineno is not None and node.end_col_offset is not None
            edits.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, pair[0]))


_REDUCTIONS = frozenset({"sum", "prod", "max", "min", "amax", "amin", "mean", "any", "all", "std", "var"})


def _aligned_b(e: ast.expr) -> set[str]:
    """The names ``e`` passes to ``batch_align_b`` (batched there: it aligns two batched values)."""
    return {n for node in walked(e) if (pair := _align(node)) is not None and
            node.func.id == "batch_align_b" for n in pair}  # type: ignore[attr-defined]


def _full_reduction(e: ast.expr) -> bool:
    """Whether ``e`` is ``np.<reduction>(x, axis=batch_axes(x))`` (no ``keepdims``): no per-example axis left."""
    if not (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and isinstance(e.func.value, ast.Name)
            and e.func.value.id == "np" and e.func.attr in _REDUCTIONS and len(e.args) == 1
            and isinstance(e.args[0], ast.Name) and len(e.keywords) == 1 and e.keywords[0].arg == "axis"):
        return False
    axis = e.keywords[0].value
    return isinstance(axis, ast.Call) and isinstance(axis.func, ast.Name) and axis.func.id == "batch_axes" and \
        len(axis.args) == 1 and not axis.keywords and isinstance(axis.args[0], ast.Name) and \
        axis.args[0].id == e.args[0].id


def _operands(e: ast.expr) -> list[str] | None:
    """The names an elementwise expression broadcasts together (a copy ``x`` too); None: not one."""
    if isinstance(e, ast.Name):
        return [e.id]
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd, ast.Invert)):
        return _atom(e.operand)
    if isinstance(e, ast.BinOp) and isinstance(e.op, _OPS):
        left, right = _atom(e.left), _atom(e.right)
        return None if left is None or right is None else left + right
    if isinstance(e, ast.Compare) and len(e.ops) == 1 and isinstance(e.ops[0], _COMPARE):
        left, right = _atom(e.left), _atom(e.comparators[0])
        return None if left is None or right is None else left + right
    if isinstance(e, ast.Call):
        pair = _align(e)
        if pair is not None:
            return list(pair)
        f = e.func
        if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "np" and
                f"np.{f.attr}" in _elementwise_paths()):
            return None
        out: list[str] = []
        for a in [*e.args, *(k.value for k in e.keywords if k.arg is not None)]:
            got = _atom(a)
            if got is None:
                return None
            out += got
        return out if not any(k.arg is None for k in e.keywords) else None
    return None


def _atom(e: ast.expr) -> list[str] | None:
    """An operand: a name, a number (no names), or an align call of two names (both)."""
    if isinstance(e, ast.Name):
        return [e.id]
    if isinstance(e, ast.Constant) and isinstance(e.value, (int, float, complex, bool)):
        return []
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) and isinstance(e.operand, ast.Constant):
        return []
    pair = _align(e)
    return list(pair) if pair is not None else None
