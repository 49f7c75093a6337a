#!/usr/bin/env bash
# shellcheck disable=SC2329  # install steps are invoked indirectly, through run_step
# fmcluster metrics exporters for hp-train: compute node of group gpu (p5.48xlarge).
# Metrics mode managed, node discovery slurm, orchestrator hyperpod.
# Rendered by fmcluster (fmcluster/features/observability); do not edit by hand. Pinned versions and their
# sources: fmcluster/features/observability/pins.py. Safe to run again (idempotent).
#
# A monitoring problem never fails the node: every step runs on its own (errexit inside the step only), a
# failed or skipped step is a warning, and the script always exits 0. The state it reached is the last log
# line ("fmcluster-monitoring-state: step=ok|failed|skipped ...") and the file /var/lib/fmcluster/monitoring-state.
set -uo pipefail
umask 022

readonly FMC_BLUEPRINT="hp-train"
readonly FMC_ROLE="compute"
readonly FMC_METRICS="managed"
readonly FMC_TEXTFILE_DIR="/var/lib/node_exporter/textfile"
readonly FMC_WORK="/opt/fmcluster/observability"
readonly FMC_STATE_FILE="/var/lib/fmcluster/monitoring-state"
readonly FMC_SKIPPED=10

log() {
  printf '%s fmcluster-exporters: %s\n' "$(date -u +%FT%TZ)" "$*"
  logger -t fmcluster-exporters -- "$*" 2>/dev/null || true
}
warn() { log "WARNING: $*"; }
die() { log "ERROR: $*" >&2; exit 1; }  # stderr: also seen when called inside $(...)

FMC_STATES=()
# Run one install step in a subshell with errexit; record ok / failed / skipped (exit FMC_SKIPPED).
run_step() {  # name function
  local name="$1" rc
  shift
  ( set -e; "$@" )
  rc=$?
  case "${rc}" in
    0) FMC_STATES+=("${name}=ok") ;;
    "${FMC_SKIPPED}") FMC_STATES+=("${name}=skipped") ;;
    *) FMC_STATES+=("${name}=failed"); warn "${name} failed (exit ${rc}); the node continues without it" ;;
  esac
}

report_state() {
  local line="fmcluster-monitoring-state: ${FMC_STATES[*]}"
  mkdir -p "$(dirname "${FMC_STATE_FILE}")"
  printf '%s %s\n' "$(date -u +%FT%TZ)" "${line}" > "${FMC_STATE_FILE}" || true
  log "${line}"
}

if [[ "$(id -u)" -ne 0 ]]; then
  warn "not root: no exporter installed"
  FMC_STATES+=("all=skipped")
  report_state
  exit 0
fi
case "$(uname -m)" in
  x86_64) FMC_ARCH=amd64 ;;
  aarch64 | arm64) FMC_ARCH=arm64 ;;
  *) FMC_ARCH="" ;;
esac
if command -v apt-get >/dev/null 2>&1; then
  FMC_PKG=apt
elif command -v dnf >/dev/null 2>&1; then
  FMC_PKG=dnf
else
  FMC_PKG=""
fi
if [[ -z "${FMC_ARCH}" || -z "${FMC_PKG}" ]]; then
  warn "unsupported node (architecture $(uname -m), package manager ${FMC_PKG:-none}): no exporter installed"
  FMC_STATES+=("all=skipped")
  report_state
  exit 0
fi
readonly FMC_ARCH FMC_PKG
mkdir -p "${FMC_WORK}"
log "${FMC_BLUEPRINT}: installing ${FMC_ROLE}-node monitoring (${FMC_METRICS}, ${FMC_ARCH}, ${FMC_PKG})"

# ---- helpers ---------------------------------------------------------------------------------
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
sha_for_arch() {  # amd64-sha arm64-sha
  if [[ "${FMC_ARCH}" == "amd64" ]]; then echo "$1"; else echo "$2"; fi
}

# Read a release archive from the cluster's mirror bucket (key mirror/...: copied there at deploy, read through the S3
# gateway endpoint; nothing is downloaded from the internet), check its pinned sha256 and unpack it into a versioned
# folder.
install_archive() {  # name mirror-key sha256 dest-dir
  local name="$1" url="$2" want="$3" dest="$4" tgz
  if [[ -f "${dest}/.fmcluster-verified" ]]; then
    return 0
  fi
  tgz="$(mktemp "${FMC_WORK}/${name}.XXXXXX.tar.gz")"
  rm -f "${tgz}"
  FMC_MIRROR_REGION="us-east-1" FMC_MIRROR_BUCKET_SUFFIX="-0508cb566a" \
    fetch_mirror "${url}" "${tgz}" "${want}" || die "${name}: ${url} not available from the cluster's mirror bucket"
  echo "${want}  ${tgz}" | sha256sum -c --quiet - || die "sha256 mismatch for ${url} (pinned ${want})"
  rm -rf "${dest}"
  mkdir -p "${dest}"
  tar -xzf "${tgz}" -C "${dest}" --strip-components=1
  rm -f "${tgz}"
  touch "${dest}/.fmcluster-verified"
  log "${name}: installed ${url##*/} (sha256 verified)"
}

ensure_user() {  # name
  id -u "$1" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$1"
}

# Upstream version (no epoch, no packaging revision) of an installed package, or nothing.
installed_version() {  # package
  local v=""
  if [[ "${FMC_PKG}" == "apt" ]]; then
    v="$(dpkg-query -W -f='${db:Status-Status} ${Version}' "$1" 2>/dev/null | awk '$1 == "installed" {print $2}')"
  else
    v="$(rpm -q --qf '%{VERSION}' "$1" 2>/dev/null)" || v=""
  fi
  v="${v#*:}"
  echo "${v%%-*}"
}

write_unit() {  # unit-name (content on stdin)
  cat > "/etc/systemd/system/$1"
  chmod 0644 "/etc/systemd/system/$1"
}

# ---- node_exporter with the fmcluster textfile collector ---------------------------------------
install_node_exporter() {
  local dir="/opt/node_exporter-1.7.0"
  install_archive node_exporter "mirror/node_exporter/node_exporter-1.7.0.linux-${FMC_ARCH}.tar.gz" \
    "$(sha_for_arch a550cd5c05f760b7934a2d0afad66d2e92e681482f5f57a917465b1fba3b02a6 e386c7b53bc130eaf5e74da28efc6b444857b77df8070537be52678aefd34d96)" "${dir}"
  ensure_user node_exporter
  # World-writable with the sticky bit: training jobs publish their throughput here (fmcluster-publish-throughput).
  mkdir -p "${FMC_TEXTFILE_DIR}"
  chmod 1777 "${FMC_TEXTFILE_DIR}"
  # The infiniband collector reads ports/*/counters, which EFA devices do not have; our textfile
  # collector reads their hw_counters instead.
  write_unit fmcluster-node-exporter.service <<UNIT
[Unit]
Description=fmcluster node_exporter 1.7.0
After=network-online.target
Wants=network-online.target

[Service]
User=node_exporter
ExecStart=${dir}/node_exporter --web.listen-address=:9100 --collector.textfile.directory=${FMC_TEXTFILE_DIR} --no-collector.infiniband
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
UNIT
  cat > /usr/local/sbin/fmcluster-node-facts <<'FMCLUSTER_NODE_FACTS_SCRIPT'
#!/usr/bin/env bash
# fmcluster textfile collector for hp-train (compute node, group gpu).
# Writes node facts and the EFA hardware counters (/sys/class/infiniband/<dev>/ports/<port>/hw_counters)
# in Prometheus text format for node_exporter's textfile collector. Rendered by fmcluster; do not edit.
set -euo pipefail

sysfs="${FMC_SYSFS_ROOT:-/sys}"
out_dir="${FMC_TEXTFILE_DIR:-/var/lib/node_exporter/textfile}"
out="${out_dir}/fmcluster.prom"
mkdir -p "${out_dir}"
tmp="$(mktemp "${out_dir}/.fmcluster.prom.XXXXXX")"
trap 'rm -f "${tmp}"' EXIT

efa_devices=()
n_efa=0
for dev_path in "${sysfs}"/class/infiniband/*; do
  [[ -e "${dev_path}/device/driver" ]] || continue
  driver="$(readlink -f "${dev_path}/device/driver")"
  if [[ "${driver##*/}" == "efa" ]]; then
    efa_devices+=("${dev_path##*/}")
    n_efa=$((n_efa + 1))
  fi
done

# Job steps on this node: slurmd spawns one slurmstepd per job step and it exits when the step does
# (https://slurm.schedmd.com/slurmstepd.html). The EFA throughput alerts judge only nodes that run a job,
# so a normal job end and an idle node stay quiet. etimes = seconds since the process started (procps ps).
n_steps=0
oldest_step_s=0
while read -r age; do
  [[ "${age}" =~ ^[0-9]+$ ]] || continue
  n_steps=$((n_steps + 1))
  if (( age > oldest_step_s )); then oldest_step_s="${age}"; fi
done < <(ps -C slurmstepd -o etimes= 2>/dev/null || true)

{
  echo "# HELP fmcluster_node_info Node facts from the fmcluster blueprint (value is always 1)."
  echo "# TYPE fmcluster_node_info gauge"
  echo 'fmcluster_node_info{blueprint="hp-train",group="gpu",role="compute",instance_type="p5.48xlarge"} 1'
  echo "# HELP fmcluster_gpus_expected GPUs of this node's instance type (instance catalog)."
  echo "# TYPE fmcluster_gpus_expected gauge"
  echo "fmcluster_gpus_expected 8"
  echo "# HELP fmcluster_efa_devices_expected EFA devices this node should have (instance catalog; 0 when EFA is off)."
  echo "# TYPE fmcluster_efa_devices_expected gauge"
  echo "fmcluster_efa_devices_expected 32"
  echo "# HELP fmcluster_efa_devices EFA devices found under /sys/class/infiniband."
  echo "# TYPE fmcluster_efa_devices gauge"
  echo "fmcluster_efa_devices ${n_efa}"
  for counter in tx_bytes tx_pkts rx_bytes rx_pkts rx_drops send_bytes send_wrs recv_bytes recv_wrs rdma_read_bytes rdma_read_wrs rdma_read_wr_err rdma_read_resp_bytes rdma_write_bytes rdma_write_wrs rdma_write_wr_err rdma_write_recv_bytes retrans_bytes retrans_pkts retrans_timeout_events unresponsive_remote_events impaired_remote_conn_events; do
    typed=0
    for dev in ${efa_devices[@]+"${efa_devices[@]}"}; do
      for port_path in "${sysfs}/class/infiniband/${dev}/ports/"*; do
        file="${port_path}/hw_counters/${counter}"
        [[ -r "${file}" ]] || continue
        read -r value < "${file}" || continue
        [[ "${value}" =~ ^[0-9]+$ ]] || continue
        if [[ "${typed}" -eq 0 ]]; then
          echo "# HELP fmcluster_efa_${counter}_total EFA hardware counter ${counter}."
          echo "# TYPE fmcluster_efa_${counter}_total counter"
          typed=1
        fi
        echo "fmcluster_efa_${counter}_total{device=\"${dev}\",port=\"${port_path##*/}\"} ${value}"
      done
    done
  done
  echo "# HELP fmcluster_slurm_job_steps Slurm job steps running on this node (slurmstepd processes)."
  echo "# TYPE fmcluster_slurm_job_steps gauge"
  echo "fmcluster_slurm_job_steps ${n_steps}"
  echo "# HELP fmcluster_slurm_job_step_oldest_age_seconds Age of the oldest job step on this node (0 without one)."
  echo "# TYPE fmcluster_slurm_job_step_oldest_age_seconds gauge"
  echo "fmcluster_slurm_job_step_oldest_age_seconds ${oldest_step_s}"
  echo "# HELP fmcluster_textfile_last_run_timestamp_seconds When this collector last wrote its file."
  echo "# TYPE fmcluster_textfile_last_run_timestamp_seconds gauge"
  echo "fmcluster_textfile_last_run_timestamp_seconds $(date +%s)"
} > "${tmp}"
chmod 0644 "${tmp}"
mv -f "${tmp}" "${out}"
trap - EXIT
FMCLUSTER_NODE_FACTS_SCRIPT
  chmod 0755 /usr/local/sbin/fmcluster-node-facts
  cat > /usr/local/bin/fmcluster-publish-throughput <<'FMCLUSTER_PUBLISH_THROUGHPUT'
#!/usr/bin/env bash
# fmcluster-publish-throughput: a training job publishes its throughput through node_exporter's textfile
# collector (/var/lib/node_exporter/textfile); the overview dashboard shows it. Rendered by fmcluster; do not edit.
#
#   fmcluster-publish-throughput TOKENS_PER_SECOND [JOB_ID]   # JOB_ID defaults to $SLURM_JOB_ID
#   fmcluster-publish-throughput --clear [JOB_ID]             # remove the job's file (e.g. at job end)
#
# Call it from one rank per node every few seconds to minutes; values older than 300 s are ignored.
set -euo pipefail

dir="${FMC_TEXTFILE_DIR:-/var/lib/node_exporter/textfile}"
usage() { echo "usage: fmcluster-publish-throughput TOKENS_PER_SECOND|--clear [JOB_ID]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
value="$1"
job="${2:-${SLURM_JOB_ID:-}}"
[[ "${job}" =~ ^[A-Za-z0-9_.-]{1,64}$ ]] || { echo "fmcluster-publish-throughput: JOB_ID must match [A-Za-z0-9_.-]{1,64}, got '${job}'" >&2; exit 2; }
file="${dir}/training-${job}.prom"
if [[ "${value}" == "--clear" ]]; then
  rm -f "${file}"
  exit 0
fi
[[ "${value}" =~ ^[0-9]+([.][0-9]+)?([eE][+-]?[0-9]+)?$ ]] || { echo "fmcluster-publish-throughput: TOKENS_PER_SECOND must be a non-negative number, got '${value}'" >&2; exit 2; }
tmp="$(mktemp "${dir}/.training-${job}.XXXXXX")"
trap 'rm -f "${tmp}"' EXIT
{
  echo "# HELP fmcluster_training_tokens_per_second Tokens per second a training job reports for this node."
  echo "# TYPE fmcluster_training_tokens_per_second gauge"
  echo "fmcluster_training_tokens_per_second{job_id=\"${job}\"} ${value}"
  echo "# HELP fmcluster_training_last_update_timestamp_seconds When the job last published its throughput."
  echo "# TYPE fmcluster_training_last_update_timestamp_seconds gauge"
  echo "fmcluster_training_last_update_timestamp_seconds{job_id=\"${job}\"} $(date +%s)"
} > "${tmp}"
chmod 0644 "${tmp}"
mv -f "${tmp}" "${file}"
trap - EXIT
FMCLUSTER_PUBLISH_THROUGHPUT
  chmod 0755 /usr/local/bin/fmcluster-publish-throughput
  write_unit fmcluster-node-facts.service <<'UNIT'
[Unit]
Description=fmcluster textfile collector (node facts, EFA hardware counters)

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/fmcluster-node-facts
UNIT
  write_unit fmcluster-node-facts.timer <<'UNIT'
[Unit]
Description=Run the fmcluster textfile collector every 15 s

[Timer]
OnBootSec=10s
OnUnitActiveSec=15s
AccuracySec=1s

[Install]
WantedBy=timers.target
UNIT
  /usr/local/sbin/fmcluster-node-facts
  systemctl daemon-reload
  systemctl enable --now fmcluster-node-exporter.service fmcluster-node-facts.timer
  log "node_exporter 1.7.0 on :9100, textfile collector every 15 s"
}

# ---- DCGM exporter (host package, runs as root so the profiling fields work) --------------------
# The image's DCGM is used when it has the pinned major version and is never replaced or downgraded
# (ParallelCluster 3.16 images ship DCGM 4.6.0 and run their own DCGM health check; DLAMIs ship 4.7.0);
# another major version skips the exporter with a warning, and so does an image without DCGM (fmcluster does not
# install DCGM: fmcluster/features/observability/plan_mirror.py). The exporter's package file is read from the
# cluster's mirror bucket (the deploy copied it from NVIDIA's CUDA repository and checked it against the sha256 the
# repository index lists, Custom::FmclusterMirror) and installed from that file: the node reaches no repository.
dcgm_version_on_node() {
  local pkg v
  for pkg in datacenter-gpu-manager-4-core datacenter-gpu-manager; do
    v="$(installed_version "${pkg}")"
    if [[ -n "${v}" ]]; then echo "${v}"; return 0; fi
  done
  if command -v nv-hostengine >/dev/null 2>&1; then echo "unknown"; fi
}

# Install package files already on the node (read from the cluster's mirror) with no repository and no network, as the
# boot installs NCCL (features/node/templates/pkg/*.sh.j2): dpkg(1) "-i, --install package-file..."
# (https://manpages.debian.org/dpkg.1) or "dnf install <file-spec>" of local RPMs with every repository disabled
# (--disablerepo=<repoid>, globs allowed: https://dnf.readthedocs.io/en/latest/command_ref.html). Their dependencies
# must be on the image.
install_local_packages() {  # package-file...
  if [[ "${FMC_PKG}" == "apt" ]]; then
    dpkg --install "$@"
  else
    dnf install -y --disablerepo='*' "$@"
  fi
}

# dcgm-exporter 4.7.1 from its package file(s) in the cluster's mirror; a copy the deploy
# skipped, one that differs from the recorded sha256, or one whose dependencies the image lacks fails this step only.
install_dcgm_exporter_package() {
  local key file files=() keys=("mirror/dcgm-exporter/ubuntu-22.04/x86_64/datacenter-gpu-manager-exporter-4.7.1.deb")
  for key in "${keys[@]}"; do
    file="${FMC_WORK}/${key##*/}"
    FMC_MIRROR_REGION="us-east-1" FMC_MIRROR_BUCKET_SUFFIX="-0508cb566a" \
      fetch_mirror_recorded "${key}" "${file}" \
      || die "dcgm-exporter: ${key} not available from the cluster's mirror bucket with the sha256 the deploy recorded (see the deploy's mirror/manifest.json); GPU metrics off"
    files+=("${file}")
  done
  [[ -n "${files[*]:-}" ]] || die "dcgm-exporter: no package file in the cluster's mirror plan for this group"
  if ! install_local_packages "${files[@]}"; then
    # dpkg leaves a package whose dependencies are missing unpacked but not configured, which would stop every later
    # apt-get run: remove it again (dpkg(1) "-r, --remove"; a package that is not installed is only a warning).
    if [[ "${FMC_PKG}" == "apt" ]]; then dpkg --remove datacenter-gpu-manager-exporter || true; fi
    die "dcgm-exporter: ${files[*]##*/} could not be installed from the mirror's file (its dependencies must be on the image); GPU metrics off"
  fi
  rm -f "${files[@]}"
}

install_dcgm_exporter() {
  local dcgm exporter
  dcgm="$(dcgm_version_on_node)"
  if [[ -z "${dcgm}" ]]; then
    warn "DCGM missing on the image; GPU metrics off (dcgm-exporter 4.7.1 runs against the image's DCGM 4.x; fmcluster does not install DCGM)"
    return "${FMC_SKIPPED}"
  elif [[ "${dcgm}" == "unknown" ]]; then
    warn "DCGM on the image has no package version; using it as is (exporter 4.7.1 is paired with DCGM 4.4.2)"
  elif [[ "${dcgm%%.*}" != "4" ]]; then
    warn "DCGM ${dcgm} on the image is not DCGM 4.x: dcgm-exporter 4.7.1 is not installed and DCGM is left as it is"
    return "${FMC_SKIPPED}"
  elif [[ "${dcgm}" != "4.4.2" ]]; then
    warn "using the image's DCGM ${dcgm} (dcgm-exporter 4.7.1 is paired with DCGM 4.4.2; NVIDIA tests only the pair)"
  fi
  exporter="$(installed_version datacenter-gpu-manager-exporter)"
  if [[ -z "${exporter}" ]]; then
    install_dcgm_exporter_package
    exporter="$(installed_version datacenter-gpu-manager-exporter)"
    [[ "${exporter}" == "4.7.1" ]] \
      || die "after install dcgm-exporter is '${exporter}', expected 4.7.1"
    log "dcgm-exporter ${exporter} installed from the cluster's mirror"
  elif [[ "${exporter}" != "4.7.1" ]]; then
    warn "using the image's dcgm-exporter ${exporter} (pinned 4.7.1; 4.5.3-4.8.2 lacks the XID metrics, NVIDIA/dcgm-exporter #700)"
  fi
  mkdir -p "$(dirname "/etc/dcgm-exporter/fmcluster-counters.csv")"
  cat > "/etc/dcgm-exporter/fmcluster-counters.csv" <<'FMCLUSTER_DCGM_COUNTERS'
# fmcluster DCGM exporter counters (rendered; do not edit).
# Format: DCGM FIELD, Prometheus metric type, help message
DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).
DCGM_FI_DEV_MEM_CLOCK, gauge, Memory clock frequency (in MHz).
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_MEMORY_TEMP, gauge, Memory temperature (in C).
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Total energy consumption since boot (in mJ).
DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).
DCGM_FI_DEV_MEM_COPY_UTIL, gauge, Memory utilization (in %).
DCGM_FI_DEV_FB_FREE, gauge, Framebuffer memory free (in MiB).
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).
DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.
DCGM_EXP_XID_ERRORS_COUNT, counter, reported XIDs during last window
DCGM_FI_DEV_PCIE_REPLAY_COUNTER, counter, Total number of PCIe retries.
DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, counter, Total number of single-bit volatile ECC errors.
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS, counter, Number of remapped rows for uncorrectable errors
DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS, counter, Number of remapped rows for correctable errors
DCGM_FI_DEV_ROW_REMAP_FAILURE, gauge, Whether remapping of rows has failed
DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, counter, Total number of NVLink bandwidth counters for all lanes.
DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Ratio of time the graphics engine is active.
DCGM_FI_PROF_SM_ACTIVE, gauge, The ratio of cycles an SM has at least 1 warp assigned.
DCGM_FI_PROF_SM_OCCUPANCY, gauge, The ratio of number of warps resident on an SM.
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, gauge, Ratio of cycles the tensor (HMMA) pipe is active.
DCGM_FI_PROF_DRAM_ACTIVE, gauge, Ratio of cycles the device memory interface is active sending or receiving data.
DCGM_FI_DRIVER_VERSION, label, Driver Version
FMCLUSTER_DCGM_COUNTERS
  # Connect to the node's nv-hostengine instead of embedding a second one; start NVIDIA's service only when
  # no host engine runs (an image's own DCGM health check may run one already).
  if ! pgrep -x nv-hostengine >/dev/null 2>&1; then
    systemctl enable --now nvidia-dcgm.service
  fi
  mkdir -p /etc/systemd/system/nvidia-dcgm-exporter.service.d
  cat > /etc/systemd/system/nvidia-dcgm-exporter.service.d/fmcluster.conf <<'UNIT'
[Service]
ExecStart=
ExecStart=/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/fmcluster-counters.csv -a :9400 -r localhost:5555
Restart=always
RestartSec=10
UNIT
  systemctl daemon-reload
  systemctl enable nvidia-dcgm-exporter.service
  systemctl restart nvidia-dcgm-exporter.service
  log "dcgm-exporter ${exporter} (DCGM ${dcgm}) on :9400, expecting 8 GPUs"
}

# ---- main: Prometheus first and on its own; every exporter optional ----------------------------
run_step node_exporter install_node_exporter
run_step dcgm_exporter install_dcgm_exporter
report_state
exit 0
