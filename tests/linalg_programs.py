"""np.linalg called as a user writes it, one function per decomposition: the programs tests/test_gpu_linalg.py
lowers for a GPU and benchmarks/gpu_linalg_check.py runs on one."""

from __future__ import annotations

import numpy as np


def inv(a):
    return np.linalg.inv(a)


def solve(a, b):
    return np.linalg.solve(a, b)


def det(a):
    return np.linalg.det(a)


def slogdet(a):
    return np.linalg.slogdet(a)


def cholesky(a):
    return np.linalg.cholesky(a)


def eigh(a):
    return np.linalg.eigh(a)


def eigh_upper(a):
    return np.linalg.eigh(a, UPLO="U")


def eigvalsh(a):
    return np.linalg.eigvalsh(a)


def svd(a):
    return np.linalg.svd(a)


def svd_reduced(a):
    return np.linalg.svd(a, full_matrices=False)


def svd_values(a):
    return np.linalg.svd(a, compute_uv=False)


def qr(a):
    return np.linalg.qr(a)


def pinv(a):
    return np.linalg.pinv(a)


def norm2(a):
    return np.linalg.norm(a, ord=2)


def cond(a):
    return np.linalg.cond(a)


def lstsq(a, b):
    return np.linalg.lstsq(a, b)[0]
