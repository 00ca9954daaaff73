"""``print(...)`` inside compiled code: a host callback that prints the run-time values at every call.

The specializer lowers ``print(a, b, sep=..., end=...)`` to one side-effecting
``stablehlo.custom_call @xla_ffi_python_cpu_callback`` whose operands are the array values among
the arguments (inside containers and f-strings too); the static parts (strings, numbers, keywords)
stay in the Python closure that XLA calls with NumPy copies of the operands
(``shared/RUNTIME_FACTS.md``, "Host callbacks"). The closure is kept in a process-wide table; the
module text names it by its table id, and :func:`host_callbacks` turns those ids into the dense
``host_callbacks=`` list of one executable. In the NumPy run of the same source it is just ``print``.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import re
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import libcst as cst
import numpy as np

from .. import pytree
from ..core import ShapedArray, TranspileError
from ..frontend.names import walk as walk_nodes
from ..frontend.read import is_generated
from ..frontend.resolve import LIBRARY_MODULES
from .hlo import TARGET, aval_type
from .values import is_dynamic

if TYPE_CHECKING:  # annotations only: the specializer imports this module
    from .specialize import Specializer

__all__ = ["CALLBACK_TARGET", "DeferredText", "host_callbacks", "lower_print"]

CALLBACK_TARGET = "xla_ffi_python_cpu_callback"
_TABLE: dict[int, Callable[..., tuple[np.ndarray]]] = {}
_IDS = itertools.count()
_LOCK = threading.Lock()
_INDEX = re.compile(r"index = (\d+) : ui64")
_ORDER = ShapedArray((), np.dtype(np.int32))
_DONE = np.zeros((), np.int32)
def _spec(spec: str, e: Any) -> str:
    return format(e, spec)


_CONVERSIONS: dict[str, Callable[[Any], str]] = {"r": repr, "s": str, "a": ascii}


class DeferredText(str):
    """An f-string with run-time values in it: as a ``str`` it reads like before (the abstract values,
    ``f64[3]``); ``print`` formats ``parts`` on the host, with the values."""

    parts: tuple[Any, ...]  # str | (value, conversion, format spec)

    def __new__(cls, text: str, parts: Sequence[Any]) -> DeferredText:
        out = super().__new__(cls, text)
        out.parts = tuple(parts)
        return out


def _host_value(v: np.ndarray) -> Any:
    return v[()] if v.ndim == 0 else v  # a 0-d array prints (and formats) as its scalar


def _format(parts: Sequence[Any], values: Any) -> str:
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
            continue
        v, conversion, spec = p
        v = _host_value(next(values)) if v is None else v
        if conversion is not None:
            v = _CONVERSIONS[conversion](v)
        if isinstance(v, np.ndarray) and spec:  # `{x:.3f}` of an array (a batch under vmap): each element
            out.append(np.array2string(v, separator=" ", formatter={"all": functools.partial(_spec, spec)}))
        else:
            out.append(format(v, spec))
    return "".join(out)


def lower_print(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> None:
    """``print(*args, **kwargs)`` with some run-time values: a host callback (see the module doc)."""
    if TARGET.get() != "cpu":  # (the specializer places the refusal at the user's print)
        raise TranspileError("print() inside compiled code runs on CPU only for now, not on a GPU",
                             hint="remove the print, or compile with device='cpu' (or device='numpy') to debug")
    for k, v in kwargs.items():
        if k not in ("sep", "end", "file", "flush") or is_dynamic(v):
            raise TranspileError(f"print(): the keyword {k}= must be a static sep/end/file/flush",
                                 hint="print(a, b, sep=', ', end='\\n')")
    leaves, tree = pytree.flatten(list(args), nodes=True)
    operands = []
    plan: list[Any] = []  # per leaf: ("value",) | ("text", parts) | ("static", leaf)
    for leaf in leaves:
        if is_dynamic(leaf):
            operands.append(leaf)
            plan.append(("value",))
        elif isinstance(leaf, DeferredText):
            parts = []
            for p in leaf.parts:
                if isinstance(p, tuple) and is_dynamic(p[0]):
                    operands.append(p[0])
                    p = (None, p[1], p[2])
                parts.append(p)
            plan.append(("text", parts))
        else:
            plan.append(("static", leaf))

    def show(_order: np.ndarray, *arrays: np.ndarray) -> tuple[np.ndarray]:
        values = iter(arrays)
        filled = [_host_value(next(values)) if p[0] == "value" else _format(p[1], values) if p[0] == "text"
                  else p[1] for p in plan]
        builtins.print(*pytree.unflatten(tree, filled), **kwargs)
        return (_DONE,)

    with _LOCK:
        ident = next(_IDS)
        _TABLE[ident] = show
    b = sp.b
    assert b is not None
    if sp.print_dep is None:  # print called under another name (has_print reads `print(...)` calls)
        sp.print_dep = b.full(0, (), np.dtype(np.int32))
    operands.insert(0, sp.print_dep)
    types = ", ".join(aval_type(o.aval) for o in operands)
    sp.print_dep = b.emit(f"stablehlo.custom_call @{CALLBACK_TARGET}({', '.join(o.name for o in operands)}) "
                          f"{{has_side_effect = true, mhlo.backend_config = {{index = {ident} : ui64}}}} : "
                          f"({types}) -> tensor<i32>", _ORDER)


def has_print(program: Any) -> bool:
    """Whether any function of ``program`` calls ``print`` (then the specializer orders the calls)."""
    found = getattr(program, "_has_print", None)
    if found is None:
        # (an entry whose parameters are fixed to functions calls them by their names: walked)
        bound = program.entry if program.bindings else None
        found = program._has_print = any(_calls_print(f, bound) for f in program.functions.values())
    return bool(found)


def _names_print(code: Any) -> bool:
    """Whether ``code`` or a code object nested in it (a nested function, a lambda) reads a name ``print``."""
    return "print" in code.co_names or any(_names_print(c) for c in code.co_consts if type(c) is type(code))


def _calls_print(nf: Any, bound: Any = None) -> bool:
    """Whether the normalized function ``nf`` calls ``print``; remembered on ``nf`` with the tree it
    was found in (library helpers' normalized functions are shared by every program that calls them)."""
    seen = nf.__dict__.get("_calls_print")
    if seen is not None and seen[0] is nf.fdef:
        return bool(seen[1])
    if getattr(nf.fn, "__module__", "") in LIBRARY_MODULES and not is_generated(nf.fn):
        return False  # srcjax's own helpers print nothing (tests/test_print.py checks their source): not walked
    code = getattr(nf.fn, "__code__", None)
    if code is not None and nf is not bound and not hasattr(nf.fn, "__srcjax_bound__") and not _names_print(code):
        return False  # (its code never reads the name `print`: its normalized form calls no `print(...)`;
        # a helper's bound variant, bound_helpers.py, calls its function parameters by the functions' names)
    found = any(type(n) is cst.Call and type(n.func) is cst.Name and n.func.value == "print"  # type: ignore[attr-defined]
                for n in walk_nodes(nf.fdef))
    nf._calls_print = (nf.fdef, found)
    return found


def host_callbacks(text: str) -> tuple[str, list[Callable[..., tuple[np.ndarray]]]]:
    """``text`` with its callbacks' table ids renumbered 0, 1, ... and the callables in that order."""
    found: list[Callable[..., tuple[np.ndarray]]] = []
    local: dict[int, int] = {}

    def renumber(m: re.Match[str]) -> str:
        ident = int(m.group(1))
        if ident not in local:
            local[ident] = len(found)
            found.append(_TABLE[ident])
        return f"index = {local[ident]} : ui64"

    lines = [(_INDEX.sub(renumber, line) if CALLBACK_TARGET in line else line) for line in text.split("\n")]
    return "\n".join(lines), found
