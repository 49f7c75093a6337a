"""Orchestrator constructs: ParallelCluster, SageMaker HyperPod, AWS PCS."""
