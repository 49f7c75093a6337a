step_fsx() {
  step fsx "waiting up to ${FMC_TIMEOUT_FSX_S} s for FSx for Lustre at ${FMC_FSX_MOUNT_POINT} (read-only probes)"
  local i fsx="${FMC_ROOT}${FMC_FSX_MOUNT_POINT}"
  for ((i = 0; i <= FMC_TIMEOUT_FSX_S; i += 10)); do
    if mountpoint -q "${fsx}" \
      && [[ "$(findmnt -no FSTYPE "${fsx}")" == lustre ]] \
      && timeout 20 stat -f "${fsx}" >/dev/null 2>&1 \
      && timeout 20 ls "${fsx}" >/dev/null 2>&1; then
      log "${FMC_FSX_MOUNT_POINT} is mounted (lustre) and readable after ${i} s"
      return
    fi
    log "${FMC_FSX_MOUNT_POINT} not usable yet (${i} s)"
    sleep 10
  done
  die "FSx for Lustre is not usable at ${FMC_FSX_MOUNT_POINT} after ${FMC_TIMEOUT_FSX_S} s (not mounted as lustre, or not readable); check the orchestrator's shared-storage mount and the file system's security group (TCP 988 and 1018-1023)"
}
