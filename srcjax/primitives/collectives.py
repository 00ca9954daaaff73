"""Collectives over a named mapped axis (``srcjax.lax.psum``, ``pmean``, ``pmax``, ``pmin``,
``all_gather``, ``psum_scatter``, ``axis_index``).

They mean something only inside ``srcjax.vmap(f, axis_name=...)``: the batched source writes each
one over the vmap's own name as NumPy over the batch axis (transforms/batch_collectives.py), so a
collective that reaches compilation names an axis nothing binds, and is refused there (JAX's
"unbound axis name"). Their derivatives are JAX's: ``psum``'s JVP is the ``psum`` of the tangent
and its transpose is ``psum`` (``pmean`` likewise; ``all_gather`` and ``psum_scatter`` transpose each
other), so ``grad`` of a function that calls them writes
collectives the enclosing vmap then batches.
"""

from __future__ import annotations

from typing import Any

from .. import lax
from ..core import ShapedArray
from .registry import LowerCtx, defprim, set_fields

# (no case in tests/test_primitives.py or test_vmap_primitives.py: alone they only refuse; they are
# tested under the vmaps that bind their names, in tests/test_collectives.py)
NAMES = frozenset({"psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "axis_index"})


def _unbound(what: str) -> Any:
    def abstract(*args: Any, **kw: Any) -> ShapedArray:
        name = kw.get("axis_name", args[0] if what == "axis_index" else args[1] if len(args) > 1 else "?")
        raise lax.unbound_axis(what, name, None)

    return abstract


def _never(ctx: LowerCtx, *args: Any, **kw: Any) -> Any:  # pragma: no cover - refused by abstract_eval
    raise lax.unbound_axis("a collective", "?", None)


def _reduce_stub(x, axis_name, *, axis_index_groups=None):  # type: ignore[no-untyped-def]
    ...


def _gather_stub(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):  # type: ignore[no-untyped-def]
    ...


def _scatter_stub(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):  # type: ignore[no-untyped-def]
    ...


def _index_stub(axis_name):  # type: ignore[no-untyped-def]
    ...


for _name, _jvp, _vjp in (("psum", "srcjax.lax.psum(x_dot, axis_name)", "srcjax.lax.psum(out_bar, axis_name)"),
                          ("pmean", "srcjax.lax.pmean(x_dot, axis_name)", "srcjax.lax.pmean(out_bar, axis_name)"),
                          ("pmax", None, None), ("pmin", None, None)):
    defprim(_name, getattr(lax, _name), _reduce_stub, abstract_eval=_unbound(_name), lower=_never,
            path=f"srcjax.lax.{_name}", positional=2, static_eval=False,
            jvp={"x": _jvp} if _jvp else None, vjp={"x": _vjp} if _vjp else None)
for _name in ("pmax", "pmin"):
    set_fields(_name, no_rule_hint="JAX has none either; np.max/np.min(srcjax.lax.all_gather(x, name), axis=0) "
                                   "has one")
# all_gather and psum_scatter transpose each other (JAX's rules)
defprim("all_gather", lax.all_gather, _gather_stub, abstract_eval=_unbound("all_gather"), lower=_never,
        path="srcjax.lax.all_gather", positional=2, static_eval=False,
        jvp={"x": "srcjax.lax.all_gather(x_dot, axis_name, axis=axis, tiled=tiled)"},
        vjp={"x": "srcjax.lax.psum_scatter(out_bar, axis_name, scatter_dimension=axis, tiled=tiled)"})
defprim("psum_scatter", lax.psum_scatter, _scatter_stub, abstract_eval=_unbound("psum_scatter"), lower=_never,
        path="srcjax.lax.psum_scatter", positional=2, static_eval=False,
        jvp={"x": "srcjax.lax.psum_scatter(x_dot, axis_name, scatter_dimension=scatter_dimension, tiled=tiled)"},
        vjp={"x": "srcjax.lax.all_gather(out_bar, axis_name, axis=scatter_dimension, tiled=tiled)"})
defprim("axis_index", lax.axis_index, _index_stub, abstract_eval=_unbound("axis_index"), lower=_never,
        arrays=(), path="srcjax.lax.axis_index", positional=1, static_eval=False, nondiff=True)
# (the batch writer writes these itself before any rule (transforms/batch_collectives.py); a call it
# does not reach runs per example, where compiling it refuses the name no vmap binds)
for _name in sorted(NAMES):
    set_fields(_name, batch=lambda c: c.per_example())
