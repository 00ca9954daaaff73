"""``in_place(x, new)``: ``x op= v`` as NumPy runs it (``new`` is ``x op v``), with every rule.

- NumPy reference: :func:`srcjax.in_place_cast.in_place`. An array ``x`` of at least one dimension keeps
  its shape and dtype: ``new`` is cast into it with the rule ``'same_kind'``; a result of another shape
  (``w = np.ones(3); w += np.ones((2, 3))``) or of a dtype that rule refuses (``wi += m64``: float into
  int) is NumPy's error, here a ``ShapeError``/``DTypeError`` at the user's line. Anything else (a Python
  number, a 0-d value, a weakly typed one, a container) is bound again to ``new``.
- Shape/dtype: ``x``'s (or ``new``'s where it is bound again); a static ``x`` that is not an array of at
  least one dimension decides the result before anything is lowered (``fold``).
- Lowering: a ``convert`` where the dtypes differ, else ``new`` itself (no instruction).
- Derivatives: linear in ``new`` (``x`` gives only the dtype and shape): the tangent is ``new``'s cast to
  the result's dtype, the cotangent ``out``'s cast back to ``new``'s (``broadcast_like``/``unbroadcast``:
  equal shapes, so only the cast remains, as for any implicit up- or downcast).
- Batching: ``axes`` counts the leading batch axes of both operands (each example's rank decides whether
  it casts); an unbatched operand is repeated along the batch first (only its dtype and shape are read
  when it is ``x``, and ``new`` unbatched beside a batched ``x`` is rare: vmap of hand-written source).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import adjoint, in_place_cast
from ..core import DTypeError, ShapedArray, ShapeError, UnsupportedSyntaxError
from ..lower.hlo import HloValue
from . import batch_rules
from .registry import LowerCtx, deflinear, defprim, set_fields

_HINT_SHAPE = ("NumPy raises here too: bind a new array of the broadcast shape instead (`w = w + v` for `w += v`), "
               "or give the value w's shape")


def _in_place_stub(x, new, /, axes=0, alias="", rank=1):  # type: ignore[no-untyped-def]
    ...


def _rebinds(x: ShapedArray, axes: int) -> bool:
    return x.weak_type or x.ndim <= axes


def _in_place_abstract(x: ShapedArray, new: ShapedArray, axes: int = 0, alias: str = "",
                       rank: int = 1) -> ShapedArray:
    if alias and rank == 0 and not x.weak_type:  # (a helper's `t op= v` changes an array argument, a 0-d one too)
        what, hint = in_place_cast.alias_refusal(alias, rank)
        raise UnsupportedSyntaxError(what, hint=hint)
    if _rebinds(x, axes):
        return ShapedArray(new.shape, new.dtype, new.weak_type)
    if alias and x.ndim - axes >= rank:  # (x is an array: NumPy's change reaches the container or array read later)
        what, hint = in_place_cast.alias_refusal(alias, rank)
        raise UnsupportedSyntaxError(what, hint=hint)
    problem = in_place_cast.shape_refusal(x.shape, new.shape, axes)
    if problem is not None:
        raise ShapeError(problem, hint=_HINT_SHAPE)
    problem = in_place_cast.cast_refusal(x.dtype, new.dtype)
    if problem is not None:
        raise DTypeError(problem, hint=f"NumPy raises here too: bind a new {new.dtype} array instead (`w = w + v` "
                                       f"for `w += v`), or cast the value first (`w += v.astype(np.{x.dtype})`)")
    return ShapedArray(x.shape, x.dtype)


def _in_place_lower(ctx: LowerCtx, x: HloValue, new: HloValue, axes: int = 0, alias: str = "",
                    rank: int = 1) -> HloValue:
    out = ctx.avals_out[0]
    return new if new.dtype == out.dtype else ctx.b.convert(new, out.dtype)


def _static_target(values: list[Any]) -> Any:
    """``new`` where a static ``x`` (a Python number, a NumPy scalar, a string) is bound again; None (not
    decided) for an array ``x``, static or not."""
    from ..lower.values import is_dynamic
    x, new = values[0], values[1]
    axes = values[2] if len(values) > 2 and isinstance(values[2], int) else 0
    if len(values) > 4 and values[3] and values[4] == 0 and isinstance(x, np.ndarray):
        return None  # (a helper's change of an ndarray the caller reads after: refused by the abstract rule)
    if is_dynamic(x) or isinstance(x, np.ndarray) and x.ndim > axes:
        return None
    return new


def _in_place_batch(c: batch_rules.BatchCall) -> str:
    x, new = c.args["x"], c.args["new"]
    axes = batch_rules._literal(c.args.get("axes", "0"))
    if not isinstance(axes, int):  # pragma: no cover (srcjax writes the literal)
        return c.per_example()
    if c.batched("x") and not c.batched("new"):
        new = f"batch_broadcast({new}, {c.size})"
    elif c.batched("new") and not c.batched("x"):
        x = f"batch_broadcast({x}, {c.size})"
    return c.call(x=x, new=new, axes=repr(axes + 1))


defprim("in_place", in_place_cast.in_place, _in_place_stub, abstract_eval=_in_place_abstract,
        lower=_in_place_lower, arrays=("x", "new"), path="in_place", positional=2, nondiff_args=("x",),
        tree=adjoint.rebound)
set_fields("in_place", fold=_static_target, batch=_in_place_batch)
deflinear("in_place", {"new": "broadcast_like(new_dot, out)"}, {"new": "unbroadcast(out_bar, new)"})
