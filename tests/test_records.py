"""The primitive records (srcjax/primitives/registry.py): each field is well formed, and what a
record tells the simplifier about its results (``simplify``) holds for NumPy itself, for every
dtype. (Derivative rules: tests/test_ad_rules.py; lowering and abstract evaluation:
tests/test_primitives.py.)"""

from __future__ import annotations

import inspect
import itertools
import warnings

import numpy as np
import pytest

import srcjax  # noqa: F401  (registers the primitives)
from srcjax.primitives import registry
from srcjax.primitives.registry import PRIMITIVES, SIMPLIFY_KINDS

DTYPES = [np.dtype(d) for d in ("bool", "int8", "int32", "int64", "uint8", "float16", "float32", "float64")]
FLOATS = [d for d in DTYPES if d.kind == "f"]


def _value(d: np.dtype, shape: tuple[int, ...] = (2, 3)) -> np.ndarray:
    return (np.arange(int(np.prod(shape))).reshape(shape) % 3 + 1).astype(d)


def _run(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return np.asarray(fn(*args, **kwargs))
        except TypeError:  # a dtype the function does not take (np.negative of booleans)
            return None


def test_record_fields_are_well_formed() -> None:
    for name, p in PRIMITIVES.items():
        params = set(p.signature.parameters)
        assert set(p.arrays) | set(p.array_seqs) <= params, name
        assert set(p.mixed) <= params and set(p.origin_from) <= params, name
        assert p.result_kind({}) in ("array", "list", "per_operand", "any"), name
        assert p.simplify is None or p.simplify in SIMPLIFY_KINDS, name
        assert p.batch is None or callable(p.batch), name  # (the slot vmap fills: issue #15)
        assert p.fold is None or callable(p.fold), name  # (static folds: decided by static operands)
        assert isinstance(p.through, tuple) and all(v is None or not callable(v) for v in p.through), name
        assert callable(p.fn) and callable(p.abstract_eval) and callable(p.lower), name
        assert registry.lookup(p.fn) is p, name
        if p.path.startswith("np.") and p.path.count(".") == 1:
            assert getattr(np, p.path[3:]) is p.fn, f"{name}: {p.path} is not its NumPy callable"


def test_every_numpy_spelling_maps_to_its_record() -> None:
    spellings = registry.numpy_spellings()
    assert spellings["abs"] is spellings["absolute"] is PRIMITIVES["absolute"]
    assert spellings["amax"] is PRIMITIVES["max"]
    for k, p in spellings.items():
        assert registry.lookup(getattr(np, k)) is p


def _by_kind(kind: str) -> list[registry.Primitive]:
    return [p for p in PRIMITIVES.values() if p.simplify == kind]


@pytest.mark.parametrize("kind", sorted(SIMPLIFY_KINDS))
def test_simplify_kind_has_members(kind: str) -> None:
    assert _by_kind(kind), f"no primitive has simplify={kind!r}: drop it from SIMPLIFY_KINDS"


@pytest.mark.parametrize("d", DTYPES, ids=str)
def test_unary_facts_hold_for_numpy(d: np.dtype) -> None:
    x = _value(d)
    float_results = set()
    for kind in ("float", "same", "shape", "shape_family"):
        for p in _by_kind(kind):
            r = _run(p.fn, x)
            if r is None:
                continue
            assert r.shape == x.shape, (p.name, d)
            if kind == "float":
                assert r.dtype.kind == "f", (p.name, d)
                if d.kind == "f":
                    assert r.dtype == d, (p.name, d)
                float_results.add(r.dtype)
            elif kind == "same" and d.kind != "b":
                assert r.dtype == d, (p.name, d)
            elif kind == "shape_family" and d.kind == "f":
                assert r.dtype == d, (p.name, d)
    # "float_of": every float ufunc gives an integer operand one and the same floating dtype
    assert len(float_results) <= 1, (d, float_results)


@pytest.mark.parametrize("d1, d2", list(itertools.product(DTYPES, DTYPES)), ids=str)
def test_binary_facts_hold_for_numpy(d1: np.dtype, d2: np.dtype) -> None:
    a, b = _value(d1, (2, 1)), _value(d2, (1, 3))
    plus = _run(np.add, a, b)
    assert plus is not None
    for kind in ("arith", "promote", "binary"):
        for p in _by_kind(kind):
            r = _run(p.fn, a, b)
            if r is None:
                continue
            assert r.shape == (2, 3), (p.name, d1, d2)
            if kind == "promote" or (kind == "arith" and d1.kind == d2.kind == "f"):
                assert r.dtype == plus.dtype, (p.name, d1, d2, r.dtype, plus.dtype)
    for p in _by_kind("select"):
        r = _run(p.fn, a > 1, a, b)
        assert r is not None and r.dtype == plus.dtype and r.shape == (2, 3), (p.name, d1, d2)


@pytest.mark.parametrize("d", DTYPES, ids=str)
@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), (0, True)])
def test_reduction_facts_hold_for_numpy(d: np.dtype, axis: int | None, keepdims: bool) -> None:
    x = _value(d)
    for kind in ("reduce", "reduce_keep", "reduce_float"):
        for p in _by_kind(kind):
            r = _run(p.fn, x, axis=axis, keepdims=keepdims)
            assert r is not None, p.name
            assert r.shape == np.sum(x, axis=axis, keepdims=keepdims).shape, (p.name, d)
            if kind == "reduce_keep" or (kind == "reduce" and d.kind == "f"):
                assert r.dtype == d, (p.name, d, r.dtype)
            if kind == "reduce_float":
                assert r.dtype.kind == "f", (p.name, d)


def test_generic_engines_read_records_not_names() -> None:
    """The derivative engines decide by a primitive's record, never by testing its name."""
    root = inspect.getfile(srcjax).rsplit("/", 1)[0]
    engines = [f"transforms/{m}.py" for m in ("activity", "forward_ad", "reverse_ad", "anf", "simplify")] + \
        [f"lower/{m}.py" for m in ("apply", "specialize", "loops", "branches", "rolled_for")]
    for mod in engines:
        text = open(f"{root}/{mod}").read()
        assert "prim.name ==" not in text and "prim.name in" not in text and "prim.name not in" not in text, mod
