"""Clusters of (possibly unequal) devices and directed links, read from JSON files.

`load_cluster(path)` reads a cluster file (format in `jaxplace.cluster.io`) or a
shipped example by name: "moirai_inter" and "moirai_intra" are the two testbeds of
MOIRAI (Zhang et al., 2023, Table III). Modules: `model` (`Cluster`, `Device`), `io`
(the file format), `times` (`instance_from(graph, cluster)`: a graph's op times on each
device and its transfers over the links, the arrays of the cluster objectives).
"""

from jaxplace.cluster.io import cluster_from_dict, example_names, load_cluster, uniform_cluster
from jaxplace.cluster.model import Cluster, Device

__all__ = ["Cluster", "Device", "cluster_from_dict", "example_names", "load_cluster",
           "uniform_cluster"]
