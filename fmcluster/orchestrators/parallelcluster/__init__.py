"""AWS ParallelCluster: profile, rules, construct, stack wiring and outputs, ClusterConfiguration review."""

USES = ("accounting", "node", "observability", "slurm", "storage", "topology")
