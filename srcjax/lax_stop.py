"""The NumPy reference of ``srcjax.lax.stop_gradient`` (its record: ``primitives/stop_gradient.py``), in a
module of its own so that both ``srcjax.lax`` and the ``lax`` functions written in NumPy terms
(``srcjax.lax_numpy``: ``clamp``'s derivative at its bounds) call it."""

from __future__ import annotations

from typing import Any

__all__ = ["stop_gradient"]


def stop_gradient(x: Any) -> Any:
    """JAX's ``lax.stop_gradient``: ``x`` itself, through which no derivative flows (``grad``, ``jvp``,
    ``vjp`` and the Jacobians see a constant; a container's leaves each). Target networks,
    straight-through estimators (``x + stop_gradient(np.round(x) - x)``), EM's fixed posteriors."""
    return x
