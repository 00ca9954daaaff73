"""Three oracles agree on a corpus of NumPy programs (tests/corpus_programs.py).

For every program: (1) the user's function run by NumPy, (2) the generated
source (``srcjax.numpy_function``) run by NumPy, and (3) the XLA executable
(``srcjax.compile``) return the same structure, shapes and dtypes, and values
that agree (exactly for integers and booleans, to a dtype-dependent tolerance
for floats).
"""

from __future__ import annotations

import copy
import zlib
from typing import Any

import numpy as np
import pytest

import srcjax
from tests.corpus_programs import CORPUS, Case

DEFAULT_TOL = {  # dtype name -> (rtol, atol)
    "float16": (2e-3, 2e-3),
    "bfloat16": (2e-2, 2e-2),
    "float32": (2e-5, 1e-6),
    "float64": (1e-12, 1e-13),
}


def make_call(case: Case) -> tuple[tuple[Any, ...], dict[str, Any]]:
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    args = case.args(rng)
    kwargs = case.kwargs(rng) if case.kwargs is not None else {}
    return args, kwargs


def _float_dtypes(tree: Any) -> list[np.dtype]:
    if isinstance(tree, (tuple, list)):
        return [d for t in tree for d in _float_dtypes(t)]
    if isinstance(tree, dict):
        return [d for t in tree.values() for d in _float_dtypes(t)]
    if isinstance(tree, (np.ndarray, np.generic)) and tree.dtype.name in DEFAULT_TOL:
        return [tree.dtype]
    return []


def tolerance(case: Case, out_dtype: np.dtype, inputs: Any) -> tuple[float, float]:
    """The tolerance of the least precise float among the output and the inputs (a float64
    result computed from float32 inputs is only as accurate as float32)."""
    cands = [DEFAULT_TOL.get(out_dtype.name, (1e-6, 1e-6))] + [DEFAULT_TOL[d.name] for d in _float_dtypes(inputs)]
    rtol, atol = max(c[0] for c in cands), max(c[1] for c in cands)
    return (case.rtol if case.rtol is not None else rtol, case.atol if case.atol is not None else atol)


def assert_agree(actual: Any, expected: Any, case: Case, who: str, path: str = "out", inputs: Any = ()) -> None:
    """``actual`` has ``expected``'s structure, and equal leaves (shape, dtype, values)."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)), f"{who}: {path} is {type(actual).__name__}, expected a sequence"
        assert type(actual) is type(expected), f"{who}: {path} is a {type(actual).__name__}, " \
                                               f"expected a {type(expected).__name__}"
        assert len(actual) == len(expected), f"{who}: {path} has {len(actual)} items, expected {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_agree(a, e, case, who, f"{path}[{i}]", inputs)
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{who}: {path} is {type(actual).__name__}, expected a dict"
        assert sorted(actual) == sorted(expected), f"{who}: {path} keys differ"
        for k in expected:
            assert_agree(actual[k], expected[k], case, who, f"{path}[{k!r}]", inputs)
        return
    e = np.asarray(expected)
    a = np.asarray(actual)
    assert a.shape == e.shape, f"{who}: {path} has shape {a.shape}, expected {e.shape}"
    assert a.dtype == e.dtype, f"{who}: {path} has dtype {a.dtype}, expected {e.dtype}"
    if e.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e, err_msg=f"{who}: {path}")
        return
    rtol, atol = tolerance(case, e.dtype, inputs)
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{who}: {path}")


def _params(test: str) -> list[Any]:
    """The corpus as pytest params; a case with a known (reported) bug is a strict xfail in the tests it breaks."""
    return [pytest.param(c, id=c.name, marks=[pytest.mark.xfail(reason=c.xfail, strict=True)]
                         if c.xfail and test in c.xfail_in else []) for c in CORPUS]


def test_corpus_is_large_and_distinct():
    names = [c.name for c in CORPUS]
    assert len(names) >= 60, len(names)
    assert len(set(names)) == len(names), "corpus program names must be unique"
    assert len({c.fn for c in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("case", _params("oracles"))
def test_three_oracles_agree(case: Case) -> None:
    args, kwargs = make_call(case)
    pristine = copy.deepcopy(args)
    expected = case.fn(*copy.deepcopy(args), **kwargs)

    generated = srcjax.numpy_function(case.fn)(*copy.deepcopy(args), **kwargs)
    assert_agree(generated, expected, case, "generated source run by NumPy", inputs=args)

    compiled = srcjax.compile(case.fn, static_argnames=case.static_argnames)
    out = compiled(*args, **kwargs)
    assert_agree(out, expected, case, "XLA", inputs=args)

    # the compiled function neither mutates its inputs nor changes when called again
    for a, p in zip(args, pristine):
        if isinstance(p, np.ndarray):
            np.testing.assert_array_equal(a, p)
    assert_agree(compiled(*args, **kwargs), expected, case, "XLA (second call, cached)", inputs=args)


@pytest.mark.parametrize("case", _params("eval_shape"))
def test_eval_shape_matches(case: Case) -> None:
    """Abstract evaluation alone predicts every output's shape and dtype."""
    args, kwargs = make_call(case)
    expected = case.fn(*copy.deepcopy(args), **kwargs)
    shapes = srcjax.eval_shape(srcjax.compile(case.fn, static_argnames=case.static_argnames), *args, **kwargs)

    def check(s: Any, e: Any, path: str) -> None:
        if isinstance(e, (tuple, list)):
            assert isinstance(s, (tuple, list)) and len(s) == len(e), path
            for i, (s1, e1) in enumerate(zip(s, e)):
                check(s1, e1, f"{path}[{i}]")
        elif isinstance(e, dict):
            assert isinstance(s, dict) and sorted(s) == sorted(e), path
            for k in e:
                check(s[k], e[k], f"{path}[{k!r}]")
        elif isinstance(s, srcjax.ShapeDtypeStruct):
            ea = np.asarray(e)
            assert (s.shape, s.dtype) == (ea.shape, ea.dtype), f"{path}: {s} vs {ea.shape} {ea.dtype}"
        else:  # a static output (a Python number computed from shapes)
            assert s == e, f"{path}: {s!r} vs {e!r}"

    check(shapes, expected, "out")


@pytest.mark.parametrize("case", _params("source"))
def test_generated_source_is_plain_python(case: Case) -> None:
    """The generated module parses, names the entry function, and defines every helper it calls."""
    text = srcjax.source(case.fn)
    assert text.startswith("import") and f"def {case.fn.__name__}(" in text
    compile(text, "<generated>", "exec")
