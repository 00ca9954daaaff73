"""Which cases the default tier leaves to ``SRCJAX_HYPOTHESIS=thorough`` (docs/testing.md, "Tiers").

The default suite must stay near 10 minutes on 2 cores; the thorough tier runs every case. The rules (session 36,
the team's decision):

- every primitive, rule (and rule's branch), NumPy function, program and transformation that a parametrized family
  checks keeps at least one case in the default tier; the family's rule is stated next to its entry here;
- a regression test of a fixed bug keeps its one check in the default tier unless a default-tier sibling checks
  the same class (named in ``THOROUGH_ONLY``); a test's only check of its class never leaves the default tier;
- the sample is deterministic: by position in the parametrization (``SAMPLED``: every k-th case; ``COVER``: the
  first case of each class), the same on every machine;
- making a test cheaper (jax's oracles jitted: ``tests/twins.py``'s ``JAX``/``jitted``; one oracle per function,
  shared; smaller shapes of the same class) comes before leaving a case out.

``THOROUGH_ONLY``: the slowest cases of their kind (CI durations: 5-30 s each), each with a cheaper sibling in the
default tier that checks the same class (another parametrization of the same test, or the same composition on a
smaller program). ``SAMPLED``: corpora whose every k-th case keeps every class. ``COVER``: parametrized families
whose cases' classes are named (a grid of programs x transformations x dtypes, a rule's cases at other shapes):
the first case of each class runs.

A skipped case says why (``pytest -rs``: the sibling, or the case that checks its classes); none of them is a known
failure: run the thorough tier before resolving an issue.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import Any

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
    # (session 40, suite22: 9-10 CPU s, nearly all of it srcjax writing jacrev(vmap(jacfwd(f))), 13.8k lines)
    "tests/test_compose_refusals6.py::test_a_jacobian_of_a_vmap_differentiates_the_vmap_not_the_examples_function"
    "[_diff_append]": "[_scaled_sum] (the same wrapper's choice of primal) and test_compose_refusals7.py::"
                      "test_jacrev_of_vmap_of_jacfwd_saves_inside_a_loop_in_an_if (this program's composition, run)",
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
    # (session 36, suite18: 7-30 CPU s) reverse mode over a Hessian through a static branch in its rolled loop
    "tests/test_hessian_static_branches.py::test_vjp_of_hessian_through_static_if_statements":
        "test_jacrev_of_hessian_through_a_static_conditional_expression (the same loop, branch and helpers)",
    # (session 39, suite21: 1.4-2.7 CPU s each, the file's three costliest of its 80 run cases, 40 CPU s)
    "tests/test_printed_modules_run.py::test_printed_module_runs_by_itself[loss.layernorm.hessian.vjp]":
        "[corpus.while_static_bound.hessian.vjp] (the chain) and [loss.layernorm.grad.jacrev] (the program)",
    "tests/test_printed_modules_run.py::test_printed_module_runs_by_itself[corpus.series_with_math_factorial.jacfwd"
    ".vjp]": "[loss.ridge.jacfwd.vjp], [ad.data_branches.jacfwd.vjp] (the chain) and "
             "[corpus.series_with_math_factorial.vmap.jvp] (the program)",
    "tests/test_printed_modules_run.py::test_methods_of_objects_print_a_module_that_runs[jacrev.jvp]":
        "[grad], [jacrev.vmap] and [jacfwd.vmap] (the same objects' methods printed, reverse over a transformation)",
}

# test function node id -> k: the default tier runs its cases 0, k, 2k, ...
SAMPLED: dict[str, int] = {
    "tests/test_vmap_unseen.py::test_unseen_program_agrees_with_jax_and_a_loop": 2,
    "tests/test_numpy_coverage.py::test_program": 2,
    "tests/test_ad_unseen.py::test_program_derivatives_against_jax": 2,
    "tests/test_rebinding.py::test_rebinding_in_every_mode": 2,
    "tests/test_vmap_untaken_branches.py::test_grad_of_an_unmapped_argument": 2,
    "tests/test_complex_linalg.py::test_grad_and_jvp_against_jax": 2,
    "tests/test_complex.py::test_grad_sweep_against_jax": 2,
    "tests/test_containers.py::test_hessian_and_jacobians_of_containers_match_jax": 2,
    "tests/test_ad_higher.py::test_jacrev_of_grad_through_loops": 2,
    "tests/test_ad_higher.py::test_jacrev_of_grad_of_common_programs": 2,
    "tests/test_vmap_composition_bugs.py::test_vmap_of_a_jacobian_of_a_helper_loop_with_an_unmapped_argument": 2,
    # (session 35, suite17) 19 calls x 4 dtypes, the dtype innermost: every 3rd case keeps every call (one or two of
    # its dtypes) and every dtype (six or seven calls each)
    "tests/test_fft.py::test_fft_1d_against_numpy": 3,
}


def _axes(*names: str) -> Callable[[str, dict[str, Any]], tuple[str, ...]]:
    """The classes of a case of a grid: the value of each named parameter (a function by its name)."""
    def classes(case: str, params: dict[str, Any]) -> tuple[str, ...]:
        return tuple(f"{n}={getattr(params[n], '__name__', None) or params[n]!r}" for n in names)
    return classes


def _rule_branch(case: str, params: dict[str, Any]) -> tuple[str, ...]:
    """A case ``prim:expression:shapes`` of tests/test_ad_rules.py: its primitive with the functions, keywords,
    literals and operators its expression uses (what picks a rule's branch: reduce_window's lax.max or lax.add,
    index_update's slice, integer or array index, conv's dilation or groups); not its shapes."""
    prim, rest = case.split(":", 1)
    expr = rest.rsplit(":", 1)[0]
    names = sorted(set(re.findall(r"(?:np|lax)\.[\w.]+|\w+(?=\()|\w+(?==)|'[^']*'|@", expr)))
    return (prim + ":" + ",".join(names),)


def _rule_and_dtypes(case: str, params: dict[str, Any]) -> tuple[str, ...]:
    """A case ``prim:expression:shapes:dtypes`` of tests/test_ad_dtypes.py: the rule's case (in its first
    float32/float64 mix) and the mix (which operand is float32)."""
    rule, dtypes = case.rsplit(":", 1)
    return (rule, "mix " + dtypes)


_TRANSFORMATIONS = {"jit", "grad", "value_and_grad", "vmap", "jacfwd", "jacrev", "hessian", "jvp", "vjp", "linearize",
                    "eval_shape", "numpy_function", "checkpoint", "custom_jvp", "custom_vjp"}


def _program_and_chain(case: str, params: dict[str, Any]) -> tuple[str, ...]:
    """A check ``(name, expr, dtype)`` of a corpus (tests/corpus_harness.py): its program, and the chain of
    transformations its expression applies (``vmap(grad(f), in_axes=...)``: vmap.grad, whatever its arguments)."""
    chain = ".".join(n for n in re.findall(r"(\w+)\(", params["expr"]) if n in _TRANSFORMATIONS)
    return (f"program {params['name']}", f"transformation {chain}")


# test function node id -> (what its classes are, the classes of a case: from its id, the part in brackets, and
# its parameters). The default tier runs a case when it is the first (by position in the parametrization) to check
# one of its classes, so every class keeps a case: every primitive, rule, NumPy function, program, dtype and
# transformation that the family checks; the thorough tier runs every case. `pytest -rs` names, for each case left
# out, the case that checks its classes.
COVER: dict[str, tuple[str, Callable[[str, dict[str, Any]], tuple[str, ...]]]] = {
    # (126 cases, ~0.9 CPU s each) a primitive's rule with the same functions, keywords and literals at other
    # shapes: 107 cases run
    "tests/test_ad_rules.py::test_rule": ("rule's branch", _rule_branch),
    # (201 cases, ~0.2 CPU s each: every case of test_ad_rules in each float32/float64 mix of its operands) each
    # case in its first mix, each mix
    "tests/test_ad_dtypes.py::test_every_rule_keeps_dtypes": ("rule (in another dtype mix)", _rule_and_dtypes),
    # the corpora's default checks (every check of a few programs at float64, ~0.5-2 CPU s each): each program and
    # each chain of transformations keeps a check
    "tests/test_field_programs.py::test_field_program": ("program and transformation", _program_and_chain),
    "tests/test_jax_style_programs.py::test_jax_style_program": ("program and transformation", _program_and_chain),
    "tests/test_user_programs.py::test_user_program": ("program and transformation", _program_and_chain),
    "tests/test_vmap_user_programs.py::test_vmap_user_program": ("program and transformation", _program_and_chain),
    "tests/test_vmap16_programs.py::test_vmap16_program": ("program and transformation", _program_and_chain),
    "tests/test_hunt12_programs.py::test_hunt12_program": ("program and transformation", _program_and_chain),
    "tests/test_hunt13_programs.py::test_hunt13_program": ("program and transformation", _program_and_chain),
    "tests/test_hunt14_programs.py::test_hunt14_program": ("program and transformation", _program_and_chain),
    "tests/test_hunt15_programs.py::test_hunt15_program": ("program and transformation", _program_and_chain),
    "tests/test_hunt16_programs.py::test_hunt16_program": ("program and transformation", _program_and_chain),
    "tests/test_hunt17_programs.py::test_hunt17_program": ("program and transformation", _program_and_chain),
    "tests/test_container_programs.py::test_container_program": ("program and transformation", _program_and_chain),
    # (session 42, suite24) the hunt corpora run by tests/vmap_corpus.py: their default programs' checks under the
    # same rule (test_hunt18_programs' checks are vmaps that differ by in_axes, its class: all of them run)
    "tests/test_hunt19_programs.py::test_hunt19_program": ("program and transformation", _program_and_chain),
    "tests/test_hunt20_programs.py::test_hunt20_program": ("program and transformation", _program_and_chain),
    "tests/test_hunt21_programs.py::test_hunt21_program": ("program and transformation", _program_and_chain),
    "tests/test_hunt22_programs.py::test_hunt22_program": ("program and transformation", _program_and_chain),
    "tests/test_hunt23_programs.py::test_hunt23_program": ("program and transformation", _program_and_chain),
    "tests/test_hunt25_programs.py::test_hunt25_program": ("program and transformation", _program_and_chain),
    # grids of programs x transformations (in_axes, dtypes): each value of each axis keeps a case (grids whose
    # cases cost ~0.1 CPU s or less, test_max_bar's, test_fft's n-d calls, test_windows' vmaps, all run)
    "tests/test_vmap_recursion.py::test_vmap_through_static_recursion": ("program, in_axes and transformation",
                                                                          _axes("f", "in_axes", "how")),
    "tests/test_vmap_compositions.py::test_vmap_composed_with_a_derivative_matches_a_loop": (
        "program and transformation", _axes("fn", "how")),
    "tests/test_specialized_batch_print.py::test_batched_derivatives_print_specialized_and_run": (
        "program and transformation", _axes("name", "kind")),
    "tests/test_vmap_composition_bugs.py::test_nested_vmaps_keep_shapes_computed_through_recursion_unbatched": (
        "program and nesting", _axes("fn", "k")),
    "tests/test_vmap_data_tests.py::test_vmap_of_derivative_matches_loop": ("program and transformation",
                                                                             _axes("fn", "how")),
    "tests/test_container_views.py::test_container_view_derivative": ("view and transformation", _axes("fn", "how")),
    "tests/test_vmap_jax_style_fixes.py::test_vmap_keeps_a_python_number_weak": ("program and dtype",
                                                                                  _axes("f", "dtype")),
    "tests/test_scan_weak_carry.py::test_forward_mode_keeps_jax_dtype": ("program and dtype", _axes("fn", "dtype")),
}


def thorough_cases(cases: Iterable[Any], width: int = 1) -> list[Any]:
    """The parametrization of a test only the thorough tier runs (a corpus's ``test_x_thorough``, a random test's
    further seeds): every case under ``SRCJAX_HYPOTHESIS=thorough``; in the default tier one skipped case that says
    how many it leaves out (~11,000 such cases collected, skipped and reported cost each run ~10 CPU s).
    ``width``: the number of the test's parameters."""
    cases = list(cases)
    if THOROUGH:
        return cases
    why = f"SRCJAX_HYPOTHESIS=thorough ({len(cases)} cases)"
    return [pytest.param(*([None] * width), id=f"{len(cases)}_cases", marks=pytest.mark.skip(reason=why))]


def covering(classes: list[tuple[str, ...]]) -> dict[int, int]:
    """The cases of a family the default tier leaves out, given each case's classes: index -> the index of the
    earlier case that checks its (first) class. The first case of each class runs; deterministic: by position."""
    first: dict[str, int] = {}
    left: dict[int, int] = {}
    for i, mine in enumerate(classes):
        new = [c for c in mine if c not in first]
        for c in new:
            first[c] = i
        if not new and mine:
            left[i] = first[mine[0]]
    return left


def apply(items: list[pytest.Item]) -> None:
    """Mark the default tier's skips (nothing under ``SRCJAX_HYPOTHESIS=thorough``)."""
    if THOROUGH:
        return
    _apply_cover(items)
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


def _apply_cover(items: list[pytest.Item]) -> None:
    families: dict[str, list[pytest.Item]] = {}
    for item in items:
        base, sep, _ = item.nodeid.partition("[")
        if sep and base in COVER and item.nodeid not in THOROUGH_ONLY:
            families.setdefault(base, []).append(item)
    for base, members in families.items():
        what, classes = COVER[base]
        cases = [m.nodeid.split("[", 1)[1][:-1] for m in members]
        params = [getattr(getattr(m, "callspec", None), "params", {}) for m in members]
        for i, j in covering([classes(c, p) for c, p in zip(cases, params)]).items():
            members[i].add_marker(pytest.mark.skip(
                reason=f"thorough tier (the default tier checks its {what} by [{cases[j]}])"))
