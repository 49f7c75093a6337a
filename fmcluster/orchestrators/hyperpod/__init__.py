"""What SageMaker HyperPod's two orchestrations share: instance-group facts, the cluster construct, the rules, the
stack wiring and outputs (used by the hyperpod_slurm and hyperpod_eks slices)."""

USES = ("cluster", "node", "storage")
