"""Central finite differences in float64: the derivative oracle independent of any AD."""

from typing import Any

import numpy as np


def central_fd(f: Any, args: Any, i: int, eps: float = 1e-6) -> np.ndarray:
    """d f(*args) / d args[i], one element at a time (a 0-d argument is passed as a float)."""
    x = np.asarray(args[i], dtype=np.float64)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        a, b = list(args), list(args)
        a[i], b[i] = (xp if x.ndim else float(xp)), (xm if x.ndim else float(xm))
        g[idx] = (f(*a) - f(*b)) / (2 * eps)
    return g
