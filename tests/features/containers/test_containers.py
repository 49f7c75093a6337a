"""Container images: the catalog loader, ``software.containers`` in the blueprint, the container-vs-host rules
(tables: agree / disagree / unknown) and the rendered example FSDP job (shellcheck, and run for real against stub
``srun`` / ``scontrol``)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.catalog import get_instance
from fmcluster.catalog.containers import (
    ContainerCatalogError,
    cuda_family_min_driver,
    default_example_image,
    find_container_image,
    get_container_image,
    known_container_images,
    parse_container_catalog,
)
from fmcluster.features.containers import rules
from fmcluster.features.containers.plan import enroot_uri
from fmcluster.resolved import ResolvedCluster, resolve
from fmcluster.validation import load_blueprint_text
from fmcluster.validation.rules import REGISTRY
from tests.blueprints import blueprint_text

DLC = "dlc-pytorch-2.9-cu130-ubuntu22.04"
NGC = "ngc-pytorch-26.08"
DLC_URI = "public.ecr.aws/deep-learning-containers/pytorch-training:2.9.0-gpu-py312-cu130-ubuntu22.04-ec2"
SHELLCHECK = str(Path(sys.executable).parent / "shellcheck")


def containers(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"software": {"containers": list(entries)}}


# ---- catalog -------------------------------------------------------------------------------------------------
def test_catalog_images_carry_the_values_of_their_release_notes() -> None:
    dlc = get_container_image(DLC)
    assert (dlc.image, dlc.cuda, dlc.nccl, dlc.efa_installer, dlc.plugin_version, dlc.cpu_architectures) == (
        DLC_URI, "13.0.0", "2.27.7", "1.43.3", "1.16.3", ("x86_64",))
    assert dlc.verified("cuda") and dlc.verified("nccl") and not dlc.verified("aws_ofi_nccl")
    assert "pytorch-training-2.9-gpu-ec2.md" in dlc.sources["cuda"]
    ngc = get_container_image(NGC)
    assert ngc.bundles_plugin is False and ngc.nccl_net_plugin_default == "spcx" and ngc.verified("aws_ofi_nccl")
    assert "Megatron-Bridge/pull/5033" in ngc.sources["aws_ofi_nccl"]
    assert get_container_image("ngc-pytorch-25.12").bundles_plugin is None  # unknown, not guessed
    assert default_example_image().key == DLC
    assert set(known_container_images()) == {DLC, NGC, "dlc-pytorch-2.12-cu130-al2023", "ngc-pytorch-25.12"}


@pytest.mark.parametrize(("ref", "key"), [
    (DLC, DLC), (DLC_URI, DLC), ("nvcr.io/nvidia/pytorch:26.08-py3", NGC), ("nvcr.io#nvidia/pytorch:26.08-py3", NGC),
    ("nvcr.io/nvidia/pytorch:26.09-py3", None), ("ghcr.io/me/train:1", None)])
def test_a_reference_finds_its_catalog_image_by_key_or_uri(ref: str, key: str | None) -> None:
    found = find_container_image(ref)
    assert (found.key if found else None) == key


@pytest.mark.parametrize(("cuda", "floor"), [("13.4.1", "580"), ("13.0.0", "580"), ("12.8.1", "525"), ("14.0", None)])
def test_cuda_family_minimum_driver(cuda: str, floor: str | None) -> None:
    assert cuda_family_min_driver(cuda) == floor


GOOD = {"title": "t", "image": "r.io/a/b:1", "family": "dlc", "os": "ubuntu-22.04", "cpu_architectures": ["x86_64"],
        "cuda": "13.0.0", "sources": {"image": "S", "os": "S", "cpu_architectures": "S", "cuda": "S"}}


@pytest.mark.parametrize(("patch", "problem"), [
    ({"cuda": "thirteen"}, "images.x.cuda: not a version, got 'thirteen'"),
    ({"nccl": "2.27.7"}, "images.x.nccl: a value needs a source or must be listed in unverified"),
    ({"image": "r.io/a/b"}, "images.x.image: needs a tag (registry/path:tag), got 'r.io/a/b'"),
    ({"family": "docker"}, "images.x.family: got 'docker'; allowed dlc, ngc"),
    ({"cpu_architectures": ["aarch64"]}, "images.x.cpu_architectures: got ['aarch64']; allowed a list of x86_64, arm64"),
    ({"aws_ofi_nccl": "yes", "unverified": ["aws_ofi_nccl"]},
     "images.x.aws_ofi_nccl: got 'yes'; allowed a version, false (none) or null (unknown)"),
    ({"sources": {**GOOD["sources"], "cuda": "NOPE"}}, "images.x.sources.cuda: unknown source key 'NOPE'"),
    ({"colour": "red"}, "images.x.colour: unknown field"),
])
def test_the_loader_reports_every_kind_of_bad_catalog_data(patch: dict[str, Any], problem: str) -> None:
    data = {"default_example": "x", "images": {"x": {**GOOD, **patch}}, "sources": {"S": "https://example"}}
    with pytest.raises(ContainerCatalogError) as exc:
        parse_container_catalog(data)
    assert any(p.startswith(problem) for p in exc.value.problems), exc.value.problems


def test_the_loader_reports_all_problems_at_once() -> None:
    data = {"default_example": "nope", "images": {"x": {**GOOD, "cuda": "x"}, "y": dict(GOOD)}, "sources": {"S": "u"}}
    with pytest.raises(ContainerCatalogError) as exc:
        parse_container_catalog(data)
    assert exc.value.problems == [
        "images.x.cuda: not a version, got 'x'", "images: image 'r.io/a/b:1' listed more than once",
        "default_example: 'nope' is not an image key; allowed x, y"]


@pytest.mark.parametrize(("uri", "enroot"), [
    ("nvcr.io/nvidia/pytorch:26.08-py3", "nvcr.io#nvidia/pytorch:26.08-py3"),
    (DLC_URI, DLC_URI.replace("public.ecr.aws/", "public.ecr.aws#", 1)),
    ("localhost:5000/x:1", "localhost:5000#x:1"), ("ubuntu:24.04", "ubuntu:24.04"),
    ("nvidia/cuda:12.9.1-base-ubuntu24.04", "nvidia/cuda:12.9.1-base-ubuntu24.04"),  # Docker Hub: no registry part
    ("nvcr.io#nvidia/pytorch:26.08-py3", "nvcr.io#nvidia/pytorch:26.08-py3")])
def test_enroot_form_of_an_image_uri(uri: str, enroot: str) -> None:
    assert enroot_uri(uri) == enroot


# ---- the blueprint ---------------------------------------------------------------------------------------------
def _problems(patch: dict[str, Any], *base_patches: dict[str, Any]) -> list[tuple[str, str, str | None, str]]:
    try:
        loaded = load_blueprint_text(blueprint_text(*base_patches, patch))
        found = loaded.warnings
    except BlueprintError as e:
        found = e.errors
    return [(p.path, p.message, p.rule_id, p.level) for p in found if (p.rule_id or "").startswith("R-CTR") or p.rule_id is None]


def test_no_containers_by_default() -> None:
    rc = resolve(load_blueprint_text(blueprint_text()).blueprint)
    assert rc.containers == () and rc.blueprint.software.containers == []


BLUEPRINT_TABLE = [
    (containers({"name": "ab", "image": "ghcr.io/me/train:1.0"}), [
        ("software.containers[0].image", "not in the container catalog, so its CUDA, NCCL and aws-ofi-nccl cannot be "
         "checked against the host, got 'ghcr.io/me/train:1.0'; allowed any image (checked: dlc-pytorch-2.9-cu130-"
         "ubuntu22.04, dlc-pytorch-2.12-cu130-al2023, ngc-pytorch-25.12, ngc-pytorch-26.08); jobs bind-mount the host's "
         "/opt/amazon/efa and /opt/amazon/ofi-nccl", "R-CTR-1", "warning")]),
    (containers({"name": "ab", "image": DLC, "groups": ["gpuu"]}), [
        ("software.containers[0].groups", "not a compute group, got 'gpuu'; allowed gpu - did you mean 'gpu'?",
         "R-CTR-9", "error")]),
    (containers({"name": "ab", "image": DLC}, {"name": "ab", "image": NGC}), [
        ("software.containers", "container names must be unique, got ab more than once; allowed each name once", None,
         "error")]),
]


@pytest.mark.parametrize(("patch", "expected"), BLUEPRINT_TABLE)
def test_blueprint_containers_table(patch: dict[str, Any], expected: list[tuple[str, str, str | None, str]]) -> None:
    found = [p for p in _problems(patch) if p[2] != "R-CTR-4"]
    assert [(path, msg.split(",")[0] if rid is None else msg, rid, lvl) for path, msg, rid, lvl in found] == [
        (path, msg.split(",")[0] if rid is None else msg, rid, lvl) for path, msg, rid, lvl in expected]


def test_an_image_reference_without_a_tag_is_refused_with_the_allowed_forms() -> None:
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(blueprint_text(containers({"name": "ab", "image": "nvcr.io/nvidia/pytorch"})))
    [err] = exc.value.errors
    assert err.path == "software.containers[0].image"
    assert "a registry URI with a tag, such as nvcr.io/nvidia/pytorch:26.08-py3" in err.message


def test_pcs_image_without_enroot_is_reported() -> None:
    found = _problems(containers({"name": "ab", "image": DLC}), {"orchestrator": {"kind": "pcs"}})
    ctr11 = [p for p in found if p[2] == "R-CTR-11"]
    assert ctr11 == [("software.containers[0]", "AWS PCS-ready Deep Learning AMI (Base, Ubuntu 24.04) is not known to "
                      "ship enroot/pyxis, and fmcluster installs none there on compute[0] (gpu, p5.48xlarge), got 'ab'; "
                      "allowed containers on images with enroot and pyxis (software.image.mode: custom with an image "
                      "that has them; a bake does not add them)",
                      "R-CTR-11", "warning")]


# ---- the rules against controlled host facts -------------------------------------------------------------------
def _cluster(image: str, *, host: dict[str, str | None] | None = None, instance: str | None = None,
             reported: frozenset[str] = frozenset()) -> ResolvedCluster:
    """The MINIMAL cluster running ``image``, its group's lock patched with ``host`` (the host facts under test)."""
    rc = resolve(load_blueprint_text(blueprint_text(containers({"name": "cc", "image": image}))).blueprint)
    [g] = rc.groups
    image_facts = dataclasses.replace(g.image, lock={**g.image.lock, **(host or {})}, reported_only=reported)
    g = dataclasses.replace(g, image=image_facts, instance=get_instance(instance) if instance else g.instance)
    return dataclasses.replace(rc, groups=(g,))


def _run(rc: ResolvedCluster) -> list[tuple[str, str]]:
    """(rule id, message) of every container rule, in rule order, before precedence, each through its registered
    :class:`Rule` (as the runner calls it, so tests/rule_fires.py sees it fire)."""
    by_id = {r.id: r for r in REGISTRY}
    out = []
    for fn in (rules.cuda_needs_host_driver, rules.cuda_minor_version_compat, rules.cuda_compat_on_newer_driver,
               rules.image_without_plugin_reaches_host_plugin, rules.plugin_tested_with_image_nccl,
               rules.image_plugin_has_efa_provider, rules.image_plugin_known_bad, rules.image_architecture,
               rules.image_architecture_unverified):
        out += [(p.rule_id, p.message) for p in by_id[fn.rule_id].check(rc)]  # type: ignore[attr-defined]
    return out


ON = "on compute[0] (gpu, p5.48xlarge)"
RULE_TABLE = [
    # agree: DLC CUDA 13.0 on an R580+ host that is newer than the image's compat libraries
    (DLC, {"driver": "580.173.02"}, None, frozenset(), []),
    (DLC, {"driver": "595.112.07"}, None, frozenset(), [
        ("R-CTR-4", f"{DLC} carries CUDA forward-compatibility libraries for driver R580, older than the host driver "
                    f"595.112.07 {ON}, got cuda_compat true; allowed them only off the loader path: run it without "
                    "--container-entrypoint (the rendered job does)")]),
    # disagree: CUDA 13 image on an R570 host (verified values: error)
    (DLC, {"driver": "570.172.08"}, None, frozenset(), [
        ("R-CTR-2", f"CUDA 13.0.0 in {DLC} needs an NVIDIA driver >= 580 (CUDA 13.x minor version compatibility), got "
                    f"host driver 570.172.08 {ON}; allowed an image built with an older CUDA family, or a software stack "
                    "with a newer driver"),
        ("R-CTR-3", f"CUDA 13.0.0 in {DLC} needs an NVIDIA driver >= 580, got host driver 570.172.08 {ON} (unverified "
                    "image or host value); allowed an image whose CUDA family the driver supports")]),
    # the same with an unverified host driver: only the warning
    (DLC, {"driver": "570.172.08"}, None, frozenset({"driver"}), [
        ("R-CTR-3", f"CUDA 13.0.0 in {DLC} needs an NVIDIA driver >= 580, got host driver 570.172.08 {ON} (unverified "
                    "image or host value); allowed an image whose CUDA family the driver supports")]),
    # minor version compatibility: family floor met, toolkit minimum (13.0.0: 580.65.06) not
    (DLC, {"driver": "580.10.01"}, None, frozenset(), [
        ("R-CTR-3", f"CUDA 13.0.0 in {DLC} runs on host driver 580.10.01 {ON} only under minor version compatibility "
                    "(limited features, no PTX JIT of newer PTX), got driver 580.10.01; allowed a driver >= 580.65.06 "
                    "for the full feature set")]),
    # NGC without a plugin: the host's must answer to NCCL_NET_PLUGIN=ofi (>= 1.15.0)
    (NGC, {"driver": "580.173.02", "aws_ofi_nccl": "1.14.2"}, None, frozenset(), [
        ("R-CTR-5", f"{NGC} carries no aws-ofi-nccl (its NCCL_NET_PLUGIN default is spcx), and the host's plugin cannot "
                    f"be selected by name {ON}, got host aws-ofi-nccl 1.14.2; allowed a host aws-ofi-nccl >= 1.15.0 or an "
                    "image that carries the plugin (NCCL would fall back to sockets)"),
        ("R-CTR-6", f"NCCL unknown of {NGC} cannot be checked against the host's (bind-mounted by the rendered job) "
                    f"aws-ofi-nccl 1.14.2 {ON}, got an unknown version; allowed catalog values for both")]),
    # architecture: an x86_64-only image on a Grace (arm64) group
    (DLC, {"driver": "580.173.02"}, "p6e-gb200.36xlarge", frozenset(), [
        ("R-CTR-8", f"{DLC} is not published for arm64 on compute[0] (gpu, p6e-gb200.36xlarge), got x86_64; allowed an "
                    "image for arm64")]),
]


@pytest.mark.parametrize(("image", "host", "instance", "reported", "expected"), RULE_TABLE)
def test_container_agrees_with_host_table(image: str, host: dict[str, str], instance: str | None,
                                          reported: frozenset[str], expected: list[tuple[str, str]]) -> None:
    assert _run(_cluster(image, host=host, instance=instance, reported=reported)) == expected


def test_a_known_bad_plugin_in_the_image_is_an_error() -> None:
    rc = _cluster(DLC, host={"driver": "580.173.02"})
    img = dataclasses.replace(get_container_image(DLC), nccl="2.29.2", aws_ofi_nccl="1.18.0")  # tested with 2.29.2
    [c] = rc.containers
    rc = dataclasses.replace(rc, containers=(dataclasses.replace(c, catalog=img),))
    assert _run(rc) == [
        ("R-CTR-7", f"{DLC} carries aws-ofi-nccl 1.18.0, which hangs large inter-node NCCL broadcasts {ON}, got "
                    "aws-ofi-nccl 1.18.0; allowed an image with aws-ofi-nccl >= 1.20.0 (EFA installer >= 1.49.0)")]


def test_an_image_with_its_plugin_but_no_efa_libfabric_is_an_error() -> None:
    rc = _cluster(DLC, host={"driver": "580.173.02"})
    img = dataclasses.replace(get_container_image(DLC), efa_userspace=False)
    [c] = rc.containers
    rc = dataclasses.replace(rc, containers=(dataclasses.replace(c, catalog=img),))
    assert _run(rc) == [
        ("R-CTR-13", f"{DLC} carries aws-ofi-nccl 1.16.3 without an EFA libfabric {ON}, got efa_userspace false; allowed "
                     "an image built with the EFA installer (libfabric with the efa provider)")]


def test_an_image_nccl_newer_than_the_plugin_was_tested_with_warns() -> None:
    rc = _cluster(DLC, host={"driver": "580.173.02"})
    [c] = rc.containers
    img = dataclasses.replace(get_container_image(DLC), nccl="2.28.9")  # its aws-ofi-nccl 1.16.3: tested 2.27.7
    rc = dataclasses.replace(rc, containers=(dataclasses.replace(c, catalog=img),))
    assert _run(rc) == [
        ("R-CTR-6", f"NCCL 2.28.9 of {DLC} is newer than the image's own aws-ofi-nccl 1.16.3 was tested with {ON}, got "
                    "NCCL 2.28.9; allowed NCCL <= 2.27.7 or a newer plugin")]


# the image's own catalog facts changed (controlled image facts), on an R580 host
IMAGE_TABLE = [
    # an x86_64-only tag on a Grace (arm64) group, its architectures confirmed by no primary source: a warning, not R-CTR-8
    ({"unverified": frozenset({"cpu_architectures"})}, "p6e-gb200.36xlarge", [
        ("R-CTR-10", f"{DLC} may not be published for arm64 on compute[0] (gpu, p6e-gb200.36xlarge) (unverified), got "
                     "x86_64; allowed an image for arm64")]),
    # the same unverified list naming arm64: nothing to say
    ({"unverified": frozenset({"cpu_architectures"}), "cpu_architectures": ("x86_64", "arm64")}, "p6e-gb200.36xlarge", []),
]


@pytest.mark.parametrize(("facts", "instance", "expected"), IMAGE_TABLE)
def test_container_image_facts_table(facts: dict[str, Any], instance: str, expected: list[tuple[str, str]]) -> None:
    rc = _cluster(DLC, host={"driver": "580.173.02"}, instance=instance)
    [c] = rc.containers
    img = dataclasses.replace(get_container_image(DLC), **facts)
    assert _run(dataclasses.replace(rc, containers=(dataclasses.replace(c, catalog=img),))) == expected


# ---- the rendered example FSDP job ----------------------------------------------------------------------------
def _render(patch: dict[str, Any] | None = None) -> dict[str, str]:
    from fmcluster.review.render import render_blueprint

    return render_blueprint(load_blueprint_text(blueprint_text(patch or {})).blueprint)["gpu"]


@pytest.mark.parametrize("patch", [None, containers({"name": "ngc", "image": NGC})], ids=["dlc-default", "ngc"])
def test_fsdp_sbatch_is_shellcheck_clean_and_the_script_compiles(tmp_path: Path, patch: dict[str, Any] | None) -> None:
    files = _render(patch)
    f = tmp_path / "fsdp.sbatch"
    f.write_text(files["fsdp-train.sbatch"])
    res = subprocess.run([SHELLCHECK, "-s", "bash", str(f)], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout
    compile(files["fsdp-train.py"], "fsdp-train.py", "exec")


def test_fsdp_script_counts_each_parameter_once(tmp_path: Path) -> None:
    # After fully_shard the parameters are DTensors, whose numel() is the whole tensor's
    # (https://docs.pytorch.org/docs/stable/distributed.tensor.html: the logical tensor's shape): the count is their sum,
    # whatever the world size. The script's own count expression, run on parameters that report their global size.
    import ast

    tree = ast.parse(_render()["fsdp-train.py"])
    [count] = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
               and [getattr(t, "id", None) for t in n.targets] == ["params"]]

    class Param:
        def __init__(self, n: int) -> None:
            self.n = n

        def numel(self) -> int:
            return self.n

    class Model:
        def parameters(self) -> list[Param]:
            return [Param(32000 * 2048), Param(2048), Param(2048 * 2048)]

    for world in (1, 8, 16):
        value = eval(compile(ast.Expression(count), "fsdp-train.py", "eval"), {"model": Model(), "world": world})
        assert value == 32000 * 2048 + 2048 + 2048 * 2048


def _run_sbatch(tmp_path: Path, files: dict[str, str], *, with_script: bool = True,
                extra_env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run the sbatch under bash with stub srun (records args and environment) and scontrol (``show hostnames``
    prints one host per line, as scontrol(1) documents); the job environment is the rendered one."""
    job_env = tmp_path / "job-env.sh"
    job_env.write_text(files["job-env.sh"])
    work = tmp_path / "work"
    work.mkdir()
    if with_script:
        (work / "fsdp-train.py").write_text(files["fsdp-train.py"])
    script = tmp_path / "fsdp.sbatch"
    script.write_text(files["fsdp-train.sbatch"].replace('source "/opt/fmcluster/etc/job-env.sh"', f'source "{job_env}"'))
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "srun").write_text(f'#!/bin/bash\nprintf "%s\\n" "$@" > {tmp_path}/srun.args\nenv > {tmp_path}/srun.env\n')
    (stub / "scontrol").write_text('#!/bin/bash\n[ "$1 $2" = "show hostnames" ] || exit 1\n'
                                   'case "$3" in gpu-st-p5-48xlarge-\\[1-2\\]) printf "%s\\n" gpu-st-p5-48xlarge-1 '
                                   'gpu-st-p5-48xlarge-2;; *) exit 1;; esac\n')
    for s in ("srun", "scontrol"):
        (stub / s).chmod(0o755)
    env = {"PATH": f"{stub}:/usr/bin:/bin", "SLURM_JOB_NODELIST": "gpu-st-p5-48xlarge-[1-2]", "SLURM_SUBMIT_DIR": str(work),
           **(extra_env or {})}
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, check=False), work


def test_fsdp_job_runs_from_a_squashfs_saved_on_shared_storage(tmp_path: Path) -> None:
    # docs/first-job.md "Pulling the image": FMC_IMAGE=/fsx/images/<name>.sqsh; pyxis takes a squashfs path as
    # --container-image (NVIDIA/pyxis README), so no node pulls from the registry.
    res, _ = _run_sbatch(tmp_path, _render(), extra_env={"FMC_IMAGE": "/fsx/images/pytorch-training-2.9.0.sqsh"})
    assert res.returncode == 0, res.stderr
    args = (tmp_path / "srun.args").read_text().splitlines()
    assert [a for a in args if a.startswith("--container-image=")] == [
        "--container-image=/fsx/images/pytorch-training-2.9.0.sqsh"]


def test_fsdp_job_with_an_image_that_has_its_plugin_passes_the_job_environment(tmp_path: Path) -> None:
    res, work = _run_sbatch(tmp_path, _render())
    assert res.returncode == 0, res.stderr
    args = (tmp_path / "srun.args").read_text().splitlines()
    assert args == ["--cpu-bind=none", f"--container-image={enroot_uri(DLC_URI)}",
                    f"--container-mounts={work}:{work}", f"--container-workdir={work}",
                    "--container-env=NCCL_DEBUG,NCCL_SOCKET_IFNAME,NCCL_NET_PLUGIN", "python", f"{work}/fsdp-train.py"]
    env = dict(line.split("=", 1) for line in (tmp_path / "srun.env").read_text().splitlines() if "=" in line)
    assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["NCCL_DEBUG"]) == ("gpu-st-p5-48xlarge-1", "29500", "INFO")
    assert (env["NCCL_NET_PLUGIN"], env["NCCL_SOCKET_IFNAME"]) == ("ofi", "^docker,lo,veth")


def test_fsdp_job_with_an_ngc_image_mounts_the_host_plugin_and_puts_it_first(tmp_path: Path) -> None:
    res, work = _run_sbatch(tmp_path, _render(containers({"name": "ngc", "image": NGC})))
    assert res.returncode == 0, res.stderr
    args = (tmp_path / "srun.args").read_text().splitlines()
    assert args[1] == "--container-image=nvcr.io#nvidia/pytorch:26.08-py3"
    assert args[2] == (f"--container-mounts={work}:{work},/opt/amazon/efa:/opt/amazon/efa:ro,"
                       "/opt/amazon/ofi-nccl:/opt/amazon/ofi-nccl:ro")
    assert args[5:7] == ["bash", "-c"] and args[8] == f"{work}/fsdp-train.py"
    # the inner command, run as the container would: the host's plugin folders come first on the loader path
    inner = subprocess.run(["bash", "-c", args[7].replace("exec python", "exec echo"), args[8]],
                           env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64"},
                           capture_output=True, text=True, check=True)
    assert inner.stdout.strip() == f"{work}/fsdp-train.py"
    probe = subprocess.run(["bash", "-c", args[7].replace('exec python "$0"', 'echo "$LD_LIBRARY_PATH"'), "x"],
                           env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64"},
                           capture_output=True, text=True, check=True).stdout.strip().split(":")
    assert probe[0] == "/opt/amazon/ofi-nccl/lib" and probe[-1] == "/usr/local/cuda/lib64" and "/opt/amazon/efa/lib" in probe


def test_fsdp_job_refuses_to_start_without_its_script(tmp_path: Path) -> None:
    res, work = _run_sbatch(tmp_path, _render(), with_script=False)
    assert res.returncode == 2 and f"no {work}/fsdp-train.py" in res.stderr
    assert not (tmp_path / "srun.args").exists()


def test_the_rendered_files_are_listed_in_the_blueprint_render() -> None:
    files = _render()
    assert {"nccl-tests.sbatch", "fsdp-train.sbatch", "fsdp-train.py"} <= set(files)
    directives = [line.split(None, 1)[1] for line in files["fsdp-train.sbatch"].splitlines() if line.startswith("#SBATCH")]
    assert directives == ["--job-name=fsdp-train", "--partition=gpu", "--nodes=2", "--ntasks-per-node=8",
                          "--gpus-per-node=8", "--exclusive", "--output=fsdp-train-%j.out",
                          # one output file across requeues, and requeueable (docs/capacity.md "The capacity window")
                          "--open-mode=append", "--requeue"]


def test_an_unknown_image_on_hyperpod_eks_says_pods_get_nothing_of_the_host() -> None:
    from tests.blueprints import example

    loaded = load_blueprint_text(blueprint_text(containers({"name": "own", "image": "ghcr.io/me/train:1.0"}),
                                                base=example("hyperpod-eks")))
    assert [w.message for w in loaded.warnings if w.rule_id == "R-CTR-1"] == [
        "not in the container catalog, so its CUDA, NCCL and aws-ofi-nccl cannot be checked against the host, got "
        "'ghcr.io/me/train:1.0'; allowed any image (checked: dlc-pytorch-2.9-cu130-ubuntu22.04, dlc-pytorch-2.12-cu130-"
        "al2023, ngc-pytorch-25.12, ngc-pytorch-26.08); HyperPod EKS pods get nothing of the host's EFA stack, so the "
        "image must carry aws-ofi-nccl"]


def test_hyperpod_eks_pods_need_an_image_with_its_own_plugin_and_get_no_sbatch() -> None:
    from fmcluster.review.render import render_blueprint
    from tests.blueprints import example

    text = blueprint_text(containers({"name": "ngc", "image": NGC}), base=example("hyperpod-eks"))
    with pytest.raises(BlueprintError) as exc:
        load_blueprint_text(text)
    assert [(p.path, p.message, p.rule_id) for p in exc.value.errors if (p.rule_id or "").startswith("R-CTR")] == [
        ("software.containers[0].image", f"{NGC} carries no aws-ofi-nccl and HyperPod EKS pods get none from the host "
         "on compute[0] (gpu, p5.48xlarge), got aws_ofi_nccl false; allowed an image that carries the plugin (NCCL would "
         "fall back to sockets)", "R-CTR-12")]
    rendered = render_blueprint(load_blueprint_text(blueprint_text(base=example("hyperpod-eks"))).blueprint)
    # no Slurm: the Kubernetes job templates instead of either sbatch
    assert not {"fsdp-train.sbatch", "nccl-tests.sbatch"} & set(rendered["gpu"]) and rendered["kubernetes/jobs"]
