"""SageMaker HyperPod with Slurm: its profile, what Slurm adds to the shared construct (controller and login groups,
SlurmConfig, the FSx mount, the Slurm hooks) and stack wiring; the construct and rules it shares with HyperPod EKS
are the hyperpod slice's."""

USES = ("capacity_window", "cluster", "hyperpod", "slurm", "storage")
