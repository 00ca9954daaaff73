"""Reverse mode writes its sweeps a second time only when the first pass changed what the second reads
(``VJP.sweeps``: ``restore``, the attributes ``_state`` compares). Two attributes set afresh in each pass were
compared, so every gradient was written twice (hess45); the gradients are the same either way."""

from __future__ import annotations

import numpy as np
import pytest

import srcjax
from srcjax.transforms import reverse_ad


def _rosen_once(x):
    return np.sum((1.0 - x[:-1]) ** 2 + 100.0 * (x[1:] - x[:-1] ** 2) ** 2)


def _doubled(x):
    s = x
    for _ in range(3):
        t = s * 2.0  # (t and s, bound in the loop, saved for the adjoint in the first pass; t is never read there)
        s = t + 1.0
    return np.sum(s)


def _passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sweeps written, one entry a pass (the primal sweep of the function's top level)."""
    passes: list[int] = []
    primal = reverse_ad.VJP.primal

    def counted(self, stmts, ind, lines, bound):  # type: ignore[no-untyped-def]
        if ind == 1:
            passes.append(1)
        return primal(self, stmts, ind, lines, bound)

    monkeypatch.setattr(reverse_ad.VJP, "primal", counted)
    return passes


def test_one_pass_when_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    passes = _passes(monkeypatch)
    x = np.linspace(-1.0, 1.5, 6)
    srcjax.source(srcjax.grad(_rosen_once))  # (written now: not a level-2 cache's lazy stand-in)
    assert len(passes) == 1
    g = np.asarray(srcjax.grad(_rosen_once)(x))
    want = np.zeros_like(x)
    want[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    want[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    np.testing.assert_allclose(g, want, rtol=1e-12)


def test_two_passes_when_the_first_drops_a_save(monkeypatch: pytest.MonkeyPatch) -> None:
    passes = _passes(monkeypatch)
    x = np.linspace(-1.0, 1.5, 6)
    srcjax.source(srcjax.grad(_doubled))
    assert len(passes) == 2
    g = np.asarray(srcjax.grad(_doubled)(x))
    np.testing.assert_allclose(g, np.full_like(x, 8.0), rtol=1e-12)
