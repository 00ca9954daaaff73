"""``srcjax.jacfwd``/``jacrev``/``hessian`` objects called through jaxlib's C++ dispatcher (``cpp_calls.py``;
issue #15): after a call that ran the Jacobian's array form, calls with device or NumPy arrays of a signature
its Python path checked are served without entering that path, with the Python path's and jax's results;
anything else (integer arguments, containers, another shape, a hessian of an output that is not a scalar,
static arguments) comes back to the Python path and gives the same results or the same located error as
with the dispatcher off. A lazy Jacobian, grad or value_and_grad (written before: ``warm_transforms.py``)
gets the dispatcher without its derivative being written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import ml_dtypes  # noqa: F401  (the dispatcher starts once ml_dtypes is imported: cpp_budget.BUDGET)
import numpy as np
import pytest

import srcjax
from tests.python_path import Counting
from tests.twins import JAX

jax.config.update("jax_enable_x64", True)

ROOT = Path(__file__).resolve().parent.parent


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def layer(w, x):
    return np.tanh(w @ x) * x


def vector(x):
    return x[0] * np.sin(x)


def jrosen(x):
    return jax.numpy.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def jlayer(w, x):
    return jax.numpy.tanh(w @ x) * x


@pytest.fixture(params=["on", "off"])
def dispatch(request, monkeypatch):
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1" if request.param == "on" else "0")
    return request.param


def _data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((6, 6)), rng.standard_normal(6)


def _cases():
    w, x = _data()
    return [
        (srcjax.hessian(rosen), (x,), np.asarray(JAX.hessian(jrosen)(x))),
        (srcjax.jacrev(layer, 1), (w, x), np.asarray(JAX.jacrev(jlayer, 1)(w, x))),
        (srcjax.jacfwd(layer), (w, x), np.asarray(JAX.jacfwd(jlayer)(w, x))),
    ]


def test_jacobians_are_served_in_cpp(monkeypatch):
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    for t, args, want in _cases():
        np.testing.assert_allclose(np.asarray(t(*args)), want, rtol=1e-10, atol=1e-12)
        assert t._cpp is not None, t  # (a Jacobian gets the dispatcher: it had its own __call__ before)
        d = [srcjax.device_put(a) for a in args]
        for _ in range(3):  # (the NumPy calls settle on their shortcut)
            t(*d), t(*args)
        seen = Counting(t)
        for _ in range(3):
            np.testing.assert_allclose(np.asarray(t(*d)), want, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(np.asarray(t(*args)), want, rtol=1e-10, atol=1e-12)
        assert seen.n == 0, t


def test_value_and_grad_is_served_in_cpp(monkeypatch):
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    _, x = _data()
    vg = srcjax.value_and_grad(rosen)
    vg(x)
    assert vg._cpp is not None


def _error(f, *args, **kwargs):
    with pytest.raises(srcjax.TranspileError) as e:
        f(*args, **kwargs)
    return type(e.value), str(e.value)


def test_after_records_other_calls_take_the_python_path(dispatch):
    w, x = _data()
    want = {"h": np.asarray(JAX.hessian(jrosen)(x)), "h4": np.asarray(JAX.hessian(jrosen)(x[:4])),
            "j": np.asarray(JAX.jacrev(jlayer, 1)(w, x)), "jw": np.asarray(JAX.jacfwd(jlayer)(w, x)),
            "v": np.asarray(JAX.hessian(lambda v: v[0] * jax.numpy.sin(v))(x))}
    h, j = srcjax.hessian(rosen), srcjax.jacrev(layer, 1)
    for _ in range(3):
        h(x), j(w, x), h(srcjax.device_put(x))
    # integer arguments: the Python path's located DTypeError, the same with the dispatcher off
    for f, args in [(h, (np.arange(6),)), (j, (w, np.arange(6)))]:
        kind, text = _error(f, *args)
        assert kind is srcjax.DTypeError and "requires floating-point inputs, but the argument has dtype int64" in text
        assert _error(f, *args) == (kind, text)
    # another shape, a keyword call, a float32 argument: the Python path, then served
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(h(x[:4])), want["h4"], rtol=1e-10)
        np.testing.assert_allclose(np.asarray(j(w, x)), want["j"], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(h(x.astype(np.float32))), want["h"], rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(np.asarray(h(x)), want["h"], rtol=1e-10)
    jf = srcjax.jacfwd(layer)  # (a parameter not differentiated passed by keyword: served as the positional call)
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(jf(w, x=x)), want["jw"], rtol=1e-10, atol=1e-12)
    # the argument differentiated passed by keyword: JAX's rule as grad's ArgumentError, at the function's line
    # (was an IndexError inside srcjax on the Python path)
    for f in (j, srcjax.jacfwd(layer, 1), srcjax.hessian(lambda w, x: np.sum(layer(w, x)), 1)):
        kind, text = _error(f, w, x=x)
        assert kind is srcjax.ArgumentError and "needs at least 2 positional argument(s), but got 1" in text
        assert "test_cpp_jacobian.py" in text.splitlines()[0]
    # a hessian of an output that is not a scalar: jacfwd(jacrev(f)), never a record of the scalar path
    hv = srcjax.hessian(vector)
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(hv(x)), want["v"], rtol=1e-10, atol=1e-12)


def test_containers_argnums_tuples_and_static_arguments(dispatch):
    w, x = _data()
    p = {"w": w, "x": x}

    def loss(p):
        return np.sum(np.tanh(p["w"] @ p["x"]) ** 2)

    def jloss(p):
        return jax.numpy.sum(jax.numpy.tanh(p["w"] @ p["x"]) ** 2)

    def scaled(x, n):
        return np.sin(x) * n

    want_dict = JAX.jacrev(jloss)(p)
    want_tuple = JAX.jacrev(jlayer, (0, 1))(w, x)
    want_h = JAX.hessian(jrosen)(x)
    jd, jt, h = srcjax.jacrev(loss), srcjax.jacrev(layer, (0, 1)), srcjax.hessian(rosen)
    js = srcjax.jacfwd(srcjax.jit(scaled, static_argnums=1))
    for _ in range(3):  # (a dict argument: the loop path, before and after an array call's records)
        got = jd(p)
        for k in p:
            np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want_dict[k]), rtol=1e-10, atol=1e-12)
        got = jt(w, x)
        for a, b in zip(got, want_tuple):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)
        for n in (2, 3):
            np.testing.assert_allclose(np.asarray(js(x, n)), np.diag(np.cos(x) * n), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(h(x)), np.asarray(want_h), rtol=1e-10)


def test_numpy_argument_written_after_a_call(monkeypatch):
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    _, x = _data()
    h = srcjax.hessian(rosen)
    want = np.asarray(h(x.copy()))
    for _ in range(5):
        a = x.copy()
        out = h(a)
        a[:] = 7.0
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-12)


LAZY = textwrap.dedent("""
    import json
    import ml_dtypes
    import numpy as np
    import srcjax

    def rosen(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    x = np.linspace(0.1, 0.9, 5)
    made = {"hessian": srcjax.hessian(rosen), "grad": srcjax.grad(rosen), "value_and_grad": srcjax.value_and_grad(rosen)}
    out = {k: [np.asarray(t(x)[-1]).tolist() for _ in range(3)][-1] for k, t in made.items()}
    print(json.dumps({"out": out, "lazy": [k for k, t in made.items() if getattr(t, "_pending", False) or t._lazy],
                      "cpp": [k for k, t in made.items() if t._cpp is not None]}))
""")


def test_a_lazy_jacobian_gets_the_dispatcher_unwritten(tmp_path):
    (tmp_path / "main.py").write_text(LAZY)
    env = {**os.environ, "SRCJAX_CACHE_DIR": str(tmp_path / "cache"), "SRCJAX_CPP_DISPATCH": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    env.pop("SRCJAX_CACHE", None)
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, str(tmp_path / "main.py")], capture_output=True, text=True,
                           timeout=300, env=env)
        assert r.returncode == 0, r.stderr
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    kinds = ["hessian", "grad", "value_and_grad"]
    assert runs[0]["cpp"] == kinds and runs[0]["lazy"] == []
    # served by the dispatcher, the derivatives never written (grad's and value_and_grad's first call, served by
    # a program from the level-2 cache, attached none before)
    assert runs[1]["cpp"] == kinds and runs[1]["lazy"] == kinds
    assert runs[1]["out"] == runs[0]["out"]


def test_argnums_tuples_repeated_calls():
    """A Jacobian by a tuple of argnums remembers its output's structure per signature (it ran eval_shape at
    every call): repeated calls, another shape, a dict output, a hessian's blocks and of an output that is not
    a scalar all equal jax's."""
    w, x = _data()

    def two(a, b):
        return np.sum(np.sin(a) * b ** 2)

    def jtwo(a, b):
        return jax.numpy.sum(jax.numpy.sin(a) * b ** 2)

    def out_dict(a, b):
        return {"p": a * b, "s": np.sum(a)}

    def jout_dict(a, b):
        return {"p": a * b, "s": jax.numpy.sum(a)}

    def vec(a, b):
        return a * np.sin(b)

    def jvec(a, b):
        return a * jax.numpy.sin(b)

    cases = [(srcjax.hessian(two, (0, 1)), JAX.hessian(jtwo, (0, 1))),
             (srcjax.jacrev(out_dict, (0, 1)), JAX.jacrev(jout_dict, (0, 1))),
             (srcjax.jacfwd(vec, (0, 1)), JAX.jacfwd(jvec, (0, 1))),
             (srcjax.hessian(vec, (0, 1)), JAX.hessian(jvec, (0, 1)))]
    for n in (6, 6, 4, 6):
        for t, jt in cases:
            got, want = t(x[:n], x[:n] + 1), jt(x[:n], x[:n] + 1)
            gl, gt = jax.tree_util.tree_flatten(got)
            wl, wt = jax.tree_util.tree_flatten(want)
            assert gt == wt
            for a, b in zip(gl, wl):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)
