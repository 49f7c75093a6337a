"""AWS ParallelCluster: profile, rules, construct, stack wiring and outputs, ClusterConfiguration review."""

USES = ("acceptance", "accounting", "capacity_window", "cluster", "node", "observability", "slurm", "storage", "topology")
