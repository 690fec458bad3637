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
