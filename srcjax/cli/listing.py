"""``srcjax-transpile FILE.py --list``: every top-level function, checked without calling it.

For each function: does it transpile (normalize), and if not its first error;
its parameters' shapes (annotations, ``--arg``, ``--dim``); with every shape
known, its output's shape (abstract evaluation: shape errors show here) and
whether ``--grad`` works on it. Symbolic dimensions with no value are checked
with stand-in values, named in a note.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import TranspileError
from . import highlight
from .loading import Loaded, UsageError
from .shapes import FunctionDecl, ShapeSpec, SpecError, resolve, tree_text
from .transform import check_differentiable, describe, parse_argnums, transformed, with_defaults


@dataclass
class Row:
    line: int
    signature: str
    transpiles: str = "ok"  # ok | error
    output: str = "?"  # a shape | ? (shapes unknown) | error | -
    grad: str = "?"  # ok | no | ? | -
    note: str = ""


def listing(loaded: Loaded, only: str | None, overrides: dict[str, Any], dims: dict[str, int],
            argnums: str | None, color: bool, max_iters: int | None = None) -> str:
    rows: list[Row] = []
    stand_ins: list[tuple[str, int]] = []
    for decl in loaded.decls.values():
        if only is None or decl.name == only:
            rows.append(check(loaded, decl, overrides, dims, argnums, stand_ins, max_iters))
    return render(loaded, rows, stand_ins, color)


def check(loaded: Loaded, decl: FunctionDecl, overrides: dict[str, Any], dims: dict[str, int],
          argnums_text: str | None, stand_ins: list[tuple[str, int]], max_iters: int | None = None) -> Row:
    from .. import api, printing

    mine = {k: v for k, v in overrides.items() if k in decl.params}
    row = Row(decl.line, signature(decl, mine))
    fn = getattr(loaded.module, decl.name, None)
    if not callable(fn):
        return _failed(row, f"after the import, {decl.name} is {type(fn).__name__}, not a function")
    try:
        printing.source(fn)
    except TranspileError as e:
        return _failed(row, one_line(e, loaded.path))
    try:
        r = resolve(decl, mine, dims, stand_ins=True)
    except SpecError as e:
        row.note = str(e)
        return row
    except TranspileError as e:
        row.note = one_line(e, loaded.path)
        return row
    if r.missing:
        p = r.missing[0]
        row.note = f"no shape for {', '.join(r.missing)}: annotate it (\"f32[3, 4]\") or pass --arg {p}=f32[3,4]"
        return row
    stand_ins += [d for d in r.stand_ins.items() if d not in stand_ins]
    args = with_defaults(fn, r.args)
    back = {v: k for k, v in r.stand_ins.items()}
    try:
        out = api.eval_shape(fn, **args)
    except TranspileError as e:
        row.output, row.grad, row.note = "error", "-", one_line(e, loaded.path)
        return row
    row.output = describe(out, back)
    try:
        argnums = parse_argnums(argnums_text, "grad", decl)
        nums = (argnums,) if isinstance(argnums, int) else argnums
        check_differentiable(fn, decl, "grad", nums, args, back)
        api.eval_shape(transformed(fn, "grad", argnums, max_iters), **args)
        row.grad = "ok"
    except UsageError as e:
        row.note = f"--grad: {e}"
    except TranspileError as e:
        note = one_line(e, loaded.path)
        row.grad, row.note = "no", note if "--grad" in note else f"--grad: {note}"
    return row


def _failed(row: Row, note: str) -> Row:
    row.transpiles, row.output, row.grad, row.note = "error", "-", "-", note
    return row


def signature(decl: FunctionDecl, overrides: dict[str, Any]) -> str:
    parts = []
    for p in decl.params:
        spec = overrides.get(p, decl.specs.get(p))
        if isinstance(spec, ShapeSpec):
            parts.append(f"{p}: {spec}")
        elif isinstance(spec, (list, tuple, dict)):
            parts.append(f"{p}: {tree_text(spec)}")
        elif spec is not None:
            parts.append(f"{p}={spec!r}")
        elif p in decl.defaults:
            parts.append(f"{p}={decl.defaults[p]}")
        else:
            parts.append(p)
    return f"{decl.name}({', '.join(parts)})"


def one_line(e: TranspileError, path: Path) -> str:
    """``line:col: ErrorClass: message`` (``other.py:line:col: ...`` in another file)."""
    where = ""
    if e.span is not None and not e.span.filename.startswith("<"):
        same = Path(e.span.filename).resolve() == path.resolve()
        where = f"{'' if same else e.span.filename + ':'}{e.span.line}:{e.span.col + 1}: "
    msg = e.message.strip().splitlines()[0] if e.message.strip() else ""
    return f"{where}{type(e).__name__}: {msg}"


_STATUS = {"ok": highlight.GREEN, "error": highlight.RED, "no": highlight.RED, "?": highlight.YELLOW}


def _style(row: int, col: int, cell: str) -> str:
    if row == 0:
        return highlight.BOLD
    if col == 0:
        return highlight.DIM
    if col in (2, 4) or (col == 3 and cell == "error"):
        return _STATUS.get(cell, "")
    return ""


def render(loaded: Loaded, rows: list[Row], stand_ins: list[tuple[str, int]], color: bool) -> str:
    head = ["LINE", "FUNCTION", "TRANSPILES", "OUTPUT", "GRAD", "NOTES"]
    table = [head] + [[str(r.line), r.signature, r.transpiles, r.output, r.grad, r.note] for r in rows]
    widths = [max(len(cells[i]) for cells in table) for i in range(len(head) - 1)] + [0]
    n = len(rows)
    title = f"{loaded.path}: {n} top-level function{'s' if n != 1 else ''}, checked without calling them " \
            "(the file was imported: its top-level code ran)"
    lines = [highlight.paint(title, highlight.BOLD) if color else title]
    for k, cells in enumerate(table):
        out = []
        for i, c in enumerate(cells):
            pad = " " * max(widths[i] - len(c), 0)
            shown = highlight.paint(c, _style(k, i, c)) if color else c
            out.append(pad + shown if i == 0 else shown + pad)
        lines.append("  ".join(out).rstrip())
    if stand_ins:
        given = ", ".join(f"{k}={v}" for k, v in stand_ins)
        lines.append(f"symbolic dimensions with no --dim value were checked with stand-ins: {given}")
    return "\n".join(lines) + "\n"
