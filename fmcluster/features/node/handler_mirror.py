"""Deploy-time copy of what a node's boot needs from outside AWS into the cluster's mirror bucket: the Lambda
handler of ``Custom::FmclusterMirror`` (:mod:`fmcluster.features.node.construct_mirror`), shipped inline as this
file's text (standard library + the runtime's boto3).

``ResourceProperties``: ``Bucket`` and ``Objects`` (entries of
:meth:`fmcluster.resolved.mirror.MirrorObject.as_property`: ``Url``, ``Key``, ``Sha256`` (empty: no pin),
``Optional`` (``true``/``false``), and for an object whose hash the publisher's index gives: ``Index``
(``apt``/``dnf``/``checksums``), ``IndexUrl``, ``Package``, ``Version`` (a glob matched against the version without
its epoch), ``Arch``).

Where the expected sha256 comes from (:func:`expected`): the catalog pin; else the index, read over HTTPS at deploy
time: an apt flat repository's ``Packages.gz`` (paragraphs with ``Package``, ``Version``, ``Architecture``,
``Filename`` relative to the repository, ``SHA256``: https://wiki.debian.org/DebianRepository/Format, "Flat
Repository Format" and "Packages Indices"; NVIDIA's CUDA repositories are flat, ``deb <url> /``, and serve
``Packages.gz`` with ``./``-relative ``Filename`` and ``SHA256`` fields, as Drake's manifest tool reads them,
github.com/zzhou292/drake/blob/master/tools/workspace/cuda/manifest_regenerate.py), a dnf
repository's ``repodata/repomd.xml`` -> ``<data type="primary">`` ``<location href>`` -> ``<package>`` entries with
``<name>``, ``<arch>``, ``<version ver rel>``, ``<checksum type="sha256">`` and ``<location href>`` (createrepo_c's
format, github.com/rpm-software-management/createrepo_c), or a release's ``sha256sum``-format checksum list
(``<hex>  <file name>`` lines). NOT checked here: the repository signature (apt ``InRelease``, dnf
``repomd.xml.asc``): the index is trusted as served over HTTPS by its publisher (no gpg in the Lambda runtime).
UNVERIFIED: the compression of the ``primary`` metadata of NVIDIA's amzn2023 repositories (gz, xz, bz2 are read, and
zstd through Python 3.14's ``compression.zstd``; anything else is refused with a message, which fails the deployment
for NCCL).

Per object: download, sha256; a hash that differs from the expected one, an index without the package, or a failed
download fails the deployment for a required object and is reported (``Data.Skipped``, and the manifest) for an
optional one, which the node then reports as missing; an object with neither pin nor index is stored and its
measured hash recorded (nothing invents a hash). Every copied object gets ``<key>.sha256`` next to it (one line,
the checked hash): nodes read it for an object the catalog does not pin. The manifest ``mirror/manifest.json``
lists every object with its URL, sha256, whether it was pinned, and its status. Delete leaves the objects (the bucket is emptied with the stack,
construct_mirror). Custom resource protocol: a PUT of the result to the pre-signed ``ResponseURL``
(https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-responses.html).
"""

from __future__ import annotations

import bz2
import fnmatch
import functools
import gzip
import hashlib
import importlib
import json
import lzma
import re
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
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


def _version_key(version: str) -> tuple[tuple[int, str], ...]:
    """Orders versions that differ only in numbers (``2.27.7-1+cuda12.8`` < ``2.27.7-1+cuda12.9``) as apt and dnf do;
    the highest match of the version glob is the one their version pin would select."""
    return tuple((int(p), "") if p.isdigit() else (-1, p) for p in re.findall(r"\d+|\D+", version))


def _best(candidates: list[tuple[str, str, str]], o: dict[str, str]) -> tuple[str, str]:
    """(url, sha256) of the highest version among ``(version, url, sha256)`` candidates, or LookupError."""
    if not candidates:
        raise LookupError(f"{o['Package']} {o['Version']} ({o['Arch']}) is not in the index of {o['Url']}")
    _, url, sha = max(candidates, key=lambda c: _version_key(c[0]))
    return url, sha


def apt_paragraphs(text: str) -> list[dict[str, str]]:
    """The paragraphs of a ``Packages`` index as ``{field: value}`` (continuation lines dropped: the fields used here
    are single-line)."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        fields = dict(line.split(":", 1) for line in block.splitlines() if ":" in line and not line[:1].isspace())
        if fields:
            out.append({k.strip(): v.strip() for k, v in fields.items()})
    return out


def without_epoch(version: str) -> str:
    """A Debian version without its epoch: ``[epoch:]upstream_version[-debian_revision]``, the epoch an unsigned
    integer (Debian Policy 5.6.12, https://www.debian.org/doc/debian-policy/ch-controlfields.html#version). NVIDIA's
    DCGM packages carry one (``datacenter-gpu-manager-4-core (= 1:4.6.0-1)`` in the Build-Depends of
    packages.microsoft.com's ``dcgm-exporter_4.8.3-ubuntu24.04u5.dsc``); the object's version glob never does."""
    return re.sub(r"^\d+:", "", version)


def from_apt(o: dict[str, str], fetch: Any) -> tuple[str, str]:
    base = o["Url"]
    text = gzip.decompress(fetch(urllib.parse.urljoin(base, "Packages.gz"))).decode()
    return _best([(without_epoch(p["Version"]), urllib.parse.urljoin(base, p["Filename"]), p["SHA256"].lower())
                  for p in apt_paragraphs(text)
                  if p.get("Package") == o["Package"] and p.get("Architecture") in (o["Arch"], "all")
                  and fnmatch.fnmatchcase(without_epoch(p.get("Version", "")), o["Version"]) and "SHA256" in p], o)


def _zstd() -> Any:
    """Python 3.14's ``compression.zstd`` (PEP 784; the function's runtime is python3.14), or None where absent."""
    try:
        return importlib.import_module("compression.zstd")
    except ImportError:
        return None


def _decompress(href: str, body: bytes) -> bytes:
    for suffix, unpack in ((".gz", gzip.decompress), (".xz", lzma.decompress), (".bz2", bz2.decompress)):
        if href.endswith(suffix):
            return bytes(unpack(body))
    if href.endswith(".zst") and _zstd() is not None:
        return bytes(_zstd().decompress(body))
    if href.endswith(".xml"):
        return body
    raise LookupError(f"primary metadata {href}: compression not supported by the deploy (gz, xz, bz2, zst on "
                      "Python 3.14)")


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def from_dnf(o: dict[str, str], fetch: Any) -> tuple[str, str]:
    base = o["Url"]
    repomd = ET.fromstring(fetch(urllib.parse.urljoin(base, "repodata/repomd.xml")))
    hrefs = [loc.get("href", "") for data in repomd if _local(data.tag) == "data" and data.get("type") == "primary"
             for loc in data if _local(loc.tag) == "location"]
    if not hrefs:
        raise LookupError(f"no primary metadata in {base}repodata/repomd.xml")
    primary = ET.fromstring(_decompress(hrefs[0], fetch(urllib.parse.urljoin(base, hrefs[0]))))
    candidates = []
    for pkg in primary:
        f = {_local(e.tag): e for e in pkg}
        if {"name", "arch", "version", "checksum", "location"} - set(f) or f["checksum"].get("type") != "sha256":
            continue
        version = f"{f['version'].get('ver')}-{f['version'].get('rel')}"
        if f["name"].text == o["Package"] and f["arch"].text == o["Arch"] and fnmatch.fnmatchcase(version, o["Version"]):
            candidates.append((version, urllib.parse.urljoin(base, f["location"].get("href", "")),
                               (f["checksum"].text or "").strip().lower()))
    return _best(candidates, o)


def from_checksums(o: dict[str, str], fetch: Any) -> tuple[str, str]:
    name = o["Url"].rsplit("/", 1)[-1]
    for line in fetch(o["IndexUrl"]).decode().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("*") == name:
            return o["Url"], parts[0].lower()
    raise LookupError(f"{name} is not listed in {o['IndexUrl']}")


INDEXES = {"apt": from_apt, "dnf": from_dnf, "checksums": from_checksums}


def expected(o: dict[str, str], fetch: Any) -> tuple[str, str]:
    """(download URL, expected sha256 or "" for none) of one object: its catalog pin, else its index."""
    index = o.get("Index", "")
    if o.get("Sha256") or not index:
        return o["Url"], o.get("Sha256", "")
    return INDEXES[index](o, fetch)


def copy_objects(s3: Any, bucket: str, objects: list[dict[str, str]], fetch: Any = download) -> dict[str, Any]:
    """Copy ``objects`` into ``bucket``; returns the manifest (``{"objects": [...]}``). Raises :class:`MirrorFailed`
    for a required object that cannot be downloaded or whose sha256 differs from its pin."""
    rows = []
    indexes = functools.lru_cache(maxsize=8)(fetch)  # one download per index (NCCL's two packages share one)
    for o in objects:
        optional, index = o.get("Optional", "false") == "true", o.get("Index", "")
        row: dict[str, Any] = {"url": o["Url"], "key": o["Key"], "pinned": bool(o.get("Sha256")), "sha256": None}
        source = "the catalog pins" if o.get("Sha256") else f"the {index} index lists"
        try:
            url, want = expected(o, indexes)
            row.update(url=url, sha256=want or None)
            body = fetch(url)
        except Exception as e:  # network, HTTP error, index without the package
            problem = f"download of {o['Url']} failed: {type(e).__name__}: {e}"
        else:
            got = hashlib.sha256(body).hexdigest()
            problem = f"sha256 of {url} is {got}, {source} {want}" if want and got != want else ""
            if not problem:
                s3.put_object(Bucket=bucket, Key=o["Key"], Body=body, Metadata={"sha256": got, "source": url})
                s3.put_object(Bucket=bucket, Key=f"{o['Key']}.sha256", Body=f"{got}\n".encode())
                status = ("copied" if o.get("Sha256") else f"copied, sha256 from the {index} index" if index
                          else "copied, sha256 recorded at deploy (no pin)")
                row.update(sha256=got, status=status)
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
