"""Which slow tests the default tier leaves to ``SRCJAX_HYPOTHESIS=thorough`` (docs/testing.md, "Tiers").

The default suite must stay near 10 minutes on 2 cores. These cases are the slowest of their kind (CI
durations, session 29: 5-16 s each) and each has a cheaper sibling in the default tier that checks the same
class of program (another parametrization of the same test, or the same composition on a smaller program);
the thorough tier runs them all. Sampled corpora run every k-th case by default (stable: by position in
the parametrization, so the same cases run on every machine).

A skipped case says why (``pytest -rs``); none of them is a known failure: run the thorough tier before
resolving an issue.
"""

from __future__ import annotations

import os

import pytest

THOROUGH = os.environ.get("SRCJAX_HYPOTHESIS") == "thorough"

# node id -> the cheaper default-tier sibling that checks the same class
THOROUGH_ONLY: dict[str, str] = {
    "tests/test_compose_refusals7.py::test_hessian_through_a_vmap_of_grad[rows_grads_loss-hessian]":
        "[grads_loss-jacfwd_grad]",
    "tests/test_compose_refusals7.py::test_hessian_through_a_vmap_of_grad[rows_grads_loss-jacfwd_grad]":
        "[grads_loss-jacfwd_grad]",
    # (session 30, suite12: ~5-10 CPU s each, pytest -n 0)
    "tests/test_compose_refusals7.py::test_hessian_through_a_vmap_of_grad[grads_loss-hessian]":
        "[grads_loss-jacfwd_grad] (forward over reverse through the same helper)",
    "tests/test_compose_refusals7.py::test_vmap_of_grad_through_a_vmap_moving_an_axis[1]": "[0] (the same helper)",
    "tests/test_compose_refusals7.py::test_vmap_of_grad_through_a_jacrev_in_the_body[1]": "[0] (the same helper)",
    "tests/test_compose_refusals.py::test_jvp_vjp_eval_shape_lower_of_a_hessian_of_a_vector_output[jvp]":
        "[vjp] and test_transformations_of_a_hessian_of_a_vector_output[jacfwd(hessian)] (forward mode over it)",
    "tests/test_compose_refusals6.py::test_an_error_of_a_jacobian_of_a_vmap_is_not_the_examples_function_run_on_"
    "whole_arguments": "test_a_jacobian_of_a_vmap_differentiates_the_vmap_not_the_examples_function and "
                       "test_compose_refusals7.py::test_jacrev_of_vmap_of_jacfwd_saves_inside_a_loop_in_an_if",
    "tests/test_hessian_general.py::test_transformations_of_a_hessian_agree_with_jax[array_out-1d]":
        "[scalar_out-1d] and the other array outputs",
    "tests/test_compose_refusals.py::test_vjp_of_a_derivative_whose_helper_has_a_loop[vjp(hessian)]":
        "the other derivative",
    "tests/test_compose_refusals.py::test_transformations_of_a_hessian_of_a_vector_output[jacrev(hessian)]":
        "[jacfwd(hessian)]",
    "tests/test_compose_refusals.py::test_transformations_of_a_hessian_of_a_vector_output[jit(jacfwd(hessian))]":
        "[jacfwd(hessian)]",
    "tests/test_vmap_composition_bugs.py::test_vmap_of_a_derivative_in_an_unmapped_argument_carried_by_a_while"
    "[jacfwd]": "the other derivatives",
    "tests/test_first_call.py::test_a_first_call_leaves_little_cyclic_garbage[nested-vmap]": "[hessian]",
    "tests/test_random_regressions.py::test_and_or_of_data_tests_in_an_if[and-false-grad]": "the other 15 cases",
    "tests/test_rebinding.py::test_regression_programs_second_order[fz_a]": "[fz_b]",
    "tests/test_tape_compose3.py::test_three_level_composition_matches_jax[p_cumprod-vmap(jacrev(jacfwd))]":
        "[p_cumsum-vmap(jacrev(jacfwd))]",
    "tests/test_vmap_nested_index.py::test_vmap_of_vmap_with_a_mapped_index[scatter]": "[add_at]",
    "tests/test_ad_higher.py::test_jacrev_of_jacrev_through_loops[break]": "[f3], [over_shape]",
    "tests/test_compose_refusals8.py::test_second_vmap_of_an_early_return_before_a_static_axis[hessian]":
        "the other derivatives",
    "tests/test_vmap_bugs28.py::test_vmap_of_grad_of_two_helpers_saving_loop_counters_on_one_tape"
    "[two_accumulate-two_accumulate_jax]": "[two_cumulative-two_cumulative_jax]",
    "tests/test_vmap_untaken_branches.py::test_grad_of_an_unmapped_argument[break]": "the other 10 cases",
    "tests/test_compose_unseen.py::test_composition_agrees_with_jax[grad_of_vmap_jacfwd_dict]":
        "the other compositions",
}

# test function node id -> k: the default tier runs its cases 0, k, 2k, ...
SAMPLED: dict[str, int] = {
    "tests/test_vmap_unseen.py::test_unseen_program_agrees_with_jax_and_a_loop": 2,
    "tests/test_numpy_coverage.py::test_program": 2,
    "tests/test_specialized_batch_print.py::test_batched_derivatives_print_specialized_and_run": 2,
    "tests/test_ad_unseen.py::test_program_derivatives_against_jax": 2,
    "tests/test_vmap_compositions.py::test_vmap_composed_with_a_derivative_matches_a_loop": 2,
    "tests/test_vmap_recursion.py::test_vmap_through_static_recursion": 2,
    "tests/test_rebinding.py::test_rebinding_in_every_mode": 2,
    "tests/test_vmap_untaken_branches.py::test_grad_of_an_unmapped_argument": 2,
    "tests/test_complex_linalg.py::test_grad_and_jvp_against_jax": 2,
    "tests/test_complex.py::test_grad_sweep_against_jax": 2,
    "tests/test_containers.py::test_hessian_and_jacobians_of_containers_match_jax": 2,
    "tests/test_ad_higher.py::test_jacrev_of_grad_through_loops": 2,
    "tests/test_ad_higher.py::test_jacrev_of_grad_of_common_programs": 2,
    "tests/test_vmap_composition_bugs.py::test_vmap_of_a_jacobian_of_a_helper_loop_with_an_unmapped_argument": 2,
    "tests/test_vmap_composition_bugs.py::test_nested_vmaps_keep_shapes_computed_through_recursion_unbatched": 2,
    "tests/test_lax_numpy.py::test_lax_function_matches_jax": 2,
    # (session 31, suite13) its 4 default programs' checks: every transformation keeps a case (rk4_scan's
    # hessian, ~7 s, goes: eight_schools' hessian stays)
    "tests/test_hunt12_programs.py::test_hunt12_program": 2,
    # (every 2nd of its 49 default checks keeps every program and every transformation)
    "tests/test_container_programs.py::test_container_program": 2,
    # (session 35, suite17) 19 calls x 4 dtypes, the dtype innermost: every 3rd case keeps every call (one or two of
    # its dtypes) and every dtype (six or seven calls each)
    "tests/test_fft.py::test_fft_1d_against_numpy": 3,
}


def apply(items: list[pytest.Item]) -> None:
    """Mark the default tier's skips (nothing under ``SRCJAX_HYPOTHESIS=thorough``)."""
    if THOROUGH:
        return
    seen: dict[str, int] = {}
    for item in items:
        node = item.nodeid
        sibling = THOROUGH_ONLY.get(node)
        if sibling is not None:
            item.add_marker(pytest.mark.skip(reason=f"thorough tier (slow; the default tier checks {sibling})"))
            continue
        base = node.split("[", 1)[0]
        k = SAMPLED.get(base)
        if k is not None and "[" in node:
            i = seen.get(base, 0)
            seen[base] = i + 1
            if i % k:
                item.add_marker(pytest.mark.skip(reason=f"thorough tier (the default tier runs every {k}th case)"))
