"""Run ParallelCluster's create-time validation offline on a synthesized fmcluster cluster.

Runs in the separate ``.venv-pcluster`` (aws-parallelcluster pins CDK v1). It does what
``pcluster create-cluster --dryrun`` does, ``Cluster(name, config).validate_create_request(...)``
(aws/aws-parallelcluster 3.16.1 ``cli/src/pcluster/models/cluster.py``: the "cluster exists" check, the
schema, then every validator the config registers), with no AWS request leaving the machine:

1. every resource of the synthesized templates gets a deterministic physical id (``subnet-``, ``sg-``,
   ``fs-`` + 17 hex digits of a hash of stack and logical id; names for placement groups and buckets;
   ARNs for managed policies), and the ClusterConfiguration's intrinsics (``Ref``, ``Fn::GetAtt``,
   ``Fn::ImportValue``, ``Fn::Sub``, ``Fn::Join``) are evaluated against them;
2. every AWS call the validators make is answered through botocore's ``before-call`` event hook: instance
   types from data recorded from EC2 ``DescribeInstanceTypes`` (``tests/fixtures/pcluster/instance_types.json``),
   subnets, security groups (with their standalone ingress/egress rules), the placement groups and the
   FSx file system from the templates themselves; reservations as the blueprint declares them (fmcluster
   preflight checks the real ones); ``before-send`` refuses anything that would reach the network.
   A call nothing answers is reported as ``unanswered`` (and fails the validator that made it).

Usage: python tools/pcluster_validate.py TEMPLATE_DIR...  (each a folder of ``<stack>.template.json``)
-> one JSON line per folder: {"dir", "cluster", "failures": [{"level", "validator", "message"}], "unanswered": [...]}.
Exit 0 when no failure is an ERROR and every call was answered.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

ACCOUNT = "123456789012"
#: The pcluster package this harness runs in (.venv-pcluster).
PCLUSTER_VERSION = importlib.metadata.version("aws-parallelcluster")
ROOT = Path(__file__).resolve().parent.parent
INSTANCE_TYPES = ROOT / "tests" / "fixtures" / "pcluster" / "instance_types.json"


def _hex(*parts: str, n: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:n]


class Stacks:
    """The synthesized templates of one cluster, with a deterministic physical id per resource."""

    def __init__(self, folder: Path, region: str | None = None) -> None:
        self.templates = {p.name.removesuffix(".template.json"): json.loads(p.read_text())
                          for p in sorted(folder.glob("*.template.json"))}
        self.region = region or "us-east-1"
        self.exports: dict[str, tuple[str, Any]] = {}
        for stack, tpl in self.templates.items():
            for out in tpl.get("Outputs", {}).values():
                name = out.get("Export", {}).get("Name")
                if name is not None:
                    self.exports[self.value(stack, name)] = (stack, out["Value"])

    def baked_images(self) -> dict[str, dict[str, Any]]:
        """AMI id (as :meth:`value` maps the cluster stack's ``{{resolve:ssm:<name>}}``) -> the image stack's recipe
        for it (``AmiTags``, ``BlockDeviceMappings``), through its SSM parameter and AWS::ImageBuilder::Image."""
        out = {}
        for stack, _, param in self.resources("AWS::SSM::Parameter"):
            props = param.get("Properties", {})
            value = props.get("Value")
            if not (isinstance(value, dict) and value.get("Fn::GetAtt", [None, None])[1] == "ImageId"):
                continue
            image = self.templates[stack]["Resources"][value["Fn::GetAtt"][0]]["Properties"]
            recipe = self.templates[stack]["Resources"][image["ImageRecipeArn"]["Fn::GetAtt"][0]]["Properties"]
            out[f"ami-{_hex(props['Name'], n=17)}"] = recipe
        return out

    def resources(self, type_: str) -> list[tuple[str, str, dict[str, Any]]]:
        return [(s, lid, r) for s, t in self.templates.items() for lid, r in t.get("Resources", {}).items()
                if r.get("Type") == type_]

    def physical_id(self, stack: str, lid: str) -> str:
        res = self.templates[stack]["Resources"][lid]
        props, t = res.get("Properties", {}), res["Type"]
        prefix = {"AWS::EC2::Subnet": "subnet", "AWS::EC2::SecurityGroup": "sg", "AWS::FSx::FileSystem": "fs",
                  "AWS::EC2::VPC": "vpc", "AWS::EC2::RouteTable": "rtb", "AWS::EC2::InternetGateway": "igw",
                  "AWS::EC2::NatGateway": "nat", "AWS::EC2::LaunchTemplate": "lt"}.get(t)
        if prefix:
            return f"{prefix}-{_hex(stack, lid)}"
        if t == "AWS::EC2::PlacementGroup":
            return f"{stack}-{lid}".lower()[:255]
        if t == "AWS::S3::Bucket":
            name = props.get("BucketName")
            return self.value(stack, name) if name else f"{stack}-{lid}".lower()[:50] + "-" + _hex(stack, lid, n=12)
        if t == "AWS::IAM::ManagedPolicy":
            return f"arn:aws:iam::{ACCOUNT}:policy/{stack}-{lid}"
        if t in ("AWS::IAM::Role", "AWS::IAM::InstanceProfile"):
            return f"{stack}-{lid}"
        if t == "AWS::KMS::Key":
            return f"{_hex(stack, lid, n=8)}-0000-0000-0000-{_hex(stack, lid, n=12)}"
        if t == "AWS::SecretsManager::Secret":  # Ref of a secret is its ARN (name + 6 random characters)
            return f"arn:aws:secretsmanager:{self.region}:{ACCOUNT}:secret:{stack}-{lid}-{_hex(stack, lid, n=6)}"
        return f"{stack}-{lid}"

    def attribute(self, stack: str, lid: str, attr: str) -> Any:
        t = self.templates[stack]["Resources"][lid]["Type"]
        pid = self.physical_id(stack, lid)
        if attr in ("GroupId", "SubnetId", "VpcId", "Id", "GroupName", "FileSystemId"):
            return pid
        if attr == "Arn":
            service = {"AWS::S3::Bucket": "s3", "AWS::KMS::Key": "kms", "AWS::IAM::Role": "iam"}.get(t, "x")
            if service == "s3":
                return f"arn:aws:s3:::{pid}"
            if service == "kms":
                return f"arn:aws:kms:{self.region}:{ACCOUNT}:key/{pid}"
            return f"arn:aws:{service}::{ACCOUNT}:role/{pid}"
        if attr == "DNSName":
            return f"{pid}.fsx.{self.region}.amazonaws.com"
        if t == "AWS::RDS::DBCluster" and attr == "Endpoint.Address":
            return f"{pid}.cluster-{_hex(pid, n=12)}.{self.region}.rds.amazonaws.com".lower()
        if attr == "LustreMountName":
            return _hex(stack, lid, n=8)
        return f"{pid}.{attr}"

    def value(self, stack: str, node: Any) -> Any:
        """``node`` with every intrinsic evaluated in ``stack``."""
        if isinstance(node, list):
            return [self.value(stack, v) for v in node]
        if isinstance(node, str) and node.startswith("{{resolve:ssm:") and node.endswith("}}"):
            # a dynamic reference (bake mode's AMI id in SSM) resolves at deploy: a well-formed AMI id per name
            return f"ami-{_hex(node[len('{{resolve:ssm:'):-2], n=17)}"
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, arg), = node.items()
            if key == "Ref":
                return self._ref(stack, arg)
            if key == "Fn::GetAtt":
                lid, attr = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.attribute(stack, lid, attr)
            if key == "Fn::ImportValue":
                src, val = self.exports[self.value(stack, arg)]
                return self.value(src, val)
            if key == "Fn::Join":
                sep, parts = arg
                return sep.join(str(self.value(stack, p)) for p in parts)
            if key == "Fn::Sub":
                text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])

                def sub(m: re.Match[str]) -> str:
                    name = m.group(1)
                    if name in extra:
                        return str(self.value(stack, extra[name]))
                    if "." in name and not name.startswith("AWS::"):
                        lid, attr = name.split(".", 1)
                        return str(self.attribute(stack, lid, attr))
                    return str(self._ref(stack, name))

                return re.sub(r"\$\{([^}!]+)\}", sub, text)
            if key == "Fn::Select":
                return self.value(stack, arg[1])[int(arg[0])]
        return {k: self.value(stack, v) for k, v in node.items()}

    def _ref(self, stack: str, name: str) -> Any:
        pseudo = {"AWS::Region": self.region, "AWS::AccountId": ACCOUNT, "AWS::Partition": "aws",
                  "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": stack}
        if name in pseudo:
            return pseudo[name]
        return self.physical_id(stack, name)

    def by_physical_id(self, pid: str) -> tuple[str, str, dict[str, Any]] | None:
        for stack, tpl in self.templates.items():
            for lid, res in tpl.get("Resources", {}).items():
                if self.physical_id(stack, lid) == pid:
                    return stack, lid, res
        return None


class Aws:
    """Answers to the AWS calls ParallelCluster's validators make, from the templates and recorded data."""

    def __init__(self, stacks: Stacks, config: dict[str, Any]) -> None:
        self.s = stacks
        self.config = config
        recorded = json.loads(INSTANCE_TYPES.read_text())
        self.instance_types = recorded["InstanceTypes"]
        self.offered = set(recorded["RegionOfferings"].get(stacks.region, ()))
        self.unanswered: list[str] = []
        self.calls: list[str] = []

    # -- helpers -------------------------------------------------------------------------------
    def _subnet(self, sid: str) -> dict[str, Any]:
        found = self.s.by_physical_id(sid)
        if found is None:
            raise KeyError(sid)
        stack, _, res = found
        p = res.get("Properties", {})
        out = {"SubnetId": sid, "VpcId": self.s.value(stack, p.get("VpcId")), "CidrBlock": self.s.value(stack, p.get("CidrBlock")),
               "MapPublicIpOnLaunch": bool(p.get("MapPublicIpOnLaunch", False)), "State": "available",
               "AvailableIpAddressCount": 4000, "OwnerId": ACCOUNT}
        if "AvailabilityZone" in p:
            out["AvailabilityZone"] = self.s.value(stack, p["AvailabilityZone"])
            out["AvailabilityZoneId"] = "use1-az1"
        else:
            out["AvailabilityZoneId"] = self.s.value(stack, p.get("AvailabilityZoneId"))
            out["AvailabilityZone"] = self.s.region + "a"
        return out

    def _rules(self, stack: str, lid: str, gid: str, direction: str) -> list[dict[str, Any]]:
        """IpPermissions(Egress) of a security group: inline rules plus standalone Ingress/Egress resources."""
        res = self.s.templates[stack]["Resources"][lid]
        inline = res.get("Properties", {}).get("SecurityGroupIngress" if direction == "in" else "SecurityGroupEgress", [])
        rules = [(stack, r) for r in inline]
        rtype = "AWS::EC2::SecurityGroupIngress" if direction == "in" else "AWS::EC2::SecurityGroupEgress"
        for st, _, r in self.s.resources(rtype):
            if self.s.value(st, r["Properties"].get("GroupId")) == gid:
                rules.append((st, r["Properties"]))
        out = []
        if direction == "out" and "SecurityGroupEgress" not in res.get("Properties", {}):
            # EC2's default egress rule stays unless the group itself lists egress rules (CloudFormation
            # AWS::EC2::SecurityGroup, SecurityGroupEgress: "the default rule is removed only when you specify
            # one or more egress rules" there; standalone AWS::EC2::SecurityGroupEgress resources do not remove it).
            out.append({"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}], "Ipv6Ranges": [],
                        "UserIdGroupPairs": [], "PrefixListIds": []})
        for st, r in rules:
            r = self.s.value(st, r)
            perm: dict[str, Any] = {"IpProtocol": str(r.get("IpProtocol", "-1"))}
            if "FromPort" in r:
                perm["FromPort"], perm["ToPort"] = int(r["FromPort"]), int(r.get("ToPort", r["FromPort"]))
            perm["IpRanges"] = [{"CidrIp": r["CidrIp"]}] if "CidrIp" in r else []
            perm["Ipv6Ranges"] = [{"CidrIpv6": r["CidrIpv6"]}] if "CidrIpv6" in r else []
            peer = r.get("SourceSecurityGroupId") or r.get("DestinationSecurityGroupId")
            perm["UserIdGroupPairs"] = [{"GroupId": peer, "UserId": ACCOUNT}] if peer else []
            perm["PrefixListIds"] = [{"PrefixListId": r["DestinationPrefixListId"]}] if "DestinationPrefixListId" in r else []
            out.append(perm)
        return out

    def _security_group(self, gid: str) -> dict[str, Any]:
        found = self.s.by_physical_id(gid)
        if found is None:
            raise KeyError(gid)
        stack, lid, res = found
        p = res.get("Properties", {})
        return {"GroupId": gid, "GroupName": f"{stack}-{lid}", "VpcId": self.s.value(stack, p.get("VpcId")),
                "Description": p.get("GroupDescription", ""), "OwnerId": ACCOUNT,
                "IpPermissions": self._rules(stack, lid, gid, "in"), "IpPermissionsEgress": self._rules(stack, lid, gid, "out")}

    def _file_system(self, fsid: str) -> dict[str, Any]:
        found = self.s.by_physical_id(fsid)
        if found is None:
            raise KeyError(fsid)
        stack, lid, res = found
        p = self.s.value(stack, res.get("Properties", {}))
        subnets = p.get("SubnetIds", [])
        lustre = p.get("LustreConfiguration", {})
        return {"FileSystemId": fsid, "FileSystemType": "LUSTRE", "Lifecycle": "AVAILABLE", "OwnerId": ACCOUNT,
                "StorageCapacity": p.get("StorageCapacity"), "StorageType": p.get("StorageType", "SSD"),
                "VpcId": self._subnet(subnets[0])["VpcId"] if subnets else None, "SubnetIds": subnets,
                "NetworkInterfaceIds": [f"eni-{_hex(fsid, 'eni')}"],
                "DNSName": f"{fsid}.fsx.{self.s.region}.amazonaws.com", "FileSystemTypeVersion": p.get("FileSystemTypeVersion", "2.15"),
                "LustreConfiguration": {"DeploymentType": lustre.get("DeploymentType", "PERSISTENT_2"),
                                        "MountName": _hex(fsid, "mount", n=8),
                                        "PerUnitStorageThroughput": lustre.get("PerUnitStorageThroughput")},
                "_SecurityGroupIds": p.get("SecurityGroupIds", [])}

    # -- the calls -----------------------------------------------------------------------------
    def answer(self, service: str, op: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.calls.append(f"{service}.{op}")
        fn = getattr(self, f"{service.replace('-', '_')}_{op}", None)
        if fn is None:
            self.unanswered.append(f"{service}.{op}")
            return 400, {"Error": {"Code": "OfflineValidation", "Message": f"{service}.{op} is not answered offline"}}
        try:
            return 200, fn(params)
        except KeyError as e:
            self.unanswered.append(f"{service}.{op}({e})")
            return 400, {"Error": {"Code": "OfflineValidation", "Message": f"{service}.{op}: nothing known about {e}"}}

    def cloudformation_DescribeStacks(self, p: dict[str, Any]) -> dict[str, Any]:
        raise _Error("ValidationError", f"Stack with id {p.get('StackName')} does not exist")

    def ec2_DescribeInstanceTypes(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"InstanceTypes": [self.instance_types[t] for t in p.get("InstanceTypes", [])]}

    def ec2_DescribeSubnets(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"Subnets": [self._subnet(s) for s in p.get("SubnetIds", [])]}

    def ec2_DescribeSecurityGroups(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"SecurityGroups": [self._security_group(g) for g in p.get("GroupIds", [])]}

    def ec2_DescribePlacementGroups(self, p: dict[str, Any]) -> dict[str, Any]:
        names = {self.s.physical_id(s, lid): (s, r) for s, lid, r in self.s.resources("AWS::EC2::PlacementGroup")}
        out = []
        for n in p.get("GroupNames", []):
            stack, r = names[n]
            out.append({"GroupName": n, "State": "available", "Strategy": r["Properties"].get("Strategy", "cluster"),
                        "GroupId": f"pg-{_hex(n)}"})
        return {"PlacementGroups": out}

    def fsx_DescribeFileSystems(self, p: dict[str, Any]) -> dict[str, Any]:
        out = []
        for fsid in p.get("FileSystemIds", []):
            fs = self._file_system(fsid)
            fs.pop("_SecurityGroupIds")
            out.append(fs)
        return {"FileSystems": out}

    def ec2_DescribeNetworkInterfaces(self, p: dict[str, Any]) -> dict[str, Any]:
        out = []
        for stack, lid, _ in self.s.resources("AWS::FSx::FileSystem"):
            fs = self._file_system(self.s.physical_id(stack, lid))
            for eni in fs["NetworkInterfaceIds"]:
                if eni in p.get("NetworkInterfaceIds", []):
                    out.append({"NetworkInterfaceId": eni, "SubnetId": fs["SubnetIds"][0], "VpcId": fs["VpcId"],
                                "Groups": [{"GroupId": g} for g in fs["_SecurityGroupIds"]]})
        return {"NetworkInterfaces": out}


    def ec2_DescribeInstanceTypeOfferings(self, p: dict[str, Any]) -> dict[str, Any]:
        """Offered in the AZ of every subnet of the templates when the recorded Region offerings list the type."""
        wanted = [v for f in p.get("Filters", []) if f["Name"] == "instance-type" for v in f["Values"]]
        zones = sorted({self._subnet(self.s.physical_id(st, lid))["AvailabilityZone"]
                        for st, lid, _ in self.s.resources("AWS::EC2::Subnet")})
        return {"InstanceTypeOfferings": [
            {"InstanceType": t, "LocationType": "availability-zone", "Location": z}
            for t in (wanted or sorted(self.offered)) if t in self.offered for z in zones]}

    def secretsmanager_DescribeSecret(self, p: dict[str, Any]) -> dict[str, Any]:
        """A secret of the templates exists (PasswordSecretArnValidator of SlurmSettings.Database); others do not."""
        arns = {self.s.physical_id(st, lid) for st, lid, _ in self.s.resources("AWS::SecretsManager::Secret")}
        arn = p["SecretId"]
        if arn not in arns:
            raise _Error("ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
        return {"ARN": arn, "Name": arn.split(":secret:", 1)[1][:-7]}

    def iam_GetPolicy(self, p: dict[str, Any]) -> dict[str, Any]:
        arns = {self.s.physical_id(st, lid) for st, lid, _ in self.s.resources("AWS::IAM::ManagedPolicy")}
        arn = p["PolicyArn"]
        if arn not in arns and not arn.startswith("arn:aws:iam::aws:policy/"):
            raise _Error("NoSuchEntity", f"Policy {arn} was not found.")
        return {"Policy": {"Arn": arn, "PolicyName": arn.rsplit("/", 1)[-1], "DefaultVersionId": "v1"}}

    def s3_HeadObject(self, p: dict[str, Any]) -> dict[str, Any]:
        """The CDK asset bucket holds every asset (cdk deploy uploads them before the cluster stack); template
        buckets exist. Anything else is missing."""
        buckets = {self.s.physical_id(st, lid) for st, lid, _ in self.s.resources("AWS::S3::Bucket")}
        if p["Bucket"].startswith(f"cdk-hnb659fds-assets-{ACCOUNT}-") or p["Bucket"] in buckets:
            return {"ContentLength": 1, "ContentType": "text/x-sh"}
        raise _Error("404", "Not Found")


    def ec2_DescribeImages(self, p: dict[str, Any]) -> dict[str, Any]:
        """No recorded DescribeImages data: one image stands for the official ParallelCluster AMI of the config's
        OS and architecture (name ``aws-parallelcluster-<version>-<os>-...-<arch>``, tagged with the OS, a 40 GiB
        root volume, the size HeadNode-v3 documents as the official AMIs' root volume)."""
        names = [v for f in p.get("Filters", []) if f["Name"] == "name" for v in f["Values"]]
        ids = p.get("ImageIds") or [f"ami-{_hex(*names)}"]
        name = (names[0] if names else "aws-parallelcluster-custom").rstrip("*")
        arch = "arm64" if "arm64" in name else "x86_64"
        os_tag = self.config.get("Image", {}).get("Os", "ubuntu2404")
        baked = self.s.baked_images()  # a baked AMI answers with its recipe's tags and root volume

        def image(i: str) -> dict[str, Any]:
            recipe = baked.get(i)
            tags = dict(recipe.get("AmiTags", {})) if recipe else {"parallelcluster:os": os_tag}
            if "parallelcluster:version" in tags:
                # The image is built for the blueprint's ParallelCluster version, whose CLI validates it on a real
                # deploy; this harness runs the installed pcluster package (3.16.1 from PyPI; 3.16.3 is not
                # published there), so the version tag is compared with that one instead.
                tags["parallelcluster:version"] = PCLUSTER_VERSION
            size = recipe["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"] if recipe else 40
            return {
                "ImageId": i, "Name": f"fmcluster-{i}" if recipe else name, "State": "available", "Architecture": arch,
                "CreationDate": "2026-01-01T00:00:00.000Z", "RootDeviceName": "/dev/sda1", "RootDeviceType": "ebs",
                "VirtualizationType": "hvm", "OwnerId": ACCOUNT if recipe else "247102896272",
                "BlockDeviceMappings": [{"DeviceName": "/dev/sda1", "Ebs": {
                    "VolumeSize": size, "SnapshotId": f"snap-{_hex(i)}", "VolumeType": "gp3", "Encrypted": False}}],
                "Tags": [{"Key": k, "Value": str(v)} for k, v in tags.items()],
            }

        return {"Images": [image(i) for i in ids]}


    def ec2_DescribeCapacityReservations(self, p: dict[str, Any]) -> dict[str, Any]:
        return declared_reservations(self.config, p, self._subnet)


    def ec2_RunInstances(self, p: dict[str, Any]) -> dict[str, Any]:
        """The launch-template validators call RunInstances with DryRun; EC2's own parameter checks cannot run
        offline, so the dry run succeeds (any other call is refused)."""
        if p.get("DryRun"):
            raise _Error("DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
        raise _Error("OfflineValidation", "RunInstances without DryRun is never answered")



def declared_reservations(config: dict[str, Any], p: dict[str, Any], subnet_of: Any) -> dict[str, Any]:
    """DescribeCapacityReservations answered with each reservation as the config declares it (instance type,
    count, the queue subnet's AZ, a Capacity Block for CAPACITY_BLOCK queues); whether the real reservation
    matches is fmcluster preflight's check."""
    declared = {}
    for q in config.get("Scheduling", {}).get("SlurmQueues", []):
        subnet = subnet_of(q["Networking"]["SubnetIds"][0])
        for cr in q.get("ComputeResources", []):
            rid = (cr.get("CapacityReservationTarget") or {}).get("CapacityReservationId")
            if rid:
                block = q.get("CapacityType") == "CAPACITY_BLOCK"
                declared[rid] = {
                    "CapacityReservationId": rid, "InstanceType": cr["InstanceType"], "State": "active",
                    "AvailabilityZone": subnet["AvailabilityZone"], "AvailabilityZoneId": subnet["AvailabilityZoneId"],
                    "TotalInstanceCount": cr["MaxCount"], "AvailableInstanceCount": cr["MaxCount"],
                    "InstancePlatform": "Linux/UNIX", "Tenancy": "default", "OwnerId": ACCOUNT,
                    "InstanceMatchCriteria": "targeted", "ReservationType": "capacity-block" if block else "default",
                }
    return {"CapacityReservations": [declared[r] for r in p.get("CapacityReservationIds", [])]}


class _Error(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def install_offline_hooks(answer: Any, region: str) -> None:
    """Answer every AWS call of boto3's default session with ``answer(service, operation, params) -> (status,
    body)`` (botocore's ``before-call`` hook) and refuse any request that would reach the network (``before-send``).
    Fake credentials are set so nothing looks for real ones."""
    import boto3
    from botocore.awsrequest import AWSResponse

    os.environ.update({"AWS_DEFAULT_REGION": region, "AWS_ACCESS_KEY_ID": "offline", "AWS_SECRET_ACCESS_KEY": "offline"})
    for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
        os.environ.pop(var, None)
    boto3.setup_default_session(region_name=region)
    session = boto3.DEFAULT_SESSION

    def keep_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["offline_api_params"] = dict(params)  # before-call only sees the serialized request

    def before_call(model: Any, context: dict[str, Any], **_: Any) -> Any:
        try:
            status, body = answer(model.service_model.service_name, model.name, context.get("offline_api_params", {}))
        except _Error as e:
            status, body = 400, {"Error": {"Code": e.code, "Message": e.message}}
        body.setdefault("ResponseMetadata", {"HTTPStatusCode": status, "RequestId": "offline"})
        return AWSResponse("https://offline.invalid", status, {}, None), body

    def before_send(request: Any, **_: Any) -> Any:
        raise RuntimeError(f"offline validation: a request would have left the machine: {request.url}")

    session.events.register("before-parameter-build", keep_params)
    session.events.register("before-call", before_call)
    session.events.register("before-send", before_send)


def validate(folder: Path) -> dict[str, Any]:
    import yaml

    probe = Stacks(folder)
    [(stack, lid, res)] = probe.resources("Custom::PclusterCluster")
    raw = res["Properties"]["ClusterConfiguration"]
    stacks = Stacks(folder, region=raw.get("Region"))
    config = stacks.value(stack, raw)
    name = stacks.value(stack, res["Properties"]["ClusterName"])
    aws = Aws(stacks, config)
    install_offline_hooks(aws.answer, stacks.region)

    from pcluster.aws.aws_api import AWSApi
    from pcluster.models.cluster import Cluster
    from pcluster.validators import common
    from pcluster.validators.common import FailureLevel

    ran: set[str] = set()
    sync_execute, async_execute = common.Validator.execute, common.AsyncValidator.execute_async

    def execute(self: Any, *a: Any, **k: Any) -> Any:
        ran.add(type(self).__name__)
        return sync_execute(self, *a, **k)

    async def execute_async(self: Any, *a: Any, **k: Any) -> Any:
        ran.add(type(self).__name__)
        return await async_execute(self, *a, **k)

    common.Validator.execute, common.AsyncValidator.execute_async = execute, execute_async  # type: ignore[method-assign]
    from pcluster.aws.common import Cache

    AWSApi.reset()  # new clients (from the session with this cluster's hooks) and no cached answers of another
    Cache.clear_all()
    failures: list[dict[str, str]] = []
    cluster = Cluster(name, yaml.safe_dump(config, sort_keys=False))
    try:
        found = cluster.validate_create_request(validator_suppressors=set(), validation_failure_level=FailureLevel.ERROR)
    except Exception as e:  # ConfigValidationError carries the failures; anything else is reported as it is
        found = getattr(e, "validation_failures", None) or []
        if os.environ.get("PCLUSTER_VALIDATE_DEBUG"):
            import traceback

            traceback.print_exc()
        if not found:
            failures.append({"level": "ERROR", "validator": type(e).__name__, "message": str(e)})
    for f in found:
        failures.append({"level": f.level.name, "validator": f.validator_type, "message": f.message})
    return {"dir": str(folder), "cluster": name, "failures": failures, "unanswered": sorted(set(aws.unanswered)),
            "calls": sorted(set(aws.calls)), "validators": sorted(ran)}


def main(folders: list[str]) -> int:
    ok = True
    for folder in folders:
        result = validate(Path(folder))
        ok = ok and not result["unanswered"] and all(f["level"] != "ERROR" for f in result["failures"])
        print(json.dumps(result, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
