"""Helpers that tests/test_comprehension_reads.py calls through the module (``H.pair(x)``)."""

import numpy as np


def pair(x):
    return {"u": x * 1.5, "v": x * x}


def seq(x):
    return [x * 1.5, np.sin(x)]
