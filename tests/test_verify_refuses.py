"""`forensics verify` refuses, reading nothing and writing nothing, archives whose members
could land outside where they are unpacked or are not plain files."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from tests.conftest import run_cli

DIRECTORY = "local-2026-11-29T20-15-03Z"


def _manifest() -> bytes:
    return json.dumps(
        {
            "tool_version": "0",
            "directory": DIRECTORY,
            "redacted": True,
            "hosts_obfuscated": False,
            "redactions": {},
            "files": [],
        }
    ).encode()


def _craft(path: Path, evil: tarfile.TarInfo, content: bytes = b"") -> Path:
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(f"{DIRECTORY}/PACK.json")
        data = _manifest()
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        if evil.isfile():
            evil.size = len(content)
            tar.addfile(evil, io.BytesIO(content))
        else:
            tar.addfile(evil)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    if kind in (tarfile.CHRTYPE, tarfile.BLKTYPE):
        info.devmajor, info.devminor = 1, 3
    return info


@pytest.mark.parametrize(
    ("member", "words"),
    [
        (_member(f"{DIRECTORY}/../../escaped.txt"), "climbs out with '..'"),
        (_member("/tmp/forensics-verify-absolute.txt"), "absolute path"),
        (_member(f"{DIRECTORY}/raw/link", tarfile.SYMTYPE, "/etc/passwd"), "symbolic link"),
        (_member(f"{DIRECTORY}/raw/hard", tarfile.LNKTYPE, "/etc/shadow"), "hard link"),
        (_member(f"{DIRECTORY}/raw/null", tarfile.CHRTYPE), "device, FIFO"),
        (_member(f"{DIRECTORY}/raw/disk", tarfile.BLKTYPE), "device, FIFO"),
        (_member(f"{DIRECTORY}/raw/pipe", tarfile.FIFOTYPE), "device, FIFO"),
        (_member("elsewhere/x.txt"), "one top-level directory"),
    ],
    ids=["dotdot", "absolute", "symlink", "hardlink", "chardev", "blockdev", "fifo", "two-tops"],
)
def test_a_crafted_archive_is_refused_without_writing_anything(
    member: tarfile.TarInfo, words: str, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    archive = _craft(tmp_path / "crafted.tar.gz", member, b"payload written outside\n")
    before = sorted(p for p in tmp_path.rglob("*"))
    result = run_cli("verify", str(archive), cwd=work)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert words in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert sorted(p for p in tmp_path.rglob("*")) == before
    assert not Path("/tmp/forensics-verify-absolute.txt").exists()


def test_a_file_that_is_not_a_gzip_tar_is_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not gzip at all")
    result = run_cli("verify", str(junk))
    assert result.exit_code == 2
    assert "not a readable tar.gz pack" in result.stderr
    assert result.stderr.count("\n") == 1
