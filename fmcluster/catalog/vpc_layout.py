"""The address layout of a new VPC, as CDK allocates it: which GPU subnet a VPC holds, and the /28 pairs fmcluster adds
at its end for a second AZ (the EKS control plane, the Slurm accounting database). Pure address arithmetic, read by
the subnet rules, the resolved subnet usage, the network construct and the EKS and accounting plans.
"""

from __future__ import annotations

import ipaddress

#: Shortest prefix the model allows for the GPU subnet (NetworkSpec.gpu_subnet_prefix_length ge=16).
MIN_PREFIX = 16
#: AWS's smallest subnet.
MAX_PREFIX = 28
#: The public subnet (NAT gateway) of a new VPC; features/network/construct.py creates it before the GPU subnet.
PUBLIC_SUBNET_PREFIX = 24
#: VPC prefix lengths the model allows (NetworkSpec.vpc_cidr: /16 to /24).
VPC_PREFIXES = range(16, 25)


def vpc_holds(vpc_prefix: int, gpu_prefix: int) -> bool:
    """Whether a new VPC of ``/vpc_prefix`` holds the public /24 and a ``/gpu_prefix`` GPU subnet.

    CDK's ``ec2.Vpc`` allocates the subnets in configuration order (public first), each at the next
    address aligned to its own size, and fails at synth ("1 of /N exceeds remaining space of ...")
    when one does not fit: aws-cdk-lib ``aws-ec2/lib/network-util.ts`` ``NetworkBuilder.addSubnets``.
    """
    return _allocated(gpu_prefix) <= 2 ** (32 - vpc_prefix)


def _allocated(gpu_prefix: int) -> int:
    """Addresses from the start of a new VPC up to the end of its ``/gpu_prefix`` GPU subnet (CDK's allocation:
    the public /24 first, each subnet aligned to its own size; :func:`vpc_holds`)."""
    offset = 0
    for prefix in (PUBLIC_SUBNET_PREFIX, gpu_prefix):
        size = 2 ** (32 - prefix)
        offset = -(-offset // size) * size + size
    return offset


def tail_subnet_pair(vpc_cidr: str, gpu_prefix: int, *, blocks_from_end: int) -> tuple[str, str] | None:
    """Two adjacent /28 subnets (AWS's smallest) that fmcluster adds to a new VPC in a second AZ's pair: the
    ``blocks_from_end``-th and the next /28 block counted from the end of ``vpc_cidr`` (2: the last two). ``None``
    when they would overlap the public /24 or the ``/gpu_prefix`` GPU subnet CDK allocates from the start (the VPC
    is full). Users: the EKS control-plane subnets (last two blocks) and the Slurm accounting database subnets (the
    two before)."""
    net = ipaddress.IPv4Network(vpc_cidr)
    block = 2 ** (32 - MAX_PREFIX)
    first = net.num_addresses - blocks_from_end * block
    if first < _allocated(gpu_prefix):
        return None
    base = int(net.network_address)
    return (str(ipaddress.IPv4Network((base + first, MAX_PREFIX))),
            str(ipaddress.IPv4Network((base + first + block, MAX_PREFIX))))


def largest_gpu_subnet(vpc_prefix: int) -> int | None:
    """Shortest GPU-subnet prefix (largest subnet) a ``/vpc_prefix`` VPC holds; None: none fits."""
    return next((g for g in range(MIN_PREFIX, MAX_PREFIX + 1) if vpc_holds(vpc_prefix, g)), None)


def smallest_vpc_for(gpu_prefix: int) -> int | None:
    """Longest VPC prefix (smallest VPC) the model allows that holds a ``/gpu_prefix`` GPU subnet; None: none."""
    return next((v for v in reversed(VPC_PREFIXES) if vpc_holds(v, gpu_prefix)), None)


#: Largest GPU subnet any new VPC holds (/17: a /16 VPC also holds the public /24).
LARGEST_GPU_PREFIX: int = largest_gpu_subnet(min(VPC_PREFIXES)) or MAX_PREFIX
