"""AWS PCS: profile, rules, construct, stack wiring and outputs."""

USES = ("network", "node", "slurm", "storage")
