"""Slurm topology from EC2 instance topology (the lowest layer: imports only the standard library).

:mod:`fmcluster.topology.ec2_slurm` is one self-contained file that the Slurm controller node also runs
(copied there by the topology refresh timer); see its docstring for the input and output shapes.
"""

from fmcluster.topology.ec2_slurm import (
    DEFAULT_NVLINK_TYPES,
    FALLBACK_SWITCH,
    InputError,
    Nodes,
    Topology,
    build,
    generate,
    parse_instances,
    parse_node_map,
    parse_nodes,
    read_json_or_text,
    render_conf,
    render_yaml,
)

__all__ = ["DEFAULT_NVLINK_TYPES", "FALLBACK_SWITCH", "InputError", "Topology", "build", "generate", "parse_instances",
           "Nodes", "parse_node_map", "parse_nodes", "read_json_or_text", "render_conf", "render_yaml"]
