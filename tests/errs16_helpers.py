"""Helpers in a module of the user's own for tests/errs16_programs.py: a mistake inside one of them is
located here (this file, the helper's line), with the caller's line as the call that led to it."""

import math

import numpy as np


def project(x, w):
    h = np.tanh(x)
    return h @ w


def scale_by_norm(x):
    return x / math.sqrt(np.sum(x * x))


def branch_on_vector(x):
    if x > 0:
        return x
    return -x


def first_positive(x):
    return x[x > 0]
