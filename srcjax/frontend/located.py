"""A libcst transformer of a user's function that keeps the user's positions for the nodes it rebuilds or makes."""

from __future__ import annotations

from typing import Any

import libcst as cst

__all__ = ["Located"]


class Located(cst.CSTTransformer):
    """A transformer of a user's function that keeps the user's positions (``FunctionSource.positions``) for the
    nodes it rebuilds or makes: every node rebuilt on leaving takes its original's place, and :meth:`located`
    gives a made node ``origin``'s (errors about rewritten code still point at the user's line)."""

    def __init__(self, positions: dict[Any, Any]) -> None:
        self.positions = positions

    def on_leave(self, original: Any, updated: Any) -> Any:
        return self.located(original, super().on_leave(original, updated))

    def located(self, origin: Any, made: Any) -> Any:
        """``made``, placed where ``origin`` is (unless it is ``origin`` or already placed)."""
        if made is not origin and isinstance(made, cst.CSTNode) and origin in self.positions:
            self.positions.setdefault(made, self.positions[origin])
        return made
