#!/bin/bash
# fmcluster topology refresh: Slurm topology from EC2 DescribeInstanceTopology, on the Slurm controller node.
#
# Run by fmcluster-topology.timer (every FMC_INTERVAL) and once at install. Settings come from the
# environment (the systemd unit reads /etc/fmcluster/topology.env):
#   FMC_MODE           write: install a changed topology file and run `scontrol reconfigure`;
#                      check: only log how the generated topology differs from FMC_TOPOLOGY_FILE
#                      (HyperPod writes its own topology and stays its owner).
#   FMC_REGION         AWS Region of the cluster's instances.
#   FMC_TAG_KEY/VALUE  tag that selects the cluster's instances (ParallelCluster: parallelcluster:cluster-name).
#   FMC_SLURM_BIN      directory of scontrol.
#   FMC_TOPOLOGY_FILE  the topology file slurmctld reads (same directory as slurm.conf).
#   FMC_FORMAT         conf | yaml;  FMC_PLUGIN  auto | tree | block;  FMC_NVLINK_TYPES  comma-separated types.
#   FMC_GENERATOR      the standard-library generator (ec2_slurm.py); FMC_STATE_DIR  scratch and last inputs.
#
# Slurm nodes are matched to instances by address: `scontrol show nodes --oneliner` gives NodeName and
# NodeAddr (powered-down cloud nodes have NodeAddr = NodeName and are skipped), `aws ec2
# describe-instances` gives InstanceId and PrivateIpAddress of the running instances with the tag.
# DescribeInstanceTopology takes at most 100 instance ids per request (botocore ec2 service-2.json,
# DescribeInstanceTopologyRequest.InstanceIds), so ids go in chunks of 100; the pages become one JSON list.
# Exit: 0 done (also: nothing to map yet, or unchanged), 1 a command failed (the previous file is kept).
set -euo pipefail
export LC_ALL=C  # join(1) needs both inputs sorted in one collation

: "${FMC_MODE:=write}" "${FMC_FORMAT:=conf}" "${FMC_PLUGIN:=auto}" "${FMC_NVLINK_TYPES:=}"
: "${FMC_REGION:?FMC_REGION is not set}" "${FMC_TAG_KEY:?FMC_TAG_KEY is not set}" "${FMC_TAG_VALUE:?FMC_TAG_VALUE is not set}"
: "${FMC_SLURM_BIN:?FMC_SLURM_BIN is not set}" "${FMC_TOPOLOGY_FILE:?FMC_TOPOLOGY_FILE is not set}"
: "${FMC_GENERATOR:?FMC_GENERATOR is not set}" "${FMC_STATE_DIR:?FMC_STATE_DIR is not set}"
: "${FMC_PYTHON:=python3}" "${FMC_AWS:=aws}"

log() { echo "fmcluster-topology: $*" >&2; }

case "$FMC_MODE" in write|check) ;; *) log "FMC_MODE must be write or check, got '$FMC_MODE'"; exit 1 ;; esac

mkdir -p "$FMC_STATE_DIR"
work=$(mktemp -d "$FMC_STATE_DIR/run.XXXXXX")
trap 'rm -rf "$work"' EXIT

# 1. Slurm nodes with an address: "<address> <node name>".
if ! "$FMC_SLURM_BIN/scontrol" show nodes --oneliner > "$work/scontrol.txt"; then
  log "scontrol show nodes failed; topology left as it is"
  exit 1
fi
awk '{
  name = ""; addr = ""
  for (i = 1; i <= NF; i++) {
    if ($i ~ /^NodeName=/) name = substr($i, 10)
    else if ($i ~ /^NodeAddr=/) addr = substr($i, 10)
  }
  if (name != "" && addr != "" && addr != name) print addr, name
}' "$work/scontrol.txt" | sort > "$work/slurm-nodes.txt"
awk '{for (i = 1; i <= NF; i++) if ($i ~ /^NodeName=/) print substr($i, 10)}' "$work/scontrol.txt" | sort -u \
  > "$work/slurm-names.txt"

# 2. The cluster's running instances: "<address> <instance id>".
if ! "$FMC_AWS" ec2 describe-instances --region "$FMC_REGION" \
    --filters "Name=tag:$FMC_TAG_KEY,Values=$FMC_TAG_VALUE" "Name=instance-state-name,Values=running" \
    --query 'Reservations[].Instances[].[PrivateIpAddress,InstanceId]' --output text > "$work/instances.txt"; then
  log "aws ec2 describe-instances failed; topology left as it is"
  exit 1
fi
sort "$work/instances.txt" > "$work/instances.sorted"

# 3. The node map "<instance id> <node name>", joined on the address.
#    Nodes without a running instance (powered-down cloud nodes) are listed alone: the generator puts
#    them on its fallback switch, so topology/tree can still choose them.
join "$work/instances.sorted" "$work/slurm-nodes.txt" | awk 'NF == 3 {print $2, $3}' > "$work/mapped.txt"
if [ ! -s "$work/mapped.txt" ]; then
  log "no Slurm node has a running instance yet; topology left as it is"
  exit 0
fi
awk '{print $2}' "$work/mapped.txt" | sort -u > "$work/mapped-names.txt"
comm -23 "$work/slurm-names.txt" "$work/mapped-names.txt" > "$work/idle.txt"
cat "$work/mapped.txt" "$work/idle.txt" > "$work/nodes.txt"

# 4. DescribeInstanceTopology for those instances, 100 ids a request, as one JSON list of pages.
cut -d' ' -f1 "$work/mapped.txt" | split -l 100 - "$work/ids."
printf '[' > "$work/topology.json"
sep=''
for chunk in "$work"/ids.*; do
  mapfile -t ids < "$chunk"
  if ! "$FMC_AWS" ec2 describe-instance-topology --region "$FMC_REGION" --instance-ids "${ids[@]}" \
      --output json > "$work/page.json"; then
    log "aws ec2 describe-instance-topology failed; topology left as it is"
    exit 1
  fi
  printf '%s' "$sep" >> "$work/topology.json"
  cat "$work/page.json" >> "$work/topology.json"
  sep=','
done
printf ']' >> "$work/topology.json"

# 5. Generate (warnings go to the journal through stderr).
if ! "$FMC_PYTHON" "$FMC_GENERATOR" --instances "$work/topology.json" --nodes "$work/nodes.txt" \
    --format "$FMC_FORMAT" --plugin "$FMC_PLUGIN" --nvlink-types "$FMC_NVLINK_TYPES" --out "$work/new"; then
  log "the generator refused its input; topology left as it is"
  exit 1
fi
cp "$work/nodes.txt" "$FMC_STATE_DIR/last-nodes.txt"

if [ "$FMC_MODE" = check ]; then
  if [ ! -f "$FMC_TOPOLOGY_FILE" ]; then
    log "check: $FMC_TOPOLOGY_FILE does not exist; generated:"
    cat "$work/new" >&2
  elif diff -u "$FMC_TOPOLOGY_FILE" "$work/new" > "$work/diff.txt"; then
    log "check: $FMC_TOPOLOGY_FILE agrees with EC2 topology"
  else
    log "check: $FMC_TOPOLOGY_FILE differs from EC2 topology:"
    cat "$work/diff.txt" >&2
  fi
  cp "$work/new" "$FMC_STATE_DIR/expected-topology"
  exit 0
fi

# 6. Install when changed; reconfigure; put the previous file back if slurmctld refuses the new one.
if [ -f "$FMC_TOPOLOGY_FILE" ] && cmp -s "$work/new" "$FMC_TOPOLOGY_FILE"; then
  exit 0
fi
if [ -f "$FMC_TOPOLOGY_FILE" ]; then
  cp -p "$FMC_TOPOLOGY_FILE" "$FMC_STATE_DIR/previous-topology"
fi
install -m 0644 "$work/new" "$FMC_TOPOLOGY_FILE.fmcluster-new"
mv -f "$FMC_TOPOLOGY_FILE.fmcluster-new" "$FMC_TOPOLOGY_FILE"
if "$FMC_SLURM_BIN/scontrol" reconfigure; then
  log "topology updated ($(grep -c -v '^#' "$FMC_TOPOLOGY_FILE") entries); slurmctld reconfigured"
  exit 0
fi
log "scontrol reconfigure failed with the new topology; restoring the previous one"
if [ -f "$FMC_STATE_DIR/previous-topology" ]; then
  cp -p "$FMC_STATE_DIR/previous-topology" "$FMC_TOPOLOGY_FILE"
  "$FMC_SLURM_BIN/scontrol" reconfigure || log "scontrol reconfigure failed with the previous topology too"
fi
exit 1
