"""What reaches srcjax's Python call path (the C++ dispatcher's misses): shared by the dispatcher tests."""

from __future__ import annotations


class Counting:
    """Counts the calls that reach srcjax's Python path."""

    def __init__(self, c):
        self.n = 0
        self.inner = c._call
        c._call = self

    def __call__(self, args, kwargs):
        self.n += 1
        return self.inner(args, kwargs)
