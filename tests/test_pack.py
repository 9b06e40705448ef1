"""`forensics pack` and `forensics verify` on a real bundle whose process holds secrets on
its command line, in its environment and in its log."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import stat
import tarfile
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.secret_bundle import ALL_SECRETS, ARGV_SECRETS, collect_with_secrets


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return collect_with_secrets(tmp_path_factory.mktemp("secret-bundle"))


def members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive, "r:gz") as tar:
        return {
            member.name: tar.extractfile(member).read()  # type: ignore[union-attr]
            for member in tar.getmembers()
            if member.isfile()
        }


def pack(bundle: Path, archive: Path, *options: str) -> dict[str, bytes]:
    result = run_cli("pack", str(bundle), "-o", str(archive), *options)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == str(archive)
    return members(archive)


def test_no_secret_survives_packing_and_the_manifest_counts_them_by_kind(
    bundle: Path, tmp_path: Path
) -> None:
    archive = tmp_path / "evidence.tar.gz"
    files = pack(bundle, archive)
    directory = f"local-{bundle.name}"
    assert {name.split("/", 1)[0] for name in files} == {directory}
    names = {name.split("/", 1)[1] for name in files}
    assert {"PACK.json", "manifest.json", "script.sh", "report.json", "report.md"} <= names
    assert {"report.html", "raw/processes.txt", "raw/logs.txt"} <= names
    for name, data in files.items():
        for secret in ALL_SECRETS:
            assert secret.encode() not in data, f"{secret} survived in {name}"
    manifest = json.loads(files[f"{directory}/PACK.json"])
    kinds = manifest["redactions"]
    # The kinds are the redaction's own names; these two every version has.
    assert kinds.get("private_key", 0) > 0 and kinds.get("url_password", 0) > 0, kinds
    assert len(kinds) >= 5 and all(re.fullmatch(r"[a-z][a-z0-9_]*", kind) for kind in kinds)
    assert sum(kinds.values()) >= len(ALL_SECRETS)
    text = json.dumps(manifest)
    assert all(secret not in text for secret in ALL_SECRETS)
    for record in manifest["files"]:
        packed = files[f"{directory}/{record['path']}"]
        assert hashlib.sha256(packed).hexdigest() == record["packed_sha256"]
        assert record["bytes"] == len(packed)
        original = bundle / record["path"]
        if record["path"].startswith("raw/") or record["path"] == "manifest.json":
            assert hashlib.sha256(original.read_bytes()).hexdigest() == record["original_sha256"]
    logs = next(r for r in manifest["files"] if r["path"] == "raw/logs.txt")
    assert logs["original_sha256"] != logs["packed_sha256"] and logs["redacted"]
    # The lines before a redacted key keep their numbers (the redaction replaces a key's
    # body as one block), so evidence cited before it still points right.
    original = (bundle / "raw" / "logs.txt").read_bytes().split(b"\n")
    packed_lines = files[f"{directory}/raw/logs.txt"].split(b"\n")
    key_at = next(n for n, line in enumerate(original) if b"BEGIN RSA PRIVATE KEY" in line)
    assert packed_lines[key_at] == original[key_at]


def test_the_pack_verifies_and_one_flipped_byte_does_not(bundle: Path, tmp_path: Path) -> None:
    archive = tmp_path / "evidence.tar.gz"
    files = pack(bundle, archive)
    result = run_cli("verify", str(archive))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(f"ok: {len(files) - 1} files match PACK.json")
    name = next(n for n in files if n.endswith("raw/processes.txt"))
    data = bytearray(files[name])
    data[len(data) // 2] ^= 0x01
    tampered = tmp_path / "tampered.tar.gz"
    with tarfile.open(tampered, "w:gz") as tar:
        for member, content in files.items():
            info = tarfile.TarInfo(member)
            body = bytes(data) if member == name else content
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    result = run_cli("verify", str(tampered))
    assert result.exit_code == 1
    assert "raw/processes.txt: sha256" in result.stderr and "changed after packing" in result.stderr


def test_packing_a_pack_changes_nothing_and_it_is_still_a_bundle(
    bundle: Path, tmp_path: Path
) -> None:
    first = pack(bundle, tmp_path / "first.tar.gz")
    extracted = tmp_path / "extracted"
    with tarfile.open(tmp_path / "first.tar.gz", "r:gz") as tar:
        tar.extractall(extracted, filter="data")
    [directory] = extracted.iterdir()
    analyzed = run_cli("analyze", str(directory), "--format", "json", "--fail-on", "never")
    assert analyzed.exit_code == 0, analyzed.stderr
    second = pack(directory, tmp_path / "second.tar.gz")
    assert second.keys() == first.keys()
    for name, data in second.items():
        if not name.endswith("PACK.json"):
            assert data == first[name], f"{name} changed when packed again"
    manifest = json.loads(next(d for n, d in second.items() if n.endswith("PACK.json")))
    assert manifest["redactions"] == {}
    assert all(r["original_sha256"] == r["packed_sha256"] for r in manifest["files"])


def test_obfuscated_hosts_keep_their_map_outside_the_archive(bundle: Path, tmp_path: Path) -> None:
    archive = tmp_path / "evidence.tar.gz"
    files = pack(bundle, archive, "--obfuscate-hosts")
    host_map = tmp_path / "evidence.tar.gz.hosts.json"
    assert stat.S_IMODE(host_map.stat().st_mode) == 0o600
    assert not any(name.endswith("hosts.json") for name in files)
    mapping = json.loads(host_map.read_text())
    hostname = os.uname().nodename
    assert mapping["hosts"][hostname].startswith("host-")
    report = json.loads(next(d for n, d in files.items() if n.endswith("/report.json")))
    assert report["facts"]["system"]["hostname"] == mapping["hosts"][hostname]
    for name, data in files.items():
        if name.endswith(("report.json", "report.md", "system.txt")):
            assert f" {hostname}\n".encode() not in data and f'"{hostname}"'.encode() not in data
    verified = run_cli("verify", str(archive))
    assert verified.exit_code == 0 and "hosts obfuscated" in verified.stdout


def test_no_redact_keeps_the_evidence_as_collected(bundle: Path, tmp_path: Path) -> None:
    files = pack(bundle, tmp_path / "raw.tar.gz", "--no-redact")
    processes = next(d for n, d in files.items() if n.endswith("raw/processes.txt"))
    assert processes == (bundle / "raw" / "processes.txt").read_bytes()
    assert ARGV_SECRETS["api_key"].encode() in processes


def test_a_bundle_changed_after_collection_is_not_packed(bundle: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(bundle, copy)
    with (copy / "raw" / "system.txt").open("ab") as handle:
        handle.write(b"x")
    result = run_cli("pack", str(copy))
    assert result.exit_code == 2
    assert "does not match the manifest" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "copy.tar.gz").exists()
