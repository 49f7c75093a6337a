#!/usr/bin/env bash
# Merge fmcluster's Kueue settings (kueue-config-fmcluster.yaml, next to this script) into the live Kueue configuration: the
# ConfigMap kueue-system/kueue-manager-config, key controller_manager_config.yaml, that Kueue reads at start (kubernetes-sigs/kueue
# config/components/manager/kustomization.yaml). With task governance on, the add-on installed that ConfigMap with its
# own integrations and settings: they are kept. Mappings merge key by key (fmcluster's value wins on a conflicting
# scalar), lists are unioned in order (the existing frameworks first). A live configuration of another API version
# than config.kueue.x-k8s.io/v1beta2 is refused (migrate it first: docs/kubernetes.md "Kueue versions"). Unchanged: nothing applied.
# Changed: the ConfigMap is applied and the controller (kueue-system/kueue-controller-manager) restarted to read it.
# Exit 0 done (or unchanged), 1 refused, 2 could not run. Rendered by fmcluster; do not edit by hand.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${FMC_PYTHON:-python3}"
if ! "$py" -c 'import yaml' 2>/dev/null; then
  echo "fmcluster: $py cannot import yaml; run with FMC_PYTHON=<fmcluster checkout>/.venv/bin/python" >&2
  exit 2
fi
live="$(mktemp)"
trap 'rm -f "$live"' EXIT
if ! kubectl -n kueue-system get configmap kueue-manager-config -o 'jsonpath={.data.controller_manager_config\.yaml}' > "$live"; then
  echo "fmcluster: no ConfigMap kueue-system/kueue-manager-config: install Kueue first (task governance add-on, or Kueue v0.19.2)" >&2
  exit 2
fi
rc=0
merged="$("$py" - "$live" "$here/kueue-config-fmcluster.yaml" <<'PY'
import json
import sys

import yaml


def merge(live, ours):
    if isinstance(live, dict) and isinstance(ours, dict):
        out = dict(live)
        for key, value in ours.items():
            out[key] = merge(live[key], value) if key in live else value
        return out
    if isinstance(live, list) and isinstance(ours, list):
        return live + [x for x in ours if x not in live]
    return ours


live = yaml.safe_load(open(sys.argv[1]).read()) or {}
ours = yaml.safe_load(open(sys.argv[2]).read())
if not isinstance(live, dict):
    print("the live configuration is not a mapping", file=sys.stderr)
    sys.exit(1)
if live.get("apiVersion", ours["apiVersion"]) != ours["apiVersion"]:
    print(f"the live configuration is {live['apiVersion']}, fmcluster's {ours['apiVersion']}", file=sys.stderr)
    sys.exit(1)
merged = merge(live, ours)
if merged == live:
    sys.exit(3)
print(json.dumps({
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
    "data": {"controller_manager_config.yaml": yaml.safe_dump(merged, sort_keys=False)},
}))
PY
)" || rc=$?
case "$rc" in
  0) ;;
  3) echo "fmcluster: kueue-system/kueue-manager-config already has fmcluster's Kueue settings; nothing applied"; exit 0 ;;
  1) echo "fmcluster: refused to merge into kueue-system/kueue-manager-config (see above)" >&2; exit 1 ;;
  *) echo "fmcluster: could not merge (python exit $rc)" >&2; exit 2 ;;
esac
printf '%s\n' "$merged" | kubectl apply -f -
kubectl -n kueue-system rollout restart deployment/kueue-controller-manager
echo "fmcluster: merged fmcluster's Kueue settings into kueue-system/kueue-manager-config; kueue-controller-manager restarted"
