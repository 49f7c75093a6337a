"""Image-mode rules (R-IMG-*): the image a blueprint's nodes boot against the lock, the OS, the CPU
architecture, the file system and the orchestrator's version.

Facts: ``catalog/data/images.yaml`` (one source per value; unverified values only warn) and
``fmcluster.features.node.plan_image`` (per-group lock, installs at boot and boot estimate).
"""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.blueprint.model import Blueprint
from fmcluster.catalog.images import ImageManifest, known_images
from fmcluster.catalog.software import get_stack, version_lt
from fmcluster.features.node.plan_image import blueprint_official_image, image_of
from fmcluster.resolved import ResolvedCluster
from fmcluster.validation.rules import Violation, rule

IMAGES = "catalog/data/images.yaml"
PC_RN_3163 = "https://github.com/aws/aws-parallelcluster/releases/tag/v3.16.3"
PC_LUSTRE = "https://github.com/aws/aws-parallelcluster-cookbook/blob/develop/CHANGELOG.md (3.13.0: the Ubuntu 24.04 AMI does not support Lustre)"
PC_SLURM_CVE = "https://github.com/aws/aws-parallelcluster/issues/7601 (Slurm CVEs fixed in Slurm 25.05.9 / 25.11.8)"


def _defaults_applied(bp: Blueprint) -> bool:
    """False when the blueprint failed its shape check elsewhere, so ``software.stack`` / ``software.os`` were never
    defaulted from the image (:meth:`Blueprint._software_defaults`): the image rules then have nothing to judge."""
    return bp.software.stack is not None and bp.software.os is not None


@rule("R-IMG-1", source=f"{IMAGES} (each official image's stack); {PC_RN_3163}", scope="blueprint")
def official_image_ships_its_stack(bp: Blueprint) -> Iterator[Violation]:
    sw, image = bp.software, blueprint_official_image(bp)
    if sw.image.mode != "official" or image is None:
        return
    if _defaults_applied(bp) and sw.stack != image.stack:
        shipped = get_stack(image.stack)
        yield "software.stack", (
            f"official mode boots {image.title} as shipped, which carries stack {image.stack!r} (driver "
            f"{shipped.driver}, CUDA {shipped.cuda}, EFA installer {shipped.efa_installer}), got {sw.stack_name!r}; "
            f"allowed {image.stack!r} (or leave software.stack out), "
            f"or software.image.mode: bake to build an image with {sw.stack_name!r}"
        )
    for component in sorted(sw.overrides.as_dict()):
        yield f"software.overrides.{component}", (
            f"official mode installs no other version than {image.title} ships, got an override; "
            "allowed no overrides, or software.image.mode: bake to build an image with it"
        )


@rule("R-IMG-2", source=f"{IMAGES} (images with a manifest)", scope="blueprint")
def official_image_known(bp: Blueprint) -> Iterator[Violation]:
    if bp.software.image.mode == "custom" or blueprint_official_image(bp) is not None:
        return
    pcv = bp.orchestrator.parallelcluster.version
    known = ", ".join(k for k in known_images() if k.startswith("parallelcluster-"))
    yield "orchestrator.parallelcluster.version", (
        f"the catalog has no manifest of the official image of ParallelCluster {pcv}, "
        f"so {bp.software.image.mode} mode cannot know what it ships, got {pcv}; "
        f"allowed a version with a manifest ({known}), or software.image.mode: custom with your AMI"
    )


@rule("R-IMG-3", source=f"{IMAGES} (operating systems per image)", scope="blueprint", suppressed_by=("R-IMG-2",))
def image_offers_os(bp: Blueprint) -> Iterator[Violation]:
    image = blueprint_official_image(bp)
    if not _defaults_applied(bp) or bp.software.image.mode == "custom" or image is None or "os" in image.unverified:
        return
    if bp.software.os_name not in image.os:
        yield "software.os", (
            f"{image.title} does not exist for this OS, got {bp.software.os_name!r}; allowed {', '.join(image.os)}"
        )


@rule("R-IMG-4", level="warning", source=f"{IMAGES} (operating systems per image; unverified for this image)",
      scope="blueprint", suppressed_by=("R-IMG-2",))
def image_os_unverified(bp: Blueprint) -> Iterator[Violation]:
    image = blueprint_official_image(bp)
    if not _defaults_applied(bp) or bp.software.image.mode == "custom" or image is None or "os" not in image.unverified:
        return
    if bp.software.os_name not in image.os:
        yield "software.os", (
            f"{image.title} is not known to exist for this OS, got {bp.software.os_name!r}; allowed "
            f"{', '.join(image.os)} (the image's OS list is unverified)"
        )


@rule("R-IMG-5", source=f"{IMAGES} (CPU architectures per image)", scope="cluster", suppressed_by=("R-IMG-2",))
def image_offers_architecture(rc: ResolvedCluster) -> Iterator[Violation]:
    for g in rc.groups:
        image = image_of(g).manifest
        if image_of(g).mode == "custom" or image is None:
            continue
        if g.instance.cpu_architecture not in image.cpu_architectures:
            yield f"{g.path}.instance_type", (
                f"{image.title} has no {g.instance.cpu_architecture} build ({g.instance.name}), got "
                f"{g.instance.cpu_architecture}; allowed {', '.join(image.cpu_architectures)}"
            )


@rule("R-IMG-6", level="warning", source="https://docs.aws.amazon.com/pcs/latest/userguide/working-with_ami_pcs-ready-dlami.html; "
      "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-release-ami.html", scope="blueprint")
def official_image_moves(bp: Blueprint) -> Iterator[Violation]:
    image = blueprint_official_image(bp)
    if bp.software.image.mode != "official" or image is None or not image.reference.moving:
        return
    yield "software.image.mode", (
        f"{image.title} is referenced by its newest release, "
        "so nodes launched after AWS publishes a new one boot a different driver, CUDA and EFA stack than the plan shows, "
        "got official; allowed official (accepting that), bake (an AMI built once from the lock) or custom (a pinned AMI)"
    )


#: Components the compatibility rules judge an official image by: unverified, the rules may be judging the wrong
#: versions (the other unverified components are reported by the boot check and shown in the plan).
JUDGED = frozenset({"driver", "efa_installer"})


@rule("R-IMG-7", level="warning", source=IMAGES, scope="cluster")
def official_image_unverified(rc: ResolvedCluster) -> Iterator[Violation]:
    seen: set[str] = set()
    for g in rc.groups:
        image = image_of(g).manifest
        if image_of(g).mode != "official" or image is None or not (image.unverified & JUDGED) or image.key in seen:
            continue
        seen.add(image.key)
        unverified = sorted(c for c in image.unverified if c in image_of(g).lock and image_of(g).lock[c] is not None)
        yield "software.image.mode", (
            f"what {image.title} ships is not confirmed by a primary source for "
            f"{', '.join(unverified)}, got official; "
            "allowed official (the boot check then reports those versions instead of failing on them) "
            "or bake (an image built from the lock)"
        )


def _lacks_lustre_client(bp: Blueprint, *, verified: bool) -> ImageManifest | None:
    """The official image when FSx for Lustre is on, the image has no Lustre client on the OS, and whether that is
    confirmed by a primary source matches ``verified``; else None."""
    image = blueprint_official_image(bp)
    if not _defaults_applied(bp) or bp.storage.lustre is None or bp.software.image.mode == "custom" or image is None:
        return None
    if image.has_lustre_client(bp.software.os_name) or image.is_verified("lustre_client") != verified:
        return None
    return image


@rule("R-IMG-8", source=PC_LUSTRE, scope="blueprint", orchestrators=("parallelcluster",), suppressed_by=("R-IMG-2",))
def image_has_lustre_client(bp: Blueprint) -> Iterator[Violation]:
    image = _lacks_lustre_client(bp, verified=True)
    if image is not None:
        with_client = [o for o in image.os if image.has_lustre_client(o)]
        yield "software.os", (
            f"{image.title} has no Lustre client on this OS, so FSx for Lustre cannot mount, got "
            f"{bp.software.os_name!r}; allowed {', '.join(with_client)}, or storage.lustre: null"
        )


@rule("R-IMG-10", level="warning", source=f"{PC_LUSTRE}; aws/aws-parallelcluster-cookbook PR 2914 (Lustre client for "
      "Ubuntu 24.04, state in later releases not confirmed)", scope="blueprint", orchestrators=("parallelcluster",),
      suppressed_by=("R-IMG-2",))
def image_lustre_client_unverified(bp: Blueprint) -> Iterator[Violation]:
    image = _lacks_lustre_client(bp, verified=False)
    if image is not None:
        with_client = [o for o in image.os if image.has_lustre_client(o)]
        yield "software.os", (
            f"{image.title} is recorded without a Lustre client on this OS "
            "(last documented state; not confirmed for this release), "
            f"so FSx for Lustre may not mount, got {bp.software.os_name!r}; "
            f"allowed {', '.join(with_client)} (known to have one), or check the image before deploying"
        )


@rule("R-IMG-11", level="warning", source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-changelog.html (the "
      "EFA installer installs its packages over older ones only); aws/aws-parallelcluster-cookbook "
      "_fabric_manager_install_debian.rb (Fabric Manager held)", scope="cluster", suppressed_by=("R-IMG-2",))
def bake_downgrades_parent(rc: ResolvedCluster) -> Iterator[Violation]:
    for g in rc.groups:
        parent = image_of(g).manifest
        if image_of(g).mode != "bake" or parent is None:
            continue
        older = [c for c in ("driver", "efa_installer") if parent.components.get(c) and image_of(g).lock.get(c)
                 and version_lt(str(image_of(g).lock[c]), str(parent.components[c]))]
        if older:
            yield "software.stack", (
                f"the image build would replace {', '.join(f'{c} {parent.components[c]}' for c in older)} of its parent "
                f"{parent.title} with older versions ({g.name}), got "
                f"{', '.join(f'{c} {image_of(g).lock[c]}' for c in older)}; "
                "allowed a stack at or above the parent's versions "
                "(the EFA installer does not downgrade, and the parent holds Fabric Manager), "
                "or a custom image built from a base without them"
            )
            return


@rule("R-IMG-12", level="warning", source="fmcluster: the boot verify fails closed on what the lock pins for a custom image "
      "(features/node/templates/steps/verify.sh.j2); catalog/data/software.yaml default_stack", scope="blueprint")
def custom_image_stack_assumed(bp: Blueprint) -> Iterator[Violation]:
    """A custom AMI with no ``software.stack``: fmcluster assumes the catalog stack it picked for the groups and the
    boot check then fails any node whose driver, CUDA, NCCL or EFA installer differ. The assumed stack changes when
    the catalog default does (R570 to R580 in decision 67), so an image built for the old one would stop joining."""
    sw = bp.software
    if sw.image.mode != "custom" or not sw.stack_assumed or not _defaults_applied(bp):
        return
    st = get_stack(sw.stack_name)
    yield "software.stack", (
        f"a custom image with no stack is assumed to carry {sw.stack_name!r} (driver {st.driver}, CUDA {st.cuda}, "
        f"NCCL {st.nccl}, EFA installer {st.efa_installer}) and a node whose image differs fails its boot check, "
        "got no stack; allowed the stack your AMI was built with (fmcluster catalog stacks), named in software.stack"
    )


@rule("R-IMG-9", level="warning", source=PC_SLURM_CVE, scope="blueprint", orchestrators=("parallelcluster",))
def parallelcluster_slurm_cves(bp: Blueprint) -> Iterator[Violation]:
    version = bp.orchestrator.parallelcluster.version
    if version in ("3.15.0",):
        yield "orchestrator.parallelcluster.version", (
            f"ParallelCluster {version} ships a Slurm affected by the CVEs fixed in Slurm 25.05.9 / 25.11.8, got "
            f"{version}; allowed 3.16.1 or later (3.16.3 recommended)"
        )
