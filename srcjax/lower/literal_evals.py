"""The literals of an expression evaluated while specializing (numbers, strings, f-strings, ``...``): a part of
:class:`lower.specialize.Specializer`, which finds each node type's ``eval_<Type>`` method on its class."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst

from ..frontend.names import literal_value
from .hlo import HloValue
from .host_print import DeferredText

__all__ = ["LiteralEvals"]


class LiteralEvals:
    """``eval_<Type>`` of the literal node types (the Specializer's base)."""

    eval: Callable[..., Any]  # (the Specializer's: a node of any type evaluated in ``env``)

    def eval_Integer(self, node: cst.Integer, env: dict[str, Any]) -> Any:
        return literal_value(node)

    def eval_Float(self, node: cst.Float, env: dict[str, Any]) -> Any:
        return literal_value(node)

    def eval_Imaginary(self, node: cst.Imaginary, env: dict[str, Any]) -> Any:
        return literal_value(node)

    def eval_SimpleString(self, node: cst.SimpleString, env: dict[str, Any]) -> Any:
        return literal_value(node)

    def eval_ConcatenatedString(self, node: cst.ConcatenatedString, env: dict[str, Any]) -> Any:
        # (libcst's evaluated_value is None when a part is an f-string)
        return self.eval(node.left, env) + self.eval(node.right, env)

    def eval_FormattedString(self, node: cst.FormattedString, env: dict[str, Any]) -> Any:
        out = []
        parts: list[Any] = []  # for print(): the run-time values with their conversion and format spec
        for part in node.parts:
            if type(part) is cst.FormattedStringText:
                out.append(part.value)
                parts.append(part.value)
            else:
                v = self.eval(part.expression, env)  # type: ignore[attr-defined]
                fmt: Any = part.format_spec  # type: ignore[attr-defined]
                spec = self.eval_FormattedString(cst.FormattedString(parts=fmt), env) if fmt else ""
                if type(v) is HloValue:
                    out.append(v.aval.str_short())
                    parts.append((v, part.conversion, str(spec)))  # type: ignore[attr-defined]
                    continue
                if part.conversion is not None:  # type: ignore[attr-defined]
                    v = {"r": repr, "s": str, "a": ascii}[part.conversion](v)  # type: ignore[attr-defined, operator]
                out.append(format(v, spec))
                parts.append(out[-1])
        text = "".join(out)
        return DeferredText(text, parts) if any(isinstance(p, tuple) for p in parts) else text

    def eval_Ellipsis(self, node: cst.Ellipsis, env: dict[str, Any]) -> Any:
        return Ellipsis
