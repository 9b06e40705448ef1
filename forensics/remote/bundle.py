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

import errno
import functools
import hashlib
import os
import re
import secrets
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from forensics.core.errors import Abandoned, BundleError, OutputUnwritable, UsageError
from forensics.core.models import Manifest, SectionSpec
from forensics.core.probe import Captured
from forensics.remote.host_script import Script

MANIFEST = "manifest.json"
STAGING_PREFIX = ".incomplete-"
REPORT = "report.json"
RUN_STDERR = "_run.stderr.txt"
# What ``load`` accepts: a section name is a file name stem the host script framed.
SECTION_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
BUNDLE_MARGIN_BYTES = 4 * 1024 * 1024
MAX_MANIFEST_BYTES = 16 * 1024 * 1024
MAX_RAW_BYTES = 1024 * 1024 * 1024


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


class CommitGate:
    """Decides, once, whether a bundle may still appear: the sweep closes it when it stops
    waiting for a host, the writer passes it at the final rename. Whoever comes first wins,
    so a bundle on disk is always one the fleet report lists, and a host the report calls
    interrupted has none."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = "open"

    @property
    def closed(self) -> bool:
        return self._state == "closed"

    def close(self) -> bool:
        """Refuse any later bundle; False when one was already committed."""
        with self._lock:
            if self._state == "committed":
                return False
            self._state = "closed"
            return True

    def commit(self, rename: Callable[[], None]) -> bool:
        """Run ``rename`` unless the gate is closed; False (nothing run) when it is. The
        gate stays open when ``rename`` raises."""
        with self._lock:
            if self._state == "closed":
                return False
            rename()
            self._state = "committed"
            return True


def write(
    out: Path,
    manifest: Manifest,
    raw: dict[str, RawSection],
    run_stderr: bytes,
    report_json: Callable[[Path], str] | None = None,
    gate: CommitGate | None = None,
) -> Path:
    """Write the bundle and return its final path: it appears under that name complete,
    ``report.json`` included (``report_json(final path)`` renders it), or not at all.

    Everything is written into a hidden staging directory beside the final name, which is
    removed again when any write fails, and the one ``rename`` is the moment the bundle
    exists. A write that fails (a full or read-only file system) is a ``OutputUnwritable``.
    """
    parent = out / slug(manifest.target.name)
    staging = parent / f"{STAGING_PREFIX}{secrets.token_hex(4)}"
    gate = gate or CommitGate()
    if gate.closed:
        raise _abandoned(manifest)
    try:
        parent.mkdir(parents=True, exist_ok=True)
        (staging / "raw").mkdir(parents=True)
        for name, section in raw.items():
            (staging / "raw" / f"{name}.txt").write_bytes(section.stdout)
            if section.stderr:
                (staging / "raw" / f"{name}.stderr.txt").write_bytes(section.stderr)
        if run_stderr:
            (staging / "raw" / RUN_STDERR).write_bytes(run_stderr)
        (staging / "script.sh").write_text(manifest.script)
        (staging / MANIFEST).write_text(manifest.model_dump_json(indent=2) + "\n")
        while True:
            final = _free_name(parent, timestamp(manifest.started))
            if report_json is not None:
                (staging / REPORT).write_text(report_json(final) + "\n")
            try:
                if not gate.commit(functools.partial(os.rename, staging, final)):
                    raise _abandoned(manifest)
            except OSError as error:
                if error.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
                continue  # another collection took the name in between: take the next
            return final
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        raise OutputUnwritable(
            f"{out}: cannot write the bundle ({error.strerror or error}); nothing was kept"
        ) from error
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _abandoned(manifest: Manifest) -> Abandoned:
    return Abandoned(f"{manifest.target.name}: the sweep stopped waiting; no bundle was kept")


def room_needed(specs: Sequence[SectionSpec], script: Script) -> int:
    """The most a bundle of these sections can take: their byte caps, the script twice
    (script.sh and the manifest) and a margin for stderr, the manifest and the report."""
    return sum(spec.max_bytes for spec in specs) + 2 * len(script.text) + BUNDLE_MARGIN_BYTES


def check_out(out: Path, room: int) -> None:
    """Refuse, before connecting, an ``--out`` that cannot take a bundle: not a directory,
    not writable (permissions, a read-only mount) or with less than ``room`` bytes free.
    A directory that does not exist yet is judged by the nearest one above it that does,
    and is not created here: a collection that never connects leaves nothing behind."""
    existing = out
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        where = "" if existing == out else f" ({existing} is a file)"
        raise UsageError(f"--out {out}: is not a directory{where}")
    try:
        descriptor, probe = tempfile.mkstemp(prefix=".forensics-write-test-", dir=existing)
    except OSError as error:
        raise UsageError(f"--out {out}: cannot write there ({error.strerror})") from error
    os.close(descriptor)
    os.unlink(probe)
    space = os.statvfs(existing)
    free = space.f_bavail * space.f_frsize
    if free < room:
        raise UsageError(
            f"--out {out}: {free // 1024} KiB free, but a bundle may need up to "
            f"{room // 1024} KiB (the sections' byte caps); free some space or choose another --out"
        )


def _free_name(parent: Path, base: str) -> Path:
    candidate = parent / base
    counter = 2
    while candidate.exists():
        candidate = parent / f"{base}-{counter}"
        counter += 1
    return candidate


def load(path: Path) -> tuple[Manifest, dict[str, Captured]]:
    """Read a bundle back, verified whole before any of it is used.

    The bundle must be exactly what ``write`` leaves: every finished section has a sha256
    and a size in the manifest, every file is a regular file directly inside the bundle (no
    symlink, no ``..``, no absolute or nested name), and every raw file matches its size and
    hash. Anything else is a ``BundleError`` naming the first problem: evidence that cannot
    be trusted is not judged at all.
    """
    if not path.exists():
        raise BundleError(f"{path}: does not exist")
    if not path.is_dir():
        raise BundleError(f"{path}: not a forensics bundle (not a directory)")
    if not (path / MANIFEST).exists() and not (path / MANIFEST).is_symlink():
        raise BundleError(f"{path}: not a forensics bundle (no {MANIFEST})")
    _refuse_foreign_files(path)
    manifest_bytes = _read_regular(path / MANIFEST, None, MAX_MANIFEST_BYTES, "manifest")
    try:
        manifest = Manifest.model_validate_json(manifest_bytes)
    except ValidationError as error:
        first = error.errors(include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise BundleError(
            f"{path / MANIFEST}: unreadable manifest: {where + ': ' if where else ''}{first['msg']}"
        ) from error
    verified: dict[str, tuple[bytes, bytes]] = {}
    for result in manifest.sections:
        _check_section_name(path, result.name)
        if result.name in verified:
            raise BundleError(f"{path / MANIFEST}: section {result.name!r} is listed twice")
        if not result.finished:
            verified[result.name] = (b"", b"")
            continue
        stdout = _read_verified(path, f"{result.name}.txt", result.bytes, result.sha256)
        stderr = b""
        if result.stderr_bytes or result.stderr_sha256 is not None:
            # Bundles written before stderr_bytes existed say 0; their hash still holds.
            size = result.stderr_bytes or None
            stderr = _read_verified(path, f"{result.name}.stderr.txt", size, result.stderr_sha256)
        verified[result.name] = (stdout, stderr)
    captures = {
        result.name: Captured(
            result=result,
            text=verified[result.name][0].decode("utf-8", "replace"),
            stderr=verified[result.name][1].decode("utf-8", "replace"),
        )
        for result in manifest.sections
    }
    return manifest, captures


def _check_section_name(bundle: Path, name: str) -> None:
    """A section name is one plain file name stem: ``kernel_log``, never ``../../etc/x``."""
    if not SECTION_NAME.fullmatch(name):
        raise BundleError(
            f"{bundle / MANIFEST}: section name {name!r} is not a plain name "
            "(letters, digits, '_', '-', '.'); the manifest was tampered with"
        )


def _refuse_foreign_files(bundle: Path) -> None:
    """Every entry of the bundle is a regular file or one of its two directories."""
    for directory in (bundle, bundle / "raw"):
        try:
            entries = list(os.scandir(directory))
        except FileNotFoundError:
            continue
        except OSError as error:
            raise BundleError(f"{directory}: cannot read ({error.strerror})") from error
        for entry in entries:
            if entry.is_symlink():
                raise BundleError(
                    f"{entry.path}: is a symbolic link; a bundle holds only regular files "
                    "(it may point at files outside the bundle)"
                )
            if entry.is_dir(follow_symlinks=False):
                if directory == bundle and entry.name == "raw":
                    continue
                raise BundleError(f"{entry.path}: unexpected directory inside the bundle")
            if not entry.is_file(follow_symlinks=False):
                raise BundleError(f"{entry.path}: not a regular file")


def _read_regular(path: Path, size: int | None, limit: int, what: str) -> bytes:
    """The bytes of a regular file that is not a symlink, at most ``limit`` of them."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError as error:
        raise BundleError(f"{path}: missing from the bundle") from error
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise BundleError(f"{path}: is a symbolic link; refused") from error
        raise BundleError(f"{path}: cannot read the {what} ({error.strerror})") from error
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise BundleError(f"{path}: not a regular file; refused")
        if size is not None and status.st_size != size:
            raise BundleError(
                f"{path}: {status.st_size} bytes does not match the manifest's {size}; "
                "the evidence was changed after collection"
            )
        if status.st_size > limit:
            raise BundleError(f"{path}: {status.st_size} bytes, more than a {what} can be")
        return handle.read(limit + 1)


def _read_verified(bundle: Path, name: str, size: int | None, expected: str | None) -> bytes:
    path = bundle / "raw" / name
    if expected is None:
        raise BundleError(
            f"{path}: the manifest has no sha256 for it, so it cannot be verified; refused"
        )
    data = _read_regular(path, size, MAX_RAW_BYTES, "raw section")
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise BundleError(
            f"{path}: sha256 {actual[:16]}... does not match the manifest's {expected[:16]}...; "
            "the evidence was changed after collection"
        )
    return data
