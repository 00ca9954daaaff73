"""The generated source of every corpus program is unchanged (see tests/golden.py for refreshing)."""

from __future__ import annotations

import difflib
import os
import zlib

import pytest

from tests.golden import GOLDEN_DIR, cases, render

_MODE = os.environ.get("SRCJAX_GOLDEN", "")
_REFRESH = _MODE == "refresh"
_ALL = cases()
# The whole set takes minutes: the default suite checks a fixed tenth of it (every transformation
# and corpus is represented); SRCJAX_GOLDEN=all checks everything (run it before landing a refactor).
_CASES = _ALL if _MODE in ("all", "refresh") else [c for c in _ALL if zlib.crc32(c[0].encode()) % 10 == 0]


def test_the_corpora_are_recorded() -> None:
    """Every recorded file has a program (a removed program removes its golden file too)."""
    names = {c[0] for c in _ALL}
    recorded = {p.name[: -len(".txt")] for p in GOLDEN_DIR.glob("*.txt")}
    if _REFRESH:
        for stale in recorded - names:
            (GOLDEN_DIR / f"{stale}.txt").unlink()
        return
    assert not recorded - names, f"golden files without a program: {sorted(recorded - names)[:5]}"
    assert len(names) > 300


@pytest.mark.parametrize("name,fn,transform", _CASES, ids=[c[0] for c in _CASES])
def test_generated_source_is_unchanged(name, fn, transform) -> None:
    text = render(fn, transform)
    path = GOLDEN_DIR / f"{name}.txt"
    if _REFRESH or not path.exists():
        GOLDEN_DIR.mkdir(exist_ok=True)
        path.write_text(text)
        if not _REFRESH:
            pytest.fail(f"{path.name} was not recorded; recorded it now (read it, then commit it)")
        return
    want = path.read_text()
    if text != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), "golden", "now"))
        pytest.fail(f"the generated source of {name} changed (SRCJAX_GOLDEN=refresh records it):\n{diff}")
