"""A pmapped program (``srcjax.pmap``): one program per device, and collectives across the devices.

``srcjax.pmap(f, "i")`` lowers ``f``'s own source with each argument's *per-device* shape (its
mapped axis removed), as JAX does: the module is compiled in replica mode
(``mhlo.num_replicas = N``, replica ``k`` on the ``k``-th device), and the collectives over the
pmap's axis name lower to StableHLO's cross-replica collectives with ``replica_groups``:

- ``psum``/``pmax``/``pmin``  -> ``stablehlo.all_reduce`` (add / maximum / minimum); ``pmean`` its
  sum divided by the group's size;
- ``all_gather``              -> ``stablehlo.all_gather``;
- ``psum_scatter``            -> ``stablehlo.reduce_scatter``;
- ``ppermute``                -> ``stablehlo.collective_permute`` (``source_target_pairs``);
- ``axis_index``              -> ``stablehlo.replica_id``.

The arrays the program reads and returns are global ``srcjax.Array``s laid out over a 1-D mesh of
the devices (``NamedSharding(Mesh(devices, (name,)), P(None, ..., name))`` for a mapped axis,
``P()`` for an unmapped one): each device's piece has a 1 at the mapped axis, which ``@main``
reshapes away on entry (and back on exit). XLA turns those reshapes into bitcasts.

:data:`CURRENT` holds the plan of the pmap being lowered; the collectives' records read it
(``primitives/collectives.py``), so a collective over a name the plan does not bind is refused.
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import pytree
from ..core import ShapedArray
from .hlo import FuncBuilder, HloValue, aval_type, elem_type, module_text


class ReplicaPlan:
    """What lowering one pmapped program needs: the axis name, the number of devices, the mapped axis
    of each dynamic argument leaf and (a prefix of the outputs' structure) ``out_axes``."""

    def __init__(self, axis_name: Any, size: int, in_axes: Sequence[int | None], out_axes: Any,
                 program: Any = None) -> None:
        self.program = program  # the pmapped program (another one lowered meanwhile keeps its own @main)
        self.axis_name = axis_name
        self.size = size
        self.in_axes = list(in_axes)
        self.out_axes = out_axes
        self.out_leaf_axes: list[int | None] = []  # filled by finish: each dynamic output's axis

    def binds(self, axis_name: Any) -> bool:
        names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
        return self.axis_name is not None and names == (self.axis_name,)

    def groups(self, axis_index_groups: Any) -> list[list[int]]:
        """The replica groups: every device, or ``axis_index_groups`` (checked)."""
        if axis_index_groups is None:
            return [list(range(self.size))]
        groups = [[int(i) for i in g] for g in axis_index_groups]
        flat = sorted(i for g in groups for i in g)
        if flat != list(range(self.size)) or len({len(g) for g in groups}) != 1:
            from ..core import ArgumentError

            raise ArgumentError(f"axis_index_groups {axis_index_groups!r} must split the {self.size} devices of "
                                f"{self.axis_name!r} into groups of one size, each device once",
                                hint="e.g. [[0, 1], [2, 3]] for 4 devices")
        return groups

    # -- @main: the pieces of the global arrays in, the per-device values out --
    def main_avals(self, avals: Sequence[ShapedArray]) -> list[ShapedArray]:
        """Each argument as a device's piece: a 1 at the mapped axis."""
        return [a if ax is None else a.update(shape=a.shape[:ax] + (1,) + a.shape[ax:])
                for a, ax in zip(avals, self.in_axes)]

    def per_device(self, b: FuncBuilder) -> list[HloValue]:
        """``@main``'s arguments as the body sees them (the mapped axis reshaped away)."""
        out = []
        for v, ax in zip(b.args, self.in_axes):
            out.append(v if ax is None else b.reshape(v, v.shape[:ax] + v.shape[ax + 1:]))
        return out

    def module(self, b: FuncBuilder, result: Any, outs: list[HloValue], tree: Any,
               template: list[Any]) -> tuple[str, list[ShapedArray], Any, list[Any]]:
        """The module of ``@main`` returning ``outs`` (the dynamic leaves of ``result``), with the
        global arrays they make (what ``Specializer.lower`` returns)."""
        axes = prefix_leaves(result, self.out_axes, "out_axes")
        pieces, avals = self.finish(b, outs, [a for a, t in zip(axes, template) if t is None])
        return module_text([b.finish(pieces)], num_replicas=self.size), avals, tree, template

    def finish(self, b: FuncBuilder, outs: list[HloValue], axes: list[int | None]) -> tuple[list[HloValue],
                                                                                           list[ShapedArray]]:
        """The results as pieces (a 1 at each output's axis), and the global arrays they make."""
        pieces, global_avals = [], []
        for o, ax in zip(outs, axes):
            if ax is None:
                pieces.append(o)
                global_avals.append(o.aval.update(weak_type=False))
                continue
            if not -o.ndim - 1 <= ax <= o.ndim:
                from ..core import ArgumentError

                raise ArgumentError(f"pmap: out_axes {ax} for an output of {o.ndim} dimension"
                                    f"{'s' * (o.ndim != 1)} (shape {o.shape})",
                                    hint=f"an axis from {-o.ndim - 1} to {o.ndim}")
            ax %= o.ndim + 1
            pieces.append(b.reshape(o, o.shape[:ax] + (1,) + o.shape[ax:]))
            global_avals.append(ShapedArray(o.shape[:ax] + (self.size,) + o.shape[ax:], o.dtype))
        self.out_leaf_axes = [None if ax is None else ax % (o.ndim + 1) for o, ax in zip(outs, axes)]
        return pieces, global_avals


class _Axis:
    """One entry of an ``in_axes``/``out_axes`` prefix, standing for every leaf below it."""

    __slots__ = ("axis",)

    def __init__(self, axis: int | None) -> None:
        self.axis = axis


def prefix_leaves(tree: Any, prefix: Any, what: str, is_leaf: Any = None) -> list[int | None]:
    """The entry of ``prefix`` (an int or None, or a tuple/list/dict of them shaped like a prefix of
    ``tree``) that covers each leaf of ``pytree.flatten(tree, is_leaf, nodes=True)``, in that order."""
    return [a.axis for a in pytree.flatten(_spread(tree, prefix, what, is_leaf), is_leaf=lambda v: isinstance(v, _Axis),
                                           nodes=True)[0]]


def _spread(tree: Any, prefix: Any, what: str, is_leaf: Any) -> Any:
    if prefix is None or (isinstance(prefix, int) and not isinstance(prefix, bool)):
        leaves, t = pytree.flatten(tree, is_leaf=is_leaf, nodes=True)
        return pytree.unflatten(t, [_Axis(prefix)] * len(leaves))
    if isinstance(prefix, dict) and isinstance(tree, dict) and set(prefix) == set(tree):
        return {k: _spread(tree[k], prefix[k], f"{what}[{k!r}]", is_leaf) for k in tree}
    if isinstance(prefix, (tuple, list)) and isinstance(tree, (tuple, list)) and len(prefix) == len(tree) and \
            not isinstance(prefix, dict):
        items = [_spread(t, p, f"{what}[{i}]", is_leaf) for i, (t, p) in enumerate(zip(tree, prefix))]
        return type(tree)(*items) if pytree.is_namedtuple(tree) else type(tree)(items)
    from ..core import ArgumentError

    raise ArgumentError(f"pmap: {what} is {prefix!r}, which does not match the structure of the value "
                        f"({pytree.describe(tree)})",
                        hint=f"give {what} as an int or None, or as a container shaped like the value")


CURRENT: contextvars.ContextVar[ReplicaPlan | None] = contextvars.ContextVar("srcjax_replica_plan", default=None)


def plan_for(program: Any) -> ReplicaPlan | None:
    """The plan of the pmap whose program is ``program`` (None: an ordinary program, even one lowered
    while a pmapped body is being lowered)."""
    plan = CURRENT.get()
    return plan if plan is not None and plan.program is program.origin else None


def _groups_attr(groups: list[list[int]]) -> str:
    return f"replica_groups = dense<{groups}> : tensor<{len(groups)}x{len(groups[0])}xi64>"


def _emit(b: FuncBuilder, op: str, x: HloValue, attrs: str, out: ShapedArray, reducer: str | None = None) -> HloValue:
    """``"stablehlo.<op>"(x) ({reducer region}) {attrs} : (x) -> out`` (generic form)."""
    name = b.fresh()
    loc = f" loc({b.loc})" if b.loc else ""
    sig = f"({aval_type(x.aval)}) -> {aval_type(out)}{loc}"
    if reducer is None:
        b.lines.append(f"{b.indent}{name} = \"stablehlo.{op}\"({x.name}) {{{attrs}}} : {sig}")
        return HloValue(name, out)
    t = f"tensor<{elem_type(x.dtype)}>"
    p, q, r = b.fresh(), b.fresh(), b.fresh()
    b.lines += [f"{b.indent}{name} = \"stablehlo.{op}\"({x.name}) ({{",
                f"{b.indent}  ^bb0({p}: {t}, {q}: {t}):",
                f"{b.indent}    {r} = stablehlo.{reducer} {p}, {q} : {t}",
                f"{b.indent}    stablehlo.return {r} : {t}",
                f"{b.indent}}}) {{{attrs}}} : {sig}"]
    return HloValue(name, out)


def all_reduce(b: FuncBuilder, x: HloValue, reducer: str, groups: list[list[int]]) -> HloValue:
    """Every device of a group gets the reduction (``add``, ``maximum``, ``minimum``) of the group's ``x``."""
    if x.literal is not None:
        x = b.full(x.literal, x.shape, x.dtype)
    if x.dtype == np.bool_:
        reducer = {"add": "or", "maximum": "or", "minimum": "and"}[reducer]
    return _emit(b, "all_reduce", x, _groups_attr(groups), x.aval.update(weak_type=False), reducer)


def all_gather(b: FuncBuilder, x: HloValue, axis: int, groups: list[list[int]]) -> HloValue:
    """The group's ``x`` concatenated along ``axis`` (in group order)."""
    if x.literal is not None:
        x = b.full(x.literal, x.shape, x.dtype)
    n = len(groups[0])
    out = ShapedArray(x.shape[:axis] + (x.shape[axis] * n,) + x.shape[axis + 1:], x.dtype)
    return _emit(b, "all_gather", x, f"all_gather_dim = {axis} : i64, {_groups_attr(groups)}", out)


def reduce_scatter(b: FuncBuilder, x: HloValue, dim: int, groups: list[list[int]]) -> HloValue:
    """The group's sum of ``x``, of which device ``k`` keeps block ``k`` along ``dim``."""
    if x.literal is not None:
        x = b.full(x.literal, x.shape, x.dtype)
    n = len(groups[0])
    out = ShapedArray(x.shape[:dim] + (x.shape[dim] // n,) + x.shape[dim + 1:], x.dtype)
    reducer = "or" if x.dtype == np.bool_ else "add"
    return _emit(b, "reduce_scatter", x, f"scatter_dimension = {dim} : i64, {_groups_attr(groups)}", out, reducer)


def collective_permute(b: FuncBuilder, x: HloValue, pairs: Sequence[tuple[int, int]]) -> HloValue:
    """Device ``d`` gets the ``x`` of the device ``s`` with ``(s, d)`` in ``pairs``; the others, zeros."""
    if x.literal is not None:
        x = b.full(x.literal, x.shape, x.dtype)
    if not pairs:
        return b.full(0, x.shape, x.dtype)
    text = [[int(s), int(d)] for s, d in pairs]
    attr = f"source_target_pairs = dense<{text}> : tensor<{len(text)}x2xi64>"
    return _emit(b, "collective_permute", x, attr, x.aval.update(weak_type=False))


def replica_id(b: FuncBuilder) -> HloValue:
    """This device's position along the axis, an int32 scalar."""
    u = b.emit("stablehlo.replica_id : tensor<ui32>", ShapedArray((), np.dtype(np.uint32)))
    return b.convert(u, np.dtype(np.int32))
