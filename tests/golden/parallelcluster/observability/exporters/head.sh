#!/usr/bin/env bash
# shellcheck disable=SC2329  # install steps are invoked indirectly, through run_step
# fmcluster metrics exporters for llm-train: head node.
# Metrics mode managed, node discovery ec2, orchestrator parallelcluster.
# Rendered by fmcluster (fmcluster/features/observability); do not edit by hand. Pinned versions and their
# sources: fmcluster/features/observability/pins.py. Safe to run again (idempotent).
#
# A monitoring problem never fails the node: every step runs on its own (errexit inside the step only), a
# failed or skipped step is a warning, and the script always exits 0. The state it reached is the last log
# line ("fmcluster-monitoring-state: step=ok|failed|skipped ...") and the file /var/lib/fmcluster/monitoring-state.
set -uo pipefail
umask 022

readonly FMC_BLUEPRINT="llm-train"
readonly FMC_ROLE="head"
readonly FMC_METRICS="managed"
readonly FMC_REGION="us-east-1"
readonly FMC_SSM_PARAMETER="/fmcluster/llm-train/observability"
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
  FMC_MIRROR_REGION="us-east-1" FMC_MIRROR_BUCKET_SUFFIX="-f18d2c271d" \
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
# fmcluster textfile collector for llm-train (head node, group head).
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
  echo 'fmcluster_node_info{blueprint="llm-train",group="head",role="head",instance_type=""} 1'
  echo "# HELP fmcluster_gpus_expected GPUs of this node's instance type (instance catalog)."
  echo "# TYPE fmcluster_gpus_expected gauge"
  echo "fmcluster_gpus_expected 0"
  echo "# HELP fmcluster_efa_devices_expected EFA devices this node should have (instance catalog; 0 when EFA is off)."
  echo "# TYPE fmcluster_efa_devices_expected gauge"
  echo "fmcluster_efa_devices_expected 0"
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

# ---- configuration files (written verbatim) ----------------------------------------------------
write_config_files() {
  mkdir -p "$(dirname "/etc/prometheus/prometheus.yml")"
  cat > "/etc/prometheus/prometheus.yml" <<'FMCLUSTER_ETC_PROMETHEUS_PROMETHEUS_YML'
# fmcluster Prometheus for llm-train (agent, remote write to Amazon Managed Service for Prometheus); node discovery: ec2.
# Rendered by fmcluster; do not edit by hand.
global:
  scrape_interval: 30s
  scrape_timeout: 10s
  external_labels:
    cluster: llm-train
scrape_configs:
- job_name: prometheus
  static_configs:
  - targets:
    - 127.0.0.1:9090
- job_name: node
  ec2_sd_configs:
  - region: us-east-1
    port: 9100
    refresh_interval: 60s
    filters:
    - name: tag:fmcluster:blueprint
      values:
      - llm-train
    - name: instance-state-name
      values:
      - running
  relabel_configs:
  - source_labels:
    - __meta_ec2_private_ip
    target_label: instance
  - source_labels:
    - __meta_ec2_instance_id
    target_label: instance_id
- job_name: dcgm
  ec2_sd_configs:
  - region: us-east-1
    port: 9400
    refresh_interval: 60s
    filters:
    - name: tag:fmcluster:blueprint
      values:
      - llm-train
    - name: instance-state-name
      values:
      - running
  relabel_configs:
  - source_labels:
    - __meta_ec2_instance_type
    action: keep
    regex: p5\.48xlarge
  - source_labels:
    - __meta_ec2_private_ip
    target_label: instance
  - source_labels:
    - __meta_ec2_instance_id
    target_label: instance_id
- job_name: slurm
  scrape_interval: 30s
  scrape_timeout: 10s
  static_configs:
  - targets:
    - 127.0.0.1:9092
remote_write:
- url: https://aps-workspaces.us-east-1.amazonaws.com/workspaces/FMCLUSTER_AMP_WORKSPACE/api/v1/remote_write
  sigv4:
    region: us-east-1
  queue_config:
    max_samples_per_send: 1000
    max_shards: 200
    capacity: 2500
FMCLUSTER_ETC_PROMETHEUS_PROMETHEUS_YML
  chmod 0644 "/etc/prometheus/prometheus.yml"
}

# One value of the JSON settings in the SSM parameter the observability stack writes (read as root).
setting() {  # key
  local value
  value="$(aws ssm get-parameter --region "${FMC_REGION}" --name "${FMC_SSM_PARAMETER}" --query Parameter.Value --output text)" \
    || die "cannot read SSM parameter ${FMC_SSM_PARAMETER} (does the node role have the observability policy?)"
  printf '%s' "${value}" | python3 -c 'import json, sys; print(json.load(sys.stdin).get(sys.argv[1], ""))' "$1"
}

# ---- ParallelCluster IMDS lockdown ---------------------------------------------------------------
# With HeadNode Imds.Secured (default true) only root and the cluster admin users reach IMDS (iptables chain
# PARALLELCLUSTER_IMDS, aws-parallelcluster-cookbook cookbooks/aws-parallelcluster-environment/recipes/config/
# imds.rb). The monitoring users need instance credentials (EC2 discovery, SigV4 to AMP and SNS), so they are
# allowed with ParallelCluster's own script (files/imds/imds-access.sh: --allow <user1,...,userN>) before
# each service starts (ExecStartPre), and the rules are saved for parallelcluster-iptables.service, which
# restores them at boot (templates/imds/save_tables.sh.erb / restore_tables.sh.erb).
install_imds_allow() {
  cat > /usr/local/sbin/fmcluster-imds-allow <<'FMCLUSTER_IMDS_ALLOW'
#!/usr/bin/env bash
# Allow the given users through ParallelCluster's IMDS lockdown, if it is on. Rendered by fmcluster.
set -euo pipefail
script=/opt/parallelcluster/scripts/imds/imds-access.sh
if ! iptables -S PARALLELCLUSTER_IMDS 2>/dev/null | grep -q -- '-j REJECT'; then
  echo "fmcluster-imds-allow: IMDS lockdown is off; nothing to allow"
  exit 0
fi
[[ -f "${script}" ]] || { echo "fmcluster-imds-allow: ${script} not found" >&2; exit 1; }
bash "${script}" --allow "$1"
if [[ -x /usr/local/sbin/save_tables.sh ]]; then
  /usr/local/sbin/save_tables.sh >/dev/null
fi
FMCLUSTER_IMDS_ALLOW
  chmod 0755 /usr/local/sbin/fmcluster-imds-allow
  ensure_user prometheus
  /usr/local/sbin/fmcluster-imds-allow prometheus
  log "IMDS: allowed prometheus through ParallelCluster's lockdown"
}

# ---- Prometheus agent (remote write to Amazon Managed Service for Prometheus) ----
install_prometheus() {
  local dir="/opt/prometheus-3.13.2" config=/etc/prometheus/prometheus.yml
  install_archive prometheus "mirror/prometheus/prometheus-3.13.2.linux-${FMC_ARCH}.tar.gz" \
    "$(sha_for_arch 0e8c4d46101bd025ea8265e377d2caabc57f488fc1be1c367f37db69ea41be6f 7cecb17a6f41d59814e1a0581a1f81f79051ad5973d1ecf39e23a9f747d6572a)" "${dir}"
  ensure_user prometheus
  mkdir -p /etc/prometheus/file_sd /var/lib/prometheus
  local url
  url="$(setting remote_write_url)"
  [[ "${url}" == https://*/api/v1/remote_write ]] || die "unexpected AMP remote-write URL in ${FMC_SSM_PARAMETER}: ${url}"
  sed -i "s|https://aps-workspaces.us-east-1.amazonaws.com/workspaces/FMCLUSTER_AMP_WORKSPACE/api/v1/remote_write|${url}|" "${config}"
  if grep -q "FMCLUSTER_AMP_WORKSPACE" "${config}"; then die "remote-write URL placeholder left in ${config}"; fi
  local flags="--agent --storage.agent.path=/var/lib/prometheus/agent"
  chown -R prometheus:prometheus /var/lib/prometheus /etc/prometheus/file_sd
  "${dir}/promtool" check config "${config}" >/dev/null || die "promtool rejected ${config}"
  write_unit fmcluster-prometheus.service <<UNIT
[Unit]
Description=fmcluster Prometheus 3.13.2 (managed)
After=network-online.target parallelcluster-iptables.service
Wants=network-online.target

[Service]
User=prometheus
ExecStartPre=+/usr/local/sbin/fmcluster-imds-allow prometheus
ExecStart=${dir}/prometheus --config.file=${config} --web.listen-address=127.0.0.1:9090 ${flags}
ExecReload=/bin/kill -HUP \$MAINPID
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
UNIT
  systemctl daemon-reload
  systemctl enable fmcluster-prometheus.service
  systemctl restart fmcluster-prometheus.service
  log "Prometheus 3.13.2 on 127.0.0.1:9090 (managed)"
}

# ---- Slurm exporter (the project's prebuilt release archive, read from the cluster's mirror) ---------------------
slurm_bin_dir() {
  local sinfo
  # The cluster's Slurm version (fmcluster profile), not whichever version the image carries first.
  sinfo="/opt/slurm/bin/sinfo"
  [[ -x "${sinfo}" ]] || die "sinfo not found at ${sinfo}: this node must be a login node of this cluster"
  dirname "${sinfo}"
}

install_slurm_exporter() {
  local bin="/usr/local/bin/prometheus-slurm-exporter-v1.7.0" slurm_bin tgz dir
  slurm_bin="$(slurm_bin_dir)"
  if [[ ! -x "${bin}" ]]; then
    # No sha256 is pinned for this archive: the deploy checked it against the release's own checksum list and stored
    # the hash next to it (fmcluster/features/observability/pins.py SLURM_EXPORTER); the binary is at the top level.
    tgz="${FMC_WORK}/prometheus-slurm-exporter.tar.gz"
    dir="${FMC_WORK}/prometheus-slurm-exporter-v1.7.0"
    FMC_MIRROR_REGION="us-east-1" FMC_MIRROR_BUCKET_SUFFIX="-f18d2c271d" \
      fetch_mirror_recorded "mirror/prometheus-slurm-exporter/prometheus-slurm-exporter_linux_${FMC_ARCH}.tar.gz" "${tgz}" \
      || die "prometheus-slurm-exporter: mirror/prometheus-slurm-exporter/prometheus-slurm-exporter_linux_${FMC_ARCH}.tar.gz not available from the cluster's mirror bucket"
    rm -rf "${dir}"
    mkdir -p "${dir}"
    tar -xzf "${tgz}" -C "${dir}"
    [[ -f "${dir}/prometheus-slurm-exporter" ]] || die "no prometheus-slurm-exporter at the top of the release archive"
    install -m 0755 "${dir}/prometheus-slurm-exporter" "${bin}"
    rm -rf "${dir}" "${tgz}"
  fi
  ensure_user slurm_exporter
  write_unit fmcluster-slurm-exporter.service <<UNIT
[Unit]
Description=fmcluster prometheus-slurm-exporter v1.7.0
After=network-online.target

[Service]
User=slurm_exporter
Environment=PATH=${slurm_bin}:/usr/local/bin:/usr/bin:/bin
ExecStart=${bin} -web.listen-address 127.0.0.1:9092 -slurm.cli-fallback
Restart=always
RestartSec=15

[Install]
WantedBy=multi-user.target
UNIT
  systemctl daemon-reload
  systemctl enable --now fmcluster-slurm-exporter.service
  log "prometheus-slurm-exporter v1.7.0 on 127.0.0.1:9092 (Slurm in ${slurm_bin})"
}

# ---- main: Prometheus first and on its own; every exporter optional ----------------------------
run_step config write_config_files
run_step imds install_imds_allow
run_step prometheus install_prometheus
run_step node_exporter install_node_exporter
run_step slurm_exporter install_slurm_exporter
report_state
exit 0
