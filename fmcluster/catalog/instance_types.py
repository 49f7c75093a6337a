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


_SMALL_SIZES = ("nano", "micro", "small", "medium", "large", "xlarge")


def _size_order(name: str) -> tuple[int, str]:
    size = name.rsplit(".", 1)[-1]
    if size in _SMALL_SIZES:
        return _SMALL_SIZES.index(size), size
    if size.endswith("xlarge") and size[:-6].isdigit():
        return len(_SMALL_SIZES) + int(size[:-6]), size
    return 10_000, size  # metal and other sizes last


def unknown_type_hint(instance_type: str, known: frozenset[str]) -> str:
    """What to tell about ``instance_type``, a name not in ``known``: the sizes ``known`` lists of its family
    (``m7i.5xlarge`` -> ``, for m7i: m7i.large, m7i.xlarge, ...``), then the one suggestion policy's did-you-mean
    (:func:`fmcluster.severity.did_you_mean`: close in spelling, the same digits), among the family's sizes when the
    family is listed (``m7i.3xlarge`` is not another family's ``i7ie.3xlarge``). ``""`` when neither applies."""
    from fmcluster.severity import did_you_mean

    family = instance_type.rsplit(".", 1)[0]
    sizes = sorted((t for t in known if t.startswith(f"{family}.")), key=_size_order)
    if not sizes:
        return did_you_mean(instance_type, known)
    return f", for {family}: {', '.join(sizes)}{did_you_mean(instance_type, sizes)}"
