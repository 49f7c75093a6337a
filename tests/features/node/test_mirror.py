"""The cluster's mirror (issue 23 item 4): what is mirrored, the deploy-time copy (handler), the construct, and the
node side reading it from S3 with stub ``aws``/``curl``."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import lzma
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fmcluster.features.node import handler_mirror as h
from fmcluster.features.node.plan_mirror import mirror_objects
from fmcluster.features.observability.pins import DCGM_EXPORTER
from fmcluster.resolved import resolve
from fmcluster.resolved.mirror import INDEX_KINDS, mirror_bucket_suffix
from fmcluster.validation import load_blueprint, load_blueprint_text
from tests.blueprints import example, merge, to_yaml
from tests.conftest import ROOT, resources_of, synth_templates

GOOD, BAD = b"archive bytes", b"something else"
PIN = hashlib.sha256(GOOD).hexdigest()


class FakeS3:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def put_object(self, Bucket: str, Key: str, Body: bytes, **kw: Any) -> None:  # noqa: N803 (boto3's names)
        self.objects[f"{Bucket}/{Key}"] = Body


def obj(url: str, sha: str, optional: bool) -> dict[str, str]:
    return {"Url": url, "Key": f"mirror/x/{url.rsplit('/', 1)[-1]}", "Sha256": sha, "Optional": str(optional).lower()}


def fetch(url: str) -> bytes:
    if "missing" in url:
        raise OSError("HTTP Error 404")
    return BAD if "bad" in url else GOOD


# (objects, copied keys, manifest statuses, failure text or "")
COPIES = [
    ([obj("https://e/a.tgz", PIN, False)], {"b/mirror/x/a.tgz"}, ["copied"], ""),
    ([obj("https://e/a.tgz", "", True)], {"b/mirror/x/a.tgz"}, ["copied, sha256 recorded at deploy (no pin)"], ""),
    ([obj("https://e/bad.tgz", PIN, True)], set(), [f"skipped (optional): sha256 of https://e/bad.tgz is "
                                                    f"{hashlib.sha256(BAD).hexdigest()}, the catalog pins {PIN}"], ""),
    ([obj("https://e/missing.tgz", PIN, True)], set(),
     ["skipped (optional): download of https://e/missing.tgz failed: OSError: HTTP Error 404"], ""),
    ([obj("https://e/bad.tgz", PIN, False)], set(), [], "sha256 of https://e/bad.tgz is"),
]


@pytest.mark.parametrize(("objects", "copied", "statuses", "failure"), COPIES)
def test_copy_objects(objects: list[dict[str, str]], copied: set[str], statuses: list[str], failure: str) -> None:
    s3 = FakeS3()
    if failure:
        with pytest.raises(h.MirrorFailed, match=failure):
            h.copy_objects(s3, "b", objects, fetch)
        assert s3.objects == {}
        return
    manifest = h.copy_objects(s3, "b", objects, fetch)
    assert set(s3.objects) - {"b/mirror/manifest.json"} == copied | {f"{k}.sha256" for k in copied}
    assert [r["status"] for r in manifest["objects"]] == statuses
    assert json.loads(s3.objects["b/mirror/manifest.json"]) == manifest
    for key in copied:
        assert s3.objects[key] == GOOD
        assert s3.objects[f"{key}.sha256"] == f"{PIN}\n".encode()  # what a node checks an unpinned object against


EXPORTER = DCGM_EXPORTER.packages[0]
CUDA_REPO = "https://developer.download.nvidia.com/compute/cuda/repos/"


def _exporter_key(os_name: str, arch: str, ext: str) -> str:
    return f"mirror/dcgm-exporter/{os_name}/{arch}/{EXPORTER}-{DCGM_EXPORTER.version}.{ext}"


def _resolved(example_name: str, patch: dict[str, Any] | None = None) -> Any:
    return resolve(load_blueprint_text(to_yaml(merge(example(example_name), patch or {}))).blueprint)


# (example, patch, the dcgm-exporter objects as (key, repository URL, index, index architecture)): one per GPU group's
# OS and CPU architecture, from NVIDIA's CUDA repository; none where fmcluster's exporters do not run
DCGM_OBJECTS: list[tuple[str, dict[str, Any] | None, list[tuple[str, str, str, str]]]] = [
    ("default", None, [(_exporter_key("ubuntu-22.04", "x86_64", "deb"), f"{CUDA_REPO}ubuntu2204/x86_64/", "apt",
                        "amd64")]),
    ("p6-b300", None, [(_exporter_key("ubuntu-24.04", "x86_64", "deb"), f"{CUDA_REPO}ubuntu2404/x86_64/", "apt",
                        "amd64")]),
    ("p6e-gb200", None, [(_exporter_key("ubuntu-22.04", "arm64", "deb"), f"{CUDA_REPO}ubuntu2204/sbsa/", "apt",
                          "arm64")]),
    ("default", {"software": {"os": "amazon-linux-2023"}},
     [(_exporter_key("amazon-linux-2023", "x86_64", "rpm"), f"{CUDA_REPO}amzn2023/x86_64/", "dnf", "x86_64")]),
    ("default", {"observability": {"metrics": "none"}}, []),  # metrics off
    ("hyperpod-eks", None, []),  # the HyperPod observability add-on runs its own exporters
]


@pytest.mark.parametrize(("example_name", "patch", "expected"), DCGM_OBJECTS,
                         ids=["ubuntu2204", "ubuntu2404", "arm64", "al2023", "metrics-off", "hyperpod-eks"])
def test_gpu_groups_mirror_the_pinned_dcgm_exporter_package(example_name: str, patch: dict[str, Any] | None,
                                                            expected: list[tuple[str, str, str, str]]) -> None:
    objects = [o for o in mirror_objects(_resolved(example_name, patch)) if o.component == "dcgm-exporter"]
    assert [(o.key, o.url, o.index, o.arch) for o in objects] == expected
    for o in objects:  # the pin's package and version (any packaging revision), checked at deploy, optional
        assert (o.package, o.version, o.sha256, o.optional) == (EXPORTER, f"{DCGM_EXPORTER.version}-*", None, True)


def test_every_mirrored_object_has_a_pin_or_an_index() -> None:
    """Nothing is copied on trust: each object has the catalog's sha256 or the publisher's index to take it from."""
    for p in sorted((ROOT / "blueprints").glob("*.yaml")):
        for o in mirror_objects(resolve(load_blueprint(p))):
            assert (o.sha256 is not None and len(o.sha256) == 64) or o.index in INDEX_KINDS, (p.stem, o.key)
            assert (o.component == "nccl") == (not o.optional), (p.stem, o.key)  # only NCCL is required


# ---- the hash from the publisher's index (NCCL: NVIDIA's CUDA repository; the Slurm exporter: its checksum list) ----
DEB, RPM = b"a .deb", b"an .rpm"
APT_BASE = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/"
DNF_BASE = "https://developer.download.nvidia.com/compute/cuda/repos/amzn2023/x86_64/"


def _paragraph(package: str, version: str, arch: str, sha: str) -> str:
    """One paragraph of an apt Packages index (https://wiki.debian.org/DebianRepository/Format, Packages Indices); the
    file name leaves out the version's epoch, as Debian archives name files (dpkg-name(1))."""
    return (f"Package: {package}\nVersion: {version}\nArchitecture: {arch}\nDepends: libc6\n"
            f"Filename: ./{package}_{version.split(':', 1)[-1]}_{arch}.deb\nSize: 6\nSHA256: {sha}\nDescription: NCCL\n text\n")


def _primary(rows: list[tuple[str, str, str, str, str]]) -> bytes:
    """dnf primary metadata (createrepo_c's primary.xml: name, arch, version ver/rel, checksum, location href)."""
    pkgs = "".join(f'<package type="rpm"><name>{n}</name><arch>{a}</arch><version epoch="0" ver="{v}" rel="{r}"/>'
                   f'<checksum type="sha256" pkgid="YES">{c}</checksum><location href="{n}-{v}-{r}.{a}.rpm"/></package>'
                   for n, a, v, r, c in rows)
    return ('<?xml version="1.0" encoding="UTF-8"?><metadata xmlns="http://linux.duke.edu/metadata/common" '
            f'xmlns:rpm="http://linux.duke.edu/metadata/rpm" packages="{len(rows)}">{pkgs}</metadata>').encode()


REPOMD = (b'<?xml version="1.0" encoding="UTF-8"?><repomd xmlns="http://linux.duke.edu/metadata/repo">'
          b'<data type="filelists"><location href="repodata/f-filelists.xml.gz"/></data>'
          b'<data type="primary"><checksum type="sha256">x</checksum><location href="repodata/p-primary.xml.gz"/></data>'
          b"</repomd>")
DEB_SHA, RPM_SHA = hashlib.sha256(DEB).hexdigest(), hashlib.sha256(RPM).hexdigest()
WEB = {
    APT_BASE + "Packages.gz": gzip.compress("\n".join([
        _paragraph("libnccl2", "2.27.7-1+cuda12.8", "amd64", "0" * 64),
        _paragraph("libnccl2", "2.27.7-1+cuda12.9", "amd64", DEB_SHA),  # the highest match of the pin's glob
        _paragraph("libnccl2", "2.27.7-1+cuda12.9", "arm64", "1" * 64),
        _paragraph("libnccl2", "2.28.3-1+cuda12.9", "amd64", "2" * 64),
        _paragraph("libnccl2", "2.27.7-1+cuda13.0", "amd64", "3" * 64)]).encode()),
    APT_BASE + "libnccl2_2.27.7-1+cuda12.9_amd64.deb": DEB,
    DNF_BASE + "repodata/repomd.xml": REPOMD,
    DNF_BASE + "repodata/p-primary.xml.gz": gzip.compress(_primary([
        ("libnccl", "x86_64", "2.27.7", "1+cuda12.9", RPM_SHA), ("libnccl", "aarch64", "2.27.7", "1+cuda12.9", "4" * 64),
        ("libnccl-devel", "x86_64", "2.27.7", "1+cuda12.9", "5" * 64)])),
    DNF_BASE + "libnccl-2.27.7-1+cuda12.9.x86_64.rpm": RPM,
    DNF_BASE + "libnccl-devel-2.27.7-1+cuda12.9.x86_64.rpm": RPM,  # not what the index lists for it
    "https://r/v1/p_1_checksums.txt": f"{'6' * 64}  p_1_linux_arm64.tar.gz\n{PIN}  p_1_linux_amd64.tar.gz\n".encode(),
    "https://r/v1/p_1_linux_amd64.tar.gz": GOOD,
}


def web(url: str) -> bytes:
    if url not in WEB:
        raise OSError(f"HTTP Error 404: Not Found ({url})")
    return WEB[url]


def pkg(base: str, index: str, package: str, arch: str, version: str = "2.27.7-1+cuda12*", optional: bool = False
        ) -> dict[str, str]:
    return {"Url": base, "Key": f"mirror/nccl/{package}", "Sha256": "", "Optional": str(optional).lower(),
            "Index": index, "IndexUrl": "", "Package": package, "Version": version, "Arch": arch}


CHECKSUMS = {"Url": "https://r/v1/p_1_linux_amd64.tar.gz", "Key": "mirror/p/p.tgz", "Sha256": "", "Optional": "true",
             "Index": "checksums", "IndexUrl": "https://r/v1/p_1_checksums.txt", "Package": "", "Version": "",
             "Arch": ""}
# NVIDIA's Ubuntu 24.04 repository, for the dcgm-exporter package: apt versions carry an epoch (Debian Policy 5.6.12,
# [epoch:]upstream_version[-debian_revision]), the object's glob does not; 4.7.10 and 4.8.2 must not be taken
APT_2404 = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/"
DCGM_DEB = b"dcgm-exporter .deb"
WEB.update({
    APT_2404 + "Packages.gz": gzip.compress("\n".join([
        _paragraph(EXPORTER, f"1:{DCGM_EXPORTER.version}-1", "amd64", hashlib.sha256(DCGM_DEB).hexdigest()),
        _paragraph(EXPORTER, f"1:{DCGM_EXPORTER.version}0-1", "amd64", "7" * 64),
        _paragraph(EXPORTER, "1:4.8.2-1", "amd64", "8" * 64)]).encode()),
    APT_2404 + f"{EXPORTER}_{DCGM_EXPORTER.version}-1_amd64.deb": DCGM_DEB,
})
# the dcgm-exporter object of a Ubuntu 24.04 example, as the plan builds it
(DCGM_EXPORTER_OBJECT,) = [o.as_property() for o in mirror_objects(resolve(load_blueprint(ROOT / "blueprints/p6-b300.yaml")))
                           if o.component == "dcgm-exporter"]

# (object, the file the deploy downloads, the sha256 it expects) from the index
RESOLVED = [
    (pkg(APT_BASE, "apt", "libnccl2", "amd64"), APT_BASE + "libnccl2_2.27.7-1+cuda12.9_amd64.deb", DEB_SHA),
    (pkg(DNF_BASE, "dnf", "libnccl", "x86_64"), DNF_BASE + "libnccl-2.27.7-1+cuda12.9.x86_64.rpm", RPM_SHA),
    (CHECKSUMS, CHECKSUMS["Url"], PIN),
    (DCGM_EXPORTER_OBJECT, APT_2404 + f"{EXPORTER}_{DCGM_EXPORTER.version}-1_amd64.deb",
     hashlib.sha256(DCGM_DEB).hexdigest()),
]


@pytest.mark.parametrize(("o", "url", "sha"), RESOLVED, ids=["apt", "dnf", "checksums", "apt-epoch-dcgm-exporter"])
def test_the_deploy_takes_the_hash_from_the_publishers_index(o: dict[str, str], url: str, sha: str) -> None:
    assert h.expected(o, web) == (url, sha)
    s3 = FakeS3()
    manifest = h.copy_objects(s3, "b", [o], web)
    assert s3.objects[f"b/{o['Key']}"] == web(url)
    assert s3.objects[f"b/{o['Key']}.sha256"] == f"{sha}\n".encode()
    assert manifest["objects"][0]["status"] == f"copied, sha256 from the {o['Index']} index"
    assert manifest["objects"][0]["url"] == url


# (object, failure): a required NCCL package the index does not list, or whose file differs, fails the deployment
FAILURES = [
    (pkg(APT_BASE, "apt", "libnccl2", "amd64", version="2.99.9-1+cuda12*"),
     r"libnccl2 2.99.9-1\+cuda12\* \(amd64\) is not in the index of " + APT_BASE),
    (pkg(DNF_BASE, "dnf", "libnccl-devel", "x86_64"),
     rf"sha256 of {DNF_BASE}libnccl-devel-2.27.7-1\+cuda12.9.x86_64.rpm is {RPM_SHA}, the dnf index lists {'5' * 64}"),
]


@pytest.mark.parametrize(("o", "failure"), FAILURES, ids=["not-in-index", "file-differs"])
def test_a_required_package_that_cannot_be_checked_fails_the_deployment(o: dict[str, str], failure: str) -> None:
    s3 = FakeS3()
    with pytest.raises(h.MirrorFailed, match=failure):
        h.copy_objects(s3, "b", [o], web)
    assert s3.objects == {}


def test_an_optional_object_not_in_its_checksum_list_is_skipped() -> None:
    o = {**CHECKSUMS, "Url": "https://r/v1/p_1_linux_riscv64.tar.gz"}
    manifest = h.copy_objects(FakeS3(), "b", [o], web)
    assert manifest["objects"][0]["status"] == ("skipped (optional): download of https://r/v1/p_1_linux_riscv64.tar.gz "
                                                "failed: LookupError: p_1_linux_riscv64.tar.gz is not listed in "
                                                "https://r/v1/p_1_checksums.txt")


def test_cluster_stack_copies_before_the_nodes() -> None:
    templates = synth_templates((ROOT / "blueprints" / "default.yaml").read_text())
    (cluster,) = [t for n, t in templates.items() if n.endswith("-cluster")]
    ((copy_id, copy),) = resources_of(cluster, "Custom::FmclusterMirror").items()
    assert copy["Properties"]["Objects"] == [o.as_property() for o in mirror_objects(resolve(load_blueprint(
        ROOT / "blueprints" / "default.yaml")))]
    (orch,) = resources_of(cluster, "Custom::PclusterCluster").values()
    assert copy_id in orch["DependsOn"]
    assert copy["Properties"]["ServiceTimeout"] == "960"  # over the function's 840 s, not CloudFormation's hour
    buckets = resources_of(cluster, "AWS::S3::Bucket")
    (name,) = [b["Properties"]["BucketName"] for b in buckets.values() if "BucketName" in b["Properties"]]
    assert name == {"Fn::Join": ["", ["fmc-mirror-", {"Ref": "AWS::AccountId"}, mirror_bucket_suffix("llm-train",
                                                                                                   "us-east-1")]]}


def _node_script(tmp_path: Path, account: str, body: bytes) -> Path:
    """A script with the rendered mirror functions; stub curl (IMDS) and aws (S3) on PATH."""
    from fmcluster.templates.render import render

    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "curl").write_text("#!/bin/bash\n"
                                'case "$*" in *api/token*) echo TOKEN ;; *identity/document*) '
                                f'printf \'{{\\n  "accountId" : "{account}",\\n  "region" : "us-east-1"\\n}}\\n\' ;; '
                                "*) exit 7 ;; esac\n")
    (tmp_path / "object").write_bytes(body)
    (stubs / "aws").write_text('#!/bin/bash\necho "$*" >> "$(dirname "$0")/../aws.log"\n'
                               f'[[ "$*" == *"s3://fmc-mirror-{account}-abc/mirror/x/a.tgz"* ]] || exit 1\n'
                               f'cp {tmp_path / "object"} "${{@: -1}}"\n')
    for f in ("curl", "aws"):
        os.chmod(stubs / f, 0o755)
    script = tmp_path / "t.sh"
    script.write_text("set -Eeuo pipefail\nlog() { echo \"$*\"; }\nwarn() { log \"WARNING: $*\"; }\n"
                      + render("mirror.sh.j2", {}) + "\nFMC_MIRROR_REGION=us-east-1 FMC_MIRROR_BUCKET_SUFFIX=-abc "
                      f'fetch_mirror mirror/x/a.tgz "{tmp_path}/out/a.tgz" {PIN} && echo OK || echo MISSING\n')
    return script


# (account in the identity document, object body, last line, file left)
NODE = [("123456789012", GOOD, "OK", True), ("123456789012", BAD, "MISSING", False), ("", GOOD, "MISSING", False)]


@pytest.mark.parametrize(("account", "body", "last", "kept"), NODE)
def test_node_reads_the_mirror_from_s3(tmp_path: Path, account: str, body: bytes, last: str, kept: bool) -> None:
    script = _node_script(tmp_path, account, body)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    run = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert run.stdout.strip().splitlines()[-1] == last, run.stdout + run.stderr
    assert (tmp_path / "out" / "a.tgz").exists() is kept


# (primary metadata file name, its bytes): createrepo_c writes primary.xml compressed per its --general-compress-type
PRIMARY = b"<metadata/>"
COMPRESSED = [("p-primary.xml.gz", gzip.compress(PRIMARY)), ("p-primary.xml.xz", lzma.compress(PRIMARY)),
              ("p-primary.xml.bz2", bz2.compress(PRIMARY)), ("p-primary.xml", PRIMARY)]


@pytest.mark.parametrize(("href", "body"), COMPRESSED, ids=[c[0] for c in COMPRESSED])
def test_primary_metadata_is_read_in_each_compression(href: str, body: bytes) -> None:
    assert h._decompress(href, body) == PRIMARY


def test_primary_metadata_in_an_unknown_compression_is_refused_with_its_name() -> None:
    with pytest.raises(LookupError, match=r"primary metadata p-primary.xml.lz4: compression not supported"):
        h._decompress("p-primary.xml.lz4", b"x")
