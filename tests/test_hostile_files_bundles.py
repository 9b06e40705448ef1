"""Crafted bundles: a bundle is verified whole before anything in it is read or rendered.

Each bundle starts as a real local collection and is then tampered with the way someone who
hands over a bundle could: a manifest without a hash, a raw file that is a symlink to a file
outside the bundle (with a manifest hash that matches it), a section named to climb out of
the bundle, a FIFO where a raw file should be.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import run_cli

Tamper = Callable[[Path, Path], None]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundles")
    result = run_cli("collect", "local", "--probe", "system", "--out", str(out), "-f", "json")
    assert result.exit_code in (0, 1), result.stderr
    return Path(json.loads(result.stdout)["bundle"])


def _copy(pristine: Path, tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle"
    shutil.copytree(pristine, bundle, symlinks=True)
    return bundle


def _edit_manifest(bundle: Path, edit: Callable[[dict[str, object]], None]) -> None:
    manifest = json.loads((bundle / "manifest.json").read_text())
    edit(manifest)
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def _section(manifest: dict[str, object]) -> dict[str, object]:
    sections = manifest["sections"]
    assert isinstance(sections, list)
    first = sections[0]
    assert isinstance(first, dict)
    return first


def null_hash(bundle: Path, outside: Path) -> None:
    (bundle / "raw" / "system.txt").write_text("forged evidence\n")
    _edit_manifest(bundle, lambda m: _section(m).update(sha256=None))


def symlink_out_of_the_bundle(bundle: Path, outside: Path) -> None:
    secret = b"root:$6$secret-hash-from-the-analyst-machine:19000:0:99999:7:::\n"
    outside.write_bytes(secret)
    raw = bundle / "raw" / "system.txt"
    raw.unlink()
    raw.symlink_to(outside)
    _edit_manifest(
        bundle,
        lambda m: _section(m).update(sha256=hashlib.sha256(secret).hexdigest(), bytes=len(secret)),
    )


def section_name_climbs_out(bundle: Path, outside: Path) -> None:
    outside.write_text("read from outside the bundle\n")
    climb = os.path.relpath(outside.with_suffix(""), bundle / "raw")
    data = outside.read_bytes()
    (bundle / "raw" / "system.txt").rename(bundle / "raw" / "kept.txt")
    _edit_manifest(
        bundle,
        lambda m: _section(m).update(
            name=climb, sha256=hashlib.sha256(data).hexdigest(), bytes=len(data)
        ),
    )


def fifo_instead_of_raw(bundle: Path, outside: Path) -> None:
    raw = bundle / "raw" / "system.txt"
    raw.unlink()
    os.mkfifo(raw)


def size_differs_from_manifest(bundle: Path, outside: Path) -> None:
    _edit_manifest(bundle, lambda m: _section(m).update(bytes=1))


def manifest_nested_past_any_parser(bundle: Path, outside: Path) -> None:
    (bundle / "manifest.json").write_text("[" * 100_000)


CASES: dict[str, tuple[Tamper, str]] = {
    "nested_manifest": (manifest_nested_past_any_parser, "unreadable manifest: Invalid JSON"),
    "null_hash": (null_hash, "has no sha256"),
    "symlink": (symlink_out_of_the_bundle, "is a symbolic link"),
    "climbing_name": (section_name_climbs_out, "is not a plain name"),
    "fifo": (fifo_instead_of_raw, "not a regular file"),
    "size": (size_differs_from_manifest, "does not match the manifest's 1"),
}


@pytest.mark.parametrize("command", ["analyze", "report", "diff"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_tampered_bundle_is_refused_whole_by_every_reader(
    pristine: Path, tmp_path: Path, case: str, command: str
) -> None:
    tamper, said = CASES[case]
    bundle = _copy(pristine, tmp_path)
    outside = tmp_path / "outside.txt"
    tamper(bundle, outside)
    before = sorted(str(p.relative_to(bundle)) for p in bundle.rglob("*"))
    rendered = tmp_path / "rendered.md"
    args = {
        "analyze": ["analyze", str(bundle), "-f", "json"],
        "report": ["report", str(bundle), "-o", str(rendered)],
        "diff": ["diff", str(pristine), str(bundle)],
    }[command]
    result = run_cli(*args, timeout=30)
    assert result.exit_code == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and said in lines[0], result.stderr
    assert "root:$6$" not in result.stderr
    assert not rendered.exists()
    assert sorted(str(p.relative_to(bundle)) for p in bundle.rglob("*")) == before


def test_the_untouched_bundle_still_reads(pristine: Path) -> None:
    result = run_cli("analyze", str(pristine), "-f", "json", "--fail-on", "never")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["bundle"] == str(pristine)
