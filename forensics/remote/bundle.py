"""The evidence bundle on disk: raw bytes exactly as the host sent them, and a manifest.

Layout (written to a temp dir, then renamed into place, so a bundle is whole or absent)::

    <out>/<target>/<UTC time>/
        manifest.json            tool, target, host key, times, the script, per-section results
        script.sh                the exact script that ran
        raw/<section>.txt        stdout bytes, verbatim (sha256 in the manifest)
        raw/<section>.stderr.txt first lines of stderr, when there were any
        raw/_run.stderr.txt      stderr of the script itself (login shell), when any
        report.json              the HostReport as judged at collection time
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from forensics.core.errors import BundleError
from forensics.core.models import Manifest
from forensics.core.probe import Captured

MANIFEST = "manifest.json"
REPORT = "report.json"
RUN_STDERR = "_run.stderr.txt"


@dataclass
class RawSection:
    stdout: bytes
    stderr: bytes


def slug(name: str) -> str:
    """A directory name for a target.

    >>> slug("root@ssh6.vast.ai:17008"), slug("../etc")
    ('root@ssh6.vast.ai_17008', '.._etc')
    """
    cleaned = re.sub(r"[^A-Za-z0-9._@-]", "_", name).strip()
    return cleaned if cleaned not in ("", ".", "..") else "_"


def timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H-%M-%SZ")


def write(
    out: Path,
    manifest: Manifest,
    raw: dict[str, RawSection],
    run_stderr: bytes,
    report_json: str | None = None,
) -> Path:
    """Write the bundle atomically and return its final path."""
    parent = out / slug(manifest.target.name)
    parent.mkdir(parents=True, exist_ok=True)
    staging = parent / f".incomplete-{secrets.token_hex(4)}"
    (staging / "raw").mkdir(parents=True)
    for name, section in raw.items():
        (staging / "raw" / f"{name}.txt").write_bytes(section.stdout)
        if section.stderr:
            (staging / "raw" / f"{name}.stderr.txt").write_bytes(section.stderr)
    if run_stderr:
        (staging / "raw" / RUN_STDERR).write_bytes(run_stderr)
    (staging / "script.sh").write_text(manifest.script)
    (staging / MANIFEST).write_text(manifest.model_dump_json(indent=2) + "\n")
    if report_json is not None:
        (staging / REPORT).write_text(report_json + "\n")
    final = _free_name(parent, timestamp(manifest.started))
    os.rename(staging, final)
    return final


def write_report(bundle: Path, report_json: str) -> None:
    """Replace the report of a finished bundle (atomic: write aside, then rename)."""
    aside = bundle / f".{REPORT}.{secrets.token_hex(4)}"
    aside.write_text(report_json + "\n")
    os.replace(aside, bundle / REPORT)


def _free_name(parent: Path, base: str) -> Path:
    candidate = parent / base
    counter = 2
    while candidate.exists():
        candidate = parent / f"{base}-{counter}"
        counter += 1
    return candidate


def load(path: Path) -> tuple[Manifest, dict[str, Captured]]:
    """Read a bundle back, verifying every raw file against its sha256 in the manifest."""
    manifest_path = path / MANIFEST
    if not path.exists():
        raise BundleError(f"{path}: does not exist")
    if not manifest_path.is_file():
        raise BundleError(f"{path}: not a forensics bundle (no {MANIFEST})")
    try:
        manifest = Manifest.model_validate(json.loads(manifest_path.read_text()))
    except (ValueError, ValidationError) as error:
        first = str(error).splitlines()[0]
        raise BundleError(f"{manifest_path}: unreadable manifest: {first}") from error
    captures: dict[str, Captured] = {}
    for result in manifest.sections:
        if not result.finished:
            captures[result.name] = Captured(result=result, text="")
            continue
        stdout = _read_verified(path / "raw" / f"{result.name}.txt", result.sha256)
        stderr_path = path / "raw" / f"{result.name}.stderr.txt"
        stderr = _read_verified(stderr_path, result.stderr_sha256) if result.stderr_sha256 else b""
        captures[result.name] = Captured(
            result=result,
            text=stdout.decode("utf-8", "replace"),
            stderr=stderr.decode("utf-8", "replace"),
        )
    return manifest, captures


def _read_verified(path: Path, expected: str | None) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise BundleError(f"{path}: missing from the bundle ({error.strerror})") from error
    actual = hashlib.sha256(data).hexdigest()
    if expected is not None and actual != expected:
        raise BundleError(
            f"{path}: sha256 {actual[:16]}... does not match the manifest's {expected[:16]}...; "
            "the evidence was changed after collection"
        )
    return data
