"""The persistent compilation cache (issue #18): a new process loads what an earlier one compiled;
an edit to the function, to a helper in another module or to a module constant is a new program;
corrupt, foreign or unsafe entries are never run; the size cap evicts the least recently used."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import srcjax
from srcjax.runtime import disk_cache

ROOT = Path(__file__).resolve().parent.parent

HELPER = "SCALE = {scale}\n\ndef inner(x):\n    return x * {factor}\n"
MAIN = textwrap.dedent("""
    import sys
    import numpy as np
    import srcjax
    from srcjax.runtime import disk_cache
    import helper

    OFFSET = {offset}

    def f(x):
        return np.sum(helper.inner(x) * helper.SCALE) + OFFSET

    print(float(srcjax.compile(f)(np.arange(3.0))), float(srcjax.grad(f)(np.arange(3.0))[1]),
          disk_cache.STATS["hits"], disk_cache.STATS["misses"])
""")


def _write(d: Path, scale=2.0, factor=3.0, offset=1.0) -> None:
    (d / "helper.py").write_text(HELPER.format(scale=scale, factor=factor))
    (d / "main.py").write_text(MAIN.format(offset=offset))


def _run(d: Path, cache: Path, **env: str) -> tuple[float, float, int, int]:
    e = {**os.environ, "SRCJAX_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join([str(ROOT), str(d)]), **env}
    e.pop("SRCJAX_CACHE", None) if "SRCJAX_CACHE" not in env else None
    r = subprocess.run([sys.executable, str(d / "main.py")], capture_output=True, text=True, timeout=300, env=e)
    assert r.returncode == 0, r.stderr
    value, grad, hits, misses = r.stdout.split()
    return float(value), float(grad), int(hits), int(misses)


def test_a_new_process_loads_what_an_earlier_one_compiled_and_edits_are_new_programs(tmp_path):
    code, cache = tmp_path / "code", tmp_path / "cache"
    code.mkdir()
    _write(code)
    assert _run(code, cache) == (2 * 3 * 3 + 1, 6.0, 0, 2)  # sum(3x)*2 + 1 at x = 0, 1, 2
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    assert _run(code, cache) == (19.0, 6.0, 2, 0)  # both programs from the cache
    for change, want in ((dict(factor=5.0), (31.0, 10.0)), (dict(scale=4.0), (37.0, 12.0)),
                         (dict(offset=7.0), (25.0, 6.0))):  # a helper in another module; its constant; ours
        _write(code, **change)
        value, grad, hits, misses = _run(code, cache)
        assert (value, grad) == want and misses >= 1
    _write(code)
    assert _run(code, cache)[2:] == (2, 0)
    assert _run(code, tmp_path / "off", SRCJAX_CACHE="0")[:2] == (19.0, 6.0)
    assert not (tmp_path / "off").exists()


def affine(x):
    return x * 2.0 + 1.0


def _entry(cache: Path) -> Path:
    (entry,) = [p for p in cache.iterdir() if p.suffix == ".xla"]
    return entry


def _fresh_compile(x):
    # a new Compiled each time (srcjax.compile(affine) is the same one while affine's reads are unchanged):
    # its in-memory cache is empty, so the disk cache is asked
    # the executable is stored on a thread of its own (disk_cache.store_later): wait for it before looking
    out = np.asarray(srcjax.api.Compiled(affine)(x))
    disk_cache.flush()
    return out


def test_a_first_compile_stores_off_the_callers_thread_and_a_lookup_waits(tmp_path, monkeypatch):
    """The first call returns without serializing its executable and writing it (3-5 ms of a first call on
    the caller's thread before); a lookup of the same key in this process waits for the write and hits."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(cache))
    threads, real = [], disk_cache.store
    gate = threading.Event()

    kinds = []

    def slow_store(key, blob, kind="xla", directory=None):
        kinds.append((kind, threading.current_thread()))
        if kind == "xla":  # (the front end's results, warm_cache.py's "program" entries, are written too)
            threads.append(threading.current_thread())
            gate.wait(timeout=30)  # still writing when the caller already has its result
        real(key, blob, kind, directory)

    monkeypatch.setattr(disk_cache, "store", slow_store)
    x = np.arange(5.0)
    np.testing.assert_array_equal(np.asarray(srcjax.api.Compiled(affine)(x)), 2 * x + 1)
    # the caller has its result; the writer thread reaches the executable after the front end's entries,
    # in its own time (it is not waited for): wait for it to be inside its (held) write
    deadline = time.monotonic() + 30
    while not threads and time.monotonic() < deadline:
        time.sleep(0.005)
    assert threads and threads[0] is not threading.current_thread()
    assert not list(cache.glob("*.xla"))  # the caller did not wait for the disk
    before = dict(disk_cache.STATS)
    threading.Timer(0.2, gate.set).start()
    np.testing.assert_array_equal(np.asarray(srcjax.api.Compiled(affine)(x)), 2 * x + 1)  # waits, then loads
    assert disk_cache.STATS["hits"] == before["hits"] + 1 and len(threads) == 1
    assert len(list(cache.glob("*.xla"))) == 1
    disk_cache.flush()
    assert "program" in {k for k, _ in kinds}  # the front end's results: off the caller's thread too
    assert all(t is not threading.current_thread() for k, t in kinds if k in ("xla", "program"))


def test_a_store_later_writes_where_the_cache_was_when_it_was_asked_for(tmp_path, monkeypatch):
    """The writer thread runs after its caller went on: a change of SRCJAX_CACHE_DIR (a test's monkeypatch
    undone, a user's os.environ edit) in between must not send the entry to the other directory."""
    first, second = tmp_path / "first", tmp_path / "second"
    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(first))
    gate = threading.Event()

    def blob() -> bytes:
        gate.wait(timeout=30)
        return b"executable bytes"

    disk_cache.store_later("k" * 64, blob)
    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(second))
    gate.set()
    disk_cache.flush()
    assert len(list(first.glob("*.xla"))) == 1
    assert not second.exists() or not list(second.glob("*.xla"))
    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(first))
    assert disk_cache.load("k" * 64) == b"executable bytes"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_child_forked_while_a_store_holds_the_lock_can_store(tmp_path, monkeypatch):
    """A process forked while the writer thread held the cache's lock (in its size tally) got the lock held
    and no thread to release it: the child's first store waited forever. The child starts with a fresh one."""
    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    held, release = threading.Event(), threading.Event()

    def writer() -> bytes:
        with disk_cache._LOCK:
            held.set()
            release.wait(timeout=30)
        return b"x" * 10

    disk_cache.store_later("b" * 64, writer)
    assert held.wait(timeout=30)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            disk_cache.store("c" * 64, b"y" * 10)
            code = 0 if disk_cache.load("c" * 64) == b"y" * 10 else 2
        finally:
            os._exit(code)
    release.set()
    deadline = time.monotonic() + 60
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    disk_cache.flush()
    assert done[0] == pid and os.waitstatus_to_exitcode(done[1]) == 0  # (before: the child hung)
    assert disk_cache.load("b" * 64) == b"x" * 10

def test_the_key_holds_xla_flags(monkeypatch):
    """XLA_FLAGS change the machine code and its numbers (fast math, optimization level): an executable
    compiled under other flags is another entry (it was served: a run with other flags got the first
    run's code; jax's cache key holds them too). The tests' own flags (tests/optimized_xla.py) showed it."""
    from jaxlib import xla_client

    from srcjax.runtime import xla

    backend, options = xla.get_backend("cpu"), xla_client.CompileOptions()
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=true")
    fast = disk_cache.program_key("module {}", backend, options)
    monkeypatch.setenv("XLA_FLAGS", "  --xla_cpu_enable_fast_math=true ")
    assert disk_cache.program_key("module {}", backend, options) == fast
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    assert disk_cache.program_key("module {}", backend, options) != fast
    monkeypatch.delenv("XLA_FLAGS")
    assert disk_cache.program_key("module {}", backend, options) != fast


def test_corrupt_truncated_and_unsafe_entries_are_never_run(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(cache))
    x = np.arange(4.0)
    np.testing.assert_array_equal(_fresh_compile(x), 2 * x + 1)
    entry = _entry(cache)
    good = entry.read_bytes()
    for bad in (good[:-7], good[:10], good[:-1] + bytes([good[-1] ^ 1]), b"not an entry"):
        entry.write_bytes(bad)
        before = dict(disk_cache.STATS)
        np.testing.assert_array_equal(_fresh_compile(x), 2 * x + 1)
        assert disk_cache.STATS["hits"] == before["hits"]
        rewritten = _entry(cache).read_bytes()
        assert rewritten != bad and rewritten.startswith(b"SRCJAX-XLA-1\n")  # rewritten
    entry.chmod(0o666)  # others may write it: not ours to run
    before = dict(disk_cache.STATS)
    np.testing.assert_array_equal(_fresh_compile(x), 2 * x + 1)
    assert disk_cache.STATS["hits"] == before["hits"]
    assert oct(_entry(cache).stat().st_mode & 0o777) == "0o600"  # replaced by a private one
    before = dict(disk_cache.STATS)
    np.testing.assert_array_equal(_fresh_compile(x), 2 * x + 1)
    assert disk_cache.STATS["hits"] == before["hits"] + 1


def test_a_directory_others_can_write_is_not_used(tmp_path, monkeypatch):
    cache = tmp_path / "shared"
    cache.mkdir(mode=0o777)
    cache.chmod(0o777)
    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(cache))
    x = np.arange(3.0)
    np.testing.assert_array_equal(_fresh_compile(x), 2 * x + 1)
    assert not list(cache.iterdir())


def test_the_size_cap_evicts_the_least_recently_used(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(cache))
    for n in (1, 2, 3):
        _fresh_compile(np.zeros(n))
    assert len(list(cache.glob("*.xla"))) == 3  # (and the front end's results: warm_cache.py)
    def entries() -> list[Path]:  # (not the tally of their sizes, `.size`)
        return [p for p in cache.iterdir() if not p.name.startswith(".")]

    sizes = sorted(p.stat().st_size for p in entries())
    monkeypatch.setenv("SRCJAX_CACHE_MAX_BYTES", str(sum(sizes) - 1))
    oldest = min(entries(), key=lambda p: p.stat().st_mtime)
    _fresh_compile(np.zeros(4))
    left = entries()
    assert oldest not in left and sum(p.stat().st_size for p in left) <= sum(sizes) - 1


def test_cli_cache_info_and_clear(tmp_path):
    cache = tmp_path / "cache"
    env = {**os.environ, "SRCJAX_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    cache.mkdir(mode=0o700, exist_ok=True)
    (cache / ("0" * 64 + ".xla")).write_bytes(b"x" * 100)
    r = subprocess.run([sys.executable, "-m", "srcjax", "--cache-info"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert str(cache) in r.stdout and "1 entr" in r.stdout
    r = subprocess.run([sys.executable, "-m", "srcjax", "--cache-clear"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "removed 1" in r.stdout
    assert not list(cache.glob("*.xla"))


@pytest.mark.parametrize("value", ["0", "off"])
def test_cache_off(value, monkeypatch):
    monkeypatch.setenv("SRCJAX_CACHE", value)
    assert disk_cache.cache_dir() is None
