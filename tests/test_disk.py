"""The disk probe on a real tmpfs that the test mounts, fills and unmounts."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.core.models import CollectOptions, SectionResult
from forensics.core.probe import Captured, RuleContext
from forensics.probes import disk
from tests.conftest import run_cli
from tests.sshd import SshServer


@contextlib.contextmanager
def _tmpfs(where: Path, options: str) -> Iterator[Path]:
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, f"fx7-{os.getpid()}", str(where)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def _fill_blocks(mount: Path) -> None:
    with contextlib.suppress(OSError), (mount / "filler.bin").open("wb") as filler:
        for _ in range(2048):
            filler.write(b"\0" * 4096)
            filler.flush()


def _fill_inodes(mount: Path) -> None:
    with contextlib.suppress(OSError):
        for number in range(100):
            (mount / f"empty-{number}").touch()


def _report(*args: str) -> dict[str, Any]:
    result = run_cli(*args, "-f", "json", "--fail-on", "never")
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_a_full_filesystem_holding_the_watched_log_is_critical(tmp_path: Path) -> None:
    name = f"fx7-daemon-{os.getpid()}"
    with _tmpfs(tmp_path / "logs", "size=1m") as mount:
        (mount / "bench.log").write_text("started\n")
        _fill_blocks(mount)
        daemon = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)", name], cwd=mount
        )
        try:
            report = _report(
                "collect", "local", "--probe", "disk", "--out", str(tmp_path / "out"),
                "--log", f"{mount}/bench*.log", "--focus", name,
            )  # fmt: skip
        finally:
            daemon.kill()
            daemon.wait()
    (full,) = [f for f in report["findings"] if f["id"] == "disk.full"]
    assert full["severity"] == "critical"
    assert full["subject"]["mount_point"] == str(mount)
    assert full["subject"]["used_percent"] == 100
    assert f"{mount} (log)" in full["explanation"]
    assert f"{mount} (cwd:{daemon.pid})" in full["explanation"]
    raw = (Path(report["bundle"]) / "raw" / "disk.txt").read_text().split("\n")
    assert raw[full["evidence"][0]["first_line"] - 1].split()[-1] == str(mount)


def test_a_filesystem_out_of_inodes_is_critical_too(tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "logs", "size=1m,nr_inodes=16") as mount:
        _fill_inodes(mount)
        report = _report(
            "collect", "local", "--probe", "disk", "--out", str(tmp_path / "out"),
            "--expect-log", f"{mount}/deeper/not-yet.log",
        )  # fmt: skip
    (full,) = [f for f in report["findings"] if f["id"] == "disk.full"]
    assert full["subject"]["inodes_used_percent"] == 100
    assert "inodes" in full["title"] and "space" not in full["title"]
    watched = [p for p in report["facts"]["disk"]["paths"] if p["why"] == "log"]
    assert watched[0]["resolved"] == str(mount) and watched[0]["mount_point"] == str(mount)


def test_roomy_filesystems_raise_nothing_and_each_directory_is_checked_once(
    tmp_path: Path,
) -> None:
    report = _report("collect", "local", "--probe", "disk", "--out", str(tmp_path / "out"))
    facts = report["facts"]["disk"]
    assert [p["why"] for p in facts["paths"]] == ["root", "tmp", "var_log"]
    assert all(p["mount_point"] for p in facts["paths"])
    assert len({f["mount_point"] for f in facts["filesystems"]}) == len(facts["filesystems"])
    assert not [f for f in report["findings"] if f["id"] == "disk.full"]


_DF_WITHOUT_INODES = """\
#!/bin/sh
for a in "$@"; do
  if [ "$a" = -i ]; then
    echo "df: invalid option -- 'i'" >&2
    echo "BusyBox v1.30.1 (2019-06-12) multi-call binary." >&2
    exit 1
  fi
done
exec busybox df "$@"
"""


def test_busybox_df_without_inodes_degrades_and_says_so(make_sshd: Any, tmp_path: Path) -> None:
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "df").write_text(_DF_WITHOUT_INODES)
    (shims / "df").chmod(0o755)
    wrapper = tmp_path / "wrapper.sh"
    wrapper.write_text(f'#!/bin/sh\nPATH={shims}:$PATH exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n')
    wrapper.chmod(0o755)
    server: SshServer = make_sshd(force_command=str(wrapper))
    report = _report(
        "collect", *server.target_args(), "--probe", "disk", "--out", str(tmp_path / "out")
    )
    facts = report["facts"]["disk"]
    assert (
        facts["inodes_unavailable"] == "df -i failed: df: invalid option -- 'i' BusyBox "
        "v1.30.1 (2019-06-12) multi-call binary."
    )
    assert facts["filesystems"] and all(f["used_percent"] is not None for f in facts["filesystems"])
    assert all(f["inodes_used_percent"] is None for f in facts["filesystems"])
    raw = (Path(report["bundle"]) / "raw" / "disk.txt").read_text()
    assert raw.count("@ dfi") == 1


_DISK_LINES = st.sampled_from(
    [
        "@ path root /", "@ path", "@ path cwd:1 /a b", "@ resolved /", "@ resolved /a b",
        "@ df", "@ dfi", "@ rc 0", "@ rc 1", "@ seen",
        "Filesystem     1024-blocks     Used Available Capacity Mounted on",
        "/dev/vda  264212084 23423924  82966988  23% /", "tmpfs 1024 1024 0 100% /a b",
        "btrfs 0 0 0 - /", "df: invalid option -- 'i'", "x 1 2 3 999% /",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_DISK_LINES | st.text(max_size=30), max_size=25))
def test_disk_parser_and_rules_never_raise(lines: list[str]) -> None:
    text = "\n".join(lines)
    result = SectionResult(
        name="disk", command="", exit_status=0, duration_s=0.1, bytes=len(text),
        truncated=False, timed_out=False, finished=True,
    )  # fmt: skip
    facts = disk.parse({"disk": Captured(result=result, text=text)}, CollectOptions())
    context = RuleContext(options=CollectOptions(), sections={}, collected_at=datetime.now(UTC))
    assert all(f.id == "disk.full" for f in disk.rules(facts, context))
