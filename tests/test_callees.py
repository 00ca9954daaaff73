"""What a call in compiled code reaches, and what srcjax does with it (issue 13, items 2 and 4).

- The user's own code (any module of theirs) is transpiled; errors inside it are located there,
  with the chain of calls from the user's line.
- Pure functions of static values (shapes, dtypes, Python numbers, static arguments, NamedTuple and
  dataclass fields, methods of strings, tuples, dicts) are evaluated while specializing, as before.
- Everything else (a ``np.random.Generator``'s methods, the standard library, installed packages,
  C functions, callable objects) is refused where the user calls it: run once while specializing,
  its result would have been a constant of the compiled code, where NumPy calls it on every call.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import math
import statistics
from typing import NamedTuple

import libcst
import numpy as np
import pytest

import srcjax
from srcjax.frontend import callees
from tests import corpus_helpers, opaque_helpers
from tests.fd import central_fd


def where(fn, snippet: str) -> tuple[str, int, int]:
    """(file, 1-based line, 0-based column) of the first ``snippet`` in ``fn``'s source."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if snippet in line:
            return inspect.getsourcefile(fn), start + i, line.index(snippet)  # type: ignore[return-value]
    raise AssertionError(f"{snippet!r} not in {fn.__name__}")


def at(e: srcjax.TranspileError, fn, snippet: str) -> bool:
    return (e.span.filename, e.span.line, e.span.col) == where(fn, snippet)


# -- issue 13 item 2: the reproducer ------------------------------------------------------------------
def noisy(w, rng):
    return w + rng.normal(size=w.shape)


def noisy_loss(w, rng):
    return np.sum(noisy(w, rng) ** 2)


def test_random_draw_is_refused_not_baked() -> None:
    """It compiled, and both calls returned the same draw (NumPy draws fresh noise each call)."""
    w = np.zeros(3)
    with pytest.raises(srcjax.OpaqueCallError) as ei:
        srcjax.compile(noisy)(w, np.random.default_rng(0))
    e = ei.value
    assert at(e, noisy, "rng.normal(size=w.shape)")
    assert "Generator.normal" in e.message
    assert "srcjax.random" in e.hint and "argument" in e.hint
    first = str(e).splitlines()[0]
    assert first.startswith(f"{inspect.getsourcefile(noisy)}:{e.span.line}:{e.span.col + 1}: error:")


@pytest.mark.parametrize("transform", ["grad", "vjp", "hessian"])
def test_random_draw_is_refused_under_transformations(transform) -> None:
    def drawn(w, rng):
        return w + rng.normal(size=3)

    def loss(w):
        return np.sum(drawn(w, RNG) ** 2)

    w = np.ones(3)
    with pytest.raises(srcjax.OpaqueCallError) as ei:
        if transform == "grad":
            srcjax.grad(loss)(w)
        elif transform == "vjp":
            srcjax.vjp(loss, w)
        else:
            srcjax.hessian(loss)(w)
    assert at(ei.value, drawn, "rng.normal(size=3)")
    assert ei.value.chain and ei.value.chain[0].line == where(loss, "drawn(w, RNG)")[1]


RNG = np.random.default_rng(1)


def test_the_suggested_rewrite_draws_outside() -> None:
    """The hint's rewrite: the noise is an argument; every call sees its own draw, as NumPy does."""
    def noisy_given(w, noise):
        return w + noise

    f = srcjax.compile(noisy_given)
    rng = np.random.default_rng(0)
    w = np.arange(3.0)
    outs = []
    for _ in range(2):
        noise = rng.normal(size=w.shape)
        out = np.asarray(f(w, noise))
        np.testing.assert_allclose(out, noisy_given(w, noise))
        np.testing.assert_allclose(out, srcjax.numpy_function(noisy_given)(w, noise))
        outs.append(out)
    assert not np.allclose(outs[0], outs[1])


sample = np.random.normal
SAMPLERS = {"noise": np.random.normal, "make": np.random.default_rng}


def draws_np_random(x):
    return x + np.random.normal(size=x.shape)


def draws_through_alias(x):
    return x + sample(size=x.shape)


def draws_through_dict(x):
    return x + SAMPLERS["noise"](size=x.shape)


def draws_from_made_generator(x):
    return x + SAMPLERS["make"](0).normal()


def closes_over_generator():
    r = np.random.default_rng(0)

    def draws_from_closure(x):
        return x + r.uniform()

    return draws_from_closure


@pytest.mark.parametrize("fn,snippet,name", [
    (draws_np_random, "np.random.normal(size=x.shape)", "np.random.normal"),
    (draws_through_alias, "sample(size=x.shape)", "RandomState.normal"),
    (draws_through_dict, 'SAMPLERS["noise"](size=x.shape)', "RandomState.normal"),
    (draws_from_made_generator, 'SAMPLERS["make"](0)', "default_rng"),
    (closes_over_generator(), "r.uniform()", "Generator.uniform"),
], ids=["np.random", "alias", "dict", "made", "closure"])
def test_numpy_random_reached_any_way_is_refused(fn, snippet, name) -> None:
    with pytest.raises(srcjax.OpaqueCallError) as ei:
        srcjax.compile(fn)(np.ones(2))
    assert at(ei.value, fn, snippet)
    assert name in ei.value.message and "srcjax.random" in ei.value.hint


# -- methods and properties of the user's own classes --------------------------------------------------
class Config:
    def __init__(self, width: int, rng=None) -> None:
        self.width = width
        self.rng = rng

    def hidden(self) -> int:
        return 2 * self.width

    @property
    def depth(self) -> int:
        return self.width + 1

    def scale(self, x):
        return x * self.width

    def jitter(self):
        return self.rng.normal()


CFG = Config(3)
NOISY_CFG = Config(3, np.random.default_rng(0))


def uses_config(x):
    return x.reshape(CFG.hidden() // 2, -1) * CFG.depth


def uses_config_method_on_arrays(x):
    return CFG.scale(x)


def uses_impure_method(x):
    return x + NOISY_CFG.jitter()


def test_methods_of_user_classes_are_transpiled() -> None:
    """A method or property of the user's class is read like a helper (so a random draw inside it is
    refused, see below) and gives what NumPy gives; the generated source calls the method itself."""
    x = np.arange(6.0)
    for fn in (uses_config, uses_config_method_on_arrays):
        out = np.asarray(srcjax.compile(fn)(x))
        np.testing.assert_allclose(out, fn(x))
        np.testing.assert_allclose(out, srcjax.numpy_function(fn)(x))
    assert "def hidden" not in srcjax.source(uses_config)


def sum_config_scaled(x):
    return np.sum(uses_config_method_on_arrays(x) ** 2)


def test_derivative_through_a_method_of_a_module_level_object() -> None:
    """Derivatives follow a method of a module-level object of the user's class (``CFG.scale(x)``: was refused
    at the call, "srcjax does not know its derivative"; srcjax/frontend/object_methods.py), never a zero."""
    x = np.array([0.5, -1.5])
    g = srcjax.grad(sum_config_scaled)(x)
    np.testing.assert_allclose(np.asarray(g), 2 * CFG.width ** 2 * x)  # d/dx sum((3x)^2) = 18x
    np.testing.assert_allclose(np.asarray(g), central_fd(sum_config_scaled, (x,), 0), rtol=1e-6)


def test_random_draw_inside_a_method_is_refused_there() -> None:
    with pytest.raises(srcjax.OpaqueCallError) as ei:
        srcjax.compile(uses_impure_method)(np.ones(2))
    e = ei.value
    assert at(e, Config.jitter, "self.rng.normal()")
    assert [(s.line, s.col) for s in e.chain] == [where(uses_impure_method, "NOISY_CFG.jitter()")[1:]]


# -- issue 13 item 4: library callees are refused at the user's call ------------------------------------
def mean_with_statistics(x):
    return statistics.fmean(x)


def test_stdlib_callee_is_refused_at_the_call_site() -> None:
    """It reported `.../lib/python3.11/statistics.py:445:5: error: try/except is not supported`."""
    for run in (lambda: srcjax.compile(mean_with_statistics)(np.arange(3.0)),
                lambda: srcjax.source(mean_with_statistics)):  # found by reading, before any shapes
        with pytest.raises(srcjax.OpaqueCallError) as ei:
            run()
        e = ei.value
        assert at(e, mean_with_statistics, "statistics.fmean(x)")
        assert "statistics.fmean" in e.message and "standard library" in e.message
        code = statistics.fmean.__code__
        assert e.note == f"statistics.fmean is defined at {code.co_filename}:{code.co_firstlineno}"
        text = str(e)
        assert text.splitlines()[0].startswith(f"{inspect.getsourcefile(mean_with_statistics)}:")
        assert "NumPy" in e.hint


INSTALLED_FN = pytest.approx  # a Python function of an installed package (pytest)


def _installed(x):
    return INSTALLED_FN(x)


def test_installed_package_callee_is_refused_at_the_call_site() -> None:
    with pytest.raises(srcjax.OpaqueCallError) as ei:
        srcjax.compile(_installed)(np.ones(2))
    assert at(ei.value, _installed, "INSTALLED_FN(x)")
    assert "installed package" in ei.value.message


def test_where_code_lives() -> None:
    assert callees.origin(statistics.fmean) == "stdlib"
    assert callees.origin(INSTALLED_FN) == "installed"
    assert callees.origin(libcst.parse_module) == "installed"
    assert callees.origin(srcjax.adjoint.unbroadcast) == "srcjax"
    assert callees.origin(corpus_helpers.gelu) is None
    assert callees.origin(opaque_helpers.fmean_of) is None
    assert callees.origin(noisy) is None


# -- the user's own modules: transpiled, errors located there with the chain of calls ---------------------
def uses_helper_module(x):
    return opaque_helpers.row_means(x) + corpus_helpers.gelu(x).sum(axis=-1)


def uses_mismatched_helper(x):
    y = opaque_helpers.mismatched(x)
    return y


def uses_helper_with_try(x):
    return opaque_helpers.caught(x)


def uses_nested_helpers(x):
    return opaque_helpers.outer(x) * 3.0


def test_helpers_in_the_users_other_modules_still_compile() -> None:
    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    out = np.asarray(srcjax.compile(uses_helper_module)(x))
    np.testing.assert_allclose(out, uses_helper_module(x), rtol=1e-12)
    np.testing.assert_allclose(out, srcjax.numpy_function(uses_helper_module)(x), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.grad(lambda x: np.sum(uses_helper_module(x)))(x)),
                               np.asarray(srcjax.numpy_function(srcjax.grad(lambda x: np.sum(uses_helper_module(x))))(x)),
                               rtol=1e-12)


@pytest.mark.parametrize("fn,cls,inner,calls", [
    (uses_mismatched_helper, srcjax.ShapeError, (opaque_helpers.mismatched, "x + np.ones(7)"),
     [(uses_mismatched_helper, "opaque_helpers.mismatched(x)")]),
    (uses_helper_with_try, srcjax.UnsupportedSyntaxError, (opaque_helpers.caught, "try:"),
     [(uses_helper_with_try, "opaque_helpers.caught(x)")]),
    (uses_nested_helpers, srcjax.ShapeError, (opaque_helpers.mismatched, "x + np.ones(7)"),
     [(opaque_helpers.outer, "mismatched(x)"), (uses_nested_helpers, "opaque_helpers.outer(x)")]),
], ids=["shape", "syntax", "nested"])
def test_errors_in_a_helper_module_are_located_there_with_the_chain(fn, cls, inner, calls) -> None:
    with pytest.raises(cls) as ei:
        srcjax.compile(fn)(np.ones(3))
    e = ei.value
    assert at(e, *inner)
    assert [(s.filename, s.line) for s in e.chain] == [where(f, snip)[:2] for f, snip in calls]
    text = str(e)
    for f, snip in calls:
        file, line, _ = where(f, snip)
        assert f"  called from {file}:{line}:" in text
        assert f"    {snip}" in text or snip in text


# -- what is still evaluated while specializing -----------------------------------------------------------
class Pair(NamedTuple):
    w: np.ndarray
    scale: float


@dataclasses.dataclass(frozen=True)
class Settings:
    repeats: int
    name: str


def static_everything(x, p, s, mode):
    n = len(x)
    h = math.sqrt(n) * np.float32(0.5)
    pairs = list(itertools.product(range(2), range(s.repeats)))
    dims = tuple(reversed(x.shape)) + (len(pairs),)
    label = "-".join([s.name.upper(), str(dims.index(len(pairs)))])
    weights = {"a": 1.0, "b": 2.0}
    total = sum(v for _, v in sorted(weights.items()))
    y = x * h + total * p.w * p.scale
    for i, j in pairs:
        y = y + (i + j) / max(divmod(n, 2)[0], 1)
    if mode == "double" and label.startswith("CFG"):
        y = 2.0 * y
    return corpus_helpers.leaky_relu(y)


def test_static_evaluation_keeps_working() -> None:
    """Shapes, Python numbers, math on static values, np.float32, itertools, str/dict/tuple methods,
    NamedTuple and dataclass fields, static arguments and helpers of another module: the compiled
    function, the generated source run by NumPy and the user's own function agree."""
    x = np.linspace(-1.0, 1.0, 4)
    p = Pair(np.full(4, 0.25), 3.0)
    s = Settings(3, "cfg")
    f = srcjax.compile(static_everything, static_argnames=("s", "mode"))
    for mode in ("double", "single"):
        want = static_everything(x, p, s, mode)
        np.testing.assert_allclose(np.asarray(f(x, p, s, mode)), want, rtol=1e-12)
        np.testing.assert_allclose(srcjax.numpy_function(static_everything)(x, p, s, mode), want, rtol=1e-12)


class Box:
    def __init__(self, v: float) -> None:
        self.v = v


class Tally:
    def __init__(self, n: int) -> None:
        self.v = 0.0
        for k in range(n):
            self.v += k


def builds_a_box(x):
    return x * Box(2.0).v


def builds_a_tally(x):
    return x * Tally(3).v


def builds_settings(x):
    s = Settings(2, "two")
    return x * s.repeats


def test_constructing_objects() -> None:
    """A dataclass or NamedTuple built from static values stores its fields: evaluated while specializing.
    A class whose ``__init__`` only stores its parameters is read as a dataclass (``Box(2.0).v``, made and read at
    once: constructed_objects.py); one whose ``__init__`` does more runs code srcjax does not transpile: refused at
    the call."""
    x = np.arange(3.0)
    np.testing.assert_allclose(np.asarray(srcjax.compile(builds_settings)(x)), builds_settings(x))
    np.testing.assert_allclose(np.asarray(srcjax.compile(builds_a_box)(x)), builds_a_box(x))
    with pytest.raises(srcjax.OpaqueCallError) as ei:
        srcjax.compile(builds_a_tally)(x)
    assert at(ei.value, builds_a_tally, "Tally(3)")
    assert "Tally" in ei.value.message and "pass it in" in ei.value.hint
