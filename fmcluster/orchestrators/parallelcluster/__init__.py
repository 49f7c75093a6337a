"""AWS ParallelCluster: profile, rules, construct, stack wiring and outputs, ClusterConfiguration review."""

USES = ("accounting", "node", "slurm", "storage", "topology")
