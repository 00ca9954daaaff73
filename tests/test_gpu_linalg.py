"""np.linalg on a GPU (primitives/lapack.py, cuSOLVER through the CUDA plugin), checked on the CPU.

No GPU here: each case lowers the program for "gpu" without running it, and every cuSOLVER custom call
(and ``stablehlo.triangular_solve``) srcjax writes must be one that jax writes for ``platform="cuda"``
in the same function, attribute for attribute, up to SSA names: target, layouts, aliases, FFI
attributes, batch dims, operand and result types. The values on a GPU: ``benchmarks/gpu_linalg_check.py``
(run by hand where a GPU is; it compares with NumPy). What stays CPU-only (``eig``, ``print``) is refused
at the user's line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import srcjax
from srcjax.api import Compiled
from srcjax.runtime.xla import _mlir_module  # (private: the one MLIR context srcjax parses modules in)
from tests.linalg_programs import (  # (the same user functions as benchmarks/gpu_linalg_check.py)
    cholesky,
    cond,
    det,
    eigh,
    eigh_upper,
    eigvalsh,
    inv,
    lstsq,
    norm2,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svd_reduced,
    svd_values,
)

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax_config = pytest.importorskip("jax._src.config")
jax.config.update("jax_enable_x64", True)


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Programs lowered as for a GPU (no GPU client is made)."""
    monkeypatch.setattr(Compiled, "_platform", lambda self: "gpu")
    monkeypatch.setenv("SRCJAX_GPU_LINALG", "1")  # (the cuSOLVER kernels: opt-in until run on a device)
    yield


_KERNEL = re.compile(r'"stablehlo\.(custom_call|triangular_solve)"')
_SSA = re.compile(r"%[\w#]+(:\d+)?")


def kernel_calls(text: str) -> list[str]:
    """The module's custom calls and triangular solves in MLIR's generic form, SSA names blanked."""
    asm = _mlir_module(text).operation.get_asm(print_generic_op_form=True)
    return [_SSA.sub("%", line.strip()) for line in asm.splitlines() if _KERNEL.search(line)]


def jax_cuda_calls(fn: Callable[..., Any], *args: Any) -> list[str]:
    with jax_config.use_shardy_partitioner(False):  # (no sdy.sharding_rule attributes: srcjax writes none)
        text = jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",)).as_text()
    return kernel_calls(text)


def srcjax_gpu_calls(fn: Callable[..., Any], *args: Any) -> list[str]:
    text = srcjax.lower(fn, *args).as_text()
    assert "@lapack_" not in text
    return kernel_calls(text)


TWINS: dict[Any, Callable[..., Any]] = {
    inv: jnp.linalg.inv, solve: jnp.linalg.solve, det: jnp.linalg.det, slogdet: jnp.linalg.slogdet,
    cholesky: jnp.linalg.cholesky, eigh: jnp.linalg.eigh, eigh_upper: lambda a: jnp.linalg.eigh(a, UPLO="U"),
    eigvalsh: jnp.linalg.eigvalsh, svd: jnp.linalg.svd, svd_reduced: lambda a: jnp.linalg.svd(a, full_matrices=False),
    svd_values: lambda a: jnp.linalg.svd(a, compute_uv=False), qr: jnp.linalg.qr, pinv: jnp.linalg.pinv,
    norm2: lambda a: jnp.linalg.norm(a, ord=2), cond: jnp.linalg.cond,
    lstsq: lambda a, b: jnp.linalg.lstsq(a, b)[0],
}

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
# (function, argument shapes): square ones above 3 x 3 (jax writes det of 2 x 2 and 3 x 3 out by hand)
CASES = [
    (inv, [(2, 4, 4)]), (solve, [(4, 4), (4, 2)]), (det, [(2, 4, 4)]), (slogdet, [(4, 4)]),
    (cholesky, [(2, 3, 4, 4)]), (eigh, [(2, 4, 4)]), (eigh_upper, [(4, 4)]), (eigvalsh, [(4, 4)]),
    (svd, [(2, 5, 3)]), (svd_reduced, [(3, 5)]), (svd_values, [(2, 4, 6)]), (qr, [(2, 5, 3)]), (qr, [(3, 5)]),
    (pinv, [(5, 3)]), (norm2, [(4, 3)]), (cond, [(4, 4)]), (lstsq, [(5, 3), (5, 2)]),
]
# the other GPU SVD paths: reduced gesvdj above 32 x 32, gesvd past 1024 (a wide matrix: its transpose)
EXTRA = [(svd_reduced, [(40, 33)]), (svd_reduced, [(2, 1100, 40)]), (svd_reduced, [(40, 1100)]),
         (svd_values, [(1100, 8)]), (svd, [(1030, 6)])]


def _args(shapes: list[tuple[int, ...]], dtype: Any) -> list[np.ndarray]:
    return [np.zeros(s, dtype) for s in shapes]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_gpu_kernels_are_jax_cuda_lowering(gpu: None, dtype: Any) -> None:
    for fn, shapes in CASES:
        args = _args(shapes, dtype)
        ours, theirs = srcjax_gpu_calls(fn, *args), jax_cuda_calls(TWINS[fn], *args)
        assert ours, fn.__name__
        missing = [c for c in ours if c not in theirs]
        assert not missing, f"{fn.__name__} {shapes} {np.dtype(dtype).name}: not in jax's cuda lowering:\n" + \
            "\n".join(missing) + "\njax's:\n" + "\n".join(theirs)
        assert {c.split("call_target_name")[-1][:40] for c in theirs if "cusolver" in c} >= \
            {c.split("call_target_name")[-1][:40] for c in ours if "cusolver" in c}


@pytest.mark.parametrize("dtype", [np.float32, np.complex128], ids=lambda d: np.dtype(d).name)
def test_gpu_svd_paths_are_jax_cuda_lowering(gpu: None, dtype: Any) -> None:
    for fn, shapes in EXTRA:
        args = _args(shapes, dtype)
        ours, theirs = srcjax_gpu_calls(fn, *args), jax_cuda_calls(TWINS[fn], *args)
        assert ours and all(c in theirs for c in ours), (fn.__name__, shapes, ours, theirs)


def test_gpu_lowering_is_not_cpu_lowering(gpu: None) -> None:
    """The platform is part of what a program is lowered for: the same function lowered for the CPU
    (no fixture) writes LAPACK; for a GPU, cuSOLVER and no LAPACK."""
    text = srcjax.lower(cholesky, np.eye(3)).as_text()
    assert "@cusolver_potrf_ffi" in text and "@lapack_" not in text


def nll(a, y):
    chol = np.linalg.cholesky(a)
    z = np.linalg.solve(chol, y)
    return 0.5 * np.sum(z * z) + 0.5 * np.linalg.slogdet(a)[1]


def test_gpu_derivatives_and_batches_call_cusolver(gpu: None) -> None:
    """Derivative and batched programs are lowered for the GPU as a whole (their helpers too)."""
    a, y = np.eye(3) * 2, np.ones(3)
    for text in (srcjax.lower(srcjax.grad(nll), a, y).as_text(),
                 srcjax.lower(srcjax.vmap(inv), np.stack([a, a])).as_text(),
                 srcjax.lower(srcjax.jacrev(svd_values), np.ones((3, 2))).as_text()):
        assert "@cusolver_" in text and "@lapack_" not in text


def test_cpu_lowering_keeps_lapack() -> None:
    text = srcjax.lower(cholesky, np.eye(3)).as_text()
    assert "@lapack_dpotrf_ffi" in text and "cusolver" not in text


def eig_user(a):
    w, v = np.linalg.eig(a)
    return w


def print_user(x):
    y = np.sin(x)
    print("y is", y)
    return y


def test_gpu_refusals_are_located_at_the_users_line(gpu: None) -> None:
    for fn, what, line in [(eig_user, "np.linalg.eig", "w, v = np.linalg.eig(a)"),
                           (print_user, "print()", 'print("y is", y)')]:
        with pytest.raises(srcjax.TranspileError) as e:
            srcjax.lower(fn, np.eye(3))
        err = e.value
        assert err.span is not None and err.span.filename == __file__, (what, err.span)
        assert what in str(err) and "GPU" in str(err) and "device='cpu'" in str(err), str(err)
        assert line in str(err)


def inv_user(a):
    b = a @ a.T
    return np.linalg.inv(b)


def test_gpu_linalg_is_opt_in_until_verified_on_a_device(gpu: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cuSOLVER kernels have not run on a device in srcjax's checks yet: without SRCJAX_GPU_LINALG=1 a
    GPU program calling np.linalg is refused at the user's line, saying how to opt in."""
    monkeypatch.delenv("SRCJAX_GPU_LINALG")
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.lower(inv_user, np.eye(3))
    assert e.value.span is not None and e.value.span.filename == __file__, e.value.span
    assert "return np.linalg.inv(b)" in str(e.value) and "SRCJAX_GPU_LINALG=1" in str(e.value), str(e.value)


def test_cusolver_kernels_register_once_through_the_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    """runtime/xla.py's registration, with stand-ins for the plugin's modules (no GPU here): a
    "CUDA" handler through the plugin's C API, then every kernel once; one jax queued (imported, its
    plugin not started) goes through the handler and is not registered a second time."""
    import sys
    import types

    from jaxlib import gpu_linalg, gpu_solver, xla_client

    from srcjax.runtime import xla

    calls: list[tuple[Any, ...]] = []
    ext = types.ModuleType("jax_cuda13_plugin.cuda_plugin_extension")
    ext.register_custom_call_target = lambda c_api, name, fn, platform, api, traits: calls.append(  # type: ignore[attr-defined]
        (c_api, name, platform, api))
    monkeypatch.setitem(sys.modules, "jax_cuda13_plugin", types.ModuleType("jax_cuda13_plugin"))
    monkeypatch.setitem(sys.modules, "jax_cuda13_plugin.cuda_plugin_extension", ext)
    handlers = {k: v for k, v in xla_client._custom_callback_handler.items() if k != "CUDA"}
    monkeypatch.setattr(xla_client, "_custom_callback_handler", handlers)
    traits = xla_client.CustomCallTargetTraits.DEFAULT
    monkeypatch.setattr(xla_client, "_custom_callback", {"CUDA": [("cusolver_potrf_ffi", "potrf", 1, traits)]})
    monkeypatch.setattr(gpu_solver, "registrations", lambda: {"CUDA": [("cusolver_getrf_ffi", "getrf", 1),
                                                                       ("cusolver_potrf_ffi", "potrf", 1)]})
    monkeypatch.setattr(gpu_linalg, "registrations", lambda: {"CUDA": [("cu_lu_pivots_to_permutation", "perm", 1)]})
    monkeypatch.setattr(xla, "_CUDA_C_API", "c-api")
    monkeypatch.setattr(xla, "_CUSOLVER_REGISTERED", False)

    class GpuStandIn:
        platform = "gpu"

    xla._register_cusolver(GpuStandIn())  # type: ignore[arg-type]  # (private: the one registration point)
    xla._register_cusolver(GpuStandIn())  # type: ignore[arg-type]
    assert sorted(calls) == [("c-api", "cu_lu_pivots_to_permutation", "CUDA", 1),
                             ("c-api", "cusolver_getrf_ffi", "CUDA", 1), ("c-api", "cusolver_potrf_ffi", "CUDA", 1)]

    monkeypatch.setattr(xla, "_CUSOLVER_REGISTERED", False)
    monkeypatch.setattr(gpu_solver, "registrations", lambda: {"CUDA": []})
    with pytest.raises(srcjax.TranspileError, match="cuSOLVER kernels"):
        xla._register_cusolver(GpuStandIn())  # type: ignore[arg-type]


def _cuda_plugin_installed() -> bool:
    import importlib.util

    for name in ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12"):
        try:
            if importlib.util.find_spec(name) is not None:
                return True
        except ModuleNotFoundError:
            continue
    return False


def test_values_on_a_gpu() -> None:
    """Where a GPU is: ``benchmarks/gpu_linalg_check.py`` (every case against NumPy) in a process of its
    own, without jax (which would start the CUDA plugin first)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    if not _cuda_plugin_installed():
        pytest.skip("no CUDA PJRT plugin (jax-cuda13-pjrt) installed: no GPU to run np.linalg on")
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, str(root / "benchmarks" / "gpu_linalg_check.py")], env=env,
                         capture_output=True, text=True, timeout=600)
    if out.returncode == 2:
        pytest.skip(f"no GPU backend: {out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr[-500:]}")
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-3000:]
