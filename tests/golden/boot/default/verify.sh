# Verify the node against the lock, listing EVERY difference before failing. The boot path never installs
# the driver, Fabric Manager, IMEX, CUDA toolkit, EFA installer or GDRCopy: a node that differs is the wrong
# image. Official mode: a difference in a component the catalog could not verify is only reported.
FMC_DIFFS=()
FMC_REPORTED=()
lock_differs() {  # lock_differs COMPONENT DETAIL
  if [[ " ${FMC_REPORTED_ONLY} " == *" $1 "* ]]; then
    FMC_REPORTED+=("$1: $2")
  else
    FMC_DIFFS+=("$1: $2")
  fi
}
lock_compare() {  # lock_compare COMPONENT HAVE WANT [exact]: record a difference (leading dotted number unless exact)
  local component=$1 have=$2 want=$3 exact=${4:-}
  if [[ -z ${have} ]]; then
    lock_differs "${component}" "not found on the image, the lock needs ${want}"
  elif [[ -n ${exact} && ${have} != "${want}" ]] || ! same_version "${have}" "${want}"; then
    lock_differs "${component}" "image has ${have}, the lock needs ${want}"
  else
    log "${component} ${have} matches the lock"
  fi
}

step_verify() {
  step verify "verifying the image against the lock (${FMC_IMAGE_MODE} mode)"
  local kernel initramfs
  kernel="$(uname -r)"
  lock_compare driver "$(driver_version)" "${FMC_LOCK_DRIVER}" exact
  if [[ -r ${FMC_ROOT}/proc/driver/nvidia/version ]]; then
    lock_compare driver-loaded "$(loaded_driver_version)" "${FMC_LOCK_DRIVER}" exact
  else
    lock_differs driver-loaded "/proc/driver/nvidia/version missing: the nvidia module is not loaded"
  fi
  lock_compare kernel_modules "$(module_flavor | sed 's/^none$//')" "${FMC_LOCK_KERNEL_MODULES}" exact
  if [[ -r ${FMC_ROOT}/proc/driver/nvidia/version && "$(loaded_module_flavor)" != "${FMC_LOCK_KERNEL_MODULES}" ]]; then
    lock_differs kernel_modules "the loaded module is $(loaded_module_flavor), the lock needs ${FMC_LOCK_KERNEL_MODULES}"
  fi
  lock_compare fabric_manager "$(pkg_version nvidia-fabricmanager)" "${FMC_LOCK_FABRIC_MANAGER}"
  lock_compare cuda "$(cuda_version "${FMC_ROOT}${FMC_CUDA_PATH}")" "${FMC_LOCK_CUDA}"
  lock_compare efa_installer "$(efa_installer_version)" "${FMC_LOCK_EFA_INSTALLER}" exact
  lock_compare libfabric "$(libfabric_version)" "${FMC_LOCK_LIBFABRIC}" exact
  local plugin
  plugin="$(plugin_library "${FMC_ROOT}/opt/amazon/ofi-nccl/lib" "${FMC_ROOT}/opt/amazon/ofi-nccl/lib64" "${FMC_ROOT}/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu")"
  if [[ -z ${plugin} ]]; then
    lock_differs aws_ofi_nccl "no aws-ofi-nccl library in /opt/amazon/ofi-nccl/lib /opt/amazon/ofi-nccl/lib64 /opt/amazon/ofi-nccl/lib/x86_64-linux-gnu, the lock needs ${FMC_LOCK_AWS_OFI_NCCL}"
  else
    lock_compare aws_ofi_nccl "$(plugin_version "${plugin}")" "${FMC_LOCK_AWS_OFI_NCCL}"
  fi
  lock_compare gdrcopy "$(pkg_version gdrcopy)" "${FMC_LOCK_GDRCOPY}"
  initramfs="$(initramfs_path "${kernel}")"
  if [[ -s ${initramfs} ]]; then
    log "initramfs for kernel ${kernel} present (${initramfs#"${FMC_ROOT}"})"
  else
    FMC_DIFFS+=("initramfs: ${initramfs#"${FMC_ROOT}"} missing for the running kernel ${kernel}")
  fi
  local d
  for d in "${FMC_REPORTED[@]}"; do
    warn "reported only (unverified image value): ${d}"
  done
  if [[ $(len "${FMC_DIFFS[@]}") -gt 0 ]]; then
    for d in "${FMC_DIFFS[@]}"; do
      log "DIFFERENCE ${d}" >&2
    done
    die "the image differs from the lock in $(len "${FMC_DIFFS[@]}") component(s): $(printf '%s; ' "${FMC_DIFFS[@]}")use the image the lock describes (software.image) or bake one"
  fi
  log "image matches the lock (8 component(s) and the initramfs)"
}
