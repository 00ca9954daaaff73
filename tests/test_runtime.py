"""Pins the private jaxlib APIs srcjax's runtime relies on: a jaxlib upgrade that changes them fails here."""

import numpy as np
import pytest

import srcjax
from srcjax.core import ShapedArray
from srcjax.runtime import xla

TEXT = """
module @t {
  func.func public @main(%a: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<3xf32>, tensor<f32>) {
    %0 = stablehlo.add %a, %b : tensor<3xf32>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %z) applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
    func.return %0, %1 : tensor<3xf32>, tensor<f32>
  }
}
"""


def test_compile_execute_roundtrip():
    f32 = np.dtype(np.float32)
    exe = xla.compile_text(TEXT, [ShapedArray((3,), f32), ShapedArray((), f32)])
    a = np.array([1, 2, 3], np.float32)
    bufs = [exe.put(a, ShapedArray((3,), f32)), exe.put(a * 10, ShapedArray((3,), f32))]
    out, total = exe.run(bufs)
    assert isinstance(out, xla.Array)
    np.testing.assert_array_equal(np.asarray(out), [11, 22, 33])
    assert float(total) == 66.0
    # outputs go straight back in as inputs
    out2, _ = exe.run([out._buf, out._buf])
    np.testing.assert_array_equal(np.asarray(out2), [22, 44, 66])
    assert "HloModule" in exe.as_text()


def test_put_converts_dtype_and_copies():
    f32 = np.dtype(np.float32)
    exe = xla.compile_text(TEXT, [ShapedArray((3,), f32), ShapedArray((), f32)])
    a = np.array([1.0, 2.0, 3.0])  # float64 host array, float32 program
    buf = exe.put(a, ShapedArray((3,), f32))
    a[:] = 0
    out, _ = exe.run([buf, buf])
    np.testing.assert_array_equal(np.asarray(out), [2, 4, 6])


def test_bfloat16_results_read_back():
    import ml_dtypes

    bf = np.dtype(ml_dtypes.bfloat16)
    text = """
    func.func public @main(%a: tensor<2xbf16>) -> (tensor<2xbf16>) {
      %0 = stablehlo.add %a, %a : tensor<2xbf16>
      func.return %0 : tensor<2xbf16>
    }"""
    exe = xla.compile_text(text, [ShapedArray((2,), bf)])
    (out,) = exe.run([exe.put(np.array([1.5, 2.0], bf), ShapedArray((2,), bf))])
    r = np.asarray(out)
    assert r.dtype == bf
    np.testing.assert_array_equal(r.astype(np.float32), [3.0, 4.0])


@pytest.fixture(scope="module")
def fresh_process() -> dict:
    """One new Python (not one per test: each pays Python's start and srcjax's import): the modules
    ``import srcjax`` brings, then a compiled program run and its result read (ml_dtypes imported by
    the script itself), and whether that imported jax."""
    import json
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import json, sys
        import srcjax
        report = {"after_import": sorted(m for m in ('ml_dtypes', 'jax') if m in sys.modules)}
        try:  # the name "bfloat16" (x.astype("bfloat16")) before anything imported ml_dtypes
            report["bf16_name"] = str(srcjax.core.canonical_dtype("bfloat16"))
        except Exception as e:
            report["bf16_name"] = repr(e)
        import numpy as np, ml_dtypes
        from srcjax.runtime import xla
        from srcjax.core import ShapedArray
        f32 = np.dtype(np.float32)
        exe = xla.compile_text('''
          func.func public @main(%a: tensor<3xf32>) -> (tensor<3xf32>) {
            %0 = stablehlo.add %a, %a : tensor<3xf32>
            func.return %0 : tensor<3xf32>
          }''', [ShapedArray((3,), f32)])
        (out,) = exe.run([exe.put(np.ones(3, np.float32), ShapedArray((3,), f32))])
        report["result"] = np.asarray(out).tolist()
        report["jax_after_reading"] = 'jax' in sys.modules
        print(json.dumps(report))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_reading_results_never_imports_jax(fresh_process):
    assert fresh_process["result"] == [2.0, 2.0, 2.0]
    assert not fresh_process["jax_after_reading"], "reading a result imported jax"


def test_rejected_module_is_an_internal_error():
    import pytest

    from srcjax.core import InternalError

    with pytest.raises(InternalError, match="XLA rejected"):
        xla.compile_text("func.func public @main() -> () { stablehlo.bogus }", [])


def _twice(x):
    return x * 2.0


def test_regression_numpy_functions_taking_arrays_as_keyword_arguments():
    # Array.__array_function__ did not convert values inside **kwargs: np.savez(**{k: Array}) recursed forever
    import io

    a = srcjax.compile(_twice)(np.arange(3.0))
    buf = io.BytesIO()
    np.savez(buf, **{"a": a})
    buf.seek(0)
    np.testing.assert_array_equal(np.load(buf)["a"], [0.0, 2.0, 4.0])


def doubled(x):
    return x * 2


def test_device_put_uploads_once_and_keeps_structure():
    x = np.arange(6.0).reshape(2, 3)
    a = srcjax.device_put(x)
    assert isinstance(a, srcjax.Array) and a.shape == (2, 3) and a.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(a), x)
    assert srcjax.device_put(a) is a  # already there: not copied
    x[0, 0] = 99.0  # the upload is a copy
    assert np.asarray(a)[0, 0] == 0.0
    np.testing.assert_array_equal(srcjax.compile(doubled)(a), np.arange(6.0).reshape(2, 3) * 2)
    tree = srcjax.device_put({"w": np.ones(2, np.float32), "b": 1.5, "tag": "dense", "skip": None})
    assert isinstance(tree["w"], srcjax.Array) and tree["w"].dtype == np.float32
    assert isinstance(tree["b"], srcjax.Array) and tree["tag"] == "dense" and tree["skip"] is None
    np.testing.assert_allclose(srcjax.grad(lambda w: np.sum(w * w))(tree["w"]), 2 * np.ones(2))


def test_device_put_errors():
    with pytest.raises(srcjax.ArgumentError, match="cannot upload"):
        srcjax.device_put(object())
    with pytest.raises(srcjax.ArgumentError, match="unknown platform"):
        srcjax.device_put(1.0, "tpu")
    with pytest.raises(srcjax.ArgumentError, match="numpy device"):
        srcjax.device_put(1.0, "numpy")


def test_import_srcjax_does_not_import_ml_dtypes_or_jax(fresh_process):
    # ml_dtypes takes 1-2 s to import; a float32/64 program never needs it (issue #18)
    assert fresh_process["after_import"] == []


def test_the_name_bfloat16_is_a_dtype_before_ml_dtypes_is_imported(fresh_process):
    # x.astype("bfloat16") in a new process was "not a dtype: 'bfloat16'" (NumPy learns the name from
    # ml_dtypes, which import srcjax no longer imports)
    assert fresh_process["bf16_name"] == "bfloat16"
