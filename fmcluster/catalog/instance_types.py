"""Instance type names the AWS APIs list, read offline from the installed botocore's service models.

Sources (``botocore.loaders.create_loader().load_service_model(<service>, "service-2")``, shipped with botocore, which
boto3 - a runtime dependency - pulls in; as current as the installed botocore, no network call):

- ``ec2`` shape ``InstanceType``: the EC2 instance types (RunInstances, launch templates). An open list for fmcluster's
  purposes: EC2 takes the type as text and a type launched after this botocore is missing, so an unknown name is
  reported as a warning (R-TYPE-1).
- ``sagemaker`` shape ``ClusterInstanceType``: the types of a HyperPod instance group
  (``ClusterInstanceGroupSpecification.InstanceType``), an enum the SageMaker API validates: an error (R-HP-11).
"""

from __future__ import annotations

from functools import lru_cache


def _enum(service: str, shape: str) -> tuple[str, ...]:
    from botocore.loaders import create_loader

    model = create_loader().load_service_model(service, "service-2")
    return tuple(model["shapes"][shape]["enum"])


@lru_cache(maxsize=1)
def ec2_instance_types() -> frozenset[str]:
    """Every EC2 instance type of botocore's ``ec2`` ``InstanceType`` enum (``m7i.4xlarge``, ``p5.48xlarge`` ...)."""
    return frozenset(_enum("ec2", "InstanceType"))


@lru_cache(maxsize=1)
def hyperpod_instance_types() -> frozenset[str]:
    """Every HyperPod instance group type of botocore's ``sagemaker`` ``ClusterInstanceType`` enum (``ml.m5.4xlarge``
    ...)."""
    return frozenset(_enum("sagemaker", "ClusterInstanceType"))
