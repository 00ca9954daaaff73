"""A persistent cache of compiled programs: a second run of the same program, in a new process, loads
XLA's executable instead of compiling it again (milliseconds instead of 50-500 ms).

Keyed by everything that determines the machine code: the StableHLO text (which the front end
derives from the source, the module constants it reads and the argument signature), the compile
options, XLA_FLAGS, srcjax's and jaxlib's versions, the platform and its version, the device kind and the host
CPU's features. The text is the program, so an edited function, helper or constant gives another
text and so another key: the cache never serves a program whose source changed.

Where: ``$SRCJAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/srcjax``, else ``~/.cache/srcjax``;
``SRCJAX_CACHE=0`` turns it off; ``SRCJAX_CACHE_MAX_BYTES`` caps its size (default 1 GiB; the
least recently used entries go first). The cache holds machine code that srcjax runs, so the
directory is created private (0700), an entry is read only when the file and its directory belong
to the user and nobody else can write them, every entry carries a SHA-256 of its contents, and
nothing is unpickled: an entry is a magic string, the checksum and XLA's serialized executable. A
corrupt, truncated, foreign or unreadable entry is ignored and rewritten; writes are atomic
(a temporary file renamed into place), so concurrent processes are safe.

A program's first compile stores its executable on a background thread (:func:`store_later`): the
caller gets its result without waiting for the serialization and the disk (3-5 ms of a first call);
a lookup of that key in this process, :func:`info`, :func:`clear` and the interpreter's exit wait
for it (:func:`flush`).
"""

from __future__ import annotations

import _thread
import atexit
import hashlib
import os
import platform
import stat
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["STATS", "CacheInfo", "cache_dir", "clear", "environment", "flush", "info", "load", "program_key",
           "store", "store_later"]

_MAGIC = b"SRCJAX-XLA-1\n"
_SUFFIX = ".xla"
# kind -> (magic, suffix): XLA executables, and the front end's results (``srcjax/warm_cache.py``: JSON)
# and srcjax's own helper executables (runtime/host_upload.py)
# and the normalized form of srcjax's library helpers (``srcjax/frontend/library_cache.py``: JSON)
# and vmap's batched copies of them (``srcjax/transforms/batch_copies.py``: JSON)
_KINDS = {"xla": (_MAGIC, _SUFFIX), "program": (b"SRCJAX-PROGRAM-1\n", ".prog"), "helper": (_MAGIC, ".hlp"),
          "normalized": (b"SRCJAX-NORMALIZED-1\n", ".norm"), "templates": (b"SRCJAX-TEMPLATES-1\n", ".tmpl"),
          "batched": (b"SRCJAX-BATCHED-1\n", ".bat")}
_SUFFIXES = tuple(suffix for _, suffix in _KINDS.values())
_DEFAULT_MAX = 1 << 30
_LOCK = threading.Lock()
_CPU: str | None = None
STATS = {"hits": 0, "misses": 0, "stores": 0}  # this process's lookups (tests and --cache-info read them)


def cache_dir() -> Path | None:
    """The cache's directory (not created here), or None when ``SRCJAX_CACHE=0``. (Remembered for the
    environment's values it is made of: a first call asks it ~60 times, each a few ``pathlib`` objects.)"""
    env = os.environ
    key = (env.get("SRCJAX_CACHE"), env.get("SRCJAX_CACHE_DIR"), env.get("XDG_CACHE_HOME"), env.get("HOME"))
    if key == _DIR[0]:
        return _DIR[1]
    found: Path | None
    if (key[0] or "1").strip().lower() in ("0", "false", "no", "off"):
        found = None
    elif key[1]:
        found = Path(key[1]).expanduser()
    else:
        found = Path(key[2] or str(Path.home() / ".cache")).expanduser() / "srcjax"
    _DIR[:] = [key, found]
    return found


_DIR: list[Any] = [None, None]  # (the environment's values cache_dir read, the directory they gave)


def _text(d: Path) -> str:
    """``str(d)``, remembered for the last directory :func:`cache_dir` gave."""
    if _DIR_TEXT[0] is not d:
        _DIR_TEXT[:] = [d, str(d)]
    return _DIR_TEXT[1]  # type: ignore[no-any-return]


_DIR_TEXT: list[Any] = [None, ""]


def _max_bytes() -> int:
    try:
        return max(0, int(os.environ.get("SRCJAX_CACHE_MAX_BYTES", _DEFAULT_MAX)))
    except ValueError:
        return _DEFAULT_MAX


def _cpu_features() -> str:
    """The host CPU's model and feature flags (machine code compiled for one CPU may not run on another)."""
    global _CPU
    if _CPU is None:
        found = ""
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith(("flags", "Features", "model name", "CPU implementer", "CPU part")):
                        found += line.strip() + "\n"
                    if not line.strip() and found:
                        break  # the first processor's entry is enough
        except OSError:
            pass
        _CPU = f"{platform.machine()}\n{platform.processor()}\n{found}"
    return _CPU


def environment(backend: Any) -> str:
    """What a program's machine code depends on besides its text: versions, platform, device, CPU."""
    import jaxlib

    version = getattr(sys.modules.get("srcjax"), "__version__", "?")  # (no import: srcjax imports this module)
    return "\0".join(("srcjax", version, "jaxlib", jaxlib.__version__, backend.platform,
                      str(getattr(backend.client, "platform_version", "")),
                      str(getattr(backend.device, "device_kind", "")), str(len(backend.device_list)),
                      _cpu_features())) + "\0" + _processes(backend)


def _processes(backend: Any) -> str:
    """Several processes: each one's own executable (its devices are the addressable ones)."""
    devs = backend.client.devices()
    if len(devs) == len(backend.client.local_devices()):
        return ""
    return f"process {backend.client.process_index()} of {len({d.process_index for d in devs})}\0"


def program_key(text: str, backend: Any, options: Any) -> str:
    """The cache key of compiling ``text`` with ``options`` for ``backend`` (hex SHA-256). XLA_FLAGS is
    part of it (as in jax's cache key): XLA's flags change the machine code and its numbers (fast math,
    optimization level, emitters), and an executable compiled under other flags is not this one."""
    h = hashlib.sha256()
    h.update(environment(backend).encode())
    h.update(" ".join(os.environ.get("XLA_FLAGS", "").split()).encode() + b"\0")
    h.update(options.SerializeAsString())
    h.update(b"\0")
    h.update(text.encode())
    return h.hexdigest()


def _private_dir(d: Path, create: bool) -> bool:
    """Whether ``d`` is a directory only its owner (this user) can write; made 0700 when ``create`` and absent
    (looked at first: ``mkdir`` of a directory that exists raises and is caught, each store of a first call)."""
    try:
        st = os.stat(_text(d))
    except FileNotFoundError:
        if not create:
            return False
        try:
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = os.stat(_text(d))
        except OSError:
            return False
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def load(key: str, count: bool = True, kind: str = "xla") -> bytes | None:
    """The serialized executable stored under ``key``, or None (absent, unsafe or corrupt: then removed);
    ``count=False`` leaves :data:`STATS` alone (srcjax's own helper programs)."""
    d = cache_dir()
    stats = STATS if count else {"hits": 0, "misses": 0}
    magic, suffix = _KINDS[kind]
    if d is None:
        return None
    _wait(key + suffix)
    if not _private_dir(d, create=False):  # absent yet, or others may write it
        stats["misses"] += 1
        return None
    path = _text(d) + os.sep + key + suffix  # (a string: each pathlib object is a few calls)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        stats["misses"] += 1
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            stats["misses"] += 1
            return None  # not ours, or others may write it: never run it (and never delete it)
        with os.fdopen(fd, "rb") as f:
            fd = -1
            data = f.read()
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    head = len(magic) + 32
    if len(data) < head or not data.startswith(magic) or \
            hashlib.sha256(data[head:]).digest() != data[len(magic):head]:
        _remove(path)
        stats["misses"] += 1
        return None
    try:
        os.utime(path)  # recently used (eviction removes the least recently used first)
    except OSError:
        pass
    stats["hits"] += 1
    return data[head:]


def store(key: str, blob: bytes, kind: str = "xla", directory: Path | None = None) -> None:
    """Store ``blob`` under ``key`` atomically; then keep the cache under its size cap. Never raises.
    ``directory``: the cache's directory when the store was asked for (:func:`store_later`), default now.
    On the writer thread (:func:`store_later`), the size tally is left for :func:`_write_untallied`: written
    when the writer has nothing to store and :data:`TALLY_EVERY` seconds have passed since the last, and by
    :func:`flush` (at exit): once for a first call's three or four stores, not after each."""
    d = directory if directory is not None else cache_dir()
    if d is None or not blob or not _private_dir(d, create=True):
        return
    magic, suffix = _KINDS[kind]
    data = magic + hashlib.sha256(blob).digest() + blob
    try:
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=suffix)
        try:
            with os.fdopen(fd, "wb") as f:  # (mkstemp made it 0600: only this user reads or writes it)
                f.write(data)
            os.replace(tmp, d / (key + suffix))
            STATS["stores"] += 1
        except BaseException:
            _remove(Path(tmp))
            raise
    except OSError:
        return
    _evict(d, _max_bytes(), len(data), threading.get_ident() != _WRITER[0])


# key + suffix -> set once its store_later is on the disk; the jobs not started yet, in order (one writer)
_PENDING: dict[str, threading.Event] = {}
_JOBS: deque[tuple[str, Callable[[], None], threading.Event]] = deque()
_WRITER: list[int | None] = [None]  # (the writer thread's ident, once started)
_WAKE = threading.Condition(_LOCK)


def store_later(key: str, make_blob: Callable[[], bytes], kind: str = "xla") -> None:
    """Store ``make_blob()`` under ``key`` as :func:`store` does, on srcjax's writer thread: the caller does
    not wait for the serialization and the disk, nor for a thread to start (one writer per process, started
    by the first store without waiting for it: a thread start per store cost a first call 1.5-11 ms of wall
    time on a loaded machine). Atomic as :func:`store` (a reader sees the whole entry or none); the
    interpreter's exit waits for the writes (:func:`flush`, at exit). Never raises."""
    name = key + _KINDS[kind][1]
    directory = cache_dir()  # (read now: the environment may change before the writer runs)
    if directory is None:
        return

    def write() -> None:
        store(key, make_blob(), kind, directory)

    done = threading.Event()
    with _WAKE:
        _PENDING[name] = done
        _JOBS.append((name, write, done))
        _WAKE.notify()
        if _WRITER[0] is None:
            _WRITER[0] = _thread.start_new_thread(_writer, ())


def _writer() -> None:
    while True:
        with _WAKE:
            while not _JOBS:
                _WAKE.wait()
            name, write, done = _JOBS.popleft()
        try:
            write()
        except Exception:  # noqa: BLE001 - the cache is an optimization: never fail because of it
            pass
        finally:
            with _WAKE:
                idle = not _JOBS
            if idle and _UNTALLIED and time.monotonic() - _TALLIED[0] >= TALLY_EVERY:
                try:
                    _write_untallied()
                except Exception:  # noqa: BLE001 - (as a store's: never stop the writer)
                    pass
            with _WAKE:
                if _PENDING.get(name) is done:
                    del _PENDING[name]
            done.set()


def _after_fork_in_child() -> None:
    """A child forked while the writer held the lock or was writing: that thread does not exist in the
    child (its parent finishes the writes); a fresh lock, no pending writes and no writer, or the child's
    first store would wait forever."""
    global _LOCK, _WAKE
    _LOCK = threading.Lock()
    _WAKE = threading.Condition(_LOCK)
    _PENDING.clear()
    _JOBS.clear()
    _UNTALLIED.clear()
    _WRITER[0] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _wait(name: str) -> None:
    done = _PENDING.get(name)
    if done is not None and threading.get_ident() != _WRITER[0]:
        done.wait()


def flush() -> None:
    """Wait until every :func:`store_later` of this process is on the disk."""
    if threading.get_ident() == _WRITER[0]:
        return
    for done in list(_PENDING.values()):
        done.wait()
    if _UNTALLIED:
        _write_untallied()


atexit.register(flush)  # (the writer is not joined at exit as a non-daemon thread would be)


def _entries(d: Path) -> list[tuple[float, int, str]]:
    out = []
    try:
        with os.scandir(d) as it:  # (os.scandir, not pathlib: a few ms, not ~30, for thousands of entries)
            for e in it:
                if not e.name.endswith(_SUFFIXES) or e.name.startswith("."):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                out.append((st.st_mtime, st.st_size, e.path))  # (a str: a Path each is ~half the scan)
    except OSError:
        return []
    return out


# directory -> (its size in bytes at the last scan plus what this process stored since, bytes stored since)
_SIZES: dict[Path, tuple[int, int]] = {}
# directories whose tally is behind _SIZES: the writer thread's stores (the tally is half of a store's CPU: a
# temporary file renamed into place, three or four times a first call), written by _write_untallied
_UNTALLIED: set[Path] = set()
TALLY_EVERY = 1.0  # seconds: the writer, when it has nothing to store, writes tallies left behind this often
_TALLIED = [time.monotonic()]  # when _write_untallied last ran (a process's first second: at exit, or later)
# the directory's size as the last process that stored into it knew it (a scan plus the stores since):
# a new process starts from it instead of scanning (a scan stats every entry: ~30-90 ms on a cache
# of 15,000 entries, paid by each new process's first compile). The writer thread's stores bring it up to
# date at most every TALLY_EVERY seconds and at exit (_write_untallied), direct stores and scans at once.
_TALLY = ".size"


def _evict(d: Path, cap: int, added: int = 0, write_tally: bool = True) -> None:
    """Keep ``d`` under ``cap`` bytes, least recently used entries first.

    The directory is scanned when the running estimate (the last scan plus the stores since, of this
    process and of earlier ones: the tally file) passes the cap, when this process has stored another
    1/32 of the cap since its last scan (other processes' stores, which a race may have left out of
    the tally), and when there is no tally to trust; not on every store, nor on every process's first
    store: a scan stats every entry, which on a cache of thousands of entries was most of a small
    program's first call. ``write_tally=False``: the tally is left for :func:`_write_untallied` (after a scan it is
    written at once).
    """
    with _LOCK:
        known = _SIZES.get(d)
        if known is None:
            tally = _read_tally(d)
            known = (tally, 0) if tally is not None else None
        if known is not None:
            total, since = known[0] + added, known[1] + added
            if total <= cap and since <= cap // 32:
                _SIZES[d] = (total, since)
                if write_tally:
                    _UNTALLIED.discard(d)
                    _write_tally(d, total)
                else:
                    _UNTALLIED.add(d)
                return
        entries = _entries(d)
        total = sum(size for _, size, _ in entries)
        if total > cap:
            for _, size, p in sorted(entries):  # oldest use first
                _remove(p)
                total -= size
                if total <= cap * 0.9:
                    break
        _SIZES[d] = (total, 0)
        _UNTALLIED.discard(d)
        _write_tally(d, total)


def _write_untallied() -> None:
    """Write the tallies the writer thread's stores left behind (each directory's size as this process knows it
    now). A process that dies before leaves its stores out of the tally, as a race between two processes may: the
    next scan (after 1/32 of the cap stored) counts them."""
    with _LOCK:
        _TALLIED[0] = time.monotonic()
        for d in list(_UNTALLIED):
            _UNTALLIED.discard(d)
            known = _SIZES.get(d)
            if known is not None:
                _write_tally(d, known[0])


def _read_tally(d: Path) -> int | None:
    """The tally's size in bytes; None when absent, unreadable, not a plain number, or not safely ours."""
    try:
        fd = os.open(d / _TALLY, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022 or st.st_size > 32:
            return None
        text = os.read(fd, 64).decode("ascii")
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)
    return int(text) if text.isdigit() and text.isascii() else None


def _write_tally(d: Path, total: int) -> None:
    """Write the tally atomically (a race between processes may lose a store from it, never corrupt it)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".size")
        try:
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(str(max(0, total)))
            os.replace(tmp, d / _TALLY)
        except BaseException:
            _remove(Path(tmp))
            raise
    except OSError:
        pass


def _remove(p: Path | str) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass


@dataclass
class CacheInfo:
    directory: Path | None
    entries: int
    bytes: int
    max_bytes: int


def info() -> CacheInfo:
    flush()
    d = cache_dir()
    entries = _entries(d) if d is not None else []
    return CacheInfo(d, len(entries), sum(size for _, size, _ in entries), _max_bytes())


def clear() -> int:
    """Remove every entry; the number removed."""
    d = cache_dir()
    if d is None:
        return 0
    flush()
    n = 0
    _SIZES.pop(d, None)
    _UNTALLIED.discard(d)
    _remove(d / _TALLY)
    for _, _, p in _entries(d):
        _remove(p)
        n += 1
    return n
