"""Signals at many points of a real sweep: whatever stopped it, every bundle on disk is
complete (manifest, raw evidence, report.json, verified by ``bundle.load``) and listed in
fleet.json, and a host the report calls interrupted has no bundle at all.

The hosts are real sshd servers on loopback whose ForceCommand waits a little before running
the collection, so that the signal lands at different stages of different hosts: before
they start, while they are collected, while they are judged and while bundles are written.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from forensics.remote import bundle
from tests.fleet import Fleet, fleet
from tests.sshd import sshd_available

DELAYS = {"slow-0": 0.0, "slow-1": 0.4, "slow-2": 0.8, "slow-3": 1.2, "slow-4": 1.6}


@pytest.fixture(scope="module")
def staggered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Fleet, Path]]:
    if not sshd_available():
        pytest.skip("OpenSSH server not installed (apt-get install openssh-server)")
    root = tmp_path_factory.mktemp("staggered")
    with fleet(root) as made:
        for name, delay in DELAYS.items():
            made.add(name, force_command=f'sleep {delay}; eval "$SSH_ORIGINAL_COMMAND"')
        yield made, made.write_inventory(root / "inventory.yaml")


def _sweep(inventory: Path, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "forensics", "sweep", "--inventory", str(inventory),
         "--out", str(out), "--grace", "0", "--fail-on", "never", "--concurrency", "5",
         "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip


def _bundles_on_disk(out: Path) -> set[Path]:
    """Every directory that looks like a bundle by its name: <out>/<sweep>/<host>/<time>."""
    return {path for path in out.glob("*/*/*") if path.is_dir() and not path.name.startswith(".")}


def _assert_complete(path: Path) -> None:
    assert (path / "report.json").is_file(), f"{path} has no report.json"
    json.loads((path / "report.json").read_text())
    bundle.load(path)  # every raw file present, regular and matching its sha256


def _wait(process: subprocess.Popen[str], out: Path, moment: float | str) -> None:
    """Sleep ``moment`` seconds, or (``"first bundle"``) until the first bundle directory
    appears: the moment a host is being judged or its report written."""
    if isinstance(moment, float):
        time.sleep(moment)
        return
    deadline = time.monotonic() + 30
    while not _bundles_on_disk(out) and process.poll() is None:
        assert time.monotonic() < deadline, "no bundle appeared"
        time.sleep(0.001)


MOMENTS: list[float | str] = ["first bundle", 0.3, 0.9, 1.5, 2.1, 2.7, 3.3, 4.0]


@pytest.mark.parametrize("moment", MOMENTS)
def test_sigterm_at_any_point_leaves_only_complete_bundles_the_report_lists(
    staggered: tuple[Fleet, Path], tmp_path: Path, moment: float | str
) -> None:
    _, inventory = staggered
    out = tmp_path / "out"
    process = _sweep(inventory, out)
    _wait(process, out, moment)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=60)
    if process.returncode == -signal.SIGTERM:  # before the sweep began: nothing collected
        assert _bundles_on_disk(out) == set() and not list(out.glob("*/*/.incomplete-*"))
        return
    assert process.returncode in (0, 143), stderr
    if process.returncode == 143:
        assert stderr.splitlines()[-1].startswith("forensics: stopped by SIGTERM: collected ")
    (fleet_json,) = out.glob("*/fleet.json")
    report = json.loads(fleet_json.read_text())
    assert json.loads(stdout)["sweep_id"] == report["sweep_id"]
    listed = {Path(host["bundle"]) for host in report["hosts"] if host["bundle"]}
    on_disk = _bundles_on_disk(out)
    assert on_disk == listed
    for path in on_disk:
        _assert_complete(path)
    for host in report["hosts"]:
        if host["status"] in ("interrupted", "not_started"):
            assert host["bundle"] is None
            assert not list((fleet_json.parent / host["name"]).glob("*")), host
    assert not list(out.glob("*/*/.incomplete-*"))


@pytest.mark.parametrize("moment", ["first bundle", 0.9, 1.7, 2.5, 3.3])
def test_sigkill_at_any_point_leaves_no_bundle_without_its_report(
    staggered: tuple[Fleet, Path], tmp_path: Path, moment: float | str
) -> None:
    _, inventory = staggered
    out = tmp_path / "out"
    process = _sweep(inventory, out)
    _wait(process, out, moment)
    process.kill()
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    for path in _bundles_on_disk(out):
        _assert_complete(path)
