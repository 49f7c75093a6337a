"""Deploy-time lookup of a ParallelCluster bake's parent AMI: the Lambda handler of ``Custom::FmclusterParentAmi``
(:mod:`fmcluster.features.node.construct_parent_ami`), shipped inline (``ZipFile``) as this file's text, so it uses
only the standard library and the boto3 of the Lambda Python runtime. ``fmcluster image lookup`` runs the same
:func:`pick_official_image`, so the CLI shows the AMI a deploy would pick.

The query is ``pcluster``'s own: DescribeImages with ``Owners=[amazon]``, the name filter
``aws-parallelcluster-<version>-<os>-<arch>*``, ``state=available``, ``IncludeDeprecated=True``, the newest
non-deprecated image (aws/aws-parallelcluster 3.16.1 ``cli/src/pcluster/aws/ec2.py`` ``get_official_image_id`` /
``_find_valid_official_image``). DescribeImages returns images in no documented order, so the pick sorts them
itself; a tie on the newest ``CreationDate`` is refused (exactly one image, or a failed deployment that names the
candidates), and so is an empty result (naming the filter).

Custom resource protocol: the handler PUTs its result to the pre-signed ``ResponseURL``
(https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-responses.html). Delete does nothing
(an AMI id is data, nothing was created). The physical id is the AMI id, so the value is fixed until the
resource's properties (name filter, architecture) change: one lookup per blueprint change, not per deploy.
"""

from __future__ import annotations

import datetime as dt
import json
import urllib.request
from typing import Any

#: Longest ``Reason`` sent back (CloudFormation shows it in the stack events; the response body is at most 4096 bytes).
REASON_LIMIT = 1000


class NoImage(Exception):
    """No single image matches: none, or a tie on the newest creation date."""


def _deprecated(image: dict[str, Any], now: str) -> bool:
    """pcluster's rule: ``DeprecationTime`` present and not in the future (``now``: ``YYYY-MM-DDTHH:MM:SS`` UTC)."""
    return "DeprecationTime" in image and now >= str(image["DeprecationTime"])[:19]


def pick_official_image(images: list[dict[str, Any]], name_filter: str, now: str) -> str:
    """The ``ImageId`` of the newest non-deprecated image of ``images`` (DescribeImages ``Images`` entries, any
    order); deprecated images count only when no other exists. Raises :class:`NoImage` for no image or two images
    with the same newest ``CreationDate``."""
    if not images:
        raise NoImage(f"no available AMI named {name_filter} owned by amazon in this Region; allowed a Region and OS "
                      "where ParallelCluster publishes its AMI (pcluster list-official-images), or set "
                      "software.image.parent_ami_id")
    live = [i for i in images if not _deprecated(i, now)] or images
    newest = max(str(i.get("CreationDate", "")) for i in live)
    top = sorted(str(i["ImageId"]) for i in live if str(i.get("CreationDate", "")) == newest)
    if len(top) != 1:
        raise NoImage(f"{len(top)} AMIs named {name_filter} share the newest creation date {newest} ({', '.join(top)}); "
                      "fmcluster picks exactly one: set software.image.parent_ami_id to the one to build from")
    return top[0]


def describe(ec2: Any, name_filter: str, arch: str, owner: str) -> list[dict[str, Any]]:
    """Every available image of ``owner`` named ``name_filter`` for ``arch`` (all DescribeImages pages)."""
    images: list[dict[str, Any]] = []
    for page in ec2.get_paginator("describe_images").paginate(
            Owners=[owner], IncludeDeprecated=True,
            Filters=[{"Name": "name", "Values": [name_filter]}, {"Name": "state", "Values": ["available"]},
                     {"Name": "architecture", "Values": [arch]}]):
        images += page.get("Images", [])
    return images


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")


def respond(event: dict[str, Any], status: str, physical_id: str, data: dict[str, str], reason: str = "") -> None:
    """PUT the custom resource response to ``event['ResponseURL']``."""
    body = json.dumps({
        "Status": status, "Reason": reason[:REASON_LIMIT] or status, "PhysicalResourceId": physical_id,
        "StackId": event["StackId"], "RequestId": event["RequestId"], "LogicalResourceId": event["LogicalResourceId"],
        "Data": data,
    }).encode()
    request = urllib.request.Request(event["ResponseURL"], data=body, method="PUT",
                                     headers={"Content-Type": "", "Content-Length": str(len(body))})
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (the pre-signed https URL)
        response.read()


def handler(event: dict[str, Any], context: Any, ec2: Any = None) -> None:
    """Lambda entry point (``index.handler``). ``ResourceProperties``: ``NameFilter``, ``Architecture``, ``Owner``.
    Returns ``Data.ImageId``."""
    physical = str(event.get("PhysicalResourceId") or "none")
    try:
        if event["RequestType"] == "Delete":
            respond(event, "SUCCESS", physical, {})
            return
        props = event["ResourceProperties"]
        if ec2 is None:
            import boto3  # the Lambda runtime's
            ec2 = boto3.client("ec2")
        ami = pick_official_image(describe(ec2, props["NameFilter"], props["Architecture"], props["Owner"]),
                                  props["NameFilter"], utc_now())
        respond(event, "SUCCESS", ami, {"ImageId": ami})
    except Exception as e:  # every failure is a failed deployment with its reason, never a hung stack
        respond(event, "FAILED", physical, {}, reason=f"{type(e).__name__}: {e}")
