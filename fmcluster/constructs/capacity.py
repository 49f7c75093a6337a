"""Launch templates and capacity in each orchestrator's terms.

The interface layout of a node (one EFA per EFA-capable network card, the primary on card 0
device 0, every ``(card, device)`` pair unique) is computed once per compute group by
:func:`fmcluster.resolved.resolve` (``ResolvedGroup.interfaces``, from
:func:`fmcluster.catalog.networking.interface_layout`); SMT-off CPU options likewise
(``ResolvedGroup.cpu_options``). Which term an orchestrator uses for a capacity type
(``ONDEMAND``, ``SPOT``, ``CAPACITY_BLOCK`` ...) is its profile's (``OrchestratorProfile.capacity_term``).

What lives here: the blueprint's ``capacity`` rendered as launch-template market options and
reservation targets (:func:`launch_template_market`, :func:`reservation_target`) or a HyperPod
training plan (:func:`hyperpod_training_plan`), and :class:`NodeLaunchTemplate`, which turns a
layout plus capacity into an ``AWS::EC2::LaunchTemplate`` for orchestrators that take our launch
templates (AWS PCS). ParallelCluster builds its own launch templates and HyperPod takes only
``NetworkInterface.InterfaceType``. Which capacity a blueprint may ask for is decided by the
capacity rules, not here.

Sources (botocore ec2 launch-template shapes, EC2 User Guide capacity-blocks-launch, AWS PCS User Guide capacity-blocks-configure-cng):
- Primary interface on card 0 device 0; ``efa-only`` cannot be primary; one EFA per card; EFA on card 0
  at device 1 when card 0 supports EFA, device 0 on every other card:
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html
- ``efa-only`` interfaces take no IP address (saves one subnet IPv4 address per card):
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html#efa-only
- Security groups per interface (``Groups``) when ``NetworkInterfaces`` are given; the EFA group on every
  EFA interface: https://docs.aws.amazon.com/pcs/latest/userguide/working-with_networking_efa_create-lt.html
- No public IP with more than one interface (RunInstances refuses ``AssociatePublicIpAddress``):
  botocore ``ec2`` ``InstanceNetworkInterfaceSpecification.AssociatePublicIpAddress``; the GPU subnet is
  private, so the field is never set.
- Capacity Blocks: ``MarketType: capacity-block``, a reservation target and "a valid InstanceType that
  matches the instance type of the Capacity Block":
  https://docs.aws.amazon.com/pcs/latest/userguide/capacity-blocks-configure-cng.html
- Spot in the launch template (``MarketType: spot``, one-time, terminate) as ParallelCluster renders it:
  aws/aws-parallelcluster ``cli/src/pcluster/launch_template_utils.py`` (``get_instance_market_options``).
- ODCR targeting by id or resource group: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_LaunchTemplateCapacityReservationSpecificationRequest.html
- Root device names: Ubuntu AMIs use ``/dev/sda1``, Amazon Linux 2023 ``/dev/xvda``:
  https://docs.aws.amazon.com/ebs/latest/userguide/device_naming.html
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Fn, Tags
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fmcluster.blueprint.model import CapacityBlockCapacity, ComputeGroup, OdcrCapacity, TrainingPlanCapacity
from fmcluster.catalog.networking import InterfaceSlot

#: Root device per OS family (see module sources). A wrong name adds a second volume instead of
#: resizing the root volume, so it is derived from the OS, never guessed per AMI.
ROOT_DEVICE = {"ubuntu-22.04": "/dev/sda1", "ubuntu-24.04": "/dev/sda1", "amazon-linux-2023": "/dev/xvda"}
#: Encrypted root volume of GPU nodes (GiB, gp3): drivers, CUDA, containers before they move to NVMe.
#: PCS launch templates and ParallelCluster queues both use it.
ROOT_VOLUME_GIB = 200
ROOT_VOLUME_TYPE = "gp3"
#: IMDSv2 hop limit 2 lets containers on the node (enroot, docker) reach the instance metadata service.
IMDS_HOP_LIMIT = 2
#: cfn-lint rule that checks ``LaunchTemplateData.InstanceType`` against the Region's public type list
#: (cfn-lint 1.x E3628), which omits Local-Zone-only types such as p6e-gb200. Capacity Block templates
#: must name the block's type (PCS user guide, capacity-blocks-configure-cng) and fmcluster's catalog
#: has already checked it, so they carry a cfn-lint ignore for this rule only.
CFN_LINT_INSTANCE_TYPE_RULE = "E3628"

# ---- capacity in each orchestrator's terms ---------------------------------------------------


def reservation_target(group: ComputeGroup) -> dict[str, str] | None:
    """``{CapacityReservationId: ...}`` or ``{CapacityReservationResourceGroupArn: ...}`` for ODCR and
    Capacity Blocks; ``None`` for every other capacity type."""
    cap = group.capacity
    if isinstance(cap, CapacityBlockCapacity):
        return {"CapacityReservationId": cap.reservation_id}
    if isinstance(cap, OdcrCapacity):
        if cap.reservation_id:
            return {"CapacityReservationId": cap.reservation_id}
        return {"CapacityReservationResourceGroupArn": str(cap.resource_group_arn)}
    return None


def launch_template_market(group: ComputeGroup) -> dict[str, Any]:
    """Launch-template fields for the group's capacity (CloudFormation property names).

    on_demand / training_plan: nothing. spot: ``InstanceMarketOptions`` spot, one-time, terminate.
    odcr: ``CapacityReservationSpecification.CapacityReservationTarget``. capacity_block: both
    ``InstanceMarketOptions.MarketType: capacity-block`` and the reservation target.
    """
    cap = group.capacity.type
    out: dict[str, Any] = {}
    if cap == "spot":
        out["InstanceMarketOptions"] = {
            "MarketType": "spot",
            "SpotOptions": {"SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"},
        }
    elif cap == "capacity_block":
        out["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
    target = reservation_target(group)
    if target is not None:
        out["CapacityReservationSpecification"] = {"CapacityReservationTarget": target}
    return out


def hyperpod_training_plan(group: ComputeGroup) -> str | None:
    """``TrainingPlanArn`` for a HyperPod instance group (``None`` for on-demand)."""
    cap = group.capacity
    return cap.arn if isinstance(cap, TrainingPlanCapacity) else None


# ---- launch template construct ---------------------------------------------------------------


class NodeLaunchTemplate(Construct):
    """An ``AWS::EC2::LaunchTemplate`` for one node group.

    Every interface sits in ``subnet`` with ``DeleteOnTermination``; EFA interfaces carry
    ``efa_security_group`` only, the primary carries it plus ``primary_security_groups``. IMDSv2 is
    required, the root volume is encrypted gp3, no interface asks for a public IP, and the
    capacity fields come from :func:`launch_template_market`.

    Args:
        instance_type: EC2 instance type written into the template, or ``None`` when the orchestrator sets
            it (AWS PCS takes types from the node group's ``InstanceConfigs``). A Capacity Block group
            always gets its ``instance_type`` written (PCS requires the block's type in the template);
            that template carries a cfn-lint ignore for :data:`CFN_LINT_INSTANCE_TYPE_RULE`, whose
            per-Region list omits Local-Zone-only types such as p6e-gb200.
        interfaces: the layout (``ResolvedGroup.interfaces``).
        os: blueprint OS, picks the root device name.
        group: the compute group whose capacity is rendered, or ``None`` (on-demand, e.g. login nodes).
        placement_group: cluster placement group, or ``None``.
        user_data: raw user data (base64-encoded here), or ``None``.
        cpu_options: ``{"CoreCount": n, "ThreadsPerCore": 1}`` to disable SMT (``ResolvedGroup.cpu_options``),
            or ``None``.
        root_volume_gib: root volume size (GiB). Default :data:`ROOT_VOLUME_GIB`.
        tags: tags on the template and on the instances and volumes it launches. Default: none.

    Attributes: ``resource`` (CfnLaunchTemplate), ``interfaces``, ``template_id``, ``latest_version``.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        instance_type: str | None,
        interfaces: Sequence[InterfaceSlot],
        os: str,
        subnet: ec2.ISubnet,
        efa_security_group: ec2.ISecurityGroup,
        primary_security_groups: Sequence[ec2.ISecurityGroup] = (),
        group: ComputeGroup | None = None,
        placement_group: ec2.PlacementGroup | None = None,
        user_data: str | None = None,
        cpu_options: dict[str, int] | None = None,
        root_volume_gib: int = ROOT_VOLUME_GIB,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.interfaces = tuple(interfaces)
        capacity_block = group is not None and isinstance(group.capacity, CapacityBlockCapacity)
        if capacity_block and group is not None:
            instance_type = group.instance_type
        data: dict[str, Any] = {
            "network_interfaces": self._network_interfaces(subnet, efa_security_group, primary_security_groups),
            "metadata_options": _imdsv2_required(),
            "block_device_mappings": _root_volume(os, root_volume_gib),
            **_instance_settings(instance_type, placement_group, user_data, cpu_options),
            **_tag_specifications(tags),
            **_market_settings(group),
        }
        self.resource = self._add_template(data, capacity_block)
        self.template_id = self.resource.ref
        self.latest_version = self.resource.attr_latest_version_number
        self._add_tags(tags)

    # -- steps --------------------------------------------------------------------------------
    def _network_interfaces(self, subnet: ec2.ISubnet, efa_security_group: ec2.ISecurityGroup,
                            primary_security_groups: Sequence[ec2.ISecurityGroup]) -> list[Any]:
        """One interface per slot in ``subnet``; the primary (card 0, device 0) also carries the primary groups."""
        efa_sg = efa_security_group.security_group_id
        primary_groups = [efa_sg, *(g.security_group_id for g in primary_security_groups)]
        return [
            ec2.CfnLaunchTemplate.NetworkInterfaceProperty(
                network_card_index=nic.card,
                device_index=nic.device,
                interface_type=None if nic.interface_type == "interface" else nic.interface_type,
                subnet_id=subnet.subnet_id,
                groups=primary_groups if (nic.card, nic.device) == (0, 0) else [efa_sg],
                delete_on_termination=True,
                description=f"card {nic.card} device {nic.device} {nic.interface_type}",
            )
            for nic in self.interfaces
        ]

    def _add_template(self, data: dict[str, Any], capacity_block: bool) -> ec2.CfnLaunchTemplate:
        """The ``AWS::EC2::LaunchTemplate``; a Capacity Block template ignores :data:`CFN_LINT_INSTANCE_TYPE_RULE`."""
        resource = ec2.CfnLaunchTemplate(
            self,
            "Resource",
            launch_template_data=ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(**data),
        )
        if capacity_block:
            resource.add_metadata("cfn-lint", {"config": {"ignore_checks": [CFN_LINT_INSTANCE_TYPE_RULE]}})
        return resource

    def _add_tags(self, tags: Mapping[str, str] | None) -> None:
        """``tags`` on the template itself."""
        for k, v in (tags or {}).items():
            Tags.of(self.resource).add(k, v)


def _imdsv2_required() -> ec2.CfnLaunchTemplate.MetadataOptionsProperty:
    return ec2.CfnLaunchTemplate.MetadataOptionsProperty(
        http_tokens="required",
        http_endpoint="enabled",
        http_put_response_hop_limit=IMDS_HOP_LIMIT,
    )


def _root_volume(os: str, size_gib: int) -> list[ec2.CfnLaunchTemplate.BlockDeviceMappingProperty]:
    """The encrypted gp3 root volume, deleted with the instance."""
    return [
        ec2.CfnLaunchTemplate.BlockDeviceMappingProperty(
            device_name=ROOT_DEVICE[os],
            ebs=ec2.CfnLaunchTemplate.EbsProperty(
                volume_size=size_gib,
                volume_type=ROOT_VOLUME_TYPE,
                encrypted=True,
                delete_on_termination=True,
            ),
        )
    ]


def _instance_settings(instance_type: str | None, placement_group: ec2.PlacementGroup | None, user_data: str | None,
                       cpu_options: dict[str, int] | None) -> dict[str, Any]:
    """Instance type, placement group, user data (base64) and CPU options, each only when given."""
    data: dict[str, Any] = {}
    if instance_type is not None:
        data["instance_type"] = instance_type
    if placement_group is not None:
        data["placement"] = ec2.CfnLaunchTemplate.PlacementProperty(
            group_name=placement_group.placement_group_name
        )
    if user_data is not None:
        data["user_data"] = Fn.base64(user_data)
    if cpu_options is not None:
        data["cpu_options"] = ec2.CfnLaunchTemplate.CpuOptionsProperty(
            core_count=cpu_options["CoreCount"],
            threads_per_core=cpu_options["ThreadsPerCore"],
        )
    return data


def _tag_specifications(tags: Mapping[str, str] | None) -> dict[str, Any]:
    """``tags`` on the instances and volumes the template launches (none without tags)."""
    if not tags:
        return {}
    return {"tag_specifications": [
        ec2.CfnLaunchTemplate.TagSpecificationProperty(
            resource_type=rt,
            tags=[{"key": k, "value": v} for k, v in sorted(tags.items())],
        )
        for rt in ("instance", "volume")
    ]}


def _market_settings(group: ComputeGroup | None) -> dict[str, Any]:
    """The market options and capacity reservation of :func:`launch_template_market` as launch-template properties
    (none without a group)."""
    market = launch_template_market(group) if group is not None else {}
    data: dict[str, Any] = {}
    if "InstanceMarketOptions" in market:
        imo = market["InstanceMarketOptions"]
        spot = imo.get("SpotOptions")
        data["instance_market_options"] = ec2.CfnLaunchTemplate.InstanceMarketOptionsProperty(
            market_type=imo["MarketType"],
            spot_options=ec2.CfnLaunchTemplate.SpotOptionsProperty(
                spot_instance_type=spot["SpotInstanceType"],
                instance_interruption_behavior=spot["InstanceInterruptionBehavior"],
            )
            if spot
            else None,
        )
    if "CapacityReservationSpecification" in market:
        target = market["CapacityReservationSpecification"]["CapacityReservationTarget"]
        data["capacity_reservation_specification"] = (
            ec2.CfnLaunchTemplate.CapacityReservationSpecificationProperty(
                capacity_reservation_target=ec2.CfnLaunchTemplate.CapacityReservationTargetProperty(
                    capacity_reservation_id=target.get("CapacityReservationId"),
                    capacity_reservation_resource_group_arn=target.get(
                        "CapacityReservationResourceGroupArn"
                    ),
                ),
            )
        )
    return data
