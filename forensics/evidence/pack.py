"""``forensics pack``: one tar.gz of a bundle that may leave the machine.

The archive holds one directory, ``<target>-<UTC time>/``, with the bundle's raw evidence,
its manifest and script, the findings JSON (``report.json``) and the Markdown and HTML
reports, and ``PACK.json``: for every file the sha256 of the original bytes and of the
packed bytes, and how many secrets of each kind were replaced (never the values).

By default every file is redacted with ``forensics.core.redaction`` (the one redaction the
reports use), raw sections included; JSON files are redacted value by value, so that a value
under a secret-looking key goes too and the JSON stays valid. The packed bundle manifest
carries the packed hashes, so the extracted directory is itself a bundle that ``analyze``
accepts. Redaction is idempotent: packing an extracted pack changes no file.
``--obfuscate-hosts`` replaces host names and addresses with stable pseudonyms and writes
the map beside the archive (mode 0600), never into it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import secrets
import tarfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from forensics import __version__
from forensics.core.errors import BundleError, UsageError
from forensics.core.models import Manifest
from forensics.core.redaction import REDACTED, redact_counted
from forensics.evidence.pseudonyms import HostPseudonyms
from forensics.judge.analysis import analyze
from forensics.judge.host_report import HostReport
from forensics.probes.system import SystemFacts
from forensics.remote import bundle
from forensics.reports import Format, render_host

PACK_MANIFEST = "PACK.json"
PACK_FORMAT = "forensics-pack"
REPORT_JSON = bundle.REPORT
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
REPORTS = (REPORT_JSON, REPORT_MD, REPORT_HTML)
# Characters Python's regular expressions count as whitespace that raw sections never hold:
# NUL-separated argv is redacted with one of them in place of NUL, so that ``--token\0VALUE``
# reads as a flag and its value.
_NUL_STAND_INS = ("\x1f", "\x1e", "\x1d", "\x1c")
_KEY_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----")
_KEY_END = re.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY-----")


class PackedFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(description="Relative to the archive's directory.")
    original_sha256: str
    packed_sha256: str
    bytes: int = Field(description="Size of the packed file.")
    redacted: dict[str, int] = Field(
        default_factory=dict, description="Secrets replaced, by kind; never the values."
    )


class PackManifest(BaseModel):
    """``PACK.json``: what ``forensics verify`` checks."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["forensics-pack"] = "forensics-pack"
    version: int = 1
    tool_version: str
    directory: str = Field(description="The one top-level directory of the archive.")
    redacted: bool
    hosts_obfuscated: bool
    redactions: dict[str, int] = Field(description="Totals by kind over every file.")
    files: list[PackedFile]


@dataclass(frozen=True)
class Pack:
    archive: Path
    manifest: PackManifest
    report: HostReport
    host_map: Path | None = None


def default_archive(source: Path) -> Path:
    """``<bundle>.tar.gz`` beside the bundle directory."""
    return source.with_name(f"{source.name}.tar.gz")


def host_map_path(archive: Path) -> Path:
    return archive.with_name(f"{archive.name}.hosts.json")


def pack(
    source: Path,
    archive: Path | None = None,
    *,
    redact: bool = True,
    obfuscate_hosts: bool = False,
) -> Pack:
    """Pack the bundle directory ``source`` into ``archive`` (default ``<bundle>.tar.gz``)."""
    manifest, captures = bundle.load(source)  # also checks the evidence against its hashes
    already_packed = (source / PACK_MANIFEST).is_file()
    originals = _bundle_files(source, keep_reports=already_packed)
    report = (
        _packed_report(source, originals)
        if already_packed
        else analyze(manifest, captures, bundle=None)
    )
    pseudonyms = HostPseudonyms(_host_names(manifest, report)) if obfuscate_hosts else None
    scrubber = _Scrubber(redact, pseudonyms)
    directory = (
        source.name
        if already_packed
        else f"{bundle.slug(scrubber.text(manifest.target.name, Counter()))}-{source.name}"
    )
    packed: dict[str, bytes] = {}
    records: dict[str, PackedFile] = {}

    def add(path: str, original: bytes, result: bytes, counts: Counter[str]) -> None:
        packed[path] = result
        records[path] = PackedFile(
            path=path,
            original_sha256=_sha256(original),
            packed_sha256=_sha256(result),
            bytes=len(result),
            redacted=dict(sorted(counts.items())),
        )

    for path, data in originals.items():
        if path != bundle.MANIFEST and not path.endswith(".json"):
            counts: Counter[str] = Counter()
            add(path, data, scrubber.raw(data, counts), counts)
    for path, data in originals.items():
        if path.endswith(".json") and path != bundle.MANIFEST:
            counts = Counter()
            add(path, data, scrubber.json_file(data, counts), counts)
    if not already_packed:
        report = report.model_copy(update={"bundle": directory})
        report_counts: Counter[str] = Counter()
        packed_report = _redacted_report(report, scrubber, report_counts)
        add(REPORT_JSON, _report_json(report), _report_json(packed_report), report_counts)
        for name, format in ((REPORT_MD, Format.md), (REPORT_HTML, Format.html)):
            counts = Counter()
            rendered = scrubber.text(render_host(packed_report, format), counts)
            add(name, render_host(report, format).encode(), rendered.encode(), counts)
        report = packed_report
    counts = Counter()
    manifest_data = scrubber.json_value(json.loads(originals[bundle.MANIFEST]), counts)
    _point_at_packed_bytes(manifest_data, packed)
    add(bundle.MANIFEST, originals[bundle.MANIFEST], _json_bytes(manifest_data), counts)
    totals: Counter[str] = Counter()
    for record in records.values():
        totals.update(record.redacted)
    pack_manifest = PackManifest(
        tool_version=__version__,
        directory=directory,
        redacted=redact,
        hosts_obfuscated=obfuscate_hosts,
        redactions=dict(sorted(totals.items())),
        files=[records[path] for path in sorted(records)],
    )
    target = archive or default_archive(source)
    _write_archive(target, directory, pack_manifest, packed, int(manifest.started.timestamp()))
    host_map = None
    if pseudonyms is not None:
        host_map = host_map_path(target)
        _write_private(host_map, json.dumps(pseudonyms.mapping(), indent=2) + "\n")
    return Pack(archive=target, manifest=pack_manifest, report=report, host_map=host_map)


class _Scrubber:
    """Redaction and host pseudonyms, applied to raw bytes, text and JSON values."""

    def __init__(self, redact: bool, pseudonyms: HostPseudonyms | None) -> None:
        self.redact = redact
        self.pseudonyms = pseudonyms

    def text(self, text: str, counts: Counter[str]) -> str:
        if self.redact:
            text, found = redact_counted(text)
            counts.update(found)
        if self.pseudonyms is not None:
            text = self.pseudonyms.apply(text)
        return text

    def raw(self, data: bytes, counts: Counter[str]) -> bytes:
        """Bytes that need not be UTF-8: undecodable bytes pass through unchanged."""
        if not self.redact and self.pseudonyms is None:
            return data
        text = data.decode("utf-8", "surrogateescape")
        stand_in = next((c for c in _NUL_STAND_INS if c not in text), None)
        if "\x00" in text and stand_in is not None:
            text = self.text(text.replace("\x00", stand_in), counts).replace(stand_in, "\x00")
        else:
            text = self.text(text, counts)
        return text.encode("utf-8", "surrogateescape")

    def json_file(self, data: bytes, counts: Counter[str]) -> bytes:
        if not self.redact and self.pseudonyms is None:
            return data
        try:
            value = json.loads(data)
        except ValueError:
            return self.raw(data, counts)
        return _json_bytes(self.json_value(value, counts))

    def json_value(self, value: Any, counts: Counter[str], key: str | None = None) -> Any:
        """Every string redacted; a string under a secret-looking key (``"api_key"``)
        replaced whole, judged by the same redaction as ``api_key=VALUE``. The strings of a
        list (and each string field across a list of objects, such as a log's lines) are
        read in order, so that a private key spread over several is seen whole."""
        if isinstance(value, dict):
            return {
                self.text(str(name), counts): self.json_value(item, counts, str(name))
                for name, item in value.items()
            }
        if isinstance(value, list):
            return self._list(value, counts, key)
        if not isinstance(value, str):
            return value
        return self._by_key(key, self.text(value, counts), counts)

    def _list(self, items: list[Any], counts: Counter[str], key: str | None) -> list[Any]:
        if items and all(isinstance(item, str) for item in items):
            return self._column(items, counts, key)
        if not items or not all(isinstance(item, dict) for item in items):
            return [self.json_value(item, counts, key) for item in items]
        shared = set.intersection(
            *({name for name, v in item.items() if isinstance(v, str)} for item in items)
        )
        columns = {
            name: self._column([item[name] for item in items], counts, name) for name in shared
        }
        return [
            {
                self.text(str(name), counts): (
                    columns[name][row] if name in columns else self.json_value(v, counts, name)
                )
                for name, v in item.items()
            }
            for row, item in enumerate(items)
        ]

    def _column(self, items: list[str], counts: Counter[str], key: str | None) -> list[str]:
        """Each string redacted; and the strings between a private key's BEGIN and END
        lines (a log's lines, one string each) replaced whole: no single one of them says
        it is part of a key."""
        lines = []
        inside_key = False
        for item in items:
            text = self.text(item, counts)
            if inside_key and self.redact and not _KEY_END.search(item) and text != REDACTED:
                text = REDACTED
                counts["private_key"] += 1
            begin = _KEY_BEGIN.search(item)
            if begin is not None:
                inside_key = _KEY_END.search(item, begin.end()) is None
            elif _KEY_END.search(item):
                inside_key = False
            lines.append(self._by_key(key, text, counts))
        return lines

    def _by_key(self, key: str | None, text: str, counts: Counter[str]) -> str:
        if self.redact and key is not None and text != REDACTED:
            pair, found = redact_counted(f"{key}={text}")
            if pair != f"{key}={text}":
                counts.update(found)
                return REDACTED
        return text


def _bundle_files(source: Path, keep_reports: bool) -> dict[str, bytes]:
    """Every regular file of the bundle by relative path; the reports only when they came
    with an earlier pack (otherwise they are made afresh from the evidence)."""
    files: dict[str, bytes] = {}
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source).as_posix()
        if path.is_symlink() or (not path.is_file() and not path.is_dir()):
            raise BundleError(f"{path}: not a regular file; a bundle holds only files")
        if path.is_dir() or relative == PACK_MANIFEST or relative.startswith("."):
            continue
        if relative in REPORTS and not keep_reports:
            continue
        try:
            files[relative] = path.read_bytes()
        except OSError as error:
            raise BundleError(f"{path}: cannot read ({error.strerror})") from error
    return files


def _packed_report(source: Path, files: dict[str, bytes]) -> HostReport:
    try:
        return HostReport.model_validate_json(files[REPORT_JSON])
    except (KeyError, ValidationError) as error:
        raise BundleError(f"{source}: a packed bundle without a readable {REPORT_JSON}") from error


def _redacted_report(report: HostReport, scrubber: _Scrubber, counts: Counter[str]) -> HostReport:
    try:
        return HostReport.model_validate(
            scrubber.json_value(report.model_dump(mode="json"), counts)
        )
    except ValidationError as error:
        first = error.errors(include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise BundleError(
            f"redaction left the report invalid at {where} ({first['msg']}); pack with "
            "--no-redact only if the pack stays on this machine, and report this"
        ) from error


def _host_names(manifest: Manifest, report: HostReport) -> Iterable[str]:
    target = manifest.target
    yield target.name
    yield target.name.rpartition("@")[2].split(":")[0]
    if target.host:
        yield target.host
    for hop in (target.proxy_jump or "").split(","):
        yield hop.strip().rpartition("@")[2].split(":")[0]
    system = report.facts.of(SystemFacts)
    if system is not None and system.hostname:
        yield system.hostname


def _point_at_packed_bytes(manifest: dict[str, Any], packed: dict[str, bytes]) -> None:
    """The bundle manifest's hashes and sizes follow the packed bytes, so the extracted pack
    loads as a bundle; PACK.json keeps the hashes of the originals."""
    for section in manifest.get("sections", []):
        name = section.get("name")
        stdout = packed.get(f"raw/{name}.txt")
        if stdout is not None and section.get("sha256") is not None:
            section["sha256"], section["bytes"] = _sha256(stdout), len(stdout)
        stderr = packed.get(f"raw/{name}.stderr.txt")
        if stderr is not None and section.get("stderr_sha256") is not None:
            section["stderr_sha256"], section["stderr_bytes"] = _sha256(stderr), len(stderr)
    if "script" in manifest and isinstance(manifest["script"], str):
        manifest["script_sha256"] = _sha256(manifest["script"].encode())


def _report_json(report: HostReport) -> bytes:
    return (report.model_dump_json(indent=2) + "\n").encode()


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_archive(
    archive: Path, directory: str, manifest: PackManifest, files: dict[str, bytes], mtime: int
) -> None:
    """Deterministic tar.gz (sorted names, fixed owner, mode and time), written aside and
    renamed into place: a reader never sees half an archive."""
    aside = archive.with_name(f".{archive.name}.{secrets.token_hex(4)}")
    entries = {
        PACK_MANIFEST: (manifest.model_dump_json(indent=2) + "\n").encode(),
        **dict(sorted(files.items())),
    }
    try:
        with (
            aside.open("wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as compressed,
            tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            for name, data in entries.items():
                info = tarfile.TarInfo(f"{directory}/{name}")
                info.size, info.mode, info.mtime = len(data), 0o644, mtime
                tar.addfile(info, io.BytesIO(data))
        os.replace(aside, archive)
    except OSError as error:
        aside.unlink(missing_ok=True)
        raise UsageError(f"{archive}: cannot write the archive ({error.strerror})") from error


def _write_private(path: Path, text: str) -> None:
    """Created 0600 (and made so if it existed): the map undoes the pseudonyms."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(text)
    except OSError as error:
        raise UsageError(f"{path}: cannot write the host map ({error.strerror})") from error
