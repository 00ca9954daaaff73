"""``Primitive.bind``: ``signature.bind`` with the mapping of a call shape remembered (frontend fe25).

The normalizer and reverse mode bind every primitive call they read; ``Primitive.bind`` works out which
parameter each argument takes once per (signature, positional count, keyword names) and reuses it. It must
give what ``inspect`` gives for every primitive and call shape: the same parameters in the same order, the
same values (by identity), the same ``TypeError`` text.
"""

from __future__ import annotations

import inspect
import itertools

import numpy as np
import pytest

from srcjax.primitives import registry


def _inspect(sig: inspect.Signature, args: list[object], kwargs: dict[str, object]) -> object:
    try:
        ba = sig.bind(*args, **kwargs)
    except TypeError as e:
        return ("error", str(e))
    return ("ok", list(ba.arguments.items()))


def _ours(prim: registry.Primitive, args: list[object], kwargs: dict[str, object]) -> object:
    try:
        ba = prim.bind(args, kwargs)
    except TypeError as e:
        return ("error", str(e))
    assert ba.signature is prim.signature
    return ("ok", list(ba.arguments.items()))


def _shapes(sig: inspect.Signature) -> list[tuple[int, tuple[str, ...]]]:
    names = [*sig.parameters, "not_a_parameter"]
    n = len(sig.parameters)
    out = []
    for npos in range(n + 2):
        for k in range(3):
            out += [(npos, kw) for kw in itertools.combinations(names, k)]
    return out


@pytest.mark.parametrize("name", sorted(registry.PRIMITIVES))
def test_bind_is_inspects_bind_for_every_call_shape(name: str) -> None:
    prim = registry.PRIMITIVES[name]
    for npos, kw in _shapes(prim.signature):
        for _ in range(2):  # (the second time from the remembered plan)
            args = [object() for _ in range(npos)]
            kwargs = {k: object() for k in kw}
            want, got = _inspect(prim.signature, args, kwargs), _ours(prim, args, kwargs)
            assert got == want, (name, npos, kw)


def test_bind_collects_star_args() -> None:
    prim = registry.lookup(np.einsum)
    assert prim is not None and any(p.kind == p.VAR_POSITIONAL for p in prim.signature.parameters.values())
    a, b = object(), object()
    for _ in range(2):
        got = prim.bind(["ij,jk", a, b], {}).arguments
        want = prim.signature.bind("ij,jk", a, b).arguments
        assert list(got) == list(want) and all(got[k] == want[k] for k in want)
        assert got["operands"] == (a, b)


def test_bind_args_applies_defaults_as_before() -> None:
    prim = registry.lookup(np.sum)
    assert prim is not None
    x = object()
    ba = prim.signature.bind(x, axis=0)
    ba.apply_defaults()
    assert prim.bind_args([x], {"axis": 0}) == dict(ba.arguments)
