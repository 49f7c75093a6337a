"""AWS PCS: profile, rules, construct, stack wiring and outputs."""

USES = ("cluster", "network", "node", "slurm", "storage")
