"""vmap's batched copies of srcjax's helpers from the persistent cache (srcjax/transforms/batch_copies.py):
a new process takes the copies an earlier one wrote (the same source, StableHLO and numbers), never a
copy of an edited helper or of another srcjax, and writes a corrupt or foreign entry again."""

from __future__ import annotations

import types
import weakref

import numpy as np
import pytest

import srcjax
from tests.test_first_call import _fresh_function

_LOSS = """
def f(w, x, y):
    h = np.tanh(x @ w)
    return np.sum((h - y) ** 2 * 0.75) + np.max(h)
"""


def _args():
    rng = np.random.default_rng(5)
    return rng.standard_normal((5, 3)), rng.standard_normal((6, 5)), rng.standard_normal((6, 3))


def _new_process(monkeypatch):
    """This process as a new one: no copy, normalized helper or shared copy kept in memory."""
    from srcjax import batch_shared
    from srcjax.frontend import program
    from srcjax.transforms import batch_copies

    batch_copies.clear()
    monkeypatch.setattr(program, "_LIBRARY", {})
    monkeypatch.setattr(batch_shared, "_SHARED", weakref.WeakValueDictionary())


def _written(monkeypatch):
    """The helpers' copies the batcher writes from now on (by the helper's name)."""
    from srcjax.transforms.batch import Batcher

    written: list[str] = []
    real = Batcher.write_function
    monkeypatch.setattr(Batcher, "write_function",
                        lambda self, nf, *a, **k: written.append(nf.name) or real(self, nf, *a, **k))
    return written


def _run(monkeypatch):
    """A new process's per-example gradient: (helpers written, source, StableHLO, result)."""
    from srcjax.runtime import disk_cache

    _new_process(monkeypatch)
    written = _written(monkeypatch)
    g = srcjax.vmap(srcjax.grad(_fresh_function(_LOSS)), in_axes=(None, 0, 0))
    src, hlo, out = srcjax.source(g), srcjax.lower(g, *_args()).as_text(), np.asarray(g(*_args()))
    disk_cache.flush()
    return [n for n in written if n != "f_grad"], src, hlo, out


def test_a_new_process_takes_the_copies_from_the_disk(monkeypatch, tmp_path):
    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    written, src, hlo, out = _run(monkeypatch)
    assert "matmul_rhs_bar" in written and "max_bar" in written
    stored = list((tmp_path / "cache").glob("*.bat"))
    assert len(stored) == len(written)
    again, src2, hlo2, out2 = _run(monkeypatch)
    assert again == []  # (every copy from the disk)
    assert src2 == src and hlo2 == hlo
    np.testing.assert_array_equal(out2, out)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def ref(w, x, y):
        h = jnp.tanh(x @ w)
        return jnp.sum((h - y) ** 2 * 0.75) + jnp.max(h)

    want = jax.vmap(jax.grad(ref), in_axes=(None, 0, 0))(*_args())
    np.testing.assert_allclose(out2, np.asarray(want), rtol=1e-10, atol=1e-12)


def test_another_srcjax_or_an_edited_helper_is_never_served(monkeypatch, tmp_path):
    from srcjax import adjoint, warm_cache
    from srcjax.frontend import library_cache

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    written, src, _, _ = _run(monkeypatch)
    monkeypatch.setattr(warm_cache, "_FINGERPRINT", "an edited srcjax")  # (srcjax's files: names, sizes, times)
    again, src2, _, out2 = _run(monkeypatch)
    assert sorted(again) == sorted(written) and src2 == src  # (written again, the same text)
    # an edited helper (its code, same module and name) is another key
    fn = adjoint.max_bar
    code = compile("def max_bar(x, out, g):\n    return g * 2.0\n", fn.__code__.co_filename, "exec").co_consts[0]
    edited = types.FunctionType(code, fn.__globals__, "max_bar")
    edited.__module__, edited.__qualname__ = fn.__module__, fn.__qualname__
    key = library_cache.helper_key(fn, "max_bar")
    assert key is not None and library_cache.helper_key(edited, "max_bar") not in (None, key)


def test_a_corrupt_or_foreign_entry_is_written_again(monkeypatch, tmp_path):
    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    written, src, hlo, out = _run(monkeypatch)
    stored = sorted((tmp_path / "cache").glob("*.bat"))
    assert len(stored) >= 2
    blobs = {p: p.read_bytes() for p in stored}
    stored[0].write_bytes(blobs[stored[1]])  # foreign: another copy's entry (checksummed) under this key
    stored[1].write_bytes(blobs[stored[1]][:-3] + b"xyz")  # corrupt: its checksum no longer matches
    again, src2, hlo2, out2 = _run(monkeypatch)
    assert len(again) == 2 and src2 == src and hlo2 == hlo
    np.testing.assert_array_equal(out2, out)
    assert {p: p.read_bytes() for p in stored} == blobs  # (rewritten)
    assert _run(monkeypatch)[0] == []


def test_states_read_back_as_written():
    from srcjax.transforms import batch_copies
    from srcjax.transforms.batch_state import Repeated, Stack, Tree

    for s in (True, False, Tree("dict", (("'w'", True), ("'b'", Tree("tuple", (("0", False),))))),
              Stack((True, False, Tree("record", ((".w", True),)))), Repeated((True,)), Stack(())):
        back = batch_copies._json_state(batch_copies._state_json(s))
        assert back == s and type(back) is type(s)
    for bad in (None, 1, "tree", ["tree", "dict"], ["stack", [1]], ["tree", "dict", [["a"]]], {"x": 1}):
        with pytest.raises(ValueError):
            batch_copies._json_state(bad)
    with pytest.raises(TypeError):
        batch_copies._state_json(None)  # type: ignore[arg-type]
