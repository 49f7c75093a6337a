"""AWS ParallelCluster through its CloudFormation custom resource.

The provider stack is nested from AWS's published template (version pinned from the blueprint)
and the cluster is a ``Custom::PclusterCluster`` whose ``ClusterConfiguration`` is generated from
the model: one Slurm queue per compute group, EFA on, placement group, capacity type and
reservation target, the FSx file system as existing shared storage, and the rendered bootstrap
script as ``OnNodeConfigured``.

Sources:
- https://docs.aws.amazon.com/parallelcluster/latest/ug/cfn-cluster-resource.html
- https://docs.aws.amazon.com/parallelcluster/latest/ug/cfn-provider-stack.html (template URL)
- https://docs.aws.amazon.com/parallelcluster/latest/ug/cluster-configuration-file-v3.html (config keys)
- aws-resource-rules.md sections 5.3 and 8.2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import CfnResource, Fn
from aws_cdk import aws_cloudformation as cfn
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_s3 as s3
from constructs import Construct

from fmcluster.blueprint.model import ComputeGroup, ParallelClusterSettings
from fmcluster.constructs.bootstrap import NodeBootstrap
from fmcluster.constructs.storage import LustreMount

PROVIDER_TEMPLATE_URL = (
    "https://${AWS::Region}-aws-parallelcluster.s3.${AWS::Region}.${AWS::URLSuffix}"
    "/parallelcluster/{version}/templates/custom_resource/cluster.yaml"
)
OS_NAMES = {"ubuntu-22.04": "ubuntu2204", "ubuntu-24.04": "ubuntu2404", "amazon-linux-2023": "alinux2023"}
CAPACITY_TYPES = {"on_demand": "ONDEMAND", "spot": "SPOT", "odcr": "ONDEMAND", "capacity_block": "CAPACITY_BLOCK"}
ROOT_VOLUME_GIB = 200
HEAD_NODE_ROOT_VOLUME_GIB = 200
LOG_RETENTION_DAYS = 30


@dataclass(frozen=True)
class CheckpointAccess:
    bucket: s3.IBucket
    prefix: str


def compute_resource_name(instance_type: str) -> str:
    """``p5.48xlarge`` -> ``p5-48xlarge`` (ParallelCluster names allow ``[a-z0-9-]``)."""
    return instance_type.replace(".", "-")


def capacity_settings(group: ComputeGroup) -> tuple[str, dict[str, str] | None]:
    """(CapacityType, CapacityReservationTarget) for a group (aws-resource-rules.md section 5.3)."""
    cap = group.capacity
    target: dict[str, str] | None = None
    if cap.type in ("odcr", "capacity_block"):
        rid = getattr(cap, "reservation_id", None)
        arn = getattr(cap, "resource_group_arn", None)
        target = {"CapacityReservationId": rid} if rid else {"CapacityReservationResourceGroupArn": str(arn)}
    return CAPACITY_TYPES[cap.type], target


class ParallelClusterCluster(Construct):
    """The ParallelCluster provider (nested stack) and one ``Custom::PclusterCluster``.

    Attributes: ``config`` (the ClusterConfiguration mapping, with CDK tokens), ``resource``.
    """

    def __init__(
        self, scope: Construct, id: str, *, spec: ParallelClusterSettings, cluster_name: str, region: str, os: str,
        groups: Sequence[ComputeGroup], subnet: ec2.ISubnet, security_group: ec2.ISecurityGroup,
        placement_groups: Mapping[str, ec2.PlacementGroup], bootstraps: Mapping[str, NodeBootstrap],
        lustre: LustreMount | None, checkpoints: CheckpointAccess | None, tags: Mapping[str, str],
    ) -> None:
        super().__init__(scope, id)
        self.provider = cfn.CfnStack(
            self, "Provider", template_url=Fn.sub(PROVIDER_TEMPLATE_URL.replace("{version}", spec.version))
        )
        head_node: dict[str, Any] = {
            "InstanceType": spec.head_node_instance_type,
            "Networking": {"SubnetId": subnet.subnet_id, "AdditionalSecurityGroups": [security_group.security_group_id]},
            "LocalStorage": {"RootVolume": {"Size": HEAD_NODE_ROOT_VOLUME_GIB, "Encrypted": True}},
            "Imds": {"Secured": True},
        }
        if spec.ssh_key_name:
            head_node["Ssh"] = {"KeyName": spec.ssh_key_name}
        image: dict[str, Any] = {"Os": OS_NAMES[os]}
        if spec.custom_ami:
            image["CustomAmi"] = spec.custom_ami
        self.config: dict[str, Any] = {
            "Region": region,
            "Image": image,
            "HeadNode": head_node,
            "Scheduling": {
                "Scheduler": "slurm",
                "SlurmSettings": {"QueueUpdateStrategy": "DRAIN", "ScaledownIdletime": 10},
                "SlurmQueues": [
                    self._queue(g, subnet, security_group, placement_groups.get(g.name), bootstraps[g.name], checkpoints)
                    for g in groups
                ],
            },
            "Monitoring": {
                "Logs": {"CloudWatch": {"Enabled": True, "RetentionInDays": LOG_RETENTION_DAYS}},
                "Dashboards": {"CloudWatch": {"Enabled": True}},
            },
            "Tags": [{"Key": k, "Value": v} for k, v in sorted(tags.items())],
        }
        if lustre is not None:
            self.config["SharedStorage"] = [{
                "MountDir": lustre.mount_point, "Name": "fsx", "StorageType": "FsxLustre",
                "FsxLustreSettings": {"FileSystemId": lustre.file_system_id},
            }]
        self.resource = CfnResource(
            self, "Cluster", type="Custom::PclusterCluster",
            properties={
                "ServiceToken": self.provider.get_att("Outputs.ServiceToken"),
                "ClusterName": cluster_name,
                "ClusterConfiguration": self.config,
            },
        )

    @staticmethod
    def _queue(
        g: ComputeGroup, subnet: ec2.ISubnet, sg: ec2.ISecurityGroup, pg: ec2.PlacementGroup | None,
        bootstrap: NodeBootstrap, checkpoints: CheckpointAccess | None,
    ) -> dict[str, Any]:
        capacity_type, target = capacity_settings(g)
        resource: dict[str, Any] = {
            "Name": compute_resource_name(g.instance_type),
            "InstanceType": g.instance_type,
            "MinCount": g.effective_min_count,
            "MaxCount": g.count,
            "Efa": {"Enabled": g.efa_enabled, "GdrSupport": g.efa_enabled},
            "DisableSimultaneousMultithreading": g.threads_per_core == 1,
        }
        if target:
            resource["CapacityReservationTarget"] = target
        placement: dict[str, Any] = {"Enabled": pg is not None}
        if pg is not None:
            placement["Name"] = pg.placement_group_name
        s3_access: list[dict[str, Any]] = [{"BucketName": bootstrap.bucket_name, "KeyName": bootstrap.object_key}]
        if checkpoints is not None:
            s3_access.append({"BucketName": checkpoints.bucket.bucket_name, "KeyName": f"{checkpoints.prefix}*",
                              "EnableWriteAccess": True})
        return {
            "Name": g.name,
            "CapacityType": capacity_type,
            "Networking": {
                "SubnetIds": [subnet.subnet_id],
                "AdditionalSecurityGroups": [sg.security_group_id],
                "PlacementGroup": placement,
            },
            "ComputeResources": [resource],
            "ComputeSettings": {"LocalStorage": {
                "RootVolume": {"Size": ROOT_VOLUME_GIB, "Encrypted": True},
                "EphemeralVolume": {"MountDir": g.scratch_path},
            }},
            "CustomActions": {"OnNodeConfigured": {"Script": bootstrap.s3_url}},
            "Iam": {"S3Access": s3_access},
        }
