"""AWS PCS: profile, rules, construct, stack wiring and outputs."""

USES = ("capacity_window", "cluster", "network", "node", "slurm", "storage")
