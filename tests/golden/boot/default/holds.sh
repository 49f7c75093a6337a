# Holds once, after every install of the boot path: later steps never fight a hold taken too early.
step_holds() {
  step holds "holding NVIDIA, EFA, kernel and Slurm packages (apt-mark hold)"
  local pkgs=()
  mapfile -t pkgs < <(installed_matching '^(nvidia-|libnvidia-|cuda-|libcuda|libnccl|nvlsm|infiniband-diags|gdrdrv|libgdrapi|gdrcopy|efa|libfabric|ibverbs|libibverbs|rdma-core|linux-image-|linux-headers-|linux-modules-|linux-aws|slurm|libslurm)')
  if [[ $(len "${pkgs[@]}") -eq 0 ]]; then
    log "no NVIDIA, EFA, kernel or Slurm package installed through the package manager: nothing to hold"
    return
  fi
  hold_packages "${pkgs[@]}"
}
