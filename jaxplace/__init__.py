"""jaxplace: partition computation graphs into pipeline stages, fast and certified.

    import jaxplace as jp
    problem = jp.load_problem("model.json", k=8)
    result = jp.search(problem)
"""

from jaxplace import generators
from jaxplace.cost import PartitionCost, evaluate_partition, simple_lower_bound
from jaxplace.errors import JaxplaceError
from jaxplace.formats import load_graph, load_problem, save_result
from jaxplace.generators import example, generate
from jaxplace.graph import CompGraph
from jaxplace.problem import Problem
from jaxplace.reference import Partition, decode_reference, evaluate_reference, kahn, slice_order

__version__ = "0.1.0"

__all__ = [
    "CompGraph",
    "JaxplaceError",
    "Partition",
    "PartitionCost",
    "Problem",
    "decode_reference",
    "evaluate_partition",
    "evaluate_reference",
    "example",
    "generate",
    "generators",
    "kahn",
    "load_graph",
    "load_problem",
    "save_result",
    "simple_lower_bound",
    "slice_order",
]
