"""Every example runs (fast settings) and exits 0."""

import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted(pathlib.Path(__file__).resolve().parent.parent.joinpath("examples").glob("*.py"))
FAST_ARGS = {
    "mlp_training.py": ["--epochs", "3"],
    "newton.py": ["--n", "1000"],
    "ode_sensitivity.py": ["--steps", "50", "--fit-steps", "3"],
    "coming_from_jax.py": ["--steps", "30"],
    "data_parallel.py": ["--steps", "6"],
    "pmap_training.py": ["--steps", "6"],
    "multiprocess.py": ["--steps", "6", "--timeout", "90"],
}
EXPECTED = {  # output fragments an example must print
    "coming_from_jax.py": ["1. linear regression", "2. MLP classifier", "3. per-example gradients", "4. projectile"],
    "data_parallel.py": ["same losses on 4 devices as on one: True", "all-reduce"],
    "pmap_training.py": ["same losses with pmap on 4 devices as on one: True", 'srcjax.lax.pmean(grads, "data")',
                         "stablehlo.all_reduce"],
    "multiprocess.py": ["starting 2 processes x 2 CPU devices", "same losses in every process as in a single-process run: True"],
    "custom_vjp.py": ["nan                1          1", "gradient, differentiated body: [nan nan nan]",
                      "matches finite differences and the NumPy run of the generated source: True",
                      "neg_bar, = softplus_bwd(softplus_res, softplus_1_bar)"],
}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path):
    r = subprocess.run([sys.executable, str(path), *FAST_ARGS.get(path.name, [])], capture_output=True, text=True,
                       timeout=300, cwd=path.parent.parent)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert r.stdout.strip()
    for fragment in EXPECTED.get(path.name, []):
        assert fragment in r.stdout, fragment
