"""Storage: FSx for Lustre with its data repository associations, the checkpoint bucket (construct.py), the
<name>-storage stack (stack.py) and the storage rules (rules.py, R-FSX-*, R-CKPT-*, ...); docs/storage.md."""

USES = ("network",)
