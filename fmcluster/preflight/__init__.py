"""Live-account checks before deploy (``fmcluster preflight``): offerings, quotas, reservations,
buckets and subnet space, with boto3. Opt-in; synth never needs it.

Layout: :mod:`.checks` (one small function per question, taking boto3 clients), :mod:`.runner`
(which checks a blueprint needs; verdict and exit code), :mod:`.clients` (credentials and
clients), :mod:`.cli` (the command and its table/JSON output). Import-light: boto3 is imported by
the submodules, not here.
"""
