"""``pytest --cpu-durations=N``: the N tests and the N files that took the most process CPU time (setup, call and
teardown, ``time.process_time`` in the process that ran them: an xdist worker's own, plus the CPU of the
subprocesses the test started and waited for), and the total; under xdist
also when each worker's last test ended (wall seconds since the session started): a worker idle at the end while
the other finishes is wall time the run's balance loses.

``--durations`` reports wall time, which on a loaded machine ranks tests by the load as much as by their cost; CPU
time is what the default tier's budget is (docs/testing.md, "Tiers"). Hooks of tests/conftest.py.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Generator
from typing import Any

import pytest

_KEY = "cpu_s"
_CHILD_KEY = "child_cpu_s"  # the CPU of the subprocesses the test waited for (os.times: children's user + system)
_CHILDREN: dict[str, float] = defaultdict(float)
_TIMES: dict[str, float] = defaultdict(float)
_ENDED: dict[str, float] = {}  # worker (xdist's gateway id) -> when its last test ended, time.monotonic()
_STARTED = [time.monotonic()]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-durations", type=int, default=None, metavar="N",
                     help="show the N tests and files that took the most process CPU time (0: all)")


def _children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def _timed(item: pytest.Item) -> Generator[None, Any, Any]:
    start, children = time.process_time(), _children_cpu()
    try:
        return (yield)
    finally:
        item.user_properties.append((_KEY, time.process_time() - start))
        item.user_properties.append((_CHILD_KEY, _children_cpu() - children))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _timed(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _timed(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _timed(item))


def pytest_sessionstart(session: pytest.Session) -> None:
    _STARTED[0] = time.monotonic()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # (the item's properties accumulate over its phases: each report carries the phases so far, the last all)
    if report.when == "teardown":
        _TIMES[report.nodeid] = sum(v for k, v in report.user_properties if k in (_KEY, _CHILD_KEY))
        _CHILDREN[report.nodeid] = sum(v for k, v in report.user_properties if k == _CHILD_KEY)
        # (xdist's controller sees each worker's reports with the worker's node attached)
        _ENDED[getattr(getattr(getattr(report, "node", None), "gateway", None), "id", "main")] = time.monotonic()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    n = config.getoption("cpu_durations")
    if n is None or not _TIMES:
        return
    files: dict[str, float] = defaultdict(float)
    for node, t in _TIMES.items():
        files[node.split("::", 1)[0]] += t
    tr = terminalreporter
    for title, table in (("tests", _TIMES), ("files", files)):
        tr.write_sep("=", f"most CPU time: {title} (process CPU s)")
        for node, t in sorted(table.items(), key=lambda kv: -kv[1])[: n or None]:
            tr.write_line(f"{t:8.2f} {node}")
    tr.write_line(f"total {sum(_TIMES.values()):.1f} CPU s in {len(_TIMES)} tests"
                  f" ({sum(_CHILDREN.values()):.1f} of them in the tests' subprocesses)")
    if len(_ENDED) > 1:
        ends = {w: t - _STARTED[0] for w, t in sorted(_ENDED.items())}
        last = max(ends.values())
        tr.write_line("last test ended (wall s): " + ", ".join(
            f"{w} {t:.1f}" + (f" (then idle {last - t:.1f})" if t < last else "") for w, t in ends.items()))
