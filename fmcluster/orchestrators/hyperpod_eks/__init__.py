"""SageMaker HyperPod on EKS: its profile, EKS plan, rules, what EKS adds to the shared construct, EKS stack and
add-ons, and stack wiring; the construct and rules it shares with HyperPod Slurm are the hyperpod slice's."""

USES = ("cluster", "hyperpod", "network", "node")
