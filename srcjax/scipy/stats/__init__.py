"""``srcjax.scipy.stats``: JAX's ``jax.scipy.stats`` distributions (``norm``)."""

from . import norm

__all__ = ["norm"]
