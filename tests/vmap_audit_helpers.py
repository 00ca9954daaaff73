"""Helpers in another module for tests/test_vmap_audit.py (issue #15: helpers of other modules under vmap)."""

from __future__ import annotations

import numpy as onp


def rms_norm(v, eps=1e-6):
    return v / onp.sqrt(onp.mean(v * v) + eps)


def gelu(h):
    return 0.5 * h * (1.0 + onp.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))


def clipped_step(x, lr):
    g = onp.clip(x, -1.0, 1.0)
    return x - lr * g
