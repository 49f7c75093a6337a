"""Hardware and software facts as data plus typed accessors.

Imports nothing from ``fmcluster.constructs`` or ``fmcluster.stacks`` (one-way data flow).
"""

from fmcluster.catalog.instances import InstanceSpec, UnknownInstanceType, get_instance, known_instance_types

__all__ = ["InstanceSpec", "UnknownInstanceType", "get_instance", "known_instance_types"]
