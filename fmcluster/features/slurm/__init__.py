"""Slurm wiring shared by the Slurm orchestrators: the health check, task prolog, per-job IMEX prolog, slurm.conf
editor, hooks installer, enroot/pyxis set-up and the nccl-tests job (render_hooks.py and templates/); docs/topology.md,
docs/containers.md."""
