#!/usr/bin/env bash
# fmcluster metrics exporters for llm-train: compute node of group gpu (p5.48xlarge).
# Metrics mode managed, node discovery ec2, orchestrator parallelcluster.
# Rendered by fmcluster (fmcluster/templates/observability); do not edit by hand. Pinned versions and their
# sources: fmcluster/templates/observability/pins.py. Safe to run again (idempotent).
set -euo pipefail
umask 022

readonly FMC_BLUEPRINT="llm-train"
readonly FMC_ROLE="compute"
readonly FMC_METRICS="managed"
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
# fmcluster textfile collector for llm-train (compute node, group gpu).
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
  echo 'fmcluster_node_info{blueprint="llm-train",group="gpu",role="compute",instance_type="p5.48xlarge"} 1'
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

# ---- DCGM exporter (host package, runs as root so the profiling fields work) --------------------
install_dcgm_exporter() {
  if [[ "${FMC_PKG}" == "apt" ]]; then
    apt-get update -q
  fi
  install_pinned_packages 4.4.0 datacenter-gpu-manager-4-core datacenter-gpu-manager-4-proprietary
  # DCGM 4 ships CUDA-dependent parts per CUDA major version; NVIDIA's guide installs the one matching the driver.
  local cuda_major
  cuda_major="$(nvidia-smi | sed -nE 's/.*CUDA Version: ([0-9]+)\..*/\1/p' | head -n 1)"
  if [[ -n "${cuda_major}" && -n "$(repo_version "datacenter-gpu-manager-4-cuda${cuda_major}" 4.4.0)" ]]; then
    install_pinned_packages 4.4.0 "datacenter-gpu-manager-4-cuda${cuda_major}"
  else
    log "warning: no datacenter-gpu-manager-4-cuda${cuda_major:-?} 4.4.0 in the repositories; profiling fields may be missing"
  fi
  install_pinned_packages 4.5.0 datacenter-gpu-manager-exporter
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
  mkdir -p /etc/systemd/system/nvidia-dcgm-exporter.service.d
  # Connect to the node's nv-hostengine (nvidia-dcgm.service) instead of embedding a second one.
  cat > /etc/systemd/system/nvidia-dcgm-exporter.service.d/fmcluster.conf <<'UNIT'
[Service]
ExecStart=
ExecStart=/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/fmcluster-counters.csv -a :9400 -r localhost:5555
Restart=always
RestartSec=10
UNIT
  systemctl daemon-reload
  systemctl enable --now nvidia-dcgm.service
  systemctl enable nvidia-dcgm-exporter.service
  systemctl restart nvidia-dcgm-exporter.service
  log "dcgm-exporter 4.5.0 (DCGM 4.4.0) on :9400, expecting 8 GPUs"
}

# ---- main ------------------------------------------------------------------------------------
install_node_exporter
install_dcgm_exporter
log "done"
