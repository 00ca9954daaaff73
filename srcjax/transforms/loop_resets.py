"""The cotangent of a name a reverse-mode loop body binds first, at the start of each reversed iteration.

Such a name (``outputs`` in ``for W, b in params: outputs = np.dot(inputs, W) + b``, read after the loop) is not
carried: entering a reversed iteration its cotangent is the one after the loop on the first, zeros on the others
(the end of each iteration resets it, ``outputs_bar = zeros_like(outputs)``). Those zeros are shaped like that
iteration's value; where the layers change shape (autograd's neural net) the earlier iteration's value has
another, so after the pops of the next iteration its zeros take the shape of its own value:
``if np.shape(outputs_bar) != np.shape(outputs): outputs_bar = zeros_like(outputs)`` (static shapes: decided
while compiling, nothing at run time). A name bound before the loop needs none: its old value comes back from
the tape before the reset (``transforms/reverse_ad.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .reverse_ad import VJP

__all__ = ["reshaped"]


def reshaped(w: VJP, loop: Any, reset: list[str], popped: list[str], pad: str) -> list[str]:
    """The lines that give each of ``reset`` (names whose cotangents the loop's body resets at its end) the zeros
    of its own value where the last iteration's had another shape; ``popped``: the names the body pops first."""
    before = w.tables.bound_before(loop)
    return [ln for v in reset if v in popped and v not in before for ln in (
        f"{pad}    if np.shape({w.bname(v)}) != np.shape({v}):", f"{pad}        {w.bname(v)} = zeros_like({v})")]
