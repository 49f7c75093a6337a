step_preflight() {
  step preflight "checking OS, architecture and privileges"
  [[ "$(id -u)" -eq 0 ]] || die "must run as root (got uid $(id -u))"
  local id version_id
  # shellcheck disable=SC1091,SC2153  # ID and VERSION_ID come from os-release
  id="$(. "${FMC_ROOT}/etc/os-release" && printf '%s' "${ID}")"
  # shellcheck disable=SC1091,SC2153
  version_id="$(. "${FMC_ROOT}/etc/os-release" && printf '%s' "${VERSION_ID}")"
  [[ ${id} == "${FMC_OS_ID}" && ${version_id} == "${FMC_OS_VERSION}" ]] \
    || die "this script was rendered for ${FMC_OS_ID} ${FMC_OS_VERSION}, the node runs ${id} ${version_id}"
  [[ "$(uname -m)" == "${FMC_ARCH}" ]] || die "this script was rendered for ${FMC_ARCH}, the node is $(uname -m)"
  mkdir -p "${FMC_ROOT}${FMC_CACHE}" "${FMC_ROOT}${FMC_PREFIX}/bin" "${FMC_ROOT}${FMC_PREFIX}/etc"
  log "p5.48xlarge on ${id} ${version_id} (${FMC_ARCH}), kernel $(uname -r), image mode ${FMC_IMAGE_MODE}"
}
