"""A plain call (frontend/plain_calls.py) is read exactly as flat_call's spelling checks would have read it.

Every function normalized while the corpus programs are written (the user's and those srcjax wrote: derivatives,
batched programs, Jacobians' wrappers) is normalized again with no call read as plain: the same ANF, the same
places of its statements, the same callees and temporaries. The default tier reads a fixed sample of the golden
corpora (every transformation is in it); the thorough tier reads them all.
"""

from __future__ import annotations

import zlib
from typing import Any

import libcst as cst
import pytest

from srcjax.frontend import plain_calls, program
from tests.golden import cases, render
from tests.tiers import THOROUGH

_CASES = [c for c in cases() if THOROUGH or zlib.crc32(c[0].encode()) % 40 == 7]


def _places(nf: Any) -> list[Any]:
    """Each node of the function with a place, in order: (its code, its place)."""
    out: list[Any] = []
    stack: list[cst.CSTNode] = [nf.fdef]
    while stack:
        n = stack.pop()
        if id(n) in nf.spans:
            out.append((cst.Module(body=[]).code_for_node(n), nf.spans[id(n)]))
        stack.extend(reversed(n.children))
    return out


def _form(nf: Any) -> tuple[Any, ...]:
    return (cst.Module(body=[nf.fdef]).code, _places(nf), list(nf.calls), list(nf.call_sites.items()),
            sorted(nf.temps))


@pytest.mark.parametrize("name,fn,transform", _CASES, ids=[c[0] for c in _CASES])
def test_plain_calls_read_as_the_checks_read_them(name, fn, transform, monkeypatch) -> None:
    original = program.normalize
    read = plain_calls.plain_callee

    def checked(f: Any, *args: Any, **kwargs: Any) -> Any:
        nf = original(f, *args, **kwargs)
        monkeypatch.setattr(plain_calls, "plain_callee", lambda norm, node: plain_calls.NOT_PLAIN)
        try:
            slow = original(f, *args, **kwargs)
        finally:
            monkeypatch.setattr(plain_calls, "plain_callee", read)
        assert _form(nf) == _form(slow), f"{nf.name} of {name}"
        return nf

    monkeypatch.setattr(program, "normalize", checked)
    render(fn, transform)
    # (each function read twice: a refusal before any is read compares none)


def test_a_call_the_checks_rewrite_is_never_plain() -> None:
    """The callees flat_call's spellings rewrite (map, sorted, srcjax.lax.scan, tree_map, ...) are known by
    identity: a call of one goes through the checks."""
    import builtins
    import functools

    from srcjax import lax, tree_util

    found = plain_calls._rewritten_callees()
    for f in (builtins.map, builtins.zip, functools.reduce, builtins.sorted, builtins.print, lax.scan, lax.cond,
              lax.map, tree_util.tree_map):
        assert id(f) in found


def test_check_callee_remembers_only_its_modules_own_helpers() -> None:
    """resolve.check_callee remembers the library helpers it let through (its answer reads the function alone),
    and only the functions their modules hold (no copy: it would be kept alive, and its id reused)."""
    import sys

    import numpy as np

    import srcjax
    from srcjax.frontend import resolve

    def loss(x):
        return np.sum(np.maximum(x, 0.0) ** 2)

    srcjax.source(srcjax.vmap(srcjax.grad(loss)))
    assert resolve._HELPERS_PASSED
    for key, fn in resolve._HELPERS_PASSED.items():
        assert key == id(fn) and getattr(sys.modules[fn.__module__], fn.__name__) is fn
