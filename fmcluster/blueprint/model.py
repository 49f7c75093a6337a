"""The blueprint: one typed description of a training cluster across all four layers.

Shape only (types, enums, bounds, ``extra="forbid"``). Cross-field domain rules live in
``fmcluster.validation.rules`` (one function per rule). Every optional field states its default
behaviour in its description; defaults are module constants so docs cannot drift.

Source of field names and bounds: shared/ARCHITECTURE.md "Blueprint (intended shape)" and
the botocore service models, the CloudFormation resource schemas shipped with cfn-lint and the AWS user guides named per field.
"""

from __future__ import annotations

import ipaddress
from datetime import datetime
from typing import Annotated, Any, Final, Literal, cast

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from fmcluster.catalog import UnknownInstanceType, get_instance
from fmcluster.catalog.images import image_stacks, official_image
from fmcluster.catalog.software import default_stack_name, get_stack, known_stacks
from fmcluster.catalog.support import SupportComponent
from fmcluster.severity import did_you_mean

# ---- defaults (used in descriptions) ---------------------------------------------------------
DEFAULT_VPC_CIDR = "10.0.0.0/16"
DEFAULT_GPU_SUBNET_PREFIX = 20
DEFAULT_OS: Final = "ubuntu-24.04"
DEFAULT_SCRATCH_PATH = "/scratch"
DEFAULT_DEPLOYMENT_TYPE = "PERSISTENT_2"
DEFAULT_STORAGE_CAPACITY_GIB = 1200
DEFAULT_PER_UNIT_THROUGHPUT = 250
DEFAULT_MOUNT_POINT = "/fsx"
DEFAULT_CHUNK_MIB = 1024
DEFAULT_PCLUSTER_VERSION = "3.16.3"
SUPPORTED_PCLUSTER_VERSIONS = ("3.15.0", "3.16.1", "3.16.3")
DEFAULT_IMAGE_MODE: Final = "official"
DEFAULT_HEAD_NODE = "m7i.4xlarge"
DEFAULT_NONCURRENT_DAYS = 30

NAME_PATTERN = r"^[a-z][a-z0-9-]{1,30}[a-z0-9]$"
GROUP_NAME_PATTERN = r"^[a-z][a-z0-9-]{0,23}[a-z0-9]$"
RESERVATION_ID_PATTERN = r"^cr-[0-9a-f]{17}$"

#: AWS tag keys/values: letters, digits, spaces and _ . : / = + - @; keys 1-128 and not aws:, values 0-256
#: (https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html).
TAG_KEY_PATTERN = r"^[\w .:/=+\-@]+$"
TAG_VALUE_PATTERN = r"^[\w .:/=+\-@]*$"


def _not_aws_prefixed(key: str) -> str:
    if key.lower().startswith("aws:"):
        raise ValueError(f"tag keys starting with aws: are reserved by AWS, got {key!r}; allowed any other key")
    return key


TagKey = Annotated[str, StringConstraints(pattern=TAG_KEY_PATTERN, max_length=128), AfterValidator(_not_aws_prefixed)]
TagValue = Annotated[str, StringConstraints(pattern=TAG_VALUE_PATTERN, max_length=256)]
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
ENV_VALUE_PATTERN = r"^[^\n\x00]*$"
EnvName = Annotated[str, StringConstraints(pattern=ENV_NAME_PATTERN)]
EnvValue = Annotated[str, StringConstraints(pattern=ENV_VALUE_PATTERN)]
BUCKET_OR_CREATE_PATTERN = r"^(create|[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])$"
INSTANCE_TYPE_PATTERN = (r"^[a-z][a-z0-9-]*\.(nano|micro|small|medium|large|xlarge|[1-9][0-9]*xlarge|metal"
                         r"(-[1-9][0-9]*xl)?)$")
REGION_PATTERN = r"^[a-z]{2}(-gov)?-[a-z]+-\d$"
AZ_NAME_PATTERN = r"^[a-z]{2}(-gov)?-[a-z]+-\d(-[a-z]+-\d)?[a-z]$"
HYPERPOD_TYPE_PATTERN = (r"^ml\.[a-z][a-z0-9-]*\.(nano|micro|small|medium|large|xlarge|[1-9][0-9]*xlarge|metal"
                         r"(-[1-9][0-9]*xl)?)$")
#: ``ScheduledUpdateConfig.ScheduleExpression`` (CloudFormation schema AWS::SageMaker::Cluster ScheduledUpdateConfig,
#: cfn-lint 1.58.0): cron(minute hour day-of-month month day-of-week year).
HYPERPOD_CRON_PATTERN = (
    r"^cron\((?:[0-5][0-9]|[0-9]|) (?:[01][0-9]|2[0-3]|[0-9]) (?:[1-9]|0[1-9]|[12][0-9]|3[01]|\?) "
    r"(?:[1-9]|0[1-9]|1[0-2]|\*|\*/(?:[1-9]|1[0-2])|) (?:MON|TUE|WED|THU|FRI|SAT|SUN|[1-7]|\?|L|(?:[1-7]#[1-5])|(?:[1-7]L)) "
    r"(?:20[2-9][0-9]|\*|)\)$"
)

#: Human descriptions of the patterns above, used in error messages instead of the regex.
PATTERN_HINTS = {
    ENV_NAME_PATTERN: "letters, digits and _, not starting with a digit",
    TAG_KEY_PATTERN: "letters, digits, spaces and _ . : / = + - @ (1-128 characters)",
    TAG_VALUE_PATTERN: "letters, digits, spaces and _ . : / = + - @ (up to 256 characters)",
    ENV_VALUE_PATTERN: "one line (no newline or NUL)",
    BUCKET_OR_CREATE_PATTERN: "'create' or an S3 bucket name (3-63 lowercase letters, digits, dots and hyphens)",
    INSTANCE_TYPE_PATTERN: "an EC2 instance type such as m7i.4xlarge",
    HYPERPOD_TYPE_PATTERN: "a SageMaker instance type such as ml.m5.4xlarge",
    HYPERPOD_CRON_PATTERN: "a cron expression cron(minute hour day-of-month month day-of-week year) such as "
    "cron(0 4 ? * SUN *)",
    r"^/[\w./-]+$": "an absolute path such as /fsx (letters, digits, _, ., - and /)",
    r"^ami-[0-9a-f]{8,17}$": "ami- followed by 8 or 17 hex digits",
    r"^vpc-[0-9a-f]{8,17}$": "vpc- followed by 8 or 17 hex digits",
    r"^subnet-[0-9a-f]{8,17}$": "subnet- followed by 8 or 17 hex digits",
    r"^sg-[0-9a-f]{8,17}$": "sg- followed by 8 or 17 hex digits",
    REGION_PATTERN: "an AWS Region such as us-east-1",
    AZ_NAME_PATTERN: "an Availability Zone name such as us-east-1a",
    r"^[a-z]{3,4}\d(-[a-z]+\d)?-az\d+$": "an AZ ID such as use1-az6",
    r"^\d+\.\d+(\.\d+)?$": "a version such as 570.172.08 or 12.8 (quote it in YAML)",
    r"^\d+\.\d+\.\d+(-\d+)?$": "a version such as 2.27.7 or 2.27.7-1 (quote it in YAML)",
    r"^\d+\.\d+\.\d+$": "a version such as 1.43.2 (quote it in YAML)",
    r"^\d+\.\d+\.\d+(-aws)?$": "a version such as 1.16.3 or 1.16.3-aws (quote it in YAML)",
    r"^arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:\d{12}:group/[\w.-]+$":
        "a resource group ARN, arn:aws:resource-groups:<region>:<account>:group/<name>",
    r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]+:\d{12}:training-plan/.+$":
        "a training plan ARN, arn:aws:sagemaker:<region>:<account>:training-plan/<name>",
    r"^arn:aws[a-z-]*:eks:[a-z0-9-]+:\d{12}:cluster/[\w-]+$": "an EKS cluster ARN, arn:aws:eks:<region>:<account>:cluster/<name>",
    r"^/[^\s]*$": "an absolute path without spaces such as /datasets",
    NAME_PATTERN: "3-32 lowercase letters, digits and hyphens, starting with a letter",
    GROUP_NAME_PATTERN: "2-25 lowercase letters, digits and hyphens, starting with a letter",
    RESERVATION_ID_PATTERN: "cr- followed by 17 hex digits",
}

OsName = Literal["ubuntu-22.04", "ubuntu-24.04", "amazon-linux-2023"]
RemovalPolicyName = Literal["retain", "destroy"]


def _whole_number_input(v: Any) -> Any:
    """Refuse booleans and text where an integer is expected (pydantic's lax mode would take both)."""
    if isinstance(v, bool):
        # The loader words this from the value as written (validation/loader.py ``_convert``).
        raise PydanticCustomError(
            "whole_number_boolean",
            "must be a whole number, got {value} (YAML reads true, false, yes, no, on and off as booleans); "
            "allowed an integer such as 4", {"value": str(v).lower()})
    if isinstance(v, str):
        raise PydanticCustomError("whole_number_text", "must be a whole number, got the text '{value}'; "
                                  "allowed an integer without quotes, such as 4", {"value": v})
    return v


#: An integer field of the blueprint: YAML reads ``true``/``yes``/``on`` as booleans and quoted numbers as
#: text, which pydantic's lax mode would turn into 1 and 4 (``count: true`` would be one node); both are refused.
WholeNumber = Annotated[int, BeforeValidator(_whole_number_input)]


#: Deepest ``extends`` chain (a base may itself extend another; fmcluster/validation/organisation.py resolves it).
MAX_EXTENDS: Final = 5

#: Top-level keys of a blueprint *file* that the model never sees (the loader resolves them first): key -> its
#: description. The loader's unknown-key message allows them, docs/blueprint.md lists them and ``fmcluster schema``
#: describes them, all from here.
FILE_KEYS: Final[dict[str, str]] = {
    "extends": "Path of a base blueprint, relative to this file; this file's keys merge over it (mappings key by key, "
               f"any other value replaced; at most {MAX_EXTENDS} levels, no cycles; docs/organisation.md). Default: none.",
}

#: Keys that moved to another place in the blueprint: key path -> where it lives now. The loader reports an old
#: key with this text instead of "unknown key" (one home per fact: the node image is ``software.image``).
MOVED_KEYS: Final[dict[tuple[str, ...], str]] = {
    ("orchestrator", "parallelcluster", "custom_ami"):
        "software.image (software.image: {mode: custom, ami_id: <your AMI>})",
    ("orchestrator", "pcs", "ami_id"):
        "software.image (software.image: {mode: custom, ami_id: <your AMI>})",
    ("orchestrator", "hyperpod", "image_id"):
        "software.image (image_id: default is software.image.mode: official, the default; an AMI id is "
        "software.image: {mode: custom, ami_id: <your AMI>})",
}


class Section(BaseModel):
    """Base for every blueprint section: unknown keys are errors, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)


# ---- network ---------------------------------------------------------------------------------
class NetworkSpec(Section):
    """Network: a new VPC (default) or an existing one imported by id (no lookup at synth)."""

    vpc_cidr: str = Field(DEFAULT_VPC_CIDR, description=f"CIDR of a new VPC (with vpc_id: ignored, R-NET-2 warns). "
                          f"Default: {DEFAULT_VPC_CIDR}.")
    gpu_subnet_prefix_length: WholeNumber = Field(
        DEFAULT_GPU_SUBNET_PREFIX,
        ge=16,
        le=28,
        description=f"Prefix length of the private GPU subnet of a new VPC. Default: /{DEFAULT_GPU_SUBNET_PREFIX} "
        "(4091 usable addresses). Changing it replaces the subnet.",
        json_schema_extra={"replaces": True},
    )
    vpc_id: str | None = Field(
        None,
        pattern=r"^vpc-[0-9a-f]{8,17}$",
        description="Import this existing VPC instead of creating one (needs gpu_subnet_id). "
        "Default: not set (a new VPC is created).",
    )
    gpu_subnet_id: str | None = Field(
        None,
        pattern=r"^subnet-[0-9a-f]{8,17}$",
        description="Existing private subnet for GPU nodes, in the blueprint's AZ. Default: not set (created).",
    )

    @field_validator("vpc_cidr")
    @classmethod
    def _cidr(cls, v: str) -> str:
        try:
            net = ipaddress.IPv4Network(v, strict=True)
        except ValueError as e:
            raise ValueError(f"not an IPv4 network CIDR ({e}), got {v!r}; allowed e.g. {DEFAULT_VPC_CIDR}") from None
        if not 16 <= net.prefixlen <= 24:
            raise ValueError(f"VPC prefix length out of range, got {v!r}; allowed /16 to /24 (AWS VPC limits)")
        return v


# ---- software --------------------------------------------------------------------------------
class SoftwareOverrides(Section):
    """Per-component version overrides; every value goes through the same compatibility rules as
    the catalog stacks (docs/software.md), and a combination no known-good stack contains is an
    error unless ``allow_untested`` is set."""

    driver: str | None = Field(None, pattern=r"^\d+\.\d+(\.\d+)?$", description="NVIDIA driver. Default: the stack's.")
    fabric_manager: str | None = Field(
        None, pattern=r"^\d+\.\d+(\.\d+)?$", description="Fabric Manager; must equal the driver. Default: the stack's."
    )
    cuda: str | None = Field(None, pattern=r"^\d+\.\d+(\.\d+)?$", description="CUDA toolkit. Default: the stack's.")
    nccl: str | None = Field(None, pattern=r"^\d+\.\d+\.\d+(-\d+)?$", description="NCCL. Default: the stack's.")
    efa_installer: str | None = Field(None, pattern=r"^\d+\.\d+\.\d+$", description="EFA installer. Default: the stack's.")
    gdrcopy: str | None = Field(None, pattern=r"^\d+\.\d+(\.\d+)?$", description="GDRCopy. Default: the stack's.")
    aws_ofi_nccl: str | None = Field(
        None,
        pattern=r"^\d+\.\d+\.\d+(-aws)?$",
        description="aws-ofi-nccl built from its pinned source archive instead of the plugin the EFA installer "
        "bundles. Default: the EFA installer's bundled plugin.",
    )
    kernel_modules: Literal["open", "proprietary"] | None = Field(
        None, description="NVIDIA kernel-module flavour. Default: the stack's (open on every catalog stack)."
    )

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class ImageSpec(Section):
    """Which image the nodes boot (docs/software.md "Image modes").

    - ``official``: the orchestrator's own image as shipped (ParallelCluster's official AMI for its version,
      the AWS PCS-ready DLAMI, the HyperPod default image). Its GPU stack is the catalog stack that describes
      it; nothing of the driver / Fabric Manager / CUDA / EFA / GDRCopy stack is installed at boot.
    - ``bake``: a ``<name>-image`` stack builds an AMI from the lock (the software stack with its overrides)
      with EC2 Image Builder, from the official image of the same orchestrator, OS and CPU architecture.
    - ``custom``: your AMI (``ami_id``); each node verifies it against the lock at boot and fails closed,
      listing every difference.
    """

    mode: Literal["official", "bake", "custom"] = Field(
        DEFAULT_IMAGE_MODE,
        description=f"official: the orchestrator's image as shipped; bake: an AMI built from the lock with EC2 Image "
        f"Builder; custom: ami_id, verified against the lock at boot. Default: {DEFAULT_IMAGE_MODE}.",
    )
    ami_id: str | None = Field(
        None, pattern=r"^ami-[0-9a-f]{8,17}$",
        description="The AMI of custom mode (required there, refused in the other modes). Default: not set.",
    )
    parent_ami_id: str | None = Field(
        None, pattern=r"^ami-[0-9a-f]{8,17}$",
        description="bake: the parent AMI, when the official image must be pinned by id (it must be the "
        "orchestrator's official image for the OS and architecture). Default: the official image's reference "
        "(ParallelCluster: found at deploy time by pcluster's name query, `fmcluster image lookup` shows it; PCS: its SSM parameter).",
    )

    @model_validator(mode="after")
    def _ami_for_mode(self) -> ImageSpec:
        if self.mode == "custom" and self.ami_id is None:
            raise ValueError("mode custom needs ami_id (ami- followed by 8 or 17 hex digits)")
        if self.mode != "custom" and self.ami_id is not None:
            raise ValueError(f"ami_id is only used with mode custom, got mode {self.mode!r}; allowed: set mode: custom, "
                             "or remove ami_id")
        if self.mode != "bake" and self.parent_ami_id is not None:
            raise ValueError(f"parent_ami_id is only used with mode bake, got mode {self.mode!r}")
        return self


#: A container image reference: a catalog key (``fmcluster catalog`` data ``containers.yaml``) or a registry URI
#: with a tag or digest (``registry/path:tag``, ``registry/path@sha256:...``; enroot's ``registry#path:tag`` too).
CONTAINER_IMAGE_PATTERN = r"^[a-z0-9][a-z0-9._-]*$|^[A-Za-z0-9][A-Za-z0-9._/#-]*(:[A-Za-z0-9._-]+|@sha256:[0-9a-f]{64})$"
PATTERN_HINTS[CONTAINER_IMAGE_PATTERN] = ("a catalog image key such as dlc-pytorch-2.9-cu130-ubuntu22.04 or a registry URI "
                                          "with a tag, such as nvcr.io/nvidia/pytorch:26.08-py3")


class ContainerSpec(Section):
    """A container image jobs run in (enroot + pyxis: ``srun --container-image``). Checked against the host's
    driver and EFA stack by rules R-CTR-* when the catalog knows it (docs/containers.md)."""

    name: str = Field(pattern=GROUP_NAME_PATTERN, description="Name of the image in fmcluster's output (2-25 chars).")
    image: str = Field(
        pattern=CONTAINER_IMAGE_PATTERN, max_length=512,
        description="Catalog image key or a registry URI with a tag or digest. An image the catalog does not know "
        "is accepted with a warning (it cannot be checked).",
    )
    groups: list[Annotated[str, StringConstraints(pattern=GROUP_NAME_PATTERN)]] | None = Field(
        None, description="Compute groups that run it. Default: every compute group.",
    )


class SoftwareSpec(Section):
    """ML software stack: which image the nodes boot, the known-good set of versions (the lock) and checked
    overrides."""

    _stack_assumed: bool = PrivateAttr(default=False)
    image: ImageSpec = Field(default_factory=ImageSpec, description="Default: official (the orchestrator's image).")
    stack: str | None = Field(
        None,
        description="Known-good stack name (the lock). Default: official mode: the stack the orchestrator's image "
        "ships; bake and custom: the catalog default for the instance families.",
    )
    os: OsName | None = Field(
        None, description="Node operating system. Default: the official image's first OS (ParallelCluster: "
        "ubuntu-22.04, which has a Lustre client; PCS: ubuntu-24.04; HyperPod: its image's).",
    )
    overrides: SoftwareOverrides = Field(default_factory=SoftwareOverrides, description="Default: none.")
    allow_untested: bool = Field(
        False,
        description="Accept a combination of versions that no known-good stack contains (reported as a warning "
        "instead of an error). Every compatibility rule still applies. Default: false.",
    )
    acknowledge_end_of_support: list[SupportComponent] = Field(
        default_factory=list,
        description="Components whose end of vendor support this blueprint accepts (support calendar, docs/software.md "
        "'Support calendar'): past its end such a component is a warning instead of an error (R-SUP-1), and the "
        "120-day warning before the end is not repeated (R-SUP-2). Allowed: driver, efa_installer, parallelcluster, "
        "slurm, kubernetes. Default: none.",
    )
    environment: dict[EnvName, EnvValue] = Field(
        default_factory=dict,
        description="Extra environment for jobs (written to the job environment file after fmcluster's own "
        "settings). Obsolete or harmful EFA/NCCL settings are rejected. Default: none.",
    )
    containers: list[ContainerSpec] = Field(
        default_factory=list,
        description="Container images jobs run in, checked against the host stack; the first one of a group is the "
        "image of its rendered example training job. Default: none (the example job uses the catalog's example image).",
    )

    @field_validator("containers")
    @classmethod
    def _unique_container_names(cls, v: list[ContainerSpec]) -> list[ContainerSpec]:
        names = [c.name for c in v]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"container names must be unique, got {', '.join(dupes)} more than once; allowed each name once")
        return v

    @property
    def stack_name(self) -> str:
        """The stack after defaulting (:meth:`Blueprint._software_defaults` always sets it)."""
        return self.stack or default_stack_name()

    @property
    def stack_assumed(self) -> bool:
        """True when the blueprint left ``stack`` out and :meth:`Blueprint._software_defaults` chose it (for a custom
        image fmcluster cannot know the AMI's stack: rule R-IMG-12 warns)."""
        return self._stack_assumed

    @property
    def os_name(self) -> str:
        """The OS after defaulting (:meth:`Blueprint._software_defaults` always sets it)."""
        return self.os or DEFAULT_OS

    @field_validator("stack")
    @classmethod
    def _known_stack(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if v not in known_stacks():
            hint = did_you_mean(v, known_stacks())
            raise ValueError(f"unknown software stack, got {v!r}; allowed {', '.join(known_stacks())}{hint}")
        return v


# ---- compute ---------------------------------------------------------------------------------
class OnDemandCapacity(Section):
    """On-Demand instances: no reservation, no interruption; needs the Running On-Demand P instances
    vCPU quota. ParallelCluster ``CapacityType: ONDEMAND``; PCS ``purchaseOption: ONDEMAND``."""

    type: Literal["on_demand"] = Field(description="On-Demand instances.")


class SpotCapacity(Section):
    """Spot instances: cheaper, interruptible with two minutes' notice. A compute group has one
    instance type in one AZ, so there is a single Spot pool and no allocation strategy to choose.
    ParallelCluster ``CapacityType: SPOT``; PCS ``purchaseOption: SPOT``; HyperPod
    ``CapacityRequirements.Spot``."""

    type: Literal["spot"] = Field(description="Spot instances (interruptible).")


class OdcrCapacity(Section):
    """On-Demand Capacity Reservation: exactly one of reservation_id / resource_group_arn.

    Source: botocore ec2 LaunchTemplateCapacityReservationSpecificationRequest (one target at a time; ParallelCluster
    ``CapacityReservationTargetSchema.no_coexist_id_and_group_arn``).
    """

    type: Literal["odcr"] = Field(description="Launch into an On-Demand Capacity Reservation.")
    reservation_id: str | None = Field(
        None,
        pattern=RESERVATION_ID_PATTERN,
        description="Capacity Reservation id (cr- + 17 hex digits). Default: not set (then resource_group_arn is required).",
    )
    resource_group_arn: str | None = Field(
        None,
        pattern=r"^arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:\d{12}:group/[\w.-]+$",
        description="Capacity Reservation resource group to launch into. Default: not set (then reservation_id is required).",
    )

    @model_validator(mode="after")
    def _one_target(self) -> OdcrCapacity:
        if (self.reservation_id is None) == (self.resource_group_arn is None):
            got = "neither" if self.reservation_id is None else "both"
            raise ValueError(f"set exactly one of reservation_id or resource_group_arn, got {got}; allowed "
                             "reservation_id (one Capacity Reservation) or resource_group_arn (a resource group of them)")
        return self


class CapacityBlockCapacity(Section):
    """EC2 Capacity Block for ML (market type capacity-block + reservation target).

    Source: https://docs.aws.amazon.com/pcs/latest/userguide/capacity-blocks-configure-cng.html
    (launch template needs ``InstanceMarketOptions.MarketType:
    capacity-block`` and the reservation id).
    """

    type: Literal["capacity_block"] = Field(description="Launch into an EC2 Capacity Block for ML.")
    reservation_id: str = Field(pattern=RESERVATION_ID_PATTERN, description="The Capacity Block's reservation id (cr-...).")
    starts_at: AwareDatetime | None = Field(
        None, description="When the block starts, with its time zone (2026-12-10T11:30:00Z; EC2 DescribeCapacityBlocks "
        "StartDate). Default: not given (fmcluster plan shows the window without it and nothing is scheduled before "
        "the start).",
    )
    ends_at: AwareDatetime | None = Field(
        None, description="When the block ends (EndDate; blocks end at 11:30 UTC). Default: not given (only shown by "
        "fmcluster plan: the end automation waits for EC2's warning, not for this time).",
    )
    preload_lead_minutes: WholeNumber | None = Field(
        None, ge=5, le=2880, description="Minutes before starts_at at which the head node preloads the data "
        "repositories that set preload_gib. Default: derived from their size and the file system's throughput "
        "(fmcluster plan shows it).",
    )

    @field_validator("starts_at", "ends_at", mode="before")
    @classmethod
    def _not_a_number(cls, v: object) -> object:
        """A number would be read as seconds since 1970: refuse it instead."""
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            # the loader words datetime_* errors with the value as written (validation/loader.py)
            raise PydanticCustomError("datetime_type", "a number is not a date and time")
        return v

    @field_validator("ends_at", mode="after")
    @classmethod
    def _ends_after_start(cls, v: datetime | None, info: ValidationInfo) -> datetime | None:
        """At ``ends_at`` itself (its path and line), against ``starts_at`` (declared before it, so validated first)."""
        starts_at = info.data.get("starts_at")
        if v is not None and starts_at is not None and v <= starts_at:
            raise ValueError(f"must be after starts_at ({starts_at.isoformat()}), got {v.isoformat()}; "
                             "allowed an end after the start")
        return v


class TrainingPlanCapacity(Section):
    """SageMaker HyperPod training plan (``InstanceGroups[].TrainingPlanArn``, botocore sagemaker ClusterInstanceGroupSpecification)."""

    type: Literal["training_plan"] = Field(description="Use a SageMaker training plan (HyperPod only).")
    arn: str = Field(
        pattern=r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]+:\d{12}:training-plan/.+$",
        description="Training plan ARN.",
    )


Capacity = Annotated[
    OnDemandCapacity | SpotCapacity | OdcrCapacity | CapacityBlockCapacity | TrainingPlanCapacity,
    Field(discriminator="type"),
]
#: Capacity types whose nodes are placed by a reservation (no new placement group by default).
RESERVATION_BACKED = ("odcr", "capacity_block", "training_plan")
#: Capacity types whose term ends at a fixed time that EC2 announces with an EventBridge warning 40 minutes before
#: the end (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-monitor.html): Capacity Blocks.
#: A training plan's end reaches HyperPod, not the account's EventBridge bus, in any form AWS documents.
ANNOUNCED_END = ("capacity_block",)


class ComputeGroup(Section):
    """One homogeneous group of GPU nodes: a ParallelCluster queue, a HyperPod instance group or a
    PCS compute node group."""

    name: str = Field(pattern=GROUP_NAME_PATTERN, description="Queue / instance group / node group name (2-25 chars).")
    instance_type: str = Field(description="Catalog instance type, e.g. p5.48xlarge. Always explicit.")
    count: WholeNumber = Field(ge=1, le=2048, description="Number of nodes (static: min = max = count unless min_count).")
    min_count: Annotated[int, Field(ge=0), BeforeValidator(_whole_number_input)] | None = Field(
        None, description="Nodes kept running. Default: count (static nodes)."
    )
    capacity: Capacity = Field(default_factory=lambda: OnDemandCapacity(type="on_demand"), description="Default: on_demand.")
    efa: bool | None = Field(None, description="EFA on every EFA-capable network card. Default: true where supported.")
    placement_group: bool | None = Field(
        None,
        description="Create a cluster placement group for this group. Default: true when EFA is on and the group is "
        "not reservation-backed (odcr, capacity_block and training_plan capacity is placed by its reservation; "
        "forcing true there is a warning, R-CAP-3).",
    )
    scratch_path: str = Field(DEFAULT_SCRATCH_PATH, pattern=r"^/[\w./-]+$", description=f"Local NVMe RAID0. Default: {DEFAULT_SCRATCH_PATH}.")
    threads_per_core: Annotated[Literal[1, 2], BeforeValidator(_whole_number_input)] = Field(
        2, description="SMT threads per core. Default: 2 (EC2 default)."
    )

    @field_validator("instance_type", mode="before")
    @classmethod
    def _one_type(cls, v: object) -> object:
        """One instance type per group: launch templates, reservations and Capacity Blocks hold one type."""
        if isinstance(v, list):
            raise ValueError(
                f"one instance type per compute group, got a list of {len(v)}; allowed a single type such as "
                "p5.48xlarge (use one compute group per type)"
            )
        return v

    @field_validator("instance_type")
    @classmethod
    def _known_type(cls, v: str) -> str:
        """EC2 names only. A SageMaker name (``ml.p5.48xlarge``) is refused with the EC2 name to use:
        fmcluster adds the ``ml.`` prefix itself for HyperPod (``InstanceSpec.hyperpod_name``), and the same
        compute group must also work with ParallelCluster and PCS, which take EC2 names."""
        try:
            get_instance(v)
        except UnknownInstanceType as e:
            if isinstance(v, str) and v.startswith("ml."):
                try:
                    get_instance(v[3:])
                except UnknownInstanceType:
                    pass
                else:
                    raise ValueError(
                        f"SageMaker instance type name, got {v!r}; allowed the EC2 name (fmcluster adds the ml. "
                        f"prefix for HyperPod itself) - did you mean {v[3:]!r}?"
                    ) from None
            raise ValueError(str(e)) from None
        return v

    @property
    def effective_min_count(self) -> int:
        return self.count if self.min_count is None else self.min_count

    @property
    def efa_enabled(self) -> bool:
        return True if self.efa is None else self.efa

    @property
    def reservation_backed(self) -> bool:
        return self.capacity.type in RESERVATION_BACKED

    @property
    def announced_end(self) -> bool:
        """True when the group's capacity ends at a time EC2 announces on EventBridge (:data:`ANNOUNCED_END`)."""
        return self.capacity.type in ANNOUNCED_END

    @property
    def reservation_id(self) -> str | None:
        """The EC2 Capacity Reservation id this group launches into (odcr or capacity_block), else None."""
        return getattr(self.capacity, "reservation_id", None)

    @property
    def uses_placement_group(self) -> bool:
        if self.placement_group is not None:
            return self.placement_group
        return self.efa_enabled and not self.reservation_backed


# ---- storage ---------------------------------------------------------------------------------
# Sources: FSx CreateFileSystem API (botocore 1.44.8 fsx service model) and the FSx for Lustre User Guide
# section 6; S3 lifecycle: https://docs.aws.amazon.com/AmazonS3/latest/API/API_Transition.html
EventName = Literal["NEW", "CHANGED", "DELETED"]
DeploymentType = Literal["SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"]
#: Default throughput tier per persistent deployment type (MB/s/TiB); scratch has none.
DEFAULT_THROUGHPUT_BY_DEPLOYMENT = {"PERSISTENT_1": 200, "PERSISTENT_2": DEFAULT_PER_UNIT_THROUGHPUT}
DEFAULT_LUSTRE_VERSION: Literal["2.15"] = "2.15"
DEFAULT_DATA_COMPRESSION: Literal["LZ4"] = "LZ4"
DEFAULT_CHECKPOINT_PREFIX = "checkpoints/"
KMS_KEY_ARN_PATTERN = r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/(mrk-[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$"
S3_URI_PATTERN = r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^\s]*)?$"
PATTERN_HINTS[KMS_KEY_ARN_PATTERN] = "a KMS key ARN, arn:aws:kms:<region>:<account>:key/<key id>"
PATTERN_HINTS[S3_URI_PATTERN] = "s3://<bucket>/<optional prefix>/"
DAILY_TIME_PATTERN = r"^([01]\d|2[0-3]):[0-5]\d$"
WEEKLY_TIME_PATTERN = r"^[1-7]:([01]\d|2[0-3]):[0-5]\d$"
CHECKPOINT_PREFIX_PATTERN = r"^[\w.-][\w./-]*/$"
PATTERN_HINTS[DAILY_TIME_PATTERN] = "HH:MM in UTC, e.g. 03:00"
PATTERN_HINTS[WEEKLY_TIME_PATTERN] = "d:HH:MM in UTC, d = 1 (Monday) to 7 (Sunday), e.g. 7:04:00"
PATTERN_HINTS[CHECKPOINT_PREFIX_PATTERN] = "a key prefix ending in '/', not starting with '/', e.g. checkpoints/"
CheckpointStorageClass = Literal["STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER_IR", "GLACIER", "DEEP_ARCHIVE"]


def _all_events() -> list[EventName]:
    return ["NEW", "CHANGED", "DELETED"]


class DataRepository(Section):
    """A data repository association linking a Lustre directory to an S3 prefix (``AWS::FSx::DataRepositoryAssociation``)."""

    file_system_path: str = Field(
        pattern=r"^/[^\s]*$", description="Lustre directory, e.g. /datasets. Changing it replaces the association.",
        json_schema_extra={"replaces": True},
    )
    s3_uri: str | None = Field(
        None,
        pattern=S3_URI_PATTERN,
        description="Existing S3 location. Default: a prefix named after file_system_path in the data bucket "
        "the storage stack creates. Changing it replaces the association.",
        json_schema_extra={"replaces": True},
    )
    import_policy: list[EventName] = Field(
        default_factory=_all_events,
        description="Auto-import events from S3. Default: NEW, CHANGED, DELETED.",
    )
    export_policy: list[EventName] = Field(default_factory=list, description="Auto-export events to S3. Default: none.")
    imported_file_chunk_size_mib: WholeNumber = Field(
        DEFAULT_CHUNK_MIB, ge=1, le=512000, description=f"Stripe chunk for imported files. Default: {DEFAULT_CHUNK_MIB} MiB."
    )
    batch_import_metadata_on_create: bool = Field(
        True, description="Import existing S3 metadata at creation. Default: true. Changing it replaces the association.",
        json_schema_extra={"replaces": True},
    )
    preload_gib: WholeNumber | None = Field(
        None, ge=1, le=10_000_000, description="GiB of this repository's files to load into the file system before a "
        "capacity window starts (lfs hsm_restore on the head node; sizes the default lead time). Default: none (files "
        "load on first read).",
    )

    @field_validator("import_policy", "export_policy")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError(f"events must be unique, got {v}; allowed each of NEW, CHANGED, DELETED at most once")
        return v


#: Scratch file systems have no throughput tier; SCRATCH_2 network baseline 200 MB/s/TiB
#: (https://docs.aws.amazon.com/fsx/latest/LustreGuide/ssd-storage.html).
SCRATCH_BASELINE_MBPS_PER_TIB = 200
#: Baseline write (disk) throughput of scratch file systems in MB/s/TiB: SCRATCH_2 from ssd-storage.html,
#: SCRATCH_1 assumed equal to its read baseline (unverified).
SCRATCH_WRITE_MBPS_PER_TIB = {"SCRATCH_2": 100, "SCRATCH_1": 200}


class LustreSpec(Section):
    """FSx for Lustre (FSx CreateFileSystem API, botocore fsx service model)."""

    deployment_type: DeploymentType = Field(
        cast(DeploymentType, DEFAULT_DEPLOYMENT_TYPE),
        description=f"Default: {DEFAULT_DEPLOYMENT_TYPE}. SCRATCH_2 suits short-lived test clusters (no backups, "
        "no replication). Changing this replaces the file system (data loss).",
        json_schema_extra={"replaces": True},
    )
    storage_capacity_gib: WholeNumber = Field(  # le: the FSx API's StorageCapacity shape (botocore fsx, max 2147483647)
        DEFAULT_STORAGE_CAPACITY_GIB, ge=1, le=2_147_483_647,
        description=f"GiB: 1200, 2400 or a multiple of 2400 (3600 for SCRATCH_1). Default: {DEFAULT_STORAGE_CAPACITY_GIB}. "
        "Can grow in place (not SCRATCH_1), never shrink.",
    )
    per_unit_storage_throughput: WholeNumber | None = Field(
        None,
        description="Throughput tier in MB/s/TiB, PERSISTENT_* only (PERSISTENT_1: 50, 100, 200; PERSISTENT_2: 125, "
        "250, 500, 1000). Default: "
        + ", ".join(f"{v} for {k}" for k, v in DEFAULT_THROUGHPUT_BY_DEPLOYMENT.items())
        + ", none for scratch. Changing this replaces the file system (CloudFormation).",
        json_schema_extra={"replaces": True},
    )
    file_system_type_version: Literal["2.12", "2.15"] = Field(
        DEFAULT_LUSTRE_VERSION, description=f"Lustre version. Default: {DEFAULT_LUSTRE_VERSION}. Changing this replaces "
        "the file system.", json_schema_extra={"replaces": True},
    )
    data_compression: Literal["LZ4", "NONE"] = Field(
        DEFAULT_DATA_COMPRESSION, description=f"Default: {DEFAULT_DATA_COMPRESSION} (only new writes are compressed)."
    )
    efa_enabled: bool = Field(
        False, description="EFA-enabled file system: PERSISTENT_2, a metadata configuration and Lustre 2.15; clients "
        "need the EFA driver and an EFA-capable Lustre client. Default: false. Changing this replaces the file system.",
        json_schema_extra={"replaces": True},
    )
    metadata_iops: WholeNumber | None = Field(
        None, description="User-provisioned metadata IOPS (PERSISTENT_2): 1500, 3000, 6000, 12000 or a multiple of "
        "12000 up to 192000. Default: AUTOMATIC metadata mode when EFA is on, else no metadata configuration.",
    )
    automatic_backup_retention_days: WholeNumber = Field(
        0, ge=0, le=90, description="0-90 days, persistent only; 0 = no automatic backups. Default: 0."
    )
    daily_automatic_backup_start_time: str | None = Field(
        None, pattern=DAILY_TIME_PATTERN,
        description="HH:MM UTC, only with automatic_backup_retention_days > 0. Default: chosen by FSx.",
    )
    weekly_maintenance_start_time: str | None = Field(
        None, pattern=WEEKLY_TIME_PATTERN, description="d:HH:MM UTC, d = 1 (Monday) to 7. Default: chosen by FSx."
    )
    kms_key_arn: str | None = Field(
        None, pattern=KMS_KEY_ARN_PATTERN,
        description="Customer managed KMS key for data at rest (PERSISTENT_* only; scratch always uses the FSx "
        "service key). Default: the FSx-managed key. Changing this replaces the file system.",
        json_schema_extra={"replaces": True},
    )
    import_path: str | None = Field(
        None, pattern=S3_URI_PATTERN,
        description="Legacy S3 link for the whole file system (SCRATCH_1, SCRATCH_2, PERSISTENT_1; cannot be combined "
        "with data_repositories). Prefer data_repositories. Default: none. Changing this replaces the file system.",
        json_schema_extra={"replaces": True},
    )
    mount_point: str = Field(DEFAULT_MOUNT_POINT, pattern=r"^/[\w./-]+$", description=f"Default: {DEFAULT_MOUNT_POINT}.")
    data_repositories: list[DataRepository] = Field(default_factory=list, description="At most 8. Default: none.")
    removal_policy: RemovalPolicyName = Field(
        "retain", description="destroy takes effect only with the context flag fmcluster:allowDataDestruction=true. Default: retain."
    )

    @property
    def persistent(self) -> bool:
        return self.deployment_type.startswith("PERSISTENT")

    @property
    def throughput_tier(self) -> int | None:
        """Per-unit throughput in MB/s/TiB: the blueprint's value or the deployment type's default (None for scratch)."""
        if self.per_unit_storage_throughput is not None:
            return self.per_unit_storage_throughput
        return DEFAULT_THROUGHPUT_BY_DEPLOYMENT.get(self.deployment_type)

    @property
    def throughput_mbps(self) -> int:
        """Aggregate baseline throughput in MB/s: capacity (TiB) x :attr:`throughput_tier` (MB/s/TiB);
        scratch: :data:`SCRATCH_BASELINE_MBPS_PER_TIB`. FSx counts 1200 GiB as 1.2 TiB ("2.4 TiB x 50
        MB/s/TiB = 120 MB/s", CreateFileSystem API, PerUnitStorageThroughput): capacity / 1000, not 1024."""
        rate = self.throughput_tier if self.deployment_type.startswith("PERSISTENT") and self.throughput_tier else (
            SCRATCH_BASELINE_MBPS_PER_TIB)
        return self.storage_capacity_gib * rate // 1000

    @property
    def write_throughput_mbps(self) -> int:
        """Baseline write throughput in MB/s: the tier for persistent file systems, the disk write baseline
        for scratch (:data:`SCRATCH_WRITE_MBPS_PER_TIB`)."""
        if self.deployment_type.startswith("PERSISTENT") and self.throughput_tier:
            return self.throughput_mbps
        rate = SCRATCH_WRITE_MBPS_PER_TIB.get(self.deployment_type, SCRATCH_BASELINE_MBPS_PER_TIB)
        return self.storage_capacity_gib * rate // 1000

    @property
    def metadata_mode(self) -> Literal["AUTOMATIC", "USER_PROVISIONED"] | None:
        """Metadata configuration mode (PERSISTENT_2 only): user-provisioned with metadata_iops, automatic for EFA."""
        if self.deployment_type != "PERSISTENT_2":
            return None
        if self.metadata_iops is not None:
            return "USER_PROVISIONED"
        return "AUTOMATIC" if self.efa_enabled else None


class CheckpointTransition(Section):
    """Move current checkpoint objects to a cheaper storage class after some days."""

    storage_class: CheckpointStorageClass = Field(description="Target S3 storage class.")
    after_days: WholeNumber = Field(ge=0, le=36500, description="Days after creation (STANDARD_IA / ONEZONE_IA: at least 30).")


class CheckpointSpec(Section):
    """S3 checkpoint bucket: versioned, encrypted, SSL-only, access-logged, public access blocked."""

    bucket: str = Field(
        "create",
        pattern=BUCKET_OR_CREATE_PATTERN,
        description="'create' for a new bucket, or the name of an existing one. Default: create.",
    )
    prefix: str = Field(
        DEFAULT_CHECKPOINT_PREFIX, pattern=CHECKPOINT_PREFIX_PATTERN,
        description=f"Prefix nodes may read and write (and nothing else). Default: {DEFAULT_CHECKPOINT_PREFIX}.",
    )
    versioned: bool = Field(True, description="Created bucket only. Default: true.")
    noncurrent_version_expiration_days: WholeNumber = Field(
        DEFAULT_NONCURRENT_DAYS, ge=1, le=3650,
        description=f"Created, versioned bucket only: delete overwritten/deleted versions after this many days. "
        f"Default: {DEFAULT_NONCURRENT_DAYS} days.",
    )
    transition: CheckpointTransition | None = Field(
        None, description="Created bucket only: move checkpoints under the prefix to another storage class. Default: none "
        "(they stay in S3 Standard).",
    )
    kms_key_arn: str | None = Field(
        None, pattern=KMS_KEY_ARN_PATTERN,
        description="Customer managed KMS key (SSE-KMS with an S3 bucket key); nodes get encrypt/decrypt on it. "
        "Default: SSE-S3 (S3-managed keys).",
    )
    removal_policy: RemovalPolicyName = Field("retain", description="Default: retain (two-key destroy).")

    @property
    def created(self) -> bool:
        return self.bucket == "create"


class StorageSpec(Section):
    lustre: LustreSpec | None = Field(default_factory=LustreSpec, description="Set to null for no FSx. Default: PERSISTENT_2 1200 GiB.")
    checkpoints: CheckpointSpec | None = Field(default_factory=CheckpointSpec, description="Default: a created bucket.")


# ---- orchestrator ----------------------------------------------------------------------------
#: CloudWatch Logs retention values ParallelCluster accepts (its ``CloudWatchLogsSchema.RetentionInDays``,
#: aws-parallelcluster 3.16.1 ``cli/src/pcluster/schemas/cluster_schema.py``).
PCLUSTER_LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1827, 3653)
DEFAULT_PCLUSTER_LOG_RETENTION_DAYS = 30
DEFAULT_PCLUSTER_SCALEDOWN_MINUTES = 10
DEFAULT_HEAD_NODE_ROOT_GIB = 200

#: Slurm versions AWS PCS accepts in ``CreateCluster.scheduler.version``. Source: botocore 1.44.8
#: ``data/pcs/2023-02-10/service-2.json`` shape ``SchedulerRequest.version`` ("Valid Values: 24.11 | 25.05 |
#: 25.11 | 26.05") and https://docs.aws.amazon.com/pcs/latest/userguide/slurm-versions.html. The CloudFormation
#: docs still list older versions; the API list is the one PCS enforces today. Keep this list with its source.
PCS_SLURM_VERSIONS = ("24.11", "25.05", "25.11", "26.05")
DEFAULT_PCS_SLURM_VERSION = "25.05"
DEFAULT_PCS_LOGIN_TYPE = "m7i.2xlarge"
DEFAULT_PCS_SCALEDOWN_SECONDS = 600

DEFAULT_HYPERPOD_CONTROLLER = "ml.m5.4xlarge"
DEFAULT_HYPERPOD_LOGIN = "ml.m5.4xlarge"

EfaInterfaceType = Literal["efa", "efa-only"]


class ParallelClusterSettings(Section):
    """AWS ParallelCluster through its CloudFormation custom resource (https://docs.aws.amazon.com/parallelcluster/latest/ug/cfn-cluster-resource.html)."""

    version: str = Field(
        DEFAULT_PCLUSTER_VERSION,
        description=f"ParallelCluster version (provider template + AMI). Default: {DEFAULT_PCLUSTER_VERSION}; "
        f"allowed {', '.join(SUPPORTED_PCLUSTER_VERSIONS)}.",
    )
    head_node_instance_type: str = Field(
        DEFAULT_HEAD_NODE, pattern=INSTANCE_TYPE_PATTERN,
        description=f"Head node instance type; needs at least nodes/25 + 0.6 GiB of memory (ParallelCluster's "
        f"HeadNodeMemorySizeValidator) and the compute nodes' CPU architecture. Default: {DEFAULT_HEAD_NODE}.",
    )
    head_node_root_volume_gib: WholeNumber = Field(
        DEFAULT_HEAD_NODE_ROOT_GIB, ge=40, le=16384,
        description=f"Encrypted gp3 root volume of the head node (Slurm state, logs, /home). Default: "
        f"{DEFAULT_HEAD_NODE_ROOT_GIB} GiB.",
    )
    ssh_key_name: str | None = Field(None, description="EC2 key pair for the head node. Default: none (use SSM Session Manager).")
    deletion_policy: Literal["Retain", "Delete"] = Field(
        "Delete",
        description="What deleting the Custom::PclusterCluster resource (cdk destroy of <name>-cluster) does to the "
        "cluster: Delete deletes it, head node and compute nodes included (ParallelCluster's own default, "
        "https://docs.aws.amazon.com/parallelcluster/latest/ug/cfn-cluster-resource.html). Retain keeps it running "
        "and billing, and it keeps using the network and storage stacks, so cdk destroy --all then fails on the "
        "network stack until the cluster is deleted with pcluster delete-cluster (rule R-PC-6 warns). Default: Delete.",
    )
    queue_update_strategy: Literal["DRAIN", "TERMINATE", "COMPUTE_FLEET_STOP"] = Field(
        "DRAIN",
        description="How queue changes reach running nodes; the CloudFormation provider does not stop the "
        "compute fleet itself. Default: DRAIN (nodes are replaced when their jobs end).",
    )
    scaledown_idletime_minutes: WholeNumber = Field(
        DEFAULT_PCLUSTER_SCALEDOWN_MINUTES, ge=-1, le=43200,
        description=f"Minutes a dynamic node stays idle before it is terminated (-1: never). Default: "
        f"{DEFAULT_PCLUSTER_SCALEDOWN_MINUTES}.",
    )
    memory_based_scheduling: bool = Field(False, description="Slurm memory-based scheduling (--mem). Default: false.")
    log_retention_days: WholeNumber = Field(
        DEFAULT_PCLUSTER_LOG_RETENTION_DAYS,
        description=f"CloudWatch Logs retention. Default: {DEFAULT_PCLUSTER_LOG_RETENTION_DAYS} days; allowed "
        f"{', '.join(map(str, PCLUSTER_LOG_RETENTION_DAYS))}.",
    )
    cloudwatch_dashboard: bool = Field(True, description="ParallelCluster's CloudWatch dashboard. Default: true.")
    detailed_monitoring: bool = Field(
        False,
        description="EC2 detailed monitoring (1-minute instance metrics) on the compute fleet; it is billed per "
        "instance, and ParallelCluster's DetailedMonitoringValidator warns about the cost. GPU, EFA and node metrics "
        "come from the observability layer either way. Default: false (basic 5-minute monitoring).",
    )
    gpu_health_checks: bool = Field(True, description="ParallelCluster's DCGM GPU health check in the Slurm prolog. Default: true.")
    login_instance_type: str | None = Field(
        None, pattern=INSTANCE_TYPE_PATTERN,
        description="Instance type of a LoginNodes pool named login (Slurm clients, in the head node's subnet and "
        "security groups, SSM like the head node); null for none. Default: none.",
    )
    login_count: WholeNumber = Field(
        1, ge=1, le=100, description="Login nodes in the pool when login_instance_type is set. Default: 1.",
    )

    @field_validator("version")
    @classmethod
    def _supported(cls, v: str) -> str:
        if v not in SUPPORTED_PCLUSTER_VERSIONS:
            raise ValueError(f"unsupported ParallelCluster version, got {v!r}; allowed {', '.join(SUPPORTED_PCLUSTER_VERSIONS)}")
        return v

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, v: int) -> int:
        if v not in PCLUSTER_LOG_RETENTION_DAYS:
            raise ValueError(
                f"not a CloudWatch Logs retention ParallelCluster accepts, got {v}; allowed "
                f"{', '.join(map(str, PCLUSTER_LOG_RETENTION_DAYS))}"
            )
        return v


DeepHealthCheck = Literal["InstanceStress", "InstanceConnectivity"]


class HyperPodAmiUpdates(Section):
    """Scheduled AMI updates of every instance group (``InstanceGroups[].ScheduledUpdateConfig``).

    Source: CloudFormation resource schema AWS::SageMaker::Cluster ``ScheduledUpdateConfig``, ``DeploymentConfig``,
    ``RollingUpdatePolicy`` and ``CapacitySizeConfig`` (cfn-lint 1.58.0 schemas); botocore sagemaker service-2.json
    ``ScheduledUpdateConfig``.
    """

    schedule: str = Field(
        pattern=HYPERPOD_CRON_PATTERN,
        description="ScheduleExpression: when SageMaker updates the AMI, e.g. cron(0 4 ? * SUN *) (UTC).",
    )
    max_batch_percent: int = Field(
        10, ge=1, le=100,
        description="RollingUpdatePolicy.MaximumBatchSize as CAPACITY_PERCENTAGE: share of a group's instances "
        "updated at a time. Default: 10.",
    )
    wait_interval_seconds: int = Field(
        0, ge=0, le=3600,
        description="DeploymentConfig.WaitIntervalInSeconds between batches. Default: 0.",
    )


class HyperPodAutoPatch(Section):
    """Workload-aware security-patch AMI updates (``InstanceGroups[].AutoPatchConfig``).

    Source: CloudFormation resource schema AWS::SageMaker::Cluster ``AutoPatchConfig`` (PatchingStrategy
    WhenIdle | WhenAllIdle; cfn-lint 1.58.0 schemas);
    https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-ami-auto-patching.html.
    """

    strategy: Literal["WhenIdle", "WhenAllIdle"] = Field(
        description="PatchingStrategy: WhenIdle patches each instance as it becomes idle; WhenAllIdle waits until "
        "every instance of the group is idle.",
    )


def _every_deep_health_check() -> list[DeepHealthCheck]:
    return ["InstanceStress", "InstanceConnectivity"]


#: Kubernetes versions SageMaker HyperPod supports for EKS orchestration ("SageMaker HyperPod supports Kubernetes
#: versions 1.28, 1.29, 1.30, 1.31, 1.32, 1.33 and 1.34":
#: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html, 2026 revision as served
#: by docs.amazonaws.cn/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.md). Re-read on 2026-12-05: no copy
#: of the page lists 1.35 or 1.36 (older copies stop at 1.32 or 1.33), although EKS offers both (1.36: "Kubernetes 1.36
#: is now available in Amazon EKS", https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions-standard.html).
#: Whether HyperPod accepts a 1.35 cluster is NOT VERIFIED, so 1.35 is not allowed (docs/decisions.md, "Kubernetes
#: default stays 1.33").
HYPERPOD_EKS_KUBERNETES_VERSIONS = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34")
#: The default: the newest version HyperPod and the HyperPod training operator (on by default) both support; the
#: operator's list stops at 1.33 ("Supported Kubernetes versions - 1.28, 1.29, 1.30, 1.31, 1.32, and 1.33":
#: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-operator.html "Supported versions", re-read on
#: 2026-12-05). It is in EKS extended support since 2026-07-29, as is 1.34 since 2026-12-02
#: (https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html release calendar): no version HyperPod
#: lists is in standard support, so 1.34 would buy no support and lose the operator. R-SUP-2 warns on the default and
#: says so (the pin's choices, ``orchestrators.hyperpod_eks.plan.kubernetes_choices``);
#: tests/orchestrators/hyperpod_eks/test_versions.py checks the lists.
DEFAULT_EKS_KUBERNETES_VERSION: Final = "1.33"
IAM_ROLE_ARN_PATTERN = r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$"
K8S_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
PATTERN_HINTS[IAM_ROLE_ARN_PATTERN] = "an IAM role ARN such as arn:aws:iam::123456789012:role/eks-admins"
AZ_NAME_OR_ID_PATTERN = r"^([a-z]{2}(-gov)?-[a-z]+-\d[a-z]|[a-z]{3,4}\d-az\d+)$"
PATTERN_HINTS[AZ_NAME_OR_ID_PATTERN] = "an Availability Zone name such as us-east-1b or an AZ ID such as use1-az4"
PATTERN_HINTS[K8S_NAME_PATTERN] = "a Kubernetes namespace name (lowercase letters, digits and -, 1-63 characters)"


class HyperPodEksSettings(Section):
    """The EKS cluster fmcluster creates for HyperPod EKS orchestration (``orchestrator.hyperpod.eks``; only
    without ``eks_cluster_arn``). docs/kubernetes.md walks through a deploy."""

    kubernetes_version: Literal["1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34"] = Field(
        DEFAULT_EKS_KUBERNETES_VERSION,
        description=f"Kubernetes version of the EKS cluster. Default: {DEFAULT_EKS_KUBERNETES_VERSION}; allowed the "
        "versions HyperPod supports (1.28-1.34); the training operator supports up to 1.33 (R-EKS-5). Every allowed "
        "version is in EKS extended support from 2026-12-03 (extra cost per cluster hour; R-SUP-2 warns).",
    )
    admin_role_arn: str | None = Field(
        None, pattern=IAM_ROLE_ARN_PATTERN, max_length=2048,
        description="IAM role given cluster-admin access (access entry with AmazonEKSClusterAdminPolicy); required "
        "when fmcluster creates the cluster (R-EKS-1). Default: not set.",
    )
    control_plane_availability_zone: str | None = Field(
        None, pattern=AZ_NAME_OR_ID_PATTERN,
        description="Second AZ (name, or AZ ID when the blueprint uses availability_zone_id) for the EKS control "
        "plane subnet of a new VPC: EKS needs subnets in two AZs. Default: not set (required with a new VPC, R-EKS-3).",
    )
    control_plane_subnet_ids: list[Annotated[str, StringConstraints(pattern=r"^subnet-[0-9a-f]{8,17}$")]] = Field(
        default_factory=list, max_length=16,
        description="Subnets (at least two AZs) for the EKS control plane in an imported VPC (network.vpc_id). "
        "Default: none (required with an imported VPC, R-EKS-3).",
    )
    public_access_cidrs: list[str] = Field(
        default_factory=list, max_length=40,
        description="CIDRs that may reach the Kubernetes API endpoint from the internet; empty keeps the endpoint "
        "private (reach it from inside the VPC). Default: none (private endpoint only).",
    )
    api_access_cidrs: list[str] = Field(
        default_factory=list, max_length=40,
        description="Networks that reach the private Kubernetes API endpoint on port 443 (a VPN, Direct Connect, a "
        "peered VPC, a bastion's subnet): an ingress rule on the EKS cluster security group per CIDR. Default: none "
        "(only members of the EFA security group reach it).",
    )
    api_access_security_group_ids: list[Annotated[str, StringConstraints(pattern=r"^sg-[0-9a-f]{8,17}$")]] = Field(
        default_factory=list, max_length=20,
        description="Security groups (of this VPC) whose members reach the private Kubernetes API endpoint on port "
        "443, e.g. an admin instance's group: an ingress rule on the EKS cluster security group per group. Default: none.",
    )
    interface_endpoints: bool = Field(
        True,
        description="Create the interface VPC endpoints a private cluster needs (SageMaker API, EKS, EKS Auth, ECR "
        "API/DKR, STS, CloudWatch Logs) in the GPU subnet. Turn off in an imported VPC that has them. Default: true.",
    )
    training_operator: bool = Field(
        True, description="Install the HyperPod training operator EKS add-on. Default: true."
    )
    task_governance: bool = Field(
        True, description="Install the HyperPod task governance EKS add-on (Kueue). Default: true."
    )
    queue_namespaces: list[Annotated[str, StringConstraints(pattern=K8S_NAME_PATTERN)]] = Field(
        default_factory=lambda: ["default"], min_length=1, max_length=50,
        description="Namespaces that get a Kueue LocalQueue per compute group. Default: [default].",
    )

    @field_validator("public_access_cidrs", "api_access_cidrs")
    @classmethod
    def _cidrs(cls, v: list[str]) -> list[str]:
        bad = []
        for c in v:
            try:
                ipaddress.IPv4Network(c, strict=True)
            except ValueError:
                bad.append(c)
        if bad:
            raise ValueError(f"not IPv4 network CIDRs, got {', '.join(map(repr, bad))}; allowed e.g. 203.0.113.7/32")
        return v


class HyperPodSettings(Section):
    """SageMaker HyperPod (``AWS::SageMaker::Cluster``, botocore sagemaker CreateCluster)."""

    orchestration: Literal["slurm", "eks"] = Field(
        "slurm", description="slurm: controller, optional login and one worker group per compute group; eks: worker "
        "groups joined to the EKS cluster eks_cluster_arn, or to one fmcluster creates (orchestrator.hyperpod.eks). "
        "Default: slurm.",
    )
    eks_cluster_arn: str | None = Field(
        None, pattern=r"^arn:aws[a-z-]*:eks:[a-z0-9-]+:\d{12}:cluster/[\w-]+$",
        description="Existing EKS cluster to join (same Region and VPC as the blueprint, R-EKS-2). Default: not set "
        "(fmcluster creates one, orchestrator.hyperpod.eks).",
    )
    eks: HyperPodEksSettings | None = Field(
        None,
        description="The EKS cluster fmcluster creates (orchestration: eks without eks_cluster_arn). Default: not "
        "set (with orchestration: eks and no eks_cluster_arn, an EKS cluster with these defaults is created).",
    )
    controller_instance_type: str = Field(
        DEFAULT_HYPERPOD_CONTROLLER, pattern=HYPERPOD_TYPE_PATTERN,
        description=f"Slurm controller instance group type. Default: {DEFAULT_HYPERPOD_CONTROLLER}.",
    )
    login_instance_type: str | None = Field(
        DEFAULT_HYPERPOD_LOGIN, pattern=HYPERPOD_TYPE_PATTERN,
        description=f"Slurm login instance group type; null for no login group. Default: {DEFAULT_HYPERPOD_LOGIN}.",
    )
    node_recovery: Literal["Automatic", "None"] = Field("Automatic", description="Default: Automatic.")
    deep_health_checks: list[DeepHealthCheck] = Field(
        default_factory=_every_deep_health_check,
        description="OnStartDeepHealthChecks of every GPU worker group. Default: both.",
    )
    efa_interface_type: EfaInterfaceType = Field(
        "efa-only",
        description="InstanceGroups[].NetworkInterface.InterfaceType of EFA worker groups; efa-only uses no subnet "
        "IPv4 address per EFA. Default: efa-only.",
    )
    ami_updates: HyperPodAmiUpdates | None = Field(
        None, description="ScheduledUpdateConfig of every instance group. Default: none (update with "
        "UpdateClusterSoftware when you choose).",
    )
    auto_patch: HyperPodAutoPatch | None = Field(
        None, description="AutoPatchConfig of every instance group. Default: none (no automatic patching).",
    )


class PcsSettings(Section):
    """AWS Parallel Computing Service (``AWS::PCS::*``, CloudFormation resource schemas and the AWS PCS User Guide)."""

    slurm_version: str = Field(
        DEFAULT_PCS_SLURM_VERSION,
        description=f"Slurm version of the PCS cluster. Default: {DEFAULT_PCS_SLURM_VERSION}; allowed "
        f"{', '.join(PCS_SLURM_VERSIONS)}.",
    )
    size: Literal["SMALL", "MEDIUM", "LARGE"] = Field(
        "SMALL", description="Controller size: SMALL 32 nodes, MEDIUM 512, LARGE 2048. Default: SMALL."
    )
    login_instance_type: str = Field(
        DEFAULT_PCS_LOGIN_TYPE, pattern=INSTANCE_TYPE_PATTERN, description=f"Default: {DEFAULT_PCS_LOGIN_TYPE}."
    )
    efa_interface_type: EfaInterfaceType = Field(
        "efa",
        description="Interface type of the EFA interfaces in the launch templates (the primary interface is ENA). "
        "Default: efa (one subnet IPv4 address per EFA). efa-only is refused (R-PCS-3): AWS's PCS sample "
        "(awslabs/awsome-distributed-ai architectures/aws-pcs/assets/add-cng-p6-b300.yaml) says PCS needs efa to pass "
        "the interfaces on to the launch request, and the PCS user guide shows only efa.",
    )
    scaledown_idle_seconds: WholeNumber = Field(
        DEFAULT_PCS_SCALEDOWN_SECONDS, ge=1, le=10_000_000,
        description=f"Seconds an idle dynamic node is kept. Default: {DEFAULT_PCS_SCALEDOWN_SECONDS}.",
    )

    @field_validator("slurm_version")
    @classmethod
    def _known_slurm(cls, v: str) -> str:
        if v not in PCS_SLURM_VERSIONS:
            raise ValueError(f"Slurm version not offered by AWS PCS, got {v!r}; allowed {', '.join(PCS_SLURM_VERSIONS)}")
        return v


# ---- Slurm accounting (orchestrator.slurm.accounting; docs/accounting.md) ---------------------
DEFAULT_ACCOUNTING_MIN_ACU = 0.5
DEFAULT_ACCOUNTING_MAX_ACU = 4.0
DEFAULT_ACCOUNTING_BACKUP_DAYS = 7
SUBNET_ID_PATTERN = r"^subnet-[0-9a-f]{8,17}$"


class SlurmAccountingSpec(Section):
    """Slurm accounting (slurmdbd: ``sacct``, ``sreport``, fair share, QOS limits). Off by default.

    AWS ParallelCluster: ``Scheduling.SlurmSettings.Database`` against an Aurora MySQL 3 (MySQL 8.0-compatible)
    Serverless v2 cluster fmcluster creates in its own retained stack ``<name>-accounting``
    (https://docs.aws.amazon.com/parallelcluster/latest/ug/Scheduling-v3.html#Scheduling-v3-SlurmSettings-Database).
    AWS PCS: PCS-managed accounting (``SlurmConfiguration.Accounting``, Mode STANDARD; no database of yours,
    https://docs.aws.amazon.com/pcs/latest/userguide/slurm-accounting.html). SageMaker HyperPod: not wired yet
    (R-ACCT-1). docs/accounting.md.
    """

    enabled: bool = Field(False, description="Turn Slurm accounting on. Default: false.")
    min_capacity_acu: float = Field(
        DEFAULT_ACCOUNTING_MIN_ACU, ge=0.5, le=256, multiple_of=0.5,
        description=f"ParallelCluster: smallest Aurora Serverless v2 capacity in ACUs (1 ACU ~ 2 GiB memory). "
        f"Default: {DEFAULT_ACCOUNTING_MIN_ACU}.",
    )
    max_capacity_acu: float = Field(
        DEFAULT_ACCOUNTING_MAX_ACU, ge=1, le=256, multiple_of=0.5,
        description=f"ParallelCluster: largest Aurora Serverless v2 capacity in ACUs. Default: "
        f"{DEFAULT_ACCOUNTING_MAX_ACU:g} (AWS's ParallelCluster accounting template uses 1-4).",
    )
    backup_retention_days: WholeNumber = Field(
        DEFAULT_ACCOUNTING_BACKUP_DAYS, ge=1, le=35,
        description=f"ParallelCluster: days of automated Aurora backups (point-in-time restore). Default: "
        f"{DEFAULT_ACCOUNTING_BACKUP_DAYS}.",
    )
    second_availability_zone: str | None = Field(
        None, pattern=AZ_NAME_OR_ID_PATTERN,
        description="ParallelCluster in a new VPC: a second AZ (name, or AZ ID when the blueprint uses "
        "availability_zone_id) for the database subnet group, which needs subnets in two AZs; the database runs in "
        "the cluster's AZ. Default: not set (required then, R-ACCT-2).",
    )
    subnet_ids: list[Annotated[str, StringConstraints(pattern=SUBNET_ID_PATTERN)]] = Field(
        default_factory=list, max_length=16,
        description="ParallelCluster in an imported VPC (network.vpc_id): database subnets in at least two AZs. "
        "Default: none (required then, R-ACCT-2).",
    )
    purge_after_days: WholeNumber = Field(
        -1, ge=-1, le=10000,
        description="AWS PCS: DefaultPurgeTimeInDays, how long accounting records are kept (-1: as long as the "
        "cluster exists; 0 is not allowed). Default: -1.",
    )

    @field_validator("purge_after_days")
    @classmethod
    def _purge_not_zero(cls, v: int) -> int:
        if v == 0:
            raise ValueError("0 is not allowed (AWS PCS DefaultPurgeTimeInDays), got 0; allowed -1 (keep) or 1-10000")
        return v


class SlurmSpec(Section):
    """Slurm settings every Slurm orchestrator shares (ParallelCluster, PCS, HyperPod Slurm)."""

    accounting: SlurmAccountingSpec = Field(
        default_factory=SlurmAccountingSpec, description="Slurm accounting. Default: off (docs/accounting.md).",
    )


#: Every ``orchestrator.kind`` (the registry, ``fmcluster.orchestrators.registry``, has one row or more per kind).
OrchestratorKind = Literal["parallelcluster", "hyperpod", "pcs"]


class OrchestratorSpec(Section):
    """Which orchestrator runs the compute groups, and its settings (only the chosen one's are used)."""

    kind: OrchestratorKind = Field("parallelcluster", description="Default: parallelcluster.")
    parallelcluster: ParallelClusterSettings = Field(default_factory=ParallelClusterSettings)
    hyperpod: HyperPodSettings = Field(default_factory=HyperPodSettings)
    pcs: PcsSettings = Field(default_factory=PcsSettings)
    slurm: SlurmSpec = Field(default_factory=SlurmSpec, description="Slurm settings shared by the Slurm orchestrators.")

    @property
    def settings(self) -> Section:
        """The settings section of the chosen orchestrator (``orchestrator.<kind>``)."""
        return cast(Section, getattr(self, self.kind))

    @property
    def profile_key(self) -> str:
        """The orchestrator's registry key: ``<kind>``, or ``<kind>-<orchestration>`` when its settings choose an
        orchestration (HyperPod: ``hyperpod-slurm``, ``hyperpod-eks``). ``fmcluster.orchestrators.registry`` checks
        that every row follows it (tests/test_registry.py)."""
        orchestration = getattr(self.settings, "orchestration", None)
        return f"{self.kind}-{orchestration}" if orchestration else self.kind

    @property
    def release(self) -> str | None:
        """The orchestrator release the official image follows (its settings' ``version``), or ``None`` for a managed
        service."""
        version = getattr(self.settings, "version", None)
        return version if isinstance(version, str) else None


# ---- observability ---------------------------------------------------------------------------
DEFAULT_SCRAPE_INTERVAL_S = 30
DEFAULT_SCRAPE_TIMEOUT_S = 10
DEFAULT_GRAFANA_AUTH: Final = "AWS_SSO"
DEFAULT_NODE_DISCOVERY: Final = "auto"


EMAIL_PATTERN = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"
SNS_TOPIC_ARN_PATTERN = r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$"
PATTERN_HINTS[EMAIL_PATTERN] = "an email address such as oncall@example.com"
PATTERN_HINTS[SNS_TOPIC_ARN_PATTERN] = "a standard SNS topic ARN, arn:aws:sns:<region>:<account>:<topic name>"


class ObservabilitySpec(Section):
    """Metrics layer: where Prometheus and Grafana run, and how the head node finds the cluster's nodes.

    Exporters (DCGM, node with EFA counters, Slurm) are the same in both modes; see docs/observability.md.
    """

    metrics: Literal["managed", "self_hosted", "none"] = Field(
        "managed",
        description="managed: Amazon Managed Service for Prometheus (remote write from a Prometheus agent on the "
        "head node, alert rules in the workspace) + Amazon Managed Grafana; self_hosted: Prometheus and Grafana "
        "on the head/controller node, listening on localhost only (reach them through SSM port forwarding); "
        "none: no exporters, no observability stack. Default: managed.",
    )
    scrape_interval_seconds: WholeNumber = Field(
        DEFAULT_SCRAPE_INTERVAL_S, ge=5, le=300,
        description=f"Prometheus scrape and rule evaluation interval. Default: {DEFAULT_SCRAPE_INTERVAL_S} s.",
    )
    scrape_timeout_seconds: WholeNumber = Field(
        DEFAULT_SCRAPE_TIMEOUT_S, ge=1, le=300,
        description=f"Per-scrape timeout; must not exceed scrape_interval_seconds. Default: {DEFAULT_SCRAPE_TIMEOUT_S} s.",
    )
    grafana_authentication: Literal["AWS_SSO", "SAML"] = Field(
        DEFAULT_GRAFANA_AUTH,
        description="Sign-in for the Amazon Managed Grafana workspace (managed only). AWS_SSO needs IAM Identity "
        "Center enabled in the account; SAML needs an identity provider configured after deploy. "
        f"Default: {DEFAULT_GRAFANA_AUTH}.",
    )
    node_discovery: Literal["auto", "ec2", "slurm"] = Field(
        DEFAULT_NODE_DISCOVERY,
        description="How the head node's Prometheus finds nodes to scrape. ec2: EC2 service discovery by the tag "
        "fmcluster:blueprint=<name>; slurm: a file written every minute from `sinfo` node addresses. "
        "Default: auto (ec2 for parallelcluster and pcs; slurm for hyperpod, whose nodes are not EC2 instances "
        "of your account).",
    )

    # ---- alert receiver and AMP reachability ----
    alert_email: str | None = Field(
        None, pattern=EMAIL_PATTERN,
        description="Email address subscribed to the cluster's alert SNS topic (created by fmcluster; confirm the "
        "subscription email). Every alert and the daily Watchdog go there. Default: not set.",
    )
    alert_topic_arn: str | None = Field(
        None, pattern=SNS_TOPIC_ARN_PATTERN,
        description="Existing SNS topic (same Region) to route alerts to instead of a topic fmcluster creates; its "
        "access policy must allow aps.amazonaws.com (managed) or the head node role (self-hosted) to publish. "
        "Default: not set.",
    )
    no_alert_receiver: bool = Field(
        False,
        description="The explicit choice to send alerts to nobody: with metrics on, a blueprint must set "
        "alert_email, alert_topic_arn or this (R-OBS-7); alerts then only show in Grafana and the workspace. "
        "Default: false.",
    )
    amp_vpc_endpoint: bool = Field(
        False,
        description="Create an aps-workspaces interface VPC endpoint (private DNS) in the GPU subnet so the head "
        "node reaches Amazon Managed Service for Prometheus without a NAT gateway (managed only). Default: false "
        "(a new VPC has a NAT gateway).",
    )

    @property
    def enabled(self) -> bool:
        return self.metrics != "none"


class BudgetSpec(Section):
    """A monthly cost budget of the cluster (``AWS::Budgets::Budget``, COST, MONTHLY) over the resources that carry the
    cluster's ``fmcluster:blueprint`` tag, notifying the alert topic at each threshold (docs/capacity.md "Budget")."""

    monthly_usd: WholeNumber = Field(ge=1, le=100_000_000, description="The budget, USD per calendar month.")
    thresholds_percent: list[Annotated[int, Field(ge=1, le=1000), BeforeValidator(_whole_number_input)]] = Field(
        default_factory=lambda: [80, 100], min_length=1, max_length=5,
        description="Actual spend, in percent of monthly_usd, at which the alert topic is told (1-5 thresholds). "
        "Default: 80 and 100.",
    )

    stop_compute_at_percent: Annotated[int, Field(ge=1, le=1000), BeforeValidator(_whole_number_input)] | None = Field(
        None,
        description="Actual spend, in percent of monthly_usd, at which the compute fleet is stopped through the "
        "orchestrator's own mechanism (ParallelCluster: compute fleet STOP_REQUESTED; HyperPod: instance groups to 0; "
        "PCS: node groups scaled to 0); file systems and buckets are kept (docs/capacity.md \"Budget\"). Not one of "
        "thresholds_percent, and at most 4 of those with it (a budget has at most 5 notifications). Default: none "
        "(the budget only notifies).",
    )

    @field_validator("thresholds_percent")
    @classmethod
    def _distinct(cls, v: list[int]) -> list[int]:
        if len(set(v)) != len(v):
            raise ValueError(f"each threshold once, got {v}; allowed distinct percentages such as [80, 100]")
        return v

    @model_validator(mode="after")
    def _stop_is_its_own_notification(self) -> BudgetSpec:
        # The stop is one more notification of the budget, with its own SNS subscriber: AWS Budgets allows at most
        # five notifications per budget (CreateBudget, NotificationsWithSubscribers: "A budget can have up to five
        # notifications"; https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_CreateBudget.html),
        # and the stop's notification would repeat an alert threshold's type, operator and threshold (whether AWS
        # Budgets refuses such a duplicate is not verified offline: fmcluster refuses it, one notification per
        # threshold).
        stop = self.stop_compute_at_percent
        if stop is None:
            return self
        if stop in self.thresholds_percent:
            raise ValueError(f"stop_compute_at_percent {stop} is also in thresholds_percent {self.thresholds_percent}; "
                             "allowed a percentage that is not an alert threshold (the stop is its own notification)")
        if len(self.thresholds_percent) > 4:
            raise ValueError(f"with stop_compute_at_percent, at most 4 thresholds_percent, got "
                             f"{len(self.thresholds_percent)}; a budget has at most 5 notifications")
        return self


# ---- blueprint -------------------------------------------------------------------------------
def tag_count_parts(total: int, from_organisation: tuple[str, ...] | list[str]) -> str:
    """Where ``total`` tags came from, for a message that counts them: ``" (39 in the blueprint, 1 from the
    organisation file's defaults.tags: team)"``; ``""`` when the organisation file gave none (the blueprint's count
    needs no parts). The blueprint's share includes its ``extends`` bases."""
    if not from_organisation:
        return ""
    return (f" ({total - len(from_organisation)} in the blueprint, {len(from_organisation)} from the organisation "
            f"file's defaults.tags: {', '.join(from_organisation)})")


class Blueprint(Section):
    """A whole training cluster. Load with :func:`fmcluster.blueprint.load_blueprint`."""

    #: Tag keys the organisation file's ``defaults.tags`` gave (the blueprint did not write them), in the order of
    #: ``tags``; set by the loader (:func:`fmcluster.validation.loader.load_blueprint_text`), empty otherwise.
    _tags_from_organisation: tuple[str, ...] = PrivateAttr(default=())
    name: str = Field(pattern=NAME_PATTERN, description="Prefixes stacks, tags and the cluster name (3-32 chars).")
    region: str = Field(pattern=REGION_PATTERN, description="AWS Region, e.g. us-east-1.")
    availability_zone: str | None = Field(
        None, pattern=AZ_NAME_PATTERN,
        description="AZ name (or Local Zone name such as us-east-1-dfw-2a) for the GPU subnet, nodes, placement groups "
        "and FSx. Set this or availability_zone_id. A Local Zone needs an existing VPC (R-LZ-1), not PCS (R-LZ-2).",
    )
    availability_zone_id: str | None = Field(
        None, pattern=r"^[a-z]{3,4}\d(-[a-z]+\d)?-az\d+$",
        description="AZ ID (or Local Zone ID such as use1-dfw2-az1, with the limits of availability_zone). Capacity is "
        "bound to AZ IDs (names differ per account).",
    )
    tags: dict[TagKey, TagValue] = Field(
        default_factory=dict, max_length=40,
        description="Added to every resource (keys 1-128 characters, not starting with aws:, values up to 256); at most 39 "
        "with ParallelCluster, whose limit of 40 includes fmcluster:blueprint (R-PC-7). Default: none.",
    )
    network: NetworkSpec = Field(default_factory=NetworkSpec, description="Default: a new /16 VPC with a /20 GPU subnet.")
    software: SoftwareSpec = Field(
        default_factory=SoftwareSpec, description="Default: the orchestrator's official image and the stack it ships.")
    compute: list[ComputeGroup] = Field(min_length=1, max_length=50, description="1-50 compute groups (queues / instance groups / node groups).")
    storage: StorageSpec = Field(default_factory=StorageSpec, description="Default: FSx PERSISTENT_2 1200 GiB and a checkpoint bucket.")
    orchestrator: OrchestratorSpec = Field(default_factory=OrchestratorSpec, description="Default: ParallelCluster.")
    observability: ObservabilitySpec = Field(default_factory=ObservabilitySpec, description="Default: managed Prometheus + Grafana.")
    budget: BudgetSpec | None = Field(
        None, description="A monthly cost budget that notifies the alert receivers (needs observability with an alert "
        "topic, R-BUDGET-1). Default: none.",
    )

    @property
    def tags_from_organisation(self) -> tuple[str, ...]:
        """The keys of ``tags`` the organisation file's ``defaults.tags`` gave, not the blueprint (for messages that
        count tags: :func:`tag_count_parts`); ``()`` without an organisation file."""
        return self._tags_from_organisation

    @property
    def az_label(self) -> str:
        """The AZ name or AZ ID, whichever the blueprint gives."""
        return self.availability_zone or self.availability_zone_id or ""

    @model_validator(mode="after")
    def _software_defaults(self) -> Blueprint:
        """Fill ``software.stack`` and ``software.os`` from the image mode (the only cross-section default):
        official mode takes the official image's stack and first OS; bake and custom take the catalog default
        stack for the first group's family (or the catalog default) and the official image's first OS."""
        sw = self.software
        if sw.stack is not None and sw.os is not None:
            return self
        orch = self.orchestrator
        image = official_image(orch.profile_key, orch.release)
        stack = sw.stack
        if stack is None:
            stack = image.stack if (image is not None and sw.image.mode == "official") else _default_stack_for(self)
            # bake defaults to its parent's own stack when that covers the groups: a bake never downgrades its parent
            if sw.image.mode == "bake" and image is not None and _covers(image.stack, self):
                stack = image.stack
        os_name = sw.os or (image.default_os if image is not None else DEFAULT_OS)
        filled = sw.model_copy(update={"stack": stack, "os": os_name})
        filled._stack_assumed = sw.stack is None  # R-IMG-12: a custom image whose stack fmcluster had to assume
        object.__setattr__(self, "software", filled)
        return self


def _covers(stack: str, bp: Blueprint) -> bool:
    """Whether catalog stack ``stack`` lists every compute group's family and CPU architecture."""
    try:
        st = get_stack(stack)
        return all(get_instance(g.instance_type).family in st.families
                   and get_instance(g.instance_type).cpu_architecture in st.cpu_architectures for g in bp.compute)
    except (UnknownInstanceType, KeyError):
        return False


def _default_stack_for(bp: Blueprint) -> str:
    """The first catalog stack that covers every compute group's family and CPU architecture, else the catalog
    default (R-SW-1 then names the mismatch)."""
    try:
        families = {get_instance(g.instance_type).family for g in bp.compute}
        archs = {get_instance(g.instance_type).cpu_architecture for g in bp.compute}
    except UnknownInstanceType:
        return default_stack_name()
    for name in [default_stack_name(), *known_stacks()]:
        st = get_stack(name)
        if families <= set(st.families) and archs <= set(st.cpu_architectures) and name not in image_stacks():
            return name
    return default_stack_name()
