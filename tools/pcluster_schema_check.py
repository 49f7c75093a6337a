"""Load generated ParallelCluster configs with ParallelCluster's own schema.

Runs in the separate ``.venv-pcluster`` (aws-parallelcluster pins CDK v1 and cannot share the main
venv). CloudFormation intrinsics and dynamic references (``{{resolve:ssm:...}}``) in the generated config are
replaced by well-formed placeholder ids first, because they only resolve at deploy time. Loading a config with a capacity reservation makes
ParallelCluster call DescribeCapacityReservations (``SlurmClusterConfig.__init__``); that call is answered
offline with the reservation the config declares, and any other request is refused before it leaves the
machine (``tools/pcluster_validate.py`` runs the validators as well, from the synthesized templates).

Usage: python tools/pcluster_schema_check.py CONFIG.yaml...  -> prints one JSON line per file
{"file": ..., "ok": bool, "errors": {...}}; exit 0 when all load, 1 otherwise.
"""

from __future__ import annotations

import json
import sys

import yaml

PLACEHOLDERS = {
    "SubnetId": "subnet-0123456789abcdef0",
    "SubnetIds": "subnet-0123456789abcdef0",
    "AdditionalSecurityGroups": "sg-0123456789abcdef0",
    "SecurityGroups": "sg-0123456789abcdef0",
    "FileSystemId": "fs-0123456789abcdef0",
    "Script": "s3://cdk-hnb659fds-assets-123456789012-us-east-1/bootstrap.sh",
    "BucketName": "cdk-hnb659fds-assets-123456789012-us-east-1",
    "Name": "fmcluster-placement-group",
    "Id": "fmcluster-placement-group",
    "Policy": "arn:aws:iam::123456789012:policy/fmcluster-node",
    "CustomAmi": "ami-0123456789abcdef0",
}


def _resolve(node, key=None):
    if isinstance(node, dict):
        if len(node) == 1 and (next(iter(node)).startswith("Fn::") or next(iter(node)) == "Ref"):
            return PLACEHOLDERS.get(key, "placeholder")
        return {k: _resolve(v, k) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve(v, key) for v in node]
    if isinstance(node, str) and node.startswith("{{resolve:") and node.endswith("}}"):
        # a CloudFormation dynamic reference (bake mode's AMI from SSM): resolved at deploy, like an intrinsic
        return PLACEHOLDERS.get(key, "placeholder")
    return node


def main(paths: list[str]) -> int:
    from marshmallow import ValidationError
    from pcluster.aws.aws_api import AWSApi
    from pcluster.aws.common import Cache
    from pcluster.schemas.cluster_schema import ClusterSchema
    from pcluster_validate import _Error, declared_reservations, install_offline_hooks

    ok = True
    for path in paths:
        config = _resolve(yaml.safe_load(open(path)))

        def answer(service, op, params, config=config):
            if (service, op) == ("ec2", "DescribeCapacityReservations"):
                subnet = {"AvailabilityZone": config["Region"] + "a", "AvailabilityZoneId": "offline-az"}
                return 200, declared_reservations(config, params, lambda _sid: subnet)
            raise _Error("OfflineValidation", f"{service}.{op} is not answered by the schema check")

        # The schema asks boto for the region while building defaults; give it the config's own. Fresh clients per
        # file, so each config's reservation is answered from that config.
        install_offline_hooks(answer, config.get("Region", "us-east-1"))
        AWSApi.reset()
        Cache.clear_all()
        try:
            ClusterSchema(cluster_name="fmcluster-check").load(config)
            print(json.dumps({"file": path, "ok": True, "errors": {}}))
        except ValidationError as e:
            ok = False
            print(json.dumps({"file": path, "ok": False, "errors": e.messages}, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
