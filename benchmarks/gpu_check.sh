#!/usr/bin/env bash
# One-shot GPU check: the test suite with srcjax on the GPU, then the benchmarks
# (srcjax and jax both on the GPU). Run from the repository root on a machine
# with an NVIDIA GPU and jaxlib + a jax-cuda PJRT plugin installed. Logs go to
# $OUT (default ./out). Optional: wheels in .whl/ (e.g. libcst) are installed
# into /tmp/site first, for machines without a package index.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false SRCJAX_PLATFORM=gpu
T_TESTS=${T_TESTS:-240}; T_BENCH=${T_BENCH:-75}
nvidia-smi -L
python3 -c "import jax, jaxlib, numpy, importlib.metadata as md; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__, 'numpy', numpy.__version__, 'libcst', md.version('libcst')); print(jax.devices())"
python3 -c "import srcjax; print(srcjax.devices())" 2>&1 | tail -5
timeout 60 python3 examples/mlp_inference.py 2>&1 | tail -8
# np.linalg through cuSOLVER (opt-in, SRCJAX_GPU_LINALG=1, until this passes on a device): values vs NumPy
timeout 120 python3 benchmarks/gpu_linalg_check.py 2>&1 | tee "$OUT/linalg.log" | grep -v PASS | tail -30
# Tests: srcjax on the GPU, the jax oracle on the CPU (its compiles are cheaper there).
JAX_PLATFORMS=cpu timeout -s INT "$T_TESTS" python3 -m pytest -n "${NPROC:-8}" -q -o addopts="" -p no:cacheprovider -rf tests 2>&1 | tee "$OUT/tests.log" | tail -60
for b in "bench_foundation.py --rounds 11 --first-reps 2" "bench_grad.py --rounds 11 --first-reps 2" "bench_control.py --quick --grad-steps 1000"; do
  echo "=== $b"; timeout "$T_BENCH" python3 benchmarks/$b 2>&1 | tee -a "$OUT/bench.log" | tail -40
done
