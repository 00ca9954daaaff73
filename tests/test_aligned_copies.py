"""srcjax's private copies of NumPy arguments are aligned for jaxlib's upload to alias them
(``srcjax/aligned_copies.py``; issue #18, np48): one copy a call, where an unaligned copy (NumPy's ``malloc``,
``np.frombuffer`` of joined bytes) was copied again by XLA's CPU client. The values a call gives for NumPy inputs
of every dtype and layout stay what NumPy gives, and a write to an argument after the call never reaches it."""

from __future__ import annotations

import ml_dtypes  # noqa: F401  (the dispatcher starts once ml_dtypes is imported: cpp_budget.BUDGET)
import numpy as np
import pytest

import srcjax
from srcjax import aligned_copies, cpp_calls, packed_calls
from srcjax.runtime import cpp_dispatch

_ALIGN = aligned_copies.ALIGN


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _big(rng, shape=(300, 200), dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


@pytest.fixture
def packing(monkeypatch):
    """Packing after two copied calls; jax, if imported, with x64 off (tests/test_packed_calls.py's)."""
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    monkeypatch.setattr(packed_calls, "AFTER", 2)
    monkeypatch.setattr(cpp_dispatch, "x64_state", lambda: None)


def test_copy_is_aligned_from_large_and_equal_for_every_layout():
    rng = np.random.default_rng(0)
    big = _big(rng)
    for x in (big, np.asfortranarray(big), big[::2, ::3], big.T, big.astype(np.float32), big > 0,
              (big * 100).astype(np.int8)):
        c = aligned_copies.copy(x)
        assert c.dtype == x.dtype and c.shape == x.shape and c.flags.c_contiguous and c.flags.writeable
        np.testing.assert_array_equal(c, x)
        assert not np.shares_memory(c, x)
        if x.nbytes >= aligned_copies.LARGE:
            assert _address(c) % _ALIGN == 0
    for x in (np.float64(2.5) * np.ones(()), np.arange(5), np.array([], np.float32)):  # (small: x.copy())
        c = aligned_copies.copy(x)
        np.testing.assert_array_equal(c, x)
        assert c.shape == x.shape and not np.shares_memory(c, x)


def test_joined_is_aligned_in_c_order_and_refuses_another_dtype():
    a = np.arange(6000.0).reshape(60, 100)
    b = np.asfortranarray(np.arange(5000.0).reshape(50, 100))
    j = aligned_copies.joined((a, b), np.dtype(np.float64), 11000)
    assert _address(j) % _ALIGN == 0
    np.testing.assert_array_equal(j, np.concatenate([a.ravel(), b.ravel()]))
    with pytest.raises(TypeError):
        aligned_copies.joined((a, b.astype(np.float32)), np.dtype(np.float64), 11000)


def test_large_private_copies_are_aligned_for_the_upload_to_alias_them():
    """The copies' route (before a packer): each large NumPy argument's copy starts at a 64-byte boundary,
    which XLA's CPU client aliases (NumPy's own copy of an 800 KB array starts 16 bytes into a page: copied
    again by the upload, every call)."""
    rng = np.random.default_rng(1)
    args = ({"w": _big(rng), "v": [_big(rng), _big(rng, (70, 90))]}, _big(rng, (400, 100)))
    flatten = cpp_dispatch.default_flatten()
    copies = cpp_calls._private_copies(args, flatten, cpp_dispatch.Array, lambda: True, _Idle())
    for c, x in zip(flatten(copies)[0], flatten(args)[0]):
        np.testing.assert_array_equal(c, x)
        assert not np.shares_memory(c, x) and _address(c) % _ALIGN == 0
    tops = cpp_calls._top_copies(args, cpp_dispatch.Array, lambda: True)
    assert tops is not None
    assert _address(tops[1]) % _ALIGN == 0 and not np.shares_memory(tops[1], args[1])
    np.testing.assert_array_equal(tops[1], args[1])


class _Idle:
    """``runtime/host_upload``'s stand-in: srcjax's own upload is not avoiding ml_dtypes."""

    @staticmethod
    def active() -> bool:
        return False


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosen_tree(t):
    return rosen(t["x"]) + rosen(t["y"])


def _handed(f, *args):
    """The arrays the packed route of ``f`` hands its dispatcher for the call ``args`` (after packing)."""
    for _ in range(6):
        f(*args)
    packed_calls.wait(60)
    f(*args)
    route = f.__dict__.get("_dispatch")
    assert getattr(route, "__name__", "") == "direct", route
    scope, seen = route.__globals__, []
    cpp = scope["cpp"]
    scope["cpp"] = lambda *a: seen.append(a) or cpp(*a)
    try:
        out = f(*args)
    finally:
        scope["cpp"] = cpp
    assert len(seen) == 1
    return seen[0], out


def test_large_packed_arrays_are_aligned_for_the_upload_to_alias_them(packing):
    """The packed routes (``TopPacker``: NumPy arguments; ``Packer``: NumPy leaves in containers) hand their
    dispatcher one aligned copy per dtype (the joined bytes, ``np.frombuffer``, were never 64-byte aligned)."""
    rng = np.random.default_rng(2)
    x = _placed(rng.standard_normal(100_000), 16)  # (an aligned one is read in place: the test below)
    g = srcjax.grad(rosen)
    handed, out = _handed(g, x)
    assert _address(handed[0]) % _ALIGN == 0 and not np.shares_memory(handed[0], x)
    np.testing.assert_allclose(np.asarray(out), np.asarray(g._call((x,), {})), rtol=1e-12)
    t = {"x": rng.standard_normal(30_000), "y": rng.standard_normal(20_000)}
    gt = srcjax.grad(rosen_tree)
    handed, out = _handed(gt, t)
    assert _address(handed[0]) % _ALIGN == 0 and handed[0].shape == (50_000,)
    want = gt._call((t,), {})
    for k in t:
        np.testing.assert_allclose(np.asarray(out[k]), np.asarray(want[k]), rtol=1e-12)


def _placed(a: np.ndarray, offset: int) -> np.ndarray:
    """A C-contiguous copy of ``a`` whose data start ``offset`` bytes past a 64-byte boundary."""
    raw = np.empty(a.nbytes + 2 * _ALIGN, np.uint8)
    start = (offset - _address(raw)) % _ALIGN
    out = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def same_and_sum(x):
    return x, np.sum(x * x)  # (the sum makes the program asynchronous; the first result is the argument)


@pytest.mark.parametrize("f", [rosen, same_and_sum], ids=["rosen", "same_and_sum"])
def test_an_aligned_argument_is_read_in_place_and_its_call_waits(packing, f):
    """Round np49: the packed route hands the caller's own C-contiguous array at a 64-byte boundary to the upload
    (which then copies nothing, as for jax.jit) and returns once the program has finished: a write to the
    array right after the call changes neither that call's results nor any earlier one's, and the next call
    reads the new values. A result that is the argument itself is a buffer of its own."""
    rng = np.random.default_rng(5)
    x = _placed(rng.standard_normal(100_000), 0)
    g = srcjax.grad(f) if f is rosen else srcjax.jit(f)
    handed, out = _handed(g, x)
    assert np.shares_memory(handed[0], x)  # (main: an aligned copy)
    first = cpp_dispatch.flatten(out)[0]
    assert first.is_ready()  # (the call waited for its program)
    want = f(x.copy()) if f is same_and_sum else np.asarray(g._call((x.copy(),), {}))
    outs = [out]
    for _ in range(3):
        outs.append(g(x))
        x[:] = rng.standard_normal(x.shape)  # (right after the call)
        now = x.copy()
        for o in outs:
            for got, w in zip(cpp_dispatch.flatten(o), cpp_dispatch.flatten(want)):
                np.testing.assert_allclose(np.asarray(got), np.asarray(w), rtol=1e-12)
        want = f(now) if f is same_and_sum else np.asarray(g._call((now,), {}))
        outs = [g(x)]


def twice(x):
    return x + x


_DTYPES = (np.float64, np.float32, np.float16, np.int64, np.int32, np.int8, np.uint8, np.bool_, np.complex64,
           np.complex128)


def _inputs(dtype):
    rng = np.random.default_rng(3)
    base = (rng.standard_normal((256, 160)) * 50).astype(dtype)  # (40960 elements: large for every dtype here)
    frozen = base.copy()
    frozen.flags.writeable = False
    small = base[:3, :4].copy()
    return {"C": base, "F": np.asfortranarray(base), "strided": base[::2, ::2], "transposed": base.T,
            "read-only": frozen, "0-d": np.asarray(base[1, 1]), "small": small}


@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: np.dtype(d).name)
def test_numpy_inputs_of_every_dtype_and_layout_give_numpys_values(packing, dtype):
    """Through every route the calls take (the first calls, the copies, the packed program), NumPy inputs of
    each dtype, C and Fortran order, strided, transposed, read-only, 0-d and small give exactly NumPy's
    result; the caller's array is left as it was, and a write to it after the call never reaches the result."""
    for name, x in _inputs(dtype).items():
        f = srcjax.jit(twice)
        want = twice(x)
        before = x.copy()
        for _ in range(8):
            arg = x.copy(order="K") if x.flags.writeable else x
            if name in ("strided", "transposed"):
                arg = x  # (the same view each call: its layout is what is tested)
            out = f(arg)
            if arg is not x:
                arg[...] = 0  # (right after the call)
            got = np.asarray(out)
            assert got.dtype == want.dtype and got.shape == want.shape, name
            np.testing.assert_array_equal(got, want, err_msg=name)
        packed_calls.wait(60)
        np.testing.assert_array_equal(x, before, err_msg=name)


@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: np.dtype(d).name)
def test_writes_after_calls_never_reach_results_for_any_placement(packing, dtype):
    """Round np49: each dtype's argument at a 64-byte boundary (read in place, the call waiting), 16 bytes past
    one (copied), read-only at a boundary (its owner makes it writeable again and writes), Fortran order and
    strided: the caller writes its array right after every call, through every route (first calls, copies,
    packed); every result stays its own call's values."""
    base = _inputs(dtype)["C"]
    for name in ("a64", "a16", "read-only a64", "F", "strided"):
        f = srcjax.jit(twice)
        x = _placed(base, 16 if name == "a16" else 0)
        if name == "F":
            x = np.asfortranarray(base)
        elif name == "strided":
            x = _placed(np.repeat(base, 2, axis=1), 0)[:, ::2]
        outs = []
        for k in range(12):
            if k == 6:
                packed_calls.wait(60)  # (the packed program ready: the later calls take the packed route)
            x.flags.writeable = False if name.startswith("read-only") else True
            want = twice(x)
            out = f(x)
            x.flags.writeable = True
            x[...] = np.roll(x, 1, axis=0)  # (right after the call)
            outs.append((out, want))
        for k, (out, want) in enumerate(outs):
            np.testing.assert_array_equal(np.asarray(out), want, err_msg=f"{name} call {k}")


def chain_each(a, b):
    return (a @ b) @ b  # (slow enough to run asynchronously, long after the call returns)


@pytest.mark.parametrize("route", ["copies", "packed"])
def test_calls_in_flight_never_share_a_copy(packing, monkeypatch, route):
    """Calls made one after another without reading their results (their programs queued, each reading the
    aligned copy of its own arguments, written by the caller right after): every result is its own arguments', never another call's."""
    if route == "copies":
        monkeypatch.setattr(packed_calls, "AFTER", 10**9)
    f = srcjax.jit(chain_each)
    rng = np.random.default_rng(4)
    b = (rng.standard_normal((400, 400)) / 20).astype(np.float32)
    inputs = [rng.standard_normal((400, 400)).astype(np.float32) for _ in range(12)]
    for a in inputs[:4]:
        np.asarray(f(a.copy(), b))
    packed_calls.wait(60)
    for _ in range(3):
        outs = []
        for a in inputs:
            arg = a.copy()
            outs.append(f(arg, b))
            arg[:] = np.nan  # (right after the call)
        for a, out in zip(inputs, outs):
            np.testing.assert_allclose(np.asarray(out), chain_each(a, b), rtol=2e-3, atol=2e-3)
