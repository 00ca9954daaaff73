"""XLA's compile on a worker thread, while the calling thread does the Python work that does not need it.

jaxlib's ``compile_and_load`` releases the GIL (a Python thread spinning beside it keeps its full rate),
and XLA's compile of a first call's program is 10-250 ms. A first call has Python work left after its
StableHLO text exists that does not need the executable: the level-2 cache entry (``warm_cache``), the
upload program of the arguments (``host_upload.prepare``). :func:`overlapped` runs the compile on
srcjax's compile worker (one thread per process, started by the first compile that uses it) and that
work on the calling thread meanwhile, then waits for both.

What a caller sees does not change: the same executable, the compile's exception raised as it would
have been (first, before an error of the work done meanwhile), the work done exactly once, and nothing
left running when :func:`overlapped` returns. When the worker is busy (another thread is compiling
through it), or ``SRCJAX_COMPILE_OVERLAP=0``, the compile runs on the calling thread and the work after
it, as before.
"""

from __future__ import annotations

import _thread
import os
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["enabled", "overlapped"]


class _Job:
    __slots__ = ("compile", "started", "done", "result", "error")

    def __init__(self, compile: Callable[[], Any]) -> None:
        self.compile = compile
        self.started = threading.Event()  # set just before the compile (which releases the GIL) begins
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None


_BUSY = threading.Lock()  # held while a job is on the worker (one at a time; others compile inline)
_WAKE = threading.Condition(threading.Lock())
_JOBS: list[_Job] = []
_WORKER: list[int | None] = [None]


def enabled() -> bool:
    """Whether compiles may overlap the caller's work (``SRCJAX_COMPILE_OVERLAP=0`` turns it off)."""
    return os.environ.get("SRCJAX_COMPILE_OVERLAP", "1").strip().lower() not in ("0", "false", "no", "off")


def _worker() -> None:
    while True:
        with _WAKE:
            while not _JOBS:
                _WAKE.wait()
            job = _JOBS.pop(0)
        job.started.set()
        try:
            job.result = job.compile()
        except BaseException as e:  # noqa: BLE001 - handed to the waiting caller, raised there
            job.error = e
        finally:
            job.done.set()
        del job  # (the executable and the closure belong to the caller now)


def _after_fork_in_child() -> None:
    """A forked child has no worker thread (nor a job on it): a fresh one starts at its first compile."""
    global _BUSY, _WAKE
    _BUSY = threading.Lock()
    _WAKE = threading.Condition(threading.Lock())
    _JOBS.clear()
    _WORKER[0] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _inline(compile: Callable[[], Any], meanwhile: Callable[[], Any] | None) -> Any:
    loaded = compile()
    if meanwhile is not None:
        meanwhile()
    return loaded


def overlapped(compile: Callable[[], Any], meanwhile: Callable[[], Any] | None) -> Any:
    """``compile()``'s result, with ``meanwhile()`` run on this thread while it runs on the compile worker.

    Errors come as in a sequential run: ``compile``'s first (``meanwhile`` may then have run, and its own
    error, if any, is dropped: it prepares, and has no effect the caller relies on), then ``meanwhile``'s."""
    if meanwhile is None or not enabled() or not _BUSY.acquire(blocking=False):
        return _inline(compile, meanwhile)
    try:
        job = _Job(compile)
        with _WAKE:
            if _WORKER[0] is None:
                try:
                    _WORKER[0] = _thread.start_new_thread(_worker, ())
                except RuntimeError:  # (no thread to be had: compile on this one, as before)
                    pass
            queued = _WORKER[0] is not None
            if queued:
                _JOBS.append(job)
                _WAKE.notify()
        if not queued:
            return _inline(compile, meanwhile)
        job.started.wait()  # (the worker holds the GIL until its compile releases it: let it get there first)
        failed: BaseException | None = None
        try:
            meanwhile()
        except BaseException as e:  # noqa: BLE001 - raised below, after the compile's own error if any
            failed = e
        job.done.wait()
    finally:
        _BUSY.release()
    if job.error is not None:
        error, job.error = job.error, None
        raise error
    if failed is not None:
        raise failed
    return job.result
