"""Slurm topology on the cluster: the installer and refresh timer of fmcluster-topology (render_scripts.py and
templates/), which run the standard-library generator fmcluster/topology/ec2_slurm.py on the controller; docs/topology.md."""
