"""The public API contract: compile, static arguments, caching, results, source, lower, eval_shape."""

import math

import numpy as np
import pytest

import srcjax

rng = np.random.default_rng(42)
SCALE = 3.0
TABLE = np.arange(4, dtype=np.float32)


def affine(x, w, b=0.5):
    return x @ w + b


def test_decorator_forms_and_kwargs():
    x = rng.normal(size=(4, 3)).astype(np.float32)
    w = rng.normal(size=(3, 2)).astype(np.float32)
    f1 = srcjax.compile(affine)
    f2 = srcjax.compile()(affine)
    for f in (f1, f2):
        np.testing.assert_allclose(f(x, w), affine(x, w), rtol=1e-6)
        np.testing.assert_allclose(f(x, w=w, b=2.0), affine(x, w, 2.0), rtol=1e-6)
        np.testing.assert_allclose(f(w=w, x=x), affine(x, w), rtol=1e-6)


def reshape_rows(x, n):
    return x.reshape(n, -1)


def test_int_argument_used_as_shape_is_made_static():
    f = srcjax.compile(reshape_rows)
    x = np.arange(12.0)
    assert f(x, 3).shape == (3, 4)
    assert f(x, 4).shape == (4, 3)
    assert f.auto_static == frozenset({"n"})
    assert len(f._cache) == 2


def scale_by(x, k):
    return x * k


def test_int_argument_not_needed_static_stays_dynamic():
    f = srcjax.compile(scale_by)
    x = np.arange(3, dtype=np.int32)
    for k in (1, 2, 3):
        np.testing.assert_array_equal(f(x, k), x * k)
    assert f.auto_static == frozenset()
    assert len(f._cache) == 1
    assert f(x, 2).dtype == np.int32  # weak Python int keeps the array dtype


def power_sum(x, p):
    out = 0.0
    for i in range(p):
        out = out + x ** i
    return out


def test_static_argnums_and_argnames():
    x = np.linspace(0, 1, 5)
    f = srcjax.compile(power_sum, static_argnums=1)
    g = srcjax.compile(power_sum, static_argnames="p")
    np.testing.assert_allclose(f(x, 4), power_sum(x, 4))
    np.testing.assert_allclose(g(x, p=3), power_sum(x, 3))
    with pytest.raises(srcjax.ArgumentError):
        srcjax.compile(power_sum, static_argnums=5)
    with pytest.raises(srcjax.ArgumentError):
        srcjax.compile(power_sum, static_argnames="q")


def test_weak_python_float_keeps_array_dtype():
    f = srcjax.compile(scale_by)
    x = np.ones(3, np.float32)
    out = f(x, 0.5)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, x * 0.5)


def test_cache_one_executable_per_signature():
    f = srcjax.api.Compiled(affine)  # (a new one: srcjax.compile(affine) is the one other tests called too)
    x = np.ones((2, 3), np.float32)
    w = np.ones((3, 2), np.float32)
    f(x, w)
    f(x + 1, w)
    assert len(f._cache) == 1
    f(x.astype(np.float64), w)
    f(np.ones((5, 3), np.float32), w)
    assert len(f._cache) == 3


def test_results_stay_on_device_and_feed_back():
    f = srcjax.compile(scale_by)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = f(x, 2.0)
    assert isinstance(y, srcjax.Array)
    assert y.shape == (2, 3) and y.dtype == np.float32 and y.ndim == 2
    z = f(y, 2.0)  # device array passed straight back in
    np.testing.assert_array_equal(np.asarray(z), x * 4)
    a = np.asarray(y)
    assert not a.flags.writeable  # a view of the device buffer: read-only
    assert float(f(np.float32(3.0), 2.0)) == 6.0


def test_upload_copies_host_buffers():
    f = srcjax.compile(scale_by)
    x = np.zeros(64, np.float32)  # large and aligned: would alias under ZERO_COPY
    y = f(x, 1.0)
    x[:] = 7.0
    np.testing.assert_array_equal(np.asarray(y), 0.0)


def stats(x):
    return x.mean(), (x.shape, x.ndim), {"min": x.min(), "max": x.max()}


def test_pytree_and_static_outputs():
    x = rng.normal(size=(3, 4))
    m, (shape, ndim), d = srcjax.compile(stats)(x)
    assert shape == (3, 4) and ndim == 2
    np.testing.assert_allclose(m, x.mean())
    np.testing.assert_allclose(d["min"], x.min())
    np.testing.assert_allclose(d["max"], x.max())


def pair_sum(pair, scale):
    a, b = pair
    return (a + b) * scale


def test_container_arguments():
    a, b = np.ones(3), np.arange(3.0)
    np.testing.assert_allclose(srcjax.compile(pair_sum)((a, b), 2.0), (a + b) * 2.0)


def uses_globals(x):
    return x * SCALE + TABLE + math.pi


def test_module_constants():
    x = np.ones(4, np.float32)
    out = srcjax.compile(uses_globals)(x)
    np.testing.assert_allclose(out, uses_globals(x), rtol=1e-6)
    assert out.dtype == uses_globals(x).dtype


def test_numpy_device_mode_runs_generated_source():
    f = srcjax.compile(affine, device="numpy")
    x = rng.normal(size=(4, 3))
    w = rng.normal(size=(3, 2))
    out = f(x, w)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, affine(x, w))


def test_source_is_a_complete_module_that_runs():
    text = srcjax.source(affine)
    lines = text.splitlines()
    assert lines[0] == "import numpy as np"
    first_def = next(ln for ln in lines if ln.startswith("def "))
    assert first_def.startswith("def affine(")
    ns = dict(globals())
    exec(text, ns)
    x, w = rng.normal(size=(2, 3)), rng.normal(size=(3, 2))
    np.testing.assert_allclose(ns["affine"](x, w), affine(x, w))


def inner_helper(x):
    return np.tanh(x) * 2.0


def outer_fn(x):
    return inner_helper(x) + inner_helper(-x)


def test_helpers_are_separate_generated_functions():
    text = srcjax.source(outer_fn)
    assert text.index("def outer_fn(") < text.index("def inner_helper(")
    x = rng.normal(size=5)
    np.testing.assert_allclose(srcjax.compile(outer_fn)(x), outer_fn(x))


def test_lower_and_compile_text():
    x = np.ones((4, 3), np.float32)
    w = np.ones((3, 2), np.float32)
    lowered = srcjax.lower(affine, x, srcjax.ShapeDtypeStruct((3, 2), np.float32))
    text = lowered.as_text()
    assert "func.func public @main" in text and "stablehlo.dot_general" in text
    assert "tensor<4x3xf32>" in text
    opt = lowered.compile().as_text()
    assert "HloModule" in opt
    np.testing.assert_allclose(lowered.compile()(x, w), affine(x, w))


def _tanh_layer_loss(w, x):
    return np.sum(np.tanh(x @ w) ** 2)


def _free_axes_swapped(a, w):
    return np.transpose(a, (1, 0, 2)) @ w


def test_a_transposed_operand_is_contracted_where_it_is():
    """``x.T @ g`` (reverse mode's matmul_rhs_bar) and ``np.transpose`` before a batched matmul lower to one
    dot_general contracting the untransposed operand's axes, as jax writes them (the dead transpose is not
    emitted); a transpose that reorders the free axes stays. Values agree with NumPy."""
    w, x = rng.normal(size=(3, 2)), rng.normal(size=(5, 3))
    g = srcjax.grad(_tanh_layer_loss, argnums=(0, 1))
    text = srcjax.lower(g, w, x).as_text()
    assert "stablehlo.transpose" not in text and text.count("stablehlo.dot_general") == 3
    assert "contracting_dims = [0] x [0]" in text and "contracting_dims = [1] x [1]" in text
    h = 1 - np.tanh(x @ w) ** 2
    gw, gx = g(w, x)
    np.testing.assert_allclose(gw, x.T @ (2 * np.tanh(x @ w) * h), rtol=1e-12)
    np.testing.assert_allclose(gx, (2 * np.tanh(x @ w) * h) @ w.T, rtol=1e-12)
    a, v = rng.normal(size=(4, 2, 3)), rng.normal(size=(3, 5))
    text = srcjax.lower(_free_axes_swapped, a, v).as_text()
    assert "stablehlo.transpose" in text
    np.testing.assert_allclose(srcjax.jit(_free_axes_swapped)(a, v), _free_axes_swapped(a, v), rtol=1e-12)


def test_dead_transposes_are_counted_by_whole_names():
    """``FuncBuilder.finish`` drops the transposes nothing reads (a contraction read their operand), counting
    whole SSA names in one pass: ``%1`` is dead though ``%12``, ``%13`` and ``%1x``-like names are read."""
    from srcjax.core import ShapedArray
    from srcjax.lower.hlo import FuncBuilder
    from srcjax.lower.verify import verify

    b = FuncBuilder("main", [ShapedArray((2, 3), np.dtype(np.float64))])
    x = b.args[0]
    kept = b.transpose(x, [1, 0])  # %0, read below
    dead = b.transpose(x, [1, 0])  # %1, never read
    acc = kept
    for _ in range(10):  # %2 .. %11
        acc = b.binary("add", acc, kept)
    late = b.transpose(x, [1, 0])  # %12, read by %13
    out = b.binary("multiply", acc, late)
    assert (kept.name, dead.name, late.name, out.name) == ("%0", "%1", "%12", "%13")
    body = b.finish([out])
    assert "%1 = " not in body and "%0 = stablehlo.transpose" in body and "%12 = stablehlo.transpose" in body
    verify(f"module @m {{\n{body}\n}}")


def test_lowered_text_parses_as_stablehlo():
    from srcjax.lower.verify import verify

    verify(srcjax.lower(stats, np.ones((3, 4), np.float32)).as_text())
    with pytest.raises(ValueError, match="2:"):
        verify("module {\n  func.func @main() -> () { stablehlo.bogus }\n}")


def test_eval_shape():
    out = srcjax.eval_shape(affine, srcjax.ShapeDtypeStruct((7, 3), np.float32), np.ones((3, 5), np.float32))
    assert out == srcjax.ShapeDtypeStruct((7, 5), np.float32)
    m, (shape, ndim), d = srcjax.eval_shape(stats, srcjax.ShapeDtypeStruct((2, 6), np.float64))
    assert m == srcjax.ShapeDtypeStruct((), np.float64) and shape == (2, 6)


def test_wrong_number_of_arguments():
    f = srcjax.compile(affine)
    with pytest.raises(srcjax.ArgumentError) as ei:
        f(np.ones((2, 3)))
    assert ei.value.span is not None and ei.value.span.line == affine.__code__.co_firstlineno
    with pytest.raises(srcjax.ArgumentError):
        f(np.ones((2, 3)), np.ones((3, 2)), 1.0, 2.0)


def test_unsupported_argument_type():
    with pytest.raises(srcjax.ArgumentError, match="as an array"):
        srcjax.compile(scale_by)(np.ones(3), [object()])
    with pytest.raises(srcjax.DTypeError):  # a string is static; multiplying an array by it is the error
        srcjax.compile(scale_by)(np.ones(3), "two")


def test_devices():
    import os

    devs = srcjax.devices()
    want = os.environ.get("SRCJAX_PLATFORM", "cpu").replace("gpu", "cuda")
    assert devs and want in str(devs[0]).lower()


def spans_lines(x, y):
    z = np.where(
        (x.shape[0] > 0 and
         y.shape[0] > 2), x,
        y)
    return np.sum(
        z[:, None]
        @ z[None])


def test_an_expression_over_several_lines_is_one_line_of_source():
    # regression: flattening dropped the user's brackets but kept their line breaks, so the generated
    # module did not parse (`matmul = getitem\n        @ getitem_1`)
    text = srcjax.source(spans_lines)
    assert "matmul = getitem @ getitem_1" in text and "x.shape[0] > 0 and y.shape[0] > 2" in text
    x, y = rng.normal(size=3), rng.normal(size=3)
    np.testing.assert_allclose(srcjax.numpy_function(spans_lines)(x, y), spans_lines(x, y))
    np.testing.assert_allclose(srcjax.compile(spans_lines)(x, y), spans_lines(x, y))
