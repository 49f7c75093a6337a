"""Stack outputs of ``<name>-cluster`` that say how to reach the cluster after ``cdk deploy``.

Every orchestrator: ``ClusterName`` (here). Then what each orchestrator can honestly give at deploy time, written by
its slice's ``stack.py`` (``fmcluster/orchestrators/<key>/stack.py``): the ParallelCluster head node's instance id,
private IP and Session Manager command; the HyperPod cluster ARN, lifecycle bucket, node-listing command and SSM target
prefix; the PCS cluster id, login node group id and the command that finds and connects to the login node.

Output logical ids are the ``OUTPUT_*`` names (no ``Export``: nothing imports them, so they can change freely).
"""

from __future__ import annotations

from aws_cdk import CfnOutput, Stack

OUTPUT_CLUSTER_NAME = "ClusterName"
#: The Session Manager command to the node users log in to (ParallelCluster head node, PCS login node).
OUTPUT_CONNECT = "ConnectCommand"


def cluster_name(stack: Stack, name: str) -> None:
    """``ClusterName``: the orchestrator's cluster name (``pcluster``, ``aws sagemaker``, ``aws pcs`` use it)."""
    CfnOutput(stack, OUTPUT_CLUSTER_NAME, value=name, description="Cluster name for the orchestrator's CLI")
