"""Calls through jaxlib's C++ dispatcher (``srcjax/cpp_calls.py``, ``runtime/cpp_dispatch.py``; issue #18):
with ``SRCJAX_CPP_DISPATCH`` on (the default) and off, every call gives the same results as NumPy and as
the other path (containers, weak types, static arguments, keyword arguments, donation, NumPy and device
inputs), calls with device arrays and with NumPy arrays are served without entering srcjax's Python
path, a NumPy argument written to right after a call does not change its result (the C++ side is
handed srcjax's copies), and what the C++ side cannot serve (new signatures, a donated array, 64-bit
host values where jax keys them as 32-bit) comes back to the Python path."""

from __future__ import annotations

import sys
from typing import NamedTuple

import ml_dtypes  # noqa: F401  (the dispatcher starts once ml_dtypes is imported: cpp_budget.BUDGET)
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcjax
from tests.python_path import Counting


class Pair(NamedTuple):
    w: np.ndarray
    b: np.ndarray


def loss(params, x):
    h = x
    for p in params["layers"]:
        h = np.tanh(h @ p.w + p.b)
    return np.sum(h ** 2) + np.sum(params["bias"])


def outputs(params, x):
    return {"z": x * 2.0, "a": (params["bias"], None, [x + 1.0])}, Pair(x, x * 3.0)


def with_constant(x):
    return x * 2.0, 3  # (a Python value in the results: never a C++ record)


def scale(x, s):
    return x * s


def tiny(x):
    return x * 2.0 + 1.0


def _params(rng, width=3, n=2):
    return {"layers": [Pair(rng.standard_normal((width, width)), rng.standard_normal(width)) for _ in range(n)],
            "bias": rng.standard_normal(2)}


def _numpy_leaves(tree):
    return srcjax.tree_util.tree_map(np.asarray, tree)


def _same(a, b):
    la, ta = srcjax.tree_util.tree_flatten(a)
    lb, tb = srcjax.tree_util.tree_flatten(b)
    assert ta == tb
    for u, v in zip(la, lb):
        if isinstance(u, (int, type(None))):
            assert u == v
            continue
        assert np.asarray(u).dtype == np.asarray(v).dtype
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


@pytest.fixture(params=["on", "off"])
def dispatch(request, monkeypatch):
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1" if request.param == "on" else "0")
    return request.param


def test_device_calls_are_served_in_cpp(monkeypatch):
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    rng = np.random.default_rng(0)
    g = srcjax.value_and_grad(loss)
    args = srcjax.device_put((_params(rng), rng.standard_normal((4, 3))))
    counting = Counting(g)
    first = g(*args)
    assert g._cpp is not None
    for _ in range(3):
        _same(g(*args), first)
    assert counting.n == 2  # the first call, and the C++ miss that made the record; then none
    value, grads = g(*args)
    assert isinstance(grads["layers"][1], Pair) and type(value) is srcjax.Array
    params, x = _numpy_leaves(args)
    np.testing.assert_allclose(float(value), loss(params, x), rtol=1e-12)


def test_results_built_in_cpp_are_full_arrays(dispatch):
    """A result the C++ side built (``Array()`` then its fields: no ``__init__``) is a srcjax.Array as the
    Python path's: NumPy's attributes forwarded to the host copy (class properties, no ``__getattr__``,
    whose hook would slow the C++ side's read of every argument's ``_buf``), a read-only zero-copy view."""
    c = srcjax.jit(tiny)
    xd = srcjax.device_put(np.arange(6.0).reshape(2, 3))
    for _ in range(3):
        out = c(xd)
    assert type(out) is srcjax.Array and (c._cpp is not None) == (dispatch == "on")
    want = tiny(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(out.T, want.T)
    assert out.sum() == want.sum() and out.reshape(3, 2).shape == (3, 2) and out.astype(np.int32).dtype == np.int32
    assert out.shape == (2, 3) and out.dtype == np.float64 and out.ndim == 2 and out.size == 6
    view = np.asarray(out)
    assert not view.flags.writeable and np.shares_memory(np.asarray(out), view)  # (read once, kept)
    with pytest.raises(AttributeError):
        out.not_a_numpy_attribute  # noqa: B018
    assert "__init__" not in vars(srcjax.Array) and not hasattr(srcjax.Array, "__getattr__")


@pytest.mark.parametrize("value", ["0", "off", "false"])
def test_switch_off_keeps_the_python_path(monkeypatch, value):
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", value)
    c = srcjax.jit(tiny)
    xd = srcjax.device_put(np.arange(3.0))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(c(xd)), np.arange(3.0) * 2 + 1)
    assert c._cpp is None


def test_on_by_default(monkeypatch):
    monkeypatch.delenv("SRCJAX_CPP_DISPATCH", raising=False)
    c = srcjax.jit(tiny)
    xd = srcjax.device_put(np.arange(3.0))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(c(xd)), np.arange(3.0) * 2 + 1)
    assert c._cpp is not None and c.__call__ is c._cpp  # (called with no Python frame of srcjax's)


def test_results_match_across_paths_and_inputs(dispatch):
    rng = np.random.default_rng(1)
    params, x = _params(rng), rng.standard_normal((4, 3))
    want = outputs(params, x)
    f = srcjax.jit(outputs)
    for inputs in ((params, x), srcjax.device_put((params, x))):
        for _ in range(3):
            got = f(*inputs)
            _same(_numpy_leaves(got), _numpy_leaves(want))
            assert got[0]["a"][1] is None and isinstance(got[1], Pair)
    assert (f._cpp is not None) == (dispatch == "on")


def shapes_of_results(x):
    return {"z": x, "b": [Pair(x * 2.0, (x, [])), None], "e": ({}, ())}, [x + 1.0], {1: x, 0: x * 3.0}


def test_result_structures_are_built_alike_on_both_paths(dispatch):
    """The C++ side rebuilds a call's whole result structure with one function srcjax writes per program
    (``cpp_dispatch._builder``): dicts (keys in the Python path's order), NamedTuples, empty containers,
    None."""
    f = srcjax.jit(shapes_of_results)
    x = np.arange(3.0)
    want = shapes_of_results(x)
    counting = Counting(f)
    for inputs in (srcjax.device_put(x), srcjax.device_put(x), x):
        for _ in range(3):
            got = f(inputs)
            _same(_numpy_leaves(got), want)
            python = counting.inner((inputs,), {})  # (the Python path, not counted)
            assert list(got[0]) == list(python[0]) and list(got[2]) == list(python[2])
            assert type(got[0]["b"][0]) is Pair and got[0]["b"][1] is None
            assert type(got[0]["z"]) is srcjax.Array and got[0]["z"] is not got[1][0]
    if dispatch == "on":
        assert counting.n <= 4 and f._cpp is not None


def odd_keys(x):
    return {"it's \\ \"q\"\n": x, "é": x * 2.0, "b": {"": x}}, {-3: x + 1.0, 10**20: x - 1.0, 0: x}


def test_result_keys_written_as_literals_keep_their_values(dispatch):
    """The results' builder writes str and int keys as literals (``cpp_dispatch._builder``): quotes,
    backslashes, newlines, non-ASCII, negative and large ints, the empty string come back as they were
    (sorted, as srcjax's Python path and jax give a dict's keys)."""
    f = srcjax.jit(odd_keys)
    x = np.arange(3.0)
    want = odd_keys(x)
    xd = srcjax.device_put(x)
    for _ in range(4):
        got = f(xd)
        assert list(got[0]) == sorted(want[0]) and list(got[1]) == sorted(want[1]) and list(got[0]["b"]) == [""]
        _same(_numpy_leaves(got), want)
    if dispatch == "on":
        assert f._cpp is not None and type(got[0]["é"]) is srcjax.Array


def test_results_with_python_values_take_the_python_path(dispatch):
    f = srcjax.jit(with_constant)
    xd = srcjax.device_put(np.ones(2))
    counting = Counting(f)
    for _ in range(20):
        out = f(xd)
        assert out[1] == 3 and type(out[1]) is int
        np.testing.assert_array_equal(np.asarray(out[0]), [2.0, 2.0])
    assert counting.n == 20
    assert f._cpp is None  # (sent back 16 times: the Python path alone, without the C++ lookup first)


def test_weak_and_strong_scalars_keep_their_programs(dispatch):
    f = srcjax.jit(scale)
    x32 = srcjax.device_put(np.ones(2, np.float32))
    weak, strong = srcjax.device_put(2.0), srcjax.device_put(np.array(2.0))
    for _ in range(3):
        assert f(x32, weak).dtype == np.float32  # a Python float does not promote (JAX's weak types)
        assert f(x32, strong).dtype == np.float64


def test_new_shapes_and_errors_come_back_to_the_python_path(dispatch):
    def add(a, b):
        return a + b

    f = srcjax.jit(add)
    a3, b3 = srcjax.device_put(np.ones(3)), srcjax.device_put(np.ones(3))
    for _ in range(3):
        f(a3, b3)
    a4, b4 = srcjax.device_put(np.ones(4)), srcjax.device_put(np.ones(4))
    np.testing.assert_array_equal(np.asarray(f(a4, b4)), np.full(4, 2.0))
    with pytest.raises(srcjax.TranspileError) as e:
        f(a3, b4)
    assert "test_cpp_dispatch.py" in str(e.value)  # located at the user's line


def test_keyword_static_and_donated_calls(dispatch):
    def step(w, x, n):
        return w - 0.1 * x * n

    f = srcjax.jit(step, static_argnums=2)
    d = srcjax.jit(tiny, donate_argnums=0)
    w, x = np.ones(3), np.arange(3.0)
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(f(srcjax.device_put(w), srcjax.device_put(x), 2)), w - 0.2 * x)
        np.testing.assert_allclose(np.asarray(f(srcjax.device_put(w), x=srcjax.device_put(x), n=3)), w - 0.3 * x)
    assert (f._cpp is not None) == (dispatch == "on")  # (declared static values: keyed by the C++ side)
    for _ in range(4):  # donated through either path: the buffer is taken, the old array unusable
        y = srcjax.device_put(np.ones(3))
        np.testing.assert_array_equal(np.asarray(d(y)), np.full(3, 3.0))
        with pytest.raises(srcjax.ArgumentError, match="donated"):
            np.asarray(y)
    assert (d._cpp is not None) == (dispatch == "on")
    c = srcjax.jit(tiny)
    for _ in range(3):
        c(srcjax.device_put(np.ones(3)))
    with pytest.raises(srcjax.ArgumentError, match="donated"):
        c(y)  # a donated array handed to the C++ dispatcher: the same clear error, no crash


def test_an_array_donated_twice_in_one_call(dispatch):
    def add(a, b):
        return a + b

    d = srcjax.jit(add, donate_argnums=(0, 1))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(d(*srcjax.device_put((np.ones(3), np.ones(3))))), np.full(3, 2.0))
    y = srcjax.device_put(np.ones(3))
    with pytest.raises(srcjax.ArgumentError, match="donated"):
        d(y, y)


def activation(p, x, act, k):
    h = x @ p[0]["w"] + p[0]["b"]
    if act == "tanh":
        h = np.tanh(h)
    for _ in range(k):
        h = h * 0.5
    return np.sum(h @ p[1]["w"])


def _layers(rng):
    return [{"w": rng.standard_normal((3, 4)), "b": rng.standard_normal(4)}, {"w": rng.standard_normal((4, 2))}]


@pytest.mark.parametrize("inputs", ["device", "numpy"])
def test_declared_static_arguments_are_served_in_cpp(dispatch, inputs):
    """Static arguments (issue #18): the C++ side keys their values (hash, equality and type) and hands the
    program the other arguments; each static value has its own record, and results match NumPy's."""
    rng = np.random.default_rng(3)
    p, x = _layers(rng), rng.standard_normal((5, 3))
    g = srcjax.jit(srcjax.value_and_grad(activation), static_argnums=(2, 3))
    dev = srcjax.device_put((p, x)) if inputs == "device" else (p, x)
    counting = Counting(g)
    calls = [("tanh", 1), ("none", 1), ("tanh", 2), ("tanh", True), ("none", 0)]
    for _ in range(3):
        for act, k in calls:
            value, grads = g(*dev, act, k)
            np.testing.assert_allclose(float(value), activation(p, x, act, k), rtol=1e-12)
            assert type(value) is srcjax.Array and type(grads[1]["w"]) is srcjax.Array
    if dispatch == "on":
        assert g._cpp is not None
        first = counting.n
        for act, k in calls:
            g(*dev, act, k)
        if inputs == "device":
            assert counting.n == first  # (served in C++: no Python path)
    value, _ = g(*dev, act="none", k=2)  # (by keyword: the same result)
    np.testing.assert_allclose(float(value), activation(p, x, "none", 2), rtol=1e-12)


def lengths(w, n):
    return w * len(n)


@pytest.mark.parametrize("donate", [False, True])
def test_an_unhashable_static_argument_gets_srcjax_error(dispatch, donate):
    """jaxlib's C++ side hashes static values first and raises its own ValueError for a list: the call
    goes to the Python path instead, which raises srcjax's own (as with the dispatcher off)."""
    f = srcjax.jit(lengths, static_argnums=1, donate_argnums=(0,) if donate else ())
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(f(srcjax.device_put(np.ones(3)), (1, 2))), np.full(3, 2.0))
    with pytest.raises(srcjax.ArgumentError, match="hashable") as e:
        f(srcjax.device_put(np.ones(3)), [1, 2])
    assert f"{__file__}:" in str(e.value).splitlines()[0] and "a tuple instead of a list" in str(e.value)
    np.testing.assert_array_equal(np.asarray(f(np.ones(3), (1, 2, 3))), np.full(3, 3.0))


def matmul_scaled(a, b, scale=2.0):
    return (a @ b) * scale


def test_defaults_left_out_with_numpy_inputs_written_after_the_call(host_mode):
    """A call leaving out a default, with NumPy arrays: the defaults are device arrays, the arrays still
    srcjax's copies (or read in place, the call waiting): a write right after the call changes nothing."""
    f = srcjax.jit(matmul_scaled)
    rng = np.random.default_rng(6)
    a = rng.standard_normal((60, 60)).astype(np.float32)
    b = rng.standard_normal((60, 60)).astype(np.float32)
    for extra in ((), (3.0,)) * 4:
        a_in = a.copy()
        out = f(a_in, b, *extra)
        a_in[:] = 0.0
        assert out.dtype == np.float32
        np.testing.assert_allclose(np.asarray(out), matmul_scaled(a, b, *extra), rtol=1e-4, atol=1e-4)
    assert f._cpp is not None


@pytest.mark.parametrize("inputs", ["device", "numpy"])
def test_a_default_left_out_or_passed_is_one_program(dispatch, inputs):
    """The C++ side gets a left-out default as a device array, but srcjax's Python path keys it as the number
    it is: one program (one executable) for ``f(a, b)`` and ``f(a, b, 2.0)``, whichever comes first."""
    f = srcjax.api.Compiled(matmul_scaled)  # (a new one: its own cache)
    a, b = np.ones((2, 2), np.float32), np.full((2, 2), 3.0, np.float32)
    if inputs == "device":
        a, b = srcjax.device_put((a, b))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(f(a, b)), np.full((2, 2), 12.0, np.float32))
        np.testing.assert_array_equal(np.asarray(f(a, b, 2.0)), np.full((2, 2), 12.0, np.float32))
    assert len(f._cache) + len(f._tree_cache) == 1


def step_static(w, x, how):
    return w - (0.1 if how == "small" else 1.0) * x


def test_static_arguments_with_donation(dispatch):
    """Donation beside a static argument: the buffer is taken on either path, the old array unusable."""
    f = srcjax.jit(step_static, static_argnums=2, donate_argnums=0)
    x = srcjax.device_put(np.arange(3.0))
    for how, m in (("small", 0.1), ("big", 1.0)) * 3:
        w = srcjax.device_put(np.ones(3))
        np.testing.assert_allclose(np.asarray(f(w, x, how)), 1.0 - m * np.arange(3.0))
        with pytest.raises(srcjax.ArgumentError, match="donated"):
            np.asarray(w)
    assert (f._cpp is not None) == (dispatch == "on")


def test_static_arguments_with_numpy_inputs_written_after_the_call(host_mode):
    """A static argument beside NumPy arrays: the arrays still reach the C++ side as srcjax's copies (or read
    in place, the call waiting for the program), so a write right after the call changes nothing."""

    def scaled(a, how, b):
        return (a @ b) * (2.0 if how == "double" else 1.0)

    f = srcjax.jit(scaled, static_argnames="how")
    rng = np.random.default_rng(4)
    a = rng.standard_normal((60, 60)).astype(np.float32)
    b = rng.standard_normal((60, 60)).astype(np.float32)
    for how, m in (("double", 2.0), ("single", 1.0)) * 4:
        a_in = a.copy()
        out = f(a_in, how, b)
        a_in[:] = 0.0
        np.testing.assert_allclose(np.asarray(out), (a @ b) * m, rtol=1e-4, atol=1e-4)
    assert f._cpp is not None


def scaled_loss(p, x, scale=0.5, shift=0.0, k=2):
    h = np.tanh(x @ p["w"]) + shift
    return scale * np.sum(h * h) * k, h


@pytest.mark.parametrize("inputs", ["device", "numpy"])
def test_calls_leaving_out_defaults_are_served_in_cpp(dispatch, inputs):
    """A call leaving out parameters whose defaults are Python numbers: the C++ side is handed the defaults
    as device arrays uploaded once (weak-typed, as the numbers: the same program, float32 stays float32),
    and serves such calls without srcjax's Python path; calls passing them, or other values, still agree."""
    rng = np.random.default_rng(5)
    p = {"w": rng.standard_normal((3, 4)).astype(np.float32)}
    x = rng.standard_normal((5, 3)).astype(np.float32)
    g = srcjax.jit(scaled_loss)
    args = srcjax.device_put((p, x)) if inputs == "device" else (p, x)
    counting = Counting(g)
    calls = [(), (0.25,), (0.5, 3.0), (1.0, 2.0, 3), (0.5, 0.0, 2)]
    for _ in range(3):
        for extra in calls:
            value, h = g(*args, *extra)
            want_value, want_h = scaled_loss(p, x, *extra)
            assert value.dtype == np.float32 and h.dtype == np.float32
            np.testing.assert_allclose(float(value), want_value, rtol=1e-5)
            np.testing.assert_allclose(np.asarray(h), want_h, rtol=1e-5)
    if dispatch == "on":
        assert g._cpp is not None
        if inputs == "device":
            n = counting.n
            for extra in calls:
                g(*args, *extra)
            assert counting.n == n  # (all served in C++, those leaving out defaults too)
    value, _ = g(*args, k=3)  # (by keyword: the same result)
    np.testing.assert_allclose(float(value), scaled_loss(p, x, k=3)[0], rtol=1e-5)


def test_found_static_arguments_are_keyed_in_cpp(monkeypatch):
    """Arguments srcjax finds static by itself (a Python int used as a shape, a string, None) become the
    dispatcher's static arguments: the C++ side keys their values (and type), each value its own program;
    a found static argument given up again (an array where None was) gets a new dispatcher."""
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")

    def reshape(x, n):
        return np.reshape(x, (n, -1))

    f = srcjax.jit(reshape)
    x = np.arange(6.0)
    xd = srcjax.device_put(x)
    calls = [((xd, 2), {}), ((xd, 3), {}), ((xd,), {"n": 6}), ((xd, 1), {}), ((x, 2), {})]
    for _ in range(2):
        for args, kwargs in calls:
            out = f(*args, **kwargs)
            np.testing.assert_array_equal(np.asarray(out), reshape(x, *args[1:], **kwargs))
    assert f._cpp is not None and f._cpp_static == {"n"}
    counting = Counting(f)
    for args, kwargs in calls[:4]:
        f(*args, **kwargs)
    assert counting.n == 0  # (served in C++)

    def shift(x, b):
        return x if b is None else x + b

    g = srcjax.jit(shift)
    for b in [None, None, 1.5, xd, None, x, 2.0, None]:
        want = x if b is None else x + np.asarray(b)
        np.testing.assert_array_equal(np.asarray(g(xd, b)), want)
    assert g._cpp_attached <= 3


@settings(deadline=None)  # (each example compiles a program)
@given(shape=st.lists(st.integers(1, 4), min_size=0, max_size=3), n=st.integers(1, 4),
       dtype=st.sampled_from([np.float32, np.float64]), on_device=st.booleans())
def test_property_containers_match_numpy_on_both_paths(shape, n, dtype, on_device):
    def fn(tree, y):
        return {"s": [t * y for t in tree["xs"]], "m": np.sum(tree["m"]) + y}

    rng = np.random.default_rng(len(shape) + n)
    tree = {"xs": [rng.standard_normal(shape).astype(dtype) for _ in range(n)], "m": rng.standard_normal(3)}
    y = np.asarray(rng.standard_normal(), dtype)
    want = fn(tree, y)
    args = srcjax.device_put((tree, y)) if on_device else (tree, y)
    f = srcjax.jit(fn)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SRCJAX_CPP_DISPATCH", "1")
        for _ in range(3):
            _same(_numpy_leaves(f(*args)), want)
    assert f._cpp is not None  # (attached after the first call; device calls served by it)
    from srcjax import cpp_calls

    cpp_calls.detach(f)  # the Python path on the same function: the same results
    _same(_numpy_leaves(f(*args)), want)
    assert f.__call__ != f._cpp and f._cpp is None


_WITHOUT_JAX = """
import sys
import ml_dtypes
import numpy as np
import srcjax

def f(p, x):
    return {"y": p["w"] * x + p["b"]}, np.sum(x)

c = srcjax.jit(f)
p, x = srcjax.device_put(({"w": np.arange(3.0), "b": np.ones(3)}, np.full(3, 2.0)))
calls = []
inner = c._call
c._call = lambda args, kwargs: calls.append(1) or inner(args, kwargs)
for _ in range(4):
    out = c(p, x)
assert len(calls) == 2, calls  # the first call and the C++ miss that made the record
np.testing.assert_array_equal(np.asarray(out[0]["y"]), np.arange(3.0) * 2 + 1)
assert float(out[1]) == 6.0 and type(out[1]) is srcjax.Array
x32 = np.ones(3, np.float32)
assert c({"w": x32, "b": x32}, x32)[0]["y"].dtype == np.float32  # NumPy inputs: the Python path, exact dtypes
assert "jax" not in sys.modules
print("ok")
"""

_WITHOUT_ML_DTYPES = """
import sys
import numpy as np
import srcjax
from srcjax import cpp_budget

def f(x):
    return x * 2.0 + 1.0

c = srcjax.jit(f)
xd = srcjax.device_put(np.ones(3, np.float32))
for _ in range(5):
    np.testing.assert_array_equal(np.asarray(c(xd)), np.full(3, 3.0, np.float32))
    c(np.ones(3, np.float32))
assert c._cpp is None and c._cpp_wait and "ml_dtypes" not in sys.modules  # (a short job: no 1-2 s import)
if sys.argv[1] == "calls":
    cpp_budget._LEFT[0] = 1  # (as if a long loop had run)
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(c(xd)), np.full(3, 3.0, np.float32))
else:  # (the calls' time spends the budget first: 20 ms of it here, each call counted up to CAP)
    cpp_budget._TIME[0] = 0.02
    left = cpp_budget._LEFT[0]
    n = 0
    while c._cpp is None:
        np.testing.assert_array_equal(np.asarray(c(xd)), np.full(3, 3.0, np.float32))
        n += 1
        assert n <= 20_000, "the time budget was never spent"
    assert n >= 0.02 / cpp_budget.CAP and cpp_budget._LEFT[0] > left - 20_000 > 0, (n, cpp_budget._LEFT[0])
assert c._cpp is not None and c.__call__ is c._cpp
np.testing.assert_array_equal(np.asarray(c(xd)), np.full(3, 3.0, np.float32))
print("ok")
"""


_LONG_LOOP = """
import sys
import numpy as np
import srcjax
from srcjax import cpp_budget

SCALE = 2.0

def f(x):
    return x * SCALE + 1.0

c = srcjax.jit(f)
xd = srcjax.device_put(np.ones(3, np.float32))
np.testing.assert_array_equal(np.asarray(c(xd)), np.full(3, 3.0, np.float32))
np.testing.assert_array_equal(np.asarray(c(xd)), np.full(3, 3.0, np.float32))
if sys.argv[1] == "long":  # (a loop spends the budget: f is remembered)
    assert c._cpp is None and "ml_dtypes" not in sys.modules
    cpp_budget._LEFT[0] = cpp_budget.LONG
    for _ in range(cpp_budget.LONG):
        c(xd)
    assert c._cpp is not None
    from srcjax.runtime import disk_cache
    disk_cache.flush()
else:  # (a later process: the dispatcher at once, or, f's module edited, the budget again)
    assert (c._cpp is not None) == (sys.argv[1] == "again"), (c._cpp, sys.argv[1])
    assert ("ml_dtypes" in sys.modules) == (sys.argv[1] == "again")
np.testing.assert_array_equal(np.asarray(c(xd)), np.full(3, 3.0, np.float32))
print("ok")
"""


def test_a_long_loop_is_remembered(tmp_path):
    """A function whose calls spent the budget in one process gets its dispatcher right after its
    first call in the next (cpp_budget.py); an edit of what it reads forgets that."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    script = tmp_path / "long_loop.py"
    script.write_text(_LONG_LOOP)
    env = {k: v for k, v in os.environ.items() if k != "SRCJAX_CPP_DISPATCH"}
    env.update(PYTHONPATH=str(root), SRCJAX_CACHE_DIR=str(tmp_path / "cache"))

    def run(mode: str) -> None:
        proc = subprocess.run([sys.executable, str(script), mode], env=env, cwd=root, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]

    run("long")
    run("again")
    script.write_text(_LONG_LOOP.replace("SCALE = 2.0", "SCALE = 2.0 + 0.0"))  # (another module constant text)
    run("edited")


def test_without_jax_in_the_process(tmp_path):
    """jaxlib's dispatcher needs a few of jax's states set; srcjax sets them when jax is not imported."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    script = tmp_path / "without_jax.py"  # (srcjax reads the function's source from its file)
    script.write_text(_WITHOUT_JAX)
    proc = subprocess.run([sys.executable, str(script)], env=dict(os.environ, PYTHONPATH=str(root),
                                                                  SRCJAX_CPP_DISPATCH="1"),
                          cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_the_dispatcher_waits_for_ml_dtypes(tmp_path):
    """jaxlib's dispatcher imports ml_dtypes (1-2 s): a process that has not imported it keeps the
    Python path until a long loop has paid for the import."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    script = tmp_path / "without_ml_dtypes.py"
    script.write_text(_WITHOUT_ML_DTYPES)
    env = {k: v for k, v in os.environ.items() if k != "SRCJAX_CPP_DISPATCH"}
    for mode in ("calls", "time"):
        proc = subprocess.run([sys.executable, str(script), mode], env=dict(env, PYTHONPATH=str(root)),
                              cwd=root, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_a_slow_call_spends_at_most_cap_of_the_time_budget():
    """A call's time beyond cpp_budget.CAP is its program's or a compile's: the dispatcher would not save it."""
    from srcjax import cpp_budget

    before = cpp_budget._TIME[0]
    try:
        cpp_budget.took(5.0)
        assert cpp_budget._TIME[0] == before - cpp_budget.CAP
        cpp_budget.took(cpp_budget.CAP / 4)
        assert cpp_budget._TIME[0] == before - cpp_budget.CAP * 1.25
    finally:
        cpp_budget._TIME[0] = before


def test_functions_with_a_dispatcher_are_collected(monkeypatch):
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    import gc
    import weakref

    xd = srcjax.device_put(np.ones(3))
    refs = []
    for _ in range(3):
        c = srcjax.api.Compiled(tiny)  # (a new one each time: srcjax.jit(tiny) is one object, kept with tiny)
        for _ in range(3):
            c(xd)
        assert c._cpp is not None
        refs.append(weakref.ref(c))
        del c
    gc.collect()
    assert all(r() is None for r in refs)  # (the dispatcher holds its function weakly: no cycle kept alive)


def test_calls_go_to_the_call_slot_without_cycles(monkeypatch):
    """``Compiled``'s ``__call__`` is a slot (``call_route.py``): a call reads the dispatcher straight from it,
    the ``_dispatch`` property sets and resets it, and a function on either path is freed by reference
    counting alone (the Python path is held through a weak reference)."""
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    import gc
    import types
    import weakref

    xd = srcjax.device_put(np.ones(3))
    assert isinstance(srcjax.api.Compiled.__dict__["__call__"], types.MemberDescriptorType)
    gc.disable()
    try:
        for calls in (0, 3):
            c = srcjax.api.Compiled(tiny)
            for _ in range(calls):
                np.testing.assert_array_equal(c(xd), np.full(3, 3.0))
            assert (c.__call__ is c._cpp) == (calls > 0) and c._dispatch is c.__call__
            ref = weakref.ref(c)
            del c
            assert ref() is None
    finally:
        gc.enable()
    c = srcjax.api.Compiled(tiny)
    c(xd), c(xd)
    cpp = c._cpp
    srcjax.cpp_calls.detach(c)  # (back to the Python path: the slot no longer holds the dispatcher)
    assert cpp is not None and c.__call__ is not cpp and "_dispatch" not in c.__dict__
    counting = Counting(c)
    np.testing.assert_array_equal(c(xd), np.full(3, 3.0))
    assert counting.n == 1


def test_host_values_never_match_a_device_record(monkeypatch):
    """A NumPy array or Python number where a device array was compiled: served by its own record
    (srcjax's copy uploaded by the C++ side), never by the device one."""
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")

    def add(a, b):
        return a + b

    f = srcjax.jit(add)
    a, b = srcjax.device_put((np.ones(3, np.float32), np.ones(3, np.float32)))
    for _ in range(3):
        f(a, b)
    counting = Counting(f)
    for _ in range(4):
        assert f(a, np.ones(3, np.float32)).dtype == np.float32
        assert f(a, np.ones(3, np.float64)).dtype == np.float64  # NumPy promotion, as srcjax compiles it
        assert f(a, 1.0).dtype == np.float32  # a weak Python float
        np.testing.assert_array_equal(np.asarray(f(a, np.full(3, 2.0, np.float32))), np.full(3, 3.0))
    from srcjax.runtime import cpp_dispatch

    assert counting.n <= (3 if cpp_dispatch.x64() else 8)  # (each host signature's first call; x64 off: 64-bit ones)


def _x64_state():
    from srcjax.runtime import cpp_dispatch

    return cpp_dispatch._State.x64 if "jax._src.config" not in sys.modules else None


def test_64_bit_host_values_with_x64_off_keep_their_programs(monkeypatch):
    """jaxlib keys (and uploads) a float64 NumPy array as float32 when jax_enable_x64 is off (jax's
    default, when jax is imported): such calls never take a float32 record."""
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    f = srcjax.jit(scale)
    x32, x64 = np.ones(3, np.float32), np.ones(3, np.float64)
    f(srcjax.device_put(x32), 2.0)
    state = _x64_state()
    if state is None:
        import jax

        if jax.config.jax_enable_x64:
            pytest.skip("jax is imported with x64 on")
    else:
        state.set_global(False)
    try:
        from srcjax.runtime import cpp_dispatch

        assert not cpp_dispatch.x64()
        for _ in range(3):
            assert f(x32, np.float32(2.0) * x32).dtype == np.float32
            out = f(x64, x64 * 2)
            assert out.dtype == np.float64
            np.testing.assert_array_equal(np.asarray(out), np.full(3, 2.0))
            assert f(x32, 2.0).dtype == np.float32
    finally:
        if state is not None:
            state.set_global(True)


@pytest.fixture(params=["in place", "copied"])
def host_mode(request, monkeypatch):
    """Both ways a NumPy argument reaches the C++ side: read in place by the first dispatcher (64-bit
    values keyed as they are: srcjax alone, or jax with x64 on), or copied by srcjax for the second
    (jax imported with x64 off, where a float32 record would also take float64 arrays)."""
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    wide = request.param == "in place"
    if not wide:  # (jax imported with x64 off: cpp_calls' ``wide`` would key 64-bit values as they are, read in
        # place; tests/test_cpp_wide.py tests it. Here the copies, as where jax's flag cannot be set per thread.)
        from srcjax.runtime import cpp_dispatch

        monkeypatch.setattr(cpp_dispatch, "x64_state", lambda: None)
    state = _x64_state()
    if state is None:
        import jax

        before = jax.config.jax_enable_x64
        jax.config.update("jax_enable_x64", wide)
        yield request.param
        jax.config.update("jax_enable_x64", before)
    else:
        state.set_global(wide)
        yield request.param
        state.set_global(True)


def _counting_host(c):
    """Counts the calls handed to ``c``'s second or third dispatcher (srcjax's copies of the NumPy leaves)."""
    n = [0]

    def counted(inner):
        def host(*args):
            n[0] += 1
            return inner(*args)
        return host

    c._cpp_host, c._cpp_top = counted(c._cpp_host), counted(c._cpp_top)
    return n


def chain(a, b):
    return a[0, 0] * 1.0, {"ab": (a @ b) @ b}  # (the first result is cheap, the last is not)


def test_numpy_arguments_written_after_the_call_do_not_change_its_result(host_mode, monkeypatch):
    """jaxlib's C++ upload aliases a NumPy array's memory and runs the program asynchronously (jax.jit
    gives wrong results here: 11 of 20 calls measured). Read in place, the call returns once the program
    has run (its first result waits for it: all results share one completion event); copied, the C++
    side reads srcjax's copies. Either way a write right after the call cannot reach the result. (This
    program runs asynchronously, so srcjax would copy; ``_inline`` is made to say otherwise here, to
    test the wait.)"""
    from srcjax import cpp_calls

    monkeypatch.setattr(cpp_calls, "_inline", lambda out, exe: True)
    f = srcjax.jit(chain)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((500, 500)).astype(np.float32)
    b = (rng.standard_normal((500, 500)) / 20).astype(np.float32)
    want = chain(a, b)
    f(a.copy(), b)
    copied = _counting_host(f)
    counting = Counting(f)
    for _ in range(12):
        a_in = a.copy()
        first, rest = f(a_in, b)
        a_in[:] = 0.0  # (right after the call)
        np.testing.assert_allclose(np.asarray(rest["ab"]), want[1]["ab"], rtol=2e-3, atol=2e-3)
        assert float(first) == want[0]
    assert f._cpp is not None
    if host_mode == "in place":
        assert counting.n <= 1 and copied[0] == 0  # (served by the first dispatcher, in C++)
    else:
        assert copied[0] == 12


def test_results_never_alias_numpy_arguments_read_in_place(host_mode):
    """A result equal to an argument is the program's own buffer, not the NumPy memory it read."""

    def passthrough(x, t):
        return x, t["y"], x + 0.0

    f = srcjax.jit(passthrough)
    for _ in range(4):
        x, y = np.arange(64.0), np.ones(16, np.float32)
        out = f(x, {"y": y})
        x[:] = -1.0
        y[:] = -1.0
        np.testing.assert_array_equal(np.asarray(out[0]), np.arange(64.0))
        np.testing.assert_array_equal(np.asarray(out[1]), np.ones(16))
        np.testing.assert_array_equal(np.asarray(out[2]), np.arange(64.0))
        assert out[0].dtype == np.float64 and out[1].dtype == np.float32


def test_strided_and_unaligned_numpy_arguments(host_mode):
    """Views the C++ upload cannot read in place as they are (an offset, a transpose, a stride)."""

    def combine(a, b):
        return a @ b + 1.0, a.T

    f = srcjax.jit(combine)
    base = np.arange(1 + 6 * 8, dtype=np.float32)
    for _ in range(4):
        a = base[1:].reshape(6, 8)[:, ::2]  # (4 bytes past an aligned start, strided)
        b = np.arange(12, dtype=np.float32).reshape(3, 4).T
        want = [np.array(w) for w in combine(a, b)]  # (a.T is a view of base)
        got = f(a, b)
        base[:] = 7.0
        np.testing.assert_array_equal(np.asarray(got[0]), want[0])
        np.testing.assert_array_equal(np.asarray(got[1]), want[1])
        base = np.arange(1 + 6 * 8, dtype=np.float32)


def test_numpy_arguments_are_served_in_cpp_where_read_in_place(host_mode, monkeypatch):
    """With NumPy inputs, the hit path enters no Python of srcjax's but the results' rebuilding (read
    in place); results, dtypes and weak types are the Python path's."""
    from srcjax import cpp_calls

    monkeypatch.setattr(cpp_calls, "_inline", lambda out, exe: True)  # (whether XLA ran it inline: timing)
    rng = np.random.default_rng(3)
    params, x = srcjax.tree_util.tree_map(np.float32, (_params(rng), rng.standard_normal((4, 3))))
    g = srcjax.value_and_grad(loss)
    want = g._call((params, x), {})
    g(params, x)
    counting = Counting(g)
    copied = _counting_host(g)
    for _ in range(5):
        _same(g(params, x), want)
        assert type(g(params, x)[1]["layers"][0]) is Pair
        assert srcjax.jit(scale)(x.astype(np.float64), 2.0).dtype == np.float64
    if host_mode == "in place":
        assert counting.n <= 1 and copied[0] == 0
    else:
        assert copied[0] >= 5


def test_numpy_arguments_of_asynchronous_programs_are_copied(host_mode, monkeypatch):
    """Where the first call's program had not finished when the call returned (XLA runs it
    asynchronously), waiting for it would cost more than copying: the function's NumPy arguments are
    copied for the second dispatcher instead; a program XLA runs inline reads them in place."""
    from srcjax import cpp_calls

    for inline in (True, False):
        monkeypatch.setattr(cpp_calls, "_inline", lambda out, exe, inline=inline: inline)
        f = srcjax.api.Compiled(tiny)  # (a new one for each mode: srcjax.jit(tiny) is one object)
        x = np.arange(4, dtype=np.float32)
        f(srcjax.device_put(x))
        copied = _counting_host(f)
        for _ in range(3):
            np.testing.assert_array_equal(np.asarray(f(x)), x * 2 + 1)
        if host_mode == "copied":
            assert copied[0] == 3
        else:  # (in place: none; asynchronous: the calls after the first, which found it so)
            assert copied[0] == (0 if inline else 2)


def step_loss(params, x, y):
    h = np.tanh(x @ params["w"] + params["b"])
    return np.mean((h - y) ** 2)


def test_host_leaves_skip_the_first_dispatcher_and_come_back(host_mode, monkeypatch):
    """Parameters on the device and a NumPy batch, call after call (a training loop fed by a NumPy data
    loader): where srcjax copies the batch (x64 off), the calls after the first go straight to the second
    dispatcher, without the first one's lookup they would always miss; a call without host leaves goes
    back to the first dispatcher. Results as the Python path's at each step; donation, 64-bit leaves
    and wrong shapes as without the shortcut."""
    from srcjax import cpp_calls

    monkeypatch.setattr(cpp_calls, "_inline", lambda out, exe: True)
    rng = np.random.default_rng(5)
    params = {"w": rng.standard_normal((3, 2)).astype(np.float32), "b": np.zeros(2, np.float32)}
    g = srcjax.value_and_grad(step_loss)
    dev = srcjax.device_put(params)
    batches = [(rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32))
               for _ in range(4)]
    g(dev, *batches[0])
    counting = Counting(g)
    copied = _counting_host(g)
    for x, y in batches * 2:
        want = g._call((dev, x, y), {})
        _same(g(dev, x, y), want)
    shortcut = g.__dict__["_dispatch"] is not g._cpp
    assert shortcut == (host_mode == "copied")  # (read in place: the first dispatcher serves them)
    assert counting.n <= 9  # (the 8 reference calls above, and g's first with a NumPy batch)
    if host_mode == "copied":
        assert copied[0] == 8
    xd, yd = srcjax.device_put(batches[0])
    _same(g(dev, xd, yd), g._call((dev, xd, yd), {}))  # device leaves only: the first dispatcher again
    assert g.__dict__["_dispatch"] is g._cpp
    g(dev, *batches[1])
    with pytest.raises(srcjax.TranspileError) as e:
        g(dev, np.ones((4, 5), np.float32), batches[0][1])  # a wrong shape, through the shortcut
    assert "test_cpp_dispatch.py" in str(e.value)  # located at the user's line
    out = g(dev, batches[0][0].astype(np.float64), batches[0][1])  # 64-bit: never a float32 record
    assert out[0].dtype == np.float64 and out[1]["w"].dtype == np.float32
    _same(g(dev, *batches[2]), g._call((dev, *batches[2]), {}))


def test_donating_functions_keep_their_own_dispatch(host_mode):
    """A function that donates never takes the shortcut (each of its calls releases the donated buffers)."""

    def update(w, x):
        return w - 0.5 * x

    f = srcjax.jit(update, donate_argnums=0)
    x = np.arange(3, dtype=np.float32)
    w = srcjax.device_put(np.ones(3, np.float32))
    for _ in range(4):
        w = f(w, x)
        assert "_dispatch" not in f.__dict__
    np.testing.assert_allclose(np.asarray(w), 1.0 - 0.5 * 4 * x)


def test_functions_taking_the_shortcut_are_collected(host_mode):
    import gc
    import weakref

    def affine(w, x):
        return x @ w + 1.0

    refs = []
    for _ in range(3):
        f = srcjax.api.Compiled(affine)  # (a new one each time: srcjax.jit(affine) is one object, kept with affine)
        w = srcjax.device_put(np.ones((3, 2), np.float32))
        for _ in range(3):
            np.testing.assert_allclose(np.asarray(f(w, np.ones((4, 3), np.float32))), np.full((4, 2), 4.0))
        refs.append(weakref.ref(f))
        del f
    gc.collect()
    assert all(r() is None for r in refs)  # (the shortcut holds its function weakly, as the dispatchers do)


def _route(f):
    """The name of the function ``f``'s calls go to first (``cpp_calls.attach``'s shortcuts), or None."""
    return getattr(f.__dict__.get("_dispatch"), "__name__", None)


def wide_chain(p, b):
    return (p["a"] @ b) @ b, p["c"] * 2.0


@pytest.mark.parametrize("inline", [True, False])
def test_numpy_arguments_beside_device_containers_take_the_third_dispatcher(host_mode, inline, monkeypatch):
    """Parameters on the device and NumPy arrays as arguments: where srcjax copies NumPy values (x64 off,
    or a program XLA runs asynchronously), only the arguments are copied, for a third dispatcher, whose
    records have a srcjax Array at every leaf of a container; a NumPy leaf in a container is never read
    from there (its call is copied whole for the second dispatcher): a write to it right after the call
    does not change the result, a float64 one keeps its program. Float64 arguments, NumPy subclasses,
    device arguments: as without the shortcut."""
    from srcjax import cpp_calls

    monkeypatch.setattr(cpp_calls, "_inline", lambda out, exe: inline)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((400, 400)).astype(np.float32)
    b = (rng.standard_normal((400, 400)) / 20).astype(np.float32)
    c = np.arange(3, dtype=np.float32)
    want = wide_chain({"a": a, "c": c}, b)
    f = srcjax.jit(wide_chain)
    dev = srcjax.device_put({"a": a, "c": c})
    f(dev, b)
    counting = Counting(f)
    top = "host_top" if host_mode == "copied" or not inline else None  # (else the first dispatcher reads them)
    for _ in range(4):
        b_in = b.copy()
        out = f(dev, b_in)
        b_in[:] = 0.0
        np.testing.assert_allclose(np.asarray(out[0]), want[0], rtol=2e-3, atol=2e-3)
    assert counting.n <= (1 if inline else 2)  # (asynchronous: the first call found it so, the next copies)
    assert _route(f) == top
    for _ in range(12):  # a NumPy leaf where the record has a device array (aliased: ~1 in 3 wrong)
        a_in = a.copy()
        out = f({"a": a_in, "c": dev["c"]}, b)
        a_in[:] = 0.0
        np.testing.assert_allclose(np.asarray(out[0]), want[0], rtol=2e-3, atol=2e-3)
        np.testing.assert_array_equal(np.asarray(out[1]), c * 2)
    out = f({"a": a.astype(np.float64), "c": dev["c"]}, b)  # (a float64 leaf where float32 ones came)
    assert out[0].dtype == np.float64
    np.testing.assert_allclose(np.asarray(out[0]), want[0], rtol=2e-3, atol=2e-3)

    class Sub(np.ndarray):
        pass

    for _ in range(3):
        b_in = b.copy().view(Sub)  # (not copied by the shortcut: the full path)
        out = f(dev, b_in)
        b_in[:] = 0.0
        np.testing.assert_allclose(np.asarray(out[0]), want[0], rtol=2e-3, atol=2e-3)
    f = srcjax.jit(wide_chain)
    for _ in range(3):
        out = f(dev, b)
    assert _route(f) == top
    out = f({"a": dev["a"], "c": c.astype(np.float64)}, b.astype(np.float64))  # 64-bit: never a float32 record
    assert out[0].dtype == np.float64 and out[1].dtype == np.float64
    out = f(dev, b.astype(np.float64))
    assert out[0].dtype == np.float64 and out[1].dtype == np.float32
    _same(f(dev, b), f._call((dev, b), {}))
    bd = srcjax.device_put(b)
    _same(f(dev, bd), f._call((dev, bd), {}))  # device arguments only: the first dispatcher again
    assert f.__dict__["_dispatch"] is f._cpp
    f(dev, b)
    with pytest.raises(srcjax.TranspileError) as e:
        f(dev, np.ones((400, 5), np.float32))  # a wrong shape, through the shortcut
    assert "test_cpp_dispatch.py" in str(e.value)


def test_numpy_arguments_beside_device_containers_on_both_paths(dispatch):
    """The same calls give the Python path's results with the dispatcher on and off."""
    rng = np.random.default_rng(12)
    params = {"w": rng.standard_normal((3, 2)).astype(np.float32), "b": np.zeros(2, np.float32)}
    dev = srcjax.device_put(params)
    g = srcjax.value_and_grad(step_loss)
    x, y = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
    calls = [(dev, x, y), (dev, x * 2, y), ({"w": dev["w"], "b": params["b"]}, x, y), (dev, x, y),
             (dev, x.astype(np.float64), y), (dev, srcjax.device_put(x), y), (params, x, y), (dev, x, y)]
    for args in calls * 2:
        _same(g(*args), g._call(args, {}))
        want = step_loss(*srcjax.tree_util.tree_map(np.asarray, args))
        np.testing.assert_allclose(float(g(*args)[0]), want, rtol=1e-5)


def first_step_loss(params, x, y):  # (its own function: srcjax.value_and_grad(f) is one object per f)
    return np.mean((np.tanh(x @ params["w"] + params["b"]) - y) ** 2)


def test_a_first_step_from_numpy_parameters_then_the_third_dispatcher(host_mode, monkeypatch):
    """A training loop's first step from NumPy parameters (copied whole, for the second dispatcher), then
    the parameters it returned with NumPy batches: within ``_POLL`` calls those go to the third
    dispatcher; all-NumPy calls keep the second. Results as the Python path's throughout."""
    from srcjax import cpp_calls

    monkeypatch.setattr(cpp_calls, "_inline", lambda out, exe: False)  # (copied in both modes)
    rng = np.random.default_rng(13)
    params = {"w": rng.standard_normal((3, 2)).astype(np.float32), "b": np.zeros(2, np.float32)}
    x, y = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
    g = srcjax.jit(srcjax.value_and_grad(first_step_loss))  # (a new object in each of host_mode's runs)
    for _ in range(3):
        _same(g(params, x, y), g._call((params, x, y), {}))
    assert _route(g) == "host_first"
    dev = srcjax.device_put(params)
    for i in range(cpp_calls._POLL + 1):
        _same(g(dev, x + i, y), g._call((dev, x + i, y), {}))
    assert _route(g) == "host_top"
    for _ in range(cpp_calls._POLL + 1):
        _same(g(params, x, y), g._call((params, x, y), {}))
    assert _route(g) == "host_first"  # (NumPy leaves in a container: the second dispatcher's)
