import os
import sys
from pathlib import Path

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
#: minutes on 2 cores. Each is the slowest of its kind; a faster test of the same
#: property stays in the default set (named after the arrow). Seconds: a loaded 2-core
#: run (about 4x a quiet one).
HEAVY_BY_ID = {
    "test_distributed_train.py::test_two_cpu_processes_resume_and_train_as_one": 271,  # -> resume/train tests in test_policy
    "test_policy.py::test_tiny_training_with_self_imitation_learns": 214,  # -> test_tiny_training_improves_reward
    "test_policy.py::test_tiny_ppo_training_improves_reward": 139,  # -> test_ppo_surrogate_starts_as_reinforce_and_clips
    "test_policy.py::test_training_adds_attention_to_a_starting_policy": 129,
    "test_policy.py::test_training_with_a_dfs_anchor_starts_from_a_policy_without_one": 124,
    "test_policy.py::test_training_from_block_labels_and_a_starting_policy": 101,
    "test_policy.py::test_tiny_training_from_expert_solutions_runs": 98,  # -> test_expert_memory_starts_at_the_search_solutions
    "test_policy.py::test_training_scores_colocation_classes_exactly": 70,  # -> ..._cpu_blocks_exactly
    "test_policy.py::test_tie_probe_drops_problems_where_every_order_costs_the_same": 65,
    "test_search_many.py::test_ray_executor_matches_local": 127,
    "test_decoder_sharding.py::test_sharded_population_on_4_cpu_devices": 117,
    "test_many_program.py::test_a_group_of_one_equals_the_vmapped_group": 97,
    "test_many_program.py::test_neighbours_and_ask_draw_what_the_plain_calls_draw": 96,
    "test_relax.py::test_relax_result_is_exact_and_beats_random": 92,  # -> test_exact_mode_matches_evaluate_partition
    "test_relax.py::test_chain_of_equal_weights": 54,
    "test_islands_mode.py::test_four_host_devices_equal_one_through_search_many": 92,
    "test_search_many.py::test_cancel_keeps_finished_results_and_unfinished_bests": 85,  # -> ..._reports_unstarted_ones
    "test_search.py::test_shipped_policy_is_chosen_by_the_problem": 81,
    "test_gpu_defaults.py::test_island_groups_on_a_gpu_pick_fused_unless_a_problem_needs_lanes": 74,
    "test_objectives.py::test_search_matrix[throughput-CMA_ES]": 67,  # -> the other methods' cells
    "test_objectives.py::test_search_matrix[throughput-unequal-CMA_ES]": 66,
    "test_latency_schedule.py::test_search_beats_eft": 70,
    "test_determinism.py::test_multilevel_same_under_load_and_a_time_limit_says_it_cut": 62,
    "test_decoder_threads.py::test_sampled_window_is_exact_and_used": 66,
    "test_spatial.py::test_random_cnn_split_execution_matches_unsplit": 64,  # -> resnet18/yolo plans execute
    "test_many_program.py::test_the_decoders_orders_are_kahns": 76,
    "test_relax.py::test_gradient_matches_finite_differences": 33,
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark the tests of HEAVY_BY_ID heavy before `-m 'not heavy'` deselects."""
    for item in items:
        if item.nodeid.split("/")[-1] in HEAVY_BY_ID:
            item.add_marker(pytest.mark.heavy)
