"""Rendered Kubernetes manifests of HyperPod EKS blueprints: every object validates offline (core kinds against the
Kubernetes OpenAPI schemas with kubernetes-validate, Kueue / MPIJob / PyTorchJob against the CRD schemas vendored in
tests/fixtures/k8s-crds at pinned versions), carries the values that matter (EFA devices from the catalog, quotas from
the group sizes, topology levels, gang admission), the admission policy's CEL refuses exactly the GPU pods without
EFA, and the node-check loop cordons and taints a failing node when run for real against stub commands."""

from __future__ import annotations

import copy
import json
import os
import stat
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import cel
import jsonschema
import kubernetes_validate
import pytest
import yaml

from fmcluster.blueprint.model import DEFAULT_EKS_KUBERNETES_VERSION
from fmcluster.catalog import eks as cat
from fmcluster.catalog import get_instance
from fmcluster.orchestrators.hyperpod_eks.render_kubernetes import node_check_loop, render_kubernetes_manifests
from fmcluster.resolved import ResolvedCluster, resolve
from fmcluster.validation import load_blueprint, load_blueprint_text
from tests.blueprints import blueprint_text, example
from tests.conftest import ROOT

CRDS = ROOT / "tests" / "fixtures" / "k8s-crds"
#: The Kubernetes schema version the manifests are checked against: the default EKS version (the example's).
K8S_SCHEMA_VERSION = f"{DEFAULT_EKS_KUBERNETES_VERSION}.0"
HP_EKS = ROOT / "blueprints" / "hyperpod-eks.yaml"

#: Three groups: p5 and p5en with EFA, p4d without (its pods may use GPUs without EFA), two queue namespaces.
MIXED = blueprint_text({
    "compute": [
        {"name": "h100", "instance_type": "p5.48xlarge", "count": 4},
        {"name": "h200", "instance_type": "p5en.48xlarge", "count": 2},
        {"name": "a100", "instance_type": "p4d.24xlarge", "count": 3, "efa": False},
    ],
    "orchestrator": {"hyperpod": {"eks": {"queue_namespaces": ["team-a", "team-b"]}}},
}, base=example("hyperpod-eks"))


@cache
def _rc(text: str | None = None) -> ResolvedCluster:
    doc = load_blueprint(HP_EKS) if text is None else load_blueprint_text(text).blueprint
    return resolve(doc)


def _docs(rc: ResolvedCluster) -> dict[str, list[dict[str, Any]]]:
    return {path: [d for d in yaml.safe_load_all(text) if d] for path, text in render_kubernetes_manifests(rc).items()
            if path.endswith(".yaml")}


@cache
def _crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    index = json.loads((CRDS / "index.json").read_text())
    return {(e["apiVersion"], e["kind"]): _strict(json.loads((CRDS / e["file"]).read_text())) for e in index}


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """The CRD schema with unknown fields refused: the API server prunes them silently, which would hide a typo
    (``nominalQuotas``) from a schema check. Objects that keep unknown fields or have free-form maps stay open."""
    s = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if ("properties" in node and "additionalProperties" not in node
                    and not node.get("x-kubernetes-preserve-unknown-fields")):
                node["additionalProperties"] = False
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(s)
    # metadata is `type: object` in CRD schemas (the API server validates it itself): check it as ObjectMeta.
    return s


def _validate(doc: dict[str, Any]) -> None:
    key = (doc["apiVersion"], doc["kind"])
    schemas = _crd_schemas()
    if key in schemas:
        jsonschema.validate(doc, schemas[key], cls=jsonschema.Draft7Validator)
    else:
        kubernetes_validate.validate(doc, K8S_SCHEMA_VERSION, strict=True)


# ---- schemas --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [None, MIXED], ids=["example", "mixed"])
def test_every_rendered_object_validates_against_its_schema(text: str | None) -> None:
    docs = _docs(_rc(text))
    # Kueue's Configuration is a file Kueue reads, not an API object: the merge script's tests cover it
    docs.pop("kueue/kueue-config-fmcluster.yaml")
    kinds = set()
    for path, objects in docs.items():
        assert objects, path
        for doc in objects:
            _validate(doc)
            kinds.add(doc["kind"])
    assert kinds == {"Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue", "ConfigMap", "MPIJob", "PyTorchJob",
                     "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "Namespace", "ServiceAccount",
                     "ClusterRole", "ClusterRoleBinding", "DaemonSet"}


def test_the_crd_check_refuses_an_unknown_field_and_a_wrong_type() -> None:
    queue = next(d for d in _docs(_rc())["kueue/gpu.yaml"] if d["kind"] == "ClusterQueue")
    typo = copy.deepcopy(queue)
    typo["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuotas"] = 1
    with pytest.raises(jsonschema.ValidationError, match="nominalQuotas"):
        _validate(typo)
    wrong = copy.deepcopy(queue)
    wrong["spec"]["queueingStrategy"] = "Random"
    with pytest.raises(jsonschema.ValidationError, match="Random"):
        _validate(wrong)
    daemonset = next(d for d in _docs(_rc())["node-check/daemonset.yaml"] if d["kind"] == "DaemonSet")
    bad = copy.deepcopy(daemonset)
    bad["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = 3
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(bad)


def test_vendored_crds_are_the_pinned_versions() -> None:
    index = json.loads((CRDS / "index.json").read_text())
    kueue = [e for e in index if e["repo"] == "kubernetes-sigs/kueue"]
    assert {e["ref"] for e in kueue} == {cat.KUEUE_VERSION}
    assert {e["kind"] for e in kueue} == {"ResourceFlavor", "ClusterQueue", "LocalQueue", "Topology",
                                          "WorkloadPriorityClass"}
    assert {(e["apiVersion"], e["kind"]) for e in index if e["repo"] == "aws/sagemaker-hyperpod-cli"} == {
        ("kubeflow.org/v1", "PyTorchJob"), ("kubeflow.org/v2beta1", "MPIJob")}
    # topology-aware scheduling is beta and on by default from Kueue v0.14
    assert cat.version_tuple(cat.KUEUE_VERSION)[:2] >= cat.KUEUE_TAS_DEFAULT_ON


# ---- values ---------------------------------------------------------------------------------------------------
def _by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


@pytest.mark.parametrize(("group", "instance_type", "count", "efa"), [
    ("h100", "p5.48xlarge", 4, 32), ("h200", "p5en.48xlarge", 2, 16), ("a100", "p4d.24xlarge", 3, 0)])
def test_jobs_request_every_efa_device_and_gpu_of_the_type(group: str, instance_type: str, count: int, efa: int) -> None:
    docs = _docs(_rc(MIXED))
    inst = get_instance(instance_type)
    assert efa == (inst.efa_interface_count if efa else 0)  # the catalog's count, not a literal of this test
    (mpi,) = docs[f"jobs/{group}-nccl-tests.yaml"]
    worker = mpi["spec"]["mpiReplicaSpecs"]["Worker"]
    assert worker["replicas"] == count and mpi["spec"]["slotsPerWorker"] == inst.gpu.count
    limits = worker["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits.get(cat.EFA_RESOURCE, 0) == efa
    assert limits[cat.GPU_RESOURCE] == inst.gpu.count and limits["hugepages-2Mi"] == "5120Mi"
    assert worker["template"]["spec"]["nodeSelector"] == {cat.INSTANCE_TYPE_LABEL: f"ml.{instance_type}"}
    launcher = mpi["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert launcher[launcher.index("-np") + 1] == str(count * inst.gpu.count)
    (torch,) = docs[f"jobs/{group}-fsdp.yaml"]
    replicas = torch["spec"]["pytorchReplicaSpecs"]
    assert replicas["Master"]["replicas"] + replicas["Worker"]["replicas"] == count
    assert torch["spec"]["nprocPerNode"] == str(inst.gpu.count)
    assert replicas["Worker"]["template"]["spec"]["containers"][0]["resources"]["limits"].get(cat.EFA_RESOURCE, 0) == efa
    for job in (mpi, torch):
        assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == group


def test_job_environment_is_the_groups_and_nothing_the_plugin_sets() -> None:
    (mpi,) = _docs(_rc())["jobs/gpu-nccl-tests.yaml"]
    env = {e["name"]: e["value"] for e in mpi["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"]}
    assert env == {"NCCL_SOCKET_IFNAME": "^docker,lo,veth", "NCCL_NET_PLUGIN": "ofi"}
    assert not {"NCCL_BUFFSIZE", "NCCL_P2P_NET_CHUNKSIZE", "FI_EFA_FORK_SAFE", "NCCL_TOPO_FILE"} & set(env)


def test_queues_quota_the_whole_group_and_serve_every_namespace() -> None:
    docs = _docs(_rc(MIXED))
    h100 = docs["kueue/h100.yaml"]
    (flavor,) = _by_kind(h100, "ResourceFlavor")
    assert flavor["spec"] == {"nodeLabels": {cat.INSTANCE_TYPE_LABEL: "ml.p5.48xlarge"}, "topologyName": "fmcluster-network"}
    (queue,) = _by_kind(h100, "ClusterQueue")
    quotas = {r["name"]: r["nominalQuota"] for r in queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert quotas == {"nvidia.com/gpu": 32, "vpc.amazonaws.com/efa": 128, "cpu": 768, "memory": "8192Gi",
                      "hugepages-2Mi": "20480Mi"}
    assert queue["spec"]["resourceGroups"][0]["coveredResources"] == list(quotas)
    a100 = {r["name"] for r in _by_kind(docs["kueue/a100.yaml"], "ClusterQueue")[0]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert cat.EFA_RESOURCE not in a100
    assert [(q["metadata"]["namespace"], q["spec"]["clusterQueue"]) for q in _by_kind(h100, "LocalQueue")] == [
        ("team-a", "h100"), ("team-b", "h100")]


def test_topology_levels_and_gang_admission() -> None:
    docs = _docs(_rc())
    (topo,) = docs["kueue/topology.yaml"]
    assert [lvl["nodeLabel"] for lvl in topo["spec"]["levels"]] == [
        "topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
        "topology.k8s.aws/network-node-layer-3", "kubernetes.io/hostname"]
    (config,) = docs["kueue/kueue-config-fmcluster.yaml"]
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert config["waitForPodsReady"]["blockAdmission"] is True and config["waitForPodsReady"]["timeout"] == "10m"
    assert "kueue/kueue-manager-config.yaml" not in docs  # merged into the live ConfigMap, never applied in its place
    (mpi,) = docs["jobs/gpu-nccl-tests.yaml"]
    annotations = mpi["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["metadata"]["annotations"]
    assert annotations == {"kueue.x-k8s.io/podset-preferred-topology": "topology.k8s.aws/network-node-layer-3"}


def test_other_orchestrators_render_no_manifests() -> None:
    assert render_kubernetes_manifests(resolve(load_blueprint(ROOT / "blueprints" / "hyperpod-p5.yaml"))) == {}


# ---- admission policy (CEL evaluated offline) ------------------------------------------------------------------
def _pod(limits: dict[str, Any] | None, node_type: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": {"limits": limits} if limits else {}}]}
    if node_type:
        spec["nodeSelector"] = {cat.INSTANCE_TYPE_LABEL: node_type}
    return {"spec": spec}


def _admits(policy: dict[str, Any], pod: dict[str, Any]) -> bool:
    spec = policy["spec"]
    if not all(cel.evaluate(c["expression"], {"object": pod}) for c in spec["matchConditions"]):
        return True  # not a GPU pod: the policy does not apply
    return all(cel.evaluate(v["expression"], {"object": pod}) for v in spec["validations"])


@pytest.mark.parametrize(("pod", "admitted"), [
    (_pod({"nvidia.com/gpu": 8}), False),
    (_pod({"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}), True),
    (_pod({"cpu": "2"}), True),
    (_pod(None), True),
    (_pod({"nvidia.com/gpu": 8}, "ml.p4d.24xlarge"), True),   # the group that runs without EFA
    (_pod({"nvidia.com/gpu": 8}, "ml.p5.48xlarge"), False),
])
def test_admission_policy_refuses_gpu_pods_without_efa(pod: dict[str, Any], admitted: bool) -> None:
    (policy, binding) = _docs(_rc(MIXED))["admission/efa-required.yaml"]
    assert binding["spec"]["policyName"] == policy["metadata"]["name"] and binding["spec"]["validationActions"] == ["Deny"]
    assert _admits(policy, pod) is admitted


def test_no_admission_policy_without_efa_groups() -> None:
    text = blueprint_text({"compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2, "efa": False}]},
                          base=example("hyperpod-eks"))
    assert "admission/efa-required.yaml" not in render_kubernetes_manifests(_rc(text))


# ---- node-check DaemonSet loop, run for real against stubs ------------------------------------------------------
def _stub(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


NODE_WITH_TAINTS = '{"spec": {"taints": [{"key": "sagemaker.amazonaws.com/node-health-status", "effect": "NoSchedule"}]}}'
NODE_TAINTED = '{"spec": {"taints": [{"key": "fmcluster.io/node-check", "value": "failed", "effect": "NoSchedule"}]}}'


def _run_loop(tmp_path: Path, check_rc: int, node_json: str = '{"spec": {}}') -> tuple[subprocess.CompletedProcess[str], list[str]]:
    bin_dir, sa = tmp_path / "bin", tmp_path / "sa"
    bin_dir.mkdir()
    sa.mkdir()
    (sa / "token").write_text("TOKEN")
    (sa / "ca.crt").write_text("CA")
    calls = tmp_path / "curl.log"
    # chroot ROOT CMD ARGS...: the node check's verdict is its exit code (0 pass, 1 fail, 2 could not run)
    _stub(bin_dir, "chroot", f'echo "chroot $*" >&2\nexit {check_rc}\n')
    # curl: record the method and data; GET prints the node object (as the API server does with --fail on 2xx)
    _stub(bin_dir, "curl", f'''method=GET; data=""
while [[ $# -gt 0 ]]; do case "$1" in -X) method="$2"; shift ;; --data) data="$2"; shift ;; esac; shift; done
echo "$method $data" >> "{calls}"
if [[ "$method" == GET ]]; then echo '{node_json}'; fi
''')
    script = tmp_path / "loop.sh"
    script.write_text(node_check_loop())
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "NODE_NAME": "hyperpod-i-0abc", "ONCE": "1",
           "SA_DIR": str(sa), "HOST_ROOT": str(tmp_path)}
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=30)
    return proc, calls.read_text().splitlines() if calls.exists() else []


def test_node_check_loop_is_shellcheck_clean(tmp_path: Path) -> None:
    script = tmp_path / "loop.sh"
    script.write_text(node_check_loop())
    check = subprocess.run([str(ROOT / ".venv/bin/shellcheck"), "-S", "style", str(script)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout


def test_failing_node_is_cordoned_and_tainted_keeping_its_other_taints(tmp_path: Path) -> None:
    proc, calls = _run_loop(tmp_path, 1, NODE_WITH_TAINTS)
    assert proc.returncode == 1, proc.stderr
    assert calls == [
        "GET ",
        'PATCH {"spec":{"unschedulable":true}}',
        'PATCH [{"op":"add","path":"/spec/taints/-","value":'
        '{"key":"fmcluster.io/node-check","value":"failed","effect":"NoSchedule"}}]',
    ]
    assert "cordoned and tainted" in proc.stdout


def test_failing_node_without_taints_gets_a_taint_list(tmp_path: Path) -> None:
    _, calls = _run_loop(tmp_path, 1)
    assert calls[-1] == ('PATCH [{"op":"add","path":"/spec/taints","value":'
                         '[{"key":"fmcluster.io/node-check","value":"failed","effect":"NoSchedule"}]}]')


@pytest.mark.parametrize(("check_rc", "node", "calls", "said"), [
    (0, '{"spec": {}}', [], "node check passed"),
    (2, '{"spec": {}}', [], "could not run (exit 2)"),
    (1, NODE_TAINTED, ["GET "], "already tainted"),
])
def test_passing_unrunnable_or_already_tainted_nodes_are_left_alone(
        tmp_path: Path, check_rc: int, node: str, calls: list[str], said: str) -> None:
    proc, made = _run_loop(tmp_path, check_rc, node)
    assert proc.returncode == check_rc and made == calls and said in proc.stdout


def test_daemonset_runs_the_loop_on_every_gpu_type() -> None:
    docs = _docs(_rc(MIXED))["node-check/daemonset.yaml"]
    (ds,) = _by_kind(docs, "DaemonSet")
    pod = ds["spec"]["template"]["spec"]
    (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"][0]["values"] == ["ml.p4d.24xlarge", "ml.p5.48xlarge", "ml.p5en.48xlarge"]
    (cm,) = _by_kind(docs, "ConfigMap")
    assert cm["data"]["node-check-loop.sh"] == node_check_loop()
    (role,) = _by_kind(docs, "ClusterRole")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]


def test_helm_install_is_pinned_and_shellcheck_clean(tmp_path: Path) -> None:
    script = render_kubernetes_manifests(_rc())["helm/install-hyperpod-dependencies.sh"]
    assert f"checkout --quiet {cat.HELM_CHART_COMMIT}" in script and "--set cert-manager.enabled=true" in script
    assert "--name hp-eks --role-arn arn:aws:iam::123456789012:role/eks-admins" in script and "--region us-east-1" in script
    path = tmp_path / "install.sh"
    path.write_text(script)
    check = subprocess.run([str(ROOT / ".venv/bin/shellcheck"), "-S", "style", str(path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout


#: Stub helm for a cluster with no nodes yet (the install runs before HyperPod joins any): Helm waits for hook Jobs
#: (https://helm.sh/docs/topics/charts_hooks/: "the hook ... is a Job ... Helm will wait until the job successfully
#: runs to completion"), and a Job with no node to run on never completes, so an install that keeps cert-manager's
#: post-install startupapicheck Job (cert-manager chart value startupapicheck.enabled, default true) times out.
NO_NODES_HELM = """#!/usr/bin/env bash
echo "helm $*" >> "$STUB_LOG"
[[ $1 == upgrade ]] || exit 0
args=" $* "
if [[ $args == *"cert-manager.enabled=true"* && $args != *"cert-manager.startupapicheck.enabled=false"* ]]; then
  echo "Error: INSTALLATION FAILED: failed post-install: timed out waiting for the condition" >&2
  exit 1
fi
"""


def test_helm_install_passes_on_a_cluster_without_nodes(tmp_path: Path) -> None:
    script = tmp_path / "install.sh"
    script.write_text(render_kubernetes_manifests(_rc())["helm/install-hyperpod-dependencies.sh"])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stubs = {"helm": NO_NODES_HELM, "aws": '#!/bin/sh\necho "aws $*" >> "$STUB_LOG"\n',
             "git": '#!/bin/sh\necho "git $*" >> "$STUB_LOG"\n'}
    for name, body in stubs.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "calls.log"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "STUB_LOG": str(log)}
    for _ in range(2):  # idempotent: the second run (an upgrade) passes too
        proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
    assert log.read_text().count("helm upgrade --install") == 2


# ---- Kueue configuration merge, run for real against a stub kubectl ----------------------------------------------
#: What task governance's Kueue might hold (keys of Kueue's Configuration v1beta2, apis/config/v1beta2): settings and
#: integrations fmcluster does not set, which the merge must keep.
TASK_GOVERNANCE_CONFIG = """apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
manageJobsWithoutQueueName: false
integrations:
  frameworks:
  - batch/job
  - ray.io/rayjob
  - kubeflow.org/pytorchjob
waitForPodsReady:
  timeout: 5m
"""
#: kubectl as documented: ``get ... -o jsonpath=`` prints the value (NotFound on stderr, exit 1, for a missing object),
#: ``apply -f -`` reads the manifest from stdin, ``rollout restart`` restarts a Deployment.
STUB_KUBECTL = """if [[ "$*" == *"get configmap kueue-manager-config"* ]]; then
  if [[ -f "$LIVE" ]]; then cat "$LIVE"; exit 0; fi
  echo 'Error from server (NotFound): configmaps "kueue-manager-config" not found' >&2; exit 1
fi
echo "kubectl $*" >> "$STUB_LOG"
if [[ "$*" == "apply -f -" ]]; then cat > "$APPLIED"; fi
"""


def _run_merge(tmp_path: Path, live: str | None) -> tuple[subprocess.CompletedProcess[str], list[str], dict[str, Any] | None]:
    files = render_kubernetes_manifests(_rc())
    folder = tmp_path / "kueue"
    folder.mkdir()
    for name in ("merge-kueue-config.sh", "kueue-config-fmcluster.yaml"):
        (folder / name).write_text(files[f"kueue/{name}"])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _stub(bin_dir, "kubectl", STUB_KUBECTL)
    if live is not None:
        (tmp_path / "live.yaml").write_text(live)
    log, applied = tmp_path / "kubectl.log", tmp_path / "applied.json"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "LIVE": str(tmp_path / "live.yaml"),
           "STUB_LOG": str(log), "APPLIED": str(applied), "FMC_PYTHON": str(ROOT / ".venv/bin/python")}
    proc = subprocess.run(["bash", str(folder / "merge-kueue-config.sh")], env=env, capture_output=True, text=True,
                          timeout=60)
    calls = log.read_text().splitlines() if log.exists() else []
    return proc, calls, json.loads(applied.read_text()) if applied.exists() else None


def test_kueue_merge_keeps_what_task_governance_set(tmp_path: Path) -> None:
    proc, calls, applied = _run_merge(tmp_path, TASK_GOVERNANCE_CONFIG)
    assert proc.returncode == 0, proc.stderr
    assert calls == ["kubectl apply -f -", "kubectl -n kueue-system rollout restart deployment/kueue-controller-manager"]
    assert applied is not None and applied["metadata"] == {"name": "kueue-manager-config", "namespace": "kueue-system"}
    config = yaml.safe_load(applied["data"]["controller_manager_config.yaml"])
    assert config["manageJobsWithoutQueueName"] is False  # the add-on's own setting stays
    assert config["integrations"]["frameworks"] == [
        "batch/job", "ray.io/rayjob", "kubeflow.org/pytorchjob", "kubeflow.org/mpijob"]  # union, existing first
    assert config["waitForPodsReady"]["timeout"] == "10m" and config["waitForPodsReady"]["blockAdmission"] is True


def test_kueue_merge_twice_applies_nothing_the_second_time(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    _, _, applied = _run_merge(first, TASK_GOVERNANCE_CONFIG)
    assert applied is not None
    proc, calls, again = _run_merge(second, applied["data"]["controller_manager_config.yaml"])
    assert proc.returncode == 0 and calls == [] and again is None, proc.stderr
    assert "nothing applied" in proc.stdout


@pytest.mark.parametrize(("live", "rc", "message"), [
    (None, 2, "no ConfigMap kueue-system/kueue-manager-config: install Kueue first"),
    (TASK_GOVERNANCE_CONFIG.replace("v1beta2", "v1beta1"), 1,
     "the live configuration is config.kueue.x-k8s.io/v1beta1, fmcluster's config.kueue.x-k8s.io/v1beta2"),
])
def test_kueue_merge_refuses_without_changing_anything(tmp_path: Path, live: str | None, rc: int, message: str) -> None:
    proc, calls, applied = _run_merge(tmp_path, live)
    assert proc.returncode == rc and message in proc.stderr, proc.stderr
    assert calls == [] and applied is None


def test_kueue_merge_script_is_shellcheck_clean(tmp_path: Path) -> None:
    script = tmp_path / "merge.sh"
    script.write_text(render_kubernetes_manifests(_rc())["kueue/merge-kueue-config.sh"])
    check = subprocess.run([str(ROOT / ".venv/bin/shellcheck"), "-S", "style", str(script)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
