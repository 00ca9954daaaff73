"""Collectives over a named mapped axis (``srcjax.lax.psum``, ``pmean``, ``pmax``, ``pmin``,
``all_gather``, ``psum_scatter``, ``axis_index``, ``ppermute``).

They mean something only inside ``srcjax.vmap(f, axis_name=...)`` or ``srcjax.pmap(f, axis_name)``.
The batched source of a vmap writes each one over the vmap's own name as NumPy over the batch axis
(transforms/batch_collectives.py); a pmap lowers its body once per device, where these records
lower them to StableHLO's cross-replica collectives (``lower/replicas.py``: ``all_reduce``,
``all_gather``, ``reduce_scatter``, ``collective_permute``, ``replica_id``). A collective that
reaches compilation over a name neither binds is refused there (JAX's "unbound axis name").

Their derivatives are JAX's: ``psum``'s JVP is the ``psum`` of the tangent and its transpose is
``psum`` (``pmean`` likewise; ``all_gather`` and ``psum_scatter`` transpose each other; ``ppermute``'s
is ``ppermute`` with the pairs turned round), so ``grad`` of a function that calls them writes
collectives the enclosing vmap batches or the enclosing pmap lowers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import collective_trees, lax
from ..core import ArgumentError, ShapedArray, ShapeError
from ..lower import replicas
from ..lower.hlo import HloValue
from .registry import LowerCtx, defprim, set_fields

# (no case in tests/test_primitives.py or test_vmap_primitives.py: alone they only refuse; they are
# tested under the vmaps and pmaps that bind their names, in tests/test_collectives.py and test_pmap.py)
NAMES = frozenset({"psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "axis_index", "ppermute"})


def _plan(what: str, axis_name: Any) -> replicas.ReplicaPlan:
    """The pmap binding ``axis_name`` (lowering its body), or the unbound-name error."""
    plan = replicas.CURRENT.get()
    if plan is None or not plan.binds(axis_name):
        raise lax.unbound_axis(what, axis_name, None)
    return plan


def _static_int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ArgumentError(f"{what} must be a Python int known when srcjax reads the function, not {v!r}")
    return int(v)


def _reduce_abstract(what: str) -> Any:
    def abstract(x: ShapedArray, axis_name: Any, axis_index_groups: Any = None) -> ShapedArray:
        _plan(what, axis_name).groups(axis_index_groups)
        dtype = np.dtype(np.float64) if what == "pmean" and x.dtype.kind in "biu" else x.dtype
        return ShapedArray(x.shape, dtype)

    return abstract


def _reduce_lower(what: str) -> Any:
    def lower(ctx: LowerCtx, x: HloValue, axis_name: Any, axis_index_groups: Any = None) -> HloValue:
        groups = _plan(what, axis_name).groups(axis_index_groups)
        if what == "pmean":
            out = ctx.avals_out[0]
            total = replicas.all_reduce(ctx.b, ctx.b.convert(x, out.dtype), "add", groups)
            return ctx.b.binary("divide", total, ctx.b.full(len(groups[0]), out.shape, out.dtype))
        return replicas.all_reduce(ctx.b, x, {"psum": "add", "pmax": "maximum", "pmin": "minimum"}[what], groups)

    return lower


def _reduce_stub(x, axis_name, *, axis_index_groups=None):  # type: ignore[no-untyped-def]
    ...


def _gather_stub(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):  # type: ignore[no-untyped-def]
    ...


def _scatter_stub(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):  # type: ignore[no-untyped-def]
    ...


def _index_stub(axis_name):  # type: ignore[no-untyped-def]
    ...


def _permute_stub(x, axis_name, perm):  # type: ignore[no-untyped-def]
    ...


for _name, _jvp, _vjp in (("psum", "srcjax.lax.psum(x_dot, axis_name)", "srcjax.lax.psum(out_bar, axis_name)"),
                          ("pmean", "srcjax.lax.pmean(x_dot, axis_name)", "srcjax.lax.pmean(out_bar, axis_name)"),
                          ("pmax", None, None), ("pmin", None, None)):
    defprim(_name, getattr(lax, _name), _reduce_stub, abstract_eval=_reduce_abstract(_name), lower=_reduce_lower(_name),
            path=f"srcjax.lax.{_name}", positional=2, static_eval=False,
            jvp={"x": _jvp} if _jvp else None, vjp={"x": _vjp} if _vjp else None)
for _name in ("pmax", "pmin"):
    set_fields(_name, no_rule_hint="JAX has none either; np.max/np.min(srcjax.lax.all_gather(x, name), axis=0) "
                                   "has one")


def _gather_axis(x: ShapedArray, axis: Any, tiled: bool) -> int:
    a = _static_int(axis, "all_gather's axis")
    nd = x.ndim if tiled else x.ndim + 1
    if not -nd <= a < nd:
        raise ShapeError(f"all_gather: axis {a} out of range for an operand of shape {x.shape}"
                         f"{'' if tiled else ' (a new axis)'}", hint=f"an axis from {-nd} to {nd - 1}")
    return a % nd


def _gather_abstract(x: ShapedArray, axis_name: Any, axis_index_groups: Any = None, axis: Any = 0,
                     tiled: bool = False) -> ShapedArray:
    n = len(_plan("all_gather", axis_name).groups(axis_index_groups)[0])
    a = _gather_axis(x, axis, tiled)
    if tiled:
        return ShapedArray(x.shape[:a] + (x.shape[a] * n,) + x.shape[a + 1:], x.dtype)
    return ShapedArray(x.shape[:a] + (n,) + x.shape[a:], x.dtype)


def _gather_lower(ctx: LowerCtx, x: HloValue, axis_name: Any, axis_index_groups: Any = None, axis: Any = 0,
                  tiled: bool = False) -> HloValue:
    groups = _plan("all_gather", axis_name).groups(axis_index_groups)
    a = _gather_axis(x.aval, axis, tiled)
    if not tiled:
        x = ctx.b.reshape(x, x.shape[:a] + (1,) + x.shape[a:])
    return replicas.all_gather(ctx.b, x, a, groups)


def _scatter_dim(x: ShapedArray, n: int, d: Any, tiled: bool) -> int:
    dim = _static_int(d, "psum_scatter's scatter_dimension")
    if not -x.ndim <= dim < x.ndim:
        raise ShapeError(f"psum_scatter: scatter_dimension {dim} out of range for an operand of shape {x.shape}")
    dim %= x.ndim
    size = x.shape[dim]
    if (tiled and size % n) or (not tiled and size != n):
        raise ShapeError(f"psum_scatter: dimension {dim} of the operand (shape {x.shape}) has size {size}, which "
                         f"{'is not a multiple of' if tiled else 'is not'} the {n} devices of the axis",
                         hint="tiled=True splits a multiple of the axis size into blocks" if not tiled else
                         "pad the dimension to a multiple of the axis size")
    return dim


def _scatter_abstract(x: ShapedArray, axis_name: Any, scatter_dimension: Any = 0, axis_index_groups: Any = None,
                      tiled: bool = False) -> ShapedArray:
    n = len(_plan("psum_scatter", axis_name).groups(axis_index_groups)[0])
    d = _scatter_dim(x, n, scatter_dimension, tiled)
    if tiled:
        return ShapedArray(x.shape[:d] + (x.shape[d] // n,) + x.shape[d + 1:], x.dtype)
    return ShapedArray(x.shape[:d] + x.shape[d + 1:], x.dtype)


def _scatter_lower(ctx: LowerCtx, x: HloValue, axis_name: Any, scatter_dimension: Any = 0,
                   axis_index_groups: Any = None, tiled: bool = False) -> HloValue:
    groups = _plan("psum_scatter", axis_name).groups(axis_index_groups)
    d = _scatter_dim(x.aval, len(groups[0]), scatter_dimension, tiled)
    out = replicas.reduce_scatter(ctx.b, x, d, groups)
    return out if tiled else ctx.b.reshape(out, out.shape[:d] + out.shape[d + 1:])


# all_gather and psum_scatter transpose each other (JAX's rules)
defprim("all_gather", lax.all_gather, _gather_stub, abstract_eval=_gather_abstract, lower=_gather_lower,
        path="srcjax.lax.all_gather", positional=2, static_eval=False,
        jvp={"x": "srcjax.lax.all_gather(x_dot, axis_name, axis=axis, tiled=tiled)"},
        vjp={"x": "srcjax.lax.psum_scatter(out_bar, axis_name, scatter_dimension=axis, tiled=tiled)"})
defprim("psum_scatter", lax.psum_scatter, _scatter_stub, abstract_eval=_scatter_abstract, lower=_scatter_lower,
        path="srcjax.lax.psum_scatter", positional=2, static_eval=False,
        jvp={"x": "srcjax.lax.psum_scatter(x_dot, axis_name, scatter_dimension=scatter_dimension, tiled=tiled)"},
        vjp={"x": "srcjax.lax.all_gather(out_bar, axis_name, axis=scatter_dimension, tiled=tiled)"})


def _index_abstract(axis_name: Any) -> ShapedArray:
    _plan("axis_index", axis_name)
    return ShapedArray((), np.dtype(np.int32))


defprim("axis_index", lax.axis_index, _index_stub, abstract_eval=_index_abstract,
        lower=lambda ctx, axis_name: replicas.replica_id(ctx.b),
        arrays=(), path="srcjax.lax.axis_index", positional=1, static_eval=False, nondiff=True)


def _pairs(axis_name: Any, perm: Any) -> list[tuple[int, int]]:
    """``perm`` checked against the axis: (source, destination) pairs, each source and each
    destination at most once."""
    n = _plan("ppermute", axis_name).size
    return lax.check_perm(perm, n)


def _permute_abstract(x: ShapedArray, axis_name: Any, perm: Any) -> ShapedArray:
    _pairs(axis_name, perm)
    return ShapedArray(x.shape, x.dtype)


# JAX's rules: the tangent is permuted the same way, the cotangent the inverse way (the pairs turned round)
defprim("ppermute", lax.ppermute, _permute_stub, abstract_eval=_permute_abstract,
        lower=lambda ctx, x, axis_name, perm: replicas.collective_permute(ctx.b, x, _pairs(axis_name, perm)),
        path="srcjax.lax.ppermute", positional=3, static_eval=False,
        jvp={"x": "srcjax.lax.ppermute(x_dot, axis_name, perm)"},
        vjp={"x": "srcjax.lax.ppermute(out_bar, axis_name, inverse_pairs(perm))"})
# a container operand: the collective of each leaf (JAX's collectives take pytrees)
for _name in sorted(NAMES - {"axis_index"}):
    set_fields(_name, tree=getattr(collective_trees, f"tree_{_name}"))
# (the batch writer writes these itself before any rule (transforms/batch_collectives.py); a call it
# does not reach runs per example, where compiling it refuses the name no vmap binds)
for _name in sorted(NAMES):
    set_fields(_name, batch=lambda c: c.per_example())
