import os
import sys
from pathlib import Path

# tests/ mirrors jaxplace/ (tests/decoder/, tests/objectives/throughput/, ...) with no
# __init__.py: pytest imports each test file by its basename (so basenames are unique
# across tests/; a duplicate is an 'import file mismatch' collection error), and the
# shared helpers here (brute, oracles, strategies, random_problems, repo_paths, ...)
# import as top-level modules from any folder: `from brute import brute_force_slice`.
sys.path.insert(0, os.path.dirname(__file__))
# No persistent XLA cache in the user's home from tests (the decoder turns it on at
# first use): tests that want one set JAXPLACE_CACHE_DIR to a tmp folder.
os.environ.setdefault("JAXPLACE_CACHE_DIR", "")

from hypothesis import HealthCheck, settings  # noqa: E402

# CI draws the same examples every run (a landing must not depend on luck); run
# HYPOTHESIS_PROFILE=thorough locally to search further with fresh random examples.
settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=1000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# The NeurIPS 2020 workloads (github.com/msr-fiddle/dnn-partitioning). Tests that need
# them read JAXPLACE_DATA (a folder holding dnn-partitioning/), by default ../shared/data
# next to the repository, and skip with NEURIPS_SKIP when the folder is absent:
#     from conftest import NEURIPS, NEURIPS_SKIP
DATA = Path(os.environ.get("JAXPLACE_DATA")
            or Path(__file__).resolve().parents[2] / "shared" / "data")
NEURIPS = DATA / "dnn-partitioning"
NEURIPS_SKIP = (f"NeurIPS workloads not found in {NEURIPS}: run `git clone "
                "https://github.com/msr-fiddle/dnn-partitioning DATA/dnn-partitioning` "
                "and set JAXPLACE_DATA=DATA")

import pytest  # noqa: E402

#: Tests moved to the heavy set (`pytest -m heavy`) to keep the default suite under 10
#: minutes on 2 cores, by node id relative to tests/ (`folder/test_file.py::test[params]`;
#: a collection of the whole of tests/ fails on an id that names no test, so a renamed
#: or moved test cannot silently rejoin the default suite). Each is the slowest of its
#: kind; a faster test of the same property stays in the default set (named after the
#: arrow). Seconds: a loaded 2-core run (about 4x a quiet one).
HEAVY_BY_ID = {
    "policy/test_distributed_train.py::test_two_cpu_processes_resume_and_train_as_one": 271,  # -> resume/train tests in test_policy
    "policy/test_policy.py::test_tiny_training_with_self_imitation_learns": 214,  # -> test_tiny_training_improves_reward
    "policy/test_policy.py::test_tiny_ppo_training_improves_reward": 139,  # -> test_ppo_surrogate_starts_as_reinforce_and_clips
    "policy/test_policy.py::test_training_adds_attention_to_a_starting_policy": 129,
    "policy/test_policy.py::test_training_with_a_dfs_anchor_starts_from_a_policy_without_one": 124,
    "policy/test_policy.py::test_training_from_block_labels_and_a_starting_policy": 101,
    "policy/test_policy.py::test_tiny_training_from_expert_solutions_runs": 98,  # -> test_expert_memory_starts_at_the_search_solutions
    "policy/test_policy.py::test_training_scores_colocation_classes_exactly": 70,  # -> ..._cpu_blocks_exactly
    "policy/test_policy.py::test_tie_probe_drops_problems_where_every_order_costs_the_same": 65,
    "search/many/test_search_many.py::test_ray_executor_matches_local": 127,
    "decoder/test_decoder_sharding.py::test_sharded_population_on_4_cpu_devices": 117,
    "search/many/test_many_program.py::test_a_group_of_one_equals_the_vmapped_group": 97,
    "search/many/test_many_program.py::test_neighbours_and_ask_draw_what_the_plain_calls_draw": 96,
    "relax/test_relax.py::test_relax_result_is_exact_and_beats_random": 92,  # -> test_exact_mode_matches_evaluate_partition
    "relax/test_relax.py::test_chain_of_equal_weights": 54,
    "search/many/test_islands_mode.py::test_four_host_devices_equal_one_through_search_many": 92,
    "search/many/test_search_many.py::test_cancel_keeps_finished_results_and_unfinished_bests": 85,  # -> ..._reports_unstarted_ones
    "search/test_search.py::test_shipped_policy_is_chosen_by_the_problem": 81,
    "decoder/test_gpu_defaults.py::test_island_groups_on_a_gpu_pick_fused_unless_a_problem_needs_lanes": 74,
    "objectives/test_objectives.py::test_search_matrix[throughput-CMA_ES]": 67,  # -> the other methods' cells
    "objectives/test_objectives.py::test_search_matrix[throughput-unequal-CMA_ES]": 66,
    "objectives/latency/test_latency_schedule.py::test_search_beats_eft": 70,
    "integration/test_determinism.py::test_multilevel_same_under_load_and_a_time_limit_says_it_cut": 62,
    "decoder/test_decoder_threads.py::test_sampled_window_is_exact_and_used": 66,
    "spatial/test_spatial.py::test_random_cnn_split_execution_matches_unsplit": 64,  # -> resnet18/yolo plans execute
    "search/many/test_many_program.py::test_the_decoders_orders_are_kahns": 76,
    "relax/test_relax.py::test_gradient_matches_finite_differences": 33,
    # second pass (a moderately loaded run, about 1.5-2x a quiet one)
    "integration/test_determinism.py::test_search_many_same_for_workers_load_and_batch_mates": 40,  # -> test_default_search_same_under_load, test_batch_independence
    "integration/test_determinism.py::test_search_many_result_alone_equals_in_a_batch_that_forces_a_merge": 25,
    "search/test_islands_elites.py::test_sparse_bounded_islands_are_valid_and_deterministic": 27,  # -> test_islands.py
    "decoder/test_decoder_cpu_blocks.py::test_explicit_windows_are_exact": 32,  # -> ..._medium_cpu_blocks_matches_reference[0]
    "decoder/test_decoder_cpu_blocks.py::test_small_workloads_match_reference[gnmt_inference]": 19,
    "decoder/test_decoder_cpu_blocks.py::test_small_workloads_match_reference[bert24_inference]": 10,
    "decoder/test_decoder_cpu_blocks.py::test_medium_cpu_blocks_matches_reference[3]": 13,
    "decoder/test_decoder_cpu_blocks.py::test_medium_cpu_blocks_matches_reference[2]": 11,
    "decoder/test_compile_less.py::test_restructured_dp_is_bit_identical[False]": 26,
    "decoder/test_compile_less.py::test_first_answer_before_any_compiled_program": 18,
    "search/many/test_bucket_classes.py::test_class_padding_changes_no_result[8]": 24,
    "bench/test_bench_gpu.py::test_tiny_decoder_part": 24,
    "torch/test_torch_pipeline.py::test_two_process_pipeline_equals_the_model": 23,  # -> test_torch_training (two processes)
    "relax/test_relax.py::test_two_chains_known_optimum": 22,  # -> test_exact_mode_matches_evaluate_partition
    "objectives/latency/test_latency_schedule.py::test_cli_latency_certify": 22,  # -> test_cli_latency
    "search/many/test_islands_mode.py::test_equals_island_search_directly": 21,
    "search/test_search.py::test_random_best_matches_reference_oracle": 21,
    "search/test_search.py::test_observer_reports_the_best_of_all_phases": 12,
    "search/test_search.py::test_every_method_returns_a_consistent_result[CMA_ES]": 12,
    "search/many/test_search_many.py::test_ctrl_c_keeps_every_best": 21,  # -> test_search.py's Ctrl-C test
    "search/many/test_device_refine.py::test_blocks_equal_the_host_traceback": 20,  # -> ..._never_worsens_and_matches_reference
    "objectives/throughput_unequal/test_hetero_throughput.py::test_jax_decoder_stages[4]": 17,  # -> [1]
    "objectives/throughput_unequal/test_hetero_throughput.py::test_search_result_validates[default]": 18,
    "decoder/test_gpu_defaults.py::test_island_auto_on_the_cpu_is_the_lanes_search": 18,
    "bounds/test_bounds.py::test_ladder_is_ordered_on_a_medium_graph": 17,
    "spatial/test_spatial.py::test_optimizer_plans_of_resnet18_and_yolo_execute_correctly[_small_yolo-cluster1-None]": 15,
    "objectives/latency/test_latency_small.py::test_default_search_within_one_percent": 15,
    "cli/test_time_limits_end.py::test_partition_ends_without_waiting_for_an_abandoned_compile": 14,
    "objectives/throughput/test_polish_budget.py::test_search_many_asks_the_budget_with_its_polish_option": 14,
    "objectives/test_objectives.py::test_search_matrix[latency-CMA_ES]": 13,
    "objectives/test_objectives.py::test_search_matrix[throughput-relax+brkga]": 13,
    "objectives/test_objectives.py::test_search_matrix[throughput-relax]": 10,
    "cli/test_cli_fusion.py::test_partition_latency_fusion": 13,
    "cli/test_cli.py::test_partition_runs_on_every_shared_file[inceptionv3_inference.json]": 13,
    "pipeline/test_jax_pipeline.py::test_nnx_module_on_two_host_devices": 12,
    # third pass: a clean clone's .ci/run took 622 s (suite 530 s), over the 10 minutes
    "search/test_islands.py::test_costs_history_and_grouping": 38,  # -> test_islands_mode, test_device_refine
    "objectives/throughput_unequal/test_hetero_throughput.py::test_jax_decoder_stages[1]": 16,  # -> test_jax_decoder_equals_reference
    "decoder/test_decoder_cpu_blocks.py::test_medium_cpu_blocks_matches_reference[0]": 11,  # -> [1]
    "spatial/test_spatial.py::test_optimizer_plans_of_resnet18_and_yolo_execute_correctly[_small_resnet18-cluster0-None]": 13,
    "relax/test_relax.py::test_optimize_compiles_once_per_shape": 10,
    "policy/test_policy.py::test_training_scores_cpu_blocks_exactly": 11,
    "cli/test_time_limits_end.py::test_partition_certify_ends_within_its_limit": 12,  # -> test_one_time_limit
    "integration/test_batch_independence.py::test_second_place_in_a_batch_equals_alone": 26,  # -> its twins/seed tests
    "objectives/latency/test_latency_schedule.py::test_cli_latency": 19,  # -> test_cluster_defects' latency CLI cases
    "decoder/test_decoder.py::test_k_larger_than_n_and_single_node": 16,  # -> the fused/sparse k > n cases
    "relax/test_relax.py::test_exact_mode_matches_evaluate_partition": 16,  # -> test_soft_costs_converge_...
    "decoder/test_decoder_cpu_blocks.py::test_evaluate_graphs_mixed_padded_sizes_and_training_graphs": 15,
    "decoder/test_decoder.py::test_evaluate_entry_point[simple-False]": 14,  # -> [lanes-False]
    "search/test_search.py::test_brkga_beats_its_first_population": 10,
    "importers/test_importers.py::test_flax_linen_mlp": 10,
    # the dynamo exporter's cases (onnxscript, in the test extra): one stays (gpt2-dynamo);
    # seconds at -n 0, load 5
    "importers/test_importer_agreement.py::test_importers_agree[encoder-dynamo]": 6,  # -> gpt2-dynamo
    "importers/test_importer_agreement.py::test_importers_agree[resnet-dynamo]": 5,  # -> gpt2-dynamo
    "importers/test_importer_agreement.py::test_importers_agree[vit-dynamo]": 3,  # -> gpt2-dynamo
    "importers/test_importer_agreement.py::test_importers_agree[mlp-dynamo]": 3,  # -> gpt2-dynamo
    "importers/test_importer_agreement.py::test_importers_agree[encoder-torchscript14]": 4,
}


TESTS = Path(__file__).resolve().parent


def _heavy_id(item) -> str:
    """The item's node id relative to tests/ (pytest's own is relative to the rootdir)."""
    path = item.path.relative_to(TESTS) if item.path.is_relative_to(TESTS) else item.path
    return f"{path.as_posix()}::{item.nodeid.split('::', 1)[-1]}"


def _collects_all_of_tests(config) -> bool:
    """Whether this run collects every test file under tests/ (so every HEAVY_BY_ID id
    must match): its paths are tests/ or a folder above it, nothing is ignored, and no
    last-failed run skipped files."""
    if config.getoption("ignore") or config.getoption("ignore_glob") or \
            config.getoption("lf", False):
        return False
    paths = [Path(config.invocation_params.dir, a.split("::")[0]).resolve()
             for a in config.args]
    return bool(paths) and all(TESTS == p or TESTS.is_relative_to(p) for p in paths)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """Mark the tests of HEAVY_BY_ID heavy before `-m 'not heavy'` deselects; on a
    collection of the whole of tests/, an id that matches no test is a collection error."""
    found, unparametrized = set(), set()
    for item in items:
        key = _heavy_id(item)
        if key in HEAVY_BY_ID:
            item.add_marker(pytest.mark.heavy)
            found.add(key)
        elif key.endswith("[NOTSET]"):  # parameters read from data absent here (NeurIPS)
            unparametrized.add(key.removesuffix("[NOTSET]"))
    # a file that failed to import already fails the run, and its ids are not stale
    if session.testsfailed == 0 and _collects_all_of_tests(config):
        stale = sorted(k for k in set(HEAVY_BY_ID) - found
                       if k.split("[")[0] not in unparametrized)
        if stale:  # a collection error: the run stops before any test, also under xdist
            config.hook.pytest_collectreport(report=pytest.CollectReport(
                "tests/conftest.py::HEAVY_BY_ID", "failed",
                f"{len(stale)} id(s) in HEAVY_BY_ID match no collected test (renamed or "
                "moved? update them):\n  " + "\n  ".join(stale), []))
