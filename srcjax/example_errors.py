"""The user's own error behind a refusal of ``srcjax.vmap``: one example's function, checked alone.

A mistake in the function vmapped (``x @ w`` of shapes that do not fit, an ``if`` on a vector) also
breaks the batched program srcjax wrote from it, but there it shows up in batched terms: shapes with
the mapped axis (``(2, 3)`` for one example's ``(3,)``), a helper srcjax wrote (``batch_select``: "could
not be broadcast"), or a line of a nested function the batched source moved. JAX reports such a
mistake as one example's. So where the batched program is refused, the function is specialized for one example's
arguments (no XLA: abstract evaluation only, as ``eval_shape``); if that fails, its error is the one
raised: the user's line, one example's shapes, the refusal jit gives (``assert`` on data, not "vmap: cannot
batch 'assert ...'" with no hint). vmap's own refusals with a location and a hint, and errors only the
batched program has (``out_axes``, a loop that runs a different number of times per example) stay as they
are, and so do errors of collectives (one example alone binds no axis name). This runs only on the way to
an error.
"""

from __future__ import annotations

from typing import Any

from .core import ArgumentError, DTypeError, ShapeError, TranspileError, UnboundAxisNameError


def _replaceable(e: TranspileError) -> bool:
    """Whether ``e`` may be a batched view of one example's mistake: a shape or dtype error (batched shapes,
    srcjax's helpers), an error with no location or no hint, or "vmap: cannot batch 'math.sqrt(sum_1)'" (a
    temporary's name, a hint about in_axes where jit says why). vmap's other refusals say more than one
    example's error would (an int argument mapped is an array there, not jit's static int: "depends on `n`,
    a mapped argument; pass in_axes=None")."""
    return isinstance(e, (ShapeError, DTypeError)) or e.span is None or not e.hint or \
        e.message.startswith("vmap: cannot batch '")


def behind(c: Any, values: list[Any], batched: TranspileError, eval_shape: Any) -> TranspileError:
    """The error to raise for ``batched``, an error specializing ``c`` (a vmap, or the jit of one: its
    ``_inner``) for the bound arguments ``values``: one example's own error (found by ``eval_shape``,
    api's), or ``batched`` itself."""
    v = c if hasattr(c, "one_example") else getattr(c, "_inner", None)
    if v is None or not hasattr(v, "one_example"):
        return batched
    return example_error(v._primal, v.one_example(tuple(values), {}), batched, eval_shape) or batched


def example_error(primal: Any, example: Any, batched: TranspileError, eval_shape: Any) -> TranspileError | None:
    """The error of ``primal`` called with one example's arguments ``example`` (``(args, kwargs)`` with
    ShapeDtypeStructs for mapped leaves, or None where they are not known), where it is the user's
    own error behind ``batched`` (the batched program's); else None."""
    if example is None or not _replaceable(batched):
        return None
    args, kwargs = example
    try:
        eval_shape(primal, *args, **kwargs)
    except (UnboundAxisNameError, ArgumentError):  # (a collective: one example alone binds no axis name;
        return None  # the batched program bound these arguments: not the user's mistake here)
    except TranspileError as e:
        own = getattr(primal, "_primal_error", None)  # (a derivative vmapped: the function's own error first)
        try:
            if own is not None:
                own(args, kwargs)
        except (UnboundAxisNameError, ArgumentError):
            pass
        except TranspileError as inner:
            e = inner if inner.span is not None else e
        return e if e.span is not None else None
    return None
