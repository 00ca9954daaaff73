"""NumPy arguments packed into one array per dtype for a program that unpacks them (``srcjax/packed_calls.py``,
``srcjax/lower/packed.py``; issue #18): after ``packed_calls.AFTER`` calls copying NumPy leaves, a function's
calls go to a packed program compiled on its own thread. Its results are the Python path's; a NumPy argument
written right after a call (from this thread or others) never changes that call's result; calls of another
structure, kind, shape or dtype go back to the other dispatchers, and errors stay located at the user's line."""

from __future__ import annotations

import threading

import ml_dtypes  # noqa: F401  (the dispatcher starts once ml_dtypes is imported: cpp_budget.BUDGET)
import numpy as np
import pytest

import srcjax
from srcjax import packed_calls
from srcjax.lower.packed import packed_text


def mlp_loss(params, x, y):
    h = x
    for layer in params[:-1]:
        h = np.tanh(h @ layer["w"] + layer["b"])
    out = h @ params[-1]["w"] + params[-1]["b"]
    return np.mean((out - y) ** 2)


def mlp_loss_again(params, x, y):  # (a function of its own: srcjax.value_and_grad(f) is one object across tests)
    return mlp_loss(params, x, y)


def mlp_loss_third(params, x, y):
    return mlp_loss(params, x, y)


def chain(t):
    a, b = t["a"], t["b"]
    return a[0, 0] * 1.0, (a @ b) @ b  # (slow enough to run asynchronously, long after the call returns)


def labelled(t, x):
    return np.sum(np.tanh(t["w"] @ x)) + np.sum(t["k"] * 2), t["k"] + 1  # (float32 and int32 leaves: two packed
    # arrays)


@pytest.fixture
def packing(monkeypatch):
    """Packing after two copied calls; jax, if imported, with x64 off (the float32 copies' path)."""
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    monkeypatch.setattr(packed_calls, "AFTER", 2)
    from srcjax.runtime import cpp_dispatch

    monkeypatch.setattr(cpp_dispatch, "x64_state", lambda: None)  # (no per-thread x64 flag: tests/test_cpp_wide.py)


def _params(rng, sizes):
    return [{"w": (rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), "b": np.zeros(b, np.float32)}
            for a, b in zip(sizes[:-1], sizes[1:])]


def _packed(f, *args, **kwargs):
    """Call ``f`` until its calls are packed (its packer compiled), and say whether the next one is."""
    for _ in range(6):  # (the first, the second's miss, then AFTER calls copying)
        f(*args, **kwargs)
    packed_calls.wait(60)
    f(*args, **kwargs)
    call, packed = packed_calls.Packer.call, [0]  # (TopPacker's too)

    def counted(self, a):
        out = call(self, a)
        packed[0] += out is not packed_calls.MISS
        return out

    route = _direct_route(f)
    scope = route.__globals__ if route is not None else {}  # (Packer.direct's)
    cpp = scope.get("cpp")
    if cpp is not None:
        scope["cpp"] = lambda *a: packed.__setitem__(0, packed[0] + 1) or cpp(*a)
    packed_calls.Packer.call = counted
    try:
        f(*args, **kwargs)
    finally:
        packed_calls.Packer.call = call
        if cpp is not None:
            scope["cpp"] = cpp
    return packed[0] == 1


def _direct_route(f):
    """``f``'s packed route (``Packer.direct``, ``TopPacker.direct``) where its calls take it: its dispatch, or
    where the route in front of it hands them on (``cpp_calls.attach``'s ``filling``, ``static_call``,
    ``binding``); or None."""
    for name in ("_dispatch", "_fill_next", "_static_next"):
        fn = f.__dict__.get(name)
        if getattr(fn, "__name__", "") == "direct":
            return fn
        cells = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ()))) \
            if hasattr(fn, "__code__") else {}
        front = cells.get("front_next")
        if front and getattr(front[0], "__name__", "") == "direct":
            return front[0]
    return None


def _packer(f):
    """``f``'s packer (``cpp_calls.attach``'s ``packing``), read from its dispatch's closure."""
    fn = f.__dict__["_dispatch"]
    if fn.__name__ == "direct":  # (Packer.direct, TopPacker.direct)
        return fn.__globals__["pk"]
    return dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__)))["packing"][0]


def _same(a, b):
    la, ta = srcjax.tree_util.tree_flatten(a)
    lb, tb = srcjax.tree_util.tree_flatten(b)
    assert ta == tb
    for u, v in zip(la, lb):
        assert np.asarray(u).dtype == np.asarray(v).dtype and np.asarray(u).shape == np.asarray(v).shape
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-6, atol=1e-7)


def test_packed_calls_match_the_python_path(packing):
    rng = np.random.default_rng(0)
    args = (_params(rng, [16, 32, 3]), rng.standard_normal((32, 16)).astype(np.float32),
            rng.standard_normal((32, 3)).astype(np.float32))
    g = srcjax.value_and_grad(mlp_loss)
    assert _packed(g, *args)
    for _ in range(3):
        x = rng.standard_normal((32, 16)).astype(np.float32)
        _same(g(args[0], x, args[2]), g._call((args[0], x, args[2]), {}))
    assert g.__dict__["_dispatch"].__name__ == "direct"
    for _ in range(3):  # (by keyword: packed as the positional call it is, staying on the packed dispatcher)
        _same(g(args[0], x=args[1], y=args[2]), g._call(args, {}))
        assert g.__dict__["_dispatch"].__name__ == "direct"


def test_numpy_arguments_written_after_a_packed_call_do_not_change_its_result(packing):
    """The packed arrays are new copies: a write right after the call (the program still running) cannot
    reach it (jax.jit, which reads NumPy arguments in place, gives wrong results here)."""
    f = srcjax.jit(chain)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((400, 400)).astype(np.float32)
    b = (rng.standard_normal((400, 400)) / 20).astype(np.float32)
    want = chain({"a": a, "b": b})
    assert _packed(f, {"a": a.copy(), "b": b.copy()})
    for _ in range(8):
        t = {"a": a.copy(), "b": b.copy()}
        first, ab = f(t)
        t["a"][:] = 0.0  # (right after the call)
        t["b"][:] = 1.0
        np.testing.assert_allclose(np.asarray(ab), want[1], rtol=2e-3, atol=2e-3)
        assert float(first) == want[0]
    assert f.__dict__["_dispatch"].__name__ == "direct"


def test_packed_calls_from_threads_writing_their_arguments(packing):
    """Threads calling one packed function, each writing its arguments right after its calls."""
    f = srcjax.jit(chain)
    rng = np.random.default_rng(2)
    pairs = [((rng.standard_normal((200, 200))).astype(np.float32), (rng.standard_normal((200, 200)) / 15)
              .astype(np.float32)) for _ in range(3)]
    wants = [chain({"a": a, "b": b})[1] for a, b in pairs]
    assert _packed(f, {"a": pairs[0][0].copy(), "b": pairs[0][1].copy()})
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for _ in range(6):
                t = {"a": pairs[k][0].copy(), "b": pairs[k][1].copy()}
                out = f(t)[1]
                t["a"][:] = -3.0
                np.testing.assert_allclose(np.asarray(out), wants[k], rtol=2e-3, atol=2e-3)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_other_calls_go_back_and_errors_stay_located(packing):
    """A call of another shape, dtype, structure or kind of leaf is not packed: the other dispatchers (or
    the Python path) serve it, and a wrong shape is srcjax's error at the user's line."""
    rng = np.random.default_rng(3)
    params = _params(rng, [16, 32, 2])
    x, y = rng.standard_normal((32, 16)).astype(np.float32), rng.standard_normal((32, 2)).astype(np.float32)
    g = srcjax.value_and_grad(mlp_loss_again)
    assert _packed(g, params, x, y)
    others = [(params, x[:3], y[:3]),  # another shape
              (params, x.astype(np.float64), y),  # another dtype
              (params + [], x.T.copy().T, y),  # a strided view (packed: C order copied)
              (srcjax.device_put(params), x, y),  # device parameters
              (tuple(params), x, y)]  # another structure
    for args in others:
        _same(g(*args), g._call(args, {}))
    _same(g(params, x, y), g._call((params, x, y), {}))
    with pytest.raises(srcjax.TranspileError) as e:
        g(params, np.ones((32, 3), np.float32), y)
    assert "test_packed_calls.py" in str(e.value)
    _same(g(params, x, y), g._call((params, x, y), {}))


def mlp_loss_fourth(params, x, y):
    return mlp_loss(params, x, y)


def mlp_loss_fifth(params, x, y):
    return mlp_loss(params, x, y)


def test_a_leaf_of_another_dtype_of_the_same_size_is_never_packed(packing):
    """The packed arrays are the leaves' bytes joined (``Packer._concat``, ``TopPacker.direct``) and read as
    the dtype packed for: a leaf of another dtype of the same size (int32 where float32 was packed) is not
    packed (its bytes would be read as float32) but served by the other paths, with the Python path's
    results, in containers (``Packer``) and as an argument (``TopPacker``)."""
    rng = np.random.default_rng(13)
    params = _params(rng, [16, 8, 2])
    x, y = rng.standard_normal((32, 16)).astype(np.float32), rng.standard_normal((32, 2)).astype(np.float32)
    xi, yi = (x * 4).astype(np.int32), (y * 4).astype(np.int32)
    g = srcjax.value_and_grad(mlp_loss_fourth)
    assert _packed(g, params, x, y)
    assert g.__dict__["_dispatch"].__name__ == "direct"
    p = [{"w": params[0]["w"], "b": np.arange(8, dtype=np.int32)}, params[1]]
    for args in ((p, x, y), (params, xi, y), (params, x, yi), (params, x, y)):
        _same(g(*args), g._call(args, {}))
    dev = srcjax.device_put(params)
    h = srcjax.value_and_grad(mlp_loss_fifth)
    assert _packed(h, dev, x, y)
    assert h.__dict__["_dispatch"].__name__ == "direct"
    for args in ((dev, xi, y), (dev, x, yi), (dev, x, y)):
        _same(h(*args), h._call(args, {}))


def affine(a, t):
    return a * t["s"] + t["v"], np.sum(a * a) + np.sum(t["v"])


def affine_again(a, t):  # (srcjax.jit(f) is one object per f: a function of its own keeps its own routes)
    return affine(a, t)


@pytest.mark.parametrize("shape", [(), (1 << 20,)], ids=["scalars", "large"])
def test_numpy_arguments_written_after_each_call_on_every_route(packing, shape):
    """Call, write every NumPy argument, then read the results: they are NumPy's for the values passed, on
    each route a function's calls take in turn: the Python path, then 0-d arrays read in place by the C++
    dispatcher behind a wait (a program XLA runs inline; copied where jax keys float32 apart), large ones
    copied, then packed (``Packer.direct`` for NumPy leaves in a container, ``TopPacker.direct`` for a
    NumPy argument beside device arrays)."""
    rng = np.random.default_rng(14 + len(shape))
    for fn, on_device in ((affine, False), (affine_again, True)):
        f = srcjax.jit(fn)
        for i in range(12):
            a = rng.standard_normal(shape).astype(np.float32)
            t = {"s": rng.standard_normal(shape).astype(np.float32), "v": rng.standard_normal(shape).astype(np.float32)}
            want = [np.asarray(w) for w in affine(a, t)]
            got = f(a, srcjax.device_put(t) if on_device else t)
            a[...] = 1e6  # (right after the call, before its results are read)
            t["s"][...] = -1e6
            t["v"][...] = 7.0
            np.testing.assert_allclose(np.asarray(got[0]), want[0], rtol=1e-6)
            np.testing.assert_allclose(np.asarray(got[1]), want[1], rtol=1e-4)
            if i == 5:
                packed_calls.wait(60)
        if shape:  # (0-d arrays: read in place or packed, as the process's state says: cpp_calls._private_copies)
            assert f.__dict__["_dispatch"].__name__ == "direct"


def mlp_loss_sixth(params, x, y):
    return mlp_loss(params, x, y)


def test_numpy_parameters_and_device_ones_beside_a_numpy_batch_keep_a_packer_each(packing):
    """A function called with NumPy parameters, then with device parameters beside a NumPy batch, then again
    with NumPy ones (evaluation and training, ``benchmarks/callgrind_models.py``'s modes) keeps a packer for
    each kind of call: every switch is packed again at once, however often (one packer a function, the other
    kind's calls were refused 16 times on the Python path, dropped it, and made a new one: after three, none)."""
    from tests.python_path import Counting

    rng = np.random.default_rng(15)
    params = _params(rng, [16, 8, 2])
    x, y = rng.standard_normal((32, 16)).astype(np.float32), rng.standard_normal((32, 2)).astype(np.float32)
    dev = srcjax.device_put(params)
    g = srcjax.value_and_grad(mlp_loss_sixth)
    want = g._call((params, x, y), {})
    for i in range(4):
        counting = Counting(g)
        assert _packed(g, params, x, y)
        assert type(_packer(g)) is packed_calls.Packer
        assert _packed(g, dev, x, y)
        assert type(_packer(g)) is packed_calls.TopPacker
        assert counting.n <= 2 * (i > 0) + 99 * (i == 0)  # (after the first round: the switches alone, if any)
        _same(g(params, x, y), want)
        _same(g(dev, x, y), want)


def test_a_wait_that_times_out_leaves_the_compile_for_the_next_wait(monkeypatch):
    """``packed_calls.wait(timeout)`` returning before a compile ends keeps it: the next ``wait()`` joins it."""
    done = threading.Event()
    slow = threading.Thread(target=done.wait, args=(30,))
    slow.start()
    monkeypatch.setattr(packed_calls, "_COMPILING", [slow])
    packed_calls.wait(0.01)
    assert packed_calls._COMPILING == [slow]
    done.set()
    packed_calls.wait()
    assert packed_calls._COMPILING == [] and not slow.is_alive()


def test_two_dtypes_are_two_packed_arrays(packing):
    f = srcjax.jit(labelled)
    t = {"w": np.arange(48 * 48, dtype=np.float32).reshape(48, 48) / 2000, "k": np.arange(3, dtype=np.int32)}
    x = np.ones((48, 48), np.float32)
    assert _packed(f, t, x)
    for s in range(3):
        t2 = {"w": t["w"] + s, "k": t["k"] * s}
        _same(f(t2, x), f._call((t2, x), {}))


def test_packed_text_cuts_the_arrays_back():
    """The wrapper's prologue: one slice and reshape per packed argument, the original ``@main`` called."""
    from srcjax.core import ShapedArray

    f32 = np.dtype(np.float32)
    text = ("module @srcjax {\n  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<f32>) -> (tensor<f32>) {\n"
            "    func.return %arg1 : tensor<f32>\n  }\n}\n")
    out = packed_text(text, [ShapedArray((2, 3), f32), ShapedArray((), f32)], [ShapedArray((), f32)],
                      [(f32, [0])])
    assert out is not None
    assert "func.func private @srcjax_unpacked(" in out
    assert "%s0 = stablehlo.slice %pack0 [0:6] : (tensor<6xf32>) -> tensor<6xf32>" in out
    assert "func.func public @main(%pack0: tensor<6xf32>, %arg1: tensor<f32>)" in out
    assert packed_text(out, [ShapedArray((6,), f32), ShapedArray((), f32)], [ShapedArray((), f32)],
                       [(f32, [0])]) is None  # (already wrapped)


def test_packed_calls_are_served_in_cpp_and_under_disable_jit(packing):
    """Packed calls enter neither srcjax's Python path nor the packer's miss (its C++ record serves them);
    under jax's ``disable_jit`` the C++ side hands them to the packer's Python run, with the same results."""
    from tests.python_path import Counting

    rng = np.random.default_rng(4)
    args = (_params(rng, [16, 32, 3]), rng.standard_normal((32, 16)).astype(np.float32),
            rng.standard_normal((32, 3)).astype(np.float32))
    g = srcjax.value_and_grad(mlp_loss_third)
    assert _packed(g, *args)
    want = g._call(args, {})
    counting = Counting(g)
    for _ in range(3):
        _same(g(*args), want)
    assert counting.n == 0
    jax = pytest.importorskip("jax")
    with jax.disable_jit():
        _same(g(*args), want)


def act_loss(params, x, y, act):
    h = x
    for layer in params[:-1]:
        h = h @ layer["w"] + layer["b"]
        h = np.tanh(h) if act == "tanh" else np.maximum(h, 0.0)
    return np.mean((h @ params[-1]["w"] + params[-1]["b"] - y) ** 2)


def scaled_loss(params, x, y, scale=0.5):
    return scale * mlp_loss(params, x, y)


def gap_loss(params, x, scale=0.5, y=0.0):
    return scale * mlp_loss(params, x, y)


def test_static_arguments_defaults_and_keyword_orders_are_packed(packing):
    """A static argument (keyed by value: another value is not packed), a default left out (a device array the
    C++ side is handed), keywords bound in front of the dispatcher: packed too, results as the Python path's."""
    rng = np.random.default_rng(5)
    params = _params(rng, [16, 32, 3])
    x, y = rng.standard_normal((32, 16)).astype(np.float32), rng.standard_normal((32, 3)).astype(np.float32)
    f = srcjax.jit(srcjax.value_and_grad(act_loss), static_argnums=3)
    assert _packed(f, params, x, y, "tanh")
    for act in ("tanh", "relu", "tanh"):
        _same(f(params, x, y, act), f._call((params, x, y, act), {}))
    s = srcjax.value_and_grad(scaled_loss)
    assert _packed(s, params, x, y)
    _same(s(params, x, y), s._call((params, x, y), {}))
    _same(s(params, x, y, 2.0), s._call((params, x, y, 2.0), {}))
    k = srcjax.value_and_grad(gap_loss)
    assert _packed(k, params, x=x, y=y)
    for _ in range(3):
        _same(k(params, x=x, y=y), k._call((params,), {"x": x, "y": y}))


def bias_loss(t, x):
    return np.sum(np.tanh(x @ t["w"] + t["b"]) ** 2) + np.sum(t["u"])


def test_a_donated_device_leaf_in_a_packed_call_gets_srcjax_error(packing):
    """A packed call's device leaf the packed program cannot take (donated by another call) goes to srcjax's
    Python path with the call unpacked: srcjax's located error, as without packing; the next calls packed."""
    rng = np.random.default_rng(6)
    w, x = rng.standard_normal((32, 32)).astype(np.float32), rng.standard_normal((32, 32)).astype(np.float32)
    g = srcjax.grad(bias_loss)
    b, u = srcjax.device_put(np.zeros(32, np.float32)), np.ones(3, np.float32)
    assert _packed(g, {"w": w, "b": b, "u": u}, x)
    gone = srcjax.device_put(np.ones(32, np.float32))
    srcjax.jit(lambda v: v * 2.0, donate_argnums=0)(gone)
    with pytest.raises(srcjax.TranspileError) as packed:
        g({"w": w, "b": gone, "u": u}, x)
    with pytest.raises(srcjax.TranspileError) as python_path:
        g._call(({"w": w, "b": gone, "u": u}, x), {})
    assert str(packed.value) == str(python_path.value)
    _same(g({"w": w, "b": b, "u": u}, x), g._call(({"w": w, "b": b, "u": u}, x), {}))


def flat_loss(w1, b1, w2, x, y):
    return np.mean((np.tanh(x @ w1 + b1) @ w2 - y) ** 2)


def test_numpy_arrays_as_the_arguments_themselves(packing):
    """NumPy arrays passed as the arguments (no container: the third dispatcher's copies) are packed, two
    beside device parameters (a NumPy batch) too, without flattening the others (``packed_calls.TopPacker``)."""
    rng = np.random.default_rng(7)
    w1, b1 = rng.standard_normal((16, 32)).astype(np.float32), np.zeros(32, np.float32)
    w2 = rng.standard_normal((32, 3)).astype(np.float32)
    x, y = rng.standard_normal((32, 16)).astype(np.float32), rng.standard_normal((32, 3)).astype(np.float32)
    g = srcjax.value_and_grad(flat_loss, argnums=(0, 1, 2))
    assert _packed(g, w1, b1, w2, x, y)
    _same(g(w1, b1, w2, x, y), g._call((w1, b1, w2, x, y), {}))
    d1, e1, d2 = srcjax.device_put((w1, b1, w2))
    for _ in range(24):  # (the first packer refuses the new calls until dropped, then AFTER calls)
        g(d1, e1, d2, x, y)
    assert _packed(g, d1, e1, d2, x, y)
    assert type(_packer(g)) is packed_calls.TopPacker
    _same(g(d1, e1, d2, x, y), g._call((d1, e1, d2, x, y), {}))
    for _ in range(24):  # (the first packer refuses the new calls until dropped, then AFTER calls)
        g(w1, b1, w2, x[:8], y[:8])
    assert _packed(g, w1, b1, w2, x[:8], y[:8])


def flat_loss_again(w1, b1, w2, x, y):
    return flat_loss(w1, b1, w2, x, y)


def test_an_occasional_other_batch_keeps_the_packer(packing):
    """A loop whose every few calls have another batch (the last, smaller batch of an epoch): those calls are
    not packed, the others stay packed, epoch after epoch (a packer is dropped only after misses in a row)."""
    rng = np.random.default_rng(8)
    w1, b1 = rng.standard_normal((16, 32)).astype(np.float32), np.zeros(32, np.float32)
    w2 = rng.standard_normal((32, 3)).astype(np.float32)
    x, y = rng.standard_normal((32, 16)).astype(np.float32), rng.standard_normal((32, 3)).astype(np.float32)
    g = srcjax.value_and_grad(flat_loss_again, argnums=(0, 1, 2))
    assert _packed(g, w1, b1, w2, x, y)
    for _ in range(3 * packed_calls.PACKERS * 17):  # (epochs of 3 batches and a smaller one)
        g(w1, b1, w2, x, y)
        g(w1, b1, w2, x, y)
        g(w1, b1, w2, x[:5], y[:5])
    assert _packed(g, w1, b1, w2, x, y)
    _same(g(w1, b1, w2, x[:5], y[:5]), g._call((w1, b1, w2, x[:5], y[:5]), {}))


def slow_top(t, a, b):
    return a[0, 0] * 1.0, (a @ t["m"]) @ b  # (slow enough to run asynchronously, long after the call returns)


def test_a_numpy_batch_beside_device_parameters_is_never_read_in_place(packing):
    """NumPy arguments beside a container of device arrays (``TopPacker``: the container is not flattened
    in Python): a write right after a call never changes its result, and neither does one to a NumPy array
    a later call puts in the container (the C++ side misses there; the packer's miss sends it to the Python
    path, and after ``packed_calls.REFUSED`` such calls the packer packs no more)."""
    rng = np.random.default_rng(9)
    m = (rng.standard_normal((300, 300)) / 17).astype(np.float32)
    a, b = (rng.standard_normal((300, 300)).astype(np.float32),
            (rng.standard_normal((300, 300)) / 17).astype(np.float32))
    want = slow_top({"m": m}, a, b)
    f = srcjax.jit(slow_top)
    t = {"m": srcjax.device_put(m)}
    assert _packed(f, t, a.copy(), b.copy())
    assert type(_packer(f)) is packed_calls.TopPacker
    for _ in range(6):
        a2, b2 = a.copy(), b.copy()
        first, out = f(t, a2, b2)
        a2[:] = 0.0  # (right after the call)
        b2[:] = 1.0
        np.testing.assert_allclose(np.asarray(out), want[1], rtol=2e-3, atol=2e-3)
        assert float(first) == want[0]
    for _ in range(packed_calls.REFUSED + 3):  # (a NumPy leaf in the container)
        host = {"m": m.copy()}
        first, out = f(host, a, b)
        host["m"][:] = 1.0
        np.testing.assert_allclose(np.asarray(out), want[1], rtol=2e-3, atol=2e-3)
    _same(f(t, a, b), f._call((t, a, b), {}))


def two_kinds(t, x, k, y):
    return np.sum(np.tanh(x @ t["w"])) + np.sum(k * 2), np.tanh(y + t["b"]) * k[0]


def test_a_packed_batch_of_two_dtypes_beside_device_arrays_in_one_frame(packing):
    """A TopPacker's calls go through one generated function (``TopPacker.direct``): float32 and int32
    arguments packed into two arrays; any other call (another shape, dtype or kind, by keyword) is handed
    on, and every result is the Python path's."""
    rng = np.random.default_rng(10)
    t = srcjax.device_put({"w": rng.standard_normal((32, 16)).astype(np.float32), "b": np.ones(16, np.float32)})
    x, y = rng.standard_normal((64, 32)).astype(np.float32), rng.standard_normal(16).astype(np.float32)  # (a program
    # XLA runs asynchronously: its NumPy arguments are copied, then packed)
    k = np.arange(3, dtype=np.int32)
    f = srcjax.jit(two_kinds)
    assert _packed(f, t, x, k, y)
    assert f.__dict__["_dispatch"].__name__ == "direct" and type(_packer(f)) is packed_calls.TopPacker
    calls = [(t, x + 1, k * 3, y), (t, x[:2], k, y), (t, x, k.astype(np.float32), y), (t, x.astype(np.float64), k, y),
             (t, srcjax.device_put(x), k, y), (t, x, k, y)]
    for args in calls:
        _same(f(*args), f._call(args, {}))
    _same(f(t, x, k=k, y=y), f._call((t, x, k, y), {}))
    _same(f(t, x, k, y), f._call((t, x, k, y), {}))


def test_packed_batches_of_any_layout_or_dtype_object(packing):
    """``TopPacker.direct`` copies a call's NumPy arguments as bytes (their ``.tobytes()``, in C order, joined):
    a Fortran-ordered or strided argument, one whose dtype is an equal object of its own (unpickled)
    and an argument of another dtype of the same size give the Python path's results (packed where the bytes
    are the array's, handed on otherwise), and the route stays packed."""
    import pickle

    rng = np.random.default_rng(12)
    t = srcjax.device_put({"w": rng.standard_normal((32, 16)).astype(np.float32), "b": np.ones(16, np.float32)})
    x, y = rng.standard_normal((64, 32)).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    k = np.arange(3, dtype=np.int32)
    f = srcjax.jit(two_kinds)
    assert _packed(f, t, x, k, y)
    assert f.__dict__["_dispatch"].__name__ == "direct"
    calls = [(t, np.asfortranarray(x), k, y), (t, np.repeat(x, 2, axis=1)[:, ::2], k, y[::-1]),
             (t, x, np.arange(6, dtype=np.int32)[::2], y), (t, pickle.loads(pickle.dumps(x)), pickle.loads(
                 pickle.dumps(k)), y), (t, x.view(np.int32), k, y), (t, x, k.view(np.float32), y), (t, x, k, y)]
    for args in calls:
        _same(f(*args), f._call(args, {}))
    _same(f(t, x, k, y), f._call((t, x, k, y), {}))
    assert f.__dict__["_dispatch"].__name__ == "direct"


def test_device_and_numpy_batches_alternating_route_back_without_compiling(packing, monkeypatch):
    """A function whose calls alternate between a device batch and a NumPy one (evaluation between training
    steps) leaves its packed route at each device call and comes back to it at the next NumPy one: its
    generated function is written and compiled once (``TopPacker._direct_code``), and every result is the
    Python path's."""
    import builtins

    rng = np.random.default_rng(13)
    t = srcjax.device_put({"w": rng.standard_normal((32, 16)).astype(np.float32), "b": np.ones(16, np.float32)})
    x, y = rng.standard_normal((64, 32)).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    k = np.arange(3, dtype=np.int32)
    f = srcjax.jit(two_kinds)
    assert _packed(f, t, x, k, y)
    assert f.__dict__["_dispatch"].__name__ == "direct"
    compiled = []
    monkeypatch.setattr(packed_calls, "compile", lambda *a: compiled.append(a[1]) or builtins.compile(*a),
                        raising=False)
    kd, yd = srcjax.device_put(k), srcjax.device_put(y)
    routes = set()
    for i in range(6):
        xi = x + i
        _same(f(t, srcjax.device_put(xi), kd, yd), f._call((t, xi, k, y), {}))  # (`xd + i` is a NumPy array)
        for _ in range(3):  # (back to the packed route within a few calls)
            _same(f(t, xi, k, y), f._call((t, xi, k, y), {}))
        routes.add(f.__dict__["_dispatch"].__name__)
    assert routes == {"direct"} and compiled == []


def test_threads_calling_a_packed_batch_beside_device_arrays_writing_it(packing):
    """Threads calling one function packed by a TopPacker (its one-frame route), each writing its NumPy
    arguments right after its calls: every result is its own call's."""
    rng = np.random.default_rng(11)
    t = {"m": srcjax.device_put((rng.standard_normal((200, 200)) / 15).astype(np.float32))}
    pairs = [(rng.standard_normal((200, 200)).astype(np.float32), (rng.standard_normal((200, 200)) / 15)
              .astype(np.float32)) for _ in range(3)]
    m = np.asarray(t["m"])
    wants = [slow_top({"m": m}, a, b)[1] for a, b in pairs]
    f = srcjax.jit(slow_top)
    assert _packed(f, t, pairs[0][0].copy(), pairs[0][1].copy())
    assert f.__dict__["_dispatch"].__name__ == "direct"
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for _ in range(6):
                a, b = pairs[k][0].copy(), pairs[k][1].copy()
                out = f(t, a, b)[1]
                a[:] = -3.0
                b[:] = 2.0
                np.testing.assert_allclose(np.asarray(out), wants[k], rtol=2e-3, atol=2e-3)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[0]


def mlp_loss_seventh(params, x, y):
    return mlp_loss(params, x, y)


def test_one_function_of_two_models_keeps_a_packer_for_each_signature(packing, monkeypatch):
    """One loss for two models (``srcjax.value_and_grad(f)`` is one object: ``benchmarks/callgrind_models.py``'s
    MLP of 6 leaves and of 40), each called with NumPy parameters and with device ones beside a NumPy batch, by
    turns: every signature keeps its packer, and a switch back is packed at once, with no packer made again. A
    function kept one packer a kind of call, which the other model's calls dropped after 16 misses; the next
    packer came after ``AFTER`` more calls, three at most: the MLP's NumPy calls copied every leaf in a
    process that had run the wide one (1.31x jax.jit's instructions, 0.72x run alone)."""
    from srcjax import cpp_calls
    from tests.python_path import Counting

    made = []
    start = cpp_calls.start_packer
    monkeypatch.setattr(cpp_calls, "start_packer", lambda *a, **k: made.append(start(*a, **k)) or made[-1])
    rng = np.random.default_rng(17)
    calls = []
    for sizes, n in (([16, 8, 2], 32), ([8, 8, 8, 8, 2], 8)):
        params = _params(rng, sizes)
        x = rng.standard_normal((n, sizes[0])).astype(np.float32)
        y = rng.standard_normal((n, sizes[-1])).astype(np.float32)
        calls += [(params, x, y), (srcjax.device_put(params), x, y)]
    g = srcjax.value_and_grad(mlp_loss_seventh)
    wants = [g._call((c[0] if i % 2 == 0 else calls[i - 1][0], *c[1:]), {}) for i, c in enumerate(calls)]
    counting = Counting(g)
    for args in calls:
        assert _packed(g, *args)
    assert len(made) == 4 and all(p is not None for p in made)
    first = counting.n
    for _ in range(2):
        for args, want in zip(calls, wants):
            g(*args)  # (the switch)
            assert _packed_now(g, *args)
            _same(g(*args), want)
    assert len(made) == 4
    assert counting.n == first  # (no call on the Python path after the first round)


def _packed_now(f, *args):
    """Whether ``f``'s next call of ``args`` is packed, with no call made before (:func:`_packed`'s check)."""
    call, packed = packed_calls.Packer.call, [0]

    def counted(self, a):
        out = call(self, a)
        packed[0] += out is not packed_calls.MISS
        return out

    route = _direct_route(f)
    scope = route.__globals__ if route is not None else {}
    cpp = scope.get("cpp")
    if cpp is not None:
        scope["cpp"] = lambda *a: packed.__setitem__(0, packed[0] + 1) or cpp(*a)
    packed_calls.Packer.call = counted
    try:
        f(*args)
    finally:
        packed_calls.Packer.call = call
        if cpp is not None:
            scope["cpp"] = cpp
    return packed[0] == 1


def mlp_loss_eighth(params, x, y):
    return mlp_loss(params, x, y)


def test_calls_by_turns_of_two_kinds_never_use_up_a_packers_refusals(packing, monkeypatch):
    """NumPy parameters and device ones beside a NumPy batch by turns, more often than ``packed_calls.REFUSED``:
    the device kind's ``TopPacker`` refuses the first NumPy call of each turn (it packs the batch, its dispatcher
    finds NumPy leaves in the container), but those refusals are not in a row (a call it packs comes between),
    so it keeps packing its calls and no packer is made again (they counted in all: after 16 it packed no more)."""
    from srcjax import cpp_calls

    made = []
    start = cpp_calls.start_packer
    monkeypatch.setattr(cpp_calls, "start_packer", lambda *a, **k: made.append(start(*a, **k)) or made[-1])
    rng = np.random.default_rng(18)
    params = _params(rng, [16, 8, 2])
    x, y = rng.standard_normal((32, 16)).astype(np.float32), rng.standard_normal((32, 2)).astype(np.float32)
    dev = srcjax.device_put(params)
    g = srcjax.value_and_grad(mlp_loss_eighth)
    assert _packed(g, params, x, y) and _packed(g, dev, x, y)
    for _ in range(packed_calls.REFUSED + 4):
        g(params, x, y)
        g(params, x, y)
        g(dev, x, y)
        assert _packed_now(g, dev, x, y)
    assert len(made) == 2


def two_kinds_again(t, x, k, y):
    return two_kinds(t, x, k, y)


def test_numpy_batches_beside_device_arrays_of_two_signatures_by_turns(packing):
    """A NumPy batch beside device parameters, its other arguments NumPy arrays in one signature and device
    arrays in the other, by turns: a ``TopPacker`` each, every call right and packed at its first call after
    a switch. The second signature's packer took the first's calls (it checked its NumPy arguments alone), its
    dispatcher refused them, and the call routed again came back to that dispatcher inside its own miss:
    jaxlib's ``RecursionError`` (found when a function got a packer a signature)."""
    rng = np.random.default_rng(19)
    t = srcjax.device_put({"w": rng.standard_normal((32, 16)).astype(np.float32), "b": np.ones(16, np.float32)})
    x, y = rng.standard_normal((64, 32)).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    k = np.arange(3, dtype=np.int32)
    kd, yd = srcjax.device_put(k), srcjax.device_put(y)
    f = srcjax.jit(two_kinds_again)
    assert _packed(f, t, x, k, y)
    assert _packed(f, t, x, kd, yd)
    for i in range(4):
        xi = x + i
        want = f._call((t, xi, k, y), {})
        _same(f(t, xi, k, y), want)
        assert _packed_now(f, t, xi, k, y)
        _same(f(t, xi, kd, yd), want)
        assert _packed_now(f, t, xi, kd, yd)


def two_kinds_third(t, x, k, y):
    return two_kinds(t, x, k, y)


def test_numpy_arrays_where_a_packed_batch_had_device_ones_are_no_recursive_call(packing):
    """A NumPy batch packed beside device arrays (``f(t, x, kd, yd)``), then called with NumPy arrays in their
    places: the packer's one-frame route checked the batch alone, its dispatcher refused the call, and the call
    routed again reached that dispatcher inside its own miss: jaxlib raised ``RecursionError: Recursively
    calling jit`` to the user (main 8048ab0). Now such a call is not the packer's: right results, no error."""
    rng = np.random.default_rng(20)
    t = srcjax.device_put({"w": rng.standard_normal((32, 16)).astype(np.float32), "b": np.ones(16, np.float32)})
    x, y = rng.standard_normal((64, 32)).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    k = np.arange(3, dtype=np.int32)
    kd, yd = srcjax.device_put(k), srcjax.device_put(y)
    f = srcjax.jit(two_kinds_third)
    assert _packed(f, t, x, kd, yd)
    for _ in range(3):
        _same(f(t, x, k, y), f._call((t, x, k, y), {}))
        _same(f(t, x, kd, yd), f._call((t, x, k, y), {}))
