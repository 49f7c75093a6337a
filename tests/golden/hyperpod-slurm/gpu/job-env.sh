# fmcluster job environment for hp-train/gpu (p5.48xlarge), stack dlami-2026-10.
# Rendered by fmcluster; installed at /opt/fmcluster/etc/job-env.sh and sourced from /etc/profile.d/fmcluster.sh.
# Slurm jobs: `source /opt/fmcluster/etc/job-env.sh` (or point TaskProlog at it).
# shellcheck shell=bash
export PATH="/usr/local/cuda-13.2/bin:/opt/amazon/efa/bin${PATH:+:${PATH}}"
export LD_LIBRARY_PATH="/usr/local/cuda-13.2/lib64${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
export CUDA_HOME="/usr/local/cuda-13.2"
# aws-ofi-nccl 1.21.1 sets the tuned per-platform values for p5.48xlarge itself
# when they are unset (NCCL_BUFFSIZE, NCCL_P2P_NET_CHUNKSIZE, NCCL_NVLS*_CHUNKSIZE, NCCL_NET_FORCE_FLUSH,
# NCCL_NETDEVS_POLICY, NCCL_TOPO_FILE, FI_EFA_FORK_SAFE, the efa provider filter), so they are not set here.
# NCCL bootstrap sockets avoid docker/loopback/veth interfaces (ADT-NT)
export NCCL_SOCKET_IFNAME='^docker,lo,veth'
# short name of aws-ofi-nccl >= 1.15.0 (libnccl-net-ofi.so); stops NGC images' NCCL_NET_PLUGIN default from leaving NCCL on sockets (S13, R-NAME-1)
export NCCL_NET_PLUGIN=ofi
# end of fmcluster job environment
