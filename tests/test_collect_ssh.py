"""Collect over a real sshd on loopback, end to end through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.sshd import SshServer


def test_collect_over_ssh_writes_a_bundle_and_a_host_report(
    sshd: SshServer, tmp_path: Path
) -> None:
    result = run_cli("collect", *sshd.target_args(), "--out", str(tmp_path), "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "ok"
    assert report["host_key"]["trust"] == "known_hosts"
    assert report["host_key"]["sha256_fingerprint"].startswith("SHA256:")
    assert report["facts"]["system"]["kernel_release"]
    bundle = Path(report["bundle"])
    manifest = json.loads((bundle / "manifest.json").read_text())
    system = next(s for s in manifest["sections"] if s["name"] == "system")
    assert (bundle / "raw" / "system.txt").stat().st_size == system["bytes"]
