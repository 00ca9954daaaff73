"""What reverse mode reads off a function's body only where a statement asks (:class:`BodyTables`).

The reverse writer (:class:`~.reverse_ad.VJP`) asked for each of these when it began: binding times (read by an
``if`` alone: whether its test is on data), the zero cotangents of a tape's elements and where an appended list is
first read (read by a list's appends and pops), the statements' program order (read by loops and appends). A
straight-line gradient (most first calls: ``bench_grad.py``'s three) asks for none of them. Each is made from the
same body, parameters and differentiated names whenever it is first asked: the same table as made at the start.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import libcst as cst

from ..frontend.binding_times import BindingTimes
from ..frontend.names import target_names
from ..frontend.normalize import NormalizedFunction
from ..frontend.restructure import walk as _walk
from .activity import first_reads
from .zero_cotangents import TapeZeros

__all__ = ["BodyTables"]


class BodyTables:
    """Tables of a reverse writer's function: ``unhoisted`` its body as reverse mode reads it (binding times are of
    that), ``body`` the body the sweeps write from, ``params`` its parameters, ``active`` the differentiated ones."""

    def __init__(self, nf: NormalizedFunction, unhoisted: Sequence[Any], body: Sequence[Any], params: Sequence[str],
                 active: Sequence[str]) -> None:
        self.nf, self.unhoisted, self.body, self.params, self.active = nf, list(unhoisted), body, params, list(active)

    @cached_property
    def bta(self) -> BindingTimes:
        """Binding times of the body, the differentiated parameters arrays (an ``if``'s test on data or not)."""
        return BindingTimes(self.nf, self.nf.plain_fdef, self.unhoisted, dynamic=self.active)

    @cached_property
    def tape_zeros(self) -> TapeZeros:
        """Per tape append: its elements' zero cotangents (a walk of every node of the body)."""
        return TapeZeros(self.body)

    @cached_property
    def order(self) -> dict[int, int]:
        """Each statement's position in program order, by ``id``."""
        return {id(st): k for k, (st, _) in enumerate(_walk(self.body))}

    @cached_property
    def first_reads(self) -> dict[str, int]:
        """Where each appended list is first read (:func:`~.activity.first_reads`)."""
        return first_reads(self.body)

    def bound_before(self, s: cst.CSTNode) -> set[str]:
        """The names some statement before ``s`` (in program order, on any path) binds, and the parameters."""
        out = set(self.params)
        k = self.order[id(s)]
        for st, _ in _walk(self.body):
            if self.order[id(st)] >= k:
                break
            if isinstance(st, cst.Assign):
                out.update(n for t in st.targets for n in target_names(t.target))
            elif isinstance(st, (cst.AugAssign, cst.AnnAssign, cst.For)):
                out.update(target_names(st.target))
        return out

    def read_before(self, lst: str, st: cst.CSTNode) -> bool:
        """Whether the list ``lst`` is read (not appended to) before the statement ``st``: then its
        cotangent may start before (in the adjoint: after) appends that see none."""
        first = self.first_reads.get(lst)
        return first is not None and first < self.order[id(st)]
