"""The fleet acceptance gate as a Slurm job (render_gate.py, templates/gate.sbatch.j2), which ships the
standard-library judge fmcluster/acceptance/; docs/acceptance.md."""

USES = ("node", "observability")
