"""The HyperPod EKS version pins agree (issue 27, "Kueue, operator and add-on versions are sourced and agree"):

- the Kueue the pinned task governance add-on installs is the one the manifests are rendered for, and it serves the
  API version of every Kueue object fmcluster renders (the served versions are read from the CRDs at the Kueue tag:
  ``fmcluster.catalog.eks.KUEUE_RELEASES``, cross-checked with the index of the vendored CRDs);
- the default Kubernetes version is one HyperPod and the training operator list, with a support calendar row;
- the pinned task governance add-on is one the training operator accepts;
- the conflict R-EKS-11 warns about is real: the Kueue the operator's page recommends serves none of the manifests'
  Kueue API version.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from fmcluster.blueprint.model import DEFAULT_EKS_KUBERNETES_VERSION, HYPERPOD_EKS_KUBERNETES_VERSIONS
from fmcluster.catalog import eks as cat
from fmcluster.catalog.support import support_entry
from fmcluster.orchestrators.hyperpod_eks.render_kubernetes import render_kubernetes_manifests
from fmcluster.resolved import resolve
from fmcluster.validation import load_blueprint, load_blueprint_text
from tests.conftest import ROOT
from tests.orchestrators.hyperpod_eks.test_k8s_manifests import CRDS, MIXED

KUEUE_GROUPS = (cat.KUEUE_API_GROUP, cat.KUEUE_CONFIG_API_GROUP)


def _kueue_objects(text: str | None) -> list[dict[str, Any]]:
    bp = load_blueprint(ROOT / "blueprints" / "hyperpod-eks.yaml") if text is None else load_blueprint_text(text).blueprint
    files = render_kubernetes_manifests(resolve(bp))
    docs = [d for path, body in files.items() if path.endswith(".yaml") for d in yaml.safe_load_all(body) if d]
    return [d for d in docs if d["apiVersion"].split("/")[0] in KUEUE_GROUPS]


@pytest.mark.parametrize("text", [None, MIXED], ids=["example", "mixed"])
def test_every_kueue_object_is_served_by_the_pinned_kueue(text: str | None) -> None:
    objects = _kueue_objects(text)
    assert {d["kind"] for d in objects} >= {"Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue", "Configuration"}
    unserved = [(d["kind"], d["apiVersion"]) for d in objects
                if not cat.kueue_serves(cat.KUEUE_VERSION, d["kind"], d["apiVersion"])]
    assert unserved == []


def test_the_pinned_kueue_is_the_one_task_governance_installs() -> None:
    assert cat.TASK_GOVERNANCE.version is not None
    assert cat.KUEUE_VERSION == cat.TASK_GOVERNANCE_KUEUE[cat.TASK_GOVERNANCE.version] == "v0.19.2"
    assert cat.KUEUE_VERSION in cat.KUEUE_RELEASES
    # v1beta2 is served from v0.15.0 on, and the pinned release is at least that
    assert cat.version_tuple(cat.KUEUE_VERSION) >= cat.version_tuple(cat.KUEUE_FIRST_V1BETA2)


def test_the_catalog_served_versions_match_the_vendored_crds() -> None:
    index = json.loads((CRDS / "index.json").read_text())
    kueue = [e for e in index if e["repo"] == "kubernetes-sigs/kueue"]
    assert {e["ref"] for e in kueue} == {cat.KUEUE_VERSION}
    pinned = cat.KUEUE_RELEASES[cat.KUEUE_VERSION]
    assert {e["kind"]: tuple(e["served_versions"]) for e in kueue} == pinned.served
    # the vendored schema is of the version the manifests use
    assert {e["apiVersion"] for e in kueue} == {f"{cat.KUEUE_API_GROUP}/{cat.KUEUE_API_VERSION}"}


@pytest.mark.parametrize(("release", "kind", "api_version", "served"), [
    ("v0.19.2", "ClusterQueue", "kueue.x-k8s.io/v1beta2", True),
    ("v0.19.2", "ClusterQueue", "kueue.x-k8s.io/v1beta1", True),
    ("v0.19.2", "Topology", "kueue.x-k8s.io/v1alpha1", False),
    ("v0.19.2", "Configuration", "config.kueue.x-k8s.io/v1beta2", True),
    ("v0.12.3", "ClusterQueue", "kueue.x-k8s.io/v1beta2", False),
    ("v0.12.3", "Topology", "kueue.x-k8s.io/v1alpha1", True),
    ("v0.12.3", "Configuration", "config.kueue.x-k8s.io/v1beta2", False),
    ("v0.19.2", "ClusterQueue", "config.kueue.x-k8s.io/v1beta2", False),  # a kind under the wrong group
    ("v0.99.0", "ClusterQueue", "kueue.x-k8s.io/v1beta2", False),  # a release the table does not hold
])
def test_kueue_serves(release: str, kind: str, api_version: str, served: bool) -> None:
    assert cat.kueue_serves(release, kind, api_version) is served


def test_the_operator_recommended_kueue_serves_no_manifest_version() -> None:
    """The premise of R-EKS-11: were the operator's recommended Kueue to serve the manifests, the warning would go."""
    objects = _kueue_objects(None)
    for release in cat.TRAINING_OPERATOR_RECOMMENDED_KUEUE:
        if release not in cat.KUEUE_RELEASES:
            continue  # v0.12.2 is not read; v0.12.3 of the same minor is
        assert not any(cat.kueue_serves(release, d["kind"], d["apiVersion"]) for d in objects)
    assert set(cat.TRAINING_OPERATOR_RECOMMENDED_KUEUE) & set(cat.KUEUE_RELEASES)


def test_task_governance_pin_is_one_the_operator_accepts() -> None:
    assert cat.version_tuple(cat.TASK_GOVERNANCE.version or "") >= cat.version_tuple(
        cat.TRAINING_OPERATOR_MIN_TASK_GOVERNANCE)


def test_default_kubernetes_version_is_listed_by_hyperpod_and_the_operator() -> None:
    v = DEFAULT_EKS_KUBERNETES_VERSION
    assert v in HYPERPOD_EKS_KUBERNETES_VERSIONS
    assert v in cat.TRAINING_OPERATOR_KUBERNETES
    entry = support_entry("kubernetes", v)
    assert entry is not None and entry.end is not None  # the support calendar knows it (R-SUP-1/2 judge it)
    # the newest version both list: a newer default would lose the operator, an older one support sooner
    assert v == max(set(HYPERPOD_EKS_KUBERNETES_VERSIONS) & set(cat.TRAINING_OPERATOR_KUBERNETES),
                    key=cat.version_tuple)
