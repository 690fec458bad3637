"""The latency objective: one inference on a cluster of unequal devices (MOIRAI)."""

from jaxplace.latency.instance import (LatencyInstance, Schedule, Transfer,
                                       validate_schedule)

__all__ = ["LatencyInstance", "Schedule", "Transfer", "validate_schedule"]
