"""Make generated source a standalone module: define the module-level names it reads.

``srcjax.source(f)`` is executed in ``f``'s globals, so it may read module
constants of the user's file (``SCALE``, ``BIAS = np.array(...)``). A module
written by the CLI must import and run on its own, so each such name is
written out as a literal: numbers, strings, tuples/lists/dicts of them, NumPy
scalars and arrays (exact: small arrays as nested lists, larger ones as
base64 of their bytes, which needs ``import base64``). What cannot be written so is reported, never guessed.
"""

from __future__ import annotations

import builtins
import symtable
from typing import Any

import numpy as np

# _as_compiled: the one Compiled that srcjax.source and the transformations share for a plain
# function (internal to srcjax, not public API); its program holds the namespaces the code reads
from ..api import _as_compiled

_INLINE_MAX = 256  # arrays with more elements are written as base64 of their bytes


def free_names(text: str) -> list[str]:
    """Names the module reads from its globals but neither defines nor imports (builtins aside)."""
    top = symtable.symtable(text, "<generated>", "exec")
    defined = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    for child in top.get_children():
        defined.add(child.get_name())
    used: list[str] = []

    def visit(t: symtable.SymbolTable) -> None:
        for s in t.get_symbols():
            if s.is_referenced() and (t is top and not s.is_assigned() or s.is_global()):
                if s.get_name() not in used:
                    used.append(s.get_name())
        for c in t.get_children():
            visit(c)

    visit(top)
    return [n for n in used if n not in defined and not hasattr(builtins, n)]


def module_constants(fn: Any, text: str) -> tuple[str, list[str]]:
    """(definitions of the globals ``text`` reads, as source lines; names that cannot be written)."""
    names = free_names(text)
    if not names:
        return "", []
    namespaces = []
    for nf in _as_compiled(fn).program.functions.values():
        namespaces += [nf.source.closure, nf.source.globals]
    lines: list[str] = []
    bad: list[str] = []
    for name in names:
        values = [ns[name] for ns in namespaces if name in ns]
        if not values or any(v is not values[0] and not _same(v, values[0]) for v in values):
            bad.append(name)
            continue
        lit = literal(values[0])
        if lit is None:
            bad.append(name)
        else:
            lines.append(f"{name} = {lit}")
    return "\n".join(lines), bad


def _same(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(np.array_equal(a, b)) if isinstance(a, np.ndarray) else bool(a == b)
    except Exception:  # noqa: BLE001 - incomparable values are simply not the same
        return False


def literal(v: Any) -> str | None:
    """Python source that evaluates to ``v`` (with ``np`` imported), or None."""
    if v is None or type(v) in (bool, int, str):
        return repr(v)
    if type(v) is float:
        return repr(v) if np.isfinite(v) else f"float({str(v)!r})"
    if type(v) in (tuple, list):
        items = [literal(x) for x in v]
        if any(i is None for i in items):
            return None
        body = ", ".join(items)  # type: ignore[arg-type]
        return f"({body},)" if type(v) is tuple and len(items) == 1 else f"({body})" if type(v) is tuple \
            else f"[{body}]"
    if type(v) is dict:
        pairs = [(literal(k), literal(x)) for k, x in v.items()]
        if any(k is None or x is None for k, x in pairs):
            return None
        return "{" + ", ".join(f"{k}: {x}" for k, x in pairs) + "}"
    if isinstance(v, (np.ndarray, np.generic)):
        return _array_literal(np.asarray(v), scalar=isinstance(v, np.generic))
    return None


def _array_literal(a: np.ndarray, scalar: bool) -> str | None:
    name = a.dtype.name
    if name not in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                    "float16", "float32", "float64"):
        return None
    dtype = "np.bool_" if name == "bool" else f"np.{name}"
    if scalar:
        return f"{dtype}({_item(a.item())})"
    if a.size <= _INLINE_MAX:
        return f"np.array({_nested(a.tolist())}, dtype={dtype})"
    import base64

    data = base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()
    chunks = "".join(f'\n    "{data[i:i + 96]}"' for i in range(0, len(data), 96))
    return f"np.frombuffer(base64.b64decode({chunks}\n), dtype=np.dtype({a.dtype.str!r})).reshape({a.shape!r})"


def _item(x: Any) -> str:
    if type(x) is float and not np.isfinite(x):
        return f"float({str(x)!r})"
    return repr(x)


def _nested(x: Any) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(_nested(i) for i in x) + "]"
    return _item(x)
