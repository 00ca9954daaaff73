"""Uploads without ml_dtypes (issue #18, ``runtime/host_upload.py``): until ml_dtypes is imported,
a call's NumPy arguments go to the device through one tiny program whose host callback returns
them. Checked against NumPy and against ``batched_device_put`` (the other path), in a new process
where ml_dtypes is not imported, and here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from srcjax.core import ShapedArray, canonical_dtype
from srcjax.runtime import host_upload, xla

ROOT = Path(__file__).resolve().parent.parent
_EXAMPLES = 1000 if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" else 60

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8, np.uint32, np.bool_, np.float16,
          np.complex64, np.complex128]

FRESH = r'''
import sys
import numpy as np
import srcjax

def f(a, b, c, d, s):
    return a * 2 + b.sum(), c.astype(np.float64) + s, np.logical_not(d)

rng = np.random.default_rng(0)
a = rng.standard_normal((3, 4)).astype(np.float32)
b = np.asfortranarray(rng.standard_normal((4, 3)).astype(np.float32))[::2]  # not C-contiguous
c = np.arange(5, dtype=np.int32)
d = np.array([True, False, True])
g = srcjax.jit(f)
out = [g(a, b, c, d, 1.5), g(a + 1, b, c, d, 2.5)]
up = srcjax.device_put({"x": c, "y": 3.0})
kept = np.asarray(up["x"]).copy()
c[0] = 100  # mutating the NumPy array afterwards changes no device value
ok = all(np.allclose(np.asarray(o), w) for (a_, s), res in zip(((a, 1.5), (a + 1, 2.5)), out)
         for o, w in zip(res, f(a_, b, np.arange(5, dtype=np.int32), d, s)))
ok = ok and (np.asarray(up["x"]) == kept).all() and float(up["y"]) == 3.0
print(ok, "ml_dtypes" in sys.modules, "jax" in sys.modules)
'''


def test_a_new_process_uploads_without_importing_ml_dtypes_and_gets_numpys_values(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(FRESH)
    for _ in range(2):  # the upload programs compiled, then loaded from the persistent cache
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                           env={"PYTHONPATH": str(ROOT), "SRCJAX_CACHE_DIR": str(tmp_path / "cache"),
                                "PATH": "/usr/bin:/bin"})
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["True", "False", "False"]


@settings(deadline=None, max_examples=_EXAMPLES, derandomize=_EXAMPLES < 1000)  # (the default sample is fixed)
@given(st.lists(st.tuples(st.sampled_from(DTYPES), st.lists(st.integers(0, 4), max_size=3)), min_size=1,
                max_size=5), st.integers(0, 2**31 - 1))
def test_the_callback_upload_equals_batched_device_put(specs, seed):
    rng = np.random.default_rng(seed)
    backend = xla.get_backend("cpu")
    values = [(rng.standard_normal(shape) * 10).astype(dt) for dt, shape in specs]
    avals = [ShapedArray(v.shape, canonical_dtype(v.dtype)) for v in values]
    with mock.patch.object(host_upload, "YOUNG", 0):  # (compiled at once, were ml_dtypes imported)
        bufs = host_upload.upload(values, avals, backend)
    assert bufs is not None
    for v, a, b in zip(values, avals, bufs):
        got = xla.wrap(b, a)
        other = xla.xla_client.batched_device_put(a, backend.put_sharding, [np.asarray(v, a.dtype)],
                                                  [backend.device], True, False, xla._COPY, True)
        assert got.shape == v.shape and got.dtype == a.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(v, a.dtype))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(xla.wrap(other, a)))


def test_python_numbers_and_zero_dim_arrays_keep_their_shapes():
    backend = xla.get_backend("cpu")
    avals = [ShapedArray((), np.dtype(np.float32), weak_type=True), ShapedArray((), np.dtype(np.int64))]
    with mock.patch.object(host_upload, "YOUNG", 0):
        bufs = host_upload.upload([2.5, np.int64(7)], avals, backend)
    assert bufs is not None
    assert [np.asarray(xla.wrap(b, a)).tolist() for b, a in zip(bufs, avals)] == [2.5, 7]
    assert all(np.asarray(xla.wrap(b, a)).shape == () for b, a in zip(bufs, avals))


BUDGET = r'''
import sys
import numpy as np
import srcjax
from srcjax.runtime import host_upload

host_upload._LEFT[0] = 2
g = srcjax.jit(lambda x: x * 2 + 1)  # one host leaf a call: the case the budget counts
outs = [np.asarray(g(np.full(3, float(k), np.float32))).tolist() for k in range(4)]
print(outs == [[2 * k + 1.0] * 3 for k in range(4)], host_upload.active(), "ml_dtypes" in sys.modules)
'''


def test_after_its_budget_the_callback_upload_hands_over_to_batched_device_put(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(BUDGET)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                       env={"PYTHONPATH": str(ROOT), "SRCJAX_CACHE": "0", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "False", "True"]  # the same numbers; then ml_dtypes is imported once


def test_several_numpy_leaves_go_up_together_also_with_ml_dtypes_imported(monkeypatch):
    import ml_dtypes  # noqa: F401  (batched_device_put would be allowed: still one execution for 2+ leaves)

    import srcjax

    calls = []
    real = host_upload.upload
    monkeypatch.setattr(host_upload, "upload", lambda *a: calls.append(len(a[0])) or real(*a))

    def f(p, x):
        return np.tanh(x @ p["w"] + p["b"]), p["w"].sum()

    rng = np.random.default_rng(1)
    p = {"w": rng.standard_normal((3, 2)).astype(np.float32), "b": np.ones(2, np.float32)}
    x = rng.standard_normal((4, 3)).astype(np.float32)
    g = srcjax.jit(f)
    for _ in range(2):  # the full path, then the cache-hit path
        out = g(p, x)
        np.testing.assert_allclose(np.asarray(out[0]), np.tanh(x @ p["w"] + p["b"]), rtol=1e-6)
        np.testing.assert_allclose(float(out[1]), p["w"].sum(), rtol=1e-6)
    assert calls == [3, 3]
    dev = srcjax.device_put(p)  # device leaves stay where they are; the one host leaf goes up alone
    np.testing.assert_allclose(np.asarray(g(dev, x)[0]), np.tanh(x @ p["w"] + p["b"]), rtol=1e-6)
    assert calls == [3, 3]


def test_regression_queued_uploads_each_hand_over_their_own_arrays():
    # XLA's CPU client runs an upload's callback on another thread, after execute_sharded returned,
    # when work is queued: a loop of calls without waiting once failed ("no attribute 'arrays'")
    import threading

    import srcjax

    def f(a, b):
        return np.tanh(a @ a @ a @ a) * 2.0 + b  # slow enough that calls queue up behind each other

    g = srcjax.jit(f)
    rng = np.random.default_rng(2)
    inputs = [(rng.standard_normal((160, 160)).astype(np.float32) / 10, rng.standard_normal(160).astype(np.float32))
              for _ in range(60)]
    outs = [g(a, b) for a, b in inputs]  # no waiting between calls
    for (a, b), o in zip(inputs, outs):
        np.testing.assert_allclose(np.asarray(o), f(a, b), rtol=1e-4, atol=1e-5)
    results: dict[int, list] = {}

    def work(k: int) -> None:
        results[k] = [g(a + k / 100, b) for a, b in inputs[:20]]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(3):
        for (a, b), o in zip(inputs[:20], results[k]):
            np.testing.assert_allclose(np.asarray(o), f(a + k / 100, b), rtol=1e-4, atol=1e-5)


def test_with_ml_dtypes_imported_a_signatures_first_uploads_go_leaf_by_leaf_without_compiling(monkeypatch):
    # compiling the upload program cost a first call 8-40 ms of wall time, where batched_device_put leaf by
    # leaf costs microseconds: it is compiled only for a signature uploaded more than YOUNG times
    import ml_dtypes  # noqa: F401

    import srcjax

    monkeypatch.setattr(host_upload, "YOUNG", 2)
    compiled = []
    real = xla.Backend.compile_with_callbacks
    monkeypatch.setattr(xla.Backend, "compile_with_callbacks", lambda self, *a: compiled.append(1) or real(self, *a))

    def f(a, b, c):
        return a * 2.0 + b.sum() - c

    rng = np.random.default_rng(3)
    args = (rng.standard_normal((7, 13)), rng.standard_normal((13, 14)).astype(np.float32)[:, ::2],  # (strided)
            np.arange(13, dtype=np.int16))
    np.testing.assert_allclose(np.asarray(srcjax.jit(f)(*args)), f(*args), rtol=1e-5, atol=1e-5)
    assert compiled == []  # a first call: its three leaves went up one by one
    backend = xla.get_backend("cpu")
    values = [rng.standard_normal((3, 11)), np.arange(11, dtype=np.int16)]
    avals = [ShapedArray(v.shape, canonical_dtype(v.dtype)) for v in values]
    for k in range(4):
        bufs = host_upload.upload(values, avals, backend)
        assert (bufs is None) == (k < 2) and len(compiled) == (k >= 2), k  # compiled once, then reused
        if bufs is not None:
            for v, a, b in zip(values, avals, bufs):
                np.testing.assert_array_equal(np.asarray(xla.wrap(b, a)), v)
