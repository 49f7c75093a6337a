"""What SageMaker HyperPod's two orchestrations (Slurm, EKS) share in their profiles. Sources per fact."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from fmcluster.orchestrators.profile import BootPart

#: HyperPod instance groups: on-demand, Spot (``InstanceGroups[].CapacityRequirements.Spot``, an empty object) or a
#: SageMaker training plan (``InstanceGroups[].TrainingPlanArn``); no EC2 reservation target. Sources: botocore
#: sagemaker service-2.json ClusterInstanceGroupSpecification (CapacityRequirements, TrainingPlanArn) and
#: ClusterCapacityRequirements (Spot, OnDemand: empty structures); CloudFormation resource schema
#: AWS::SageMaker::Cluster ClusterCapacityRequirements (cfn-lint 1.58.0 schemas, schema_date 2026-10-20);
#: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-spot.html.
HYPERPOD_CAPACITY: Mapping[str, str] = MappingProxyType({
    "on_demand": "ON_DEMAND",
    "spot": "CapacityRequirements.Spot",
    "training_plan": "TrainingPlanArn",
})

#: A HyperPod custom AMI "must be unencrypted" and owned by the account (botocore sagemaker
#: ``ClusterInstanceGroupSpecification.ImageId``): ``OrchestratorProfile.encrypted_custom_ami`` is False for both
#: orchestrations.

#: Names fmcluster gives the HyperPod Slurm controller and login instance groups.
#: What HyperPod does before fmcluster's OnInitComplete script (issue 23 item 9). Not counted: on-start deep health
#: checks (``OnStartDeepHealthChecks``, on by default in fmcluster), which run before a node is released to jobs and
#: for which AWS publishes no duration (sagemaker-hyperpod-resiliency-slurm-deep-health-checks).
HYPERPOD_BOOT_PARTS = (
    BootPart("hyperpod-default-software", 120,
             "model: HyperPod configures its default software, Slurm (Slurm orchestration) and the FSx mount before "
             "OnInitComplete runs (Extended mode: AWS::SageMaker::Cluster ClusterLifeCycleConfig, \"runs after HyperPod "
             "configures the default software\"); AWS publishes no duration"),
)
HYPERPOD_CONTROLLER_GROUP = "controller"
HYPERPOD_LOGIN_GROUP = "login"
