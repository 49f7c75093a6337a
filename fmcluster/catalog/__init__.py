"""Hardware and software facts as data plus typed accessors.

Imports nothing from ``fmcluster.constructs`` or ``fmcluster.stacks`` (one-way data flow).
"""

from fmcluster.catalog.instances import (
    InstanceSpec,
    UnknownInstanceType,
    cpu_architecture_of,
    get_instance,
    known_instance_types,
    memory_gib_of,
)

__all__ = ["InstanceSpec", "UnknownInstanceType", "cpu_architecture_of", "get_instance", "known_instance_types", "memory_gib_of"]
