"""HyperPod EKS with the EKS cluster fmcluster creates: the rules (tables: blueprint fragment -> path, message, rule),
the control-plane subnet arithmetic, and the synthesized ``<name>-eks`` and cluster stacks of the example."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.catalog import eks as cat
from fmcluster.orchestrators.hyperpod_eks.plan import control_plane_cidrs
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint_text
from tests.blueprints import DROP, blueprint_text, example, merge
from tests.conftest import ROOT, resources_of, synth_templates

ARN = "arn:aws:eks:us-east-1:123456789012:cluster/training"
ADMIN = "arn:aws:iam::123456789012:role/eks-admins"
NET = {"vpc_id": "vpc-0123456789abcdef0", "gpu_subnet_id": "subnet-0123456789abcdef0"}
EKS = "orchestrator.hyperpod.eks"


def _eks(**eks: Any) -> dict[str, Any]:
    return {"orchestrator": {"kind": "hyperpod", "hyperpod": {"orchestration": "eks", "eks": eks}}}


def _import(arn: str = ARN, **extra: Any) -> dict[str, Any]:
    return {"orchestrator": {"kind": "hyperpod", "hyperpod": {"orchestration": "eks", "eks_cluster_arn": arn}}, **extra}


CREATE_OK = _eks(admin_role_arn=ADMIN, control_plane_availability_zone="us-east-1b", api_access_cidrs=["10.0.0.0/16"])


#: The rules about the metrics collector (observability add-on), tabled apart from the EKS cluster's own rules.
METRICS_RULES = ("R-EKS-7", "R-EKS-8", "R-EKS-9")
#: The rules about versions and permissions AWS does not document (Kueue, task governance, the operator's policy,
#: the add-on pins' Kubernetes versions).
VERSION_RULES = ("R-EKS-11", "R-EKS-12", "R-EKS-13")


def _problems(*patches: dict[str, Any], base: dict[str, Any],
              rules: tuple[str, ...] | None = None) -> list[tuple[str, str, str | None]]:
    """Errors (all), or the R-EKS warnings: ``rules`` when given, else every R-EKS rule but :data:`METRICS_RULES` and
    :data:`VERSION_RULES`."""
    text = blueprint_text(*patches, base=base)
    try:
        loaded = load_blueprint_text(text)
    except BlueprintError as e:
        return [(p.path, p.message, p.rule_id) for p in e.errors]
    return [(p.path, p.message, p.rule_id) for p in loaded.warnings if p.rule_id and p.rule_id.startswith("R-EKS")
            and (p.rule_id in rules if rules is not None else p.rule_id not in METRICS_RULES + VERSION_RULES)]


@pytest.mark.parametrize(("patch", "expected"), [
    (_eks(control_plane_availability_zone="us-east-1b"),
     [(f"{EKS}.admin_role_arn", "required when fmcluster creates the EKS cluster (authentication mode API, no other "
       "admin), got nothing; allowed an IAM role ARN such as arn:aws:iam::123456789012:role/eks-admins", "R-EKS-1")]),
    (_import("arn:aws:eks:us-west-2:123456789012:cluster/training", network=NET),
     [("orchestrator.hyperpod.eks_cluster_arn", "EKS cluster in another Region, got 'us-west-2' "
       "(arn:aws:eks:us-west-2:123456789012:cluster/training); allowed a cluster in us-east-1, or no eks_cluster_arn "
       "(fmcluster creates one)", "R-EKS-2")]),
    (_import(),
     [("orchestrator.hyperpod.eks_cluster_arn", f"an existing EKS cluster cannot be in the VPC this blueprint creates, "
       f"got {ARN} with no network.vpc_id; allowed network.vpc_id and network.gpu_subnet_id of the cluster's VPC, or no "
       "eks_cluster_arn (fmcluster creates the cluster in its VPC)", "R-EKS-2")]),
    ({**_import(network=NET), "orchestrator": {"kind": "hyperpod", "hyperpod": {
        "orchestration": "eks", "eks_cluster_arn": ARN, "eks": {"admin_role_arn": ADMIN}}}},
     [(EKS, f"settings for a cluster fmcluster creates are ignored with an existing cluster, got eks_cluster_arn {ARN}; "
       f"allowed one of eks_cluster_arn or {EKS}", "R-EKS-2")]),
    (_eks(admin_role_arn=ADMIN),
     [(f"{EKS}.control_plane_availability_zone", "the EKS control-plane subnets need two Availability Zones, got none "
       "besides us-east-1a; allowed an AZ name of us-east-1 such as us-east-1b other than us-east-1a", "R-EKS-3")]),
    (_eks(admin_role_arn=ADMIN, control_plane_availability_zone="us-east-1a"),
     [(f"{EKS}.control_plane_availability_zone", "same AZ as the GPU subnet, got 'us-east-1a'; allowed an AZ name of "
       "us-east-1 such as us-east-1b other than us-east-1a", "R-EKS-3")]),
    (_eks(admin_role_arn=ADMIN, control_plane_availability_zone="use1-az4"),
     [(f"{EKS}.control_plane_availability_zone", "not an AZ name of us-east-1 such as us-east-1b, got 'use1-az4'; "
       "allowed an AZ name of us-east-1 such as us-east-1b other than us-east-1a", "R-EKS-3")]),
    (_eks(admin_role_arn=ADMIN, control_plane_availability_zone="us-west-2b"),
     [(f"{EKS}.control_plane_availability_zone", "not an AZ name of us-east-1 such as us-east-1b, got 'us-west-2b'; "
       "allowed an AZ name of us-east-1 such as us-east-1b other than us-east-1a", "R-EKS-3")]),
    ({**_eks(admin_role_arn=ADMIN, control_plane_subnet_ids=["subnet-0123456789abcdef1"]), "network": NET},
     [(f"{EKS}.control_plane_subnet_ids", "the EKS control-plane subnets need two Availability Zones, got 1 subnet(s) "
       "with an imported VPC; allowed at least two subnet ids in different AZs of network.vpc_id", "R-EKS-3")]),
    ({**CREATE_OK, "network": {"vpc_cidr": "10.0.0.0/20", "gpu_subnet_prefix_length": 21}},
     [("network.vpc_cidr", "no room for the two /28 EKS control-plane subnets after the public /24 and the /21 GPU "
       "subnet, got 10.0.0.0/20; allowed a larger VPC or a smaller network.gpu_subnet_prefix_length", "R-EKS-3")]),
    (merge(CREATE_OK, {"orchestrator": {"hyperpod": {"eks": {"kubernetes_version": "1.34"}}}}),
     [(f"{EKS}.kubernetes_version", "the HyperPod training operator does not support Kubernetes 1.34, got '1.34'; "
       "allowed 1.28, 1.29, 1.30, 1.31, 1.32, 1.33, or training_operator: false", "R-EKS-5")]),
    ({**CREATE_OK, "compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 2, "efa": False}]},
     [("compute[0].efa", "EFA is off on p5.48xlarge (32 EFA devices), so its job templates request no "
       "vpc.amazonaws.com/efa and NCCL runs over TCP, got efa off; allowed EFA on (the default)", "R-EKS-4")]),
    (merge(CREATE_OK, {"orchestrator": {"hyperpod": {"eks": {"public_access_cidrs": ["0.0.0.0/0"]}}}}),
     [(f"{EKS}.public_access_cidrs[0]", "the Kubernetes API endpoint is open to the whole internet, got '0.0.0.0/0'; "
       "allowed your own address ranges (e.g. 203.0.113.7/32), or none for a private endpoint", "R-EKS-6")]),
    (merge(CREATE_OK, {"orchestrator": {"hyperpod": {"eks": {"api_access_cidrs": []}}}}),
     [(f"{EKS}.api_access_cidrs", "nothing outside the cluster's nodes reaches the private Kubernetes API endpoint, so "
       "kubectl and the Helm step have no place to run from, got no api_access_cidrs, api_access_security_group_ids or "
       "public_access_cidrs; allowed your VPN or bastion network (e.g. 10.0.0.0/16 for hosts in the VPC) or an admin "
       "security group", "R-EKS-10")]),
])
def test_eks_rules(patch: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    base = {**example("hyperpod-eks"), "orchestrator": {"kind": "hyperpod", "hyperpod": {"orchestration": "eks"}}}
    assert _problems(patch, base=base) == expected


OBS = "observability.metrics"
ADDON_UNVERIFIED = (
    OBS, "the amazon-sagemaker-hyperpod-observability add-on's configuration keys (ampWorkspace, metricsProvider), the "
    "label that names the node on its series and whether its network level runs the EFA exporter are taken from AWS "
    "samples, not verified; fmcluster evaluates its DCGM GPU, EFA exporter and node exporter alerts there (no Slurm, "
    "node-check or acceptance alert), got 'managed'; allowed managed: after deploy check the add-on is ACTIVE (aws eks "
    "describe-addon), the Watchdog mail arrives and EfaMetricsAbsent does not fire", "R-EKS-9")


@pytest.mark.parametrize(("patch", "expected"), [
    ({}, [ADDON_UNVERIFIED]),
    ({"observability": {"metrics": "none", "alert_email": DROP}},
     [(OBS, "GPUs and EFA are unwatched on HyperPod EKS: no observability add-on, no alert on a failing GPU or network "
       "card, got 'none'; allowed managed (the HyperPod observability add-on writes to an Amazon Managed Prometheus "
       "workspace with fmcluster's alert rules and receiver)", "R-EKS-7")]),
    ({"observability": {"metrics": "self_hosted"}},
     [(OBS, "self-hosted Prometheus needs a head node, which HyperPod EKS does not have, got 'self_hosted'; allowed "
       "managed (the HyperPod observability add-on writes to Amazon Managed Prometheus) or none", "R-EKS-8")]),
    ({**_import(network=NET), "orchestrator": {"hyperpod": {"eks": DROP, "eks_cluster_arn": ARN}}},
     [(OBS, "fmcluster installs no add-on on an existing EKS cluster, so nothing writes to the workspace it creates and "
       f"GPUs and EFA are unwatched, got 'managed' with eks_cluster_arn {ARN}; allowed managed after installing "
       "amazon-sagemaker-hyperpod-observability on that cluster with the workspace of stack output RemoteWriteUrl "
       "(docs/kubernetes.md)", "R-EKS-7")]),
])
def test_metrics_rules(patch: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    assert _problems(patch, base=example("hyperpod-eks"), rules=METRICS_RULES) == expected


TG = f"{EKS}.task_governance"
TG_K8S = (TG, "AWS lists no Kubernetes versions for task governance v1.6.0-eksbuild.1 (Kueue v0.19.2), so its support "
          "of Kubernetes 1.33 is not confirmed, got '1.33'; allowed '1.33' after `aws eks describe-addon-versions "
          "--addon-name amazon-sagemaker-hyperpod-taskgovernance --kubernetes-version 1.33` lists v1.6.0-eksbuild.1",
          "R-EKS-11")
OPERATOR_KUEUE = (
    f"{EKS}.training_operator", "the training operator's page recommends Kueue v0.12.2 and v0.12.3 (serving "
    "kueue.x-k8s.io/v1beta1, not v1beta2), while task governance v1.6.0-eksbuild.1 installs Kueue v0.19.2; AWS documents "
    "no test of the operator with it, only task governance >= v1.3.0-eksbuild.1, got training_operator with Kueue "
    "v0.19.2; allowed training_operator: true after a first PyTorchJob runs, or training_operator: false (jobs use the "
    "Kubeflow operators of the HyperPod Helm chart)", "R-EKS-11")
OPERATOR_TAG = (
    f"{EKS}.training_operator", "whether AmazonSageMakerHyperPodTrainingOperatorAccess acts only on resources tagged "
    "SageMaker=true is not verified (two samples tag the HyperPod cluster so), so the operator may be refused "
    "sagemaker:DescribeClusterNode on this cluster, got tags team=research; allowed tags: SageMaker: \"true\" on "
    "the blueprint (every resource gets it), or check the policy's conditions (aws iam get-policy-version --policy-arn "
    "arn:aws:iam::aws:policy/AmazonSageMakerHyperPodTrainingOperatorAccess --version-id <default>)", "R-EKS-12")
NEED_KUEUE = ("the rendered kueue/ manifests need a Kueue that serves kueue.x-k8s.io/v1beta2 (from v0.15.0), and {why}, "
              "got no Kueue fmcluster can vouch for; allowed a Kueue that serves kueue.x-k8s.io/v1beta2 (from v0.15.0) "
              "installed before applying them (task governance v1.6.0-eksbuild.1 installs v0.19.2)")


@pytest.mark.parametrize(("patch", "expected"), [
    ({}, [TG_K8S, OPERATOR_KUEUE, OPERATOR_TAG]),
    ({"tags": {"SageMaker": "true"}}, [TG_K8S, OPERATOR_KUEUE]),
    ({"orchestrator": {"hyperpod": {"eks": {"training_operator": False}}}}, [TG_K8S]),
    ({"orchestrator": {"hyperpod": {"eks": {"task_governance": False}}}},
     [OPERATOR_TAG, (TG, NEED_KUEUE.format(why="task_governance is off, so fmcluster installs no Kueue"), "R-EKS-11")]),
    ({**_import(network=NET), "orchestrator": {"hyperpod": {"eks": DROP, "eks_cluster_arn": ARN}}},
     [("orchestrator.hyperpod.eks_cluster_arn",
       NEED_KUEUE.format(why="fmcluster installs no add-on on an existing EKS cluster"), "R-EKS-11")]),
])
def test_version_rules(patch: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    assert _problems(patch, base=example("hyperpod-eks"), rules=VERSION_RULES) == expected


CNI_1_34 = (
    f"{EKS}.kubernetes_version", "the pinned vpc-cni v1.20.1-eksbuild.3 is documented for Kubernetes 1.27, 1.28, 1.29, "
    "1.30, 1.31, 1.32, 1.33 only (https://docs.aws.amazon.com/eks/latest/userguide/managing-vpc-cni.html), so EKS may "
    "refuse it on 1.34 and fail <name>-eks, got '1.34'; allowed 1.27, 1.28, 1.29, 1.30, 1.31, 1.32, 1.33, or '1.34' "
    "after `aws eks describe-addon-versions --addon-name vpc-cni --kubernetes-version 1.34` lists v1.20.1-eksbuild.3",
    "R-EKS-13")


@pytest.mark.parametrize(("patch", "expected"), [
    ({}, []),                                                                            # the default, 1.33
    ({"orchestrator": {"hyperpod": {"eks": {"kubernetes_version": "1.32"}}}}, []),
    ({"orchestrator": {"hyperpod": {"eks": {"kubernetes_version": "1.34", "training_operator": False}}}}, [CNI_1_34]),
    # an existing cluster: fmcluster pins none of its add-ons
    ({**_import(network=NET), "orchestrator": {"hyperpod": {"eks": DROP, "eks_cluster_arn": ARN}}}, []),
])
def test_pinned_addon_kubernetes_versions(patch: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    assert _problems(patch, base=example("hyperpod-eks"), rules=("R-EKS-13",)) == expected


def test_valid_variants_have_no_eks_problems() -> None:
    base = {**example("hyperpod-eks"), "orchestrator": {"kind": "hyperpod", "hyperpod": {"orchestration": "eks"}}}
    assert _problems(CREATE_OK, base=base) == []
    # any one way in silences R-EKS-10
    for way in ({"public_access_cidrs": ["203.0.113.7/32"]}, {"api_access_security_group_ids": ["sg-0123456789abcdef0"]}):
        assert _problems(merge(CREATE_OK, {"orchestrator": {"hyperpod": {"eks": {"api_access_cidrs": [], **way}}}}),
                         base=base) == []
    # an imported VPC names its control-plane subnets; an existing cluster in an existing VPC of the Region
    assert _problems({**_eks(admin_role_arn=ADMIN, api_access_cidrs=["10.0.0.0/16"], control_plane_subnet_ids=[
        "subnet-0123456789abcdef1", "subnet-0123456789abcdef2"]), "network": NET}, base=base) == []
    assert _problems(_import(network=NET), base=base) == []
    # placed by AZ ID: the control-plane AZ is an AZ ID too
    by_id = {"availability_zone": DROP, "availability_zone_id": "use1-az6",
             "orchestrator": {"hyperpod": {"eks": {"control_plane_availability_zone": "use1-az4"}}}}
    assert _problems(CREATE_OK, by_id, base=base) == []


def test_cidr_and_name_shapes_are_refused_with_hints() -> None:
    text = blueprint_text(_eks(admin_role_arn="role/eks", public_access_cidrs=["10.0.0.1/8"],
                               api_access_cidrs=["10.0.0.0/16", "vpn"], api_access_security_group_ids=["sg-12"]),
                          base=example("hyperpod-eks"))
    with pytest.raises(BlueprintError) as e:
        load_blueprint_text(text)
    by_path = {p.path: p.message for p in e.value.errors}
    assert "an IAM role ARN such as" in by_path[f"{EKS}.admin_role_arn"]
    assert "not IPv4 network CIDRs, got '10.0.0.1/8'" in by_path[f"{EKS}.public_access_cidrs"]
    assert "not IPv4 network CIDRs, got 'vpn'" in by_path[f"{EKS}.api_access_cidrs"]
    assert "sg- followed by 8 or 17 hex digits" in by_path[f"{EKS}.api_access_security_group_ids[0]"], by_path


@pytest.mark.parametrize(("vpc", "gpu", "expected"), [
    ("10.0.0.0/16", 20, ("10.0.255.224/28", "10.0.255.240/28")),
    ("10.1.0.0/20", 22, ("10.1.15.224/28", "10.1.15.240/28")),
    ("10.0.0.0/20", 21, None),       # public /24 at 0, GPU /21 at 2048: the VPC is full
    ("10.0.0.0/24", 25, None),       # the public /24 fills the VPC
])
def test_control_plane_subnets_take_the_end_of_a_new_vpc(vpc: str, gpu: int, expected: tuple[str, str] | None) -> None:
    assert control_plane_cidrs(vpc, gpu) == expected


def test_imported_cluster_gets_no_addons_and_no_eks_stack() -> None:
    text = blueprint_text({"orchestrator": {"hyperpod": {"eks": DROP}}}, _import(network=NET), base=example("hyperpod-eks"))
    rc = resolve(load_blueprint_text(text).blueprint)
    assert rc.eks is not None and not rc.eks.creates_cluster and rc.eks.cluster_name == "training"
    assert rc.eks.addons_before_nodes == () and rc.eks.addons_after_nodes == ()
    assert rc.stacks.eks is None and "hp-eks-eks" not in rc.stacks.all()


# ---- synthesized example ----------------------------------------------------------------------------------------
@cache
def _templates() -> dict[str, dict[str, Any]]:

    return synth_templates((ROOT / "blueprints" / "hyperpod-eks.yaml").read_text())


def test_stacks_of_the_example() -> None:
    assert sorted(_templates()) == ["hp-eks-addons", "hp-eks-cluster", "hp-eks-eks", "hp-eks-network",
                                    "hp-eks-observability", "hp-eks-storage"]


def test_eks_cluster_is_private_api_authenticated_and_pinned() -> None:
    (cluster,) = resources_of(_templates()["hp-eks-eks"], "AWS::EKS::Cluster").values()
    p = cluster["Properties"]
    assert p["Name"] == "hp-eks" and p["Version"] == "1.33"
    assert p["AccessConfig"] == {"AuthenticationMode": "API", "BootstrapClusterCreatorAdminPermissions": False}
    vpc = p["ResourcesVpcConfig"]
    assert vpc["EndpointPrivateAccess"] is True and vpc["EndpointPublicAccess"] is False
    assert "PublicAccessCidrs" not in vpc
    assert len(vpc["SubnetIds"]) == 2 and len(vpc["SecurityGroupIds"]) == 1
    assert [t["Type"] for t in p["Logging"]["ClusterLogging"]["EnabledTypes"]] == [
        "api", "audit", "authenticator", "controllerManager", "scheduler"]


def test_api_access_admits_443_on_the_cluster_security_group() -> None:
    tpl = _templates()["hp-eks-eks"]
    (cluster_id,) = resources_of(tpl, "AWS::EKS::Cluster")
    (rule,) = resources_of(tpl, "AWS::EC2::SecurityGroupIngress").values()
    p = rule["Properties"]
    assert p["GroupId"] == {"Fn::GetAtt": [cluster_id, "ClusterSecurityGroupId"]}
    assert (p["IpProtocol"], p["FromPort"], p["ToPort"], p["CidrIp"]) == ("tcp", 443, 443, "10.0.0.0/16")
    (command,) = [o["Value"] for k, o in tpl["Outputs"].items() if k.startswith("EksKubeconfigCommand")]
    assert command == (
        "aws eks update-kubeconfig --region us-east-1 --name hp-eks --role-arn arn:aws:iam::123456789012:role/eks-admins")


def test_control_plane_subnets_are_in_two_azs() -> None:
    subnets = resources_of(_templates()["hp-eks-eks"], "AWS::EC2::Subnet")
    got = sorted((s["Properties"]["CidrBlock"], s["Properties"]["AvailabilityZone"]) for s in subnets.values())
    assert got == [("10.0.255.224/28", "us-east-1a"), ("10.0.255.240/28", "us-east-1b")]


def test_admin_access_entry_and_no_execution_role_entry() -> None:
    entries = resources_of(_templates()["hp-eks-eks"], "AWS::EKS::AccessEntry")
    (entry,) = entries.values()  # HyperPod creates the execution role's own entry (API_ClusterMetadata)
    p = entry["Properties"]
    assert p["PrincipalArn"] == "arn:aws:iam::123456789012:role/eks-admins" and p["Type"] == "STANDARD"
    (policy,) = p["AccessPolicies"]
    assert policy["AccessScope"] == {"Type": "cluster"}
    assert json.dumps(policy["PolicyArn"]).endswith(':eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"]]}')


def test_addons_before_and_after_the_worker_groups() -> None:
    before = {r["Properties"]["AddonName"]: r["Properties"].get("AddonVersion")
              for r in resources_of(_templates()["hp-eks-eks"], "AWS::EKS::Addon").values()}
    assert before == {"vpc-cni": "v1.20.1-eksbuild.3", "kube-proxy": None, "eks-pod-identity-agent": None}
    assert cat.version_tuple(before["vpc-cni"] or "") >= cat.MIN_VPC_CNI
    after = resources_of(_templates()["hp-eks-addons"], "AWS::EKS::Addon")
    names = [r["Properties"]["AddonName"] for r in after.values()]
    assert names == ["coredns", "amazon-sagemaker-hyperpod-training-operator",
                     "amazon-sagemaker-hyperpod-taskgovernance", "amazon-sagemaker-hyperpod-observability"]
    # one at a time, in that order (an add-on with a Pod Identity role also waits for the role and its policy, or for
    # its standalone association)
    ids = list(after)
    assert all(prev in (after[i].get("DependsOn") or []) for prev, i in zip(ids, ids[1:], strict=False))
    assert all(set(after[i].get("DependsOn") or []) - {prev} <= {d for d in after[i].get("DependsOn") or []
                                                                if "role" in d.lower() or "podidentity" in d.lower()}
               for prev, i in zip(ids, ids[1:], strict=False))
    assert all(r["Properties"]["ClusterName"] == "hp-eks" for r in after.values())
    versions = {r["Properties"]["AddonName"]: r["Properties"].get("AddonVersion") for r in after.values()}
    assert versions["amazon-sagemaker-hyperpod-taskgovernance"] == "v1.6.0-eksbuild.1"


def test_an_addon_failure_cannot_roll_back_the_hyperpod_cluster() -> None:
    """The HyperPod cluster and the add-ons that need nodes are in different stacks, and the add-ons' stack is
    deployed after the cluster's: a failed add-on rolls back <name>-addons only (docs/decisions.md 50)."""
    templates = _templates()
    holding = {name: sorted({r["Type"] for r in t["Resources"].values()} & {"AWS::SageMaker::Cluster", "AWS::EKS::Addon"})
               for name, t in templates.items()}
    assert holding["hp-eks-cluster"] == ["AWS::SageMaker::Cluster"]
    assert holding["hp-eks-addons"] == ["AWS::EKS::Addon"]
    assert holding["hp-eks-eks"] == ["AWS::EKS::Addon"]  # the node add-ons, which need no node, come before HyperPod
    assert all(holding[n] == [] for n in ("hp-eks-network", "hp-eks-storage", "hp-eks-observability"))


def test_addons_stack_deploys_after_the_cluster_stack() -> None:
    import aws_cdk as cdk

    from fmcluster.stacks.build import build_app
    from tests.conftest import cdk_context

    app = cdk.App(context=cdk_context())
    stacks = build_app(app, load_blueprint_text((ROOT / "blueprints" / "hyperpod-eks.yaml").read_text()).blueprint)
    assert stacks.addons is not None
    assert stacks.cluster in stacks.addons.dependencies
    assert stacks.addons not in stacks.cluster.dependencies


def _addon(name: str) -> dict[str, Any]:
    (addon,) = [r for r in resources_of(_templates()["hp-eks-addons"], "AWS::EKS::Addon").values()
                if r["Properties"]["AddonName"] == name]
    return addon


def _association(addon: dict[str, Any]) -> dict[str, Any]:
    """The Pod Identity association of ``addon``: inside it (``PodIdentityAssociations``) or a standalone
    ``AWS::EKS::PodIdentityAssociation`` the add-on depends on."""
    inline = addon["Properties"].get("PodIdentityAssociations")
    if inline:
        (assoc,) = inline
        return dict(assoc)
    tpl = _templates()["hp-eks-addons"]
    (assoc_id,) = [d for d in addon.get("DependsOn", [])
                   if tpl["Resources"][d]["Type"] == "AWS::EKS::PodIdentityAssociation"]
    return dict(tpl["Resources"][assoc_id]["Properties"])


def _role(addon: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The Pod Identity role of ``addon`` and the statements of its inline policies."""
    role_id = _association(addon)["RoleArn"]["Fn::GetAtt"][0]
    tpl = _templates()["hp-eks-addons"]
    statements = [st for p in resources_of(tpl, "AWS::IAM::Policy").values()
                  if {"Ref": role_id} in p["Properties"]["Roles"] for st in p["Properties"]["PolicyDocument"]["Statement"]]
    return tpl["Resources"][role_id], statements


@pytest.mark.parametrize(("addon", "identity"), [
    ("amazon-sagemaker-hyperpod-training-operator", cat.TRAINING_OPERATOR_IDENTITY),
    ("amazon-sagemaker-hyperpod-observability", cat.OBSERVABILITY_IDENTITY),
])
def test_addons_get_their_pod_identity_roles(addon: str, identity: cat.PodIdentity) -> None:
    a = _addon(addon)
    assoc = _association(a)
    assert assoc["ServiceAccount"] == identity.service_account
    role, _ = _role(a)
    (trust,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(trust["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    source_arn = json.dumps(trust["Condition"]["StringEquals"]["aws:SourceArn"])
    assert source_arn.endswith(':eks:us-east-1:", {"Ref": "AWS::AccountId"}, ":cluster/hp-eks"]]}')
    managed = json.dumps(role["Properties"].get("ManagedPolicyArns", []))
    assert all(f":iam::aws:policy/{p}" in managed for p in identity.managed_policies)


def test_training_operator_association_stands_apart_and_comes_first() -> None:
    """The training operator's default add-on version refuses an association inside the add-on (awslabs/
    awsome-distributed-ai #1075): a standalone association in the operator's namespace, created before the add-on."""
    a = _addon("amazon-sagemaker-hyperpod-training-operator")
    assert "PodIdentityAssociations" not in a["Properties"]
    assoc = _association(a)
    assert (assoc["ClusterName"], assoc["Namespace"], assoc["ServiceAccount"]) == (
        "hp-eks", cat.TRAINING_OPERATOR_IDENTITY.namespace, cat.TRAINING_OPERATOR_IDENTITY.service_account)
    # the observability add-on keeps its association inside (its configuration is the add-on's own)
    assert _addon("amazon-sagemaker-hyperpod-observability")["Properties"]["PodIdentityAssociations"]


def test_observability_addon_writes_to_the_observability_workspace() -> None:
    a = _addon("amazon-sagemaker-hyperpod-observability")
    # ConfigurationValues is a JSON string joined with the workspace's exported attributes (its id and ARN) and the
    # URL suffix: the endpoint is https://aps-workspaces.<region>.<url suffix>/workspaces/<id>, no trailing "/"
    parts = a["Properties"]["ConfigurationValues"]["Fn::Join"][1]
    imports = [p["Fn::ImportValue"] for p in parts if isinstance(p, dict) and "Fn::ImportValue" in p]
    assert len(imports) == 2 and all(i.startswith("hp-eks-observability:") for i in imports)
    assert "WorkspaceId" in imports[0]
    assert "WorkspaceId" not in imports[1] and "Arn" in imports[1]
    refs = [p["Ref"] for p in parts if isinstance(p, dict) and "Ref" in p]
    assert refs == ["AWS::URLSuffix"]  # the stack's Region is the blueprint's (us-east-1)
    text = "".join(p if isinstance(p, str) else ("<" + (p.get("Ref") or "import") + ">") for p in parts)
    config = json.loads(text)
    assert config["ampWorkspace"] == {
        "prometheusEndpoint": "https://aps-workspaces.us-east-1.<AWS::URLSuffix>/workspaces/<import>",
        "arn": "<import>"}
    assert config["metricsProvider"] == {
        k: {"level": v, "scrapeInterval": 30}
        for k, v in {**cat.OBSERVABILITY_METRIC_LEVELS, "taskGovernanceMetrics": "ADVANCED"}.items()}
    # the network (EFA exporter) and task governance categories have no BASIC level (sample README; the metrics
    # page: the EFA exporter runs "when advanced mode is enabled")
    assert config["metricsProvider"]["networkMetrics"]["level"] == "ADVANCED"
    _, statements = _role(a)
    (write,) = [st for st in statements if st["Action"] == "aps:RemoteWrite"]
    assert write["Resource"] == {"Fn::ImportValue": imports[1]}


def test_interface_endpoints_of_a_private_cluster() -> None:
    endpoints = resources_of(_templates()["hp-eks-eks"], "AWS::EC2::VPCEndpoint").values()
    # com.amazonaws.<region>.<service>: Fn::Join of the prefix, the Region and ".<service>"
    services = sorted(e["Properties"]["ServiceName"]["Fn::Join"][1][-1].removeprefix(".") for e in endpoints)
    assert services == sorted(cat.INTERFACE_ENDPOINTS)
    assert all(e["Properties"]["PrivateDnsEnabled"] is True and e["Properties"]["VpcEndpointType"] == "Interface"
               for e in endpoints)


def test_hyperpod_joins_the_created_cluster() -> None:
    templates = _templates()
    (hp,) = resources_of(templates["hp-eks-cluster"], "AWS::SageMaker::Cluster").values()
    arn = hp["Properties"]["Orchestrator"]["Eks"]["ClusterArn"]
    export = arn["Fn::ImportValue"]
    outputs = templates["hp-eks-eks"]["Outputs"]
    (value,) = [o["Value"] for o in outputs.values() if o.get("Export", {}).get("Name") == export]
    (cluster_id,) = resources_of(templates["hp-eks-eks"], "AWS::EKS::Cluster")
    assert value == {"Fn::GetAtt": [cluster_id, "Arn"]}
    assert [g["InstanceGroupName"] for g in hp["Properties"]["InstanceGroups"]] == ["gpu"]
