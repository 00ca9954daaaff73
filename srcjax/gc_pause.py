"""The cyclic garbage collector paused while the front end works.

The front end (reading, normalizing, transforming, specializing) allocates many short-lived
objects (libcst nodes, source strings, abstract values) that die by reference counting. With the
collector on, that churn counts towards its thresholds: a first call ran dozens of young
collections and, every few first calls, a full collection of the whole process (with jax or other
large libraries loaded, 100-150 ms: most of a small program's first call). Pausing the collector
for the duration lets those objects die uncounted; what survives is collected as usual after.

Scratch memory of one front-end run (the shared ``ast`` trees of ``frontend/parsed.py``, the
remembered walks of ``frontend/ast_walk.py``) is dropped when the pause ends (:func:`on_resume`),
before the collector would scan it and move it to an older generation.

Reentrant: a pause inside a pause does nothing, and a collector the user turned off stays off.
The switch is process-wide: with two threads transforming at once, the first to finish turns the
collector back on while the other still works (it then runs with the collector on, as before), and
a ``gc.disable()`` made by another thread during a pause is undone when the pause ends.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["on_resume", "paused", "pausing"]

F = TypeVar("F", bound=Callable[..., Any])

_ON_RESUME: list[Callable[[], Any]] = []


def on_resume(drop: Callable[[], Any]) -> None:
    """Call ``drop`` whenever a pause ends (to empty a cache that only serves one front-end run)."""
    _ON_RESUME.append(drop)


@contextmanager
def paused() -> Iterator[None]:
    """The collector off inside the block (unless it already was), back on after, even on errors."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        for drop in _ON_RESUME:
            drop()
        gc.enable()


def pausing(fn: F) -> F:
    """``fn`` run with the collector :func:`paused`."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with paused():
            return fn(*args, **kwargs)

    return run  # type: ignore[return-value]
