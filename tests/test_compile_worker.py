"""XLA's compile on srcjax's compile worker while the calling thread prepares what does not need the
executable (``runtime/compile_worker.py``; issues #15, #18): the same results, the same errors in the
same order, the work done once, no thread left per compile, and a switch to turn it off."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from jaxlib import _jax

from srcjax import warm_cache
from srcjax.core import InternalError, ShapedArray
from srcjax.runtime import compile_worker, xla

TEXT = """module @m {
  func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {
    %r = stablehlo.tanh %x : tensor<3xf32>
    return %r : tensor<3xf32>
  }
}
"""


def test_the_compile_runs_on_another_thread_while_meanwhile_runs_on_this_one():
    seen = threading.Event()
    threads = []

    def compile():
        threads.append(threading.get_ident())
        return seen.wait(30)  # (only returns True if meanwhile ran while this was running)

    def meanwhile():
        threads.append(threading.get_ident())
        seen.set()

    assert compile_worker.overlapped(compile, meanwhile) is True
    assert threads[1] == threading.get_ident() != threads[0]


def test_the_compiles_error_comes_first_and_meanwhile_runs_once():
    ran = []

    def compile():
        raise ValueError("compile failed")

    def meanwhile():
        ran.append(1)
        raise KeyError("meanwhile failed")

    with pytest.raises(ValueError, match="compile failed"):
        compile_worker.overlapped(compile, meanwhile)
    assert len(ran) <= 1
    ran.clear()
    with pytest.raises(KeyError, match="meanwhile failed"):
        compile_worker.overlapped(lambda: 1, meanwhile)
    assert ran == [1]


def test_switched_off_everything_runs_on_the_calling_thread(monkeypatch):
    monkeypatch.setenv("SRCJAX_COMPILE_OVERLAP", "0")
    threads = []
    out = compile_worker.overlapped(lambda: threads.append(threading.get_ident()) or 5,
                                    lambda: threads.append(threading.get_ident()))
    assert out == 5 and threads == [threading.get_ident()] * 2


def test_while_the_worker_is_busy_another_threads_compile_runs_inline():
    inside = threading.Event()
    release = threading.Event()
    got = []

    def slow():
        inside.set()
        release.wait(30)
        return "slow"

    t = threading.Thread(target=lambda: got.append(compile_worker.overlapped(slow, lambda: None)))
    t.start()
    assert inside.wait(30)
    me = threading.get_ident()
    assert compile_worker.overlapped(lambda: threading.get_ident(), lambda: None) == me  # (not queued)
    release.set()
    t.join(30)
    assert got == ["slow"]


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts the process's threads in /proc")
def test_compiles_leave_no_thread_behind():
    for k in range(2):  # (XLA's and the worker's threads started)
        xla.compile_text(TEXT.replace("tanh", "sine" if k else "cosine"), [ShapedArray((3,), np.dtype(np.float32))],
                         meanwhile=lambda: None)
    before = _threads()
    for op in ("exponential", "log", "sqrt", "negate", "abs"):
        exe = xla.compile_text(TEXT.replace("tanh", op), [ShapedArray((3,), np.dtype(np.float32))], meanwhile=lambda: None)
        assert exe.loaded is not None
    assert _threads() == before


@pytest.mark.parametrize("overlap", ["1", "0"])
def test_a_rejected_module_is_the_same_internal_error_with_meanwhile(monkeypatch, overlap):
    monkeypatch.setenv("SRCJAX_COMPILE_OVERLAP", overlap)
    bad = "func.func public @main() -> () { stablehlo.bogus }"
    with pytest.raises(InternalError) as plain:
        xla.compile_text(bad, [])
    with pytest.raises(InternalError) as overlapped:
        xla.compile_text(bad, [], meanwhile=lambda: 1 / 0)  # (meanwhile's error is not the one raised)
    assert str(overlapped.value) == str(plain.value) and "XLA rejected" in str(plain.value)


class _FailingClient:
    """The real client, whose compiles fail as XLA's do."""

    def __init__(self, real):
        self.real = real

    def compile_and_load(self, *args, **kwargs):
        raise _jax.JaxRuntimeError("INTERNAL: a compile that failed")

    def __getattr__(self, name):
        return getattr(self.real, name)


def test_a_program_that_fails_to_compile_leaves_no_level2_entry(monkeypatch, tmp_path):
    # the level-2 entry is made while XLA compiles: stored only once the program compiled (never an entry
    # whose text XLA rejects)
    import srcjax

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path))

    def f_that_fails_to_compile(x):
        return np.sin(x) * 3.0 + 0.25

    backend = xla.get_backend()
    stores = warm_cache.STATS["stores"]
    monkeypatch.setattr(backend, "client", _FailingClient(backend.client))
    with pytest.raises(InternalError, match="a compile that failed"):
        srcjax.jit(f_that_fails_to_compile)(np.ones(3))
    assert warm_cache.STATS["stores"] == stores
    monkeypatch.setattr(backend, "client", backend.client.real)
    x = np.linspace(0, 1, 3)
    np.testing.assert_allclose(np.asarray(srcjax.jit(f_that_fails_to_compile)(x)), np.sin(x) * 3.0 + 0.25)
    assert warm_cache.STATS["stores"] == stores + 1


PREPARED = r'''
import sys
import numpy as np
import srcjax
from srcjax.runtime import compile_worker, host_upload

ready = []
real_upload, real_overlapped = host_upload.upload, compile_worker.overlapped
host_upload.upload = lambda values, avals, backend: ready.append(len(host_upload._PROGRAMS)) or real_upload(
    values, avals, backend)
overlaps = []
compile_worker.overlapped = lambda compile, meanwhile: overlaps.append(meanwhile is not None) or real_overlapped(
    compile, meanwhile)

def f(a, b):
    return np.tanh(a) @ b + 1.0

rng = np.random.default_rng(0)
a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)).astype(np.float32)
out = srcjax.jit(f)(a, b)
print(np.allclose(np.asarray(out), f(a, b)), ready, overlaps, "ml_dtypes" in sys.modules)
'''


@pytest.mark.parametrize("run", ["compiled", "from the persistent cache"])
def test_without_ml_dtypes_the_upload_program_is_ready_before_the_first_upload(tmp_path, run):
    # (host_upload.prepare, while XLA compiles the program, or loads it and its level-2 entry's: the first
    # upload finds its program ready)
    import subprocess
    import sys
    from pathlib import Path

    cache = tmp_path / "cache"
    script = tmp_path / "job.py"
    script.write_text(PREPARED)
    root = Path(__file__).resolve().parent.parent
    for _ in range(1 if run == "compiled" else 2):
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                           env={"PYTHONPATH": str(root), "SRCJAX_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin"})
        assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "[1]", "[True]", "False"]


def test_without_a_thread_to_be_had_the_compile_runs_here(monkeypatch):
    def refuse(*args):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(compile_worker, "_WORKER", [None])  # (the real worker stays, unused meanwhile)
    monkeypatch.setattr(compile_worker._thread, "start_new_thread", refuse)
    threads = []
    out = compile_worker.overlapped(lambda: threads.append(threading.get_ident()) or 7,
                                    lambda: threads.append(threading.get_ident()))
    assert out == 7 and threads == [threading.get_ident()] * 2 and not compile_worker._JOBS
