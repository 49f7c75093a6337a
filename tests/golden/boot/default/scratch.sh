# Local NVMe scratch at the blueprint's scratch_path. Reuse first: a mount already there, or the array the image
# assembles itself (parallelcluster-ephemeral at /scratch), bound to scratch_path;
# a RAID0 is built only when the image handles no NVMe and nothing is assembled.
step_scratch() {
  step scratch "local NVMe scratch at ${FMC_SCRATCH_PATH}"
  local scratch="${FMC_ROOT}${FMC_SCRATCH_PATH}"
  if mountpoint -q "${scratch}"; then
    log "${FMC_SCRATCH_PATH} already mounted from $(findmnt -no SOURCE "${scratch}"), reused"
    return
  fi
  local array="${FMC_ROOT}/scratch" i
  for ((i = 0; i < FMC_TIMEOUT_NVME_ARRAY_S; i += 5)); do
    mountpoint -q "${array}" && break
    sleep 5
  done
  mountpoint -q "${array}" \
    || die "the image's NVMe array (parallelcluster-ephemeral) is not mounted at /scratch after ${FMC_TIMEOUT_NVME_ARRAY_S} s"
  mkdir -p "${scratch}"
  if ! grep -qs "^/scratch ${FMC_SCRATCH_PATH} none bind" "${FMC_ROOT}/etc/fstab"; then
    printf '%s %s none bind,nofail 0 0\n' "/scratch" "${FMC_SCRATCH_PATH}" >>"${FMC_ROOT}/etc/fstab"
  fi
  mount --bind "${array}" "${scratch}"
  chmod 1777 "${scratch}"
  log "${FMC_SCRATCH_PATH} bound to the image's NVMe array at /scratch ($(findmnt -no SOURCE "${array}"))"
}
