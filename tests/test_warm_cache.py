"""The level-2 persistent cache (issue #18, ``srcjax/warm_cache.py``): a new process that runs a
program an earlier one ran skips the front end; an edit to the function, to a helper in another
module, to a module constant (in the file or computed from the environment) is never served stale;
the cache-hit path gives the slow path's results (containers, static arguments, keywords)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

HELPER = "SCALE = {scale}\n\ndef inner(x):\n    return x * {factor}\n"
MAIN = textwrap.dedent("""
    import json
    import os
    import sys
    import numpy as np
    import srcjax
    from srcjax import warm_cache
    import helper

    OFFSET = {offset}
    SHIFT = float(os.environ.get("SHIFT", "0"))

    def f(x, n, scale=1.0):
        total = 0.0
        for i in range(n):
            total = total + np.sum(helper.inner(x) * helper.SCALE) * scale
        return total + OFFSET + SHIFT

    def loss(params, x):
        h = np.tanh(x @ params[0]["w"] + params[0]["b"])
        return np.mean((h @ params[1]["w"] + params[1]["b"] + OFFSET) ** 2)

    x = np.arange(3.0)
    rng = np.random.default_rng(0)
    params = [{{"w": rng.standard_normal((3, 4)), "b": np.zeros(4)}}, {{"w": rng.standard_normal((4, 2)), "b": np.ones(2)}}]
    g = srcjax.grad(f)
    vg = srcjax.value_and_grad(loss)
    jf = srcjax.jit(f, static_argnames="scale")
    out = {{
        "f2": float(jf(x, 2)), "f3": float(jf(x, 3, scale=2.0)),
        "g": np.asarray(g(x, 2)).tolist(),
        "vg": [float(vg(params, x[None])[0]), [{{k: np.asarray(v).tolist() for k, v in d.items()}}
                                               for d in vg(params, x[None])[1]]],
        "lazy": [g._lazy, vg._lazy], "stats": warm_cache.STATS,
    }}
    print(json.dumps(out))
""")


def _write(d: Path, scale=2.0, factor=3.0, offset=1.0) -> None:
    (d / "helper.py").write_text(HELPER.format(scale=scale, factor=factor))
    (d / "main.py").write_text(MAIN.format(offset=offset))


def _run(d: Path, cache: Path, **env: str) -> dict:
    # (no .pyc of helper.py: an edit of the same size within a second would be served its old bytecode)
    e = {**os.environ, "SRCJAX_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join([str(ROOT), str(d)]),
         "PYTHONDONTWRITEBYTECODE": "1", **env}
    if "SRCJAX_CACHE" not in env:
        e.pop("SRCJAX_CACHE", None)
    r = subprocess.run([sys.executable, str(d / "main.py")], capture_output=True, text=True, timeout=300, env=e)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _expected(scale=2.0, factor=3.0, offset=1.0, shift=0.0) -> tuple[float, float, list[float]]:
    s = 3.0 * factor * scale  # sum(x * factor) * scale at x = 0, 1, 2
    return 2 * s + offset + shift, 3 * s * 2.0 + offset + shift, [2 * factor * scale] * 3


def _loss(offset: float) -> float:
    rng = np.random.default_rng(0)
    w0, w1 = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    h = np.tanh(np.arange(3.0)[None] @ w0)
    return float(np.mean((h @ w1 + 1.0 + offset) ** 2))


def _check(out: dict, **consts: float) -> None:
    f2, f3, g = _expected(**consts)
    assert np.isclose(out["f2"], f2) and np.isclose(out["f3"], f3)
    np.testing.assert_allclose(out["g"], g)
    assert np.isclose(out["vg"][0], _loss(consts.get("offset", 1.0)))


@pytest.fixture(scope="module")
def cold(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    """The default program's cold first run, once per module (each a new interpreter that writes every program):
    its code directory (the cache's entries name its files), the cache it filled and its output."""
    base = tmp_path_factory.mktemp("warm")
    code, cache = base / "code", base / "cache"
    code.mkdir()
    _write(code)
    return code, cache, _run(code, cache)


def _after_cold(cold: tuple[Path, Path, dict], tmp_path: Path) -> tuple[Path, Path, dict]:
    """The cold run's code directory, a copy of its cache of this test's own and its output (a test that edits
    the code writes it back before it ends)."""
    code, cache, first = cold
    shutil.copytree(cache, tmp_path / "cache")
    return code, tmp_path / "cache", first


def test_a_second_process_skips_the_front_end_and_gets_the_same_results(cold, tmp_path):
    code, cache, first = _after_cold(cold, tmp_path)
    _check(first)
    assert first["stats"]["stores"] >= 4 and first["lazy"] == [False, False]
    second = _run(code, cache)
    assert second["stats"]["hits"] >= 4 and second["stats"]["misses"] == 0
    assert second["lazy"] == [True, True]  # the derivatives were never written in this process
    assert second["f2"] == first["f2"] and second["f3"] == first["f3"] and second["g"] == first["g"]
    assert second["vg"] == first["vg"]
    off = _run(code, cache, SRCJAX_CACHE="0")  # the slow path (no cache at all) gives the same numbers
    assert off["stats"]["hits"] == 0 and off["lazy"] == [False, False]
    np.testing.assert_allclose(off["vg"][0], first["vg"][0], rtol=1e-12)
    for a, b in zip(off["vg"][1], first["vg"][1]):
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-12)
    assert list(cache.glob("*.prog")) and all(p.stat().st_mode & 0o077 == 0 for p in cache.iterdir())


def test_edits_are_never_served_stale(cold, tmp_path):
    code, cache, first = _after_cold(cold, tmp_path)
    _check(first)
    try:
        for change in (dict(factor=5.0), dict(scale=4.0), dict(offset=7.0)):  # helper body, helper constant, constant
            _write(code, **change)
            out = _run(code, cache)
            _check(out, **change)
            assert out["lazy"] == [False, "offset" not in change]  # written again where they read what changed
            assert _run(code, cache)["stats"]["hits"] >= 4  # and cached again
            _write(code)
        _check(_run(code, cache, SHIFT="10"), shift=10.0)  # a constant computed from the environment: no file changed
        _check(_run(code, cache))
        text = (code / "main.py").read_text().replace("return total + OFFSET + SHIFT", "return total - OFFSET + SHIFT")
        (code / "main.py").write_text(text)  # the function itself
        out = _run(code, cache)
        assert np.isclose(out["f2"], _expected()[0] - 2.0)
    finally:
        _write(code)  # (the shared cold run's code, as its cache's entries read it)


def test_a_corrupt_entry_is_ignored_and_rewritten(cold, tmp_path):
    code, cache, first = _after_cold(cold, tmp_path)
    for p in cache.glob("*.prog"):
        data = p.read_bytes()
        p.write_bytes(data[:-20] + b"x" * 20)  # the checksum no longer matches
    out = _run(code, cache)
    assert out["f2"] == first["f2"] and out["vg"] == first["vg"] and out["lazy"] == [False, False]
    assert _run(code, cache)["stats"]["hits"] >= 4


CLOSURE = textwrap.dedent("""
    import json
    import numpy as np
    import srcjax
    from srcjax import warm_cache

    def make(k):
        def f(x):
            return np.sum(x * k)
        return f

    print(json.dumps([float(srcjax.jit(make(2.0))(np.ones(3))), float(srcjax.grad(make(3.0))(np.ones(3))[0]),
                      warm_cache.STATS["stores"]]))
""")


def test_closures_are_not_cached(tmp_path):
    (tmp_path / "main.py").write_text(CLOSURE)
    e = {**os.environ, "SRCJAX_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    e.pop("SRCJAX_CACHE", None)
    for _ in range(2):
        r = subprocess.run([sys.executable, str(tmp_path / "main.py")], capture_output=True, text=True, timeout=300,
                           env=e)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout) == [6.0, 3.0, 0]
    assert not list((tmp_path / "cache").glob("*.prog"))


PRINTS = textwrap.dedent("""
    import numpy as np
    import srcjax

    def f(x):
        print("x is", x)
        return x * 2

    print(np.asarray(srcjax.jit(f)(np.arange(3.0))).tolist())
""")


def test_regression_programs_that_print_are_not_served_from_another_process(tmp_path):
    # their host callbacks are named by ids of this process's table: a cached text would call the wrong one
    (tmp_path / "main.py").write_text(PRINTS)
    e = {**os.environ, "SRCJAX_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    e.pop("SRCJAX_CACHE", None)
    for _ in range(2):
        r = subprocess.run([sys.executable, str(tmp_path / "main.py")], capture_output=True, text=True, timeout=300,
                           env=e)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split("\n")[:2] == ["x is [0. 1. 2.]", "[0.0, 2.0, 4.0]"]
    assert not list((tmp_path / "cache").glob("*.prog"))


TWINS = textwrap.dedent("""
    import json
    import numpy as np
    import srcjax

    first, second = lambda x: x + 1.0, lambda y: np.sin(y) * 3.0
    scaled = [lambda x, k=k: x * k for k in (2.0, 5.0)]
    x = np.linspace(0.0, 1.0, 3)
    out = [np.asarray(srcjax.jit(f)(x)).tolist() for f in (first, second, *scaled)]
    out += [np.asarray(srcjax.grad(lambda v: np.sum(f(v)))(x)).tolist() for f in (first, second)]
    print(json.dumps(out))
""")


def test_functions_that_share_a_line_are_not_mixed_up(tmp_path):
    """Regression: the cache keyed functions by file, line and qualified name, so of two lambdas on one
    line the second was served the first's program (silently wrong, in the same process and in the
    next); functions made in a loop differing only in their defaults likewise."""
    code, cache = tmp_path / "code", tmp_path / "cache"
    code.mkdir()
    (code / "main.py").write_text(TWINS)
    x = np.linspace(0.0, 1.0, 3)
    want = [x + 1.0, np.sin(x) * 3.0, x * 2.0, x * 5.0, np.ones(3), np.cos(x) * 3.0]
    for _ in range(2):  # a cold and a warm process
        got = _run(code, cache)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12)


AUTO_STATIC = textwrap.dedent("""
    import json
    import sys
    import numpy as np
    import srcjax
    from srcjax import lax

    def pick(n, x):  # `n % 3` decides a branch: n becomes static (auto), one program per value
        return lax.cond(n % 3, lambda v: v + 1.0, lambda v: -v, x)

    f = srcjax.jit(pick)
    print(json.dumps([np.asarray(f(int(n), np.arange(3.0))).tolist() for n in sys.argv[1:]]))
""")


def test_regression_an_argument_made_static_by_an_entry_of_another_process(tmp_path):
    """Regression: a process reading the entry an earlier one wrote for another value of an argument that
    the front end makes static learned that the argument is static, then compiled the program for its own
    value under the key of the argument as dynamic: "Execution supplied 2 arguments but compiled program
    expected 1" on this call and every later one (found by two pytest-xdist workers sharing a cache)."""
    code, cache = tmp_path / "code", tmp_path / "cache"
    code.mkdir()
    (code / "main.py").write_text(AUTO_STATIC)
    x = np.arange(3.0)
    for order in (["0"], ["1", "0", "2"], ["2", "3", "1"], ["0", "4"]):
        e = {**os.environ, "SRCJAX_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
        e.pop("SRCJAX_CACHE", None)
        r = subprocess.run([sys.executable, str(code / "main.py"), *order], capture_output=True, text=True,
                           timeout=300, env=e)
        assert r.returncode == 0, r.stderr
        got = json.loads(r.stdout.strip().splitlines()[-1])
        for n, g in zip(order, got):
            np.testing.assert_allclose(g, x + 1.0 if int(n) % 3 else -x)


SCALE_READ = 2.5


def _reads_scale(x):
    return x * SCALE_READ


def test_a_lookup_remembered_while_reading_is_noted_again_in_a_recording_opened_since():
    """``Resolver.static_value`` remembers a node's value while one function is read (a call's spelling checks ask
    it of the same callee ~8 times): a recording of reads opened since still gets the global read noted, so what
    it guards (a cached program, a reused object) is checked against ``SCALE_READ`` too; in the same recording the
    value is not looked up again."""
    import libcst as cst

    from srcjax import warm_cache
    from srcjax.frontend.normalize import Normalizer
    from srcjax.frontend.read import read_function

    norm = Normalizer(read_function(_reads_scale), lambda f: f.__name__)
    node = cst.Name("SCALE_READ")
    key = (id(globals()), "SCALE_READ", id(SCALE_READ))
    outer, inner = warm_cache.Reads(), warm_cache.Reads()
    with warm_cache.recording(outer):
        assert norm.static_value(node) == (True, 2.5)
        assert key in outer.noted
        outer.noted.clear()
        assert norm.static_value(node) == (True, 2.5)  # remembered: not looked up (nor noted) again
        assert key not in outer.noted
        with warm_cache.recording(inner):
            assert norm.static_value(node) == (True, 2.5)
        assert key in inner.noted
    assert norm.static_value(cst.Name("SCALE_READ")) == (True, 2.5)  # another node: looked up


def test_a_name_looked_up_again_is_noted_again_in_a_recording_opened_since():
    """``Resolver.lookup`` remembers a name it found while one function is read (``np``, a helper's name: looked up
    at each use): in the same recording the note is not made again (it was made), a recording opened since gets
    it noted (what it guards is checked against ``SCALE_READ`` too), and a name not found is looked up again."""
    from srcjax import warm_cache
    from srcjax.frontend.normalize import Normalizer
    from srcjax.frontend.read import read_function

    norm = Normalizer(read_function(_reads_scale), lambda f: f.__name__)
    key = (id(globals()), "SCALE_READ", id(SCALE_READ))
    outer, inner = warm_cache.Reads(), warm_cache.Reads()
    with warm_cache.recording(outer):
        assert norm.lookup("SCALE_READ") == (True, 2.5)
        assert key in outer.noted
        outer.noted.clear()
        assert norm.lookup("SCALE_READ") == (True, 2.5)  # remembered: not looked up (nor noted) again
        assert key not in outer.noted
        with warm_cache.recording(inner):
            assert norm.lookup("SCALE_READ") == (True, 2.5)
        assert key in inner.noted
        assert norm.lookup("NOT_A_NAME_HERE") == (False, None)
        globals()["NOT_A_NAME_HERE"] = 1.0  # (found once it is there: a miss is not remembered)
        try:
            assert norm.lookup("NOT_A_NAME_HERE") == (True, 1.0)
        finally:
            del globals()["NOT_A_NAME_HERE"]
