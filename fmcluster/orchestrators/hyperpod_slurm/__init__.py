"""SageMaker HyperPod with Slurm: its profile and stack wiring; the construct and rules it shares with HyperPod EKS
are the hyperpod slice's."""

USES = ("hyperpod",)
