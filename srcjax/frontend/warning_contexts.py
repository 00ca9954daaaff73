"""Warning-only context managers: ``with np.errstate(...):``, ``with np.printoptions(...):`` and ``with
warnings.catch_warnings():`` change only what NumPy warns about or prints, never a value, so a compiled function
reads their bodies as if unwrapped (a ``warnings.simplefilter(...)`` / ``warnings.filterwarnings(...)`` call
directly inside ``catch_warnings`` is dropped with it: its filter ends with the block).

Input: a user's function definition as read (``read.py``). Output: the same definition with each such ``with``
replaced by its body's statements, the user's positions kept. Any other ``with`` (or one that binds ``as``) is
left for the normalizer to refuse at the user's line (``unsupported.py``).
"""

from __future__ import annotations

import builtins
import warnings
from typing import Any

import libcst as cst
import numpy as np

from .located import Located

__all__ = ["without_warning_contexts"]

_WARNING_ONLY = (np.errstate, np.printoptions, warnings.catch_warnings)
_FILTER_CALLS = (warnings.simplefilter, warnings.filterwarnings, warnings.resetwarnings)
_MISSING = object()


def without_warning_contexts(fdef: cst.FunctionDef, positions: dict[Any, Any], namespaces: tuple[dict[str, Any], ...],
                             local_names: frozenset[str]) -> cst.FunctionDef:
    """``fdef`` with its warning-only ``with`` statements unwrapped (``fdef`` itself where it has none).
    ``namespaces`` resolve the context managers' names (closure, then globals); a name in ``local_names`` (bound in
    the function) never names one."""
    if not any(isinstance(n, cst.With) for n in _statements(fdef)):
        return fdef
    out = fdef.visit(_Unwrap(positions, namespaces, local_names))
    assert isinstance(out, cst.FunctionDef)
    return out


def _statements(node: cst.CSTNode) -> Any:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (cst.BaseExpression, cst.BaseSmallStatement)):
            stack.extend(n.children)


class _Unwrap(Located):
    def __init__(self, positions: dict[Any, Any], namespaces: tuple[dict[str, Any], ...],
                 local_names: frozenset[str]) -> None:
        super().__init__(positions)
        self.namespaces = namespaces
        self.local_names = local_names

    def _value(self, e: cst.BaseExpression) -> Any:
        if isinstance(e, cst.Name):
            if e.value in self.local_names:
                return _MISSING
            found = next((ns[e.value] for ns in self.namespaces if e.value in ns), _MISSING)
            return getattr(builtins, e.value, _MISSING) if found is _MISSING else found
        if isinstance(e, cst.Attribute):
            base = self._value(e.value)
            return _MISSING if base is _MISSING else getattr(base, e.attr.value, _MISSING)
        return _MISSING

    def _called(self, e: cst.BaseExpression, among: tuple[Any, ...]) -> bool:
        if not isinstance(e, cst.Call):
            return False
        f = self._value(e.func)
        return any(f is a for a in among)

    def leave_With(self, original: cst.With, updated: cst.With) -> Any:
        if updated.asynchronous is not None or not all(
                item.asname is None and self._called(item.item, _WARNING_ONLY) for item in updated.items):
            return updated
        body = updated.body
        if isinstance(body, cst.SimpleStatementSuite):
            small = [s for s in body.body if not (isinstance(s, cst.Expr) and self._called(s.value, _FILTER_CALLS))]
            lines: list[cst.BaseStatement] = [self.located(original, cst.SimpleStatementLine(body=small))] \
                if small else []
        else:
            assert isinstance(body, cst.IndentedBlock)
            lines = [s for s in body.body if not (
                isinstance(s, cst.SimpleStatementLine)
                and all(isinstance(x, cst.Expr) and self._called(x.value, _FILTER_CALLS) for x in s.body))]
        if not lines:
            lines = [self.located(original, cst.SimpleStatementLine(body=[cst.Pass()]))]
        return cst.FlattenSentinel(lines)
