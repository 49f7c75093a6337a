"""The software-stack table of docs/software.md, generated from the data: catalog stacks and the stacks an
organisation file adds (``fmcluster catalog stacks``), so adding a stack needs no docs edit."""

from __future__ import annotations

from fmcluster.catalog.software import catalog_stacks, get_stack, known_stacks

HEADER = ("| Stack | Families | Arch | Driver (= FM) | Kernel modules | CUDA | NCCL | EFA installer | libfabric | aws-ofi-nccl "
          "| GDRCopy | From |\n|---|---|---|---|---|---|---|---|---|---|---|---|")


def stacks_markdown() -> str:
    """One row per known stack (catalog first, then organisation stacks), ``From`` = catalog | organisation."""
    builtin = set(catalog_stacks())
    rows = [HEADER]
    for name in known_stacks():
        s = get_stack(name)
        rows.append(
            f"| `{name}` | {', '.join(s.families)} | {', '.join(s.cpu_architectures)} | {s.driver} | {s.kernel_modules} "
            f"| {s.cuda} | {s.nccl} | {s.efa_installer} | {s.libfabric or 'unknown'} | {s.aws_ofi_nccl or 'unknown'} "
            f"| {s.gdrcopy} | {'catalog' if name in builtin else 'organisation'} |")
    return "\n".join(rows)
