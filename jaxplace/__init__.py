"""jaxplace: partition computation graphs into pipeline stages, fast and certified.

    import jaxplace as jp
    problem = jp.load_problem("model.json", k=8)
    result = jp.search(problem)
"""

from jaxplace import generators, importers
from jaxplace.bounds import Certificate, certify
from jaxplace.cost import PartitionCost, evaluate_partition, simple_lower_bound
from jaxplace.decoder import decode, evaluate, evaluate_graphs, make_evaluator
from jaxplace.errors import JaxplaceError
from jaxplace.formats import load_graph, load_problem, save_result
from jaxplace.generators import example, generate
from jaxplace.graph import CompGraph
from jaxplace.importers import from_jax, from_onnx
from jaxplace.problem import Problem
from jaxplace.reference import Partition, decode_reference, evaluate_reference, kahn, slice_order
from jaxplace.search import ALGORITHMS, BRKGA, METHODS, Result, search

__version__ = "0.1.0"

__all__ = [
    "ALGORITHMS",
    "BRKGA",
    "METHODS",
    "Result",
    "Certificate",
    "CompGraph",
    "JaxplaceError",
    "Partition",
    "PartitionCost",
    "Problem",
    "certify",
    "decode",
    "decode_reference",
    "evaluate",
    "evaluate_graphs",
    "evaluate_partition",
    "evaluate_reference",
    "example",
    "from_jax",
    "from_onnx",
    "generate",
    "generators",
    "importers",
    "kahn",
    "load_graph",
    "load_problem",
    "make_evaluator",
    "save_result",
    "search",
    "simple_lower_bound",
    "slice_order",
]
