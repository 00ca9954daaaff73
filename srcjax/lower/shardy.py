"""Sharding annotations in StableHLO text, for XLA's SPMD partitioner (Shardy's ``sdy`` dialect).

A program with shardings is one module for all the devices of one mesh: the module declares the
mesh (``sdy.mesh @mesh = <["data"=4]>``, its devices those of the executable's device assignment
in mesh order), ``@main``'s arguments and results carry ``sdy.sharding`` attributes, and
``srcjax.lax.with_sharding_constraint`` becomes ``sdy.sharding_constraint``. XLA propagates the
shardings to every operation, splits the program per device and inserts the collectives.

Shardy rather than GSPMD's ``mhlo.sharding`` strings: it is what jax (0.7 and later) lowers to,
so a program and its jax twin get the same partitioning; XLA deprecates GSPMD propagation; and
its attributes name mesh axes, as ``PartitionSpec`` does (``docs/many_devices.md``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from typing import Any

from .. import pytree
from ..core import ShapedArray, ShardingError
from ..sharding import Sharding, as_sharding

MESH = "@mesh"


class ShardingPlan:
    """The shardings of one specialization: of each dynamic argument leaf (None: unspecified), of the
    outputs (as ``out_shardings`` was given), and the mesh they and the constraints share."""

    def __init__(self, in_leaves: Sequence[Sharding | None] = (), out: Any = None) -> None:
        self.in_leaves = list(in_leaves)
        self.out = out
        self.out_leaves: list[Sharding | None] = []
        self.mesh: Any = None
        for s in self.in_leaves:
            if s is not None:
                self.use(s, "in_shardings")
        for s in _sharding_leaves(out):
            if s is not None:
                self.use(as_sharding(s, "out_shardings"), "out_shardings")

    @property
    def sharded(self) -> bool:
        return self.mesh is not None

    def use(self, s: Sharding, where: str) -> None:
        """Record that the program uses ``s``: every sharding of one program is on one mesh."""
        if self.mesh is None:
            self.mesh = s.mesh
        elif s.mesh != self.mesh and not (s.mesh.size == 1 == self.mesh.size and
                                          s.mesh.devices.flat[0] == self.mesh.devices.flat[0]):
            raise ShardingError(f"{where}: {s!r} is on another mesh than the program's other shardings "
                                f"({self.mesh!r})", hint="put every argument, output and constraint of one "
                                "compiled function on the same mesh")

    def outputs(self, template: list[Any], avals: list[ShapedArray]) -> list[Sharding | None]:
        """The sharding of each dynamic output (``template``: None where one goes), checked against its shape."""
        leaves = _sharding_leaves(self.out)
        if self.out is None:
            chosen: list[Any] = [None] * len(avals)
        elif len(leaves) == 1:
            chosen = [leaves[0]] * len(avals)
        elif len(leaves) == len(template):
            chosen = [s for s, t in zip(leaves, template) if t is None]
        elif len(leaves) == len(avals):
            chosen = leaves
        else:
            raise ShardingError(f"out_shardings: {len(leaves)} shardings for {len(avals)} outputs",
                                hint="give one sharding (for every output) or one per output, in the "
                                     "output's structure")
        out = []
        for k, (s, a) in enumerate(zip(chosen, avals)):
            if s is not None:
                s = as_sharding(s, "out_shardings")
                s.check(a.shape, f"output {k}")
            out.append(s)
        self.out_leaves = out
        return out

    def attr(self, s: Sharding | None, ndim: int) -> str | None:
        """``{sdy.sharding = ...}`` of an argument or result, or None (unspecified, or one device)."""
        if s is None or self.mesh is None or self.mesh.size == 1:
            return None
        return f"{{sdy.sharding = #sdy.sharding<{MESH}, {dims(s, ndim)}>}}"

    def preamble(self) -> list[str]:
        if self.mesh is None or self.mesh.size == 1:
            return []
        axes = ", ".join(f'"{n}"={k}' for n, k in self.mesh.shape.items())
        return [f"  sdy.mesh {MESH} = <[{axes}]>"]

    @property
    def num_partitions(self) -> int:
        return 1 if self.mesh is None else self.mesh.size


def dims(s: Sharding, ndim: int) -> str:
    """``[{"data"}, {}]``: the mesh axes of each dimension (closed: exactly these)."""
    return "[" + ", ".join("{" + ", ".join(f'"{a}"' for a in axes) + "}" for axes in s.spec.axes(ndim)) + "]"


def _sharding_leaves(tree: Any) -> list[Any]:
    if tree is None:
        return []
    leaves, _ = pytree.flatten(tree, is_leaf=lambda v: v is None or isinstance(v, Sharding) or
                               (hasattr(v, "id") and hasattr(v, "platform")))
    return leaves


CURRENT: contextvars.ContextVar[ShardingPlan | None] = contextvars.ContextVar("srcjax_sharding_plan", default=None)


def constraint(b: Any, x: Any, sharding: Any) -> Any:
    """``sdy.sharding_constraint`` of ``x`` (``srcjax.lax.with_sharding_constraint``); on one device, ``x``."""
    s = as_sharding(sharding, "with_sharding_constraint")
    s.check(x.aval.shape, "value constrained")
    plan = CURRENT.get()
    if plan is None:
        raise ShardingError("with_sharding_constraint outside a compiled program")
    plan.use(s, "with_sharding_constraint")
    if s.mesh.size == 1:
        return x
    if x.literal is not None:
        x = b.full(x.literal, x.shape, x.dtype)
    from .hlo import aval_type

    return b.emit(f"sdy.sharding_constraint {x.name} <{MESH}, {dims(s, x.aval.ndim)}> : {aval_type(x.aval)}",
                  x.aval.update(weak_type=x.aval.weak_type))
