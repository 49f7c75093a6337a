"""The ``<name>-cluster`` stack (stack.py): the node bootstrap assets, the head-node script, the mirror copy and the
orchestrator construct, which it builds through the orchestrator registry from :class:`OrchestratorInputs`
(stack_inputs.py), the typed contract every orchestrator slice's ``stack.py`` receives."""

USES = ("accounting", "network", "node", "observability", "storage")
