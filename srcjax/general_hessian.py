"""Transformations of a hessian whose function's output is not a scalar (issue #15).

``srcjax.hessian(f)`` is forward mode over ``f``'s generated gradient source: that is what another
transformation of it reads (``jit``, ``vmap``, ``jacfwd``, ``jvp``, ``eval_shape``, ...). For an output
that is not a scalar that source stops at its check ("grad requires a real scalar output"); JAX's hessian
there is ``jacfwd(jacrev(f))`` (the hessian's ``_general``). A transformation ``T`` of a hessian (or of a
transformation of one) keeps ``T`` of that general form as ``_or_general``, made the first time a call
(or ``lower``, ``eval_shape``) meets that check, and runs it for those arguments.

Nothing here imports the transformations: they pass ``T`` in (:func:`remade`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .core import TranspileError

# the two ways the gradient's check says it (the generated source's assertion; the primal's shape check)
_MESSAGES = ("grad requires a real scalar output", "needs a scalar output")


def general_of(fn: Any) -> Callable[[], Any] | None:
    """The maker of ``fn``'s general form, where ``fn`` is a hessian or a transformation of one; else None."""
    g = getattr(fn, "_general", None)
    if g is None:
        g = getattr(fn, "_or_general", None)
    return g if callable(g) else None


def remade(obj: Any, fn: Any, transform: Callable[[Any], Any]) -> Any:
    """``obj`` (``transform(fn)``), given ``transform`` of ``fn``'s general form for the calls that need it,
    where ``fn`` has one (made once, when first needed)."""
    general = general_of(fn)
    if general is None or obj is fn:
        return obj
    made: list[Any] = []

    def or_general() -> Any:
        if not made:
            made.append(transform(general()))
        return made[0]

    try:
        obj._or_general = or_general
    except AttributeError:  # pragma: no cover - an object that takes no attributes
        pass
    return obj


def instead(obj: Any, e: TranspileError) -> Any | None:
    """What runs instead of ``obj`` where ``e`` is its gradient's check of an output that is not a scalar
    and ``obj`` transforms a hessian (its general form); else None (``e`` stands)."""
    other = general_of(obj)
    if other is None or not any(m in str(e) for m in _MESSAGES):
        return None
    return other()
