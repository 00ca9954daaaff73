"""First calls (issue #18 item 4, issue #15): what makes a new function's first call cheap, and
that none of it changes what runs.

- The cyclic garbage collector is paused while the front end works (``srcjax/gc_pause.py``) and is
  back on after: on success, on a located error, and inside nested transformations; a collector the
  user turned off stays off.
- The persistent cache's size cap is kept without scanning the cache directory on every store
  (``runtime/disk_cache._evict``), and still evicts when the cap is passed.
- In-process caches never serve a stale program: a function redefined under the same name, an edited
  module re-imported, a changed module constant, other static arguments, closures and defaults.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
import textwrap
from pathlib import Path

import libcst as cst
import numpy as np
import pytest

import srcjax
from srcjax import gc_pause
from srcjax.lower import specialize as specialize_mod
from srcjax.runtime import disk_cache

# ------------------------------------------------------------------------------------------------
# the collector paused
# ------------------------------------------------------------------------------------------------


def test_paused_restores_the_collector_and_is_reentrant():
    assert gc.isenabled()
    with gc_pause.paused():
        assert not gc.isenabled()
        with gc_pause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner pause does not turn it back on early
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError):
        with gc_pause.paused():
            1 / 0  # noqa: B018
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_user_stays_off():
    gc.disable()
    try:
        with gc_pause.paused():
            pass
        assert gc.isenabled() is False
        assert gc_pause.pausing(lambda: 3)() == 3
        assert gc.isenabled() is False
    finally:
        gc.enable()


def _probe(monkeypatch) -> list[bool]:
    """Whether the collector was on, each time the specializer ran."""
    seen: list[bool] = []
    real = specialize_mod.specialize

    def spy(*a, **k):
        seen.append(gc.isenabled())
        return real(*a, **k)

    monkeypatch.setattr(specialize_mod, "specialize", spy)
    return seen


_X = np.linspace(0.1, 1.0, 4)


@pytest.mark.parametrize("make, x", [
    (lambda f: srcjax.compile(f), _X),
    (lambda f: srcjax.grad(f), _X),
    (lambda f: srcjax.vmap(srcjax.grad(f)), np.stack([_X, _X + 1])),
    (lambda f: srcjax.hessian(f), _X),
], ids=["compile", "grad", "vmap-grad", "hessian"])
def test_the_front_end_runs_with_the_collector_paused(make, x, monkeypatch):
    monkeypatch.setenv("SRCJAX_CACHE", "0")
    seen = _probe(monkeypatch)
    f = _fresh_function("def f(x):\n    return np.sum(np.tanh(x) * 3.25)\n")
    out = make(f)(x)
    assert gc.isenabled()
    assert seen and not any(seen)
    assert np.all(np.isfinite(np.asarray(out)))


def test_the_collector_is_back_on_after_a_located_error(monkeypatch):
    monkeypatch.setenv("SRCJAX_CACHE", "0")
    f = _fresh_function("def f(x):\n    return np.sum(x @ np.ones((3, 5)))\n")
    with pytest.raises(srcjax.TranspileError):
        srcjax.grad(f)(np.ones(4))
    assert gc.isenabled()


@pytest.mark.parametrize("make, x", [
    (lambda f: srcjax.hessian(f), _X),
    (lambda f: srcjax.vmap(srcjax.vmap(f, in_axes=(None, 0)), in_axes=(0, None)), (_X[:, None], _X[:, None])),
], ids=["hessian", "nested-vmap"])
def test_a_first_call_leaves_little_cyclic_garbage(make, x, monkeypatch):
    """Garbage in reference cycles waits for the collector, which then scans everything made since
    its last run: a recursive nested function per ``names_in`` call (or a class per call) made about
    14,000 such objects per first hessian (a third of its time went to collections after the pause)."""
    monkeypatch.setenv("SRCJAX_CACHE", "0")
    args = x if isinstance(x, tuple) else (x,)
    warm = _fresh_function("def f(x, y=1.0):\n    return np.sum(np.tanh(x) * 3.5 * y)\n")
    srcjax.lower(make(warm), *args)  # (the library helpers read and normalized once)
    f = _fresh_function("def f(x, y=1.0):\n    return np.sum(np.tanh(x) * 3.25 * y)\n")
    gc.collect()
    gc.disable()
    try:
        srcjax.lower(make(f), *args)
        found = gc.collect()
    finally:
        gc.enable()
    assert found < 2000, found


def test_the_front_ends_scratch_caches_are_dropped_when_the_pause_ends():
    from srcjax.frontend import ast_walk, parsed

    with gc_pause.paused():
        tree = parsed.parse("def g(x):\n    return x + 1\n")
        assert parsed.parse("def g(x):\n    return x + 1\n") is tree
        ast_walk.walked(tree)
        with gc_pause.paused():  # (an inner pause ends: the outer run goes on with its caches)
            pass
        assert parsed._TREES and ast_walk._WALKED
    assert not parsed._TREES and not ast_walk._WALKED
    f = _fresh_function("def f(x):\n    return np.sum(np.sin(x) * 2.75)\n")
    srcjax.hessian(f)(_X)
    assert not parsed._TREES and not ast_walk._WALKED


# ------------------------------------------------------------------------------------------------
# the persistent cache's size cap
# ------------------------------------------------------------------------------------------------


def test_stores_under_the_cap_scan_the_directory_once(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(cache))
    scans: list[int] = []
    real = disk_cache._entries
    monkeypatch.setattr(disk_cache, "_entries", lambda d: scans.append(1) or real(d))
    for n in range(6):
        disk_cache.store(f"{n:064x}", b"x" * 1000)
    assert len(list(cache.glob("*.xla"))) == 6
    assert len(scans) == 1  # the first store of this process; then the running estimate


def test_passing_the_cap_evicts_the_least_recently_used(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(cache))
    entry = len(disk_cache._MAGIC) + 32 + 1000
    monkeypatch.setenv("SRCJAX_CACHE_MAX_BYTES", str(3 * entry))
    for n in range(5):
        disk_cache.store(f"{n:064x}", b"x" * 1000)
        os.utime(cache / f"{n:064x}.xla", (1000 + n, 1000 + n))  # stored in this order, oldest first
    left = sorted(p.name for p in cache.glob("*.xla"))
    assert sum(p.stat().st_size for p in cache.glob("*.xla")) <= 3 * entry
    assert f"{4:064x}.xla" in left and f"{0:064x}.xla" not in left


def test_other_processes_stores_are_seen_after_a_share_of_the_cap(tmp_path, monkeypatch):
    """Another process fills the cache behind this one's back: this process rescans once it has
    stored 1/32 of the cap itself, and evicts."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(cache))
    entry = len(disk_cache._MAGIC) + 32 + 1000
    cap = 64 * entry
    monkeypatch.setenv("SRCJAX_CACHE_MAX_BYTES", str(cap))
    disk_cache.store("a" * 64, b"x" * 1000)  # this process's first store: scanned
    for n in range(80):  # "another process": files written directly
        (cache / f"{n:064x}.xla").write_bytes(b"y" * entry)
    for n in range(3):
        disk_cache.store(f"{n:063x}b", b"x" * 1000)
    assert sum(p.stat().st_size for p in cache.glob("*.xla")) <= cap


def _new_process(monkeypatch) -> list[int]:
    """This process forgets what it knew of cache sizes (as a new process would); the scans from now."""
    monkeypatch.setattr(disk_cache, "_SIZES", {})
    scans: list[int] = []
    real = disk_cache._entries
    monkeypatch.setattr(disk_cache, "_entries", lambda d: scans.append(1) or real(d))
    return scans


def _three_entries(tmp_path, monkeypatch):
    """A cache of three 1000-byte entries stored by one process: its directory, its tally file, an
    entry's size on disk."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(cache))
    entry = len(disk_cache._MAGIC) + 32 + 1000
    _new_process(monkeypatch)
    for n in range(3):
        disk_cache.store(f"{n:064x}", b"x" * 1000)
    return cache, cache / ".size", entry


def test_a_new_process_starts_from_the_tally_without_scanning(tmp_path, monkeypatch):
    cache, tally, entry = _three_entries(tmp_path, monkeypatch)
    assert int(tally.read_text()) == 3 * entry and tally.stat().st_mode & 0o077 == 0
    scans = _new_process(monkeypatch)
    disk_cache.store(f"{3:064x}", b"x" * 1000)
    assert scans == [] and int(tally.read_text()) == 4 * entry
    assert disk_cache.info().entries == 4  # (the tally is not an entry)
    assert disk_cache.clear() == 4 and not tally.exists()


@pytest.mark.parametrize("bad", ["", "12x", "-5", "9" * 40, "unsafe"])
def test_a_tally_not_to_trust_means_a_scan(tmp_path, monkeypatch, bad):
    cache, tally, entry = _three_entries(tmp_path, monkeypatch)
    if bad == "unsafe":  # others may write it
        tally.chmod(0o666)
    else:
        tally.write_text(bad)
    scans = _new_process(monkeypatch)
    disk_cache.store(f"{3:064x}", b"x" * 1000)
    assert scans == [1] and int(tally.read_text()) == 4 * entry


def test_a_tally_over_the_cap_evicts_in_a_new_process(tmp_path, monkeypatch):
    """Earlier processes' stores, told by the tally, count toward the cap of a new one."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(cache))
    entry = len(disk_cache._MAGIC) + 32 + 1000
    monkeypatch.setenv("SRCJAX_CACHE_MAX_BYTES", str(4 * entry))
    for n in range(4):  # four processes, one store each
        _new_process(monkeypatch)
        disk_cache.store(f"{n:064x}", b"x" * 1000)
        os.utime(cache / f"{n:064x}.xla", (1000 + n, 1000 + n))
    assert len(list(cache.glob("*.xla"))) == 4
    scans = _new_process(monkeypatch)
    disk_cache.store(f"{4:064x}", b"x" * 1000)
    left = sorted(p.name for p in cache.glob("*.xla"))
    assert scans == [1] and f"{0:064x}.xla" not in left and f"{4:064x}.xla" in left
    assert int((cache / ".size").read_text()) == sum(p.stat().st_size for p in cache.glob("*.xla"))


def test_the_writers_stores_write_the_tally_once_it_has_no_more(tmp_path, monkeypatch):
    """A first call's stores (the executable, the level-2 entry, ...) go to the writer thread together: the
    tally (a file renamed into place, half of a store's CPU) is written once the writer has none left, before
    flush() returns, not after each; a direct store after it writes it at once, as before."""
    import threading

    disk_cache.flush()
    cache, tally, entry = _three_entries(tmp_path, monkeypatch)
    scans = _new_process(monkeypatch)
    written: list[int] = []
    real = disk_cache._write_tally
    monkeypatch.setattr(disk_cache, "_write_tally", lambda d, total: written.append(total) or real(d, total))
    go = threading.Event()

    def first() -> bytes:  # (holds the writer until the other two are queued: one burst)
        go.wait(10)
        return b"x" * 1000

    disk_cache.store_later(f"{3:064x}", first)
    for n in (4, 5):
        disk_cache.store_later(f"{n:064x}", lambda: b"x" * 1000)
    go.set()
    disk_cache.flush()
    assert written == [6 * entry] and int(tally.read_text()) == 6 * entry and scans == []
    assert len(list(cache.glob("*.xla"))) == 6
    disk_cache.store(f"{6:064x}", b"x" * 1000)
    assert written == [6 * entry, 7 * entry] and int(tally.read_text()) == 7 * entry
    assert disk_cache.clear() == 7 and not tally.exists()


# ------------------------------------------------------------------------------------------------
# never a stale program
# ------------------------------------------------------------------------------------------------

_DIR: list[Path] = []
_N = [0]


def _fresh_module(text: str, name: str | None = None):
    """``text`` as a module imported from its own file (a new file, or ``name`` rewritten)."""
    if not _DIR:
        import tempfile

        _DIR.append(Path(tempfile.mkdtemp(prefix="srcjax_first_call_")))
    _N[0] += 1
    name = name or f"first_call_mod_{_N[0]}"
    path = _DIR[0] / f"{name}.py"
    path.write_text("import numpy as np\n" + textwrap.dedent(text))
    import linecache

    linecache.checkcache(str(path))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _fresh_function(text: str):
    return _fresh_module(text).f


@pytest.fixture
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("SRCJAX_CACHE", "0")


@pytest.mark.parametrize("with_disk_cache", [False, True])
def test_an_edited_module_reimported_gives_the_new_program(with_disk_cache, tmp_path, monkeypatch):
    if with_disk_cache:
        monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    else:
        monkeypatch.setenv("SRCJAX_CACHE", "0")
    name = f"first_call_edited_{with_disk_cache}"
    x = np.linspace(0.5, 2.0, 5)
    a = _fresh_module("def f(x):\n    return np.sum(x ** 2)\n", name)
    np.testing.assert_allclose(np.asarray(srcjax.grad(a.f)(x)), 2 * x)
    b = _fresh_module("def f(x):\n    return np.sum(x ** 3)\n", name)  # same file, same name, edited
    np.testing.assert_allclose(np.asarray(srcjax.grad(b.f)(x)), 3 * x ** 2)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(b.f))(np.stack([x, x]))), np.stack([3 * x ** 2] * 2))


def test_a_function_redefined_under_the_same_name(no_disk_cache):
    x = np.linspace(0.5, 2.0, 5)
    mod = _fresh_module("def f(x):\n    return np.sum(np.sin(x))\n\ng = f\n\ndef f(x):\n    return np.sum(np.cos(x))\n")
    np.testing.assert_allclose(np.asarray(srcjax.grad(mod.g)(x)), np.cos(x))
    np.testing.assert_allclose(np.asarray(srcjax.grad(mod.f)(x)), -np.sin(x))


def test_a_changed_module_constant(no_disk_cache):
    x = np.linspace(0.5, 2.0, 5)
    mod = _fresh_module("K = 2.0\n\ndef f(x):\n    return np.sum(K * x ** 2)\n")
    np.testing.assert_allclose(np.asarray(srcjax.grad(mod.f)(x)), 4 * x)
    mod2 = _fresh_module("K = 5.0\n\ndef f(x):\n    return np.sum(K * x ** 2)\n")
    np.testing.assert_allclose(np.asarray(srcjax.grad(mod2.f)(x)), 10 * x)


def test_static_arguments_closures_and_defaults(no_disk_cache):
    x = np.linspace(0.5, 2.0, 5)
    mod = _fresh_module("""
        def power(x, k):
            return np.sum(x ** k)

        def make(c):
            def f(x):
                return np.sum(c * x)
            return f

        def fns():
            return [lambda x, k=k: np.sum(x ** k) for k in (2.0, 3.0)]
    """)
    g = srcjax.grad(mod.power, argnums=0)
    np.testing.assert_allclose(np.asarray(srcjax.compile(mod.power, static_argnums=1)(x, 2)), np.sum(x ** 2))
    np.testing.assert_allclose(np.asarray(srcjax.compile(mod.power, static_argnums=1)(x, 3)), np.sum(x ** 3))
    np.testing.assert_allclose(np.asarray(g(x, 2.0)), 2 * x)
    np.testing.assert_allclose(np.asarray(srcjax.grad(mod.make(2.0))(x)), np.full(5, 2.0))
    np.testing.assert_allclose(np.asarray(srcjax.grad(mod.make(7.0))(x)), np.full(5, 7.0))
    sq, cube = mod.fns()
    np.testing.assert_allclose(np.asarray(srcjax.grad(sq)(x)), 2 * x)
    np.testing.assert_allclose(np.asarray(srcjax.grad(cube)(x)), 3 * x ** 2)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(cube))(np.stack([x, x]))), np.stack([3 * x ** 2] * 2))


# ------------------------------------------------------------------------------------------------
# the faster walks read the same nodes
# ------------------------------------------------------------------------------------------------


def test_node_classes_are_every_libcst_node_class():
    """``names.NODE_CLASSES`` (a set membership instead of the ABC ``isinstance``) knows every node
    class libcst defines, also those of modules imported after srcjax's."""
    import libcst as cst
    import libcst.matchers  # noqa: F401 - (more of libcst, loaded late)
    import libcst.metadata  # noqa: F401

    from srcjax.frontend.names import NODE_CLASSES, _subclasses

    assert _subclasses(cst.CSTNode) == NODE_CLASSES
    assert cst.Name in NODE_CLASSES and cst.SimpleWhitespace in NODE_CLASSES and str not in NODE_CLASSES


def test_walk_ast_is_ast_walk():
    import ast
    import inspect

    from srcjax.frontend.ast_walk import walk_ast
    from srcjax.transforms import simplify

    for tree in (ast.parse(inspect.getsource(simplify)), ast.parse("f(*a, x=[1, (2, {3: b})])[1:2, ...]")):
        want, got = list(ast.walk(tree)), list(walk_ast(tree))
        assert len(want) == len(got) and all(a is b for a, b in zip(want, got))


def test_walked_statements_are_their_own_walks():
    """``walked`` of a statement under a node walked before is cut from that walk (ast_walk._cut): the same
    nodes in ``ast.walk``'s order, for every statement at every depth, asked inner first or outer first."""
    import ast
    import inspect

    from srcjax.frontend import ast_walk
    from srcjax.transforms import simplify

    tree = ast.parse(inspect.getsource(simplify))
    want = list(ast.walk(tree))
    stmts = [s for s in want if isinstance(s, ast.stmt)]
    for order in (stmts, stmts[::-1]):
        with gc_pause.paused():
            got = ast_walk.walked(tree)
            assert len(got) == len(want) and all(a is b for a, b in zip(got, want))
            for s in order:
                mine, theirs = ast_walk.walked(s), list(ast.walk(s))
                assert len(mine) == len(theirs) and all(a is b for a, b in zip(mine, theirs))
                assert ast_walk.walked(s) is mine
                assert ast_walk.statements(s) == [n for n in theirs if isinstance(n, ast.stmt)]


def test_classes_checked_by_exact_type_have_no_subclasses():
    """normalize, binding_times, functionalize, locations, inline_lax, host_print, anf, activity, starred,
    integer_leaves, saved_constants and subscript_writes test
    these libcst classes with ``type(n) is ...`` (isinstance on a libcst class goes through ABCMeta): right only while
    libcst has no subclasses of them."""
    import libcst as cst

    from srcjax.frontend.functionalize import _BLOCKS
    from srcjax.frontend.normalize import UNSUPPORTED_EXPRESSIONS, UNSUPPORTED_STATEMENTS
    from srcjax.frontend.syntax import LITERAL_TYPES

    for c in (cst.Lambda, cst.Call, cst.Name, cst.Attribute, cst.FormattedString, cst.FunctionDef, cst.Else,
              cst.IndentedBlock, cst.SimpleStatementSuite, cst.Comparison, cst.Arg, *_BLOCKS, *LITERAL_TYPES,
              *UNSUPPORTED_EXPRESSIONS, *UNSUPPORTED_STATEMENTS, cst.Subscript, cst.BinaryOperation,
              cst.UnaryOperation, cst.BooleanOperation, cst.ListComp, cst.GeneratorExp, cst.IfExp, cst.Tuple, cst.List,
              cst.Dict, cst.For, cst.While, cst.Return, cst.SimpleStatementLine, cst.Integer, cst.Minus,
              cst.StarredElement, cst.Element, cst.Dict, cst.DictComp, cst.SetComp, cst.While, cst.Assign,
              cst.AugAssign, cst.Index, cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo):
        assert not c.__subclasses__(), c
    from srcjax.lower.hlo import HloValue
    from srcjax.lower.values import Undefined

    for c in (HloValue, Undefined):  # (lower/specialize.py: `type(v) is HloValue` where is_dynamic was a call)
        assert not c.__subclasses__(), c


def test_unsupported_expressions_are_still_refused(no_disk_cache):
    f = _fresh_function("def f(x):\n    return np.sum(x) + len({1, 2})\n")
    with pytest.raises(srcjax.TranspileError, match="sets"):
        srcjax.compile(f)(np.ones(3))
    g = _fresh_function("def f(x):\n    print(x)\n    return np.sum(x * 2.0)\n")
    np.testing.assert_allclose(np.asarray(srcjax.grad(g)(np.ones(3))), np.full(3, 2.0))


# ------------------------------------------------------------------------------------------------
# srcjax's library helpers, normalized once per installation (frontend/library_cache.py)
# ------------------------------------------------------------------------------------------------

_LIB_SRC = """
def f(x, w):
    return np.sum(np.tanh(w @ x) * x[::-1] + x[1:2] ** 2) * 1.5
"""


def _flush():
    from srcjax.runtime import disk_cache

    disk_cache.flush()


def _library_programs(f):
    x, w = np.linspace(0.1, 1.0, 6), np.linspace(-1.0, 1.0, 36).reshape(6, 6)
    made = [srcjax.hessian(f), srcjax.jacrev(srcjax.grad(f)), srcjax.vmap(srcjax.grad(f), in_axes=(0, None))]
    argss = [(x, w), (x, w), (np.stack([x, x + 1]), w)]
    return ([srcjax.lower(m, *a).as_text() for m, a in zip(made, argss)], [srcjax.source(m) for m in made],
            [np.asarray(m(*a)) for m, a in zip(made, argss)])


def test_library_helpers_from_the_disk_give_the_same_programs(tmp_path, monkeypatch):
    """A new process takes srcjax's normalized helpers from the persistent cache: the same StableHLO,
    source and numbers as normalizing them; their own source is read only when asked."""
    from srcjax import batch_shared
    from srcjax.frontend import program
    from srcjax.frontend.read import UnreadSource

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(program, "_LIBRARY", {})  # a new process
    hlo, src, out = _library_programs(_fresh_function(_LIB_SRC))
    _flush()  # (helpers are stored on a thread of their own)
    stored = list((tmp_path / "cache").glob("*.norm"))
    from srcjax.frontend.read import is_generated

    helpers = len([f for f in program._LIBRARY if not is_generated(f)])
    assert len(stored) >= 10 and helpers <= len(stored) <= helpers + len(batch_shared._SHARED)  # (vmap's copies)
    monkeypatch.setattr(program, "_LIBRARY", {})  # another new process
    hlo2, src2, out2 = _library_programs(_fresh_function(_LIB_SRC))
    loaded = [nf for f, nf in program._LIBRARY.items() if not is_generated(f)]
    assert loaded and all(isinstance(nf.source, UnreadSource) for nf in loaded)
    assert all("fdef" not in vars(nf.source) for nf in loaded)  # not read
    assert hlo2 == hlo and src2 == src
    for a, b in zip(out, out2):
        np.testing.assert_array_equal(a, b)
    nf = loaded[0]
    assert nf.source.fdef.name.value == nf.fn.__name__ and nf.source.span(nf.source.fdef.name) is not None  # on demand


def test_vmaps_shared_copies_of_helpers_from_the_disk_give_the_same_programs(tmp_path, monkeypatch):
    """vmap's shared batched copies of the helpers (``batch_shared.py``: ``matmul_rhs_bar_vmap``) normalized
    by an earlier process come from the persistent cache too: the same StableHLO (locations included),
    source and numbers; each loaded form is the one normalizing its copy gives, its spans in this process's
    module of the copy (named ``#N`` by a counter: another name in another process)."""
    import linecache
    import weakref

    from srcjax import batch_shared
    from srcjax.frontend import library_cache, program
    from srcjax.frontend.names import code, walk
    from srcjax.frontend.normalize import normalize
    from srcjax.frontend.read import UnreadSource
    from srcjax.generated import load_module

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    for _ in range(2):  # a new process, then another one: the copies come from the disk
        monkeypatch.setattr(program, "_LIBRARY", {})
        monkeypatch.setattr(batch_shared, "_SHARED", weakref.WeakValueDictionary())
        made = _library_programs(_fresh_function(_LIB_SRC))
        if _ == 0:
            first = made
    assert made[0] == first[0] and made[1] == first[1]
    for a, b in zip(first[2], made[2]):
        np.testing.assert_array_equal(a, b)
    copies = [c for c in batch_shared._SHARED.values() if program.library_form(c) is not None]
    loaded = [c for c in copies if isinstance(program.library_form(c).source, UnreadSource)]
    assert loaded, "no shared copy came from the disk"
    for c in loaded:  # the copy compiled again under another module's name, as another process does
        name = c.__name__
        filename = f"<srcjax.vmap shared {name} #another>"
        ns = dict(c.__globals__)
        exec(load_module(filename, "".join(linecache.getlines(c.__code__.co_filename)), {}), ns)  # noqa: S102
        again = ns[name]
        setattr(again, batch_shared.SHARED_ATTR, getattr(c, batch_shared.SHARED_ATTR))
        got, fresh = library_cache.load(again, name), normalize(again, lambda g, *_: g.__name__, name)
        assert got is not None and code(got.fdef) == code(fresh.fdef)
        spans = [[got.spans.get(id(n)) for n in walk(got.fdef)], [fresh.spans.get(id(n)) for n in walk(fresh.fdef)]]
        assert spans[0] == spans[1] and any(s is not None and s.filename == filename for s in spans[0])
        assert got.calls == fresh.calls and got.call_sites == fresh.call_sites and got.temps == fresh.temps
        assert got.source.names() == fresh.source.names() and got.source.def_span() == fresh.source.def_span()


def test_an_edited_srcjax_or_a_bad_entry_normalizes_the_helpers_again(tmp_path, monkeypatch):
    from srcjax import warm_cache
    from srcjax.frontend import library_cache, program
    from srcjax.frontend.read import UnreadSource, is_generated

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(program, "_LIBRARY", {})
    _library_programs(_fresh_function(_LIB_SRC))
    _flush()
    stored = sorted((tmp_path / "cache").glob("*.norm"))
    for p in stored[: len(stored) // 2]:  # corrupt: the checksum no longer matches
        p.write_bytes(p.read_bytes()[:-3] + b"xyz")
    monkeypatch.setattr(program, "_LIBRARY", {})
    _library_programs(_fresh_function(_LIB_SRC))
    kinds = {type(nf.source) for f, nf in program._LIBRARY.items() if not is_generated(f)}
    assert UnreadSource in kinds and len(kinds) == 2  # the corrupt ones normalized again (and rewritten)
    monkeypatch.setattr(warm_cache, "_FINGERPRINT", "another srcjax")  # an edited srcjax: other keys
    monkeypatch.setattr(program, "_LIBRARY", {})
    from srcjax import adjoint

    assert library_cache.load(adjoint.zeros_like, "zeros_like") is None
    _library_programs(_fresh_function(_LIB_SRC))
    assert not any(isinstance(nf.source, UnreadSource) for nf in program._LIBRARY.values())


def _same_reference(a, b):
    """library_cache._same as first written (isinstance at every node): the meaning the faster one keeps."""
    from srcjax.frontend import library_cache

    if a is cst.MaybeSentinel.DEFAULT or b is cst.MaybeSentinel.DEFAULT or \
            isinstance(a, library_cache._WHITESPACE) and isinstance(b, library_cache._WHITESPACE):
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_reference(x, y) for x, y in zip(a, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, cst.CSTNode):
        return all(_same_reference(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    return bool(a == b)


def test_same_tree_agrees_with_its_reference():
    """The type-classifying ``_same`` answers as the isinstance walk did, on pairs of srcjax.adjoint's
    functions: each against the others, a reprint of some, and itself with lists for tuples."""
    import inspect

    from srcjax import adjoint
    from srcjax.frontend import library_cache

    text = inspect.getsource(adjoint)
    defs = [n for n in cst.parse_module(text).body if isinstance(n, cst.FunctionDef)][:40]
    again = [n for n in cst.parse_module(text).body if isinstance(n, cst.FunctionDef)][:40]
    reprinted = [cst.parse_module(cst.Module(body=[d], default_indent="  ").code).body[0] for d in defs[:8]]
    listed = [d.with_changes(params=d.params.with_changes(params=list(d.params.params))) for d in defs]
    for a in defs:
        for b in defs + reprinted + listed[:8]:
            assert library_cache._same(a, b) == _same_reference(a, b)
    assert all(library_cache._same(a, b) and library_cache._same(b, c) for a, b, c in zip(defs, again, listed))
    swapped = cst.parse_expression("a * b + c"), cst.parse_expression("a * (b + c)")
    assert not library_cache._same(*swapped) and not _same_reference(*swapped)


def test_a_helper_that_reads_back_as_another_tree_is_not_kept(tmp_path, monkeypatch):
    """What is stored is text: a tree whose text parses as another tree (a missing parenthesis) is
    never stored (it would be another program)."""
    import libcst as cst

    from srcjax import adjoint
    from srcjax.frontend import library_cache
    from srcjax.frontend.normalize import normalize

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    nf = normalize(adjoint.zeros_like, lambda g, *_: g.__name__)
    a, b, c = (cst.Name(n) for n in "abc")
    prod = cst.BinaryOperation(cst.BinaryOperation(a, cst.Add(), b), cst.Multiply(), c)  # (a + b) * c, unparenthesized
    bad = nf.fdef.with_changes(body=cst.IndentedBlock(body=[cst.SimpleStatementLine([cst.Return(prod)])]))
    assert not library_cache._same(bad, cst.parse_module(cst.Module(body=[]).code_for_node(bad)).body[0])
    library_cache.store(type(nf)(name=nf.name, fn=nf.fn, fdef=bad, spans={}, source=nf.source))
    _flush()
    assert not list((tmp_path / "cache").glob("*.norm"))
    library_cache.store(nf)
    _flush()
    assert len(list((tmp_path / "cache").glob("*.norm"))) == 1
    back = library_cache.load(adjoint.zeros_like, "zeros_like")
    assert back is not None and library_cache._same(back.fdef, nf.fdef) and back.temps == nf.temps
    assert sorted(back.spans.values(), key=str) == sorted(nf.spans.values(), key=str)


def _stored_record(fn):
    """``fn`` (a library helper) normalized and stored in the disk cache the test set: ``(nf, key, record)``, the
    record as the cache holds it (JSON)."""
    import json

    from srcjax.frontend import library_cache
    from srcjax.frontend.normalize import normalize
    from srcjax.runtime import disk_cache

    nf = normalize(fn, lambda g, *_: g.__name__)
    library_cache.store(nf)
    _flush()
    key = library_cache._key(fn, nf.name)
    return nf, key, json.loads(disk_cache.load(key, count=False, kind="normalized").decode())


def test_a_helpers_stored_tree_is_its_texts_tree(tmp_path, monkeypatch):
    """A helper's tree is stored beside its text and rebuilt without the parser: the parsed text's tree
    exactly (whitespace, tuples); an entry whose tree names anything but a libcst node class, or none,
    is read from its text (the same tree)."""
    import json

    from srcjax import adjoint, batched
    from srcjax.frontend import library_cache
    from srcjax.frontend.read import parse_module
    from srcjax.runtime import disk_cache

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    for fn in (adjoint.matmul_rhs_bar, batched.batch_unbroadcast, adjoint.zeros_like):
        nf, key, record = _stored_record(fn)
        assert record["tree"] is not None
        parsed = parse_module(record["text"]).body[0]
        back = library_cache.load(fn, nf.name)
        assert back is not None and library_cache._identical(back.fdef, parsed)
        assert cst.Module(body=[back.fdef]).code == cst.Module(body=[parsed]).code
        assert sorted(back.spans.values(), key=str) == sorted(nf.spans.values(), key=str)
        for tree in ({**record["tree"], "types": ["Name", "Exception"]}, None):  # a foreign class; no tree
            disk_cache.store(key, json.dumps({**record, "tree": tree}).encode(), kind="normalized")
            again = library_cache.load(fn, nf.name)
            assert (again is None) == (tree is not None)
            assert again is None or library_cache._identical(again.fdef, parsed)
    wrong = cst.Name("x").with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    assert library_cache._tree(cst.Module(body=[]).with_changes(header=[wrong])) is None  # (not a tuple field)


def test_every_stored_helper_tree_is_its_texts_tree(tmp_path, monkeypatch):
    """The JSON tree of every helper (and vmap's shared copies) a hessian, a jacrev and a vmap(grad) store,
    rebuilt, is libcst's parse of the stored text, node class for node class, field for field, whitespace
    and tuples included (store does not compare them: this is the check)."""
    import json
    import weakref

    from srcjax import batch_shared
    from srcjax.frontend import library_cache, program
    from srcjax.frontend.read import parse_module
    from srcjax.runtime import disk_cache

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(program, "_LIBRARY", {})
    monkeypatch.setattr(batch_shared, "_SHARED", weakref.WeakValueDictionary())
    records = []
    store = disk_cache.store

    def keep(key, blob, kind="xla", directory=None):
        if kind == "normalized":
            records.append(json.loads(blob.decode()))
        return store(key, blob, kind, directory)

    monkeypatch.setattr(disk_cache, "store", keep)
    _library_programs(_fresh_function(_LIB_SRC))
    _flush()
    assert len(records) >= 10 and all(r["tree"] for r in records)
    for r in records:
        parsed = parse_module(r["text"]).body[0]
        rebuilt = library_cache._rebuild(json.loads(json.dumps(r["tree"])))
        assert library_cache._identical(rebuilt, parsed), r["name"]


def test_a_loaded_helpers_tree_is_rebuilt_when_first_read(tmp_path, monkeypatch):
    """A helper loaded from the disk cache rebuilds its tree and spans only when something reads them (a program
    normalizes every helper its functions call; some are never lowered): then the same as the helper
    normalized afresh; an entry whose tree is not a tree reads its text (the same tree)."""
    import dataclasses
    import json

    from srcjax import adjoint
    from srcjax.frontend import library_cache
    from srcjax.frontend.names import code, walk
    from srcjax.runtime import disk_cache

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    fn = adjoint.matmul_rhs_bar
    nf, key, record = _stored_record(fn)
    for tree in (record["tree"], {**record["tree"], "nodes": [[0, "not a field"]]}):
        disk_cache.store(key, json.dumps({**record, "tree": tree}).encode(), kind="normalized")
        back = library_cache.load(fn, nf.name)
        assert back is not None and "fdef" not in back.__dict__ and "spans" not in back.__dict__
        assert back.calls == nf.calls and back.temps == nf.temps and back.plain is None and back.loop_names == {}
        assert code(back.fdef) == code(nf.fdef) and back.fdef is back.fdef
        assert "_entry" not in back.__dict__  # (its JSON lists dropped once rebuilt: the collector walked them)
        assert [back.spans.get(id(n)) for n in walk(back.fdef)] == [nf.spans.get(id(n)) for n in walk(nf.fdef)]
        with pytest.raises(AttributeError):
            back.not_a_field  # noqa: B018
        fresh = library_cache.load(fn, nf.name)  # (dataclasses.replace before its tree was read: every field given)
        other = dataclasses.replace(fresh, plain=nf.fdef)
        assert other.plain is nf.fdef and code(other.fdef) == code(nf.fdef) and other.calls == nf.calls
        assert dataclasses.replace(other, temps=set()).spans == other.spans


def test_a_flat_tree_that_is_not_a_tree_reads_its_text(tmp_path, monkeypatch):
    """A helper's tree is stored flat (its nodes in pre-order, a child by its place): a stored tree whose
    places make a cycle, hold one node twice, leave a node unheld or a field unset, or hold a value that is
    no field's, is never rebuilt (its text is read: the same tree and spans as normalizing the helper)."""
    import json

    from srcjax import adjoint
    from srcjax.frontend import library_cache
    from srcjax.frontend.names import code, walk
    from srcjax.runtime import disk_cache

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    fn = adjoint.matmul_rhs_bar
    nf, key, record = _stored_record(fn)
    tree = record["tree"]
    nodes = tree["nodes"]
    assert len(tree["at"]) == len(record["spans"]) and len(nodes) > 10
    parent, field = next((k, i) for k, e in enumerate(nodes) for i, v in enumerate(e)
                         if i and type(v) is int and v > k + 1)  # a node holding a later one (not the next)
    child = nodes[parent][field]

    def changed(k, i, v):
        out = [list(e) for e in nodes]
        out[k][i] = v
        return out

    bad = [changed(parent, field, 0),  # a cycle: a node holding the root
           changed(parent, field, parent + 1),  # the next node held twice, `child` by nothing
           changed(parent, field, 1.5), changed(parent, field, [child, child]),  # a value; one node twice
           [e if k != child else e[:-1] for k, e in enumerate(nodes)],  # a field unset
           nodes + [[0] * len(nodes[0])]]  # a node held by no field
    rebuilt = library_cache._rebuild(tree)
    assert library_cache._identical(rebuilt, library_cache._rebuild(json.loads(json.dumps(tree))))
    for corrupt in bad:
        with pytest.raises((ValueError, IndexError)):
            library_cache._rebuild({**tree, "nodes": corrupt})
        disk_cache.store(key, json.dumps({**record, "tree": {**tree, "nodes": corrupt}}).encode(), kind="normalized")
        back = library_cache.load(fn, nf.name)
        assert back is not None and code(back.fdef) == code(nf.fdef)
        assert [back.spans.get(id(n)) for n in walk(back.fdef)] == [nf.spans.get(id(n)) for n in walk(nf.fdef)]
    disk_cache.store(key, json.dumps({**record, "tree": {**tree, "at": tree["at"][1:]}}).encode(), kind="normalized")
    back = library_cache.load(fn, nf.name)  # (places of the spans not the spans': found by walking the tree)
    assert [back.spans.get(id(n)) for n in walk(back.fdef)] == [nf.spans.get(id(n)) for n in walk(nf.fdef)]


def test_a_flat_trees_tokens_are_shared_leaves_and_its_names_written_inline(tmp_path, monkeypatch):
    """A stored helper's tree writes each distinct token or whitespace node once (a leaf: an operator, a comma,
    a parenthesis, a line's end; one node for every equal one when rebuilt) and a name without parentheses
    where it is held (no entry of its own): the same tree rebuilt, about half the entries. A name with a span
    keeps its entry. A leaf that holds a later leaf, a leaf of another class, a name written wrongly, or a count
    of names that is not the tree's is refused (its text is read: the same tree)."""
    import json

    from srcjax import adjoint
    from srcjax.frontend import library_cache
    from srcjax.frontend.names import code, walk
    from srcjax.frontend.read import parse_module
    from srcjax.runtime import disk_cache

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    fn = adjoint.matmul_rhs_bar
    nf, key, record = _stored_record(fn)
    tree = record["tree"]
    parsed = parse_module(record["text"]).body[0]
    every = list(walk(parsed))

    def count(n):
        return 1 + sum(map(count, n.children))

    def every_node(n):
        yield n
        for c in n.children:
            yield from every_node(c)

    assert len(tree["nodes"]) < count(parsed) // 2
    assert any(type(v) is dict and v for e in tree["nodes"] for v in e[1:])  # (names inline)
    assert {tree["types"][leaf[0]] for leaf in tree["leaves"]} >= {"Comma", "TrailingWhitespace"}
    rebuilt = library_cache._rebuild(tree)
    assert library_cache._identical(rebuilt, parsed)
    commas = [n for n in every_node(rebuilt) if type(n) is cst.Comma]
    assert len(commas) > 1 and len({id(n) for n in commas}) < len(commas)  # (shared)
    names = [n for n in every_node(rebuilt) if type(n) is cst.Name]
    assert len({id(n) for n in names}) == len(names)  # (never shared)
    name = next(n for n in every if type(n) is cst.Name)  # (a name with a span: an entry of its own)
    kept = library_cache._tree(parsed, [name])
    assert kept is not None and kept["types"].index("Name") in {e[0] for e in kept["nodes"]}
    assert library_cache._identical(library_cache._rebuild(kept), parsed)
    later = [list(leaf) for leaf in tree["leaves"]]
    holder = next(k for k, leaf in enumerate(later) if any(type(v) is int for v in leaf[1:]))
    later[holder] = [later[holder][0], *[v if type(v) is not int else -1 - holder for v in later[holder][1:]]]  # itself
    comma = next(k for k, leaf in enumerate(later) if tree["types"][leaf[0]] == "Comma")
    foreign = [list(leaf) for leaf in tree["leaves"]]
    foreign[comma][0] = tree["types"].index("FunctionDef")
    at, i = next((k, i) for k, e in enumerate(tree["nodes"]) for i, v in enumerate(e) if i and type(v) is dict and v)
    assert tree["names"] == sum(type(v) is dict and bool(v) for e in tree["nodes"] for v in e)
    for bad in ({**tree, "leaves": later}, {**tree, "leaves": foreign}, {**tree, "names": tree["names"] + 1},
                {**tree, "names": tree["names"] - 1}, {**tree, "names": "2"},
                *({**tree, "nodes": [e if k != at else [*e[:i], name_, *e[i + 1:]] for k, e in enumerate(tree["nodes"])]}
                  for name_ in ({"n": 1}, {"n": "x", "m": "y"}, {"x": "y"}))):
        with pytest.raises((ValueError, IndexError, KeyError)):
            library_cache._rebuild(json.loads(json.dumps(bad)))
        disk_cache.store(key, json.dumps({**record, "tree": bad}).encode(), kind="normalized")
        back = library_cache.load(fn, nf.name)
        assert back is not None and code(back.fdef) == code(nf.fdef)
        assert library_cache._identical(back.fdef, parsed)


def test_a_helper_normalized_under_another_name_of_a_callee_is_not_kept(tmp_path, monkeypatch):
    """A user function named like a helper the library helper calls (``zeros_like``) is the one renamed
    (``zeros_like_1``): the library helper keeps calling its own ``zeros_like``, so its normalized form,
    kept for every program, never names the user's function."""
    from srcjax import adjoint
    from srcjax.frontend import program

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(program, "_LIBRARY", {})
    mod = _fresh_module("""
from srcjax import adjoint

def zeros_like(x):
    return x * 0.0 + 1.0

def f(x):
    return np.sum(adjoint.zero_leaf(x) + zeros_like(x) * x)
""")
    x = np.linspace(0.0, 1.0, 5) ** 2
    np.testing.assert_allclose(np.asarray(srcjax.compile(mod.f)(x)), np.sum(x))
    kept = program._LIBRARY.get(adjoint.zero_leaf)
    assert kept is None or "zeros_like_1(" not in cst.Module(body=[kept.fdef]).code
    _flush()
    assert not any("zeros_like_1(" in p.read_text(errors="replace") for p in (tmp_path / "cache").glob("*.norm"))
    later = _fresh_module("""
from srcjax import adjoint

def g(x):
    return np.sum(adjoint.zero_leaf(x) + x)
""")
    np.testing.assert_allclose(np.asarray(srcjax.compile(later.g)(x)), np.sum(x))


# ------------------------------------------------------------------------------------------------
# nothing analysed twice
# ------------------------------------------------------------------------------------------------


def test_a_generated_function_is_normalized_once(no_disk_cache, monkeypatch):
    """hessian = jacfwd(grad(f)): the gradient's own Compiled and the plain one the Jacobian's JVP makes
    of the same generated function share its program (it was normalized twice)."""
    from srcjax.frontend import program as program_mod

    real = program_mod.normalize
    seen: list[str] = []

    def spy(fn, *a, **k):
        seen.append(fn.__name__)
        return real(fn, *a, **k)

    monkeypatch.setattr(program_mod, "normalize", spy)
    f = _fresh_function("def f(x):\n    return np.sum(np.sin(x) ** 2 * 1.625)\n")
    h = srcjax.hessian(f)
    np.testing.assert_allclose(np.asarray(h(_X)), np.diag(2 * np.cos(2 * _X) * 1.625), rtol=1e-6, atol=1e-12)
    generated = [n for n in seen if n != "f"]
    assert generated and len(generated) == len(set(generated)), seen
    # the derivative's program is the one its Compiled objects share, with what normalizing read
    from srcjax.api import _as_compiled
    from srcjax.autodiff import derivative_function

    g = derivative_function(f, "grad", 0)
    assert _as_compiled(g).program is g.__srcjax_program__


def test_an_instantiated_template_depends_only_on_its_names_texts(monkeypatch):
    from srcjax.transforms import templates

    built: list[object] = []
    real = templates.renamed
    monkeypatch.setattr(templates, "renamed", lambda *a: built.append(a) or real(*a))
    t = "out_bar * (x - x_dot) ** 2 * np.where(False, x, 2 - 1)"
    first = templates.instantiate(t, {"out_bar": "g", "x": "a + b", "x_dot": "t", "y": "unused"})
    assert first == "g * (a + b - t) ** 2 * 1" and len(built) == 1
    # remembered by the texts of its names only (other entries of the mapping change nothing) ...
    assert templates.instantiate(t, {"out_bar": "g", "x": "a + b", "x_dot": "t", "y": "other"}) == first
    assert len(built) == 1
    # ... and never for other texts, or for a tree given as a value
    assert templates.instantiate(t, {"out_bar": "g", "x": "a * b", "x_dot": "t"}) == "g * (a * b - t) ** 2 * 1"
    tree = cst.parse_expression("c - d")
    assert templates.instantiate(t, {"out_bar": "g", "x": tree, "x_dot": "t"}) == "g * (c - d - t) ** 2 * 1"
    assert templates.instantiate(t, {"out_bar": "h", "x": "a + b", "x_dot": "t"}) == "h * (a + b - t) ** 2 * 1"


def test_the_primitives_by_path_are_rebuilt_when_the_registry_changes(monkeypatch):
    from types import SimpleNamespace

    from srcjax.primitives import registry
    from srcjax.transforms.anf import primitive_paths

    paths = primitive_paths()
    assert primitive_paths() is paths and paths["np.tanh"] is registry.PRIMITIVES["tanh"]
    monkeypatch.setitem(registry.PRIMITIVES, "zz_probe", SimpleNamespace(path="np.zz_probe"))
    assert primitive_paths()["np.zz_probe"] is registry.PRIMITIVES["zz_probe"]
    monkeypatch.delitem(registry.PRIMITIVES, "zz_probe")
    assert "np.zz_probe" not in primitive_paths()
    before = primitive_paths()
    monkeypatch.setattr(registry, "_REGISTERED", [registry.registrations() + 1])  # (a primitive registered again)
    assert primitive_paths() is not before and primitive_paths() == before


def test_a_helpers_spans_are_kept_by_statement(tmp_path, monkeypatch):
    """A stored helper's spans are numbered among its statements only (library_cache._statements: walk's
    statements in walk's order, without walking expressions); helpers with branches and loops come back
    with every span on the statement it was on."""
    import inspect

    from srcjax import adjoint, batched
    from srcjax.frontend import library_cache
    from srcjax.frontend.names import walk
    from srcjax.frontend.normalize import normalize

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    compound = [(n, f) for m in (adjoint, batched) for n, f in sorted(vars(m).items())
                if inspect.isfunction(f) and f.__module__ == m.__name__ and not n.startswith("_")
                and any(k in inspect.getsource(f) for k in ("    if ", "    for ", "    while "))][:8]
    assert len(compound) == 8
    for name, fn in compound:
        nf = normalize(fn, lambda g, *_: g.__name__, name)
        stmts = library_cache._statements(nf.fdef)
        assert stmts == [n for n in walk(nf.fdef) if isinstance(n, cst.BaseStatement)], name
        assert any(isinstance(s, cst.BaseCompoundStatement) for s in stmts[1:]), name
        library_cache.store(nf)
        _flush()
        back = library_cache.load(fn, name)
        assert back is not None, name
        got = [back.spans.get(id(s)) for s in library_cache._statements(back.fdef)]
        assert got == [nf.spans.get(id(s)) for s in stmts] and len(back.spans) == len(nf.spans), name


_BLOCKS_SRC = '''
def f(x):
    a = [1]; b = []
    if x: c = [2]
    else: c = 3
    for i in range(3): d = [i]
    try:
        e = list(x)
    except E:
        e = []
    finally:
        g: list = []
    while x: h = [x]
    with m as q: k = [1]
    def inner(y):
        z = [y]
        return lambda w: w
    class C:
        attr = [1]
    match x:
        case 1:
            mm = [1]
    t, u = [1], [2]
    v += [3]
    return a
'''


def test_names_always_reads_the_statements_of_every_block():
    """numpy_calls.names_always walks statements and blocks only (names.statement_nodes): the names of a
    walk of every node, in the same order, for statements in every kind of block."""
    import inspect

    from srcjax.frontend import numpy_calls
    from srcjax.frontend.names import walk

    def every_node(body, test):  # (names_always as first written: a walk of every node)
        seen = {}
        for n in walk(body):
            if type(n) is cst.Assign:
                ok = test(n.value)
                for t in n.targets:
                    for part in numpy_calls._bound(t.target):
                        seen[part] = seen.get(part, True) and ok and type(t.target) is cst.Name
            elif type(n) in (cst.AugAssign, cst.AnnAssign, cst.For):
                for part in numpy_calls._bound(n.target):
                    seen[part] = False
        return {k for k, v in seen.items() if v}

    tree = cst.parse_module(inspect.getsource(numpy_calls) + _BLOCKS_SRC)
    defs = [n for n in walk(tree) if type(n) is cst.FunctionDef]
    assert numpy_calls.list_names_in(defs[-2].body) == {"a", "b", "c", "d", "e", "h", "k", "z", "attr", "mm"} - {"c"}
    for f in defs:
        for start in (f, f.body):
            for test in (lambda v: type(v) in (cst.List, cst.ListComp), lambda v: numpy_calls.boolean(v, set())):
                got, want = numpy_calls.names_always(start, test), every_node(start, test)
                assert got == want and list(got) == list(want), f.name.value
