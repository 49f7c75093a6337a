"""The deploy-time parent AMI lookup (``Custom::FmclusterParentAmi``'s inline handler): the pick is pcluster's,
exactly one image or a failure naming why, and every request gets a custom resource response."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fmcluster.features.node import handler_parent_ami as h

NOW = "2026-12-05T00:00:00"
FILTER = "aws-parallelcluster-3.16.3-ubuntu-2204-lts-hvm-x86_64*"


def img(ami: str, created: str, deprecated: str | None = None) -> dict[str, Any]:
    out = {"ImageId": ami, "CreationDate": created}
    if deprecated:
        out["DeprecationTime"] = deprecated
    return out


# (images in DescribeImages order, the AMI picked or None for a refusal, the refusal's text)
PICKS = [
    ([img("ami-1", "2026-10-01T00:00:00.000Z")], "ami-1", ""),
    # unsorted input: the newest wins whatever the order
    ([img("ami-old", "2026-09-01T00:00:00.000Z"), img("ami-new", "2026-11-01T00:00:00.000Z")], "ami-new", ""),
    ([img("ami-new", "2026-11-01T00:00:00.000Z"), img("ami-old", "2026-09-01T00:00:00.000Z")], "ami-new", ""),
    # a deprecated newer image loses to a live older one; deprecation in the future does not count
    ([img("ami-dep", "2026-11-01T00:00:00.000Z", "2026-11-15T00:00:00.000Z"),
      img("ami-live", "2026-10-01T00:00:00.000Z", "2099-01-01T00:00:00.000Z")], "ami-live", ""),
    # only deprecated images: the newest of them (pcluster falls back to deprecated ones)
    ([img("ami-d1", "2026-10-01T00:00:00.000Z", "2026-11-01T00:00:00.000Z"),
      img("ami-d2", "2026-10-02T00:00:00.000Z", "2026-11-01T00:00:00.000Z")], "ami-d2", ""),
    ([], None, f"no available AMI named {FILTER} owned by amazon"),
    ([img("ami-b", "2026-11-01T00:00:00.000Z"), img("ami-a", "2026-11-01T00:00:00.000Z")], None,
     "2 AMIs named aws-parallelcluster-3.16.3-ubuntu-2204-lts-hvm-x86_64* share the newest creation date "
     "2026-11-01T00:00:00.000Z (ami-a, ami-b)"),
]


@pytest.mark.parametrize(("images", "picked", "refusal"), PICKS)
def test_pick_official_image(images: list[dict[str, Any]], picked: str | None, refusal: str) -> None:
    if picked is not None:
        assert h.pick_official_image(images, FILTER, NOW) == picked
    else:
        with pytest.raises(h.NoImage) as e:
            h.pick_official_image(images, FILTER, NOW)
        assert refusal in str(e.value)


class FakeEc2:
    def __init__(self, images: list[dict[str, Any]]) -> None:
        self.images, self.calls = images, []

    def get_paginator(self, name: str) -> Any:
        assert name == "describe_images"
        outer = self

        class P:
            def paginate(self, **kw: Any) -> list[dict[str, Any]]:
                outer.calls.append(kw)
                return [{"Images": outer.images[:1]}, {"Images": outer.images[1:]}]
        return P()


EVENT = {"RequestType": "Create", "ResponseURL": "https://example.invalid/presigned", "StackId": "s",
         "RequestId": "r", "LogicalResourceId": "l",
         "ResourceProperties": {"NameFilter": FILTER, "Architecture": "x86_64", "Owner": "amazon"}}


# (request, images, the response's Status, PhysicalResourceId, Data, a part of Reason)
RESPONSES = [
    (EVENT, [img("ami-0a", "2026-10-01T00:00:00.000Z"), img("ami-0b", "2026-11-01T00:00:00.000Z")],
     "SUCCESS", "ami-0b", {"ImageId": "ami-0b"}, "SUCCESS"),
    (EVENT, [], "FAILED", "none", {}, "NoImage: no available AMI named"),
    ({**EVENT, "RequestType": "Delete", "PhysicalResourceId": "ami-0b"}, [], "SUCCESS", "ami-0b", {}, "SUCCESS"),
]


@pytest.mark.parametrize(("event", "images", "status", "physical", "data", "reason"), RESPONSES)
def test_handler_always_responds(monkeypatch: pytest.MonkeyPatch, event: dict[str, Any], images: list[dict[str, Any]],
                                 status: str, physical: str, data: dict[str, str], reason: str) -> None:
    sent: list[tuple[str, str, dict[str, Any]]] = []

    class Response:
        def __enter__(self) -> Response:
            return self

        def __exit__(self, *a: Any) -> None:
            return None

        def read(self) -> bytes:
            return b""

    def urlopen(request: Any, timeout: int) -> Response:
        sent.append((request.full_url, request.get_method(), json.loads(request.data)))
        return Response()

    monkeypatch.setattr(h.urllib.request, "urlopen", urlopen)
    ec2 = FakeEc2(images)
    h.handler(event, None, ec2=ec2)
    ((url, method, body),) = sent
    assert (url, method) == ("https://example.invalid/presigned", "PUT")
    assert (body["Status"], body["PhysicalResourceId"], body["Data"]) == (status, physical, data)
    assert reason in body["Reason"]
    assert (body["StackId"], body["RequestId"], body["LogicalResourceId"]) == ("s", "r", "l")
    if event["RequestType"] != "Delete":
        assert ec2.calls == [{"Owners": ["amazon"], "IncludeDeprecated": True, "Filters": [
            {"Name": "name", "Values": [FILTER]}, {"Name": "state", "Values": ["available"]},
            {"Name": "architecture", "Values": ["x86_64"]}]}]
