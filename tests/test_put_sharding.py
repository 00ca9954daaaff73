"""Uploaded arrays carry jaxlib's own ``SingleDeviceSharding`` (``runtime/xla.py``'s
``plain_put_sharding``; issue #18): the C++ dispatcher checks a Python subclass of it more slowly
(0.1-0.15 us a device argument). Arrays from ``srcjax.device_put`` and results of calls are then laid
out alike, one record serves both, and everything gives the values it gave before, with jax imported
before srcjax, after it, or never."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes  # noqa: F401  (batched_device_put is srcjax's upload once ml_dtypes is imported)
import numpy as np
import pytest
from jaxlib import _jax

import srcjax


def _scaled(p, x):
    return {"w": p["w"] * x, "b": p["b"] + x.sum()}, x * 2.0


@pytest.mark.parametrize("value", [np.arange(6, dtype=np.float32).reshape(2, 3), np.float64(2.5),
                                   np.array([True, False]), np.arange(4, dtype=np.int32),
                                   np.array(3 + 1j, np.complex64)])
def test_device_put_buffers_carry_jaxlibs_own_sharding(value):
    a = srcjax.device_put(value)
    assert type(a._buf._sharding) is _jax.SingleDeviceSharding
    np.testing.assert_array_equal(np.asarray(a), value)
    assert np.asarray(a).dtype == np.asarray(value).dtype


def test_uploads_and_results_share_one_record(monkeypatch):
    """A function called with uploaded arrays, then with its own results: both served in C++ after
    one call of srcjax's Python path each kind at most; values as NumPy's."""
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    f = srcjax.jit(_scaled)
    p = {"w": np.ones((2, 3), np.float32), "b": np.zeros(3, np.float32)}
    x = np.full((2, 3), 0.5, np.float32)
    dev = srcjax.device_put((p, x))
    f(*dev)
    f(*dev)
    calls = [0]
    inner = f._call

    def counting(args, kwargs):
        calls[0] += 1
        return inner(args, kwargs)

    f._call = counting
    out = f(*dev)
    for _ in range(3):
        out = f(out[0], out[1])
    assert calls[0] == 0  # (results and uploads laid out alike: the uploads' record serves both)
    want = _scaled(p, x)
    for _ in range(3):
        want = _scaled(want[0], want[1])
    np.testing.assert_allclose(np.asarray(out[1]), want[1])
    np.testing.assert_allclose(np.asarray(out[0]["w"]), want[0]["w"])
    np.testing.assert_allclose(np.asarray(out[0]["b"]), want[0]["b"])


_JAX_AFTER = """
import sys
import ml_dtypes
import numpy as np
import srcjax
from jaxlib import _jax

def f(x):
    return x * 2.0 + 1.0

c = srcjax.jit(f)
xd = srcjax.device_put(np.ones(3, np.float32))
assert "jax" not in sys.modules and type(xd._buf._sharding) is _jax.SingleDeviceSharding
for _ in range(3):
    np.testing.assert_array_equal(np.asarray(c(xd)), np.full(3, 3.0, np.float32))
if sys.argv[1] == "jax after":
    import jax
    import jax.numpy as jnp
    y = jax.device_put(np.arange(3.0, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda v: v * 3.0)(y)), np.arange(3.0) * 3.0)
    np.testing.assert_allclose(np.asarray(jnp.sin(y)), np.sin(np.arange(3.0, dtype=np.float32)), rtol=1e-6)
    zd = srcjax.device_put(np.full(3, 2.0, np.float32))
    assert type(zd._buf._sharding) is _jax.SingleDeviceSharding
    np.testing.assert_array_equal(np.asarray(c(zd)), np.full(3, 5.0, np.float32))
    np.testing.assert_array_equal(np.asarray(c(xd)), np.full(3, 3.0, np.float32))
print("ok")
"""


@pytest.mark.parametrize("order", ["jax never", "jax after"])
def test_in_a_process_without_jax_then_with_it(tmp_path, order):
    """srcjax gives jaxlib's class the one method uploads need where jax has not; jax, imported
    later, defines its own and works as usual (and so does srcjax)."""
    root = Path(__file__).resolve().parent.parent
    script = tmp_path / "put_sharding.py"
    script.write_text(_JAX_AFTER)
    proc = subprocess.run([sys.executable, str(script), order], env=dict(os.environ, PYTHONPATH=str(root)),
                          cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
