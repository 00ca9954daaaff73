"""The level-2 persistent cache (issue #18, ``srcjax/warm_transforms.py``) for vmap, jacfwd, jacrev,
hessian, their compositions, jvp and vjp (its two halves): a second process skips the front end for
each (the Jacobians and vjp's halves are not even written: made lazily, their programs come from the
cache) and gets the first's results; an edit to the function's helper in another module, to that
module's constant, or to a constant of the function's module is never served stale."""

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

HELPER = "SCALE = {scale}\n\n\ndef inner(x):\n    return x * {factor}\n"
MAIN = textwrap.dedent("""
    import json
    import numpy as np
    import srcjax
    import srcjax.autodiff
    from srcjax import warm_cache
    import helper

    OFFSET = {offset}

    def f(x):
        return np.sum(helper.inner(x) ** 2) * helper.SCALE + OFFSET * np.sum(x ** 3)

    def g(x):
        return np.sin(helper.inner(x)) * helper.SCALE + OFFSET * x

    def k(x, *, s=2.0):
        return np.sum(helper.inner(x) ** 2) * s + OFFSET * np.sum(x)

    x = np.linspace(0.1, 0.9, 3)
    xs = np.stack([x, 2 * x])
    made = {{
        "hessian": (srcjax.hessian(f), x), "jacrev_grad": (srcjax.jacrev(srcjax.grad(f)), x),
        "jacfwd": (srcjax.jacfwd(g), x), "jacrev": (srcjax.jacrev(g), x),
        "vmap_grad": (srcjax.vmap(srcjax.grad(f)), xs), "vmap_vmap": (srcjax.vmap(srcjax.vmap(g)), xs[:, :, None]),
        "vmap_axes": (srcjax.vmap(g, in_axes=1, out_axes=1), xs.T),
        "jacrev_vmap": (srcjax.jacrev(srcjax.vmap(g)), xs), "vmap_hessian": (srcjax.vmap(srcjax.hessian(f)), xs),
    }}
    out = {{k: np.asarray(t(a)).tolist() for k, (t, a) in made.items()}}
    out["unwritten"] = [k for k, (t, _) in made.items() if getattr(t, "_pending", False) or getattr(t, "_write", None)]
    out["jvp"] = float(srcjax.jvp(f, (x,), (x,))[1])
    if srcjax.autodiff._wrap(f, "jvp", (0,), False)._lazy:
        out["unwritten"].append("jvp")
    out["jvp_kw"] = float(srcjax.jvp(k, (x,), (x,))[1])  # (a keyword-only default: 2.0 in the derivative too)
    if srcjax.autodiff._wrap(k, "jvp", (0,), False)._lazy:
        out["unwritten"].append("jvp_kw")
    y, f_vjp = srcjax.vjp(f, x)  # (the split halves: the forward and the backward program)
    out["vjp"] = [float(y), *np.asarray(f_vjp(1.0)[0]).tolist()]
    y, g_vjp = srcjax.vjp(g, x)
    out["vjp_g"] = [*np.asarray(y).tolist(), *np.asarray(g_vjp(x)[0]).tolist()]
    for k, fn in (("vjp", f), ("vjp_g", g)):
        halves = srcjax.split_vjp._split_vjp(fn, None, 1)
        if halves.fwd._lazy and halves.bwd._lazy:
            out["unwritten"].append(k)
    out["vjp_source"] = srcjax.source(g_vjp)  # (read: written now, the same as the first process's)
    out["stats"] = dict(warm_cache.STATS)
    try:  # (a lazy Jacobian's first call that misses writes it: the error a user gets is the same)
        srcjax.hessian(f)(np.arange(3))
    except srcjax.TranspileError as e:
        out["error"] = [type(e).__name__, str(e).splitlines()[0]]
    print(json.dumps(out))
""")
KINDS = ["hessian", "jacrev_grad", "jacfwd", "jacrev", "vmap_grad", "vmap_vmap", "vmap_axes", "jacrev_vmap",
         "vmap_hessian", "jvp", "jvp_kw", "vjp", "vjp_g"]
PROGRAMS = len(KINDS) + 2  # (a vjp is two programs)


def _write(d: Path, scale: float = 2.0, factor: float = 3.0, offset: float = 1.0) -> None:
    (d / "helper.py").write_text(HELPER.format(scale=scale, factor=factor))
    (d / "main.py").write_text(MAIN.format(offset=offset))


def _run(d: Path, cache: Path) -> dict:
    # (no .pyc of helper.py: an edit of the same size within a second would be served its old bytecode)
    e = {**os.environ, "SRCJAX_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join([str(ROOT), str(d)]),
         "PYTHONDONTWRITEBYTECODE": "1"}
    e.pop("SRCJAX_CACHE", None)
    r = subprocess.run([sys.executable, str(d / "main.py")], capture_output=True, text=True, timeout=300, env=e)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _expected(scale: float = 2.0, factor: float = 3.0, offset: float = 1.0) -> dict[str, np.ndarray]:
    """NumPy's: f = S a^2 sum(x^2) + O sum(x^3), g = S sin(a x) + O x (elementwise)."""
    x = np.linspace(0.1, 0.9, 3)
    xs = np.stack([x, 2 * x])
    hess = lambda v: np.diag(2 * scale * factor ** 2 + 6 * offset * v)  # noqa: E731
    jac = lambda v: np.diag(scale * factor * np.cos(factor * v) + offset)  # noqa: E731
    g = lambda v: scale * np.sin(factor * v) + offset * v  # noqa: E731
    blocks = np.zeros((2, 3, 2, 3))
    for i in range(2):
        blocks[i, :, i, :] = jac(xs[i])
    return {"hessian": hess(x), "jacrev_grad": hess(x), "jacfwd": jac(x), "jacrev": jac(x),
            "vmap_grad": 2 * scale * factor ** 2 * xs + 3 * offset * xs ** 2, "vmap_vmap": g(xs)[:, :, None],
            "vmap_axes": g(xs).T, "jacrev_vmap": blocks, "vmap_hessian": np.stack([hess(v) for v in xs]),
            "jvp": np.sum((2 * scale * factor ** 2 * x + 3 * offset * x ** 2) * x),
            "jvp_kw": np.sum((4 * factor ** 2 * x + offset) * x),
            "vjp": [scale * factor ** 2 * np.sum(x ** 2) + offset * np.sum(x ** 3),
                    *(2 * scale * factor ** 2 * x + 3 * offset * x ** 2)],
            "vjp_g": [*g(x), *(np.diag(jac(x)) * x)]}


def _check(out: dict, **consts: float) -> None:
    want = _expected(**consts)
    for k in KINDS:
        np.testing.assert_allclose(out[k], want[k], rtol=1e-12, atol=1e-12, err_msg=k)


@pytest.fixture(scope="module")
def cold(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    """The default program's cold first run (every transformation written and compiled), once per module: its
    code directory (the cache's entries name its files), the cache it filled and its output."""
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


def test_a_second_process_skips_the_front_end_for_every_transformation(cold, tmp_path):
    code, cache, first = _after_cold(cold, tmp_path)
    _check(first)
    assert first["unwritten"] == [] and first["stats"]["stores"] == PROGRAMS
    second = _run(code, cache)
    assert second["stats"] == {"hits": PROGRAMS, "misses": 0, "stores": 0}
    assert second["unwritten"] == KINDS  # no vmap's source, no Jacobian's derivative written in this process
    for k in [*KINDS, "vjp_source"]:
        assert second[k] == first[k], k
    assert second["error"] == first["error"] and first["error"][0] == "DTypeError"


def test_edits_under_a_transformation_are_never_served_stale(cold, tmp_path):
    code, cache, first = _after_cold(cold, tmp_path)
    _check(first)
    try:
        # the helper's body (another module), the helper module's constant, the function's module's constant
        for change in (dict(factor=5.0), dict(scale=4.0), dict(offset=7.0)):
            _write(code, **change)
            out = _run(code, cache)
            _check(out, **change)
            assert out["stats"]["hits"] == 0 and out["unwritten"] == [], change
    finally:
        _write(code)  # (the shared cold run's code, as its cache's entries read it)


RECORDS = "from typing import NamedTuple\n\n\nclass P(NamedTuple):\n    {fields}\n"
RECORD_MAIN = textwrap.dedent("""
    import json
    import numpy as np
    import srcjax
    from srcjax import warm_cache
    from records import P

    def fp(p, x):
        return np.sum(np.tanh(x * p.w + p.b))

    xs = np.linspace(0.0, 1.0, 12).reshape(4, 3)
    ps = P(w=np.linspace(1.0, 2.0, 12).reshape(4, 3), b=np.linspace(-1.0, 1.0, 3))
    out = {"vmap": np.asarray(srcjax.vmap(fp, in_axes=(P(w=0, b=None), 0))(ps, xs)).tolist(),
           "jit": float(srcjax.jit(fp)(P(w=ps.w[0], b=ps.b), xs[0]))}
    out["stats"] = dict(warm_cache.STATS)
    print(json.dumps(out))
""")


def test_namedtuple_arguments_and_in_axes_are_cached_and_their_fields_order_is_in_the_key(tmp_path):
    code, cache = tmp_path / "code", tmp_path / "cache"
    code.mkdir()
    (code / "main.py").write_text(RECORD_MAIN)
    w, b = np.linspace(1.0, 2.0, 12).reshape(4, 3), np.linspace(-1.0, 1.0, 3)
    xs = np.linspace(0.0, 1.0, 12).reshape(4, 3)
    want = np.sum(np.tanh(xs * w + b), axis=1)
    runs = []
    for fields in ("w: object\n    b: object", "w: object\n    b: object", "b: object\n    w: object"):
        (code / "records.py").write_text(RECORDS.format(fields=fields))
        out = _run(code, cache)
        np.testing.assert_allclose(out["vmap"], want, rtol=1e-12)
        np.testing.assert_allclose(out["jit"], want[0], rtol=1e-12)
        runs.append(out["stats"])
    assert runs[0]["stores"] == 2 and runs[1] == {"hits": 2, "misses": 0, "stores": 0}
    assert runs[2]["hits"] == 0  # (the fields in another order: the program's leaves would be swapped)
