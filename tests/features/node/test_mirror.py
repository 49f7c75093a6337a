"""The cluster's mirror (issue 23 item 4): what is mirrored, the deploy-time copy (handler), the construct, and the
node side reading it from S3 with stub ``aws``/``curl``."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fmcluster.features.node import handler_mirror as h
from fmcluster.features.node.plan_mirror import mirror_objects
from fmcluster.resolved import resolve
from fmcluster.resolved.mirror import mirror_bucket_suffix
from fmcluster.validation import load_blueprint
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
    assert set(s3.objects) - {"b/mirror/manifest.json"} == copied
    assert [r["status"] for r in manifest["objects"]] == statuses
    assert json.loads(s3.objects["b/mirror/manifest.json"]) == manifest
    for key in copied:
        assert s3.objects[key] == GOOD


def test_every_mirrored_object_has_a_catalog_pin() -> None:
    for p in sorted((ROOT / "blueprints").glob("*.yaml")):
        for o in mirror_objects(resolve(load_blueprint(p))):
            assert o.sha256 is not None and len(o.sha256) == 64, (p.stem, o.key)


def test_cluster_stack_copies_before_the_nodes() -> None:
    templates = synth_templates((ROOT / "blueprints" / "default.yaml").read_text())
    (cluster,) = [t for n, t in templates.items() if n.endswith("-cluster")]
    ((copy_id, copy),) = resources_of(cluster, "Custom::FmclusterMirror").items()
    assert copy["Properties"]["Objects"] == [o.as_property() for o in mirror_objects(resolve(load_blueprint(
        ROOT / "blueprints" / "default.yaml")))]
    (orch,) = resources_of(cluster, "Custom::PclusterCluster").values()
    assert copy_id in orch["DependsOn"]
    assert copy["Properties"]["ServiceTimeout"] == "720"  # over the function's 600 s, not CloudFormation's hour
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
