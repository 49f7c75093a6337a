"""Names of the cluster's mirror (issue 23 item 4): the bucket a deploy copies the boot's outside downloads into,
and the key of each file. One definition for the plan, the construct and the node scripts (which compute the bucket
from their account: ``fmc-mirror-<account id><suffix>``)."""

from __future__ import annotations

import hashlib

MIRROR_PREFIX = "mirror"
#: Template metadata key of a resource whose contents every deployment re-creates (the mirror bucket: copies of
#: public files), so ``fmcluster diff`` does not treat replacing or moving it as losing data.
REGENERATED = "fmcluster:regenerated"
BUCKET_PREFIX = "fmc-mirror-"


def mirror_key(component: str, url: str) -> str:
    """``mirror/<component>/<file name of url>``; ``url`` may hold a shell variable (``${FMC_ARCH}``)."""
    return f"{MIRROR_PREFIX}/{component}/{url.rsplit('/', 1)[-1]}"


def mirror_bucket_suffix(cluster_name: str, region: str) -> str:
    """``-<10 hex>`` from the cluster name and Region: the bucket is ``fmc-mirror-<account id><suffix>`` (34
    characters, within S3's 63)."""
    return "-" + hashlib.sha256(f"{cluster_name}:{region}".encode()).hexdigest()[:10]
