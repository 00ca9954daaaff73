"""srcjax-transpile as ``python -m srcjax`` runs it (in one worker process of this module's,
tests/cli_worker.py; a terminal and a fresh import in processes of their own): every flag, every emit
stage, --list, annotations, colors, written modules, errors and exit codes. Shape parsing and
highlighting also in-process (fast)."""

import importlib.util
import json
import os
import pathlib
import re
import select
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import srcjax
from srcjax.cli import highlight
from srcjax.cli.shapes import FunctionDecl, ShapeSpec, SpecError, parse_arg, parse_spec, resolve

ROOT = pathlib.Path(__file__).resolve().parent.parent

MODEL = textwrap.dedent('''
    import numpy as np

    import srcjax

    SCALE = 0.5
    OFFSET = np.array([0.25, -0.5], dtype=np.float32)


    def loss(w: "f32[3, 2]", x: "f32[n, 3]", y: "f32[n, 2]"):
        p = np.tanh(x @ w) * SCALE + OFFSET
        return np.mean((p - y) ** 2)


    def predict(w, x):
        return x @ w


    def features(x: "f64[n, 3]"):
        return np.concatenate([x, x ** 2], axis=1)


    def bad(x: "f32[2, 3]", w: "f32[4, 5]"):
        return x @ w


    def count(x: "i32[4]"):
        return np.sum(x)


    def uses_try(x):
        try:
            return x
        except Exception:
            return x


    def norm(v: srcjax.ShapeDtypeStruct((5,), np.float32), eps=1e-6):
        return np.sqrt(np.sum(v * v) + eps)


    if __name__ == "__main__":
        raise SystemExit("the main block must not run")
''')


def line_of(text):
    return next(i for i, ln in enumerate(MODEL.splitlines(), 1) if text in ln)


@pytest.fixture()
def model(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    return path


class _Worker:
    """``python -m srcjax`` run by one process of this module's (tests/cli_worker.py): Python's start and
    srcjax's import once, not at each call (test_cli.py alone: 85.4 -> 9.4 CPU s). The tests that need a process
    of their own (a terminal, a module imported fresh) start one."""

    proc: subprocess.Popen | None = None
    replies = None

    def call(self, argv, env):
        if self.proc is None or self.proc.poll() is not None:
            r, w = os.pipe()
            e = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
            self.proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "cli_worker.py"), str(w)],
                                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=e, pass_fds=(w,),
                                         text=True)
            os.close(w)
            self.replies = os.fdopen(r)
        self.proc.stdin.write(json.dumps({"argv": argv, "env": env}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.replies], [], [], 300)
        line = self.replies.readline() if ready else ""
        if not line:
            self.close()
            raise subprocess.TimeoutExpired(argv, 300) if not ready else RuntimeError("the CLI worker died")
        return json.loads(line)

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc.stdin.close()
            self.replies.close()
            self.proc = None


_WORKER = _Worker()


@pytest.fixture(scope="module", autouse=True)
def _worker():
    yield
    _WORKER.close()


def run(*args, env=None):
    """``python -m srcjax ARGS`` (its exit status, stdout, stderr), in this module's CLI process."""
    e = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), e.get("PYTHONPATH", "")])
    e.update(env or {})
    argv = [sys.executable, "-m", "srcjax", *map(str, args)]
    r = _WORKER.call(argv[3:], e)
    return subprocess.CompletedProcess(argv, r["rc"], r["stdout"], r["stderr"])


def _load(path):
    spec = importlib.util.spec_from_file_location("model_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["model_under_test"] = mod
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------------------
# Stages
# ---------------------------------------------------------------------------


def test_source_writes_module_constants(model):
    r = run(f"{model}::loss")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("import numpy as np\n")
    assert "def loss(w, x, y):" in r.stdout and "np.tanh(" in r.stdout
    assert "SCALE = 0.5\n" in r.stdout
    assert "OFFSET = np.array([0.25, -0.5], dtype=np.float32)\n" in r.stdout
    assert "\x1b[" not in r.stdout  # not a terminal: plain


def test_grad_source_readable_and_anf(model):
    readable, anf = run(f"{model}::loss", "--grad"), run(f"{model}::loss", "--grad", "--anf")
    assert readable.returncode == 0 and anf.returncode == 0, readable.stderr + anf.stderr
    body = lambda t: t.split("def loss_grad(w, x, y):")[1]  # noqa: E731
    assert "def loss_grad(w, x, y):" in readable.stdout and "w_bar = " in body(anf.stdout)
    assert "return matmul_rhs_bar(" in body(readable.stdout)  # (w_bar folded into the return)
    assert len(body(readable.stdout).splitlines()) < len(body(anf.stdout).splitlines())
    assert "tanh_bar = " in anf.stdout and "tanh_bar = " not in readable.stdout


def test_emit_hlo_and_optimized(model):
    args = ["--arg", "w=f32[3,2]", "--arg", "x=f32[5,3]", "--arg", "y=f32[5,2]"]
    r = run(f"{model}::loss", "--emit", "hlo", *args)
    assert r.returncode == 0, r.stderr
    assert "func.func public @main(%arg0: tensor<3x2xf32>" in r.stdout
    r = run(f"{model}::loss", "--emit", "optimized-hlo", "--dim", "n=5")
    assert r.returncode == 0, r.stderr
    assert "HloModule" in r.stdout and "f32[5,3]" in r.stdout


def test_source_for_the_arguments_shapes(model):
    """--for-args prints srcjax.source(f, *args) for the shapes of --arg/--dim/annotations: the
    gradient without the guard and the shape-generic helpers the generic print needs."""
    generic = run(f"{model}::loss", "--grad")
    special = run(f"{model}::loss", "--grad", "--for-args", "--dim", "n=4")
    assert generic.returncode == 0 and special.returncode == 0, special.stderr
    assert "assert " in generic.stdout and "unbroadcast(" in generic.stdout
    assert "def loss_grad(w, x, y):" in special.stdout
    assert "assert " not in special.stdout and "unbroadcast(" not in special.stdout
    body = lambda t: t.split("def loss_grad(w, x, y):")[1]  # noqa: E731
    assert len(body(special.stdout).splitlines()) < len(body(generic.stdout).splitlines())
    r = run(f"{model}::loss", "--grad", "--for-args")  # n unknown: which dimension is missing
    assert r.returncode != 0 and "n" in r.stderr


@pytest.mark.parametrize("flag, signature", [("--jvp", "def loss_jvp(w, x, y, w_dot, x_dot, y_dot):"),
                                             ("--vjp", "def loss_vjp(w, x, y, out_bar):")])
def test_jvp_and_vjp_source(model, flag, signature):
    r = run(f"{model}::loss", flag)  # value_and_grad: see the -o test
    assert r.returncode == 0, r.stderr
    assert signature in r.stdout


@pytest.mark.parametrize("flag, signature", [
    ("--jvp", "%arg0: tensor<3x2xf32>, %arg1: tensor<4x3xf32>, %arg2: tensor<4x2xf32>, %arg3: tensor<3x2xf32>) "),
    ("--vjp", "%arg2: tensor<4x2xf32>, %arg3: tensor<f32>) "),  # the cotangent has the output's shape
    ("--grad", "%arg2: tensor<4x2xf32>) -> (tensor<3x2xf32>)"),
])
def test_transforms_lower_with_shapes_from_annotations(model, flag, signature):
    r = run(f"{model}::loss", flag, "--argnums", "0", "--emit", "hlo", "--dim", "n=4")
    assert r.returncode == 0, r.stderr
    assert signature in r.stdout


def test_output_modules_import_and_match_in_process(model, tmp_path):
    """-o writes standalone modules: they import and run with NumPy and through srcjax, in a fresh
    process, and agree with srcjax.grad in this one; the input file is never modified."""
    g, vg = tmp_path / "out" / "loss_grad.py", tmp_path / "out" / "loss_vg.py"
    g.parent.mkdir()
    for path, flag in ((g, "--grad"), (vg, "--value-and-grad")):
        r = run(f"{model}::loss", flag, "--argnums", "0,1", "-o", path)
        assert r.returncode == 0 and r.stdout == "", r.stderr
        assert path.read_text().startswith("# Generated by srcjax-transpile ")
    rng = np.random.default_rng(0)
    w, x, y = rng.normal(size=(3, 2)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    np.savez(tmp_path / "in.npz", w=w, x=x, y=y)
    script = textwrap.dedent(f'''
        import importlib.util, sys
        import numpy as np
        import srcjax
        def load(name, path):
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod
        g, vg = load("loss_grad", {str(g)!r}), load("loss_vg", {str(vg)!r})
        assert "model" not in sys.modules
        a = np.load({str(tmp_path / "in.npz")!r})
        args = (a["w"], a["x"], a["y"])
        gw, gx = g.loss_grad(*args)
        cw, cx = srcjax.compile(g.loss_grad)(*args)
        v, (vw, vx) = vg.loss_value_and_grad(*args)
        cv, (cvw, cvx) = srcjax.compile(vg.loss_value_and_grad)(*args)
        out = dict(gw=gw, gx=gx, cw=cw, cx=cx, v=v, vw=vw, vx=vx, cv=cv, cvw=cvw, cvx=cvx)
        np.savez({str(tmp_path / "out.npz")!r}, **{{k: np.asarray(v) for k, v in out.items()}})
    ''')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env,
                       cwd=tmp_path / "out")
    assert r.returncode == 0, r.stderr
    out = np.load(tmp_path / "out.npz")
    mod = _load(model)
    ref_w, ref_x = srcjax.grad(mod.loss, argnums=(0, 1))(w, x, y)
    for k in ("gw", "cw", "vw", "cvw"):
        np.testing.assert_allclose(out[k], ref_w, rtol=1e-10, err_msg=k)
    for k in ("gx", "cx", "vx", "cvx"):
        np.testing.assert_allclose(out[k], ref_x, rtol=1e-10, err_msg=k)
    np.testing.assert_allclose(out["v"], mod.loss(w, x, y), rtol=1e-12)
    np.testing.assert_allclose(out["cv"], mod.loss(w, x, y), rtol=1e-12)
    assert model.read_text() == MODEL


def test_vmap_source_and_hlo(model):
    """--vmap prints the batched program; with --emit hlo, --arg gives a mapped parameter's batched
    shape and an annotation one example's (y: f32[n,2] with n from x's batched --arg)."""
    r = run(f"{model}::loss", "--vmap", "--in-axes", "None,0,0")
    assert r.returncode == 0, r.stderr
    assert "def loss_vmap(w, x, y):" in r.stdout and "batch_size_of(x)" in r.stdout
    assert "from srcjax.batched import " in r.stdout and "SCALE = 0.5\n" in r.stdout
    r = run(f"{model}::loss", "--vmap", "--in-axes", "None,0,0", "--emit", "hlo", "--arg", "x=f32[7,4,3]")
    assert r.returncode == 0, r.stderr
    assert ("@main(%arg0: tensor<3x2xf32>, %arg1: tensor<7x4x3xf32>, %arg2: tensor<7x4x2xf32>) -> "
            "(tensor<7xf32>)") in r.stdout
    r = run(f"{model}::loss", "--vmap", "--in-axes=None,1,0", "--out-axes", "0", "--emit", "optimized-hlo",
            "--arg", "x=f32[4,b,3]", "--dim", "b=6")
    assert r.returncode == 0, r.stderr
    assert "HloModule" in r.stdout and "f32[4,6,3]" in r.stdout


def test_vmap_in_axes_0_none_and_a_mapped_static_value(tmp_path):
    """``--vmap --in-axes 0,None`` (docs/cli.md): the batched source and its HLO; a mapped value used
    as a shape is an error naming the argument, with the ``in_axes`` that leaves it unmapped."""
    src = tmp_path / "mapped.py"
    src.write_text("import numpy as np\n\n\ndef predict(x, w):\n    return np.tanh(x @ w)\n\n\n"
                   "def make(x, n):\n    return np.zeros(n) + np.sum(x)\n")
    r = run(f"{src}::predict", "--vmap", "--in-axes", "0,None")
    assert r.returncode == 0, r.stderr
    assert "def predict_vmap(x, w):" in r.stdout and "batch_matmul(x, w, True, False)" in r.stdout
    r = run(f"{src}::predict", "--vmap", "--in-axes", "0,None", "--emit", "hlo", "--arg", "x=f32[8,3]",
            "--arg", "w=f32[3,2]")
    assert r.returncode == 0, r.stderr
    assert "(%arg0: tensor<8x3xf32>, %arg1: tensor<3x2xf32>) -> (tensor<8x2xf32>)" in r.stdout
    r = run(f"{src}::make", "--vmap", "--in-axes", "0,0", "--emit", "hlo", "--arg", "x=f32[4,3]",
            "--arg", "n=i64[4]")
    assert r.returncode != 0
    assert "mapped.py:9:" in r.stderr and "`n`, a mapped argument" in r.stderr
    assert "in_axes=(0, None)" in r.stderr and "Traceback" not in r.stderr


def test_vmap_of_grad_is_per_example_gradients(model, tmp_path):
    """--grad --vmap: the batched gradient; its -o module agrees with srcjax.grad per example."""
    r = run(f"{model}::loss", "--grad", "--vmap", "--in-axes", "None,0,0", "--emit", "hlo",
            "--arg", "x=f32[5,4,3]", "--arg", "y=f32[5,4,2]")
    assert r.returncode == 0, r.stderr
    assert "%arg2: tensor<5x4x2xf32>) -> (tensor<5x3x2xf32>)" in r.stdout
    out = tmp_path / "loss_grad_vmap.py"
    r = run(f"{model}::loss", "--grad", "--vmap", "--in-axes", "None,0,0", "-o", out)
    assert r.returncode == 0 and r.stdout == "", r.stderr
    text = out.read_text()
    assert text.startswith(f"# Generated by srcjax-transpile {model}::loss --grad --vmap --in-axes None,0,0;")
    assert "def loss_grad_vmap(w, x, y):" in text
    rng = np.random.default_rng(0)
    w, x, y = rng.normal(size=(3, 2)), rng.normal(size=(5, 4, 3)), rng.normal(size=(5, 4, 2))
    got = _load(out).loss_grad_vmap(w, x, y)
    mod = _load(model)
    want = np.stack([srcjax.grad(mod.loss)(w, x[i], y[i]) for i in range(5)])
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_vmap_errors_in_the_program_exit_1(model):
    r = run(f"{model}::loss", "--vmap", "--out-axes", "None")
    assert r.returncode == 1
    # (at the return whose value is mapped)
    assert r.stderr.startswith(f"{model}:{line_of('return np.mean')}:5: error: vmap: out_axes=None for an output "
                               "srcjax maps (it depends on a mapped argument")


# ---------------------------------------------------------------------------
# --list
# ---------------------------------------------------------------------------


def _rows(stdout):
    return {m.group(1): m.group(0) for m in re.finditer(r"^ *\d+  (\w+)\(.*$", stdout, re.M)}


def test_list(model):
    r = run(model, "--list")
    assert r.returncode == 0, r.stderr
    assert "main block" not in r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == (f"{model}: 7 top-level functions, checked without calling them "
                        "(the file was imported: its top-level code ran)")
    assert lines[1].split() == ["LINE", "FUNCTION", "TRANSPILES", "OUTPUT", "GRAD", "NOTES"]
    rows = _rows(r.stdout)
    assert list(rows) == ["loss", "predict", "features", "bad", "count", "uses_try", "norm"]
    assert rows["loss"].split()[:7] == [str(line_of("def loss")), "loss(w:", "f32[3,2],", "x:", "f32[n,3],", "y:",
                                        "f32[n,2])"]
    assert rows["loss"].split()[-3:] == ["ok", "f32[]", "ok"]
    assert rows["predict"].split()[3:6] == ["ok", "?", "?"]
    assert "no shape for w, x" in rows["predict"] and "--arg w=f32[3,4]" in rows["predict"]
    assert " ok  " in rows["features"] and " f64[n,6] " in rows["features"]
    assert "--grad needs a scalar output, but features returns f64[n,6]" in rows["features"]
    assert f"{line_of('def bad') + 1}:12: ShapeError: matmul" in rows["bad"]
    assert " error " in rows["bad"]
    assert f"{line_of('def count')}:11: DTypeError: --grad needs floating-point inputs" in rows["count"]
    assert rows["uses_try"].split()[2:5] == ["error", "-", "-"]
    assert f"{line_of('try:')}:5: UnsupportedSyntaxError: try/except is not supported" in rows["uses_try"]
    assert rows["norm"].split()[1:7] == ["norm(v:", "f32[5],", "eps=1e-06)", "ok", "f32[]", "ok"]
    assert lines[-1] == "symbolic dimensions with no --dim value were checked with stand-ins: n=11"


def test_list_one_function_with_dims_and_args(model):
    r = run(f"{model}::loss", "--list", "--dim", "n=7", "--arg", "w=f64[3,2]")
    assert r.returncode == 0, r.stderr
    rows = _rows(r.stdout)
    assert list(rows) == ["loss"]
    assert "loss(w: f64[3,2], x: f32[n,3], y: f32[n,2])" in rows["loss"]
    assert rows["loss"].split()[-3:] == ["ok", "f64[]", "ok"]
    assert "stand-in" not in r.stdout


# ---------------------------------------------------------------------------
# Shapes from annotations
# ---------------------------------------------------------------------------


def test_annotations_args_and_dims(model):
    # --arg overrides an annotation (here its dtype) and, of the same rank, binds n for y
    r = run(f"{model}::loss", "--emit", "hlo", "--arg", "x=f64[6,3]", "--arg", "w=f64[3,2]")
    assert r.returncode == 0, r.stderr
    assert "@main(%arg0: tensor<3x2xf64>, %arg1: tensor<6x3xf64>, %arg2: tensor<6x2xf32>)" in r.stdout
    # --arg shapes may be symbolic too
    r = run(f"{model}::predict", "--emit", "hlo", "--arg", "w=f32[3,k]", "--arg", "x=f32[2,3]", "--dim", "k=9")
    assert r.returncode == 0, r.stderr
    assert "-> (tensor<2x9xf32>)" in r.stdout


def test_symbolic_dim_errors(model):
    r = run(f"{model}::loss", "--emit", "hlo", "--arg", "x=f32[6,3]", "--arg", "y=f32[4,2]")
    assert r.returncode == 2
    assert r.stderr.splitlines()[-1] == (
        "srcjax-transpile: error: symbolic dimension n is inconsistent: 6 from --arg x=f32[6,3] (annotated f32[n,3]), "
        "but 4 from --arg y=f32[4,2] (annotated f32[n,2])")
    r = run(f"{model}::loss", "--emit", "hlo", "--dim", "n=5", "--arg", "y=f32[4,2]")
    assert r.returncode == 2 and "5 from --dim n=5, but 4 from --arg y=f32[4,2]" in r.stderr
    r = run(f"{model}::loss", "--emit", "hlo")
    assert r.returncode == 2
    assert r.stderr.splitlines()[-1] == (
        "srcjax-transpile: error: symbolic dimension n has no value (n in x: f32[n,3], y: f32[n,2]): "
        "pass --dim n=128, or concrete shapes, e.g. --arg x=f32[128,3]")


def test_missing_shape_names_the_argument(model):
    r = run(f"{model}::predict", "--emit", "hlo", "--arg", "w=f32[3,4]")
    assert r.returncode == 2
    assert r.stderr.splitlines()[-1] == (
        "srcjax-transpile: error: --emit hlo needs a shape for 'x' of predict: annotate it, "
        "def predict(w, x: \"f32[3, 4]\"), or pass --arg x=f32[3,4]")


def test_bad_annotation_points_at_it(tmp_path):
    path = tmp_path / "ann.py"
    path.write_text('import numpy as np\n\n\ndef f(x: "f32[3, n+1]"):\n    return x\n')
    r = run(f"{path}::f", "--emit", "hlo")
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[0] == (f"{path}:4:10: error: shape annotation of 'x': bad dimension 'n+1' in 'f32[3, n+1]': "
                        "a dimension is an integer or a name")
    assert lines[1:3] == ['    def f(x: "f32[3, n+1]"):', "             ^^^^^^^^^^^^^"]


def test_parse_specs():
    assert parse_spec("f32[n, 784]") == ShapeSpec(np.dtype("float32"), ("n", 784))
    assert parse_spec("f64") == parse_spec("float64[]") == ShapeSpec(np.dtype("float64"), ())
    assert parse_spec("bool[2,]") == ShapeSpec(np.dtype("bool"), (2,))
    assert parse_spec("bf16[2]").dtype.name == "bfloat16"
    for not_a_shape in ("int", "list[int]", "np.ndarray", "Array"):
        assert parse_spec(not_a_shape) is None
    for bad in ("f32[3", "f32[3]x", "f32[-1]", "f32[2*n]"):
        with pytest.raises(SpecError):
            parse_spec(bad)
    assert parse_arg("n=5") == ("n", 5) and parse_arg("eps=0.1") == ("eps", 0.1)
    assert parse_arg("flag=True") == ("flag", True)
    for bad in ("w", "w=f33[3]", "w=oops", "1x=f32[3]"):
        with pytest.raises(SpecError):
            parse_arg(bad)


def test_resolve_binds_and_checks_dims():
    decl = FunctionDecl("f", 1, ["a", "b", "c"], {"a": parse_spec("f32[n, 3]"), "b": parse_spec("f32[n, m]")},
                        {}, {}, defaults={"c": "1.0"})
    r = resolve(decl, {"a": parse_spec("f32[4, 3]", "--arg a=f32[4,3]")}, {"m": 2})
    assert r.args["b"].shape == (4, 2) and r.missing == [] and "c" not in r.args
    with pytest.raises(SpecError, match="symbolic dimension n has no value"):
        resolve(decl, {}, {"m": 2})
    r = resolve(decl, {}, {}, stand_ins=True)
    assert r.stand_ins == {"n": 11, "m": 12} and r.args["b"].shape == (11, 12)


def test_compile_and_grad_ignore_shape_annotations(model):
    mod = _load(model)
    rng = np.random.default_rng(1)
    w, x, y = rng.normal(size=(3, 2)), rng.normal(size=(7, 3)), rng.normal(size=(7, 2))  # not the annotated f32
    np.testing.assert_allclose(srcjax.compile(mod.loss)(w, x, y), mod.loss(w, x, y), rtol=1e-12)
    assert srcjax.grad(mod.loss)(w, x, y).shape == (3, 2)
    np.testing.assert_allclose(srcjax.compile(mod.norm)(np.ones(5, np.float32)), np.sqrt(5 + 1e-6), rtol=1e-6)
    assert "def loss(w, x, y):" in srcjax.source(mod.loss)  # annotations are not part of the generated code


# ---------------------------------------------------------------------------
# Colors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["::loss", "--grad"], ["::loss", "--emit", "optimized-hlo", "--dim", "n=4"],
                                  ["", "--list"]], ids=["source", "optimized-hlo", "list"])
def test_color_always_strips_to_plain(model, args):
    target, *rest = args
    plain = run(f"{model}{target}", *rest, "--color", "never", env={"NO_COLOR": ""})
    colored = run(f"{model}{target}", *rest, "--color", "always", env={"NO_COLOR": "1"})
    assert plain.returncode == colored.returncode == 0, plain.stderr + colored.stderr
    assert "\x1b[" not in plain.stdout and "\x1b[" in colored.stdout
    assert highlight.strip(colored.stdout) == plain.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
@pytest.mark.parametrize("no_color", ["", "1"])
def test_color_auto_on_a_terminal_and_no_color(model, no_color):
    import pty

    primary, secondary = pty.openpty()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               NO_COLOR=no_color, TERM="xterm")
    p = subprocess.run([sys.executable, "-m", "srcjax", f"{model}::loss"], stdout=secondary,
                       stderr=subprocess.PIPE, env=env, timeout=300)
    os.close(secondary)
    data = b""
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    os.close(primary)
    assert p.returncode == 0, p.stderr
    assert (b"\x1b[" in data) == (no_color == "")


def test_highlighters_only_insert_escapes():
    import inspect

    import srcjax.cli.tool

    src = inspect.getsource(srcjax.cli.tool) + 'x = f"{a!r:>{w}}"\ny = """two\nlines"""  # c\n'
    assert highlight.strip(highlight.python(src)) == src
    hlo = 'HloModule m\nENTRY %main (p: f32[2]) -> f32[2] {\n  ROOT %add.1 = f32[2]{0} add(%p, %p) /*x*/\n}\n'
    colored = highlight.hlo(hlo)
    assert highlight.strip(colored) == hlo
    assert f"{highlight.BOLD}{highlight.BLUE}add{highlight.RESET}(" in colored
    assert f"{highlight.YELLOW}%add.1{highlight.RESET}" in colored


# ---------------------------------------------------------------------------
# Errors and exit codes
# ---------------------------------------------------------------------------


def test_shape_error_exit_1(model):
    r = run(f"{model}::bad", "--emit", "hlo", "--color", "always")
    assert r.returncode == 1
    plain = highlight.strip(r.stderr)
    first = plain.splitlines()[0]
    assert first.startswith(f"{model}:{line_of('def bad') + 1}:12: error: matmul")
    assert plain.splitlines()[1:3] == ["        return x @ w", "               ^^^^^"]
    assert "\x1b[" in r.stderr  # --color always colors errors too


def test_unsupported_syntax_exit_1(model):
    r = run(f"{model}::uses_try")
    assert r.returncode == 1
    assert f":{line_of('try:')}:5: error: try/except is not supported" in r.stderr


def test_grad_refusals_exit_1(model):
    r = run(f"{model}::count", "--grad", "--emit", "hlo")
    assert r.returncode == 1
    assert r.stderr.startswith(f"{model}:{line_of('def count')}:11: error: --grad needs floating-point inputs, "
                               "but argument 'x' is i32[4]")
    r = run(f"{model}::features", "--grad", "--emit", "hlo", "--dim", "n=2")
    assert r.returncode == 1
    # at the function's return, as srcjax.grad reports it
    assert r.stderr.startswith(f"{model}:{line_of('def features') + 1}:12: error: --grad needs a scalar output, "
                               "but features returns f64[2,6]")


@pytest.mark.parametrize("text, first", [
    ("import numpy as np\ndef f(x):\n    return x +\n", "{path}:3:15: error: SyntaxError: invalid syntax"),
    ("import numpy as np\nA = 1 / 0\ndef f(x):\n    return x\n",
     "{path}:2:5: error: importing {path} raised ZeroDivisionError: division by zero"),
    ("import sys\nsys.exit(3)\n", "{path}:2:1: error: importing {path} raised SystemExit: 3"),
])
def test_file_errors_exit_1(tmp_path, text, first):
    path = tmp_path / "broken.py"
    path.write_text(text)
    r = run(f"{path}::f")
    assert r.returncode == 1
    assert r.stderr.splitlines()[0] == first.format(path=path)
    assert "^" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["nofile.py::f"], "nofile.py: no such file"),
    (["{model}"], "{model}: which function? write {model}::FUNCTION, or use --list to see the functions in {model}"),
    (["{model}::missing"], "{model} has no function 'missing' (its functions: loss, predict, features, bad, count, "
                           "uses_try, norm)"),
    (["{model}::loss", "--arg", "w"], "--arg 'w': expected NAME=VALUE"),
    (["{model}::loss", "--arg", "w=f32[3"], "--arg 'w=f32[3': expected f32[dim, ...] in 'f32[3'"),
    (["{model}::loss", "--arg", "z=f32[3]"], "--arg z=...: loss has no parameter 'z' (its parameters: w, x, y)"),
    (["{model}::loss", "--dim", "n=x"], "--dim 'n=x': expected NAME=<non-negative integer>, e.g. --dim n=128"),
    (["{model}::loss", "--argnums", "1"], "--argnums needs --grad, --value-and-grad, --jvp or --vjp"),
    (["{model}::loss", "--grad", "--argnums", "3"], "--argnums 3: loss has 3 parameters (w, x, y), so argnums are 0..2"),
    (["{model}::loss", "-o", "{model}"], "-o {model} would overwrite the input file"),
    (["{model}::loss", "--vmap", "--in-axes", "None,x,0"],
     "--in-axes 'None,x,0': expected an integer or None for each parameter, like 0,None, not 'x'"),
    (["{model}::loss", "--vmap", "--in-axes", "None,0"],
     "--in-axes None,0: loss has 3 parameters (w, x, y), so --in-axes needs 3 entries (an integer, or None for "
     "a parameter shared by every example), not 2"),
    (["{model}::loss", "--grad", "--vmap", "--in-axes", "0,0,0,0"], "--in-axes 0,0,0,0: loss_grad has 3 parameters"),
    (["{model}::loss", "--vmap", "--in-axes", "None,None,None"], "--in-axes None,None,None: map at least one parameter (an integer axis)"),
    (["{model}::loss", "--vmap", "--out-axes", "first"], "--out-axes 'first': expected an integer or None"),
    (["{model}::loss", "--in-axes", "0,0,0"], "--in-axes needs --vmap"),
    (["{model}", "--list", "--vmap"], "--vmap shows one function's batched program"),
    (["{model}::loss", "--vmap", "--emit", "hlo", "--dim", "n=4"],
     "--vmap --emit hlo needs the batch size: pass the batched shape of a mapped parameter, e.g. --arg w=f32[32,3,2]"),
    (["{model}::loss", "--vmap", "--emit", "hlo", "--arg", "w=f32[3,2]", "--arg", "x=f32[7,4,3]", "--dim", "n=4"],
     "--vmap: mapped axes of different sizes: --arg w=f32[3,2] (axis 0) has 3, --arg x=f32[7,4,3] has 7 (axis 0)"),
    (["{model}::loss", "--vmap", "--in-axes", "None,2,2", "--emit", "hlo", "--arg", "x=f32[4,3]"],
     "--in-axes maps axis 2 of x, but --arg x=f32[4,3] has 2 dimensions (with --vmap, --arg gives the batched shape)"),
    (["{model}::norm", "--vmap", "--emit", "hlo", "--arg", "v=f32[8,5]"],
     "--vmap: eps is 1e-06, not an array, so it cannot be mapped: give it None in --in-axes"),
    (["{model}::loss", "--emit", "bogus"], "argument --emit: invalid choice: 'bogus'"),
    (["{model}::loss", "--grad", "--jvp"], "argument --jvp: not allowed with argument --grad"),
])
def test_usage_errors_exit_2(model, args, message):
    r = run(*[a.format(model=model) for a in args])
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith("usage: srcjax-transpile")
    assert f"srcjax-transpile: error: {message.format(model=model)}" in r.stderr
    assert model.read_text() == MODEL


def test_help_documents_everything():
    r = run("--help")
    assert r.returncode == 0
    for flag in ("--list", "--emit", "--arg", "--dim", "--grad", "--value-and-grad", "--jvp", "--vjp", "--argnums",
                 "--vmap", "--in-axes", "--out-axes",
                 "-o", "--color", "NO_COLOR", 'def loss(w: "f32[784, 256]"', "examples:", "exit status"):
        assert flag in r.stdout, flag


# ---------------------------------------------------------------------------
# Standalone modules: constants written as literals (in-process)
# ---------------------------------------------------------------------------


def test_literals_evaluate_to_the_same_values():
    from srcjax.cli.standalone import literal

    big = np.arange(1000, dtype=np.float32).reshape(10, 100) / 7
    values = [None, True, 3, -2.5, float("nan"), float("-inf"), "s", (1,), (1, 2.0), [1, (2, 3)], {"a": 1},
              np.float32(1.5), np.int64(-3), np.array([[1, 2], [3, 4]], dtype=np.int16), np.array([np.nan, 1.0]),
              np.zeros((2, 0)), big, np.array([True, False])]
    import base64

    for v in values:
        text = literal(v)
        got = eval(text, {"np": np, "base64": base64})
        assert type(got) is type(v), text
        if isinstance(v, (np.ndarray, np.generic)):
            assert got.dtype == v.dtype and got.shape == np.shape(v), text
            np.testing.assert_array_equal(got, v)
        elif v == v:
            assert got == v, text
    assert literal(object()) is None and literal((1, object())) is None


def test_unwritable_constant_is_a_warning_and_prints_go_to_stderr(tmp_path):
    path = tmp_path / "objs.py"
    path.write_text("import numpy as np\n\nprint('imported')\n\nclass Box:\n    k = 2.0\n\nBOX = Box()\n\n\n"
                    "def f(x):\n    return x * BOX.k\n")
    r = run(f"{path}::f")
    assert r.returncode == 0 and "BOX_k = BOX.k" in r.stdout
    assert r.stderr == (f"imported\n{path}::f: warning: the generated code reads 'BOX' from objs.py, which cannot be written "
                        "into the output as a literal; define it before running the output\n")
    from srcjax.cli.standalone import free_names

    assert free_names("import numpy as np\nA = 1\n\n\ndef f(x):\n    def g(y):\n        return y + x + B\n"
                      "    return np.sum(g(x)) + A + len(x)\n") == ["B"]


# ---------------------------------------------------------------------------
# Container arguments and --max-iters
# ---------------------------------------------------------------------------

NET = textwrap.dedent('''
    import numpy as np


    def loss(params, x, y):
        h = x
        for layer in params:
            h = np.tanh(h @ layer["w"] + layer["b"])
        return np.mean((h - y) ** 2)


    def annotated(params: "[{w: f32[3, n], b: f32[n]}]", x: "f32[4, 3]"):
        return np.sum(np.tanh(x @ params[0]["w"] + params[0]["b"]))


    def newton(a):
        x = a
        while np.abs(x * x - a) > 1e-9:
            x = 0.5 * (x + a / x)
        return x
''')


def test_parse_arg_reads_containers():
    name, tree = parse_arg("params=[{w: f32[3,n], 'b': f32[n]}, (f64[], 0.5, True, None)]")
    assert name == "params"
    assert tree[0]["w"] == ShapeSpec(np.dtype("float32"), (3, "n")) and tree[0]["b"].dims == ("n",)
    assert tree[1][0] == ShapeSpec(np.dtype("float64"), ()) and tree[1][1:] == (0.5, True, None)
    for bad in ("p=[f32[3], ", "p={w f32[3]}", "p=[q32[3]]", "p=[f32[3]] x"):
        with pytest.raises(SpecError):
            parse_arg(bad)


def test_container_arguments_and_annotations(tmp_path):
    path = tmp_path / "net.py"
    path.write_text(NET)
    r = run(f"{path}::loss", "--grad", "--emit", "hlo", "--arg", "params=[{w: f32[3,2], b: f32[2]}, {w: f32[2,1], b: f32[1]}]",
            "--arg", "x=f32[4,3]", "--arg", "y=f32[4,1]")
    assert r.returncode == 0, r.stderr
    assert "-> (tensor<2xf32>, tensor<3x2xf32>, tensor<1xf32>, tensor<2x1xf32>)" in r.stdout
    r = run(path, "--list", "--dim", "n=5")
    assert r.returncode == 0, r.stderr
    row = _rows(r.stdout)["annotated"]
    assert "annotated(params: [{w: f32[3,n], b: f32[n]}], x: f32[4,3])" in row and row.split()[-2:] == ["f32[]", "ok"]


def test_max_iters_bounds_reverse_mode_through_while(tmp_path):
    path = tmp_path / "net.py"
    path.write_text(NET)
    r = run(f"{path}::newton", "--grad", "--arg", "a=f64[]")
    assert r.returncode == 1 and "hint: pass --max-iters N" in r.stderr
    r = run(f"{path}::newton", "--grad", "--max-iters", "50")
    assert r.returncode == 0, r.stderr
    assert "range(50)" in r.stdout
    mod = _load(path)
    g = srcjax.grad(mod.newton, max_iters=50)(np.float64(2.0))
    assert abs(float(g) - 0.5 / np.sqrt(2.0)) < 1e-9
    r = run(path, "--list", "--arg", "a=f64[]", "--max-iters", "50")
    assert _rows(r.stdout)["newton"].split()[-2:] == ["f64[]", "ok"]
    r = run(f"{path}::newton", "--max-iters", "5")
    assert r.returncode == 2 and "--max-iters bounds" in r.stderr
