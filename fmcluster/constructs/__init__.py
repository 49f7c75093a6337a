"""AWS resource shapes. Constructs receive validated section models and typed references
(never YAML, never the whole Blueprint); ``fmcluster.stacks.build`` hands them over."""
