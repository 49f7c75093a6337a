"""Kubernetes manifests of a HyperPod EKS cluster, rendered per blueprint (Python objects -> YAML).

:func:`render_kubernetes_manifests` returns ``{relative path: YAML text}`` (``fmcluster render`` writes them under
``kubernetes/``); docs/kubernetes.md shows how they are applied. What is rendered, per compute group where it says so:

- ``kueue/topology.yaml``: a Kueue ``Topology`` over the EKS network topology labels
  (``topology.k8s.aws/network-node-layer-1..3``, then the hostname), so a job can require or prefer one network block.
- ``kueue/<group>.yaml``: a ``ResourceFlavor`` selecting the group's instance type, a ``ClusterQueue`` whose quotas
  are the group's size (GPUs, EFA devices, vCPUs, memory, 2 MiB hugepages) and a ``LocalQueue`` per namespace of
  ``orchestrator.hyperpod.eks.queue_namespaces``.
- ``kueue/kueue-config-fmcluster.yaml``: the part of Kueue's ``Configuration`` fmcluster sets, ``waitForPodsReady``
  (gang admission: a workload keeps its quota only once all its pods run) and the job frameworks, and
  ``kueue/merge-kueue-config.sh``, which merges it into the live ``kueue-manager-config`` ConfigMap (task governance's
  own settings kept) and restarts the Kueue controller.
- ``jobs/<group>-nccl-tests.yaml`` (an ``MPIJob``) and ``jobs/<group>-fsdp.yaml`` (a ``PyTorchJob``): every node of the
  group, each pod requesting all of the type's GPUs, every EFA device (``vpc.amazonaws.com/efa`` = the resolved
  group's EFA count) and hugepages, with the group's job environment.
- ``admission/efa-required.yaml``: a ``ValidatingAdmissionPolicy`` (+ binding) refusing a pod that requests GPUs of
  an EFA instance type without requesting EFA devices (such a pod runs NCCL over TCP: aws/sagemaker-hyperpod-cli #306).
- ``node-check/daemonset.yaml``: the node check as a DaemonSet on the GPU nodes; a failed verdict cordons and
  taints the node (``fmcluster.io/node-check=failed:NoSchedule``).
- ``helm/install-hyperpod-dependencies.sh``: the pinned HyperPod dependency chart install (docs/decisions.md).

Sources: :mod:`fmcluster.catalog.eks`; Kueue v0.19.2 APIs (kubernetes-sigs/kueue ``apis/kueue/v1beta2``,
``apis/config/v1beta2/configuration_types.go`` WaitForPodsReady; ``site/content/en/docs/concepts/
topology_aware_scheduling.md`` for the ``kueue.x-k8s.io/podset-required-topology`` and ``podset-preferred-topology``
annotations); MPIJob v2beta1 (kubeflow/mpi-operator v0.5.0, the HyperPod chart's CRD); PyTorchJob v1 (the HyperPod
chart's training-operators CRD); ``ValidatingAdmissionPolicy`` admissionregistration.k8s.io/v1 (GA in Kubernetes
1.30: https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/); hugepages request of
an EFA pod (``hugepages-2Mi: 5120Mi``, https://docs.aws.amazon.com/eks/latest/userguide/node-efa.html example).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import yaml

from fmcluster.catalog import eks as cat
from fmcluster.features.node.render_context import EnvVar, NodeContext, blueprint_node_contexts
from fmcluster.orchestrators.hyperpod_eks.plan import EksPlan, as_eks_plan
from fmcluster.resolved import NODE_DIR, ResolvedCluster, ResolvedGroup
from fmcluster.templates.render import render

#: The Kueue API versions of the manifests: the catalog's choice (:data:`fmcluster.catalog.eks.KUEUE_API_VERSION`, why
#: and the migration path there), checked against what the pinned Kueue serves (tests/orchestrators/hyperpod_eks).
KUEUE_API = f"{cat.KUEUE_API_GROUP}/{cat.KUEUE_API_VERSION}"
KUEUE_CONFIG_API = f"{cat.KUEUE_CONFIG_API_GROUP}/{cat.KUEUE_CONFIG_API_VERSION}"
KUEUE_NAMESPACE = "kueue-system"
TOPOLOGY_NAME = "fmcluster-network"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
#: The narrowest network layer shared by most types (layer 3, ml-workload-topology.html): jobs prefer one block.
PREFERRED_LEVEL = "topology.k8s.aws/network-node-layer-3"
HUGEPAGES = "hugepages-2Mi"
#: Satisfiable only where the node has that much 2 MiB hugepage memory allocatable: the EFA installer reserves a
#: hugepage pool on the host (ofiwg/libfabric issue #9739, maintainer: "If you have EFA installer installed on your
#: instance, you should be able to see there are huge page reserved"); the size on HyperPod nodes is unverified.
HUGEPAGES_PER_POD = "5120Mi"
HUGEPAGES_MI = 5120
#: Memory each job pod requests besides hugepages (Kubernetes needs a cpu or memory request next to hugepages).
POD_MEMORY = "8000Mi"
#: Gang admission: a workload whose pods are not all ready within this time releases its quota and is requeued.
PODS_READY_TIMEOUT = "10m"
NODE_CHECK_NAMESPACE = "fmcluster-system"
NODE_CHECK_TAINT = "fmcluster.io/node-check"
NODE_CHECK_INTERVAL_S = 600
#: Image of the node-check DaemonSet: bash, curl and chroot (the check itself runs on the host, chroot /host). That the
#: Amazon Linux 2023 container image ships curl (curl-minimal) is not verified against a primary source here.
NODE_CHECK_IMAGE = "public.ecr.aws/amazonlinux/amazonlinux:2023"
NCCL_TESTS_BIN = "/opt/nccl-tests/build/all_reduce_perf"

@cache
def node_check_loop() -> str:
    """The DaemonSet's loop script (this slice's ``templates/node-check-loop.sh.j2``, with :data:`NODE_DIR`): run the
    host's node check (installed by the lifecycle bootstrap) every INTERVAL_SECONDS; exit 0 passes, 1 fails (the node
    is cordoned and tainted once), anything else means it could not run (logged, nothing changed) - the verdicts of
    fmcluster-node-check. Talks to the API server with the pod's service account (PATCH nodes: merge patch for
    unschedulable, JSON patch to append the taint without replacing others)."""
    return render("hyperpod_eks/node-check-loop.sh.j2", {"node_dir": NODE_DIR})


class _NoAliases(yaml.SafeDumper):
    """Writes a shared value (the job environment of launcher and workers) out in full instead of as an anchor."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _dump(*docs: Mapping[str, Any]) -> str:
    return "".join("---\n" + yaml.dump(dict(d), Dumper=_NoAliases, sort_keys=False, default_flow_style=False)
                   for d in docs)


def _labels(group: str | None = None) -> dict[str, str]:
    out = {"app.kubernetes.io/managed-by": "fmcluster"}
    if group:
        out["fmcluster.io/compute-group"] = group
    return out


def _env(job_env: tuple[EnvVar, ...]) -> list[dict[str, str]]:
    return [{"name": v.name, "value": v.value} for v in job_env]


def _gpu_resources(g: ResolvedGroup) -> dict[str, Any]:
    """Limits of one job pod: all GPUs, every EFA device of the type (the resolved group's count), hugepages."""
    limits: dict[str, Any] = {cat.GPU_RESOURCE: g.instance.gpu.count, HUGEPAGES: HUGEPAGES_PER_POD, "memory": POD_MEMORY}
    if g.efa_devices:
        limits[cat.EFA_RESOURCE] = g.efa_devices
    return {"limits": dict(limits), "requests": dict(limits)}


def _node_selector(g: ResolvedGroup) -> dict[str, str]:
    # HyperPod nodes carry their SageMaker type (ml.<type>) in the instance-type label: the HyperPod chart's EFA
    # device plugin selects nodes on that label with ml.* values (aws/sagemaker-hyperpod-cli
    # helm_chart/HyperPodHelmChart/values.yaml aws-efa-k8s-device-plugin.supportedInstanceLabels).
    return {cat.INSTANCE_TYPE_LABEL: g.instance.hyperpod_name}


def topology() -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API, "kind": "Topology", "metadata": {"name": TOPOLOGY_NAME, "labels": _labels()},
        "spec": {"levels": [{"nodeLabel": label} for label in cat.TOPOLOGY_LEVELS]},
    }


def queue_objects(g: ResolvedGroup, namespaces: list[str]) -> list[dict[str, Any]]:
    """ResourceFlavor, ClusterQueue (quotas = the group's whole size) and one LocalQueue per namespace."""
    n, inst = g.spec.count, g.instance
    quotas: list[dict[str, Any]] = [
        {"name": cat.GPU_RESOURCE, "nominalQuota": n * inst.gpu.count},
        *([{"name": cat.EFA_RESOURCE, "nominalQuota": n * g.efa_devices}] if g.efa_devices else []),
        {"name": "cpu", "nominalQuota": n * inst.vcpus},
        {"name": "memory", "nominalQuota": f"{n * inst.memory_gib}Gi"},
        {"name": HUGEPAGES, "nominalQuota": f"{n * HUGEPAGES_MI}Mi"},
    ]
    flavor = {
        "apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": g.name, "labels": _labels(g.name)},
        "spec": {"nodeLabels": _node_selector(g), "topologyName": TOPOLOGY_NAME},
    }
    queue = {
        "apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": g.name, "labels": _labels(g.name)},
        "spec": {
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [{
                "coveredResources": [q["name"] for q in quotas],
                "flavors": [{"name": g.name, "resources": quotas}],
            }],
        },
    }
    local = [
        {"apiVersion": KUEUE_API, "kind": "LocalQueue",
         "metadata": {"name": g.name, "namespace": ns, "labels": _labels(g.name)}, "spec": {"clusterQueue": g.name}}
        for ns in namespaces
    ]
    return [flavor, queue, *local]


#: Kueue's configuration ConfigMap, its key and the controller Deployment that reads it at start (kubernetes-sigs/kueue
#: config/components/manager/kustomization.yaml: name prefix ``kueue-``, ``controller_manager_config.yaml``).
KUEUE_CONFIG_MAP = "kueue-manager-config"
KUEUE_CONFIG_KEY = "controller_manager_config.yaml"
KUEUE_DEPLOYMENT = "kueue-controller-manager"
#: The job frameworks fmcluster's jobs need Kueue to manage (MPIJob, PyTorchJob; batch/job for plain Jobs).
KUEUE_FRAMEWORKS = ("batch/job", "kubeflow.org/mpijob", "kubeflow.org/pytorchjob")
KUEUE_FRAGMENT = "kueue-config-fmcluster.yaml"


def kueue_config_fragment() -> dict[str, Any]:
    """The part of Kueue's ``Configuration`` fmcluster sets (``kueue/kueue-config-fmcluster.yaml``): gang admission
    (``waitForPodsReady``) and the frameworks of its jobs. Merged into the live configuration by
    :func:`merge_kueue_config_script`, never applied in its place: with task governance the add-on owns that
    ConfigMap and its other settings (issue 27)."""
    return {
        "apiVersion": KUEUE_CONFIG_API, "kind": "Configuration",
        "waitForPodsReady": {
            "timeout": PODS_READY_TIMEOUT,
            "blockAdmission": True,
            "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 60, "backoffMaxSeconds": 3600},
        },
        "integrations": {"frameworks": list(KUEUE_FRAMEWORKS)},
    }


def merge_kueue_config_script(plan: EksPlan) -> str:
    """``kueue/merge-kueue-config.sh``: merges :func:`kueue_config_fragment` into the live ConfigMap and restarts the
    Kueue controller when it changed (template ``hyperpod_eks/merge-kueue-config.sh.j2`` says how)."""
    return render("hyperpod_eks/merge-kueue-config.sh.j2", {
        "fragment": KUEUE_FRAGMENT, "namespace": KUEUE_NAMESPACE, "config_map": KUEUE_CONFIG_MAP, "key": KUEUE_CONFIG_KEY,
        "deployment": KUEUE_DEPLOYMENT, "config_api": KUEUE_CONFIG_API, "kueue_version": plan.kueue_version,
    })


def _pod_metadata(g: ResolvedGroup) -> dict[str, Any]:
    return {"labels": _labels(g.name), "annotations": {PREFERRED_TOPOLOGY: PREFERRED_LEVEL}}


#: Launcher retries of an MPIJob before it fails (AWS's nccl-tests sample uses 20; see :func:`nccl_tests_job`).
MPI_LAUNCHER_BACKOFF_LIMIT = 20


def nccl_tests_job(g: ResolvedGroup, ctx: NodeContext, namespace: str, image: str) -> dict[str, Any]:
    """A multi-node all_reduce_perf over every node of the group (MPIJob v2beta1: one launcher, one worker per
    node, one rank per GPU)."""
    gpus, nodes = g.instance.gpu.count, g.spec.count
    env = _env(ctx.job_env)
    forwarded = [x for e in env for x in ("-x", e["name"])]
    command = [
        "/opt/amazon/openmpi/bin/mpirun", "--allow-run-as-root", "--tag-output", "--bind-to", "none",
        "-np", str(nodes * gpus), "-npernode", str(gpus),
        "-x", "PATH", "-x", "LD_LIBRARY_PATH", "-x", "NCCL_DEBUG=INFO", *forwarded,
        NCCL_TESTS_BIN, "-b", "8", "-e", "16G", "-f", "2", "-g", "1", "-c", "1", "-n", "100",
    ]
    return {
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
        "metadata": {"name": f"{g.name}-nccl-tests", "namespace": namespace,
                     "labels": {**_labels(g.name), QUEUE_LABEL: g.name}},
        "spec": {
            "slotsPerWorker": gpus,
            # The MPI operator starts the launcher with the workers: its first mpirun may fail before every worker is
            # up, so the launcher is retried (aws-samples/awsome-distributed-training
            # micro-benchmarks/nccl-tests/kubernetes/nccl-tests.yaml: runPolicy.backoffLimit 20).
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": MPI_LAUNCHER_BACKOFF_LIMIT},
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {
                        "metadata": {"labels": _labels(g.name)},
                        "spec": {
                            "restartPolicy": "OnFailure",
                            "containers": [{
                                "name": "launcher", "image": image, "imagePullPolicy": "IfNotPresent",
                                "env": env, "command": command,
                                "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
                            }],
                        },
                    },
                },
                "Worker": {
                    "replicas": nodes,
                    "template": {
                        "metadata": _pod_metadata(g),
                        "spec": {
                            "nodeSelector": _node_selector(g),
                            "containers": [{
                                "name": "worker", "image": image, "imagePullPolicy": "IfNotPresent",
                                "env": env, "resources": _gpu_resources(g),
                                "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
                            }],
                            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
                        },
                    },
                },
            },
        },
    }


def fsdp_job(g: ResolvedGroup, ctx: NodeContext, namespace: str, image: str) -> dict[str, Any]:
    """A PyTorch FSDP run on every node of the group (PyTorchJob v1; the operator sets torchrun's PET_* variables:
    nodes, node rank, master address; ``nprocPerNode`` = the type's GPUs)."""
    nodes = g.spec.count
    pod = {
        "metadata": _pod_metadata(g),
        "spec": {
            "nodeSelector": _node_selector(g),
            "containers": [{
                # The training operator requires the container to be called "pytorch".
                "name": "pytorch", "image": image, "imagePullPolicy": "IfNotPresent",
                "env": _env(ctx.job_env),
                "command": ["torchrun", "/workspace/train.py"],
                "resources": _gpu_resources(g),
                "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
            }],
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
        },
    }
    replicas: dict[str, Any] = {"Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": pod}}
    if nodes > 1:
        replicas["Worker"] = {"replicas": nodes - 1, "restartPolicy": "OnFailure", "template": pod}
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": f"{g.name}-fsdp", "namespace": namespace,
                     "labels": {**_labels(g.name), QUEUE_LABEL: g.name}},
        "spec": {"nprocPerNode": str(g.instance.gpu.count), "pytorchReplicaSpecs": replicas},
    }


def efa_admission_policy(rc: ResolvedCluster) -> list[dict[str, Any]]:
    """Refuse a pod (in any namespace but the system ones) that requests GPUs without requesting EFA devices,
    unless it selects an instance type whose group runs without EFA. Empty when no group has EFA."""
    efa_types = sorted({g.instance.hyperpod_name for g in rc.groups if g.efa_devices})
    if not efa_types:
        return []
    tcp_types = sorted({g.instance.hyperpod_name for g in rc.groups if not g.efa_devices} - set(efa_types))
    gpu, efa = cat.GPU_RESOURCE, cat.EFA_RESOURCE
    wants_gpu = (f"object.spec.containers.exists(c, has(c.resources.limits) && '{gpu}' in c.resources.limits)")
    asks_efa = f"'{efa}' in c.resources.limits"
    every_gpu_container_asks_efa = (f"object.spec.containers.all(c, !has(c.resources.limits) || "
                                    f"!('{gpu}' in c.resources.limits) || {asks_efa})")
    expression = every_gpu_container_asks_efa
    if tcp_types:  # a pod that selects a type run without EFA may use GPUs alone
        listed = ", ".join(f"'{t}'" for t in tcp_types)
        expression = (f"(has(object.spec.nodeSelector) && '{cat.INSTANCE_TYPE_LABEL}' in object.spec.nodeSelector && "
                      f"object.spec.nodeSelector['{cat.INSTANCE_TYPE_LABEL}'] in [{listed}]) || "
                      f"{every_gpu_container_asks_efa}")
    name = "fmcluster-gpu-pods-request-efa"
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": _labels()},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"],
            }]},
            "matchConditions": [{"name": "requests-gpus", "expression": wants_gpu}],
            "validations": [{
                "expression": expression,
                "message": (f"a container requests {gpu} on an EFA instance type ({', '.join(efa_types)}) without "
                            f"{efa}: NCCL would run over TCP. Request {efa} (all of the type's devices) as the "
                            "fmcluster job templates do."),
                "reason": "Invalid",
            }],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": _labels()},
        "spec": {
            "policyName": name, "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchExpressions": [{
                "key": "kubernetes.io/metadata.name", "operator": "NotIn",
                "values": ["kube-system", "aws-hyperpod", KUEUE_NAMESPACE, NODE_CHECK_NAMESPACE],
            }]}},
        },
    }
    return [policy, binding]


def node_check_objects(rc: ResolvedCluster) -> list[dict[str, Any]]:
    """Namespace, service account, node patch permission, the loop script and the DaemonSet on every GPU node."""
    ns, name = NODE_CHECK_NAMESPACE, "fmcluster-node-check"
    types = sorted({g.instance.hyperpod_name for g in rc.groups})
    meta = {"namespace": ns, "labels": _labels()}
    pod_labels = {**_labels(), "app.kubernetes.io/name": name}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": _labels()}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, **meta}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": name, "labels": _labels()},
         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": name, "labels": _labels()},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta},
         "data": {"node-check-loop.sh": node_check_loop()}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, **meta},
         "spec": {
             "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
             "template": {
                 "metadata": {"labels": pod_labels},
                 "spec": {
                     "serviceAccountName": name,
                     "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                         "nodeSelectorTerms": [{"matchExpressions": [{
                             "key": cat.INSTANCE_TYPE_LABEL, "operator": "In", "values": types}]}]}}},
                     # Keep running on the nodes it (or HyperPod) tainted: the verdict stays visible in its log.
                     "tolerations": [{"operator": "Exists"}],
                     "containers": [{
                         "name": "node-check", "image": NODE_CHECK_IMAGE,
                         "command": ["bash", "/etc/fmcluster/node-check-loop.sh"],
                         "env": [
                             {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                             {"name": "INTERVAL_SECONDS", "value": str(NODE_CHECK_INTERVAL_S)},
                             {"name": "NODE_CHECK", "value": f"{rc.node_dir}/bin/fmcluster-node-check"},
                         ],
                         # The check runs on the host (chroot /host): GPUs, drivers, EFA devices and packages.
                         "securityContext": {"privileged": True},
                         "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                                       "limits": {"memory": "512Mi"}},
                         "volumeMounts": [{"name": "host", "mountPath": "/host"},
                                          {"name": "script", "mountPath": "/etc/fmcluster"}],
                     }],
                     "volumes": [{"name": "host", "hostPath": {"path": "/", "type": "Directory"}},
                                 {"name": "script", "configMap": {"name": name}}],
                 },
             },
         }},
    ]


def helm_install_script(plan: EksPlan, region: str) -> str:
    """The pinned HyperPod dependency chart install (run once after the ``<name>-eks`` stack, before the cluster
    stack; docs/kubernetes.md). cert-manager is turned on: the training operator add-on needs it. kubectl and helm
    act as ``orchestrator.hyperpod.eks.admin_role_arn`` (the only principal with access to a created cluster)."""
    admin = plan.settings.admin_role_arn if plan.creates_cluster else None
    role = f" --role-arn {admin}" if admin else ""
    return f"""#!/usr/bin/env bash
# Install the SageMaker HyperPod dependency Helm chart, pinned to {cat.HELM_CHART_REPO} at {cat.HELM_CHART_COMMIT}
# (chart {cat.HELM_CHART_PATH}). Run after `cdk deploy` of the EKS stack and before the cluster stack: HyperPod
# expects the chart before it joins nodes. Rendered by fmcluster.
set -euo pipefail
work="$(mktemp -d)"
trap 'rm -rf "${{work}}"' EXIT
aws eks update-kubeconfig --region {region} --name {plan.cluster_name}{role}
git clone --quiet {cat.HELM_CHART_REPO} "${{work}}/cli"
git -C "${{work}}/cli" checkout --quiet {cat.HELM_CHART_COMMIT}
helm dependency update "${{work}}/cli/{cat.HELM_CHART_PATH}"
# cert-manager's startupapicheck is a post-install hook Job (cert-manager chart values.yaml startupapicheck.enabled,
# default true): with no nodes yet it never schedules and Helm times out, so it is off; upgrade --install is idempotent.
helm upgrade --install {cat.HELM_RELEASE} "${{work}}/cli/{cat.HELM_CHART_PATH}" \\
  --namespace {cat.HELM_NAMESPACE} \\
  --set cert-manager.enabled=true \\
  --set cert-manager.startupapicheck.enabled=false
"""


def render_kubernetes_manifests(rc: ResolvedCluster, *, image_prefix: str = "") -> dict[str, str]:
    """``{relative path: text}`` of every Kubernetes manifest of a HyperPod EKS cluster (see the module docstring);
    empty for other orchestrators. ``image_prefix``: registry prefix of the job images (default none: the jobs name
    ``nccl-tests:<stack>`` and ``fsdp:<stack>``, to be pushed to your registry and the prefix set)."""
    plan = as_eks_plan(rc.eks)
    if plan is None:
        return {}
    contexts = blueprint_node_contexts(rc)
    namespaces = list(plan.settings.queue_namespaces)
    stack = rc.blueprint.software.stack
    out: dict[str, str] = {"kueue/topology.yaml": _dump(topology()),
                           f"kueue/{KUEUE_FRAGMENT}": _dump(kueue_config_fragment()),
                           "kueue/merge-kueue-config.sh": merge_kueue_config_script(plan)}
    for g in rc.groups:
        ctx = contexts[g.name]
        out[f"kueue/{g.name}.yaml"] = _dump(*queue_objects(g, namespaces))
        out[f"jobs/{g.name}-nccl-tests.yaml"] = _dump(
            nccl_tests_job(g, ctx, namespaces[0], f"{image_prefix}nccl-tests:{stack}"))
        out[f"jobs/{g.name}-fsdp.yaml"] = _dump(fsdp_job(g, ctx, namespaces[0], f"{image_prefix}fsdp:{stack}"))
    policy = efa_admission_policy(rc)
    if policy:
        out["admission/efa-required.yaml"] = _dump(*policy)
    out["node-check/daemonset.yaml"] = _dump(*node_check_objects(rc))
    if plan.creates_cluster:
        out["helm/install-hyperpod-dependencies.sh"] = helm_install_script(plan, rc.blueprint.region)
    return out


def render_files(rc: ResolvedCluster) -> dict[str, str]:
    """The registry row's render hook: :func:`render_kubernetes_manifests` under ``kubernetes/`` (what ``fmcluster
    render`` writes); empty for other orchestrators."""
    return {f"kubernetes/{rel}": text for rel, text in render_kubernetes_manifests(rc).items()}
