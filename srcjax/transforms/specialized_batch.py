"""The calls of ``srcjax.batched``'s helpers that the print for given shapes writes as what they do
(:mod:`.specialized_print`), and which program functions it may drop when nothing reads their result.

A batched program (``vmap``; ``hessian``, ``jacfwd`` and ``jacrev``, which are one batched JVP or
VJP) aligns ranks per example with helpers whose effect depends on shapes only. For the shapes
the specializer recorded (the batch axis included), each rule below is exact:

- ``batch_align(x, y)``, ``batch_align_b(x, y)`` (``batch_align_at(x, y, lead_x, lead_y)``: after leading batch
  axes) add length-1 axes after the batch axis, or return ``x`` itself: a result with ``x``'s abstract value is ``x``;
- ``batch_unbroadcast(g, x, True, _)`` of a batched ``g`` with the result's abstract value sums no
  axis (or only length-1 ones) and reshapes to the shape it has: ``g``;
- ``batch_broadcast_like(t, y, True, _)`` of a batched ``t`` with the result's abstract value
  broadcasts ``t`` to its own shape: ``t``;
- ``batch_matmul(x1, x2, b1, b2)`` is ``x1 @ x2`` where the helper calls ``np.matmul(x1, x2)``
  itself: a batched vector times a shared matrix, or matrices whose ranks need no new axes; and
  the helper's own expression where its ranks need no new axes: ``np.sum(x1 * x2, axis=-1)``
  for two vectors per example, ``x2 @ x1.T`` for a shared matrix times a batch of vectors,
  ``(x1 @ x2[..., None])[..., 0]`` for matrices times vectors (and the mirror);
- ``batch_squeeze(a, axis)`` is ``np.squeeze(a, axis=...)`` with the batched axes it computes;
- ``batch_argmax(a, None, False)`` (``argmin``) is ``np.argmax(a, axis=1)`` for one axis per
  example, ``np.argmax(np.reshape(a, (n, -1)), axis=1)`` for more (the helper's flattening);
- ``batch_tile(a, reps)`` with no more ``reps`` than axes per example (no new axes) is
  ``np.tile(a, (1, ...) + reps)``, the helper's own call;
- ``batch_transpose(a, axes)`` with static ``axes`` is ``np.transpose(a, (0, ...))``, the helper's call;
- ``taken(x, test, ...)`` of an integer or boolean ``x`` (a batched loop's counter or flag, marked
  with the examples still running: the mark masks a cotangent, and these have none) is ``x``;
- ``batch_getitem(x, key)`` with a literal key of integers, slices of integers, ``None`` and ``...``
  (basic indexing: no arrays, which would move axes) is ``x[:, key]``.

Whatever is rewritten is still checked against the generic program before it is printed.
"""

from __future__ import annotations

import ast
import re
import symtable
from collections.abc import Callable
from typing import Any

import libcst as cst

from ..frontend.names import Visitor

Fact = tuple[Any, ...]

IDENTITIES = ("batch_align", "batch_align_b", "batch_align_at", "batch_unbroadcast", "batch_broadcast_like")
PURE_BUILTINS = frozenset({"range", "tuple", "list", "len", "int", "float", "bool", "abs", "min", "max",
                           "zip", "enumerate", "reversed", "isinstance", "sorted", "all", "any",
                           "sum", "round", "divmod"})


def _flag(e: cst.BaseExpression) -> bool | None:
    return {"True": True, "False": False}.get(e.value) if isinstance(e, cst.Name) else None


def rewrite_call(fn: str, args: list[cst.BaseExpression], ft: Fact,
                 fact: Callable[[str | None], Fact | None]) -> tuple[str, str] | None:
    """("same", name) where the call is the value of ``name``; ("expr", text) where it is ``text``;
    None where no rule applies (``fact`` reads a name's recorded value)."""
    names = [a.value if isinstance(a, cst.Name) else None for a in args]
    if ft[0] != "a" or not names or names[0] is None:
        return None
    f0 = fact(names[0])
    if fn == "taken" and f0 == ft and ft[2].kind in "biu":  # (an integer's or a boolean's: no cotangent to mask)
        return ("same", names[0])
    if fn in IDENTITIES and f0 == ft:
        if fn in ("batch_align", "batch_align_b") and len(args) == 2 or fn == "batch_align_at" and len(args) == 4:
            return ("same", names[0])
        if fn in ("batch_unbroadcast", "batch_broadcast_like") and len(args) == 4 and _flag(args[2]) is True:
            return ("same", names[0])
    if fn == "batch_matmul" and len(args) == 4 and names[1] is not None:
        f1, b1, b2 = fact(names[1]), _flag(args[2]), _flag(args[3])
        if f0 is None or f0[0] != "a" or f1 is None or f1[0] != "a" or b1 is None or b2 is None:
            return None
        r1, r2 = len(f0[1]) - b1, len(f1[1]) - b2
        plain = b1 and not b2 and r1 == 1 and r2 == 2 or (
            r1 >= 2 and r2 >= 2 and not (b2 and not b1 and r1 == 2 and r2 == 2)
            and (not b1 or r1 >= r2) and (not b2 or r2 >= r1))
        if plain:
            return ("expr", f"{names[0]} @ {names[1]}")
        x1, x2 = names[0], names[1]
        if r1 == 1 and r2 == 1:  # two vectors per example
            return ("expr", f"np.sum({x1} * {x2}, axis=-1)")
        if b2 and not b1 and r1 == 2 and r2 == 1 and len(f0[1]) == 2:  # a shared matrix times a batch of vectors
            return ("expr", f"{x2} @ {x1}.T")
        if r2 == 1 and r1 >= 2 and (not b2 or r1 <= 2):  # (no new axes for the vector)
            return ("expr", f"({x1} @ {x2}[..., None])[..., 0]")
        if r1 == 1 and r2 >= 2 and (not b1 or r2 <= 2):
            return ("expr", f"({x1}[..., None, :] @ {x2})[..., 0, :]")
    if fn == "batch_squeeze" and len(args) == 2 and f0 is not None and f0[0] == "a":
        shape = f0[1]
        axis = _static(args[1], fact)
        if axis is None and isinstance(args[1], cst.Name) and args[1].value == "None":
            axes: Any = tuple(i for i in range(1, len(shape)) if shape[i] == 1)
        elif type(axis) is int:
            axes = axis + 1 if axis >= 0 else axis
        elif isinstance(axis, tuple) and all(type(a) is int for a in axis):
            axes = tuple(a + 1 if a >= 0 else a for a in axis)
        else:
            return None
        return ("expr", f"np.squeeze({names[0]}, axis={axes!r})")
    if fn in ("batch_argmax", "batch_argmin") and len(args) == 3 and f0 is not None and f0[0] == "a" and \
            isinstance(args[1], cst.Name) and args[1].value == "None" and _flag(args[2]) is False:
        shape, call = f0[1], "np." + fn.removeprefix("batch_")
        if len(shape) == 2:
            return ("expr", f"{call}({names[0]}, axis=1)")
        if len(shape) > 2:
            return ("expr", f"{call}(np.reshape({names[0]}, ({shape[0]}, -1)), axis=1)")
    if fn == "batch_tile" and len(args) == 2 and f0 is not None and f0[0] == "a":
        reps = _static(args[1], fact)
        reps = (reps,) if type(reps) is int else reps
        if isinstance(reps, tuple) and all(type(r) is int for r in reps) and len(reps) <= len(f0[1]) - 1:
            return ("expr", f"np.tile({names[0]}, {(1,) * (len(f0[1]) - len(reps)) + reps!r})")
    if fn == "batch_transpose" and len(args) == 2 and f0 is not None and f0[0] == "a" and len(f0[1]) >= 1:
        n = len(f0[1]) - 1
        axes = _static(args[1], fact)
        if isinstance(args[1], cst.Name) and args[1].value == "None":
            perm: Any = tuple(range(n, 0, -1))
        elif isinstance(axes, tuple) and len(axes) == n and all(type(p) is int for p in axes) and n:
            perm = tuple((p % n) + 1 for p in axes)
        else:
            return None
        return ("expr", f"np.transpose({names[0]}, {(0,) + perm!r})")
    if fn == "batch_getitem" and len(args) == 2 and f0 is not None and f0[0] == "a" and len(f0[1]) >= 1:
        key = _basic_key(args[1])
        if key is not None:
            return ("expr", f"{names[0]}[:, {key}]")
    return None


def _basic_key(e: cst.BaseExpression) -> str | None:
    """The text of a literal basic index (``0``, ``-1``, ``np.s_[::2, 1::3]``) inside ``x[...]``: integers,
    slices of integer literals, ``None`` and ``...``; None for anything else."""
    code = cst.Module(body=[]).code_for_node(e)
    try:
        tree = ast.parse(code, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(tree, ast.Subscript) and isinstance(tree.value, ast.Attribute) and tree.value.attr == "s_" and \
            isinstance(tree.value.value, ast.Name) and tree.value.value.id == "np":
        tree = tree.slice
    items = tree.elts if isinstance(tree, ast.Tuple) else [tree]

    def integer(n: ast.expr | None) -> bool:
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            n = n.operand
        return n is None or isinstance(n, ast.Constant) and type(n.value) is int

    for it in items:
        if isinstance(it, ast.Slice):
            if not (integer(it.lower) and integer(it.upper) and integer(it.step)):
                return None
        elif not (integer(it) or isinstance(it, ast.Constant) and it.value in (None, Ellipsis)):
            return None
    return ", ".join(ast.unparse(it) for it in items)


def _static(e: cst.BaseExpression, fact: Callable[[str | None], Fact | None]) -> Any:
    """The static value of ``e``: a literal number or tuple of numbers, or a name recorded static."""
    if isinstance(e, cst.Name):
        f = fact(e.value)
        return f[2] if f is not None and f[0] == "s" else None
    try:
        v = ast.literal_eval(cst.Module(body=[]).code_for_node(e))
    except (ValueError, SyntaxError):
        return None
    return v if type(v) is int or isinstance(v, tuple) else None


# -- which program functions are pure (a dead call of one goes) -------------------------------------


class _Effects(Visitor):
    def __init__(self, pure: set[str]) -> None:
        self.pure, self.ok, self.defs = pure, True, 0

    def visit_Call(self, node: cst.Call) -> None:
        f = node.func
        if isinstance(f, cst.Name) and f.value in self.pure:
            return
        while isinstance(f, cst.Attribute):
            f = f.value
        if not (isinstance(node.func, cst.Attribute) and isinstance(f, cst.Name) and f.value == "np"):
            self.ok = False

    def _targets(self, targets: list[cst.BaseExpression]) -> None:
        for t in targets:
            if isinstance(t, (cst.Tuple, cst.List)):
                self._targets([e.value for e in t.elements])
            elif not isinstance(t, cst.Name):
                self.ok = False  # (a subscript or attribute stored into: a mutation)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._targets([t.target for t in node.targets])

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._targets([node.target])

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets([node.target])

    def visit_For(self, node: cst.For) -> None:
        self._targets([node.target])

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.defs += 1
        self.ok = self.ok and self.defs == 1  # (a nested function: not read)

    def _effect(self, node: cst.CSTNode) -> None:
        self.ok = False

    visit_Global = visit_Nonlocal = visit_Lambda = visit_Yield = visit_Await = visit_Del = visit_Raise = \
        visit_With = visit_Try = visit_ClassDef = visit_Import = visit_ImportFrom = _effect


def pure_functions(program: Any, pure: set[str]) -> set[str]:
    """The program functions whose calls have no effect but their result: only NumPy calls, calls of
    ``pure`` names and of such functions, and no store into a subscript or attribute."""
    fdefs = {nf.name: nf.fdef for nf in program.functions.values() if nf.fdef.name.value == nf.name}
    ok = set(fdefs)
    changed = True
    while changed:
        changed = False
        for name in sorted(ok):
            v = _Effects(set(pure) | ok | set(PURE_BUILTINS))
            v.walk(fdefs[name])
            if not v.ok or fdefs[name].decorators:
                ok.discard(name)
                changed = True
    return ok


# -- the functions nothing calls any more -------------------------------------------------------------


def _global_reads(t: symtable.SymbolTable) -> set[str]:
    """The module-level names a function's table (and the functions nested in it) reads."""
    names = {s.get_name() for s in t.get_symbols() if s.is_referenced() and s.is_global()}
    for c in t.get_children():
        names |= _global_reads(c)
    return names


def _calls(text: str) -> tuple[dict[str, ast.FunctionDef], dict[str, set[str]], set[str]]:
    """The module's functions, the module's functions each reads (not a local or parameter of the same
    name: a helper's parameter ``g`` is not the user's function ``g``), and the names its other
    statements read."""
    tree = ast.parse(text)
    fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    tables = {t.get_name(): t for t in symtable.symtable(text, "<module>", "exec").get_children()}
    reads = {k: _global_reads(tables[k]) & set(fns) - {k} for k in fns}
    top = {n.id for s in tree.body if not isinstance(s, ast.FunctionDef) for n in ast.walk(s)
           if isinstance(n, ast.Name)}
    return fns, reads, top


def without_unused(text: str, generic: str) -> str:
    """``text`` without the functions that none of ``generic``'s roots (its functions no other calls,
    and those its module-level statements read) reaches any more."""
    gfns, greads, gtop = _calls(generic)
    called = set().union(*greads.values()) if greads else set()
    roots = {k for k in gfns if k not in called or k in gtop}
    fns, reads, _ = _calls(text)
    seen: set[str] = set()
    todo = [r for r in roots if r in fns] + [k for k in fns if k not in gfns]
    while todo:
        k = todo.pop()
        if k not in seen:
            seen.add(k)
            todo += reads.get(k, set())
    dead = [f for k, f in fns.items() if k not in seen]
    if not dead:
        return text
    lines = text.splitlines(True)
    for f in sorted(dead, key=lambda f: -f.lineno):
        start = min([f.lineno] + [d.lineno for d in f.decorator_list]) - 1
        del lines[start:f.end_lineno or start]
    return re.sub(r"\n{4,}", "\n\n\n", "".join(lines)).rstrip("\n") + "\n"
