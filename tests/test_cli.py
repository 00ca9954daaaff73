"""srcjax-transpile through a subprocess: every flag, every emit stage, errors and exit codes."""

import importlib.util
import subprocess
import sys
import textwrap

import numpy as np
import pytest

MODEL = textwrap.dedent('''
    import numpy as np

    def loss(w, x, y):
        p = np.tanh(x @ w)
        return np.mean((p - y) ** 2)

    def bad(x, w):
        return x @ w

    def uses_try(x):
        try:
            return x
        except Exception:
            return x
''')


@pytest.fixture()
def model(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    return path


def run(*args):
    return subprocess.run([sys.executable, "-m", "srcjax", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def test_source(model):
    r = run(f"{model}::loss")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("import numpy as np")
    assert "def loss(w, x, y):" in r.stdout and "np.tanh(" in r.stdout


def test_emit_hlo_and_optimized(model):
    args = ["--arg", "w=f32[3,2]", "--arg", "x=f32[5,3]", "--arg", "y=f32[5,2]"]
    r = run(f"{model}::loss", "--emit", "hlo", *args)
    assert r.returncode == 0, r.stderr
    assert "func.func public @main(%arg0: tensor<3x2xf32>" in r.stdout
    r = run(f"{model}::loss", "--emit", "optimized-hlo", *args)
    assert r.returncode == 0, r.stderr
    assert "HloModule" in r.stdout


def test_grad_output_module_is_importable(model, tmp_path):
    out = tmp_path / "loss_grad.py"
    r = run(f"{model}::loss", "--grad", "--argnums", "0,1", "-o", out)
    assert r.returncode == 0, r.stderr
    spec = importlib.util.spec_from_file_location("loss_grad", out)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(0)
    w, x, y = rng.normal(size=(3, 2)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    gw, gx = mod.loss_grad(w, x, y)
    import srcjax

    ref_w, ref_x = srcjax.grad(_load(model).loss, argnums=(0, 1))(w, x, y)
    np.testing.assert_allclose(gw, ref_w, rtol=1e-10)
    np.testing.assert_allclose(gx, ref_x, rtol=1e-10)
    assert model.read_text() == MODEL  # the input file is never modified


def _load(path):
    spec = importlib.util.spec_from_file_location("model_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["model_under_test"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("flag", ["--value-and-grad", "--jvp", "--vjp"])
def test_other_transforms(model, flag):
    r = run(f"{model}::loss", flag)
    assert r.returncode == 0, r.stderr
    suffix = {"--value-and-grad": "value_and_grad", "--jvp": "jvp", "--vjp": "vjp"}[flag]
    assert f"def loss_{suffix}(" in r.stdout


def test_shape_error_exit_1(model):
    r = run(f"{model}::bad", "--emit", "hlo", "--arg", "x=f32[2,3]", "--arg", "w=f32[4,5]")
    assert r.returncode == 1
    first = r.stderr.splitlines()[0]
    assert first.startswith(f"{model}:9:12: error: matmul")
    assert "^" in r.stderr


def test_unsupported_syntax_exit_1(model):
    r = run(f"{model}::uses_try")
    assert r.returncode == 1
    assert ":12:5: error: try/except is not supported" in r.stderr


@pytest.mark.parametrize("args", [["nofile.py::f"], ["{model}"], ["{model}::missing"], ["{model}::loss", "--arg", "w"],
                                  ["{model}::loss", "--emit", "hlo"], ["{model}::loss", "--emit", "bogus"]])
def test_usage_errors_exit_2(model, args):
    r = run(*[a.format(model=model) for a in args])
    assert r.returncode == 2, (r.stdout, r.stderr)


def test_help_documents_examples():
    r = run("--help")
    assert r.returncode == 0
    for flag in ("--emit", "--arg", "--grad", "--argnums", "-o"):
        assert flag in r.stdout
