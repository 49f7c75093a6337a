"""The blueprint: one typed description of a training cluster across all four layers.

Shape only (types, enums, bounds, ``extra="forbid"``). Cross-field domain rules live in
``fmcluster.blueprint.rules`` (one function per rule). Every optional field states its default
behaviour in its description; defaults are module constants so docs cannot drift.

Source of field names and bounds: shared/ARCHITECTURE.md "Blueprint (intended shape)" and
shared/reference/aws-resource-rules.md (section numbers given per field).
"""

from __future__ import annotations

import difflib
import ipaddress
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fmcluster.catalog import known_instance_types
from fmcluster.catalog.software import default_stack_name, known_stacks

# ---- defaults (used in descriptions) ---------------------------------------------------------
DEFAULT_VPC_CIDR = "10.0.0.0/16"
DEFAULT_GPU_SUBNET_PREFIX = 20
DEFAULT_OS = "ubuntu-22.04"
DEFAULT_SCRATCH_PATH = "/scratch"
DEFAULT_DEPLOYMENT_TYPE = "PERSISTENT_2"
DEFAULT_STORAGE_CAPACITY_GIB = 1200
DEFAULT_PER_UNIT_THROUGHPUT = 250
DEFAULT_MOUNT_POINT = "/fsx"
DEFAULT_CHUNK_MIB = 1024
DEFAULT_PCLUSTER_VERSION = "3.16.1"
SUPPORTED_PCLUSTER_VERSIONS = ("3.15.0", "3.16.1")
DEFAULT_HEAD_NODE = "m7i.4xlarge"
DEFAULT_NONCURRENT_DAYS = 30

NAME_PATTERN = r"^[a-z][a-z0-9-]{1,30}[a-z0-9]$"
GROUP_NAME_PATTERN = r"^[a-z][a-z0-9-]{0,23}[a-z0-9]$"
RESERVATION_ID_PATTERN = r"^cr-[0-9a-f]{17}$"

#: Human descriptions of the patterns above, used in error messages instead of the regex.
PATTERN_HINTS = {
    NAME_PATTERN: "3-32 lowercase letters, digits and hyphens, starting with a letter",
    GROUP_NAME_PATTERN: "2-25 lowercase letters, digits and hyphens, starting with a letter",
    RESERVATION_ID_PATTERN: "cr- followed by 17 hex digits",
}

OsName = Literal["ubuntu-22.04", "ubuntu-24.04", "amazon-linux-2023"]
RemovalPolicyName = Literal["retain", "destroy"]


class Section(BaseModel):
    """Base for every blueprint section: unknown keys are errors, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)


# ---- network ---------------------------------------------------------------------------------
class NetworkSpec(Section):
    """Network: a new VPC (default) or an existing one imported by id (no lookup at synth)."""

    vpc_cidr: str = Field(DEFAULT_VPC_CIDR, description=f"CIDR of a new VPC. Default: {DEFAULT_VPC_CIDR}.")
    gpu_subnet_prefix_length: int = Field(
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
    """Per-component version overrides; every value is checked by the compatibility rules."""

    driver: str | None = Field(None, pattern=r"^\d+\.\d+(\.\d+)?$", description="NVIDIA driver. Default: the stack's.")
    fabric_manager: str | None = Field(None, pattern=r"^\d+\.\d+(\.\d+)?$", description="Fabric Manager. Default: the stack's.")
    cuda: str | None = Field(None, pattern=r"^\d+\.\d+(\.\d+)?$", description="CUDA toolkit. Default: the stack's.")
    nccl: str | None = Field(None, pattern=r"^\d+\.\d+\.\d+(-\d+)?$", description="NCCL. Default: the stack's.")
    efa_installer: str | None = Field(None, pattern=r"^\d+\.\d+\.\d+$", description="EFA installer. Default: the stack's.")
    gdrcopy: str | None = Field(None, pattern=r"^\d+\.\d+(\.\d+)?$", description="GDRCopy. Default: the stack's.")

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class SoftwareSpec(Section):
    """ML software stack: a named known-good set from the catalog, plus checked overrides."""

    stack: str = Field(default_factory=default_stack_name, description="Known-good stack name. Default: the catalog default.")
    os: OsName = Field(DEFAULT_OS, description=f"Node operating system. Default: {DEFAULT_OS}.")
    overrides: SoftwareOverrides = Field(default_factory=SoftwareOverrides, description="Default: none.")
    allow_untested: bool = Field(
        False, description="Turn 'combination no rule covers and no known-good set contains' into a warning. Default: false."
    )
    environment: dict[str, str] = Field(
        default_factory=dict,
        description="Extra environment for jobs (written to the job environment file). Obsolete or harmful "
        "EFA/NCCL settings are rejected. Default: none.",
    )

    @field_validator("stack")
    @classmethod
    def _known_stack(cls, v: str) -> str:
        if v not in known_stacks():
            raise ValueError(f"unknown software stack, got {v!r}; allowed {', '.join(known_stacks())}")
        return v


# ---- compute ---------------------------------------------------------------------------------
class OnDemandCapacity(Section):
    type: Literal["on_demand"]


class SpotCapacity(Section):
    type: Literal["spot"]


class OdcrCapacity(Section):
    """On-Demand Capacity Reservation: exactly one of reservation_id / resource_group_arn."""

    type: Literal["odcr"]
    reservation_id: str | None = Field(None, pattern=RESERVATION_ID_PATTERN)
    resource_group_arn: str | None = Field(None, pattern=r"^arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:\d{12}:group/[\w.-]+$")

    @model_validator(mode="after")
    def _one_target(self) -> OdcrCapacity:
        if (self.reservation_id is None) == (self.resource_group_arn is None):
            raise ValueError("set exactly one of reservation_id or resource_group_arn")
        return self


class CapacityBlockCapacity(Section):
    """EC2 Capacity Block for ML (market type capacity-block + reservation target)."""

    type: Literal["capacity_block"]
    reservation_id: str = Field(pattern=RESERVATION_ID_PATTERN)


class TrainingPlanCapacity(Section):
    """SageMaker HyperPod training plan."""

    type: Literal["training_plan"]
    arn: str = Field(pattern=r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]+:\d{12}:training-plan/.+$")


Capacity = Annotated[
    OnDemandCapacity | SpotCapacity | OdcrCapacity | CapacityBlockCapacity | TrainingPlanCapacity,
    Field(discriminator="type"),
]
RESERVATION_BACKED = ("odcr", "capacity_block", "training_plan")


class ComputeGroup(Section):
    """One homogeneous group of GPU nodes: a ParallelCluster queue, a HyperPod instance group or a
    PCS compute node group."""

    name: str = Field(pattern=GROUP_NAME_PATTERN, description="Queue / instance group / node group name (2-25 chars).")
    instance_type: str = Field(description="Catalog instance type, e.g. p5.48xlarge. Always explicit.")
    count: int = Field(ge=1, le=2048, description="Number of nodes (static: min = max = count unless min_count).")
    min_count: int | None = Field(None, ge=0, description="Nodes kept running. Default: count (static nodes).")
    capacity: Capacity = Field(default_factory=lambda: OnDemandCapacity(type="on_demand"), description="Default: on_demand.")
    efa: bool | None = Field(None, description="EFA on every EFA-capable network card. Default: true where supported.")
    placement_group: bool | None = Field(
        None, description="Cluster placement group. Default: true unless reservation-backed (the reservation places nodes)."
    )
    scratch_path: str = Field(DEFAULT_SCRATCH_PATH, pattern=r"^/[\w./-]+$", description=f"Local NVMe RAID0. Default: {DEFAULT_SCRATCH_PATH}.")
    threads_per_core: Literal[1, 2] = Field(2, description="SMT threads per core. Default: 2 (EC2 default).")

    @field_validator("instance_type")
    @classmethod
    def _known_type(cls, v: str) -> str:
        known = known_instance_types()
        if v not in known:
            close = difflib.get_close_matches(v, known, n=1, cutoff=0.6)
            hint = f" - did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"unknown instance type, got {v!r}; allowed {', '.join(known)}{hint}")
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
    def uses_placement_group(self) -> bool:
        if self.placement_group is not None:
            return self.placement_group
        return self.efa_enabled and not self.reservation_backed


# ---- storage ---------------------------------------------------------------------------------
EventName = Literal["NEW", "CHANGED", "DELETED"]


class DataRepository(Section):
    """A data repository association linking a Lustre directory to an S3 prefix (aws-resource-rules §6.3)."""

    file_system_path: str = Field(
        pattern=r"^/[^\s]*$", description="Lustre directory, e.g. /datasets. Changing it replaces the association.",
        json_schema_extra={"replaces": True},
    )
    s3_uri: str | None = Field(
        None,
        pattern=r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^\s]*)?$",
        description="Existing S3 location. Default: a prefix named after file_system_path in the data bucket "
        "the storage stack creates.",
        json_schema_extra={"replaces": True},
    )
    import_policy: list[EventName] = Field(
        default_factory=lambda: ["NEW", "CHANGED", "DELETED"],
        description="Auto-import events from S3. Default: NEW, CHANGED, DELETED.",
    )
    export_policy: list[EventName] = Field(default_factory=list, description="Auto-export events to S3. Default: none.")
    imported_file_chunk_size_mib: int = Field(
        DEFAULT_CHUNK_MIB, ge=1, le=512000, description=f"Stripe chunk for imported files. Default: {DEFAULT_CHUNK_MIB} MiB."
    )
    batch_import_metadata_on_create: bool = Field(True, description="Import existing S3 metadata at creation. Default: true.")

    @field_validator("import_policy", "export_policy")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError(f"events must be unique, got {v}")
        return v


class LustreSpec(Section):
    """FSx for Lustre (aws-resource-rules §6)."""

    deployment_type: Literal["SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"] = Field(
        DEFAULT_DEPLOYMENT_TYPE,
        description=f"Default: {DEFAULT_DEPLOYMENT_TYPE}. Changing this replaces the file system (data loss).",
        json_schema_extra={"replaces": True},
    )
    storage_capacity_gib: int = Field(
        DEFAULT_STORAGE_CAPACITY_GIB, ge=1, description=f"GiB. Default: {DEFAULT_STORAGE_CAPACITY_GIB}."
    )
    per_unit_storage_throughput: int | None = Field(
        DEFAULT_PER_UNIT_THROUGHPUT,
        description=f"MB/s/TiB (PERSISTENT_* only). Default: {DEFAULT_PER_UNIT_THROUGHPUT}. Changing this replaces the file system.",
        json_schema_extra={"replaces": True},
    )
    file_system_type_version: Literal["2.12", "2.15"] = Field("2.15", description="Lustre version. Default: 2.15.")
    data_compression: Literal["LZ4", "NONE"] = Field("LZ4", description="Default: LZ4.")
    efa_enabled: bool = Field(
        False, description="EFA-enabled file system (PERSISTENT_2 + metadata configuration). Default: false. "
        "Changing this replaces the file system.", json_schema_extra={"replaces": True},
    )
    metadata_iops: int | None = Field(
        None, description="User-provisioned metadata IOPS (PERSISTENT_2). Default: AUTOMATIC metadata mode."
    )
    automatic_backup_retention_days: int = Field(0, ge=0, le=90, description="0 = no automatic backups. Default: 0.")
    weekly_maintenance_start_time: str | None = Field(
        None, pattern=r"^[1-7]:([01]\d|2[0-3]):[0-5]\d$", description="d:HH:MM UTC. Default: chosen by FSx."
    )
    mount_point: str = Field(DEFAULT_MOUNT_POINT, pattern=r"^/[\w./-]+$", description=f"Default: {DEFAULT_MOUNT_POINT}.")
    data_repositories: list[DataRepository] = Field(default_factory=list, description="At most 8. Default: none.")
    removal_policy: RemovalPolicyName = Field(
        "retain", description="destroy takes effect only with the context flag fmcluster:allowDataDestruction=true. Default: retain."
    )


class CheckpointSpec(Section):
    """S3 checkpoint bucket: versioned, encrypted, SSL-only, public access blocked."""

    bucket: str = Field(
        "create",
        pattern=r"^(create|[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])$",
        description="'create' for a new bucket, or the name of an existing one. Default: create.",
    )
    prefix: str = Field("checkpoints/", pattern=r"^[\w./-]*/$", description="Prefix nodes may read and write. Default: checkpoints/.")
    versioned: bool = Field(True, description="Default: true.")
    noncurrent_version_expiration_days: int = Field(
        DEFAULT_NONCURRENT_DAYS, ge=1, le=3650, description=f"Default: {DEFAULT_NONCURRENT_DAYS} days."
    )
    removal_policy: RemovalPolicyName = Field("retain", description="Default: retain (two-key destroy).")


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
    """AWS ParallelCluster through its CloudFormation custom resource (aws-resource-rules.md section 8.2)."""

    version: str = Field(
        DEFAULT_PCLUSTER_VERSION,
        description=f"ParallelCluster version (provider template + AMI). Default: {DEFAULT_PCLUSTER_VERSION}; "
        f"allowed {', '.join(SUPPORTED_PCLUSTER_VERSIONS)}.",
    )
    head_node_instance_type: str = Field(
        DEFAULT_HEAD_NODE, pattern=r"^[a-z0-9-]+\.[a-z0-9]+$",
        description=f"Head node instance type; needs at least nodes/25 + 0.6 GiB of memory (ParallelCluster's "
        f"HeadNodeMemorySizeValidator) and the compute nodes' CPU architecture. Default: {DEFAULT_HEAD_NODE}.",
    )
    head_node_root_volume_gib: int = Field(
        DEFAULT_HEAD_NODE_ROOT_GIB, ge=40, le=16384,
        description=f"Encrypted gp3 root volume of the head node (Slurm state, logs, /home). Default: "
        f"{DEFAULT_HEAD_NODE_ROOT_GIB} GiB.",
    )
    ssh_key_name: str | None = Field(None, description="EC2 key pair for the head node. Default: none (use SSM Session Manager).")
    custom_ami: str | None = Field(None, pattern=r"^ami-[0-9a-f]{8,17}$", description="Default: the official ParallelCluster AMI.")
    deletion_policy: Literal["Retain", "Delete"] = Field(
        "Retain",
        description="What deleting the Custom::PclusterCluster resource does to the cluster. Retain keeps the "
        "cluster (and it keeps using the network and storage stacks, which must then stay). Default: Retain.",
    )
    queue_update_strategy: Literal["DRAIN", "TERMINATE", "COMPUTE_FLEET_STOP"] = Field(
        "DRAIN",
        description="How queue changes reach running nodes; the CloudFormation provider does not stop the "
        "compute fleet itself. Default: DRAIN (nodes are replaced when their jobs end).",
    )
    scaledown_idletime_minutes: int = Field(
        DEFAULT_PCLUSTER_SCALEDOWN_MINUTES, ge=-1, le=43200,
        description=f"Minutes a dynamic node stays idle before it is terminated (-1: never). Default: "
        f"{DEFAULT_PCLUSTER_SCALEDOWN_MINUTES}.",
    )
    memory_based_scheduling: bool = Field(False, description="Slurm memory-based scheduling (--mem). Default: false.")
    log_retention_days: int = Field(
        DEFAULT_PCLUSTER_LOG_RETENTION_DAYS,
        description=f"CloudWatch Logs retention. Default: {DEFAULT_PCLUSTER_LOG_RETENTION_DAYS} days; allowed "
        f"{', '.join(map(str, PCLUSTER_LOG_RETENTION_DAYS))}.",
    )
    cloudwatch_dashboard: bool = Field(True, description="ParallelCluster's CloudWatch dashboard. Default: true.")
    gpu_health_checks: bool = Field(True, description="ParallelCluster's DCGM GPU health check in the Slurm prolog. Default: true.")

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


class HyperPodSettings(Section):
    """SageMaker HyperPod (``AWS::SageMaker::Cluster``, aws-resource-rules.md section 7)."""

    orchestration: Literal["slurm", "eks"] = Field(
        "slurm", description="slurm: controller, optional login and one worker group per compute group; eks: worker "
        "groups joined to the existing EKS cluster eks_cluster_arn. Default: slurm.",
    )
    eks_cluster_arn: str | None = Field(
        None, pattern=r"^arn:aws[a-z-]*:eks:[a-z0-9-]+:\d{12}:cluster/[\w-]+$",
        description="Existing EKS cluster (required with orchestration: eks). Default: not set.",
    )
    controller_instance_type: str = Field(
        DEFAULT_HYPERPOD_CONTROLLER, pattern=r"^ml\.[a-z0-9-]+\.[a-z0-9]+$",
        description=f"Slurm controller instance group type. Default: {DEFAULT_HYPERPOD_CONTROLLER}.",
    )
    login_instance_type: str | None = Field(
        DEFAULT_HYPERPOD_LOGIN, pattern=r"^ml\.[a-z0-9-]+\.[a-z0-9]+$",
        description=f"Slurm login instance group type; null for no login group. Default: {DEFAULT_HYPERPOD_LOGIN}.",
    )
    node_recovery: Literal["Automatic", "None"] = Field("Automatic", description="Default: Automatic.")
    deep_health_checks: list[Literal["InstanceStress", "InstanceConnectivity"]] = Field(
        default_factory=lambda: ["InstanceStress", "InstanceConnectivity"],
        description="OnStartDeepHealthChecks of every GPU worker group. Default: both.",
    )
    efa_interface_type: EfaInterfaceType = Field(
        "efa-only",
        description="InstanceGroups[].NetworkInterface.InterfaceType of EFA worker groups; efa-only uses no subnet "
        "IPv4 address per EFA. Default: efa-only.",
    )


class PcsSettings(Section):
    """AWS Parallel Computing Service (``AWS::PCS::*``, aws-resource-rules.md section 8.1)."""

    slurm_version: str = Field(
        DEFAULT_PCS_SLURM_VERSION,
        description=f"Slurm version of the PCS cluster. Default: {DEFAULT_PCS_SLURM_VERSION}; allowed "
        f"{', '.join(PCS_SLURM_VERSIONS)}.",
    )
    size: Literal["SMALL", "MEDIUM", "LARGE"] = Field(
        "SMALL", description="Controller size: SMALL 32 nodes, MEDIUM 512, LARGE 2048. Default: SMALL."
    )
    login_instance_type: str = Field(
        DEFAULT_PCS_LOGIN_TYPE, pattern=r"^[a-z0-9-]+\.[a-z0-9]+$", description=f"Default: {DEFAULT_PCS_LOGIN_TYPE}."
    )
    ami_id: str | None = Field(
        None, pattern=r"^ami-[0-9a-f]{8,17}$",
        description="AMI of every node group (must carry the PCS agent). Default: the PCS-ready DLAMI (Ubuntu 24.04) "
        "resolved from its public SSM parameter at deploy time (floats to the latest image).",
    )
    efa_interface_type: EfaInterfaceType = Field(
        "efa-only",
        description="Interface type of the EFA interfaces in the launch templates (the primary interface is ENA). "
        "Default: efa-only (no subnet IPv4 address per EFA).",
    )
    scaledown_idle_seconds: int = Field(
        DEFAULT_PCS_SCALEDOWN_SECONDS, ge=1, le=10_000_000,
        description=f"Seconds an idle dynamic node is kept. Default: {DEFAULT_PCS_SCALEDOWN_SECONDS}.",
    )

    @field_validator("slurm_version")
    @classmethod
    def _known_slurm(cls, v: str) -> str:
        if v not in PCS_SLURM_VERSIONS:
            raise ValueError(f"Slurm version not offered by AWS PCS, got {v!r}; allowed {', '.join(PCS_SLURM_VERSIONS)}")
        return v


class OrchestratorSpec(Section):
    """Which orchestrator runs the compute groups, and its settings (only the chosen one's are used)."""

    kind: Literal["parallelcluster", "hyperpod", "pcs"] = Field("parallelcluster", description="Default: parallelcluster.")
    parallelcluster: ParallelClusterSettings = Field(default_factory=ParallelClusterSettings)
    hyperpod: HyperPodSettings = Field(default_factory=HyperPodSettings)
    pcs: PcsSettings = Field(default_factory=PcsSettings)


# ---- observability ---------------------------------------------------------------------------
class ObservabilitySpec(Section):
    metrics: Literal["managed", "self_hosted", "none"] = Field(
        "managed", description="managed: Amazon Managed Prometheus + Grafana; self_hosted: on the head node. Default: managed."
    )
    scrape_interval_seconds: int = Field(30, ge=5, le=300, description="Default: 30 s.")
    scrape_timeout_seconds: int = Field(10, ge=1, le=300, description="Must not exceed the interval. Default: 10 s.")


# ---- blueprint -------------------------------------------------------------------------------
class Blueprint(Section):
    """A whole training cluster. Load with :func:`fmcluster.blueprint.load_blueprint`."""

    name: str = Field(pattern=NAME_PATTERN, description="Prefixes stacks, tags and the cluster name (3-32 chars).")
    region: str = Field(pattern=r"^[a-z]{2}(-gov)?-[a-z]+-\d$", description="AWS Region, e.g. us-east-1.")
    availability_zone: str | None = Field(None, pattern=r"^[a-z]{2}(-gov)?-[a-z]+-\d[a-z]$")
    availability_zone_id: str | None = Field(
        None, pattern=r"^[a-z]{3,4}\d-az\d+$", description="Capacity is bound to AZ IDs (names differ per account)."
    )
    tags: dict[str, str] = Field(default_factory=dict, description="Added to every resource. Default: none.")
    network: NetworkSpec = Field(default_factory=NetworkSpec)
    software: SoftwareSpec = Field(default_factory=SoftwareSpec)
    compute: list[ComputeGroup] = Field(min_length=1, max_length=50)
    storage: StorageSpec = Field(default_factory=StorageSpec)
    orchestrator: OrchestratorSpec = Field(default_factory=OrchestratorSpec)
    observability: ObservabilitySpec = Field(default_factory=ObservabilitySpec)

    @property
    def az_label(self) -> str:
        """The AZ name or AZ ID, whichever the blueprint gives."""
        return self.availability_zone or self.availability_zone_id or ""
