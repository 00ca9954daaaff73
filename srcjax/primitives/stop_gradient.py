"""``srcjax.lax.stop_gradient`` (JAX's): the identity, with a zero derivative (``nondiff``): derivative code
treats its result as a constant. A container operand is taken leaf by leaf (``collective_trees.tree_stop_gradient``)."""

from __future__ import annotations

from .. import collective_trees, lax
from ..core import ShapedArray
from ..lower.hlo import HloValue
from . import batch_rules
from .registry import LowerCtx, defprim, set_fields


def _stop_gradient_stub(x, /):  # type: ignore[no-untyped-def]
    ...


def _stop_gradient_lower(ctx: LowerCtx, x: HloValue) -> HloValue:
    return x


def _stop_gradient_abstract(x: ShapedArray) -> ShapedArray:
    return ShapedArray(x.shape, x.dtype, x.weak_type)


defprim("stop_gradient", lax.stop_gradient, _stop_gradient_stub, abstract_eval=_stop_gradient_abstract,
        lower=_stop_gradient_lower, path="srcjax.lax.stop_gradient", static_eval=False, nondiff=True,
        tree=collective_trees.tree_stop_gradient)
set_fields("stop_gradient", batch=batch_rules.unary)
