"""Feature slices: everything fmcluster knows about one cross-cutting feature in one folder
(``fmcluster/features/<slice>/``, docs/architecture.md "Slices").

Like an orchestrator slice, each module of a feature slice has a role, named by its file (``render_*`` templates,
``rules`` validation, ``construct`` constructs, ``stack`` stacks, ``provision_*`` provisioning; tests/test_layering.py),
and the role is its layer.
"""
