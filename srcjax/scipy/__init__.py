"""``srcjax.scipy``: JAX's ``jax.scipy`` functions that models and likelihoods call (``special``,
``stats.norm``), written in NumPy terms over ``srcjax.lax``'s special-function primitives."""

from . import special, stats

__all__ = ["special", "stats"]
