#!/usr/bin/env bash
# shellcheck disable=SC2034,SC2329  # the lock block lists every pin and the shared library every helper; not every step uses each
# fmcluster bootstrap for pcs-h200/h200 (p5en.48xlarge, ubuntu-24.04, pcs).
# Rendered by fmcluster from stack dlami-2026-10; do not edit by hand.
#
# The boot path configures and verifies; it never installs the NVIDIA driver, Fabric Manager, IMEX, the CUDA
# toolkit, the EFA installer or GDRCopy (those come with the image: official mode). Steps, in order:
#   preflight -> verify -> guard_upgrades -> fabric_manager -> fabric_state -> nccl -> nccl_tests -> holds -> scratch -> fsx -> job_env -> node_check
# verify fails closed listing every difference from the lock; holds are taken once, after every install;
# exporters come last and never fail the node. Step templates: fmcluster/features/node/templates/steps/.
# Log: /var/log/fmcluster/bootstrap.log
set -Eeuo pipefail
# The EFA installer puts fi_info in /opt/amazon/efa/bin and Open MPI in /opt/amazon/openmpi/bin, on PATH only for
# login shells (/etc/profile.d/zippy_efa.sh); OnNodeConfigured, PCS user data and HyperPod lifecycle scripts are not.
export PATH="/opt/amazon/efa/bin:/opt/amazon/openmpi/bin:${PATH}"
umask 022

# ---- node facts, lock and timeouts -------------------------------------------------------------
readonly FMC_OS_ID="ubuntu"
readonly FMC_OS_VERSION="24.04"
readonly FMC_ARCH="x86_64"
readonly FMC_IMAGE_MODE="official"
readonly FMC_LOCK_DRIVER="595.91.07"
readonly FMC_LOCK_KERNEL_MODULES="open"
readonly FMC_LOCK_FABRIC_MANAGER="595.91.07"
readonly FMC_LOCK_IMEX=""
readonly FMC_LOCK_CUDA="13.2.0"
readonly FMC_LOCK_NCCL="2.31.2"
readonly FMC_LOCK_EFA_INSTALLER="1.50.0"
readonly FMC_LOCK_LIBFABRIC="2.6.0amzn1.0"
readonly FMC_LOCK_AWS_OFI_NCCL="1.21.1"
readonly FMC_LOCK_GDRCOPY="2.6.0"
readonly FMC_LOCK_JSON='{"blueprint": "pcs-h200", "drift": ["aws_ofi_nccl", "cuda", "driver", "efa_installer", "fabric_manager", "gdrcopy", "kernel_modules", "libfabric"], "group": "h200", "lock": {"aws_ofi_nccl": "1.21.1", "cuda": "13.2.0", "driver": "595.91.07", "efa_installer": "1.50.0", "fabric_manager": "595.91.07", "gdrcopy": "2.6.0", "imex": null, "kernel_modules": "open", "libfabric": "2.6.0amzn1.0", "nccl": "2.31.2"}, "mode": "official", "os": "ubuntu-24.04", "stack": "dlami-2026-10"}'
readonly FMC_LOCK_FILE="/opt/fmcluster/lock.json"
readonly FMC_REPORTED_ONLY="aws_ofi_nccl cuda driver efa_installer fabric_manager gdrcopy kernel_modules libfabric"
readonly FMC_DRIFT_FILE="/opt/fmcluster/drift.txt"
readonly FMC_MEASURED_FILE="/opt/fmcluster/measured.json"
readonly FMC_CUDA_PATH="/usr/local/cuda-13.2"
readonly FMC_EXPECTED_GPUS=8
readonly FMC_EXPECTED_NVME=8
readonly FMC_SCRATCH_PATH="/scratch"
readonly FMC_SCRATCH_LABEL="fmc-scratch"
readonly FMC_FSX_MOUNT_POINT="/fsx"
readonly FMC_PREFIX="/opt/fmcluster"
readonly FMC_NODE_CHECK="/opt/fmcluster/bin/fmcluster-node-check"
readonly FMC_JOB_ENV="/opt/fmcluster/etc/job-env.sh"
readonly FMC_PROFILE_ENV="/etc/profile.d/fmcluster.sh"
readonly FMC_CACHE=/var/cache/fmcluster
readonly FMC_LOG_DIR=/var/log/fmcluster
# Named timeouts (seconds; fmcluster/features/node/render_context.py BOOT_TIMEOUTS_S says why each is what it is)
readonly FMC_TIMEOUT_PACKAGE_LOCK_S=600
readonly FMC_TIMEOUT_FABRIC_MANAGER_START_S=60
readonly FMC_TIMEOUT_FABRIC_STATE_S=300
readonly FMC_TIMEOUT_NVME_ARRAY_S=120
readonly FMC_TIMEOUT_FSX_S=600
readonly FMC_TIMEOUT_LNETCTL_S=60
readonly FMC_TIMEOUT_NCCL_CHECK_S=600
FMC_LOG_TAG=fmcluster-bootstrap
# Services the image owns around the GPUs; the boot path starts what is missing and never stops them:
#   nvidia-persistenced nvidia-fabricmanager nvidia-imex nvidia-dcgm

# ---- fmcluster node library (features/node/templates/lib.sh.j2) -----------------------------------------
# Shared by bootstrap.sh, fmcluster-node-check and the image-build steps: logging, retries, pinned
# downloads, version comparison and the probes that read what a node carries. Functions only (no side
# effects when sourced). FMC_ROOT (default empty) prefixes every file path; the boot simulation sets it.
FMC_ROOT="${FMC_ROOT:-}"
FMC_STEP="${FMC_STEP:-start}"
FMC_LOG_TAG="${FMC_LOG_TAG:-fmcluster}"

log() { printf '%s %s [%s] %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${FMC_LOG_TAG}" "${FMC_STEP}" "$*"; }
warn() { log "WARNING: $*" >&2; }
die() { log "ERROR: $*" >&2; exit 1; }
len() { echo "$#"; }

retry() {  # retry ATTEMPTS COMMAND...: exponential backoff from 5 s
  local attempts=$1 n=1 delay=5
  shift
  until "$@"; do
    if [[ ${n} -ge ${attempts} ]]; then
      log "giving up after ${n} attempts: $*"
      return 1
    fi
    log "attempt ${n}/${attempts} failed, retrying in ${delay} s: $*"
    sleep "${delay}"
    n=$((n + 1))
    delay=$((delay * 2))
  done
}

fetch() {  # fetch URL DEST [SHA256]: download with retries; verify sha256 when given
  local url=$1 dest=$2 sha=${3:-}
  mkdir -p "$(dirname "${dest}")"
  if [[ -n ${sha} && -f ${dest} ]] && printf '%s  %s\n' "${sha}" "${dest}" | sha256sum --check --status; then
    log "${dest} already downloaded, sha256 verified"
    return 0
  fi
  log "downloading ${url}"
  retry 5 curl -fsSL --connect-timeout 20 -o "${dest}.part" "${url}"
  mv -f "${dest}.part" "${dest}"
  if [[ -n ${sha} ]]; then
    printf '%s  %s\n' "${sha}" "${dest}" | sha256sum --check --status \
      || die "sha256 mismatch for ${url}: expected ${sha}, got $(sha256sum "${dest}" | cut -d' ' -f1)"
    log "sha256 verified: ${sha}"
  fi
}

# The cluster's mirror bucket, fmc-mirror-<account id>${FMC_MIRROR_BUCKET_SUFFIX} (fmcluster/resolved/mirror.py): the
# account comes from the instance identity document (IMDSv2; its JSON has "accountId",
# https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instance-identity-documents.html), so no AWS API is called.
mirror_bucket() {
  local token account
  token="$(curl -fsS --connect-timeout 5 -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' \
    http://169.254.169.254/latest/api/token)" || return 1
  account="$(curl -fsS --connect-timeout 5 -H "X-aws-ec2-metadata-token: ${token}" \
    http://169.254.169.254/latest/dynamic/instance-identity/document | sed -n 's/.*"accountId" *: *"\([0-9]*\)".*/\1/p')"
  [[ -n ${account} ]] || return 1
  printf 'fmc-mirror-%s%s\n' "${account}" "${FMC_MIRROR_BUCKET_SUFFIX:?}"
}

# fetch_mirror KEY DEST SHA256 (the caller sets FMC_MIRROR_REGION and FMC_MIRROR_BUCKET_SUFFIX): copy KEY from the
# mirror bucket (S3 through the VPC's gateway endpoint; the deploy put it there, custom resource
# Custom::FmclusterMirror) and check its sha256. Returns 1, never exits: the callers' files are optional. Needs the
# AWS CLI on the image (unverified for every image fmcluster boots: a missing CLI is reported).
fetch_mirror() {
  local key=$1 dest=$2 sha=$3 bucket
  mkdir -p "$(dirname "${dest}")"
  if [[ -f ${dest} ]] && printf '%s  %s\n' "${sha}" "${dest}" | sha256sum --check --status; then
    return 0
  fi
  command -v aws >/dev/null 2>&1 || { warn "no AWS CLI on this image: cannot read s3 mirror object ${key}"; return 1; }
  bucket="$(mirror_bucket)" || { warn "cannot read the account id from instance metadata: no mirror bucket"; return 1; }
  local attempt
  for attempt in 1 2 3; do
    aws s3 cp --only-show-errors --region "${FMC_MIRROR_REGION:?}" "s3://${bucket}/${key}" "${dest}.part" && break
    if [[ ${attempt} -eq 3 ]]; then
      warn "s3://${bucket}/${key} could not be read (see the deploy's mirror/manifest.json)"
      return 1
    fi
    sleep $((attempt * 5))
  done
  mv -f "${dest}.part" "${dest}"
  if ! printf '%s  %s\n' "${sha}" "${dest}" | sha256sum --check --status; then
    warn "sha256 mismatch for s3://${bucket}/${key}: expected ${sha}, got $(sha256sum "${dest}" | cut -d' ' -f1)"
    rm -f "${dest}"
    return 1
  fi
  log "s3://${bucket}/${key}: sha256 verified (${sha})"
}


# fetch_mirror_recorded KEY DEST: fetch_mirror for an object the catalog does not pin (NCCL's package files, the Slurm
# exporter's archive): the expected sha256 is the one the deploy checked against the publisher's own index and stored
# next to the object as KEY.sha256 (one line; fmcluster/features/node/handler_mirror.py). Returns 1, never exits.
fetch_mirror_recorded() {
  local key=$1 dest=$2 bucket sha
  command -v aws >/dev/null 2>&1 || { warn "no AWS CLI on this image: cannot read s3 mirror object ${key}"; return 1; }
  bucket="$(mirror_bucket)" || { warn "cannot read the account id from instance metadata: no mirror bucket"; return 1; }
  mkdir -p "$(dirname "${dest}")"
  if ! aws s3 cp --only-show-errors --region "${FMC_MIRROR_REGION:?}" "s3://${bucket}/${key}.sha256" "${dest}.sha256"; then
    warn "s3://${bucket}/${key}.sha256 could not be read: the deploy did not copy ${key} (see the deploy's mirror/manifest.json)"
    return 1
  fi
  sha="$(tr -d '[:space:]' <"${dest}.sha256")"
  rm -f "${dest}.sha256"
  if [[ ! ${sha} =~ ^[0-9a-f]{64}$ ]]; then
    warn "s3://${bucket}/${key}.sha256 holds no sha256"
    return 1
  fi
  fetch_mirror "${key}" "${dest}" "${sha}"
}
key_fingerprint() {  # key_fingerprint FILE: primary key fingerprint of an armored/binary public key
  gpg --batch --with-colons --show-keys "$1" 2>/dev/null | awk -F: '/^fpr:/ { print $10; exit }'
}

# "2.27.7" == "2.27.7-1+cuda12.9": the leading dotted number, ignoring suffixes like "-1", "+cuda12.9", "amzn5.0"
num() {
  if [[ -z ${1:-} ]]; then return 0; fi
  if [[ $1 =~ ^v?([0-9]+(\.[0-9]+)*) ]]; then printf '%s' "${BASH_REMATCH[1]}"; else printf '%s' "$1"; fi
}
same_version() { [[ "$(num "$1")" == "$(num "$2")" ]]; }

# ---- probes: what the node carries -------------------------------------------------------------
driver_version() {  # first GPU's driver per nvidia-smi, empty without a driver
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' ' || true
  fi
}

# /proc/driver/nvidia/version, first line, as printed by the loaded module (NVIDIA open-gpu-kernel-modules nv.c):
#   NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  595.112.07  Release Build  (...)
#   NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.172.08  Tue ...
loaded_driver_version() {
  awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+(\.[0-9]+)*$/) { print $i; exit } }' \
    "${FMC_ROOT}/proc/driver/nvidia/version" 2>/dev/null || true
}
# The installed module's version: nvidia.ko declares MODULE_VERSION(NV_VERSION_STRING) (NVIDIA/open-gpu-kernel-modules
# kernel-open/nvidia/nv.c), which modinfo prints from the module file on disk, not the loaded one.
installed_driver_version() { modinfo -F version nvidia 2>/dev/null | head -n 1 | tr -d ' ' || true; }
loaded_module_flavor() {  # open / proprietary / none, from the loaded module's banner
  local line
  line="$(head -n 1 "${FMC_ROOT}/proc/driver/nvidia/version" 2>/dev/null || true)"
  if [[ -z ${line} ]]; then echo none; elif [[ ${line} == *"Open Kernel Module"* ]]; then echo open; else echo proprietary; fi
}
module_flavor() {  # open / proprietary / none, from the installed module's license ("Dual MIT/GPL" vs "NVIDIA")
  local license
  license="$(modinfo -F license nvidia 2>/dev/null | head -n 1 || true)"
  if [[ -z ${license} ]]; then echo none; elif [[ ${license} == *MIT* ]]; then echo open; else echo proprietary; fi
}

efa_installer_version() {  # efa_installer_version [FILE]: "# EFA installer version: X" line of the installer's record
  sed -n 's/^# EFA installer version: *//p' "${1:-${FMC_ROOT}/opt/amazon/efa_installed_packages}" 2>/dev/null | head -n 1 || true
}

libfabric_version() { fi_info --version 2>/dev/null | sed -n 's/^libfabric:[[:space:]]*//p' | head -n 1 || true; }

plugin_library() {  # plugin_library DIR...: first aws-ofi-nccl library found
  local dir lib
  for dir in "$@"; do
    for lib in "${dir}/libnccl-net-ofi.so" "${dir}/libnccl-net.so"; do
      if [[ -e ${lib} ]]; then printf '%s' "${lib}"; return 0; fi
    done
  done
  return 0
}
plugin_version() {  # plugin_version LIBRARY: the version aws-ofi-nccl logs at init, read from the binary
  grep -aoE 'NET/OFI Initializing aws-ofi-nccl [0-9][0-9.]*' "$1" 2>/dev/null | head -n 1 | awk '{print $NF}' || true
}

cuda_version() {  # cuda_version CUDA_HOME: "cuda" version of the toolkit's version.json
  if [[ -r $1/version.json ]]; then
    sed -n '/"cuda"[[:space:]]*:/,/}/ s/.*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$1/version.json" | head -n 1
  fi
  return 0
}

# EFA network interfaces LNet lists for an EFA-enabled FSx for Lustre file system, counted from `lnetctl net show
# --net efa` (YAML: "net type: efa", then per local NI "- nid: <address>@efa" and "status: up|down"; Lustre
# Operations Manual, lnetctl "net show"): the ones up, or every one with "any". 0 when LNet has no efa network.
lnet_efa_nis() {  # lnet_efa_nis [any]
  local shown
  shown="$(timeout "${FMC_TIMEOUT_LNETCTL_S:-60}" lnetctl net show --net efa 2>/dev/null || true)"
  printf '%s\n' "${shown}" | awk -v want="${1:-up}" '
    /- nid: .*@efa/ { nis++; in_ni = 1; next }
    in_ni && /status:/ { if ($2 == "up") up++; in_ni = 0 }
    END { print (want == "any" ? nis + 0 : up + 0) }'
}

fabric_states() {  # one "Fabric ... State" value per GPU from nvidia-smi -q
  nvidia-smi -q 2>/dev/null | awk '
    /^[[:space:]]*Fabric[[:space:]]*$/ { in_fabric = 1; next }
    in_fabric && /^[[:space:]]*State[[:space:]]*:/ { sub(/^[^:]*:[[:space:]]*/, ""); print; in_fabric = 0 }' || true
}

# ---- the measured manifest (issue 23): the contract's version probes, one value per lock component ----------------
# Run at the end of a bake (no GPU there: the driver is the installed module's version) into measured.json, which the
# image test and the boot of a node of that image compare against; empty when the component is not found.
measure_component() {  # measure_component COMPONENT
  local lib
  case $1 in
    driver) installed_driver_version ;;
    kernel_modules) module_flavor | sed 's/^none$//' ;;
    fabric_manager) num "$(pkg_version nvidia-fabricmanager)" ;;
    imex) num "$(pkg_version nvidia-imex)" ;;
    cuda) cuda_version "${FMC_CUDA_HOME:-${FMC_ROOT}/usr/local/cuda-13.2}" ;;
    nccl) num "$(pkg_version libnccl2)" ;;
    efa_installer) efa_installer_version ;;
    libfabric) libfabric_version ;;
    aws_ofi_nccl)
      lib="$(plugin_library "${FMC_ROOT}/opt/amazon/ofi-nccl/lib" "${FMC_ROOT}/opt/amazon/ofi-nccl/lib64" "${FMC_ROOT}/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu")"
      if [[ -n ${lib} ]]; then plugin_version "${lib}"; fi ;;
    gdrcopy) num "$(pkg_version gdrcopy)" ;;
  esac
  return 0
}
measured_of() {  # measured_of FILE COMPONENT: the value measured.json records ("" when absent or not found)
  sed -n "s/^  \"$2\": \"\(.*\)\",\{0,1\}$/\1/p" "$1" 2>/dev/null | head -n 1 || true
}

service_active() { [[ "$(systemctl is-active "$1" 2>/dev/null || true)" == active ]]; }

# ---- package manager: apt/dpkg (Ubuntu; features/node/templates/pkg/apt.sh.j2) ---------------------------
export DEBIAN_FRONTEND=noninteractive
APT=(apt-get -q -y -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
FMC_APT_UPDATED=0
apt_update() {
  if [[ ${FMC_APT_UPDATED} -eq 0 ]]; then
    retry 5 "${APT[@]}" update
    FMC_APT_UPDATED=1
  fi
}
pkg_version() {  # installed version of a package, empty if not installed (dpkg-query exits 1 for unknown names)
  local out
  out="$(dpkg-query -W -f='${Status}|${Version}' "$1" 2>/dev/null)" || return 0
  if [[ ${out%%|*} == "install ok installed" ]]; then printf '%s' "${out#*|}"; fi
  return 0
}
pkg_owner() { dpkg -S "$1" 2>/dev/null | cut -d: -f1 || true; }  # package that installed a file, empty if none
installed_matching() {  # installed_matching ERE: names of installed packages matching ERE, one a line
  dpkg-query -W -f='${db:Status-Abbrev}|${Package}\n' 2>/dev/null | awk -F'|' '$1 ~ /^ii/ { print $2 }' \
    | grep -E "$1" || true
}
pin_package() {  # pin_package NAME VERSION-GLOB: apt preferences so apt picks exactly this version
  local pins="${FMC_ROOT}/etc/apt/preferences.d/fmcluster-pins"
  mkdir -p "$(dirname "${pins}")"
  touch "${pins}"
  if ! grep -qx "Package: $1" "${pins}"; then
    printf 'Package: %s\nPin: version %s\nPin-Priority: 1001\n\n' "$1" "$2" >>"${pins}"
  fi
}
install_spec() { printf '%s' "$1"; }  # apt selects the version through the preferences pin
install_packages() { apt_update; "${APT[@]}" install --no-install-recommends --allow-downgrades "$@"; }
# install_local_packages FILE...: package files already on the node (from the cluster's mirror), no repository and no
# network: dpkg(1) "-i, --install package-file..." (https://manpages.debian.org/dpkg.1); their dependencies must be on
# the image (libnccl2's are glibc's). Retried: an apt/dpkg run of the image's own boot services may hold the lock.
install_local_packages() { retry 3 dpkg --install "$@"; }
hold_packages() { apt-mark hold "$@" >/dev/null; log "held (apt-mark hold): $*"; }
initramfs_path() { printf '%s/boot/initrd.img-%s' "${FMC_ROOT}" "$1"; }  # update-initramfs naming (Debian/Ubuntu)
nvidia_repo_configured() {
  grep -rqs 'developer.download.nvidia.com/compute/cuda/repos' "${FMC_ROOT}/etc/apt/sources.list" "${FMC_ROOT}/etc/apt/sources.list.d/"
}
add_nvidia_repo() {  # add_nvidia_repo KEYFILE URL: NVIDIA's signed CUDA repository
  local keyring="${FMC_ROOT}/usr/share/keyrings/fmcluster-nvidia-cuda.gpg"
  mkdir -p "$(dirname "${keyring}")" "${FMC_ROOT}/etc/apt/sources.list.d"
  gpg --batch --yes --dearmor -o "${keyring}" "$1"
  printf 'deb [signed-by=%s] %s /\n' "/usr/share/keyrings/fmcluster-nvidia-cuda.gpg" "$2" \
    >"${FMC_ROOT}/etc/apt/sources.list.d/fmcluster-nvidia-cuda.list"
  FMC_APT_UPDATED=0
}
key_matches() { [[ $1 == "$2" ]]; }  # key_matches FINGERPRINT PINNED: the full fingerprint is pinned on Ubuntu

# unattended-upgrades: Package-Blacklist entries are Python regular expressions matched against the start of
# the package name (unattended-upgrades README, "Unattended-Upgrade::Package-Blacklist").
# needrestart: drop-ins in /etc/needrestart/conf.d are Perl; $nrconf{restart} = 'l' only lists services, and
# override_rc => 0 deselects slurmd (liske/needrestart ex/needrestart.conf). AWS's PCS sample add-cng-p6-b300.yaml
# (awslabs/awsome-distributed-ai) writes the same override: a slurmd restart kills the node's running jobs.
guard_upgrades_os() {
  mkdir -p "${FMC_ROOT}/etc/apt/apt.conf.d" "${FMC_ROOT}/etc/needrestart/conf.d"
  cat >"${FMC_ROOT}/etc/apt/apt.conf.d/51fmcluster-unattended-upgrades" <<'APTEOF'
// Written by fmcluster: unattended-upgrades must not touch the GPU/EFA stack, the kernel or Slurm
// (a new kernel or driver breaks the kernel modules, Fabric Manager == driver, and GPUDirect RDMA).
Unattended-Upgrade::Package-Blacklist {
    "linux-";
    "nvidia-";
    "libnvidia-";
    "cuda-";
    "libcuda";
    "libnccl";
    "nvlsm";
    "infiniband-diags";
    "gdrdrv";
    "libgdrapi";
    "gdrcopy";
    "efa";
    "libfabric";
    "libibverbs";
    "ibverbs";
    "rdma-core";
    "openmpi";
    "slurm";
    "libslurm";
    "datacenter-gpu-manager";
};
APTEOF
  cat >"${FMC_ROOT}/etc/needrestart/conf.d/90-fmcluster.conf" <<'NREOF'
# Written by fmcluster: never restart slurmd (it would kill the running jobs); only list what needs a restart.
$nrconf{restart} = 'l';
$nrconf{override_rc} = { %{ $nrconf{override_rc} // {} }, qr(^slurmd) => 0 };
NREOF
  log "unattended-upgrades blacklist and needrestart drop-in written"
}
# ---- end of fmcluster node library --------------------------------------------------------------

on_error() {
  local rc=$?
  log "ERROR: step '${FMC_STEP}' failed (exit ${rc}) at line ${BASH_LINENO[0]}: ${BASH_COMMAND}" >&2
  exit "${rc}"
}
trap on_error ERR
step() { FMC_STEP="$1"; log "--- $2"; }

# ---- steps -------------------------------------------------------------------------------------
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
  log "p5en.48xlarge on ${id} ${version_id} (${FMC_ARCH}), kernel $(uname -r), image mode ${FMC_IMAGE_MODE}"
}

# Verify the node against its contract (features/node/plan_contract.py), listing EVERY difference before failing.
# Functional facts always fail closed (the loaded driver is the installed one, an initramfs for the running kernel).
# A version difference fails closed only for an enforced component (fmcluster built it, a primary source confirms
# it, or a custom AMI declares it); any other difference is drift: reported with the measured value, never fatal.
FMC_DIFFS=()
FMC_REPORTED=()
FMC_DRIFT_COMPONENTS=()
lock_differs() {  # lock_differs COMPONENT DETAIL
  if [[ " ${FMC_REPORTED_ONLY} " == *" $1 "* ]]; then
    FMC_REPORTED+=("$1: $2")
    FMC_DRIFT_COMPONENTS+=("$1")
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
  # functional: the loaded module is the installed one (a driver update without reboot differs), whatever the lock says
  if [[ ! -r ${FMC_ROOT}/proc/driver/nvidia/version ]]; then
    FMC_DIFFS+=("driver-loaded: /proc/driver/nvidia/version missing: the nvidia module is not loaded")
  elif [[ "$(loaded_driver_version)" != "$(installed_driver_version)" ]]; then
    FMC_DIFFS+=("driver-loaded: the loaded nvidia module is $(loaded_driver_version), the installed one $(installed_driver_version): reboot or reload")
  else
    log "driver-loaded: nvidia module $(loaded_driver_version) loaded, the installed one"
  fi
  lock_compare kernel_modules "$(module_flavor | sed 's/^none$//')" "${FMC_LOCK_KERNEL_MODULES}" exact
  if [[ -r ${FMC_ROOT}/proc/driver/nvidia/version && "$(loaded_module_flavor)" != "$(module_flavor)" ]]; then
    FMC_DIFFS+=("kernel-modules-loaded: the loaded module is $(loaded_module_flavor), the installed one $(module_flavor): reboot or reload")
  fi
  lock_compare fabric_manager "$(pkg_version nvidia-fabricmanager)" "${FMC_LOCK_FABRIC_MANAGER}"
  lock_compare cuda "$(cuda_version "${FMC_ROOT}${FMC_CUDA_PATH}")" "${FMC_LOCK_CUDA}"
  lock_compare efa_installer "$(efa_installer_version)" "${FMC_LOCK_EFA_INSTALLER}" exact
  lock_compare libfabric "$(libfabric_version)" "${FMC_LOCK_LIBFABRIC}" exact
  local plugin
  plugin="$(plugin_library "${FMC_ROOT}/opt/amazon/ofi-nccl/lib" "${FMC_ROOT}/opt/amazon/ofi-nccl/lib64" "${FMC_ROOT}/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu")"
  if [[ -z ${plugin} ]]; then
    # functional (aws-ofi-nccl-present): without the plugin NCCL cannot use EFA, whatever the lock says
    FMC_DIFFS+=("aws-ofi-nccl-present: no aws-ofi-nccl library in /opt/amazon/ofi-nccl/lib /opt/amazon/ofi-nccl/lib64 /opt/amazon/ofi-nccl/lib/x86_64-linux-gnu: NCCL cannot use EFA")
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
    warn "drift (reported, not enforced: unverified or moving image value): ${d}"
  done
  if [[ $(len "${FMC_REPORTED[@]}") -gt 0 ]]; then
    mkdir -p "$(dirname "${FMC_ROOT}${FMC_DRIFT_FILE}")"
    printf '%s\n' "${FMC_REPORTED[@]}" >"${FMC_ROOT}${FMC_DRIFT_FILE}"
  fi
  if [[ $(len "${FMC_DIFFS[@]}") -gt 0 ]]; then
    for d in "${FMC_DIFFS[@]}"; do
      log "DIFFERENCE ${d}" >&2
    done
    die "the image differs from the lock in $(len "${FMC_DIFFS[@]}") component(s): $(printf '%s; ' "${FMC_DIFFS[@]}")use the image the lock describes (software.image) or bake one"
  fi
  log "image matches the lock (8 component(s) and the initramfs; $(len "${FMC_REPORTED[@]}") drifted)"
}

step_guard_upgrades() {
  step guard-upgrades "keeping automatic upgrades and needrestart away from the GPU stack, the kernel and slurmd"
  guard_upgrades_os
}

step_fabric_manager() {
  step fabric-manager "Fabric Manager 595.91.07: started if not running (never stopped)"
  local unit=nvidia-fabricmanager i
  if service_active "${unit}"; then
    log "${unit} already active, left alone"
    return
  fi
  systemctl enable "${unit}" >/dev/null
  systemctl start "${unit}"
  for ((i = 0; i < FMC_TIMEOUT_FABRIC_MANAGER_START_S; i += 2)); do
    service_active "${unit}" && break
    sleep 2
  done
  service_active "${unit}" \
    || die "${unit} is $(systemctl is-active "${unit}" || true) after ${FMC_TIMEOUT_FABRIC_MANAGER_START_S} s; see journalctl -u ${unit} (a version mismatch logs 'don't match with driver version')"
  log "${unit} active"
}

step_fabric_state() {
  step fabric-state "waiting up to ${FMC_TIMEOUT_FABRIC_STATE_S} s for GPU fabric registration"
  local i states bad
  for ((i = 0; i <= FMC_TIMEOUT_FABRIC_STATE_S; i += 5)); do
    states="$(fabric_states)"
    bad="$(printf '%s\n' "${states}" | grep -cvx Completed || true)"
    if [[ -n ${states} && ${bad} -eq 0 ]]; then
      log "fabric state Completed on all GPUs after ${i} s"
      return
    fi
    sleep 5
  done
  die "GPU fabric registration did not complete within ${FMC_TIMEOUT_FABRIC_STATE_S} s (states: $(printf '%s' "${states}" | sort | uniq -c | tr '\n' ' ')); check Fabric Manager"
}

# The official image has no NCCL: install the locked NCCL from its package files in the cluster's mirror bucket (the
# deploy copied them from NVIDIA's CUDA repository and checked each against the sha256 the repository index lists,
# Custom::FmclusterMirror; fmcluster/features/node/plan_mirror.py). The boot never reaches NVIDIA's repository.
step_nccl() {
  step nccl "NCCL ${FMC_LOCK_NCCL} (CUDA 13 build) from the cluster's mirror"
  local have
  have="$(pkg_version libnccl2)"
  if [[ -n ${have} ]] && same_version "${have}" "${FMC_LOCK_NCCL}"; then
    log "NCCL ${have} already installed, left alone"
    return
  fi
  local files=() key file spec
  for key in "mirror/nccl/ubuntu-24.04/x86_64/libnccl2-2.31.2.deb" "mirror/nccl/ubuntu-24.04/x86_64/libnccl-dev-2.31.2.deb"; do
    file="${FMC_ROOT}${FMC_CACHE}/${key##*/}"
    FMC_MIRROR_REGION="us-east-2" FMC_MIRROR_BUCKET_SUFFIX="-ab4094e28c" \
      fetch_mirror_recorded "${key}" "${file}" \
      || die "NCCL package ${key} could not be read from the cluster's mirror bucket with the sha256 the deploy recorded (see the deploy's mirror/manifest.json)"
    files+=("${file}")
  done
  for spec in "libnccl2=2.31.2-1+cuda13*" "libnccl-dev=2.31.2-1+cuda13*"; do
    pin_package "${spec%%=*}" "${spec#*=}"
  done
  install_local_packages "${files[@]}"
  have="$(pkg_version libnccl2)"
  # shellcheck disable=SC2053  # the pin is a glob on purpose
  [[ -n ${have} && ${have} == 2.31.2-1+cuda13* ]] || die "after install NCCL is '${have}', expected 2.31.2-1+cuda13*"
  ldconfig
  log "NCCL ${have} installed from the mirror"
}

# nccl-tests from its pinned source archive, built with MPI against the locked NCCL and CUDA, so the node check
# can run the single-node all_reduce through the network plugin (NVIDIA/nccl-tests README: make MPI=1
# MPI_HOME=... CUDA_HOME=... NCCL_HOME=...; binaries in ./build).
step_nccl_tests() {
  step nccl-tests "nccl-tests 2.17.6 built against NCCL ${FMC_LOCK_NCCL} and CUDA ${FMC_LOCK_CUDA}"
  local dir="${FMC_ROOT}/opt/nccl-tests" src="${FMC_ROOT}${FMC_CACHE}/nccl-tests-2.17.6.tar.gz"
  if [[ -x ${dir}/build/all_reduce_perf && "$(cat "${dir}/.fmcluster-version" 2>/dev/null || true)" == "2.17.6" ]]; then
    log "nccl-tests 2.17.6 already built at /opt/nccl-tests, left alone"
    return
  fi
  if ! command -v make >/dev/null 2>&1 || ! command -v g++ >/dev/null 2>&1; then
    install_packages make g++
  fi
  # Read from the cluster's mirror, never from GitHub: optional, so a missing copy is reported, not fatal.
  if ! FMC_MIRROR_REGION="us-east-2" FMC_MIRROR_BUCKET_SUFFIX="-ab4094e28c" \
    fetch_mirror "mirror/nccl-tests/v2.17.6.tar.gz" "${src}" "38974e70342150ede0e3fb8fd24bfe60ccbde90fa20241716ba8bb338e6b61a0"; then
    warn "nccl-tests source not available from the mirror: the node check cannot run its single-node NCCL check"
    return 0
  fi
  rm -rf "${dir}"
  mkdir -p "${dir}"
  tar -xzf "${src}" -C "${dir}" --strip-components=1
  # A failed build must not fail the node (ParallelCluster would shut it down): it is reported, and the node check
  # then says its NCCL run was skipped.
  if ! make -C "${dir}" -j "$(nproc)" MPI=1 MPI_HOME="${FMC_ROOT}/opt/amazon/openmpi" CUDA_HOME="${FMC_ROOT}${FMC_CUDA_PATH}" \
    NCCL_HOME="${FMC_ROOT}/usr" || [[ ! -x ${dir}/build/all_reduce_perf ]]; then
    warn "nccl-tests build failed: the node check cannot run its single-node NCCL check through the network plugin"
    return 0
  fi
  printf '%s\n' "2.17.6" >"${dir}/.fmcluster-version"
  log "nccl-tests 2.17.6 built at /opt/nccl-tests/build"
}

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

# Local NVMe scratch at the blueprint's scratch_path. Reuse first: a mount already there, or the array the image
# assembles itself (dlami-raid at /opt/dlami/nvme), bound to scratch_path;
# a RAID0 is built only when the image handles no NVMe and nothing is assembled.
step_scratch() {
  step scratch "local NVMe scratch at ${FMC_SCRATCH_PATH}"
  local scratch="${FMC_ROOT}${FMC_SCRATCH_PATH}"
  if mountpoint -q "${scratch}"; then
    log "${FMC_SCRATCH_PATH} already mounted from $(findmnt -no SOURCE "${scratch}"), reused"
    return
  fi
  local at="/opt/dlami/nvme" other i
  for ((i = 0; i < FMC_TIMEOUT_NVME_ARRAY_S; i += 5)); do
    mountpoint -q "${FMC_ROOT}${at}" && break
    sleep 5
  done
  if ! mountpoint -q "${FMC_ROOT}${at}"; then
    # Where the image mounts its array is a catalog value (unverified for HyperPod's image): an md array mounted
    # elsewhere is drift, used and reported (findmnt -rn -o TARGET,SOURCE: every mount, util-linux findmnt(8)).
    other="$(findmnt -rn -o TARGET,SOURCE 2>/dev/null | awk '$2 ~ /^\/dev\/md/ { print $1; exit }' || true)"
    [[ -n ${other} ]] \
      || die "the image's NVMe array (dlami-raid) is not mounted at ${at} after ${FMC_TIMEOUT_NVME_ARRAY_S} s, nor anywhere else"
    warn "drift (reported, not enforced: unverified image value): nvme: the image's NVMe array is mounted at ${other}, not ${at}; using it"
    at="${other}"
  fi
  mkdir -p "${scratch}"
  if ! grep -qs "^${at} ${FMC_SCRATCH_PATH} none bind" "${FMC_ROOT}/etc/fstab"; then
    printf '%s %s none bind,nofail 0 0\n' "${at}" "${FMC_SCRATCH_PATH}" >>"${FMC_ROOT}/etc/fstab"
  fi
  mount --bind "${FMC_ROOT}${at}" "${scratch}"
  chmod 1777 "${scratch}"
  log "${FMC_SCRATCH_PATH} bound to the image's NVMe array at ${at} ($(findmnt -no SOURCE "${FMC_ROOT}${at}"))"
}

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

step_job_env() {
  step job-env "job environment file ${FMC_JOB_ENV}"
  local env="${FMC_ROOT}${FMC_JOB_ENV}" profile="${FMC_ROOT}${FMC_PROFILE_ENV}"
  mkdir -p "$(dirname "${env}")" "$(dirname "${profile}")"
  cat >"${env}.tmp" <<'FMCLUSTER_JOB_ENV_EOF'
# fmcluster job environment for pcs-h200/h200 (p5en.48xlarge), stack dlami-2026-10.
# Rendered by fmcluster; installed at /opt/fmcluster/etc/job-env.sh and sourced from /etc/profile.d/fmcluster.sh.
# Slurm jobs: `source /opt/fmcluster/etc/job-env.sh` (or point TaskProlog at it).
# shellcheck shell=bash
export PATH="/usr/local/cuda-13.2/bin:/opt/amazon/efa/bin${PATH:+:${PATH}}"
export LD_LIBRARY_PATH="/usr/local/cuda-13.2/lib64${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
export CUDA_HOME="/usr/local/cuda-13.2"
# aws-ofi-nccl 1.21.1 sets the tuned per-platform values for p5en.48xlarge itself
# when they are unset (NCCL_BUFFSIZE, NCCL_P2P_NET_CHUNKSIZE, NCCL_NVLS*_CHUNKSIZE, NCCL_NET_FORCE_FLUSH,
# NCCL_NETDEVS_POLICY, NCCL_TOPO_FILE, FI_EFA_FORK_SAFE, the efa provider filter), so they are not set here.
# NCCL bootstrap sockets avoid docker/loopback/veth interfaces (ADT-NT)
export NCCL_SOCKET_IFNAME='^docker,lo,veth'
# short name of aws-ofi-nccl >= 1.15.0 (libnccl-net-ofi.so); stops NGC images' NCCL_NET_PLUGIN default from leaving NCCL on sockets (S13, R-NAME-1)
export NCCL_NET_PLUGIN=ofi
# end of fmcluster job environment
FMCLUSTER_JOB_ENV_EOF
  mv -f "${env}.tmp" "${env}"
  chmod 0644 "${env}"
  printf '# fmcluster: job environment for login shells\n# shellcheck disable=SC1091\n. %s\n' "${FMC_JOB_ENV}" >"${profile}"
  chmod 0644 "${profile}"
  log "written ${FMC_JOB_ENV} and ${FMC_PROFILE_ENV}"
}

step_node_check() {
  step node-check "installing and running fmcluster-node-check (full mode)"
  local check="${FMC_ROOT}${FMC_NODE_CHECK}"
  cat >"${check}.tmp" <<'FMCLUSTER_NODE_CHECK_EOF'
#!/usr/bin/env bash
# shellcheck disable=SC2329  # the shared library defines helpers this script does not call
# fmcluster-node-check for pcs-h200/h200 (p5en.48xlarge, ubuntu-24.04), stack dlami-2026-10.
# Rendered by fmcluster; do not edit by hand. Checks this node against its pinned versions and
# catalog facts, one line per check:   PASS|FAIL|SKIP <check>: <detail>
#
# Usage: fmcluster-node-check [--json] [--nccl-log FILE] [--no-nccl] [--drain]
#   --json          one JSON document instead of lines (for machines)
#   --nccl-log FILE judge this NCCL_DEBUG=INFO log instead of running nccl-tests
#   --no-nccl       skip the NCCL run and log checks (use as Slurm HealthCheckProgram)
#   --drain         on failure, drain this node in Slurm with the first failure as reason
# Exit: 0 every check passed (or was skipped), 1 a check failed, 2 the check could not run.
#
# Probe locations can be overridden (the test harness points them at a temporary tree):
#   FMC_SYSFS_INFINIBAND, FMC_EFA_INSTALLED_PACKAGES, FMC_CUDA_HOME, FMC_OFI_NCCL_LIB_DIRS,
#   FMC_NCCL_TESTS_DIR, FMC_LOG_DIR, FMC_JOB_ENV; FMC_ROOT prefixes /proc and /boot.
# The node contract (features/node/plan_contract.py): a lock component in REPORTED_ONLY (not enforced: unverified or
# moving image value) that differs is a WARN (drift, with the measured value); functional checks always FAIL.
# Logs go to FMC_LOG_DIR, else /var/log/fmcluster as root, else ${XDG_RUNTIME_DIR:-/tmp}/fmcluster-$USER.
set -uo pipefail
# fi_info and Open MPI are on PATH only in login shells (/etc/profile.d/zippy_efa.sh); Slurm's HealthCheckProgram is not one.
export PATH="/opt/amazon/efa/bin:/opt/amazon/openmpi/bin:${PATH}"

# The pins are the group's lock (the one the boot verify reads and a baked image carries in /opt/fmcluster/lock.json).
readonly PIN_DRIVER="595.91.07"
readonly PIN_KERNEL_MODULES="open"
readonly PIN_CUDA="13.2.0"
readonly PIN_CUDA_MAJOR="13"
readonly PIN_NCCL="2.31.2"
readonly PIN_EFA_INSTALLER="1.50.0"
readonly PIN_LIBFABRIC="2.6.0amzn1.0"
readonly PIN_AWS_OFI_NCCL="1.21.1"
readonly PIN_GDRCOPY="2.6.0"
readonly EXPECTED_GPUS=8
readonly EXPECTED_EFA=16
readonly EFA_ENABLED=1
readonly NEEDS_FABRIC_MANAGER=1
readonly NEEDS_FABRIC_STATE=1
readonly NEEDS_NVLSM=0
readonly NEEDS_IMEX=0
readonly GDR_REQUIRED=1
readonly REPORTED_ONLY="aws_ofi_nccl cuda driver efa_installer fabric_manager gdrcopy kernel_modules libfabric"
readonly OPEN_MODULES_REQUIRED=0

SYS_IB="${FMC_SYSFS_INFINIBAND:-/sys/class/infiniband}"
EFA_PACKAGES_FILE="${FMC_EFA_INSTALLED_PACKAGES:-/opt/amazon/efa_installed_packages}"
CUDA_DIR="${FMC_CUDA_HOME:-/usr/local/cuda-13.2}"
OFI_LIB_DIRS="${FMC_OFI_NCCL_LIB_DIRS:-/opt/amazon/ofi-nccl/lib /opt/amazon/ofi-nccl/lib64 /opt/amazon/ofi-nccl/lib/x86_64-linux-gnu}"
NCCL_TESTS_DIR="${FMC_NCCL_TESTS_DIR:-/opt/nccl-tests/build}"
if [[ -n ${FMC_LOG_DIR:-} ]]; then
  LOG_DIR="${FMC_LOG_DIR}"
elif [[ ${EUID} -eq 0 ]]; then
  LOG_DIR=/var/log/fmcluster
else  # a user's srun: root-owned /var/log/fmcluster is not writable
  LOG_DIR="${XDG_RUNTIME_DIR:-/tmp}/fmcluster-${USER:-$(id -un)}"
fi
JOB_ENV="${FMC_JOB_ENV:-/opt/fmcluster/etc/job-env.sh}"
DRIFT_FILE="${FMC_ROOT}/opt/fmcluster/drift.txt"
TEXTFILE_DIR="${FMC_TEXTFILE_DIR:-${FMC_ROOT}/var/lib/node_exporter/textfile}"

AS_JSON=0
NCCL_LOG=""
RUN_NCCL=1
DRAIN=0

usage() {
  cat <<'USAGE'
Usage: fmcluster-node-check [--json] [--nccl-log FILE] [--no-nccl] [--drain]
  --json          one JSON document instead of lines (for machines)
  --nccl-log FILE judge this NCCL_DEBUG=INFO log instead of running nccl-tests
  --no-nccl       skip the NCCL run and log checks (use as Slurm HealthCheckProgram)
  --drain         on failure, drain this node in Slurm with the first failure as reason
Exit: 0 all checks passed or were skipped, 1 a check failed, 2 the check could not run.
USAGE
}

FMC_LOG_TAG=fmcluster-node-check
# ---- fmcluster node library (features/node/templates/lib.sh.j2) -----------------------------------------
# Shared by bootstrap.sh, fmcluster-node-check and the image-build steps: logging, retries, pinned
# downloads, version comparison and the probes that read what a node carries. Functions only (no side
# effects when sourced). FMC_ROOT (default empty) prefixes every file path; the boot simulation sets it.
FMC_ROOT="${FMC_ROOT:-}"
FMC_STEP="${FMC_STEP:-start}"
FMC_LOG_TAG="${FMC_LOG_TAG:-fmcluster}"

log() { printf '%s %s [%s] %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${FMC_LOG_TAG}" "${FMC_STEP}" "$*"; }
warn() { log "WARNING: $*" >&2; }
die() { log "ERROR: $*" >&2; exit 1; }
len() { echo "$#"; }

retry() {  # retry ATTEMPTS COMMAND...: exponential backoff from 5 s
  local attempts=$1 n=1 delay=5
  shift
  until "$@"; do
    if [[ ${n} -ge ${attempts} ]]; then
      log "giving up after ${n} attempts: $*"
      return 1
    fi
    log "attempt ${n}/${attempts} failed, retrying in ${delay} s: $*"
    sleep "${delay}"
    n=$((n + 1))
    delay=$((delay * 2))
  done
}

fetch() {  # fetch URL DEST [SHA256]: download with retries; verify sha256 when given
  local url=$1 dest=$2 sha=${3:-}
  mkdir -p "$(dirname "${dest}")"
  if [[ -n ${sha} && -f ${dest} ]] && printf '%s  %s\n' "${sha}" "${dest}" | sha256sum --check --status; then
    log "${dest} already downloaded, sha256 verified"
    return 0
  fi
  log "downloading ${url}"
  retry 5 curl -fsSL --connect-timeout 20 -o "${dest}.part" "${url}"
  mv -f "${dest}.part" "${dest}"
  if [[ -n ${sha} ]]; then
    printf '%s  %s\n' "${sha}" "${dest}" | sha256sum --check --status \
      || die "sha256 mismatch for ${url}: expected ${sha}, got $(sha256sum "${dest}" | cut -d' ' -f1)"
    log "sha256 verified: ${sha}"
  fi
}

# The cluster's mirror bucket, fmc-mirror-<account id>${FMC_MIRROR_BUCKET_SUFFIX} (fmcluster/resolved/mirror.py): the
# account comes from the instance identity document (IMDSv2; its JSON has "accountId",
# https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instance-identity-documents.html), so no AWS API is called.
mirror_bucket() {
  local token account
  token="$(curl -fsS --connect-timeout 5 -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' \
    http://169.254.169.254/latest/api/token)" || return 1
  account="$(curl -fsS --connect-timeout 5 -H "X-aws-ec2-metadata-token: ${token}" \
    http://169.254.169.254/latest/dynamic/instance-identity/document | sed -n 's/.*"accountId" *: *"\([0-9]*\)".*/\1/p')"
  [[ -n ${account} ]] || return 1
  printf 'fmc-mirror-%s%s\n' "${account}" "${FMC_MIRROR_BUCKET_SUFFIX:?}"
}

# fetch_mirror KEY DEST SHA256 (the caller sets FMC_MIRROR_REGION and FMC_MIRROR_BUCKET_SUFFIX): copy KEY from the
# mirror bucket (S3 through the VPC's gateway endpoint; the deploy put it there, custom resource
# Custom::FmclusterMirror) and check its sha256. Returns 1, never exits: the callers' files are optional. Needs the
# AWS CLI on the image (unverified for every image fmcluster boots: a missing CLI is reported).
fetch_mirror() {
  local key=$1 dest=$2 sha=$3 bucket
  mkdir -p "$(dirname "${dest}")"
  if [[ -f ${dest} ]] && printf '%s  %s\n' "${sha}" "${dest}" | sha256sum --check --status; then
    return 0
  fi
  command -v aws >/dev/null 2>&1 || { warn "no AWS CLI on this image: cannot read s3 mirror object ${key}"; return 1; }
  bucket="$(mirror_bucket)" || { warn "cannot read the account id from instance metadata: no mirror bucket"; return 1; }
  local attempt
  for attempt in 1 2 3; do
    aws s3 cp --only-show-errors --region "${FMC_MIRROR_REGION:?}" "s3://${bucket}/${key}" "${dest}.part" && break
    if [[ ${attempt} -eq 3 ]]; then
      warn "s3://${bucket}/${key} could not be read (see the deploy's mirror/manifest.json)"
      return 1
    fi
    sleep $((attempt * 5))
  done
  mv -f "${dest}.part" "${dest}"
  if ! printf '%s  %s\n' "${sha}" "${dest}" | sha256sum --check --status; then
    warn "sha256 mismatch for s3://${bucket}/${key}: expected ${sha}, got $(sha256sum "${dest}" | cut -d' ' -f1)"
    rm -f "${dest}"
    return 1
  fi
  log "s3://${bucket}/${key}: sha256 verified (${sha})"
}


# fetch_mirror_recorded KEY DEST: fetch_mirror for an object the catalog does not pin (NCCL's package files, the Slurm
# exporter's archive): the expected sha256 is the one the deploy checked against the publisher's own index and stored
# next to the object as KEY.sha256 (one line; fmcluster/features/node/handler_mirror.py). Returns 1, never exits.
fetch_mirror_recorded() {
  local key=$1 dest=$2 bucket sha
  command -v aws >/dev/null 2>&1 || { warn "no AWS CLI on this image: cannot read s3 mirror object ${key}"; return 1; }
  bucket="$(mirror_bucket)" || { warn "cannot read the account id from instance metadata: no mirror bucket"; return 1; }
  mkdir -p "$(dirname "${dest}")"
  if ! aws s3 cp --only-show-errors --region "${FMC_MIRROR_REGION:?}" "s3://${bucket}/${key}.sha256" "${dest}.sha256"; then
    warn "s3://${bucket}/${key}.sha256 could not be read: the deploy did not copy ${key} (see the deploy's mirror/manifest.json)"
    return 1
  fi
  sha="$(tr -d '[:space:]' <"${dest}.sha256")"
  rm -f "${dest}.sha256"
  if [[ ! ${sha} =~ ^[0-9a-f]{64}$ ]]; then
    warn "s3://${bucket}/${key}.sha256 holds no sha256"
    return 1
  fi
  fetch_mirror "${key}" "${dest}" "${sha}"
}
key_fingerprint() {  # key_fingerprint FILE: primary key fingerprint of an armored/binary public key
  gpg --batch --with-colons --show-keys "$1" 2>/dev/null | awk -F: '/^fpr:/ { print $10; exit }'
}

# "2.27.7" == "2.27.7-1+cuda12.9": the leading dotted number, ignoring suffixes like "-1", "+cuda12.9", "amzn5.0"
num() {
  if [[ -z ${1:-} ]]; then return 0; fi
  if [[ $1 =~ ^v?([0-9]+(\.[0-9]+)*) ]]; then printf '%s' "${BASH_REMATCH[1]}"; else printf '%s' "$1"; fi
}
same_version() { [[ "$(num "$1")" == "$(num "$2")" ]]; }

# ---- probes: what the node carries -------------------------------------------------------------
driver_version() {  # first GPU's driver per nvidia-smi, empty without a driver
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' ' || true
  fi
}

# /proc/driver/nvidia/version, first line, as printed by the loaded module (NVIDIA open-gpu-kernel-modules nv.c):
#   NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  595.112.07  Release Build  (...)
#   NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.172.08  Tue ...
loaded_driver_version() {
  awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+(\.[0-9]+)*$/) { print $i; exit } }' \
    "${FMC_ROOT}/proc/driver/nvidia/version" 2>/dev/null || true
}
# The installed module's version: nvidia.ko declares MODULE_VERSION(NV_VERSION_STRING) (NVIDIA/open-gpu-kernel-modules
# kernel-open/nvidia/nv.c), which modinfo prints from the module file on disk, not the loaded one.
installed_driver_version() { modinfo -F version nvidia 2>/dev/null | head -n 1 | tr -d ' ' || true; }
loaded_module_flavor() {  # open / proprietary / none, from the loaded module's banner
  local line
  line="$(head -n 1 "${FMC_ROOT}/proc/driver/nvidia/version" 2>/dev/null || true)"
  if [[ -z ${line} ]]; then echo none; elif [[ ${line} == *"Open Kernel Module"* ]]; then echo open; else echo proprietary; fi
}
module_flavor() {  # open / proprietary / none, from the installed module's license ("Dual MIT/GPL" vs "NVIDIA")
  local license
  license="$(modinfo -F license nvidia 2>/dev/null | head -n 1 || true)"
  if [[ -z ${license} ]]; then echo none; elif [[ ${license} == *MIT* ]]; then echo open; else echo proprietary; fi
}

efa_installer_version() {  # efa_installer_version [FILE]: "# EFA installer version: X" line of the installer's record
  sed -n 's/^# EFA installer version: *//p' "${1:-${FMC_ROOT}/opt/amazon/efa_installed_packages}" 2>/dev/null | head -n 1 || true
}

libfabric_version() { fi_info --version 2>/dev/null | sed -n 's/^libfabric:[[:space:]]*//p' | head -n 1 || true; }

plugin_library() {  # plugin_library DIR...: first aws-ofi-nccl library found
  local dir lib
  for dir in "$@"; do
    for lib in "${dir}/libnccl-net-ofi.so" "${dir}/libnccl-net.so"; do
      if [[ -e ${lib} ]]; then printf '%s' "${lib}"; return 0; fi
    done
  done
  return 0
}
plugin_version() {  # plugin_version LIBRARY: the version aws-ofi-nccl logs at init, read from the binary
  grep -aoE 'NET/OFI Initializing aws-ofi-nccl [0-9][0-9.]*' "$1" 2>/dev/null | head -n 1 | awk '{print $NF}' || true
}

cuda_version() {  # cuda_version CUDA_HOME: "cuda" version of the toolkit's version.json
  if [[ -r $1/version.json ]]; then
    sed -n '/"cuda"[[:space:]]*:/,/}/ s/.*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$1/version.json" | head -n 1
  fi
  return 0
}

# EFA network interfaces LNet lists for an EFA-enabled FSx for Lustre file system, counted from `lnetctl net show
# --net efa` (YAML: "net type: efa", then per local NI "- nid: <address>@efa" and "status: up|down"; Lustre
# Operations Manual, lnetctl "net show"): the ones up, or every one with "any". 0 when LNet has no efa network.
lnet_efa_nis() {  # lnet_efa_nis [any]
  local shown
  shown="$(timeout "${FMC_TIMEOUT_LNETCTL_S:-60}" lnetctl net show --net efa 2>/dev/null || true)"
  printf '%s\n' "${shown}" | awk -v want="${1:-up}" '
    /- nid: .*@efa/ { nis++; in_ni = 1; next }
    in_ni && /status:/ { if ($2 == "up") up++; in_ni = 0 }
    END { print (want == "any" ? nis + 0 : up + 0) }'
}

fabric_states() {  # one "Fabric ... State" value per GPU from nvidia-smi -q
  nvidia-smi -q 2>/dev/null | awk '
    /^[[:space:]]*Fabric[[:space:]]*$/ { in_fabric = 1; next }
    in_fabric && /^[[:space:]]*State[[:space:]]*:/ { sub(/^[^:]*:[[:space:]]*/, ""); print; in_fabric = 0 }' || true
}

# ---- the measured manifest (issue 23): the contract's version probes, one value per lock component ----------------
# Run at the end of a bake (no GPU there: the driver is the installed module's version) into measured.json, which the
# image test and the boot of a node of that image compare against; empty when the component is not found.
measure_component() {  # measure_component COMPONENT
  local lib
  case $1 in
    driver) installed_driver_version ;;
    kernel_modules) module_flavor | sed 's/^none$//' ;;
    fabric_manager) num "$(pkg_version nvidia-fabricmanager)" ;;
    imex) num "$(pkg_version nvidia-imex)" ;;
    cuda) cuda_version "${FMC_CUDA_HOME:-${FMC_ROOT}/usr/local/cuda-13.2}" ;;
    nccl) num "$(pkg_version libnccl2)" ;;
    efa_installer) efa_installer_version ;;
    libfabric) libfabric_version ;;
    aws_ofi_nccl)
      lib="$(plugin_library "${FMC_ROOT}/opt/amazon/ofi-nccl/lib" "${FMC_ROOT}/opt/amazon/ofi-nccl/lib64" "${FMC_ROOT}/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu")"
      if [[ -n ${lib} ]]; then plugin_version "${lib}"; fi ;;
    gdrcopy) num "$(pkg_version gdrcopy)" ;;
  esac
  return 0
}
measured_of() {  # measured_of FILE COMPONENT: the value measured.json records ("" when absent or not found)
  sed -n "s/^  \"$2\": \"\(.*\)\",\{0,1\}$/\1/p" "$1" 2>/dev/null | head -n 1 || true
}

service_active() { [[ "$(systemctl is-active "$1" 2>/dev/null || true)" == active ]]; }

# ---- package manager: apt/dpkg (Ubuntu; features/node/templates/pkg/apt.sh.j2) ---------------------------
export DEBIAN_FRONTEND=noninteractive
APT=(apt-get -q -y -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
FMC_APT_UPDATED=0
apt_update() {
  if [[ ${FMC_APT_UPDATED} -eq 0 ]]; then
    retry 5 "${APT[@]}" update
    FMC_APT_UPDATED=1
  fi
}
pkg_version() {  # installed version of a package, empty if not installed (dpkg-query exits 1 for unknown names)
  local out
  out="$(dpkg-query -W -f='${Status}|${Version}' "$1" 2>/dev/null)" || return 0
  if [[ ${out%%|*} == "install ok installed" ]]; then printf '%s' "${out#*|}"; fi
  return 0
}
pkg_owner() { dpkg -S "$1" 2>/dev/null | cut -d: -f1 || true; }  # package that installed a file, empty if none
installed_matching() {  # installed_matching ERE: names of installed packages matching ERE, one a line
  dpkg-query -W -f='${db:Status-Abbrev}|${Package}\n' 2>/dev/null | awk -F'|' '$1 ~ /^ii/ { print $2 }' \
    | grep -E "$1" || true
}
pin_package() {  # pin_package NAME VERSION-GLOB: apt preferences so apt picks exactly this version
  local pins="${FMC_ROOT}/etc/apt/preferences.d/fmcluster-pins"
  mkdir -p "$(dirname "${pins}")"
  touch "${pins}"
  if ! grep -qx "Package: $1" "${pins}"; then
    printf 'Package: %s\nPin: version %s\nPin-Priority: 1001\n\n' "$1" "$2" >>"${pins}"
  fi
}
install_spec() { printf '%s' "$1"; }  # apt selects the version through the preferences pin
install_packages() { apt_update; "${APT[@]}" install --no-install-recommends --allow-downgrades "$@"; }
# install_local_packages FILE...: package files already on the node (from the cluster's mirror), no repository and no
# network: dpkg(1) "-i, --install package-file..." (https://manpages.debian.org/dpkg.1); their dependencies must be on
# the image (libnccl2's are glibc's). Retried: an apt/dpkg run of the image's own boot services may hold the lock.
install_local_packages() { retry 3 dpkg --install "$@"; }
hold_packages() { apt-mark hold "$@" >/dev/null; log "held (apt-mark hold): $*"; }
initramfs_path() { printf '%s/boot/initrd.img-%s' "${FMC_ROOT}" "$1"; }  # update-initramfs naming (Debian/Ubuntu)
nvidia_repo_configured() {
  grep -rqs 'developer.download.nvidia.com/compute/cuda/repos' "${FMC_ROOT}/etc/apt/sources.list" "${FMC_ROOT}/etc/apt/sources.list.d/"
}
add_nvidia_repo() {  # add_nvidia_repo KEYFILE URL: NVIDIA's signed CUDA repository
  local keyring="${FMC_ROOT}/usr/share/keyrings/fmcluster-nvidia-cuda.gpg"
  mkdir -p "$(dirname "${keyring}")" "${FMC_ROOT}/etc/apt/sources.list.d"
  gpg --batch --yes --dearmor -o "${keyring}" "$1"
  printf 'deb [signed-by=%s] %s /\n' "/usr/share/keyrings/fmcluster-nvidia-cuda.gpg" "$2" \
    >"${FMC_ROOT}/etc/apt/sources.list.d/fmcluster-nvidia-cuda.list"
  FMC_APT_UPDATED=0
}
key_matches() { [[ $1 == "$2" ]]; }  # key_matches FINGERPRINT PINNED: the full fingerprint is pinned on Ubuntu

# unattended-upgrades: Package-Blacklist entries are Python regular expressions matched against the start of
# the package name (unattended-upgrades README, "Unattended-Upgrade::Package-Blacklist").
# needrestart: drop-ins in /etc/needrestart/conf.d are Perl; $nrconf{restart} = 'l' only lists services, and
# override_rc => 0 deselects slurmd (liske/needrestart ex/needrestart.conf). AWS's PCS sample add-cng-p6-b300.yaml
# (awslabs/awsome-distributed-ai) writes the same override: a slurmd restart kills the node's running jobs.
guard_upgrades_os() {
  mkdir -p "${FMC_ROOT}/etc/apt/apt.conf.d" "${FMC_ROOT}/etc/needrestart/conf.d"
  cat >"${FMC_ROOT}/etc/apt/apt.conf.d/51fmcluster-unattended-upgrades" <<'APTEOF'
// Written by fmcluster: unattended-upgrades must not touch the GPU/EFA stack, the kernel or Slurm
// (a new kernel or driver breaks the kernel modules, Fabric Manager == driver, and GPUDirect RDMA).
Unattended-Upgrade::Package-Blacklist {
    "linux-";
    "nvidia-";
    "libnvidia-";
    "cuda-";
    "libcuda";
    "libnccl";
    "nvlsm";
    "infiniband-diags";
    "gdrdrv";
    "libgdrapi";
    "gdrcopy";
    "efa";
    "libfabric";
    "libibverbs";
    "ibverbs";
    "rdma-core";
    "openmpi";
    "slurm";
    "libslurm";
    "datacenter-gpu-manager";
};
APTEOF
  cat >"${FMC_ROOT}/etc/needrestart/conf.d/90-fmcluster.conf" <<'NREOF'
# Written by fmcluster: never restart slurmd (it would kill the running jobs); only list what needs a restart.
$nrconf{restart} = 'l';
$nrconf{override_rc} = { %{ $nrconf{override_rc} // {} }, qr(^slurmd) => 0 };
NREOF
  log "unattended-upgrades blacklist and needrestart drop-in written"
}
# ---- end of fmcluster node library --------------------------------------------------------------

while (($#)); do
  case "$1" in
    --json) AS_JSON=1 ;;
    --nccl-log)
      [[ $# -ge 2 ]] || { echo "fmcluster-node-check: --nccl-log needs a file" >&2; exit 2; }
      NCCL_LOG="$2"; shift ;;
    --nccl-log=*) NCCL_LOG="${1#*=}" ;;
    --no-nccl) RUN_NCCL=0 ;;
    --drain) DRAIN=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "fmcluster-node-check: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

NAMES=()
STATUSES=()
DETAILS=()

json_escape() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\t'/\\t}
  s=${s//$'\r'/}
  s=${s//$'\n'/\\n}
  printf '%s' "$s"
}

record() {
  NAMES+=("$1")
  STATUSES+=("$2")
  DETAILS+=("$3")
  if [[ ${AS_JSON} -eq 0 ]]; then
    printf '%s %s: %s\n' "$2" "$1" "$3"
  fi
}
pass() { record "$1" PASS "$2"; }
DRIFTED=()
fail() {  # a drifted lock component (check name with - for _; nccl-loaded: nccl, aws-ofi-nccl-loaded: aws_ofi_nccl) is a WARN
  local component=${1%-loaded}
  component=${component//-/_}
  if [[ " ${REPORTED_ONLY} " != *" ${component} "* ]]; then
    record "$1" FAIL "$2"
    return
  fi
  record "$1" WARN "$2 (drift: not enforced, unverified or moving image value)"
  DRIFTED+=("${component}: $2")
}
skip() { record "$1" SKIP "$2"; }
report() { record "$1" WARN "$2 (reported; judged by the acceptance gate)"; }

cannot_run() {
  if [[ ${AS_JSON} -eq 1 ]]; then
    printf '{"check": "fmcluster-node-check", "status": "error", "error": "%s", "checks": []}\n' "$(json_escape "$1")"
  else
    printf 'ERROR fmcluster-node-check: %s\n' "$1" >&2
  fi
  exit 2
}


# ---- preconditions ---------------------------------------------------------------------------
command -v nvidia-smi >/dev/null 2>&1 || cannot_run "nvidia-smi not found on PATH: no NVIDIA driver installed"
if [[ -n ${NCCL_LOG} && ! -r ${NCCL_LOG} ]]; then
  cannot_run "cannot read NCCL log '${NCCL_LOG}'"
fi

# ---- driver and GPUs -------------------------------------------------------------------------
check_driver() {
  local out versions=() v bad=()
  if ! out="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1)"; then
    fail driver "nvidia-smi failed: $(printf '%s' "${out}" | head -n 1)"
    return
  fi
  mapfile -t versions < <(printf '%s\n' "${out}" | tr -d ' ' | sed '/^$/d')
  if [[ $(len "${versions[@]}") -ne ${EXPECTED_GPUS} ]]; then
    fail gpus "nvidia-smi sees $(len "${versions[@]}") GPU(s), expected ${EXPECTED_GPUS} for p5en.48xlarge"
  else
    pass gpus "${EXPECTED_GPUS} GPU(s) visible"
  fi
  for v in "${versions[@]}"; do
    [[ ${v} == "${PIN_DRIVER}" ]] || bad+=("${v}")
  done
  if [[ $(len "${versions[@]}") -eq 0 ]]; then
    fail driver "nvidia-smi reports no driver version, expected ${PIN_DRIVER}"
  elif [[ $(len "${bad[@]}") -gt 0 ]]; then
    fail driver "driver ${bad[0]} does not match the pinned ${PIN_DRIVER}"
  else
    pass driver "${PIN_DRIVER} on all GPUs"
  fi
}

check_kernel_modules() {
  local flavor loaded
  flavor="$(module_flavor)"  # open modules are "Dual MIT/GPL", the proprietary ones "NVIDIA"
  if [[ ${flavor} == none ]]; then
    fail kernel-modules "modinfo cannot find the nvidia module"
    return
  fi
  loaded="$(loaded_module_flavor)"
  if [[ ${flavor} != "${PIN_KERNEL_MODULES}" ]]; then
    fail kernel-modules "${flavor} NVIDIA kernel modules loaded, expected ${PIN_KERNEL_MODULES}"
  elif [[ ${loaded} != "${flavor}" ]]; then
    record kernel-modules FAIL "the loaded module is ${loaded} (/proc/driver/nvidia/version), the installed one ${flavor}: reboot or reload"
  else
    pass kernel-modules "${flavor} NVIDIA kernel modules"
  fi
  if [[ ${OPEN_MODULES_REQUIRED} -eq 1 && ${loaded} == proprietary ]]; then
    record kernel-modules-open FAIL "proprietary NVIDIA kernel modules loaded; H200 runs only on the open ones"
  fi
}

check_loaded_driver() {  # functional: the module in the kernel is the installed one (a driver update without reboot differs)
  local have installed
  have="$(loaded_driver_version)"
  installed="$(installed_driver_version)"
  if [[ -z ${have} ]]; then
    fail driver-loaded "/proc/driver/nvidia/version unreadable: the nvidia module is not loaded"
  elif [[ ${have} != "${installed}" ]]; then
    fail driver-loaded "the loaded nvidia module is ${have}, the installed one ${installed:-unknown}: reboot or reload"
  else
    pass driver-loaded "nvidia module ${have} loaded"
  fi
}

check_initramfs() {  # an initramfs for the running kernel (a kernel update without one does not boot)
  local kernel path
  kernel="$(uname -r)"
  path="$(initramfs_path "${kernel}")"
  if [[ -s ${path} ]]; then
    pass initramfs "${path#"${FMC_ROOT}"} present for kernel ${kernel}"
  else
    fail initramfs "${path#"${FMC_ROOT}"} missing for the running kernel ${kernel}"
  fi
}

check_fabric_manager() {
  if [[ ${NEEDS_FABRIC_MANAGER} -eq 0 ]]; then
    skip fabric-manager "p5en.48xlarge has no NVSwitch"
    return
  fi
  local have state
  have="$(pkg_version nvidia-fabricmanager)"
  if [[ -z ${have} ]]; then
    fail fabric-manager "package nvidia-fabricmanager not installed, expected ${PIN_DRIVER}"
    return
  fi
  local driver
  driver="$(driver_version)"  # the driver nvidia-smi runs
  driver="${driver:-${PIN_DRIVER}}"
  if [[ "$(num "${have}")" != "${driver}" ]]; then  # Fabric Manager must equal the running driver (functional)
    record fabric-manager FAIL "Fabric Manager ${have} does not match the running driver ${driver}"
    return
  fi
  state="$(systemctl is-active nvidia-fabricmanager 2>/dev/null)"
  if [[ ${state} != active ]]; then
    record fabric-manager FAIL "nvidia-fabricmanager is ${state:-unknown}, expected active"
    return
  fi
  pass fabric-manager "${driver}, active"
}

check_fabric_state() {
  if [[ ${NEEDS_FABRIC_STATE} -eq 0 ]]; then
    skip fabric-state "no GPU fabric registration on p5en.48xlarge"
    return
  fi
  local states=() s not_completed=0
  mapfile -t states < <(fabric_states)
  for s in "${states[@]}"; do
    [[ ${s} == Completed ]] || not_completed=$((not_completed + 1))
  done
  if [[ $(len "${states[@]}") -ne ${EXPECTED_GPUS} ]]; then
    fail fabric-state "fabric state reported for $(len "${states[@]}") of ${EXPECTED_GPUS} GPUs"
  elif [[ ${not_completed} -gt 0 ]]; then
    fail fabric-state "${not_completed} GPU(s) not Completed (first: $(printf '%s\n' "${states[@]}" | grep -v -x Completed | head -n 1)); Fabric Manager/NVLSM/IMEX not ready"
  else
    pass fabric-state "Completed on ${EXPECTED_GPUS} GPU(s)"
  fi
}

check_nvlsm() {
  if [[ ${NEEDS_NVLSM} -eq 0 ]]; then
    return
  fi
  if [[ -n "$(pkg_version nvlsm)" ]]; then
    pass nvlsm "nvlsm $(pkg_version nvlsm) installed"
  else
    fail nvlsm "nvlsm not installed (Fabric Manager cannot finish NVLink5 registration)"
  fi
}

check_imex() {
  if [[ ${NEEDS_IMEX} -eq 0 ]]; then
    return
  fi
  local have state driver
  have="$(pkg_version nvidia-imex)"
  driver="$(driver_version)"  # the driver nvidia-smi runs
  driver="${driver:-${PIN_DRIVER}}"
  if [[ -z ${have} ]] || [[ "$(num "${have}")" != "${driver}" ]]; then  # IMEX must equal the running driver
    record imex FAIL "nvidia-imex ${have:-missing} does not match the running driver ${driver}"
    return
  fi
  state="$(systemctl is-active nvidia-imex 2>/dev/null)"
  if [[ ${state} != active ]]; then
    record imex FAIL "nvidia-imex is ${state:-unknown}, expected active"
  else
    pass imex "${driver}, active"
  fi
}

check_cuda() {
  local have=""
  if [[ -r ${CUDA_DIR}/version.json ]]; then
    have="$(sed -n '/"cuda"[[:space:]]*:/,/}/ s/.*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "${CUDA_DIR}/version.json" | head -n 1)"
  fi
  if [[ -n ${have} ]]; then
    if same_version "${have}" "${PIN_CUDA}"; then
      pass cuda "${have} at ${CUDA_DIR}"
    else
      fail cuda "CUDA ${have} at ${CUDA_DIR} does not match the pinned ${PIN_CUDA}"
    fi
    return
  fi
  # nvcc only reports major.minor ("release 12.8, V12.8.93")
  local nvcc="${CUDA_DIR}/bin/nvcc" rel
  [[ -x ${nvcc} ]] || nvcc="$(command -v nvcc 2>/dev/null)"
  if [[ -z ${nvcc} ]]; then
    fail cuda "CUDA ${PIN_CUDA} not found (${CUDA_DIR}/version.json and nvcc missing)"
    return
  fi
  rel="$("${nvcc}" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\),.*/\1/p' | head -n 1)"
  if [[ ${rel} == "$(printf '%s' "${PIN_CUDA}" | cut -d. -f1,2)" ]]; then
    pass cuda "release ${rel} (nvcc; ${PIN_CUDA} pinned)"
  else
    fail cuda "nvcc reports release ${rel:-unknown}, expected ${PIN_CUDA}"
  fi
}

check_nccl() {
  local have
  have="$(pkg_version libnccl2)"
  if [[ -z ${have} ]]; then
    fail nccl "package libnccl2 not installed, expected ${PIN_NCCL}"
  elif ! same_version "${have}" "${PIN_NCCL}"; then
    fail nccl "NCCL ${have} does not match the pinned ${PIN_NCCL}"
  elif [[ ${have} != *"+cuda${PIN_CUDA_MAJOR}"* ]]; then
    fail nccl "NCCL ${have} is not built for CUDA ${PIN_CUDA_MAJOR}"
  else
    pass nccl "${have}"
  fi
}

check_efa_installer() {
  if [[ ${EFA_ENABLED} -eq 0 ]]; then
    skip efa-installer "EFA disabled for this group"
    return
  fi
  local have
  have="$(efa_installer_version "${EFA_PACKAGES_FILE}")"
  if [[ -z ${have} ]]; then
    fail efa-installer "${EFA_PACKAGES_FILE} missing or without a version, expected ${PIN_EFA_INSTALLER}"
  elif [[ ${have} != "${PIN_EFA_INSTALLER}" ]]; then
    fail efa-installer "EFA installer ${have} does not match the pinned ${PIN_EFA_INSTALLER}"
  else
    pass efa-installer "${have}"
  fi
}

check_libfabric() {
  if [[ ${EFA_ENABLED} -eq 0 ]]; then
    skip libfabric "EFA disabled for this group"
    return
  fi
  local have
  have="$(libfabric_version)"
  if [[ -z ${have} ]]; then
    fail libfabric "fi_info --version gave no libfabric version"
  elif [[ -z ${PIN_LIBFABRIC} ]]; then
    skip libfabric "${have} installed; the catalog does not know what EFA installer ${PIN_EFA_INSTALLER} bundles"
  elif [[ ${have} != "${PIN_LIBFABRIC}" ]]; then
    fail libfabric "libfabric ${have} does not match ${PIN_LIBFABRIC} (bundled by EFA installer ${PIN_EFA_INSTALLER})"
  else
    pass libfabric "${have}"
  fi
}

check_efa_devices() {
  if [[ ${EFA_ENABLED} -eq 0 ]]; then
    skip efa-devices "EFA disabled for this group"
    return
  fi
  local devs=() n
  if [[ -d ${SYS_IB} ]]; then
    mapfile -t devs < <(find "${SYS_IB}" -mindepth 1 -maxdepth 1 -name 'rdmap*' 2>/dev/null | sort)
  fi
  n=$(len "${devs[@]}")
  if [[ ${n} -ne ${EXPECTED_EFA} ]]; then
    fail efa-devices "${n} EFA device(s) in ${SYS_IB}, expected ${EXPECTED_EFA} for p5en.48xlarge"
    return
  fi
  # fi_info prints one "domain: <device>-rdm" per EFA device of the efa RDM provider (libfabric util/info.c,
  # fi_tostr of struct fi_info; EFA user guide "fi_info -p efa -t FI_EP_RDM")
  local domains
  domains="$(fi_info -p efa -t FI_EP_RDM 2>/dev/null | awk '$1 == "domain:" && $2 ~ /-rdm$/ {print $2}' | sort -u | wc -l)"
  if [[ ${domains} -eq 0 ]]; then
    fail efa-devices "${n} EFA device(s) present but fi_info -p efa lists no efa RDM domain"
  elif [[ ${domains} -ne ${EXPECTED_EFA} ]]; then
    fail efa-devices "fi_info -p efa lists ${domains} efa RDM domain(s), expected ${EXPECTED_EFA} for p5en.48xlarge"
  else
    pass efa-devices "${n} EFA device(s), ${domains} efa RDM domain(s) in fi_info"
  fi
}

check_gpudirect_rdma() {
  if [[ ${EFA_ENABLED} -eq 0 ]]; then
    skip gpudirect-rdma "EFA disabled for this group"
    return
  fi
  local f missing=0 total=0
  for f in "${SYS_IB}"/rdmap*/device/p2p; do
    [[ -e ${f} ]] || continue
    total=$((total + 1))
    grep -qi nvidia "${f}" 2>/dev/null || missing=$((missing + 1))
  done
  if [[ ${total} -eq 0 && ${GDR_REQUIRED} -eq 0 ]]; then
    skip gpudirect-rdma "no p2p attribute under ${SYS_IB}/rdmap*/device; GPUDirect RDMA is optional on p5en.48xlarge"
  elif [[ ${total} -eq 0 ]]; then
    fail gpudirect-rdma "no p2p attribute under ${SYS_IB}/rdmap*/device (EFA peer-memory support missing)"
  elif [[ ${missing} -gt 0 ]]; then
    fail gpudirect-rdma "${missing} of ${total} EFA device(s) have no NVIDIA p2p provider"
  else
    pass gpudirect-rdma "NVIDIA p2p provider on ${total} EFA device(s)"
  fi
}

check_aws_ofi_nccl() {
  if [[ ${EFA_ENABLED} -eq 0 ]]; then
    skip aws-ofi-nccl "EFA disabled for this group"
    return
  fi
  local lib="" have=""
  # shellcheck disable=SC2086  # a space-separated directory list
  lib="$(plugin_library ${OFI_LIB_DIRS})"
  if [[ -z ${lib} ]]; then
    fail aws-ofi-nccl "plugin library not found in ${OFI_LIB_DIRS}"
    return
  fi
  have="$(plugin_version "${lib}")"
  if [[ -z ${have} ]]; then
    fail aws-ofi-nccl "${lib} carries no aws-ofi-nccl version string"
  elif ! same_version "${have}" "${PIN_AWS_OFI_NCCL}"; then
    fail aws-ofi-nccl "aws-ofi-nccl ${have} in ${lib} does not match ${PIN_AWS_OFI_NCCL}"
  else
    pass aws-ofi-nccl "${have} (${lib})"
  fi
}

check_gdrcopy() {
  local have
  have="$(pkg_version gdrcopy)"
  if [[ -z ${have} ]]; then
    fail gdrcopy "GDRCopy missing: package gdrcopy not installed, expected ${PIN_GDRCOPY}"
  elif ! same_version "${have}" "${PIN_GDRCOPY}"; then
    fail gdrcopy "GDRCopy ${have} does not match the pinned ${PIN_GDRCOPY}"
  elif ! lsmod 2>/dev/null | awk '{print $1}' | grep -qx gdrdrv; then
    fail gdrcopy "GDRCopy ${have} installed but the gdrdrv module is not loaded"
  else
    pass gdrcopy "${have}, gdrdrv loaded"
  fi
}

check_modules() {
  local want=(nvidia) m missing=()
  if [[ ${EFA_ENABLED} -eq 1 ]]; then
    want+=(efa ib_uverbs ib_core)
  fi
  local loaded
  loaded="$(lsmod 2>/dev/null | awk 'NR > 1 {print $1}')"
  for m in "${want[@]}"; do
    grep -qx "${m}" <<<"${loaded}" || missing+=("${m}")
  done
  if [[ $(len "${missing[@]}") -gt 0 ]]; then
    fail kernel-modules-loaded "not loaded: ${missing[*]}"
  else
    pass kernel-modules-loaded "${want[*]}"
  fi
}

# ---- NCCL log (signatures from NVIDIA/nccl src/plugin/*.cc, src/init.cc) --------------------------
run_nccl_tests() {
  local bin="${NCCL_TESTS_DIR}/all_reduce_perf" rc
  mkdir -p "${LOG_DIR}" 2>/dev/null || true
  NCCL_LOG="${LOG_DIR}/nccl-check.log"
  # P2P and SHM off force intra-node traffic through the network plugin, so one node shows the
  # plugin, the provider, the NIC count and the GDRDMA channels; NCCL_NET=Libfabric fails closed.
  (
    if [[ -r ${JOB_ENV} ]]; then
      # shellcheck disable=SC1090
      . "${JOB_ENV}"
    fi
    export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_NET=Libfabric NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
    exec timeout 600 "${bin}" -b 8 -e 64M -f 2 -g "${EXPECTED_GPUS}"
  ) >"${NCCL_LOG}" 2>&1
  rc=$?
  if [[ ${rc} -ne 0 ]]; then  # not by itself evidence that NCCL will not use EFA: the log checks below judge that
    report nccl-run "all_reduce_perf exited ${rc} (log: ${NCCL_LOG})"
  else
    pass nccl-run "all_reduce_perf over ${EXPECTED_GPUS} GPU(s) through the network plugin (log: ${NCCL_LOG})"
  fi
}

first_match() { grep -m 1 -E "$1" "${NCCL_LOG}" 2>/dev/null | sed -E 's/^.*NCCL (INFO|WARN) //; s/[[:space:]]+$//'; }

check_nccl_log() {
  local line n

  # NCCL actually loaded (S11: a pip/conda NCCL shadowing the pinned one)
  line="$(grep -m 1 -oE 'NCCL version [0-9][0-9.]*(\+cuda[0-9.]+)?' "${NCCL_LOG}")"
  if [[ -z ${line} ]]; then
    report nccl-loaded "no 'NCCL version' line in ${NCCL_LOG} (was NCCL_DEBUG=INFO set?)"
  elif ! same_version "${line#NCCL version }" "${PIN_NCCL}"; then
    fail nccl-loaded "the job loaded ${line}, pinned ${PIN_NCCL} (another NCCL shadows the pinned one)"
  else
    pass nccl-loaded "${line}"
  fi

  # S1/S2/S14: plugin not found or not loadable, in the line formats of NCCL 2.18 to 2.28
  line="$(first_match 'NET/Plugin ?: ?(No plugin found|Could not find|Plugin load returned|dlerror=|Failed to open)|NET/Plugin ?:.*(cannot open shared object|not found \(required by|undefined symbol)')"
  if [[ -n ${line} ]]; then
    fail net-plugin "aws-ofi-nccl plugin not loaded: ${line}"
  elif line="$(first_match 'NET/OFI Initializing aws-ofi-nccl')" && [[ -n ${line} ]]; then
    n="$(printf '%s' "${line}" | awk '{print $NF}')"
    if [[ -n ${PIN_AWS_OFI_NCCL} ]] && ! same_version "${n}" "${PIN_AWS_OFI_NCCL}"; then
      fail aws-ofi-nccl-loaded "the job loaded aws-ofi-nccl ${n}, expected ${PIN_AWS_OFI_NCCL}"
    else
      pass net-plugin "${line}"
    fi
  else
    fail net-plugin "no sign that aws-ofi-nccl was loaded (no 'NET/OFI Initializing' line)"
  fi

  # S3/S10: plugin loaded but initialisation or memory registration failed
  line="$(first_match 'NET/OFI aws-ofi-nccl initialization failed|NET/OFI No eligible providers|NET/OFI EFA provider requires|Failed to initialize (NET plugin|any NET plugin)|Unable to register memory')"
  if [[ -n ${line} ]]; then
    fail net-plugin-init "plugin initialisation failed: ${line}"
  else
    pass net-plugin-init "no initialisation or registration failure"
  fi

  # S4: the network NCCL chose
  line="$(first_match 'Using network Socket|NET/Socket : Using')"
  if [[ -n ${line} ]]; then
    fail network "NCCL used sockets, not EFA: ${line}"
  elif line="$(first_match 'Using network (AWS )?Libfabric')" && [[ -n ${line} ]]; then
    pass network "${line}"
  else
    report network "no 'Using network Libfabric' line (the line differs across NCCL versions)"
  fi

  # S6: provider and NIC count (>= 1.14: "Selected provider is efa, fabric is efa-direct (found N nics)";
  # older: "Selected Provider is efa (found N nics)"). The provider is any libfabric name (efa, tcp,
  # sockets, tcp;ofi_rxm, ...) and the fabric any string without "(" (efa-direct, an address or CIDR
  # such as 10.1.0.0/16 for tcp, an interface name): aws-ofi-nccl prints
  # "Selected provider is %s, fabric is %s (found %d nics)" from fi_info's prov_name and fabric_attr->name
  # (https://github.com/aws/aws-ofi-nccl/blob/master/src/nccl_ofi_net.cpp, nccl_net_ofi_query_provider_capabilities).
  local provider
  line="$(grep -m 1 -oE 'Selected [Pp]rovider is [^ ,()]+(, fabric is [^()]*[^() ])? \(found [0-9]+ nics\)' "${NCCL_LOG}")"
  if [[ -z ${line} ]]; then
    line="$(grep -m 1 -oE 'Selected [Pp]rovider is .*' "${NCCL_LOG}")"
    if [[ -n ${line} ]]; then
      report efa-provider "unrecognised provider line (expected efa): ${line}"
    else
      report efa-provider "no 'Selected provider is efa' line"
    fi
  else
    provider="$(printf '%s' "${line}" | sed -E 's/^Selected [Pp]rovider is ([^ ,()]+).*/\1/')"
    if [[ ${provider} != efa ]]; then
      fail efa-provider "wrong libfabric provider ${provider} (expected efa): ${line}"
    else
      n="$(printf '%s' "${line}" | sed -E 's/.*found ([0-9]+) nics.*/\1/')"
      if [[ ${n} -ne ${EXPECTED_EFA} ]]; then  # NICs per rank depend on the run's topology: no source fixes it
        report efa-provider "efa selected with ${n} NIC(s); ${EXPECTED_EFA} EFA device(s) on p5en.48xlarge"
      else
        pass efa-provider "${line}"
      fi
    fi
  fi

  # S5: GPUDirect RDMA on every NET channel
  local total without
  total="$(grep -cE 'via NET/' "${NCCL_LOG}")"
  without="$(grep -E 'via NET/' "${NCCL_LOG}" | grep -cv '/GDRDMA')"
  if [[ ${total} -eq 0 ]]; then
    skip gdrdma "no NET channel lines in the log (intra-node run without NCCL_P2P_DISABLE/NCCL_SHM_DISABLE?)"
  elif [[ ${without} -gt 0 ]]; then
    report gdrdma "${without} of ${total} NET channel(s) without GDRDMA: traffic bounces through host memory"
  else
    pass gdrdma "${total} NET channel(s), all GDRDMA"
  fi
}

# ---- run -------------------------------------------------------------------------------------
check_driver
check_loaded_driver
check_kernel_modules
check_initramfs
check_modules
check_fabric_manager
check_fabric_state
check_nvlsm
check_imex
check_cuda
check_nccl
check_efa_installer
check_libfabric
check_efa_devices
check_gpudirect_rdma
check_aws_ofi_nccl
check_gdrcopy

if [[ ${EFA_ENABLED} -eq 0 ]]; then
  skip nccl-log "EFA disabled for this group: NCCL uses sockets by design"
elif [[ -n ${NCCL_LOG} ]]; then
  check_nccl_log
elif [[ ${RUN_NCCL} -eq 0 ]]; then
  skip nccl-log "--no-nccl given"
elif [[ -x ${NCCL_TESTS_DIR}/all_reduce_perf ]]; then
  run_nccl_tests
  check_nccl_log
else
  skip nccl-log "nccl-tests not found at ${NCCL_TESTS_DIR}; pass --nccl-log FILE to judge a job's NCCL_DEBUG=INFO log"
fi

# Drift as node facts, where this run may write them (root's directories: a user's run skips them). One gauge per drifted lock component and their count, in
# node_exporter's textfile directory (the textfile collector reads *.prom; written to a temporary file and renamed,
# as node_exporter's documentation asks), and the boot verify's drift file with the same components. Every run
# rewrites both, so a periodic health check keeps them current.
export_drift() {
  local c tmp
  mkdir -p "${TEXTFILE_DIR}" "$(dirname "${DRIFT_FILE}")" || return 0
  tmp="$(mktemp "${TEXTFILE_DIR}/.fmcluster_drift.prom.XXXXXX")" || return 0
  {
    echo "# HELP fmcluster_node_drift A lock component that differs from the lock and is not enforced (reported, never fatal; fmcluster-node-check)."
    echo "# TYPE fmcluster_node_drift gauge"
    for c in ${DRIFTED[@]+"${DRIFTED[@]}"}; do
      echo "fmcluster_node_drift{component=\"${c%%:*}\"} 1"
    done
    echo "# HELP fmcluster_node_drift_components Lock components drifted on this node (0: the node carries the lock)."
    echo "# TYPE fmcluster_node_drift_components gauge"
    echo "fmcluster_node_drift_components $(len ${DRIFTED[@]+"${DRIFTED[@]}"})"
  } >"${tmp}"
  chmod 0644 "${tmp}"
  mv -f "${tmp}" "${TEXTFILE_DIR}/fmcluster_drift.prom"
  # "<component>: <detail>" lines, as the boot verify writes them
  printf '%s\n' ${DRIFTED[@]+"${DRIFTED[@]}"} | sed '/^$/d' 2>/dev/null >"${DRIFT_FILE}" || true
}
export_drift 2>/dev/null || true

failed=0
first_failure=""
for i in "${!STATUSES[@]}"; do
  if [[ ${STATUSES[i]} == FAIL ]]; then
    failed=$((failed + 1))
    [[ -n ${first_failure} ]] || first_failure="${NAMES[i]}: ${DETAILS[i]}"
  fi
done

if [[ ${AS_JSON} -eq 1 ]]; then
  status=pass
  [[ ${failed} -eq 0 ]] || status=fail
  printf '{"check": "fmcluster-node-check", "status": "%s", "instance_type": "p5en.48xlarge", "stack": "dlami-2026-10", "checks": [' "${status}"
  for i in "${!NAMES[@]}"; do
    [[ ${i} -eq 0 ]] || printf ', '
    printf '{"name": "%s", "status": "%s", "detail": "%s"}' "$(json_escape "${NAMES[i]}")" "${STATUSES[i],,}" "$(json_escape "${DETAILS[i]}")"
  done
  printf ']}\n'
else
  printf '%s: %d check(s), %d failed\n' "$([[ ${failed} -eq 0 ]] && echo PASS || echo FAIL)" "$(len "${NAMES[@]}")" "${failed}"
fi

if [[ ${failed} -gt 0 ]]; then
  # slurmd, systemd timers and sudo (secure_path) run this without a login PATH: put the cluster's Slurm command
  # directory first (OrchestratorProfile.slurm_bin_dir). The node is SLURMD_NODENAME when the caller knows it (the PCS
  # health timer), else the short host name.
  PATH="/opt/aws/pcs/scheduler/slurm-25.05/bin:${PATH}"
  if [[ ${DRAIN} -eq 1 ]] && command -v scontrol >/dev/null 2>&1; then
    scontrol update NodeName="${SLURMD_NODENAME:-$(hostname -s)}" State=DRAIN Reason="fmcluster-node-check: ${first_failure:0:200}" || true
  fi
  exit 1
fi
exit 0
FMCLUSTER_NODE_CHECK_EOF
  mv -f "${check}.tmp" "${check}"
  chmod 0755 "${check}"
  mkdir -p "${FMC_ROOT}/usr/local/bin"
  ln -sf "${FMC_NODE_CHECK}" "${FMC_ROOT}/usr/local/bin/fmcluster-node-check"
  printf '#!/bin/sh\n# Slurm HealthCheckProgram: cheap checks only, drain the node on failure.\nexec %s --no-nccl --drain\n' \
    "${FMC_NODE_CHECK}" >"${FMC_ROOT}${FMC_PREFIX}/bin/fmcluster-node-check-health"
  chmod 0755 "${FMC_ROOT}${FMC_PREFIX}/bin/fmcluster-node-check-health"
  log "installed ${FMC_NODE_CHECK} (health-check wrapper: ${FMC_PREFIX}/bin/fmcluster-node-check-health)"
  # the check's logs go where this bootstrap's go (FMC_ROOT: the simulated node's root in the boot simulation)
  if env FMC_LOG_DIR="${FMC_ROOT}${FMC_LOG_DIR}" "${check}"; then
    log "node check passed"
  else
    die "node check failed (exit $?); the lines above name each failed check"
  fi
}

main() {
  step_preflight
  step_verify
  step_guard_upgrades
  step_fabric_manager
  step_fabric_state
  step_nccl
  step_nccl_tests
  step_holds
  step_scratch
  step_fsx
  step_job_env
  step_node_check
  step finished "bootstrap complete"
}

if [[ "$(id -u)" -eq 0 ]]; then
  mkdir -p "${FMC_ROOT}${FMC_LOG_DIR}"
  exec > >(tee -a "${FMC_ROOT}${FMC_LOG_DIR}/bootstrap.log") 2>&1
fi
main "$@"
