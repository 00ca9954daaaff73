"""Activity analysis caches (srcjax/transforms/activity.py)."""

from __future__ import annotations

import gc

from srcjax.transforms.activity import FactsPerFunction


class _Fn:  # stands in for a NormalizedFunction (any object that takes weak references)
    pass


def test_per_function_facts_die_with_their_function() -> None:
    """Facts are keyed by the function object: a new function never sees an old one's facts, even
    when it reuses the old one's id() (which a cache keyed by id() would hand it)."""
    cache = FactsPerFunction()
    seen = set()
    reused = 0
    for _ in range(200):  # (until ids were reused a few times: a full collection per round is slow in a big heap)
        nf = _Fn()
        facts = cache.of(nf)  # type: ignore[arg-type]
        assert facts == {}, "a new function saw facts of an earlier one"
        facts["active"] = True
        assert cache.of(nf) is facts  # type: ignore[arg-type]
        reused += id(nf) in seen
        seen.add(id(nf))
        del nf, facts
        gc.collect()
        if reused >= 3:
            break
    assert reused >= 3  # ids were reused, so the test exercised the hazard
    assert not cache._facts  # nothing kept for dead functions
