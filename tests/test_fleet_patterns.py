"""Fleet-wide patterns over real scenario hosts: eight hosts behind two sshd servers with an
nvidia-smi (and dmesg) shim; a quarter run driver 550.54.14 and logged Xid 79, the rest run
550.127.05 and logged nothing. The fleet report, in every format, names the shared driver
and the counts; the wording says "all" only when the fact was read on every host."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

from forensics.core.models import Finding, Target
from forensics.fleet.patterns import fleet_patterns
from forensics.fleet.report import HostRun, HostStatus
from forensics.fleet.summary import summarise
from forensics.judge.host_report import HostReport
from forensics.probes.gpu import Gpu, GpuFacts
from tests.conftest import run_cli
from tests.gpu_shim import SAMPLES, force_command, shim_directory
from tests.sshd import SshServer

# The format of `nvidia-smi --query-gpu=... --format=csv` and of the driver's NVRM Xid line
# in the kernel log, as in tests/samples/nvidia-smi (values our own).
XID_DMESG = (
    "[    4.218733] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.14  "
    "Thu Feb 22 01:44:30 UTC 2024\n"
    "[ 3312.554120] NVRM: GPU at PCI:0000:3b:00: GPU-5a1c0e7e-2f44-9d1b-77ab-0c93e1d2a4f0\n"
    "[ 3312.554124] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"
)

HEALTHY = [f"gpu-{n}" for n in range(1, 7)]
XID = ["gpu-7", "gpu-8"]


def _xid_sample(root: Path) -> Path:
    """The healthy sample with driver 550.54.14 and a kernel log holding Xid 79."""
    sample = root / "samples" / "xid550"
    shutil.copytree(SAMPLES / "healthy", sample)
    gpus = sample / "gpus.csv"
    gpus.write_text(gpus.read_text().replace("550.127.05", "550.54.14"))
    (sample / "dmesg.txt").write_text(XID_DMESG)
    return sample.parent


def test_the_fleet_report_names_the_driver_a_quarter_of_the_hosts_share(
    make_sshd: type[SshServer], tmp_path: Path
) -> None:
    healthy = make_sshd(force_command=force_command(tmp_path, shim_directory(tmp_path, "healthy")))
    xid = make_sshd(
        force_command=force_command(
            tmp_path, shim_directory(tmp_path, "xid550", _xid_sample(tmp_path))
        )
    )
    known = tmp_path / "known_hosts"
    known.write_text(healthy.known_hosts.read_text() + xid.known_hosts.read_text())
    hosts = [
        {
            "name": name,
            "host": "127.0.0.1",
            "port": server.port,
            "identity": str(server.client_key),
            "tags": ["rack-7"] if name in (*XID, "gpu-1") else ["rack-2"],
        }
        for names, server in ((HEALTHY, healthy), (XID, xid))
        for name in names
    ]
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        json.dumps(
            {
                "defaults": {
                    "user": os.environ.get("USER", "root"),
                    "known_hosts": str(known),
                    "ssh_config": str(healthy.root / "ssh_config"),
                    "probes": ["system", "gpu", "kernel_log"],
                },
                "hosts": hosts,
            }
        )
    )
    out = tmp_path / "out"
    result = run_cli(
        "sweep", "--inventory", str(inventory), "--out", str(out), "-f", "json",
        "--fail-on", "never",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    patterns = {pattern["finding"]: pattern for pattern in report["patterns"]}
    pattern = patterns["gpu.xid 79"]
    assert pattern["hosts"] == XID
    assert pattern["text"].startswith(
        "gpu.xid 79 on 2 of 8 hosts; all 2 run driver 550.54.14, 0 of the 6 others do"
    )
    shared = {(fact["fact"], fact["value"]): fact for fact in pattern["shared"]}
    tag = shared[("tag", "rack-7")]
    assert (tag["with_finding"], tag["others"], tag["read_others"]) == (2, 1, 6)
    assert "all 2 are tagged rack-7, 1 of the 6 others do" in pattern["text"]
    # What every host shares (the same kernel, the same GPU model) tells nothing apart.
    assert ("gpu_model", "NVIDIA H100 80GB HBM3") not in shared
    assert not [key for key in shared if key[0] == "kernel"]

    (sweep_dir,) = [path for path in out.iterdir() if path.is_dir()]
    for format, marker in (("md", "## Fleet-wide patterns"), ("html", 'id="patterns"')):
        page = run_cli("report", str(sweep_dir / "fleet.json"), "-f", format)
        assert page.exit_code == 0, page.stderr
        assert marker in page.stdout
        assert "all 2 run driver 550.54.14, 0 of the 6 others do" in page.stdout
    text = run_cli("report", str(sweep_dir / "fleet.json"), "-f", "text")
    assert "fleet-wide patterns:" in text.stdout
    assert "  gpu.xid 79 on 2 of 8 hosts; all 2 run driver 550.54.14" in text.stdout


def _host(name: str, driver: str | None, xid: bool) -> HostRun:
    now = datetime(2026, 11, 29, tzinfo=UTC)
    gpus = [Gpu(name="NVIDIA H100", driver_version=driver, raw_line=2)] if driver else []
    findings = (
        [Finding(id="gpu.xid", severity="critical", title="", explanation="", subject={"code": 79})]
        if xid
        else []
    )
    report = HostReport(
        tool_version="0", target=Target(name=name), status="ok", started=now, finished=now,
        findings=findings,
    )  # fmt: skip
    report.facts.gpu = GpuFacts(gpus=gpus)  # type: ignore[attr-defined]
    return HostRun(name=name, address=name, status=HostStatus.ok, report=summarise(report, name))


def test_the_numbers_are_given_instead_of_all_when_a_fact_was_not_read_everywhere() -> None:
    hosts = [
        _host("a", "550.54.14", True),
        _host("b", "550.54.14", True),
        _host("c", None, True),  # nvidia-smi did not answer: driver unknown
        _host("d", "550.127.05", False),
        _host("e", None, False),
    ]
    (pattern,) = fleet_patterns(hosts)
    assert pattern.text == (
        "gpu.xid 79 on 3 of 5 hosts; 2 of 3 run driver 550.54.14 (not read on 1), "
        "0 of the 1 others where it was read do (not read on 1)"
    )
