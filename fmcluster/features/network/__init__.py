"""Network: the VPC, GPU subnet, EFA security group and placement groups (construct.py), the <name>-network stack
(stack.py), the GPU subnet usage (plan.py) and the network and subnet rules (rules.py, rules_subnet.py); docs/capacity.md
"Subnet sizing". The VPC address arithmetic is core data (fmcluster/catalog/vpc_layout.py)."""
