"""A module that imports NumPy as ``onp`` and has a local variable named ``np`` (test_ad_unseen.py)."""

import numpy as onp


def local_named_np(x):
    np = onp.sin(x)
    return onp.sum(np * x)
