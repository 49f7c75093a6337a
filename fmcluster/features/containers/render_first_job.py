"""The example FSDP training job in a container, rendered per compute group next to ``nccl-tests.sbatch``
(docs/first-job.md): ``fsdp-train.sbatch`` (srun + pyxis ``--container-image``) and ``fsdp-train.py``.

One home per fact: the image is the group's first ``software.containers`` entry or the catalog's example image
(:func:`fmcluster.features.containers.plan.example_image`); whether the job bind-mounts the host's EFA stack is
:attr:`fmcluster.features.containers.plan.ResolvedContainer.mounts_host_plugin`; the NCCL/EFA variables are the job
environment's (:func:`fmcluster.features.node.render_context.job_environment`), which the job sources and names in pyxis
``--container-env`` so an image's own values (NGC: ``NCCL_NET_PLUGIN=spcx``) do not win.
"""

from __future__ import annotations

from fmcluster.catalog.containers import PLUGIN_SHORT_NAME_SINCE, ContainerImage
from fmcluster.catalog.software import version_lt
from fmcluster.features.containers.plan import (
    HOST_EFA_DIRS,
    containers_of,
    enroot_uri,
    example_image,
    first_job_dir,
    group_container,
    pyxis_on_image,
)
from fmcluster.features.node.render_context import NodeContext, blueprint_node_contexts
from fmcluster.features.slurm.render_hooks import job_env_file, render_nccl_tests_sbatch
from fmcluster.orchestrators.profile import sbatch_gpus
from fmcluster.resolved import ResolvedCluster, ResolvedGroup
from fmcluster.templates.render import render

SBATCH = "fsdp-train.sbatch"
NCCL_TESTS = "nccl-tests.sbatch"
SCRIPT = "fsdp-train.py"
#: Library folders of the host's aws-ofi-nccl and libfabric inside the container when they are bind-mounted: the EFA
#: installer's prefixes (lib, lib64 on RPM systems; the plugin under lib/<arch>-linux-gnu on some builds).
HOST_LIBRARY_PATH = ("/opt/amazon/ofi-nccl/lib:/opt/amazon/ofi-nccl/lib64:/opt/amazon/ofi-nccl/lib/$(uname -m)-linux-gnu"
                     ":/opt/amazon/efa/lib:/opt/amazon/efa/lib64")


def container_env_names(ctx: NodeContext, catalog: ContainerImage | None, mounts_host: bool) -> list[str]:
    """Variables the job passes with ``--container-env``: ``NCCL_DEBUG`` and the job environment's, without
    ``NCCL_NET_PLUGIN`` when the image's own aws-ofi-nccl is older than the release that answers to ``ofi``."""
    names = ["NCCL_DEBUG", *(v.name for v in ctx.job_env)]
    own = catalog.plugin_version if (catalog is not None and not mounts_host) else None
    if own is not None and version_lt(own, PLUGIN_SHORT_NAME_SINCE):
        names.remove("NCCL_NET_PLUGIN") if "NCCL_NET_PLUGIN" in names else None
    return list(dict.fromkeys(names))


def render_fsdp_job(rc: ResolvedCluster, group: ResolvedGroup, ctx: NodeContext) -> dict[str, str]:
    """``{file name: text}`` of the example FSDP job of ``group`` (2 nodes, 1 when the group has one): in a container
    where the group's image has pyxis (:func:`pyxis_on_image`), else on the host with ``$FMC_PYTHON``; submitted from
    :func:`first_job_dir` where home is not shared."""
    image, catalog = example_image(containers_of(rc), group.name)
    declared = group_container(containers_of(rc), group.name)
    mounts_host = declared.mounts_host_plugin if declared is not None else (catalog is None or catalog.bundles_plugin is not True)
    mounts_host = mounts_host and group.spec.efa_enabled
    if declared is not None:
        note = f"software.containers {declared.spec.name!r}" + (f" = catalog {catalog.key}" if catalog else " (not in the catalog)")
    else:
        note = f"the catalog's example image {catalog.key if catalog else image} (declare software.containers to choose)"
    if mounts_host:
        note += "; carries no aws-ofi-nccl of its own: the host's plugin and libfabric are bind-mounted read-only"
    gpus_per_node, gpu_note = sbatch_gpus(rc.profile, group.instance.gpu.count)
    sbatch = render("containers/fsdp-train.sbatch.j2", {
        "blueprint_name": rc.name, "group_name": group.name, "instance_type": group.instance.name,
        "gpus": group.instance.gpu.count, "partition": group.name, "nodes": min(2, group.spec.count),
        "orchestrator": rc.profile.key, "gpus_per_node": gpus_per_node, "gpu_note": gpu_note,
        "job_env": job_env_file(rc.node_dir), "image": enroot_uri(image), "image_note": note,
        "host_mounts": HOST_EFA_DIRS if mounts_host else (), "host_library_path": HOST_LIBRARY_PATH,
        "container_env": ",".join(container_env_names(ctx, catalog, mounts_host)),
        "container": pyxis_on_image(group), "shared_dir": first_job_dir(rc),
    })
    return {SBATCH: sbatch, SCRIPT: render("containers/fsdp-train.py.j2", {})}


def render_files(rc: ResolvedCluster) -> dict[str, str]:
    """The feature registry's render hook: ``<group>/<file>`` of every first job (:func:`render_first_jobs`:
    ``nccl-tests.sbatch`` and the FSDP job) for every GPU group of a Slurm cluster; empty otherwise (HyperPod EKS has
    its Kubernetes jobs instead)."""
    if not rc.profile.runs_slurm:
        return {}
    contexts = blueprint_node_contexts(rc)
    return {f"{g.name}/{name}": text for g in rc.groups if g.instance.gpu.count
            for name, text in render_first_jobs(rc, g, contexts[g.name]).items()}
def render_first_jobs(rc: ResolvedCluster, group: ResolvedGroup, ctx: NodeContext) -> dict[str, str]:
    """``{file name: text}`` of every first job of a Slurm GPU group (docs/first-job.md): ``nccl-tests.sbatch`` and the
    FSDP job (:func:`render_fsdp_job`), both submitted from :func:`first_job_dir` where home is not shared."""
    gpus_per_node, gpu_note = sbatch_gpus(rc.profile, group.instance.gpu.count)
    nccl = render_nccl_tests_sbatch(
        blueprint_name=rc.name, group_name=group.name, instance_type=group.instance.name, gpus=group.instance.gpu.count,
        count=group.spec.count, node_dir=rc.node_dir, shared_dir=first_job_dir(rc), orchestrator=rc.profile.key,
        gpus_per_node=gpus_per_node, gpu_note=gpu_note)
    return {NCCL_TESTS: nccl, **render_fsdp_job(rc, group, ctx)}
