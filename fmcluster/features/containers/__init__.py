"""Containers: the resolved container images (plan.py), the rules that check an image against the host stack
(rules.py, R-CTR-*) and the example training job rendered for every Slurm group (render_first_job.py); docs/containers.md,
docs/first-job.md. The image catalog is core data (fmcluster/catalog/containers.py)."""

USES = ("node", "slurm")
