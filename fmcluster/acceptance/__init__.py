"""Fleet acceptance gate: pairwise NCCL all_reduce bandwidth of the nodes, judged per node against the
instance type's floor and the cluster median (docs/acceptance.md).

Layer: right after ``catalog`` (tests/test_layering.py). The modules ``nccl``, ``pairing``, ``judge``,
``metrics`` and ``__main__`` use the standard library only and relative imports, so the gate job ships them
as the ``fmcluster_acceptance`` package and runs them with the node's ``python3`` (:data:`SHIPPED`);
``floors`` reads the catalog and stays on the operator's side.
"""

#: Files of this package the gate bundle carries (standard library only; tests/features/acceptance/test_acceptance_gate.py).
SHIPPED = ("__init__.py", "nccl.py", "pairing.py", "judge.py", "metrics.py", "__main__.py")
