"""Slurm accounting: the route per orchestrator and the database subnets (plan.py), the Aurora database (construct.py)
in its retained <name>-accounting stack (stack.py) and the accounting rules (rules.py, R-ACCT-*); docs/accounting.md."""

USES = ("network",)
