"""Keyword-argument calls through jaxlib's C++ dispatcher (``srcjax/cpp_calls.py``'s ``keyword_miss``;
issue #18): with ``SRCJAX_CPP_DISPATCH`` on and off, every kind of call (positional, by keyword, mixed,
keywords in any order, parameters declared in an order that is not sorted, defaults left out, static
arguments by name or number, pytrees, NumPy and device inputs) gives NumPy's results; calls whose keyword
names sorted are in the parameters' order (jaxlib's flattening) are served without srcjax's Python path,
and keyword calls never take the dispatcher away from the positional ones."""

from __future__ import annotations

import ml_dtypes  # noqa: F401  (the dispatcher starts once ml_dtypes is imported: cpp_budget.BUDGET)
import numpy as np
import pytest

import srcjax
from srcjax.runtime import cpp_dispatch
from tests.python_path import Counting


def step(params, x, y):
    h = np.tanh(x @ params["w"] + params["b"])
    return np.sum((h - y) ** 2)


def swapped(y, x, scale=2.0):  # (parameters not in sorted order)
    return x * scale - y


# The same functions for the tests run with the dispatcher off: what srcjax decided for a function while the
# dispatcher was off stays with it (its shared plain Compiled), so a test with it on gets functions of its own.
def step_off(params, x, y):
    h = np.tanh(x @ params["w"] + params["b"])
    return np.sum((h - y) ** 2)


def swapped_off(y, x, scale=2.0):
    return x * scale - y


def _fns(dispatch):
    return (step, swapped) if dispatch == "on" else (step_off, swapped_off)


@pytest.fixture(params=["on", "off"])
def dispatch(request, monkeypatch):
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1" if request.param == "on" else "0")
    return request.param


def _inputs(rng):
    f32 = np.float32  # (float32: keyed alike whether 64-bit values are (srcjax alone, jax with x64) or not)
    params = {"w": rng.standard_normal((3, 4)).astype(f32), "b": rng.standard_normal(4).astype(f32)}
    return params, rng.standard_normal((5, 3)).astype(f32), rng.standard_normal((5, 4)).astype(f32)


@pytest.mark.parametrize("inputs", ["device", "numpy"])
def test_every_kind_of_call_matches_numpy(dispatch, inputs):
    step, swapped = _fns(dispatch)
    rng = np.random.default_rng(0)
    p, x, y = _inputs(rng)
    g = srcjax.value_and_grad(step)
    a = srcjax.device_put((p, x, y)) if inputs == "device" else (p, x, y)
    want = step(p, x, y)
    calls = [(a, {}), (a[:1], {"x": a[1], "y": a[2]}), (a[:2], {"y": a[2]}), (a[:1], {"y": a[2], "x": a[1]})]
    # (the differentiated params by position: JAX's rule, test_grad_of_an_argument_passed_by_keyword_is_refused)
    grads = None
    for _ in range(20):  # (more than cpp_calls._REFUSALS keyword calls)
        for args, kwargs in calls:
            value, gr = g(*args, **kwargs)
            np.testing.assert_allclose(float(value), want, rtol=1e-5)
            assert type(value) is srcjax.Array and type(gr["w"]) is srcjax.Array
            if grads is None:
                grads = np.asarray(gr["w"])
            np.testing.assert_array_equal(np.asarray(gr["w"]), grads)
    assert g._cpp is not None or dispatch == "off"  # (keyword calls never detach the dispatcher)
    s = srcjax.jit(swapped)
    x, y = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    if inputs == "device":
        x, y = srcjax.device_put((x, y))
    for _ in range(20):
        for args, kwargs in [((y, x), {}), ((), {"x": x, "y": y}), ((y,), {"x": x}), ((), {"y": y, "x": x, "scale": 3.0}),
                             ((y, x), {"scale": 3.0}), ((), {"x": x, "y": y, "scale": 2.0})]:
            want = swapped(*np.asarray(args), **{k: np.asarray(v) for k, v in kwargs.items()})
            np.testing.assert_allclose(np.asarray(s(*args, **kwargs)), want, rtol=1e-5)
    # (jax imported with x64 off keys a Python float keyword as float32: those calls may leave the dispatcher)
    assert s._cpp is not None or dispatch == "off" or not cpp_dispatch.x64()


def test_keyword_calls_in_the_parameters_order_are_served_in_cpp(monkeypatch):
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    rng = np.random.default_rng(1)
    p, x, y = srcjax.device_put(_inputs(rng))
    calls = [((p, x, y), {}), ((p,), {"x": x, "y": y}), ((p, x), {"y": y}), ((p,), {"y": y, "x": x})]
    for g, more in [(srcjax.value_and_grad(step), []), (srcjax.jit(step), [((), {"y": y, "x": x, "params": p})])]:
        for _ in range(2):
            for args, kwargs in calls + more:
                g(*args, **kwargs)
        counting = Counting(g)
        for _ in range(3):
            for args, kwargs in calls + more:
                g(*args, **kwargs)
        assert counting.n == 0


def test_keyword_calls_with_numpy_inputs_written_after_the_call(monkeypatch):
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")

    def chain(a, b):
        return (a @ b) @ b

    f = srcjax.jit(chain)
    rng = np.random.default_rng(2)
    a = rng.standard_normal((300, 300)).astype(np.float32)
    b = (rng.standard_normal((300, 300)) / 20).astype(np.float32)
    want = np.asarray(f(a, b))
    for _ in range(10):
        for args, kwargs in [((), {"a": a.copy(), "b": b}), ((a.copy(),), {"b": b})]:
            out = f(*args, **kwargs)
            (kwargs.get("a") if "a" in kwargs else args[0])[:] = 0.0  # (right after the call)
            np.testing.assert_array_equal(np.asarray(out), want)


def test_static_arguments_by_keyword(dispatch):
    def act(w, x, how, k=1):
        h = x @ w
        if how == "tanh":
            h = np.tanh(h)
        return h * k

    rng = np.random.default_rng(3)
    w, x = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    for static in ({"static_argnums": (2, 3)}, {"static_argnames": ("how", "k")}):
        f = srcjax.jit(act, **static)
        wd, xd = srcjax.device_put((w, x))
        for _ in range(20):
            for args, kwargs in [((wd, xd, "tanh", 2), {}), ((wd, xd), {"how": "tanh", "k": 2}),
                                 ((wd,), {"x": xd, "how": "none", "k": 3}), ((wd, xd), {"k": 2, "how": "none"}),
                                 ((wd, xd, "tanh"), {})]:
                np.testing.assert_allclose(np.asarray(f(*args, **kwargs)), act(w, x, *args[2:], **{
                    k: v for k, v in kwargs.items() if k in ("how", "k")}), rtol=1e-5)
        assert f._cpp is not None or dispatch == "off"


def test_wrong_keyword_calls_get_located_errors(dispatch):
    f = srcjax.jit(_fns(dispatch)[1])
    x = srcjax.device_put(np.ones(3))
    for _ in range(3):
        f(y=x, x=x)
    with pytest.raises(srcjax.TranspileError) as e:
        f(y=x, x="a string")
    assert "test_cpp_keywords.py" in str(e.value)
    for call in (lambda: f(y=x, z=x), lambda: f(x, y=x), lambda: f(y=x)):
        with pytest.raises(srcjax.ArgumentError) as e:
            call()
        assert "test_cpp_keywords.py" in str(e.value)  # (at the user's def line)
    np.testing.assert_array_equal(np.asarray(f(y=x, x=x)), np.ones(3))


@pytest.mark.parametrize("batch", ["numpy", "device"])
def test_keyword_batches_beside_device_parameters_skip_the_python_path(monkeypatch, batch):
    """``step(params, x=x, y=y)`` with the parameters on the device and a NumPy batch (a data loader's):
    served by the shortcut the positional calls take (only the NumPy arguments copied), without srcjax's
    Python path, alternating with positional and device calls."""
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    rng = np.random.default_rng(4)
    p, x, y = _inputs(rng)
    g = srcjax.value_and_grad(step)
    pd = srcjax.device_put(p)
    xb, yb = (x, y) if batch == "numpy" else srcjax.device_put((x, y))
    calls = [((pd,), {"x": xb, "y": yb}), ((pd, xb, yb), {}), ((pd,), {"y": yb, "x": xb}), ((pd, xb), {"y": yb})]
    for _ in range(2):
        for args, kwargs in calls:
            g(*args, **kwargs)
    counting = Counting(g)
    want = step(p, x, y)
    for _ in range(3):
        for args, kwargs in calls:
            np.testing.assert_allclose(float(g(*args, **kwargs)[0]), want, rtol=1e-5)
    assert counting.n == 0


def gapped(y, x, scale=2.0, shift=0.0):  # (parameters not in sorted order; defaults between those passed)
    return x * scale - y + shift


def gapped_off(y, x, scale=2.0, shift=0.0):
    return x * scale - y + shift


def _gapped_calls(y, x, s):
    """Calls of ``gapped`` whose keywords sorted are not the parameters' order, or that leave a default
    out between two parameters passed (``s``: an array for ``shift``)."""
    return [((), {"x": x, "y": y}), ((y,), {"x": x, "shift": s}), ((), {"shift": s, "y": y, "x": x}),
            ((y, x), {"shift": s}), ((y,), {"shift": s, "x": x}), ((), {"x": x, "y": y, "shift": s, "scale": s})]


def _gapped_want(args, kwargs):
    named = dict(zip(["y", "x", "scale", "shift"], args), **kwargs)
    return gapped(**{k: np.asarray(v) for k, v in named.items()})


@pytest.mark.parametrize("inputs", ["device", "numpy"])
def test_keyword_calls_out_of_order_or_with_gaps_match_numpy(dispatch, inputs):
    rng = np.random.default_rng(5)
    y, x, s = (rng.standard_normal(4).astype(np.float32) for _ in range(3))
    if inputs == "device":
        y, x, s = srcjax.device_put((y, x, s))
    f = srcjax.jit(gapped if dispatch == "on" else gapped_off)
    for _ in range(3):
        for args, kwargs in [((y, x), {}), *_gapped_calls(y, x, s), ((y, x, s), {}), ((y, x, s, s), {})]:
            np.testing.assert_allclose(np.asarray(f(*args, **kwargs)), _gapped_want(args, kwargs), rtol=1e-6)
    assert len(f._cache) == 4  # (a left-out scale keyed as the number it is: no program of its own)


def test_keyword_calls_out_of_order_or_with_gaps_are_served_in_cpp(monkeypatch):
    """Bound in front of the C++ dispatcher to the positional call (left-out defaults as device arrays
    uploaded once): after the first of each form, neither srcjax's Python path nor its keyword miss runs."""
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    from srcjax import cpp_calls

    rng = np.random.default_rng(6)
    y, x, s = srcjax.device_put(tuple(rng.standard_normal(4).astype(np.float32) for _ in range(3)))
    f = srcjax.jit(gapped)
    calls = [((y, x), {}), *_gapped_calls(y, x, s)]
    for args, kwargs in calls * 2:
        f(*args, **kwargs)
    counting = Counting(f)
    bound = [0]
    positional = cpp_calls._positional

    def counted(*a):
        bound[0] += 1
        return positional(*a)

    monkeypatch.setattr(cpp_calls, "_positional", counted)  # (keyword_miss's and the shortcuts' first step)
    for _ in range(3):
        for args, kwargs in calls:
            np.testing.assert_allclose(np.asarray(f(*args, **kwargs)), _gapped_want(args, kwargs), rtol=1e-6)
    assert counting.n == 0 and bound[0] == 0


def test_keyword_calls_with_gaps_and_static_defaults(dispatch):
    def act(w, x, how="tanh", k=1.0, b=0.0):
        h = x @ w + b
        if how == "tanh":
            h = np.tanh(h)
        return h * k

    rng = np.random.default_rng(7)
    w, x = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(2).astype(np.float32)
    f = srcjax.jit(act, static_argnames=("how",))
    wd, xd, bd = srcjax.device_put((w, x, b))
    for _ in range(20):
        for args, kwargs in [((wd,), {"x": xd, "b": bd}), ((wd, xd), {"b": bd, "how": "none"}),
                             ((), {"b": bd, "x": xd, "w": wd}), ((wd, xd, "none"), {"b": bd})]:
            named = dict(zip(["w", "x", "how"], [w, x, *args[2:]]), **{k: b for k in kwargs if k == "b"})
            named.update({k: v for k, v in kwargs.items() if k == "how"})
            np.testing.assert_allclose(np.asarray(f(*args, **kwargs)), act(**named), rtol=1e-5)


def test_bound_keyword_calls_with_numpy_inputs_written_after_the_call(monkeypatch):
    """NumPy arrays passed by keyword out of order or beside a gap, written right after the call (a program
    XLA runs asynchronously): the results are the values passed."""
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")

    def chain(b, a, scale=1.0, shift=0.0):
        return ((a @ b) @ b) * scale + shift

    f = srcjax.jit(chain)
    rng = np.random.default_rng(8)
    a = rng.standard_normal((300, 300)).astype(np.float32)
    b = (rng.standard_normal((300, 300)) / 20).astype(np.float32)
    shift = np.float32(0.5) * np.ones((300, 300), np.float32)
    want = np.asarray(f(b, a, 1.0, shift))
    for _ in range(10):
        for kwargs in [{"a": a.copy(), "b": b.copy(), "shift": shift.copy()}, {"shift": shift.copy(), "a": a.copy(),
                                                                              "b": b.copy()}]:
            out = f(**kwargs)
            for v in kwargs.values():
                v[:] = 7.0  # (right after the call)
            np.testing.assert_array_equal(np.asarray(out), want)


@pytest.mark.parametrize("inputs", ["device", "numpy"])
def test_grad_of_an_argument_passed_by_keyword_is_refused(dispatch, inputs):
    """JAX's rule: ``grad``/``value_and_grad`` take the differentiated arguments by position (jax raises a
    TypeError); srcjax raises an ArgumentError at the call, also after positional calls were served in C++."""
    step_ = _fns(dispatch)[0]
    rng = np.random.default_rng(9)
    p, x, y = _inputs(rng)
    if inputs == "device":
        p, x, y = srcjax.device_put((p, x, y))
    for transform in (srcjax.grad, srcjax.value_and_grad):
        g = transform(step_)
        for _ in range(40):  # (the C++ dispatcher's records and shortcuts for the positional calls)
            g(p, x, y)
            g(p, x, y=y)
        for args, kwargs in [((), {"params": p, "x": x, "y": y}), ((), {"y": y, "x": x, "params": p})] * 20:
            with pytest.raises(srcjax.ArgumentError, match="argnums=0") as e:
                g(*args, **kwargs)
            assert "test_cpp_keywords.py" in str(e.value)
        h = transform(step_, argnums=(0, 2))
        for args, kwargs in [((p, x), {"y": y}), ((p,), {"y": y, "x": x})]:
            h(p, x, y)
            with pytest.raises(srcjax.ArgumentError, match="'y' passed by keyword"):
                h(*args, **kwargs)
    def scaled(x, s=2.0):
        return np.sum(x * s)

    with pytest.raises(srcjax.ArgumentError, match="'s' passed by keyword or left out"):
        srcjax.grad(scaled, argnums=1)(np.ones(3, np.float32))
