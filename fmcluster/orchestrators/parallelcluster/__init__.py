"""AWS ParallelCluster: profile, rules, construct, stack wiring and outputs, ClusterConfiguration review."""

USES = ("accounting", "cluster", "node", "observability", "slurm", "storage", "topology")
