# The official image has no NCCL: install the locked NCCL from NVIDIA's signed repository, pinned.
step_nccl() {
  step nccl "NCCL ${FMC_LOCK_NCCL} (CUDA 13 build) from NVIDIA's repository"
  local have
  have="$(pkg_version libnccl2)"
  if [[ -n ${have} ]] && same_version "${have}" "${FMC_LOCK_NCCL}"; then
    log "NCCL ${have} already installed, left alone"
    return
  fi
  if nvidia_repo_configured; then
    log "an NVIDIA CUDA repository is already configured"
  else
    local key="${FMC_ROOT}${FMC_CACHE}/nvidia-cuda.pub" fpr
    fetch "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/3bf863cc.pub" "${key}"
    fpr="$(key_fingerprint "${key}")"
    key_matches "${fpr}" "EB693B3035CD5710E231E123A4B469963BF863CC" \
      || die "NVIDIA repository key ${fpr:-unreadable} is not the pinned EB693B3035CD5710E231E123A4B469963BF863CC"
    add_nvidia_repo "${key}" "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/"
    log "repository https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/ added, signing key EB693B3035CD5710E231E123A4B469963BF863CC"
  fi
  local todo=() spec
  for spec in "libnccl2=2.31.2-1+cuda13*" "libnccl-dev=2.31.2-1+cuda13*"; do
    pin_package "${spec%%=*}" "${spec#*=}"
    todo+=("$(install_spec "${spec%%=*}" "${spec#*=}")")
  done
  install_packages "${todo[@]}"
  have="$(pkg_version libnccl2)"
  # shellcheck disable=SC2053  # the pin is a glob on purpose
  [[ -n ${have} && ${have} == 2.31.2-1+cuda13* ]] || die "after install NCCL is '${have}', expected 2.31.2-1+cuda13*"
  ldconfig
  log "NCCL ${have} installed"
}
