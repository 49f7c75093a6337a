"""Amazon EKS and SageMaker HyperPod EKS facts: add-on names and pinned versions, the HyperPod dependency Helm chart,
Kueue and the job-operator CRD versions fmcluster renders manifests for, and the VPC endpoints of a private cluster.

Every entry names its source. A version marked ``None`` is not pinned by fmcluster: EKS installs its default version
for the cluster's Kubernetes version (``AWS::EKS::Addon`` without ``AddonVersion``), because no primary source at hand
gave the version per Kubernetes minor (docs/decisions.md).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Kubernetes versions the HyperPod training operator supports ("Supported Kubernetes versions - 1.28, 1.29, 1.30,
#: 1.31, 1.32, and 1.33": https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-operator.html, re-read on
#: 2026-12-05: no copy lists 1.34 or later). A sample's issue says the operator add-on v1.2.1-eksbuild.1 is "the
#: default across K8s 1.28-1.35" (awslabs/awsome-distributed-ai issue #1075), i.e. EKS may offer the add-on on 1.34/1.35;
#: that is not AWS's statement of support, so R-EKS-5 keeps to the page.
TRAINING_OPERATOR_KUBERNETES = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33")
#: HyperPod needs the Amazon VPC CNI at 1.18.3 or later, the only CNI it supports
#: (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html "Networking").
MIN_VPC_CNI = (1, 18, 3)
#: Authentication modes HyperPod accepts (same page): fmcluster creates ``API``.
AUTHENTICATION_MODE = "API"


@dataclass(frozen=True)
class Addon:
    """One ``AWS::EKS::Addon``: ``name`` (EKS add-on name), ``version`` (pinned ``AddonVersion`` or ``None`` for EKS's
    default for the cluster's Kubernetes version), ``needs_nodes`` (its pods must be scheduled, so it is created after
    the HyperPod worker groups joined), ``source``; ``kubernetes``: the Kubernetes versions a primary source lists the
    pinned version for (empty: no such list was read; R-EKS-13 warns on a cluster version outside a non-empty list)."""

    name: str
    version: str | None
    needs_nodes: bool
    source: str
    kubernetes: tuple[str, ...] = ()


#: vpc-cni v1.20.1-eksbuild.3 is the latest EKS add-on version for Kubernetes 1.27-1.33 in the EKS User Guide table
#: "Amazon VPC CNI versions" (https://docs.aws.amazon.com/eks/latest/userguide/managing-vpc-cni.html, the copy read
#: on 2026-12-05 has rows 1.27-1.33 only); >= 1.18.3. Whether EKS offers it on a 1.34 cluster (the one version HyperPod
#: lists past the table) is NOT VERIFIED: R-EKS-13 warns there.
VPC_CNI = Addon("vpc-cni", "v1.20.1-eksbuild.3", False,
                "https://docs.aws.amazon.com/eks/latest/userguide/managing-vpc-cni.html",
                ("1.27", "1.28", "1.29", "1.30", "1.31", "1.32", "1.33"))
KUBE_PROXY = Addon("kube-proxy", None, False, "https://docs.aws.amazon.com/eks/latest/userguide/managing-kube-proxy.html")
POD_IDENTITY_AGENT = Addon(
    "eks-pod-identity-agent", None, False,
    "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-operator-install.html (prerequisite: "
    "aws eks create-addon --addon-name eks-pod-identity-agent)",
)
COREDNS = Addon("coredns", None, True, "https://docs.aws.amazon.com/eks/latest/userguide/managing-coredns.html")
#: The HyperPod training operator EKS add-on. Its name as the EKS add-on API spells it is taken from the SageMaker
#: guide's add-on page. The version floats (EKS default for the cluster's Kubernetes version): AWS publishes no version
#: table for it. What is known of its versions comes from a sample's issue, not a reference: version v1.2.1-eksbuild.1
#: "(now the default across K8s 1.28-1.35)" declares no IAM permissions, so EKS refuses a Pod Identity association
#: inside the add-on ("Pod Identity feature is not supported for addon version: v1.2.1-eksbuild.1":
#: awslabs/awsome-distributed-ai issue #1075; the quote on the default and the fix, a standalone association: PR #1076).
#: fmcluster creates its association apart (``AWS::EKS::PodIdentityAssociation``), which works whatever the version
#: declares.
TRAINING_OPERATOR = Addon(
    "amazon-sagemaker-hyperpod-training-operator", None, True,
    "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-operator-install.html",
)
#: The page that lists the training operator's supported Kubernetes versions and recommended Kueue versions.
TRAINING_OPERATOR_VERSIONS_SOURCE = "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-operator.html"
#: "Recommended Kueue version - v.0.12.2 and v.0.12.3" (same page, "Supported versions").
TRAINING_OPERATOR_RECOMMENDED_KUEUE = ("v0.12.2", "v0.12.3")
#: "The training operator works only with version v1.3.0-eksbuild.1 or higher" of HyperPod task governance
#: (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-operator-troubleshooting.html, "Incompatible HyperPod
#: task governance version").
TRAINING_OPERATOR_MIN_TASK_GOVERNANCE = "v1.3.0-eksbuild.1"
TRAINING_OPERATOR_TROUBLESHOOTING = "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-operator-troubleshooting.html"
#: Task governance v1.6.0-eksbuild.1 packages Kueue v0.19.2
#: (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate-console-ui-governance-upgrade.html).
#: Which Kubernetes versions this add-on version supports is not published there (``aws eks describe-addon-versions``
#: answers it for an account): R-EKS-11 warns.
TASK_GOVERNANCE = Addon(
    "amazon-sagemaker-hyperpod-taskgovernance", "v1.6.0-eksbuild.1", True,
    "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate-console-ui-governance-upgrade.html",
)
#: The Kueue release each task governance add-on version packages (same page: "Version v1.6.0-eksbuild.1 packages
#: Kueue v0.19.2"). The one home of the pairing: :data:`KUEUE_VERSION` is read from it.
TASK_GOVERNANCE_KUEUE = {"v1.6.0-eksbuild.1": "v0.19.2"}
#: The SageMaker HyperPod observability add-on: DCGM, node, Kubernetes and training-operator metrics through an
#: OpenTelemetry collector that remote-writes to an Amazon Managed Service for Prometheus workspace. Its pods need a node
#: ("Ensure that you have at least one node in your SageMaker HyperPod cluster before installing":
#: https://docs.aws.amazon.com/sagemaker/latest/dg/hyperpod-observability-addon-setup.html) and the EKS Pod Identity
#: agent (same page). Version floats (EKS default): no version table was found.
OBSERVABILITY = Addon(
    "amazon-sagemaker-hyperpod-observability", None, True,
    "https://docs.aws.amazon.com/sagemaker/latest/dg/hyperpod-observability-addon-setup.html",
)


@dataclass(frozen=True)
class PodIdentity:
    """The Pod Identity association an add-on needs (``AWS::EKS::Addon`` ``PodIdentityAssociations``): the
    ``service_account`` (in ``namespace``) whose pods get a role trusted by ``pods.eks.amazonaws.com``, the AWS managed
    policies and the inline actions that role gets, and the ``source`` of these facts."""

    namespace: str
    service_account: str
    managed_policies: tuple[str, ...]
    actions: tuple[str, ...]
    source: str


#: The observability add-on's collector: namespace, service account and the role's permissions (``aps:RemoteWrite`` on
#: the workspace; CloudWatch Logs on ``/aws/sagemaker/Clusters/*``) and trust (``pods.eks.amazonaws.com``,
#: ``sts:AssumeRole`` + ``sts:TagSession``, conditions aws:SourceArn = the EKS cluster, aws:SourceAccount):
#: https://docs.aws.amazon.com/sagemaker/latest/dg/hyperpod-observability-addon-troubleshooting.html ("Verify Pod Identity
#: association").
OBSERVABILITY_IDENTITY = PodIdentity(
    "hyperpod-observability", "hyperpod-observability-operator-otel-collector", (),
    ("aps:RemoteWrite",),
    "https://docs.aws.amazon.com/sagemaker/latest/dg/hyperpod-observability-addon-troubleshooting.html",
)
#: CloudWatch Logs actions of the observability role (same page), on log groups ``/aws/sagemaker/Clusters/*``.
OBSERVABILITY_LOG_ACTIONS = (
    "logs:CreateLogGroup", "logs:CreateLogStream", "logs:DescribeLogGroups", "logs:DescribeLogStreams",
    "logs:PutLogEvents", "logs:GetLogEvents", "logs:FilterLogEvents", "logs:GetLogRecord", "logs:StartQuery",
    "logs:StopQuery", "logs:GetQueryResults",
)
OBSERVABILITY_LOG_GROUPS = "/aws/sagemaker/Clusters/*"
#: The training operator's controller: namespace ``aws-hyperpod``, service account
#: ``hp-training-operator-controller-manager``, AWS managed policy ``AmazonSageMakerHyperPodTrainingOperatorAccess``.
#: Source: aws-samples/awsome-distributed-training ``1.architectures/7.sagemaker-hyperpod-eks/terraform-modules/
#: hyperpod-eks-tf/modules/hyperpod_training_operator/main.tf`` (a sample, not an AWS reference page: NOT VERIFIED
#: against the SageMaker guide, which names the association only in its console flow).
TRAINING_OPERATOR_IDENTITY = PodIdentity(
    "aws-hyperpod", "hp-training-operator-controller-manager", ("AmazonSageMakerHyperPodTrainingOperatorAccess",), (),
    "aws-samples/awsome-distributed-training 1.architectures/7.sagemaker-hyperpod-eks/terraform-modules/hyperpod-eks-tf/"
    "modules/hyperpod_training_operator/main.tf",
)
#: Metric categories of the observability add-on's ``metricsProvider`` configuration and the level fmcluster sets
#: (``BASIC``, ``ADVANCED`` or ``DISABLED``). Category names and levels: aws-samples/awsome-distributed-training
#: ``1.architectures/7.sagemaker-hyperpod-eks/terraform-modules/hyperpod-eks-tf/modules/observability/eks_addon.tf`` and
#: ``variables.tf`` (NOT VERIFIED against the add-on's configuration schema, ``aws eks describe-addon-configuration``:
#: R-EKS-9 warns). Network metrics are the EFA exporter's and off by default ("Network metrics | EFA | ... | No |
#: Elastic Fabric Adapter"; "EFA Exporter runs on EFA-enabled restricted nodes when advanced mode is enabled":
#: https://docs.aws.amazon.com/sagemaker/latest/dg/hyperpod-observability-cluster-metrics.html); the same sample's
#: README (``1.architectures/7.sagemaker-hyperpod-eks/terraform-modules/README.md``) lists only ``DISABLED, ADVANCED`` for
#: the network and task governance levels, no ``BASIC``. fmcluster turns the network category on (its clusters are
#: EFA clusters) at ``ADVANCED``, the one level both sources name for it; the EFA alert rules'
#: ``EfaMetricsAbsent`` fires if no EFA series arrives all the same.
OBSERVABILITY_METRIC_LEVELS = {
    "trainingMetrics": "BASIC",
    "customMetrics": "BASIC",
    "nodeMetrics": "BASIC",
    "acceleratedComputeMetrics": "BASIC",
    "networkMetrics": "ADVANCED",
}
#: Task governance metrics, on when the task governance add-on is installed (off by default, same page; levels
#: ``DISABLED, ADVANCED`` per the sample's README, so ``ADVANCED``).
OBSERVABILITY_TASK_GOVERNANCE_LEVEL = "ADVANCED"

#: The Kueue version the pinned task governance add-on installs; the rendered Kueue objects and the vendored Kueue CRDs
#: are of this version.
KUEUE_VERSION = TASK_GOVERNANCE_KUEUE[TASK_GOVERNANCE.version or ""]

#: The Kueue API group and the version of it fmcluster's manifests use (``kueue/*.yaml``), and the version of Kueue's
#: ``Configuration`` it merges (``config.kueue.x-k8s.io``). Why v1beta2: it is the storage version from Kueue v0.16
#: (kubernetes-sigs/kueue issue #8018) and the only one served from v0.20 ("make served=false for v1beta1 in 0.20 ...
#: drop v1beta1 entirely in 0.21": issue #13957, done in PR #14558), so manifests in v1beta2 survive the task governance
#: upgrades to come; v1beta1 manifests would stop applying at Kueue v0.20. The migration path for objects created in
#: v1beta1 before: the API server converts stored objects (both versions served up to v0.19), and
#: ``kubectl get <kind> -o yaml`` reads them back in v1beta2.
KUEUE_API_GROUP = "kueue.x-k8s.io"
KUEUE_API_VERSION = "v1beta2"
KUEUE_CONFIG_API_GROUP = "config.kueue.x-k8s.io"
KUEUE_CONFIG_API_VERSION = "v1beta2"


@dataclass(frozen=True)
class KueueRelease:
    """What one Kueue release serves: ``served`` maps each Kueue kind fmcluster renders to the API versions its CRD
    serves (``spec.versions[].served``), ``config_versions`` the ``Configuration`` API versions its controller decodes;
    ``source`` names the files read."""

    version: str
    served: dict[str, tuple[str, ...]]
    config_versions: tuple[str, ...]
    source: str


def _crds(tag: str) -> str:
    return (f"kubernetes-sigs/kueue config/components/crd/bases/kueue.x-k8s.io_{{resourceflavors,clusterqueues,"
            f"localqueues,topologies,workloadpriorityclasses}}.yaml and apis/config/ at tag {tag}")


#: Kueue releases by tag, read from their CRDs (``spec.versions[].served``) and ``apis/config/`` directories: the
#: release task governance installs and the one the training operator's page recommends.
KUEUE_RELEASES = {
    "v0.12.3": KueueRelease(
        "v0.12.3",
        {"ResourceFlavor": ("v1beta1",), "ClusterQueue": ("v1beta1",), "LocalQueue": ("v1beta1",),
         "Topology": ("v1alpha1",), "WorkloadPriorityClass": ("v1beta1",)},
        ("v1beta1",), _crds("v0.12.3")),
    "v0.19.2": KueueRelease(
        "v0.19.2",
        {kind: ("v1beta1", "v1beta2") for kind in
         ("ResourceFlavor", "ClusterQueue", "LocalQueue", "Topology", "WorkloadPriorityClass")},
        ("v1beta1", "v1beta2"), _crds("v0.19.2") + " (cmd/kueue/main.go registers config v1beta1 and v1beta2)"),
}


def kueue_serves(release: str, kind: str, api_version: str) -> bool:
    """True when Kueue ``release`` (a key of :data:`KUEUE_RELEASES`) serves ``api_version`` (``group/version``) for
    ``kind``: a ``kueue.x-k8s.io`` kind by its CRD, ``Configuration`` of ``config.kueue.x-k8s.io`` by its controller.
    False for a release, kind or group the table does not hold (not known to serve is not served)."""
    known = KUEUE_RELEASES.get(release)
    group, _, version = api_version.partition("/")
    if known is None:
        return False
    if group == KUEUE_CONFIG_API_GROUP and kind == "Configuration":
        return version in known.config_versions
    return group == KUEUE_API_GROUP and version in known.served.get(kind, ())


#: The first Kueue release that serves v1beta2 ("v1beta2: Expose the v1beta2 API for CRD serving":
#: kubernetes-sigs/kueue PR #7304, released in v0.15.0; its CRDs at tag v0.15.0 serve v1beta1 and v1beta2).
KUEUE_FIRST_V1BETA2 = "v0.15.0"
#: Kueue topology-aware scheduling is beta and on by default from v0.14 (kubernetes-sigs/kueue
#: site/content/en/docs/concepts/topology_aware_scheduling.md); fmcluster's Topology needs at least this.
KUEUE_TAS_DEFAULT_ON = (0, 14)

#: The HyperPod dependency Helm chart (health-monitoring agent, NVIDIA and EFA device plugins, Kubeflow training
#: operator, MPI operator, cert-manager, RBAC for HyperPod): aws/sagemaker-hyperpod-cli ``helm_chart/HyperPodHelmChart``
#: (chart version 0.1.0 at every commit, so pinned by commit). "Before creating a SageMaker HyperPod cluster and
#: attaching it to an Amazon EKS cluster, you should install packages using Helm ... The aws-hyperpod namespace name
#: cannot be modified": https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-install-packages-using-helm-chart.html
HELM_CHART_REPO = "https://github.com/aws/sagemaker-hyperpod-cli.git"
HELM_CHART_COMMIT = "011ca927123e02b35a399935bbb3ab1905fe33c7"  # 2026-06-22; the vendored PyTorchJob/MPIJob CRDs are from it
HELM_CHART_PATH = "helm_chart/HyperPodHelmChart"
HELM_RELEASE = "hyperpod-dependencies"
HELM_NAMESPACE = "kube-system"
#: Sub-chart versions at that commit (its Chart.yaml): cert-manager v1.18.2 (oci://quay.io/jetstack/charts, off by
#: default in values.yaml: the install script turns it on), nvidia-device-plugin 0.16.1, aws-efa-k8s-device-plugin
#: 0.5.20, mpi-operator (MPIJob v2beta1 of kubeflow/mpi-operator v0.5.0), training-operators (Kubeflow, image
#: kubeflow/training-operator:v1-855e096, PyTorchJob), health-monitoring-agent 0.1.0 (local sub-charts).
HELM_CHART_DEPENDENCIES = {
    "cert-manager": "v1.18.2",
    "nvidia-device-plugin": "0.16.1",
    "aws-efa-k8s-device-plugin": "0.5.20",
    "health-monitoring-agent": "0.1.0",
    "mpi-operator": "0.1.0",
    "training-operators": "0.1.0",
}

#: Interface VPC endpoints of a private HyperPod EKS cluster (service suffix after ``com.amazonaws.<region>.``):
#: SageMaker API and EKS Auth ("If you run your HyperPod cluster nodes in a private VPC, you must set up PrivateLinks
#: VPC endpoints for the Amazon SageMaker AI API (com.amazonaws.aws-region.sagemaker.api) and Amazon EKS Auth services
#: (com.amazonaws.aws-region.eks-auth)": sagemaker-eks-operator-install.html); EKS, ECR API/DKR, STS and CloudWatch
#: Logs for nodes without internet access (https://docs.aws.amazon.com/eks/latest/userguide/private-clusters.html).
#: S3 is the network stack's gateway endpoint.
INTERFACE_ENDPOINTS = ("sagemaker.api", "eks", "eks-auth", "ecr.api", "ecr.dkr", "sts", "logs")

#: Node labels on EKS nodes: the instance type and the network topology layers ("topology.k8s.aws/network-node-layer-1
#: ... The top of the network hierarchy. The broadest grouping"; layer 3 "the bottom layer for most supported instance
#: types"; a layer 4 exists only on types with four layers: https://docs.aws.amazon.com/eks/latest/userguide/ml-workload-topology.html).
#: Kueue's Topology lists levels from the widest to the narrowest; the hostname level lets a job pack one node.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
TOPOLOGY_LEVELS = (
    "topology.k8s.aws/network-node-layer-1",
    "topology.k8s.aws/network-node-layer-2",
    "topology.k8s.aws/network-node-layer-3",
    "kubernetes.io/hostname",
)
#: Extended resources of the device plugins: ``nvidia.com/gpu`` (NVIDIA k8s-device-plugin) and
#: ``vpc.amazonaws.com/efa`` (aws-efa-k8s-device-plugin; https://docs.aws.amazon.com/eks/latest/userguide/node-efa.html).
GPU_RESOURCE = "nvidia.com/gpu"
EFA_RESOURCE = "vpc.amazonaws.com/efa"


def version_tuple(version: str) -> tuple[int, ...]:
    """``v1.20.1-eksbuild.3`` -> ``(1, 20, 1)``."""
    core = version.lstrip("v").split("-")[0]
    return tuple(int(p) for p in core.split(".") if p.isdigit())
