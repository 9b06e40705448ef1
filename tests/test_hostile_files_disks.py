"""Full and read-only file systems, paths to devices and to other files: nothing is
half-written, nothing that is not the tool's is moved or rewritten.

The file systems are real: 1 MiB tmpfs mounts (``mount -t tmpfs -o size=1m``), filled or
remounted read-only, unmounted again at teardown. These tests need root.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import subprocess
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from forensics.core.errors import OutputUnwritable
from forensics.core.models import CollectOptions, CollectStatus, Manifest, Target
from forensics.remote import bundle
from tests.conftest import run_cli

Mount = Callable[..., Path]


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Mount]:
    """``tmpfs("name")`` mounts a fresh 1 MiB tmpfs at tmp_path/name."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted: list[Path] = []

    def mount(name: str, size: str = "1m") -> Path:
        path = tmp_path / name
        path.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(path)
        return path

    yield mount
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(path: Path) -> None:
    """Write until the file system says it is full."""
    with (path / "filler").open("wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass


def _read_only(path: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)


@pytest.fixture
def device(tmp_path: Path) -> Path:
    """A private character device node equal to /dev/null (1,3): a test that gets it wrong
    moves this node, never the machine's own /dev/null."""
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    node = tmp_path / "dev" / "null"
    node.parent.mkdir()
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return node


def _one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def _tree(path: Path) -> list[str]:
    return sorted(str(child.relative_to(path)) for child in path.rglob("*"))


def _closed_inventory(path: Path) -> Path:
    """One host on a loopback port nobody listens on: the sweep reaches no host and needs
    no sshd, which is enough to see what it does with --out, --history and --lock."""
    path.write_text(
        json.dumps({"hosts": [{"name": "nobody", "host": "127.0.0.1", "port": 1}]}) + "\n"
    )
    return path


# --- --out: checked before connecting -----------------------------------------------------


def test_collect_into_a_nearly_full_out_is_refused_before_connecting(tmpfs: Mount) -> None:
    out = tmpfs("out")
    result = run_cli("collect", "local", "--out", str(out))
    assert result.exit_code == 2
    assert "KiB free, but a bundle may need up to" in _one_line(result.stderr)
    assert _tree(out) == []


def test_collect_into_a_read_only_mount_is_refused_before_connecting(tmpfs: Mount) -> None:
    out = tmpfs("out")
    _read_only(out)
    result = run_cli("collect", "local", "--out", str(out))
    assert result.exit_code == 2
    assert "cannot write there (Read-only file system)" in _one_line(result.stderr)
    assert _tree(out) == []


@pytest.mark.parametrize("command", ["collect", "sweep"])
def test_out_that_is_a_file_is_refused(tmp_path: Path, command: str) -> None:
    out = tmp_path / "out"
    out.write_text("not a directory\n")
    inventory = _closed_inventory(tmp_path / "inventory.yaml")
    args = (
        ["collect", "127.0.0.1:1", "--out", str(out)]
        if command == "collect"
        else ["sweep", "--inventory", str(inventory), "--out", str(out)]
    )
    result = run_cli(*args)
    assert result.exit_code == 2
    assert _one_line(result.stderr) == f"forensics: --out {out}: is not a directory"
    assert out.read_text() == "not a directory\n"


def test_a_bundle_that_does_not_fit_leaves_nothing_behind(tmpfs: Mount) -> None:
    out = tmpfs("out")
    moment = datetime(2026, 11, 29, 20, 15, 3, tzinfo=UTC)
    manifest = Manifest(
        tool_version="test",
        target=Target(name="gpu-a"),
        user="root",
        port=22,
        host_key=None,
        started=moment,
        finished=moment,
        status=CollectStatus.ok,
        options=CollectOptions(),
        nonce="n",
        script_sha256="0" * 64,
        script="true\n",
        sections=[],
    )
    raw = {"processes": bundle.RawSection(stdout=b"x" * (2 << 20), stderr=b"")}
    with pytest.raises(OutputUnwritable, match="No space left on device"):
        bundle.write(out, manifest, raw, b"", lambda path: "{}")
    assert _tree(out) == ["gpu-a"]


# --- the history database -----------------------------------------------------------------


def _healthy_history(path: Path) -> bytes:
    """A history database as a sweep leaves it, returned as bytes to compare later."""
    from forensics.fleet.store import History

    History.open(path, lambda message: None).close()
    return path.read_bytes()


def test_sweep_history_to_a_device_never_moves_the_device(tmp_path: Path, device: Path) -> None:
    inventory = _closed_inventory(tmp_path / "inventory.yaml")
    result = run_cli(
        "sweep", "--inventory", str(inventory), "--out", str(tmp_path / "out"),
        "--history", str(device), "--allow-unreachable", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert (
        f"forensics: warning: history is off for this run: {device} is not a regular file"
        in result.stderr
    )
    assert stat.S_ISCHR(device.lstat().st_mode) and device.lstat().st_rdev == os.makedev(1, 3)
    assert [path.name for path in device.parent.iterdir()] == ["null"]


def test_history_command_on_a_device_is_refused_without_touching_it(device: Path) -> None:
    result = run_cli("history", "--history", str(device))
    assert result.exit_code == 2
    assert f"{device} is not a regular file" in _one_line(result.stderr)
    assert stat.S_ISCHR(device.lstat().st_mode)
    assert [path.name for path in device.parent.iterdir()] == ["null"]


def test_a_file_that_is_not_sqlite_is_left_alone(tmp_path: Path) -> None:
    inventory = _closed_inventory(tmp_path / "inventory.yaml")
    notes = tmp_path / "notes.txt"
    notes.write_text("someone's notes, passed as --history by mistake\n")
    result = run_cli(
        "sweep", "--inventory", str(inventory), "--out", str(tmp_path / "out"),
        "--history", str(notes), "--allow-unreachable", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "is not an SQLite database" in result.stderr
    assert notes.read_text() == "someone's notes, passed as --history by mistake\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "inventory.yaml",
        "notes.txt",
        "out",
    ]


def test_a_healthy_history_on_a_full_file_system_is_kept_and_the_cause_named(
    tmp_path: Path, tmpfs: Mount
) -> None:
    disk = tmpfs("history")
    database = disk / "history.sqlite"
    kept = _healthy_history(database)
    _fill(disk)
    inventory = _closed_inventory(tmp_path / "inventory.yaml")
    result = run_cli(
        "sweep", "--inventory", str(inventory), "--out", str(tmp_path / "out"),
        "--history", str(database), "--allow-unreachable", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "its file system is full (ENOSPC" in result.stderr
    assert "corrupt" not in result.stderr and "moved it" not in result.stderr
    # SQLite may leave its (empty) -wal and -shm beside it; nothing is moved aside.
    assert {path.name for path in disk.iterdir()} <= {
        "filler", "history.sqlite", "history.sqlite-wal", "history.sqlite-shm"
    }  # fmt: skip
    assert database.read_bytes() == kept


def test_a_healthy_history_on_a_read_only_mount_is_kept_and_still_listed(
    tmp_path: Path, tmpfs: Mount
) -> None:
    disk = tmpfs("history")
    database = disk / "history.sqlite"
    kept = _healthy_history(database)
    _read_only(disk)
    inventory = _closed_inventory(tmp_path / "inventory.yaml")
    result = run_cli(
        "sweep", "--inventory", str(inventory), "--out", str(tmp_path / "out"),
        "--history", str(database), "--allow-unreachable", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "its file system is read-only (EROFS" in result.stderr
    assert "corrupt" not in result.stderr
    listed = run_cli("history", "--history", str(database), "--json")
    assert listed.exit_code == 0 and listed.stderr == "", listed
    assert sorted(path.name for path in disk.iterdir()) == ["history.sqlite"]
    assert database.read_bytes() == kept


def test_history_command_never_moves_a_corrupt_database(tmp_path: Path) -> None:
    database = tmp_path / "history.sqlite"
    connection = sqlite3.connect(database)
    connection.execute("CREATE TABLE t (x TEXT)")
    connection.executemany("INSERT INTO t VALUES (?)", [("x" * 100,)] * 200)
    connection.commit()
    connection.close()
    data = database.read_bytes()
    database.write_bytes(data[:100] + b"\xff" * (len(data) - 100))
    torn = hashlib.sha256(database.read_bytes()).hexdigest()
    result = run_cli("history", "--history", str(database))
    assert result.exit_code == 2
    assert "is unreadable (corrupt); left it untouched" in _one_line(result.stderr)
    assert [path.name for path in tmp_path.iterdir()] == ["history.sqlite"]
    assert hashlib.sha256(database.read_bytes()).hexdigest() == torn


# --- the sweep lock -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["file", "device", "symlink"])
def test_lock_that_is_not_a_lock_file_is_refused_untouched(
    tmp_path: Path, device: Path, kind: str
) -> None:
    inventory = _closed_inventory(tmp_path / "inventory.yaml")
    precious = tmp_path / "precious.txt"
    precious.write_text("root:x:0:0:root:/root:/bin/sh\n")
    lock = {"file": precious, "device": device, "symlink": tmp_path / "link"}[kind]
    if kind == "symlink":
        lock.symlink_to(precious)
    result = run_cli(
        "sweep", "--inventory", str(inventory), "--out", str(tmp_path / "out"),
        "--lock", str(lock), "--allow-unreachable", "1",
    )  # fmt: skip
    assert result.exit_code == 2
    assert _one_line(result.stderr).startswith(f"forensics: --lock {lock}: ")
    assert precious.read_text() == "root:x:0:0:root:/root:/bin/sh\n"
    assert stat.S_ISCHR(device.lstat().st_mode)


# --- report -o ----------------------------------------------------------------------------


def test_report_output_to_a_device_writes_into_it_and_never_replaces_it(
    tmp_path: Path, device: Path
) -> None:
    out = tmp_path / "out"
    collected = run_cli("collect", "local", "--probe", "system", "--out", str(out), "-f", "json")
    assert collected.exit_code in (0, 1), collected.stderr
    source = json.loads(collected.stdout)["bundle"]
    result = run_cli("report", source, "-o", str(device))
    assert result.exit_code == 0 and result.stderr == "", result
    assert stat.S_ISCHR(device.lstat().st_mode) and device.lstat().st_rdev == os.makedev(1, 3)
    assert [path.name for path in device.parent.iterdir()] == ["null"]
    link = tmp_path / "latest.md"
    link.symlink_to(tmp_path / "real.md")
    assert run_cli("report", source, "-o", str(link)).exit_code == 0
    assert link.is_symlink() and (tmp_path / "real.md").read_text().startswith("#")


def test_report_of_an_endless_file_is_refused_not_read_whole() -> None:
    result = run_cli("report", "/dev/zero", timeout=30)
    assert result.exit_code == 2
    assert _one_line(result.stderr) == (
        "forensics: /dev/zero: not a forensics JSON report (larger than 256 MiB; refused)"
    )


def test_another_users_history_is_never_moved(tmp_path: Path) -> None:
    database = tmp_path / "history.sqlite"
    database.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4096)  # corrupt, but not ours
    os.chown(database, 65534, 65534)
    inventory = _closed_inventory(tmp_path / "inventory.yaml")
    result = run_cli(
        "sweep", "--inventory", str(inventory), "--out", str(tmp_path / "out"),
        "--history", str(database), "--allow-unreachable", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert f"{database} belongs to another user (uid 65534); left it untouched" in result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "history.sqlite", "inventory.yaml", "out"
    ]  # fmt: skip
