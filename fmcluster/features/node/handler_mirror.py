"""Deploy-time copy of what a node's boot needs from outside AWS into the cluster's mirror bucket: the Lambda
handler of ``Custom::FmclusterMirror`` (:mod:`fmcluster.features.node.construct_mirror`), shipped inline as this
file's text (standard library + the runtime's boto3).

``ResourceProperties``: ``Bucket`` and ``Objects`` (entries of
:meth:`fmcluster.features.node.plan_mirror.MirrorObject.as_property`: ``Url``, ``Key``, ``Sha256`` (empty: no
pin), ``Optional`` (``true``/``false``)). Per object: download, sha256; a pinned hash that differs, or a failed
download, fails the deployment for a required object and is reported (``Data.Skipped``, and the manifest) for an
optional one, which the node then reports as missing; an object without a pin is stored and its measured hash
recorded (nothing invents a hash). The manifest ``mirror/manifest.json`` lists every object with its URL, sha256,
whether it was pinned, and its status. Delete leaves the objects (the bucket is emptied with the stack,
construct_mirror). Custom resource protocol: a PUT of the result to the pre-signed ``ResponseURL``
(https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-responses.html).
"""

from __future__ import annotations

import hashlib
import json
import urllib.request
from typing import Any

MANIFEST_KEY = "mirror/manifest.json"
#: Seconds per download (the Lambda's own timeout bounds the whole copy).
DOWNLOAD_TIMEOUT_S = 120
REASON_LIMIT = 1000


class MirrorFailed(Exception):
    """A required object could not be copied with its pinned hash."""


def download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:  # noqa: S310 (catalog https URLs)
        return bytes(response.read())


def copy_objects(s3: Any, bucket: str, objects: list[dict[str, str]], fetch: Any = download) -> dict[str, Any]:
    """Copy ``objects`` into ``bucket``; returns the manifest (``{"objects": [...]}``). Raises :class:`MirrorFailed`
    for a required object that cannot be downloaded or whose sha256 differs from its pin."""
    rows = []
    for o in objects:
        pinned, optional = o.get("Sha256", ""), o.get("Optional", "false") == "true"
        row = {"url": o["Url"], "key": o["Key"], "pinned": bool(pinned), "sha256": pinned or None}
        try:
            body = fetch(o["Url"])
        except Exception as e:  # network, HTTP error
            problem = f"download of {o['Url']} failed: {type(e).__name__}: {e}"
        else:
            got = hashlib.sha256(body).hexdigest()
            problem = f"sha256 of {o['Url']} is {got}, the catalog pins {pinned}" if pinned and got != pinned else ""
            if not problem:
                s3.put_object(Bucket=bucket, Key=o["Key"], Body=body, Metadata={"sha256": got, "source": o["Url"]})
                row.update(sha256=got, status="copied" if pinned else "copied, sha256 recorded at deploy (no pin)")
        if problem:
            if not optional:
                raise MirrorFailed(problem)
            row.update(status=f"skipped (optional): {problem}")
        rows.append(row)
    manifest = {"objects": rows}
    s3.put_object(Bucket=bucket, Key=MANIFEST_KEY, Body=json.dumps(manifest, indent=2).encode(),
                  ContentType="application/json")
    return manifest


def respond(event: dict[str, Any], status: str, physical_id: str, data: dict[str, str], reason: str = "") -> None:
    body = json.dumps({
        "Status": status, "Reason": reason[:REASON_LIMIT] or status, "PhysicalResourceId": physical_id,
        "StackId": event["StackId"], "RequestId": event["RequestId"], "LogicalResourceId": event["LogicalResourceId"],
        "Data": data,
    }).encode()
    request = urllib.request.Request(event["ResponseURL"], data=body, method="PUT",
                                     headers={"Content-Type": "", "Content-Length": str(len(body))})
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (the pre-signed https URL)
        response.read()


def handler(event: dict[str, Any], context: Any, s3: Any = None, fetch: Any = download) -> None:
    """Lambda entry point (``index.handler``). ``Data``: ``Manifest`` (its key) and ``Skipped`` (the optional
    objects not copied, comma-separated keys)."""
    props = event.get("ResourceProperties", {})
    physical = f"s3://{props.get('Bucket', '')}/mirror"
    try:
        if event["RequestType"] == "Delete":
            respond(event, "SUCCESS", str(event.get("PhysicalResourceId") or physical), {})
            return
        if s3 is None:
            import boto3  # the Lambda runtime's
            s3 = boto3.client("s3")
        manifest = copy_objects(s3, props["Bucket"], list(props.get("Objects", [])), fetch)
        skipped = ",".join(r["key"] for r in manifest["objects"] if str(r.get("status", "")).startswith("skipped"))
        respond(event, "SUCCESS", physical, {"Manifest": MANIFEST_KEY, "Skipped": skipped})
    except Exception as e:  # every failure is a failed deployment with its reason, never a hung stack
        respond(event, "FAILED", physical, {}, reason=f"{type(e).__name__}: {e}")
