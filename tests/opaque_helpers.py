"""Helpers in a module of the user's own (not the caller's file) for tests/test_callees.py: errors
inside them are located here, with the call chain from the caller's line."""

import statistics

import numpy as np


def row_means(x):
    return np.mean(x, axis=-1)


def fmean_of(x):
    return statistics.fmean(x)


def mismatched(x):
    return x + np.ones(7)


def caught(x):
    try:
        return np.tanh(x)
    except ValueError:
        return x


def jitter(x, rng):
    return x + rng.normal(size=x.shape)


def outer(x):
    return 2.0 * mismatched(x)
