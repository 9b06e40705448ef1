"""``forensics verify``: check a pack against its ``PACK.json`` without extracting it.

Every member is read in memory. An archive is refused before any hash is read when a
member's name is absolute or has a ``..`` part, when it is a symbolic or hard link, a
device, a FIFO or anything else that is not a regular file or a directory, or when it
lies outside the pack's one directory. Then every file listed must be there with its
packed sha256, and nothing unlisted may be there.
"""

from __future__ import annotations

import hashlib
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pydantic import ValidationError

from forensics.core.errors import BundleError
from forensics.evidence.pack import PACK_MANIFEST, PackManifest

_CHUNK = 1 << 20


class UnsafeArchive(BundleError):
    """The archive has a member no pack has; nothing was extracted or hashed."""


@dataclass
class Verification:
    manifest: PackManifest
    checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(archive: Path) -> Verification:
    """Check every file of ``archive``; raise ``UnsafeArchive`` or ``BundleError`` when it
    cannot be read as a pack at all."""
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            members = tar.getmembers()
            directory = _check_members(archive, members)
            manifest = _pack_manifest(archive, tar, directory)
            return _check_files(tar, members, directory, manifest)
    except (tarfile.TarError, OSError, EOFError, zlib.error) as error:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        raise BundleError(f"{archive}: not a readable tar.gz pack ({reason})") from error


def read_member(archive: Path, name: str) -> bytes:
    """One file of a verified pack, by its path inside the pack's directory."""
    with tarfile.open(archive, mode="r:gz") as tar:
        directory = _check_members(archive, tar.getmembers())
        handle = tar.extractfile(f"{directory}/{name}")
        if handle is None:
            raise BundleError(f"{archive}: {name} is not a file")
        return handle.read()


def _check_members(archive: Path, members: list[tarfile.TarInfo]) -> str:
    """The pack's one top-level directory; ``UnsafeArchive`` for any unsafe member."""
    tops: set[str] = set()
    for member in members:
        name = member.name
        path = PurePosixPath(name)
        if name.startswith("/") or path.is_absolute() or "\\" in name:
            raise UnsafeArchive(f"{archive}: refused: member {name!r} has an absolute path")
        if ".." in path.parts:
            raise UnsafeArchive(f"{archive}: refused: member {name!r} climbs out with '..'")
        if member.issym() or member.islnk():
            kind = "symbolic" if member.issym() else "hard"
            raise UnsafeArchive(
                f"{archive}: refused: member {name!r} is a {kind} link (to {member.linkname!r})"
            )
        if not (member.isfile() or member.isdir()):
            raise UnsafeArchive(
                f"{archive}: refused: member {name!r} is a device, FIFO or other special file"
            )
        tops.add(path.parts[0] if path.parts else "")
    if len(tops) != 1 or "" in tops or "." in tops:
        raise UnsafeArchive(
            f"{archive}: refused: a pack has one top-level directory, this has "
            f"{len(tops)}: {', '.join(sorted(tops))[:200]}"
        )
    return tops.pop()


def _pack_manifest(archive: Path, tar: tarfile.TarFile, directory: str) -> PackManifest:
    try:
        handle = tar.extractfile(f"{directory}/{PACK_MANIFEST}")
    except KeyError:
        handle = None
    if handle is None:
        raise BundleError(f"{archive}: not a forensics pack (no {directory}/{PACK_MANIFEST})")
    try:
        manifest = PackManifest.model_validate_json(handle.read())
    except ValidationError as error:
        first = error.errors(include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise BundleError(
            f"{archive}: unreadable {PACK_MANIFEST}: {where}: {first['msg']}"
        ) from error
    if manifest.directory != directory:
        raise BundleError(
            f"{archive}: {PACK_MANIFEST} names directory {manifest.directory!r}, "
            f"the archive holds {directory!r}"
        )
    return manifest


def _check_files(
    tar: tarfile.TarFile, members: list[tarfile.TarInfo], directory: str, manifest: PackManifest
) -> Verification:
    result = Verification(manifest=manifest)
    present = {
        member.name.removeprefix(f"{directory}/"): member for member in members if member.isfile()
    }
    for record in manifest.files:
        member = present.pop(record.path, None)
        if member is None:
            result.problems.append(f"{record.path}: listed in {PACK_MANIFEST} but missing")
            continue
        actual = _sha256(tar, member)
        result.checked += 1
        if actual != record.packed_sha256:
            result.problems.append(
                f"{record.path}: sha256 {actual[:16]}... does not match {PACK_MANIFEST}'s "
                f"{record.packed_sha256[:16]}...: changed after packing"
            )
    present.pop(PACK_MANIFEST, None)
    for extra in sorted(present):
        result.problems.append(f"{extra}: in the archive but not listed in {PACK_MANIFEST}")
    return result


def _sha256(tar: tarfile.TarFile, member: tarfile.TarInfo) -> str:
    digest = hashlib.sha256()
    handle = tar.extractfile(member)
    if handle is not None:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
