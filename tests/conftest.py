import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from hypothesis import HealthCheck, settings  # noqa: E402

# CI draws the same examples every run (a landing must not depend on luck); run
# HYPOTHESIS_PROFILE=thorough locally to search further with fresh random examples.
settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=1000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
