"""Sensitivity of an ODE simulation to its parameters, and fitting one, with srcjax.grad.

    .venv/bin/python examples/ode_sensitivity.py [--steps 100] [--fit-steps 10]

Eight damped pendulums (different starting angles, same damping and
stiffness g/L) are integrated over 5 seconds with semi-implicit Euler in a
plain `for _ in range(steps)` loop. The loss compares the final state
(angle and angular velocity) with an "observed" final state simulated with
the true damping. `srcjax.value_and_grad` writes the derivative of the whole
simulation as Python source (the forward loop saves what the backward loop
needs on a tape; printed with --show-source), compiles it once, and the
gradient w.r.t. (damping, stiffness) is checked against central finite
differences of the same function run with NumPy. A few gradient-descent steps
then recover the damping from the observation.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import srcjax

DURATION = 5.0  # seconds simulated, whatever --steps is (dt = DURATION / steps)


def final_state(damping, stiffness, theta0, omega0, dt, steps):
    theta = theta0
    omega = omega0
    for _ in range(steps):
        alpha = -stiffness * np.sin(theta) - damping * omega
        omega = omega + dt * alpha  # semi-implicit (symplectic) Euler: the new velocity moves the angle
        theta = theta + dt * omega
    return theta, omega


def loss(damping, stiffness, theta0, omega0, theta_obs, omega_obs, dt, steps):
    theta = theta0
    omega = omega0
    for _ in range(steps):
        alpha = -stiffness * np.sin(theta) - damping * omega
        omega = omega + dt * alpha
        theta = theta + dt * omega
    return np.mean((theta - theta_obs) ** 2 + (omega - omega_obs) ** 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=100, help="Euler steps over the 5 s (default 100)")
    ap.add_argument("--fit-steps", type=int, default=10, help="gradient-descent steps (default 10)")
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--show-source", action="store_true", help="print the generated derivative source")
    args = ap.parse_args()

    steps, dt = args.steps, DURATION / args.steps
    theta0 = np.linspace(0.2, 2.0, 8)  # starting angles (rad), float64
    omega0 = np.zeros(8)
    stiffness = np.float64(4.0)  # g / L
    true_damping = np.float64(0.3)
    theta_obs, omega_obs = (np.asarray(s) for s in
                            srcjax.compile(final_state)(true_damping, stiffness, theta0, omega0, dt, steps))
    print(f"{steps} semi-implicit Euler steps of dt={dt:g} s for 8 pendulums; observed final angles (true "
          f"damping {true_damping}):\n  {np.array2string(theta_obs, precision=3)}")
    data = (theta0, omega0, theta_obs, omega_obs, dt, steps)

    step = srcjax.value_and_grad(loss, argnums=(0, 1))
    damping = np.float64(0.1)
    t = time.perf_counter()
    value, (g_damping, g_stiffness) = step(damping, stiffness, *data)
    ms = (time.perf_counter() - t) * 1e3
    print(f"\nloss at damping={damping}: {float(value):.6f}; first value_and_grad call {ms:.0f} ms "
          "(writes the derivative source, compiles it, runs)")

    # central finite differences of the same function, run as plain NumPy
    eps = 1e-6
    fd_damping = (loss(damping + eps, stiffness, *data) - loss(damping - eps, stiffness, *data)) / (2 * eps)
    fd_stiffness = (loss(damping, stiffness + eps, *data) - loss(damping, stiffness - eps, *data)) / (2 * eps)
    print(f"  d loss / d damping   = {float(g_damping):+.8f}   finite difference {fd_damping:+.8f}")
    print(f"  d loss / d stiffness = {float(g_stiffness):+.8f}   finite difference {fd_stiffness:+.8f}")
    ok = np.allclose([float(g_damping), float(g_stiffness)], [fd_damping, fd_stiffness], rtol=1e-5, atol=1e-8)
    print("  gradient matches finite differences:", ok)
    if not ok:
        raise SystemExit("srcjax.grad disagrees with finite differences")

    print(f"\nfitting the damping by gradient descent (lr={args.lr}), starting from {damping}:")
    t = time.perf_counter()
    for i in range(args.fit_steps):
        value, (g_damping, _) = step(damping, stiffness, *data)
        print(f"  step {i:2d}: damping {float(damping):.5f}  loss {float(value):.3e}  grad {float(g_damping):+.4f}")
        damping = damping - args.lr * np.asarray(g_damping)
    print(f"  -> damping {float(damping):.5f} (true {true_damping}); {args.fit_steps} steps in "
          f"{(time.perf_counter() - t) * 1e3:.1f} ms")

    if args.show_source:
        print("\n--- srcjax.source(value_and_grad(loss)) ---")
        print(srcjax.source(step))


if __name__ == "__main__":
    main()
