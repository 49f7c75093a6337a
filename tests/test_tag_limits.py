"""Tag limits of the APIs fmcluster tags resources through, against the most tags fmcluster writes on one resource.

ParallelCluster's own limit (40) is below the blueprint's maximum plus fmcluster's tag, so a rule refuses it (R-PC-7,
tests/orchestrators/parallelcluster/test_deploy_pcluster_rules.py). The other limits are 50 and cannot be reached: the
blueprint takes at most 40 tags (``Blueprint.tags``, organisation default tags merged in before the check) and fmcluster
adds at most 6 to one resource (a baked ParallelCluster AMI). This test fails when either side moves.

Sources: botocore's service models (read offline: sagemaker ``TagList`` for CreateCluster, eks ``TagMap``,
imagebuilder ``TagMap``, fsx ``Tags``, pcs ``RequestTagMap``); EC2's 50 user tags per resource, ``aws:`` tags not
counted (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html, "Tag restrictions"; not in the EC2
model, which has no bound).
"""

from __future__ import annotations

import botocore.session
import pytest

from fmcluster.blueprint.model import Blueprint
from fmcluster.orchestrators.parallelcluster.profile import parallelcluster_ami_tags
from fmcluster.resolved.cluster import BLUEPRINT_TAG

EC2_TAGS_PER_RESOURCE = 50


def _max(service: str, shape: str) -> int:
    return int(botocore.session.get_session().get_service_model(service).shape_for(shape).metadata["max"])


def _blueprint_max() -> int:
    bound = next(m.max_length for m in Blueprint.model_fields["tags"].metadata if hasattr(m, "max_length"))
    return int(bound)


#: The tags fmcluster adds to one resource beyond the blueprint's, per kind of resource (the most: a baked AMI of
#: ParallelCluster, features/node/construct_image.py ``ami_tags``).
ADDED = {
    "every resource (stacks/build.py)": [BLUEPRINT_TAG, "fmcluster:stack"],
    "PCS launch template (orchestrators/pcs/construct.py)": [BLUEPRINT_TAG, "fmcluster:stack", "fmcluster:node-group"],
    "baked ParallelCluster AMI": [BLUEPRINT_TAG, "fmcluster:image", "fmcluster:recipe-version",
                                  *parallelcluster_ami_tags("3.16.1", "ubuntu-22.04")],
}


@pytest.mark.parametrize(("service", "shape", "limit"), [
    ("sagemaker", "TagList", 50), ("eks", "TagMap", 50), ("imagebuilder", "TagMap", 50), ("fsx", "Tags", 50),
    ("pcs", "RequestTagMap", 200),
])
def test_api_tag_limits_are_botocores(service: str, shape: str, limit: int) -> None:
    assert _max(service, shape) == limit


def test_no_other_api_limit_can_be_reached() -> None:
    most = max(len(tags) for tags in ADDED.values())
    assert (_blueprint_max(), most) == (40, 6)
    for service, shape in (("sagemaker", "TagList"), ("eks", "TagMap"), ("imagebuilder", "TagMap"), ("fsx", "Tags"),
                           ("pcs", "RequestTagMap")):
        assert _blueprint_max() + most <= _max(service, shape), (service, shape)
    assert _blueprint_max() + most <= EC2_TAGS_PER_RESOURCE
