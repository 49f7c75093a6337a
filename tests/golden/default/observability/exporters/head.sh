#!/usr/bin/env bash
# fmcluster metrics exporters for llm-train: head node.
# Metrics mode managed, node discovery ec2, orchestrator parallelcluster.
# Rendered by fmcluster (fmcluster/templates/observability); do not edit by hand. Pinned versions and their
# sources: fmcluster/templates/observability/pins.py. Safe to run again (idempotent).
set -euo pipefail
umask 022

readonly FMC_BLUEPRINT="llm-train"
readonly FMC_ROLE="head"
readonly FMC_METRICS="managed"
readonly FMC_REGION="us-east-1"
readonly FMC_SSM_PARAMETER="/fmcluster/llm-train/observability"
readonly FMC_TEXTFILE_DIR="/var/lib/node_exporter/textfile"
readonly FMC_WORK="/opt/fmcluster/observability"

log() { printf '%s fmcluster-exporters: %s\n' "$(date -u +%FT%TZ)" "$*"; }
die() { log "ERROR: $*"; exit 1; }

[[ "$(id -u)" -eq 0 ]] || die "run as root"
case "$(uname -m)" in
  x86_64) FMC_ARCH=amd64 ;;
  aarch64 | arm64) FMC_ARCH=arm64 ;;
  *) die "unsupported CPU architecture $(uname -m)" ;;
esac
readonly FMC_ARCH
if command -v apt-get >/dev/null 2>&1; then
  FMC_PKG=apt
elif command -v dnf >/dev/null 2>&1; then
  FMC_PKG=dnf
else
  die "neither apt-get nor dnf found"
fi
readonly FMC_PKG
mkdir -p "${FMC_WORK}"
log "${FMC_BLUEPRINT}: installing ${FMC_ROLE}-node exporters (${FMC_METRICS}, ${FMC_ARCH}, ${FMC_PKG})"

# ---- helpers ---------------------------------------------------------------------------------
sha_for_arch() {  # amd64-sha arm64-sha
  if [[ "${FMC_ARCH}" == "amd64" ]]; then echo "$1"; else echo "$2"; fi
}

# Download a release archive, check its pinned sha256 and unpack it into a versioned folder.
install_archive() {  # name url sha256 dest-dir
  local name="$1" url="$2" want="$3" dest="$4" tgz
  if [[ -f "${dest}/.fmcluster-verified" ]]; then
    return 0
  fi
  tgz="$(mktemp "${FMC_WORK}/${name}.XXXXXX.tar.gz")"
  curl -fsSL --retry 5 --retry-delay 3 -o "${tgz}" "${url}" || die "download of ${name} failed: ${url}"
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

# The repository version of a package whose upstream version is exactly the one wanted (any epoch and
# packaging revision), or nothing.
repo_version() {  # package upstream-version
  if [[ "${FMC_PKG}" == "apt" ]]; then
    apt-cache madison "$1" | awk -v want="$2" '{v=$3; u=v; sub(/^[0-9]+:/, "", u); sub(/-[^-]*$/, "", u); if (u == want) {print v; exit}}'
  elif dnf -q list --showduplicates "$1" 2>/dev/null | awk -v want="$2" '{u=$2; sub(/^[0-9]+:/, "", u); sub(/-[^-]*$/, "", u); if (u == want) found=1} END {exit !found}'; then
    echo "$2"
  fi
}

# Install packages from the configured (signed) repositories at one exact upstream version.
install_pinned_packages() {  # upstream-version package...
  local want="$1" pkg full specs=()
  shift
  for pkg in "$@"; do
    full="$(repo_version "${pkg}" "${want}")"
    [[ -n "${full}" ]] || die "${pkg} ${want} is not in the configured repositories (the NVIDIA CUDA repository must be set up first)"
    if [[ "${FMC_PKG}" == "apt" ]]; then
      specs+=("${pkg}=${full}")
    else
      specs+=("${pkg}-${want}")
    fi
  done
  if [[ "${FMC_PKG}" == "apt" ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends --allow-downgrades "${specs[@]}"
    apt-mark hold "$@" >/dev/null
  else
    dnf install -y "${specs[@]}"
  fi
}

write_unit() {  # unit-name (content on stdin)
  cat > "/etc/systemd/system/$1"
  chmod 0644 "/etc/systemd/system/$1"
}

# ---- node_exporter with the fmcluster textfile collector ---------------------------------------
install_node_exporter() {
  local dir="/opt/node_exporter-1.7.0"
  install_archive node_exporter \
    "https://github.com/prometheus/node_exporter/releases/download/v1.7.0/node_exporter-1.7.0.linux-${FMC_ARCH}.tar.gz" \
    "$(sha_for_arch a550cd5c05f760b7934a2d0afad66d2e92e681482f5f57a917465b1fba3b02a6 e386c7b53bc130eaf5e74da28efc6b444857b77df8070537be52678aefd34d96)" "${dir}"
  ensure_user node_exporter
  mkdir -p "${FMC_TEXTFILE_DIR}"
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
  echo "# HELP fmcluster_textfile_last_run_timestamp_seconds When this collector last wrote its file."
  echo "# TYPE fmcluster_textfile_last_run_timestamp_seconds gauge"
  echo "fmcluster_textfile_last_run_timestamp_seconds $(date +%s)"
} > "${tmp}"
chmod 0644 "${tmp}"
mv -f "${tmp}" "${out}"
trap - EXIT
FMCLUSTER_NODE_FACTS_SCRIPT
  chmod 0755 /usr/local/sbin/fmcluster-node-facts
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
    - 127.0.0.1:8080
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

# ---- Slurm exporter (built from a pinned tag; Go modules checked against go.sum) ---------------
slurm_bin_dir() {
  local sinfo
  sinfo="$(command -v sinfo 2>/dev/null || true)"
  if [[ -z "${sinfo}" ]]; then
    for candidate in /opt/slurm/bin/sinfo /opt/aws/pcs/scheduler/slurm-*/bin/sinfo; do
      if [[ -x "${candidate}" ]]; then sinfo="${candidate}"; break; fi
    done
  fi
  [[ -n "${sinfo}" ]] || die "sinfo not found: this node must be a Slurm controller or login node"
  dirname "${sinfo}"
}

install_slurm_exporter() {
  local go_dir="/opt/go-1.22.2" src="${FMC_WORK}/src/prometheus-slurm-exporter-0.22"
  local bin="/usr/local/bin/prometheus-slurm-exporter" slurm_bin
  slurm_bin="$(slurm_bin_dir)"
  install_archive go "https://go.dev/dl/go1.22.2.linux-${FMC_ARCH}.tar.gz" \
    "$(sha_for_arch 5901c52b7a78002aeff14a21f93e0f064f74ce1360fce51c6ee68cd471216a17 36e720b2d564980c162a48c7e97da2e407dfcc4239e1e58d98082dfa2486a0c1)" "${go_dir}"
  if [[ ! -x "${bin}" ]]; then
    command -v git >/dev/null 2>&1 || { if [[ "${FMC_PKG}" == "apt" ]]; then apt-get install -y git; else dnf install -y git; fi; }
    rm -rf "${src}"
    git clone --quiet --depth 1 --branch "0.22" "https://github.com/vpenso/prometheus-slurm-exporter.git" "${src}"
    (cd "${src}" && GOFLAGS=-mod=readonly GOPATH="${FMC_WORK}/go" GOCACHE="${FMC_WORK}/go-cache" \
      "${go_dir}/bin/go" build -o "${bin}" .)
  fi
  ensure_user slurm_exporter
  write_unit fmcluster-slurm-exporter.service <<UNIT
[Unit]
Description=fmcluster prometheus-slurm-exporter 0.22
After=network-online.target

[Service]
User=slurm_exporter
Environment=PATH=${slurm_bin}:/usr/local/bin:/usr/bin:/bin
ExecStart=${bin} -listen-address 127.0.0.1:8080
Restart=always
RestartSec=15

[Install]
WantedBy=multi-user.target
UNIT
  systemctl daemon-reload
  systemctl enable --now fmcluster-slurm-exporter.service
  log "prometheus-slurm-exporter 0.22 on 127.0.0.1:8080 (Slurm in ${slurm_bin})"
}

# ---- Prometheus agent (remote write to Amazon Managed Service for Prometheus) ----
install_prometheus() {
  local dir="/opt/prometheus-2.53.4" config=/etc/prometheus/prometheus.yml
  install_archive prometheus \
    "https://github.com/prometheus/prometheus/releases/download/v2.53.4/prometheus-2.53.4.linux-${FMC_ARCH}.tar.gz" \
    "$(sha_for_arch b8b497c4610d1b93208252b60c8f20f6b2e78596ae8df43397a2e805aa53d475 ec7236ecea7154d0bfe142921708b1ae7b5e921e100e0ee85ab92b7c444357e0)" "${dir}"
  ensure_user prometheus
  mkdir -p /etc/prometheus/file_sd /var/lib/prometheus
  local value url
  value="$(aws ssm get-parameter --region "${FMC_REGION}" --name "${FMC_SSM_PARAMETER}" --query Parameter.Value --output text)" \
    || die "cannot read SSM parameter ${FMC_SSM_PARAMETER} (does the head node role have the observability policy?)"
  url="$(printf '%s' "${value}" | python3 -c 'import json, sys; print(json.load(sys.stdin)["remote_write_url"])')"
  [[ "${url}" == https://*/api/v1/remote_write ]] || die "unexpected AMP remote-write URL in ${FMC_SSM_PARAMETER}: ${url}"
  sed -i "s|https://aps-workspaces.us-east-1.amazonaws.com/workspaces/FMCLUSTER_AMP_WORKSPACE/api/v1/remote_write|${url}|" "${config}"
  grep -q "FMCLUSTER_AMP_WORKSPACE" "${config}" && die "remote-write URL placeholder left in ${config}"
  local flags="--enable-feature=agent --storage.agent.path=/var/lib/prometheus/agent"
  chown -R prometheus:prometheus /var/lib/prometheus /etc/prometheus/file_sd
  "${dir}/promtool" check config "${config}" >/dev/null || die "promtool rejected ${config}"
  write_unit fmcluster-prometheus.service <<UNIT
[Unit]
Description=fmcluster Prometheus 2.53.4 (managed)
After=network-online.target
Wants=network-online.target

[Service]
User=prometheus
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
  log "Prometheus 2.53.4 on 127.0.0.1:9090 (managed)"
}

# ---- main ------------------------------------------------------------------------------------
install_node_exporter
write_config_files
install_slurm_exporter
install_prometheus
log "done"
