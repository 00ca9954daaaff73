"""vmap through recursion: a recursive function's batched result, found as a least fixed point.

The batcher (transforms/batch.py) writes a batched copy of a program function once per argument states;
a recursive call meets the copy being written, whose result state is not known yet. It is assumed
unbatched first (``False``); if a recursive call read that assumption and the copy's result came out
otherwise, everything written since is dropped and the copy written again with the two joined, until
they agree. A value that is computed from shapes and static values through a recursion (``batch_shape``
of a tree: its length, then an element's shape) thus stays unbatched in the copy, and in a copy of the
copy (a vmap of a vmap of a vmap): assuming it batched (the greatest fixed point) made it batched.

After :data:`ROUNDS` rounds the copy is written once more assuming the result batched, and kept; so is
a copy that changes a list its recursive calls are handed (a derivative's tape: the calls' pushes are not
followed, as before this fixed point; a Hessian through such a recursion stays refused, "out_axes=None").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .batch_state import State, join

if TYPE_CHECKING:
    from .batch import Batcher

__all__ = ["ROUNDS", "Recursion"]

ROUNDS = 4

Written = tuple[str, State, set[str], dict[str, State]]


class Recursion:
    """The batched copies being written (outermost first), and whether a recursive call read each one's
    assumed result."""

    def __init__(self) -> None:
        self.pending: dict[tuple[Any, ...], bool] = {}

    def read(self, key: tuple[Any, ...]) -> None:
        """A call found the copy ``key`` written or being written."""
        if key in self.pending:
            self.pending[key] = True

    def settle(self, b: Batcher, key: tuple[Any, ...], name: str,
               write: Callable[[], Written | None]) -> Written:
        """Writes the copy ``key`` (named ``name``) with ``write`` until its result state is the one its
        recursive calls assumed; ``write`` gives None to be run again (after the batcher learned that
        some test is on batched data), with what it wrote dropped."""
        assumed: State = False
        rounds = 0
        while True:
            mark = _Mark(b)
            b.written[key] = (name, assumed, set(), {})
            self.pending[key] = False
            try:
                out = write()
            finally:
                read = self.pending.pop(key)
            if out is not None and (not read or assumed is True or out[1] == assumed and not out[2] and not out[3]):
                b.written[key] = out
                return out
            mark.restore(b)
            if out is not None:
                rounds += 1
                effects = bool(out[2] or out[3])  # (lists it pushes on, a tape: not followed, as before)
                assumed = True if rounds >= ROUNDS or effects else join(assumed, out[1])


class _Mark:
    """What the batcher had written before a copy was started: restored when the copy is written again
    (copies written meanwhile may have read its assumed result)."""

    def __init__(self, b: Batcher) -> None:
        self.sizes = [len(d) for d in _tables(b)]
        self.taken = set(b.names.taken)

    def restore(self, b: Batcher) -> None:
        for d, n in zip(_tables(b), self.sizes):
            for k in list(d)[n:]:
                del d[k]
        b.names.taken = set(self.taken)


def _tables(b: Batcher) -> tuple[dict[Any, Any], ...]:
    return b.written, b.texts, b.origins, b.customs
