"""np.linalg on a GPU: srcjax's cuSOLVER lowering run on the device, values against NumPy.

Run from the repository root on a machine with an NVIDIA GPU, jaxlib and the jax-cuda13 plugins
(``jax-cuda13-pjrt`` and ``jax-cuda13-plugin``, jaxlib's version) and libcst::

    PYTHONPATH=$PWD python3 benchmarks/gpu_linalg_check.py

It prints PASS/FAIL per case and exits 1 on any failure (2 without a GPU); about 20-40 s, mostly
compiles. jax is never imported: its oracle role is played by NumPy, and for derivatives by the same
srcjax program on the CPU. What the CPU tests check without a GPU (tests/test_gpu_linalg.py): the
custom calls are jax's for ``platform="cuda"``, and what stays CPU-only is refused at the user's line.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("SRCJAX_GPU_LINALG", "1")  # (what this script checks: the opt-in cuSOLVER kernels)

import numpy as np  # noqa: E402

import srcjax  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # (the repository root)
from tests.linalg_programs import (  # noqa: E402  # (the same user functions as tests/test_gpu_linalg.py)
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

RESULTS: list[tuple[str, bool]] = []


def check(name: str, fn: Callable[[], None]) -> None:
    t = time.perf_counter()
    try:
        fn()
        ok, why = True, ""
    except Exception as e:  # noqa: BLE001 - every case reports, whatever it raised
        ok, why = False, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        if os.environ.get("VERBOSE"):
            traceback.print_exc()
    RESULTS.append((name, ok))
    print(f"{'PASS' if ok else 'FAIL'}  {name:48s} {time.perf_counter() - t:6.2f} s  {why}", flush=True)


def tol(dtype: Any) -> float:
    return 2e-3 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-9


def rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    x = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


def hpd(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    m = rand(rng, shape, dtype)
    return (m @ np.conj(np.swapaxes(m, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def close(got: Any, want: Any, dtype: Any, what: str = "") -> None:
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, f"{what} shape {got.shape} != {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    err = float(np.max(np.abs(got - want))) if want.size else 0.0
    assert err <= tol(dtype) * scale * 10, f"{what} max error {err:.3g} (scale {scale:.3g})"


def H(x: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(x, -1, -2))


# -- the user's functions ------------------------------------------------------------------------------
def nll(a, y):
    """A Gaussian negative log-likelihood (cholesky, solve, slogdet together), for its gradient."""
    chol = np.linalg.cholesky(a)
    z = np.linalg.solve(chol, y)
    return 0.5 * np.sum(z * z) + 0.5 * np.linalg.slogdet(a)[1]


def eig_user(a):
    w, v = np.linalg.eig(a)
    return w


def print_user(x):
    y = np.sin(x)
    print("y is", y)
    return y


DEVICE = os.environ.get("CHECK_DEVICE", "gpu")  # (CHECK_DEVICE=cpu: the checks themselves, checked on a CPU)


def gpu(fn: Callable[..., Any]) -> Callable[..., Any]:
    return srcjax.jit(fn, device=DEVICE)


def main() -> int:
    try:
        devs = srcjax.devices(DEVICE)
    except Exception as e:  # noqa: BLE001
        print(f"no GPU backend: {type(e).__name__}: {e}")
        return 2
    print("srcjax GPU devices:", devs, flush=True)
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float64, np.complex64, np.complex128):
        dtype_cases(rng, dt)
    # gesvd (sides past 1024) and reduced gesvdj (both sides past 32): jax's other GPU SVD paths
    for shape in [(1100, 40), (40, 1100), (48, 40)]:
        svd_case(rng, shape)
    other_cases(rng)
    failed = [name for name, ok in RESULTS if not ok]
    print(f"\n{len(RESULTS) - len(failed)}/{len(RESULTS)} passed", f"FAILED: {', '.join(failed)}" if failed else "")
    return 1 if failed else 0


def dtype_cases(rng: np.random.Generator, dt: Any) -> None:
    """Every function of the kernels, one dtype, batched where NumPy batches."""
    if True:  # (one indentation level with the code it was moved from)
        n = np.dtype(dt).name
        a = rand(rng, (2, 5, 5), dt) + 5 * np.eye(5, dtype=dt)
        p = hpd(rng, (2, 5, 5), dt)
        b = rand(rng, (2, 5, 3), dt)
        t = rand(rng, (2, 6, 4), dt)
        w_ = rand(rng, (3, 7), dt)
        check(f"inv {n}", lambda: close(gpu(inv)(a), np.linalg.inv(a), dt))
        check(f"solve {n}", lambda: close(gpu(solve)(a, b), np.linalg.solve(a, b), dt))
        check(f"solve vector {n}", lambda: close(gpu(solve)(a[0], b[0, :, 0]), np.linalg.solve(a[0], b[0, :, 0]), dt))
        check(f"det {n}", lambda: close(gpu(det)(a), np.linalg.det(a), dt))
        check(f"slogdet {n}", lambda: [close(g, w, dt) for g, w in zip(gpu(slogdet)(a), np.linalg.slogdet(a))])
        check(f"cholesky {n}", lambda: close(gpu(cholesky)(p), np.linalg.cholesky(p), dt))

        def eigh_ok(fn: Callable[..., Any] = eigh) -> None:
            w, v = gpu(fn)(p)
            close(w, np.linalg.eigvalsh(p), dt, "eigenvalues")
            close(p @ np.asarray(v), np.asarray(v) * np.asarray(w)[..., None, :], dt, "a v = v w")
        check(f"eigh {n}", eigh_ok)
        check(f"eigh UPLO=U {n}", lambda: eigh_ok(eigh_upper))
        check(f"eigvalsh {n}", lambda: close(gpu(eigvalsh)(p), np.linalg.eigvalsh(p), dt))

        def svd_ok(x: np.ndarray, fn: Callable[..., Any], full: bool) -> None:
            u, s, vh = (np.asarray(r) for r in gpu(fn)(x))
            want = np.linalg.svd(x, full_matrices=full)
            assert u.shape == want[0].shape and vh.shape == want[2].shape, (u.shape, vh.shape)
            close(s, want[1], dt, "s")
            k = s.shape[-1]
            close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], x, dt, "u s vh")
            close(H(u) @ u, np.broadcast_to(np.eye(u.shape[-1]), H(u).shape[:-1] + (u.shape[-1],)), dt, "u^H u")
        check(f"svd full (tall) {n}", lambda: svd_ok(t, svd, True))
        check(f"svd reduced (wide) {n}", lambda: svd_ok(w_, svd_reduced, False))
        check(f"svd values {n}", lambda: close(gpu(svd_values)(t), np.linalg.svd(t, compute_uv=False), dt))

        def qr_ok(x: np.ndarray) -> None:
            q, r = (np.asarray(z) for z in gpu(qr)(x))
            assert np.allclose(r, np.triu(r)), "r is not upper triangular"
            close(q @ r, x, dt, "q r")
        check(f"qr tall {n}", lambda: qr_ok(t))
        check(f"qr wide {n}", lambda: qr_ok(w_))
        check(f"pinv {n}", lambda: close(gpu(pinv)(t[0]), np.linalg.pinv(t[0]), dt))
        check(f"norm ord=2 {n}", lambda: close(gpu(norm2)(t[0]), np.linalg.norm(t[0], ord=2), dt))
        check(f"cond {n}", lambda: close(gpu(cond)(a), np.linalg.cond(a), dt))
        rhs = rand(rng, (6, 2), dt)
        check(f"lstsq {n}", lambda: close(gpu(lstsq)(t[0], rhs), np.linalg.lstsq(t[0], rhs, rcond=None)[0], dt))


def svd_case(rng: np.random.Generator, shape: tuple[int, int]) -> None:
    x = rand(rng, shape, np.float32)
    check(f"svd reduced {shape} float32", lambda: svd_ok_f32(x))


def other_cases(rng: np.random.Generator) -> None:
    # failures are NaN (NumPy raises LinAlgError), as on the CPU
    sing = np.ones((2, 4, 4))
    check("inv singular -> NaN", lambda: _all_nan(gpu(inv)(sing)))
    check("cholesky not PD -> NaN", lambda: _all_nan(gpu(cholesky)(-np.eye(3))))
    check("det singular -> 0", lambda: close(gpu(det)(sing), np.zeros(2), np.float64))
    # derivatives through the kernels, against the same program on the CPU
    p = hpd(rng, (4, 4), np.float64)
    y = rng.normal(size=4)

    def grad_ok() -> None:
        g = gpu(srcjax.grad(nll))(p, y)
        want = srcjax.jit(srcjax.grad(nll), device="cpu")(p, y)
        close(g, want, np.float64, "grad")
    check("grad(cholesky + solve + slogdet) float64", grad_ok)
    check("vmap(inv) float32", lambda: _vmap_inv_ok(rng))
    # what stays CPU-only is refused at the user's line
    check("eig refused, located", lambda: _refused(eig_user, np.eye(3), "np.linalg.eig(a)"))
    check("print refused, located", lambda: _refused(print_user, np.ones(3), 'print("y is", y)'))
def svd_ok_f32(x: np.ndarray) -> None:
    u, s, vh = (np.asarray(r) for r in gpu(svd_reduced)(x))
    close(s, np.linalg.svd(x, compute_uv=False), np.float32, "s")
    close((u * s[None, :]) @ vh, x, np.float32, "u s vh")


def _all_nan(x: Any) -> None:
    assert np.all(np.isnan(np.asarray(x))), np.asarray(x)


def _vmap_inv_ok(rng: np.random.Generator) -> None:
    x = rand(rng, (3, 4, 4), np.float32) + 4 * np.eye(4, dtype=np.float32)
    close(gpu(srcjax.vmap(inv))(x), np.linalg.inv(x), np.float32)


def _refused(fn: Callable[..., Any], x: np.ndarray, line: str) -> None:
    try:
        gpu(fn)(x)
    except srcjax.TranspileError as e:
        text = str(e)
        assert __file__.split("/")[-1] in text and line in text and "GPU" in text, text
        return
    raise AssertionError("not refused")


if __name__ == "__main__":
    sys.exit(main())
